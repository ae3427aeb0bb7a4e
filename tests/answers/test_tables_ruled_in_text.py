"""HW3 report tables set in text and ruled with characters, as plain-text exports lay them out
(red team adv39 F2): the dashed line under the header of tabulate's "simple" tables, pandoc's
plain output, psql and rst (`-------  --------`, `=======`), grid tables (`+----+----+`, rows
between `|` borders, `+====+` under the header), Markdown pipe and org-mode tables (`|---|---|`,
`|---+---|`), box-drawing grids, and cells wrapped over several lines.

Before: the rule line ended the table above its first row, so both tables were "no answer
found" and their 2 points scored 0 (a groff-printed report 8.5 instead of 10.5 of 15). Now
rule lines between the header and its rows, and between rows, are passed over; a header that
is found with rows under it that cannot be read makes the table wait for a person
(`unread`), never "not answered"; a header with nothing under it, and a report with no table,
stay not answered.

The PDFs are tiny_pdf's in Courier (every character 0.6 em wide, as a plain-text export
prints); box-drawing characters are not in the standard fonts' encoding, so those tables are
laid out as the PDF worker gives a fixed-width page's words.
"""

from __future__ import annotations

import pytest

from bad_pdfs import REPORT_LINES
from grader.answers.collect import collect_answers
from grader.answers.hw3_pdf.extract_worker import extract
from grader.answers.hw3_pdf.reader import reading_from_worker_output
from grader.checks.support import AnswerNotRead, reported
from tiny_pdf import write_text_pdf

TASK2 = "task2.step_time_table"
TASK4 = "task4.table"
EXPECTED = {
    TASK2: [{"depth": 6, "step_time_ms": 12.5}, {"depth": 12, "step_time_ms": 23.75},
            {"depth": 24, "step_time_ms": 47.1}],
    TASK4: [{"gpus": 2, "step_time_ms": 31.2, "memory_per_gpu_mib": [812.5, 790]},
            {"gpus": 5, "step_time_ms": 18.1, "memory_per_gpu_mib": [402, 398, 398, 398, 410]}],
}
# Where REPORT_LINES has its two tables.
_T2_FIRST, _T2_LAST = "| DEPTH | Step time (ms) |", "| 24 | 47.1 |"
_T4_FIRST, _T4_LAST = "GPUs\tStep time (ms)\tMemory per GPU (MiB)", "5\t18.1\t402 / 398 / 398 / 398 / 410"


def _with_tables(task2: str, task4: str, lines=REPORT_LINES) -> list[str]:
    """REPORT_LINES with its two tables written as `task2` and `task4` (lines of text)."""
    out = list(lines)
    for first, last, table in ((_T2_FIRST, _T2_LAST, task2), (_T4_FIRST, _T4_LAST, task4)):
        start, end = out.index(first), out.index(last)
        out[start:end + 1] = table.strip("\n").split("\n")
    return out


def _read(tmp_path, lines, **options):
    pdf = write_text_pdf(tmp_path / "report.pdf", [lines], font="Courier", font_size=10, **options)
    return reading_from_worker_output(extract(str(pdf), 50))


def _monospace_worker_output(lines: list[str], size: float = 10.0) -> dict:
    """A page of fixed-width text as the PDF worker gives it: words split at spaces, each
    character 0.6 em wide, lines 1.3 em apart."""
    words = []
    for row, line in enumerate(lines):
        top = 60 + 1.3 * size * row
        column = 0
        for piece in line.split(" "):
            if piece:
                x0 = 50 + 0.6 * size * column
                words.append([piece, x0, x0 + 0.6 * size * len(piece), top, top + size, size, 0])
            column += len(piece) + 1
    page = {"width": 595.0, "height": 842.0, "chars": sum(len(w[0]) for w in words), "ocr_chars": 0,
            "words": words, "images": [], "ruled": [], "fonts": ["Courier"]}
    return {"pages_total": 1, "pages_read": 1, "producer": "test", "creator": None, "error": None, "pages": [page]}


# Each style's two tables, as the tool writes them (tabulate 0.10's outputs, pandoc 3's plain
# output, psql's aligned format, org-mode's own).
STYLES = {
    "tabulate simple, numbers right-aligned": ("""
  DEPTH    Step time (ms)
-------  ----------------
      6             12.5
     12             23.75
     24             47.1
""", """
  GPUs    Step time (ms)  Memory per GPU (MiB)
------  ----------------  ---------------------------
     2              31.2  812.5, 790
     5              18.1  402 / 398 / 398 / 398 / 410
"""),
    "pandoc plain (simple table), as adv39's groff report": ("""
  DEPTH   Step time (ms)
  ------- ----------------
  6       12.5
  12      23.75
  24      47.1
""", """
  GPUs   Step time (ms)  Memory per GPU (MiB)
  ------ --------------- ------------------------------
  2      31.2            812.5, 790
  5      18.1            402 / 398 / 398 / 398 / 410
"""),
    "pandoc plain (multiline table): rules above and below, a header cell wrapped, rows apart": ("""
  -------------------------
  DEPTH   Step time
          (ms)
  ------- -----------------
  6       12.5

  12      23.75

  24      47.1
  -------------------------
""", """
  -----------------------------------------------------
  GPUs   Step time     Memory per GPU (MiB)
         (ms)
  ------ ------------- --------------------------------
  2      31.2          812.5, 790

  5      18.1          402 / 398 /
                       398 / 398 / 410
  -----------------------------------------------------
"""),
    "tabulate grid, numbers left-aligned": ("""
+---------+------------------+
| DEPTH   | Step time (ms)   |
+=========+==================+
| 6       | 12.5             |
+---------+------------------+
| 12      | 23.75            |
+---------+------------------+
| 24      | 47.1             |
+---------+------------------+
""", """
+--------+------------------+-----------------------------+
| GPUs   | Step time (ms)   | Memory per GPU (MiB)        |
+========+==================+=============================+
| 2      | 31.2             | 812.5, 790                  |
+--------+------------------+-----------------------------+
| 5      | 18.1             | 402 / 398 / 398 / 398 / 410 |
+--------+------------------+-----------------------------+
"""),
    "tabulate grid, cells wrapped (maxcolwidths), a header cell wrapped": ("""
+---------+-------------+
| DEPTH   | Step time   |
|         | (ms)        |
+=========+=============+
| 6       | 12.5        |
+---------+-------------+
| 12      | 23.75       |
+---------+-------------+
| 24      | 47.1        |
+---------+-------------+
""", """
+--------+------------------+------------------+
| GPUs   | Step time (ms)   | Memory per GPU   |
|        |                  | (MiB)            |
+========+==================+==================+
| 2      | 31.2             | 812.5, 790       |
+--------+------------------+------------------+
| 5      | 18.1             | 402 / 398 /      |
|        |                  | 398 / 398 /      |
|        |                  | 410              |
+--------+------------------+------------------+
"""),
    "tabulate pipe (Markdown), alignment colons": ("""
|   DEPTH |   Step time (ms) |
|--------:|-----------------:|
|       6 |            12.5  |
|      12 |            23.75 |
|      24 |            47.1  |
""", """
|   GPUs |   Step time (ms) | Memory per GPU (MiB)        |
|-------:|-----------------:|:----------------------------|
|      2 |             31.2 | 812.5, 790                  |
|      5 |             18.1 | 402 / 398 / 398 / 398 / 410 |
"""),
    "the template's Markdown table printed as text": ("""
| DEPTH | Step time (ms) |
|-------|----------------|
| 6     | 12.5           |
| 12    | 23.75          |
| 24    | 47.1           |
""", """
| GPUs | Step time (ms) | Memory per GPU (MiB)        |
|------|----------------|-----------------------------|
| 2    | 31.2           | 812.5, 790                  |
| 5    | 18.1           | 402 / 398 / 398 / 398 / 410 |
"""),
    "org-mode (tabulate orgtbl)": ("""
| DEPTH   | Step time (ms)   |
|---------+------------------|
| 6       | 12.5             |
| 12      | 23.75            |
| 24      | 47.1             |
""", """
| GPUs   | Step time (ms)   | Memory per GPU (MiB)        |
|--------+------------------+-----------------------------|
| 2      | 31.2             | 812.5, 790                  |
| 5      | 18.1             | 402 / 398 / 398 / 398 / 410 |
"""),
    "tabulate psql, numbers right-aligned": ("""
+---------+------------------+
|   DEPTH |   Step time (ms) |
|---------+------------------|
|       6 |            12.5  |
|      12 |            23.75 |
|      24 |            47.1  |
+---------+------------------+
""", """
+--------+------------------+-----------------------------+
|   GPUs |   Step time (ms) | Memory per GPU (MiB)        |
|--------+------------------+-----------------------------|
|      2 |             31.2 | 812.5, 790                  |
|      5 |             18.1 | 402 / 398 / 398 / 398 / 410 |
+--------+------------------+-----------------------------+
"""),
    "psql's own aligned output: centred header, row count under it": ("""
 depth | step time (ms)
-------+----------------
     6 |           12.5
    12 |          23.75
    24 |           47.1
(3 rows)
""", """
 gpus | step time (ms) |    memory per gpu (mib)
------+----------------+-----------------------------
    2 |           31.2 | 812.5, 790
    5 |           18.1 | 402 / 398 / 398 / 398 / 410
(2 rows)
"""),
    "rst simple table (tabulate rst): === above, under the header and below": ("""
=======  ================
DEPTH    Step time (ms)
=======  ================
6        12.5
12       23.75
24       47.1
=======  ================
""", """
======  ================  ===========================
GPUs    Step time (ms)    Memory per GPU (MiB)
======  ================  ===========================
2       31.2              812.5, 790
5       18.1              402 / 398 / 398 / 398 / 410
======  ================  ===========================
"""),
    "underscores under the header": ("""
DEPTH    Step time (ms)
_______  ______________
6        12.5
12       23.75
24       47.1
""", """
GPUs    Step time (ms)    Memory per GPU (MiB)
____    ______________    ____________________
2       31.2              812.5, 790
5       18.1              402 / 398 / 398 / 398 / 410
"""),
}

# Box-drawing grids (tabulate fancy_grid, rounded_outline; rich and psql's unicode style).
BOX_STYLES = {
    "tabulate fancy_grid": ("""
╒═════════╤══════════════════╕
│   DEPTH │   Step time (ms) │
╞═════════╪══════════════════╡
│       6 │            12.5  │
├─────────┼──────────────────┤
│      12 │            23.75 │
├─────────┼──────────────────┤
│      24 │            47.1  │
╘═════════╧══════════════════╛
""", """
╒════════╤══════════════════╤═════════════════════════════╕
│   GPUs │   Step time (ms) │ Memory per GPU (MiB)        │
╞════════╪══════════════════╪═════════════════════════════╡
│      2 │             31.2 │ 812.5, 790                  │
├────────┼──────────────────┼─────────────────────────────┤
│      5 │             18.1 │ 402 / 398 / 398 / 398 / 410 │
╘════════╧══════════════════╧═════════════════════════════╛
"""),
    "tabulate rounded_outline": ("""
╭─────────┬──────────────────╮
│   DEPTH │   Step time (ms) │
├─────────┼──────────────────┤
│       6 │            12.5  │
│      12 │            23.75 │
│      24 │            47.1  │
╰─────────┴──────────────────╯
""", """
╭────────┬──────────────────┬─────────────────────────────╮
│   GPUs │   Step time (ms) │ Memory per GPU (MiB)        │
├────────┼──────────────────┼─────────────────────────────┤
│      2 │             31.2 │ 812.5, 790                  │
│      5 │             18.1 │ 402 / 398 / 398 / 398 / 410 │
╰────────┴──────────────────┴─────────────────────────────╯
"""),
}


def _assert_both_tables_read(result, style):
    for field_id in (TASK2, TASK4):
        assert result.answers.get(field_id) == EXPECTED[field_id], (
            f"{style}: expected {field_id} read as {EXPECTED[field_id]}, observed "
            f"{result.answers.get(field_id)!r}; problems {result.problems} "
            "(look at the rule-line skip in grader/answers/hw3_pdf/tables.py, _table_lines / _headers_at)")
        assert field_id not in result.missing and field_id not in result.unread, (style, result.missing)
    assert result.status == "ok", f"{style}: expected a clean read, observed problems {result.problems}"


@pytest.mark.parametrize("style", list(STYLES))
def test_a_table_ruled_in_text_is_read_in_every_style(tmp_path, style):
    task2, task4 = STYLES[style]
    _assert_both_tables_read(_read(tmp_path, _with_tables(task2, task4)), style)


@pytest.mark.parametrize("style", list(BOX_STYLES))
def test_a_box_drawing_grid_is_read(style):
    task2, task4 = BOX_STYLES[style]
    result = reading_from_worker_output(_monospace_worker_output(_with_tables(task2, task4)))
    _assert_both_tables_read(result, style)


def test_a_grid_with_no_space_inside_its_borders_reads_its_cells(tmp_path):
    """"|6|12.5|": the bars part the cells though they touch the numbers."""
    task2 = "|DEPTH|Step time (ms)|\n|-----|--------------|\n|6|12.5|\n|12|23.75|\n|24|47.1|"
    task4 = ("|GPUs|Step time (ms)|Memory per GPU (MiB)|\n|----|----|----|\n|2|31.2|812.5, 790|\n"
             "|5|18.1|402 / 398 / 398 / 398 / 410|")
    _assert_both_tables_read(_read(tmp_path, _with_tables(task2, task4)), "bars touching the cells")


def test_a_rule_drawn_under_the_header_is_passed_over(tmp_path):
    """A rule drawn as a line (not typed), as HTML and word processors draw a header's border:
    no text line, so it never stood between the header and its rows; it still does not."""
    lines = REPORT_LINES
    under = tuple(lines.index(header) for header in (_T2_FIRST, _T4_FIRST))
    pdf = write_text_pdf(tmp_path / "report.pdf", [lines], column_pt=100, rules_under={0: under})
    result = reading_from_worker_output(extract(str(pdf), 50))
    assert result.answers.get(TASK4) == EXPECTED[TASK4], result.problems
    assert result.answers.get(TASK2) == EXPECTED[TASK2], result.problems


def test_a_rule_between_a_tables_last_row_and_the_next_label_ends_the_table(tmp_path):
    """The bottom rule is no row, and the label after it is no row either: it is read as its own."""
    task2, task4 = STYLES["pandoc plain (multiline table): rules above and below, a header cell wrapped, rows apart"]
    result = _read(tmp_path, _with_tables(task2, task4))
    assert result.answers["task2.depth_improves_speed"]["value"] == "no"
    assert result.answers["task4.all_gpus_utilised"]["value"] == "yes"


@pytest.mark.parametrize("style", ["tabulate grid, numbers left-aligned",
                                   "tabulate grid, cells wrapped (maxcolwidths), a header cell wrapped",
                                   "rst simple table (tabulate rst): === above, under the header and below",
                                   "pandoc plain (multiline table): rules above and below, a header cell wrapped, rows apart"])
@pytest.mark.parametrize("prose", ["5 GPUs were not faster than 2 here.", "12 layers: 23.75 ms"])
def test_prose_right_under_a_tables_bottom_rule_is_no_row(tmp_path, style, prose):
    """A line of prose that starts with a number, right under the bottom rule (no blank line):
    the rule ends the table; it had been read as a row ("gpus=5 appears twice", an extra depth)."""
    task2, task4 = STYLES[style]
    result = _read(tmp_path, _with_tables(task2.rstrip("\n") + "\n" + prose, task4.rstrip("\n") + "\n" + prose))
    _assert_both_tables_read(result, f"{style}, then {prose!r}")


# ---------------------------------------------------------------- what is still not a table


def test_rows_under_a_found_header_that_cannot_be_read_wait_for_a_person(tmp_path):
    """The first row annotated ("6 (baseline)"): no row is read, but the header is there with
    rows under it, so the table is for a person to read (unread: its points pending), said."""
    task2 = ("  DEPTH          Step time (ms)\n  -------------- --------------\n  6 (baseline)   12.5\n"
             "  12             23.75\n  24             47.1")
    task4 = STYLES["pandoc plain (simple table), as adv39's groff report"][1]
    result = _read(tmp_path, _with_tables(task2, task4))
    assert TASK2 in result.missing and TASK2 in result.unread, (result.missing, result.unread)
    why = result.unread[TASK2]
    for said in ("the table 'DEPTH | Step time (ms)' was found", "none of the rows under it could be read",
                 "6 (baseline)", "a person must read them"):
        assert said in why, f"expected {said!r} in the reason, observed {why!r}"
    assert why in result.problems and result.needs_manual_review
    assert result.answers[TASK4] == EXPECTED[TASK4]   # the other table is read as before


def test_a_header_with_nothing_under_it_is_not_answered_and_says_so(tmp_path):
    task2 = "  DEPTH   Step time (ms)\n  ------- ----------------"
    result = _read(tmp_path, _with_tables(task2, STYLES["tabulate simple, numbers right-aligned"][1]))
    assert TASK2 in result.missing and TASK2 not in result.unread, result.unread
    assert any("the table 'DEPTH | Step time (ms)' has its header" in p and "but no rows under it" in p
               for p in result.problems), result.problems


def test_a_report_with_no_tables_stays_not_answered(tmp_path):
    lines = [line for line in _with_tables("", "") if line]
    result = _read(tmp_path, lines)
    for field_id, header in ((TASK2, "DEPTH | Step time (ms)"),
                             (TASK4, "GPUs | Step time (ms) | Memory per GPU (MiB)")):
        assert field_id in result.missing and field_id not in result.unread, (field_id, result.unread)
        assert f"no table with the header '{header}' found" in result.problems, result.problems


def test_a_sentence_naming_the_columns_over_numbers_is_no_header(tmp_path):
    """Prose that names both columns, a line of numbers after it: no table, not answered
    (a person is not sent to read a table that is not there)."""
    task2 = "The step time (ms) grows with DEPTH:\n6 layers took 12.5 and 24 layers 47.1."
    result = _read(tmp_path, _with_tables(task2, STYLES["tabulate simple, numbers right-aligned"][1]))
    assert TASK2 in result.missing and TASK2 not in result.unread, result.unread


def test_a_lone_rule_line_is_no_row_and_no_header(tmp_path):
    """A rule line where the rows should be (the rows deleted) reads as no rows, never as a
    row of dashes or a placeholder."""
    task4 = "GPUs    Step time (ms)    Memory per GPU (MiB)\n+------+----------------+----------------+"
    result = _read(tmp_path, _with_tables(STYLES["tabulate simple, numbers right-aligned"][0], task4))
    assert result.answers[TASK2] == EXPECTED[TASK2]
    assert TASK4 in result.missing and TASK4 not in result.unread and not result.unread_cells


def test_unread_rows_make_the_tables_check_wait_for_a_person(tmp_path):
    """Through collect_answers (the report alone): the table is in `unread`, and the checks'
    reported() raises AnswerNotRead, which the scoring counts as pending, not failed."""
    task2 = ("  DEPTH          Step time (ms)\n  -------------- --------------\n  6 (baseline)   12.5\n"
             "  12             23.75\n  24             47.1")
    folder = tmp_path / "hw3"
    folder.mkdir()
    write_text_pdf(folder / "report.pdf", [_with_tables(task2, STYLES["tabulate simple, numbers right-aligned"][1])],
                   font="Courier", font_size=10)
    answers = collect_answers(tmp_path, "hw3", "pdf")
    assert TASK2 in answers.unread, (answers.unread, answers.problems)
    assert "none of the rows under it could be read" in answers.unread_why[TASK2]
    with pytest.raises(AnswerNotRead) as failure:
        reported(answers, TASK2)
    assert failure.value.unread_answer == TASK2
    assert reported(answers, TASK4) == EXPECTED[TASK4]
