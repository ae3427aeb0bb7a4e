"""Grade the bundled student_template through run_autograder, as Gradescope will, and fail
unless it was graded: setup.sh runs this last, so an image that cannot grade (no rubrics, a
broken install) fails at build time instead of giving every submission 0.

    python gradescope/self_check.py [SOURCE]      (SOURCE: default /autograder/source)

The template earns (almost) nothing; what is checked is that grading ran: a results.json with
tests, worth points, and no error. run_autograder's own settings (PDL_ASSIGNMENTS, PDL_GRADE,
PDL_PYTHON...) are taken from the environment; the folders are a temporary /autograder.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

TIMEOUT_S = 900


def run_autograder_of(source: Path) -> Path:
    zipped = source / "run_autograder"          # the zip's copy, with its assignments baked in
    return zipped if zipped.is_file() else source / "gradescope" / "run_autograder"


def check(source: Path) -> tuple[bool, str]:
    with tempfile.TemporaryDirectory(prefix="pdl-self-check-") as folder:
        root = Path(folder)
        shutil.copytree(source / "student_template", root / "submission")
        (root / "results").mkdir()
        (root / "submission_metadata.json").write_text(json.dumps(
            {"created_at": "2020-01-01T00:00:00+00:00", "users": [{"name": "self-check"}]}))
        env = {**os.environ, "AUTOGRADER_ROOT": str(root), "PDL_GRADER_DIR": str(source)}
        done = subprocess.run(["bash", str(run_autograder_of(source))], env=env,
                              capture_output=True, text=True, timeout=TIMEOUT_S)
        try:
            results = json.loads((root / "results" / "results.json").read_text())
        except (OSError, ValueError) as error:
            return False, f"no results.json ({error})\n{done.stdout}{done.stderr}"
    tests = results.get("tests") or []
    error = (results.get("extra_data") or {}).get("error")
    worth = sum(t.get("max_score") or 0 for t in tests)
    if error or not tests or worth <= 0:
        return False, (f"the template was not graded: {error or 'no tests worth points'}\n"
                       f"{results.get('output', '')}\n{done.stdout}")
    sandbox = next((l for l in done.stdout.splitlines() if "sandbox" in l.lower()), "")
    return True, (f"graded the template: {results.get('score')} of {worth} automatic points, "
                  f"{len(tests)} tests; {sandbox}")


if __name__ == "__main__":
    ok, message = check(Path(sys.argv[1] if len(sys.argv) > 1 else "/autograder/source").resolve())
    print(f"self_check: {'ok' if ok else 'FAILED'}: {message}")
    sys.exit(0 if ok else 1)
