"""What the points no person has graded yet are, for the total lines of every report.

    pending_what(result) -> "written answers worth 4.5" | "written answers worth 4.5, and answers
                            found but not read worth 1," | "answers found but not read worth 1"

A result's `pending_points` are the manual items' points (written answers) and, since the
scoring holds them too (grader/scoring/score.py), the points of automatic checks whose answer
was found but could not be read, or that the grader could not run on code that itself works
(HW3: a model the probe could not build as the script does; `pending_by_hand`): the total line
names each, so none reads as another.
"""
from __future__ import annotations

from typing import Any, Mapping

from grader.reports.formatting import format_points


def waiting_to_be_read(assignment: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The assignment's automatic items with points that wait for a person to read an answer
    (grader/scoring/score.py): the total lines, the terminal's list and Moodle's comment."""
    return [item for item in assignment.get("items") or []
            if isinstance(item, Mapping) and item.get("kind", "auto") == "auto"
            and float(item.get("pending_points") or 0) > 0]


def unread_pending_points(result: Mapping[str, Any]) -> float:
    """The points of automatic items that wait for a person to read an answer."""
    return round(sum(float(item["pending_points"])
                     for assignment in result.get("assignments") or [] if isinstance(assignment, Mapping)
                     for item in waiting_to_be_read(assignment)), 2)


def by_hand_points(item: Mapping[str, Any]) -> float:
    """Of an automatic item's waiting points, those of cases the grader could not run on code
    that itself works (each check's waiting points shared by its cases' reasons)."""
    return round(sum(float(c.get("pending_points") or 0) * int(c.get("by_hand") or 0) / int(c["unread"])
                     for c in item.get("checks") or []
                     if isinstance(c, Mapping) and int(c.get("unread") or 0) > 0), 2)


def by_hand_pending_points(result: Mapping[str, Any]) -> float:
    return round(sum(by_hand_points(item) for assignment in result.get("assignments") or []
                     if isinstance(assignment, Mapping)
                     for item in waiting_to_be_read(assignment)), 2)


def why_waiting(item: Mapping[str, Any]) -> str:
    """Why an automatic item's points wait, in a student's words."""
    return ("the grader could not run its checks on your code, which itself runs: a person "
            "grades them by hand" if by_hand_points(item) > 0 else
            "an answer the grader found but could not read")


def pending_what(result: Mapping[str, Any]) -> str | None:
    """The result's pending points, said by what they are; None where none wait."""
    waiting = float(result.get("pending_points") or 0)
    if not waiting:
        return None
    automatic = min(unread_pending_points(result), waiting)
    by_hand = min(by_hand_pending_points(result), automatic)
    unread = round(automatic - by_hand, 2)
    written = round(waiting - automatic, 2)
    parts = ([f"written answers worth {format_points(written)}"] if written else []) \
        + ([f"answers the grader found but could not read worth {format_points(unread)}"] if unread else []) \
        + (["checks the grader could not run on your code (a person grades them by hand) worth "
             f"{format_points(by_hand)}"] if by_hand else [])
    if len(parts) == 1:
        return parts[0]
    return ", ".join(parts[:-1]) + f", and {parts[-1]},"
