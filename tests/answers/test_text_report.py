"""A HW3 report handed in as Markdown or plain text (hw3/report.md) instead of the PDF the
handout asks for ("Report (PDF — single file)"), and what a report read in part says (a TA's
audit: hw3_s04, hw3_s03).

hw3_s04 handed in hw3/report.md, written from REPORT_TEMPLATE.md: the student was told
"hw3/report.pdf was not handed in" with no word of report.md, and instructor.md said "No
answer ... found" for all five explanations, so a TA working from it gave 0 for answers that
are there. The text is now read by the PDF's own rules (laid out as the pages the PDF worker
gives: hw3_pdf/text_report.py) and graded as written, flagged for the instructor ("any
penalty for the format is the course's"); a .docx, .odt or .html is named for a person.

hw3_s03's report had no row for 5 GPUs in Task 4's table: the student saw "hw3/report.pdf
(read in part: see below)" with nothing below it.
"""
from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import yaml

import build_fixture_reports as builders
from bad_pdfs import REPORT_LINES
from grader.answers.collect import collect_answers
from grader.answers.hw3_pdf import contract
from grader.answers.hw3_pdf.reader import describe_where
from grader.answers.hw3_pdf.text_report import read_text_report
from tiny_pdf import write_text_pdf

HANDED_IN = Path(__file__).parent / "fixtures" / "text_reports" / "report_md_handed_in.md"
TEMPLATE = Path(__file__).resolve().parents[2] / "student_template" / "hw3" / "REPORT_TEMPLATE.md"


def _words(text) -> str:
    return " ".join(str(text).split())


def _read(tmp_path: Path, text: str, name: str = "report.md"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return read_text_report(path, display_name=f"hw3/{name}")


def _submission(tmp_path: Path, files: dict[str, str | bytes], sheet: dict | None = None) -> Path:
    folder = tmp_path / "sub" / "hw3"
    folder.mkdir(parents=True)
    for name, content in files.items():
        (folder / name).write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    if sheet is not None:
        (folder / "answers.yaml").write_text(yaml.safe_dump({"assignment": "hw3", "answers": sheet}))
    return tmp_path / "sub"


# -- the text read by the PDF's rules ------------------------------------------------------------

def test_the_audits_markdown_report_is_read_whole():
    reading = read_text_report(HANDED_IN, display_name="hw3/report.md")
    assert reading.status == "ok" and reading.problems == [] and reading.missing == []
    assert reading.answers["task1.layers_per_gpu"] == [3, 3]
    assert reading.answers["task1.transfer_between"] == [2, 3]
    assert reading.answers["task2.step_time_table"] == [{"depth": 6, "step_time_ms": 1.92},
                                                        {"depth": 12, "step_time_ms": 3.71},
                                                        {"depth": 24, "step_time_ms": 7.3}]
    assert reading.answers["task4.table"][1] == {"gpus": 5, "step_time_ms": 6.88,
                                                 "memory_per_gpu_mib": [86.1, 84.0, 84.0, 84.0, 86.5]}
    assert [reading.answers[f"task5.{k}"] for k in ("to_calls_2gpus", "transfers_2gpus", "to_calls_5gpus",
                                                    "transfers_5gpus")] == [20, 1, 20, 4]
    assert reading.answers["task4.more_gpus_faster"]["value"] == "no"
    assert reading.answers["task3.explanation"].startswith("layout(DEPTH, n) with n = torch.cuda.device_count()")
    assert set(reading.answers) == set(contract.expected_fields())
    # Where each was read: the line as written; a text file's pages are the reader's, not named.
    assert describe_where(reading.where["task5.transfers_5gpus"]) == "line 'Number of transfers with 5 GPUs: 4'"
    assert describe_where(reading.where["task1.explanation"]) == "under 'Task 1 explanation'"


# The fixtures' own report, as each way of writing it comes out in Markdown: every answer as
# the builder put it in, nothing read that it did not.
STYLES = list(itertools.product([builders.SHORT, builders.TERSE, builders.LONG, builders.BARE],
                                ["label", "question", "own_line"], [False, True], [False, True], [": ", " = "]))


@pytest.mark.parametrize("yes_no, style, qa_table, numbered, label_sep", STYLES)
def test_every_way_the_fixtures_write_the_report_reads_exactly_in_markdown(tmp_path, yes_no, style, qa_table,
                                                                             numbered, label_sep):
    values = builders.Values(yes_no=dict(yes_no))
    blocks = builders.report_blocks(values, time_fmt=builders.dot, mem_fmt=builders.mem_dot, yes_no_style=style,
                                    qa_table=qa_table, numbered=numbered, label_sep=label_sep)
    reading = _read(tmp_path, builders.to_markdown(blocks))
    for qid, value in values.expected().items():
        got = reading.answers.get(qid)
        if isinstance(value, str):
            assert _words(got) == _words(value), qid
        elif isinstance(value, dict):
            assert got["value"] == value["value"] and _words(got["explanation"]) == _words(value["explanation"]), qid
        else:
            assert got == value, qid
    assert reading.problems == [] and reading.missing == [] and reading.status == "ok"


MARKDOWN = "\n".join([
    "HW3 report",
    "==========",
    "",
    "**Layers per GPU (DEPTH=6, 2 GPUs):** 3, 3  ",
    "**Transfer between layers:** `2` and `3`",
    "",
    "<!-- Number of transfers with 2 GPUs: 7 -->",
    "Number of transfers with 2 GPUs: ~~2~~ 1",
    "",
    "Task 1 explanation",
    "------------------",
    "",
    "The data moves at `x = x.to(layer_device)`, before layer 3 \\(the first on cuda:1\\).",
    "",
    "## Task 4",
    "",
    "GPUs | Step time (ms) | Memory per GPU (MiB)",
    "2 | 6.21 | 210.3, 212.0",
    "5 | 6.88 | 86.1, 84.0, 84.0, 84.0, 86.5",
    "",
    "| DEPTH | Step time (ms) |",
    "| 6 | 1.92 |",
    "| 12 | 3.71 |",
    "| 24 | 7.30 |",
])


def test_markdown_is_read_as_it_shows():
    """Emphasis, code marks and escapes are no part of an answer; a comment and struck-out
    text are not there; a heading underlined is a heading; a pipe table is a table with or
    without its rule line, with or without its outer bars."""
    import tempfile
    with tempfile.TemporaryDirectory() as folder:
        reading = _read(Path(folder), MARKDOWN)
    assert reading.answers["task1.layers_per_gpu"] == [3, 3]
    assert reading.answers["task1.transfer_between"] == [2, 3]
    assert reading.answers["task5.transfers_2gpus"] == 1
    assert reading.answers["task1.explanation"] == ("The data moves at x = x.to(layer_device), before layer 3 "
                                                    "(the first on cuda:1).")
    assert [row["gpus"] for row in reading.answers["task4.table"]] == [2, 5]
    assert [row["depth"] for row in reading.answers["task2.step_time_table"]] == [6, 12, 24]


def test_a_table_shown_as_an_image_is_said_to_be_a_picture(tmp_path):
    text = HANDED_IN.read_text(encoding="utf-8")
    start = text.index("| GPUs |")
    end = text.index("All GPUs utilized")
    reading = _read(tmp_path, text[:start] + "![Task 4 table](task4.png)\n\n" + text[end:])
    assert "task4.table" not in reading.answers
    assert any("Task 4's table" in p and "is a picture (an image the report shows)" in p for p in reading.problems), \
        reading.problems


def test_the_template_handed_in_unfilled_answers_nothing_and_nothing_is_unread(tmp_path):
    reading = _read(tmp_path, TEMPLATE.read_text(encoding="utf-8"))
    assert {qid: v for qid, v in reading.answers.items() if v not in ([], None)} == {}
    assert reading.unread == {} and reading.unread_cells == []


@pytest.mark.parametrize("content", [b"", b"   \n\n", b"\x00\xff\xfe" * 50, "é".encode("cp1252") * 10])
def test_a_text_report_that_is_no_report_never_raises(tmp_path, content):
    path = tmp_path / "report.md"
    path.write_bytes(content)
    reading = read_text_report(path, display_name="hw3/report.md")
    assert reading.answers == {} or all(v in ([], None) for v in reading.answers.values())


def test_a_huge_text_report_is_read_only_in_part(tmp_path):
    text = HANDED_IN.read_text(encoding="utf-8") + "\n\nlog line\n" * 20000
    reading = _read(tmp_path, text)
    assert reading.answers["task5.transfers_5gpus"] == 4
    assert any("longer than a report" in p for p in reading.problems), reading.problems[:3]


# -- handed in instead of the PDF ------------------------------------------------------------------

@pytest.mark.parametrize("name", ["report.md", "report.txt", "Report.MD", "hw3_report.markdown"])
def test_a_markdown_report_instead_of_the_pdf_is_read_graded_as_written_and_flagged(tmp_path, name):
    answers = collect_answers(_submission(tmp_path, {name: HANDED_IN.read_text(encoding="utf-8"),
                                                     "REPORT_TEMPLATE.md": TEMPLATE.read_text()}), "hw3", "pdf_then_sheet")
    shown = f"hw3/{name}"
    assert answers.missing == [] and answers.values["task5.transfers_5gpus"] == 4
    assert answers.origin["task1.explanation"] == f"{shown}, under 'Task 1 explanation'"
    assert answers.report_instead == shown
    assert {"file": "hw3/report.pdf", "status": "missing"} in answers.files
    assert any(f["file"] == shown and f["instead_of"] == "hw3/report.pdf" and f["status"] == "ok" for f in answers.files)
    assert answers.problems[0].startswith(f"{shown} was handed in instead of hw3/report.pdf: the handout asks for the "
                                          "report as a PDF ('Report (PDF — single file)')")
    assert "graded as written" in answers.problems[0] and "any penalty for the format is the course's" in \
        answers.problems[0]
    assert not any("was not handed in" in p for p in answers.problems), answers.problems
    assert answers.needs_manual_review


@pytest.mark.parametrize("name", ["report.docx", "report.odt", "report.html"])
def test_a_report_in_an_editors_format_is_named_for_a_person(tmp_path, name):
    answers = collect_answers(_submission(tmp_path, {name: b"PK\x03\x04 not read"}), "hw3", "pdf_then_sheet")
    shown = f"hw3/{name}"
    assert answers.report_instead == shown
    assert answers.problems[0].startswith(f"{shown} was handed in instead of hw3/report.pdf")
    assert f"a person must read {shown}" in answers.problems[0]
    # Every answer may be in it: for a person, never "not answered".
    assert answers.unread == answers.missing == list(answers.questions)
    assert any(f["file"] == shown and f["status"] == "unreadable" for f in answers.files)


def test_the_template_beside_no_report_is_no_report(tmp_path):
    answers = collect_answers(_submission(tmp_path, {"REPORT_TEMPLATE.md": TEMPLATE.read_text()},
                                          {"task5.transfers_5gpus": {"value": 4}}), "hw3", "pdf_then_sheet")
    assert answers.report_instead is None
    assert answers.problems == ["hw3/report.pdf was not handed in; hand the report in under that name"]


def test_a_pdf_beside_a_markdown_report_is_the_one_read(tmp_path):
    folder = _submission(tmp_path, {"report.md": "Number of transfers with 5 GPUs: 9\n"}) / "hw3"
    write_text_pdf(folder / "report.pdf", [REPORT_LINES])
    answers = collect_answers(folder.parent, "hw3", "pdf_then_sheet")
    assert answers.values["task5.transfers_5gpus"] == 4 and answers.report_instead is None


# -- a report read in part says what was not read, and why -----------------------------------------

def test_a_table_without_the_row_for_5_gpus_says_so(tmp_path):
    """hw3_s03: only a 2-GPU node, so no 5-GPU row: "read in part" had nothing below it."""
    folder = tmp_path / "sub" / "hw3"
    folder.mkdir(parents=True)
    write_text_pdf(folder / "report.pdf", [[line for line in REPORT_LINES if not line.startswith("5\t")]])
    answers = collect_answers(tmp_path / "sub", "hw3", "pdf_then_sheet")
    assert answers.files[0]["status"] == "partial"
    assert "task4.table: hw3/report.pdf answers it only in part (no row for gpus=5); the part read was graded" \
        in answers.problems, answers.problems


def test_a_row_there_but_not_read_says_so_and_goes_to_a_person(tmp_path):
    folder = tmp_path / "sub" / "hw3"
    folder.mkdir(parents=True)
    write_text_pdf(folder / "report.pdf", [[line.replace("5\t18.1\t", "5\t18 or 19\t") for line in REPORT_LINES]])
    answers = collect_answers(tmp_path / "sub", "hw3", "pdf_then_sheet")
    assert any("the row for gpus=5 not read" in p for p in answers.problems), answers.problems
    assert answers.unread_cells == [{"id": "task4.table", "row": "5", "column": "step_time_ms", "text": "18 or 19"}]


def test_a_label_missing_from_the_report_whose_answer_the_sheet_gives_is_named(tmp_path):
    folder = tmp_path / "sub" / "hw3"
    folder.mkdir(parents=True)
    write_text_pdf(folder / "report.pdf", [[line for line in REPORT_LINES if not line.startswith("Transfer between")]])
    (folder / "answers.yaml").write_text(yaml.safe_dump({"answers": {"task1.transfer_between": {"value": [2, 3]}}}))
    answers = collect_answers(tmp_path / "sub", "hw3", "pdf_then_sheet")
    assert answers.values["task1.transfer_between"] == [2, 3]
    assert ("not found in hw3/report.pdf, so hw3/answers.yaml's answers were graded: 'Transfer between layers'"
            in answers.problems), answers.problems


def test_the_sheets_answer_is_graded_before_a_report_in_another_format(tmp_path):
    """The PDF's answer wins over the sheet's because the handout asks for the PDF; a report.md
    is not what it asks for, and the sheet is the grader's own form: the sheet's is graded,
    the report fills what the sheet lacks, and where they differ a problem names both. (The
    HW3 variants hand in the reference's sheet with their own answers beside its REPORT.md,
    the source of its PDF: the sheet's answers are the ones graded.)"""
    sheet = {"task1.transfer_between": {"value": [3, 4]}, "task5.transfers_5gpus": {"value": 4}}
    answers = collect_answers(_submission(tmp_path, {"report.md": HANDED_IN.read_text(encoding="utf-8")}, sheet),
                              "hw3", "pdf_then_sheet")
    assert answers.values["task1.transfer_between"] == [3, 4]
    assert answers.origin["task1.transfer_between"] == "hw3/answers.yaml"
    assert answers.values["task5.transfers_2gpus"] == 1     # from the report: the sheet does not give it
    assert ("task1.transfer_between: hw3/report.md and hw3/answers.yaml give different answers ([2, 3] and "
            "[3, 4]); hw3/answers.yaml's was graded (hw3/report.md is not the PDF the handout asks for): check "
            "which the student meant") in answers.problems
    assert not any(p.startswith("task5.transfers_5gpus:") for p in answers.problems)   # the same answer twice
    assert "hw3/answers.yaml's answers first, where it gives them" in answers.problems[0]


def test_a_long_text_report_cut_where_a_character_is_cut_in_two_stays_utf8(tmp_path):
    from grader.answers.hw3_pdf import text_report
    text = HANDED_IN.read_text(encoding="utf-8").replace("already on that device.", "already on that device — déjà.")
    filler = "é" * (text_report.MAX_TEXT_BYTES // 2)   # two bytes each: the limit cuts one in two
    reading = _read(tmp_path, text + "\n\n" + "x" + filler)
    assert reading.answers["task1.transfer_between"] == [2, 3]
    # Read as Windows-1252, "— déjà" had been "â€” dÃ©jÃ ".
    assert reading.answers["task1.explanation"].endswith("already on that device — déjà.")
