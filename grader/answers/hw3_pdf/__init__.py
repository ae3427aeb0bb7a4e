"""The student's HW3 report PDF (hw3/report.pdf), read into answers.

    from grader.answers.hw3_pdf import read_hw3_pdf
    reading = read_hw3_pdf("submission/hw3/report.pdf")
    reading.answers["task2.step_time_table"]   # [{"depth": 6, "step_time_ms": 61.27}, ...]
    reading.where["task2.step_time_table"]     # {"kind": "table", "page": 1, "rows": {...}, ...}

One module per step: extract_worker (the child that opens the PDF), layout (lines in
reading order, furniture), tables / labels / explanations (the three kinds of answer),
contract (the questions the template asks), numbers (how students write numbers), and
reader (the whole read, with the messages a student sees). text_report lays a report handed
in as Markdown or plain text out as the worker's pages, so the same rules read it.
"""

from .reader import Hw3PdfReading, describe_where, read_hw3_pdf

__all__ = ["Hw3PdfReading", "describe_where", "read_hw3_pdf"]
