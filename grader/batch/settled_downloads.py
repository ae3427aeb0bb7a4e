"""Rows for a person that stood for a zip of Moodle's folders, dropped once it is settled.

A zip holding only Moodle's submission folders beside other uploads is listed for a person
(grader/batch/zipped_downloads.py): a whole download or a student's zip of her own folder,
the batch cannot tell. The staff unzip it and grade again; its participants were then graded
under their own names, but the zip's row stayed current: "needs a person" in grades.csv, the
class page and the Moodle sheets for work that had been graded (an instructor's regrade).

Such a row is dropped from the current record (kept in the gradebook's history, the reason in
its logs, its DIR/submissions/<key>/ removed) where its zip is gone from where a batch found it,
or where every participant it holds has a row of their own; a zip still beside the uploads whose
participants all have one is no longer listed. Only such rows are touched: a grade, or any other
row for a person, never is. A zip found by the batch of another folder (several downloads graded
into one DIR) is left alone while it is still where it was found.
"""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Sequence

from grader.batch.errors import BatchError
from grader.batch.gradebook import Gradebook
from grader.batch.inputs import Student, Submission, same_name, shown_name
from grader.batch.unpack import MOODLE_NAME
from grader.batch.zipped_downloads import BESIDE_UPLOADS, Downloads, participant_names

# In the gradebook's kept settings: {row key: {"path": the zip, "participants": [ids]}}.
KEPT_SETTING = "zips_for_a_person"


def participant_ids(archive: Path) -> list[str]:
    """The Moodle participant ids of a zip of Moodle's folders ([] where it cannot be read)."""
    try:
        names = participant_names(archive)
    except BatchError:
        return []
    matches = [MOODLE_NAME.match(same_name(name)) for name in names]
    return sorted({match["pid"] for match in matches if match})


def settle_moodle_zips(book: Gradebook, downloads: Downloads, found: list[Submission],
                       known: Sequence[Student], out: Path,
                       dry_run: bool = False) -> tuple[list[Submission], list[str]]:
    """`found` less the zips whose participants all have rows, and what was settled, said.
    Rows of earlier batches for zips now gone or settled are dropped (in a dry run, said only)."""
    current = set(book.current_sources())
    graded_here = {s.student.participant_id for s in found
                   if s.student.participant_id and not set(s.sources) & set(downloads.beside)}
    with_rows = graded_here | {s.participant_id for s in known
                               if s.participant_id and s.key in current}
    kept = dict(book.setting(KEPT_SETTING) or {})
    notes: list[str] = []
    left: list[Submission] = []
    for submission in found:
        zips = [source for source in submission.sources if source in downloads.beside]
        if not zips or len(submission.sources) > 1:
            left.append(submission)
            continue
        ids = participant_ids(zips[0])
        key = submission.student.key
        if ids and set(ids) <= with_rows:
            said = (f"{shown_name(zips[0].name)}: each of its {len(ids)} participant(s) has a "
                    "row of their own (it was unzipped and graded), so it is no longer listed "
                    "for a person")
            downloads.warnings[:] = [w for w in downloads.warnings
                                     if w != downloads.problems[zips[0]][0]]
            notes.append(said)
            if key in current:
                _drop(book, key, said, out, dry_run)   # listed by an earlier batch
            kept.pop(key, None)
            continue
        kept[key] = {"path": str(zips[0].resolve()), "participants": ids}
        left.append(submission)
    listed = {s.student.key for s in left}
    for key, entry in sorted(kept.items()):
        if key in listed:
            continue
        path, ids = Path(str(entry.get("path") or "")), list(entry.get("participants") or [])
        if key not in current:
            kept.pop(key)
            continue
        if not path.exists():
            why = (f"{key}: its row for a person is dropped: {shown_name(path.name)} is no longer "
                   f"in {shown_name(str(path.parent))}/ (its participants, once unzipped, are "
                   "graded under their own names)")
        elif ids and set(ids) <= with_rows:
            why = (f"{key}: its row for a person is dropped: each of the {len(ids)} "
                   f"participant(s) of {shown_name(path.name)} has a row of their own")
        else:
            continue
        if dry_run:
            notes.append(f"{why} (a dry run: not yet)")
        elif _drop(book, key, why, out, dry_run):
            notes.append(why)
            kept.pop(key)
        else:   # the key's row is a student's own by now: nothing of the zip's is left
            kept.pop(key)
    if not dry_run and kept != (book.setting(KEPT_SETTING) or {}):
        book.keep_setting(KEPT_SETTING, kept)
    return left, notes


def _drop(book: Gradebook, key: str, why: str, out: Path, dry_run: bool) -> bool:
    """The zip's row no longer current, and its published folder removed; False where the
    key's current run is no such row (a student's own, since: left as it is)."""
    if dry_run:
        return False
    if not book.retire_person_row(key, BESIDE_UPLOADS, why):
        return False
    shutil.rmtree(out / "submissions" / key, ignore_errors=True)
    return True
