"""Start cost of the sandbox: `true` plainly, under bwrap, and through run_sandboxed.

    python benchmarks/sandbox_overhead.py [repeats]

Prints the median wall time of each (milliseconds) and the differences.
"""
from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from grader.sandbox import SandboxPolicy, run_sandboxed, sandbox_available  # noqa: E402
from grader.sandbox.bwrap import build_bwrap_argv  # noqa: E402


def median_ms(fn, repeats: int) -> float:
    fn()  # warm the page cache
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    usable, why = sandbox_available()
    if not usable:
        sys.exit(f"bwrap not usable: {why}")
    true = shutil.which("true")
    scratch = Path(tempfile.mkdtemp(dir="/var/tmp"))
    try:
        policy = SandboxPolicy(writable=[scratch])
        bwrap_argv = build_bwrap_argv([true], policy, {"PATH": "/usr/bin:/bin"}, scratch)
        plain = median_ms(lambda: subprocess.run([true], check=True), repeats)
        bwrap = median_ms(lambda: subprocess.run(bwrap_argv, check=True), repeats)
        full = median_ms(lambda: run_sandboxed([true], policy), repeats)
    finally:
        shutil.rmtree(scratch)
    print(f"median of {repeats}: plain true {plain:.1f} ms | bwrap true {bwrap:.1f} ms "
          f"(+{bwrap - plain:.1f}) | run_sandboxed(true) with cgroups {full:.1f} ms "
          f"(+{full - plain:.1f})")


if __name__ == "__main__":
    main()
