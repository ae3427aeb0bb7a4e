"""A report laid out as a borderless Question | Answer table over the page's width (Word,
LibreOffice or Google Docs with the borders off): the gap between its columns runs down the
page like a gutter, but the rows on its two sides are the template's labels beside their
answers, row by row, so the page is one column and each row is read whole (a TA's audit 30,
D1: read as two text columns, every label came first and every answer after, 6 points
published as failed and Task 4's explanation shown as Task 5's).

Where a page is still read as two columns and a label stands with nothing after it, the
answer may stand beside it in a table the reader took for a column: it is held for a
person, never scored 0 as not answered.

Pages built by hand as the PDF worker describes them (test_layout_rules' helpers); the
same layouts made by LibreOffice are fixtures (lo_docx_borderless_qa_*).
"""

from __future__ import annotations

from test_layout_rules import column_text, page, words, worker_output

from grader.answers.hw3_pdf.layout import build_layout
from grader.answers.hw3_pdf.reader import reading_from_worker_output

LEFT, RIGHT = 58, 308     # the table's columns: 45 % and 55 % of the text width
EXPLANATION_4 = ["Each GPU holds 4 layers and uses memory,", "but at any time only one of them computes",
                 "while the rest wait for the activation, so the", "step takes the same time (1.727 vs 1.720",
                 "ms). More GPUs only reduce memory per", "GPU (200 to 80 MiB)."]
EXPLANATION_5 = ["The number of real transfers is N - 1 for N GPUs", "(one at each block boundary), so the",
                 "communication grows linearly with the number of", "GPUs, while the number of .to() calls is always",
                 "DEPTH."]


def explanation_row(task: int, text: list[str], top: float, centred: bool) -> tuple[list, float]:
    """A 'Task N explanation' row: the heading beside the first line of its answer (top-aligned
    cells) or beside its middle (centred ones, Google Docs and HTML's default)."""
    beside = top + 12.8 * (len(text) // 2) if centred else top
    lines = [words(f"Task {task} explanation", LEFT, beside)]
    lines += [words(line, RIGHT, top + 12.8 * i) for i, line in enumerate(text)]
    return lines, top + 12.8 * len(text) + 17


def task4_and_5_page(*, centred: bool = False) -> dict:
    """Page 2 of the audit's report: Task 4's data table, then its Q|A rows and Task 5's."""
    lines = [words("Task 4: run with more GPUs", 57, 60, size=14),
             words("GPUs", 90, 90), words("Step time (ms)", 188, 90), words("Memory per GPU (MiB)", 369, 90),
             words("2", 58, 119) + words("1.720", 157, 119) + words("200.4, 200.7", 314, 119),
             words("5", 58, 149) + words("1.727", 157, 149) + words("80.3, 80.1, 80.1, 80.1, 80.6", 314, 149),
             words("All GPUs utilized with 5 GPUs (yes/no):", LEFT, 179) + words("yes", RIGHT, 179),
             words("Faster with 5 GPUs than with 2 (yes/no):", LEFT, 209) + words("no", RIGHT, 209)]
    rows, top = explanation_row(4, EXPLANATION_4, 239, centred)
    lines += rows + [words("Task 5: data transfer", 57, top + 10, size=14)]
    top += 40
    for label, value in (("Number of .to() calls with 2 GPUs:", "20"), ("Number of transfers with 2 GPUs:", "1"),
                         ("Number of .to() calls with 5 GPUs:", "20"), ("Number of transfers with 5 GPUs:", "4"),
                         ("Transfers grow with the number of GPUs (yes/no):", "yes")):
        lines.append(words(label, LEFT, top) + words(value, RIGHT, top))
        top += 30
    rows, _ = explanation_row(5, EXPLANATION_5, top, centred)
    return page(*lines, *rows)


def test_a_borderless_question_answer_table_over_the_page_is_one_column_read_row_by_row():
    for centred in (False, True):
        layout = build_layout(worker_output(task4_and_5_page(centred=centred)))
        assert {line.region for line in layout.lines} == {0}, \
            f"centred={centred}: the Q|A table's column gap was taken for a gutter between two columns of text"
        reading = reading_from_worker_output(worker_output(task4_and_5_page(centred=centred)))
        assert reading.answers.get("task4.all_gpus_utilised", {}).get("value") == "yes", reading.problems
        assert reading.answers.get("task4.more_gpus_faster", {}).get("value") == "no", reading.problems
        counts = [reading.answers.get(f"task5.{q}") for q in ("to_calls_2gpus", "transfers_2gpus",
                                                               "to_calls_5gpus", "transfers_5gpus")]
        assert counts == [20, 1, 20, 4], (centred, reading.problems)
        assert reading.answers.get("task5.transfers_grow_with_gpus", {}).get("value") == "yes"
        # Each explanation is its own row's, whole: Task 4's never shown as Task 5's.
        assert " ".join(reading.answers.get("task4.explanation", "").split()) == " ".join(EXPLANATION_4), \
            (centred, reading.answers.get("task4.explanation"))
        assert " ".join(reading.answers.get("task5.explanation", "").split()) == " ".join(EXPLANATION_5), \
            (centred, reading.answers.get("task5.explanation"))


def test_two_columns_of_text_with_labels_in_them_stay_two_columns():
    """A LaTeX twocolumn report: labels with their answers on their line in the left column, one
    label alone on its line (its answer under it), prose in the right column at the same
    heights, one of whose lines happens to start with a number. One label alone beside a line
    that starts like an answer is chance, not a Question | Answer table."""
    left = [words(column_text(i, 220), 60, 120 + 14 * i) for i in range(4)]
    left += [words("Number of .to() calls with 2 GPUs: 20", 60, 176), words("Number of transfers with 2 GPUs: 1", 60, 190),
             words("Number of .to() calls with 5 GPUs:", 60, 204), words("20", 60, 218),
             words("Number of transfers with 5 GPUs: 4", 60, 232)]
    left += [words(column_text(i, 220), 60, 246 + 14 * i) for i in range(4)]
    right = [words(column_text(i + 5, 220), 310, 120 + 14 * i) for i in range(13)]
    right[6] = words("4 GPUs hold five layers each and the", 310, 204)
    layout = build_layout(worker_output(page(*left, *right)))
    assert {line.region for line in layout.lines} == {1, 2}, "two columns of text"
    reading = reading_from_worker_output(worker_output(page(*left, *right)))
    assert [reading.answers.get(f"task5.{q}") for q in ("to_calls_2gpus", "transfers_2gpus", "to_calls_5gpus",
                                                         "transfers_5gpus")] == [20, 1, 20, 4], reading.problems


def test_a_label_with_nothing_after_it_on_a_page_read_as_two_columns_waits_for_a_person():
    """One label alone beside a line that starts like its answer is too little to tell a
    Question | Answer row from two columns of text: the page is read as two columns, and the
    label stands with nothing after it. Its answer may be the one beside it: held for a
    person, the student told how the page was read, never 'no number after it' scored 0."""
    left = [words(column_text(i, 220), 60, 120 + 14 * i) for i in range(12)]
    left[5] = words("Number of transfers with 5 GPUs:", 60, 190)
    left[6] = words("Transfers grow with the number of GPUs: yes", 60, 204)
    right = [words(column_text(i + 5, 220), 310, 120 + 14 * i) for i in range(12)]
    right[5] = words("4 transfers, one at each block boundary", 310, 190)
    layout = build_layout(worker_output(page(*left, *right)))
    assert {line.region for line in layout.lines} == {1, 2}, "two columns of text"
    reading = reading_from_worker_output(worker_output(page(*left, *right)))
    assert "task5.transfers_5gpus" not in reading.answers
    assert "task5.transfers_5gpus" in reading.unread, (reading.unread, reading.problems)
    problem = reading.unread["task5.transfers_5gpus"]
    assert "two columns" in problem and "Number of transfers with 5 GPUs" in problem, problem


def test_a_label_left_blank_in_one_column_of_text_is_not_answered():
    """On a page of one column, nothing after a label (or the template's '...') is no answer:
    nothing stands beside it that the reader could have missed."""
    lines = [words(column_text(i, 470), 60, 120 + 14 * i) for i in range(4)]
    lines += [words("Number of transfers with 5 GPUs:", 60, 190), words("Number of transfers with 2 GPUs: ...", 60, 204)]
    reading = reading_from_worker_output(worker_output(page(*lines)))
    assert not reading.unread, reading.unread
    assert {"task5.transfers_5gpus", "task5.transfers_2gpus"} <= set(reading.missing)
