"""The layout rules of the HW3 PDF reader, each on a page built by hand as the PDF worker
would describe it (words with their boxes), so a rule is pinned down apart from the tools
that make real PDFs (tests/answers/fixtures/reports holds those):

- two columns of text found by the whitespace river between them, however a title, a
  footer or a one-column section crosses it, and never in a table's gap between columns;
- an unruled table's cell lines going to the row they sit beside (vertically centred
  cells), and a header cell split by wide word spacing joined again;
- Question | Answer rows put back together by the river between their columns when
  justified words are spaced wider than it, and by the question's own words where a
  question and its answer both wrap (no space between rows tells them apart);
- running headers and footers only between the page's edge and the body, coming back at
  the same edge and height; a number alone at a page's foot is the page number only when
  it is the page's number.
"""

from __future__ import annotations

from grader.answers.hw3_pdf.layout import build_layout
from grader.answers.hw3_pdf.reader import reading_from_worker_output

WIDTH, HEIGHT = 595.0, 842.0
PROSE = ("the step time grows with the depth because every layer adds work and the devices "
         "take turns so twice the layers means twice the sequential work").split()


def words(text: str, x: float, top: float, size: float = 10.0, space: float | None = None, bold: int = 0) -> list:
    """One line's words as the worker gives them: [text, x0, x1, top, bottom, size, bold];
    a character is half an em wide, words `space` apart (an ordinary space by default)."""
    out, space = [], 0.28 * size if space is None else space
    for word in text.split():
        width = 0.5 * size * len(word)
        out.append([word, round(x, 2), round(x + width, 2), top, top + size, size, bold])
        x += width + space
    return out


def page(*lines: list) -> dict:
    all_words = [w for line in lines for w in line]
    return {"width": WIDTH, "height": HEIGHT, "chars": sum(len(w[0]) for w in all_words), "ocr_chars": 0,
            "words": all_words, "images": [], "ruled": [], "fonts": []}


def worker_output(*pages: dict) -> dict:
    return {"pages_total": len(pages), "pages_read": len(pages), "producer": "hand", "creator": None,
            "error": None, "pages": list(pages)}


def column_text(start: int, width: float = 220, size: float = 10) -> str:
    """Prose filling a column `width` wide, as a word processor sets it: ragged on the right."""
    out, used = [], 0.0
    for i in range(start, start + 40):
        word = PROSE[i % len(PROSE)]
        if used + 0.5 * size * len(word) > width:
            break
        out.append(word)
        used += 0.5 * size * len(word) + 0.28 * size
    return " ".join(out)


# ---------------------------------------------------------------- two columns


def two_column_page(*, crossing: list) -> dict:
    """Twelve lines in each column (left 60-280, right 310-530), plus `crossing` lines;
    every fourth line ends a paragraph, short."""
    left = [words(column_text(i, 220 if i % 4 != 3 else 90), 60, 120 + 14 * i) for i in range(12)]
    right = [words(column_text(i + 5, 220 if i % 4 != 3 else 70), 310, 124 + 14 * i) for i in range(12)]
    return page(*crossing, *left, *right)


def test_two_columns_are_read_left_column_first_though_a_title_and_the_page_number_cross_the_gutter():
    title = words("HW3 report naive model parallelism over several devices", 60, 70, size=20)
    footer = words("1", 293, 800)
    layout = build_layout(worker_output(two_column_page(crossing=[title, footer])))
    body = [line for line in layout.lines if not line.furniture]
    assert body[0].text.startswith("hw3 report"), "the title spans the page and comes first"
    regions = [line.region for line in body[1:]]
    assert regions == sorted(regions) and set(regions) == {1, 2}, \
        f"expected the left column's lines, then the right column's; read regions {regions}"
    assert all(len(line.cells) == 1 for line in body), "a line never holds words of both columns"


def test_a_page_that_goes_on_in_the_previous_pages_columns_keeps_them():
    first = two_column_page(crossing=[])
    # Page 2: the end of a short table in the left column, prose in the right one.
    rows = [words(f"{6 * 2 ** i} {60 + i}.5", 70, 60 + 14 * i) for i in range(3)]
    right = [words(column_text(i, 220), 310, 67 + 14 * i) for i in range(5)]
    layout = build_layout(worker_output(first, page(*rows, *right)))
    second = [line for line in layout.lines if line.page == 2]
    assert {line.region for line in second} == {1, 2}, "page 2 goes on in page 1's two columns"
    assert [line.region for line in second] == sorted(line.region for line in second)


def test_a_short_last_page_whose_columns_share_baselines_keeps_the_columns():
    """CSS columns balanced over a short last page: three lines on each side, row by row."""
    first = two_column_page(crossing=[])
    left = [words(column_text(i, 220), 60, 60 + 14 * i) for i in range(3)]
    right = [words(column_text(i + 9, 220), 310, 60 + 14 * i) for i in range(3)]
    layout = build_layout(worker_output(first, page(*left, *right)))
    second = [line for line in layout.lines if line.page == 2]
    assert [line.region for line in second] == [1, 1, 1, 2, 2, 2], \
        "the left column's three lines, then the right column's"


def test_a_table_with_a_wide_gap_between_its_columns_is_not_two_columns():
    prose = [words(column_text(i, 470), 60, 70 + 14 * i) for i in range(4)]
    table = [words("Run DEPTH", 60, 140)] + [words(f"{i} {6 * 2 ** i}", 60, 154 + 14 * i) for i in range(10)]
    table = [line + words(f"{60 + i}.25 ms", 320, line[0][3]) for i, line in enumerate(table)]
    layout = build_layout(worker_output(page(*prose, *table)))
    assert {line.region for line in layout.lines} == {0}, "one column: the table's rows stay whole"


def test_a_river_narrower_than_a_gutter_through_an_ocr_page_is_not_two_columns():
    """An OCR'd scan measures in pixels (text 21 units high, the page 1334 wide): word gaps
    of ten units lined up down a one-column page are a river, not the gap between two
    columns; the same page with its halves two ems apart is two columns."""
    def ocr_page(gap: float) -> dict:
        lines = []
        for i in range(12):
            left = words(column_text(i, 470, size=21), 160, 160 + 34 * i, size=21)
            shift = 639 - left[-1][2]   # every left half ends at 639, as a justified line would
            left = [[w[0], round(w[1] + shift, 2), round(w[2] + shift, 2), *w[3:]] for w in left]
            right = words(column_text(i + 3, 470, size=21), 639 + gap, 160 + 34 * i, size=21) if i % 4 != 3 else []
            lines.append(left + right)
        return {**page(*lines), "width": 1334.0, "height": 1887.0}
    one = build_layout(worker_output(ocr_page(10)))
    assert {line.region for line in one.lines} == {0} and all(len(line.words) > 8 for line in one.lines[:3]), \
        "a ten-unit river in 21-unit text parts no columns: each line is read whole, left to right"
    two = build_layout(worker_output(ocr_page(42)))
    assert {line.region for line in two.lines} == {1, 2}, "halves two ems apart are two columns"


def test_a_ruled_row_holding_both_body_rows_with_a_wrapped_memory_list_is_read_row_by_row():
    """LaTeX |p{}|p{}|p{}| with \\hline around the header only: pdfplumber gives one ruled
    row for the body, its first cell '2' over '5', the memory list of row 5 on two lines."""
    header = [words("GPUs", 56, 80), words("Step time (ms)", 94, 80), words("Memory per GPU (MiB)", 171, 80)]
    body = [words("2", 78, 100), words("1.720", 138, 100), words("200.4, 200.7", 172, 100),
            words("5", 78, 112), words("1.727", 138, 112), words("80.3, 80.1, 80.1, 80.1,", 172, 112),
            words("80.6", 172, 124)]
    ruled = [{"bbox": [51, 76, 290, 140], "rows": [[[51, 76, 89, 95], [89, 76, 166, 95], [166, 76, 290, 95]],
                                                  [[51, 97, 89, 140], [89, 97, 166, 140], [166, 97, 290, 140]]]}]
    reading = reading_from_worker_output(worker_output({**page(*header, *body), "ruled": ruled}))
    assert reading.answers.get("task4.table") == [
        {"gpus": 2, "step_time_ms": 1.72, "memory_per_gpu_mib": [200.4, 200.7]},
        {"gpus": 5, "step_time_ms": 1.727, "memory_per_gpu_mib": [80.3, 80.1, 80.1, 80.1, 80.6]},
    ], f"expected row 2 and row 5 with its wrapped list; read {reading.answers.get('task4.table')}, {reading.problems}"


# ---------------------------------------------------------------- unruled tables


def task4_header(top: float) -> list:
    return [words("GPUs", 60, top), words("Step time (ms)", 130, top), words("Memory per GPU (MiB)", 250, top)]


def test_a_vertically_centred_memory_cell_belongs_to_the_row_beside_it():
    """HTML centres cells vertically: a wrapped value starts above its row's key line."""
    lines = [words("Task 4: more GPUs", 60, 60, size=14), *task4_header(90)]
    lines += [words("2", 60, 110), words("182.59", 130, 110), words("200.4, 200.7", 250, 110)]
    # Row 5: three memory lines around the key line (the middle one).
    lines += [words("81.2, 80.9,", 250, 128), words("80.9, 80.9,", 250, 140), words("82.5", 250, 152)]
    lines += [words("5", 60, 140), words("191.3", 130, 140)]
    reading = reading_from_worker_output(worker_output(page(*lines)))
    assert reading.answers.get("task4.table") == [
        {"gpus": 2, "step_time_ms": 182.59, "memory_per_gpu_mib": [200.4, 200.7]},
        {"gpus": 5, "step_time_ms": 191.3, "memory_per_gpu_mib": [81.2, 80.9, 80.9, 80.9, 82.5]},
    ], f"expected the memory lines above and below '5' in row 5; read {reading.answers.get('task4.table')}"


def test_a_header_split_by_wide_word_spacing_is_one_column_when_the_values_bridge_it():
    """OCR places words by estimate: 'Memory  per GPU  (MiB)' more than a cell gap apart."""
    header = [words("GPUs", 60, 90), words("Step time (ms)", 130, 90), words("Memory", 250, 90),
              words("per GPU", 290, 90), words("(MiB)", 332, 90)]
    rows = [words("2", 60, 106) + words("182.59", 130, 106) + words("200.4, 200.7", 245, 106, space=6.5),
            words("5", 60, 120) + words("191.3", 130, 120) + words("81.2, 80.9, 80.9, 80.9, 82.5", 245, 120, space=6.5)]
    reading = reading_from_worker_output(worker_output(page(*header, *rows)))
    assert [row["memory_per_gpu_mib"] for row in reading.answers.get("task4.table", [])] == [
        [200.4, 200.7], [81.2, 80.9, 80.9, 80.9, 82.5]], reading.problems


# ---------------------------------------------------------------- Question | Answer


def test_a_label_justified_wider_than_the_gap_between_columns_is_found():
    """LaTeX p{} cells: 'Layers   per   GPU' spread wider than the gap to the answer column."""
    lines = [words("Question", 68, 150), words("Answer", 171, 150),
             words("Layers per GPU", 68, 170, space=10), words("3, 3", 171, 170),
             words("(DEPTH=6,", 68, 184), words("2", 143, 184),  # justified: flush with 'GPU' above
             words("GPUs)", 68, 198),
             words("Number of trans-", 68, 212, space=4), words("1", 171, 212),
             words("fers with 2 GPUs", 68, 226, space=3)]
    reading = reading_from_worker_output(worker_output(page(*lines)))
    assert reading.answers.get("task1.layers_per_gpu") == [3, 3], reading.problems
    assert reading.answers.get("task5.transfers_2gpus") == 1, "the hyphenated label is joined again"


def test_a_header_justified_wider_than_the_gaps_between_columns_keeps_its_column_name_whole():
    """LaTeX p{3.4cm}: 'Memory   per   GPU' spread over the cell, '(MiB)' on the next line;
    'memory' alone names the column, so 'per' and 'GPU' must not be columns of their own
    that take the wrapped list's values away."""
    header = [words("GPUs", 57, 72), words("Step time (ms)", 95, 72), words("Memory", 172, 72),
              words("per", 220, 72), words("GPU", 247, 72), words("(MiB)", 172, 84)]
    body = [words("2", 78, 96) + words("1.720", 138, 96) + words("200.4, 200.7", 172, 96),
            words("5", 78, 108) + words("1.727", 138, 108) + words("80.3, 80.1, 80.1, 80.1,", 172, 108, space=9),
            words("80.6", 172, 120)]
    reading = reading_from_worker_output(worker_output(page(*header, *body)))
    assert [row["memory_per_gpu_mib"] for row in reading.answers.get("task4.table", [])] == [
        [200.4, 200.7], [80.3, 80.1, 80.1, 80.1, 80.6]], reading.problems


def test_a_label_hyphenated_at_its_cells_edge_beside_a_wrapped_answer_is_one_row():
    """pdfTeX in p{5.2cm}: 'Does increasing DEPTH      im-' / 'prove speed (yes/no)': the
    only line spread wide leaves a river before 'im-' that no other line fills."""
    lines = [words("Question", 77, 463), words("Answer", 236, 463),
             words("Does increasing DEPTH", 77, 483, space=7.5) + words("im-", 209, 483)
             + words("No, the step time grows", 236, 483),
             words("prove speed (yes/no)", 77, 497) + words("with every layer.", 236, 497)]
    reading = reading_from_worker_output(worker_output(page(*lines)))
    assert reading.answers.get("task2.depth_improves_speed") == {
        "value": "no", "explanation": "the step time grows with every layer."}, reading.problems


def test_a_centred_answer_beside_a_two_line_label_is_one_row():
    lines = [words("Question", 90, 200), words("Answer", 181, 200),
             words("Transfer", 90, 290, size=11), words("2 and 3", 181, 297.5, size=11),
             words("between layers", 90, 305, size=11)]
    reading = reading_from_worker_output(worker_output(page(*lines)))
    assert reading.answers.get("task1.transfer_between") == [2, 3], reading.problems


# ---------------------------------------------------------------- headers and footers


def test_a_table_line_near_the_top_of_the_page_is_not_a_page_number():
    """'calls with 2 | 20' under a header repeated at the top of a page ends in a number,
    as a page number would; but it is body, not the running header (which stops at it)."""
    lines = [words("HW3 report", 250, 16, size=8),
             words("Question", 68, 31), words("Answer", 157, 31),
             words("Number of .to()", 50, 45), words("calls with 2", 50, 56), words("20", 147, 56),
             words("GPUs", 50, 67)]
    layout = build_layout(worker_output(page(*lines)))
    furniture = {line.text: line.furniture for line in layout.lines}
    assert furniture["hw3 report"] == "header/footer"
    assert furniture["calls with 2 20"] == "", f"read as {furniture['calls with 2 20']!r}"


def test_a_number_alone_at_a_pages_foot_is_an_answer_unless_it_is_the_pages_number():
    """A Q|A row cut by the page break leaves its answer ("20") at the foot of page 1, its
    label under the header repeated on page 2; a "1" there would be the page number."""
    prose = [words(column_text(i, 400), 50, 600 + 14 * i) for i in range(5)]
    first = page(*prose, words("Task 5: counting transfers", 50, 700, size=14),
                 words("Question", 50, 776), words("Answer", 160, 776), words("20", 160, 790))
    second = page(words("Question", 50, 60), words("Answer", 160, 60),
                  words("Number of .to()", 50, 74), words("calls with 2 GPUs", 50, 87),
                  words("Number of", 50, 102), words("transfers with 2", 50, 115), words("1", 160, 115),
                  words("GPUs", 50, 128), words("2", 290, 800))
    layout = build_layout(worker_output(first, second))
    assert [(l.page, l.furniture) for l in layout.lines if l.text == "20"] == [(1, "")]
    assert [(l.page, l.furniture) for l in layout.lines if l.text == "2"] == [(2, "header/footer")]
    reading = reading_from_worker_output(worker_output(first, second))
    assert reading.answers.get("task5.to_calls_2gpus") == 20, reading.problems
    assert reading.answers.get("task5.transfers_2gpus") == 1, reading.problems


def test_lines_alike_at_the_foot_of_one_page_and_the_top_of_the_next_are_no_running_header():
    """'Number of transfers with 2 GPUs: 1' at page 1's foot and '... 5 GPUs: 4' at page 2's
    top are alike with their digits masked; a running header comes back at the same edge."""
    first = page(words("Number of .to() calls with 2 GPUs: 20", 50, 700),
                 words("Number of transfers with 2 GPUs: 1", 50, 790))
    second = page(words("HW3 report", 250, 16, size=8),
                  words("Number of transfers with 5 GPUs: 4", 50, 40),
                  words("Task 5 explanation", 50, 80))
    reading = reading_from_worker_output(worker_output(first, second))
    assert reading.answers.get("task5.transfers_2gpus") == 1
    assert reading.answers.get("task5.transfers_5gpus") == 4, reading.problems


def test_a_question_and_its_answer_both_wrapped_in_an_unruled_row_are_one_row():
    """LaTeX p{} columns without rules: no more space between rows than between a cell's
    lines, both cells filled on every line; only the question's words say where a row ends."""
    rows = [("Does increasing", "No. Each layer"), ("DEPTH improve", "adds the same"),
            ("speed (yes/no)", "work, so the time grows."),
            ("All GPUs utilized", "Yes, all five"), ("with 5 GPUs", "hold layers."), ("(yes/no)", "")]
    lines = [words("Question", 60, 186), words("Answer", 180, 186)]
    for i, (question, answer) in enumerate(rows):
        lines += [words(question, 60, 200 + 12 * i), words(answer, 180, 200 + 12 * i)]
    reading = reading_from_worker_output(worker_output(page(*lines)))
    assert reading.answers.get("task2.depth_improves_speed") == {
        "value": "no", "explanation": "Each layer adds the same work, so the time grows."}, reading.problems
    assert reading.answers.get("task4.all_gpus_utilised") == {"value": "yes", "explanation": "all five hold layers."}


def test_a_yes_no_centred_beside_its_wrapped_question_goes_with_it_not_the_row_above():
    """LaTeX m{} columns: each answer centred beside the middle line of its three-line
    question; the next question's first line sits right under the answer above."""
    lines = [words("Question", 60, 186), words("Answer", 180, 186),
             words("All GPUs utilized", 60, 200), words("with 5 GPUs", 60, 212), words("Yes", 180, 212),
             words("(yes/no)", 60, 224), words("Faster with 5", 60, 236), words("GPUs than with", 60, 248),
             words("no", 180, 248), words("2 (yes/no)", 60, 260)]
    reading = reading_from_worker_output(worker_output(page(*lines)))
    assert reading.answers.get("task4.all_gpus_utilised") == {"value": "yes", "explanation": ""}, reading.problems
    assert reading.answers.get("task4.more_gpus_faster") == {"value": "no", "explanation": ""}, reading.problems
