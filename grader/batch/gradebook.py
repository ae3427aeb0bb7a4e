"""DIR/gradebook.sqlite: students, submissions (by content hash), runs, scores and logs.

Crash safety: only the batch's parent process writes; a run is written in ONE transaction
after its result.json is complete, so a batch killed at any moment leaves each run either
fully recorded or absent. WAL mode with synchronous=FULL makes a committed run survive the
kill (and a power cut). The partial unique index `one_current_run_per_student` makes a
duplicate current result impossible, whatever the code above does.

Schema versions (meta.schema_version): 1, the first; 2 adds runs.submitted_at, the submission
time a run was scored with; 3 adds runs.needs_person (a rejected upload in which nothing the
assignments expect was found: a person's to look at, not a zero) and submissions.fingerprints
(the code files' fingerprints, for the class page's identical-code flags); 4 adds
students.email (from a Moodle worksheet: one person's uploads of several assignments, each
numbered anew by Moodle, are one row of grades.csv). An older gradebook
is migrated when opened, in one transaction (ALTER TABLE ... ADD COLUMN: existing runs keep
NULL, "time unknown", which is what they were scored with, 0, "not for a person", and no
email: the name tells people apart, as before); a newer
one is refused rather than half understood.
"""
from __future__ import annotations

import dataclasses
import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, NamedTuple

from grader.batch.inputs import Student
from grader.common.text import storable
from grader.reports.formatting import format_points
from grader.reports.pending import by_hand_points, waiting_to_be_read
from grader.scoring.score import grading_problems

SCHEMA_VERSION = 4
# Outcomes of a run. `graded` and `rejected` are final for that content and configuration;
# `timed_out` and `error` are retried by the next batch (the cause may have been the machine).
FINAL_STATUSES = ("graded", "rejected")
STATUSES = FINAL_STATUSES + ("timed_out", "error")

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS students (
    id             INTEGER PRIMARY KEY,
    key            TEXT NOT NULL UNIQUE,   -- folder name under DIR/submissions/
    name           TEXT NOT NULL,
    participant_id TEXT,                   -- Moodle's participant id, NULL outside Moodle
    email          TEXT                    -- from a Moodle worksheet (NULL: not given)
);
CREATE TABLE IF NOT EXISTS submissions (
    id           INTEGER PRIMARY KEY,
    student_id   INTEGER NOT NULL REFERENCES students(id),
    content_hash TEXT NOT NULL,            -- sha256 of sorted paths + bytes ('raw:' if rejected)
    source       TEXT NOT NULL,            -- entries of SUBMISSIONS it came from
    first_seen   TEXT NOT NULL,
    fingerprints TEXT,                     -- JSON {{file: normalised code hash}} (NULL: none)
    UNIQUE (student_id, content_hash)
);
CREATE TABLE IF NOT EXISTS runs (
    id              INTEGER PRIMARY KEY,
    student_id      INTEGER NOT NULL REFERENCES students(id),
    submission_id   INTEGER NOT NULL REFERENCES submissions(id),
    config_hash     TEXT NOT NULL,         -- grader version + rubric files + assignments + timeout
    grader_version  TEXT NOT NULL,
    rubric_hash     TEXT NOT NULL,
    rubric_versions TEXT NOT NULL,         -- JSON {{assignment: version}}
    assignments     TEXT NOT NULL,         -- JSON list
    started_at      TEXT NOT NULL,
    finished_at     TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ({", ".join(f"'{s}'" for s in STATUSES)})),
    message         TEXT,                  -- why it was rejected / timed out / errored
    score           REAL,
    max_score       REAL,
    result_json     TEXT,                  -- the complete result.json (NULL if none)
    current         INTEGER NOT NULL DEFAULT 1 CHECK (current IN (0, 1)),
    submitted_at    TEXT,                  -- ISO 8601 time it was scored with (NULL: unknown)
    needs_person    INTEGER NOT NULL DEFAULT 0  -- rejected: nothing expected found; no zero
);
CREATE UNIQUE INDEX IF NOT EXISTS one_current_run_per_student ON runs(student_id) WHERE current = 1;
CREATE TABLE IF NOT EXISTS assignment_scores (
    run_id         INTEGER NOT NULL REFERENCES runs(id),
    assignment     TEXT NOT NULL,
    score          REAL NOT NULL,
    max_score      REAL NOT NULL,
    status         TEXT,
    rubric_version TEXT,
    PRIMARY KEY (run_id, assignment)
);
CREATE TABLE IF NOT EXISTS item_scores (
    run_id     INTEGER NOT NULL REFERENCES runs(id),
    assignment TEXT NOT NULL,
    item_id    TEXT NOT NULL,
    score      REAL NOT NULL,
    max_score  REAL NOT NULL,
    status     TEXT,
    feedback   TEXT,
    PRIMARY KEY (run_id, item_id)
);
CREATE TABLE IF NOT EXISTS logs (
    id         INTEGER PRIMARY KEY,
    run_id     INTEGER REFERENCES runs(id),
    student_id INTEGER REFERENCES students(id),
    at         TEXT NOT NULL,
    level      TEXT NOT NULL,
    message    TEXT NOT NULL
);
"""


@dataclass(frozen=True)
class RunConfig:
    """What, besides the submission's content, decides its grades."""
    grader_version: str
    rubric_hash: str
    rubric_versions: dict[str, str]
    assignments: tuple[str, ...]
    config_hash: str


@dataclass
class RunRecord:
    status: str
    started_at: str
    finished_at: str
    message: str | None = None
    result: dict[str, Any] | None = None
    submitted_at: str | None = None    # the submission time the scores used (late penalty)
    needs_person: bool = False         # (rejected) nothing to grade found: a person looks


class GradebookError(Exception):
    """The gradebook cannot be used by this version (the message says why)."""


class RunState(NamedTuple):
    """What decides whether a student's current run is up to date."""
    content_hash: str
    config_hash: str
    status: str
    submitted_at: str | None


@dataclass(frozen=True)
class CurrentRun:
    student: Student
    status: str
    message: str | None
    content_hash: str
    config_hash: str
    result: dict[str, Any] | None
    assignment_scores: dict[str, float]
    submitted_at: str | None = None
    needs_person: bool = False
    assignments: tuple[str, ...] = ()    # what the run graded (its configuration's)

    @property
    def held(self) -> list[str]:
        """Assignments whose automatic points are held for review: no verdict yet, so no grade
        to upload or total (a held honest student must never be shown a 0)."""
        return held_for_review(self.result) if self.status == "graded" else []

    @property
    def grading_problems(self) -> dict[str, str]:
        """{assignment: its first grading problem} of the assignments the grader itself failed
        to grade (a check that did not run or errored: grader/scoring/score.py
        `grading_problems`): no grade, never a 0; the next batch grades the upload again."""
        return grading_problems_of(self.result) if self.status == "graded" else {}

    @property
    def unread(self) -> dict[str, float]:
        """{assignment: points} of automatic items whose answer was found but could not be read
        (a scanned report: grader/scoring/score.py `pending_unread`): points the grader could
        not decide, as a held submission's, so no grade to upload or total until a person has
        read them (an override). A TA's audit: a scan's 2 read points had gone to Moodle as
        2/15 for a full solution. Written answers waiting are no such points: the grade holds
        those scored so far (README, "Grading a class")."""
        return unread_of(self.result) if self.status == "graded" else {}

    @property
    def without_grade(self) -> list[str]:
        """Assignments of a graded run that have no grade to upload or total: held for review,
        a grading problem, or answers waiting for a person to read them."""
        return list(dict.fromkeys(self.held + list(self.grading_problems) + list(self.unread)))


def unread_of(result: dict | None) -> dict[str, float]:
    """{assignment: points waiting for a person to read its answers} of a result."""
    found = {}
    for assignment in (result or {}).get("assignments") or []:
        points = round(sum(float(item["pending_points"])
                           for item in waiting_to_be_read(assignment)), 2)
        if points > 0:
            found[str(assignment.get("id"))] = points
    return found


def no_grade_until(result: dict | None, assignment: str, points: float) -> str:
    """The Status's words for an assignment whose automatic points wait for a person: to read
    answers the grader found but could not read, or to grade by hand checks the grader could
    not run on code that itself runs (grader/reports/pending.py `by_hand_points`)."""
    found = next((a for a in (result or {}).get("assignments") or [] if str(a.get("id")) == assignment), {})
    by_hand = sum(by_hand_points(item) for item in waiting_to_be_read(found))
    why = ("a person reads answers" if by_hand <= 0 else
           "a person grades by hand checks the grader could not run" if by_hand >= points else
           "a person reads answers and grades by hand checks the grader could not run")
    return f"no grade until {why}: {assignment} ({format_points(points)} points wait)"


def held_for_review(result: dict | None) -> list[str]:
    return [a.get("id") for a in (result or {}).get("assignments") or []
            if (a.get("integrity") or {}).get("withheld")]


def grading_problems_of(result: dict | None) -> dict[str, str]:
    """{assignment: its first grading problem} of a result (grader/scoring/score.py
    `grading_problems`), in the result's order; a result the batch did not grade (its
    `not_graded` mark) has none: it is a rejection, not a grading problem."""
    if not result or result.get("not_graded"):
        return {}
    found = {}
    for assignment in result.get("assignments") or []:
        problems = grading_problems(assignment)
        if problems:
            found[str(assignment.get("id"))] = problems[0]
    return found


def grading_problem_text(assignment: str, problem: str) -> str:
    """How grades.csv's Status, the class page and the console say it."""
    return f"grading problem in {assignment}: {problem}; run the batch again"


class Gradebook:
    def __init__(self, path: Path):
        self.path = path
        # isolation_level=None: transactions are opened explicitly (BEGIN IMMEDIATE).
        self.db = sqlite3.connect(path, isolation_level=None, timeout=30)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.execute("PRAGMA foreign_keys=ON")
        try:
            self._open()
        except BaseException:
            self.db.close()
            raise

    def _open(self) -> None:
        with self.transaction():
            found = self._schema_version()
            if found is not None and found > SCHEMA_VERSION:
                raise GradebookError(
                    f"{self.path} has schema version {found}, written by a newer pdl-grade than this "
                    f"one (which knows up to {SCHEMA_VERSION}); use that version, or another --out")
            for statement in _statements():
                self.db.execute(statement)
            self._migrate()
            self.db.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))

    def _schema_version(self) -> int | None:
        if not self.db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone():
            return None
        row = self.db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return int(row[0]) if row else None

    def _migrate(self) -> None:
        """Bring a version-1, -2 or -3 gradebook to the current schema (inside the open transaction,
        so a batch killed here leaves the old gradebook as it was; idempotent)."""
        columns = {row[1] for row in self.db.execute("PRAGMA table_info(runs)")}
        if "submitted_at" not in columns:
            self.db.execute("ALTER TABLE runs ADD COLUMN submitted_at TEXT")
        if "needs_person" not in columns:
            self.db.execute("ALTER TABLE runs ADD COLUMN needs_person INTEGER NOT NULL DEFAULT 0")
        if "fingerprints" not in {row[1] for row in self.db.execute("PRAGMA table_info(submissions)")}:
            self.db.execute("ALTER TABLE submissions ADD COLUMN fingerprints TEXT")
        if "email" not in {row[1] for row in self.db.execute("PRAGMA table_info(students)")}:
            self.db.execute("ALTER TABLE students ADD COLUMN email TEXT")

    def close(self) -> None:
        self.db.close()

    def transaction(self):
        return _Transaction(self.db)

    def current_run(self, key: str) -> RunState | None:
        """(content_hash, config_hash, status, submitted_at) of the student's current run."""
        row = self.db.execute(
            "SELECT s.content_hash, r.config_hash, r.status, r.submitted_at FROM runs r "
            "JOIN students st ON st.id = r.student_id JOIN submissions s ON s.id = r.submission_id "
            "WHERE st.key = ? AND r.current = 1", (key,)).fetchone()
        return RunState(*row) if row else None

    def current_config(self, key: str) -> tuple[str, dict[str, str], tuple[str, ...]] | None:
        """(grader version, {assignment: rubric version}, assignments) of the current run."""
        row = self.db.execute(
            "SELECT r.grader_version, r.rubric_versions, r.assignments FROM runs r JOIN students "
            "st ON st.id = r.student_id WHERE st.key = ? AND r.current = 1", (key,)).fetchone()
        if not row:
            return None
        try:
            versions = json.loads(row[1]) if row[1] else {}
        except ValueError:
            versions = {}
        return row[0], versions if isinstance(versions, dict) else {}, _assignment_list(row[2])

    def current_result(self, key: str) -> dict[str, Any] | None:
        """The student's current run's result.json, if it has one."""
        row = self.db.execute(
            "SELECT r.result_json FROM runs r JOIN students st ON st.id = r.student_id "
            "WHERE st.key = ? AND r.current = 1", (key,)).fetchone()
        return json.loads(row[0]) if row and row[0] else None

    def record_run(self, student: Student, content_hash: str, source: str, config: RunConfig,
                   run: RunRecord, logs: list[tuple[str, str]],
                   fingerprints: dict[str, str] | None = None, replaces: Iterable[str] = (),
                   current: bool = True) -> int:
        """Store one finished run (and make it the student's current one) atomically;
        `fingerprints`: of the submission's code files (kept with the first run that has them);
        `replaces`: keys of the same person whose current run this one takes over (kept in the
        gradebook's history, no longer current). `current=False`: into the history only (a
        failed attempt at work whose grade stays current)."""
        if run.status not in STATUSES:
            raise ValueError(f"unknown run status {run.status!r}")
        # A name or message quoting a file name that is not UTF-8 is read as text: SQLite
        # takes no other, and one upload's name must not stop the batch.
        student = dataclasses.replace(student, name=storable(student.name))
        source, logs = storable(source), storable(list(logs))
        run = dataclasses.replace(run, message=storable(run.message), result=storable(run.result))
        with self.transaction():
            student_id = self._upsert_student(student)
            self.db.execute("INSERT OR IGNORE INTO submissions (student_id, content_hash, source, first_seen) "
                            "VALUES (?, ?, ?, ?)", (student_id, content_hash, source, run.started_at))
            if fingerprints:
                self.db.execute("UPDATE submissions SET fingerprints = ? WHERE student_id = ? AND "
                                "content_hash = ?", (json.dumps(fingerprints, sort_keys=True),
                                                     student_id, content_hash))
            submission_id = self.db.execute(
                "SELECT id FROM submissions WHERE student_id = ? AND content_hash = ?",
                (student_id, content_hash)).fetchone()[0]
            if current:
                self.db.execute("UPDATE runs SET current = 0 WHERE student_id = ? AND current = 1",
                                (student_id,))
            for key in replaces if current else ():
                self.db.execute("UPDATE runs SET current = 0 WHERE current = 1 AND student_id = "
                                "(SELECT id FROM students WHERE key = ?)", (key,))
            result = run.result
            run_id = self.db.execute(
                "INSERT INTO runs (student_id, submission_id, config_hash, grader_version, rubric_hash, "
                "rubric_versions, assignments, started_at, finished_at, status, message, score, "
                "max_score, result_json, submitted_at, needs_person, current) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (student_id, submission_id, config.config_hash, config.grader_version,
                 config.rubric_hash, json.dumps(config.rubric_versions, sort_keys=True),
                 json.dumps(list(config.assignments)), run.started_at, run.finished_at,
                 run.status, run.message,
                 result["score"] if result else None, result["max_score"] if result else None,
                 json.dumps(result, ensure_ascii=False) if result else None,
                 run.submitted_at, int(run.needs_person), int(current))).lastrowid
            for assignment in (result or {}).get("assignments", []):
                self.db.execute("INSERT INTO assignment_scores VALUES (?,?,?,?,?,?)",
                                (run_id, assignment["id"], assignment["score"], assignment["max_score"],
                                 assignment.get("status"), assignment.get("rubric_version")))
                for item in assignment.get("items", []):
                    self.db.execute("INSERT INTO item_scores VALUES (?,?,?,?,?,?,?)",
                                    (run_id, assignment["id"], item["id"], item["score"],
                                     item["max_score"], item.get("status"), item.get("feedback")))
            for level, message in logs:
                self.db.execute("INSERT INTO logs (run_id, student_id, at, level, message) VALUES (?,?,?,?,?)",
                                (run_id, student_id, run.finished_at, level, message))
        return run_id

    def _upsert_student(self, student: Student) -> int:
        self.db.execute("INSERT INTO students (key, name, participant_id) VALUES (?, ?, ?) "
                        "ON CONFLICT(key) DO UPDATE SET name = excluded.name, "
                        "participant_id = excluded.participant_id",
                        (student.key, student.name, student.participant_id))
        return self.db.execute("SELECT id FROM students WHERE key = ?", (student.key,)).fetchone()[0]

    def retire_person_row(self, key: str, marked_by: str, why: str) -> bool:
        """The student's current run is no longer current, where it is a row for a person
        (rejected, needs_person) whose message holds `marked_by`, and nothing else: a grade is
        never retired. Kept in the history, with `why` in its logs; False where no such row."""
        with self.transaction():
            row = self.db.execute(
                "SELECT r.id, r.student_id FROM runs r JOIN students st ON st.id = r.student_id "
                "WHERE st.key = ? AND r.current = 1 AND r.status = 'rejected' AND "
                "r.needs_person = 1 AND instr(r.message, ?) > 0", (key, marked_by)).fetchone()
            if row is None:
                return False
            self.db.execute("UPDATE runs SET current = 0 WHERE id = ?", (row[0],))
            self.db.execute("INSERT INTO logs (run_id, student_id, at, level, message) "
                            "VALUES (?, ?, datetime('now'), 'info', ?)",
                            (row[0], row[1], storable(why)))
        return True

    def update_name(self, student: Student) -> None:
        """The name a known student goes by now (a Moodle participant renamed, an upload
        skipped as unchanged)."""
        with self.transaction():
            self.db.execute("UPDATE students SET name = ? WHERE key = ?",
                            (storable(student.name), student.key))

    def record_emails(self, by_participant: dict[str, str]) -> None:
        """The email of each Moodle participant a worksheet lists (its participant ids are
        that assignment's, so only its own students match)."""
        with self.transaction():
            for pid, email in by_participant.items():
                self.db.execute("UPDATE students SET email = ? WHERE participant_id = ?",
                                (storable(email), pid))

    def setting(self, name: str) -> Any:
        """What an earlier batch was given and later ones keep (`kept_setting`), or None."""
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", ("batch:" + name,)).fetchone()
        try:
            return json.loads(row[0]) if row else None
        except ValueError:
            return None

    def keep_setting(self, name: str, value: Any) -> None:
        """Keep what this batch was given (the class overrides, a Moodle worksheet) for the
        batches given none (in meta: no schema change)."""
        with self.transaction():
            self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                            ("batch:" + name, json.dumps(storable(value), ensure_ascii=False,
                                                         sort_keys=True, default=str)))

    def known_students(self) -> list[Student]:
        """Every student graded so far, as they were last seen: discover() keeps their keys."""
        return [Student(key, name, participant_id) for key, name, participant_id in
                self.db.execute("SELECT key, name, participant_id FROM students ORDER BY id")]

    def current_sources(self) -> dict[str, str]:
        """{student key: the entries of SUBMISSIONS its current run was graded from}."""
        return dict(self.db.execute(
            "SELECT st.key, s.source FROM runs r JOIN students st ON st.id = r.student_id "
            "JOIN submissions s ON s.id = r.submission_id WHERE r.current = 1").fetchall())

    def current_assignments(self) -> dict[str, tuple[str, ...]]:
        """{student key: the assignments its current run graded}."""
        return {key: _assignment_list(assignments) for key, assignments in self.db.execute(
            "SELECT st.key, r.assignments FROM runs r JOIN students st ON st.id = r.student_id "
            "WHERE r.current = 1")}

    def current_runs(self) -> Iterator[CurrentRun]:
        """Every student's current run, sorted by student key."""
        rows = self.db.execute(
            "SELECT st.key, st.name, st.participant_id, st.email, r.id, r.status, r.message, "
            "s.content_hash, r.config_hash, r.result_json, r.submitted_at, r.needs_person, "
            "r.assignments FROM runs r "
            "JOIN students st ON st.id = r.student_id "
            "JOIN submissions s ON s.id = r.submission_id WHERE r.current = 1 ORDER BY st.key").fetchall()
        for (key, name, pid, email, run_id, status, message, chash, config_hash, result_json, when,
             person, assignments) in rows:
            scores = dict(self.db.execute(
                "SELECT assignment, score FROM assignment_scores WHERE run_id = ?", (run_id,)).fetchall())
            yield CurrentRun(Student(key, name, pid, email), status, message, chash, config_hash,
                             json.loads(result_json) if result_json else None, scores, when,
                             bool(person), _assignment_list(assignments))

    def update_fingerprints(self, key: str, content_hash: str, fingerprints: dict[str, str]) -> None:
        """Keep the fingerprints of a submission already recorded (a run skipped as unchanged
        in a gradebook from before they were kept)."""
        with self.transaction():
            self.db.execute("UPDATE submissions SET fingerprints = ? WHERE content_hash = ? AND "
                            "student_id = (SELECT id FROM students WHERE key = ?)",
                            (json.dumps(fingerprints, sort_keys=True), content_hash, key))

    def current_fingerprints(self) -> dict[str, dict[str, str]]:
        """{student key: {code file: fingerprint}} of each current run's submission."""
        rows = self.db.execute(
            "SELECT st.key, s.fingerprints FROM runs r JOIN students st ON st.id = r.student_id "
            "JOIN submissions s ON s.id = r.submission_id WHERE r.current = 1").fetchall()
        found = {}
        for key, text in rows:
            try:
                value = json.loads(text) if text else None
            except ValueError:
                value = None
            if isinstance(value, dict):
                found[key] = {str(k): str(v) for k, v in value.items()}
        return found


def _assignment_list(text: str | None) -> tuple[str, ...]:
    try:
        value = json.loads(text) if text else []
    except ValueError:
        value = []
    return tuple(str(a) for a in value) if isinstance(value, list) else ()


def _statements() -> list[str]:
    # executescript() would COMMIT the open transaction first; run the statements one by one.
    return [s.strip() for s in _strip_comments(SCHEMA).split(";") if s.strip()]


def _strip_comments(sql: str) -> str:
    return "\n".join(line.split("--", 1)[0] for line in sql.splitlines())


class _Transaction:
    """BEGIN IMMEDIATE ... COMMIT, ROLLBACK on any exception (sqlite3's own context manager
    does not BEGIN in autocommit mode)."""
    def __init__(self, db: sqlite3.Connection):
        self.db = db

    def __enter__(self):
        self.db.execute("BEGIN IMMEDIATE")
        return self.db

    def __exit__(self, kind, value, traceback):
        self.db.execute("COMMIT" if kind is None else "ROLLBACK")
        return False
