"""One key per assignment for students outside Moodle, so grading one assignment never
replaces another's record.

A gradebook keeps one current run per student key. Moodle numbers each assignment's
participants anew, so its uploads get a key per assignment by themselves; a plain folder
(`alice/`, a student's course repository) keeps its name for every assignment. Graded for
Practical 4 and later, into the same DIR, for HW3, `alice`'s HW3 run had replaced her Practical
4 run: her Practical 4 grade left grades.csv, her report left submissions/alice/.

So an upload graded for assignments its key's current run did not grade goes under a key of
its own, `alice.hw3`, as Moodle's second download does; grades.csv and the class page put the
keys of one name back in one row (grader/batch/people.py). A key whose current run graded any
of the same assignments keeps being used: that is a new upload of the same work, and replaces
it as before; and an upload graded for every assignment of another key of its name (`alice/`
graded for Practical 4 and HW3 at once, after `alice.hw3`) replaces that key's record too, once
its own grading is recorded: one grade per assignment, never two rows of one name.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Iterable

from grader.batch.inputs import Student, Submission, safe_key, same_name


@dataclass
class Keys:
    found: list[Submission]                    # each plain upload under its record's key
    graded_by: dict[str, tuple[str, ...]]      # by those keys
    replaces: dict[str, list[str]]             # {key: other keys of its name whose record it takes}
    lines: list[str]                           # what was given a key of its own, and why


def keys_per_assignment(found: list[Submission], graded_by: dict[str, tuple[str, ...]],
                        graded_before: dict[str, tuple[str, ...]], known: Iterable[Student]
                        ) -> Keys:
    """Each plain upload under the key that holds its assignments' record.

    `graded_before`: {key: the assignments its current run graded}; `known`: the gradebook's
    students, in the order they were first graded."""
    keys_of_name: dict[str, list[str]] = {}
    for student in known:
        if not student.participant_id:
            keys_of_name.setdefault(same_name(student.name), []).append(student.key)
    taken = {s.student.key for s in found} | {k for keys in keys_of_name.values() for k in keys}
    keys = Keys([], {}, {}, [])
    for submission in found:
        student, wanted = submission.student, graded_by[submission.student.key]
        key = student.key
        if not student.participant_id:
            others = keys_of_name.get(same_name(student.name), [])
            key = _key_for(student, wanted, others, graded_before, taken)
            covered = [k for k in others if k != key and graded_before.get(k)
                       and set(graded_before[k]) <= set(wanted)]
            if covered:
                keys.replaces[key] = covered
        if key != student.key:
            if not graded_before.get(key):
                first = next((k for k in [student.key, *others] if graded_before.get(k)), None)
                keys.lines.append(
                    f"{key}: {student.name}'s upload graded for {', '.join(wanted)} under a key "
                    f"of its own" + (f": the key {first} holds their "
                                     f"{', '.join(graded_before[first])} grade, which stays"
                                     if first else "")
                    + f"; grades.csv shows both in one row (overrides for this upload go under "
                    f"{key})")
            taken.add(key)
            submission = dataclasses.replace(
                submission, student=dataclasses.replace(student, key=key))
        keys.found.append(submission)
        keys.graded_by[key] = wanted
    return keys


def _key_for(student: Student, wanted: tuple[str, ...], keys: list[str],
             graded_before: dict[str, tuple[str, ...]], taken: set[str]) -> str:
    """The key of this name whose record is of these assignments; the upload's own where it
    has no record yet; else a key named after the assignments (`alice.hw3`)."""
    if student.key not in keys:
        keys = [student.key, *keys]
    for key in keys:
        if set(graded_before.get(key, ())) & set(wanted):
            return key
    if not graded_before.get(student.key):
        return student.key
    new = safe_key(f"{keys[0]}.{'-'.join(wanted)}")
    # Taken by another name's student or upload, or holding a record of other assignments:
    # never shared. One of this name without a record (taken over by a later upload) is reused.
    while graded_before.get(new) or (new in taken and new not in keys):
        new = safe_key(f"{new}.x")
    return new
