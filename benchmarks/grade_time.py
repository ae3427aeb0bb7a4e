"""How long grading takes on this machine, next to running the reference scripts plainly.

    python benchmarks/grade_time.py

Measures (each once, wall clock): `pytest grader/ --submission reference` (what a student
runs; target < 120 s on a 2-core machine), `pdl-grade grade reference` per assignment, and
each reference script run once under `pdl-grade run` / `pdl-grade torchrun` with its defaults.
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENTS = ("practical4", "practical5", "practical6", "practical10", "hw3")
SCRIPTS = [
    (["run", "--gpus", "2"], "practical4/concepts.py"),
    (["run", "--gpus", "1"], "practical5/practical5_single.py"),
    (["run", "--gpus", "3"], "practical5/practical5_dp.py"),
    (["torchrun", "--gpus", "2", "--nproc-per-node", "2"], "practical6/practical6_ddp.py"),
    (["torchrun", "--gpus", "4", "--nproc-per-node", "2"], "practical10/sample.py"),
    (["run", "--gpus", "2"], "hw3/model_parallel.py"),
]


def timed(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, cwd=ROOT, capture_output=True, check=False)
    return time.perf_counter() - started


def main() -> None:
    python = sys.executable
    rows = [("pytest grader/ --submission reference",
             timed([python, "-m", "pytest", "grader/", "--submission", "reference", "-q"]))]
    with tempfile.TemporaryDirectory() as out:
        for assignment in ASSIGNMENTS:
            rows.append((f"pdl-grade grade reference --assignment {assignment}",
                         timed([python, "-m", "grader", "grade", "reference", "--out", out,
                                "--assignment", assignment])))
    for options, script in SCRIPTS:
        rows.append((f"pdl-grade {' '.join(options)} reference/{script}",
                     timed([python, "-m", "grader", *options, "--virtual", f"reference/{script}"])))
    width = max(len(name) for name, _ in rows)
    for name, seconds in rows:
        print(f"{name:<{width}}  {seconds:7.1f} s")


if __name__ == "__main__":
    main()
