"""Throughput of `pdl-grade batch`: submissions per minute with 1 and 2 (or more) workers.

    python benchmarks/batch_throughput.py [--count 50] [--assignment practical4 ...]
                                          [--workers 1 2] [--sandbox-repeats 20]

Builds COUNT submissions (the reference and the planted-bug variants of
tests/fixtures/planted_bugs.py, in turn), grades the folder with `python -m grader batch`
once per worker count (a fresh --out each time, so nothing is skipped), and prints wall time,
submissions per minute, the speed-up over the first worker count, and the sandbox's own start
cost (run_sandboxed(true) minus a plain `true`, median) per sandboxed run and per submission.
It also prints how busy the machine's cores were during each batch (from /proc/stat: the
sandboxed runs are reaped inside their own pid namespaces, so the batch's own rusage misses
them): 1 worker that already keeps the cores X% busy cannot be sped up by more than about 1/X,
whatever the scheduler does. Run it on an otherwise idle machine.
Targets: sandbox < 0.2 s per submission; W workers >= 0.8 x W times the throughput of 1
(2 workers >= 1.6x); CPU-seconds per submission on a large node within 25% of a 2-core
machine's (scripts/gpu_check.sh runs 1, 4 and 8 workers on a lent 16-core node).
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "fixtures")]

from planted_bugs import REFERENCE, copy_tree  # noqa: E402
from practical_variants import VARIANTS, plant  # noqa: E402
from grader.common.bytecode import shared_bytecode  # noqa: E402
from grader.sandbox import SandboxPolicy, run_sandboxed, sandbox_available  # noqa: E402

# Sandboxed runs of student code per submission, per assignment (the checks' distinct runs).
RUNS_PER_SUBMISSION = {"practical4": 2}


def build(folder: Path, count: int, assignments: list[str]) -> None:
    # The practicals matrix's variants of the graded assignments (other correct styles and
    # classic bugs, tests/fixtures/practical_variants.py).
    bugs = [v for v in VARIANTS if v.assignment in assignments] or list(VARIANTS)
    for i in range(count):
        target = folder / f"student{i:03d}"
        bug = bugs[(i // 2) % len(bugs)] if bugs and i % 2 else None  # every other: a bug
        plant(bug, target) if bug else copy_tree(REFERENCE, target)


def sandbox_start_ms(repeats: int) -> float:
    true = shutil.which("true")
    scratch = Path(tempfile.mkdtemp(dir="/var/tmp"))
    try:
        policy = SandboxPolicy(writable=[scratch])

        def median(fn):
            fn()
            times = []
            for _ in range(repeats):
                start = time.perf_counter()
                fn()
                times.append(time.perf_counter() - start)
            return statistics.median(times) * 1000
        plain = median(lambda: subprocess.run([true], check=True))
        full = median(lambda: run_sandboxed([true], policy))
    finally:
        shutil.rmtree(scratch)
    return full - plain


def cpu_ticks() -> tuple[int, int]:
    """(busy, total) clock ticks of all cores since boot."""
    with open("/proc/stat", encoding="ascii") as handle:
        values = [int(v) for v in handle.readline().split()[1:]]
    idle = values[3] + values[4]          # idle + iowait
    return sum(values) - idle, sum(values)


def grade_batch(subs: Path, workers: int, assignments: list[str]) -> tuple[float, float]:
    """(wall seconds, fraction of the machine's cores busy meanwhile)."""
    out = Path(tempfile.mkdtemp(prefix=f"pdl-bench-{workers}w-", dir="/var/tmp"))
    command = [sys.executable, "-m", "grader", "batch", str(subs), "--out", str(out),
               "--workers", str(workers)]
    for assignment in assignments:
        command += ["--assignment", assignment]
    started, (busy0, total0) = time.perf_counter(), cpu_ticks()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    seconds, (busy1, total1) = time.perf_counter() - started, cpu_ticks()
    busy = (busy1 - busy0) / max(1, total1 - total0)
    if done.returncode != 0:
        sys.exit(f"batch with {workers} worker(s) failed ({done.returncode}):\n{done.stderr[-2000:]}")
    shutil.rmtree(out, ignore_errors=True)
    return seconds, busy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=50)
    parser.add_argument("--assignment", action="append", default=None)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--sandbox-repeats", type=int, default=20)
    options = parser.parse_args()
    assignments = options.assignment or ["practical4"]
    usable, why = sandbox_available()
    if not usable:
        sys.exit(f"bwrap not usable: {why}")

    # A once-per-machine cost (where the installation has no torch bytecode), kept out of the
    # batches' figures: every later batch finds the cache warm.
    started = time.monotonic()
    source = shared_bytecode() or "the installation's own"
    print(f"torch bytecode for the runs: {source} (ready in {time.monotonic() - started:.1f} s)")
    start_ms = sandbox_start_ms(options.sandbox_repeats)
    runs = sum(RUNS_PER_SUBMISSION.get(a, 1) for a in assignments)
    print(f"sandbox start cost: {start_ms:.1f} ms per run; ~{runs} run(s) per submission "
          f"-> {start_ms * runs / 1000:.3f} s per submission (target < 0.2 s)")

    with tempfile.TemporaryDirectory(prefix="pdl-bench-subs-", dir="/var/tmp") as folder:
        subs = Path(folder)
        build(subs, options.count, assignments)
        baseline = None
        for workers in options.workers:
            seconds, busy = grade_batch(subs, workers, assignments)
            rate = options.count / seconds * 60
            baseline = baseline or (rate, workers)
            target = 0.8 * workers / baseline[1]
            cpu = busy * seconds * (os.cpu_count() or 1) / options.count
            print(f"{options.count} submissions ({', '.join(assignments)}), {workers} worker(s): "
                  f"{seconds:.1f} s, {rate:.1f} submissions/min, {rate / baseline[0]:.2f}x"
                  + (f" (target >= {target:.1f}x)" if workers != baseline[1] else "")
                  + f"; cores busy {busy:.0%} of {os.cpu_count()} ({cpu:.1f} CPU s per "
                  f"submission; more workers can give at most {1 / max(busy, 1e-9):.2f}x this)")


if __name__ == "__main__":
    main()
