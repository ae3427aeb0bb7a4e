"""The instructor's overrides, read, checked and looked up in one place.

An override is a person's grade: points for a written answer (a manual item), a regrade of an
automatic item, or the release of an assignment held for integrity review.

    hw3.task1.explanation: {points: 1.5, comment: "Right point, no reason given"}
    hw3.task3: {points: 3, comment: "Regraded by hand"}
    practical4.integrity: {cleared: true, comment: "subprocess only runs nvidia-smi"}

`pdl-grade grade --overrides FILE` takes that mapping for one submission (or the class's
file, of which it takes the student's own entry: `class_entry`); `pdl-grade batch --overrides
FILE` takes `{student key: <that mapping>}` for a class. An entry whose points are null (or
absent) is a written answer not graded yet: it stays pending, and is no problem (the skeleton
in instructor.md is written so; a pasted skeleton of zeros had graded every answer 0). Each
entry is checked against the rubrics: an unknown item id, points outside 0..the item's points, a malformed
entry or an assignment not graded in this run is a *problem*: the entry is ignored, every other
entry applies, and the problem is said once, by every caller the same way (printed on the
console, kept in result.json's `override_problems`, listed in instructor.md and on the class
page). An instructor's typo is never shown to the student as a grading problem.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from grader.common.text import did_you_mean
from grader.scoring.rubric import Rubric

INTEGRITY_SUFFIX = ".integrity"


class OverridesError(ValueError):
    """An overrides file that cannot be used at all (unreadable, not a mapping)."""


@dataclass(frozen=True)
class ItemOverride:
    item: str
    points: float
    comment: str = ""


@dataclass(frozen=True)
class Release:
    """`<assignment>.integrity: {cleared: true}`: the held points are released."""
    assignment: str
    comment: str = ""


@dataclass
class Overrides:
    items: dict[str, ItemOverride] = field(default_factory=dict)
    releases: dict[str, Release] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    # The mapping as the instructor wrote it: recorded in result.json (`overrides`) so a batch
    # can tell whether a student's entry changed since their result was scored.
    given: dict[str, Any] = field(default_factory=dict)

    def item(self, item_id: str) -> ItemOverride | None:
        return self.items.get(item_id)

    def release(self, assignment: str) -> Release | None:
        return self.releases.get(assignment)

    def __bool__(self) -> bool:
        return bool(self.given)


NO_OVERRIDES = Overrides()


def read_overrides_file(path: str | Path) -> dict[str, Any]:
    """One submission's overrides from a YAML or JSON file: {item id: {...}}."""
    data = _read_mapping(path, "must be a mapping of item ids to {points: x, comment: ...}")
    return {str(key): value for key, value in data.items()}


def read_class_overrides_file(path: str | Path) -> dict[str, dict[str, Any]]:
    """A class's overrides: {student key: {item id: {...}}}."""
    shape = "must map each student's key to {item id: {points: x, comment: ...}}"
    data = _read_mapping(path, shape)
    if not all(isinstance(entry, Mapping) for entry in data.values()):
        raise OverridesError(f"overrides file {path} {shape}")
    return {str(key): {str(k): v for k, v in entry.items()} for key, entry in data.items()}


def _read_mapping(path: str | Path, shape: str) -> Mapping:
    from grader.common.safe_yaml import YamlError, load_yaml_file
    try:
        data = load_yaml_file(path)
    except (OSError, YamlError) as problem:
        raise OverridesError(f"overrides file {path} cannot be read: {problem}") from None
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise OverridesError(f"overrides file {path} {shape}")
    return data


def is_class_overrides(data: Mapping[str, Any], assignments: Iterable[str]) -> bool:
    """Whether a mapping read from an overrides file is a class's ({student key: {item id:
    ...}}) rather than one submission's ({item id: {points, comment}})."""
    prefixes = tuple(f"{a}." for a in assignments)
    return any(isinstance(entry, Mapping) and any(str(k).startswith(prefixes) for k in entry)
               for entry in data.values())


def class_entry(data: Mapping[str, Any], key: str) -> dict[str, Any]:
    """One student's entry of a class's overrides (no other student's: their comments must
    not reach this student's result.json)."""
    entry = data.get(key)
    return {str(k): v for k, v in entry.items()} if isinstance(entry, Mapping) else {}


def check_overrides(given: Mapping[str, Any] | Overrides | None, rubrics: Mapping[str, Rubric],
                    graded: Iterable[str] | None = None) -> Overrides:
    """Check every entry of `given` against the rubrics of the assignments `graded` (default:
    every rubric given); what cannot be applied becomes a problem, never an exception."""
    if isinstance(given, Overrides):
        return given
    given = dict(given or {})
    graded = list(rubrics) if graded is None else list(graded)
    found = Overrides(given=given)
    for key, value in given.items():
        key = str(key)
        assignment = key.split(".", 1)[0]
        if assignment not in rubrics:
            found.problems.append(f"override '{key}' ignored: no assignment '{assignment}' "
                                  f"(item ids start with one of: {', '.join(rubrics)})")
            continue
        if assignment not in graded:
            found.problems.append(f"override '{key}' ignored: {assignment} is not graded in "
                                  "this run")
            continue
        if key == assignment + INTEGRITY_SUFFIX:
            _check_release(found, assignment, value)
            continue
        rubric = rubrics[assignment]
        try:
            item = rubric.item(key)
        except KeyError:
            found.problems.append(f"override '{key}' ignored: {assignment} has no item with that "
                                  f"id{_suggestion(key, rubric)}")
            continue
        _check_points(found, key, item.points, value)
    return found


def _check_release(found: Overrides, assignment: str, value: Any) -> None:
    if isinstance(value, Mapping) and value.get("cleared") is True:
        found.releases[assignment] = Release(assignment, str(value.get("comment") or "").strip())
    else:
        found.problems.append(f"override '{assignment}{INTEGRITY_SUFFIX}' ignored: it must be "
                              "{cleared: true, comment: ...}")


def _check_points(found: Overrides, key: str, maximum: float, value: Any) -> None:
    if value is None or (isinstance(value, Mapping) and value.get("points") is None):
        return   # not graded yet: the item stays pending
    points = value.get("points") if isinstance(value, Mapping) else None
    if isinstance(points, bool) or not isinstance(points, (int, float)) \
            or not math.isfinite(points) or not 0 <= points <= maximum:
        found.problems.append(f"override '{key}' ignored: points must be a number between 0 and "
                              f"{maximum:g}, got {points!r}")
        return
    found.items[key] = ItemOverride(key, float(points), str(value.get("comment") or "").strip())


def _suggestion(key: str, rubric: Rubric) -> str:
    """The closest item ids, for a typo (an instructor writing a check id, say)."""
    return did_you_mean(key, [item.id for item in rubric.items])
