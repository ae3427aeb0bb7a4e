"""A yes/no fact the measurement supports both answers to is recorded as "yes or no" (the
answers accepted: grader/checks/hw3_facts.py); the student's "Measured and reported values"
say it in words, never "measured: yes or no" beside "you reported: yes" (an instructor's
audit read that as a bug)."""
from __future__ import annotations

import re

import pytest

from grader.reports.render import render_html, render_markdown
from tests.support.report_fixtures import ROUND_ROBIN, fresh


def with_facts(measured: dict, reported: dict) -> dict:
    result = fresh(ROUND_ROBIN)
    hw3 = next(a for a in result["assignments"] if a["id"] == "hw3")
    hw3.setdefault("measurements", {}).update(measured)
    hw3["reported"] = {**(hw3.get("reported") or {}), **reported}
    return result


def md_row(markdown: str, quantity: str) -> list[str]:
    line = next(line for line in markdown.splitlines() if f"| {quantity} |" in line)
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def test_both_answers_accepted_are_said_in_words_with_why():
    result = with_facts({"task4.all_gpus_utilised": "yes or no", "task4.more_gpus_faster": "no"},
                        {"task4.all_gpus_utilised": "yes", "task4.more_gpus_faster": "no"})
    md = render_markdown(result)
    task, quantity, reported, measured = md_row(md, "all gpus utilised")
    assert (task, reported) == ("Task 4", "yes")
    assert measured.startswith("either: yes (each GPU holds layers) or no (only one computes "
                               "at a time)"), measured
    assert "both are right" in measured
    assert "| yes or no |" not in md
    # A single answer stays as it is.
    assert md_row(md, "more gpus faster")[2:] == ["no", "no"]
    page = render_html(result)
    cells = re.search(r"<td>all gpus utilised</td><td[^>]*>yes</td><td[^>]*>([^<]*)</td>", page)
    assert cells and cells.group(1).startswith("either: yes (each GPU holds layers)"), cells
    assert ">yes or no<" not in page


@pytest.mark.parametrize("value", ["yes or no", "no or yes", "Yes or No"])
def test_any_fact_with_both_answers_reads_either(value):
    from grader.reports.measurements import format_measured
    assert format_measured(value, "task9.something", "hw3") == "either: yes or no, both are right here"
    assert format_measured(value, "task4.more_gpus_faster", "hw3").startswith(
        "either: yes or no, both are right (the step times are too close to call)")


@pytest.mark.parametrize("value, shown", [("yes", "yes"), ("no", "no"), (True, "yes"),
                                          ([3, 3], "3, 3"), (None, "–"), (12.5, "12.5"),
                                          ("1 or 2", "1 or 2")])
def test_other_values_are_shown_as_before(value, shown):
    from grader.reports.measurements import format_measured
    assert format_measured(value, "task4.all_gpus_utilised", "hw3") == shown
