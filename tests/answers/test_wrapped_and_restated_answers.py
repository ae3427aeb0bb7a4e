"""HW3 report answers as students' PDFs have them (a TA's audit, audit 26):

- An answer after one of the template's labels that wraps onto the next line (Chromium's print
  of "Layers per GPU (DEPTH=6, 2 GPUs): GPU 0 gets 3 layers, GPU 1 gets" / "3 layers") is read
  with the rest of its paragraph, as an answer after the handout's own question is: it had been
  cut at the wrap, read as no list, and its point lost. The next label's line is never part of
  it, and a line that answers whole is not changed by a remark under it.
- The two layers of Task 1 Q2 said twice, each in its own way of counting ("3rd and 4th layer
  (index 2 -> 3)", "layers 2 and 3 (0-based), i.e. the 3rd and 4th") are that pair where the
  sayings agree counted from 0; where they disagree, nobody guesses (unread, for a person).
"""
from __future__ import annotations

import pytest

from bad_pdfs import REPORT_LINES
from grader.answers.hw3_pdf.extract_worker import extract
from grader.answers.hw3_pdf.reader import reading_from_worker_output
from grader.answers.numbers import LayerPair, layer_pair_in, layer_pair_said
from grader.answers.sheet import coerce, template_questions
from tiny_pdf import write_text_pdf

LAYERS = "Layers per GPU (DEPTH=6, 2 GPUs): 3, 3"
TRANSFER = "Transfer between layers: 2 and 3"
TRANSFERS_5 = "Number of transfers with 5 GPUs: 4"


def _report(tmp_path, replace: dict[str, list[str]]):
    lines = []
    for line in REPORT_LINES:
        lines += replace.get(line, [line])
    path = write_text_pdf(tmp_path / "report.pdf", [lines])
    return reading_from_worker_output(extract(str(path), 50))


@pytest.mark.parametrize("label, wrapped, field, value", [
    # The audit's hw3_dict_mixed: nothing read on the label's line alone.
    (LAYERS, ["Layers per GPU (DEPTH=6, 2 GPUs): GPU 0 gets 3 layers, GPU 1 gets", "3 layers"],
     "task1.layers_per_gpu", [3, 3]),
    # The label's line alone gives only the start of the answer ([3]).
    (LAYERS, ["Layers per GPU (DEPTH=6, 2 GPUs): 3 on GPU 0 and", "3 on GPU 1"], "task1.layers_per_gpu", [3, 3]),
    (TRANSFER, ["Transfer between layers: the data moves after layer 2, i.e. between layer 2 and", "layer 3"],
     "task1.transfer_between", [2, 3]),
    (TRANSFERS_5, ["Number of transfers with 5 GPUs: 4 (one per boundary between", "two neighbouring GPUs)"],
     "task5.transfers_5gpus", 4),
])
def test_an_answer_wrapped_onto_the_next_line_is_read_whole(tmp_path, label, wrapped, field, value):
    reading = _report(tmp_path, {label: wrapped})
    assert reading.answers.get(field) == value, reading.problems
    assert field not in reading.unread and field not in reading.missing


def test_where_a_wrapped_answer_was_read_shows_both_lines(tmp_path):
    reading = _report(tmp_path, {LAYERS: ["Layers per GPU (DEPTH=6, 2 GPUs): GPU 0 gets 3 layers, GPU 1 gets",
                                          "3 layers"]})
    assert reading.where["task1.layers_per_gpu"]["text"] == \
        "Layers per GPU (DEPTH=6, 2 GPUs): GPU 0 gets 3 layers, GPU 1 gets / 3 layers"


def test_the_next_labels_answer_is_never_taken_for_a_wrapped_one(tmp_path):
    reading = _report(tmp_path, {LAYERS: ["Layers per GPU (DEPTH=6, 2 GPUs): half of them on each GPU, like"]})
    assert "task1.layers_per_gpu" not in reading.answers, reading.answers.get("task1.layers_per_gpu")
    assert "task1.layers_per_gpu" in reading.unread
    assert reading.answers["task1.transfer_between"] == [2, 3]


def test_an_answer_wrapped_and_still_not_read_is_quoted_whole_for_a_person(tmp_path):
    reading = _report(tmp_path, {LAYERS: ["Layers per GPU (DEPTH=6, 2 GPUs): GPU 0 gets some layers, GPU 1",
                                          "gets the others"]})
    assert "task1.layers_per_gpu" not in reading.answers
    assert "'GPU 0 gets some layers, GPU 1 gets the others'" in reading.unread["task1.layers_per_gpu"]


@pytest.mark.parametrize("lines, value", [
    (["Layers per GPU (DEPTH=6, 2 GPUs): 3, 3", "as the script printed them for layers 0 to 5."], [3, 3]),
    (["Layers per GPU (DEPTH=6, 2 GPUs): 3, 3", "and 6 in total"], [3, 3]),
])
def test_a_whole_answer_on_its_line_is_not_changed_by_the_line_under_it(tmp_path, lines, value):
    reading = _report(tmp_path, {LAYERS: lines})
    assert reading.answers["task1.layers_per_gpu"] == value, reading.problems


def test_a_placeholder_left_on_the_labels_line_takes_nothing_from_under_it(tmp_path):
    reading = _report(tmp_path, {LAYERS: ["Layers per GPU (DEPTH=6, 2 GPUs): ..., ...", "3 and 3 were printed"]})
    assert "task1.layers_per_gpu" not in reading.answers and "task1.layers_per_gpu" not in reading.unread


@pytest.mark.parametrize("text, said", [
    # The audit's hw3_pdf_wordy, and its second form.
    ("3rd and 4th layer (index 2 → 3)", LayerPair((2, 3), 0)),
    ("layers 2 and 3 (0-based), i.e. the 3rd and 4th", LayerPair((2, 3), 0)),
    ("the 3rd and 4th (1-based); that is indices 2 and 3", LayerPair((2, 3), 0)),
    ("layers[2] and layers[3] = the third and fourth layer", LayerPair((2, 3), 0)),
    # A pair that says no way of counting agrees as 0-based indices, or as the same numbers
    # as the pair counted from 1 beside it.
    ("3rd and 4th (2 and 3)", LayerPair((2, 3), 0)),
    ("the 3rd and 4th (3 and 4)", LayerPair((3, 4), 1)),
    # The GPUs named beside it are no second saying.
    ("3rd and 4th layer (GPU 0 → GPU 1)", LayerPair((3, 4), 1)),
])
def test_a_pair_said_twice_alike_is_that_pair(text, said):
    assert layer_pair_said(text) == said
    assert layer_pair_in(text) == [n - 1 for n in said.said] if said.counted_from == 1 else list(said.said)


@pytest.mark.parametrize("text", [
    "3rd and 4th layer (index 3 → 4)",                 # [2, 3] and [3, 4]
    "layers 3 and 4 (0-based), i.e. the 3rd and 4th",
    "2 and 3 (or 3 and 4)",                           # an alternative, as before
    "before layer 3 (after layer 1)",
    "3rd and 4th layer (index 2 → 3",                 # a bracket left open
    "3rd and 4th (layer 2)",                          # one layer is no pair
])
def test_a_pair_said_twice_differently_is_not_guessed(text):
    assert layer_pair_in(text) is None, layer_pair_said(text)


def test_a_pair_said_twice_alike_in_the_report_earns_its_reading(tmp_path):
    reading = _report(tmp_path, {TRANSFER: ["Transfer between layers: 3rd and 4th layer (index 2 -> 3)"]})
    assert reading.answers["task1.transfer_between"] == [2, 3], reading.problems
    assert "task1.transfer_between" not in reading.unread and reading.notes == []
    (tmp_path / "b").mkdir()
    other = _report(tmp_path / "b", {TRANSFER: ["Transfer between layers: 3rd and 4th layer (index 3 -> 4)"]})
    assert "task1.transfer_between" not in other.answers
    assert "task1.transfer_between" in other.unread


def test_the_sheet_reads_a_pair_said_twice_alike_too():
    question = template_questions("hw3")["task1.transfer_between"]
    assert coerce("3rd and 4th layer (index 2 → 3)", question, []) == [2, 3]


@pytest.mark.slow  # prints a page in Chromium: seconds
def test_the_audits_report_printed_by_a_browser(tmp_path):
    """The two answers as the audit's students' PDFs had them: a line wrapped by the browser's
    print in a narrow page, and the pair said as ordinals and as indices with an arrow."""
    import html as html_lib
    from report_builders import ToolMissing, chromium_pdf
    lines = {LAYERS: "Layers per GPU (DEPTH=6, 2 GPUs): GPU 0 gets 3 layers, GPU 1 gets 3 layers",
             TRANSFER: "Transfer between layers: 3rd and 4th layer (index 2 → 3)"}
    body = "".join(f"<p>{html_lib.escape(lines.get(line, line))}</p>" for line in REPORT_LINES if "\t" not in line)
    page = tmp_path / "report.html"
    page.write_text(f"<!doctype html><meta charset='utf-8'><style>body{{width:11cm;font:12pt serif}}"
                    f"p{{margin:0 0 .6em}}</style><body>{body}</body>", encoding="utf-8")
    try:
        pdf = chromium_pdf(page, tmp_path / "report.pdf")
    except ToolMissing as missing:
        pytest.skip(str(missing))
    reading = reading_from_worker_output(extract(str(pdf), 50))
    assert " / " in reading.where["task1.layers_per_gpu"]["text"], "the line did not wrap: narrow the page"
    assert reading.answers["task1.layers_per_gpu"] == [3, 3], reading.problems
    assert reading.answers["task1.transfer_between"] == [2, 3], reading.problems
