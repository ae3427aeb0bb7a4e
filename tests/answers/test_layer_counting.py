"""HW3 Task 1 Q2, "at what exact point does the data move from GPU 0 to GPU 1?", answered by
the two layers around the move, counted from 1 or from 0 (a TA's audit, hw3_s02).

- Ordinals count from 1, and say so: "3rd and 4th", "third and fourth", "after the 3rd layer"
  are the 0-based indices 2 and 3, in the report and in the sheet ("Transfer between layers:
  3rd and 4th" had been "found but no number after it", and instructor.md said "Not answered").
- A stated way of counting is taken ("3 and 4 (1-based)", "2 and 3 (0-based)").
- A plain pair in the report, which says no way of counting: the handout never asks for
  0-based indices, and a TA takes a right answer counted either way; for the provided code
  the two readings are different answers (0-based [2, 3], 1-based [3, 4]), so "3 and 4" is
  taken as the 1-based form of the right answer, saying so, and "2 and 3" as written.
- answers.yaml asks for "(0-based indices)": a plain [3, 4] there stays a wrong answer
  (tests/fixtures/hw3_variants.py's "wrong_answers").
- A label answered in words the reader does not take is unread (for a person), never "not
  answered".
"""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from bad_pdfs import REPORT_LINES
from grader.answers.collect import collect_answers
from grader.answers.hw3_pdf.extract_worker import extract
from grader.answers.hw3_pdf.reader import describe_where, reading_from_worker_output
from grader.answers.numbers import layer_pair_in, layer_pair_said
from grader.answers.sheet import coerce, read_sheet, template_questions
from tiny_pdf import write_text_pdf

TRANSFER = "Transfer between layers: 2 and 3"


def _report(tmp_path: Path, answer: str):
    lines = [f"Transfer between layers: {answer}" if line == TRANSFER else line for line in REPORT_LINES]
    return reading_from_worker_output(extract(str(write_text_pdf(tmp_path / "report.pdf", [lines])), 50))


def _submission(tmp_path: Path, answer: str, sheet: dict | None = None) -> Path:
    folder = tmp_path / "sub" / "hw3"
    folder.mkdir(parents=True)
    lines = [f"Transfer between layers: {answer}" if line == TRANSFER else line for line in REPORT_LINES]
    write_text_pdf(folder / "report.pdf", [lines])
    if sheet is not None:
        (folder / "answers.yaml").write_text(yaml.safe_dump({"assignment": "hw3", "answers": sheet}))
    return tmp_path / "sub"


@pytest.mark.parametrize("answer", [
    "3rd and 4th", "third and fourth", "the 3rd and the 4th layer", "between the 3rd and 4th layers",
    "after the 3rd layer", "before the 4th layer", "after the third layer, before the fourth",
    "3rd, 4th", "3 and 4 (1-based)", "layers 3 and 4, counting from 1",
])
def test_layers_counted_from_one_in_the_report_are_the_indices_the_check_compares(tmp_path, answer):
    reading = _report(tmp_path, answer)
    assert reading.answers.get("task1.transfer_between") == [2, 3], (answer, reading.problems)
    assert reading.status == "ok" and not reading.problems, reading.problems
    # Said to the student and the instructor, beside where it was read.
    assert any(f"'{answer}'" in note and "counted from 1" in note and "indices 2 and 3" in note
               for note in reading.notes), reading.notes
    assert "counted from 1" in describe_where(reading.where["task1.transfer_between"])


@pytest.mark.parametrize("answer, value, look_alike, as_written", [
    # Says no way of counting: the 1-based form of the right answer; the 0-based one as written.
    ("3 and 4", [2, 3], "2 and 3", [2, 3]),
    ("before layer 4", [2, 3], "4 and 5", [4, 5]),              # wrong either way: as written
    # Said how it counts: so read, right or wrong.
    ("3 and 4 (1-based)", [2, 3], "3 and 4 (0-based)", [3, 4]),
    ("third and fourth", [2, 3], "2 and 3 (0-based)", [2, 3]),
    ("4th and 5th", [3, 4], "between layers[3] and layers[4]", [3, 4]),   # Python's indices count from 0
])
def test_a_plain_pair_in_the_report_is_taken_in_either_way_of_counting(tmp_path, answer, value, look_alike,
                                                                       as_written):
    reading = _report(tmp_path, answer)
    assert reading.answers.get("task1.transfer_between") == value, (answer, reading.problems)
    (tmp_path / "b").mkdir()
    other = _report(tmp_path / "b", look_alike)
    assert other.answers.get("task1.transfer_between") == as_written, (look_alike, other.problems)
    assert other.notes == []


def test_a_plain_three_and_four_in_the_report_is_said_to_be_read_as_counted_from_one(tmp_path):
    reading = _report(tmp_path, "3 and 4")
    [note] = reading.notes
    assert "'3 and 4'" in note and "does not say how the layers are counted" in note
    assert "a right answer counted either way is taken" in note
    (tmp_path / "b").mkdir()
    assert _report(tmp_path / "b", "2 and 3").notes == []   # read as written: nothing to say


@pytest.mark.parametrize("answer", [
    "layer 3 and the 4th",                       # one ordinal, one plain number
    "3rd or 4th",                                # two answers
    "3rd and 4th (0-based)",                     # two ways of counting at once
    "3 and 4 (1-based) or 2 and 3 (0-based)",
    "the 0th and 1st (1-based)",                 # no layer 0 when counting from 1
])
def test_counting_that_contradicts_itself_is_not_guessed(tmp_path, answer):
    said = layer_pair_said(answer)
    assert said is None or layer_pair_in(answer) is None, said
    reading = _report(tmp_path, answer)
    assert "task1.transfer_between" not in reading.answers
    # Written, so for a person to read: unread, never "not answered".
    assert "task1.transfer_between" in reading.unread, reading.unread
    assert f"'{answer}'" in reading.unread["task1.transfer_between"]


def test_the_template_left_as_it_is_is_not_answered_not_unread(tmp_path):
    reading = _report(tmp_path, "... and ...")
    assert "task1.transfer_between" not in reading.answers
    assert "task1.transfer_between" not in reading.unread


@pytest.mark.parametrize("raw, look_alike, as_written", [
    # The sheet's question asks for 0-based indices: ordinals and a stated 1-based count are
    # converted, said to a person; the same pair said plainly is read as written.
    ("3rd and 4th", "3 and 4", [3, 4]), ("third and fourth", "3, 4", [3, 4]),
    ("after the 3rd layer", "after layer 3", [3, 4]), ("before the 4th layer", "before layer 4", [3, 4]),
    ("3 and 4 (1-based)", "2 and 3", [2, 3]),
])
def test_the_sheet_reads_ordinals_as_counted_from_one_and_a_plain_pair_as_written(raw, look_alike, as_written):
    question = template_questions("hw3")["task1.transfer_between"]
    notes: list[str] = []
    assert coerce(raw, question, notes) == [2, 3]
    assert notes == [f"'{raw}' read as layers counted from 1, which are the 0-based indices 2 and 3"]
    plain: list[str] = []
    assert coerce(look_alike, question, plain) == as_written and plain == []


def test_the_wrong_answers_variants_three_and_four_in_the_sheet_stays_wrong(tmp_path):
    """tests/fixtures/hw3_variants.py "wrong_answers": [3, 4] in answers.yaml, which asks for
    0-based indices, is Task 1's wrong answer, whatever a report without a way of counting
    would take; the same sheet counting from 1 in words is right."""
    sheet = tmp_path / "answers.yaml"
    for value, read in (([3, 4], [3, 4]), ("3, 4", [3, 4]), ("the 3rd and the 4th", [2, 3])):
        sheet.write_text(yaml.safe_dump({"answers": {"task1.transfer_between": {"value": value}}}))
        assert read_sheet(sheet, template_questions("hw3"), "hw3/answers.yaml").values == {
            "task1.transfer_between": read}, value


def test_the_students_report_shows_how_the_ordinals_were_read(tmp_path):
    answers = collect_answers(_submission(tmp_path, "3rd and 4th"), "hw3", "pdf_then_sheet")
    assert answers.values["task1.transfer_between"] == [2, 3]
    assert "task1.transfer_between" not in answers.missing
    assert "(read as layers counted from 1, which are the 0-based indices 2 and 3)" in \
        answers.origin["task1.transfer_between"]
    assert any("'3rd and 4th'" in p and "counted from 1" in p for p in answers.problems), answers.problems


def test_an_unread_label_in_the_report_is_for_a_person_not_unanswered(tmp_path):
    answers = collect_answers(_submission(tmp_path, "3rd or 4th"), "hw3", "pdf_then_sheet")
    assert "task1.transfer_between" in answers.missing
    assert answers.unread == ["task1.transfer_between"]
    assert "'3rd or 4th'" in answers.unread_why["task1.transfer_between"]
    # ... and the sheet's whole answer is graded where it gives one.
    answers = collect_answers(_submission(tmp_path / "b", "3rd or 4th", {"task1.transfer_between": {"value": [2, 3]}}),
                              "hw3", "pdf_then_sheet")
    assert answers.values["task1.transfer_between"] == [2, 3] and answers.unread == []


def test_the_readers_move_of_the_base_code_is_the_one_the_check_measures():
    """The PDF reader takes a report's plain '3 and 4' as the 1-based form of the base code's
    move (grader/answers/hw3_pdf/contract.py): it must be the move Task 1's check derives, the
    base code's `i < depth // 2` split of DEPTH=6 over 2 GPUs."""
    import re
    from grader.answers.hw3_pdf import contract
    from grader.checks.test_hw3 import BASE_CODE
    source = BASE_CODE.read_text(encoding="utf-8")
    depth = int(re.search(r"^DEPTH\s*=\s*(\d+)", source, re.M).group(1))
    assert "if i < depth // 2" in source, "the base code's split changed: read it again here"
    devices = [0 if i < depth // 2 else 1 for i in range(depth)]
    move = next((i, i + 1) for i in range(depth - 1) if devices[i] != devices[i + 1])
    assert contract.BASE_CODE_MOVE == move, (contract.BASE_CODE_MOVE, move)
