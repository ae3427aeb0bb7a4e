"""Student reports from a result.json: Markdown (for Gradescope and plain text) and a
self-contained HTML page with the measured values plotted.

Feedback quotes the student's output and exception messages, so it is treated as hostile:
HTML autoescapes everything (the SVG plots are the only markup let through, built and escaped
in plots.py), and Markdown puts such text in code blocks, where nothing is interpreted.
"""
from __future__ import annotations

import re
from typing import Any, Mapping

from markupsafe import Markup

from grader.reports import plots
from grader.reports.jinja_env import environment, tidy
from grader.reports.measurements import lookup
from grader.reports.student_view import item_view, student_view


def render_markdown(result: Mapping[str, Any], *, summary_only: bool = False) -> str:
    """The student report; `summary_only` keeps totals, tables and measurements (the per-task
    details are Gradescope's tests)."""
    template = environment(autoescape=False).get_template("report.md.j2")
    return tidy(template.render(report=student_view(result), summary_only=summary_only))


def render_item_markdown(item: Mapping[str, Any]) -> str:
    """One item's details (its text, checks, expected vs observed), as a Gradescope test output."""
    template = environment(autoescape=False).get_template("item.md.j2")
    return tidy(template.module.item_body(item_view(item)))


def render_html(result: Mapping[str, Any]) -> str:
    report = student_view(result)
    for view, assignment in zip(report["assignments"], result.get("assignments") or []):
        view["plots"] = [Markup(svg) for svg in assignment_plots(assignment) if svg]
    return environment(autoescape=True).get_template("report.html.j2").render(report=report)


def assignment_plots(assignment: Mapping[str, Any]) -> list[str | None]:
    measured = assignment.get("measurements") or {}
    reported = assignment.get("reported") or {}
    # The charts' titles and axes describe HW3's tasks; other assignments get tables only.
    if assignment.get("id") != "hw3" or not isinstance(measured, Mapping):
        return []
    return [plots.step_time_plot(lookup(measured, "task2.step_time_ms"),
                                 lookup(reported, "task2.step_time_ms")),
            plots.memory_plot(lookup(measured, "task4"))]


def fence(text: Any) -> str:
    """A Markdown code block that no backtick run inside `text` can close early."""
    text = str(text)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    marks = "`" * max(3, longest + 1)
    return f"{marks}text\n{text}\n{marks}"


# Markdown escaping (CommonMark + GFM), not HTML escaping: "DEPTH < N" must read as written,
# in the raw file and rendered, while student text stays inert. A backslash before ASCII
# punctuation makes it a literal character, so only what could start markup is escaped:
_MD_MARKUP = re.compile(
    r"\\(?=[!-/:-@\[-`{-~])"      # a backslash that would escape what follows
    r"|[`*\[\]|~]"                  # code spans, emphasis, links and images, cells, strikethrough
    r"|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])"   # emphasis by _ (never inside a word)
    r"|<(?=[A-Za-z/!?])"            # raw HTML, comments, autolinks; "DEPTH < N" is left alone
    r"|&(?=#?[A-Za-z0-9]+;)"        # entity references such as &lt;
    r"|(?<=[A-Za-z]:)/(?=/)|(?<=\bwww)\.")   # GFM's bare-URL links (http://, www.)
# What starts a block when the text begins a line (a list item's text, a table cell's).
_MD_LINE_START = re.compile(r"^(?:#+(?=\s|$)|>|[-+=](?=[-+=\s]|$)|\d+[.)](?=\s|$))")


def markdown_inline(text: Any) -> str:
    """Text for a Markdown table cell, heading or list item: one line, no cell breaks, and no
    markup of its own (raw HTML, links, images, emphasis, code spans, blocks) that a student's
    text could bring in; characters that start none stay as written."""
    line = " ".join(str(text).split())
    line = _MD_MARKUP.sub(lambda m: "\\" + m.group(0), line)
    return _MD_LINE_START.sub(lambda m: m.group(0)[:-1] + "\\" + m.group(0)[-1]
                              if m.group(0)[0].isdigit() else "\\" + m.group(0), line)
