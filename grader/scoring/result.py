"""Build, write and read ``result.json`` (schema: RESULT_SCHEMA.md beside this file).

The file is written atomically (temp file in the same folder + ``os.replace``): a crash or a
killed grader leaves either the previous file or the new one, never half of one.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable, Mapping

import grader
from grader.scoring.score import AssignmentScore

SCHEMA = "pdl-autograder/result/1"
HARDWARE_KINDS = ("virtual", "real")


def hardware_info(kind: str, gpus: int, names: Iterable[str] = ()) -> dict[str, Any]:
    """The ``hardware`` block: which GPUs the checks ran on."""
    if kind not in HARDWARE_KINDS:
        raise ValueError(f"hardware kind must be one of {HARDWARE_KINDS}, got {kind!r}")
    return {"kind": kind, "gpus": int(gpus), "names": [str(n) for n in names]}


def build_result(submission: str,
                 assignments: Iterable[AssignmentScore | Mapping[str, Any]],
                 hardware: Mapping[str, Any] | None = None,
                 started_at: _dt.datetime | str | None = None,
                 duration_s: float | None = None,
                 errors: Iterable[str] = ()) -> dict[str, Any]:
    """The whole result.json document; totals are recomputed from the assignments.

    ``errors``: grading problems not tied to one assignment (a missing rubric, say); they are
    recorded, never raised, so that what was graded is kept.
    """
    entries = [a.to_dict() if isinstance(a, AssignmentScore) else dict(a) for a in assignments]
    if isinstance(started_at, _dt.datetime):
        started_at = started_at.isoformat()
    return {
        "schema": SCHEMA,
        "grader_version": grader.__version__,
        "submission": str(submission),
        "started_at": started_at or _dt.datetime.now(_dt.timezone.utc).isoformat(),
        "duration_s": None if duration_s is None else round(float(duration_s), 3),
        "hardware": dict(hardware) if hardware is not None else None,
        "assignments": entries,
        "score": round(sum(a["score"] for a in entries), 2),
        "max_score": round(sum(a["max_score"] for a in entries), 2),
        "errors": [str(e) for e in errors],
    }


def write_result(path: str | Path, result: Mapping[str, Any]) -> Path:
    """Write ``result`` as JSON to ``path`` atomically; return the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    # Serialise first: an unserialisable value must fail before anything touches the disk.
    text = json.dumps(result, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as tmp:
            tmp.write(text)
            tmp.flush()
            os.fsync(tmp.fileno())
        os.replace(tmp_name, target)
    except BaseException:
        try:
            os.unlink(tmp_name)
        except FileNotFoundError:
            pass
        raise
    return target


def read_result(path: str | Path) -> dict[str, Any]:
    """Load a result.json, checking it is one of ours (the schema string)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        found = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise ValueError(f"{path}: not a {SCHEMA} result (schema: {found!r})")
    return data
