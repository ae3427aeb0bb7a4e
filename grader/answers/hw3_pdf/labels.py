"""Labelled answers ("Layers per GPU (DEPTH=6, 2 GPUs): 3, 3") in prose or in Question |
Answer tables, a label wrapped inside a narrow cell included.

    read_labels(layout) -> {field: LabelReading}

The text is read twice: line by line (prose, and ruled tables whose cells already hold
their whole wrapped text), then, for what is still missing, with unruled table rows put back
together: the columns are the whitespace rivers that run down the table (justified words
in a narrow cell may be spaced wider than the gap between the columns, but the other lines
fill those gaps), a label wrapped over several lines goes with the answer beside it (on its
first line, or centred beside it), and a row cut by a page or column break goes on where
the table does.

A yes/no answer (grader/answers/yes_no.py) is read on the label's line, or first on the line
under a label that stands alone; its explanation is the rest of its cell, or of its paragraph
in prose. An answer that is not a clear yes or no is said, never guessed.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, replace

from ..declined import says_not_done
from ..yes_no import read_growth, read_yes_no
from . import contract
from .explanations import starts_something_else
from .layout import CELL_GAP_EM, Cell, Layout, Line, lower_same_length, normalise, rows_by_anchor
from ..numbers import LayerPair, gpu_count_given, int_list_answering, layer_pair_said, whole_number_in


@dataclass
class LabelReading:
    value: object = None
    line: Line | None = None
    problems: tuple = ()
    found_label: bool = False
    answer_line: Line | None = None  # where the answer is, when not on the label's line
    handout: bool = False  # read after the handout's question, not the template's label
    # What the label is answered with where that was not read (neither a placeholder nor
    # nothing): an answer for a person to read, never "not answered".
    written: str | None = None
    # How an answer was read where it is not as written ("3rd and 4th": counted from 1): the
    # reason alone (shown beside where it was read), and the notes that quote the answer.
    read_as: str | None = None
    notes: tuple = ()
    # Found with nothing after it on a page read as two columns of text: its answer may be the
    # one beside it, in a table without borders taken for the other column (a TA's audit 30):
    # for a person to read, never "not answered".
    maybe_beside: bool = False
    # What the report writes after the label where it says the task was not done ("Not done",
    # "N/A", "skipped"): an empty answer, 0, the student told what they wrote.
    declined: str | None = None


# HW3 Task 1 Q2: the two layers the data moves between (transfer_as_indices).
TRANSFER_FIELD = "task1.transfer_between"


# How a view's entry was put together, which says where a yes/no answer's explanation ends:
# a line of prose goes on in the lines under it; a ruled row, or an unruled row put back
# together, holds its whole answer cell; an unruled line of cells goes on under its answer cell.
PROSE, ROW, CELLS = "prose", "row", "cells"


@dataclass(frozen=True)
class Entry:
    start: int  # offset in the view's text
    line: Line
    kind: str


def _stream(entries: list[tuple[str, Line, str]]) -> tuple[str, list[Entry]]:
    """The view's entries as one text, one entry a line, in the student's case (the labels are
    matched in lower_same_length() of it, at the same offsets)."""
    text, starts = "", []
    for entry, line, kind in entries:
        starts.append(Entry(len(text), line, kind))
        text += entry + "\n"
    return text, starts


def _entry_at(starts: list[Entry], offset: int) -> Entry:
    found = starts[0]
    for entry in starts:
        if entry.start > offset:
            break
        found = entry
    return found


def _line_at(starts: list[Entry], offset: int) -> Line:
    return _entry_at(starts, offset).line


def _view_lines(lines: list[Line]) -> list[tuple[str, Line]]:
    """Each line as it is, its cells parted by " | "; a ruled row cut by a page break (Word
    and LibreOffice let a row break) joined with its rest on the next page."""
    tables: dict[int, list[Line]] = {}
    for line in lines:
        if line.ruled is not None:
            tables.setdefault(line.ruled, []).append(line)
    out, joined = [], set()
    for index, line in enumerate(lines):
        if id(line) in joined:
            continue
        rest = _rest_of_cut_row(lines, index, tables)
        if rest is None:
            kind = ROW if line.ruled is not None else CELLS if len(line.cells) > 1 else PROSE
            out.append((" | ".join(c.cased for c in line.cells), line, kind))
            continue
        joined.add(id(rest))
        header = tables[line.ruled][0]
        shift = min(c.x0 for l in tables[line.ruled] for c in l.cells) - min(c.x0 for l in tables[rest.ruled] for c in l.cells)
        texts: dict[int, list[str]] = {}
        for row, dx in ((line, 0.0), (rest, shift)):
            for cell in row.cells:
                column = max(range(len(header.cells)), key=lambda i: min(cell.x1 + dx, header.cells[i].x1)
                             - max(cell.x0 + dx, header.cells[i].x0))
                texts.setdefault(column, []).append(cell.cased)
        out.append((" | ".join(_join_wrapped(texts[c]) for c in sorted(texts)), line, ROW))
    return out


def _rest_of_cut_row(lines: list[Line], index: int, tables: dict[int, list[Line]]) -> Line | None:
    """The rest of ruled row lines[index] when the row is cut by a page break: the next
    table's first row on the next page (after its header, repeated), with fewer cells
    filled than the table has columns (the cells that ended before the break are empty)."""
    line = lines[index]
    if line.ruled is None or index + 1 >= len(lines) or tables[line.ruled][-1] is not line:
        return None
    following = lines[index + 1:index + 3]
    if not following or following[0].ruled is None or following[0].page != line.page + 1:
        return None
    header = tables[line.ruled][0]
    rest = following[0]
    if rest.text == header.text and len(following) > 1 and following[1].ruled == rest.ruled:
        rest = following[1]
    if len(header.cells) < 2 or len(rest.cells) >= len(header.cells) or rest.text == header.text:
        return None
    return rest


def _runs(lines: list[Line]) -> list[list[Line]]:
    """Unruled lines of one size set tight one under the other (a table without ruling lines
    is one; a heading just above it is bigger)."""
    runs: list[list[Line]] = []
    for line in lines:
        previous = runs[-1][-1] if runs else None
        if (previous is not None and line.ruled is None and previous.ruled is None and line.page == previous.page
                and line.region == previous.region and abs(line.size - previous.size) <= 0.5
                and line.top - previous.bottom < 0.9 * max(line.size, 1)):
            runs[-1].append(line)
        else:
            runs.append([line])
    return runs


def _rivers(run: list[Line]) -> list[tuple[float, float]]:
    """The x-gaps that run down the whole of `run` through no word, where the words of at
    least one band (lines that overlap vertically: a label and an answer centred beside it)
    are a cell gap apart: the gaps between the columns of a table. In a narrow justified
    cell the space between words can be wider than the gap between the columns, but the
    other lines' words fill it; nothing fills the gap between the columns."""
    if len(run) < 2:
        return []  # one line's gaps between words are no river
    bands = _overlapping(run)
    spans = sorted((w.x0, w.x1) for line in run for w in line.words)
    covered = [list(spans[0])]
    for x0, x1 in spans[1:]:
        if x0 <= covered[-1][1]:
            covered[-1][1] = max(covered[-1][1], x1)
        else:
            covered.append([x0, x1])
    size = max(line.size for line in run)
    gaps = [(a[1], b[0]) for a, b in zip(covered, covered[1:]) if b[0] - a[1] >= 0.5 * size]
    cell_gaps = []
    for band in bands:
        words = sorted((w for line in band for w in line.words), key=lambda w: w.x0)
        cell_gaps += [(a.x1, b.x0) for a, b in zip(words, words[1:]) if b.x0 - a.x1 > CELL_GAP_EM * min(a.size, b.size)]
    rivers = [(g0, g1) for g0, g1 in gaps if any(c0 <= g0 + 0.5 and c1 >= g1 - 0.5 for c0, c1 in cell_gaps)]
    return [river for i, river in enumerate(rivers) if not _before_a_broken_word(run, river, rivers[i + 1:])]


def _before_a_broken_word(run: list[Line], river: tuple[float, float], after: list[tuple[float, float]]) -> bool:
    """Whether all that stands between `river` and the next one is the first half of a word
    hyphenated at a cell's edge ("Does increasing DEPTH      im-" / "prove speed"): a two-line
    justified cell has only one line to spread, so nothing fills its widest space, and the
    column it would open holds that one piece."""
    end = after[0][0] if after else float("inf")
    between = [(line, w) for line in run for w in line.words if w.x0 >= river[1] - 0.5 and w.x1 <= end + 0.5]
    return (len({id(line) for line, _ in between}) == 1
            and all(re.fullmatch(r"[^\W\d_]{2,}-", w.text) for _, w in between))


def _overlapping(run: list[Line]) -> list[list[Line]]:
    bands: list[list[Line]] = []
    for line in run:
        last = bands[-1][-1] if bands else None
        if (last and last.page == line.page and last.region == line.region
                and min(last.bottom, line.bottom) - max(last.top, line.top) > 0.25 * (line.bottom - line.top)):
            bands[-1].append(line)
        else:
            bands.append([line])
    return bands


def _shifted(line: Line, dx: float) -> Line:
    """`line` moved dx to the right, so that a table's part in the next column lines up with
    its part in the column before."""
    cells = [Cell([replace(w, x0=w.x0 + dx, x1=w.x1 + dx) for w in c.words], c.x0 + dx, c.x1 + dx) for c in line.cells]
    return replace(line, cells=cells)


def _across_breaks(runs: list[list[Line]], lines: list[Line]) -> list[tuple[list[Line], list]]:
    """(run, its rivers), a table's run joined with the lines that open the next page or
    column and keep a river running down it (the rest of a row cut by the break), as long
    as they are set like it (a heading there is bigger or bold). The table's header,
    repeated there, is skipped. In the next column the table stands further right: its
    lines are moved back by the distance between the two columns' left edges, or between
    its header and the header repeated."""
    margins: dict[tuple[int, int], float] = {}
    original = {line.index: line for line in lines}
    for line in lines:
        key = (line.page, line.region)
        margins[key] = min(margins.get(key, line.x0), line.x0)
    out: list[tuple[list[Line], list]] = []
    # The run the text so far ended in (a header repeated after a break, set apart as its own
    # entry, is none: the table goes on in the run before it).
    current = -1
    for run in runs:
        target = current
        previous = out[target][0] if out else []
        last = previous[-1] if previous else None
        if not (last and any(len(line.cells) > 1 for line in previous)
                and (run[0].page == last.page + 1 or (run[0].page == last.page and run[0].region > last.region))):
            out.append((run, _rivers(run)))
            current = len(out) - 1
            continue
        # This run opens a page or column, the target run ended one.
        before = [l for l in lines if (l.page, l.region) == (last.page, last.region) and len(l.cells) > 1]
        header = next((l for l in before if l.text == run[0].text), None)
        dx = margins[(last.page, last.region)] - margins[(run[0].page, run[0].region)]
        if header is not None:
            dx = header.x0 - run[0].x0
            out.append((run[:1], []))
            run = run[1:]
            if not run:
                continue  # the rest of the cut row is the next run
        # The column the table ended in may itself have been moved to line up with the one
        # before it (a table over three columns: right, then left of the next page, then right).
        dx += last.x0 - original[last.index].x0
        moved = [_shifted(line, dx) if abs(dx) > 0.5 else line for line in run]
        taken = 0
        for line in moved:
            if (abs(line.size - last.size) > 0.5 or line.bold != last.bold
                    or not _rivers(previous + moved[:taken + 1])):
                break
            taken += 1
        if taken:
            out[target] = (previous + moved[:taken], _rivers(previous + moved[:taken]))
        if run[taken:]:
            out.append((run[taken:], _rivers(run[taken:])))
            current = len(out) - 1
    return out


def _join_wrapped(texts: list[str]) -> str:
    """A cell's lines as one text; a word hyphenated at the end of a line ("trans-" /
    "fers") is joined again."""
    return re.sub(r"([A-Za-z])- ([a-z])", r"\1\2", " ".join(texts))


def _question_rows(entries: list[tuple[Line, dict]]) -> dict[int, int]:
    """line id -> the line that opens its question, for the lines of an unruled Q|A table
    that one of the template's questions (a label, "Task N explanation") runs over, wrapped
    in its cell. A top-aligned row whose question and answer both wrap has both cells filled
    on every line; a centred answer stands beside the question's middle line, its first
    line above it; LaTeX sets no more space between rows than between a cell's lines: only
    the question's words say where its row starts and ends."""
    texts = [lower_same_length(" ".join(cells.get(0, []))) for _, cells in entries]
    opened: dict[int, int] = {}
    for i, text in enumerate(texts):
        if text.strip() and id(entries[i][0]) not in opened:
            for j in range(i, i + contract.question_span(texts[i:])):
                opened.setdefault(id(entries[j][0]), id(entries[i][0]))
    return opened


def _view_rows(lines: list[Line]) -> list[tuple[str, Line]]:
    """Unruled tables put back together row by row: the columns are the whitespace rivers
    that run down the table (_rivers), and each cell's lines go to the row they sit beside
    (layout.rows_by_anchor), a row starting where a line holds both a question and an answer."""
    # A table's header (its first line, no number in it, repeated on each page or column or
    # over each Q|A table) is no row: an answer cut from its label by a column break must
    # not be taken into it.
    seen = Counter(line.text for line in lines if len(line.cells) > 1 and not re.search(r"\d", line.text))
    out: list[tuple[str, Line, str]] = []
    for run, rivers in _across_breaks(_runs(lines), lines):
        pieces = [(run, rivers)] if rivers else [(piece, _rivers(piece)) for piece in _tables_in(run)]
        for piece, piece_rivers in pieces:
            out += _rows_of(piece, piece_rivers, seen)
    return sorted(out, key=lambda entry: entry[1].index)


def _tables_in(run: list[Line]) -> list[list[Line]]:
    """A run with no river down the whole of it cut where the space between its lines is
    clearly wider than the tightest: two tables set close one under the other (a data table
    and a Question | Answer table), whose columns do not line up, each have their own rivers.
    Lines that overlap (a value centred beside a wrapped label) are never cut apart."""
    bands = _overlapping(run)
    gaps = [min(l.top for l in b) - max(l.bottom for l in a) for a, b in zip(bands, bands[1:])]
    if len(gaps) < 2:
        return [run]
    tightest = min(gaps)
    pieces = [list(bands[0])]
    for gap, band in zip(gaps, bands[1:]):
        if gap > tightest + max(1.5, 0.15 * max(line.size for line in band)):
            pieces.append(list(band))
        else:
            pieces[-1] += band
    return pieces


def _rows_of(run: list[Line], rivers: list, seen: Counter) -> list[tuple[str, Line, str]]:
    if not rivers:
        return [(line.cased, line, PROSE if len(line.cells) < 2 and line.ruled is None else ROW) for line in run]
    entries = []
    for line in run:
        if line is run[0] and seen[line.text] > 1:
            continue
        columns: dict[int, list[str]] = {}
        for word in line.words:
            column = sum(word.x0 >= g1 - 0.5 for _, g1 in rivers)
            columns.setdefault(column, []).append(word.text)
        entries.append((line, {c: [normalise(" ".join(words), keep_case=True)] for c, words in columns.items()}))
    questions = _question_rows(entries)
    rows = rows_by_anchor(entries, lambda cells: 0 in cells and len(cells) > 1,
                          orphans_start_rows=range(1, len(rivers) + 1),
                          row_key=lambda band: next((questions[id(l)] for l in band.lines if id(l) in questions), None))
    grouped = {id(line) for members, _ in rows for line in members}
    out = [(line.cased, line, PROSE if len(line.cells) < 2 else ROW) for line in run if id(line) not in grouped]
    for members, cells in rows:
        text = " | ".join(_join_wrapped(cells[c]) for c in sorted(cells))
        # Where it was read: the row's line that holds the answer.
        out.append((text, max(members, key=lambda line: (len(line.cells), -line.top)), ROW))
    return out


# Where a remark starts after the answer on its line: "3, 3 - GPU 0 gets layers 0-2",
# "1; the data moves once", "4 because N - 1".
_REMARK_START = re.compile(r"\s+[-–—]\s+|[;:]\s|\s+(?:because|since|as|so|which|where|i\.e\.|"
                           r"e\.g\.)\b", re.IGNORECASE)


# Any of the template's labels: where one starts inside a line, the answer before it ends. A
# report written from REPORT_TEMPLATE.md in Markdown has consecutive label lines joined into
# one paragraph ("Layers per GPU (DEPTH=6, 2 GPUs): 3, 3 Transfer between layers: 2 and 3").
# Only a label as the template writes one, with its colon (or "?"): the same words in a remark
# ("3, 3 (transfer between layers 2 and 3)") end nothing.
_ANY_LABEL = re.compile("(?:" + "|".join(f"(?:{a.pattern})" for a in contract.LABELLED_ANSWERS)
                        + r")[ \t]*[:=?]", re.IGNORECASE)


# A list item's marker before an answer written under its label, as word processors and LaTeX
# set it: "•", Word's Symbol-font bullets (U+F0B7, U+F0A7, U+F0D8: private-use glyphs), "▪",
# "◦", "–" and "-" (dashes are one kind after normalise), "*", Word's second level "o",
# LaTeX itemize's bullet where its font has no Unicode map ("(cid:136)"), and a number or
# letter ("1.", "a)", "(ii)"). None of it is part of the answer.
_BULLETS = ("\u2022\u2023\u2043\u2219\u00b7\u25aa\u25ab\u25a0\u25a1\u25cf\u25cb\u25e6\u25c6\u25c7"
            "\u25b8\u25ba\u25b6\u2666\u2756\u27a2\u2794\u2192\u2713\u2714"
            "\uf0a7\uf0a8\uf0b7\uf0d8\uf0fc\uf076")
_LIST_MARKER = re.compile(r"^[ \t|]*(?:(?P<bullet>[" + _BULLETS + r"]|\(cid:\d+\)|[-\u2013\u2014*+o](?=[ \t]))"
                          r"|(?P<number>\(?(?:\d{1,2}|[a-z]|[ivx]{1,4})[.)])(?=[ \t]+\S))[ \t|]*", re.IGNORECASE)


def without_list_marker(text: str, kind: str = "") -> tuple[str, bool]:
    """(`text` without the list marker it starts with, whether it had one). A number before an
    answer that is one number ("4. One per boundary") is that answer, not a marker: after an
    "int" label, "1." goes only where a number follows it ("1. 4")."""
    found = _LIST_MARKER.match(text)
    if found is None or not text[found.end():].strip():
        return text, False
    rest = text[found.end():]
    if found.group("number") and kind == "int" and not re.match(r"\d", rest):
        return text, False
    return rest, True


def until_next_label(text: str) -> str:
    """`text` up to where another of the template's labels starts in it, if one does ("" when
    it starts with one: the answer was left blank)."""
    found = _ANY_LABEL.search(text)
    return text[:found.start()] if found else text


# A remark that offers another value ("4 (or 3)", "3 (maybe 4)"): never cut off to leave a
# number that looks like the one answer.
_OFFERS_ANOTHER = re.compile(r"^\(\s*(?:or|maybe|perhaps|possibly|probably|either|alternatively|approx|about|~|≈|\?)",
                             re.IGNORECASE)


def without_remarks(text: str, numbers_only: bool = False) -> str | None:
    """`text` without its remarks in brackets (a bracket inside one included) and a full stop
    at its end; None where a remark offers another value, or a bracket is left open, or (with
    numbers_only) a remark holds more than numbers ("(0, 1, 2)" goes, "(after layer 1)" not)."""
    out, depth, start, opened = [], 0, 0, 0
    for at, char in enumerate(text):
        if char == "(":
            if depth == 0:
                if _OFFERS_ANOTHER.match(text[at:]):
                    return None
                out.append(text[start:at])
                opened = at
            depth += 1
        elif char == ")":
            if depth == 0:
                return None
            depth -= 1
            if depth == 0:
                if numbers_only and not re.fullmatch(r"[\d\s,;/&+-]*", text[opened + 1:at]):
                    return None
                start = at + 1
    if depth:
        return None
    out.append(text[start:])
    return re.sub(r"\s+", " ", "".join(out)).strip().rstrip(".").strip()


_ENDS_WITH_A_GPU = re.compile(r"\b(?:gpu|cuda|device|rank)\s*[:#_]?\s*\d+\s*$", re.IGNORECASE)


def _answer_heads(rest: str, kind: str) -> list[str]:
    """What may be the answer after a label, most whole first (numbers_after says how)."""
    line, _, more = rest.partition("\n")
    items = []
    if not line.strip(" |:=-–"):   # the label on its own line, the answer under it
        line, _, more = more.partition("\n")
        line, listed = without_list_marker(line, kind)
        # An answer under its label as a list ("• GPU 0: 3 layers" / "• GPU 1: 3 layers"): its
        # items are one answer, up to a line that is no item of it or holds another label.
        while listed and kind != "int" and more:
            following, _, after = more.partition("\n")
            item, listed = without_list_marker(following, kind)
            if not listed or until_next_label(item) != item:
                break
            items.append(item.strip(" |"))
            more = after
    first_item = line
    if items:
        line = ", ".join([line.strip(" |").rstrip(",;")] + [item.rstrip(",;") for item in items])
    if re.search(r"(?:[,;/+&]|\band)\s*$", line) and re.match(r"\s*\d", more):
        line = line + " " + more.partition("\n")[0]
    heads = []
    # Up to the next label first (labels joined into one paragraph), then, where an answer
    # began before it, the whole line (a remark that quotes a label, colon and all). Nothing
    # before the next label is a blank answer: never the next label's numbers. A list's items
    # joined first, then its first item alone where the others hold no number (a remark: "• 3, 3"
    # / "• as printed"; "• GPU 0: layers 0-2" / "• GPU 1: layers 3-5" is one answer, read whole or
    # not at all).
    before = until_next_label(line)
    tried = [before] + ([line] if before != line and re.search(r"\d", before) else [])
    tried += [first_item] if items and not any(re.search(r"\d", item) for item in items) else []
    for whole in (part.strip(" |:=-") for part in tried):
        cut = _REMARK_START.search(whole)
        # "GPU 0: layers 0-2, GPU 1: ..." is cut after a GPU's name, not after a remark: "GPU 0"
        # is no answer (it had been read as the list [0]).
        heads += [whole] + ([whole[:cut.start()]] if cut and not _ENDS_WITH_A_GPU.search(whole[:cut.start()]) else [])
    # Last, without remarks in brackets, brackets inside them included: after a count, any
    # remark ("1 (20 calls of x.to(layer_device))"); in a list, only a list of numbers ("GPU 0
    # gets 3 layers (0, 1, 2) and ..."): "before layer 3 (after layer 1)" says two things.
    heads += [bare for head in list(heads)
              if (bare := without_remarks(head, numbers_only=kind != "int")) not in (None, head)]
    return heads


def numbers_after(rest: str, kind: str, gpus: int | None = None, question: str = "") -> list[int] | None:
    """The number(s) answering a label, read from the rest of its line by the answer sheet's
    rules (grader/answers/numbers.py), so a report and a sheet read the same words alike: the
    whole line, else the line up to where a remark starts. A label alone on its line is answered
    on the next; a line ending in a separator goes on on the next one ("4, 4,\n4"). None when
    neither reads as one answer ("1 or 2", "0-2, 3-5"): the label is then unanswered, and a
    person reads it. `gpus`: the GPU count the label gives ("... with 5 GPUs"), which the
    answer may repeat ("With 5 GPUs: 4" is 4, never 5). `question`: the label as the template
    writes it, which decides a list's forms as a sheet's question does ("3 each" after "Layers
    per GPU (DEPTH=6, 2 GPUs)", "before layer 3" after "Transfer between layers")."""
    heads = _answer_heads(rest, kind)
    for head in heads:
        if kind == "int":
            number = whole_number_in(head, gpus=gpus, arithmetic=True)   # "5 - 1", as a sheet's count
            if number is not None:
                return [number]
        else:
            found = int_list_answering(head, question)
            if found:
                return found
    return None


def layer_pair_after(rest: str) -> LayerPair | None:
    """The two layers a move is said to happen between after a label (the forms of
    numbers.layer_pair_said), read from the rest of its line as numbers_after reads a list."""
    for head in _answer_heads(rest, "int_list"):
        said = layer_pair_said(head)
        if said is not None:
            return said
    return None


def transfer_as_indices(said: LayerPair) -> tuple[list[int], str | None]:
    """(the 0-based pair the check compares, a note for the student and the instructor where it
    is not the pair as written). The handout's Q2 asks "at what exact point" and never for
    0-based indices (only the answer sheet's question does), and a TA grading by hand takes a
    right answer in either way of counting; for the provided code the two readings of a pair
    are different answers (0-based [2, 3], 1-based [3, 4]). So: counted from 1 where the
    report says so (ordinals, "1-based"); where it does not say, the pair is read as written,
    except the 1-based form of the provided code's move ([3, 4]), which is read as counted
    from 1, saying so. answers.yaml asks for 0-based indices and keeps reading [3, 4] as
    written (numbers.layer_pair_in)."""
    pair = list(said.said)
    if said.counted_from == 1:
        indices = said.zero_based
        return indices, (f"read as layers counted from 1, which are the 0-based indices "
                         f"{' and '.join(map(str, indices))}")
    if said.counted_from is None and pair == [n + 1 for n in contract.BASE_CODE_MOVE]:
        indices = list(contract.BASE_CODE_MOVE)
        return indices, (f"it does not say how the layers are counted: read as counted from 1, which are the "
                         f"0-based indices {' and '.join(map(str, indices))} (the handout does not ask for "
                         "0-based indices, so a right answer counted either way is taken)")
    return pair, None


def _label_regex(answer: contract.LabelledAnswer) -> re.Pattern:
    # `start`: the label opens its line, behind a list's marker ("• ", "(cid:136) ", "1. ") if any.
    return re.compile(r"(?m)(?P<start>^[\W_]*(?:(?:\(cid:\d+\)|\(?(?:\d{1,2}|[a-z]|[ivx]{1,4})[.)])[\W_]*)?)?"
                      + answer.pattern + contract.LABEL_END)


def _match(answer: contract.LabelledAnswer, view: tuple[str, list[Entry]], layout: Layout,
           shown: str | None = None) -> LabelReading:
    """The answer after the label (`answer.pattern`) in `view`; `shown`: the handout's question
    where `answer.pattern` is it (messages name it), not the template's label."""
    handout = shown is not None
    shown = shown or answer.template_text
    cased, starts = view
    text = lower_same_length(cased)
    matches = sorted(_label_regex(answer).finditer(text), key=lambda m: m.group("start") is None)  # line starts first
    values, unclear = [], []
    written, notes = None, {}   # an answer there but not read; how one read was read
    for match in matches:
        if answer.kind == "yes_no":
            reading = _yes_no_after(match.end(), cased, starts, layout, shown)
            if reading.value is not None:
                values.append((reading.value, match, reading.answer_line))
            elif reading.problems and match.group("start") is not None:
                unclear.append(reading.problems[0])
            continue
        rest = text[match.end():]
        if handout:
            # After a handout's question in prose the answer is a sentence, wrapped as it
            # comes: the rest of its paragraph.
            entry = _entry_at(starts, match.end())
            line_end = rest.find("\n")
            following = _rest_of_paragraph(layout, entry.line).lower() if entry.kind == PROSE else ""
            rest = (rest if line_end < 0 else rest[:line_end]) + " " + following
        value, why = _read_after(answer, rest)
        said, under = _answer_written(cased, match, rest), None
        if not handout:
            wrapped = _wrapped_reading(answer, rest, cased[match.end():match.end() + len(rest)],
                                       _entry_at(starts, match.end()), layout, value, said)
            if wrapped is not None:
                value, why, rest, said = wrapped
                under = next(_lines_after(layout, _entry_at(starts, match.end()).line), None) if value else None
        if why:
            notes.setdefault(id(match), (why, f"'{shown}' is answered '{said}': {why}"))
        if value:
            values.append((value, match, under))
        elif written is None and match.group("start") is not None:
            written = said or None
    if not values:
        said_not_done = _not_done_after(matches, unclear, written, cased)
        if said_not_done is not None:
            # "Not done", "N/A", "skipped": an empty answer, told as written (a TA's audit 30).
            text, at = said_not_done
            return LabelReading(line=_line_at(starts, at), found_label=True, declined=text)
        if unclear:
            problem = f"'{shown}' is answered {unclear[0]}, not with a clear yes or no: " \
                      "a person must read it (start the answer with yes or no)"
            return LabelReading(problems=(problem,), found_label=True, written=unclear[0].strip("'\""))
        if written:
            what = ("the two layers the data moves between (e.g. '2 and 3')" if answer.field == TRANSFER_FIELD
                    else "one whole number" if answer.kind == "int" else "a list of whole numbers")
            problem = f"'{shown}' is answered '{written}', which could not be read as {what}: a person must read it"
            return LabelReading(problems=(problem,), found_label=True, written=written)
        bare = next((m for m in matches if m.group("start") is not None and _nothing_after(text, m.end())
                     and _line_at(starts, m.start()).region), None)
        if bare is not None:
            page = _line_at(starts, bare.start()).page
            problem = (f"found '{shown}' with nothing after it on its line, on page {page}, which was read as two "
                       "columns of text: its answer may stand beside it (a table without borders read as a column), "
                       "so a person must read it (to have it read, write the answer on the label's line, or give "
                       "the table borders)")
            return LabelReading(problems=(problem,), found_label=True, maybe_beside=True)
        problems = (f"found '{shown}' but no "
                    + ("yes or no" if answer.kind == "yes_no" else "number") + " after it",) if matches else ()
        return LabelReading(problems=problems, found_label=bool(matches))
    value, match, answer_line = values[0]
    problems = []
    if answer.kind == "int":
        if len(value) > 1:
            problems.append(f"'{shown}' expects one number, found {value}; took {value[0]}")
        value = value[0]
    said = (lambda v: v["value"]) if answer.kind == "yes_no" else str
    distinct = {said(v) for v, _, _ in values}
    if len(distinct) > 1 and all(m.group("start") is not None for _, m, _ in values):
        problems.append(f"'{shown}' is answered more than once with different values: {sorted(distinct)}")
    label_line = _line_at(starts, match.start())
    return LabelReading(value, label_line, tuple(problems), True,
                        answer_line if answer_line is not None and answer_line is not label_line else None,
                        read_as=notes[id(match)][0] if id(match) in notes else None,
                        notes=(notes[id(match)][1],) if id(match) in notes else ())


def _not_done_after(matches: list, unclear: list, written: str | None, cased: str) -> tuple[str, int] | None:
    """(what the report writes after a label, where) where that says the task was not done
    ("Not done", "N/A", "-", "skipped"): on the label's line, or the answer read under it."""
    at = next((m.start() for m in matches if m.group("start") is not None), None)
    if at is None:
        return None
    first = next(m for m in matches if m.group("start") is not None)
    line_end = cased.find("\n", first.end())
    on_its_line = until_next_label(cased[first.end():line_end if line_end >= 0 else None]).strip(" \t|:=")
    for text in [on_its_line, written] + [u.strip("'\"") for u in unclear]:
        if text and says_not_done(text):
            return text.strip(), at
    return None


def _nothing_after(text: str, label_end: int) -> bool:
    """Whether nothing at all (not even the template's '...') follows a label on its line."""
    line_end = text.find("\n", label_end)
    return not text[label_end:line_end if line_end >= 0 else None].strip(" \t|:=-")


def _read_after(answer: contract.LabelledAnswer, rest: str) -> tuple[list[int] | None, str | None]:
    """(the value read after `answer`'s label from `rest`, how it was read where not as written)."""
    if answer.field == TRANSFER_FIELD:
        pair = layer_pair_after(rest)
        return transfer_as_indices(pair) if pair is not None else (None, None)
    return numbers_after(rest, answer.kind, gpu_count_given(answer.template_text), answer.template_text), None


def _wrapped_reading(answer: contract.LabelledAnswer, rest: str, rest_cased: str, entry: Entry, layout: Layout,
                     value: list[int] | None, written: str) -> tuple[list[int] | None, str | None, str, str] | None:
    """(value, how it was read, the text read, the answer as written) of an answer in prose that wraps onto the lines
    under its label's ("GPU 0 gets 3 layers, GPU 1 gets" / "3 layers"), where its label's line
    alone gives no value or only the start of the one the paragraph gives ("3 on GPU 0 and" /
    "3 on GPU 1": [3] of [3, 3]); where neither gives one, no value and the whole answer
    quoted for the person who reads it; None where the line's own value stands. Only an answer begun
    on the label's line (not a placeholder, not another label after it there) goes on, and
    only in its paragraph: the next label's line ends it (_lines_after)."""
    line = rest.partition("\n")[0]
    if entry.kind != PROSE or not written or not line.strip(" |:=-–") or until_next_label(line) != line:
        return None
    following = _rest_of_paragraph(layout, entry.line)
    if not following.strip():
        return None
    whole = line + " " + following.lower()
    found, why = _read_after(answer, whole)
    quoted = _said(rest_cased.partition("\n")[0] + " " + following)
    if not found and not value:
        return None, None, rest, quoted   # still not read: a person reads all of it
    if not found or found == value:
        return None
    if value and not (len(found) > len(value) and found[:len(value)] == value):
        return None   # the line says another whole answer: kept, never replaced
    return found, why, whole, quoted


# The template's placeholders and what joins them ("... and ...", "..., ..."): no answer.
_PLACEHOLDER_PARTS = re.compile(r"\.{2,}|…|\band\b|\b(?:todo|tbd|tba)\b|yes\s*/\s*no|[\s,;/|:=?\-–—_*`]",
                                re.IGNORECASE)


def _answer_written(cased: str, match: re.Match, rest: str) -> str:
    """What the report writes after a label as the student wrote it (the label's line, or the
    next where the label stands alone), "" where that is a placeholder or nothing."""
    return _said(cased[match.end():match.end() + len(rest)])


def _said(text: str) -> str:
    """_answer_written of the text after a label."""
    heads = _answer_heads(text, "int_list")
    said = heads[0].strip() if heads else ""
    if not _PLACEHOLDER_PARTS.sub("", said):
        return ""
    return said if len(said) <= 80 else said[:77] + "..."


def _yes_no_after(label_end: int, cased: str, starts: list[Entry], layout: Layout,
                  question: str = "") -> LabelReading:
    """The yes or no after a label that ends at `label_end`: on the label's line, or, when
    nothing follows the label there, first on the next line. value is {"value", "explanation"};
    an answer that is there but not a clear yes or no gives no value and says what it is.
    `question`: the label's question, which a trend answers as a sheet's does ("Linearly: N - 1"
    to whether the transfers grow with the number of GPUs: yes_no.read_growth)."""
    def read(text: str):
        return read_growth(text, question) or read_yes_no(text)

    line_end = cased.find("\n", label_end)
    answer_at, said = label_end, until_next_label(cased[label_end:line_end])
    joined = len(said) < line_end - label_end   # another label follows on this line
    answer = read(said)
    if answer.unanswered and not said.strip() and line_end + 1 < len(cased):
        # The label on its own line, the answer under it, as a list item or not ("• no").
        following, listed = without_list_marker(cased[line_end + 1:cased.find("\n", line_end + 1)])
        under = read(following)
        if under.answered or (under.unclear and (listed or _an_answer_under(starts, line_end + 1))):
            answer_at, said, answer = line_end + 1, following, under
    if answer.unclear:
        shown = said.strip(" |:-")
        return LabelReading(problems=(repr(shown if len(shown) <= 60 else shown[:57] + "..."),))
    if not answer.answered:
        return LabelReading()
    entry = _entry_at(starts, answer_at)
    explanation = answer.explanation
    # Where another label follows on the line, the explanation ends there.
    # A label wrapped around its answer centred beside it ("Does increasing DEPTH improve speed"
    # / "no" / "(yes/no):") leaves the label's end under the answer: no part of the explanation.
    if entry.kind == PROSE and not joined:
        more = _LABEL_TAIL.sub("", _rest_of_paragraph(layout, entry.line))
        explanation = " ".join(filter(None, [explanation, more]))
    elif entry.kind == CELLS and not joined:
        more = _LABEL_TAIL.sub("", _under_last_cell(layout, entry.line))
        explanation = " ".join(filter(None, [explanation, more]))
    return LabelReading({"value": answer.value, "explanation": explanation}, answer_line=entry.line)


_LABEL_TAIL = re.compile(r"^\s*[\(\[]\s*yes\s*(?:/|or)\s*no\s*[\)\]]\s*[:?]?\s*", re.IGNORECASE)


def _an_answer_under(starts: list[Entry], offset: int) -> bool:
    """Whether the entry at `offset`, under a label left blank on its line, is that label's answer
    though not a clear one (found, for a person to read): a line of prose that starts nothing else
    (a heading, another label, a section, a table)."""
    entry = _entry_at(starts, offset)
    return (entry.start == offset and entry.kind == PROSE
            and not starts_something_else(entry.line, None, entry.line.bold))


def _lines_after(layout: Layout, line: Line):
    """The body lines after `line`, each with the line before it, as long as they are set
    tight under it: a paragraph's next line, also across a page or column break."""
    previous = line
    for following in layout.lines[line.index + 1:]:
        if following.furniture:
            continue
        same_place = (following.page, following.region) == (previous.page, previous.region)
        if same_place and following.top - previous.bottom > 0.9 * max(previous.size, 1):
            return  # a paragraph's gap
        if abs(following.size - line.size) > 0.5 or starts_something_else(following, line.size, line.bold):
            return
        # Another question asked in prose ("Is it faster with 5 GPUs than with 2? No.") is no
        # part of this answer's explanation, wherever its label stands in the line.
        if any(re.search(a.pattern, following.text) for a in contract.LABELLED_ANSWERS):
            return
        yield following
        previous = following


def _rest_of_paragraph(layout: Layout, line: Line) -> str:
    """The lines of prose under `line` in its paragraph (a yes/no's explanation wrapped)."""
    parts = []
    for following in _lines_after(layout, line):
        if len(following.cells) > 1 or following.ruled is not None:
            break
        parts.append(following.cased)
    return _join_wrapped(parts)


def _under_last_cell(layout: Layout, line: Line) -> str:
    """The lines under the last cell of an unruled line of cells, as long as nothing stands
    left of that cell (an answer cell's text wrapped; the next row starts with its label)."""
    left = line.cells[-1].x0 - 0.5 * max(line.size, 1)
    parts = []
    for following in _lines_after(layout, line):
        if following.ruled is not None or following.x0 < left:
            break
        parts.append(following.cased)
    return _join_wrapped(parts)


def question_answer_explanations(layout: Layout) -> dict[int, tuple[str, Line, str]]:
    """{task: (text, line, question cell)} of the explanations written in the answer cell of an
    unruled Question | Answer table ("Task 4 explanation" | its text), each row put back
    together (_view_rows): a cell centred beside its heading starts above the heading's line,
    and a heading wrapped in a narrow cell ("Task 3" / "explanation") is on no line whole, so
    the lines under the heading alone are not the answer."""
    found: dict[int, tuple[str, Line, str]] = {}
    for text, line, kind in _view_rows(layout.body()):
        question, separator, answer = text.partition(" | ")
        heading = contract.EXPLANATION_HEADING.match(normalise(question))
        if kind != ROW or line.ruled is not None or not separator or not heading:
            continue
        if heading.end() < len(normalise(question)):
            continue   # the question cell says more than the heading: not this row
        task = int(heading.group("a") or heading.group("b"))
        found.setdefault(task, (contract.without_prompt(task, answer.replace(" | ", " ").strip()), line, question))
    return found


def read_labels(layout: Layout) -> dict[str, LabelReading]:
    body = layout.body()
    by_line, by_row = _stream(_view_lines(body)), _stream(_view_rows(body))
    found = {}
    for answer in contract.LABELLED_ANSWERS:
        reading = LabelReading()
        for view in (by_line, by_row):
            attempt = _match(answer, view, layout)
            if attempt.value is not None:
                if answer.kind == "yes_no" and view is by_line:
                    attempt = _explanation_of_the_whole_row(attempt, _match(answer, by_row, layout))
                reading = attempt
                break
            if attempt.found_label and not reading.found_label:
                reading = attempt
        if not reading.found_label and answer.handout_pattern:
            # A report of the student's own structure, answering after the handout's questions.
            handout = replace(answer, pattern=answer.handout_pattern)
            attempt = _match(handout, by_line, layout, shown=answer.handout_text)
            if attempt.found_label:
                reading = replace(attempt, handout=True)
        found[answer.field] = reading
    return found


def _explanation_of_the_whole_row(line_reading: LabelReading, row_reading: LabelReading) -> LabelReading:
    """A yes/no read line by line, its explanation completed from the row put back together:
    where an unruled Question | Answer row's question and answer both wrap, the answer's
    second line stands beside the question's and ends the line view's explanation."""
    said, whole = line_reading.value, row_reading.value
    if (whole is not None and whole["value"] == said["value"] and len(whole["explanation"]) > len(said["explanation"])
            and whole["explanation"].startswith(said["explanation"])):
        return replace(line_reading, value=whole)
    return line_reading
