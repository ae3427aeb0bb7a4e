"""The late penalty: how much of an assignment's score a late submission loses."""
from __future__ import annotations

import datetime as _dt
import math
from dataclasses import dataclass

from grader.scoring.rubric import LatePolicy

_DAY_S = 86400.0


@dataclass(frozen=True)
class Lateness:
    submitted_at: str
    due: str
    days_late: int         # started days after due (+ grace); 0 when on time
    fraction_lost: float   # 0..1 of the score


def parse_submission_time(value: _dt.datetime | str) -> _dt.datetime:
    """A submission time with a time zone; raise ValueError otherwise (never guess a zone)."""
    when = _dt.datetime.fromisoformat(value.strip()) if isinstance(value, str) else value
    if not isinstance(when, _dt.datetime):
        raise ValueError(f"submission time must be a date-time, got {value!r}")
    if when.tzinfo is None or when.utcoffset() is None:
        raise ValueError(f"submission time {value!s} has no time zone offset")
    return when


def lateness(submitted_at: _dt.datetime, due: _dt.datetime,
             policy: LatePolicy | None) -> Lateness:
    """Started days late and the fraction of the score lost under the policy.

    Any part of a day counts as a day ("per started day"). Beyond ``max_days`` everything is
    lost. Without a policy lateness is recorded but costs nothing.
    """
    grace_s = policy.grace_minutes * 60 if policy else 0.0
    late_s = (submitted_at - due).total_seconds() - grace_s
    days = math.ceil(late_s / _DAY_S) if late_s > 0 else 0
    if policy is None or days == 0:
        fraction = 0.0
    elif days > policy.max_days:
        fraction = 1.0
    else:
        fraction = min(1.0, policy.per_day * days)
    return Lateness(submitted_at=submitted_at.isoformat(), due=due.isoformat(),
                    days_late=days, fraction_lost=fraction)


def describe(late: Lateness, policy: LatePolicy | None) -> str:
    """The penalty in words, for the student."""
    text = (f"Submitted {late.submitted_at}, due {late.due}: "
            f"{late.days_late} started day{'s' if late.days_late != 1 else ''} late.")
    if policy is None:
        return text + " No late policy applies."
    if late.days_late > policy.max_days:
        return text + f" More than {policy.max_days} days late: the score is 0."
    return text + (f" The policy takes {policy.per_day:.0%} per started day: "
                   f"{late.fraction_lost:.0%} of the score is lost.")
