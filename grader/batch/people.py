"""Who is who across a gradebook's uploads: one person, one row of grades.csv.

Moodle numbers an assignment's participants on their own (Alice is `Alice Tamm_401101_...` in
Practical 4's download and `Alice Tamm_502201_...` in HW3's), so each export's upload is a
student of its own in the gradebook (its key, folder, overrides and Moodle row stay that
assignment's). The course's record puts them together again:
- uploads of one email (the Moodle worksheet's `Email address`, kept in the gradebook) are one
  person, whatever their names;
- else uploads of one full name (compared as typed: Unicode form, case and spacing aside) are
  one person, unless that cannot be right: their emails differ (two people with one name), or
  two of them graded the same assignment (two people with one name in one download, or one
  upload graded twice). Those stay apart, each its own row, and are flagged loudly: the batch
  warns, the class page lists them, and their rows' status says so.
"""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Iterable, Sequence

from grader.batch.gradebook import CurrentRun


@dataclass
class Person:
    runs: list[CurrentRun]                 # in the course's order of their assignments
    flag: str | None = None                # why an upload of this name was kept apart

    @property
    def name(self) -> str:
        return self.runs[0].student.name

    @property
    def email(self) -> str | None:
        return next((r.student.email for r in self.runs if r.student.email), None)

    @property
    def keys(self) -> list[str]:
        return [r.student.key for r in self.runs]


def same_name(name: str) -> str:
    return " ".join(unicodedata.normalize("NFC", name).casefold().split())


def _graded_assignments(run: CurrentRun) -> tuple[str, ...]:
    # A gradebook's runs name the assignments they graded; a result names them too.
    found = list(run.assignments) or [a.get("id") for a in (run.result or {}).get("assignments") or []]
    return tuple(dict.fromkeys([*found, *run.assignment_scores]))


def people(runs: Iterable[CurrentRun], order: Sequence[str] = ()) -> tuple[list[Person], list[str]]:
    """(every person, sorted by their first key; a warning per name kept apart)."""
    runs = sorted(runs, key=lambda r: r.student.key)
    parent = {r.student.key: r.student.key for r in runs}

    def find(key: str) -> str:
        while parent[key] != key:
            parent[key] = parent[parent[key]]
            key = parent[key]
        return key

    def join(keys: Iterable[str]) -> None:
        keys = [find(k) for k in keys]
        for key in keys[1:]:
            parent[find(key)] = find(keys[0])

    by_email: dict[str, list[str]] = {}
    for run in runs:
        if run.student.email:
            by_email.setdefault(run.student.email.strip().casefold(), []).append(run.student.key)
    for keys in by_email.values():
        join(keys)

    run_of = {r.student.key: r for r in runs}
    by_name: dict[str, list[str]] = {}
    for run in runs:
        by_name.setdefault(same_name(run.student.name), []).append(run.student.key)
    flags: dict[str, str] = {}
    warnings = []
    for name, keys in sorted(by_name.items()):
        roots = {find(key) for key in keys}
        if len(roots) < 2:
            continue
        groups: dict[str, list[CurrentRun]] = {root: [] for root in roots}
        for key in parent:   # each group whole: an email may have joined another name to it
            if find(key) in groups:
                groups[find(key)].append(run_of[key])
        why = _apart(list(groups.values()))
        if why is None:
            join(groups)
            continue
        shown = run_of[keys[0]].student.name
        every = sorted(k for members in groups.values() for k in (r.student.key for r in members))
        text = (f"{len(every)} uploads of students named '{shown}' ({', '.join(every)}) were "
                f"not put together: {why}. Each is a row of its own in grades.csv; if they are "
                "one person, give the Moodle worksheets (--moodle-worksheet: their emails say "
                "who is who) and run the batch again")
        warnings.append(text)
        for key in every:
            flags[key] = text

    position = {a: i for i, a in enumerate(order)}
    found: dict[str, list[CurrentRun]] = {}
    for run in runs:
        found.setdefault(find(run.student.key), []).append(run)
    persons = []
    for members in found.values():
        members.sort(key=lambda r: (min((position.get(a, len(position)) for a in
                                         _graded_assignments(r)), default=len(position)),
                                    r.student.key))
        flag = next((flags[r.student.key] for r in members if r.student.key in flags), None)
        persons.append(Person(members, flag))
    return sorted(persons, key=lambda p: min(p.keys)), warnings


def _apart(groups: list[list[CurrentRun]]) -> str | None:
    """Why uploads of one name cannot be one person's, or None where they can."""
    emails = sorted({r.student.email.strip().casefold() for members in groups for r in members
                     if r.student.email})
    if len(emails) > 1:
        return f"their Moodle emails differ ({', '.join(emails)}): different people with one name"
    seen: dict[str, int] = {}
    for members in groups:
        for run in members:
            for assignment in _graded_assignments(run):
                other = seen.get(assignment)
                if other is not None and other != id(members):
                    return (f"more than one of them has {assignment} graded: two people with "
                            "one name, or one person's upload graded twice")
        for run in members:
            for assignment in _graded_assignments(run):
                seen[assignment] = id(members)
    return None


def person_of(persons: Iterable[Person]) -> dict[str, int]:
    """{student key: the index of their person}."""
    return {key: number for number, person in enumerate(persons) for key in person.keys}
