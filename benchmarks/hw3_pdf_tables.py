"""Which table finder reads the HW3 fixtures' tables best: ours against pdfplumber's and camelot's.

    python benchmarks/hw3_pdf_tables.py          (camelot-py is optional: pip install camelot-py)

For every report in tests/answers/fixtures/reports whose tables are text (not the pictures
or the scan), each approach finds tables and the same small reader takes the answers out of
each table found as a grid of cells: the header row found by the contract's column patterns,
values read by column with the table's own decimal mark (also turned, for tables with the
configurations as columns). A fixture counts when both tables (Task 2, Task 4) come out
exactly as its NAME.json says.

- hw3_pdf: grader/answers/hw3_pdf (headers found in the text by position, not grids);
- pdfplumber-lines: page.extract_tables() (ruling lines);
- pdfplumber-text: page.extract_tables(vertical and horizontal strategy "text");
- camelot-lattice / camelot-stream: camelot.read_pdf(flavor=...).
"""
from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grader.answers.hw3_pdf import contract  # noqa: E402
from grader.answers.hw3_pdf.extract_worker import extract  # noqa: E402
from grader.answers.hw3_pdf.layout import normalise  # noqa: E402
from grader.answers.numbers import (decimal_mark, memory_unit_factor_mib,  # noqa: E402
                                    parse_memory_list_mib, parse_time_ms, time_unit_factor_ms)
from grader.answers.hw3_pdf.reader import reading_from_worker_output  # noqa: E402

REPORTS = ROOT / "tests" / "answers" / "fixtures" / "reports"
FIELDS = [t.field for t in contract.TABLES]


def read_grid(grid: list[list[str]], spec) -> list[dict] | None:
    """A table given as rows of cell strings -> the answer's rows, or None."""
    rows = [[normalise(c or "") for c in row] for row in grid]
    for turned in (False, True):
        if turned:
            width = max(len(r) for r in rows) if rows else 0
            rows = [[r[i] if i < len(r) else "" for r in rows] for i in range(width)]
        for h, header in enumerate(rows):
            where = {}
            for column in (spec.key,) + spec.values:
                index = next((i for i, c in enumerate(header) if i not in where.values() and re.search(column.header, c)), None)
                if index is None:
                    break
                where[column.name] = index
            else:
                body = rows[h + 1:]
                mark = decimal_mark(c for r in body for i, c in enumerate(r) if i != where[spec.key.name])
                out = []
                for row in body:
                    key = re.match(r"^\W*(\d+)\W*$", row[where[spec.key.name]] if where[spec.key.name] < len(row) else "")
                    if not key:
                        continue
                    entry = {spec.key.name: int(key.group(1))}
                    for column in spec.values:
                        cell = row[where[column.name]] if where[column.name] < len(row) else ""
                        head = header[where[column.name]]
                        if column.kind == "time_ms":
                            value = parse_time_ms(cell, time_unit_factor_ms(re.sub(column.header, "", head)), mark)
                            entry[column.name] = value.value if value else None
                        else:
                            entry[column.name] = parse_memory_list_mib(cell, memory_unit_factor_mib(head), entry[spec.key.name], mark)[0]
                    out.append(entry)
                if out:
                    return out
    return None


def grids_pdfplumber(pdf: Path, settings: dict | None) -> list:
    import pdfplumber
    with pdfplumber.open(pdf) as document:
        return [t for page in document.pages for t in (page.extract_tables(settings) if settings else page.extract_tables())]


def grids_camelot(pdf: Path, flavor: str) -> list:
    import camelot
    tables = camelot.read_pdf(str(pdf), pages="all", flavor=flavor)
    return [t.df.values.tolist() for t in tables]


def by_grids(grids) -> dict:
    found = {}
    for spec in contract.TABLES:
        found[spec.field] = next((rows for rows in (read_grid(g, spec) for g in grids) if rows), None)
    return found


APPROACHES = {
    "hw3_pdf": lambda pdf: reading_from_worker_output(extract(str(pdf), 50)).answers,
    "pdfplumber-lines": lambda pdf: by_grids(grids_pdfplumber(pdf, None)),
    "pdfplumber-text": lambda pdf: by_grids(grids_pdfplumber(pdf, {"vertical_strategy": "text", "horizontal_strategy": "text"})),
    "camelot-lattice": lambda pdf: by_grids(grids_camelot(pdf, "lattice")),
    "camelot-stream": lambda pdf: by_grids(grids_camelot(pdf, "stream")),
}


def main() -> int:
    cases = []
    for path in sorted(REPORTS.glob("*.json")):
        expected = json.loads(path.read_text())
        if all(f in expected["answers"] and expected["answers"][f] for f in FIELDS):
            cases.append((path.with_suffix(".pdf"), {f: expected["answers"][f] for f in FIELDS}))
    print(f"{len(cases)} fixtures with both tables as text")
    for name, approach in APPROACHES.items():
        exact, started, failures = 0, time.monotonic(), []
        for pdf, expected in cases:
            try:
                got = approach(pdf)
            except Exception as error:  # a missing library or a crash counts as not read
                got = {"error": f"{type(error).__name__}: {error}"}
            if all(got.get(f) == expected[f] for f in FIELDS):
                exact += 1
            else:
                failures.append(pdf.stem)
        print(f"{name:18s} {exact:3d}/{len(cases)} read exactly  ({time.monotonic() - started:5.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
