"""From the worker's words and boxes to the report's lines, in the order a person reads them.

    build_layout(worker_output) -> Layout

A line keeps its page, its height on the page, its font size and its cells (words far apart
on a line, or the cells of a ruled table's row), so the readers after it can find a table's
columns by position and say where each answer came from. What this module settles:

- pieces of one word split by a font change (LaTeX math mode puts the decimal point of
  "182.59" in another font) are joined again;
- a ruled table's row is one line whose cells are the ruled cells, however their text wraps;
  a table ruled only above and below its body (booktabs, or |p{}| columns with \\hline
  around the header only) is split into its text lines again, a wrapped cell's own line
  standing alone for the table reader to give to its row;
- a page set in two columns is read left column first, then the right one, with lines that
  span both (a title, a one-column section, a wide table) cutting the page into bands; the
  gutter is the whitespace river the fewest rows cross, found on the words before they are
  joined into lines, so lines of the two columns that share a baseline stay apart, and it
  is wider than a river through justified prose (in ems of the page's text, not points: an
  OCR'd page measures in pixels);
- running headers and footers, page numbers and tables of contents are marked `furniture`
  and never taken for answers.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field

from . import contract

_DASHES = dict.fromkeys(map(ord, "\u2010\u2011\u2012\u2013\u2014\u2015\u2212"), "-")
_SPACES = dict.fromkeys(map(ord, "\u00a0\u2007\u202f\u2009\u200a\u3000"), " ")
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\ufeff\u00ad"), None)

# Words closer than this (in ems) are pieces of one word; a gap wider than CELL_GAP_EM
# separates cells (an ordinary space is a quarter to a third of an em).
TOUCH_EM = 0.12
CELL_GAP_EM = 0.9
# Running headers and footers live in these bands at the top and bottom of a page.
BAND = 0.075
# A table set in text is ruled with characters: the line under its header in tabulate's,
# pandoc's plain, psql's and org-mode's tables ("-------  --------", "===="), a grid table's
# borders ("+----+----+", "|---|:--:|", box drawing "├────┼────┤"). A line of them is no text.
_RULE_CHARACTERS = re.compile(r"[-=_+|:¦\s\u2500-\u257f]*")
_RULE_STROKES = re.compile(r"[-=_\u2500-\u257f]")
# Bars that part a text table's cells ("| 6 | 62.73 |", a box-drawing grid's "│").
_BARS = "|¦│┃║"
# Two columns of text are at least this far apart (pt), and at least this many ems of their
# text: LaTeX's \columnsep is 10 pt (an em of 10 pt text), Word's default 1.25 cm, CSS's
# column-gap 1 em. A river through justified prose is narrower: in an OCR'd page (its
# unit a pixel, its text 20 units high) five lines' word gaps lined up 10 units wide.
_MIN_GUTTER_PT = 6
_MIN_GUTTER_EM = 0.7


def normalise(text: str, *, keep_case: bool = False) -> str:
    """Lower case, NFKC (splits ligatures like "ﬁ"), one kind of dash, quote and space, so
    patterns need not list every typographic variant. With keep_case, the same text in the
    student's case: lower_same_length() of it is the normalised text, offset for offset."""
    text = unicodedata.normalize("NFKC", text).translate(_DASHES).translate(_SPACES).translate(_INVISIBLE)
    text = text.replace("\u2018", "'").replace("\u2019", "'").replace("\u201c", '"').replace("\u201d", '"')
    text = re.sub(r"[ \t]+", " ", text).strip()
    return text if keep_case else lower_same_length(text)


def lower_same_length(text: str) -> str:
    """Lower case, character for character ("İ" would lower to two), so that a match found in
    the lower-case text is at the same offsets in the text as written."""
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    return "".join(c.lower() if len(c.lower()) == 1 else c for c in text)


def clean(text: str) -> str:
    """The student's own text, readable: NFKC and one kind of space, case kept."""
    text = unicodedata.normalize("NFKC", text).translate(_SPACES).translate(_INVISIBLE)
    return text.replace("\u2019", "'")


@dataclass
class Word:
    text: str
    x0: float
    x1: float
    top: float
    bottom: float
    size: float
    bold: bool

    @property
    def middle(self) -> float:
        return (self.top + self.bottom) / 2


@dataclass
class Cell:
    words: list[Word]
    x0: float  # a ruled cell's box, else its words' extent
    x1: float

    @property
    def raw(self) -> str:
        return clean(" ".join(w.text for w in self.words))

    @property
    def text(self) -> str:
        return normalise(self.raw)

    @property
    def cased(self) -> str:
        """The normalised text in the student's case (explanations are shown as written)."""
        return normalise(self.raw, keep_case=True)


@dataclass
class Line:
    page: int  # 1-based
    top: float
    bottom: float
    cells: list[Cell]
    ruled: int | None = None  # id of the ruled table this row belongs to
    region: int = 0  # 0: full width, 1: left column, 2: right column
    furniture: str = ""  # "", "header/footer", "contents"
    index: int = 0  # position in the document's reading order

    @property
    def words(self) -> list[Word]:
        return [w for c in self.cells for w in c.words]

    @property
    def raw(self) -> str:
        return "\t".join(c.raw for c in self.cells)

    @property
    def text(self) -> str:
        """Normalised, cells joined by a space."""
        return " ".join(c.text for c in self.cells)

    @property
    def cased(self) -> str:
        return " ".join(c.cased for c in self.cells)

    @property
    def size(self) -> float:
        return max((w.size for w in self.words), default=0.0)

    @property
    def rule(self) -> bool:
        """Whether the line is a rule drawn in characters ("-------  --------", "+----+"),
        no row of a table: at least three strokes, nothing else but crossings and spaces."""
        text = self.text
        return bool(_RULE_CHARACTERS.fullmatch(text)) and len(_RULE_STROKES.findall(text)) >= 3

    @property
    def bold(self) -> bool:
        letters = [w for w in self.words if re.search(r"[A-Za-z]", w.text)]
        return bool(letters) and all(w.bold for w in letters)

    @property
    def x0(self) -> float:
        return min((c.x0 for c in self.cells), default=0.0)

    @property
    def x1(self) -> float:
        return max((c.x1 for c in self.cells), default=0.0)

    def where(self) -> str:
        return f"page {self.page}"


@dataclass
class Picture:
    page: int
    x0: float
    top: float
    x1: float
    bottom: float
    index: float = 0.0  # between the lines it sits between in reading order


@dataclass
class Layout:
    lines: list[Line] = field(default_factory=list)
    pictures: list[Picture] = field(default_factory=list)
    body_size: float | None = None
    pages: int = 0
    text_pages: int = 0
    ocr: bool = False

    def body(self) -> list[Line]:
        return [line for line in self.lines if not line.furniture]


# ---------------------------------------------------------------- words and lines


def _words(page: dict) -> list[Word]:
    return [Word(w[0], w[1], w[2], w[3], w[4], w[5] or 1.0, bool(w[6])) for w in page.get("words", [])]


def _rows(words: list[Word]) -> list[list[Word]]:
    """Words on one baseline, left to right; touching pieces joined into one word."""
    rows: list[list[Word]] = []
    for word in sorted(words, key=lambda w: (w.middle, w.x0)):
        if rows:
            last = rows[-1]
            middle = sum(w.middle for w in last) / len(last)
            if abs(word.middle - middle) <= 0.45 * min(word.size, last[0].size):
                last.append(word)
                continue
        rows.append([word])
    joined = []
    for row in rows:
        row.sort(key=lambda w: w.x0)
        merged = [row[0]]
        for word in row[1:]:
            previous = merged[-1]
            if word.x0 - previous.x1 < TOUCH_EM * min(word.size, previous.size):
                merged[-1] = Word(previous.text + word.text, previous.x0, max(previous.x1, word.x1),
                                  min(previous.top, word.top), max(previous.bottom, word.bottom),
                                  max(previous.size, word.size), previous.bold and word.bold)
            else:
                merged.append(word)
        joined.append(merged)
    return joined


def _bars_apart(words: list[Word]) -> list[Word]:
    """Words that start or end with a bar ("|6|12.5|", "62.73|": a table set in text without
    spaces inside its borders) cut at their bars, each piece and bar with its share of the
    width. A bar inside a word of prose ("a|b") is left as it is."""
    out = []
    for word in words:
        text = word.text
        if len(text) < 2 or not (text[0] in _BARS or text[-1] in _BARS):
            out.append(word)
            continue
        width = (word.x1 - word.x0) / len(text)
        for piece in re.finditer(f"[{_BARS}]+|[^{_BARS}]+", text):
            out.append(Word(piece.group(), word.x0 + piece.start() * width, word.x0 + piece.end() * width,
                            word.top, word.bottom, word.size, word.bold))
    return out


def _cells(words: list[Word]) -> list[Cell]:
    cells: list[list[Word]] = []
    after_bar = False
    for word in _bars_apart(words):
        if word.text and all(c in _BARS for c in word.text):
            # A Markdown, org-mode or grid table printed as text: the bars part the cells.
            after_bar = True
            continue
        if cells and not after_bar and word.x0 - cells[-1][-1].x1 <= CELL_GAP_EM * word.size:
            cells[-1].append(word)
        else:
            cells.append([word])
        after_bar = False
    return [Cell(c, c[0].x0, max(w.x1 for w in c)) for c in cells]


def _line(page: int, words: list[Word], **extra) -> Line | None:
    cells = _cells(words)
    return Line(page, min(w.top for w in words), max(w.bottom for w in words), cells, **extra) if cells else None


# ---------------------------------------------------------------- ruled tables


def _inside(word: Word, box: list) -> bool:
    x = (word.x0 + word.x1) / 2
    return box[0] - 1 <= x <= box[2] + 1 and box[1] - 1 <= word.middle <= box[3] + 1


def _ruled_lines(page_number: int, table: dict, table_id: int, free: list[Word]) -> list[Line]:
    """One line per row of the ruled table, its cells the ruled cells; the words used are
    taken out of `free`."""
    lines = []
    for row in table["rows"]:
        boxes = [box for box in row if box]
        cell_rows = []
        for box in boxes:
            inside = [w for w in free if _inside(w, box)]
            for word in inside:
                free.remove(word)
            cell_rows.append((box, _rows(inside)))
        filled = [(box, rows) for box, rows in cell_rows if rows]
        if not filled:
            continue
        counts = {len(rows) for _, rows in filled}
        if (len(filled) >= 2 and len(counts) == 1 and (k := counts.pop()) > 1 and _aligned(filled, k)
                and not _one_question(filled)):
            # Body rows stacked in one ruled row (booktabs): one line per text line.
            for i in range(k):
                cells = [Cell(rows[i], box[0], box[2]) for box, rows in filled]
                words = [w for c in cells for w in c.words]
                lines.append(Line(page_number, min(w.top for w in words), max(w.bottom for w in words), cells,
                                  ruled=table_id))
            continue
        if _stacked_rows_with_a_wrap(filled):
            # Body rows stacked in one ruled row, one of their cells wrapped ("80.1, / 80.6" in a
            # narrow p{} column): one line per baseline; a wrapped cell's own line stands
            # alone, and the table reader gives it to the row it sits beside.
            for band in _baselines(filled):
                cells = [Cell(row, box[0], box[2]) for box, row in band]
                words = [w for c in cells for w in c.words]
                lines.append(Line(page_number, min(w.top for w in words), max(w.bottom for w in words), cells,
                                  ruled=table_id))
            continue
        cells = [Cell([w for r in rows for w in r], box[0], box[2]) for box, rows in filled]
        words = [w for c in cells for w in c.words]
        lines.append(Line(page_number, min(w.top for w in words), max(w.bottom for w in words), cells, ruled=table_id))
    return lines


def _one_question(filled) -> bool:
    """Whether a ruled row's text lines are one Question | Answer row, both cells wrapped
    to the same number of lines, rather than body rows stacked: its first cell's lines are
    one of the template's questions, wrapped."""
    first = min(filled, key=lambda cell: cell[0][0])[1]
    return contract.question_span([normalise(" ".join(w.text for w in row)) for row in first]) > 1


def _stacked_rows_with_a_wrap(filled) -> bool:
    """Whether a ruled row holds several body rows (a table ruled only around its body, its
    vertical rules drawn) while a cell wraps, so the cells hold different numbers of text
    lines: the first cell stacks short keys with a number ("2" over "5"), each beside a line
    of another cell. A question wrapped beside its answer has long lines in its first cell,
    a header wrapped in a narrow cell ("GPU" / "s") no number."""
    if len(filled) < 2:
        return False
    first = min(filled, key=lambda cell: cell[0][0])
    keys = first[1]
    if (len(keys) < 2 or any(len(row) > 3 or not any(c.isdigit() for w in row for c in w.text) for row in keys)
            or _one_question(filled)):
        return False
    others = [cell[1] for cell in filled if cell is not first]
    for row in keys:
        middle = sum(w.middle for w in row) / len(row)
        if not any(abs(sum(w.middle for w in other) / len(other) - middle) <= 0.45 * row[0].size
                   for rows in others for other in rows):
            return False
    return True


def _baselines(filled) -> list[list[tuple[list, list[Word]]]]:
    """The text lines of a ruled row's cells grouped by baseline, top to bottom: each group
    is the (cell box, words) of the cells that have a line there."""
    entries = sorted(((sum(w.middle for w in row) / len(row), box, row) for box, rows in filled for row in rows),
                     key=lambda entry: entry[0])
    bands: list[list[tuple[float, list, list[Word]]]] = []
    for entry in entries:
        if bands and abs(entry[0] - bands[-1][0][0]) <= 0.45 * entry[2][0].size:
            bands[-1].append(entry)
        else:
            bands.append([entry])
    return [[(box, row) for _, box, row in sorted(band, key=lambda e: e[1][0])] for band in bands]


def _aligned(filled, k: int) -> bool:
    for i in range(k):
        middles = [sum(w.middle for w in rows[i]) / len(rows[i]) for _, rows in filled]
        if max(middles) - min(middles) > 0.6 * max(w.size for _, rows in filled for w in rows[i]):
            return False
    return True


# ---------------------------------------------------------------- columns of text


def _strip(row: list[Word], g0: float, g1: float) -> tuple[list[Word], list[Word], bool]:
    """A row's words left of the strip [g0, g1], right of it, and whether a word crosses it."""
    left = [w for w in row if w.x1 <= g0 + 0.5]
    right = [w for w in row if w.x0 >= g1 - 0.5]
    return left, right, len(left) + len(right) < len(row)


def _is_gutter(rows: list[list[Word]], g0: float, g1: float, width: float) -> bool:
    """Whether [g0, g1] parts two columns of text: many rows on the left end next to it (a
    column's right margin), rows on the right start next to it, both sides hold lines of
    text as wide as a column, and few rows cross it (a title, a one-column section, a page
    number). A wide gap between a table's columns has no such lines beside it; a borderless
    Question | Answer table over the page's width, whose answers wrap into lines as wide as
    a column, is told by its rows (_label_answer_pairs)."""
    if _label_answer_pairs(rows, g0, g1) >= _QA_PAIRS:
        return False
    lefts, rights, crossing = [], [], 0
    for row in rows:
        left, right, crosses = _strip(row, g0, g1)
        if crosses:
            crossing += 1
            continue
        if left:
            lefts.append((min(w.x0 for w in left), max(w.x1 for w in left)))
        if right:
            rights.append((min(w.x0 for w in right), max(w.x1 for w in right)))
    left_full = [x0 for x0, x1 in lefts if x1 >= g0 - 0.12 * width]
    right_near = [x0 for x0, x1 in rights if x0 <= g1 + 0.05 * width]
    wide = 0.25 * width
    return (len(left_full) >= 6 and len(right_near) >= 3 and len(left_full) >= 0.25 * len(lefts)
            and sum(x1 - x0 >= wide for x0, x1 in lefts) >= 3 and sum(x1 - x0 >= wide for x0, x1 in rights) >= 3
            and crossing <= 0.5 * min(len(lefts), len(rights)))


# Rows of a Question | Answer table that tell it from two columns of text: in a page of two
# columns a label alone at the end of a left line, beside a right line that starts like an
# answer, is chance; twice on a page it is a table.
_QA_PAIRS = 2
_ANSWER_START = re.compile(r"\s*(?:\d|(?:yes|no)\b)")


def _label_answer_pairs(rows: list[list[Word]], g0: float, g1: float) -> int:
    """How many of the template's labels stand alone left of [g0, g1] (wrapped over up to
    three lines) with their answer starting right of it, on a row the label spans (a value
    centred beside a wrapped label sits between its lines): the rows of a Question | Answer
    table set over the page's width without borders (Word, LibreOffice, Google Docs), whose
    gap between the columns runs down the page like a gutter (a TA's audit 30: such a report
    was read all labels first, then all answers). In a page of two columns the left column's
    labels have their answers after them in the same column."""
    sides = []  # (left text, right text) of the rows that do not cross the strip, top to bottom
    for row in sorted(rows, key=lambda r: min(w.top for w in r)):
        left, right, crosses = _strip(row, g0, g1)
        if not crosses:
            sides.append((normalise(" ".join(w.text for w in left)), normalise(" ".join(w.text for w in right))))
    with_left = [i for i, (left, _) in enumerate(sides) if left]
    pairs, position = 0, 0
    while position < len(with_left):
        for span in (1, 2, 3):
            group = with_left[position:position + span]
            if len(group) < span or not contract.label_alone(" ".join(sides[i][0] for i in group)):
                continue
            beside = next((right for _, right in sides[group[0]:group[-1] + 1] if right), "")
            if _ANSWER_START.match(beside):
                pairs += 1
                position += span - 1
            break
        position += 1
    return pairs


def _still_columns(rows: list[list[Word]], g0: float, g1: float, width: float) -> bool:
    """Whether a page goes on in the previous page's columns: its gutter is still free (a
    footer may cross it), there is text on both sides, and the sides are either not row by
    row beside each other as a table's columns are, or both hold lines of prose as wide as a
    column. A short last page, or one whose left column holds only the end of a table, has
    too few lines to show its columns itself."""
    crossing = alone = left = right = wide_left = wide_right = 0
    for row in rows:
        l, r, crosses = _strip(row, g0, g1)
        crossing += crosses
        if not crosses:
            left += bool(l)
            right += bool(r)
            alone += bool(l) != bool(r)
            wide_left += bool(l) and max(w.x1 for w in l) - min(w.x0 for w in l) >= 0.25 * width
            wide_right += bool(r) and max(w.x1 for w in r) - min(w.x0 for w in r) >= 0.25 * width
    return (crossing <= max(2, 0.15 * len(rows)) and left >= 3 and right >= 3
            and (alone >= 3 or (wide_left >= 2 and wide_right >= 2)))


def _gutter(rows: list[list[Word]], width: float, previous: tuple | None = None) -> tuple[float, float] | None:
    """The gap between two columns of text, if the page has them: the widest vertical strip
    in the middle of the page that the fewest rows of words cross (a whitespace river).
    Rows that do cross it (a title over both columns, a page number in the footer, a
    one-column section) are allowed as long as the columns beside it are plainly there.
    Failing that, the previous page's gutter, where this page plainly goes on in it."""
    found = _own_gutter(rows, width)
    if found is None and previous is not None and _still_columns(rows, *previous, width):
        return previous
    return found


def _own_gutter(rows: list[list[Word]], width: float) -> tuple[float, float] | None:
    if len(rows) < 8:
        return None
    lo, hi = int(width * 0.3), int(width * 0.7)
    sizes = sorted(w.size for row in rows for w in row)
    narrowest = max(_MIN_GUTTER_PT, _MIN_GUTTER_EM * sizes[len(sizes) // 2])
    covered = [0] * (hi - lo + 1)
    for row in rows:
        spans = sorted({x for w in row for x in range(max(lo, int(w.x0) + 1), min(hi, int(w.x1)) + 1)})
        for x in spans:  # each row counts once however many words it has there
            covered[x - lo] += 1
    tried = set()
    for allowed in sorted(set(covered)):
        if allowed > 0.3 * len(rows):
            break
        runs, start = [], None
        for i, count in enumerate(covered + [len(rows) + 1]):
            if count <= allowed and start is None:
                start = i
            elif count > allowed and start is not None:
                if i - start >= narrowest:
                    runs.append((lo + start, lo + i - 1))
                start = None
        for g0, g1 in sorted(runs, key=lambda r: r[0] - r[1]):
            if (g0, g1) not in tried:
                tried.add((g0, g1))
                if _is_gutter(rows, g0, g1, width):
                    return g0, g1
    return None


def _running_rows(rows: list[list[Word]], height: float) -> set[int]:
    """The rows of a running header or footer: in the page's top (bottom) band and set apart
    from the body below (above) them. They run over the page's width, over the columns too:
    split into columns, 'LTAT.06.030' at the top right would be read after the left column."""
    found: set[int] = set()
    ordered = sorted(rows, key=lambda r: min(w.top for w in r))
    for edge, in_band in ((ordered, lambda r: max(w.bottom for w in r) <= BAND * height),
                          (ordered[::-1], lambda r: min(w.top for w in r) >= (1 - BAND) * height)):
        band = []
        for row, inner in zip(edge, edge[1:]):
            if not in_band(row):
                break
            band.append(row)
            outer_top, outer_bottom = min(w.top for w in row), max(w.bottom for w in row)
            gap = (min(w.top for w in inner) - outer_bottom if edge is ordered
                   else outer_top - max(w.bottom for w in inner))
            if gap >= 1.2 * max(w.size for w in row):
                found |= {id(r) for r in band}
                break
    return found


def _lines_in_columns(page: int, ruled: list[Line], free: list[Word], width: float, height: float,
                      previous: tuple | None = None) -> tuple[list[Line], tuple | None]:
    """The page's lines, each in its region: 0 across the page, 1 the left column, 2 the
    right one. Words are put in a column before they are joined into lines, so two columns
    whose baselines nearly match never share a line."""
    rows = _rows(free)
    gutter = _gutter(rows + [line.words for line in ruled], width, previous)
    if gutter is None:
        return ruled + [line for line in (_line(page, row) for row in rows) if line], None
    g0, g1 = gutter
    running = _running_rows(rows, height)
    lines: list[Line] = []
    sides: dict[int, list[Word]] = {1: [], 2: []}
    for row in rows:
        left, right, crosses = _strip(row, g0, g1)
        if crosses or id(row) in running:
            lines.append(_line(page, row))
        else:
            sides[1] += left
            sides[2] += right
    for region, words in sides.items():
        for row in _rows(words):
            lines.append(_line(page, row, region=region))
    for line in ruled:
        left, right, crosses = _strip(line.words, g0, g1)
        line.region = 0 if crosses or (left and right) else (1 if left else 2)
        lines.append(line)
    return [line for line in lines if line], gutter


def _reading_order(lines: list[Line]) -> list[Line]:
    """Top to bottom; where the page has two columns, lines spanning both cut the page into
    bands, and each band is read left column first."""
    lines.sort(key=lambda l: (l.top, l.x0))
    ordered, band = [], []
    for line in lines:
        if line.region == 0:
            ordered += sorted(band, key=lambda l: (l.region, l.top, l.x0)) + [line]
            band = []
        else:
            band.append(line)
    return ordered + sorted(band, key=lambda l: (l.region, l.top, l.x0))


# ---------------------------------------------------------------- rows of unruled tables


@dataclass
class CellLines:
    """Lines of an unruled table that overlap vertically (a band: cells set at different
    heights, like a vertically centred value beside a two-line label), their texts by
    column, and whether they start a row (an anchor: the row's key, or both a question and
    its answer)."""
    lines: list[Line]
    cells: dict
    anchor: bool = False

    @property
    def top(self) -> float:
        return min(line.top for line in self.lines)

    @property
    def bottom(self) -> float:
        return max(line.bottom for line in self.lines)

    @property
    def size(self) -> float:
        return max(line.size for line in self.lines)

    def next_to(self, other: "CellLines") -> bool:
        first, second = self.lines[0], other.lines[0]
        return first.page == second.page and first.region == second.region


def _bands(entries: list[tuple[Line, dict]]) -> list[CellLines]:
    """Lines that overlap vertically by more than a quarter of a line are one band."""
    bands: list[CellLines] = []
    for line, cells in entries:
        band = bands[-1] if bands else None
        if (band and band.lines[-1].page == line.page and band.lines[-1].region == line.region
                and min(band.bottom, line.bottom) - max(band.top, line.top) > 0.25 * min(line.bottom - line.top, 99)):
            band.lines.append(line)
            for column, texts in cells.items():
                band.cells.setdefault(column, []).extend(texts)
        else:
            bands.append(CellLines([line], {column: list(texts) for column, texts in cells.items()}))
    return bands


def _opens_a_value(member: CellLines, block: list[CellLines], column) -> bool:
    """Whether `member` starts a new value rather than continuing the line above it: the
    line above is a complete value ("200.45, 200.7": ends in a number or unit, no list
    separator after it) and this one starts with a number."""
    position = next(i for i, b in enumerate(block) if b is member)
    if position == 0:
        return False
    above, mine = block[position - 1].cells[column][-1], member.cells[column][0]
    return (bool(re.search(r"\w\)?\s*$", above)) and not re.search(r"(?:\band|[,;/&+\-])\s*$", above)
            and bool(re.match(r"\s*\d", mine)))


def _owner(member: CellLines, block: list[CellLines], bands: list[CellLines], column) -> CellLines | None:
    beside = _beside(block, bands)
    if beside:
        above = [b for b in beside if b.top <= member.top + 1]
        below = [b for b in beside if b.top > member.top + 1]
        if above and below and _opens_a_value(member, block, column):
            return below[0]  # centred cells: the next row's value starts above its anchor
        return above[-1] if above else beside[0]
    position = next(i for i, b in enumerate(bands) if b is member)
    before = [b for b in bands[:position] if b.anchor]
    after = [b for b in bands[position:] if b.anchor]
    return before[-1] if before else (after[0] if after else None)


def _split_at_padding(block: list[CellLines]) -> list[list[CellLines]]:
    """A column's block cut where the space between two lines is clearly wider than its
    tightest: cells are padded, so the space between rows is wider than between the lines
    of one cell (tables set with no padding at all keep one block)."""
    gaps = [b.top - a.bottom for a, b in zip(block, block[1:])]
    if len(gaps) < 2:
        return [block]
    tightest = min(gaps)
    pieces = [[block[0]]]
    for gap, band in zip(gaps, block[1:]):
        if gap > tightest + max(1.5, 0.15 * band.size):
            pieces.append([band])
        else:
            pieces[-1].append(band)
    return pieces


def _blocks(bands: list[CellLines], column) -> list[list[CellLines]]:
    """The column's lines cut into blocks of lines set tight one under the other, cut again
    where the space between lines is clearly wider than the block's tightest."""
    blocks: list[list[CellLines]] = []
    for band in (b for b in bands if b.cells.get(column)):
        previous = blocks[-1][-1] if blocks else None
        if previous and previous.next_to(band) and band.top - previous.bottom < 0.6 * max(band.size, 1):
            blocks[-1].append(band)
        else:
            blocks.append([band])
    return [piece for block in blocks for piece in _split_at_padding(block)]


def _beside(block: list[CellLines], bands: list[CellLines]) -> list[CellLines]:
    top, bottom = min(m.top for m in block), max(m.bottom for m in block)
    return [b for b in bands if b.anchor and b.next_to(block[0]) and b.top < bottom - 1 and b.bottom > top + 1]


def rows_by_anchor(entries: list[tuple[Line, dict]], is_anchor, orphans_start_rows=(),
                   row_key=None) -> list[tuple[list[Line], dict]]:
    """(lines, texts by column) per row of an unruled table, from its lines in reading order
    with their texts by column; is_anchor(texts by column) says whether a band starts a row;
    bands with the same row_key(band) (a question wrapped over them) are one row, whose
    anchor is the first of them that is one;
    a block of a column in orphans_start_rows beside no anchor starts a row of its own (an
    answer whose label went on past a column break), unless it opens the page or column the
    table went on to (the rest of an answer the break cut).

    Without ruling lines, a cell's lines are the row's when they sit beside its anchor:
    top-aligned cells start on it, vertically centred ones reach above and below it. So
    each column's lines are cut into blocks of lines set tight one under the other (and cut
    again where the space between lines is clearly wider than the block's tightest); a block
    beside one anchor is that row's; where a block reaches beside several (rows with no
    space between them) each line belongs to the nearest anchor at or above it (top-aligned
    cells), unless the line above it is a complete value and it starts with a number: then
    it opens the next row's value, centred around that row's anchor; a block beside none is
    the rest of a row cut by a page break, or runs on from the row above.
    """
    bands = _bands(entries)
    keys = {id(band): row_key(band) if row_key else None for band in bands}
    keyed: dict = {}  # row key -> its anchor
    for band in bands:
        band.anchor = bool(is_anchor(band.cells))
        if band.anchor and keys[id(band)] is not None:
            band.anchor = keyed.setdefault(keys[id(band)], band) is band
    columns = list(dict.fromkeys(c for b in bands for c in b.cells))
    for column in (c for c in columns if c in orphans_start_rows):
        for block in _blocks(bands, column):
            # At the top of a page or column the table went on to, a block beside no anchor
            # is the rest of the row the break cut (its answer ran on); at the foot of one it
            # is an answer whose question went on past the break.
            opens_the_place = block[0] is next(b for b in bands if b.next_to(block[0])) and block[0] is not bands[0]
            if not _beside(block, bands) and not opens_the_place:
                block[0].anchor = True
    cells: dict[int, dict] = {id(b): {} for b in bands if b.anchor}
    members: dict[int, set] = {id(b): {id(b)} for b in bands if b.anchor}
    for column in columns:
        for block in _blocks(bands, column):
            for member in block:
                owner = member if member.anchor else (keyed.get(keys[id(member)]) if keys[id(member)] is not None
                                                       else None) or _owner(member, block, bands, column)
                if owner is not None:
                    cells[id(owner)].setdefault(column, []).extend(member.cells[column])
                    members[id(owner)].add(id(member))
    return [([line for m in bands if id(m) in members[id(b)] for line in m.lines], cells[id(b)])
            for b in bands if b.anchor]


# ---------------------------------------------------------------- furniture

_FURNITURE_TEXT = re.compile(
    r"^(?:page\s*)?\d+(?:\s*(?:/|of)\s*\d+)?$|^(?:file|https?)://|^\d{1,2}/\d{1,2}/\d{2,4},?\s+\d{1,2}:\d{2}",
)
_NUMBER_CELL = re.compile(r"^[\d.,\s]+(?:ms|s|us|µs|mib|gib|mb|gb)?$")
_LEADER = re.compile(r"(?:\.\s*){4,}\d+$|(?:\s\.){3,}\s*\d+$")
_CONTENTS = re.compile(r"^\W*(?:table\s+of\s+)?contents\W*$")


def _is_table_row(line: Line) -> bool:
    """A row of a table near the page's edge (a table running onto the next page) is
    content, even though "12" alone reads like a page number and rows look alike once digits
    are masked: a ruled row, "12 | 125.61", or a row with three or more cells holding
    numbers ("0 | 2 | 182.59 | cuda:0: 200.4"), which no running header or footer has."""
    if line.ruled is not None:
        return True
    if len(line.cells) >= 2 and all(_NUMBER_CELL.match(c.text) for c in line.cells):
        return True
    return sum(bool(re.search(r"\d", c.text)) for c in line.cells) >= 3


def _mark_furniture(lines: list[Line], heights: dict[int, float], body_size: float | None) -> None:
    in_band = {id(l): l.top < BAND * heights[l.page] or l.bottom > (1 - BAND) * heights[l.page] for l in lines}
    # A running header or footer comes back at the same edge and height on other pages:
    # "Number of transfers with 2 GPUs: 1" at the foot of one page and "... 5 GPUs: 4" at the
    # top of the next look alike with their digits masked, but are body text.
    places: dict[tuple, list] = {}
    for l in lines:
        if in_band[id(l)]:
            places.setdefault((l.top < heights[l.page] / 2, re.sub(r"\d+", "#", l.text)), []).append(l)

    def repeated_at_its_place(line: Line) -> bool:
        alike = places.get((line.top < heights[line.page] / 2, re.sub(r"\d+", "#", line.text)), [])
        return any(o.page != line.page and abs(o.top - line.top) <= 0.6 * max(line.size, 1) for o in alike)

    def running(line: Line) -> bool:
        if _is_table_row(line):
            return False
        # Repeated lines count only when not set larger than the body text: "Task 2
        # explanation" at the top of two pages is a heading each time.
        repeated = repeated_at_its_place(line) and line.size <= (body_size or line.size) * 1.02
        cells = [c.text for c in line.cells]
        if len(cells) == 1 and cells[0].isdigit():
            # A number alone is the page's number, or one at that place on other pages too;
            # otherwise it is body text: an answer ("20") left at the page's foot when its
            # Question | Answer row was cut by the break.
            return int(cells[0]) == line.page or repeated
        return bool((body_size and line.size < 0.88 * body_size and len(line.text.split()) < 12)
                    or _FURNITURE_TEXT.search(cells[0]) or _FURNITURE_TEXT.search(cells[-1]) or repeated)

    # A running header or footer sits between the page's edge and the body: walking in from
    # the edge, the first line that is not one ends it ("calls with 2 | 20" under a table's
    # repeated header near the top is body, however much "20" looks like a page number).
    for page in {l.page for l in lines}:
        mine = [l for l in lines if l.page == page and in_band[id(l)]]
        middle = heights[page] / 2
        for edge in (sorted((l for l in mine if l.top < middle), key=lambda l: l.top),
                     sorted((l for l in mine if l.top >= middle), key=lambda l: -l.bottom)):
            for line in edge:
                if not running(line):
                    break
                line.furniture = "header/footer"
    in_contents = False
    for line in lines:
        if line.furniture:
            continue
        if _LEADER.search(line.text):
            line.furniture, in_contents = "contents", True
            continue
        if _CONTENTS.match(line.text):
            line.furniture, in_contents = "contents", True
            continue
        # Under a "Contents" heading, entries end with their page number (LaTeX's section
        # entries have no dot leaders).
        if in_contents and re.search(r"\s\d{1,3}$", line.text) and len(line.text.split()) <= 14:
            line.furniture = "contents"
        else:
            in_contents = False


def _body_size(lines: list[Line]) -> float | None:
    """The size most text is set in on the first page: an appendix in a small font (a log,
    code) can hold more characters than the answers, but it comes last."""
    sizes: Counter = Counter()
    first_pages = sorted({l.page for l in lines})[:1]
    for line in lines:
        if line.page in first_pages:
            for word in line.words:
                sizes[round(word.size, 1)] += len(word.text)
    return sizes.most_common(1)[0][0] if sizes else None


# ---------------------------------------------------------------- the document


def build_layout(worker_output: dict) -> Layout:
    layout = Layout(pages=len(worker_output.get("pages", [])))
    heights, lines, pictures, gutter = {}, [], [], None
    ocr_chars = chars = 0
    for number, page in enumerate(worker_output.get("pages", []), start=1):
        heights[number] = page.get("height") or 842.0
        chars += page.get("chars", 0)
        ocr_chars += page.get("ocr_chars", 0)
        layout.text_pages += bool(page.get("chars"))
        free = _words(page)
        ruled = []
        for table_id, table in enumerate(page.get("ruled", [])):
            ruled += _ruled_lines(number, table, number * 1000 + table_id, free)
        page_lines, gutter = _lines_in_columns(number, ruled, free, page.get("width") or 595.0, heights[number], gutter)
        page_lines = _reading_order(page_lines)
        lines += page_lines
        for x0, top, x1, bottom in page.get("images", []):
            if x1 - x0 >= 30 and bottom - top >= 12:  # bullets, rules drawn as images, logos' dots
                region = 0 if not gutter else (1 if x1 <= gutter[0] + 1 else 2 if x0 >= gutter[1] - 1 else 0)
                pictures.append((number, region, Picture(number, x0, top, x1, bottom)))
    for index, line in enumerate(lines):
        line.index = index
    for number, region, picture in pictures:
        before = [l.index for l in lines if l.page < number or (l.page == number and (
            (l.region, l.top) <= (region, picture.top) if region and l.region else l.top <= picture.top))]
        picture.index = (max(before) if before else -1) + 0.5
        layout.pictures.append(picture)
    layout.body_size = _body_size(lines)
    _mark_furniture(lines, heights, layout.body_size)
    layout.lines = lines
    layout.ocr = chars > 0 and ocr_chars >= 0.5 * chars
    return layout
