"""Reports from a result.json: the student's Markdown/HTML report and Gradescope's results.json.

`pdl-grade report RESULT_JSON --out DIR` (grader/reports/command.py) writes them.
"""
from grader.reports.gradescope import gradescope_results
from grader.reports.render import render_html, render_markdown

__all__ = ["gradescope_results", "render_html", "render_markdown"]
