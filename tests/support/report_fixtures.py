"""Real result.json files (trimmed, see fixtures/make_fixtures.py) and small edits of them.

A module of its own (not conftest.py): several test folders have a conftest.py, and
`from conftest import ...` would get whichever was imported first."""
from __future__ import annotations

import copy
import json
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "reports" / "fixtures"
REFERENCE = "reference_p4_hw3.json"           # everything passes; hw3 has measurements
TEMPLATE = "template_hw3.json"                # every automatic item fails (TODOs)
ROUND_ROBIN = "round_robin_late_hw3_p5.json"  # partial Task 3, skipped check, late penalty, answers
XSS = "<script>alert(1)</script>"


def load(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def fresh(name: str) -> dict:
    """load(name) as a copy a test may edit."""
    return copy.deepcopy(load(name))


def find_item(result: dict, item_id: str) -> dict:
    return next(i for a in result["assignments"] for i in a["items"] if i["id"] == item_id)


def with_hostile_feedback(result: dict) -> dict:
    """The round-robin result with student-controlled text (an exception message, a reported
    value) carrying markup, as a student could make it appear."""
    check = find_item(result, "hw3.task1")["checks"][0]
    check["feedback"] += f"\nObserved: ValueError: {XSS}"
    check["cases"][0]["message"] += f" {XSS}"
    find_item(result, "hw3.task1")["feedback"] += f"\nObserved: ValueError: {XSS}"
    hw3 = result["assignments"][0]
    hw3["reported"]["task1.layers_per_gpu"] = [XSS, "3 | 3"]
    hw3["answers"]["problems"].append(f"hw3/report.pdf: '{XSS}' is not a number")
    return result
