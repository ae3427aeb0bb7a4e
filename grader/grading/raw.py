"""What the run stage leaves in a grading folder, and reading it back for the score stage.

    run.json                  the run: submission, when, how long, on which GPUs, and for each
                              assignment whether its checks ran (and why not)
    checks-<assignment>.json  the checks' results (pytest-json-report of grader/checks/)
    checks-<assignment>.log   the checks' own output, for the staff
    integrity.json            the static scan's findings (grader/integrity)

Everything a score needs is in these files, so a grading can be scored again (other overrides,
another submission time, a changed rubric) without running any code: `RawRun.load(folder)`.
Folders written before run.json existed hold `pytest-<assignment>.json`; they are read too.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.common.files import write_atomically

RUN_FILE = "run.json"
FINDINGS_FILE = "integrity.json"
RUN_SCHEMA = "pdl-autograder/run/1"


def check_results_file(assignment: str) -> str:
    return f"checks-{assignment}.json"


def check_log_file(assignment: str) -> str:
    return f"checks-{assignment}.log"


def _legacy_check_results_file(assignment: str) -> str:
    return f"pytest-{assignment}.json"


class RawRunError(Exception):
    """A folder that holds no run to score (the message says what is missing)."""


@dataclass
class AssignmentRun:
    assignment: str
    check_results: dict[str, Any] | None = None   # pytest-json-report, as loaded
    problem: str | None = None                      # why there are no results

    @property
    def ran(self) -> bool:
        return self.check_results is not None


@dataclass
class RawRun:
    submission: str
    assignments: list[AssignmentRun]
    findings: list[Any] = field(default_factory=list)   # grader.integrity.scan.Finding
    hardware: dict[str, Any] | None = None
    started_at: str | None = None
    duration_s: float | None = None
    problems: list[str] = field(default_factory=list)   # of the run, not of one assignment

    def assignment_ids(self) -> list[str]:
        return [a.assignment for a in self.assignments]

    def save(self, folder: Path) -> None:
        """run.json and integrity.json (the checks' results are already files of their own)."""
        save_findings(folder, self.findings)
        write_atomically(folder / RUN_FILE, json.dumps({
            "schema": RUN_SCHEMA, "submission": self.submission, "started_at": self.started_at,
            "duration_s": self.duration_s, "hardware": self.hardware, "problems": self.problems,
            "assignments": [{"id": a.assignment, "problem": a.problem} for a in self.assignments],
        }, indent=1) + "\n")

    @classmethod
    def load(cls, folder: Path, assignments: list[str] | None = None) -> "RawRun":
        """The run recorded in `folder`. Without a run.json (an older folder), the assignments
        are `assignments` and the rest of the run is unknown (None)."""
        folder = Path(folder)
        recorded = read_json(folder / RUN_FILE)
        if recorded is not None and recorded.get("schema") == RUN_SCHEMA:
            entries = [(str(a["id"]), a.get("problem")) for a in recorded.get("assignments") or []]
            if assignments is not None:
                entries = [e for e in entries if e[0] in assignments]
            run = cls(str(recorded.get("submission") or ""), [],
                      hardware=recorded.get("hardware"), started_at=recorded.get("started_at"),
                      duration_s=recorded.get("duration_s"),
                      problems=[str(p) for p in recorded.get("problems") or []])
        elif assignments is not None:
            entries = [(a, None) for a in assignments]
            run = cls("", [])
        else:
            raise RawRunError(f"no {RUN_FILE} in {folder}")
        for assignment, problem in entries:
            run.assignments.append(AssignmentRun(assignment, *((None, problem) if problem
                                                               else _load_check_results(folder, assignment))))
        run.findings = load_findings(folder) or []
        return run


def _load_check_results(folder: Path, assignment: str) -> tuple[dict | None, str | None]:
    for name in (check_results_file(assignment), _legacy_check_results_file(assignment)):
        path = folder / name
        if path.is_file():
            data = read_json(path)
            if isinstance(data, dict):
                return data, None
            return None, f"the checks' results of {assignment} ({name}) cannot be read"
    return None, f"the checks' results of {assignment} ({check_results_file(assignment)}) are missing"


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def save_findings(folder: Path, findings: list) -> None:
    write_atomically(folder / FINDINGS_FILE, json.dumps(
        {"findings": [f.to_dict() for f in findings]}, indent=1))


def load_findings(folder: Path) -> list | None:
    """The scan's findings kept beside a run; None when the file is missing or unreadable
    (the caller scans again where it still has the submission)."""
    from grader.integrity.scan import Finding
    data = read_json(Path(folder) / FINDINGS_FILE)
    try:
        return [Finding.from_dict(f) for f in data["findings"]]
    except (TypeError, KeyError, ValueError):
        return None
