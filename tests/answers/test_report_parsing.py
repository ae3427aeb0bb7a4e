"""The rules for numbers and for finding answers, on strings and tiny PDFs,
with no external tool: these run everywhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from bad_pdfs import REPORT_LINES
from grader.answers.hw3_pdf import read_hw3_pdf
from grader.answers.hw3_pdf.contract import expected_fields
from grader.answers.hw3_pdf.extract_worker import extract
from grader.answers.hw3_pdf.labels import numbers_after
from grader.answers.hw3_pdf.reader import reading_from_worker_output
from grader.answers.numbers import parse_decimal, parse_memory_list_mib, parse_time_ms, shows_decimal_mark
from tiny_pdf import write_text_pdf


@pytest.mark.parametrize(
    "text, value",
    [("12.5", 12.5), ("12,5", 12.5), ("1,234.5", 1234.5), ("1.234,5", 1234.5), ("~ 7", 7.0), ("1.2e-2", 0.012)],
)
def test_decimal_marks(text, value):
    assert parse_decimal(text).value == pytest.approx(value)


@pytest.mark.parametrize("token, mark", [
    ("12,5", ","), ("1,234.5", "."), ("1,234,567", "."), ("56,230", None), ("56.230", None),
    # No thousands group follows a 0 or four digits: these show their decimal mark.
    ("0,612", ","), ("0.612", "."), ("1826,500", ","), ("1826.500", "."),
])
def test_which_decimal_mark_one_number_shows(token, mark):
    assert shows_decimal_mark(token) == mark


def test_comma_with_three_digits_is_flagged_as_ambiguous():
    number = parse_decimal("1,024")
    assert number.value == pytest.approx(1.024)
    assert "is ambiguous: 1024 or 1.024" in number.ambiguity


@pytest.mark.parametrize(
    "cell, header_factor, ms",
    [
        ("12.5", None, 12.5),  # no unit anywhere: ms, as the template asks
        ("12,5 ms", None, 12.5),
        ("0.0125", 1000.0, 12.5),  # "(s)" header
        ("0,0125 s", 1.0, 12.5),  # the cell's unit wins over the "(ms)" header
        ("12.5 ± 0.3 ms", None, 12.5),
        ("12500 µs", None, 12.5),
    ],
)
def test_step_time_units(cell, header_factor, ms):
    assert parse_time_ms(cell, header_factor).value == pytest.approx(ms)


@pytest.mark.parametrize(
    "cell, gpus, values",
    [
        ("80, 80", 2, [80, 80]),
        ("80 / 80", 2, [80, 80]),
        ("80 MiB; 80 MiB", 2, [80, 80]),
        ("812,5; 790", 2, [812.5, 790]),
        ("1.5 GiB", 2, [1536]),
        ("[402, 398, 398, 398, 410]", 5, [402, 398, 398, 398, 410]),
    ],
)
def test_memory_lists(cell, gpus, values):
    parsed, notes = parse_memory_list_mib(cell, None, gpus)
    assert parsed == pytest.approx(values)
    assert notes == []


def test_memory_comma_without_space_is_one_value_per_gpu_but_noted():
    parsed, notes = parse_memory_list_mib("80,80", None, 2)
    assert parsed == [80, 80]
    assert "not as a decimal comma" in notes[0]


@pytest.mark.parametrize(
    "text, values",
    [
        ("3, 3", [3, 3]),
        ("[3, 3]", [3, 3]),
        ("2 and 3", [2, 3]),
        ("4, 4, 4,\n4, 4", [4, 4, 4, 4, 4]),  # wrapped after a comma
        ("3, 3 (cuda:0 gets layers 0-2)", [3, 3]),  # a remark adds no numbers
        ("4 4\n6 12.5", [4, 4]),  # the next line is not part of the answer
        ("___", None),
    ],
)
def test_int_lists(text, values):
    assert numbers_after(text, "int_list") == values


@pytest.mark.parametrize("rest, kind, value", [
    # The words a sheet reads, read alike after a report's label (found comparing the two).
    (" 3 on GPU 0, 3 on GPU 1\nTask 2", "int_list", [3, 3]), (" 2 -> 3", "int_list", [2, 3]),
    (" GPU 0: 3, GPU 1: 3", "int_list", [3, 3]), (" between layer 2 and layer 3", "int_list", [2, 3]),
    (" 20.0", "int", [20]), (" one", "int", [1]), (" 4 (N-1)", "int", [4]),
    (" 3, 3 (cuda:0 gets layers 0-2)", "int_list", [3, 3]), (" 3, 3 - GPU 0 gets layers 0-2", "int_list", [3, 3]),
    (" -\n3 / 3\nnext", "int_list", [3, 3]), (" 4, 4,\n4\nTask 3", "int_list", [4, 4, 4]),
    # What could mean another value is not read (a person reads the report): these were read
    # as 1, [0, 2, 3, 5] and [6] by the leading-digits rule.
    (" 1 or 2", "int", None), (" 0-2, 3-5", "int_list", None), (" 6 layers, 3 each", "int_list", None),
    (" 4 (or 1, or 19)", "int", None), (" 3, 3 (or 2, 4)", "int_list", None),
])
def test_a_labels_answer_is_read_by_the_sheets_rules(rest, kind, value):
    assert numbers_after(rest, kind) == value


LAYERS_LABEL, TRANSFER_LABEL = "Layers per GPU (DEPTH=6, 2 GPUs)", "Transfer between layers"


@pytest.mark.parametrize("rest, label, value", [
    # HW3 Task 1 in words (a TA's audit of the sheet): read after a report's label as the sheet
    # reads them, the label standing for the question.
    (" 3 each", LAYERS_LABEL, [3, 3]), (" 3 per GPU\nTask 2", LAYERS_LABEL, [3, 3]),
    (" GPU 0 has 3 layers, GPU 1 has 3 layers", LAYERS_LABEL, [3, 3]), (" 2 each", LAYERS_LABEL, [2, 2]),
    (" before layer 3 (after layer 2)", TRANSFER_LABEL, [2, 3]),
    (" between layers[2] and layers[3]", TRANSFER_LABEL, [2, 3]), (" before layer 4", TRANSFER_LABEL, [3, 4]),
    (" 2 and 3", TRANSFER_LABEL, [2, 3]),
    # Not guessed: "each" without the label's GPUs, a total beside it, sides that disagree.
    (" 3 each", "", None), (" 6 layers, 3 each", LAYERS_LABEL, None),
    (" before layer 3 (after layer 1)", TRANSFER_LABEL, None),
])
def test_hw3_task1_in_words_after_a_reports_label(rest, label, value):
    assert numbers_after(rest, "int_list", question=label) == value


def test_hw3_task1_in_words_in_a_report(tmp_path):
    lines = [l for l in REPORT_LINES if not l.startswith(("Layers per GPU (DEPTH=6", "Transfer between"))]
    lines[2:2] = ["Layers per GPU (DEPTH=6, 2 GPUs): 3 each", "Transfer between layers: before layer 3 (after layer 2)"]
    result = _report_from_lines(tmp_path, lines)
    assert result.answers["task1.layers_per_gpu"] == [3, 3]
    assert result.answers["task1.transfer_between"] == [2, 3]


def _report_from_lines(tmp_path, lines):
    """Read in this process (the time-limited child is test_pdf_report_bad_inputs' business):
    starting a child per case would make this file slow."""
    path = write_text_pdf(tmp_path / "report.pdf", [lines])
    return reading_from_worker_output(extract(str(path), 50))


def test_labels_wrapped_and_in_other_case_and_spacing(tmp_path):
    lines = [l for l in REPORT_LINES if not l.startswith(("Layers per GPU (DEPTH=6", "Number of transfers with 2"))]
    lines[2:2] = ["LAYERS PER GPU (depth = 6; 2 gpus) -", "3 / 3", "number of transfers with 2 GPU = 1"]
    result = _report_from_lines(tmp_path, lines)
    assert result.answers["task1.layers_per_gpu"] == [3, 3]
    assert result.answers["task5.transfers_2gpus"] == 1
    assert result.status == "ok", result.problems


def test_unanswered_label_and_missing_row_are_listed_not_zero(tmp_path):
    lines = [l.replace(": 6", ": ___") if l.startswith("Number of .to() calls with 5") else l for l in REPORT_LINES]
    lines = [l for l in lines if l != "| 24 | 47.1 |"]
    result = _report_from_lines(tmp_path, lines)
    assert "task5.to_calls_5gpus" not in result.answers
    assert result.missing == ["task5.to_calls_5gpus", "task2.step_time_table[depth=24]"]
    assert "found 'Number of .to() calls with 5 GPUs' but no number after it" in result.problems
    assert [row["depth"] for row in result.answers["task2.step_time_table"]] == [6, 12]
    assert result.status == "partial" and result.needs_manual_review


def test_a_task2_table_at_depths_of_the_students_own_is_complete(tmp_path):
    """The handout's "e.g., from 6 to 12, then 24" is an example: three depths of the student's
    own are the table (the check compares them, as it does from the sheet), not a review."""
    rows = {"| 6 | 12.5 |": "| 8 | 16.1 |", "| 12 | 23.75 |": "| 16 | 31.9 |", "| 24 | 47.1 |": "| 32 | 63.0 |"}
    result = _report_from_lines(tmp_path, [rows.get(l, l) for l in REPORT_LINES])
    assert [row["depth"] for row in result.answers["task2.step_time_table"]] == [8, 16, 32]
    assert result.missing == [] and result.status == "ok" and not result.needs_manual_review, result.problems


def test_task4s_table_needs_its_own_gpu_counts(tmp_path):
    """Task 4 asks for 2 and 5 GPUs: a row for 3 GPUs does not stand for the 5."""
    result = _report_from_lines(tmp_path, [l.replace("5\t18.1", "3\t18.1").replace(" / 398 / 410", "")
                                           for l in REPORT_LINES])
    assert result.missing == ["task4.table[gpus=5]"] and result.needs_manual_review


def test_labels_joined_into_one_paragraph_are_each_read(tmp_path):
    """REPORT_TEMPLATE.md made into a PDF through Markdown (pandoc, VS Code, Typora) joins
    consecutive label lines into one paragraph: each answer ends where the next label starts
    (a student's 1.5 points were 'no number after it' with the number there)."""
    joined = {"Layers per GPU (DEPTH=6, 2 GPUs): 3, 3": "Layers per GPU (DEPTH=6, 2 GPUs): 3, 3 Transfer between layers: 2 and 3",
              "Transfer between layers: 2 and 3": None,
              "All GPUs utilized with 5 GPUs (yes/no): yes": "All GPUs utilized with 5 GPUs (yes/no): yes Faster with 5 "
                                                            "GPUs than with 2 (yes/no): No.",
              "Faster with 5 GPUs than with 2 (yes/no): No.": None,
              "Number of .to() calls with 2 GPUs: 6": "Number of .to() calls with 2 GPUs: 6 Number of transfers with 2 "
                                                      "GPUs: 1 Number",
              "Number of transfers with 2 GPUs: 1": "of .to() calls with 5 GPUs: 6 Number of transfers with 5 GPUs: 4",
              "Number of .to() calls with 5 GPUs: 6": None, "Number of transfers with 5 GPUs: 4": None}
    lines = [joined.get(l, l) for l in REPORT_LINES]
    assert all(l in REPORT_LINES or l in joined.values() for l in lines)
    result = _report_from_lines(tmp_path, [l for l in lines if l is not None])
    assert result.answers["task1.layers_per_gpu"] == [3, 3]
    assert result.answers["task1.transfer_between"] == [2, 3]
    assert result.answers["task4.all_gpus_utilised"] == {"value": "yes", "explanation": ""}
    assert result.answers["task4.more_gpus_faster"]["value"] == "no"
    assert [result.answers[f"task5.{k}"] for k in ("to_calls_2gpus", "transfers_2gpus", "to_calls_5gpus",
                                                   "transfers_5gpus")] == [6, 1, 6, 4]
    assert not any("no number after it" in p for p in result.problems), result.problems


@pytest.mark.parametrize("rest, value", [
    # A remark quoting another label's words, with or without its colon, ends nothing (a
    # review found the first read as no answer at all).
    (" 3, 3 (transfer between layers 2 and 3)", [3, 3]),
    (" 3, 3 (transfer between layers: 2 and 3)", [3, 3]),
    (" 3, 3 Transfer between layers: 2 and 3", [3, 3]),
])
def test_an_answer_ends_at_the_next_label_not_at_its_words(rest, value):
    assert numbers_after(rest.lower(), "int_list") == value


@pytest.mark.parametrize("rest", [
    # A blank answer is never the next label's numbers (an adversary's: 'with 2 GPUs' read as 2).
    "\nNumber of transfers with 2 GPUs: 1", " ... Number of transfers with 2 GPUs: 1", " ___",
])
def test_a_blank_answer_before_another_label_is_no_answer(rest):
    assert numbers_after(rest.lower(), "int") is None


def test_a_blank_label_in_a_report_is_missing_not_the_next_labels_gpus(tmp_path):
    lines = [l.replace(": 6", ":") if l.startswith("Number of .to() calls with 2") else l for l in REPORT_LINES]
    result = _report_from_lines(tmp_path, lines)
    assert "task5.to_calls_2gpus" not in result.answers, result.answers.get("task5.to_calls_2gpus")
    assert "task5.to_calls_2gpus" in result.missing and result.needs_manual_review


def test_absent_table_and_empty_explanation(tmp_path):
    lines = [l for l in REPORT_LINES if not l.startswith(("GPUs\t", "2\t", "5\t"))]
    lines = [l for l in lines if not l.startswith("Twenty layers")]
    result = _report_from_lines(tmp_path, lines)
    assert set(result.missing) == {"task4.table", "task3.explanation"}
    assert "no table with the header 'GPUs | Step time (ms) | Memory per GPU (MiB)' found" in result.problems


def test_a_report_not_from_the_template_says_so(tmp_path):
    result = _report_from_lines(tmp_path, ["My report", "Pipelining is good.", "The end."])
    assert result.status == "partial" and result.needs_manual_review
    assert "none of the report template's labels were found" in result.problems[0]
    assert result.missing == expected_fields()


def test_explanation_lines_that_start_like_headings_do_not_end_it(tmp_path):
    lines = list(REPORT_LINES)
    at = lines.index("Only one GPU computes at a time, so the time grows with depth.") + 1
    lines[at:at] = ["Task 3 will split the layers differently, but here", "DEPTH=24 doubles the step time of DEPTH=12."]
    result = _report_from_lines(tmp_path, lines)
    assert result.answers["task2.explanation"].endswith("doubles the step time of DEPTH=12.")
    assert result.answers["task3.explanation"] == "Twenty layers over five devices is four each."
    assert result.status == "ok", result.problems


def test_the_templates_question_kept_above_an_explanation_is_no_part_of_it(tmp_path):
    """A student's pandoc PDF kept each "Task N explanation" question of REPORT_TEMPLATE.md:
    every explanation began with it (alike for everyone, which a copy detector would see)."""
    lines = list(REPORT_LINES)
    at = lines.index("Task 3 explanation") + 1
    lines[at:at] = ["Explain the logic you used to calculate which GPU receives which", "layer index."]
    result = _report_from_lines(tmp_path, lines)
    assert result.answers["task3.explanation"] == "Twenty layers over five devices is four each.", result.answers
    lines[at + 2] = "..."   # the question and the template's placeholder: not answered
    assert "task3.explanation" in _report_from_lines(tmp_path, lines).missing


@pytest.mark.parametrize("header_repeated", [False, True])
def test_table_running_onto_the_next_page(tmp_path, header_repeated):
    """A browser's print put rows at the page's bottom edge, where "12" reads like a page
    number, and repeated the header on the next page: every row must still be read."""
    start = REPORT_LINES.index("| DEPTH | Step time (ms) |")
    before = REPORT_LINES[:start]
    filler = [f"Notes on the setup, line {i}." for i in range(52 - len(before) - 3)]
    first_page = before + filler + ["DEPTH\tStep time (ms)", "6\t12.5", "12\t23.75"]
    assert len(first_page) == 52  # the last two rows sit in the page's bottom band
    second_page = (["DEPTH\tStep time (ms)"] if header_repeated else []) + ["24\t47.1"] \
        + REPORT_LINES[start + 4:]
    result = read_hw3_pdf(write_text_pdf(tmp_path / "report.pdf", [first_page, second_page]))
    assert result.answers["task2.step_time_table"] == [
        {"depth": 6, "step_time_ms": 12.5}, {"depth": 12, "step_time_ms": 23.75},
        {"depth": 24, "step_time_ms": 47.1}]
    assert "task2.step_time_table[depth=12]" not in result.missing


FASTER = "Faster with 5 GPUs than with 2 (yes/no): No."


def _with(lines_instead_of_faster: list[str]) -> list[str]:
    """The plain report with Task 4's "Faster with 5 GPUs than with 2" line written otherwise."""
    at = REPORT_LINES.index(FASTER)
    return REPORT_LINES[:at] + lines_instead_of_faster + REPORT_LINES[at + 1:]


@pytest.mark.parametrize("lines, value, explanation", [
    (["Faster with 5 GPUs than with 2 (yes/no): No"], "no", ""),
    (["Faster with 5 GPUs than with 2 (yes/no): no."], "no", ""),
    (["Faster with 5 GPUs than with 2 (yes/no): NO, because only one GPU works at a time."],
     "no", "because only one GPU works at a time."),
    (["Faster with 5 GPUs than with 2 (yes/no): Yes - the step time fell a little."], "yes", "the step time fell a little."),
    (["Faster with 5 GPUs than with 2? No (the GPUs take turns)"], "no", "(the GPUs take turns)"),
    (["Faster with 5 GPUs than with 2 (yes or no): **No**"], "no", ""),
    (["Faster with 5 GPUs than with 2 yes/no: no"], "no", ""),
    (["Faster with 5 GPUs than with 2 (yes/no): False, one GPU at a time"], "no", "one GPU at a time"),
    # The explanation wrapped over lines, and the label on its own line with the answer under it.
    (["Faster with 5 GPUs than with 2 (yes/no): No, only one GPU computes", "at any moment while the others wait."],
     "no", "only one GPU computes at any moment while the others wait."),
    (["Faster with 5 GPUs than with 2 (yes/no):", "No, the GPUs take turns."], "no", "the GPUs take turns."),
    # A Question | Answer row (cells apart: tiny_pdf puts each tab's cell 160 pt further right).
    (["Faster with 5 GPUs than with 2 (yes/no)\t\tno, one GPU at a time"], "no", "one GPU at a time"),
])
def test_a_yes_no_answer_as_students_write_it(tmp_path, lines, value, explanation):
    result = _report_from_lines(tmp_path, _with(lines))
    assert result.answers.get("task4.more_gpus_faster") == {"value": value, "explanation": explanation}, (
        f"{lines} should read as {value!r} with the explanation {explanation!r}; "
        f"read {result.answers.get('task4.more_gpus_faster')!r} (grader/answers/hw3_pdf/labels.py)")
    assert result.status == "ok", result.problems
    # The questions around it keep their own answers: the explanation stops at the next label or heading.
    assert result.answers["task4.all_gpus_utilised"] == {"value": "yes", "explanation": ""}
    assert result.answers["task4.explanation"] == "Memory per GPU falls, time barely changes."


def test_an_answer_under_its_label_is_shown_with_the_label(tmp_path):
    result = _report_from_lines(tmp_path, _with(["Faster with 5 GPUs than with 2 (yes/no):", "No, the GPUs take turns."]))
    assert result.where["task4.more_gpus_faster"]["text"] == (
        "Faster with 5 GPUs than with 2 (yes/no): / No, the GPUs take turns.")


@pytest.mark.parametrize("answer, problem", [
    # Not a yes or no: a person reads it; a hedged "not" is never guessed.
    ("Not necessarily", "'Faster with 5 GPUs than with 2 (yes/no)' is answered 'Not necessarily', not with a clear "
                        "yes or no: a person must read it"),
    ("Partly, the memory per GPU fell.", "is answered 'Partly, the memory per GPU fell.', not with a clear yes or no"),
    ("Yes and no: it depends on the model.", "is answered 'Yes and no: it depends on the model.', not with a clear"),
    # Left as the template has it: not answered.
    ("...", "found 'Faster with 5 GPUs than with 2 (yes/no)' but no yes or no after it"),
    ("yes/no", "found 'Faster with 5 GPUs than with 2 (yes/no)' but no yes or no after it"),
    ("", "found 'Faster with 5 GPUs than with 2 (yes/no)' but no yes or no after it"),
])
def test_a_yes_no_answer_that_is_not_one_is_missing_and_said(tmp_path, answer, problem):
    result = _report_from_lines(tmp_path, _with([f"Faster with 5 GPUs than with 2 (yes/no): {answer}"]))
    assert "task4.more_gpus_faster" not in result.answers, result.answers.get("task4.more_gpus_faster")
    assert result.missing == ["task4.more_gpus_faster"]
    assert len(result.problems) == 1 and problem in result.problems[0], result.problems
    assert result.status == "partial" and result.needs_manual_review
    # Nothing around it is taken for its answer: the explanation under the next heading stays there.
    assert result.answers["task4.explanation"] == "Memory per GPU falls, time barely changes."


def test_the_template_left_unanswered_gives_no_yes_no(tmp_path):
    """The template's lines as they are ("(yes/no): ..."): four questions missing, none guessed."""
    template = (Path(__file__).resolve().parents[2] / "student_template" / "hw3" / "REPORT_TEMPLATE.md").read_text()
    labels = [line for line in template.splitlines() if "(yes/no)" in line and line.endswith(": ...")]
    assert len(labels) == 4, labels
    lines = [l for l in REPORT_LINES if "(yes/no)" not in l]
    at = lines.index("Task 5 explanation")
    result = _report_from_lines(tmp_path, lines[:at] + labels + lines[at:])
    yes_no = ["task2.depth_improves_speed", "task4.all_gpus_utilised", "task4.more_gpus_faster",
              "task5.transfers_grow_with_gpus"]
    assert sorted(result.missing) == yes_no
    assert not any(qid in result.answers for qid in yes_no)
    assert all("but no yes or no after it" in p for p in result.problems), result.problems


def test_a_yes_no_in_prose_with_a_question_mark(tmp_path):
    lines = [l for l in REPORT_LINES if not l.startswith("Does increasing DEPTH")]
    at = lines.index("Task 2 explanation")
    lines[at:at] = ["Does increasing DEPTH improve speed? No. Every layer adds work", "that runs after the previous one."]
    result = _report_from_lines(tmp_path, lines)
    assert result.answers["task2.depth_improves_speed"] == {
        "value": "no", "explanation": "Every layer adds work that runs after the previous one."}
    assert result.where["task2.depth_improves_speed"]["page"] == 1
    assert result.status == "ok", result.problems


def test_where_each_answer_was_read_is_kept(tmp_path):
    from grader.answers.hw3_pdf import describe_where
    result = _report_from_lines(tmp_path, REPORT_LINES)
    where = result.where
    assert where["task5.transfers_5gpus"] == {"kind": "line", "page": 1, "pages": [1],
                                              "text": "Number of transfers with 5 GPUs: 4"}
    assert where["task2.step_time_table"]["rows"]["12"] == {"page": 1, "text": "12 | 23.75"}
    assert describe_where(where["task2.step_time_table"]) == "page 1, table 'depth | step time (ms)'"
    assert describe_where(where["task1.explanation"]) == "page 1, under 'Task 1 explanation'"


@pytest.mark.parametrize("cells, span", [
    (["does increasing depth improve speed (yes/no)", "no"], 1),
    (["does increasing depth", "improve speed (yes/no)", "no, it grows"], 2),
    # pdfTeX hyphenates a word at a narrow cell's edge ("im-" / "prove"): one word again
    (["does increasing depth im-", "prove speed (yes/no)", "no, it grows"], 2),
    (["the step time grows", "with depth"], 0),
])
def test_a_question_wrapped_in_its_cell_is_found_whole(cells, span):
    from grader.answers.hw3_pdf.contract import question_span
    assert question_span(cells) == span


@pytest.mark.parametrize("cell, values", [
    # nvidia-smi's "used / total" (a probe's: read as two GPUs, [1012, 81920]).
    ("1012MiB / 81920MiB", [1012]), ("1012 MiB / 81920 MiB", [1012]),
    ("1012MiB / 81920MiB, 980MiB / 81920MiB", [1012, 980]),
    # Two GPUs' own memory stays two values.
    ("80 MiB / 80 MiB", [80, 80]), ("20480 MiB / 20600 MiB", [20480, 20600]),
])
def test_memory_used_of_total_is_one_gpus_memory(cell, values):
    parsed, notes = parse_memory_list_mib(cell, None, 2)
    assert parsed == pytest.approx(values) and notes == []


def test_a_report_tables_nvidia_smi_pairs_are_each_gpus_used_memory(tmp_path):
    lines = [l.replace("812.5, 790", "1012MiB / 81920MiB, 980MiB / 81920MiB") for l in REPORT_LINES]
    result = _report_from_lines(tmp_path, lines)
    assert result.answers["task4.table"][0] == {"gpus": 2, "step_time_ms": 31.2, "memory_per_gpu_mib": [1012, 980]}
    assert result.status == "ok", result.problems


@pytest.mark.parametrize("rest", [
    # The label's own GPU count repeated beside the answer ("with 5 gpus: 4" was read as 5).
    " with 5 gpus: 4", "\nwith 5 gpus: 4", " 5 gpus -> 4 transfers", " 4 transfers between 5 gpus",
    " 4, because with 5 gpus there are 4 boundaries", " 4 = 5 - 1",
])
def test_a_count_beside_the_labels_gpu_count_is_the_count(rest):
    assert numbers_after(rest, "int", gpus=5) == [4]


@pytest.mark.parametrize("rest", [" 4 or 5", " 4 (or 3)", " with 2 gpus: 1", " with 2 gpus: 1, with 5 gpus: 4",
                                  " 5 gpus"])
def test_a_count_beside_gpu_counts_that_could_mean_another_value_is_not_read(rest):
    assert numbers_after(rest, "int", gpus=5) is None


def test_a_reports_transfer_count_under_its_label_with_the_gpu_count_is_read(tmp_path):
    """"With 5 GPUs: 4" under its label was read as 5 transfers: a wrong number, never said."""
    at = REPORT_LINES.index("Number of transfers with 5 GPUs: 4")
    lines = REPORT_LINES[:at] + ["Number of transfers with 5 GPUs:", "With 5 GPUs: 4"] + REPORT_LINES[at + 1:]
    result = _report_from_lines(tmp_path, lines)
    assert result.answers["task5.transfers_5gpus"] == 4
    lines[at:at + 2] = ["Number of transfers with 2 GPUs:", "With 5 GPUs: 4"]   # under another setup's label
    lines = [l for l in lines if l != "Number of transfers with 2 GPUs: 1"]
    result = _report_from_lines(tmp_path, lines)
    assert "task5.transfers_2gpus" not in result.answers, result.answers.get("task5.transfers_2gpus")
