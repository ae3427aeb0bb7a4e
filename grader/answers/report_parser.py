"""Turns the text and tables the worker pulled out of a PDF into answers.

Pure functions on the worker's JSON, so they run in the grader process
without touching the file, and can be tested without any PDF at all.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from . import report_contract as contract
from .number_parsing import NUMBER, parse_int_list, parse_memory_list_mib, parse_time_ms
from .number_parsing import memory_unit_factor_mib, time_unit_factor_ms

_DASHES = dict.fromkeys(map(ord, "\u2010\u2011\u2012\u2013\u2014\u2015\u2212"), "-")
_SPACES = dict.fromkeys(map(ord, "\u00a0\u2007\u202f\u2009\u200a\u3000"), " ")
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\ufeff\u00ad"), None)


def normalise(text: str, *, keep_tabs: bool = False) -> str:
    """Lower case, NFKC (splits ligatures like "ﬁ"), one kind of dash and
    space, so patterns need not list every typographic variant."""
    text = unicodedata.normalize("NFKC", text).translate(_DASHES).translate(_SPACES).translate(_INVISIBLE)
    text = text.replace("\u2018", "'").replace("\u2019", "'").replace("\u201c", '"').replace("\u201d", '"')
    if not keep_tabs:
        text = text.replace("\t", " ")
    return re.sub(r"[ ]{2,}" if keep_tabs else r"[ \t]+", " " if not keep_tabs else "  ", text).strip().lower()


@dataclass
class Line:
    raw: str
    text: str  # normalise(raw), tabs kept as column breaks
    size: float = 0.0
    in_margin: bool = False
    bold: bool = False


@dataclass
class ParsedReport:
    answers: dict = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _page_lines(worker_output: dict) -> list[Line]:
    return [
        Line(
            line["text"],
            normalise(line["text"], keep_tabs=True),
            line.get("size", 0.0),
            line.get("in_margin", False),
            line.get("bold", False),
        )
        for page in worker_output.get("pages", [])
        for line in page["lines"]
    ]


def _split_merged_rows(row: list[str]) -> list[list[str]]:
    """A table ruled only above and below its body comes out of pdfplumber
    as one row with every line in each cell; cells with the same number of
    lines are rows stacked together. Otherwise the lines are one wrapped
    cell ("Step time" / "(ms)")."""
    cell_lines = [cell.split("\n") for cell in row]
    counts = {len(lines) for lines, cell in zip(cell_lines, row) if cell}
    if len(counts) == 1 and (k := counts.pop()) > 1:
        return [[lines[i] if len(lines) == k else "" for lines in cell_lines] for i in range(k)]
    return [[cell.replace("\n", " ") for cell in row]]


def _ruled_tables(worker_output: dict) -> list[list[Line]]:
    """Each ruled table as lines "cell | cell | cell", so one row parser serves both sources."""
    tables = []
    for page in worker_output.get("pages", []):
        for rows in page.get("tables", []):
            raw_rows = [" | ".join(cells) for row in rows for cells in _split_merged_rows(row)]
            tables.append([Line(raw, normalise(raw, keep_tabs=True)) for raw in raw_rows])
    return tables


# ---------------------------------------------------------------- labels


def _read_labelled_answers(lines: list[Line], report: ParsedReport) -> None:
    stream = "\n".join(line.text.replace("\t", " ") for line in lines if not line.in_margin)
    for answer in contract.LABELLED_ANSWERS:
        label = re.compile(r"(?m)(?P<start>^[\W_]*)?" + answer.pattern + r"[ \t]*[:=|>\-]*[ \t]*")
        matches = sorted(label.finditer(stream), key=lambda m: m.group("start") is None)  # line starts first
        values = []
        for match in matches:
            value = parse_int_list(stream[match.end():])
            if value:
                values.append(value)
        if not values:
            report.missing.append(answer.field)
            if matches:
                report.problems.append(f"found '{answer.template_text}' but no number after it")
            continue
        value = values[0]
        if answer.kind == "int":
            if len(value) > 1:
                report.problems.append(f"'{answer.template_text}' expects one number, found {value}; took {value[0]}")
            value = value[0]
        report.answers[answer.field] = value
        distinct = {str(v) for v in values}
        if len(distinct) > 1 and all(m.group("start") is not None for m in matches[: len(values)]):
            report.problems.append(f"'{answer.template_text}' is answered more than once with different values: {sorted(distinct)}")


# ---------------------------------------------------------------- tables

_SEPARATOR_LINE = re.compile(r"^[\s|:\-+=_]*$")
_KEY_CELL = re.compile(r"^\W*(\d+)\s*(?:gpus?|layers?)?\W*$")
_TIME_TOKEN = re.compile(
    rf"^\s*[~≈<>]?\s*{NUMBER}(?:\s*(?:±|\+/?-)\s*{NUMBER})?\s*(?:milliseconds?|msec|ms|µs|μs|us|seconds?|secs?|s)?(?![a-z])"
)


def _split_cells(text: str) -> list[str]:
    if "|" in text:
        cells = text.strip().strip("|").split("|")
    elif "\t" in text:
        cells = text.split("\t")
    else:
        cells = re.split(r"\s{2,}", text)
    cells = [c.strip() for c in cells]
    # A unit pushed into its own cell by a wide gap belongs to the number before it.
    merged: list[str] = []
    for cell in cells:
        if merged and not re.search(r"\d", cell):
            merged[-1] = f"{merged[-1]} {cell}".strip()
        else:
            merged.append(cell)
    return [c for c in merged if c]


@dataclass
class _Row:
    key: int
    time_ms: float | None
    memory: list[float] | None
    source: str
    notes: list[str]


def _parse_row(line: Line, spec: contract.TableSpec, time_factor, memory_factor) -> _Row | None:
    cells = _split_cells(line.text)
    if not cells:
        return None
    if len(cells) == 1:
        # No visible column breaks: key, then a time token, then the memory list.
        first = re.match(r"^\W*(\d+)\s*(?:gpus?)?\s+(.*)$", cells[0])
        if not first:
            return None
        rest = first.group(2)
        time_match = _TIME_TOKEN.match(rest)
        cells = [first.group(1)] + ([time_match.group(0), rest[time_match.end():]] if time_match else [rest])
    key_match = _KEY_CELL.match(cells[0])
    if not key_match:
        return None
    notes: list[str] = []
    time = parse_time_ms(cells[1], time_factor) if len(cells) > 1 else None
    if time:
        notes += time.notes
    memory = None
    if spec.has_memory_column and len(cells) > 2:
        memory, memory_notes = parse_memory_list_mib(", ".join(c for c in cells[2:] if c), memory_factor, int(key_match.group(1)))
        notes += memory_notes
    return _Row(int(key_match.group(1)), time.value if time else None, memory or None, line.raw, notes)


def _header_units(header_text: str) -> tuple[float | None, float | None]:
    time_part = re.search(r"(?:step\s*-?\s*time|time\s*per\s*step)(.*?)(?:memory|\||\t|$)", header_text)
    memory_part = re.search(r"memory(.*)$", header_text)
    return (
        time_unit_factor_ms(time_part.group(1)) if time_part else None,
        memory_unit_factor_mib(memory_part.group(1)) if memory_part else None,
    )


def _rows_after_header(lines: list[Line], spec: contract.TableSpec) -> list[_Row] | None:
    header = re.compile(spec.header_pattern)
    for index, line in enumerate(lines):
        if not header.search(line.text.replace("\t", " | ")) or not _is_short_title(line.text):
            continue
        header_text = line.text
        rows: list[_Row] = []
        for following in lines[index + 1 : index + 40]:
            if _SEPARATOR_LINE.match(following.text) or following.in_margin:
                continue
            if rows and header.search(following.text.replace("\t", " | ")):
                continue  # the header repeated where the table runs onto the next page
            row = _parse_row(following, spec, *_header_units(header_text))
            if row is None:
                if not rows and not re.match(r"^\W*\d", following.text):
                    # A header wrapped onto a second line, e.g. "(ms)": it still names the unit.
                    header_text += " " + following.text
                    continue
                break
            rows.append(row)
        if rows:
            return rows
    return None


def _read_table(spec: contract.TableSpec, ruled: list[list[Line]], lines: list[Line], report: ParsedReport) -> None:
    # Ruled tables are cell-exact, so they win; the text fallback covers
    # Markdown converters and LaTeX tabular without rules.
    rows = next((r for r in (_rows_after_header(t, spec) for t in ruled) if r), None) or _rows_after_header(lines, spec)
    if rows is None:
        report.missing.append(spec.field)
        report.problems.append(f"no table with the header '{spec.template_header}' found")
        return
    table, seen = [], set()
    for row in rows:
        label = f"{spec.field}[{spec.key_name}={row.key}]"
        report.problems += [f"{label}: {note}" for note in row.notes]
        if row.key in seen:
            report.problems.append(f"{label} appears twice; kept the first row")
            continue
        seen.add(row.key)
        if row.time_ms is None:
            report.problems.append(f"{label}: no step time could be read from '{row.source}'")
            continue
        entry = {spec.key_name: row.key, "step_time_ms": row.time_ms}
        if spec.has_memory_column:
            if not row.memory:
                report.problems.append(f"{label}: no memory per GPU could be read from '{row.source}'")
                continue
            if len(row.memory) not in (1, row.key):
                report.problems.append(f"{label}: {len(row.memory)} memory values for {row.key} GPUs")
            entry["memory_per_gpu_mib"] = row.memory
        table.append(entry)
    report.answers[spec.field] = table
    found = {entry[spec.key_name] for entry in table}
    report.missing += [f"{spec.field}[{spec.key_name}={key}]" for key in spec.expected_keys if key not in found]


# ---------------------------------------------------------------- explanations

_PLACEHOLDER = re.compile(r"^\W*(?:todo|tbd|tba|your (?:answer|explanation|text)\b.*|write .* here|\.\.\.|…)?\W*$")


def _is_short_title(text: str) -> bool:
    """Headings and table headers are short and are not sentences; a wrapped
    paragraph line that happens to start with "Task 3" or "DEPTH" is neither."""
    return len(text.split()) <= 12 and not text.rstrip().endswith((".", ",", ";"))


def _ends_explanation(line: Line, body_size: float | None) -> bool:
    text = line.text.replace("\t", " ")
    if body_size and line.size > body_size * 1.15:
        return True  # a heading, by its size
    if contract.EXPLANATION_HEADING.match(text):
        return True
    # "Task 3", "Task 3: balanced split", or a bold "Task 3 ..." line; not
    # a paragraph line that wraps to start with "Task 3 will ...".
    starts_section = contract.SECTION_START.match(text) and _is_short_title(text) and (
        line.bold or re.match(r"^\W*(?:task|part|question)\s*\d+\s*(?:[:.)\-]|$)", text)
    )
    starts_label = any(re.match(r"^[\W_]*" + a.pattern + r"[ :=|>\-]*\d", text) for a in contract.LABELLED_ANSWERS)
    starts_table = any(re.search(t.header_pattern, text) for t in contract.TABLES) and _is_short_title(text)
    return bool(starts_section or starts_label or starts_table)


def _read_explanations(lines: list[Line], body_size: float | None, report: ParsedReport) -> None:
    found: dict[int, str] = {}
    for index, line in enumerate(lines):
        heading = contract.EXPLANATION_HEADING.match(line.text.replace("\t", " "))
        if not heading:
            continue
        task = int(heading.group("a") or heading.group("b"))
        if task in found:
            continue
        # Text may follow the heading on its own line ("Task 1 explanation: because ...").
        raw_after = re.sub(r"^.*?explanations?\b\s*(?:(?:for|of|to)?\s*task\s*\d)?\s*[:.\-]?\s*", "", unicodedata.normalize("NFKC", line.raw), count=1, flags=re.I)
        parts = [raw_after] if raw_after.strip() else []
        for following in lines[index + 1 :]:
            if following.in_margin or re.fullmatch(r"\W*\d+\W*", following.text):
                continue  # page numbers, browser print headers and footers
            if _ends_explanation(following, body_size):
                break
            parts.append(unicodedata.normalize("NFKC", following.raw).replace("\t", " "))
        text = re.sub(r"(\w)-\n(\w)", r"\1\2", "\n".join(parts)).strip()  # undo end-of-line hyphenation
        found[task] = text
    for task in contract.EXPLANATION_TASKS:
        name = contract.explanation_field(task)
        text = found.get(task)
        if text is None:
            report.missing.append(name)
            report.problems.append(f"no 'Task {task} explanation' heading found")
        elif _PLACEHOLDER.match(text):
            report.missing.append(name)
            report.problems.append(f"'Task {task} explanation' has no text" + (f" (only '{text}')" if text else ""))
        else:
            report.answers[name] = text


def parse_report(worker_output: dict) -> ParsedReport:
    report = ParsedReport()
    lines = _page_lines(worker_output)
    _read_labelled_answers(lines, report)
    ruled = _ruled_tables(worker_output)
    for spec in contract.TABLES:
        _read_table(spec, ruled, lines, report)
    _read_explanations(lines, worker_output.get("body_font_size"), report)
    return report
