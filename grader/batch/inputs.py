"""Find the submissions in a SUBMISSIONS folder, say whose each one is, copy or unpack it
safely into a scratch folder, find its root and hash its content.

Accepted layouts (one entry per student in SUBMISSIONS):
- Moodle "download all submissions", in folders: `Jane Doe_123456_assignsubmission_file_/`
  holding the files, a zip, or either nested one level down;
- Moodle, flat: `Jane Doe_123456_assignsubmission_file_work.zip` (several files of one student
  are grouped by participant id);
- anything else: a folder or a .zip named after the student (`alice/`, `alice.zip`).

Nothing from a submission is trusted: zip entries with `..` or absolute paths, symbolic
links (in a zip or a folder), special files and archives over the size or file-count limits
reject the submission with a message that says why. Only archives at the top of a student's
entry are unpacked (never a zip inside a zip), so a nested bomb is never opened.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from grader.scoring.rubric import assignment_ids

# `<full name>_<participant id>_assign<submission|feedback>_<plugin>_<original file name>`
MOODLE_NAME = re.compile(
    r"^(?P<name>.+)_(?P<pid>\d+)_assign(?:submission|feedback)_(?P<plugin>[A-Za-z0-9]+)_(?P<rest>.*)$")
# Never copied, never hashed: OS junk, version-control history (thousands of files that
# would hit the file limit), and bytecode (a stale .pyc could run other code than the .py
# shows; Python rebuilds it from the source anyway).
JUNK_NAMES = {"__MACOSX", ".DS_Store", "Thumbs.db", "__pycache__", ".git"}
# Beside the submissions, not one of them: Gradescope's export lists their times in it
# (grader/batch/submission_times.py reads it).
METADATA_NAMES = {"submission_metadata.yml"}
ROOT_SEARCH_DEPTH = 3
CHUNK = 1 << 16


class Rejected(Exception):
    """The submission cannot be graded; the message is shown to the instructor and stored."""


@dataclass(frozen=True)
class UnpackLimits:
    """Per submission, over everything copied or unpacked (a zip bomb stops here)."""
    max_total_bytes: int = 200 * 1024 * 1024
    max_files: int = 5000


@dataclass(frozen=True)
class Student:
    key: str                      # unique, safe as a folder name: DIR/submissions/<key>/
    name: str
    participant_id: str | None = None

    @property
    def identifier(self) -> str:
        # The form of Moodle's grading worksheet ("Participant 123456").
        return f"Participant {self.participant_id}" if self.participant_id else self.key


@dataclass
class Submission:
    student: Student
    sources: list[Path] = field(default_factory=list)   # entries of SUBMISSIONS that hold it
    problem: str | None = None                           # known unusable before unpacking

    def describe(self) -> str:
        return ", ".join(p.name for p in self.sources)


@dataclass
class Prepared:
    root: Path | None             # the folder holding practical4/, hw3/, ... (None: rejected)
    content_hash: str
    problem: str | None = None
    notes: list[str] = field(default_factory=list)


def safe_key(text: str) -> str:
    key = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._")
    return key or "unnamed"


def identify(entry: Path) -> tuple[Student, str | None] | None:
    """Whose entry this is, and its Moodle plugin (None outside Moodle); None to ignore it."""
    match = MOODLE_NAME.match(entry.name)
    if match:
        name, pid = match["name"].strip(), match["pid"]
        return Student(key=safe_key(f"{name}_{pid}"), name=name, participant_id=pid), match["plugin"]
    if entry.is_symlink() or entry.is_dir():
        return Student(key=safe_key(entry.name), name=entry.name), None
    if entry.suffix.lower() == ".zip":
        return Student(key=safe_key(entry.stem), name=entry.stem), None
    return None


def discover(folder: Path) -> tuple[list[Submission], list[str]]:
    """Every student's submission in `folder`, sorted by key, and notes on what was ignored."""
    by_key: dict[str, Submission] = {}
    notes: list[str] = []
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith(".") or entry.name in JUNK_NAMES:
            continue
        if entry.name in METADATA_NAMES and entry.is_file() and not entry.is_symlink():
            continue
        found = identify(entry)
        if found is None:
            notes.append(f"ignored {entry.name}: not a folder, a .zip or a Moodle submission file")
            continue
        student, plugin = found
        if plugin is not None and plugin != "file":
            notes.append(f"ignored {entry.name}: Moodle '{plugin}' submissions are not graded")
            continue
        submission = by_key.setdefault(student.key, Submission(student))
        if submission.sources and plugin is None:
            # Two plain entries for one name (alice/ and alice.zip): refuse to guess.
            submission.problem = (f"several submissions for {student.name}: "
                                  f"{submission.describe()}, {entry.name}; keep one")
        submission.sources.append(entry)
    return [by_key[k] for k in sorted(by_key)], notes


class _Budget:
    def __init__(self, limits: UnpackLimits):
        self.limits, self.bytes, self.files = limits, 0, 0

    def add_file(self, what: str) -> None:
        self.files += 1
        if self.files > self.limits.max_files:
            raise Rejected(f"{what}: more than {self.limits.max_files} files (limit); "
                           "rejected as a possible archive bomb")

    def add_bytes(self, count: int, what: str) -> None:
        self.bytes += count
        if self.bytes > self.limits.max_total_bytes:
            raise Rejected(f"{what}: more than {self.limits.max_total_bytes} bytes unpacked "
                           "(limit); rejected as a possible archive bomb")


def prepare(submission: Submission, scratch: Path, limits: UnpackLimits = UnpackLimits(),
            assignments: Sequence[str] | None = None) -> Prepared:
    """Copy/unpack the submission into `scratch` (emptied first), find its root (the folder
    holding the `assignments`' folders; default: every rubric's), hash it.

    Never raises for a bad submission: the problem comes back in `Prepared.problem`, with the
    hash of the raw entries so that an unchanged bad upload is not re-examined next time."""
    if scratch.exists():
        shutil.rmtree(scratch)
    scratch.mkdir(parents=True)
    notes: list[str] = []
    try:
        if submission.problem:
            raise Rejected(submission.problem)
        budget = _Budget(limits)
        for source in submission.sources:
            _materialize_entry(source, scratch, budget, notes)
        root = find_root(scratch, assignments=assignments)
        if root != scratch:
            notes.append(f"submission root: {root.relative_to(scratch).as_posix()}/")
        return Prepared(root=root, content_hash=content_hash(root), notes=notes)
    except Rejected as problem:
        return Prepared(root=None, content_hash=source_hash(submission.sources),
                        problem=str(problem), notes=notes)
    except OSError as exc:
        return Prepared(root=None, content_hash=source_hash(submission.sources),
                        problem=f"could not be unpacked: {exc}", notes=notes)


def _display_name(entry: Path) -> str:
    match = MOODLE_NAME.match(entry.name)
    return (match["rest"] if match and match["rest"] else entry.name)


def _materialize_entry(entry: Path, dest: Path, budget: _Budget, notes: list[str]) -> None:
    """The student's own entry: a folder's contents, or the file itself, go into `dest`;
    zips right there are unpacked (Moodle folders often hold just the student's zip)."""
    _refuse_links_and_specials(entry)
    children = sorted(entry.iterdir()) if entry.is_dir() else [entry]
    for child in children:
        _materialize(child, dest, budget, notes, unpack_zips=True)


def _refuse_links_and_specials(entry: Path) -> int:
    mode = entry.lstat().st_mode
    if stat.S_ISLNK(mode):
        raise Rejected(f"{entry.name} is a symbolic link; submissions may not contain links")
    if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
        raise Rejected(f"{entry.name} is not a regular file; submissions may only hold files")
    return mode


def _materialize(entry: Path, dest: Path, budget: _Budget, notes: list[str], unpack_zips: bool) -> None:
    if entry.name in JUNK_NAMES:
        return
    mode = _refuse_links_and_specials(entry)
    name = _display_name(entry)
    if stat.S_ISDIR(mode):
        budget.add_file(name)
        target = dest / name
        target.mkdir(exist_ok=True)
        for child in sorted(entry.iterdir()):
            _materialize(child, target, budget, notes, unpack_zips=False)
    elif unpack_zips and name.lower().endswith(".zip"):
        # Unpacked into a folder named after the archive (Moodle's flat `..._file_.zip`
        # has no name left once the prefix is gone).
        count = extract_zip(entry, _free_name(dest / (name[:-4].strip() or "archive")), budget)
        notes.append(f"unpacked {name} ({count} files)")
    else:
        budget.add_file(name)
        _copy_counted(entry, dest / name, budget)


def _free_name(path: Path) -> Path:
    candidate, n = path, 1
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.name}-{n}")
    return candidate


def _copy_counted(source: Path, target: Path, budget: _Budget) -> None:
    with open(source, "rb") as src, open(target, "wb") as dst:
        while chunk := src.read(CHUNK):
            budget.add_bytes(len(chunk), source.name)
            dst.write(chunk)


def check_zip_entry(info: zipfile.ZipInfo, archive: str) -> list[str]:
    """The safe relative path parts of one entry; Rejected for anything unsafe."""
    name = info.filename.replace("\\", "/")
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        raise Rejected(f"{archive}: entry '{info.filename}' has an absolute path; rejected")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise Rejected(f"{archive}: entry '{info.filename}' points outside the archive (../); rejected")
    kind = stat.S_IFMT(info.external_attr >> 16)
    if kind == stat.S_IFLNK:
        raise Rejected(f"{archive}: entry '{info.filename}' is a symbolic link; rejected")
    if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
        raise Rejected(f"{archive}: entry '{info.filename}' is not a regular file; rejected")
    if info.flag_bits & 0x1:
        raise Rejected(f"{archive}: entry '{info.filename}' is encrypted; upload it without a password")
    return parts


def extract_zip(archive: Path, dest: Path, budget: _Budget) -> int:
    """Unpack `archive` into `dest` after checking every entry; returns the number of files.

    All entries are checked before anything is written, so a rejected archive leaves nothing
    half-unpacked. Sizes are counted on the bytes actually inflated, not on the headers
    (which an attacker writes)."""
    label = _display_name(archive)
    try:
        zf = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError) as exc:
        raise Rejected(f"{label} is not a readable zip file ({exc})") from None
    with zf:
        infos = zf.infolist()
        entries = []
        declared = 0
        for info in infos:
            parts = check_zip_entry(info, label)
            if not parts or any(p in JUNK_NAMES for p in parts):
                continue
            entries.append((info, parts))
            declared += info.file_size
        if len(entries) + budget.files > budget.limits.max_files:
            raise Rejected(f"{label}: {len(entries)} entries, more than the limit of "
                           f"{budget.limits.max_files} files; rejected as a possible archive bomb")
        if declared + budget.bytes > budget.limits.max_total_bytes:
            raise Rejected(f"{label}: would unpack to {declared} bytes, more than the limit of "
                           f"{budget.limits.max_total_bytes}; rejected as a possible archive bomb")
        dest.mkdir(parents=True, exist_ok=True)
        top = dest.resolve()
        count = 0
        for info, parts in entries:
            target = dest.joinpath(*parts)
            if not target.resolve().is_relative_to(top):    # belt and braces after the checks
                raise Rejected(f"{label}: entry '{info.filename}' points outside the archive; rejected")
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            budget.add_file(label)
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                with zf.open(info) as src, open(target, "wb") as dst:
                    while chunk := src.read(CHUNK):
                        budget.add_bytes(len(chunk), label)
                        dst.write(chunk)
            except (zipfile.BadZipFile, EOFError, zipfile.LargeZipFile) as exc:
                raise Rejected(f"{label}: entry '{info.filename}' is damaged ({exc})") from None
            count += 1
        return count


def _assignment_dirs(folder: Path, assignments: Sequence[str]) -> int:
    return sum((folder / a).is_dir() and not (folder / a).is_symlink() for a in assignments)


def find_root(top: Path, depth: int = ROOT_SEARCH_DEPTH,
              assignments: Sequence[str] | None = None) -> Path:
    """The shallowest folder holding assignment folders (practical4/, ..., hw3/); at equal
    depth the one holding most of them. Two equally good candidates: Rejected (ambiguous)."""
    assignments = list(assignments or assignment_ids())
    level = [top]
    for _ in range(depth + 1):
        scored = [(_assignment_dirs(d, assignments), d) for d in level]
        best = max((count for count, _ in scored), default=0)
        if best:
            winners = [d for count, d in scored if count == best]
            if len(winners) > 1:
                names = ", ".join(w.relative_to(top).as_posix() + "/" for w in winners)
                raise Rejected(f"ambiguous submission: several folders hold the assignments ({names})")
            return winners[0]
        level = [child for d in level for child in sorted(d.iterdir())
                 if child.is_dir() and not child.is_symlink() and child.name not in JUNK_NAMES]
    raise Rejected("no assignment folder found (expected the layout of student_template/: "
                   + ", ".join(f"{a}/" for a in assignments) + ")")


def _files(root: Path) -> list[tuple[str, Path]]:
    found = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in JUNK_NAMES]
        for name in names:
            if name not in JUNK_NAMES:
                path = Path(folder, name)
                found.append((path.relative_to(root).as_posix(), path))
    return sorted(found)


def content_hash(root: Path) -> str:
    """sha256 over the sorted relative paths and bytes of every file under `root`
    (length-prefixed, so no two different trees hash alike by concatenation)."""
    digest = hashlib.sha256()
    for rel, path in _files(root):
        encoded = rel.encode("utf-8", "surrogateescape")
        digest.update(len(encoded).to_bytes(8, "big") + encoded)
        digest.update(path.stat().st_size.to_bytes(8, "big"))
        with open(path, "rb") as handle:
            while chunk := handle.read(CHUNK):
                digest.update(chunk)
    return digest.hexdigest()


def source_hash(sources: list[Path]) -> str:
    """Hash of the raw entries as uploaded (for a rejected submission: nothing unpacked,
    links hashed by their target and never followed)."""
    digest = hashlib.sha256()
    for source in sorted(sources):
        items = [(source.name, source)]
        if source.is_dir() and not source.is_symlink():
            for folder, dirs, names in os.walk(source):   # os.walk never follows links
                dirs.sort()
                for name in sorted(dirs + names):
                    path = Path(folder, name)
                    items.append((f"{source.name}/{path.relative_to(source).as_posix()}", path))
        for rel, path in items:
            digest.update(rel.encode("utf-8", "surrogateescape") + b"\0")
            if path.is_symlink():
                digest.update(b"link:" + os.fsencode(os.readlink(path)))
            elif path.is_file():
                with open(path, "rb") as handle:
                    while chunk := handle.read(CHUNK):
                        digest.update(chunk)
    return "raw:" + digest.hexdigest()
