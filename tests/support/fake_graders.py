"""A stand-in for the real grader, instant unless told otherwise, and builders of submission
folders for it. A submission's `practical4/FAKE.json` says what the fake does:
{"score": 7} (default 0), and optionally "behaviour": "hang" | "crash" | "slow", "sleep_s": s.

Every call appends "<student key> <pid>" to the file named by $PDL_FAKE_CALLS (when set), so a
test can count gradings and check that killed ones are really gone.

`scoring_grade` runs no code either, but scores like the real grader: it stands in for the run
stage only (grader/grading), leaving the checks' results a grading leaves (run.json,
checks-<assignment>.json), then scores and publishes them through the real stages with the
job's submission time, so late penalties and re-scoring are the real ones."""
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
    """A fake upload: practical4/ (what the fake grader reads) and an hw3/ file, so that it
    holds something of each assignment the batch tests grade (an upload with nothing the
    graded assignments expect is for a person, not graded: grader/batch/layout.py)."""
    (folder / "practical4").mkdir(parents=True, exist_ok=True)
    (folder / "practical4" / "concepts.py").write_text(f"ANSWER = 42  # {extra}\n")
    (folder / "hw3").mkdir(exist_ok=True)
    (folder / "hw3" / "model_parallel.py").write_text("import torch\n")
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


def _log_call(job) -> dict:
    calls = os.environ.get("PDL_FAKE_CALLS")
    if calls:
        with open(calls, "a") as log:
            log.write(f"{job.student.key} {os.getpid()}\n")
    spec_path = job.submission / "practical4" / "FAKE.json"
    return json.loads(spec_path.read_text()) if spec_path.exists() else {}


def fake_report(rubric, passed: int, cases: int = 10) -> dict:
    """A pytest-json-report as grader.pytest_plugin leaves it: `cases` cases per check of the
    rubric, the first `passed` of them passing."""
    tests = []
    for check in rubric.check_ids:
        for i in range(cases):
            ok = i < passed
            tests.append({"nodeid": f"test_{rubric.assignment}.py::test_{check}[{i}]",
                          "outcome": "passed" if ok else "failed",
                          "metadata": {"check": check, "assignment": rubric.assignment,
                                       **({} if ok else {"feedback": f"case {i} is wrong"})}})
    return {"exitcode": 0 if passed >= cases else 1, "tests": tests}


def scoring_grade(job) -> None:
    from grader.grading import AssignmentRun, RawRun, publish, score_run
    from grader.grading.raw import check_results_file
    from grader.scoring import load_rubrics
    spec = _log_call(job)
    rubrics = load_rubrics(job.rubrics_dir)
    run = RawRun(str(job.submission), [], hardware={"kind": "virtual", "gpus": 2, "names": []},
                 started_at="2026-05-01T12:00:00+00:00", duration_s=1.0)
    for assignment in job.assignments:
        results = fake_report(rubrics[assignment], int(spec.get("score", 0)))
        (job.out / check_results_file(assignment)).write_text(json.dumps(results))
        run.assignments.append(AssignmentRun(assignment, results))
    run.save(job.out)
    publish(score_run(run, rubrics, submitted_at=job.submitted_at), job.out, rubrics=rubrics)


def fake_grade(job) -> None:
    spec = _log_call(job)
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


def write_entries(subs: Path, entries: dict) -> Path:
    """A SUBMISSIONS folder from {entry name: bytes of a file, [(path, bytes)] for a zip, or
    {path: bytes} for a folder}."""
    for name, content in entries.items():
        target = subs / name
        if isinstance(content, dict):
            for rel, data in content.items():
                (target / rel).parent.mkdir(parents=True, exist_ok=True)
                (target / rel).write_bytes(data)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(zip_bytes(content) if isinstance(content, list) else content)
    return subs
