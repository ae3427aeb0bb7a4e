"""HW3's Task 2 and Task 4 tables (grader/checks/test_hw3.py _table, _task4_row): a cell with a
number the sheet's reader could not take waits for a person, as an unread single answer does
(adv55: such cells scored 0); a cell without a number, with another kind's unit, or beside a
missing cell fails as before."""
import pytest

from grader.answers.collect import Answers
from grader.checks.support import AnswerNotRead
from grader.checks.test_hw3 import _table, _table_gaps, _task4_row

WHERE = "see grader/checks/test_hw3.py _table, _task4_row and practical_answers.holds_a_number"


def sheet(qid, rows):
    return Answers("hw3", "sheet", values={qid: rows}, origin={qid: "hw3/answers.yaml"})


def task2(*cells):
    return sheet("task2.step_time_table", [{"depth": d, "step_time_ms": c} for d, c in zip((6, 12, 24), cells)])


def test_step_times_with_numbers_not_read_wait_for_a_person():
    with pytest.raises(AnswerNotRead) as waiting:
        _table(task2("56 ms, give or take", 125.6, 262.4), "task2.step_time_table", "depth", [6, 12, 24])
    assert "give or take" in str(waiting.value) and "instructor reads it" in str(waiting.value), WHERE


@pytest.mark.parametrize("cells", [
    ("TODO", 125.6, 262.4),                    # no number: no answer
    ("56 MiB, give or take", 125.6, 262.4),    # a unit of another kind: wrong whatever it means
    ("56 ms, give or take", 125.6),            # a row missing beside the unread cell
])
def test_a_table_wrong_whatever_the_cell_means_still_fails(cells):
    with pytest.raises(AssertionError) as failure:
        _table(task2(*cells), "task2.step_time_table", "depth", [6, 12, 24])
    assert not isinstance(failure.value, AnswerNotRead), f"{cells!r}: {failure.value} ({WHERE})"


def _row(time, memory):
    answers = sheet("task4.table", [{"gpus": 2, "step_time_ms": time, "memory_per_gpu_mib": memory}])
    rows, gaps = _table_gaps(answers, "task4.table", "gpus", [2])
    values = memory if isinstance(memory, list) else []
    unread = {2: f"for 2 GPUs {memory!r}, not read as MiB values"} if isinstance(memory, str) else {}
    return lambda: _task4_row(2, gaps, {2: values}, unread, "hw3/answers.yaml", rows.get(2, {}))


def test_a_task4_row_with_a_number_not_read_waits_for_a_person():
    with pytest.raises(AnswerNotRead):
        _row("182.6 ms, give or take", [200.4, 200.7])()
    with pytest.raises(AnswerNotRead):
        _row(182.6, "200.4 MiB and about 200.7 MiB, give or take")()


@pytest.mark.parametrize("time, memory", [
    ("n/a", [200.4, 200.7]),                    # no step time
    ("182.6 ms, give or take", [200.4]),        # one value for 2 GPUs beside the unread time
    (182.6, "200.4, 200.7 (ms)"),                # a time's unit in the memory column
])
def test_a_task4_row_wrong_whatever_the_cell_means_still_fails(time, memory):
    with pytest.raises(AssertionError) as failure:
        _row(time, memory)()
    assert not isinstance(failure.value, AnswerNotRead), f"{time!r}, {memory!r}: {failure.value} ({WHERE})"
