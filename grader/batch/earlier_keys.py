"""Student keys of the ASCII-only grader, kept working after keys began to keep letters.

Until keys kept letters of any script (grader/batch/inputs.py `safe_key`), every other
character became "_": `Jüri Õunapuu_1009` was `J_ri_unapuu_1009`, `王伟/` was `unnamed` (and,
beside `李娜/`, `unnamed_0c6e5fe8`: discover() adds a hash of the name where two names make
one key). A class graded then has those keys in its gradebook, its submissions/ folders and
its overrides file.

- A student the gradebook holds keeps their key: discover() finds a Moodle participant by id
  and anyone else by name, whatever key the name would make now. So a re-run on that --out
  neither grades them again under a new key nor duplicates their row, and their overrides
  (by the old key) apply as before.
- An overrides entry under the other form of a student's key applies to the student, with a
  note saying which key to write: an overrides file of the old keys used for a fresh --out
  (where the students get the new keys), or one written with the new form for a gradebook
  that keeps the old. Only where exactly one student's name makes that key; an entry for the
  key itself wins over one for its other form.
"""
from __future__ import annotations

import hashlib
import re
from typing import Callable, Iterable

from grader.batch.inputs import Student, safe_key, same_name

# The ASCII-only grader's key: its characters and its bound.
_LEGACY_KEPT = re.compile(r"[^A-Za-z0-9._-]+")
LEGACY_MAX_KEY_CHARS = 120
# The sizes of the name's hash discover() adds where two names make one key.
_HASH_SIZES = (8, 16)


def legacy_key(text: str) -> str:
    """The key the ASCII-only grader made of `text` (before any hash discover() added)."""
    key = _LEGACY_KEPT.sub("_", text).strip("._")
    if len(key) > LEGACY_MAX_KEY_CHARS:
        digest = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:8]
        key = f"{key[:LEGACY_MAX_KEY_CHARS - 9]}_{digest}"
    return key or "unnamed"


def _named(student: Student) -> str:
    """What the student's key is made of: Moodle's `Name_<id>`, else the upload's name."""
    return f"{student.name}_{student.participant_id}" if student.participant_id else student.name


def other_forms(student: Student) -> set[str]:
    """The keys the student's name makes, by either grader, other than their own."""
    digest = hashlib.sha256(same_name(student.name).encode("utf-8", "surrogateescape")).hexdigest()
    forms = set()
    for base in (legacy_key(_named(student)), safe_key(_named(student))):
        forms |= {base, *(f"{base}_{digest[:size]}" for size in _HASH_SIZES)}
    return forms - {student.key}


def overrides_under_current_keys(overrides: dict[str, dict], students: Iterable[Student],
                                 note: Callable[[str], None]) -> dict[str, dict]:
    """`overrides` with each entry under another form of exactly one student's key moved to
    that key (said through `note`); every other entry as it was."""
    students = list({s.key: s for s in students}.values())
    keys = {s.key for s in students}
    claims: dict[str, set[str]] = {}
    for student in students:
        for form in other_forms(student):
            claims.setdefault(form, set()).add(student.key)
    moved = dict(overrides)
    for given in sorted(overrides):
        owners = claims.get(given, set())
        if given in keys or len(owners) != 1:
            continue
        (key,) = owners
        if key in overrides:
            note(f"overrides for '{given}' ignored: it is another form of the key {key}, whose "
                 f"own entry in the file is applied; remove the '{given}' entry")
            del moved[given]
            continue
        moved[key] = moved.pop(given)
        note(f"overrides for '{given}' applied to {key}, that student's key in this gradebook "
             f"('{given}' is their key as another version of the grader makes it): write {key} "
             "in the overrides file")
    return moved
