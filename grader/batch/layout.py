"""Where the assignments are in an unpacked upload: the submission's root.

Students upload in many shapes; each of these is found and graded:
- the template's layout (`practical4/`, ..., `hw3/`) at the top, or under one or more folders
  (`Jane Doe/`, `my work/pdl/`, `home/jane/pdl/` of a zip made from an absolute path: up to
  ROOT_SEARCH_DEPTH levels down);
- names whose case differs from the template's (`Practical4/`, `concepts.PY`: Windows and macOS
  do not tell them apart, Linux does): renamed to the template's, with a note;
- a zip named after a folder it also holds (`hw3.zip` holding `hw3/...`): the zip's own folder
  is not mistaken for the assignment folder, because an assignment folder only counts as such
  when it holds one of that assignment's files;
- one folder or zip per assignment (`practical4.zip` holding `practical4/` beside
  `practical5.zip` holding `practical5/`): their assignment folders are gathered into one root;
- the same upload twice (Moodle keeps `work.zip` and `work (1).zip`): folders of the same
  content are one;
- an assignment's files without their folder (`model_parallel.py` and `report.pdf` loose, or in
  a zip or folder of any name, or beside another assignment's folder): placed into the folder of
  the assignment whose code files they are (the template's `.py` names tell: `model_parallel.py`
  is HW3's); the files of several assignments loose together each go to their own (an answer
  sheet by the `assignment:` line or the answer ids it holds).
What cannot be decided is for a person to look at (`NeedsPerson`: no grade, never a zero): an
upload in which no file any graded assignment expects is found anywhere (it would be a silent
zero), two different versions of one assignment (side by side, or one deeper down:
`practical4/` and `practical4_final/practical4/`), an answer sheet beside several assignments'
files that says whose it is in no way, files nested deeper than the search.

The files each assignment expects come from `student_template/<assignment>/` (its README and
report template aside; `report.pdf`, or `report.md`/`report.txt` in its place, where the
template has a report template).
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from grader.batch.template_copies import run_by_another, unchanged_template
from grader.batch.unpack import (JUNK_NAMES, MOODLE_NAME, NeedsPerson, Rejected,
                                 archive_kind)

__all__ = ["ROOT_SEARCH_DEPTH", "NeedsPerson", "Rejected", "expected_files", "code_files",
           "find_root", "held_assignments", "require_expected_files", "require_work_handed_in",
           "TEMPLATE_UNCHANGED", "template_copies_in"]

ROOT_SEARCH_DEPTH = 6
TEMPLATE_DIR = Path(__file__).resolve().parents[2] / "student_template"
ARRANGED = "_arranged"        # the root made when loose files are put into their folder
GATHERED = "_gathered"        # the root made of one folder (or zip) per assignment
_NOT_EXPECTED = ("readme", "report_template")


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
            # The report the handout asks for, or its text in place of it (graded as written
            # and flagged: grader/answers/hw3_pdf/text_report.py), loose in an upload too.
            found.update(REPORT_NAMES)
    return frozenset(found)


# A report only an assignment with a report template has: it goes where its code goes (a
# loose HW3 report.md had been linked into practical4/ too, beside its answer sheet).
REPORT_NAMES = ("report.pdf", "report.md", "report.txt")


def code_files(assignments: Sequence[str]) -> dict[str, str]:
    """{file name: assignment} for the template's code files (and reports) that only one
    assignment has."""
    owners: dict[str, set[str]] = {}
    for assignment in assignments:
        for rel in expected_files(assignment):
            if rel.endswith(".py") or rel in REPORT_NAMES:
                owners.setdefault(Path(rel).name, set()).add(assignment)
    return {name: next(iter(found)) for name, found in owners.items() if len(found) == 1}


def _shared_files(assignments: Sequence[str]) -> set[str]:
    """Names of the template's files that several assignments have (answers.yaml)."""
    owners: dict[str, set[str]] = {}
    for assignment in assignments:
        for rel in expected_files(assignment):
            owners.setdefault(Path(rel).name, set()).add(assignment)
    return {name for name, found in owners.items() if len(found) > 1}


_ASSIGNMENT_LINE = re.compile(r"^assignment:[ \t]*[\"']?([A-Za-z0-9_-]+)", re.M)
_ANSWER_ID = re.compile(r"^[ \t]+([A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)+)[ \t]*:", re.M)


@lru_cache(maxsize=None)
def _template_ids(assignment: str, name: str, template_dir: Path = TEMPLATE_DIR) -> frozenset[str]:
    try:
        return frozenset(_ANSWER_ID.findall((template_dir / assignment / name).read_text("utf-8")))
    except (OSError, UnicodeDecodeError):
        return frozenset()


def _sheet_owner(path: Path, assignments: Sequence[str]) -> str | None:
    """Whose file of a name several assignments share (answers.yaml) this is: the assignment
    its `assignment:` line names (the template's first line), else the one whose template's
    answer ids it holds most of; None where that does not decide."""
    try:
        with open(path, "rb") as handle:
            text = handle.read(1 << 20).decode("utf-8", "replace")
    except OSError:
        return None
    named = _ASSIGNMENT_LINE.search(text)
    if named and named[1].lower() in {a.lower() for a in assignments}:
        return next(a for a in assignments if a.lower() == named[1].lower())
    ids = set(_ANSWER_ID.findall(text))
    shared = {a: len(ids & _template_ids(a, path.name)) for a in assignments}
    best = max(shared.values(), default=0)
    winners = [a for a, count in shared.items() if count == best]
    return winners[0] if best and len(winners) == 1 else None


def _children(folder: Path) -> list[Path]:
    return sorted(c for c in folder.iterdir() if c.name not in JUNK_NAMES and not c.is_symlink())


def _holds_its_files(folder: Path, assignment: str) -> bool:
    expected = expected_files(assignment)
    return any((folder / rel).is_file() for rel in expected)


def _worked_on(root: Path, assignment: str) -> bool:
    folder = root / assignment
    return (folder.is_dir() and not folder.is_symlink() and _holds_its_files(folder, assignment)
            and not unchanged_template(folder, assignment))


def held_assignments(root: Path, assignments: Sequence[str]) -> set[str]:
    """The assignments whose folder in a submission's root holds one of their files, and is not
    the template's unchanged, nor changed only where another assignment handed in beside it
    runs it (template_copies: a whole course folder's untouched assignments are not handed
    in)."""
    return {a for a in assignments if _worked_on(root, a) and _only_for_another(root, a) is None}


# Why an assignment's folder holds no work of its own: the words the console, instructor.md,
# the student's report and the class page use.
TEMPLATE_UNCHANGED = "the template, unchanged"


def template_copies_in(root: Path, assignments: Sequence[str]) -> dict[str, str]:
    """{assignment: why it is not handed in} of those whose folder in a submission's root is the
    template's unchanged (TEMPLATE_UNCHANGED), or is changed only in a script another
    assignment runs, at its TODOs, where that assignment is handed in beside it (a Practical 6
    student's practical5_dp.py with the DataParallel wrap Practical 6's Part 6 runs)."""
    found = {}
    for a in assignments:
        folder = root / a
        if not folder.is_dir() or folder.is_symlink():
            continue
        why = TEMPLATE_UNCHANGED if unchanged_template(folder, a) else _only_for_another(root, a)
        if why is not None:
            found[a] = why
    return found


def _only_for_another(root: Path, assignment: str) -> str | None:
    """Why `assignment`'s folder holds no work of its own, where its only change is what another
    assignment handed in beside it runs (template_copies.run_by_another); else None."""
    other = run_by_another(root / assignment, assignment)
    if other is None or not _worked_on(root, other[0]):
        return None
    runner, where, scripts = other
    return (f"the template but for its TODO in {', '.join(scripts)}, which {runner} (handed in "
            f"beside it) runs ({where}); the answer sheet and the rest as handed out")


def require_work_handed_in(root: Path, graded: Sequence[str]) -> None:
    """NeedsPerson where the graded assignments' folders are the template's unchanged (or hold
    only what another assignment runs) and none holds work: nothing was handed in (a course
    folder uploaded to another assignment's Moodle download), which graded would be a 0, or a
    grade of what was never handed in, and "Submitted for grading" in its Moodle sheet."""
    copies = template_copies_in(root, graded)
    if copies and not held_assignments(root, graded):
        untouched = all(why == TEMPLATE_UNCHANGED for why in copies.values())
        raise NeedsPerson("; ".join(f"{a}: {copies[a]}: not handed in" for a in graded
                                    if a in copies)
                          + (" (its files are student_template/'s as handed out, with no work in "
                             "them)" if untouched else " (no work of its own in it)")
                          + ": not graded; a person checks whether it was handed in elsewhere")


def _levels(top: Path, depth: int) -> list[list[Path]]:
    levels, level = [], [top]
    for _ in range(depth + 1):
        levels.append(level)
        level = [c for d in level for c in _children(d) if c.is_dir()]
    return levels


def _content(path: Path) -> tuple:
    """What a folder (or file) holds, to tell copies apart: every file's relative path and the
    hash of its bytes (the same upload twice unpacks into folders of equal content)."""
    files = [path] if path.is_file() else sorted(
        p for p in path.rglob("*") if p.is_file() and not p.is_symlink()
        and not JUNK_NAMES.intersection(p.relative_to(path).parts))
    found = []
    for file in files:
        digest = hashlib.sha256()
        with open(file, "rb") as handle:
            while chunk := handle.read(1 << 16):
                digest.update(chunk)
        found.append((file.relative_to(path).as_posix() if file != path else file.name,
                      digest.hexdigest()))
    return tuple(found)


def _without_copies(folders: list[Path], top: Path, notes: list[str], what=_content) -> list[Path]:
    """`folders` less those whose content (`what` of them) equals an earlier one's, each said."""
    kept: list[tuple[Path, tuple]] = []
    for folder in folders:
        content = what(folder)
        copy_of = next((k for k, c in kept if c == content), None)
        if copy_of is None:
            kept.append((folder, content))
        else:
            notes.append(f"{_rel(folder, top)} is a copy of {_rel(copy_of, top)} (the same files "
                         "uploaded twice): graded once")
    return [k for k, _ in kept]


def _rel(path: Path, top: Path) -> str:
    where = path.relative_to(top).as_posix()
    return "the top of the upload" if where == "." else where + ("/" if path.is_dir() else "")


def _best(levels: list[list[Path]], top: Path, score, gather=None,
          notes: list[str] | None = None) -> Path | None:
    """The shallowest folder with the highest positive score; where several folders of that
    level hold assignments, what `gather` makes of them all (each holding other assignments:
    one zip per assignment, or practical4+5 in one and hw3 in another); else, on a tie, one
    of them where they hold the same files, else NeedsPerson (two different versions: which one
    counts is the student's to say, not the grader's to guess)."""
    notes = notes if notes is not None else []
    for level in levels:
        scored = [(score(d), d) for d in level]
        best = max((count for count, _ in scored), default=0)
        if best:
            holding = _without_copies([d for count, d in scored if count > 0], top, notes)
            gathered = gather(holding) if gather is not None and len(holding) > 1 else None
            if gathered is not None:
                return gathered
            winners = [d for d in holding if score(d) == best]
            if len(winners) > 1:
                names = ", ".join(w.relative_to(top).as_posix() + "/" for w in winners)
                raise NeedsPerson(f"ambiguous submission: several folders hold the assignments "
                                  f"({names}) with different files; which one counts is for a "
                                  "person to decide (or keep one and upload again)")
            return winners[0]
    return None


def _gather(top: Path, folders: list[Path], holds, notes: list[str]) -> Path | None:
    """One root made of folders that each hold other assignments (practical4.zip holding
    practical4/ beside practical5.zip holding practical5/): their assignment folders are moved
    into a new `_gathered...` folder of `top`. An assignment two of them hold with the same
    files is taken once; None where two hold it with different files (two versions of one
    homework: which one counts is the student's to say)."""
    taken: dict[str, Path] = {}
    for folder in folders:
        for assignment in sorted(holds(folder)):
            first = taken.get(assignment)
            if first is None:
                taken[assignment] = folder
            elif _content(first / assignment) != _content(folder / assignment):
                return None
            else:
                notes.append(f"{_rel(folder / assignment, top)} is a copy of "
                             f"{_rel(first / assignment, top)} (the same files uploaded twice): "
                             "graded once")
    # A name no upload's folder can already have (a student's own `_gathered/` is left be).
    root = Path(tempfile.mkdtemp(prefix=GATHERED, dir=top))
    os.chmod(root, 0o755)
    for assignment, folder in sorted(taken.items()):
        (folder / assignment).rename(root / assignment)
        notes.append(f"{assignment}/ graded from {(folder / assignment).relative_to(top).as_posix()}/ "
                     "(one folder per assignment in the upload)")
    return root


def _match_case(top: Path, depth: int, assignments: Sequence[str], notes: list[str]) -> None:
    """Folders named like an assignment and files named like a template's file but for their
    case (`Practical4/`, `concepts.PY`: one file on Windows and macOS, two on Linux) get the
    template's name, where no sibling already has it. Where one has: an assignment folder of
    other files is a second version of the assignment (NeedsPerson: which one counts is the
    student's to say), one of the same files a copy (graded once); a file is not graded, said."""
    folders = {a.lower(): a for a in assignments}
    files = {Path(rel).name.lower(): Path(rel).name
             for a in assignments for rel in expected_files(a)}
    level = [top]
    for _ in range(depth + 2):      # the files of an assignment folder at the deepest level too
        below = []
        for folder in level:
            children = _children(folder)
            names = {c.name for c in children}
            for child in children:
                wanted = (folders if child.is_dir() else files).get(child.name.lower())
                if wanted and wanted != child.name and wanted not in names:
                    was = _rel(child, top)
                    child = child.rename(child.with_name(wanted))
                    names.add(wanted)
                    notes.append(f"{was} graded as {_rel(child, top)} (the template's name: Linux, "
                                 "unlike Windows and macOS, tells names apart by their case)")
                elif wanted and wanted != child.name:
                    _beside_its_name(top, child, folder / wanted, notes)
                if child.is_dir():
                    below.append(child)
        level = below


def _beside_its_name(top: Path, child: Path, named: Path, notes: list[str]) -> None:
    """`child` (`Practical4/`, `CONCEPTS.PY`) beside `named`, of the template's name in its case
    (`practical4/` had been graded and `Practical4/` of other files ignored, in silence)."""
    if child.is_dir() and named.is_dir() and not named.is_symlink():
        theirs = _content(child)
        if not theirs:
            return      # an empty folder: nothing of the assignment's in it
        if theirs != _content(named):
            raise NeedsPerson(f"two versions of {named.name}: {_rel(named, top)} and "
                              f"{_rel(child, top)} hold different files (their names differ "
                              "only in case, one folder on Windows and macOS); which one counts "
                              "is for a person to decide (or keep one and upload again)")
        notes.append(f"{_rel(child, top)} is a copy of {_rel(named, top)} (their names differ "
                     "only in case): graded once")
    elif child.is_file() and named.is_file():
        notes.append(f"{_rel(child, top)} is not graded: {_rel(named, top)}, of the template's "
                     "name, is (their names differ only in case)")


def find_root(top: Path, depth: int = ROOT_SEARCH_DEPTH, assignments: Sequence[str] | None = None,
              notes: list[str] | None = None) -> Path:
    """The folder holding the assignment folders (see the module's docstring); NeedsPerson
    where that cannot be decided, Rejected where there is none."""
    from grader.scoring.rubric import assignment_ids
    assignments = list(assignments or assignment_ids())
    notes = notes if notes is not None else []
    _match_case(top, depth, assignments, notes)
    levels = _levels(top, depth)

    def holding(d: Path) -> set[str]:
        return {a for a in assignments if (d / a).is_dir() and _holds_its_files(d / a, a)}

    def with_files(d: Path) -> int:
        return len(holding(d))

    def by_name(d: Path) -> int:
        return sum((d / a).is_dir() and not (d / a).is_symlink() for a in assignments)

    root = _best(levels, top, with_files, lambda tied: _gather(top, tied, holding, notes), notes)
    if root is not None:
        _lift_doubled(top, root, assignments, notes)
        _no_second_version(top, root, depth, assignments, notes)
        # An assignment the root lacks may be loose beside it (practical4's files at the top
        # beside practical5/): graded from there rather than as missing. (The folders are
        # listed again: gathering and lifting moved some.)
        _arrange_loose_files(top, root, _levels(top, depth), assignments, notes)
        return root
    arranged = _arrange_loose_files(top, None, levels, assignments, notes)
    if arranged is not None:
        return arranged
    # Folders named like assignments but holding none of their files: graded, and the checks
    # say what is missing.
    root = _best(levels, top, by_name, notes=notes)
    if root is not None:
        return root
    found = _found_files(top, assignments)
    if found:
        # Not "nothing found": the files are there, in a shape the grader cannot place.
        deep = any(f.count("/") > depth + 1 for f in found)
        raise NeedsPerson(f"files of the assignments were found ({', '.join(found)}) but in no "
                          "folder of the template's layout"
                          + (f" within {depth} folders of the top (the deepest the grader looks)"
                             if deep else "") + ": a person should look at it")
    raise Rejected("no assignment folder found (expected the layout of student_template/: "
                   + ", ".join(f"{a}/" for a in assignments) + ")")


def _found_files(top: Path, assignments: Sequence[str], limit: int = 3) -> list[str]:
    """Where files of the template's names are (`practical4/concepts.py`, `model_parallel.py`,
    `report.pdf`), however deep: so that no message says nothing was found when it was."""
    named: dict[str, set[str]] = {}
    for assignment in assignments:
        for rel in expected_files(assignment):
            named.setdefault(Path(rel).name.lower(), set()).add(assignment)
    distinctive = {name for name, owners in named.items() if len(owners) == 1}
    in_folder = {f"{a}/{rel}".lower() for a in assignments for rel in expected_files(a)}
    found = []
    for folder, dirs, names in os.walk(top):
        dirs[:] = sorted(d for d in dirs if d not in JUNK_NAMES)
        parent = Path(folder).name
        found += [Path(folder, n).relative_to(top).as_posix() for n in sorted(names)
                  if n.lower() in distinctive or f"{parent}/{n}".lower() in in_folder]
    return found[:limit]


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


def _no_second_version(top: Path, root: Path, depth: int, assignments: Sequence[str],
                       notes: list[str]) -> None:
    """NeedsPerson where a deeper folder of an assignment's name holds its files, other than
    those of the root's (`practical4/` and `practical4_final/practical4/`, `old/practical4/`):
    the shallowest had been graded and the other, maybe the final one, ignored in silence
    (adv39 F4). Which one counts is the student's to say: no guess from a name like `final`;
    one deeper under a folder named as set aside (`old/`, `backup/`, `_SET_ASIDE_WORDS`) is
    not a version handed in, where the graded one is under none. One of the same files is a copy, graded once; a folder inside the graded one is
    its own (a backup there is the student's file, never a second root), and one inside a
    folder named like a Moodle submission is that upload's, not a version of this one's
    (bob/ holding a folder named like Vera's: grader/batch/inputs.py says so)."""
    folders = [folder for level in _levels(top, depth) for folder in level]
    for assignment in assignments:
        graded = root / assignment
        if not graded.is_dir() or graded.is_symlink() or not _holds_its_files(graded, assignment):
            continue
        content = None
        for folder in folders:
            other = folder / assignment
            if other == graded or other.is_relative_to(graded) or graded.is_relative_to(other) \
                    or not other.is_dir() or other.is_symlink() \
                    or not _holds_its_files(other, assignment) \
                    or any(MOODLE_NAME.match(part) for part in other.relative_to(top).parts):
                continue
            content = content if content is not None else _content(graded)
            if _content(other) == content:
                notes.append(f"{_rel(other, top)} is a copy of {_rel(graded, top)} (the same "
                             "files uploaded twice): graded once")
                continue
            if _set_aside(other.relative_to(top)) and not _set_aside(graded.relative_to(top)):
                notes.append(f"{_rel(other, top)} is kept aside by its folder's name (an older "
                             f"copy): {_rel(graded, top)} is graded")
                continue
            raise NeedsPerson(f"two versions of {assignment}: {_rel(graded, top)} and "
                              f"{_rel(other, top)} hold different files; which one counts is for "
                              "a person to decide (or keep one and upload again)")


# Folder names a student gives only to a copy they no longer hand in (`old/practical4/`,
# `backup/`, `practical4_v1_draft/`): a person grading by hand grades the other one, so the
# grader does too, saying so. A name that might be the newer one (`final`, `v2`) decides
# nothing: that pair goes to a person.
_SET_ASIDE_WORDS = frozenset({"old", "older", "backup", "backups", "bak", "previous", "prev",
                              "draft", "drafts", "archive", "archived", "trash", "unused",
                              "obsolete", "deprecated", "outdated", "scratch"})


def _set_aside(relative: Path) -> bool:
    """Whether a folder on the path to an assignment's folder (not the assignment's own name)
    is named as a copy set aside: one of `_SET_ASIDE_WORDS` as a word of it."""
    return any(word in _SET_ASIDE_WORDS
               for part in relative.parts[:-1]
               for word in re.split(r"[^a-z]+", part.lower()))


def _arrange_loose_files(top: Path, root: Path | None, levels: list[list[Path]],
                         assignments: Sequence[str], notes: list[str]) -> Path | None:
    """Each assignment the root does not hold whose code files are loose in some folder (the
    shallowest such folder; its copies of equal content are one) gets a folder of the root,
    holding them. Without a root (`None`) the root is made: `top/_arranged`. Returns the root,
    or None where nothing was arranged and there was no root. NeedsPerson where the loose files
    of one assignment differ between folders of one level (two versions)."""
    owners = code_files(assignments)
    held = {a for a in assignments
            if root is not None and (root / a).is_dir() and _holds_its_files(root / a, a)}
    # Never taken apart: the root's assignment folders (a file of another assignment in them
    # is the student's own, e.g. practical6 reusing practical5_dp.py).
    fenced = [root / a for a in assignments if root is not None and (root / a).is_dir()]
    sources: dict[str, list[Path]] = {}
    for level in levels:
        found_here: dict[str, list[Path]] = {}
        for folder in level:
            if any(folder == f or f in folder.parents for f in fenced) \
                    or _in_environment(folder, top):
                continue
            for assignment in {owners[c.name] for c in _children(folder)
                               if c.is_file() and c.name in owners}:
                if assignment not in held and assignment not in sources:
                    found_here.setdefault(assignment, []).append(folder)
        sources.update(found_here)
    if not sources:
        return None
    for assignment, folders in sources.items():
        if len(folders) > 1:
            folders = _without_copies(folders, top, notes,
                                      lambda f: _content_of_loose(f, assignment, owners))
        if len(folders) > 1:
            where = ", ".join(_rel(f, top) for f in folders)
            raise NeedsPerson(f"the files of {assignment} without their folder are in several "
                              f"folders with different content ({where}); which ones count is "
                              "for a person to decide (or keep one and upload again)")
        sources[assignment] = folders
    if root is None:
        root = top / ARRANGED
        if root.exists():       # a student's own `_arranged/`: left be
            root = Path(tempfile.mkdtemp(prefix=ARRANGED, dir=top))
        root.mkdir(exist_ok=True)
        os.chmod(root, 0o755)
    by_folder: dict[Path, list[str]] = {}
    for assignment, (folder,) in sorted(sources.items()):
        by_folder.setdefault(folder, []).append(assignment)
    # Folders that are no one assignment's loose files: the root and what holds it, the folders
    # others' loose files came from, assignment folders.
    keep = {root, *root.parents, *by_folder, *fenced}
    for folder, targets in by_folder.items():
        _place(top, folder, root, targets, keep, owners, assignments, notes)
    return root


# Where installed packages live: their files are no student's (practical10's `sample.py` is
# a name many packages have too).
_PACKAGE_FOLDERS = {"site-packages", "dist-packages", "node_modules"}


def _in_environment(folder: Path, top: Path) -> bool:
    """Whether `folder` is in a Python environment zipped with the project (a folder holding
    `pyvenv.cfg` or `conda-meta/`, or installed packages)."""
    if _PACKAGE_FOLDERS.intersection(folder.relative_to(top).parts):
        return True
    return any((f / "pyvenv.cfg").is_file() or (f / "conda-meta").is_dir()
               for f in (folder, *folder.parents) if f == top or top in f.parents)


def _content_of_loose(folder: Path, assignment: str, owners: dict[str, str]) -> tuple:
    """What decides whether two folders hold the same loose files of `assignment`: its code
    files and the folder's other files (each other assignment's aside)."""
    return tuple(item for c in _children(folder) if c.is_file()
                 and owners.get(c.name, assignment) == assignment for item in _content(c))


def _place(top: Path, folder: Path, root: Path, targets: list[str], keep: set[Path],
           owners: dict[str, str], assignments: Sequence[str], notes: list[str]) -> None:
    """Moves `folder`'s loose files into `root/<assignment>/` for each of `targets`: a code
    file to the one assignment that has it, a file several assignments have (answers.yaml) to
    the one it says it is of; anything else to the only target, or (several targets: helpers,
    data) linked into each, since which one needs it cannot be told. The folders of a folder
    that holds the root (the top of the upload, loose files beside `practical5/`) are the
    upload's own and stay."""
    shared = _shared_files(assignments)
    holds_root = folder == root or folder in root.parents
    placed: dict[str, list[str]] = {t: [] for t in targets}
    left: list[str] = []
    linked: list[str] = []
    for target in targets:
        (root / target).mkdir(exist_ok=True)
        os.chmod(root / target, 0o755)
    for child in _children(folder):
        if child in keep or any(k.is_relative_to(child) for k in keep if k != top) \
                or (child.is_dir() and (holds_root or child.name in assignments)):
            continue
        if child.is_file() and child.name in owners:
            owner = owners[child.name]
        elif child.is_file() and child.name in shared:
            owner = _sheet_owner(child, assignments)
            if owner is None and len(targets) > 1:
                raise NeedsPerson(
                    f"{_rel(child, top)} is beside the files of {', '.join(targets)} and says "
                    "whose it is in no way (no `assignment:` line, none of one template's answer "
                    "ids): a person should put it in its assignment's folder")
            owner = owner or targets[0]
        else:
            owner = targets[0] if len(targets) == 1 else None
        if owner is None:
            for target in targets:
                _link_copy(child, root / target / child.name)
            linked.append(child.name)
        elif owner in targets and not (root / owner / child.name).exists():
            child.rename(root / owner / child.name)
            placed[owner].append(child.name)
        else:
            left.append(child.name)
    where = _rel(folder, top)
    for target, names in placed.items():
        notes.append(f"{', '.join(names[:6])}{' ...' if len(names) > 6 else ''} (in "
                     f"{where}) graded as {target}/: the files of {target} without their folder")
    if linked:
        notes.append(f"{', '.join(linked[:6])}{' ...' if len(linked) > 6 else ''} (in {where}) "
                     f"put into each of {', '.join(t + '/' for t in targets)}: beside the files "
                     "of several assignments, whose they are cannot be told")
    if left:
        notes.append(f"{', '.join(left[:6])}{' ...' if len(left) > 6 else ''} (in {where}) not "
                     "graded: another assignment's files (or a name its folder already has)")


def _link_copy(source: Path, target: Path) -> None:
    """`source` at `target` too, without copying bytes where the file system allows (the
    unpacked files are read, never written, by the grading)."""
    if source.is_dir():
        shutil.copytree(source, target, copy_function=_link_or_copy)
    else:
        _link_or_copy(source, target)


def _link_or_copy(source, target) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)
        os.chmod(target, 0o644)


def require_expected_files(top: Path, graded: Sequence[str], known: Sequence[str] = (),
                           limit: int = 8, why: Sequence[str] = ()) -> None:
    """NeedsPerson unless some file of a graded assignment is in the upload, wherever it is: a
    file whose name only that assignment expects (`model_parallel.py`, `report.pdf`), or one
    of its files in a folder of its name (`hw3/answers.yaml`: every assignment has an
    answers.yaml). Where no template says what an assignment expects, nothing is required.
    `why`: what the unpacking found wrong ("hw3.zip is an empty zip archive ..."), said with
    what each archive the batch does not unpack is (adv39 M1)."""
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
    # Compared whatever their case (`Practical4/concepts.PY`): find_root gives them the
    # template's names.
    lowered, in_folder_lowered = {n.lower() for n in distinctive}, {n.lower() for n in in_folder}
    seen: list[str] = []
    for folder, dirs, names in os.walk(top):
        dirs[:] = sorted(d for d in dirs if d not in JUNK_NAMES)
        parent = Path(folder).name.lower()
        if any(n.lower() in lowered or f"{parent}/{n.lower()}" in in_folder_lowered for n in names):
            return
        seen += [Path(folder, n).relative_to(top).as_posix() for n in sorted(names)]
    listed = ", ".join(seen[:limit]) + (f" and {len(seen) - limit} more" if len(seen) > limit else "")
    examples = sorted(distinctive)[:4] or sorted(in_folder)[:4]
    wrong = [*why, *(f"{Path(name).name} is {kind}, which the grader cannot unpack (ask the "
                     "student for a .zip)" for name in seen if (kind := archive_kind(name)))]
    raise NeedsPerson("no file of " + ", ".join(graded) + " found anywhere in the upload "
                      f"(expected e.g. {', '.join(examples)}); it holds "
                      f"{listed or 'no files'}" + "".join(f"; {w}" for w in wrong)
                      + ": a person should look at it")
