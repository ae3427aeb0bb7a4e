"""Answers that students write in reports (HW3: hw3/report.pdf)."""

from .pdf_report import ReportExtraction, read_report

__all__ = ["ReportExtraction", "read_report"]
