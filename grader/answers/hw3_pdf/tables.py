"""Tables found by their headers, wherever they are, and read column by column.

    read_table(layout, spec) -> TableReading | None

A header is one line or several (a header cell may wrap upwards, as Word and LibreOffice
align header cells to the bottom, or downwards, and cells centred at different heights
interleave their lines) whose cells, read column by column, hold every column the spec
names; any other column is ignored. A header cell's words spread wider than a cell gap
(justified text, OCR) are joined again where only together they name a column, where they
make a column's name longer ("Memory  per  GPU"), or where the values below bridge them. Each data word goes to the column
whose header it sits under, so the order of columns, extra columns, a DataFrame's index and
two columns set close together ("2 182.59 ms") do not matter. A table runs on while its key
column holds whole numbers, over a page break with or without its header repeated. Each key
line is a row; a cell's other lines (a value wrapped in a narrow cell, above and below the
key line when the cell is vertically centred) go to the row they sit beside. A table with
the configurations as columns (transposed) is read the same way, turned. A table set in text
is ruled with characters (`-------  --------` under the header in tabulate's, pandoc's plain,
psql's and rst tables, `+----+----+` and `|---|---|` in grid, pipe and org-mode tables): such
rule lines are no rows and no header, and are passed over wherever they stand (red team adv39
F2: the dashed line had ended the table above its first row).

    header_without_rows(layout, spec) -> HeaderWithoutRows | None

Where no table was read, the header found as a table's with lines under it that start as rows
do: a table written but not read, for a person (reader.py), not "not answered".

Task 4's memory may be laid out per GPU: a column per GPU ("GPU 0 (MiB)" ... "GPU 4 (MiB)",
a cell left empty or "-" for a GPU the configuration lacks), a row per GPU in a turned table,
or a row per GPU ("2 | cuda:0 | 182.59 | 200.4", "2 | cuda:1 | | 200.7"), whose rows are
gathered into the configuration's list in GPU order when each gives one GPU's memory and they
agree on the step time. Rows of one configuration that do not (two runs) keep the first, said.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from . import contract
from .layout import CELL_GAP_EM, Layout, Line, Word, normalise, rows_by_anchor
from ..numbers import decimal_mark, memory_unit_factor_mib, parse_memory_list_mib, parse_time_ms, time_unit_factor_ms

_KEY_CELL = re.compile(r"^\W*(?:depth|gpus?)?\s*[=:]?\s*(\d+)\s*(?:gpus?|layers?)?\W*$")
_MAX_ROWS = 60
# A header cell wraps over a few lines, and cells centred vertically at different heights
# interleave their lines: "Memory / per / GPU / (MiB)" beside "Step / time / (ms)" is 7 lines.
_MAX_HEADER_LINES = 7
# One GPU's memory in a column of its own ("GPU 0 (MiB)", "cuda:1 memory", "Mem GPU 2 [MiB]"):
# a table with a column per GPU instead of a list in one cell. A memory word or unit is
# needed: a bare "GPU 0" column may hold anything (layers, utilisation).
_PER_GPU_MEMORY = re.compile(
    r"\W*(?P<before>(?:peak\s*)?(?:memory|mem)\b(?:\s*(?:usage|used|allocated))?\s*(?:on|of|for|at)?\s*[:\-]?\s*)?"
    r"(?:gpu|cuda|device|dev|rank)\s*[:#_]?\s*(?P<index>\d{1,2})\b\s*[:\-]?\s*"
    r"(?P<after>(?:peak\s*)?(?:memory|mem)\b(?:\s*(?:usage|used|allocated))?)?\s*"
    r"(?P<unit>[\(\[]\s*(?:mib|mb|gib|gb|kib|kb)\s*[\)\]]|(?:mib|mb|gib|gb)\b)?\W*")
# A per-GPU column's name: the memory column's, "@" and the GPU's index.
_PER_GPU_SEP = "@"
# A cell left for a GPU the configuration does not have.
_NO_VALUE = re.compile(r"^\W*(?:n\s*/?\s*a|none|x)?\W*$")
# A row's GPU, named in a cell of its own or before its memory ("cuda:1", "GPU 1", "cuda:1: 200.7").
_ROW_GPU = re.compile(r"^\W*(?:cuda|gpu|device|dev|rank)\s*[:#_]?\s*(\d{1,2})\b")
# A line a table split over a page or column break carries there, no row of it: LaTeX longtable's
# footer ("continued on next page", `\\endfoot`) and its caption repeated in `\\endhead` ("Table 1
# (continued)"), Word's "Table 1 (cont.)", "(continued from previous page)".
_CONTINUED = re.compile(r"\bcontinue[sd]?\b|\(\s*cont(?:'d|\.|d)?\s*\)|\bcont(?:'d|\.)|\b(?:next|previous|following)\s+page\b")
# Lines that may stand between a table's last row on a page and its header repeated after the
# break (a caption repeated as it was, "Table 1: Step time vs. DEPTH (2 GPUs)"): looked past.
_LINES_BEFORE_REPEATED_HEADER = 2


@dataclass
class Column:
    name: str | None  # the spec's column name; None for a column the spec does not ask for
    x0: float
    x1: float
    text: str  # the header's text, normalised


# A cell left as the template has it, or with a placeholder: not answered, never unread.
_PLACEHOLDER_CELL = re.compile(r"\.{2,}|…|\b(?:todo|tbd|tba)\b|[\s?\-–—_*|/]", re.IGNORECASE)


@dataclass
class _Row:
    key: int
    cells: dict[str, list[str]]
    page: int
    raw: list[str]


@dataclass
class TableReading:
    rows: list[dict] = field(default_factory=list)
    where: dict = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    # Why what was read may not be what the student meant (rows that contradict each other).
    doubtful: list[str] = field(default_factory=list)
    # Cells of rows that are there but were not read ("12 and 14 ms"): {row, column, text}.
    unread_cells: list[dict] = field(default_factory=list)
    # The expected rows the table does not have at all (a 2-GPU run only: no row for 5).
    absent: list[int] = field(default_factory=list)


# ---------------------------------------------------------------- headers


def _clusters(window: list[Line], spec=None) -> list[tuple[list[Word], float, float]]:
    """The header's cells: a ruled row's cells as they are; in an unruled header, words
    next to each other on a line, or above each other on adjacent lines, are one cell."""
    if len(window) == 1 and window[0].ruled is not None:
        return [(cell.words, cell.x0, cell.x1) for cell in window[0].cells]
    words = [(i, w) for i, line in enumerate(window) for cell in line.cells for w in cell.words]
    parent = list(range(len(words)))

    def root(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i
    for a, (line_a, word_a) in enumerate(words):
        for b in range(a + 1, len(words)):
            line_b, word_b = words[b]
            if line_a == line_b:
                joined = 0 <= word_b.x0 - word_a.x1 <= CELL_GAP_EM * word_a.size
            else:
                joined = min(word_a.x1, word_b.x1) - max(word_a.x0, word_b.x0) > 0
            if joined:
                parent[root(a)] = root(b)
    groups: dict[int, list] = {}
    for i, (line_index, word) in enumerate(words):
        groups.setdefault(root(i), []).append((line_index, word))
    return [([w for _, w in members], min(w.x0 for _, w in members), max(w.x1 for _, w in members))
            for members in _spread_phrases_joined(list(groups.values()), spec)]


def _joined_text(members: list[tuple[int, Word]]) -> str:
    return " ".join(normalise(w.text) for _, w in sorted(members, key=lambda m: (m[0], m[1].x0)))


def _spread_phrases_joined(groups: list[list[tuple[int, Word]]], spec) -> list[list[tuple[int, Word]]]:
    """Clusters in x order, neighbours on a common line joined where only their text together
    names a column: a justified narrow cell spreads "Step" and "time" as far apart as two
    columns are, but "step" or "time" alone names nothing. "GPUs" beside "Step time" stays
    apart: each names its own column."""
    names = [c.header for c in (spec.key,) + tuple(spec.values)] if spec else []
    ordered = sorted(groups, key=lambda g: min(w.x0 for _, w in g))
    out: list[list[tuple[int, Word]]] = []
    k = 0
    while k < len(ordered):
        group = ordered[k]
        if out and _share_a_line(out[-1], group):
            before, mine, both = _joined_text(out[-1]), _joined_text(group), _joined_text(out[-1] + group)
            if any(re.search(n, both) and not re.search(n, before) and not re.search(n, mine) for n in names):
                out[-1] = out[-1] + group
                k += 1
                continue
            taken = _name_extended_by(out[-1], ordered[k:k + 3], names)
            if taken:
                out[-1] = out[-1] + [m for g in ordered[k:k + taken] for m in g]
                k += taken
                continue
        out.append(group)
        k += 1
    return [sorted(g, key=lambda m: (m[0], m[1].x0)) for g in out]


def _share_a_line(a: list[tuple[int, Word]], b: list[tuple[int, Word]]) -> bool:
    return bool({i for i, _ in a} & {i for i, _ in b})


def _name_extended_by(head: list[tuple[int, Word]], following: list[list[tuple[int, Word]]], names) -> int:
    """How many of the clusters after `head` continue the column name `head` starts: a
    justified cell spreads "Memory  per  GPU" as wide as three columns, and "memory" alone
    already names the column, so only the longer name shows that "per" and "GPU" are its."""
    before = _joined_text(head)
    for count in range(len(following), 0, -1):
        run = following[:count]
        if not all(_share_a_line(a, b) for a, b in zip([head] + run, run)):
            continue
        both = _joined_text(head + [m for g in run for m in g])
        for name in names:
            alone, joined = re.search(name, before), re.search(name, both)
            if alone and joined and joined.end() - joined.start() > alone.end() - alone.start():
                return count
    return 0


def _memory_column(spec: contract.TableSpec):
    return next((c for c in spec.values if c.kind == "memory_mib_list"), None)


def per_gpu_index(text: str) -> int | None:
    """The GPU whose memory a header (or a turned table's row label) names, if it names one
    GPU's memory ("GPU 0 (MiB)", "cuda:1 memory"), else None."""
    found = _PER_GPU_MEMORY.fullmatch(text)
    if not found or not (found.group("before") or found.group("after") or found.group("unit")):
        return None
    return int(found.group("index"))


def _per_gpu_columns(names) -> dict[str, list[tuple[int, str]]]:
    """memory column's name -> [(GPU index, per-GPU column's name)], in GPU order."""
    out: dict[str, list[tuple[int, str]]] = {}
    for name in names:
        if name and _PER_GPU_SEP in name:
            base, _, index = name.partition(_PER_GPU_SEP)
            out.setdefault(base, []).append((int(index), name))
    return {base: sorted(found) for base, found in out.items()}


def _columns(window: list[Line], spec: contract.TableSpec) -> list[Column] | None:
    """The header's columns if `window` holds every column of `spec`, else None. The memory
    column may be a column per GPU ("GPU 0 (MiB)" ... "GPU 4 (MiB)"), each named after its
    GPU, where no other column is the memory column and at least two GPUs have one."""
    memory = _memory_column(spec)
    clusters = []
    for words, x0, x1 in _clusters(window, spec):
        text = ""
        starts = []
        for word in words:
            starts.append(len(text) + (1 if text else 0))
            text = (text + " " if text else "") + normalise(word.text)
        clusters.append((words, starts, text, x0, x1))
    per_gpu: dict[int, int] = {}   # cluster -> its GPU
    if memory is not None:
        for n, (_, _, text, _, _) in enumerate(clusters):
            index = per_gpu_index(text)
            if index is not None and index not in per_gpu.values():
                per_gpu[n] = index
    if len(per_gpu) >= 2:
        # Matched apart first: "gpu" in them names no key column, "memory" no memory column.
        columns = _named_columns(clusters, spec, skip=per_gpu)
        if columns is not None and not any(c.name == memory.name for c in columns):
            columns += [Column(f"{memory.name}{_PER_GPU_SEP}{index}", clusters[n][3], clusters[n][4], clusters[n][2])
                        for n, index in per_gpu.items()]
            return _complete(columns, spec)
    return _complete(_named_columns(clusters, spec), spec)


def _complete(columns: list[Column] | None, spec) -> list[Column] | None:
    if columns is None or any(c.name and len(c.text.split()) > 7 for c in columns):
        return None
    names = {c.name.partition(_PER_GPU_SEP)[0] for c in columns if c.name}
    if {c.name for c in (spec.key,) + tuple(spec.values)} - names:
        return None
    return sorted(columns, key=lambda c: c.x0)


def _named_columns(clusters, spec, skip=()) -> list[Column] | None:
    """The clusters (but those in `skip`) as columns, each named by the first of the spec's
    columns its text names; None when two names in one cluster are not side by side."""
    wanted = list(spec.values) + [spec.key]
    columns: list[Column] = []
    found = set()
    for n, (words, starts, text, x0, x1) in enumerate(clusters):
        if n in skip:
            continue
        taken: list[tuple[int, int, str]] = []
        for column in wanted:
            if column.name in found:
                continue
            for match in re.finditer(column.header, text):
                if match.end() > match.start() and not any(s < match.end() and match.start() < e for s, e, _ in taken):
                    taken.append((match.start(), match.end(), column.name))
                    found.add(column.name)
                    break
        if not taken:
            columns.append(Column(None, x0, x1, text))
            continue
        taken.sort()
        if len(taken) == 1:
            columns.append(Column(taken[0][2], x0, x1, text))
            continue
        # Two header names in one cell: columns set close together. Split the words where
        # each name starts; words before the first name belong to it.
        split = []
        for k, (start, _, name) in enumerate(taken):
            end = taken[k + 1][0] if k + 1 < len(taken) else len(text) + 1
            mine = [w for w, s in zip(words, starts) if (start if k else 0) <= s < end]
            if mine:
                split.append(Column(name, min(w.x0 for w in mine), max(w.x1 for w in mine),
                                    " ".join(normalise(w.text) for w in mine)))
        if any(_overlap(a.x0, a.x1, b.x0, b.x1) > 0 for a, b in zip(split, split[1:])):
            return None  # names that are not side by side: a sentence, not a header
        columns += split
    return columns


def _headers_at(lines: list[Line], index: int, spec, *, starting_here: bool = False,
                wrapped: bool = True):
    """Candidate headers (columns, first, last) whose last line is lines[index] (wrapped
    upwards: up to two lines above it) or whose first line is it (wrapped downwards, up to
    _MAX_HEADER_LINES lines), smallest first: a window that names every column may still
    stop short of the header's last line, which the caller finds out from the rows below."""
    line = lines[index]
    if line.furniture or line.rule:
        return
    options = [(index, index)]
    if line.ruled is None and wrapped:
        options += ([] if starting_here else [(index - 1, index), (index - 2, index)]) + [
            (index, index + k) for k in range(1, _MAX_HEADER_LINES)]
    for first, last in options:
        if first < 0 or last >= len(lines):
            continue
        window = lines[first:last + 1]
        if any(l.furniture or l.rule or l.ruled is not None or l.page != line.page or l.region != line.region
               for l in window if len(window) > 1):
            continue
        if any(b.top - a.bottom > 0.9 * max(a.size, b.size) for a, b in zip(window, window[1:])):
            continue
        if any(_header_words(l) > 14 for l in window):
            continue  # prose that names the columns is not a header
        columns = _columns(window, spec)
        if columns:
            yield columns, first, last


def _header_words(line: Line) -> int:
    """How many words a header line has, a column per GPU's name not counted (five of them
    are fifteen words)."""
    return sum(len(cell.text.split()) for cell in line.cells if per_gpu_index(cell.text) is None)


def _repeated_header(lines: list[Line], index: int, spec) -> tuple[list[Column], int, int] | None:
    """A header repeated where a table runs on: the first window after which a value follows
    (past a rule drawn in characters under it)."""
    for columns, first, last in _headers_at(lines, index, spec, starting_here=True):
        following = next((line for line in lines[last + 1:] if not line.rule), None)
        if following is None or re.search(r"\d", following.text):
            return columns, first, last
    return None


def _join_cells_the_body_bridges(columns: list[Column], body: list[Line]) -> list[Column]:
    """An unruled header's cells are its words' clusters, and words spaced wider than a cell
    gap (OCR's estimated positions, justified text) split one header into several: "Memory"
    | "per GPU" | "(MiB)". Two neighbouring clusters are one column when a word of the body
    bridges them (no whitespace river runs down between them); a cluster that names no
    column is then joined to its named neighbour. Two named columns are never joined: their
    body words set close together are split by the header later (_assign)."""
    words = [w for line in body for w in line.words]
    out = [columns[0]] if columns else []
    for column in columns[1:]:
        last = out[-1]
        bridged = any(w.x0 < last.x1 and w.x1 > column.x0 for w in words)
        if bridged and (last.name is None) != (column.name is None):
            out[-1] = Column(last.name or column.name, last.x0, max(last.x1, column.x1), f"{last.text} {column.text}")
        else:
            out.append(column)
    return out


# ---------------------------------------------------------------- rows


def _overlap(a0, a1, b0, b1) -> float:
    return min(a1, b1) - max(a0, b0)


def _assign(line: Line, columns: list[Column]) -> dict[int, list[str]]:
    """Column index -> texts of `line` under it. A cell under two headers (columns set
    close) is split word by word; a cell under none goes to the nearest column, unless it
    is outside the table's columns (a DataFrame's index), where it is left out."""
    out: dict[int, list[str]] = {}
    for cell in line.cells:
        hits = [i for i, c in enumerate(columns) if _overlap(cell.x0, cell.x1, c.x0, c.x1) > 1]
        if len(hits) == 1:
            out.setdefault(hits[0], []).append(cell.raw)
            continue
        if len(hits) > 1:
            for word in cell.words:
                best = max(range(len(columns)), key=lambda i: (_overlap(word.x0, word.x1, columns[i].x0, columns[i].x1)))
                out.setdefault(best, []).append(word.text)
            continue
        size = max((w.size for w in cell.words), default=10)
        if cell.x1 < columns[0].x0 - 0.6 * size or cell.x0 > columns[-1].x1 + 0.6 * size:
            continue
        nearest = min(range(len(columns)), key=lambda i: max(columns[i].x0 - cell.x1, cell.x0 - columns[i].x1))
        out.setdefault(nearest, []).append(cell.raw)
    return out


def _key(texts: list[str] | None) -> int | None:
    if not texts:
        return None
    match = _KEY_CELL.match(normalise(" ".join(texts)))
    return int(match.group(1)) if match else None


@dataclass
class _Entry:
    """One line of a table's body: its texts by column name, and its key if it starts a row."""
    line: Line
    cells: dict[str, list[str]]
    key: int | None


def _table_lines(lines: list[Line], start: int, columns: list[Column], spec) -> list[_Entry]:
    """The lines of the table whose header ends just above lines[start]: lines with a key,
    and lines that continue a cell (a wrapped value) above or below them. The table runs on
    over a page or column break, its header repeated or not.

    Lines set tight one under the other (or overlapping: cells centred at different
    heights) make a cluster; cells are padded, so rows may stand apart, but a row's own
    lines never do. A cluster without a key line ends the table, unless it opens the next
    page: the rest of a row cut by the page break."""
    key_index = next(i for i, c in enumerate(columns) if c.name == spec.key.name)
    entries: list[_Entry] = []
    cluster: list[_Entry] = []
    cluster_opens_page = False
    keys = 0
    ruled_off = False   # a rule drawn in characters stands between the rows and this line
    last = lines[start - 1]
    index = start

    def keep(cluster: list[_Entry]) -> bool:
        return any(e.key is not None for e in cluster) or (cluster_opens_page and any(e.key is not None for e in entries))

    while index < len(lines) and keys < _MAX_ROWS:
        line = lines[index]
        index += 1
        if line.furniture:
            continue
        if line.rule:
            # A rule drawn in characters under the header or between rows: no row. Under rows
            # it may be the table's bottom rule: what follows it is a row only if set in cells.
            ruled_off = ruled_off or keys > 0
            continue
        moved = line.page != last.page or line.region != last.region
        if ruled_off and not moved and len(line.cells) < 2:
            break   # a line of prose under the table's bottom rule ("5 GPUs were not faster")
        ruled_off = False
        if moved:
            if not keys or line.page < last.page:
                break  # a table runs on only from where it stopped, onto the next page or column
        elif line.top - last.bottom > 2.5 * max(line.size, last.size, 1):
            break
        if keys and _CONTINUED.search(line.text) and _key([line.text]) is None:
            continue  # the table goes on after the break: its footer or its caption repeated
        repeated = _repeated_header(lines, index - 1, spec)
        if (keys and moved and not repeated and _key([line.text]) is None
                and any(_repeated_header(lines, j, spec) for j in range(index, min(index + _LINES_BEFORE_REPEATED_HEADER,
                                                                                    len(lines))))):
            continue  # a caption repeated over the header after the break
        if repeated and keys:
            columns, _, header_last = repeated
            key_index = next(i for i, c in enumerate(columns) if c.name == spec.key.name)
            index = header_last + 1
            last = lines[header_last]
            if cluster and not keep(cluster):
                cluster = []
                break
            entries += cluster
            cluster, cluster_opens_page = [], False
            continue
        assigned = _assign(line, columns)
        key = _key(assigned.get(key_index))
        if key is None and len(line.cells) == len(columns) and _key([line.cells[key_index].raw]) is not None:
            # Cells not under their headers (a Markdown table printed as plain text): by order.
            assigned = {i: [cell.raw] for i, cell in enumerate(line.cells)}
            key = _key(assigned[key_index])
        if key is None and (assigned.get(key_index) or not assigned):
            break
        if key is None and not keys and not re.search(r"\d", line.text):
            break  # above the first row only a value can wrap (a vertically centred cell)
        new_cluster = moved or line.top - last.bottom >= 0.9 * max(line.size, 1)
        if new_cluster and cluster:
            if not keep(cluster):
                cluster = []
                break
            entries += cluster
            cluster = []
        if not cluster:
            cluster_opens_page = line.page != (entries[-1].line.page if entries else lines[start - 1].page)
        keys += key is not None
        cluster.append(_Entry(line, {columns[i].name: t for i, t in assigned.items() if columns[i].name}, key))
        last = line
    if cluster and keep(cluster):
        entries += cluster
    return entries


def _rows_below(lines: list[Line], start: int, columns: list[Column], spec) -> tuple[list[_Row], list[Line]]:
    """The table's rows: each key line is a row, and each cell's other lines go to the row
    they sit beside (layout.rows_by_anchor), not just the row above."""
    entries = _table_lines(lines, start, columns, spec)
    key = spec.key.name
    per_gpu = _configurations_over_gpu_rows(entries, spec)
    if per_gpu is not None:
        return per_gpu, [e.line for e in entries]
    grouped = rows_by_anchor([(e.line, e.cells) for e in entries], lambda cells: _key(cells.get(key)) is not None)
    rows = [_Row(_key(cells[key]), cells, members[0].page, [line.raw for line in members]) for members, cells in grouped]
    return rows, [e.line for e in entries]


def _line_gpu(line: Line) -> int | None:
    """The GPU one line of a table with a row per GPU names ("cuda:1" in a cell of its own, or
    before its memory), if it names exactly one."""
    return _one_gpu_named(cell.text for cell in line.cells)


def _one_gpu_named(texts) -> int | None:
    """The GPU these cells name ("cuda:1", "GPU 1", "cuda:1: 200.7"), where they name one."""
    found = {int(m.group(1)) for text in texts if (m := _ROW_GPU.match(text))}
    return found.pop() if len(found) == 1 else None


def _configurations_over_gpu_rows(entries: list[_Entry], spec) -> list[_Row] | None:
    """A row per GPU whose configuration's cells (GPUs, step time) are merged over its rows,
    their text on one of them (top-aligned on the first, or centred on a middle one): each
    line names its GPU, and a configuration is a run of lines whose GPUs count up from the
    first ("cuda:0", "cuda:1" | "cuda:0" ... "cuda:4"), holding one key that is its length.
    Its row holds the run's memory texts and its other cells' text, given once or the same on
    each line. None where the table is not so (keys on every line are gathered by _parse_rows)."""
    if _memory_column(spec) is None or len(entries) < 2 or all(e.key is not None for e in entries):
        return None
    gpus = [_line_gpu(e.line) for e in entries]
    if None in gpus:
        return None
    runs: list[list[_Entry]] = []
    for entry, gpu, before in zip(entries, gpus, [None] + gpus[:-1]):
        if before is None or gpu != before + 1:
            runs.append([])
        runs[-1].append(entry)
    rows = []
    for run in runs:
        keys = {e.key for e in run if e.key is not None}
        if len(keys) != 1 or len(run) != next(iter(keys)):
            return None
        cells: dict[str, list[str]] = {}
        for entry in run:
            for name, texts in entry.cells.items():
                if name == spec.key.name or not texts:
                    continue
                if name != _memory_column(spec).name and name in cells:
                    if texts != cells[name]:
                        return None   # two step times for one configuration: not its rows
                    continue
                cells.setdefault(name, []).extend(texts)
        cells[spec.key.name] = [str(next(iter(keys)))]
        rows.append(_Row(next(iter(keys)), cells, run[0].line.page, [e.line.raw for e in run]))
    return rows


# ---------------------------------------------------------------- transposed


def _same_keys(line: Line, spec, keys: list[int]) -> bool:
    return (len(line.cells) == len(keys) + 1 and bool(re.fullmatch(rf"\W*(?:{spec.key.header})\W*", line.cells[0].text))
            and [_key([c.raw]) for c in line.cells[1:]] == keys)


def _transposed(lines: list[Line], index: int, spec) -> tuple[list[_Row], list[Line], list[Column]] | None:
    """A table with the configurations as columns: "GPUs | 2 | 5", then a row per quantity."""
    line = lines[index]
    if line.furniture or len(line.cells) < 3 or not re.fullmatch(rf"\W*(?:{spec.key.header})\W*", line.cells[0].text):
        return None
    keys = [_key([c.raw]) for c in line.cells[1:]]
    if any(k is None for k in keys):
        return None
    label = line.cells[0]
    columns = [Column(None, label.x0, label.x1, label.text)] + [
        Column(str(k), c.x0, c.x1, c.text) for k, c in zip(keys, line.cells[1:])]
    quantities: list[tuple[list[str], dict[int, list[str]]]] = []
    used = [line]
    last = line
    for following in lines[index + 1:index + 16]:
        if following.furniture or following.rule:
            continue
        new_page = following.page != last.page
        if new_page:
            # A turned table runs on at the top of the next page: its configurations' row
            # may be repeated there, and a row cut by the page break goes on under it.
            if not quantities or following.page != last.page + 1:
                break
            if _same_keys(following, spec, keys):
                used.append(following)
                last = following
                continue
        elif following.top - last.bottom > 1.5 * max(following.size, 1):
            break
        assigned = _assign(following, columns)
        values = {i: t for i, t in assigned.items() if i > 0}
        label_text = assigned.get(0)
        if new_page and (label_text or not values):
            break  # only the rest of a cut row goes on past the break
        if label_text and values:
            quantities.append((list(label_text), values))
        elif quantities and values:
            for i, texts in values.items():
                quantities[-1][1].setdefault(i, []).extend(texts)
        elif quantities and label_text and following.top - last.bottom < 0.9 * max(following.size, 1):
            quantities[-1][0].extend(label_text)
        else:
            break
        used.append(following)
        last = following
    rows = {k: _Row(k, {}, line.page, []) for k in keys}
    memory = _memory_column(spec)
    named: dict[str, str] = {}   # column name -> the quantity's label, normalised
    for label_texts, values in quantities:
        text = normalise(" ".join(label_texts))
        index = per_gpu_index(text) if memory is not None else None
        if index is not None:   # a row per GPU: "GPU 0 (MiB) | 200.4 | 80.3"
            name = f"{memory.name}{_PER_GPU_SEP}{index}"
        else:
            column = next((c for c in spec.values if re.search(c.header, text)), None)
            if column is None:
                continue
            name = column.name
        named.setdefault(name, text)
        for i, texts in values.items():
            rows[keys[i - 1]].cells[name] = texts
            rows[keys[i - 1]].raw.append(f"{' '.join(label_texts)}: {' '.join(texts)}")
    per_gpu = _per_gpu_columns(named)
    if memory is not None and memory.name in named:
        per_gpu.pop(memory.name, None)
        for row in rows.values():  # a memory row beside rows per GPU: the memory row is read
            for name in [n for n in row.cells if n.startswith(memory.name + _PER_GPU_SEP)]:
                del row.cells[name]
    if not all(c.name in named or len(per_gpu.get(c.name, [])) >= 2 for c in spec.values):
        return None
    header = [Column(spec.key.name, 0, 0, columns[0].text)] + [Column(name, 0, 0, text) for name, text in named.items()]
    return list(rows.values()), used, header


# ---------------------------------------------------------------- reading


@dataclass
class _Parsed:
    """One row's cells read: each value column's value, or None with why not."""
    row: _Row
    values: dict = field(default_factory=dict)      # column name -> value
    problems: dict = field(default_factory=dict)    # column name -> [problem, ...]
    notes: list[str] = field(default_factory=list)  # read, with a remark for a person
    unclear: set = field(default_factory=set)       # columns with a value a person must read

    @property
    def complete(self) -> bool:
        return not self.problems


def _parse_row(row: _Row, texts: dict, spec, time_factor, memory_factor, mark) -> _Parsed:
    label = f"{spec.field}[{spec.key.name}={row.key}]"
    parsed = _Parsed(row)
    for column in spec.values:
        cell = " ".join(row.cells.get(column.name, []))
        if column.kind == "time_ms":
            time = parse_time_ms(cell, time_factor, mark) if cell else None
            if time is None:
                parsed.problems[column.name] = [f"{label}: no step time could be read from '{' / '.join(row.raw)}'"]
            elif time.ambiguous:
                parsed.problems[column.name] = [f"{label}: {note}; a person must read it" for note in time.notes]
                parsed.unclear.add(column.name)
            else:
                parsed.values[column.name] = time.value
                parsed.notes += [f"{label}: {note}" for note in time.notes]   # a range read as its middle
            continue
        per_gpu = _per_gpu_columns(row.cells).get(column.name)
        if cell or not per_gpu:
            values, notes = parse_memory_list_mib(cell, memory_factor, row.key, mark) if cell else ([], [])
        else:
            values, notes = _per_gpu_memory(row, per_gpu, texts, mark)
        if any("ambiguous" in n for n in notes):
            parsed.problems[column.name] = [f"{label}: {n}; a person must read it" for n in notes]
            parsed.unclear.add(column.name)
            continue
        parsed.notes += [f"{label}: {n}" for n in notes]
        if not values:
            parsed.problems[column.name] = [f"{label}: no memory per GPU could be read from '{' / '.join(row.raw)}'"]
            continue
        parsed.values[column.name] = values
    return parsed


def _per_gpu_memory(row: _Row, columns: list[tuple[int, str]], texts: dict, mark) -> tuple[list[float], list[str]]:
    """A row's memory from a column per GPU, in GPU order. A cell left empty or "-" is a GPU
    the configuration does not have; so is a 0 past its GPU count (a 2-GPU run's GPUs 2-4)."""
    values, notes = [], []
    for position, (index, name) in enumerate(columns):
        cell = " ".join(row.cells.get(name, []))
        if _NO_VALUE.match(normalise(cell)):
            continue
        found, said = parse_memory_list_mib(cell, memory_unit_factor_mib(texts.get(name, "")), 1, mark)
        notes += said
        if len(found) != 1:
            notes.append(f"GPU {index}'s cell '{cell}' is ambiguous: not one value")
            continue
        if position >= row.key and found[0] == 0:
            continue
        values += found
    return values, notes


def _row_gpu(row: _Row) -> int | None:
    """The GPU a row of a table with a row per GPU is about, where one of its cells names it
    ("cuda:1", "GPU 1", or "cuda:1: 200.7" in the memory cell)."""
    return _one_gpu_named(normalise(cell) for line in row.raw for cell in line.split("\t"))


def _one_gpu_per_row(group: list[_Parsed], spec) -> _Parsed | None:
    """Rows of one configuration that each give one GPU's memory ("2 | cuda:0 | 182.59 | 200.4",
    "2 | cuda:1 | | 200.7"), gathered into the configuration's row: its memory list in GPU
    order, its step time the one they give (on the first row only, or the same on each).
    None when they are not such rows (two runs of one configuration, different step times)."""
    memory = _memory_column(spec)
    key = group[0].row.key
    if memory is None or not 1 < len(group) <= key:
        return None
    if any(memory.name not in p.values or len(p.values[memory.name]) != 1 for p in group):
        return None
    merged = _Parsed(group[0].row)
    for column in spec.values:
        if column is memory:
            continue
        if any(column.name in p.unclear for p in group):
            return None
        given = {p.values[column.name] for p in group if column.name in p.values}
        if len(given) > 1:
            return None
        if given:
            merged.values[column.name] = given.pop()
        else:
            merged.problems[column.name] = group[0].problems.get(column.name, [])
    gpus = [_row_gpu(p.row) for p in group]
    ordered = sorted(zip(gpus, range(len(group)))) if None not in gpus and len(set(gpus)) == len(gpus) \
        else list(enumerate(range(len(group))))
    merged.values[memory.name] = [group[i].values[memory.name][0] for _, i in ordered]
    merged.notes = [n for p in group for n in p.notes]
    merged.row = _Row(key, {}, group[0].row.page, [line for p in group for line in p.row.raw])
    return merged


def _parse_rows(rows: list[_Row], header: list[Column], spec, reading: TableReading) -> None:
    texts = {c.name: c.text for c in header if c.name}
    time_factor = time_unit_factor_ms(_after(texts.get("step_time_ms", ""), spec, "step_time_ms"))
    memory_factor = memory_unit_factor_mib(texts.get("memory_per_gpu_mib", ""))
    mark = decimal_mark(" ".join(t) for row in rows for name, t in row.cells.items()
                        if name != spec.key.name and not name.startswith("_"))
    groups: dict[int, list[_Parsed]] = {}
    for row in rows:
        groups.setdefault(row.key, []).append(_parse_row(row, texts, spec, time_factor, memory_factor, mark))
    for key, group in groups.items():
        label = f"{spec.field}[{spec.key.name}={key}]"
        parsed = group[0]
        if len(group) > 1:
            merged = _one_gpu_per_row(group, spec)
            if merged is not None:
                parsed = merged
            else:
                times = "twice" if len(group) == 2 else f"{len(group)} times"
                reading.problems.append(f"{label} appears {times}; kept the first row")
                reading.doubtful.append(f"{spec.key.name}={key} appears {times}")
        reading.problems += parsed.notes + [p for problems in parsed.problems.values() for p in problems]
        for name in spec.values:
            values = parsed.values.get(name.name)
            if name.kind == "memory_mib_list" and values is not None and len(values) not in (1, key):
                reading.problems.append(f"{label}: {len(values)} memory values for {key} GPUs")
        for name in parsed.problems:
            cell = " ".join(parsed.row.cells.get(name, [])).strip()
            if _PLACEHOLDER_CELL.sub("", cell):   # written, not the template's "..."
                reading.unread_cells.append({"row": str(key), "column": name, "text": cell})
        if parsed.complete:
            entry = {spec.key.name: key, **{c.name: parsed.values[c.name] for c in spec.values}}
            reading.rows.append(entry)
            reading.where.setdefault("rows", {})[str(key)] = {
                "page": parsed.row.page, "text": " / ".join(parsed.row.raw).replace("\t", " | ")}
    found = {entry[spec.key.name] for entry in reading.rows}
    if spec.own_keys_allowed and len(found) >= len(spec.expected_keys):
        return   # e.g. Task 2 at DEPTH 8, 16, 32: the check compares the student's own depths
    reading.missing += [f"{spec.field}[{spec.key.name}={key}]" for key in spec.expected_keys if key not in found]
    reading.absent = [key for key in spec.expected_keys if key not in found and key not in groups]


def _after(text: str, spec, name: str) -> str:
    column = next(c for c in spec.values if c.name == name) if any(c.name == name for c in spec.values) else None
    match = re.search(column.header, text) if column else None
    return text[match.end():] if match else text


def _header_positions(lines: list[Line]) -> list[tuple[int, bool]]:
    """(line index, wrapped) in the order headers are looked for: one-line headers first, so a
    heading just above a table is not taken into its header."""
    return [(i, False) for i in range(len(lines))] + [(i, True) for i in range(len(lines))]


def read_table(layout: Layout, spec: contract.TableSpec) -> TableReading | None:
    """The first table in the report with `spec`'s header and at least one row, or None."""
    lines = layout.lines
    for index, wrapped in _header_positions(lines):
        header = None
        for columns, first, last in _headers_at(lines, index, spec, wrapped=wrapped):
            rows, used = _rows_below(lines, last + 1, columns, spec)
            window = lines[first:last + 1]
            joined = _join_cells_the_body_bridges(columns, used) if window[0].ruled is None else columns
            if joined != columns:
                columns = joined
                rows, used = _rows_below(lines, last + 1, columns, spec)
            if rows:
                header = columns
                break
        if not header:
            turned = None if wrapped else _transposed(lines, index, spec)
            if not turned:
                continue
            rows, used, columns = turned
            window = used[:1]
        if not rows:
            continue
        reading = TableReading()
        pages = sorted({l.page for l in window + used})
        header_text = " | ".join(c.text for c in columns if c.name) if header else " ".join(l.raw for l in window)
        reading.where = {"kind": "table", "page": pages[0], "pages": pages,
                         "text": header_text.replace("\t", " | "), "transposed": not header}
        _parse_rows(rows, columns, spec, reading)
        return reading
    return None


# ---------------------------------------------------------------- a header without rows

# A line under a header that starts as a row does: a number first ("6", "DEPTH=6", "| 2 |").
_ROW_START = re.compile(r"^\W*(?:depth|gpus?)?\s*[=:]?\s*\d")
_LINES_UNDER_A_HEADER = 8


@dataclass
class HeaderWithoutRows:
    """A table's header found as text where no row under it was read. `below`: the lines under
    it that start as rows do (a number first), as written; empty where nothing is under it."""
    page: int
    text: str   # the header's lines as written
    below: list[str]


def _lines_like_rows(lines: list[Line], last: int) -> list[str]:
    """The lines right under lines[last] (rules drawn in characters and running headers
    passed over) that start as rows do, up to the first that does not."""
    above, out = lines[last], []
    for line in lines[last + 1:last + 1 + 2 * _LINES_UNDER_A_HEADER]:
        if line.furniture or line.rule:
            continue
        if (line.page, line.region) != (above.page, above.region) or \
                line.top - above.bottom > 2.5 * max(line.size, above.size, 1) or not _ROW_START.match(line.text):
            break
        out.append(line.raw.replace("\t", " | "))
        above = line
        if len(out) == _LINES_UNDER_A_HEADER:
            break
    return out


def header_without_rows(layout: Layout, spec: contract.TableSpec) -> HeaderWithoutRows | None:
    """Where read_table found no table: `spec`'s header set as a table's (its columns in cells
    of their own, not a sentence that names them), the first with lines under it that start
    as rows do, else the first; None where the report has no such header."""
    lines = layout.lines
    first_found = None
    for index, wrapped in _header_positions(lines):
        for columns, first, last in _headers_at(lines, index, spec, wrapped=wrapped):
            window = lines[first:last + 1]
            if window[0].ruled is None and max(len(line.cells) for line in window) < 2:
                continue
            found = HeaderWithoutRows(window[0].page, " / ".join(line.raw.replace("\t", " | ") for line in window),
                                      _lines_like_rows(lines, last))
            if found.below:
                return found
            first_found = first_found or found
    return first_found
