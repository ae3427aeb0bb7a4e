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
the configurations as columns (transposed) is read the same way, turned.
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


@dataclass
class Column:
    name: str | None  # the spec's column name; None for a column the spec does not ask for
    x0: float
    x1: float
    text: str  # the header's text, normalised


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


def _columns(window: list[Line], spec: contract.TableSpec) -> list[Column] | None:
    """The header's columns if `window` holds every column of `spec`, else None."""
    wanted = list(spec.values) + [spec.key]
    columns: list[Column] = []
    found = set()
    for words, x0, x1 in _clusters(window, spec):
        text = ""
        starts = []
        for word in words:
            starts.append(len(text) + (1 if text else 0))
            text = (text + " " if text else "") + normalise(word.text)
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
        for n, (start, _, name) in enumerate(taken):
            end = taken[n + 1][0] if n + 1 < len(taken) else len(text) + 1
            mine = [w for w, s in zip(words, starts) if (start if n else 0) <= s < end]
            if mine:
                split.append(Column(name, min(w.x0 for w in mine), max(w.x1 for w in mine),
                                    " ".join(normalise(w.text) for w in mine)))
        if any(_overlap(a.x0, a.x1, b.x0, b.x1) > 0 for a, b in zip(split, split[1:])):
            return None  # names that are not side by side: a sentence, not a header
        columns += split
    if any(c.name and len(c.text.split()) > 7 for c in columns):
        return None
    if {c.name for c in wanted} - found:
        return None
    return sorted(columns, key=lambda c: c.x0)


def _headers_at(lines: list[Line], index: int, spec, *, starting_here: bool = False,
                wrapped: bool = True):
    """Candidate headers (columns, first, last) whose last line is lines[index] (wrapped
    upwards: up to two lines above it) or whose first line is it (wrapped downwards, up to
    _MAX_HEADER_LINES lines), smallest first: a window that names every column may still
    stop short of the header's last line, which the caller finds out from the rows below."""
    line = lines[index]
    if line.furniture:
        return
    options = [(index, index)]
    if line.ruled is None and wrapped:
        options += ([] if starting_here else [(index - 1, index), (index - 2, index)]) + [
            (index, index + k) for k in range(1, _MAX_HEADER_LINES)]
    for first, last in options:
        if first < 0 or last >= len(lines):
            continue
        window = lines[first:last + 1]
        if any(l.furniture or l.ruled is not None or l.page != line.page or l.region != line.region
               for l in window if len(window) > 1):
            continue
        if any(b.top - a.bottom > 0.9 * max(a.size, b.size) for a, b in zip(window, window[1:])):
            continue
        if any(len(l.text.split()) > 14 for l in window):
            continue  # prose that names the columns is not a header
        columns = _columns(window, spec)
        if columns:
            yield columns, first, last


def _repeated_header(lines: list[Line], index: int, spec) -> tuple[list[Column], int, int] | None:
    """A header repeated where a table runs on: the first window after which a value follows."""
    for columns, first, last in _headers_at(lines, index, spec, starting_here=True):
        if last + 1 >= len(lines) or re.search(r"\d", lines[last + 1].text):
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
    last = lines[start - 1]
    index = start

    def keep(cluster: list[_Entry]) -> bool:
        return any(e.key is not None for e in cluster) or (cluster_opens_page and any(e.key is not None for e in entries))

    while index < len(lines) and keys < _MAX_ROWS:
        line = lines[index]
        index += 1
        if line.furniture:
            continue
        moved = line.page != last.page or line.region != last.region
        if moved:
            if not keys or line.page < last.page:
                break  # a table runs on only from where it stopped, onto the next page or column
        elif line.top - last.bottom > 2.5 * max(line.size, last.size, 1):
            break
        repeated = _repeated_header(lines, index - 1, spec)
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
    grouped = rows_by_anchor([(e.line, e.cells) for e in entries], lambda cells: _key(cells.get(key)) is not None)
    rows = [_Row(_key(cells[key]), cells, members[0].page, [line.raw for line in members]) for members, cells in grouped]
    return rows, [e.line for e in entries]


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
        if following.furniture:
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
    for label_texts, values in quantities:
        text = normalise(" ".join(label_texts))
        column = next((c for c in spec.values if re.search(c.header, text)), None)
        if column is None:
            continue
        for i, texts in values.items():
            rows[keys[i - 1]].cells[column.name] = texts
            rows[keys[i - 1]].cells.setdefault("_unit_" + column.name, [text])
            rows[keys[i - 1]].raw.append(f"{' '.join(label_texts)}: {' '.join(texts)}")
    if not all(any(c.name in r.cells for r in rows.values()) for c in spec.values):
        return None
    header = [Column(spec.key.name, 0, 0, columns[0].text)] + [
        Column(c.name, 0, 0, next((t[0] for r in rows.values() for t in [r.cells.get("_unit_" + c.name)] if t), c.name))
        for c in spec.values]
    return list(rows.values()), used, header


# ---------------------------------------------------------------- reading


def _parse_rows(rows: list[_Row], header: list[Column], spec, reading: TableReading) -> None:
    texts = {c.name: c.text for c in header if c.name}
    time_factor = time_unit_factor_ms(_after(texts.get("step_time_ms", ""), spec, "step_time_ms"))
    memory_factor = memory_unit_factor_mib(texts.get("memory_per_gpu_mib", ""))
    mark = decimal_mark(" ".join(t) for row in rows for name, t in row.cells.items()
                        if name != spec.key.name and not name.startswith("_"))
    seen = set()
    for row in rows:
        label = f"{spec.field}[{spec.key.name}={row.key}]"
        if row.key in seen:
            reading.problems.append(f"{label} appears twice; kept the first row")
            continue
        seen.add(row.key)
        entry = {spec.key.name: row.key}
        complete = True
        for column in spec.values:
            cell = " ".join(row.cells.get(column.name, []))
            if column.kind == "time_ms":
                time = parse_time_ms(cell, time_factor, mark) if cell else None
                if time is None:
                    reading.problems.append(f"{label}: no step time could be read from '{' / '.join(row.raw)}'")
                    complete = False
                elif time.ambiguous:
                    reading.problems += [f"{label}: {note}; a person must read it" for note in time.notes]
                    complete = False
                else:
                    entry[column.name] = time.value
            else:
                values, notes = parse_memory_list_mib(cell, memory_factor, row.key, mark) if cell else ([], [])
                if any("ambiguous" in n for n in notes):
                    reading.problems += [f"{label}: {n}; a person must read it" for n in notes]
                    complete = False
                    continue
                reading.problems += [f"{label}: {n}" for n in notes]
                if not values:
                    reading.problems.append(f"{label}: no memory per GPU could be read from '{' / '.join(row.raw)}'")
                    complete = False
                    continue
                if len(values) not in (1, row.key):
                    reading.problems.append(f"{label}: {len(values)} memory values for {row.key} GPUs")
                entry[column.name] = values
        if complete:
            reading.rows.append(entry)
            reading.where.setdefault("rows", {})[str(row.key)] = {"page": row.page, "text": " / ".join(row.raw).replace("\t", " | ")}
    found = {entry[spec.key.name] for entry in reading.rows}
    if spec.own_keys_allowed and len(found) >= len(spec.expected_keys):
        return   # e.g. Task 2 at DEPTH 8, 16, 32: the check compares the student's own depths
    reading.missing += [f"{spec.field}[{spec.key.name}={key}]" for key in spec.expected_keys if key not in found]


def _after(text: str, spec, name: str) -> str:
    column = next(c for c in spec.values if c.name == name) if any(c.name == name for c in spec.values) else None
    match = re.search(column.header, text) if column else None
    return text[match.end():] if match else text


def read_table(layout: Layout, spec: contract.TableSpec) -> TableReading | None:
    """The first table in the report with `spec`'s header and at least one row, or None."""
    lines = layout.lines
    # One-line headers first, so a heading just above a table is not taken into its header.
    for index, wrapped in [(i, False) for i in range(len(lines))] + [(i, True) for i in range(len(lines))]:
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
