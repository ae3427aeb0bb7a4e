"""Answers that students hand in: answer sheets (sheet.py) and, for HW3, the report PDF
(hw3_pdf/), put together per assignment by collect.py."""
