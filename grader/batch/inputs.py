"""Find the submissions in a SUBMISSIONS folder, say whose each one is, copy or unpack it
safely into a scratch folder, find its root and hash its content.

Accepted layouts (one entry per student in SUBMISSIONS):
- Moodle "download all submissions", in folders: `Jane Doe_123456_assignsubmission_file_/`
  holding the files, a zip, or either nested one level down; Moodle's entries may be one or
  two folders down themselves (an instructor's `late/`; several downloads side by side, each
  with its `late/`: each download is one `export`, which decides what its uploads are graded
  for when the batch is not told), in a folder of nothing but Moodle's (a folder holding
  anything else is one student's, whatever it holds);
- Moodle, flat: `Jane Doe_123456_assignsubmission_file_work.zip` (several files of one student
  are grouped by participant id);
- anything else: a folder or a .zip named after the student (`alice/`, `alice.zip`).
Inside an entry, grader/batch/layout.py finds the assignments (nested folders, a zip named
after a folder it holds, files without their folder).

Nothing from a submission is trusted (grader/batch/unpack.py: limits checked before anything
is written), and nothing about one upload can stop the batch: whatever goes wrong while
preparing it, an exception of any kind included, rejects that upload with a message naming
the cause, and the next one is prepared.
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from grader.batch.layout import (ROOT_SEARCH_DEPTH, NeedsPerson, find_root, held_assignments,
                                 require_expected_files, require_work_handed_in,
                                 template_copies_in)
from grader.batch.link_targets import link_lines
from grader.batch.printable import printable
from grader.batch.unpack import (ARCHIVE_KINDS, JUNK_NAMES, LINKS_NOT_FOLLOWED, MOODLE_NAME,
                                 Budget, DataInTheWay, LeftOut, Rejected, SkippedLink,
                                 UnpackLimits, check_zip_entry, display_name, extract_zip,
                                 left_out_text, materialize_entry, size_text, top_name,
                                 unpacked_leaving_out_data, with_own_example, zip_directory_size,
                                 zip_entry_name)
from grader.common.text import readable_text
from grader.scoring.rubric import assignment_ids

__all__ = ["Student", "Submission", "Prepared", "Rejected", "NeedsPerson", "UnpackLimits",
           "discover", "prepare", "find_root", "check_zip_entry", "extract_zip", "content_hash",
           "source_hash", "safe_key", "identify", "assignments_in", "ROOT_SEARCH_DEPTH"]

# Beside the submissions, not one of them: Gradescope's export lists their times in it
# (grader/batch/submission_times.py reads it).
METADATA_NAMES = {"submission_metadata.yml"}
CHUNK = 1 << 16


@dataclass(frozen=True)
class Student:
    key: str                      # unique, safe as a folder name: DIR/submissions/<key>/
    name: str
    participant_id: str | None = None
    # From the Moodle worksheet given to a batch: who the person is across assignments (each
    # Moodle assignment numbers its participants anew).
    email: str | None = None

    @property
    def identifier(self) -> str:
        # The form of Moodle's grading worksheet ("Participant 123456").
        return f"Participant {self.participant_id}" if self.participant_id else self.key


@dataclass
class Submission:
    student: Student
    sources: list[Path] = field(default_factory=list)   # entries of SUBMISSIONS that hold it
    problem: str | None = None                           # known unusable before unpacking
    problem_needs_person: bool = False      # ... and no fault of the student's (a damaged file)
    # Several plain entries of one name (alice/ and alice.zip): unpacked apart, one graded where
    # they hold the same files, a person's to decide where not.
    several: bool = False
    root: Path | None = None      # the SUBMISSIONS folder it was found in
    # The folder of SUBMISSIONS it came from where several exports sit side by side there
    # (each Moodle download is one assignment's); "" for SUBMISSIONS itself.
    export: str = ""
    # Symbolic links skipped before `prepare` sees the upload (a whole Moodle download unzipped
    # by the batch: grader/batch/zipped_downloads.py); `prepare` says them with its own.
    skipped_links: list[SkippedLink] = field(default_factory=list)
    # Likewise what that unzipping left out of an upload over the limits, and why: `prepare`
    # says it as it says what it leaves out itself.
    left_out: list[LeftOut] = field(default_factory=list)
    left_out_why: DataInTheWay | None = None

    def describe(self) -> str:
        return ", ".join(shown_name(p.name) for p in self.sources)

    def located(self, source: Path) -> str:
        """Where `source` is, as the instructor sees SUBMISSIONS (`late/Jane Doe_1_.../`)."""
        where = source.relative_to(self.root).as_posix() if self.root is not None \
            and source.is_relative_to(self.root) else source.name
        return shown_name(where) + ("/" if source.is_dir() and not source.is_symlink() else "")


@dataclass
class Prepared:
    root: Path | None             # the folder holding practical4/, hw3/, ... (None: rejected)
    content_hash: str
    problem: str | None = None
    notes: list[str] = field(default_factory=list)
    # Nothing the graded assignments expect was found: not a grade, a person's to look at.
    needs_person: bool = False
    # What an upload over the limits was graded without ("data/model.pt (210.0 MiB)"): the
    # student's report names it.
    left_out: list[str] = field(default_factory=list)
    # Its symbolic links, skipped (grader/batch/link_targets.py `link_lines`): the student's
    # report and instructor.md name each, and where it points.
    links: list[dict] = field(default_factory=list)
    # The assignments whose folder is the student template's unchanged and which it is not
    # graded for (template_copies: not handed in): instructor.md names each.
    template_copies: list[str] = field(default_factory=list)
    # Why each is not handed in: the template unchanged, or a Practical 6 student's practical5/
    # with only the DataParallel wrap Practical 6 runs (layout.template_copies_in).
    template_copies_why: dict[str, str] = field(default_factory=dict)


# Archives of kinds the batch does not unpack, which a student may upload all the same.
OTHER_ARCHIVES = tuple(ARCHIVE_KINDS)
# Room left under the 255 bytes of a file name for what the batch adds to a key (UTF-8 bytes:
# 120 CJK characters are 360 bytes, more than a file name may hold).
MAX_KEY_BYTES = 120
# Letters and marks that show nothing (Unicode's default-ignorable code points among them):
# two names told apart only by one would make keys that look alike.
_INVISIBLE = frozenset("\u034f\u115f\u1160\u17b4\u17b5\u3164\uffa0") | frozenset(
    map(chr, [*range(0x180B, 0x1810), *range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0)]))


def _kept_in_key(char: str, after_kept: bool) -> bool:
    """ASCII letters, digits and ._- as ever; any other letter or decimal digit (Unicode's L*
    and Nd), and a combining mark after one of them (a mark NFC could not compose, as in many
    scripts); never a separator, a control or format character, a symbol or punctuation."""
    if char.isascii():
        return char.isalnum() or char in "._-"
    if char in _INVISIBLE:
        return False
    category = unicodedata.category(char)
    return category[0] == "L" or category == "Nd" or (category[0] == "M" and after_kept)


def safe_key(text: str) -> str:
    """A folder name for the student: the name's letters (any script, NFC: `Jüri_Õunapuu_1009`,
    `王伟`), digits and ._- kept, each run of anything else one "_", no leading or trailing dot
    or "_", at most MAX_KEY_BYTES bytes of UTF-8 (a longer one ends with a hash of the whole).

    An ASCII name gets the key it always had. A student a gradebook holds under a key of the
    ASCII-only grader (`J_ri_unapuu_1009`) keeps that key (discover() finds them by participant
    id or name), and an overrides file written with either form keeps working
    (grader/batch/earlier_keys.py). Names that still make one key ("a b" and "a_b") are told
    apart by discover()."""
    text = unicodedata.normalize("NFC", text)
    pieces: list[str] = []
    after_kept = False
    for char in text:
        after_kept = _kept_in_key(char, after_kept)
        if after_kept:
            pieces.append(char)
        elif not pieces or pieces[-1] != "_":
            pieces.append("_")
    key = "".join(pieces).strip("._")
    if len(key.encode("utf-8")) > MAX_KEY_BYTES:
        # The key names folders (with suffixes of the batch's own): a 251-character upload name
        # made one no file system takes, and stopped the batch.
        digest = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:8]
        cut = key.encode("utf-8")[:MAX_KEY_BYTES - 9].decode("utf-8", "ignore")
        key = f"{cut}_{digest}"
    return key or "unnamed"


def shown_name(name: str) -> str:
    """A name from SUBMISSIONS or an upload as every message, grades.csv and the gradebook show
    it: bytes that are not UTF-8 read as text, control characters escaped (grader/batch/
    printable.py: a name had set the console's clipboard and printed lines of its own)."""
    return printable(readable_text(name))


def same_name(name: str) -> str:
    """One form of a name whatever way it was typed (macOS writes "ü" as "u" and a mark)."""
    return unicodedata.normalize("NFC", name)


def identify(entry: Path) -> tuple[Student, str | None] | None:
    """Whose entry this is, and its Moodle plugin (None outside Moodle); None to ignore it."""
    entry_name = same_name(readable_text(entry.name))
    match = MOODLE_NAME.match(entry_name)
    # The key from the name as it is (the keys of earlier gradebooks); the name as shown.
    if match:
        name, pid = match["name"].strip(), match["pid"]
        return Student(key=safe_key(f"{name}_{pid}"), name=printable(name),
                       participant_id=pid), match["plugin"]
    if entry.is_symlink() or entry.is_dir():
        return Student(key=safe_key(entry_name), name=printable(entry_name)), None
    if entry.suffix.lower() == ".zip":
        stem = entry_name[:-len(entry.suffix)]
        return Student(key=safe_key(stem), name=printable(stem)), None
    other = next((s for s in OTHER_ARCHIVES if entry_name.lower().endswith(s)), None)
    if other and len(entry_name) > len(other):
        # Not unpacked, but a student's upload all the same: it needs a person (a .tar.gz had
        # been ignored with a console line, and its student was on no list).
        stem = entry_name[:-len(other)]
        return Student(key=safe_key(stem), name=printable(stem)), None
    return None


# Folders of Moodle's folders the batch looks into: SUBMISSIONS/<one export>/late/<Jane's>.
CONTAINER_LEVELS = 2


def _entries(folder: Path, notes: list[str], levels: int = CONTAINER_LEVELS, where: str = ""):
    """The entries of SUBMISSIONS, where those of a folder in it that holds Moodle's own
    (an instructor's `late/` of late submissions, or one export of several side by side) count
    as the folder's: its students' Moodle rows had been lost, and the folder graded as a
    student called `late`. Such a folder's own folders of Moodle's are looked into too (the
    `late/` of one export beside another: it had been one level too deep, and its students
    graded as one called `late`), `levels` deep.

    Only a folder that holds nothing but Moodle's submissions (or such folders), and at most
    notes of the instructor's (`NOTE_SUFFIXES`: ignored, each said), is read so:
    anything else is a student's own, whatever it holds (bob/ holding his practical4/ and a
    folder named like Vera's Moodle submission had been read as a download, Vera's grade
    replaced by "2 uploads" and bob left with no row)."""
    for entry in _listed(folder):
        if levels > 0 and _holds_others(entry, levels):
            shown = where + shown_name(entry.name) + "/"
            notes.append(f"{shown} holds Moodle submissions: each of them graded as its student's")
            yield from _entries(entry, notes, levels - 1, shown)
            continue
        named = _moodle_named_inside(entry) if levels > 0 else []
        if named:
            shown = where + shown_name(entry.name) + "/"
            listed = ", ".join(shown_name(n.name) + ("/" if n.is_dir() else "")
                               for n in named[:3]) + (" ..." if len(named) > 3 else "")
            notes.append(f"{shown} holds a folder named like a Moodle submission ({listed}) "
                         "beside files of its own: graded as one upload, "
                         f"{shown_name(entry.name)}'s (only a folder of nothing but "
                         "Moodle's submissions is read as holding other students' uploads)")
        yield entry


def _holds_others(folder: Path, levels: int) -> bool:
    """Whether `folder` (an entry of SUBMISSIONS, or of such a folder) is the instructor's, holding
    other students' uploads: a folder, not Moodle's, of Moodle's submissions and nothing else
    but such folders, `levels` deep."""
    if levels <= 0 or not folder.is_dir() or folder.is_symlink() or _is_moodle(folder):
        return False
    try:
        inner = _listed(folder)
    except OSError:   # a student's folder the batch cannot list: prepare() says so
        return False
    others = [each for each in inner if not _is_note(each)]
    return bool(others) and all(_is_moodle(each) or _holds_others(each, levels - 1)
                                for each in others)


# What an instructor leaves beside Moodle's folders in a late/ of their own (a list of who is
# late, a README): such a file had made late/ one student's upload, called "late", and its
# students' submissions were graded as that upload. Never code, an archive or a folder, so a
# student's own folder holding one named like Moodle's stays theirs (adv19 C3).
NOTE_SUFFIXES = (".txt", ".md", ".csv", ".tsv", ".xlsx", ".xls", ".ods", ".html", ".htm", ".log")


def _is_note(entry: Path) -> bool:
    return (entry.suffix.lower() in NOTE_SUFFIXES and entry.is_file() and not entry.is_symlink()
            and not _is_moodle(entry))


def _moodle_named_inside(entry: Path) -> list[Path]:
    """What a student's own folder holds that is named like Moodle's submissions."""
    if not entry.is_dir() or entry.is_symlink() or _is_moodle(entry):
        return []
    try:
        return [each for each in _listed(entry) if _is_moodle(each)]
    except OSError:
        return []


def _listed(folder: Path) -> list[Path]:
    """A folder's entries, less the files beside the submissions (junk, metadata)."""
    return [entry for entry in sorted(folder.iterdir())
            if not (entry.name.startswith(".") or entry.name in JUNK_NAMES
                    or (entry.name in METADATA_NAMES and entry.is_file()
                        and not entry.is_symlink()))]


def _is_moodle(entry: Path) -> bool:
    return MOODLE_NAME.match(same_name(readable_text(entry.name))) is not None


def moodle_download_participants(archive: Path, limits: UnpackLimits = UnpackLimits()) -> int:
    """How many participants' submissions `archive` holds where it is a whole Moodle "download
    all submissions" zip (every entry under a name of Moodle's, `Jane Doe_123_assignsubmission_
    file_/...`, as its folders or its flat files); 0 for anything else (a student's upload, a
    damaged zip). Read from its directory only: nothing is unpacked."""
    if archive.is_symlink() or not archive.is_file() or archive.suffix.lower() != ".zip":
        return 0
    try:
        directory = zip_directory_size(archive)
        if directory is None or directory[0] > limits.max_listed * 10:
            return 0
        import zipfile
        with zipfile.ZipFile(archive) as zf:
            tops = {top_name(zip_entry_name(info)) for info in zf.infolist()}
    except Exception:   # not a zip, or damaged: whoever unpacks it says what is wrong
        return 0
    tops -= {"", *JUNK_NAMES}
    matches = [MOODLE_NAME.match(same_name(top)) for top in tops]
    if not matches or not all(matches):
        return 0
    return len({match["pid"] for match in matches})


def discover(folder: Path, known: Sequence[Student] = (),
             skip: Sequence[Path] = ()) -> tuple[list[Submission], list[str]]:
    """Every student's submission in `folder`, sorted by key, and notes on what was ignored.
    `known`: the students of the gradebook so far; each keeps their key (a Moodle participant
    by id, whatever their name is now; anyone else by name), and a new student never takes a
    key a known one has. `skip`: entries of `folder` that are no student's (whole Moodle
    downloads the batch has said it leaves out)."""
    by_key: dict[str, Submission] = {}
    notes: list[str] = []
    found: list[tuple[Path, Student, str | None]] = []
    for entry in _entries(folder, notes):
        if entry in skip:
            continue
        identified = identify(entry)
        if identified is None:
            notes.append(f"ignored {shown_name(entry.relative_to(folder).as_posix())}: not a "
                         "folder, a .zip, an "
                         "archive or a Moodle submission file")
            continue
        student, plugin = identified
        if plugin is not None and plugin != "file":
            notes.append(f"ignored {shown_name(entry.name)}: Moodle '{printable(plugin)}' "
                         "submissions are not graded")
            continue
        found.append((entry, student, plugin))
    # Students whose different names make one key ("a b" and "a_b", "Jüri Tamm" and
    # "Jüri_Tamm"), here or with a student graded before, each get the key with their name's
    # own hash.
    by_participant = {s.participant_id: s.key for s in known if s.participant_id}
    # Names as shown (an older gradebook may hold one with its control characters raw).
    by_name = {same_name(printable(s.name)): s.key for s in known if not s.participant_id}
    names: dict[str, set[str]] = {}
    for s in known:
        names.setdefault(s.key, set()).add(same_name(printable(s.name)))
    for _, student, _ in found:
        names.setdefault(student.key, set()).add(same_name(student.name))
    # Several exports side by side (SUBMISSIONS holds folders of Moodle's folders, none of its
    # own): each is one assignment's, and the batch chooses what to grade per export.
    side_by_side = not any(_is_moodle(entry) for entry, _, _ in found
                           if entry.parent == folder)
    for entry, student, plugin in found:
        kept = by_participant.get(student.participant_id) if student.participant_id \
            else by_name.get(same_name(student.name))
        if kept is not None:
            student = Student(kept, student.name, student.participant_id)
        elif len(names[student.key]) > 1:
            digest = hashlib.sha256(same_name(student.name).encode("utf-8")).hexdigest()
            # Never another entry's own key: an upload named "J_ri_bf05db88.zip" (Jüri's key,
            # computable by anyone) had taken Jüri's place and zeroed him.
            size = 8
            while f"{student.key}_{digest[:size]}" in names and size < len(digest):
                size += 8
            student = Student(f"{student.key}_{digest[:size]}", student.name, student.participant_id)
        parts = entry.relative_to(folder).parts
        submission = by_key.setdefault(student.key, Submission(
            student, root=folder, export=shown_name(parts[0]) if side_by_side and len(parts) > 1
            else ""))
        if submission.sources and (plugin is None or any(
                source.parent != entry.parent for source in submission.sources)):
            # alice/ and alice.zip, or Jane's Moodle folder here and in late/: compared once
            # unpacked (one graded if the same, a person's to decide if not)
            submission.several = True
        submission.sources.append(entry)
    return [by_key[k] for k in sorted(by_key)], notes


def prepare(submission: Submission, scratch: Path, limits: UnpackLimits = UnpackLimits(),
            assignments: Sequence[str] | None = None, graded: Sequence[str] | None = None) -> Prepared:
    """Copy/unpack the submission into `scratch` (emptied first), find its root (the folder
    holding the `assignments`' folders; default: every rubric's), hash it. An upload holding
    no file of the `graded` assignments (default: `assignments`) needs a person.

    Never raises for a bad submission: the problem comes back in `Prepared.problem`, with the
    hash of the raw entries so that an unchanged bad upload is not re-examined next time."""
    notes: list[str] = []
    try:
        if scratch.exists():
            shutil.rmtree(scratch)
        scratch.mkdir(parents=True)
        os.chmod(scratch, 0o755)
        if submission.problem:
            raise (NeedsPerson if submission.problem_needs_person else Rejected)(
                submission.problem)

        def reset() -> None:
            notes.clear()
            shutil.rmtree(scratch)
            scratch.mkdir()
            os.chmod(scratch, 0o755)

        (budgets, places), whole = unpacked_leaving_out_data(
            lambda leave_out: _unpack(submission, scratch, limits, notes, leave_out), reset)
        # What was left out: only a leave-out pass leaves any, this one's or the one that
        # unzipped a whole Moodle download (zipped_downloads.py), under one rule.
        items = [*submission.left_out, *(item for budget in budgets for item in budget.left_out)]
        why = whole or submission.left_out_why
        lines = _left_out_lines(items)
        if why is not None and items:
            notes.append(f"graded without {left_out_text(items)} ({short_reason(why)}): "
                         + ", ".join(lines[:10]) + (f" and {len(lines) - 10} more"
                                                    if len(lines) > 10 else ""))
        left_out = _said(lines)
        for link in submission.skipped_links:
            target = "" if link.target is None else f" (to {shown_name(link.target)})"
            notes.append(f"skipped {shown_name(link.where)}: a symbolic link{target}; "
                         f"{LINKS_NOT_FOLLOWED}")
        links = link_lines([*submission.skipped_links,
                            *(link for budget in budgets for link in budget.links)],
                           submission.sources, submission.root,
                           submission.student.participant_id, shown_name)
        places = list(dict.fromkeys(places.values()))
        layout = list(assignments or assignment_ids())
        require_expected_files(scratch, list(graded or layout), layout,
                               why=[f"{name} is an empty zip archive (it holds no files)"
                                    for budget in budgets for name in budget.empty_archives]
                               + ([f"over the limits, it was unpacked without {', '.join(left_out[:10])}"]
                                  if left_out else []))
        root = (_one_of_the_copies(submission, places, layout, notes) if submission.several
                else find_root(scratch, assignments=layout, notes=notes))
        if root != scratch:
            notes.append(f"submission root: {root.relative_to(scratch).as_posix()}/")
        if not left_out and not links:   # else what was left out may be the work
            require_work_handed_in(root, list(graded or layout))
        # A whole course folder's untouched assignments, not graded: instructor.md names them.
        copies = template_copies_in(root, [a for a in layout if a not in (graded or layout)])
        digest = content_hash(root)
        if left_out:
            # Graded without some of it: the same code handed in again without the data is
            # another upload, graded again, so that its report stops naming what it left out.
            digest += "+without:" + hashlib.sha256("\n".join(left_out).encode(
                "utf-8", "surrogateescape")).hexdigest()[:16]
        if links:
            # Likewise its links: one made a file (or pointed elsewhere) is another upload.
            digest += "+links:" + hashlib.sha256(json.dumps(links, sort_keys=True).encode(
                "utf-8", "surrogateescape")).hexdigest()[:16]
        return Prepared(root=root, content_hash=digest, notes=_said(notes), left_out=left_out,
                        links=links, template_copies=[a for a in layout if a in copies],
                        template_copies_why={a: copies[a] for a in layout if a in copies})
    except Rejected as problem:
        # A zip's advice names the assignment it is graded for (`zip -r practical4.zip ...`).
        return _refused(submission, with_own_example(str(problem), list(graded or assignments
                                                                        or assignment_ids())),
                        notes, isinstance(problem, NeedsPerson))
    except OSError as exc:
        if exc.errno in HOST_ERRNOS:
            raise   # the machine's, not the upload's: no rejection; the next batch tries again
        return _refused(submission, _unpack_problem(exc, scratch), notes)
    except Exception as exc:   # one upload can only fail itself, however it fails
        return _refused(submission, f"could not be unpacked ({type(exc).__name__}: "
                                    f"{str(exc)[:300] or 'no message'})", notes)


def _unpack(submission: Submission, scratch: Path, limits: UnpackLimits, notes: list[str],
            leave_out: bool = False) -> tuple[list[Budget], dict[Path, Path]]:
    """Each upload of the student into its place, within limits of its own: a late/ copy of
    the same files had counted twice against one budget and rejected the student."""
    places = _places(submission, scratch)
    budgets = {place: Budget(limits, leave_out) for place in dict.fromkeys(places.values())}
    for source in submission.sources:
        places[source].mkdir(exist_ok=True)
        materialize_entry(source, places[source], budgets[places[source]], notes)
    return list(budgets.values()), places


def short_reason(problem: Exception) -> str:
    """The first clause of an unpack rejection: what was over, without the advice."""
    return str(problem).split("; ")[0]


# Lines of what was left out, at most: 30,000 images had put 30,000 lines into each report.
MAX_LEFT_OUT_LINES = 200


def _left_out_lines(items: list[LeftOut]) -> list[str]:
    """One line per left-out file, data folder or environment, largest first."""
    ordered = sorted(items, key=lambda item: (-(item[1] or 0), item[0]))
    kinds = {"environment": "a Python environment", "data folder": "a folder of data"}
    lines = [f"{where} ({size_text(size) if size is not None else kinds[kind]})"
             for where, size, kind in ordered[:MAX_LEFT_OUT_LINES]]
    if len(ordered) > MAX_LEFT_OUT_LINES:
        rest = ordered[MAX_LEFT_OUT_LINES:]
        lines.append(f"and {len(rest)} more ({size_text(sum(size or 0 for _, size, _ in rest))})")
    return lines


def assignments_in(submission: Submission, scratch: Path, layout: Sequence[str],
                   limits: UnpackLimits = UnpackLimits()) -> set[str]:
    """The assignments of `layout` whose files the upload holds, unpacked as prepare() does;
    empty where it cannot be unpacked, holds none or several versions. Leaves `scratch` empty."""
    return assignments_and_template_copies_in(submission, scratch, layout, limits)[0]


def assignments_and_template_copies_in(submission: Submission, scratch: Path,
                                       layout: Sequence[str],
                                       limits: UnpackLimits = UnpackLimits()
                                       ) -> tuple[set[str], dict[str, str]]:
    """(assignments_in's, {assignment: why} of those whose folder in the upload is the
    template's unchanged, or holds only what another runs: not handed in)."""
    try:
        prepared = prepare(submission, scratch, limits, layout, graded=layout)
        if prepared.root is None:
            return set(), {}
        return (held_assignments(prepared.root, layout),
                template_copies_in(prepared.root, layout))
    except OSError:   # the machine's (a full disk): the grading's own preparation says so
        return set(), {}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _places(submission: Submission, scratch: Path) -> dict[Path, Path]:
    """Where each source is unpacked: into `scratch` itself, but for a student who uploaded
    several times (alice/ and alice.zip; Jane's Moodle download here and in late/): a folder
    per upload then, a Moodle folder's files of one student together."""
    if not submission.several:
        return {source: scratch for source in submission.sources}
    places: dict[Path, Path] = {}
    named: dict[Path, Path] = {}
    for source in submission.sources:
        moodle = _is_moodle(source)
        upload = source.parent if moodle else source
        if upload not in named:
            name = shown_name(upload.name if moodle else display_name(source))
            taken = set(named.values())
            place, count = scratch / name, 1
            while place in taken:
                count += 1
                place = scratch / f"{name} ({count})"
            named[upload] = place
        places[source] = named[upload]
    return places


def _one_of_the_copies(submission: Submission, places: list[Path], layout: list[str],
                       notes: list[str]) -> Path:
    """The root of a student's several plain entries, where they hold the same work (a folder
    and a zip of it had been rejected with a 0); NeedsPerson where they differ: which one counts
    is the student's to say, not the grader's to guess."""
    roots = [find_root(place, assignments=layout, notes=notes) for place in places]
    if len({content_hash(root) for root in roots}) > 1:
        # Named where the instructor finds them (both of Jane's Moodle folders have one name:
        # only their place tells the late one), with the one remedy that works here.
        uploads = [submission.located(source) for source in submission.sources]
        folder = (shown_name(submission.root.name) + "/" if submission.root
                  else "the submissions folder")
        raise NeedsPerson(f"{len(uploads)} uploads of {submission.student.name} with different "
                          f"files: {' and '.join(uploads)}. Which one counts is for a person to "
                          f"decide: move the other{'s' if len(uploads) > 2 else ''} out of "
                          f"{folder} and run the batch again")
    notes.append(f"{submission.describe()}: the same files uploaded twice, graded once")
    return roots[0]


# Failures of the grading machine (a full disk, a quota, too many open files), never of an
# upload: the unpacking budget keeps an upload far below them. A class had been zeroed as
# "could not be unpacked: No space left on device".
HOST_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EMFILE, errno.ENFILE, errno.ENOMEM,
                         errno.EIO, errno.EROFS})
# A name that is a file in one entry and a folder in another.
_CLASHES = {errno.EISDIR, errno.EEXIST, errno.ENOTDIR}


def _unpack_problem(exc: OSError, scratch: Path) -> str:
    """What went wrong unpacking, in the upload's own names: the batch's scratch folder is no
    business of the student's (the message reaches their feedback)."""
    where = None
    if isinstance(exc.filename, (str, bytes, os.PathLike)):
        path = Path(os.fsdecode(exc.filename))
        where = readable_text(path.relative_to(scratch).as_posix() if path.is_relative_to(scratch)
                              else path.name)
        where = where.split("/", 1)[1] if "/" in where and exc.errno in _CLASHES else where
    if exc.errno in _CLASHES and where:
        return f"could not be unpacked: '{where}' is both a file and a folder in the upload"
    reason = readable_text(exc.strerror or type(exc).__name__)
    return f"could not be unpacked: {reason}" + (f" ('{where}')" if where else "")


def _refused(submission: Submission, problem: str, notes: list[str],
             needs_person: bool = False) -> Prepared:
    try:
        digest = source_hash(submission.sources)
    except Exception as exc:   # e.g. an unreadable entry: still a stable key for this upload
        digest = "raw:unreadable:" + hashlib.sha256(
            repr((sorted(map(str, submission.sources)), type(exc).__name__)).encode()).hexdigest()
    return Prepared(root=None, content_hash=digest, problem=shown_name(problem),
                    notes=_said(notes), needs_person=needs_person)


def _said(notes: list[str]) -> list[str]:
    """Notes as the console, the class page and the student read them: a name unzip left in
    Latin-1 bytes as text (it had printed as `L\\udcf6sung.py`, or failed a strict console),
    control characters escaped (grader/batch/printable.py)."""
    return [shown_name(note) for note in notes]


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
    links hashed by their target and never followed). Walked without recursion: a rejected
    upload may be nested far deeper than Python's recursion limit."""
    digest = hashlib.sha256()
    for source in sorted(sources):
        items = [(source.name, source)]
        if source.is_dir() and not source.is_symlink():
            stack = [source]                 # depth first, in os.walk's top-down order
            while stack:
                folder = stack.pop()
                with os.scandir(folder) as scan:
                    entries = sorted(scan, key=lambda e: e.name)
                for entry in entries:
                    path = Path(entry.path)
                    items.append((f"{source.name}/{path.relative_to(source).as_posix()}", path))
                stack += [Path(e.path) for e in reversed(entries)
                          if e.is_dir(follow_symlinks=False)]
        for rel, path in items:
            digest.update(rel.encode("utf-8", "surrogateescape") + b"\0")
            if path.is_symlink():
                digest.update(b"link:" + os.fsencode(os.readlink(path)))
            elif path.is_file():
                with open(path, "rb") as handle:
                    while chunk := handle.read(CHUNK):
                        digest.update(chunk)
    return "raw:" + digest.hexdigest()
