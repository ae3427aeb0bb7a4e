"""A table or a dict answer in the student's report reads as rows and entries, never as a Python
dict (a TA's audit 27: report.md showed `{'each': [32, 1000]}`; audit 28: instructor.md showed
P10's micro.table the same way, since mended there)."""
from __future__ import annotations

from grader.reports.measurements import format_value
from grader.reports.render import render_markdown
from tests.support.report_fixtures import REFERENCE, fresh

TABLE = [{"micro_batches": 2, "passes_per_step": 2, "micro_batch_size": 32},
         {"micro_batches": 8, "passes_per_step": 8, "micro_batch_size": 8}]


def test_a_table_and_a_dict_read_as_rows_and_entries():
    assert format_value(TABLE) == ("row 1: micro_batches 2, passes_per_step 2, micro_batch_size "
                                   "32; row 2: micro_batches 8, passes_per_step 8, "
                                   "micro_batch_size 8")
    assert format_value({"each": [32, 1000]}) == "each: [32, 1000]"
    assert (format_value([3, 3]), format_value(0.25), format_value(None)) == ("3, 3", "0.25", "–")


def test_a_reported_table_in_the_report_has_no_python_braces():
    data = fresh(REFERENCE)
    assignment = data["assignments"][0]
    assignment["reported"] = dict(assignment.get("reported") or {}, **{"micro.table": TABLE})
    text = render_markdown(data)
    assert "row 1: micro\\_batches 2" in text or "row 1: micro_batches 2" in text, text[-3000:]
    assert "{'micro_batches'" not in text and "{\\'micro" not in text
