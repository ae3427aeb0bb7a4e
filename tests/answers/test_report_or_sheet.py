"""HW3's answers from the PDF report and the answer sheet (answers_source: pdf_then_sheet), and
a report of the student's own structure (a TA's audit, 19).

- The report's answer wins, but where it was read only in part (a table's row or a GPU's
  memory not read, rows that contradict each other, a label answered twice) and the sheet
  answers the question whole, the sheet's is graded and a problem says so: a misread table
  had beaten a correct answers.yaml (hw3_pdf_docx_plus_sheet).
- Where both are whole and disagree, the report's is still graded (the handout asks for the
  report, and grading the better of two answers would reward writing two), and a problem
  names both for a person, who sees a misread report there.
- A report that answers after the handout's own questions ("Q1) How many layers ...?") and
  not under the template's labels: instructor.md listed all of it as "Not answered". It is
  now said to be for a person to read in the PDF, with the labels to use, and the handout's
  questions that take a yes/no or Q1's two numbers are read.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from bad_pdfs import REPORT_LINES
from grader.answers.collect import collect_answers
from grader.answers.hw3_pdf.extract_worker import extract
from grader.answers.hw3_pdf.reader import reading_from_worker_output
from tiny_pdf import write_text_pdf

TABLE_5 = "5\t18.1\t402 / 398 / 398 / 398 / 410"
WHOLE_TABLE = [{"gpus": 2, "step_time_ms": 31.2, "memory_per_gpu_mib": [812.5, 790]},
               {"gpus": 5, "step_time_ms": 18.1, "memory_per_gpu_mib": [402, 398, 398, 398, 410]}]


def _submission(tmp_path: Path, lines: list[str], sheet: dict | None = None) -> Path:
    folder = tmp_path / "sub" / "hw3"
    folder.mkdir(parents=True, exist_ok=True)
    write_text_pdf(folder / "report.pdf", [lines])
    if sheet is not None:
        (folder / "answers.yaml").write_text(yaml.safe_dump({"assignment": "hw3", "answers": sheet}))
    return tmp_path / "sub"


def _replaced(old: str, new: list[str]) -> list[str]:
    at = REPORT_LINES.index(old)
    return REPORT_LINES[:at] + new + REPORT_LINES[at + 1:]


SHEET_TABLE = {"task4.table": {"rows": WHOLE_TABLE}}


@pytest.mark.parametrize("lines, why", [
    # One memory value where 5 GPUs have five (a row per GPU misread as before the fix).
    (_replaced(TABLE_5, ["5\t18.1\t402"]), "1 memory value(s) for 5 GPUs"),
    # The 5-GPU row not read (no step time in it).
    (_replaced(TABLE_5, ["5\tn/a\t402 / 398 / 398 / 398 / 410"]), "gpus=5 not read"),
    # Two rows for 2 GPUs that contradict each other: which one is meant is not known.
    (_replaced(TABLE_5, ["2\t33.0\t815, 792", TABLE_5]), "gpus=2 appears twice"),
])
def test_a_report_table_read_in_part_gives_way_to_the_sheets_whole_one(tmp_path, lines, why):
    answers = collect_answers(_submission(tmp_path, lines, SHEET_TABLE), "hw3", "pdf_then_sheet")
    assert answers.values["task4.table"] == WHOLE_TABLE
    assert answers.origin["task4.table"] == "hw3/answers.yaml"
    assert "task4.table" not in answers.where   # no page of the report for the sheet's answer
    said = [p for p in answers.problems if p.startswith("task4.table: hw3/report.pdf answers it only in part")]
    assert len(said) == 1 and why in said[0] and said[0].endswith(
        "the whole answer in hw3/answers.yaml was graded instead"), answers.problems
    # Everything else still comes from the report.
    assert answers.origin["task5.transfers_2gpus"].startswith("hw3/report.pdf")


def test_a_report_read_in_part_stays_where_the_sheet_is_no_better(tmp_path):
    lines = _replaced(TABLE_5, ["5\t18.1\t402"])
    sheet = {"task4.table": {"rows": WHOLE_TABLE[:1]}}   # no row for 5 GPUs
    answers = collect_answers(_submission(tmp_path, lines, sheet), "hw3", "pdf_then_sheet")
    assert answers.values["task4.table"][1] == {"gpus": 5, "step_time_ms": 18.1, "memory_per_gpu_mib": [402]}
    assert answers.origin["task4.table"].startswith("hw3/report.pdf")
    assert not any("graded instead" in p for p in answers.problems)


def test_a_label_answered_twice_differently_gives_way_to_the_sheet(tmp_path):
    lines = _replaced("Number of transfers with 5 GPUs: 4", ["Number of transfers with 5 GPUs: 4",
                                                           "Number of transfers with 5 GPUs: 5"])
    answers = collect_answers(_submission(tmp_path, lines, {"task5.transfers_5gpus": {"value": 4}}),
                              "hw3", "pdf_then_sheet")
    assert answers.values["task5.transfers_5gpus"] == 4
    assert answers.origin["task5.transfers_5gpus"] == "hw3/answers.yaml"
    assert any(p.startswith("task5.transfers_5gpus: hw3/report.pdf answers it only in part ('Number of transfers "
                            "with 5 GPUs' is answered more than once") for p in answers.problems), answers.problems


def test_whole_answers_that_disagree_keep_the_reports_and_say_so(tmp_path):
    sheet = {"task5.transfers_2gpus": {"value": 7}, "task4.more_gpus_faster": {"value": True},
             "task4.table": {"rows": [dict(WHOLE_TABLE[0], step_time_ms=35.0), WHOLE_TABLE[1]]}}
    answers = collect_answers(_submission(tmp_path, REPORT_LINES, sheet), "hw3", "pdf_then_sheet")
    assert answers.values["task5.transfers_2gpus"] == 1
    assert answers.values["task4.more_gpus_faster"]["value"] == "no"
    assert answers.values["task4.table"] == WHOLE_TABLE
    told = {p.split(":")[0]: p for p in answers.problems if "give different answers" in p}
    assert set(told) == {"task5.transfers_2gpus", "task4.more_gpus_faster", "task4.table"}, answers.problems
    assert told["task5.transfers_2gpus"] == (
        "task5.transfers_2gpus: hw3/report.pdf and hw3/answers.yaml give different answers (1 and 7); the report's "
        "was graded (the handout asks for the report): check that it was read as written")
    assert "(no and yes)" in told["task4.more_gpus_faster"]
    assert "step_time_ms=31.2" in told["task4.table"] and "step_time_ms=35" in told["task4.table"]
    assert answers.needs_manual_review


def test_whole_answers_that_agree_say_nothing_more(tmp_path):
    sheet = {"task5.transfers_2gpus": {"value": 1}, "task4.more_gpus_faster": {"value": False},
             "task4.table": {"rows": list(reversed(WHOLE_TABLE))}, "task1.explanation": {"value": "Other words."}}
    answers = collect_answers(_submission(tmp_path, REPORT_LINES, sheet), "hw3", "pdf_then_sheet")
    assert answers.problems == [] and not answers.needs_manual_review
    assert answers.origin["task4.table"].startswith("hw3/report.pdf")


# -- a report of the student's own structure ------------------------------------------------------

OWN_STRUCTURE = [
    "Home Work 3 report",
    "Task 1",
    "Q1) How many layers are assigned to GPU 0 and GPU 1? GPU 0 gets",
    "3 layers (0, 1, 2) and GPU 1 gets 3 layers (3, 4, 5).",
    "",
    "Q2) In the forward() method, at what exact point does the data move",
    "from GPU 0 to GPU 1? At x = x.to(layer_device), before layer 3.",
    "",
    "Task 2",
    "DEPTH\tStep time (ms)", "6\t12.5", "12\t23.75", "24\t47.1",
    "",
    "Does increasing the number of layers improve speed? No. Every layer adds",
    "work that runs after the previous one.",
    "",
    "Task 4",
    "GPUs\tStep time (ms)\tGPU memory usage (MiB)", "2\t31.2\t812.5, 790", TABLE_5,
    "",
    "Are all GPUs being utilized? Yes, each holds four layers.",
    "",
    "Does adding more GPUs make the training faster in this specific",
    "setup? No, one GPU computes at a time.",
    "",
    "Task 5",
    "- Number of transfers with 2 GPUs: 1 (20 calls of x.to(layer_device))",
    "- Number of transfers with 5 GPUs: 4 (20 calls)",
    "",
    "What is the relationship between the number of GPUs and the total",
    "communication overhead? It grows with the GPUs: N - 1 transfers.",
]


def test_a_report_of_its_own_structure_is_said_to_be_for_a_person_with_the_labels_to_use(tmp_path):
    answers = collect_answers(_submission(tmp_path, OWN_STRUCTURE), "hw3", "pdf_then_sheet")
    first = answers.problems[0]
    assert first.startswith("only 2 of the report template's 15 labels and headings were found in hw3/report.pdf: "
                            "its answers may be in the PDF in a structure of its own, which the grader does not "
                            "read, so a person must read the PDF for them"), first
    assert "write each answer after its label as hw3/REPORT_TEMPLATE.md writes it" in first
    # The labels of what was not read, so the student knows which to use.
    assert "not read: 'Transfer between layers', 'Number of .to() calls with 2 GPUs'" in first
    assert "'Task 1 explanation'" in first and "'Layers per GPU" not in first   # Q1 was read
    # One problem, not one per heading: "no 'Task 1 explanation' heading found" x 5.
    assert not any("heading found" in p for p in answers.problems), answers.problems
    # Nothing is "not answered": what the grader did not read may be in the PDF.
    assert answers.missing and answers.unread == answers.missing
    assert answers.needs_manual_review


def test_the_handouts_own_questions_are_read_where_the_templates_labels_are_not(tmp_path):
    reading = reading_from_worker_output(extract(str(write_text_pdf(tmp_path / "r.pdf", [OWN_STRUCTURE])), 50))
    assert reading.own_structure
    assert reading.answers["task1.layers_per_gpu"] == [3, 3]
    assert reading.answers["task2.depth_improves_speed"] == {
        "value": "no", "explanation": "Every layer adds work that runs after the previous one."}
    assert reading.answers["task4.all_gpus_utilised"] == {"value": "yes", "explanation": "each holds four layers."}
    assert reading.answers["task4.more_gpus_faster"] == {"value": "no", "explanation": "one GPU computes at a time."}
    assert reading.where["task1.layers_per_gpu"]["text"].startswith("Q1) How many layers are assigned")
    # The number first, its remark in brackets after it (a bracket inside the remark):
    # was "found 'Number of transfers with 2 GPUs' but no number after it".
    assert reading.answers["task5.transfers_2gpus"] == 1 and reading.answers["task5.transfers_5gpus"] == 4
    assert not any("no number after it" in p for p in reading.problems), reading.problems
    # Not guessed: Task 1's transfer point is in Q2's prose, read by a person.
    assert "task1.transfer_between" not in reading.answers


def test_a_handout_question_never_overrides_the_templates_label(tmp_path):
    """The template's label is read where it is; the handout's question, quoted in an
    explanation, is then no second answer (nor a contradiction)."""
    at = REPORT_LINES.index("Memory per GPU falls, time barely changes.")
    lines = REPORT_LINES[:at] + ["Are all GPUs being utilized? No, they take turns."] + REPORT_LINES[at + 1:]
    reading = reading_from_worker_output(extract(str(write_text_pdf(tmp_path / "r.pdf", [lines])), 50))
    assert reading.answers["task4.all_gpus_utilised"] == {"value": "yes", "explanation": ""}
    assert not reading.own_structure and reading.status == "ok", reading.problems


@pytest.mark.parametrize("rest, kind, value", [
    (" 1 (20 calls of x.to(layer_device))", "int", [1]),
    (" 20 (one per layer; 1 of them moves data)", "int", [20]),
    # A remark offering another value is never cut off to leave one.
    (" 1 (or 2)", "int", None), (" 4 (maybe 5)", "int", None), (" 1 (20 calls", "int", None),
    # In a list only a remark of numbers goes: "after layer 1" says another thing.
    (" gpu 0 gets 3 layers (0, 1, 2) and gpu 1 gets 3 layers (3, 4, 5).", "int_list", [3, 3]),
])
def test_a_remark_in_brackets_after_the_answer(rest, kind, value):
    from grader.answers.hw3_pdf.labels import numbers_after
    question = "Layers per GPU (DEPTH=6, 2 GPUs)" if kind == "int_list" else ""
    assert numbers_after(rest, kind, gpus=2, question=question) == value


def test_instructor_md_says_an_unread_written_answer_may_be_in_the_files(tmp_path):
    """instructor.md had said "No answer to `task1.explanation` was found." under each written
    answer of a report of its own structure: the instructor reads the PDF instead."""
    from grader.reports.instructor import render_instructor_markdown
    from grader.scoring import load_rubrics
    answers = collect_answers(_submission(tmp_path, OWN_STRUCTURE), "hw3", "pdf_then_sheet").to_dict()
    result = {"score": 0, "max_score": 15, "assignments": [{
        "id": "hw3", "title": "Home Work 3", "score": 0, "max_score": 15, "answers": answers,
        "items": [{"id": "hw3.task1.explanation", "kind": "manual", "answer": "task1.explanation",
                   "max_score": 1, "pending": True}]}]}
    md = render_instructor_markdown(result, load_rubrics())
    assert "only 2 of the report template's 15 labels and headings were found in hw3/report.pdf" in md
    assert "Not answered:" not in md
    assert ("No answer to `task1.explanation` was read, but one may be written where or how the grader cannot "
            "read it (the problems above say why): read the student's files for it.") in md
