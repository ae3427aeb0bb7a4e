"""A stand-in for the real grader, instant unless told otherwise, and builders of submission
folders for it. A submission's `practical4/FAKE.json` says what the fake does:
{"score": 7} (default 0), and optionally "behaviour": "hang" | "crash" | "slow", "sleep_s": s.

Every call appends "<student key> <pid>" to the file named by $PDL_FAKE_CALLS (when set), so a
test can count gradings and check that killed ones are really gone."""
from __future__ import annotations

import io
import json
import os
import time
import zipfile
from pathlib import Path

from grader.scoring import build_result


def make_submission(folder: Path, score: float = 0, behaviour: str | None = None,
                    sleep_s: float = 0.0, extra: str = "") -> Path:
    (folder / "practical4").mkdir(parents=True, exist_ok=True)
    (folder / "practical4" / "concepts.py").write_text(f"ANSWER = 42  # {extra}\n")
    (folder / "practical4" / "FAKE.json").write_text(
        json.dumps({"score": score, "behaviour": behaviour, "sleep_s": sleep_s}))
    return folder


def zip_folder(folder: Path, archive: Path, prefix: str = "") -> Path:
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                zf.write(path, prefix + path.relative_to(folder).as_posix())
    return archive


def fake_assignment(assignment: str, score: float) -> dict:
    return {"id": assignment, "title": assignment, "rubric_version": "fake", "score": score,
            "max_score": 10.0, "rubric_max_score": 10.0, "excluded_points": 0.0,
            "status": "graded", "errors": [], "pending_manual": [], "late": None,
            "items": [{"id": f"{assignment}.all", "title": "everything", "kind": "auto",
                       "score": score, "max_score": 10.0, "points": 10.0,
                       "status": "passed" if score == 10 else "partial",
                       "feedback": f"fake feedback {score}", "checks": []}]}


def fake_grade(job) -> None:
    calls = os.environ.get("PDL_FAKE_CALLS")
    if calls:
        with open(calls, "a") as log:
            log.write(f"{job.student.key} {os.getpid()}\n")
    spec_path = job.submission / "practical4" / "FAKE.json"
    spec = json.loads(spec_path.read_text()) if spec_path.exists() else {}
    behaviour = spec.get("behaviour")
    if behaviour == "hang":
        time.sleep(10_000)
    if behaviour == "crash":
        raise RuntimeError("the fake grader crashed on purpose")
    time.sleep(spec.get("sleep_s") or 0)
    from grader.scoring import write_result
    result = build_result(str(job.submission),
                          [fake_assignment(a, float(spec.get("score", 0))) for a in job.assignments])
    write_result(job.out / "result.json", result)


def calls(path: Path) -> list[tuple[str, int]]:
    if not path.exists():
        return []
    return [(key, int(pid)) for key, pid in (line.split() for line in path.read_text().splitlines())]


def alive(pid: int) -> bool:
    """True while the process exists and is not a zombie (PID 1 of a container may not reap)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def zip_bytes(entries: list[tuple[zipfile.ZipInfo | str, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for info, data in entries:
            zf.writestr(info, data)
    return buffer.getvalue()
