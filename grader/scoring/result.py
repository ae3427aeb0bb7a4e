"""``result.json``: the scored result of one submission (schema: RESULT_SCHEMA.md beside this file).

`Result` is what the score stage hands to the publish stage; its `to_dict()` is the file's
content, totals recomputed from the assignments. The file is written atomically
(grader/common/files.py): a crash or a killed grader leaves either the previous file or the
new one, never half of one.
"""
from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

import grader
from grader.common.files import write_atomically
from grader.common.text import storable
from grader.scoring.score import AssignmentScore

SCHEMA = "pdl-autograder/result/1"
HARDWARE_KINDS = ("virtual", "real")


def hardware_info(kind: str, gpus: int, names: Iterable[str] = ()) -> dict[str, Any]:
    """The ``hardware`` block: which GPUs the checks ran on."""
    if kind not in HARDWARE_KINDS:
        raise ValueError(f"hardware kind must be one of {HARDWARE_KINDS}, got {kind!r}")
    return {"kind": kind, "gpus": int(gpus), "names": [str(n) for n in names]}


@dataclass
class Result:
    """One submission's scores. `assignments` are JSON-ready dicts: an AssignmentScore's
    fields plus what the run recorded beside them (measurements, answers, reported, flags)."""
    submission: str
    assignments: list[dict[str, Any]]
    hardware: dict[str, Any] | None = None
    started_at: str | None = None
    duration_s: float | None = None
    # Grading problems not tied to one assignment (a missing rubric, say): recorded, never
    # raised, so that what was graded is kept.
    errors: list[str] = field(default_factory=list)
    # The instructor's overrides as given, and the entries that could not apply.
    overrides: dict[str, Any] | None = None
    override_problems: list[str] = field(default_factory=list)
    # Who handed it in, as the LMS export names them ({key, name}; the batch fills it): the
    # reports' heading, instead of a folder's name.
    student: dict[str, str] | None = None
    # What the batch graded the upload without, it being over the unpack limits ("data/model.pt
    # (210.0 MiB)", "venv/ (a Python environment)"): told to the student.
    left_out: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        entries = [dict(a) for a in self.assignments]
        document = {
            "schema": SCHEMA,
            "grader_version": grader.__version__,
            "submission": str(self.submission),
            "started_at": self.started_at or _dt.datetime.now(_dt.timezone.utc).isoformat(),
            "duration_s": None if self.duration_s is None else round(float(self.duration_s), 3),
            "hardware": dict(self.hardware) if self.hardware is not None else None,
            "assignments": entries,
            "score": round(sum(a["score"] for a in entries), 2),
            "max_score": round(sum(a["max_score"] for a in entries), 2),
            "pending_points": round(sum(a.get("pending_points") or 0.0 for a in entries), 2),
            "errors": [str(e) for e in self.errors],
        }
        if self.student:
            document["student"] = {k: str(v) for k, v in self.student.items() if v is not None}
        if self.overrides:
            document["overrides"] = dict(self.overrides)
        if self.override_problems:
            document["override_problems"] = list(self.override_problems)
        if self.left_out:
            document["left_out"] = [str(line) for line in self.left_out]
        return document


def build_result(submission: str,
                 assignments: Iterable[AssignmentScore | Mapping[str, Any]],
                 hardware: Mapping[str, Any] | None = None,
                 started_at: _dt.datetime | str | None = None,
                 duration_s: float | None = None,
                 errors: Iterable[str] = ()) -> dict[str, Any]:
    """The whole result.json document (a `Result` without overrides, as a dict)."""
    if isinstance(started_at, _dt.datetime):
        started_at = started_at.isoformat()
    entries = [a.to_dict() if isinstance(a, AssignmentScore) else dict(a) for a in assignments]
    return Result(str(submission), entries, dict(hardware) if hardware is not None else None,
                  started_at, duration_s, [str(e) for e in errors]).to_dict()


def result_json_text(result: Mapping[str, Any]) -> str:
    """Serialised first, before anything touches the disk: an unserialisable value fails here."""
    # storable: a student's file name that is not UTF-8 (a finding, a note) is read as text.
    return json.dumps(storable(result), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def write_result(path: str | Path, result: Mapping[str, Any] | Result) -> Path:
    """Write ``result`` as JSON to ``path`` atomically; return the path."""
    if isinstance(result, Result):
        result = result.to_dict()
    return write_atomically(path, result_json_text(result))


def read_result(path: str | Path) -> dict[str, Any]:
    """Load a result.json, checking it is one of ours (the schema string)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        found = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise ValueError(f"{path}: not a {SCHEMA} result (schema: {found!r})")
    return data
