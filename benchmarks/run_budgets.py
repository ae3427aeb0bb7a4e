"""Time budgets of runs of student code: what the reference takes, and what a hostile
submission costs within the rubrics' `run_timeout_s`.

    python benchmarks/run_budgets.py [--assignment hw3 ...]             # reference runs
    python benchmarks/run_budgets.py --hostile [--assignment hw3 ...] [--hang "sleep" ...]
    python benchmarks/run_budgets.py --hostile --whole [--hang "sleep"]   # all assignments at once

Without --hostile: runs each assignment's checks on reference/ (budgets lifted to 600 s) and
prints every sandboxed run's wall seconds and the seconds of budget it used (its clock slows
while other processes keep the CPUs busy: grader/sandbox/clock.py, so that figure is close to
an idle machine's even on a busy one), the slowest per assignment, and the budget the rule
below derives from it, beside the rubric's `run_timeout_s`.

The rule (rubrics/README.md): run_timeout_s = max(30, 4 x the reference's slowest run),
rounded up to 5 s; the HW3 probe gets twice its assignment's budget.

With --hostile: `pdl-grade grade` of the reference, then of copies in which every script of
the assignment hangs in one way (an endless loop at import, a sleep, an output flood, a fork
flood, a recursive search of /); prints each grading's wall time, its score and its ratio to
the reference's. Run it on an otherwise idle machine (a busy one stretches every budget, up
to 2x: grader/sandbox/clock.py).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grader.scoring import load_rubrics  # noqa: E402

HANGS = {
    "endless loop at import": "while True:\n    pass\n",
    "sleep": "import time\ntime.sleep(10**6)\n",
    "output flood": "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n",
    "fork flood": ("import os, time\nwhile True:\n    try:\n        os.fork()\n"
                   "    except OSError:\n        time.sleep(0.01)\n"),
    "search of /": ("import os\nwhile True:\n    for folder, dirs, files in os.walk('/'):\n"
                    "        for name in files:\n            try:\n"
                    "                open(os.path.join(folder, name), 'rb').read(1 << 16)\n"
                    "            except OSError:\n                pass\n"),
}


def budget_rule(slowest_s: float) -> int:
    return int(max(30, 5 * math.ceil(4 * slowest_s / 5)))


def reference_runs(assignments: list[str]) -> None:
    rubrics = load_rubrics()
    with tempfile.TemporaryDirectory() as work:
        log = Path(work) / "runs.jsonl"
        env = dict(os.environ, PDL_RUN_LOG=str(log), PYTHONPATH=os.pathsep.join(
            [str(ROOT), str(ROOT / "benchmarks")]))
        for assignment in assignments:
            started = time.monotonic()
            subprocess.run([sys.executable, "-m", "pytest", f"grader/checks/test_{assignment}.py",
                            "--submission", "reference", "-p", "run_timer_plugin", "-q",
                            "-p", "no:cacheprovider", "--check-timeout", "600",
                            "--rubrics", str(_lifted_rubrics(Path(work)))],
                           cwd=ROOT, env=env, capture_output=True)
            print(f"{assignment}: checks took {time.monotonic() - started:.1f} s")
        runs = [json.loads(line) for line in log.read_text().splitlines()]
    by_assignment = defaultdict(list)
    for run in runs:
        script = next((a for a in run["argv"] if "/reference/" in a), "")
        assignment = script.split("/reference/")[1].split("/")[0] if script else "?"
        run["what"] = "HW3 probe" if run["probe"] else script.split("/reference/")[-1]
        by_assignment[assignment].append(run)
    print(f"\n{'assignment':<12} {'runs':>4} {'slowest (budget s)':>19} {'rule s':>7} {'rubric s':>9}")
    for assignment in assignments:
        found = by_assignment.get(assignment, [])
        for run in found:
            print(f"    {run['what']} {' '.join(run['argv'][-3:])[:60]}: {run['seconds']} s wall, "
                  f"{run['budget_used_s']} s of budget" + (" TIMED OUT" if run["timed_out"] else ""))
        # The probe has twice the budget: compare half its time with the scripts'.
        slowest = max((r["budget_used_s"] / (2 if r["probe"] else 1) for r in found), default=0.0)
        print(f"{assignment:<12} {len(found):>4} {slowest:>19.1f} {budget_rule(slowest):>7} "
              f"{rubrics[assignment].run_timeout_s or '-':>9}")


def _lifted_rubrics(work: Path) -> Path:
    """The rubrics without run_timeout_s: the reference is timed, not stopped."""
    import yaml
    folder = work / "rubrics"
    folder.mkdir(exist_ok=True)
    for path in (ROOT / "rubrics").glob("*.yaml"):
        data = yaml.safe_load(path.read_text())
        data.pop("run_timeout_s", None)
        (folder / path.name).write_text(yaml.safe_dump(data, sort_keys=False))
    return folder


def hostile(assignments: list[str], hangs: list[str], whole: bool = False) -> None:
    """`whole`: one submission holding every assignment, graded at once (the assignments'
    costs add up, as in a batch)."""
    with tempfile.TemporaryDirectory(dir="/var/tmp") as work:
        work = Path(work)
        for assignment in ([assignments] if whole else assignments):
            rows = []
            for name, code in [("reference", None), *((h, HANGS[h]) for h in hangs)]:
                graded = assignment if whole else [assignment]
                top = work / name.replace(" ", "_")
                for one in graded:
                    shutil.copytree(ROOT / "reference" / one, top / one)
                    if code is not None:
                        for script in (top / one).rglob("*.py"):
                            script.write_text(code + script.read_text())
                out = work / "out" / "-".join(graded) / name.replace(" ", "_")
                started = time.monotonic()
                subprocess.run([sys.executable, "-m", "grader", "grade", str(top), "--out", str(out),
                                *(a for one in graded for a in ("--assignment", one))],
                               cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)),
                               capture_output=True)
                took = time.monotonic() - started
                result = json.loads((out / "result.json").read_text())
                rows.append((name, took, f"{result['score']:g}/{result['max_score']:g}"))
            base = rows[0][1]
            label = "all" if whole else assignment
            for name, took, score in rows:
                print(f"{label:<12} {name:<24} {took:7.1f} s  {took / base:5.2f}x  {score}",
                      flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--assignment", action="append", default=None)
    parser.add_argument("--hostile", action="store_true")
    parser.add_argument("--hang", action="append", choices=sorted(HANGS), default=None,
                        help="with --hostile: only these hangs (default: all)")
    parser.add_argument("--whole", action="store_true",
                        help="with --hostile: one submission of all the assignments")
    options = parser.parse_args()
    assignments = options.assignment or list(load_rubrics())
    if options.hostile:
        hostile(assignments, options.hang or list(HANGS), options.whole)
    else:
        reference_runs(assignments)


if __name__ == "__main__":
    main()
