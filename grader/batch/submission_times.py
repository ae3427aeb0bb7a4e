"""Submission times for `pdl-grade batch --submission-times FILE [--timezone ZONE]`.

FILE is one of (recognised from its name and content):
- Moodle's grading worksheet ("Download grading worksheet"): `Identifier` ("Participant
  12345"), `Full name`, ..., `Last modified (submission)` in Moodle's words ("Thursday, 30 April
  2026, 11:59 PM", "-" when nothing was submitted). Those times carry no zone: `--timezone`
  (an IANA name such as Europe/Berlin) says which, and a worksheet without it is refused.
  Rows match Moodle's "download all submissions" folders by the participant id.
- Gradescope's export `submission_metadata.yml`: `submission_<id>:` -> `:submitters:`
  (`:name:`, `:sid:`, `:email:`) and `:created_at:` (with a zone). Entries match the folder
  `submission_<id>/`, or a folder named after a submitter's sid, email or name.
  A SUBMISSIONS folder holding this file (Gradescope's export layout) needs no option.
- a CSV with the columns `student,submitted_at`: ISO 8601 with a zone (`--timezone` supplies
  one where it is missing); `student` is the folder or zip name, the student's name, or
  Moodle's "Participant 12345".

Nothing here stops a batch over the file's content: a file that cannot be read or
recognised, or an entry whose time cannot be read, leaves the students concerned without a
time (graded without a late penalty) and comes back as a warning naming the file and line.
Only what the instructor must fix before anything is graded raises `SubmissionTimesError`:
a missing file, an unknown zone, a Moodle worksheet without `--timezone`.
"""
from __future__ import annotations

import csv
import datetime as dt
import io
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from grader.batch.inputs import Student

GRADESCOPE_METADATA = "submission_metadata.yml"
MOODLE_KIND = "Moodle grading worksheet"
GRADESCOPE_KIND = "Gradescope submission metadata"
PLAIN_KIND = "CSV of student,submitted_at"
MOODLE_TIME_COLUMN = "last modified (submission)"
MOODLE_FORMATS = ("%A, %d %B %Y, %I:%M %p", "%A, %d %B %Y, %H:%M",
                  "%d %B %Y, %I:%M %p", "%d %B %Y, %H:%M")
# ISO 8601 as Gradescope and Ruby write it too: a space before the zone, nanoseconds, +0200.
_ISO = re.compile(r"^(?P<date>\d{4}-\d{2}-\d{2})[T ](?P<time>\d{2}:\d{2}(?::\d{2})?)"
                  r"(?:[.,](?P<fraction>\d+))?\s*(?P<zone>Z|UTC|[+-]\d{2}(?::?\d{2})?)?$", re.I)


class SubmissionTimesError(Exception):
    """The times cannot be used at all and the batch must not start (the message says why)."""


@dataclass(frozen=True)
class TimeEntry:
    """One row or entry of the file: whom it names and when they submitted."""
    where: str                    # "times.csv line 7", for messages
    keys: frozenset[str]          # identifiers it matches (see `student_keys`)
    label: str                    # how the file names the student
    when: dt.datetime | None      # None: no time (problem says why, or nothing submitted)
    problem: str | None = None


@dataclass(frozen=True)
class Lookup:
    when: dt.datetime | None
    warning: str | None = None    # why a listed student has no usable time
    listed: bool = True           # whether any entry names the student


@dataclass
class SubmissionTimes:
    source: Path
    kind: str
    entries: list[TimeEntry] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)   # not tied to one student

    def describe(self) -> str:
        return f"{self.source.name} ({self.kind})"

    def lookup(self, student: Student) -> Lookup:
        """The time of one student's submission; an unlisted student gets none, silently
        (the batch counts them), a listed one whose time is unusable gets a warning."""
        wanted = student_keys(student)
        found = [e for e in self.entries if e.keys & wanted and _same_participant(e, student)]
        if not found:
            return Lookup(None, listed=False)
        bad = [e for e in found if e.problem]
        if bad:
            return Lookup(None, "; ".join(f"{e.where}: {e.problem}" for e in bad))
        times = {e.when for e in found if e.when is not None}
        if len(times) > 1:
            return Lookup(None, "several entries with different times (" + ", ".join(
                f"{e.where}: {e.when.isoformat()}" for e in found if e.when is not None) + ")")
        return Lookup(times.pop() if times else None)

    def unmatched(self, students: list[Student]) -> list[TimeEntry]:
        """Entries with a time that match none of `students` (a sign of the wrong file)."""
        known = set().union(*(student_keys(s) for s in students)) if students else set()
        return [e for e in self.entries if e.when is not None and not e.keys & known]


def _same_participant(entry: TimeEntry, student: Student) -> bool:
    """A Moodle participant is matched by name only where the entry names no other participant:
    Moodle numbers each assignment's participants anew, so Practical 5's row of "Alice Tamm"
    (Participant 2001) is not the time of her HW3 upload (Participant 1001)."""
    if not student.participant_id:
        return True
    numbers = {key for key in entry.keys if key.startswith("participant:")}
    return not numbers or "participant:" + student.participant_id in numbers


@dataclass
class TimesFiles:
    """Several times files, as `--submission-times [ASSIGNMENT=]FILE` repeated gives them: one
    per Moodle download (each numbers its participants anew). A file named for an assignment
    serves the uploads graded for it only."""
    files: list[tuple[str | None, SubmissionTimes]]

    @property
    def entries(self) -> list[TimeEntry]:
        return [entry for _, times in self.files for entry in times.entries]

    @property
    def problems(self) -> list[str]:
        return [problem for _, times in self.files for problem in times.problems]

    def describe(self) -> str:
        return ", ".join((f"{a}=" if a else "") + times.describe() for a, times in self.files)

    def lookup(self, student: Student, assignments=()) -> Lookup:
        """The student's time from every file that serves the upload; two files giving it
        different times is a conflict (`Lookup.warning`, `conflict`)."""
        found = [(times, times.lookup(student)) for assignment, times in self.files
                 if assignment is None or assignment in assignments]
        listed = [(times, look) for times, look in found if look.listed]
        if not listed:
            return Lookup(None, listed=False)
        if len(listed) == 1:
            return listed[0][1]
        bad = [look.warning for _, look in listed if look.warning]
        if bad:
            return Lookup(None, "; ".join(bad))
        times = {look.when for _, look in listed if look.when is not None}
        if len(times) > 1:
            return Lookup(None, self.conflict(listed))
        return Lookup(times.pop() if times else None)

    @staticmethod
    def conflict(listed) -> str:
        return "different times in " + ", ".join(
            f"{times.source.name} ({look.when.isoformat() if look.when else 'none'})"
            for times, look in listed)

    def conflicts(self, students: list[tuple[Student, tuple[str, ...]]]) -> list[str]:
        """"<key>: different times in a.csv (...), b.csv (...)" for each upload two files time
        differently."""
        found = []
        for student, assignments in students:
            looks = [(times, times.lookup(student)) for assignment, times in self.files
                     if assignment is None or assignment in assignments]
            looks = [(times, look) for times, look in looks if look.listed and not look.warning]
            if len({look.when for _, look in looks}) > 1:
                found.append(f"{student.key}: {self.conflict(looks)}")
        return found


def student_keys(student: Student) -> set[str]:
    keys = {"name:" + _fold(student.key), "name:" + _fold(student.name)}
    if student.participant_id:
        keys.add("participant:" + student.participant_id)
    return keys


def _fold(text: Any) -> str:
    return " ".join(str(text).split()).casefold()


def zone_named(name: str | None) -> dt.tzinfo | None:
    if name is None:
        return None
    try:
        return ZoneInfo(name.strip())
    except (ZoneInfoNotFoundError, ValueError):
        raise SubmissionTimesError(f"--timezone {name}: not a time zone name "
                                   "(use an IANA name such as Europe/Berlin or UTC)") from None


def load(path: Path | str, timezone: str | None = None) -> SubmissionTimes:
    """Read FILE in whichever of the three formats it is."""
    path = Path(path)
    zone = zone_named(timezone)
    if not path.is_file():
        raise SubmissionTimesError(f"--submission-times {path}: no such file")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SubmissionTimesError(f"--submission-times {path}: cannot be read ({exc.strerror})") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        return _unusable(path, "unknown format", f"line {line}: not UTF-8 text")
    if _looks_like_yaml(path, text):
        return _gradescope(path, text, zone)
    return _csv(path, text, zone)


def _unusable(path: Path, kind: str, problem: str) -> SubmissionTimes:
    return SubmissionTimes(path, kind, problems=[
        f"{path.name}: {problem}; no submission time was taken from it (no late penalties)"])


def _looks_like_yaml(path: Path, text: str) -> bool:
    if path.suffix.lower() in (".yml", ".yaml"):
        return True
    first = next((line for line in text.splitlines() if line.strip() and not line.startswith("#")), "")
    return first.startswith(("---", "%YAML")) or bool(re.match(r"^submission_\w*:\s*$", first))


# --- times ---------------------------------------------------------------------------------

def parse_iso(text: str, zone: dt.tzinfo | None) -> dt.datetime:
    """ISO 8601 date and time; without an offset, in `zone`; ValueError says what is wrong."""
    value = str(text).strip()
    match = _ISO.match(value)
    if not match:
        raise ValueError(f"'{value}' is not an ISO 8601 date and time "
                         "(such as 2026-04-30T23:59:00+02:00)")
    iso = f"{match['date']}T{match['time']}"
    if match["fraction"]:
        iso += "." + match["fraction"][:6].ljust(6, "0")
    raw_zone = (match["zone"] or "").upper()
    if raw_zone in ("Z", "UTC"):
        iso += "+00:00"
    elif raw_zone:
        digits = raw_zone[1:].replace(":", "")
        iso += f"{raw_zone[0]}{digits[:2]}:{digits[2:4] or '00'}"
    try:
        when = dt.datetime.fromisoformat(iso)
    except ValueError:
        raise ValueError(f"'{value}' is not a valid date and time") from None
    return _zoned(when, value, zone)


def _zoned(when: dt.datetime, shown: str, zone: dt.tzinfo | None) -> dt.datetime:
    if when.tzinfo is not None and when.utcoffset() is not None:
        return when
    if zone is None:
        raise ValueError(f"'{shown}' has no time zone (write it with an offset such as "
                         "+02:00, or give --timezone)")
    return when.replace(tzinfo=zone)


def parse_moodle(text: str, zone: dt.tzinfo) -> dt.datetime:
    """Moodle's "Thursday, 30 April 2026, 11:59 PM" (English; 12- or 24-hour) in `zone`."""
    value = " ".join(str(text).split())
    for fmt in MOODLE_FORMATS:
        try:
            when = dt.datetime.strptime(value, fmt)
        except ValueError:
            continue
        weekday = value.split(",", 1)[0]
        if "%A" in fmt and weekday.casefold() != when.strftime("%A").casefold():
            raise ValueError(f"'{value}' says {weekday}, but {when:%d %B %Y} is a {when:%A}")
        return when.replace(tzinfo=zone)
    raise ValueError(f"'{value}' is not a date in Moodle's format "
                     "(such as 'Thursday, 30 April 2026, 11:59 PM')")


# --- CSV: Moodle's worksheet or student,submitted_at ---------------------------------------

def _csv(path: Path, text: str, zone: dt.tzinfo | None) -> SubmissionTimes:
    lines = text.splitlines()
    header_line = next((line for line in lines if line.strip()), "")
    delimiter = max(",;\t", key=header_line.count)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        header = next((row for row in reader if any(cell.strip() for cell in row)), None)
    except csv.Error as exc:
        return _unusable(path, "unknown format", f"line {reader.line_num}: {exc}")
    columns = {_fold(name): i for i, name in reversed(list(enumerate(header or [])))}
    if MOODLE_TIME_COLUMN in columns and "identifier" in columns:
        if zone is None:
            raise SubmissionTimesError(
                f"{path.name} is a Moodle grading worksheet, whose times ('Thursday, 30 April "
                "2026, 11:59 PM') have no time zone: give the zone of the Moodle site with "
                "--timezone, e.g. --timezone Europe/Berlin")
        return _rows(path, reader, MOODLE_KIND, columns, _moodle_row, zone)
    if "student" in columns and "submitted_at" in columns:
        return _rows(path, reader, PLAIN_KIND, columns, _plain_row, zone)
    shown = ", ".join(header or []) or "nothing"
    return _unusable(path, "unknown format", (
        f"not a Moodle grading worksheet (columns Identifier and 'Last modified (submission)'), "
        f"a Gradescope {GRADESCOPE_METADATA} or a CSV with the columns student,submitted_at "
        f"(line 1 has: {shown[:200]})"))


def _rows(path, reader, kind, columns, parse_row, zone) -> SubmissionTimes:
    times = SubmissionTimes(path, kind)
    width = max(columns.values()) + 1
    try:
        for row in reader:
            if not any(cell.strip() for cell in row):
                continue
            where = f"{path.name} line {reader.line_num}"
            if len(row) < width:
                times.problems.append(f"{where}: {len(row)} column(s), expected {width}; row ignored")
                continue
            entry = parse_row(where, row, columns, zone)
            if isinstance(entry, str):
                times.problems.append(f"{where}: {entry}; row ignored")
            else:
                times.entries.append(entry)
    except csv.Error as exc:
        times.problems.append(f"{path.name} line {reader.line_num}: {exc}; the rest of the "
                              "file was not read")
    return times


def _moodle_row(where, row, columns, zone) -> TimeEntry | str:
    identifier = row[columns["identifier"]].strip()
    match = re.search(r"(\d+)\s*$", identifier)
    if not match:
        return f"Identifier '{identifier}' has no participant number (expected 'Participant 12345')"
    label = row[columns["full name"]].strip() if "full name" in columns else identifier
    keys = frozenset({"participant:" + match[1]})
    value = row[columns[MOODLE_TIME_COLUMN]].strip()
    if value in ("", "-"):
        return TimeEntry(where, keys, label or identifier, None)
    try:
        return TimeEntry(where, keys, label or identifier, parse_moodle(value, zone))
    except ValueError as exc:
        return TimeEntry(where, keys, label or identifier, None, str(exc))


def _plain_row(where, row, columns, zone) -> TimeEntry | str:
    student = row[columns["student"]].strip()
    if not student:
        return "no student named"
    keys = {"name:" + _fold(student)}
    participant = re.fullmatch(r"participant\s*(\d+)", student, re.I)
    if participant:
        keys.add("participant:" + participant[1])
    value = row[columns["submitted_at"]].strip()
    try:
        return TimeEntry(where, frozenset(keys), student, parse_iso(value, zone))
    except ValueError as exc:
        return TimeEntry(where, frozenset(keys), student, None, str(exc))


# --- Gradescope's submission_metadata.yml --------------------------------------------------

def _yaml_loader():
    import yaml

    class Loader(yaml.SafeLoader):
        """SafeLoader that reads a tagged node (Ruby's `!ruby/object:...`) as the plain data
        it holds instead of refusing the file; nothing is ever constructed from a tag."""

    def untagged(loader, _suffix, node):
        if isinstance(node, yaml.MappingNode):
            return loader.construct_mapping(node, deep=True)
        if isinstance(node, yaml.SequenceNode):
            return loader.construct_sequence(node, deep=True)
        return loader.construct_scalar(node)

    Loader.add_multi_constructor("!", untagged)
    Loader.add_multi_constructor("tag:yaml.org,2002:ruby", untagged)
    return yaml, Loader


def _field(mapping: dict, name: str) -> Any:
    """Gradescope writes Ruby symbols: `:created_at:` is the key ':created_at'."""
    for key in (f":{name}", name, f":{name}:"):
        if key in mapping:
            return mapping[key]
    return None


def _gradescope(path: Path, text: str, zone: dt.tzinfo | None) -> SubmissionTimes:
    yaml, loader = _yaml_loader()
    times = SubmissionTimes(path, GRADESCOPE_KIND)
    try:
        data = yaml.load(text, Loader=loader)   # noqa: S506 (a SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        return _unusable(path, GRADESCOPE_KIND, f"{where}not valid YAML ({problem})")
    if not isinstance(data, dict):
        return _unusable(path, GRADESCOPE_KIND, "expected a mapping of submission_<id> entries, "
                                                f"found {type(data).__name__}")
    lines = {m[1]: n for n, m in enumerate((re.match(r"^['\"]?([^\s'\":][^'\":]*)['\"]?:\s*$", line)
                                            for line in text.splitlines()), 1) if m}
    for submission_id, entry in data.items():
        name = str(submission_id)
        where = f"{path.name} line {lines[name]}" if name in lines else f"{path.name} entry {name}"
        if not isinstance(entry, dict):
            times.problems.append(f"{where}: {name} is not a mapping; ignored")
            continue
        keys = {"name:" + _fold(name)}
        submitters = _field(entry, "submitters") or []
        for person in submitters if isinstance(submitters, list) else []:
            if isinstance(person, dict):
                keys |= {"name:" + _fold(v) for k in ("sid", "email", "name")
                         if (v := _field(person, k)) not in (None, "")}
        label = ", ".join(str(_field(p, "name")) for p in submitters
                          if isinstance(p, dict) and _field(p, "name")) if isinstance(submitters, list) else ""
        created = _field(entry, "created_at")
        when, problem = None, None
        try:
            if created is None:
                raise ValueError("no :created_at:")
            if isinstance(created, dt.datetime):
                when = _zoned(created, str(created), zone)
            elif isinstance(created, dt.date):
                raise ValueError(f":created_at: {created} has no time of day")
            else:
                when = parse_iso(str(created), zone)
        except ValueError as exc:
            problem = str(exc)
        times.entries.append(TimeEntry(where, frozenset(keys), label or name, when, problem))
    return times
