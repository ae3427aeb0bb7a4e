"""Where a symbolic link of an upload would lead, for the instructor: the links themselves are
never followed (grader/batch/unpack.py), but one that names the course's reference solutions,
the grader's files or another student's upload is plain evidence of an attempt to copy, and a
person should see it (adv39 F3: `answers.yaml -> /work/main/reference/hw3/answers.yaml` was
recorded only in the batch log). The score is not changed: the link graded nothing.

Decided from the path alone (made absolute without following anything): the grader's own
folders as installed here; SUBMISSIONS, outside the student's own uploads; and a Moodle
submission folder of another participant named anywhere in the path (a link made on the
student's machine, into a class download, names no folder of this one)."""
from __future__ import annotations

from pathlib import PurePosixPath, Path
from typing import Sequence

from grader.batch.unpack import MOODLE_NAME, SkippedLink
from grader.common.locations import GRADER_PACKAGE, data_folder

__all__ = ["linked_into", "link_lines"]


def _places() -> list[tuple[Path, str]]:
    """(folder, what it is), the most particular first."""
    reference = data_folder("reference")
    places = [(reference, "the course's reference solutions"),
              (GRADER_PACKAGE, "the grader's own files")]
    if reference.parent == GRADER_PACKAGE.parent:   # a checkout: the reference beside the package
        places.append((GRADER_PACKAGE.parent, "the grader's own files"))
    found = []
    for folder, what in places:
        found += [(folder, what), (folder.resolve(), what)]
    return found


def _within(path: PurePosixPath, folder: Path) -> bool:
    return path == PurePosixPath(folder) or path.is_relative_to(PurePosixPath(folder))


def linked_into(link: SkippedLink, own: Sequence[Path], submissions: Path | None,
                participant: str | None) -> str | None:
    """What of the grader's or of another student's `link` points into ("the course's reference
    solutions", "another upload in SUBMISSIONS (Olga Other_...)"); None for anything else (a
    student's own file, /etc, their home folder). `own`: the student's uploads (their links
    into them are their own); `participant`: their Moodle participant id."""
    if link.points_to is None:
        return None
    path = PurePosixPath(link.points_to)
    if any(_within(path, mine) or _within(path, mine.resolve()) for mine in own):
        return None     # the student's own file (answers.yaml -> ../answers_final.yaml)
    for folder, what in _places():
        if _within(path, folder):
            return what
    if submissions is not None:
        for folder in (submissions, submissions.resolve()):
            if _within(path, folder):
                inside = path.relative_to(PurePosixPath(folder)).parts
                return "another upload in SUBMISSIONS" + (f" ({inside[0]})" if inside else "")
    for part in PurePosixPath(link.target or "").parts:
        match = MOODLE_NAME.match(part)
        if match and match["pid"] != participant:
            return f"another participant's Moodle submission ({part})"
    return None


def link_lines(links: Sequence[SkippedLink], own: Sequence[Path], submissions: Path | None,
               participant: str | None, shown) -> list[dict[str, str | None]]:
    """Each skipped link as result.json keeps it (`links`): its path in the upload (`in` the
    zip holding it), its target, and what of others' it points into (`into`, or None).
    `shown`: how a name from an upload is shown (control characters escaped)."""
    return [{"path": shown(link.where), "in": shown(link.archive) if link.archive else None,
             "target": shown(link.target) if link.target is not None else None,
             "into": linked_into(link, own, submissions, participant)} for link in links]
