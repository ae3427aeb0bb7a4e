"""Answer forms a TA's audit found honest students write and the readers did not read (or read
wrong): a formula beside its value, a calculation, grouped thousands, a range of step times, and
Practical 4's chunks said with their count. Each case is read as a TA grading by hand reads it;
beside each, a look-alike that must not be read (a date, a version, a shape, a range for a
count), so the new forms open no door to a wrong reading.
"""
from __future__ import annotations

import pytest
import yaml

from bad_pdfs import REPORT_LINES
from grader.answers.collect import collect_answers
from grader.answers.hw3_pdf.extract_worker import extract
from grader.answers.hw3_pdf.labels import numbers_after
from grader.answers.hw3_pdf.reader import reading_from_worker_output
from grader.answers.numbers import parse_memory_list_mib, parse_time_ms
from grader.answers.sheet import Question, coerce, template_questions
from tiny_pdf import write_text_pdf


def _question(assignment: str, qid: str) -> Question:
    return template_questions(assignment)[qid]


def _refused(raw, question: Question) -> str:
    with pytest.raises(ValueError) as raised:
        coerce(raw, question)
    return str(raised.value)


def _report(tmp_path, replace: dict[str, str]):
    lines = [replace.get(line, line) for line in REPORT_LINES]
    path = write_text_pdf(tmp_path / "report.pdf", [lines])
    return reading_from_worker_output(extract(str(path), 50))


# -- 1. A count worked out, and how a count grows ------------------------------------------------
TRANSFERS_5 = ("hw3", "task5.transfers_5gpus")
TO_CALLS_5 = ("hw3", "task5.to_calls_5gpus")
PER_RANK = ("practical6", "ddp.per_rank_batch")


@pytest.mark.parametrize("where, raw, value, look_alike", [
    # A calculation of numbers alone is its value (+, -, x, ×, *; "/" lists the handouts' splits).
    (TRANSFERS_5, "5 - 1", 4, "2026-12-06"),          # a date is no subtraction
    (TRANSFERS_5, "5 − 1", 4, "5-1"),                 # unspaced: a range, a date, a code
    (TRANSFERS_5, "2 + 2", 4, "3 x 3 matrix"),        # a shape with words: had been read as 3
    (TO_CALLS_5, "16 + 4", 20, "4 × 5"),              # a product alone may be a shape ...
    (PER_RANK, "64 - 32", 32, "32 x 1000"),           # ... as the rank's batch written as its tensor
    (TO_CALLS_5, "4 x 4 + 4", 20, "4x4 + 4"),         # "4x4" is how a shape is spelled
    (TO_CALLS_5, "13 x 4 + 12", 64, "13 x 4 + 12 samples or so"),
    (TO_CALLS_5, "1 + 1 + 1 + 1 + 16", 20, "2.13.0"),   # a version is no number
    (TO_CALLS_5, "(5 - 1) * 5", 20, "2 ** 4 + 4"),     # a power is no part of a count's sum
    (PER_RANK, "31.5 + 0.5", 32, "64/2"),              # the template's "/" stays a split
    # A formula with the value it comes to, in a chain or in brackets.
    (TRANSFERS_5, "N - 1 = 5 - 1 = 4", 4, "N - 1 = 5 - 1 = 3"),
    (TRANSFERS_5, "N-1 (=4)", 4, "N-1 (=4 or 5)"),
    (TRANSFERS_5, "N - 1 (= 4)", 4, "N - 1"),          # a formula alone: N may be GPUs or layers
    (TRANSFERS_5, "#GPUs - 1 = 4", 4, "#GPUs - 1"),
])
def test_a_calculation_is_its_value_and_a_look_alike_is_not_read(where, raw, value, look_alike):
    question = _question(*where)
    assert coerce(raw, question) == value
    _refused(look_alike, question)


def test_a_formula_without_its_value_says_to_write_the_number():
    said = _refused("N - 1", _question(*TRANSFERS_5))
    assert "expected a whole number" in said and "a formula, not its value" in said, said


@pytest.mark.parametrize("rest, value", [
    (" 5 - 1", [4]), (" 13 x 4 + 12", [64]), (" N - 1 = 5 - 1 = 4", [4]), (" with 5 gpus: 5 - 1", [4]),
])
def test_a_reports_count_worked_out_is_read_as_the_sheets(rest, value):
    assert numbers_after(rest, "int", gpus=5) == value
    assert numbers_after(" 2026-12-06", "int", gpus=5) is None


GROWS = ("hw3", "task5.transfers_grow_with_gpus")


@pytest.mark.parametrize("raw, value", [
    # How the transfers grow with the GPUs, to "does it grow?": the handout's N - 1 is a yes.
    ("Linearly: N - 1", True), ("Linearly", True), ("linear (N-1)", True), ("N - 1", True),
    ("N-1 transfers", True), ("It grows linearly (N - 1)", True), ("Grows linearly with the number of GPUs", True),
    ("Proportionally to the number of GPUs", True), ("They increase linearly: #GPUs - 1", True),
    ("Constant", False), ("It stays constant", False),
])
def test_how_transfers_grow_answers_whether_they_grow(raw, value):
    assert coerce(raw, _question(*GROWS)) is value


@pytest.mark.parametrize("read, look_alike", [
    # Another variable, a doubt, a turn, another answer, a trend that is no growth: a person
    # reads them; beside each, the form that is read.
    ("Linearly", "Linearly with DEPTH"), ("N - 1", "L - 1"), ("N - 1", "N - 1 or N"),
    ("linear (N-1)", "not linearly"),     # had been a no: it says how it grows, not whether
    ("Linearly", "Linearly, but not with 2 GPUs"), ("Linearly", "Linearly?"),
    ("Proportionally to the number of GPUs", "Exponentially"), ("Constant", "Constant: N - 1"),
    ("N-1 transfers", "1 - N"), ("N - 1", "N - 1 (maybe)"), ("2N", "2L"),
])
def test_a_growth_answer_that_could_mean_another_is_not_read(read, look_alike):
    assert coerce(read, _question(*GROWS)) in (True, False)
    assert "expected" in _refused(look_alike, _question(*GROWS))
    # And a trend never answers another yes/no question.
    _refused(read, _question("hw3", "task2.depth_improves_speed"))


def test_a_reports_growth_answer_is_read_as_the_sheets(tmp_path):
    result = _report(tmp_path, {"Transfers grow with the number of GPUs (yes/no): Yes - one more per added GPU.":
                                "Transfers grow with the number of GPUs (yes/no): Linearly: N - 1"})
    assert result.answers["task5.transfers_grow_with_gpus"]["value"] == "yes", result.problems


# -- 2. Grouped thousands and units -------------------------------------------------------------
@pytest.mark.parametrize("columns, cells, read", [
    (("depth", "step_time_ms"), {"depth": 6, "step_time_ms": "1,234.5 ms"}, {"depth": 6, "step_time_ms": 1234.5}),
    (("depth", "step_time_ms"), {"depth": 6, "step_time_ms": "1 234 ms"}, {"depth": 6, "step_time_ms": 1234}),
    (("depth", "step_time_ms"), {"depth": 6, "step_time_ms": "1\u2009234 ms"}, {"depth": 6, "step_time_ms": 1234}),
    (("depth", "step_time_ms"), {"depth": 6, "step_time_ms": "1\u202f234,5 ms"}, {"depth": 6, "step_time_ms": 1234.5}),
    (("depth", "step_time_ms"), {"depth": 6, "step_time_ms": "1.234,5 ms"}, {"depth": 6, "step_time_ms": 1234.5}),
    (("depth", "step_time_ms"), {"depth": 6, "step_time_ms": "1,234,567 µs"}, {"depth": 6, "step_time_ms": 1234.567}),
    (("method", "step_time_s"), {"method": "dp", "step_time_s": "1 234,5 ms"}, {"method": "dp", "step_time_s": 1.2345}),
    (("gpu", "utilization_percent", "memory_mib"), {"gpu": 0, "memory_mib": "81 920 MiB"}, {"gpu": 0, "memory_mib": 81920}),
    (("gpus", "memory_per_gpu_mib"), {"gpus": 2, "memory_per_gpu_mib": "1 012 MiB, 980 MiB"},
     {"gpus": 2, "memory_per_gpu_mib": [1012, 980]}),
])
def test_grouped_thousands_are_one_number(columns, cells, read):
    assert coerce([cells], Question("t", "table", "", columns)) == [read]


@pytest.mark.parametrize("cells, kept", [
    # Two GPUs' memory with a space between: never one number of 100100 MiB, but one value
    # per GPU, as numpy prints an array (adv51 F2b).
    ({"gpus": 2, "memory_per_gpu_mib": "100 100"}, [100, 100]),
    # Not groups of three: no number.
    ({"gpus": 2, "step_time_ms": "12 34 ms"}, "12 34 ms"),
])
def test_spaces_that_do_not_group_thousands_are_not_read_as_one_number(cells, kept):
    question = Question("t", "table", "", ("gpus", "step_time_ms", "memory_per_gpu_mib"))
    [row] = coerce([cells], question)
    assert kept in row.values(), row
    # ... while the same column groups what is grouped.
    assert coerce([{"gpus": 2, "step_time_ms": "1 234 ms"}], question) == [{"gpus": 2, "step_time_ms": 1234}]


def test_a_european_decimal_comma_stays_a_decimal():
    question = Question("t", "table", "", ("method", "step_time_s"))
    assert coerce([{"method": "dp", "step_time_s": "0,45 s"}, {"method": "single", "step_time_s": "1.234,5 ms"}],
                  question) == [{"method": "dp", "step_time_s": 0.45}, {"method": "single", "step_time_s": 1.2345}]


@pytest.mark.parametrize("cell, ms", [("1 234 ms", 1234), ("1\u2009234,5 ms", 1234.5), ("1 234.5", 1234.5)])
def test_a_reports_grouped_step_time_is_one_number(cell, ms):
    parsed = parse_time_ms(cell, None)
    assert parsed.value == pytest.approx(ms) and not parsed.ambiguous


def test_a_reports_memory_grouped_with_a_thin_space_is_one_value_per_gpu():
    assert parse_memory_list_mib("1\u2009012 MiB", None, 1) == ([1012], [])
    assert parse_memory_list_mib("1\u2009012, 980", None, 2) == ([1012, 980], [])
    assert parse_memory_list_mib("80 80", None, 2)[0] == [80, 80]   # a normal space lists them


# -- 3. Ranges ----------------------------------------------------------------------------------
@pytest.mark.parametrize("columns, cell, value", [
    # A measured time said as a range no wider than the checks' 10% each side of its middle:
    # that middle, as a TA reads "12-14 ms".
    (("depth", "step_time_ms"), "about 12-14 ms", 13), (("depth", "step_time_ms"), "12–14 ms", 13),
    (("depth", "step_time_ms"), "between 12 and 14", 13), (("depth", "step_time_ms"), "~12 to 14 ms", 13),
    (("depth", "step_time_ms"), "from 12 ms to 14 ms", 13), (("depth", "step_time_ms"), "about 50-60 ms", 55),
    (("method", "step_time_s"), "about 7-8 ms", 0.0075), (("method", "step_time_s"), "0,12–0,13 s", 0.125),
    (("depth", "step_time_ms"), "12-14 ms (simulated)", 13),
])
def test_a_narrow_range_of_step_times_is_its_middle(columns, cell, value):
    [row] = coerce([{columns[0]: 1, columns[1]: cell}], Question("t", "table", "", columns))
    assert row[columns[1]] == pytest.approx(value)


def test_a_range_read_as_its_middle_is_said_to_the_instructor(tmp_path):
    (tmp_path / "hw3").mkdir()
    (tmp_path / "hw3" / "answers.yaml").write_text(yaml.safe_dump({"assignment": "hw3", "answers": {
        "task2.step_time_table": {"rows": [{"depth": 6, "step_time_ms": "12-14 ms"},
                                           {"depth": 12, "step_time_ms": 24}]}}}))
    answers = collect_answers(tmp_path, "hw3", "sheet")
    assert answers.values["task2.step_time_table"][0]["step_time_ms"] == 13
    assert any("'12-14 ms'" in p and "13 ms" in p and "middle of its range" in p for p in answers.problems), \
        answers.problems


@pytest.mark.parametrize("cell", [
    "about 10-20 ms", "between 12 and 40", "14-12 ms", "12 ms - 14 s", "2026-12-06", "12-14-16 ms",
])
def test_a_wide_or_odd_range_of_step_times_is_left_for_a_person(cell):
    question = Question("t", "table", "", ("depth", "step_time_ms"))
    assert coerce([{"depth": 6, "step_time_ms": cell}], question) == [{"depth": 6, "step_time_ms": cell}]
    # ... and the narrow one beside it is read.
    assert coerce([{"depth": 6, "step_time_ms": "12-14"}], question) == [{"depth": 6, "step_time_ms": 13}]


@pytest.mark.parametrize("raw", ["12-14", "12–14", "between 12 and 14", "about 12-14", "12 to 14"])
def test_a_range_is_never_a_count(raw):
    """The same words that are one step time are no number of transfers: a count is exact."""
    _refused(raw, _question(*TRANSFERS_5))
    [row] = coerce([{"depth": 6, "step_time_ms": f"{raw} ms"}], Question("t", "table", "", ("depth", "step_time_ms")))
    assert row["step_time_ms"] == pytest.approx(13)


def test_a_reports_range_of_step_times_is_its_middle_or_for_a_person():
    narrow = parse_time_ms("about 12-14 ms", None)
    assert narrow.value == pytest.approx(13) and not narrow.ambiguous
    assert any("middle of its range" in note for note in narrow.notes), narrow.notes
    wide = parse_time_ms("10-20 ms", None)   # had been read as 10 ms
    assert wide.ambiguous and wide.value is None and "range" in wide.notes[0]


def test_a_reports_table_reads_a_range_as_its_middle_and_says_so(tmp_path):
    result = _report(tmp_path, {"| 6 | 12.5 |": "| 6 | 12-13 |", "| 12 | 23.75 |": "| 12 | 10-30 |"})
    rows = {row["depth"]: row for row in result.answers.get("task2.step_time_table", [])}
    assert rows[6]["step_time_ms"] == pytest.approx(12.5), result.problems
    assert "step_time_ms" not in rows.get(12, {}), rows
    assert any("middle of its range" in p for p in result.problems), result.problems
    assert any("10-30" in p and "person" in p for p in result.problems), result.problems


# -- 4. Practical 4's chunks said with their count; Practical 5's split "each" -------------------
CHUNKS = ("practical4", "part2.chunk_shapes")


@pytest.mark.parametrize("raw, value", [
    ("2 chunks of 32x1000 each", [[32, 1000], [32, 1000]]),
    ("2 chunks of [32, 1000]", [[32, 1000], [32, 1000]]),
    ("2 chunks, each torch.Size([32, 1000])", [[32, 1000], [32, 1000]]),
    ("two chunks of shape (32, 1000)", [[32, 1000], [32, 1000]]),
    ("2 chunks with shape [32, 1000] each", [[32, 1000], [32, 1000]]),
    ("each of the 2 chunks: (32, 1000)", [[32, 1000], [32, 1000]]),
    # Read as written: the check then says the code makes two.
    ("3 chunks of 32x1000 each", [[32, 1000]] * 3),
    # Each chunk on its own GPU, as the handout says real data parallelism runs it.
    ("each GPU gets [32, 1000]", {"each": [32, 1000]}),
    ("2 GPUs get [32, 1000] each", [[32, 1000], [32, 1000]]),
])
def test_practical4_chunks_said_with_their_count_are_read_with_it(raw, value):
    assert coerce(raw, _question(*CHUNKS)) == value


@pytest.mark.parametrize("raw", [
    # A chunk's rows only: no shape ([8] is no chunk's shape, and 1000 is not written).
    "4 chunks of 8 each", "2 chunks of 32 each",
    # The shape may be the batch's before it was cut; two counts; a doubt; another shape.
    "2 chunks: 32x1000", "2 chunks of 32x1000 each, 64x1000 in total", "2 or 3 chunks of 32x1000",
    "2 chunks of 32x1000 each (maybe 3)", "2 chunks of 32x1000 and 16x1000", "2 chunks, 3 GPUs: 32x1000 each",
])
def test_practical4_chunks_with_a_count_that_could_mean_another_are_not_read(raw):
    _refused(raw, _question(*CHUNKS))
    assert coerce("2 chunks of 32x1000 each", _question(*CHUNKS)) == [[32, 1000], [32, 1000]]


def test_practical4_chunks_of_rows_only_say_to_write_the_shape():
    said = _refused("2 chunks of 32 each", _question(*CHUNKS))
    assert "whole shape" in said, said


def test_practical4_chunks_with_their_count_pass_the_check_where_the_code_makes_them():
    from tests.grading.test_practical_answer_forms import chunks_run, p4_chunk_check
    assert p4_chunk_check(coerce("2 chunks of 32x1000 each", _question(*CHUNKS)), chunks_run()) == []
    with pytest.raises(AssertionError, match=r"you reported \[\[32, 1000\], \[32, 1000\], \[32, 1000\]\]"):
        p4_chunk_check(coerce("3 chunks of 32x1000 each", _question(*CHUNKS)), chunks_run())


SPLIT = ("practical5", "dp.split_per_gpu")


@pytest.mark.parametrize("row, split", [
    # One size said of every GPU of the row: had been [32] for 2 GPUs, a wrong answer.
    ({"gpus": 2, "split": "32 each"}, [32, 32]), ({"gpus": 2, "split": "32 per GPU"}, [32, 32]),
    ({"gpus": 2, "split": "2 chunks of 32 each"}, [32, 32]), ({"gpus": 4, "split": "4 chunks of 16 each"}, [16] * 4),
    ({"gpus": 2, "split": "each GPU gets 32"}, [32, 32]), ({"gpus": 2, "split": "both 32"}, [32, 32]),
    ({"gpus": 2, "split": "32 on both GPUs"}, [32, 32]), ({"gpus": 2, "split": "2 chunks of 32"}, [32, 32]),
])
def test_practical5_one_size_for_each_gpu_is_every_gpus(row, split):
    assert coerce([row], _question(*SPLIT)) == [{"gpus": row["gpus"], "split": split}]


@pytest.mark.parametrize("row", [
    # A count that is not the row's, an uneven split said as even, another value offered.
    {"gpus": 3, "split": "2 chunks of 32 each"}, {"gpus": 2, "split": "32 each (or 31)"}, {"gpus": 3, "split": "both 32"},
    {"gpus": 5, "split": "4 x 13 + 12"}, {"gpus": 2, "split": "32 x 2"},
])
def test_practical5_a_split_that_could_mean_another_stays_for_a_person(row):
    assert coerce([row], _question(*SPLIT)) == [row]
    assert coerce([{"gpus": 2, "split": "32 each"}], _question(*SPLIT)) == [{"gpus": 2, "split": [32, 32]}]
