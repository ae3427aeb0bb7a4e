"""The clock a run's time budget is measured on: real time, slowed down while *other*
processes keep the machine's CPUs busy.

A budget of N s means N s of a machine the run has to itself. A grading machine is rarely
idle (a batch runs several gradings, each several runs side by side); on a plain wall clock a
slow honest run on a busy machine would be stopped like an endless loop, while its share of
the CPUs, not its code, is what changed. So at every tick the clock advances by the elapsed
real time divided by the slowdown the run suffers from the others:

    slowdown = max(1, (others + own) / cpus) / max(1, own / cpus)       at most CONTENTION_CAP

where `own` is the number of the run's threads ready to run (from its cgroup) and `others`
the rest of the machine's (from /proc/loadavg). Threads the run starts itself never extend
its budget (a fork flood gains nothing), a sleeping or spinning run alone on the machine is
stopped after N s of real time, and no run lasts longer than CONTENTION_CAP x N s.
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable

# The budget (the rubric's: 4x the reference's run) times this cap is what an honest run of
# the reference's speed survives; a hang costs at most the cap times its budget.
CONTENTION_CAP = 2.0
LOADAVG = "/proc/loadavg"


def machine_runnable(path: str = LOADAVG) -> int | None:
    """Threads ready to run on the whole machine now (the 4th field of /proc/loadavg)."""
    try:
        with open(path) as handle:
            return int(handle.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return None


def runnable_threads(tids: list[int]) -> int:
    """How many of these threads are in state R (running or ready)."""
    count = 0
    for tid in tids:
        try:
            with open(f"/proc/{tid}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        # The state follows the command name, which is in parentheses and may hold anything.
        state = stat[stat.rfind(b")") + 2:stat.rfind(b")") + 3]
        count += state == b"R"
    return count


class RunClock:
    def __init__(self, own_threads: Callable[[], list[int]] | None = None,
                 cpus: int | None = None, cap: float = CONTENTION_CAP,
                 machine: Callable[[], int | None] = machine_runnable):
        self.own_threads = own_threads
        self.cpus = cpus or len(os.sched_getaffinity(0)) or 1
        self.cap = cap
        self.machine = machine
        self.last = time.monotonic()
        self.used = 0.0

    def slowdown(self) -> float:
        if self.own_threads is None:
            return 1.0
        total = self.machine()
        if total is None:
            return 1.0
        own = runnable_threads(self.own_threads())
        others = max(0, total - own - 1)      # -1: this process, reading the clock
        alone = max(1.0, own / self.cpus)
        shared = max(1.0, (others + own) / self.cpus)
        return min(self.cap, max(1.0, shared / alone))

    def tick(self) -> float:
        """The budget used so far, in seconds."""
        now = time.monotonic()
        self.used += (now - self.last) / self.slowdown()
        self.last = now
        return self.used
