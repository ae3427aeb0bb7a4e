"""Answer sheets (answers.yaml) read against the template, and combined with the HW3 PDF."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from grader.answers.collect import collect_answers
from grader.answers.sheet import Question, coerce, read_sheet, template_questions

ROOT = Path(__file__).resolve().parents[2]
ASSIGNMENTS = ["practical4", "practical5", "practical6", "practical10", "hw3"]


def write_sheet(folder: Path, assignment: str, answers: dict) -> Path:
    (folder / assignment).mkdir(parents=True, exist_ok=True)
    path = folder / assignment / "answers.yaml"
    path.write_text(yaml.safe_dump({"assignment": assignment, "answers": answers}))
    return path


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_templates_sheet_is_valid_and_unanswered(assignment):
    answers = collect_answers(ROOT / "student_template", assignment, "sheet")
    assert not answers.problems and not answers.values
    assert answers.missing == list(template_questions(assignment))


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_reference_answers_every_question(assignment):
    if not (ROOT / "reference" / assignment / "answers.yaml").exists():
        pytest.skip(f"reference/{assignment} has no answer sheet yet")
    answers = collect_answers(ROOT / "reference", assignment, "sheet")
    assert not answers.problems and not answers.missing


@pytest.mark.parametrize("raw, kind, value", [
    (3, "int", 3), ("3", "int", 3), (3.0, "int", 3), ("yes", "bool", True), (False, "bool", False),
    ("3, 3", "list[int]", [3, 3]), ("[2, 3]", "list[int]", [2, 3]), ([[32, 16]], "list[list[int]]", [[32, 16]]),
    ("  cuda:0 ", "str", "cuda:0"), (None, "int", None), ("", "text", None), ([], "list[int]", None),
])
def test_values_take_the_templates_type(raw, kind, value):
    assert coerce(raw, Question("q", kind, "")) == value


@pytest.mark.parametrize("line, value", [
    ("no", False),                                  # YAML 1.1: a bare no is false
    ("No", False), ("yes", True), ("'no'", False), ("'No.'", False),
    ("'NO, because only one GPU works at a time'", False), ("'Yes - every GPU holds layers'", True),
    ("{type: bool, value: no}", False),             # the template's own mapping
    ("{value: 'yes', explanation: every GPU holds four layers}", True),   # the PDF reader's shape
    ("{type: bool, value: {value: no, explanation: the GPUs take turns}}", False),
    ("{type: bool, value: null}", None),            # left as in the template
    ("'yes/no'", None), ("'...'", None),            # the placeholder left: not answered, not a guess
])
def test_a_yes_no_answer_in_the_sheet(tmp_path, line, value):
    """hw3/answers.yaml's yes/no questions as students fill them in: the same rule as the PDF
    report (grader/answers/yes_no.py), bare or as a mapping."""
    path = tmp_path / "answers.yaml"
    path.write_text(f"assignment: hw3\nanswers:\n  task2.depth_improves_speed: {line}\n")
    sheet = read_sheet(path, template_questions("hw3"), "hw3/answers.yaml")
    assert sheet.problems == [], sheet.problems
    assert sheet.values.get("task2.depth_improves_speed") == value, (
        f"answers.yaml line 'task2.depth_improves_speed: {line}' should read as {value!r}, read {sheet.values}")


@pytest.mark.parametrize("line", ["'Not necessarily'", "'partly'", "maybe", "3"])
def test_a_yes_no_answer_that_is_neither_is_a_problem_never_a_guess(tmp_path, line):
    path = tmp_path / "answers.yaml"
    path.write_text(f"assignment: hw3\nanswers:\n  task4.more_gpus_faster: {{type: bool, value: {line}}}\n")
    sheet = read_sheet(path, template_questions("hw3"), "hw3/answers.yaml")
    assert "task4.more_gpus_faster" not in sheet.values
    assert len(sheet.problems) == 1 and "task4.more_gpus_faster: expected yes/no" in sheet.problems[0], sheet.problems


@pytest.mark.parametrize("line", ["'No (could be either)'", "'No / maybe'", "'yes - it depends'", "'Yes, no for 5'",
                                  "'yes and no, it depends'"])
def test_a_hedged_yes_no_is_a_problem_that_asks_for_one_answer(tmp_path, line):
    """A TA's non-solution audit: a hedge after the word was read as that word's full marks;
    "write yes or no first" would puzzle a student who did."""
    path = tmp_path / "answers.yaml"
    path.write_text(f"assignment: hw3\nanswers:\n  task4.more_gpus_faster: {{type: bool, value: {line}}}\n")
    sheet = read_sheet(path, template_questions("hw3"), "hw3/answers.yaml")
    assert "task4.more_gpus_faster" not in sheet.values, f"{line} should not be read as an answer"
    assert len(sheet.problems) == 1 and "expected one answer, yes or no" in sheet.problems[0], sheet.problems


@pytest.mark.parametrize("raw, kind, message", [
    ("a few", "int", "expected a whole number, got 'a few'"), (True, "int", "expected a whole number"),
    ("1 or 2", "int", "expected a whole number"), ("12.5", "int", "expected a whole number"),
    # Another answer offered beside the first (a TA's non-solution audit: read as 4 and [3, 3]).
    ("4 (or 1, or 19)", "int", "expected a whole number"), ("20 (maybe 21)", "int", "expected a whole number"),
    ("3, 3 (or 2, 4)", "list[int]", "expected a list of whole numbers"),
    ("4?", "int", "expected a whole number"), ("probably 4", "int", "expected a whole number"),
    ("at least 4", "int", "expected a whole number"), ("4 or so", "int", "expected a whole number"),
    ("layers 0-2 on GPU 0, 3-5 on GPU 1", "list[int]", "expected a list of whole numbers"),
    ("maybe", "bool", "expected yes/no"), ({"a": 1}, "list[int]", "expected a list of whole numbers"),
])
def test_a_wrongly_typed_value_says_what_was_expected(raw, kind, message):
    with pytest.raises(ValueError, match=message):
        coerce(raw, Question("q", kind, ""))


@pytest.mark.parametrize("raw, kind, value", [
    # Counts as students write them: words, a unit after the number, the same number twice.
    ("one", "int", 1), ("twice", "int", 2), ("none", "int", 0), ("32 per GPU", "int", 32),
    ("8 samples", "int", 8), ("2 forward + 2 backward", "int", 2), ("4 GPUs", "int", 4),
    ("2 (cuda:0 and cuda:2)", "int", 2), ("one transfer, from cuda:0 to cuda:1", "int", 1),
    # A GPU's index: the GPU named wins over other numbers.
    ("cuda:0", "gpu", 0), ("GPU 0 (cuda:0)", "gpu", 0), ("cuda:0 with 1012 MiB", "gpu", 0), (1, "gpu", 1),
    # Lists: the handouts' "32/32", what PyTorch prints, GPUs by name.
    ("32/32", "list[int]", [32, 32]), ("22,22,20", "list[int]", [22, 22, 20]),
    ("cuda:0 → 3, cuda:1 → 3", "list[int]", [3, 3]), ("GPU0 -> 3, GPU1 -> 3", "list[int]", [3, 3]),
    ("torch.Size([64, 1000])", "list[int]", [64, 1000]), ("[cuda:0, cuda:1]", "list[int]", [0, 1]),
    (["cuda:0", "GPU 1"], "list[int]", [0, 1]), ("13 13 13 13 12", "list[int]", [13, 13, 13, 13, 12]),
    ("[32, 1000], [32, 1000]", "list[list[int]]", [[32, 1000], [32, 1000]]),
    # HW3 Task 1 in words: layers per GPU labelled by their GPU, the move between two layers.
    ("GPU 0: 3, GPU 1: 3", "list[int]", [3, 3]), ("3 on GPU 0, 3 on GPU 1", "list[int]", [3, 3]),
    ("layers 2 and 3", "list[int]", [2, 3]), ("between layer 2 and layer 3", "list[int]", [2, 3]),
    ("after layer 2, before layer 3", "list[int]", [2, 3]),   # a TA's HW3 sheet: had been unread
    ("2 -> 3", "list[int]", [2, 3]), ("2-3", "list[int]", [2, 3]),
    # A number, then a remark on it.
    ("4 (N-1)", "int", 4), ("20 (one per layer)", "int", 20), ("1 (cuda:0 -> cuda:1)", "int", 1),
    # A calculation with its result (a TA's P10 sheet).
    ("64/4 = 16", "int", 16), ("64 / 4 = 16 rows", "int", 16),
    ("BATCH_SIZE / MICRO_BATCHES = 16", "int", 16), ("(64 + 0) // 4 = 16.", "int", 16),
    (["torch.Size([32, 1000])", "[32, 1000]"], "list[list[int]]", [[32, 1000], [32, 1000]]),
])
def test_answers_written_the_ways_students_write_them(raw, kind, value):
    """Each a correct answer a TA reads at a glance (found grading by hand against the
    handouts): the grader reads it as the same value."""
    assert coerce(raw, Question("q", kind, "")) == value


@pytest.mark.parametrize("raw, kind, value", [
    # Shapes as ML students write them (a TA's P4 sheet lost 0.4 for "64 x 1000").
    ("64x1000", "list[int]", [64, 1000]), ("64 x 1000", "list[int]", [64, 1000]),
    ("64 × 1000", "list[int]", [64, 1000]), ("64 by 1000", "list[int]", [64, 1000]),
    ("(64 x 1000)", "list[int]", [64, 1000]), ("torch.Size([64, 1000])", "list[int]", [64, 1000]),
    ("32x1000, 32x1000", "list[list[int]]", [[32, 1000], [32, 1000]]),
    ("32 x 1000 and 32 x 1000", "list[list[int]]", [[32, 1000], [32, 1000]]),
    (["32x1000", "32 × 1000"], "list[list[int]]", [[32, 1000], [32, 1000]]),
    ("(32, 1000) and (32, 1000)", "list[list[int]]", [[32, 1000], [32, 1000]]),
    # The script's own line copied as the answer.
    ("Outputs equal: True", "bool", True), ("outputs equal = False", "bool", False),
])
def test_shapes_and_printed_lines_are_read_as_written(raw, kind, value):
    assert coerce(raw, Question("part1.output_shape" if kind != "bool" else "q", kind, "")) == value


@pytest.mark.parametrize("raw, kind, qid", [
    ("2x32", "list[int]", "task1.split"),                  # two of 32, or [2, 32]: not a shape question
    ("32x1000 twice", "list[list[int]]", "part2.chunk_shapes"),
    ("2 chunks: 32x1000", "list[list[int]]", "part2.chunk_shapes"),
    ("Not equal: True", "bool", "q"), ("Outputs differ: False", "bool", "q"),
])
def test_a_shape_or_printed_line_that_could_mean_another_value_is_not_guessed(raw, kind, qid):
    with pytest.raises(ValueError):
        coerce(raw, Question(qid, kind, ""))


@pytest.mark.parametrize("raw, kind", [
    # Found by an adversarial read of the lenient rules: each could mean another value than
    # the one a rule would pick, so it is not read (the check says so, a person sees it).
    ("none; they are equal", "gpu"), ("the first one", "gpu"), ("1st GPU", "gpu"),
    ("GPU 1 (0-indexed: 0)", "gpu"), ("thirty-two", "int"), ("sixty-four", "int"),
    ("thirty two", "int"), ("1 (per pair of GPUs), so 4 in total", "int"), ("GPUs - 1", "int"),
    ("one per layer", "int"), ("64/2", "int"), ("64/4 = 16 or 17", "int"),
    ("16 = 64/4 = 15", "int"), ("6 layers, 3 each", "list[int]"),
    ("0-2, 3-5", "list[int]"), ("13 (x4) and 12", "list[int]"),
    ("[32, 1000] twice", "list[list[int]]"), ("[32, 1000], [32, 1000] (2 chunks of [64, 1000])", "list[list[int]]"),
    ("No difference", "bool"), ("Not bit-identical, but allclose is True", "bool"), ("Yes for 2 GPUs, no for 5", "bool"),
])
def test_an_answer_that_could_mean_another_value_is_not_guessed(raw, kind):
    with pytest.raises(ValueError):
        coerce(raw, Question("q", kind, ""))


@pytest.mark.parametrize("raw, kind, value", [
    ("22 (cuda:0), 21, 21", "list[int]", [22, 21, 21]), ("GPU 0 - 22, GPU 1 - 21, GPU 2 - 21", "list[int]", [22, 21, 21]),
    ("0 (stage 0), 2 (stage 1)", "list[int]", [0, 2]), ("0-3", "list[int]", [0, 1, 2, 3]),
    ("0 to 3", "list[int]", [0, 1, 2, 3]), ("cuda:0 with 1012 MiB", "gpu", 0),
    # A second audit's: values after GPUs with a space only, a count with words and a remark.
    ("cuda:0 22, cuda:1 22, cuda:2 20", "list[int]", [22, 22, 20]), ("16 samples (64/4)", "int", 16),
    ("2 processes (one per GPU pair)", "int", 2), ("16 per micro-batch", "int", 16),
])
def test_the_adversarial_read_s_readable_answers_are_read_as_meant(raw, kind, value):
    assert coerce(raw, Question("q", kind, "")) == value


@pytest.mark.parametrize("columns, cells, read", [
    # Decimal commas in a list of values per GPU, GiB with a decimal comma, labelled values,
    # nvidia-smi's "used / total": each was a silently wrong reading once.
    (("gpus", "step_time_ms", "memory_per_gpu_mib"), {"gpus": 2, "memory_per_gpu_mib": "1,5 GiB, 1,5 GiB"},
     {"gpus": 2, "memory_per_gpu_mib": [1536, 1536]}),
    (("gpus", "step_time_ms", "memory_per_gpu_mib"), {"gpus": 2, "memory_per_gpu_mib": "48,8 / 48,8"},
     {"gpus": 2, "memory_per_gpu_mib": [48.8, 48.8]}),
    # A unit written once after the last value is every value's (the first was read as MiB).
    (("gpus", "step_time_ms", "memory_per_gpu_mib"), {"gpus": 2, "memory_per_gpu_mib": "0.2, 0.2 GB"},
     {"gpus": 2, "memory_per_gpu_mib": [204.8, 204.8]}),
    (("gpus", "step_time_ms", "memory_per_gpu_mib"), {"gpus": 2, "memory_per_gpu_mib": ["cuda:0: 80", "cuda:1: 80"]},
     {"gpus": 2, "memory_per_gpu_mib": [80, 80]}),
    (("gpus", "split"), {"gpus": 3, "split": ["cuda:0: 22", "cuda:1: 21", "cuda:2: 21"]}, {"gpus": 3, "split": [22, 21, 21]}),
    (("gpu", "utilization_percent", "memory_mib"), {"gpu": 0, "memory_mib": "0,512 GiB"}, {"gpu": 0, "memory_mib": 524.288}),
    (("gpu", "utilization_percent", "memory_mib"), {"gpu": 0, "memory_mib": "1012MiB / 81920MiB"}, {"gpu": 0, "memory_mib": 1012}),
])
def test_values_per_gpu_and_units_are_read_as_meant(columns, cells, read):
    assert coerce([cells], Question("t", "table", "", columns)) == [read]


def test_a_column_of_words_keeps_its_words():
    """practical6's comparison table: 'multiple (one per GPU)' is the word multiple, not 1."""
    question = template_questions("practical6")["compare.table"]
    assert "ddp" in question.text_columns
    rows = coerce([{"aspect": "Processes", "dp": 1, "ddp": "multiple (one per GPU)"},
                   {"aspect": "GPU usage", "dp": "GPU 0 overloaded (unbalanced)", "ddp": "balanced"}], question)
    assert rows == [{"aspect": "Processes", "dp": 1, "ddp": "multiple (one per GPU)"},
                    {"aspect": "GPU usage", "dp": "GPU 0 overloaded (unbalanced)", "ddp": "balanced"}]


@pytest.mark.parametrize("columns, cells, read", [
    # Units in a column whose name gives one: converted, "7.5 ms" in a column of seconds too.
    (("method", "step_time_s", "total_time_s"), {"method": "dp", "step_time_s": "7.5 ms", "total_time_s": "0,75 s"},
     {"method": "dp", "step_time_s": 0.0075, "total_time_s": 0.75}),
    (("method", "step_time_s", "total_time_s"), {"method": "single", "step_time_s": "0.0075 s", "total_time_s": "1.5 sec"},
     {"method": "single", "step_time_s": 0.0075, "total_time_s": 1.5}),
    # nvidia-smi's readings copied as it prints them.
    (("gpu", "utilization_percent", "memory_mib"), {"gpu": "GPU 0", "utilization_percent": "38%", "memory_mib": "1012MiB"},
     {"gpu": 0, "utilization_percent": 38, "memory_mib": 1012}),
    (("gpu", "utilization_percent", "memory_mib"), {"gpu": "cuda:1", "utilization_percent": "38 %", "memory_mib": "1,012 MiB"},
     {"gpu": 1, "utilization_percent": 38, "memory_mib": 1012}),
    # The handout's "32/32"; commas between whole numbers list them (never 32.32).
    (("gpus", "split"), {"gpus": 2, "split": "32/32"}, {"gpus": 2, "split": [32, 32]}),
    (("gpus", "split"), {"gpus": 2, "split": "32,32"}, {"gpus": 2, "split": [32, 32]}),
    (("gpus", "split"), {"gpus": "3 GPUs", "split": "22,22,20"}, {"gpus": 3, "split": [22, 22, 20]}),
    (("rank", "gpu"), {"rank": "Rank 0", "gpu": "GPU 0"}, {"rank": 0, "gpu": 0}),
    (("rank", "gpus"), {"rank": 1, "gpus": "cuda:1 and cuda:3"}, {"rank": 1, "gpus": [1, 3]}),
    (("micro_batches", "passes_per_step", "micro_batch_size"),
     {"micro_batches": 2, "passes_per_step": "2 forward + 2 backward", "micro_batch_size": "8 samples"},
     {"micro_batches": 2, "passes_per_step": 2, "micro_batch_size": 8}),
    # One value per GPU: "80,80" is two GPUs' memory, "1,012" one GPU's.
    (("gpus", "step_time_ms", "memory_per_gpu_mib"), {"gpus": 2, "step_time_ms": "0.0125 s", "memory_per_gpu_mib": "80,80"},
     {"gpus": 2, "step_time_ms": 12.5, "memory_per_gpu_mib": [80, 80]}),
    (("gpus", "step_time_ms", "memory_per_gpu_mib"), {"gpus": 2, "step_time_ms": 12, "memory_per_gpu_mib": ["1,012 MiB", "1.5 GiB"]},
     {"gpus": 2, "step_time_ms": 12, "memory_per_gpu_mib": [1012, 1536]}),
    # The clock said after the value, as `pdl-grade run` asks students without a GPU to (a
    # student's audit: "1.720 ms (simulated)" lost the whole Task 4 table); a unit in brackets
    # stays a unit.
    (("gpus", "step_time_ms", "memory_per_gpu_mib"), {"gpus": 2, "step_time_ms": "1.720 ms (simulated)",
                                                      "memory_per_gpu_mib": "200.4, 200.7 (median)"},
     {"gpus": 2, "step_time_ms": 1.72, "memory_per_gpu_mib": [200.4, 200.7]}),
    (("depth", "step_time_ms"), {"depth": 6, "step_time_ms": "0.608 ms, simulated"}, {"depth": 6, "step_time_ms": 0.608}),
    (("depth", "step_time_ms"), {"depth": 6, "step_time_ms": "2.040 (sim.)"}, {"depth": 6, "step_time_ms": 2.04}),
    (("depth", "step_time_ms"), {"depth": 6, "step_time_ms": "1.727 (simulated clock)"},
     {"depth": 6, "step_time_ms": 1.727}),
    (("depth", "step_time_ms"), {"depth": 6, "step_time_ms": "1.72 ms/step"}, {"depth": 6, "step_time_ms": 1.72}),
    (("depth", "step_time_ms"), {"depth": 6, "step_time_ms": "1.72 ms (avg)"}, {"depth": 6, "step_time_ms": 1.72}),
    # One value "each" is every GPU's of the row (a TA's audit: it had been one value for 2 GPUs).
    (("gpus", "memory_per_gpu_mib"), {"gpus": 2, "memory_per_gpu_mib": "80 MiB each"}, {"gpus": 2, "memory_per_gpu_mib": [80, 80]}),
    # A bracket with a number in it is no remark on the clock: left for the check to say so.
    (("depth", "step_time_ms"), {"depth": 6, "step_time_ms": "1.72 (2 GPUs)"}, {"depth": 6, "step_time_ms": "1.72 (2 GPUs)"}),
    # A unit in brackets is the value's where it is of the column's kind (adv55 E); another
    # kind's is never read past.
    (("method", "step_time_s"), {"method": "dp", "step_time_s": "0.0075 (s)"}, {"method": "dp", "step_time_s": 0.0075}),
    (("method", "step_time_s"), {"method": "dp", "step_time_s": "0.0075 (MiB)"},
     {"method": "dp", "step_time_s": "0.0075 (MiB)"}),
    # Words stay words; a cell that is not a number stays as written for the check to say so.
    (("aspect", "dp", "ddp"), {"aspect": "Processes", "dp": "1", "ddp": "Mutiple"},
     {"aspect": "Processes", "dp": 1, "ddp": "Mutiple"}),
    (("method", "step_time_s", "total_time_s"), {"method": "dp", "step_time_s": "fast", "total_time_s": "38 MiB"},
     {"method": "dp", "step_time_s": "fast", "total_time_s": "38 MiB"}),
])
def test_table_cells_written_the_ways_students_write_them(columns, cells, read):
    assert coerce([cells], Question("t", "table", "", columns)) == [read]


def test_tables_keep_their_columns_and_parse_decimal_commas():
    question = Question("t", "table", "", ("depth", "step_time_ms"))
    assert coerce([{"depth": 6, "step_time_ms": "12,5"}], question) == [{"depth": 6, "step_time_ms": 12.5}]
    with pytest.raises(ValueError, match="row 1 has column\\(s\\) time"):
        coerce([{"depth": 6, "time": 1}], question)


@pytest.mark.parametrize("cells, read", [
    # The table's other times show a decimal comma ("0,912"): "1,826 ms" is 1.826 ms.
    ([{"depth": 6, "step_time_ms": "0,912 ms"}, {"depth": 12, "step_time_ms": "1,826 ms"}], [0.912, 1.826]),
    # ... or a decimal point ("950.5"): the comma groups thousands, 1826 ms.
    ([{"depth": 6, "step_time_ms": "950.5 ms"}, {"depth": 12, "step_time_ms": "1,826 ms"}], [950.5, 1826]),
    # In a table of decimal commas a point groups thousands.
    ([{"depth": 6, "step_time_ms": "912,5"}, {"depth": 12, "step_time_ms": "1.826"}], [912.5, 1826]),
    # A YAML number written with a point shows the mark too.
    ([{"depth": 6, "step_time_ms": 950.5}, {"depth": 12, "step_time_ms": "1,826"}], [950.5, 1826]),
])
def test_a_tables_own_numbers_decide_its_decimal_mark(cells, read):
    """A step time written "1,826 ms" was always read 1.826; the PDF reader decides it from the
    table's other numbers, and a sheet's table now does the same."""
    question = template_questions("hw3")["task2.step_time_table"]
    assert [row["step_time_ms"] for row in coerce(cells, question)] == pytest.approx(read)


@pytest.mark.parametrize("cells", [
    # An adversary's: read 912, 1.826, 3.652 without a word (the PDF asks a person).
    [{"depth": 6, "step_time_ms": "912"}, {"depth": 12, "step_time_ms": "1,826"}, {"depth": 24, "step_time_ms": "3,652"}],
    [{"depth": 6, "step_time_ms": "1,826 ms"}, {"depth": 12, "step_time_ms": "3,652 ms"}],
])
def test_a_time_nothing_in_its_table_decides_is_said_never_guessed(cells):
    question = template_questions("hw3")["task2.step_time_table"]
    with pytest.raises(ValueError, match="'1,826(?: ms)?' could be 1826 or 1.826"):
        coerce(cells, question)


def test_a_kind_undecided_takes_the_tables_mark_as_the_pdf_reader_does():
    """A table written with decimal commas ("1,2 ms") reads its "1,012 MiB" so too; MiB alone
    in a table that shows nothing stay grouped thousands; times beside "812.5 MiB" group."""
    question = template_questions("hw3")["task4.table"]
    rows = coerce([{"gpus": 2, "step_time_ms": "1,2", "memory_per_gpu_mib": ["1,012 MiB", "1,012 MiB"]}], question)
    assert rows == [{"gpus": 2, "step_time_ms": 1.2, "memory_per_gpu_mib": [1.012, 1.012]}]
    rows = coerce([{"gpus": 2, "step_time_ms": 12, "memory_per_gpu_mib": ["1,012 MiB", "1,012 MiB"]}], question)
    assert rows == [{"gpus": 2, "step_time_ms": 12, "memory_per_gpu_mib": [1012, 1012]}]
    rows = coerce([{"gpus": 2, "step_time_ms": "1,826", "memory_per_gpu_mib": "812.5, 812.5"}], question)
    assert rows == [{"gpus": 2, "step_time_ms": 1826, "memory_per_gpu_mib": [812.5, 812.5]}]


@pytest.mark.parametrize("cells, read", [
    # A column renamed to the unit the student measured in is read in that unit (a TA's
    # audit: the seconds and GB table was refused whole, the same numbers mislabelled as ms
    # and MiB taken).
    ([{"gpus": 2, "step_time_s": 0.18259, "memory_per_gpu_gb": [0.1957, 0.196]}],
     [{"gpus": 2, "step_time_ms": 182.59, "memory_per_gpu_mib": [200.3968, 200.704]}]),
    ([{"gpus": 2, "step_time_seconds": "0,18259", "memory_per_gpu_bytes": "210182144, 210444288"}],
     [{"gpus": 2, "step_time_ms": 182.59, "memory_per_gpu_mib": [200.4453125, 200.6953125]}]),
    ([{"GPUs": 5, "Step time (sec)": "0.199 s", "Memory per GPU (MB)": [80.3, 80.1, 80.1, 80.1, 80.6]}],
     [{"gpus": 5, "step_time_ms": 199.0, "memory_per_gpu_mib": [80.3, 80.1, 80.1, 80.1, 80.6]}]),
    # Memory written in bytes, under the table's own column.
    ([{"gpus": 2, "step_time_ms": 182.59, "memory_per_gpu_mib": ["210182144 bytes", "210444288 B"]}],
     [{"gpus": 2, "step_time_ms": 182.59, "memory_per_gpu_mib": [200.4453125, 200.6953125]}]),
])
def test_a_column_renamed_to_another_unit_is_read_in_that_unit(cells, read):
    rows = coerce(cells, template_questions("hw3")["task4.table"])
    assert rows == [{k: pytest.approx(v) for k, v in row.items()} for row in read]


def test_a_renamed_column_of_another_kind_is_still_refused():
    question = template_questions("hw3")["task4.table"]
    with pytest.raises(ValueError, match="row 1 has column\\(s\\) memory_per_gpu_ms"):
        coerce([{"gpus": 2, "step_time_ms": 1, "memory_per_gpu_ms": 3}], question)


def test_gpus_written_as_devices_in_a_table_are_their_indices():
    question = Question("t", "table", "", ("rank", "gpus"))
    assert coerce([{"rank": 0, "gpus": ["cuda:0", "cuda:2"]}, {"rank": 1, "gpus": "[cuda:1, cuda:3]"}],
                  question) == [{"rank": 0, "gpus": [0, 2]}, {"rank": 1, "gpus": [1, 3]}]


def test_broken_sheets_are_problems_not_crashes(tmp_path):
    questions = template_questions("practical6")
    path = tmp_path / "answers.yaml"
    path.write_text("answers:\n  ddp.world_size: {value: 2\n")
    broken = read_sheet(path, questions, "practical6/answers.yaml")
    assert broken.found and not broken.values
    assert "practical6/answers.yaml is not valid YAML (line" in broken.problems[0]
    path.write_text(yaml.safe_dump({"answers": {"ddp.world_size": {"value": "two or four"},
                                                "ddp.per_rank_batch": {"value": 32},
                                                "made.up": {"value": 1}}}))
    mixed = read_sheet(path, questions, "practical6/answers.yaml")
    assert mixed.values == {"ddp.per_rank_batch": 32}
    assert any("ddp.world_size: expected a whole number, got 'two or four'" in p for p in mixed.problems)
    assert any("'made.up' is not a question of this sheet" in p for p in mixed.problems)


def test_a_remark_under_a_key_of_the_students_own_is_shown_where_it_is_ignored(tmp_path):
    """A TA's audit: a `task4.comment` the student added was dropped unseen; its text now
    reaches the problems instructor.md lists."""
    path = tmp_path / "answers.yaml"
    remark = "measured on the course cluster; 5 GPUs   were shared with another job " * 4
    path.write_text(yaml.safe_dump({"answers": {"task4.comment": {"value": remark},
                                                "task4.note": "short", "task4.empty": None}}))
    sheet = read_sheet(path, template_questions("hw3"), "hw3/answers.yaml")
    told = {p.split("'")[1]: p for p in sheet.problems}
    assert "ignored (it says: measured on the course cluster; 5 GPUs were shared with" in \
        told["task4.comment"] and told["task4.comment"].endswith("...)")
    assert told["task4.note"].endswith("ignored (it says: short)")
    assert told["task4.empty"].endswith("; ignored")


def test_nothing_handed_in_is_said_once(tmp_path):
    answers = collect_answers(tmp_path, "practical4")
    assert answers.problems == ["no answers handed in: practical4/answers.yaml not found"]
    assert answers.missing == list(template_questions("practical4"))


def test_pdf_answers_win_and_the_sheet_fills_the_gaps(tmp_path):
    shutil.copy(ROOT / "reference" / "hw3" / "report.pdf", write_sheet(tmp_path, "hw3", {
        "task5.transfers_2gpus": {"value": 7}, "task1.layers_per_gpu": {"value": [3, 3]}}).parent)
    answers = collect_answers(tmp_path, "hw3", "pdf_then_sheet")
    assert answers.values["task5.transfers_2gpus"] == 1  # the report says 1
    # Where it was read reaches result.json, for people and as data.
    assert answers.origin["task5.transfers_2gpus"] == (
        "hw3/report.pdf, page 3, line 'Number of transfers with 2 GPUs: 1'")
    assert answers.where["task5.transfers_2gpus"] == {
        "file": "hw3/report.pdf", "kind": "line", "page": 3, "pages": [3],
        "text": "Number of transfers with 2 GPUs: 1"}
    assert answers.to_dict()["where"]["task2.step_time_table"]["rows"]["24"]["page"] == 2  # ran onto page 2
    assert answers.origin["task1.layers_per_gpu"].startswith("hw3/report.pdf, page ")
    assert not answers.missing
    sheet_only = collect_answers(tmp_path, "hw3", "sheet")
    assert sheet_only.values["task5.transfers_2gpus"] == 7
    assert answers.where_to_answer("task5.transfers_2gpus") == (
        "hw3/report.pdf ('Number of transfers with 2 GPUs') or hw3/answers.yaml (task5.transfers_2gpus)")


def test_an_unreadable_report_falls_back_to_the_sheet_and_asks_for_review(tmp_path):
    write_sheet(tmp_path, "hw3", {"task5.transfers_2gpus": {"value": 1}})
    (tmp_path / "hw3" / "report.pdf").write_bytes(b"PK\x03\x04 a docx renamed")
    answers = collect_answers(tmp_path, "hw3", "pdf_then_sheet")
    assert answers.values == {"task5.transfers_2gpus": 1}
    assert answers.needs_manual_review
    # What the report answers is for a person to read: never listed as "not answered".
    assert answers.unread == answers.missing and "task5.transfers_2gpus" not in answers.unread
    assert any("not a PDF but a ZIP archive" in p for p in answers.problems)


def test_the_reference_report_pdf_says_what_its_answer_sheet_says():
    """reference/hw3/report.pdf is a real pandoc + Chromium print whose Task 2 table runs onto
    the next page; read back, it must give the reference sheet's answers."""
    from_pdf = collect_answers(ROOT / "reference", "hw3", "pdf")
    from_sheet = collect_answers(ROOT / "reference", "hw3", "sheet")
    assert not from_pdf.missing and not from_pdf.problems, from_pdf.problems

    def words(value):
        return " ".join(str(value).replace("\u2019", "'").replace("micro-batches", "microbatches").split())
    for qid, value in from_sheet.values.items():
        if isinstance(value, bool):  # the sheet's yes/no is a bool; the report's {value, explanation}
            assert from_pdf.values[qid]["value"] == ("yes" if value else "no"), (qid, from_pdf.values[qid])
            continue
        assert (words(from_pdf.values[qid]) == words(value) if isinstance(value, str)
                else from_pdf.values[qid] == value), qid


def test_a_report_not_handed_in_and_one_that_cannot_be_read_are_told_apart(tmp_path):
    """Not handed in: one message naming what is missing. There but unreadable (a whole
    scan): the scan's own message, and never also "not handed in"."""
    nothing = collect_answers(tmp_path, "hw3", "pdf_then_sheet")
    assert nothing.problems == ["no answers handed in: hw3/report.pdf or hw3/answers.yaml not found"]
    assert [f["status"] for f in nothing.files] == ["missing", "missing"]
    (tmp_path / "hw3").mkdir()
    shutil.copy(Path(__file__).parent / "fixtures" / "reports" / "scan_image_only.pdf", tmp_path / "hw3" / "report.pdf")
    scan = collect_answers(tmp_path, "hw3", "pdf_then_sheet")
    assert scan.problems == ["hw3/report.pdf is a scan: its 2 pages are pictures with no text; a person must read "
                             "it (export the report from the editor as PDF so the grader can read it)"]
    assert scan.files[0]["status"] == "unreadable" and scan.needs_manual_review


def test_an_answer_sheet_of_nested_aliases_is_refused_not_expanded(tmp_path):
    """'Billion laughs': 511 bytes that expand to gigabytes in whatever walks them (the answers
    go into result.json and the reports); the sheet is read through grader.common.safe_yaml."""
    levels = ["a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]"]
    for n in range(1, 9):
        previous = chr(ord("a") + n - 1)
        levels.append(f"{chr(ord('a') + n)}: &{chr(ord('a') + n)} [" + ",".join([f"*{previous}"] * 9) + "]")
    path = tmp_path / "answers.yaml"
    path.write_text("\n".join(levels) + "\nanswers:\n  ddp.world_size: *i\n")
    assert len(path.read_bytes()) < 600
    import resource
    import time
    before, started = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, time.monotonic()
    sheet = read_sheet(path, template_questions("practical6"), "practical6/answers.yaml")
    assert time.monotonic() - started < 2
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100_000   # KiB
    assert sheet.found and sheet.values == {}
    assert sheet.problems == ["practical6/answers.yaml expands to more than 100000 values (nested "
                              "aliases?); no answer of it was read"], sheet.problems


@pytest.mark.parametrize("raw, kind, value", [
    # A sheet written like a README (an audit's s4): emphasis and code marks around the value.
    ("**1**", "int", 1), ("`20`", "int", 20), ("**4** (N-1)", "int", 4), ("**3, 3**", "list[int]", [3, 3]),
    ("_cuda:0_", "gpu", 0),
])
def test_markdown_marks_around_a_value_are_not_part_of_it(raw, kind, value):
    assert coerce(raw, Question("q", kind, "")) == value


@pytest.mark.parametrize("raw", ["2*3*4", "3 * 4", "*"])
def test_a_star_between_numbers_stays_a_product_never_a_number(raw):
    with pytest.raises(ValueError, match="expected a whole number"):
        coerce(raw, Question("q", "int", ""))


def test_a_table_written_in_markdown_is_its_rows():
    """The report template's table pasted into the sheet as text: read by its headers."""
    question = template_questions("hw3")["task2.step_time_table"]
    text = ("| DEPTH | Step time (ms) |\n|-------|----------------|\n| 6     | 0.608 |\n"
            "| 12 | 1.080 |\n| 24 | **2.040** |\n")
    assert coerce(text, question) == [{"depth": 6, "step_time_ms": 0.608}, {"depth": 12, "step_time_ms": 1.08},
                                      {"depth": 24, "step_time_ms": 2.04}]
    # GitHub's shortest rules, and bold headers.
    assert coerce("| **DEPTH** | Step time (ms) |\n|-|:-:|\n| 6 | 0.608 |", question) == [
        {"depth": 6, "step_time_ms": 0.608}]
    # Not read, saying why (the message had only said to write a list of mappings).
    with pytest.raises(ValueError, match="its header names 'Layers', 'Seconds', which are not a column"):
        coerce("| Layers | Seconds |\n|---|---|\n| 6 | 1 |", question)   # not the table's columns
    with pytest.raises(ValueError, match=r"its row 1 \('6 \| 0.6 \| 9'\) has 3 cells where the header has 2"):
        coerce("| DEPTH | Step time (ms) |\n|---|---|\n| 6 | 0.6 | 9 |", question)   # a cell too many


def test_a_word_column_written_in_bold_is_its_word():
    question = template_questions("practical6")["timing.table"]
    assert coerce([{"method": "**dp**", "step_time_s": 0.02}], question) == [{"method": "dp", "step_time_s": 0.02}]


def test_a_huge_number_in_a_list_is_read_exactly_or_refused_never_a_crash(tmp_path):
    """An adversary's 400-digit number raised OverflowError and lost every answer of the sheet."""
    assert coerce("1" * 400 + ", 2", Question("q", "list[int]", "")) == [int("1" * 400), 2]
    sheet = tmp_path / "answers.yaml"
    sheet.write_text("answers:\n  q: {value: '" + "9" * 400 + ".5, 1'}\n  r: {value: 3}\n")
    result = read_sheet(sheet, {"q": Question("q", "list[int]", ""), "r": Question("r", "int", "")},
                        "answers.yaml")
    assert result.values == {"r": 3}, (result.values, result.problems)


def test_a_long_text_where_a_value_belongs_is_refused_at_once():
    """The readers' patterns take time growing with the square of long crafted text (8.5 s at
    48 KB): a value is short, and longer text is refused before any of them runs."""
    with pytest.raises(ValueError, match="60000 characters where a value is expected"):
        coerce("*a" * 30000, Question("q", "int", ""))
    from grader.answers.yes_no import read_yes_no
    assert read_yes_no("!" * 80000 + "a").unclear            # was 53 s in the placeholder check


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "cp1252"])
def test_a_sheet_saved_by_a_windows_editor_is_read(tmp_path, encoding):
    """Notepad's "UTF-8 with BOM", "Unicode" (UTF-16) and "ANSI" (Windows-1252): a sheet saved
    as ANSI or Unicode had lost every answer."""
    path = tmp_path / "answers.yaml"
    path.write_bytes("assignment: practical4\nanswers:\n  part1.output_shape: 64 x 1000\n"
                     "  part2.explanation: 'Jüri: the rows are independent'\n".encode(encoding))
    sheet = read_sheet(path, template_questions("practical4"), "practical4/answers.yaml")
    assert sheet.problems == [], sheet.problems
    assert sheet.values["part1.output_shape"] == [64, 1000]
    assert sheet.values["part2.explanation"] == "Jüri: the rows are independent"


def test_an_answer_it_cannot_read_is_missing_but_known_as_written(tmp_path):
    write_sheet(tmp_path, "hw3", {"task4.all_gpus_utilised": {"value": "mostly, I would say"},
                                  "task5.transfers_2gpus": {"value": 1}})
    answers = collect_answers(tmp_path, "hw3", "sheet")
    assert "task4.all_gpus_utilised" in answers.missing
    assert answers.unread == ["task4.all_gpus_utilised"]
    assert any("got 'mostly, I would say'" in p for p in answers.problems)


def test_a_check_on_an_answer_of_an_unreadable_report_says_why(tmp_path):
    """A TA's scanned report: every item said only "no answer found"."""
    from grader.checks.support import not_found
    (tmp_path / "hw3").mkdir()
    (tmp_path / "hw3" / "report.pdf").write_bytes(b"PK\x03\x04 a docx renamed")
    answers = collect_answers(tmp_path, "hw3", "pdf")
    said = not_found(answers, "task5.transfers_2gpus")
    assert said.startswith("no answer found (") and "report.pdf" in said, said


@pytest.mark.parametrize("cell, read", [
    # nvidia-smi's "used / total" in the per-GPU column (a probe's: read as two GPUs, [1012, 81920]).
    ("1012MiB / 81920MiB", 1012), ("1012 MiB / 81920 MiB", 1012),
    ("1012MiB / 81920MiB, 980MiB / 81920MiB", [1012, 980]),
    # Two GPUs' own memory, which a total could not be: still one value each.
    ("80 MiB / 80 MiB", [80, 80]), ("48,8 / 48,8", [48.8, 48.8]), ("402 / 398 / 410", [402, 398, 410]),
    ("20480 MiB / 20600 MiB", [20480, 20600]),
])
def test_nvidia_smis_used_of_total_is_one_gpus_memory(cell, read):
    question = template_questions("hw3")["task4.table"]
    assert coerce([{"gpus": 2, "memory_per_gpu_mib": cell}], question) == [{"gpus": 2, "memory_per_gpu_mib": read}]


@pytest.mark.parametrize("raw", [
    # Task 5's count written beside the question's own GPU count (a probe's: none was read).
    "With 5 GPUs: 4", "Number of transfers with 5 GPUs: 4", "5 GPUs -> 4 transfers", "4 transfers between 5 GPUs",
    "4, because with 5 GPUs there are 4 boundaries", "4 = 5 - 1", "5 GPU's: 4", "With 5 GPUs: 5 - 1 = 4",
    "4 (with 2 GPUs it was 1)",
])
def test_a_count_beside_the_questions_gpu_count_is_the_count(raw):
    assert coerce(raw, template_questions("hw3")["task5.transfers_5gpus"]) == 4


@pytest.mark.parametrize("raw", [
    # Another value offered, another setup's answer, a GPU count alone, a sum that is not the
    # result: none is read as a count.
    "4 or 5", "4 (or 3)", "With 5 GPUs: 4?", "With 2 GPUs: 1", "With 2 GPUs: 1, with 5 GPUs: 4", "5 GPUs",
    "4 = 5 + 1", "4 with 5 GPUs (1 with 2)",
])
def test_a_count_beside_gpu_counts_that_could_mean_another_value_is_not_guessed(raw):
    with pytest.raises(ValueError, match="expected a whole number"):
        coerce(raw, template_questions("hw3")["task5.transfers_5gpus"])


def test_a_gpu_count_is_the_answer_where_the_question_asks_for_one():
    """Practical 10 asks how many GPUs each rank uses: "2 GPUs" is its answer, not a setting."""
    assert coerce("2 GPUs", template_questions("practical10")["hybrid.gpus_per_rank"]) == 2
    assert coerce("4 GPUs", Question("q", "int", "")) == 4


@pytest.mark.parametrize("line, value", [
    # Estonian answers (the course is taught in Estonia), and the question's own subject.
    ("'Ei, iga kiht lisab tööd'", False), ("'Jah - iga kiht lisab kiirust'", True),
    ("'Increasing DEPTH does not improve speed'", False), ("Increasing depth doesn't improve the speed", False),
    ("'Increasing DEPTH improves speed.'", True),
])
def test_a_yes_no_answer_in_estonian_or_with_the_questions_subject(tmp_path, line, value):
    path = tmp_path / "answers.yaml"
    path.write_text(f"assignment: hw3\nanswers:\n  task2.depth_improves_speed: {line}\n")
    sheet = read_sheet(path, template_questions("hw3"), "hw3/answers.yaml")
    assert sheet.problems == [], sheet.problems
    assert sheet.values.get("task2.depth_improves_speed") == value, sheet.values


@pytest.mark.parametrize("qid, raw, value", [
    # A TA's audit (hw3_answers_alt): HW3 Task 1's answers in words, each unread or misread.
    # Q1 names its GPUs ("GPU 0 and GPU 1"): one count "each" is that count for both.
    ("task1.layers_per_gpu", "3 each", [3, 3]), ("task1.layers_per_gpu", "3 per GPU", [3, 3]),
    ("task1.layers_per_gpu", "3 layers each", [3, 3]), ("task1.layers_per_gpu", "3 on each GPU", [3, 3]),
    ("task1.layers_per_gpu", "GPU 0 has 3 layers, GPU 1 has 3 layers", [3, 3]),
    # Read as written, so the check says it is wrong (the provided code puts 3 on each).
    ("task1.layers_per_gpu", "2 each", [2, 2]), ("task1.layers_per_gpu", "GPU 0 has 2 layers, GPU 1 has 4", [2, 4]),
    # Q2 (0-based indices): the point in forward() said by the layer on either side of it.
    ("task1.transfer_between", "before layer 3 (after layer 2)", [2, 3]),
    ("task1.transfer_between", "before layer 3, after layer 2", [2, 3]),
    ("task1.transfer_between", "between layers[2] and layers[3]", [2, 3]),
    ("task1.transfer_between", "between self.layers[2] and self.layers[3]", [2, 3]),
    ("task1.transfer_between", "just before layer 3", [2, 3]), ("task1.transfer_between", "after layer 2", [2, 3]),
    ("task1.transfer_between", "before layers[3] (on cuda:1)", [2, 3]),
    # What was read before is read alike.
    ("task1.transfer_between", "after layer 2, before layer 3", [2, 3]),
    ("task1.transfer_between", "between layer 2 and layer 3", [2, 3]), ("task1.transfer_between", "2 -> 3", [2, 3]),
    # 1-based counting ("the move is between the third and fourth layer"): read as the 0-based
    # indices the question asks for, which the check then says are not where the move is.
    ("task1.transfer_between", "before layer 4", [3, 4]), ("task1.transfer_between", "after layer 3", [3, 4]),
    ("task1.transfer_between", "before layer 4 (after layer 3)", [3, 4]),
])
def test_hw3_task1_answers_in_words_are_read_as_meant(qid, raw, value):
    assert coerce(raw, template_questions("hw3")[qid]) == value


@pytest.mark.parametrize("qid, raw", [
    # "each" needs the GPUs the question names; a total beside it, or a remark with other
    # numbers, could be another answer.
    ("task1.layers_per_gpu", "6 layers, 3 each"), ("task1.layers_per_gpu", "3 each (or 2 and 4)"),
    ("task1.layers_per_gpu", "3 or 4 each"),
    # Sides that disagree, a layer before the first, another value offered, a side twice.
    ("task1.transfer_between", "before layer 3 (after layer 1)"), ("task1.transfer_between", "before layer 0"),
    ("task1.transfer_between", "before layer 3 or 4"), ("task1.transfer_between", "before layer 3, before layer 4"),
    ("task1.transfer_between", "not before layer 3"),
    ("task1.transfer_between", "before layer 3 (between 2 and 5)"),
])
def test_hw3_task1_answers_that_could_mean_another_value_are_not_guessed(qid, raw):
    with pytest.raises(ValueError, match="expected a list of whole numbers"):
        coerce(raw, template_questions("hw3")[qid])


def test_each_without_the_gpus_a_question_names_is_not_guessed():
    """"3 each" is [3, 3] only where the question says how many GPUs it asks about."""
    with pytest.raises(ValueError):
        coerce("3 each", Question("q", "list[int]", "How many layers per GPU?"))


@pytest.mark.parametrize("raw, value", [
    # A TA's audit (p10_answers_alt): plural "GPUs" and "only" before the list were unread.
    ("GPUs 0 and 2", [0, 2]), ("only GPUs 0 and 1", [0, 1]), ("gpus 0 & 2", [0, 2]), ("GPUs: 0, 2", [0, 2]),
    ("only GPU 0 and GPU 1", [0, 1]), ("GPUs 0 and 1 only", [0, 1]),
    ("GPU 0 and GPU 2", [0, 2]), ("cuda:0 and cuda:2", [0, 2]), ("GPU0, GPU2", [0, 2]),
])
def test_practical10_gpus_listed_in_words_are_read(raw, value):
    assert coerce(raw, template_questions("practical10")["broken.gpus_in_use"]) == value


@pytest.mark.parametrize("raw", ["4 GPUs: 0, 1, 2, 3", "2 GPUs", "GPUs 0 and 1 (or 2)", "GPUs 0-1 and 2"])
def test_practical10_gpus_listed_beside_a_count_or_another_answer_are_not_guessed(raw):
    with pytest.raises(ValueError, match="expected a list of whole numbers"):
        coerce(raw, template_questions("practical10")["broken.gpus_in_use"])


# -- A TA's audit of answer forms (P4, P5, HW3 sheets): correct answers that were refused ----
@pytest.mark.parametrize("qid, raw, value", [
    # The lines the handout's code prints, copied into the sheet.
    ("part1.output_shape", "Output shape: torch.Size([64, 1000])", [64, 1000]),
    ("part1.output_shape", "Final output shape: torch.Size([64, 1000])", [64, 1000]),
    ("part1.output_shape", "The output shape is (64, 1000).", [64, 1000]),
    # A remark in brackets without numbers is a remark.
    ("part1.output_shape", "64 x 1000 (batch x features)", [64, 1000]),
    ("part1.output_shape", "torch.Size([64, 1000]) (batch, features)", [64, 1000]),
    ("part2.chunk_shapes", "Processing chunk 0 with shape torch.Size([32, 1000]); "
                           "Processing chunk 1 with shape torch.Size([32, 1000])", [[32, 1000], [32, 1000]]),
    ("part2.chunk_shapes", "Processing chunk 0 with shape torch.Size([32, 1000])\n"
                           "Processing chunk 1 with shape torch.Size([32, 1000])", [[32, 1000], [32, 1000]]),
    ("part2.chunk_shapes", "chunk 0: [32, 1000], chunk 1: [32, 1000]", [[32, 1000], [32, 1000]]),
    ("part2.chunk_shapes", "chunk 1: 32x1000, chunk 2: 32x1000", [[32, 1000], [32, 1000]]),
    # Read as written: the check says the chunks are more than one shape.
    ("part2.chunk_shapes", "Processing chunk 0 with shape torch.Size([32, 1000])", [[32, 1000]]),
    # "each": every chunk has it; the question gives no count, so the check counts its chunks.
    ("part2.chunk_shapes", "32x1000 each", {"each": [32, 1000]}),
    ("part2.chunk_shapes", "torch.Size([32, 1000]) each", {"each": [32, 1000]}),
    ("part2.chunk_shapes", "each chunk: (32, 1000)", {"each": [32, 1000]}),
    ("part2.chunk_shapes", "both (32, 1000)", [[32, 1000], [32, 1000]]),
    ("part2.outputs_equal", "They are equal (allclose returns True)", True),
    ("part2.outputs_equal", "Outputs equal: True", True),
])
def test_practical4_answers_copied_from_the_output_or_in_words_are_read(qid, raw, value):
    assert coerce(raw, template_questions("practical4")[qid]) == value


def test_each_chunk_is_the_questions_count_of_chunks_where_it_gives_one():
    question = Question("part2.chunk_shapes", "list[list[int]]", "What shape do the 2 chunks have?")
    assert coerce("32x1000 each", question) == [[32, 1000], [32, 1000]]
    assert coerce("both 32x1000", Question("part2.chunk_shapes", "list[list[int]]",
                                           "What shape do the 3 chunks have?")) is not None


@pytest.mark.parametrize("qid, raw", [
    # Numbers beside the shape, another shape, a doubt or a "not": not one shape.
    ("part1.output_shape", "Output shape: torch.Size([64, 1000]) (batch 64, 1000 features)"),
    ("part1.output_shape", "batch of 64: [64, 1000]"), ("part1.output_shape", "not 64 x 1000"),
    ("part1.output_shape", "64 x 1000 or 64 x 2000"), ("part1.output_shape", "Output shape: 64 x 1000?"),
    ("part1.output_shape", "input [64, 1000], output [64, 1000]"),
    ("part1.output_shape", "maybe torch.Size([64, 1000])"),
    # Brackets of words are no shape; a shape said of several things is no one output's.
    ("part1.output_shape", "the first GPU (cuda:0)"), ("part1.output_shape", "Once (GPU 0 -> GPU 1)"),
    ("part1.output_shape", "both (32, 1000)"), ("part1.output_shape", "each chunk: (32, 1000)"),
    # Chunk labels out of order, a count beside the shape, "each" with another answer.
    ("part2.chunk_shapes", "chunk 0: [32, 1000], chunk 2: [32, 1000]"),
    ("part2.chunk_shapes", "chunk 0: [32, 1000], chunk 0: [32, 1000]"),
    ("part2.chunk_shapes", "32x1000 twice"), ("part2.chunk_shapes", "2 chunks: 32x1000"),
    ("part2.chunk_shapes", "32x1000 each (or 16x1000)"), ("part2.chunk_shapes", "32x1000 each, 64x1000 in total"),
    ("part2.chunk_shapes", "not 32x1000 each"),
    ("part2.outputs_equal", "They are not equal (allclose returns True)"),
    ("part2.outputs_equal", "Equal, but not different"),
])
def test_practical4_answers_in_those_forms_that_could_mean_another_value_are_not_guessed(qid, raw):
    with pytest.raises(ValueError):
        coerce(raw, template_questions("practical4")[qid])


@pytest.mark.parametrize("qid, raw, rows", [
    # The handout's own tables pasted as Markdown, with its headers.
    ("timing.table", "| Set up | Step Time (sec) | Total Time (sec) |\n|---|---|---|\n"
                     "| Single GPU | 0.0075 | 0.0810 |\n| DataParallel | 0.0203 | 0.2353 |",
     [{"method": "Single GPU", "step_time_s": 0.0075, "total_time_s": 0.081},
      {"method": "DataParallel", "step_time_s": 0.0203, "total_time_s": 0.2353}]),
    ("timing.table", "| Set up | Step Time (ms) | Total Time (ms) |\n|---|---|---|\n| Single GPU | 7.5 | 81 |",
     [{"method": "Single GPU", "step_time_s": 0.0075, "total_time_s": 0.081}]),
    # "Batch Size", a column of the handout's the sheet does not ask for, is left out.
    ("dp.split_per_gpu", "| #GPUs | Batch Size | Split per GPU |\n|---|---|---|\n| 2 | 64 | 32/32 |\n"
                         "| 3 | 64 | 22/22/20 |\n| 5 | 64 | 13/13/13/13/12 |",
     [{"gpus": 2, "split": [32, 32]}, {"gpus": 3, "split": [22, 22, 20]},
      {"gpus": 5, "split": [13, 13, 13, 13, 12]}]),
    # nvidia-smi's own headers.
    ("usage.table", "| GPU | GPU-Util | Memory-Usage |\n|---|---|---|\n| 0 | 38% | 1012MiB / 81920MiB |\n"
                    "| 1 | 21% | 618MiB / 81920MiB |",
     [{"gpu": 0, "utilization_percent": 38, "memory_mib": 1012},
      {"gpu": 1, "utilization_percent": 21, "memory_mib": 618}]),
    # The same headers as a list of mappings.
    ("timing.table", [{"Set up": "Single GPU", "Step Time (sec)": 0.0075, "Total Time (sec)": 0.081}],
     [{"method": "Single GPU", "step_time_s": 0.0075, "total_time_s": 0.081}]),
    ("dp.split_per_gpu", [{"#GPUs": 3, "Batch Size": 64, "Split per GPU": "22/22/20"}],
     [{"gpus": 3, "split": [22, 22, 20]}]),
    ("dp.split_per_gpu", [{"gpus": "2 GPUs", "batch_size": 64, "split": "32/32"}], [{"gpus": 2, "split": [32, 32]}]),
    # Mappings keyed by the row's key: the rows they are.
    ("timing.table", {"single": {"gpus": 1, "step_time_s": 0.0075, "total_time_s": 0.081},
                      "dp": {"gpus": 2, "step_time_s": 0.0203, "total_time_s": 0.2353}},
     [{"method": "single", "gpus": 1, "step_time_s": 0.0075, "total_time_s": 0.081},
      {"method": "dp", "gpus": 2, "step_time_s": 0.0203, "total_time_s": 0.2353}]),
    ("dp.split_per_gpu", {2: "32/32", 3: "22/22/20", 5: "13/13/13/13/12"},
     [{"gpus": 2, "split": [32, 32]}, {"gpus": 3, "split": [22, 22, 20]},
      {"gpus": 5, "split": [13, 13, 13, 13, 12]}]),
    ("dp.split_per_gpu", {"2 GPUs": [32, 32]}, [{"gpus": 2, "split": [32, 32]}]),
])
def test_practical5_tables_with_the_handouts_headers_or_keyed_rows_are_read(qid, raw, rows):
    assert coerce(raw, template_questions("practical5")[qid]) == rows


def test_hw3_step_times_keyed_by_depth_are_its_rows():
    assert coerce({6: 56.23, 12: "125.61 ms"}, template_questions("hw3")["task2.step_time_table"]) == [
        {"depth": 6, "step_time_ms": 56.23}, {"depth": 12, "step_time_ms": 125.61}]


@pytest.mark.parametrize("qid, raw", [
    # A header the handout does not have, a column of another table, a row too long.
    ("timing.table", "| Set up | Time |\n|---|---|\n| Single GPU | 0.0075 |"),
    ("timing.table", [{"Set up": "Single GPU", "time": 0.0075}]),
    ("dp.split_per_gpu", "| #GPUs | Batch Size | Split per GPU |\n|---|---|---|\n| 2 | 64 | 32/32 | 1 |"),
    # One row written as a mapping (its keys are the columns), values that are no rows, a key
    # that disagrees with the row's own.
    ("timing.table", {"method": "single", "step_time_s": 0.0075, "total_time_s": 0.081}),
    ("timing.table", {"single": 0.0075, "dp": 0.0203}),
    ("timing.table", {"single": {"method": "dp", "step_time_s": 0.0075}}),
    ("dp.split_per_gpu", {2: "32/32", 3: {"split": "22/22/20"}}),
])
def test_practical5_tables_that_are_not_the_tables_rows_are_still_refused(qid, raw):
    with pytest.raises(ValueError, match="expected rows|has column|Markdown that could not be read"):
        coerce(raw, template_questions("practical5")[qid])


@pytest.mark.parametrize("assignment, qid, raw, value", [
    # A sentence that says the question's own word, or its antonym, and nothing else.
    ("practical5", "timing.faster", "It got slower.", False), ("practical5", "timing.faster", "Slower", False),
    ("practical5", "timing.faster", "Faster", True), ("practical5", "timing.faster", "Much slower", False),
    ("practical5", "timing.faster", "2.7x slower", False),
    ("practical5", "timing.faster", "Training got faster with DataParallel", True),
    ("practical5", "timing.faster", "Slower, GPU 0 gathers every output", False),
    ("practical5", "timing.final_loss_equal", "Same final loss (0.9979 in both)", True),
    ("practical5", "timing.final_loss_equal", "The same", True),
    ("practical5", "timing.final_loss_equal", "Different", False),
    ("practical5", "dp.split_manually", "Automatically, by DataParallel", False),
    ("practical5", "dp.split_manually", "Manually", True),
    ("practical5", "usage.gpu0_more_loaded", "GPU 0 is more loaded", True),
    ("practical5", "usage.gpu0_more_loaded", "It is less loaded", False),
    ("practical6", "data.split_automatically", "Automatically", True),
    ("hw3", "task4.more_gpus_faster", "Slower", False), ("hw3", "task4.more_gpus_faster", "It is slower.", False),
])
def test_a_yes_no_answer_in_the_questions_own_word_is_read(assignment, qid, raw, value):
    assert coerce(raw, template_questions(assignment)[qid]) is value


@pytest.mark.parametrize("assignment, qid, raw", [
    # Another subject, another comparison, both words, a hedge or a "not": a person reads them.
    ("practical5", "timing.faster", "The single GPU was slower"), ("practical5", "timing.faster", "Faster on one GPU"),
    ("practical5", "timing.faster", "DP was slower"), ("practical5", "timing.faster", "Not slower"),
    ("practical5", "timing.faster", "Slower at first, then faster"),
    ("practical5", "timing.faster", "Slower, but faster with 5 GPUs"), ("practical5", "timing.faster", "Slower?"),
    ("practical5", "timing.faster", "Probably slower"), ("practical5", "timing.faster", "Same"),
    ("practical5", "timing.faster", "Slower, yes"), ("practical5", "timing.faster", "Never slower"),
    ("practical5", "timing.final_loss_equal", "Same speed"), ("practical5", "timing.final_loss_equal", "identical"),
    ("practical5", "usage.gpu0_more_loaded", "GPU 1 is more loaded"),
    ("practical5", "timing.proportional", "Sublinear"),
    # No comparative word in the question: nothing but yes/no is read (how the transfers grow
    # answers whether they grow: test_answer_forms.py).
    ("hw3", "task2.depth_improves_speed", "Slower"), ("hw3", "task2.depth_improves_speed", "Linearly: N - 1"),
])
def test_a_sentence_that_is_not_the_questions_word_alone_is_left_for_a_person(assignment, qid, raw):
    with pytest.raises(ValueError, match="expected"):
        coerce(raw, template_questions(assignment)[qid])


@pytest.mark.parametrize("raw, value", [
    # Estonian, bare: the whole answer (a TA's HW3 sheet).
    ("Ei", False), ("ei", False), ("Jah", True), ("jah.", True), ("EI!", False), ("Ei.", False),
])
def test_a_bare_estonian_yes_or_no_is_the_answer(raw, value):
    assert coerce(raw, template_questions("hw3")["task2.depth_improves_speed"]) is value


@pytest.mark.parametrize("columns, cells, read", [
    # Approximations as "~" is read; decimal commas that are clearly decimals.
    (("depth", "step_time_ms"), {"depth": 6, "step_time_ms": "about 56 ms"}, {"depth": 6, "step_time_ms": 56}),
    (("depth", "step_time_ms"), {"depth": 12, "step_time_ms": "≈ 126 ms"}, {"depth": 12, "step_time_ms": 126}),
    (("depth", "step_time_ms"), {"depth": 12, "step_time_ms": "≈126"}, {"depth": 12, "step_time_ms": 126}),
    (("depth", "step_time_ms"), {"depth": 6, "step_time_ms": "around 7.5"}, {"depth": 6, "step_time_ms": 7.5}),
    (("method", "step_time_s"), {"method": "dp", "step_time_s": "approx. 7.5 ms"}, {"method": "dp", "step_time_s": 0.0075}),
    (("method", "step_time_s"), {"method": "dp", "step_time_s": "approximately 0.0075 s"},
     {"method": "dp", "step_time_s": 0.0075}),
    (("method", "step_time_s"), {"method": "dp", "step_time_s": "about 7,5 ms"}, {"method": "dp", "step_time_s": 0.0075}),
    (("method", "step_time_s"), {"method": "dp", "step_time_s": "≈ 20,3 ms"}, {"method": "dp", "step_time_s": 0.0203}),
    (("gpu", "utilization_percent", "memory_mib"), {"gpu": 0, "utilization_percent": "about 38%", "memory_mib": "~1012 MiB"},
     {"gpu": 0, "utilization_percent": 38, "memory_mib": 1012}),
    # One value "each" or "per GPU" in a per-GPU column: that value for each of the row's GPUs.
    (("gpus", "step_time_ms", "memory_per_gpu_mib"), {"gpus": 2, "memory_per_gpu_mib": "200 MiB per GPU"},
     {"gpus": 2, "memory_per_gpu_mib": [200, 200]}),
    (("gpus", "step_time_ms", "memory_per_gpu_mib"), {"gpus": 5, "memory_per_gpu_mib": "~80 each"},
     {"gpus": 5, "memory_per_gpu_mib": [80] * 5}),
    (("gpus", "step_time_ms", "memory_per_gpu_mib"), {"gpus": 2, "memory_per_gpu_mib": "80 MiB each"},
     {"gpus": 2, "memory_per_gpu_mib": [80, 80]}),
    (("gpus", "step_time_ms", "memory_per_gpu_mib"), {"gpus": "2 GPUs", "memory_per_gpu_mib": "about 0.2 GB on each GPU"},
     {"gpus": 2, "memory_per_gpu_mib": [204.8, 204.8]}),
])
def test_approximate_values_and_one_value_per_gpu_are_read_as_meant(columns, cells, read):
    assert coerce([cells], Question("t", "table", "", columns)) == [read]


@pytest.mark.parametrize("columns, cells", [
    # A range wider than 10% each side of its middle (a narrow one is its middle:
    # test_answer_forms.py), a bound, another value offered, a sum: left as written, for the
    # check to say so.
    (("depth", "step_time_ms"), {"depth": 6, "step_time_ms": "about 40-60 ms"}),
    (("depth", "step_time_ms"), {"depth": 6, "step_time_ms": "at least 56 ms"}),
    (("depth", "step_time_ms"), {"depth": 6, "step_time_ms": "about 56 or 57 ms"}),
    (("gpus", "step_time_ms", "memory_per_gpu_mib"), {"gpus": 2, "memory_per_gpu_mib": "401.1 total"}),
    (("gpus", "step_time_ms", "memory_per_gpu_mib"), {"gpus": 2, "memory_per_gpu_mib": "200 MiB per GPU (or 400)"}),
    (("gpus", "split"), {"gpus": 5, "split": "4 x 13 + 12"}),
])
def test_approximations_that_could_mean_another_value_stay_as_written(columns, cells):
    [row] = coerce([cells], Question("t", "table", "", columns))
    column = columns[-1]
    assert row[column] == cells[column], row


def test_one_value_each_without_the_rows_gpu_count_is_not_a_list():
    question = Question("t", "table", "", ("gpus", "step_time_ms", "memory_per_gpu_mib"))
    assert coerce([{"memory_per_gpu_mib": "80 MiB per GPU"}], question) == [
        {"memory_per_gpu_mib": "80 MiB per GPU"}]


@pytest.mark.parametrize("raw, kind", [
    ("?", "int"), ("TODO", "text"), ("...", "list[int]"), ("-", "gpu"), ("yes/no", "bool"), ("TBD", "str"),
    ("…", "list[list[int]]"), ("?", "table"), ("todo", "int"), ("??", "int"), ("—", "text"),
])
def test_a_placeholder_left_in_the_sheet_is_not_answered(raw, kind):
    assert coerce(raw, Question("q", kind, "", ("gpus", "split"))) is None


def test_a_placeholder_left_in_a_tables_cell_is_no_value():
    """A TA's partial sheet: '?' in the split table was 'you reported ?' and flagged as a
    disagreement; '...' in the timing table 'not a number'."""
    assert coerce([{"gpus": 2, "split": "32/32"}, {"gpus": 3, "split": "?"}, {"gpus": 5, "split": "TODO"}],
                  template_questions("practical5")["dp.split_per_gpu"]) == [
        {"gpus": 2, "split": [32, 32]}, {"gpus": 3}, {"gpus": 5}]
    assert coerce([{"method": "dp", "gpus": 2, "step_time_s": "...", "total_time_s": "…"}],
                  template_questions("practical5")["timing.table"]) == [{"method": "dp", "gpus": 2}]
    # "-" where the utilization is not available (virtual GPUs have no nvidia-smi) stays its answer.
    assert coerce([{"gpu": 0, "utilization_percent": "-", "memory_mib": 12}],
                  template_questions("practical5")["usage.table"]) == [
        {"gpu": 0, "utilization_percent": "-", "memory_mib": 12}]


@pytest.mark.parametrize("raw, kind", [("0", "int"), ("-1", "int"), ("no", "bool"), ("x", "text"), ("n/a", "text")])
def test_a_short_answer_that_is_no_placeholder_is_kept(raw, kind):
    question = Question("q", kind, "")
    try:
        value = coerce(raw, question)
    except ValueError:
        return   # refused as before, never taken for "not answered"
    assert value is not None


def test_table_cells_it_cannot_read_are_listed_for_a_person(tmp_path):
    """instructor.md lists what the grader could not read: a cell too ("about 5-10 ms", a range
    too wide to be one measurement), not only whole answers."""
    write_sheet(tmp_path, "practical5", {
        "timing.table": {"rows": [{"method": "single", "gpus": 1, "step_time_s": "about 5-10 ms",
                                   "total_time_s": 0.081},
                                  {"method": "dp", "gpus": 2, "step_time_s": 0.02, "total_time_s": 0.2}]},
        "dp.split_per_gpu": {"rows": [{"gpus": 5, "split": "4 x 13 + 12"}, {"gpus": 3, "split": "?"}]},
        "usage.table": {"rows": [{"gpu": 0, "utilization_percent": "n/a", "memory_mib": 12}]},
        "timing.faster": {"value": "It is what it is"}})
    answers = collect_answers(tmp_path, "practical5", "sheet")
    assert answers.unread == ["timing.faster"]
    assert answers.unread_cells == [
        {"id": "timing.table", "row": "single", "column": "step_time_s", "text": "about 5-10 ms"},
        {"id": "dp.split_per_gpu", "row": "5", "column": "split", "text": "4 x 13 + 12"}]


def test_an_answer_it_cannot_read_says_so_to_the_student(tmp_path):
    """"no answer found (... got '32x1000 twice')" said there was none while quoting it."""
    write_sheet(tmp_path, "practical4", {"part2.chunk_shapes": {"value": "32x1000 twice"},
                                         "part2.outputs_equal": {"value": "No / maybe"},
                                         "part1.output_shape": {"value": "64 x 1000"}})
    answers = collect_answers(tmp_path, "practical4", "sheet")
    assert answers.unread_why == {
        "part2.chunk_shapes": "your answer '32x1000 twice' could not be read as a list of lists such as "
                              "[[32, 16], [32, 16]]",
        "part2.outputs_equal": "your answer 'No / maybe' could not be read as one answer, yes or no: it "
                               "gives both or takes its answer back ('maybe', 'it depends', 'or ...'); "
                               "choose one and explain after it"}


def test_every_check_says_why_an_answer_it_cannot_read_was_not_read(tmp_path):
    """HW3's checks word a missing answer through support.not_found: an answer that is there
    but not read is quoted with why, never called 'no answer found'."""
    from grader.checks.support import not_found
    write_sheet(tmp_path, "practical4", {"part2.chunk_shapes": {"value": "32x1000 twice"}})
    answers = collect_answers(tmp_path, "practical4", "sheet")
    said = not_found(answers, "part2.chunk_shapes")
    assert said.startswith("your answer '32x1000 twice' could not be read as"), said
    assert not_found(answers, "part1.output_shape").startswith("no answer found")
