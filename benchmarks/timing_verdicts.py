"""Timing verdicts under load: the reference's HW3 graded many times, two gradings at a time
beside a CPU hog, must lose no timing point; planted bugs that a timing check should catch
must be caught every time (issue 16, point 4).

    python benchmarks/timing_verdicts.py [--gradings 20] [--bug-gradings 3] [--parallel 2]
                                         [--no-hog]

On virtual GPUs the timing checks (HW3 Task 2's trend, Task 4's no speed-up, and the report
checks compared with them) decide from the simulated clock, so the measured step times must be
the same in every grading, to the digit, whatever else the machine does. Prints one line per
grading and a summary; exits 1 if any verdict was wrong. Takes long: about a minute per
grading on an idle 2-core machine.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
import planted_bugs as pb  # noqa: E402

TIMING_CHECKS = ("hw3.task2.trend", "hw3.task4.no_speedup", "hw3.task2.table_reported",
                 "hw3.task2.speed_answer", "hw3.task4.table_reported", "hw3.task4.faster_answer")
# Planted bugs and the timing checks each must fail: the first crashes its forward, the other
# two run and are caught by their times alone.
TIMING_BUGS = {
    "missing_to_in_forward": ("hw3.task2.trend", "hw3.task4.no_speedup"),
    "seven_layers_only": ("hw3.task2.trend",),
    "detached_between_gpus": ("hw3.task4.no_speedup",),
}
TIMING_BUG_LIST = [
    pb.PlantedBug(
        name="missing_to_in_forward", assignment="hw3", file="hw3/model_parallel.py",
        replacements=[('            x = x.to(layer_device)  # the "baton pass"\n', "")],
        description="forward() never moves the activation: the second GPU's first layer "
                    "gets an input on another device and the step fails."),
    pb.PlantedBug(
        name="seven_layers_only", assignment="hw3", file="hw3/model_parallel.py",
        replacements=[("        for layer in self.layers:\n",
                       "        for layer in [*self.layers[:6], self.layers[-1]]:\n")],
        description="forward() runs the first six layers and the last whatever DEPTH built: "
                    "the step time does not grow with DEPTH."),
    pb.PlantedBug(
        name="detached_between_gpus", assignment="hw3", file="hw3/model_parallel.py",
        replacements=[("                self.transfers += 1\n",
                       "                self.transfers += 1\n                x = x.detach()\n")],
        description="The activation is detached where it changes GPU: backward stops at the "
                    "last GPU's block, so 5 GPUs train faster than 2."),
]
BUGS = {bug.name: bug for bug in TIMING_BUG_LIST}


def grade(submission: Path, out: Path) -> dict:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "grader", "grade", str(submission), "--out",
                           str(out), "--assignment", "hw3"], cwd=ROOT, capture_output=True,
                          text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    seconds = time.perf_counter() - started
    result_file = out / "result.json"
    if not result_file.is_file():
        return {"error": done.stderr[-2000:], "seconds": seconds}
    hw3 = json.loads(result_file.read_text())["assignments"][0]
    statuses = {check["id"]: check["status"] for item in hw3["items"]
                for check in item.get("checks", [])}
    measured = hw3.get("measurements") or {}
    times = {"task2": measured.get("task2.step_time_ms"),
             "task4": {g: v.get("step_time_ms") for g, v in (measured.get("task4") or {}).items()},
             "clock": measured.get("task2.clock")}
    return {"statuses": statuses, "times": times, "seconds": seconds, "score": hw3["score"]}


def hog() -> subprocess.Popen:
    """A process that keeps one core busy for as long as the benchmark runs."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gradings", type=int, default=20, help="gradings of the reference")
    parser.add_argument("--bug-gradings", type=int, default=3, help="gradings of each bug")
    parser.add_argument("--parallel", type=int, default=2, help="gradings at a time")
    parser.add_argument("--no-hog", action="store_true", help="no CPU hog beside them")
    options = parser.parse_args()

    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        submissions = {"reference": ROOT / "reference"}
        for name in TIMING_BUGS:
            submissions[name] = pb.plant(BUGS[name], folder / name / "submission")
        jobs = [("reference", i) for i in range(options.gradings)]
        jobs += [(name, i) for name in TIMING_BUGS for i in range(options.bug_gradings)]
        busy = None if options.no_hog else hog()
        started = time.perf_counter()
        try:
            with ThreadPoolExecutor(options.parallel) as pool:
                results = list(pool.map(lambda job: (job, grade(
                    submissions[job[0]], folder / f"{job[0]}-{job[1]}")), jobs))
        finally:
            if busy is not None:
                busy.kill()
                busy.wait()
        elapsed = time.perf_counter() - started

    wrong, reference_times = [], set()
    for (name, i), found in results:
        if "error" in found:
            wrong.append(f"{name} #{i}: the grading failed: {found['error']}")
            print(f"{name:24} #{i:2}  grading failed ({found['seconds']:.0f} s)")
            continue
        statuses = found["statuses"]
        if name == "reference":
            failed = [c for c in TIMING_CHECKS if statuses.get(c) != "passed"]
            reference_times.add(json.dumps(found["times"], sort_keys=True))
            if failed:
                wrong.append(f"reference #{i}: {', '.join(failed)} did not pass")
        else:
            failed = [c for c in TIMING_BUGS[name] if statuses.get(c) == "passed"]
            if failed:
                wrong.append(f"{name} #{i}: {', '.join(failed)} passed (should fail)")
        verdicts = ", ".join(f"{c.split('.', 1)[1]} {statuses.get(c, '-')}" for c in TIMING_CHECKS)
        print(f"{name:24} #{i:2}  {found['score']:5.2f} points  {found['seconds']:5.0f} s  "
              f"{verdicts}  times {json.dumps(found['times'])}")
    print(f"\n{len(results)} gradings, {options.parallel} at a time"
          f"{'' if options.no_hog else ' beside a CPU hog'}, {elapsed / 60:.1f} min")
    print(f"reference: {options.gradings} gradings, "
          f"{sum(1 for w in wrong if w.startswith('reference'))} with a timing check failed; "
          f"{len(reference_times)} distinct set(s) of measured step times")
    if len(reference_times) > 1:
        wrong.append("the reference's measured step times differ between gradings")
    for line in wrong:
        print("WRONG:", line)
    if not wrong:
        print("every verdict as it should be")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
