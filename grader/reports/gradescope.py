"""result.json -> Gradescope's results.json (the format in /work/shared/notes/grading-anchors.md).

One Gradescope test per rubric item (automatic items, instructor-scored items, the late
penalty). Manual items still waiting for the instructor are not tests: a 0-point "passed" or
an "x / y failed" would both mislead; the summary output lists them instead.

Points of an automatic item that wait for the course staff (an answer the grader found but
could not read: grader/scoring/score.py) are no verdict either. Gradescope takes a test's
status as passed or failed only, and infers it from score >= max_score where none is given
(/work/shared/notes/grading-anchors.md): an item's test therefore counts only its decided
points (its max_score is the rubric's less what waits), its status is theirs, and its name and
output say plainly what waits for the course staff. An item whose points all wait is no test,
as a manual item waiting is not; the output lists it. A student had read "failed" beside an
answer nobody had read yet.

An upload that was never graded (grader/reports/not_graded.py: it needs a person, or was
refused) has no tests: one failed test per rubric item would tell the student their code
failed every check, when none of it ran. Its score is 0 all the same, written out: Gradescope
records a number for every autograder run and shows 0 where `score` and the tests are missing,
so leaving it out would give the same 0 with no word of why. The output says plainly that it
was not graded and why; `extra_data.not_graded` carries the kind and reason for scripts, and
the class export (DIR/gradescope/<assignment>.csv) leaves such a student's cell empty, so an
import never turns the placeholder into a grade.

An assignment the grader itself failed to grade (its `grading_problems`: a check that did not
run, grader/scoring/score.py) is no grade either: it has no tests, its points are not in the
score, and the output says that the staff grade it again (a TA's audit 28 had a grader error
published as the student's 0).
"""
from __future__ import annotations

from typing import Any, Mapping

from grader.reports.formatting import format_points
from grader.reports.measurements import lookup
from grader.reports.not_graded import not_graded
from grader.reports.pending import by_hand_points, why_waiting
from grader.reports.render import markdown_inline, render_item_markdown, render_markdown
from grader.scoring.score import grading_problems

VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
OUTPUT_FORMATS = ("text", "html", "simple_format", "md", "ansi")
STATUSES = ("passed", "failed")


def gradescope_results(result: Mapping[str, Any], *, visibility: str = "after_due_date",
                       stdout_visibility: str = "hidden", leaderboard: bool = False) -> dict:
    for name, value in (("visibility", visibility), ("stdout_visibility", stdout_visibility)):
        if value not in VISIBILITIES:
            raise ValueError(f"{name} must be one of {', '.join(VISIBILITIES)}, got {value!r}")
    assignments = result.get("assignments") or []
    several = len(assignments) > 1
    unmarked = not_graded(result)
    tests = []
    waiting = []
    ungraded = [a for a in assignments if grading_problems(a)] if unmarked is None else []
    for a_number, assignment in enumerate(assignments if unmarked is None else [], start=1):
        if assignment in ungraded:
            continue
        shown = [item for item in assignment.get("items") or [] if not item.get("pending")]
        waiting += [(assignment, item) for item in shown if _waits(item) and _decided(item) <= 0]
        shown = [item for item in shown if not (_waits(item) and _decided(item) <= 0)]
        for i_number, item in enumerate(shown, start=1):
            tests.append(_test(assignment, item, f"{a_number}.{i_number}", several, visibility))
    output = render_markdown(result, summary_only=True) + _waiting_note(waiting, several) \
        + _hidden_note(tests) + _grading_problem_note(ungraded)
    if unmarked is not None and not unmarked.counts_as_zero:
        output += ("\nGradescope shows a score of 0 because it records a number for every "
                   "autograder run: that 0 is no grade.\n")
    results = {
        "score": max(0.0, _points(result.get("score"))
                     - sum(_points(a.get("score")) for a in ungraded)) if unmarked is None else 0.0,
        "execution_time": int(round(result.get("duration_s") or 0)),
        "output": output,
        "output_format": "md",
        "visibility": visibility,
        "stdout_visibility": stdout_visibility,
        "extra_data": {
            "schema": result.get("schema"),
            "grader_version": result.get("grader_version"),
            "hardware": result.get("hardware"),
            "errors": list(result.get("errors") or []),
            "assignments": [_assignment_summary(a) for a in assignments],
        },
        "tests": tests,
    }
    if unmarked is not None:
        results["extra_data"]["not_graded"] = {"kind": unmarked.kind, "reason": unmarked.reason}
    board = _leaderboard(assignments) if leaderboard and unmarked is None else []
    if board:
        results["leaderboard"] = board
    return results


def _test(assignment: Mapping, item: Mapping, number: str, several: bool,
          default_visibility: str) -> dict:
    score, max_score = _points(item.get("score")), _decided(item)
    name = str(item.get("title") or item.get("id"))
    if _waits(item):
        name += f" ({format_points(_points(item.get('pending_points')))} point(s) wait for the course staff)"
    return {
        "score": score,
        "max_score": max_score,
        "status": _status(item, score, max_score),
        "name": f"[{assignment.get('id')}] {name}" if several else name,
        "number": number,
        "output": _waits_note(item) + render_item_markdown(item) + _held_note(assignment, item),
        "output_format": "md",
        "tags": [str(assignment.get("id")), str(item.get("kind", "auto"))],
        "visibility": _visibility(item, default_visibility),
        "extra_data": {
            "item_id": item.get("id"),
            "status": item.get("status"),
            "checks": [{key: check.get(key) for key in ("id", "status", "score", "max_score")}
                       for check in item.get("checks") or []],
        },
    }


def _waits(item: Mapping) -> bool:
    """An automatic item with points that wait for the course staff to read an answer."""
    return item.get("kind", "auto") == "auto" and not item.get("overridden") \
        and _points(item.get("pending_points")) > 0


def _decided(item: Mapping) -> float:
    """The item's points the grader decided: its max_score less those that wait."""
    waiting = _points(item.get("pending_points")) if _waits(item) else 0.0
    return max(0.0, round(_points(item.get("max_score")) - waiting, 2))


def _waits_note(item: Mapping) -> str:
    if not _waits(item):
        return ""
    if by_hand_points(item) > 0:
        why = ("for checks the grader could not run on your code, which itself runs. The course "
               "staff grade them by hand")
    else:
        why = "for an answer the grader found but could not read. The course staff read it"
    return (f"**Waits for the course staff:** {format_points(_points(item.get('pending_points')))} of this "
            f"item's {format_points(_points(item.get('max_score')))} point(s) are {why} and set those "
            "points; until then they are not in your score, and this test's points and status are "
            "those of the rest.\n\n")


def _waiting_note(waiting: list[tuple[Mapping, Mapping]], several: bool) -> str:
    """Items whose points all wait for the course staff: no test, said in the output."""
    if not waiting:
        return ""
    lines = [f"- {'[' + str(a.get('id')) + '] ' if several else ''}"
             f"{markdown_inline(str(item.get('title') or item.get('id')))}: "
             f"{format_points(_points(item.get('pending_points')))} point(s) ({why_waiting(item)})"
             for a, item in waiting]
    return ("\nWaiting for the course staff (no test, and not in your score until they have graded "
            "it):\n\n" + "\n".join(lines) + "\n")


def _grading_problem_note(ungraded: list[Mapping]) -> str:
    if not ungraded:
        return ""
    lines = "\n".join(f"- {markdown_inline(str(a.get('id')))}: "
                      f"{markdown_inline(grading_problems(a)[0])}" for a in ungraded)
    return ("\n**Not graded: a grading problem** (the grader's, not your code's). These have no "
            "tests here and no points in the score; the course staff grade them again:\n\n"
            + lines + "\n")


def _held_note(assignment: Mapping, item: Mapping) -> str:
    """A withheld item names what the grader found: Gradescope shows tests, not assignments."""
    problems = (assignment.get("integrity") or {}).get("problems") or []
    if item.get("status") != "withheld" or not problems:
        return ""
    return "\n\n**Held for review** because of:\n\n" + "\n".join(
        f"- {markdown_inline(str(p))}" for p in problems) + "\n"


def _status(item: Mapping, score: float, max_score: float) -> str:
    # "partial" with full points cannot happen, but an item with errors could still hold
    # points from other checks: only a clean pass (or a nothing-to-lose skip) is "passed".
    # An item the instructor scored is what they gave it, whatever its checks said.
    if item.get("status") in ("failed", "partial", "error") and not item.get("overridden"):
        return "failed"
    return "passed" if score >= max_score else "failed"


def _visibility(item: Mapping, default: str) -> str:
    """A rubric item marked hidden stays hidden (its points still count in the total)."""
    if item.get("hidden") is True:
        return "hidden"
    wanted = item.get("visibility")
    return wanted if wanted in VISIBILITIES else default


def _hidden_note(tests: list[dict]) -> str:
    hidden = [t for t in tests if t["visibility"] == "hidden"]
    if not hidden:
        return ""
    points = sum(t["max_score"] for t in hidden)
    # Honest totals: say that the total includes tests the student cannot see yet.
    return (f"\n{len(hidden)} test(s) worth {points:g} point(s) are hidden for now; "
            "the total above includes them.\n")


def _assignment_summary(assignment: Mapping) -> dict:
    keys = ("id", "rubric_version", "status", "score", "max_score", "rubric_max_score",
            "excluded_points", "pending_manual", "late")
    summary = {key: assignment.get(key) for key in keys}
    integrity = assignment.get("integrity")
    if isinstance(integrity, Mapping):   # the staff's comment stays out
        summary["integrity"] = {key: integrity.get(key)
                                for key in ("problems", "withheld", "withheld_points", "cleared")}
    return summary


def _leaderboard(assignments: list[Mapping]) -> list[dict]:
    """HW3's step time at the largest DEPTH measured, when it was measured."""
    for assignment in assignments:
        if assignment.get("id") != "hw3":
            continue
        times = lookup(assignment.get("measurements"), "task2.step_time_ms")
        if not isinstance(times, Mapping):
            continue
        numeric = {}
        for depth, value in times.items():
            try:
                numeric[int(depth)] = float(value)
            except (TypeError, ValueError):
                continue
        if numeric:
            depth = max(numeric)
            return [{"name": f"HW3 step time, DEPTH={depth} (ms)",
                     "value": round(numeric[depth], 3), "order": "asc"}]
    return []


def _points(value: Any) -> float:
    return round(float(value or 0), 2)
