"""The answer sheet and the HW3 report under the names students give them (a red team's adv33
F1 and F2).

The handout asks for "Report (PDF — single file)" and names no file; editors save the sheet as
`answers.yml` or `answers.yaml.txt`. The reference's own report and sheet, renamed so, had
been read as not handed in: HW3 10.5 -> 2 of 15, Practical 5 9.25 -> 6.5 of 12, and nothing
named the file beside them. They are read under their own names now, a note says so, and no
one is held for it; the template's name wins where it is there.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from grader.answers.collect import collect_answers
from grader.answers.handed_in_names import is_sheet_name, report_pdfs, sheet_file
from grader.batch.class_page import reports_not_handed_in
from grader.reports.student_view import file_shown, surely_unanswered
from tests.answers.tiny_pdf import write_text_pdf

REFERENCE = Path(__file__).resolve().parents[2] / "reference"


def hw3_with(tmp_path: Path, report_name: str | None, sheet_name: str | None = "answers.yaml") -> Path:
    """The reference's HW3 report and sheet under the names given (None: left out); the sheet
    is the template's (no answers) so that whatever is graded came from the report."""
    folder = tmp_path / "submission" / "hw3"
    folder.mkdir(parents=True)
    if report_name:
        shutil.copyfile(REFERENCE / "hw3" / "report.pdf", folder / report_name)
    if sheet_name:
        shutil.copyfile(REFERENCE.parent / "student_template" / "hw3" / "answers.yaml", folder / sheet_name)
    return folder.parent


@pytest.fixture(scope="module")
def as_handed_in():
    """The reference's report read as report.pdf: what every other name must give."""
    return collect_answers(REFERENCE, "hw3", "pdf_then_sheet")


@pytest.mark.parametrize("name", ["HW3_report_Anna_Tamm.pdf", "Report.pdf", "report.PDF", "hw3.pdf",
                                  "Anna Tamm - Home Work 3.pdf"])
def test_a_report_pdf_of_any_name_is_read_as_the_report(tmp_path, as_handed_in, name):
    answers = collect_answers(hw3_with(tmp_path, name), "hw3", "pdf_then_sheet")
    assert answers.values == as_handed_in.values, (
        f"hw3/{name}, the reference's report.pdf renamed, should give the same answers; "
        f"missing: {sorted(set(as_handed_in.values) - set(answers.values))}")
    assert not answers.needs_manual_review, answers.problems
    assert f"hw3/{name} was read as the report" in answers.problems[0], answers.problems
    report = answers.files[0]
    assert report["file"] == f"hw3/{name}" and report["read_as"] == "hw3/report.pdf", answers.files
    assert file_shown(report) == f"hw3/{name} (read as hw3/report.pdf, read)", file_shown(report)
    assert all(origin.startswith(f"hw3/{name}") for origin in answers.origin.values()), answers.origin


def test_of_several_pdfs_the_one_that_answers_is_the_report(tmp_path, as_handed_in):
    """A plot exported as PDF sorts first by name; the report is the one that answers."""
    submission = hw3_with(tmp_path, "my_answers.pdf")
    write_text_pdf(submission / "hw3" / "a_plot.pdf", [["step time against depth"]])
    answers = collect_answers(submission, "hw3", "pdf_then_sheet")
    assert answers.values == as_handed_in.values
    assert answers.files[0]["file"] == "hw3/my_answers.pdf", answers.files
    note = answers.problems[0]
    assert "a_plot.pdf was not graded" in note and "answers the most questions" in note, note
    assert not answers.needs_manual_review, answers.problems


def test_several_pdfs_that_answer_nothing_go_to_a_person(tmp_path):
    submission = hw3_with(tmp_path, None)
    for name in ("scan1.pdf", "scan2.pdf"):
        write_text_pdf(submission / "hw3" / name, [["a photo of handwriting"]])
    answers = collect_answers(submission, "hw3", "pdf_then_sheet")
    assert answers.needs_manual_review, answers.problems
    assert any("scan2.pdf was not graded" in p for p in answers.problems), answers.problems


def test_report_pdf_wins_over_other_pdfs(tmp_path):
    submission = hw3_with(tmp_path, "report.pdf")
    write_text_pdf(submission / "hw3" / "Report_final.pdf", [["Layers per GPU (DEPTH=6, 2 GPUs): 6, 0"]])
    assert report_pdfs(submission / "hw3") == [submission / "hw3" / "report.pdf"]
    answers = collect_answers(submission, "hw3", "pdf_then_sheet")
    assert answers.values["task1.layers_per_gpu"] == [3, 3], answers.values
    assert not any("was read as the report" in p for p in answers.problems), answers.problems


def test_report_pdfs_are_ordered_by_how_surely_their_name_says_report(tmp_path):
    folder = tmp_path / "hw3"
    folder.mkdir()
    for name in ("notes.pdf", "HW3_anna.pdf", "final_report.pdf", "Report.PDF", "report.md", "x.pdfx"):
        (folder / name).write_bytes(b"%PDF-1.4\n")
    assert [p.name for p in report_pdfs(folder)] == ["Report.PDF", "final_report.pdf", "HW3_anna.pdf",
                                                     "notes.pdf"]


@pytest.mark.parametrize("name", ["answers.yml", "Answers.yaml", "ANSWERS.YML", "answers.yaml.txt",
                                  "answer.yaml"])
def test_a_sheet_of_another_name_is_read_as_the_sheet(tmp_path, name):
    folder = tmp_path / "submission" / "practical5"
    folder.mkdir(parents=True)
    shutil.copyfile(REFERENCE / "practical5" / "answers.yaml", folder / name)
    answers = collect_answers(folder.parent, "practical5", "sheet")
    expected = collect_answers(REFERENCE, "practical5", "sheet")
    assert answers.values == expected.values and answers.values, (
        f"practical5/{name}, the reference's sheet renamed, should give its answers; "
        f"missing: {sorted(set(expected.values) - set(answers.values))}")
    assert answers.files == [{"file": f"practical5/{name}", "status": "ok",
                              "read_as": "practical5/answers.yaml"}], answers.files
    assert answers.problems == [f"practical5/{name} was read as the answer sheet (practical5/answers.yaml "
                                "in the template); nothing is taken off for the name"], answers.problems
    assert not answers.needs_manual_review and is_sheet_name(name)


def test_a_renamed_sheets_blank_answers_are_told_as_none(tmp_path):
    """The note of the name is no problem of an answer: questions left blank in answers.yml are
    told as unanswered, as in answers.yaml, not as waiting for a person."""
    for name in ("answers.yaml", "answers.yml"):
        folder = tmp_path / name / "practical5"
        folder.mkdir(parents=True)
        shutil.copyfile(REFERENCE.parent / "student_template" / "practical5" / "answers.yaml", folder / name)
        answers = collect_answers(folder.parent, "practical5", "sheet").to_dict()
        assert surely_unanswered(answers) == set(answers["missing"]) and answers["missing"], (name, answers)


def test_answers_yaml_wins_and_other_yaml_files_are_no_sheet(tmp_path):
    folder = tmp_path / "practical5"
    folder.mkdir()
    for name in ("answers.yml", "answers.yaml", "config.yaml", "my_answers.yaml"):
        (folder / name).write_text("answers: {}\n")
    assert sheet_file(folder) == folder / "answers.yaml"
    (folder / "answers.yaml").unlink()
    assert sheet_file(folder) == folder / "answers.yml"
    (folder / "answers.yml").unlink()
    assert sheet_file(folder) == folder / "answers.yaml", "no sheet: the template's name, not there"
    assert not any(map(is_sheet_name, ("config.yaml", "my_answers.yaml", "answers.json")))


class Run:
    def __init__(self, result):
        self.result = result
        self.student = type("Student", (), {"key": "anna", "name": "Anna"})()


def test_the_class_page_lists_no_renamed_report_and_finds_a_renamed_sheet(tmp_path):
    renamed = collect_answers(hw3_with(tmp_path / "a", "HW3_report.pdf"), "hw3", "pdf_then_sheet")
    sheet_only = collect_answers(hw3_with(tmp_path / "b", None, "answers.yml"), "hw3", "pdf_then_sheet")
    listed = reports_not_handed_in([Run({"assignments": [{"id": "hw3", "answers": renamed.to_dict()}]}),
                                    Run({"assignments": [{"id": "hw3", "answers": sheet_only.to_dict()}]})])
    assert [row["handed_in"] for row in listed] == ["no report, and hw3/answers.yaml answers nothing"], listed
