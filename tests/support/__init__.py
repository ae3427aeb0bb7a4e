"""Helpers shared by the tests: fake graders and batches (no code run), report fixtures, and
scripts the tests start in processes of their own (`python -m tests.support.<script>` with the
repository on PYTHONPATH, as `support.subprocess_env()` gives)."""
from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def subprocess_env(**extra: str) -> dict[str, str]:
    """The environment for a helper script run in a process of its own: the repository first on
    PYTHONPATH, so `tests.support` and this checkout's `grader` are the ones imported."""
    env = dict(os.environ, **extra)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    return env


def fake_grade_command() -> list[str]:
    """The grade command of fake SLURM jobs (tests/support/fake_grade_cmd.py): like
    `python -m grader grade`, but instant and scripted by the submission's FAKE.json."""
    import sys
    return ["env", f"PYTHONPATH={REPO}", sys.executable, "-m", "tests.support.fake_grade_cmd"]


def run_test_batch(subs, out, assignments, *, grade_fn=None, backend=None, stream=None,
                   live=False, **options):
    """`run_batch` as the tests call it: the fake grader, progress into a buffer, and the
    BatchOptions fields (workers, timeout_s, regrade, rubrics_dir, ...) as keywords."""
    import io
    from grader.batch.pipeline import BatchOptions, run_batch
    from tests.support.fake_graders import fake_grade
    if backend is None and grade_fn is None:
        grade_fn = fake_grade
    return run_batch(subs, out, BatchOptions(assignments=tuple(assignments), **options),
                     grade_fn=grade_fn or fake_grade, backend=backend,
                     stream=stream if stream is not None else io.StringIO(), live=live)
