"""The fake grader (fake_graders.py) as a grade *command* for SLURM jobs:
`python -m tests.support.fake_grade_cmd SUBMISSION --out DIR --assignment A ... [--check-timeout S]`
with the repository on PYTHONPATH (`tests.support.fake_grade_command()` is that command).

Besides tests/batch's behaviours ("hang", "crash", "slow"), FAKE.json's "behaviour":
"cancel-self" makes the job scancel itself, as an operator would; "grading-problem" writes a
result whose assignments the grader failed to grade and exits as `pdl-grade grade` then does
(grader/common/exit_codes.py)."""
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

from tests.support.fake_graders import fake_grade

parser = argparse.ArgumentParser()
parser.add_argument("submission")
parser.add_argument("--out", required=True)
parser.add_argument("--assignment", action="append", required=True)
parser.add_argument("--check-timeout", type=float, default=180.0)
parser.add_argument("--rubrics", default=None)
options = parser.parse_args()
submission = Path(options.submission)
spec_path = submission / "practical4" / "FAKE.json"
spec = json.loads(spec_path.read_text()) if spec_path.exists() else {}
if spec.get("behaviour") == "cancel-self":
    subprocess.run(["scancel", os.environ["SLURM_JOB_ID"]], check=True)
    time.sleep(60)
key = os.environ.get("PDL_FAKE_KEY") or Path(options.out).name.rsplit("-", 1)[0]
fake_grade(SimpleNamespace(student=SimpleNamespace(key=key), submission=submission,
                           out=Path(options.out), assignments=tuple(options.assignment)))
if spec.get("behaviour") == "grading-problem":
    from grader.common.exit_codes import GRADING_PROBLEM
    result_file = Path(options.out) / "result.json"
    result = json.loads(result_file.read_text())
    for assignment in result["assignments"]:
        assignment.update(status="incomplete", grading_problems=[
            f"{assignment['id']}.all: check '{assignment['id']}.all.x' errored: RuntimeError: harness"])
    result_file.write_text(json.dumps(result))
    sys.exit(GRADING_PROBLEM)
