"""What the student's report and instructor.md say of the answer files (a TA's audit: hw3_s02,
hw3_s03, hw3_s04).

- A report read in part says what was not read and why (hw3_s03: "read in part: see below"
  with nothing below it; Task 4's table had no row for 5 GPUs).
- A report handed in as hw3/report.md instead of the PDF: the student is told it was read in
  place of the PDF the handout asks for, and instructor.md says so, quotes the written answers
  from it, and lists the automatic items below full marks in the overrides block (a TA had
  given 0 for explanations instructor.md called "not found"); a .docx is named as the file to
  read for every answer.
- A label of the PDF answered in words the reader does not take is unread, listed with the
  automatic items below full marks in the overrides block, as a sheet's unread answers are
  (hw3_s02: "Not answered: task1.transfer_between", no hw3.task1 line).
- The table of answers as read has the blank line Markdown needs before it.
"""
from __future__ import annotations

from pathlib import Path

import yaml

from grader.answers.collect import collect_answers
from grader.reports.instructor import render_instructor_markdown
from grader.reports.render import render_html, render_markdown
from grader.scoring import load_rubrics
from tests.answers.tiny_pdf import write_text_pdf
from tests.support.report_fixtures import ROUND_ROBIN, fresh

REPORT = [
    "HW3 report", "Task 1",
    "Layers per GPU (DEPTH=6, 2 GPUs): 3, 3",
    "Transfer between layers: 2 and 3",
    "Task 1 explanation", "The data moves once, before layer 3.",
    "Task 2", "| DEPTH | Step time (ms) |", "| 6 | 12.5 |", "| 12 | 23.75 |", "| 24 | 47.1 |",
    "Does increasing DEPTH improve speed (yes/no): No.",
    "Task 2 explanation", "Only one GPU computes at a time.",
    "Task 3", "Task 3 explanation", "Four layers each.",
    "Task 4", "GPUs\tStep time (ms)\tMemory per GPU (MiB)", "2\t31.2\t812.5, 790", "5\t18.1\t402 / 398 / 398 / 398 / 410",
    "All GPUs utilized with 5 GPUs (yes/no): yes", "Faster with 5 GPUs than with 2 (yes/no): No.",
    "Task 4 explanation", "Memory per GPU falls, time barely changes.",
    "Task 5",
    "Number of .to() calls with 2 GPUs: 20", "Number of transfers with 2 GPUs: 1",
    "Number of .to() calls with 5 GPUs: 20", "Number of transfers with 5 GPUs: 4",
    "Transfers grow with the number of GPUs (yes/no): yes",
    "Task 5 explanation", "A .to() call moves data only across devices.",
]
# The same report in Markdown: a paragraph a line, a table's rows together.
MARKDOWN = "\n".join(line.replace("\t", " | ") + ("" if "|" in line or "\t" in line else "\n") for line in REPORT)


def _result(answers: dict) -> dict:
    """The round-robin result (hw3.task1 and hw3.task3 below full marks) with these answers,
    and its manual items asking for the written answers."""
    data = fresh(ROUND_ROBIN)
    hw3 = data["assignments"][0]
    hw3["answers"] = answers
    for item in hw3["items"]:
        if item["kind"] == "manual" and item["id"].endswith(".explanation"):
            item["answer"], item["max_score"], item["pending"] = item["id"].removeprefix("hw3."), 1, True
    return data


def _answers(tmp_path: Path, files: dict[str, str | bytes] | None = None, pdf: list[str] | None = None) -> dict:
    folder = tmp_path / "sub" / "hw3"
    folder.mkdir(parents=True)
    for name, content in (files or {}).items():
        (folder / name).write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    if pdf is not None:
        write_text_pdf(folder / "report.pdf", [pdf])
    return collect_answers(tmp_path / "sub", "hw3", "pdf_then_sheet").to_dict()


def _block(md: str) -> str:
    return md[md.index("## Overrides to fill in"):].split("```text\n", 1)[1].split("\n```")[0]


def test_a_report_read_in_part_says_below_what_was_not_read(tmp_path):
    data = _result(_answers(tmp_path, pdf=[line for line in REPORT if not line.startswith("5\t")]))
    reason = "task4.table: hw3/report.pdf answers it only in part (no row for gpus=5); the part read was graded"
    md, page = render_markdown(data), render_html(data)
    mine = md[md.index("### Your answers"):]
    assert "hw3/report.pdf (read in part: see below)" in mine and f"- {reason}" in mine
    assert "hw3/report.pdf (read in part: see below)" in page and reason in page
    assert f"- {reason}" in render_instructor_markdown(data, load_rubrics())


def test_the_table_of_answers_read_has_a_blank_line_before_it(tmp_path):
    """"An instructor will look at your report by hand." had ended its line with the table
    right under it, which Markdown then shows as text."""
    md = render_markdown(_result(_answers(tmp_path, pdf=[line for line in REPORT if not line.startswith("5\t")])))
    assert "An instructor will look at your report by hand." in md
    lines = md.splitlines()
    at = lines.index("| answer | read as | from |")
    assert lines[at - 1] == "" and lines[at - 2].startswith("Your answer files: "), lines[at - 2:at + 1]


def test_a_markdown_report_is_said_to_stand_for_the_pdf_and_quoted_to_the_instructor(tmp_path):
    data = _result(_answers(tmp_path, files={"report.md": MARKDOWN}))
    for text in (render_markdown(data), render_html(data)):
        assert "hw3/report.pdf (not handed in)" in text
        assert "hw3/report.md (handed in instead of hw3/report.pdf, read)" in text
        assert "hw3/report.md was handed in instead of hw3/report.pdf: the handout asks for the report as a PDF" in text
    md = render_instructor_markdown(data, load_rubrics())
    assert "**The report is hw3/report.md, not the PDF the handout asks for.**" in md
    assert "graded as written" in md
    assert "Student's answer (`task4.explanation`, from hw3/report.md, under 'Task 4 explanation'):" in md
    assert "Memory per GPU falls, time barely changes." in md
    assert "No answer to `task4.explanation` was found." not in md and "Not answered" not in md
    # The automatic items below full marks, for a regrade or the course's penalty for the format.
    block = _block(md)
    assert ('# hw3.task1: {points: 0, comment: "regraded by hand from hw3/report.md"}  # automatic, now 0 of 3: '
            "uncomment to set") in block
    assert "# hw3.task3: {points: 2," in block and "# hw3.task2:" not in block
    yaml.safe_load(block)


def test_a_docx_report_points_the_instructor_to_it_for_every_answer(tmp_path):
    data = _result(_answers(tmp_path, files={"report.docx": b"PK\x03\x04 a Word file"}))
    md = render_instructor_markdown(data, load_rubrics())
    assert "**The report is hw3/report.docx, not the PDF the handout asks for.** The grader could not read it" in md
    assert ("No answer to `task4.explanation` was read, but one may be written where or how the grader cannot read "
            "it (the problems above say why): read hw3/report.docx for it.") in md
    assert "# hw3.task1: {points: 0, comment: \"regraded by hand: an unread answer is right\"}" in _block(md)
    student = render_markdown(data)
    assert "hw3/report.docx (handed in instead of hw3/report.pdf, could not be read)" in student
    assert "a person must read hw3/report.docx" in student


def test_a_label_answered_in_words_not_read_goes_to_the_overrides_block(tmp_path):
    report = [line.replace("Transfer between layers: 2 and 3", "Transfer between layers: 3rd or 4th") for line in REPORT]
    data = _result(_answers(tmp_path, pdf=report))
    md = render_instructor_markdown(data, load_rubrics())
    assert "Not answered: `task1.transfer_between`" not in md
    assert "Written where or how the grader cannot read them, so scored 0" in md and "`task1.transfer_between`" in md
    assert "'Transfer between layers' is answered '3rd or 4th', which could not be read" in md
    assert '# hw3.task1: {points: 0, comment: "regraded by hand: an unread answer is right"}' in _block(md)
