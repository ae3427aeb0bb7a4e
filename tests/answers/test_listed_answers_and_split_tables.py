"""HW3 report answers as a TA's audit found them (audit 27):

- Each label on a line of its own with its answer under it as a list item (Word's Symbol-font
  bullet, which extracts as U+F0B7; "•", "–", "o", LaTeX itemize's "(cid:136)", "1."): the
  marker is no part of the answer. A yes/no, a layer pair and a list read under a label, the
  list's items ("• GPU 0: 3 layers" / "• GPU 1: 3 layers") together. They had been read as no
  answer at all (four yes/no answers published as 0, told "not found") or as unreadable.
- An answer under its label that is there but not clear is found, for a person to read
  (`unread`), never "not answered"; what stands under a label left blank and starts something
  else (a heading, another label) is no answer.
- A LaTeX longtable split over a page, with its "continued on next page" footer and its caption
  repeated ("Table 1 (continued)") over the repeated header, is one table: the footer had ended
  it after its first row (the Task 2 table's point lost, "no row for depth=12").
"""
from __future__ import annotations

import pytest

from bad_pdfs import REPORT_LINES
from grader.answers.hw3_pdf import contract
from grader.answers.hw3_pdf.extract_worker import extract
from grader.answers.hw3_pdf.labels import layer_pair_after, numbers_after, without_list_marker
from grader.answers.hw3_pdf.reader import reading_from_worker_output
from tiny_pdf import write_text_pdf

LAYERS = "Layers per GPU (DEPTH=6, 2 GPUs): 3, 3"
TRANSFER = "Transfer between layers: 2 and 3"
SPEED = "Does increasing DEPTH improve speed (yes/no): No, every layer adds work."
UTILISED = "All GPUs utilized with 5 GPUs (yes/no): yes"
FASTER = "Faster with 5 GPUs than with 2 (yes/no): No."
GROWTH = "Transfers grow with the number of GPUs (yes/no): Yes - one more per added GPU."
TRANSFERS_5 = "Number of transfers with 5 GPUs: 4"
YES_NO = {SPEED: "task2.depth_improves_speed", UTILISED: "task4.all_gpus_utilised",
          FASTER: "task4.more_gpus_faster", GROWTH: "task5.transfers_grow_with_gpus"}

# tiny_pdf writes WinAnsi: byte 0x95 is "•", 0x96 "–". "(cid:136)" is what pdfplumber gives for
# LaTeX itemize's bullet in a font without a Unicode map, written here as that text.
MARKERS = {"bullet": ("\x95", "\x95"), "en dash": ("\x96", "\x96"), "hyphen": ("-", "-"), "star": ("*", "*"),
           "word level 2": ("o", "o"), "latex itemize": ("(cid:136)", "(cid:136)"), "numbered": ("1.", "2."),
           "lettered": ("a)", "b)")}


def _reading(tmp_path, replace: dict[str, list[str]], pages: list[list[str]] | None = None):
    lines = []
    for line in REPORT_LINES:
        lines += replace.get(line, [line])
    path = write_text_pdf(tmp_path / "report.pdf", pages or [lines])
    return reading_from_worker_output(extract(str(path), 50))


def _label(line: str) -> str:
    return line.partition(":")[0] + ":" if "(yes/no)" not in line else line.partition("(yes/no):")[0] + "(yes/no):"


def _under(first: str, second: str) -> dict[str, list[str]]:
    """Each labelled answer of the report as the audit's hw3_word_below has it: the label alone,
    the answer under it as list items."""
    return {
        LAYERS: [_label(LAYERS), f"{first} GPU 0: 3 layers", f"{second} GPU 1: 3 layers"],
        TRANSFER: [_label(TRANSFER), f"{first} 2 and 3"],
        SPEED: [_label(SPEED), f"{first} no"],
        UTILISED: [_label(UTILISED), f"{first} yes"],
        FASTER: [_label(FASTER), f"{first} no"],
        GROWTH: [_label(GROWTH), f"{first} yes"],
        TRANSFERS_5: [_label(TRANSFERS_5), f"{first} 4"],
    }


@pytest.mark.parametrize("first, second", MARKERS.values(), ids=MARKERS.keys())
def test_answers_as_list_items_under_their_labels_are_read(tmp_path, first, second):
    reading = _reading(tmp_path, _under(first, second))
    assert reading.answers.get("task1.layers_per_gpu") == [3, 3], reading.problems
    assert reading.answers.get("task1.transfer_between") == [2, 3], reading.problems
    assert reading.answers.get("task5.transfers_5gpus") == 4, reading.problems
    for field_id, value in {"task2.depth_improves_speed": "no", "task4.all_gpus_utilised": "yes",
                            "task4.more_gpus_faster": "no", "task5.transfers_grow_with_gpus": "yes"}.items():
        assert (reading.answers.get(field_id) or {}).get("value") == value, (field_id, reading.problems)
    assert not reading.missing and not reading.unread, (reading.missing, reading.unread)
    # Where it was read shows the answer as the student reads it, without its marker.
    assert reading.where["task2.depth_improves_speed"]["text"] == "Does increasing DEPTH improve speed (yes/no): / no"


@pytest.mark.parametrize("text, kind, value", [
    ("\uf0b7 no", "yes_no", "no"),            # Word's Symbol-font bullet
    ("\uf0a7 no", "yes_no", "no"),            # Word's square bullet
    ("\u25aa yes", "yes_no", "yes"),          # ▪
    ("\u25e6 yes", "yes_no", "yes"),          # ◦
    ("(cid:136) no", "yes_no", "no"),
    ("1. no", "yes_no", "no"),
    ("(ii) no", "yes_no", "no"),
    (" | \uf0b7 | 2 and 3", "int_list", "2 and 3"),   # the bullet in a cell of its own
    ("1. 4", "int", "4"),
])
def test_a_list_marker_is_no_part_of_the_answer(text, kind, value):
    rest, listed = without_list_marker(text, kind)
    assert listed and rest.strip(" |") == value


@pytest.mark.parametrize("text, kind", [
    ("4. One per boundary between GPUs", "int"),   # the number is the answer
    ("no", "yes_no"),
    ("-3", "int"),
    ("\uf0b7", "yes_no"),                          # a marker alone says nothing
])
def test_what_is_not_a_list_marker_stays(text, kind):
    assert without_list_marker(text, kind) == (text, False)


def test_the_readers_read_past_the_marker():
    question = contract.template_label("task1.layers_per_gpu")
    assert numbers_after(":\n \uf0b7 gpu 0: 3 layers\n \uf0b7 gpu 1: 3 layers", "int_list", 2, question) == [3, 3]
    assert numbers_after(":\n\uf0b7 3, 3\n\uf0b7 as the script printed them", "int_list", 2, question) == [3, 3]
    assert layer_pair_after(":\n\uf0b7 2 and 3").said == (2, 3)
    assert numbers_after(":\n4. Between neighbouring GPUs", "int") == [4]


@pytest.mark.parametrize("rest", [
    ":\n\uf0b7 gpu 0: layers 0-2\n\uf0b7 gpu 1: layers 3-5",   # never the first item's range alone
    ": gpu 0: layers 0-2, gpu 1: layers 3-5",                  # never "gpu 0" as the list [0]
    ":\n\uf0b7 gpu 0: some layers\n\uf0b7 gpu 1: the others",
])
def test_a_list_of_what_each_gpu_holds_is_read_whole_or_left_for_a_person(rest):
    assert numbers_after(rest, "int_list", 2, contract.template_label("task1.layers_per_gpu")) is None


def test_a_list_under_a_label_ends_at_the_next_label(tmp_path):
    reading = _reading(tmp_path, {LAYERS: [_label(LAYERS), "\x95 3, 3"],
                                  TRANSFER: ["\x95 Transfer between layers: 2 and 3"]})
    assert reading.answers["task1.layers_per_gpu"] == [3, 3], reading.problems
    assert reading.answers["task1.transfer_between"] == [2, 3], reading.problems


@pytest.mark.parametrize("under", [["\x95 it depends on the depth"], ["It depends on the depth."]])
def test_an_unclear_answer_under_its_label_is_found_for_a_person(tmp_path, under):
    reading = _reading(tmp_path, {SPEED: [_label(SPEED)] + under})
    field_id = "task2.depth_improves_speed"
    assert field_id not in reading.answers
    assert "it depends on the depth" in reading.unread[field_id].lower()
    assert "a person must read it" in reading.unread[field_id]
    assert not any(p.startswith("found 'Does increasing DEPTH") for p in reading.problems), reading.problems


def test_a_list_under_a_label_that_is_not_read_is_quoted_without_its_markers(tmp_path):
    reading = _reading(tmp_path, {LAYERS: [_label(LAYERS), "\x95 GPU 0: some layers", "\x95 GPU 1: the others"]})
    why = reading.unread["task1.layers_per_gpu"]
    assert "'GPU 0: some layers, GPU 1: the others'" in why and "\x95" not in why and "•" not in why


@pytest.mark.parametrize("label", [SPEED, FASTER])
def test_a_label_left_blank_takes_no_answer_from_what_starts_under_it(tmp_path, label):
    # Under SPEED: "Task 2 explanation"; under FASTER: the heading too. Nothing was answered.
    reading = _reading(tmp_path, {label: [_label(label)]})
    field_id = YES_NO[label]
    assert field_id not in reading.answers and field_id not in reading.unread
    assert field_id in reading.missing


# -- Task 2's table split over a page -------------------------------------------------------

_BEFORE_TABLE = REPORT_LINES[:REPORT_LINES.index("| DEPTH | Step time (ms) |")]
_AFTER_TABLE = REPORT_LINES[REPORT_LINES.index("| 24 | 47.1 |") + 1:]
_HEADER = "DEPTH\tStep time (ms)"
_ROWS = {6: "6\t12.5", 12: "12\t23.75", 24: "24\t47.1"}
_TABLE = [{"depth": 6, "step_time_ms": 12.5}, {"depth": 12, "step_time_ms": 23.75}, {"depth": 24, "step_time_ms": 47.1}]


@pytest.mark.parametrize("footer, caption", [
    (["continued on next page"], ["Table 1 (continued)"]),                      # LaTeX longtable
    (["continued on next page"], []),                                           # the footer alone
    ([], ["Table 1 (continued)"]),                                              # the caption alone
    ([], ["Table 1: Step time vs. DEPTH (2 GPUs)"]),                            # the caption repeated as it was
    (["(continued)"], ["Table 1 (cont.)"]),                                     # Word's
])
def test_a_table_split_over_a_page_is_read_through_its_footer_and_caption(tmp_path, footer, caption):
    first = _BEFORE_TABLE + ["Table 1: Step time vs. DEPTH (2 GPUs)", _HEADER, _ROWS[6]] + footer
    second = caption + [_HEADER, _ROWS[12], _ROWS[24]] + _AFTER_TABLE
    reading = _reading(tmp_path, {}, pages=[first, second])
    assert reading.answers.get("task2.step_time_table") == _TABLE, reading.problems
    assert "task2.step_time_table" not in reading.incomplete, reading.incomplete


def test_a_continued_table_takes_no_rows_of_the_next_table(tmp_path):
    first = _BEFORE_TABLE + [_HEADER, _ROWS[6], "continued on next page"]
    second = ["Table 1 (continued)", _HEADER, _ROWS[12], _ROWS[24]] + _AFTER_TABLE
    reading = _reading(tmp_path, {}, pages=[first, second])
    assert reading.answers["task2.step_time_table"] == _TABLE
    assert [row["gpus"] for row in reading.answers["task4.table"]] == [2, 5]


# -- as the tools set them ------------------------------------------------------------------

_LONGTABLE_REPORT = r"""\documentclass[11pt,a4paper]{article}
\usepackage[margin=2.5cm]{geometry}
\usepackage{longtable}
\usepackage{booktabs}
\begin{document}
\section*{Task 1: current behavior}
Layers per GPU (DEPTH=6, 2 GPUs):
\begin{itemize}\item GPU 0: 3 layers \item GPU 1: 3 layers\end{itemize}
Transfer between layers:
\begin{itemize}\item 2 and 3\end{itemize}
\subsection*{Task 1 explanation}
Each GPU holds three consecutive layers; one transfer per forward pass.
\section*{Task 2: increase model size}
\vspace{16.6cm}
\begin{longtable}{rr}
\caption{Step time vs.\ DEPTH (2 GPUs)}\\
\toprule DEPTH & Step time (ms) \\ \midrule
\endfirsthead
\multicolumn{2}{l}{\emph{Table 1 (continued)}}\\
\toprule DEPTH & Step time (ms) \\ \midrule
\endhead
\midrule \multicolumn{2}{r}{\emph{continued on next page}}\\
\endfoot
\bottomrule
\endlastfoot
6 & 12.5 \\
12 & 23.75 \\
24 & 47.1 \\
\end{longtable}
Does increasing DEPTH improve speed (yes/no):
\begin{itemize}\item no\end{itemize}
\subsection*{Task 2 explanation}
Only one GPU computes at a time, so the time grows with depth.
\end{document}
"""


@pytest.mark.slow  # pdflatex: seconds
def test_latex_longtable_over_a_page_and_itemized_answers(tmp_path):
    from report_builders import ToolMissing, _require, _run
    try:
        pdflatex = _require("pdflatex", "texlive-latex-base")
    except ToolMissing as missing:
        pytest.skip(str(missing))
    (tmp_path / "report.tex").write_text(_LONGTABLE_REPORT, encoding="utf-8")
    _run([pdflatex, "-interaction=nonstopmode", "-halt-on-error", "report.tex"], tmp_path)
    reading = reading_from_worker_output(extract(str(tmp_path / "report.pdf"), 50))
    assert reading.pages == 2, "the table did not break over the page: change the \\vspace"
    assert reading.answers.get("task2.step_time_table") == _TABLE, reading.problems
    assert reading.answers.get("task1.layers_per_gpu") == [3, 3], reading.problems
    assert reading.answers.get("task1.transfer_between") == [2, 3], reading.problems
    assert reading.answers.get("task2.depth_improves_speed", {}).get("value") == "no", reading.problems


@pytest.mark.slow  # LibreOffice: seconds
def test_word_bullets_under_labels_from_a_docx(tmp_path):
    """The audit's hw3_word_below: a .docx's bulleted answers, whose bullet is Symbol's U+F0B7."""
    import html as html_lib
    from report_builders import ToolMissing, _require, _run
    try:
        soffice = _require("soffice", "libreoffice-writer-nogui")
    except ToolMissing as missing:
        pytest.skip(str(missing))
    body = []
    for line in REPORT_LINES:
        listed = _under("", "").get(line)
        if listed:
            body.append(f"<p>{html_lib.escape(listed[0])}</p><ul>"
                        + "".join(f"<li>{html_lib.escape(item.strip())}</li>" for item in listed[1:]) + "</ul>")
        elif "\t" not in line:
            body.append(f"<p>{html_lib.escape(line)}</p>")
    (tmp_path / "report.html").write_text("<!doctype html><meta charset='utf-8'><body>" + "".join(body) + "</body>",
                                          encoding="utf-8")
    base = [soffice, f"-env:UserInstallation={(tmp_path / 'lo-profile').as_uri()}", "--headless", "--norestore",
            "--nolockcheck"]
    _run(base + ["--infilter=HTML (StarWriter)", "--convert-to", "docx:MS Word 2007 XML", "report.html"], tmp_path)
    (tmp_path / "report.html").unlink()
    _run(base + ["--convert-to", "pdf", "report.docx"], tmp_path)
    output = extract(str(tmp_path / "report.pdf"), 50)
    reading = reading_from_worker_output(output)
    assert reading.answers.get("task1.layers_per_gpu") == [3, 3], reading.problems
    assert reading.answers.get("task1.transfer_between") == [2, 3], reading.problems
    for field_id in YES_NO.values():
        assert field_id in reading.answers, (field_id, reading.problems)
