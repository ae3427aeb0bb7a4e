"""The stages composed: grade a submission from scratch, or score again what a grading left."""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any, Mapping, Sequence

from grader.grading.publish import GRADING_FORMATS, RESULT_FILE, publish
from grader.grading.raw import RawRun, load_findings
from grader.grading.readable import readable_submission
from grader.grading.run import DEFAULT_CHECK_TIMEOUT_S, run_submission, scan_source
from grader.grading.score import score_run
from grader.scoring import Overrides, load_rubrics


def grade_submission(submission: Path, out: Path, assignments: Sequence[str] | None = None, *,
                     rubrics_dir: str | None = None,
                     overrides: Overrides | Mapping[str, Any] | None = None,
                     submitted_at: dt.datetime | str | None = None,
                     check_timeout: float = DEFAULT_CHECK_TIMEOUT_S,
                     formats: Sequence[str] = GRADING_FORMATS,
                     student: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Run, score and publish; return result.json's content. `assignments`: default every
    rubric's; `student`: {key, name} from the LMS export, for the reports' heading. Grading
    problems are in the result, never raised; a submission the grader cannot read at all
    raises UnreadableSubmission (grader/grading/readable.py), before anything is run."""
    rubrics = load_rubrics(rubrics_dir)
    out = Path(out).resolve()   # the checks run in a scratch folder: relative paths would land there
    named = Path(submission).resolve()
    with readable_submission(named) as readable:
        raw = run_submission(readable, out, rubrics, list(assignments or rubrics),
                             rubrics_dir=rubrics_dir, check_timeout=check_timeout)
    if readable != named:   # recorded as the instructor named it, not the copy the runs read
        raw.submission = str(named)
        raw.save(out)
    result = score_run(raw, rubrics, overrides=overrides, submitted_at=submitted_at,
                       student=student)
    return publish(result, out, rubrics=rubrics, formats=formats)


def rescore_submission(out: Path, assignments: Sequence[str] | None = None, *,
                       submission: Path | None = None, rubrics_dir: str | None = None,
                       overrides: Overrides | Mapping[str, Any] | None = None,
                       submitted_at: dt.datetime | str | None = None,
                       formats: Sequence[str] = GRADING_FORMATS,
                       student: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Score again what a grading left in `out` (other overrides, another time), running no
    code; publish into the same folder. The student named before is kept unless `student`."""
    rubrics = load_rubrics(rubrics_dir)
    out = Path(out).resolve()
    raw = RawRun.load(out, list(assignments) if assignments else None)
    previous = _previous_result(out)
    if not raw.submission:
        raw.submission = str(previous.get("submission") or submission or "")
    if raw.hardware is None:   # a folder from before run.json: keep what the grading recorded
        raw.hardware = previous.get("hardware")
        raw.started_at, raw.duration_s = previous.get("started_at"), previous.get("duration_s")
    if load_findings(out) is None and submission is not None and Path(submission).is_dir():
        raw.findings = scan_source(Path(submission), out)   # unreadable: scan the source again
    result = score_run(raw, rubrics, overrides=overrides, submitted_at=submitted_at,
                       student=student or previous.get("student"))
    return publish(result, out, rubrics=rubrics, formats=formats)


def _previous_result(out: Path) -> dict[str, Any]:
    try:
        data = json.loads((out / RESULT_FILE).read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}
