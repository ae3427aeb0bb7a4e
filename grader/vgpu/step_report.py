"""A student's own run on virtual GPUs (`pdl-grade run`, `pdl-grade torchrun`, no trace): how
long its optimizer steps take on the simulated clock, said when the script ends.

The step times a script prints itself are this computer's wall clock: how fast its CPU
emulates the GPUs, noisy, and blind to what the GPUs would do (5 virtual GPUs are no slower
to emulate than 2). The simulated clock (README: "How the simulated clock works") is what
the grader's timing checks read, the same on every machine; a student without a GPU can
report its times, saying so.
"""
from __future__ import annotations

import statistics
import sys

from torch.optim.optimizer import register_optimizer_step_post_hook


class SimulatedSteps:
    """When each optimizer step's work is done on the simulated clock (from the node's
    `clock`), for the summary at the end."""

    def __init__(self, clock):
        self.clock = clock
        self.done_ns: list[int] = []
        self._hook = register_optimizer_step_post_hook(self._stepped)

    def _stepped(self, optimizer, args, kwargs) -> None:
        self.done_ns.append(self.clock.completion())

    def close(self) -> None:
        self._hook.remove()

    def step_ms(self) -> list[float]:
        """Each step's duration but the first's (which also holds the set-up before it)."""
        return [(b - a) / 1e6 for a, b in zip(self.done_ns, self.done_ns[1:])]

    def summary(self, rank: str = "") -> str | None:
        """The line said at the end; None where the script took no optimizer step."""
        if not self.done_ns:
            return None
        who = f"rank {rank}: " if rank else ""
        durations = self.step_ms()
        if not durations:
            return (f"pdl-grade: {who}virtual GPUs: 1 optimizer step, no step time to measure "
                    "on the simulated clock (it needs two steps or more)")
        return (f"pdl-grade: {who}virtual GPUs: {len(self.done_ns)} optimizer steps; on the "
                f"simulated clock (the grader's README, 'How the simulated clock works') the "
                f"median step took {statistics.median(durations):.3f} ms (min "
                f"{min(durations):.3f}, max {max(durations):.3f}; the first step left out), the "
                f"{len(durations)} steps after the first {sum(durations):.3f} ms in all. The times "
                "your script printed are this computer's wall clock, not GPU speed: without a "
                "real GPU, report these (a total time too) and say they are simulated.")


def watch(handle) -> SimulatedSteps | None:
    """Start counting for a virtual node's own run (no trace: the grader's runs read the
    trace's step records instead); None otherwise."""
    if handle is None or not handle.virtual or handle.node is None or handle.trace.enabled:
        return None
    return SimulatedSteps(handle.node.clock)


def say(steps: SimulatedSteps | None, rank: str = "") -> None:
    if steps is None:
        return
    steps.close()
    line = steps.summary(rank)
    if line:
        print(line, file=sys.stderr, flush=True)
