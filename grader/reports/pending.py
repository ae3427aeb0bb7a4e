"""What the points no person has graded yet are, for the total lines of every report.

    pending_what(result) -> "written answers worth 4.5" | "written answers worth 4.5, and answers
                            found but not read worth 1," | "answers found but not read worth 1"

A result's `pending_points` are the manual items' points (written answers) and, since the
scoring holds them too (grader/scoring/score.py), the points of automatic checks whose answer
was found but could not be read: the total line names both, so neither reads as the other.
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


def pending_what(result: Mapping[str, Any]) -> str | None:
    """The result's pending points, said by what they are; None where none wait."""
    waiting = float(result.get("pending_points") or 0)
    if not waiting:
        return None
    unread = min(unread_pending_points(result), waiting)
    written = round(waiting - unread, 2)
    if not unread:
        return f"written answers worth {format_points(written)}"
    read = f"answers the grader found but could not read worth {format_points(unread)}"
    return f"written answers worth {format_points(written)}, and {read}," if written else read
