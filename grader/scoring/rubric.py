"""Load and validate rubric files (``rubrics/<assignment>.yaml``).

A rubric says how many points each check of an assignment is worth. It is validated
completely when loaded, so a typo fails loudly before any student is graded instead of
silently giving or taking points. Every problem raises :class:`RubricError` whose message
names the file, the item and the field, e.g.::

    rubrics/hw3.yaml: item 'hw3.task2': checks[0].points must be a non-negative number, got 'three'

Schema (unknown keys are errors everywhere, to catch typos such as ``point:``)::

    assignment: hw3                  # required; [a-z0-9_]+, equals the file name's stem
    title: "Home Work 3 - ..."       # required
    version: "2026.1"                # required; recorded in result.json
    gpus: 5                          # required; most virtual/real GPUs the checks need (int >= 0)
    order: 5                         # optional; where the assignment comes in the course (columns
                                     #   of grades.csv, reports); ties and omissions go by id
    run_timeout_s: 30                # optional; seconds one run of the student's code may take
                                     #   (the HW3 probe twice that); default: --check-timeout
    trains: false                    # optional (default true); false: the course's scripts for it
                                     #   never train, so its grading preloads no training imports
    total_points: 15                 # optional; if given, must equal the sum of item points
    due: "2026-04-30 23:59"          # optional; ISO 8601 date-time: the zone's local time
    timezone: Europe/Tallinn         # optional; IANA name of the course's zone. Without it
                                     #   `due` needs an offset ("2026-04-30T23:59:00+03:00");
                                     #   with both, the offset must be the zone's on that day
    late_policy:                     # optional; needs `due`
      per_day: 0.1                   #   fraction of the score lost per started day late (0..1)
      max_days: 5                    #   later than this many days: score 0
      grace_minutes: 0               #   optional; lateness within the grace is not late
    answers_source: pdf_then_sheet   # optional: pdf | sheet | pdf_then_sheet
    when_skipped: exclude            # optional default for every check: exclude | zero
    items:                           # required, non-empty
      - id: hw3.task1                # required; unique; starts with "<assignment>."
        title: "Task 1 - ..."        # required
        kind: auto                   # optional: auto (default) | manual
        points: 3                    # auto: optional, must equal the sum of its checks' points
                                     # manual: required (may be 0)
        checks:                      # auto: required, non-empty; manual: not allowed
          - check: hw3.task1.layout  # required; unique in the rubric; starts with "<assignment>."
            points: 2                # required, >= 0
            partial: proportional    # optional: all (default: every case must pass)
                                     #   | proportional (points x passed cases / counted cases)
            when_skipped: exclude    # optional: exclude (skipped cases leave the maximum)
                                     #   | zero (skipped cases count as not passed)
        feedback:                    # optional; shown to the student
          pass: "..."
          fail: "..."
          skipped: "..."
        guidance: "..."              # optional; instructor notes (typical on manual items)

Why ``when_skipped: exclude`` is the default: a hardware check skipped because the
grading machine lacks real GPUs says nothing about the student's work, so it must
neither give nor take points; excluding it lowers the maximum and the result says so.
"""
from __future__ import annotations

import copy
import datetime as _dt
import functools
import math
import re
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

_FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

PARTIAL_MODES = ("all", "proportional")
SKIP_MODES = ("exclude", "zero")
ITEM_KINDS = ("auto", "manual")
ANSWER_SOURCES = ("pdf", "sheet", "pdf_then_sheet")

_ASSIGNMENT_RE = re.compile(r"^[a-z0-9_]+$")
_ID_RE = re.compile(r"^[a-z0-9_]+(\.[A-Za-z0-9_]+)+$")
# Points are compared with a tolerance because rubrics may split points into decimals.
_POINTS_TOLERANCE = 1e-9

_TOP_KEYS = {"assignment", "title", "version", "gpus", "order", "total_points", "due",
             "timezone", "late_policy", "answers_source", "when_skipped", "items",
             "run_timeout_s", "trains"}
# A rubric without `order` comes after every ordered one.
_UNORDERED = 10**6
_ITEM_KEYS = {"id", "title", "kind", "points", "checks", "feedback", "guidance", "answer"}
_CHECK_KEYS = {"check", "points", "partial", "when_skipped"}
_FEEDBACK_KEYS = {"pass", "fail", "skipped"}
_LATE_KEYS = {"per_day", "max_days", "grace_minutes"}


class RubricError(ValueError):
    """A rubric file is missing, unreadable, or breaks the schema."""


@dataclass(frozen=True)
class LatePolicy:
    per_day: float
    max_days: int
    grace_minutes: float = 0.0


@dataclass(frozen=True)
class CheckRule:
    check: str
    points: float
    partial: str = "all"
    when_skipped: str = "exclude"


@dataclass(frozen=True)
class Feedback:
    passed: str = ""
    failed: str = ""
    skipped: str = ""


@dataclass(frozen=True)
class Item:
    id: str
    title: str
    points: float
    kind: str = "auto"
    checks: tuple[CheckRule, ...] = ()
    feedback: Feedback = field(default_factory=Feedback)
    guidance: str = ""
    answer: str = ""  # manual items: the answer-sheet id whose text the instructor reads

    @property
    def is_manual(self) -> bool:
        return self.kind == "manual"


@dataclass(frozen=True)
class Rubric:
    assignment: str
    title: str
    version: str
    gpus: int
    items: tuple[Item, ...]
    source: str = "<memory>"
    due: _dt.datetime | None = None
    late_policy: LatePolicy | None = None
    answers_source: str | None = None
    order: int = _UNORDERED
    timezone: str | None = None  # the IANA zone `due` was given in, when the rubric names one
    run_timeout_s: float | None = None   # one run's time budget (None: the --check-timeout)
    # Whether the course's scripts train (an optimizer, backward, DDP): a grading's fork server
    # preloads what training imports lazily only for such an assignment (grader/vgpu/fork_server.py).
    trains: bool = True

    @property
    def total_points(self) -> float:
        return sum(item.points for item in self.items)

    @property
    def check_ids(self) -> list[str]:
        return [rule.check for item in self.items for rule in item.checks]

    def item(self, item_id: str) -> Item:
        for item in self.items:
            if item.id == item_id:
                return item
        raise KeyError(item_id)


def default_rubrics_dir() -> Path:
    """The repository's ``rubrics/`` folder (beside the ``grader`` package; inside it in the
    student kit: grader/common/locations.py)."""
    from grader.common.locations import data_folder
    return data_folder("rubrics")


def load_rubric(path: str | Path) -> Rubric:
    """Read and validate one rubric file; raise RubricError naming the file on any problem."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
        data = copy.deepcopy(_rubric_yaml(text))
    except OSError as exc:
        raise RubricError(f"{source}: cannot read rubric: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise RubricError(f"{source}: not valid YAML: {_one_line(exc)}") from exc
    rubric = parse_rubric(data, source)
    stem = Path(path).stem
    if rubric.assignment != stem:
        raise RubricError(f"{source}: assignment '{rubric.assignment}' does not match the "
                          f"file name (expected '{stem}')")
    return rubric


@functools.lru_cache(maxsize=64)
def _rubric_yaml(text: str) -> Any:
    """A rubric's YAML, parsed once per text (a batch's parent reads the rubrics for every
    submission it hands out, and each grading several times; keyed by the text, not the
    file's time, which can stay the same across two quick edits). libyaml where PyYAML has it
    (ten times faster; the staff's own files only), with PyYAML's own message for an error."""
    try:
        return yaml.load(text, Loader=_FAST_LOADER)
    except yaml.YAMLError:
        return yaml.safe_load(text)     # raises the error the message quotes


def load_rubrics(directory: str | Path | None = None) -> dict[str, Rubric]:
    """Every ``*.yaml`` rubric in a folder, by assignment id, in the course's order."""
    folder = Path(directory) if directory is not None else default_rubrics_dir()
    rubrics = sorted(map(load_rubric, folder.glob("*.yaml")), key=lambda r: (r.order, r.assignment))
    return {r.assignment: r for r in rubrics}


def checks_worth_no_point(directory: str | Path | None = None) -> frozenset[str]:
    """The checks that only tell the student something (practical4.uneven_batch: a batch of 63
    the handout never splits): their rubric gives them no point. Their failure costs nothing,
    so a session of the checks counts it as xfailed, not failed (grader/pytest_plugin.py), and
    `pytest` exits as `pdl-grade check` does."""
    return frozenset(rule.check for rubric in load_rubrics(directory).values()
                     for item in rubric.items for rule in item.checks if not rule.points)


def assignment_ids(directory: str | Path | None = None) -> list[str]:
    """The assignments the grader knows: one per rubric file, in the course's order. This is
    the only list of assignments; the CLI, the batch and the reports all read it."""
    return list(load_rubrics(directory))


def parse_rubric(data: Any, source: str = "<memory>") -> Rubric:
    """Validate already-parsed YAML data and build a Rubric."""
    where = _Where(source)
    if not isinstance(data, dict):
        where.fail(f"the rubric must be a mapping, got {_kind(data)}")
    where.no_unknown_keys(data, _TOP_KEYS)

    assignment = where.required_str(data, "assignment")
    if not _ASSIGNMENT_RE.match(assignment):
        where.fail(f"assignment must match [a-z0-9_]+, got {assignment!r}")
    title = where.required_str(data, "title")
    version = where.required_str(data, "version", allow_numbers=True)
    gpus = data.get("gpus")
    if "gpus" not in data:
        where.fail("gpus is required")
    if not _is_int(gpus) or gpus < 0:
        where.fail(f"gpus must be a non-negative integer, got {gpus!r}")

    zone = _parse_zone(data["timezone"], where) if "timezone" in data else None
    if zone is not None and "due" not in data:
        where.fail("timezone needs a due date")
    due = _parse_due(data.get("due"), zone, where) if "due" in data else None
    late_policy = _parse_late_policy(data["late_policy"], where) if "late_policy" in data else None
    if late_policy is not None and due is None:
        where.fail("late_policy needs a due date")
    answers_source = data.get("answers_source")
    if answers_source is not None:
        where.one_of("answers_source", answers_source, ANSWER_SOURCES)
    order = data.get("order", _UNORDERED)
    if not _is_int(order) or order < 0:
        where.fail(f"order must be a non-negative integer, got {order!r}")
    default_skip = data.get("when_skipped", "exclude")
    where.one_of("when_skipped", default_skip, SKIP_MODES)
    run_timeout = data.get("run_timeout_s")
    if "run_timeout_s" in data and (not _is_number(run_timeout) or run_timeout <= 0):
        where.fail(f"run_timeout_s must be a positive number of seconds, got {run_timeout!r}")
    trains = data.get("trains", True)
    if not isinstance(trains, bool):
        where.fail(f"trains must be true or false, got {trains!r}")

    raw_items = data.get("items")
    if not isinstance(raw_items, list) or not raw_items:
        where.fail(f"items must be a non-empty list, got {_kind(raw_items)}")
    items = tuple(_parse_item(raw, i, assignment, default_skip, where)
                  for i, raw in enumerate(raw_items))
    _check_unique(items, where)

    rubric = Rubric(assignment=assignment, title=title, version=version, gpus=gpus,
                    items=items, source=source, due=due, late_policy=late_policy,
                    answers_source=answers_source, order=order,
                    timezone=zone.key if zone else None,
                    run_timeout_s=float(run_timeout) if run_timeout is not None else None,
                    trains=trains)
    if "total_points" in data:
        declared = data["total_points"]
        if not _is_number(declared):
            where.fail(f"total_points must be a number, got {declared!r}")
        if not _close(declared, rubric.total_points):
            where.fail(f"total_points is {declared} but the items add up to "
                       f"{_fmt(rubric.total_points)}")
    return rubric


def _parse_item(raw: Any, index: int, assignment: str, default_skip: str,
                top: "_Where") -> Item:
    label = f"items[{index}]"
    if isinstance(raw, dict) and isinstance(raw.get("id"), str) and raw["id"]:
        label = f"item '{raw['id']}'"
    where = top.inside(label)
    if not isinstance(raw, dict):
        where.fail(f"must be a mapping, got {_kind(raw)}")
    where.no_unknown_keys(raw, _ITEM_KEYS)

    item_id = where.required_str(raw, "id")
    if not item_id.startswith(assignment + ".") or not _ID_RE.match(item_id):
        where.fail(f"id must look like '{assignment}.<name>', got {item_id!r}")
    title = where.required_str(raw, "title")
    kind = raw.get("kind", "auto")
    where.one_of("kind", kind, ITEM_KINDS)
    guidance = raw.get("guidance", "")
    if not isinstance(guidance, str):
        where.fail(f"guidance must be text, got {_kind(guidance)}")
    feedback = _parse_feedback(raw.get("feedback"), where)

    points = raw.get("points")
    if "points" in raw and not _is_points(points):
        where.fail(f"points must be a non-negative number, got {points!r}")

    answer = raw.get("answer", "")
    if not isinstance(answer, str):
        where.fail(f"answer must be an answer id such as task2.explanation, got {_kind(answer)}")
    if answer and kind != "manual":
        where.fail("answer belongs to manual items (the text the instructor grades)")

    if kind == "manual":
        if "checks" in raw:
            where.fail("a manual item cannot have checks")
        if "points" not in raw:
            where.fail("points is required for a manual item (0 is allowed)")
        return Item(id=item_id, title=title, points=float(points), kind=kind,
                    feedback=feedback, guidance=guidance, answer=answer)

    raw_checks = raw.get("checks")
    if not isinstance(raw_checks, list) or not raw_checks:
        where.fail(f"checks must be a non-empty list for an automatic item, got {_kind(raw_checks)}")
    checks = tuple(_parse_check(c, i, assignment, default_skip, where)
                   for i, c in enumerate(raw_checks))
    check_sum = sum(c.points for c in checks)
    if points is None:
        points = check_sum
    elif not _close(points, check_sum):
        where.fail(f"points is {_fmt(points)} but its checks add up to {_fmt(check_sum)}")
    return Item(id=item_id, title=title, points=float(points), kind=kind, checks=checks,
                feedback=feedback, guidance=guidance)


def _parse_check(raw: Any, index: int, assignment: str, default_skip: str,
                 where: "_Where") -> CheckRule:
    prefix = f"checks[{index}]"
    if not isinstance(raw, dict):
        where.fail(f"{prefix} must be a mapping, got {_kind(raw)}")
    where.no_unknown_keys(raw, _CHECK_KEYS, prefix=prefix)
    check = raw.get("check")
    if not isinstance(check, str) or not check.strip():
        where.fail(f"{prefix}.check must be a check id, got {check!r}")
    if not check.startswith(assignment + ".") or not _ID_RE.match(check):
        where.fail(f"{prefix}.check must look like '{assignment}.<name>', got {check!r}")
    if "points" not in raw:
        where.fail(f"{prefix}.points is required")
    points = raw["points"]
    if not _is_points(points):
        where.fail(f"{prefix}.points must be a non-negative number, got {points!r}")
    partial = raw.get("partial", "all")
    where.one_of(f"{prefix}.partial", partial, PARTIAL_MODES)
    when_skipped = raw.get("when_skipped", default_skip)
    where.one_of(f"{prefix}.when_skipped", when_skipped, SKIP_MODES)
    return CheckRule(check=check, points=float(points), partial=partial,
                     when_skipped=when_skipped)


def _parse_feedback(raw: Any, where: "_Where") -> Feedback:
    if raw is None:
        return Feedback()
    if not isinstance(raw, dict):
        where.fail(f"feedback must be a mapping with pass/fail/skipped, got {_kind(raw)}")
    where.no_unknown_keys(raw, _FEEDBACK_KEYS, prefix="feedback")
    for key, value in raw.items():
        if not isinstance(value, str):
            where.fail(f"feedback.{key} must be text, got {_kind(value)}")
    return Feedback(passed=raw.get("pass", ""), failed=raw.get("fail", ""),
                    skipped=raw.get("skipped", ""))


def _parse_zone(raw: Any, where: "_Where") -> ZoneInfo:
    if not isinstance(raw, str) or not raw.strip():
        where.fail(f"timezone must be an IANA time zone name such as Europe/Tallinn, got {raw!r}")
    try:
        return ZoneInfo(raw.strip())
    except (ZoneInfoNotFoundError, ValueError):
        where.fail(f"timezone {raw!r} is not a time zone name (use an IANA name such as "
                   f"Europe/Tallinn or UTC)")


def _parse_due(raw: Any, zone: ZoneInfo | None, where: "_Where") -> _dt.datetime:
    # YAML turns an unquoted timestamp into a datetime (or a date) already.
    if isinstance(raw, _dt.datetime):
        due = raw
    elif isinstance(raw, str):
        try:
            due = _dt.datetime.fromisoformat(raw.strip())
        except ValueError:
            where.fail(f"due must be an ISO 8601 date-time such as '2026-04-30 23:59' (with "
                       f"timezone) or '2026-04-30T23:59:00+03:00', got {raw!r}")
    else:
        where.fail(f"due must be an ISO 8601 date-time such as '2026-04-30 23:59', got {raw!r}")
    if zone is None:
        # A due date without a zone would shift by hours depending on the grading machine.
        if due.tzinfo is None or due.utcoffset() is None:
            where.fail(f"due must include a time zone offset (e.g. +03:00) or the rubric a "
                       f"timezone (e.g. Europe/Tallinn), got {raw!s}")
        return due
    local = due.replace(tzinfo=zone)
    # A wall-clock time the zone skips (the hour lost to summer time) names no instant.
    if local.astimezone(_dt.timezone.utc).astimezone(zone).replace(tzinfo=None) \
            != due.replace(tzinfo=None):
        where.fail(f"due {raw!s} does not exist in {zone.key} (the clocks skip it)")
    if due.tzinfo is not None and due.utcoffset() != local.utcoffset():
        where.fail(f"due {raw!s} has the offset {_offset(due)}, but {zone.key} is on "
                   f"{_offset(local)} then; give the local time without an offset")
    return local


def _offset(when: _dt.datetime) -> str:
    minutes = int(when.utcoffset().total_seconds() // 60)
    sign = "-" if minutes < 0 else "+"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def _parse_late_policy(raw: Any, where: "_Where") -> LatePolicy:
    if not isinstance(raw, dict):
        where.fail(f"late_policy must be a mapping with per_day and max_days, got {_kind(raw)}")
    where.no_unknown_keys(raw, _LATE_KEYS, prefix="late_policy")
    per_day = raw.get("per_day")
    if not _is_number(per_day) or not 0 <= per_day <= 1:
        where.fail(f"late_policy.per_day must be a fraction between 0 and 1, got {per_day!r}")
    max_days = raw.get("max_days")
    if not _is_int(max_days) or max_days < 0:
        where.fail(f"late_policy.max_days must be a non-negative integer, got {max_days!r}")
    grace = raw.get("grace_minutes", 0)
    if not _is_points(grace):
        where.fail(f"late_policy.grace_minutes must be a non-negative number, got {grace!r}")
    return LatePolicy(per_day=float(per_day), max_days=max_days, grace_minutes=float(grace))


def _check_unique(items: tuple[Item, ...], where: "_Where") -> None:
    seen_items: set[str] = set()
    seen_checks: dict[str, str] = {}
    for item in items:
        if item.id in seen_items:
            where.inside(f"item '{item.id}'").fail("duplicate item id")
        seen_items.add(item.id)
        for rule in item.checks:
            # A check counted twice would give its points twice.
            if rule.check in seen_checks:
                where.inside(f"item '{item.id}'").fail(
                    f"check '{rule.check}' is already scored by item '{seen_checks[rule.check]}'")
            seen_checks[rule.check] = item.id


class _Where:
    """Builds error messages of the form '<file>: <context>: <problem>'."""

    def __init__(self, source: str, context: str = ""):
        self.source, self.context = source, context

    def inside(self, context: str) -> "_Where":
        return _Where(self.source, context)

    def fail(self, problem: str):
        prefix = f"{self.source}: {self.context}: " if self.context else f"{self.source}: "
        raise RubricError(prefix + problem)

    def no_unknown_keys(self, mapping: dict, allowed: set[str], prefix: str = "") -> None:
        unknown = sorted(str(k) for k in mapping if k not in allowed)
        if unknown:
            owner = f"{prefix} has " if prefix else ""
            self.fail(f"{owner}unknown key {', '.join(map(repr, unknown))} "
                      f"(allowed: {', '.join(sorted(allowed))})")

    def required_str(self, mapping: dict, key: str, allow_numbers: bool = False) -> str:
        if key not in mapping:
            self.fail(f"{key} is required")
        value = mapping[key]
        if allow_numbers and _is_number(value):
            value = str(value)
        if not isinstance(value, str) or not value.strip():
            self.fail(f"{key} must be non-empty text, got {value!r}")
        return value

    def one_of(self, name: str, value: Any, allowed: tuple[str, ...]) -> None:
        if value not in allowed:
            self.fail(f"{name} must be one of {', '.join(allowed)}, got {value!r}")


def _is_number(value: Any) -> bool:
    # bool is an int in Python; `points: yes` is a rubric typo, not 1 point.
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_points(value: Any) -> bool:
    return _is_number(value) and value >= 0


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= _POINTS_TOLERANCE


def _fmt(points: float) -> str:
    return f"{points:g}"


def _kind(value: Any) -> str:
    return "nothing" if value is None else type(value).__name__


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())
