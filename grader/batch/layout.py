"""Where the assignments are in an unpacked upload: the submission's root.

Students upload in many shapes; each of these is found and graded:
- the template's layout (`practical4/`, ..., `hw3/`) at the top, or under one or more folders
  (`Jane Doe/`, `my work/pdl/`: up to ROOT_SEARCH_DEPTH levels down);
- a zip named after a folder it also holds (`hw3.zip` holding `hw3/...`): the zip's own folder
  is not mistaken for the assignment folder, because an assignment folder only counts as such
  when it holds one of that assignment's files;
- one folder or zip per assignment (`practical4.zip` holding `practical4/` beside
  `practical5.zip` holding `practical5/`): their assignment folders are gathered into one root;
- an assignment's files without their folder (`model_parallel.py` and `report.pdf` loose, or in
  a zip or folder of any name): placed into the folder of the one assignment whose code files
  they are (the template's `.py` names tell: `model_parallel.py` is HW3's).
An upload in which no file any graded assignment expects is found anywhere is not graded (it
would be a silent zero): it is for a person to look at (`NeedsPerson`).

The files each assignment expects come from `student_template/<assignment>/` (its README and
report template aside; `report.pdf` where the template has a report template).
"""
from __future__ import annotations

import os
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from grader.batch.unpack import JUNK_NAMES, Rejected

ROOT_SEARCH_DEPTH = 3
TEMPLATE_DIR = Path(__file__).resolve().parents[2] / "student_template"
ARRANGED = "_arranged"        # the root made when loose files are put into their folder
GATHERED = "_gathered"        # the root made of one folder (or zip) per assignment
_NOT_EXPECTED = ("readme", "report_template")


class NeedsPerson(Rejected):
    """Nothing in the upload is what the graded assignments expect: a person should look."""


@lru_cache(maxsize=None)
def expected_files(assignment: str, template_dir: Path = TEMPLATE_DIR) -> frozenset[str]:
    """Paths (relative to the assignment's folder) of the files a submission of it holds."""
    folder = template_dir / assignment
    if not folder.is_dir():
        return frozenset()
    found = set()
    for path in folder.rglob("*"):
        if path.is_file() and not path.stem.lower().startswith(_NOT_EXPECTED):
            found.add(path.relative_to(folder).as_posix())
        elif path.is_file() and path.stem.lower().startswith("report_template"):
            found.add("report.pdf")
    return frozenset(found)


def code_files(assignments: Sequence[str]) -> dict[str, str]:
    """{file name: assignment} for the template's code files that only one assignment has."""
    owners: dict[str, set[str]] = {}
    for assignment in assignments:
        for rel in expected_files(assignment):
            if rel.endswith(".py"):
                owners.setdefault(Path(rel).name, set()).add(assignment)
    return {name: next(iter(found)) for name, found in owners.items() if len(found) == 1}


def _children(folder: Path) -> list[Path]:
    return sorted(c for c in folder.iterdir() if c.name not in JUNK_NAMES and not c.is_symlink())


def _holds_its_files(folder: Path, assignment: str) -> bool:
    expected = expected_files(assignment)
    return any((folder / rel).is_file() for rel in expected)


def _levels(top: Path, depth: int) -> list[list[Path]]:
    levels, level = [], [top]
    for _ in range(depth + 1):
        levels.append(level)
        level = [c for d in level for c in _children(d) if c.is_dir()]
    return levels


def _best(levels: list[list[Path]], top: Path, score, gather=None) -> Path | None:
    """The shallowest folder with the highest positive score; where several folders of that
    level hold assignments, what `gather` makes of them all (each holding other assignments:
    one zip per assignment, or practical4+5 in one and hw3 in another); else, on a tie,
    Rejected."""
    for level in levels:
        scored = [(score(d), d) for d in level]
        best = max((count for count, _ in scored), default=0)
        if best:
            holding = [d for count, d in scored if count > 0]
            gathered = gather(holding) if gather is not None and len(holding) > 1 else None
            if gathered is not None:
                return gathered
            winners = [d for count, d in scored if count == best]
            if len(winners) > 1:
                names = ", ".join(w.relative_to(top).as_posix() + "/" for w in winners)
                raise Rejected(f"ambiguous submission: several folders hold the assignments ({names})")
            return winners[0]
    return None


def _gather(top: Path, folders: list[Path], holds, notes: list[str]) -> Path | None:
    """One root made of folders that each hold other assignments (practical4.zip holding
    practical4/ beside practical5.zip holding practical5/): their assignment folders are moved
    into a new `_gathered...` folder of `top`. None where two hold the same assignment (two
    versions of one homework: which one counts is the student's to say)."""
    held = [holds(folder) for folder in folders]
    if sum(map(len, held)) != len(set().union(*held)):
        return None
    # A name no upload's folder can already have (a student's own `_gathered/` is left be).
    root = Path(tempfile.mkdtemp(prefix=GATHERED, dir=top))
    os.chmod(root, 0o755)
    for folder, assignments in zip(folders, held):
        for assignment in sorted(assignments):
            (folder / assignment).rename(root / assignment)
            notes.append(f"{assignment}/ graded from {(folder / assignment).relative_to(top).as_posix()}/ "
                         "(one folder per assignment in the upload)")
    return root


def find_root(top: Path, depth: int = ROOT_SEARCH_DEPTH, assignments: Sequence[str] | None = None,
              notes: list[str] | None = None) -> Path:
    """The folder holding the assignment folders (see the module's docstring); Rejected when
    there is none or two are equally good."""
    from grader.scoring.rubric import assignment_ids
    assignments = list(assignments or assignment_ids())
    notes = notes if notes is not None else []
    levels = _levels(top, depth)

    def holding(d: Path) -> set[str]:
        return {a for a in assignments if (d / a).is_dir() and _holds_its_files(d / a, a)}

    def with_files(d: Path) -> int:
        return len(holding(d))

    def by_name(d: Path) -> int:
        return sum((d / a).is_dir() and not (d / a).is_symlink() for a in assignments)

    root = _best(levels, top, with_files, lambda tied: _gather(top, tied, holding, notes))
    if root is not None:
        _lift_doubled(top, root, assignments, notes)
        return root
    arranged = _arrange_loose_files(top, levels, assignments, notes)
    if arranged is not None:
        return arranged
    # Folders named like assignments but holding none of their files: graded, and the checks
    # say what is missing.
    root = _best(levels, top, by_name)
    if root is not None:
        return root
    raise Rejected("no assignment folder found (expected the layout of student_template/: "
                   + ", ".join(f"{a}/" for a in assignments) + ")")


def _lift_doubled(top: Path, root: Path, assignments: Sequence[str], notes: list[str]) -> None:
    """An assignment folder of the root that holds none of its files but a folder of its own
    name that does (practical4.zip holding practical4/ beside a practical5.zip of loose files,
    unpacked into practical4/practical4/): the inner folder is the assignment's."""
    for assignment in assignments:
        outer = root / assignment
        inner = outer / assignment
        if outer.is_dir() and not outer.is_symlink() and not _holds_its_files(outer, assignment) \
                and inner.is_dir() and not inner.is_symlink() and _holds_its_files(inner, assignment):
            aside = Path(tempfile.mkdtemp(prefix=f"_{assignment}-wrapper", dir=top))
            outer.rename(aside / assignment)
            (aside / assignment / assignment).rename(outer)
            shutil.rmtree(aside)   # the wrapper: not graded, and no part of the content hash
            notes.append(f"{assignment}/ graded from {inner.relative_to(top).as_posix()}/ (the "
                         "assignment's folder inside a folder of its name)")


def _arrange_loose_files(top: Path, levels: list[list[Path]], assignments: Sequence[str],
                         notes: list[str]) -> Path | None:
    """The shallowest folder whose own files are one assignment's code files is moved into
    `top/_arranged/<assignment>/`; returns `top/_arranged`, or None when there is no such folder."""
    owners = code_files(assignments)
    for level in levels:
        for folder in level:
            files = [c for c in _children(folder) if c.is_file()]
            claimed = {owners[f.name] for f in files if f.name in owners}
            if not claimed:
                continue
            if len(claimed) > 1:
                raise Rejected("files of several assignments without their folders ("
                               + ", ".join(sorted(f.name for f in files if f.name in owners))
                               + "): put each assignment's files in its folder ("
                               + ", ".join(f"{a}/" for a in sorted(claimed)) + ")")
            assignment = claimed.pop()
            root = top / ARRANGED
            target = root / assignment
            target.mkdir(parents=True)
            os.chmod(root, 0o755)
            os.chmod(target, 0o755)
            moved = [c for c in _children(folder) if c != root]
            for child in moved:
                child.rename(target / child.name)
            where = folder.relative_to(top).as_posix()
            notes.append(f"{', '.join(c.name for c in moved[:6])}{' ...' if len(moved) > 6 else ''}"
                         f" (in {'the top of the upload' if where == '.' else where + '/'}) "
                         f"graded as {assignment}/: the files of {assignment} without their folder")
            return root
    return None


def require_expected_files(top: Path, graded: Sequence[str], known: Sequence[str] = (),
                           limit: int = 8) -> None:
    """NeedsPerson unless some file of a graded assignment is in the upload, wherever it is: a
    file whose name only that assignment expects (`model_parallel.py`, `report.pdf`), or one
    of its files in a folder of its name (`hw3/answers.yaml`: every assignment has an
    answers.yaml). Where no template says what an assignment expects, nothing is required."""
    everyone = {a: expected_files(a) for a in {*graded, *known}}
    if not any(everyone[a] for a in graded):
        return
    named = {}
    for assignment, files in everyone.items():
        for rel in files:
            named.setdefault(Path(rel).name, set()).add(assignment)
    distinctive = {name for name, owners in named.items() if len(owners) == 1
                   and owners <= set(graded)}
    in_folder = {f"{a}/{rel}" for a in graded for rel in everyone[a]}
    seen: list[str] = []
    for folder, dirs, names in os.walk(top):
        dirs[:] = sorted(d for d in dirs if d not in JUNK_NAMES)
        parent = Path(folder).name
        if distinctive.intersection(names) or any(f"{parent}/{n}" in in_folder for n in names):
            return
        seen += [Path(folder, n).relative_to(top).as_posix() for n in sorted(names)]
    listed = ", ".join(seen[:limit]) + (f" and {len(seen) - limit} more" if len(seen) > limit else "")
    examples = sorted(distinctive)[:4] or sorted(in_folder)[:4]
    raise NeedsPerson("no file of " + ", ".join(graded) + " found anywhere in the upload "
                      f"(expected e.g. {', '.join(examples)}); it holds "
                      f"{listed or 'no files'}: a person should look at it")
