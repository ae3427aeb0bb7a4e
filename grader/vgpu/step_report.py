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

from torch.nn.modules.module import register_module_forward_pre_hook
from torch.optim.optimizer import register_optimizer_step_post_hook

from grader.vgpu.side_steps import SideSteps


class SimulatedSteps:
    """Each optimizer step's training work on the simulated clock (from the node's `clock`),
    for the summary at the end: from the step's first forward pass (once the work enqueued
    before it is done) to the optimizer step, as the grader's timing checks measure it
    (practical_measures.work_seconds) and the handouts' timers do. A TA's P6 read DataParallel
    as faster here (step to step, with each step's data made in between) where the grader's
    measure said DDP: a student reporting these times must not be marked against them."""

    def __init__(self, clock):
        self.clock = clock
        # The model wrapped in DDP: another optimizer's steps (a probe, a whole-batch copy to
        # compare with) are no steps of it, as the grader's trace reads them (side_steps.py).
        self.side = SideSteps()
        self.done_ns: list[int] = []
        self.work_ns: list[int | None] = []
        self._begun: int | None = None
        self._step_hook = register_optimizer_step_post_hook(self._stepped)
        self._forward_hook = None
        self._await_forward()

    def _await_forward(self) -> None:
        # Only a step's first forward pass is wanted: a global module hook left in place
        # sends every module call through nn.Module's slow path with hooks (a quarter of the
        # node's overhead at DIM 64, in instructions), so it is taken out once it has fired.
        if self._forward_hook is None:
            self._forward_hook = register_module_forward_pre_hook(self._forward)

    def _forward(self, module, args) -> None:
        if self._begun is None:
            self._begun = self.clock.completion()
        if self._forward_hook is not None:
            self._forward_hook.remove()
            self._forward_hook = None

    def _stepped(self, optimizer, args, kwargs) -> None:
        if self.side.is_side(optimizer):
            return
        now = self.clock.completion()
        if self._begun is None and self.work_ns and self.work_ns[-1] is not None:
            # No forward pass since the last step: one optimizer per layer, each stepped after
            # the same backward, is one training step, as the grader reads its trace
            # (practical_measures.step_ends); its steps' gaps had been said as step times.
            self.work_ns[-1] += now - self.done_ns[-1]
            self.done_ns[-1] = now
            return
        self.done_ns.append(now)
        self.work_ns.append(None if self._begun is None else now - self._begun)
        self._begun = None
        self._await_forward()

    def close(self) -> None:
        for hook in (self._step_hook, self._forward_hook):
            if hook is not None:
                hook.remove()
        self._forward_hook = None

    def step_ms(self) -> list[float]:
        """Each step's training work but the first's (a warm-up, as the grader leaves it out);
        where a step ran no module's forward pass, the time between steps instead."""
        if self.work_ns and None not in self.work_ns:
            return [work / 1e6 for work in self.work_ns[1:]]
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
                f"simulated clock (README.md, 'How the simulated clock works') the "
                f"median step took {statistics.median(durations):.3f} ms of training work, "
                f"first forward pass to optimizer step, as the grader measures it (min "
                f"{min(durations):.3f}, max {max(durations):.3f}; the first step left out), the "
                f"{len(durations)} steps after the first {sum(durations):.3f} ms in all. "
                + (_EVENTS_READ if self.clock.events_read else _WALL_CLOCK))


# What the times a script printed are, said after the simulated clock's own figures.
_WALL_CLOCK = ("The times your script printed are this computer's wall clock, not GPU speed: "
               "without a real GPU, report these (a total time too) and say they are "
               "simulated.")
# A TA's audit: a script timing with torch.cuda.Event printed the simulated clock's 0.93 ms and
# was told to throw it away as wall clock.
_EVENTS_READ = ("The times your script measured with torch.cuda.Event are on this simulated "
                "clock too (report them, saying they are simulated); any it measured with "
                "time.time() or time.perf_counter() are this computer's wall clock, not GPU "
                "speed.")


_watching: SimulatedSteps | None = None


def watch(handle) -> SimulatedSteps | None:
    """Start counting for a virtual node's own run (no trace: the grader's runs read the
    trace's step records instead); None otherwise."""
    global _watching
    if handle is None or not handle.virtual or handle.node is None or handle.trace.enabled:
        return None
    _watching = SimulatedSteps(handle.node.clock)
    return _watching


def parallel_model(module) -> None:
    """`module` was wrapped in DDP: the steps counted are those of an optimizer over it."""
    if _watching is not None:
        _watching.side.wrapped(module)


def say(steps: SimulatedSteps | None, rank: str = "") -> None:
    if steps is None:
        return
    steps.close()
    line = steps.summary(rank)
    if line:
        print(line, file=sys.stderr, flush=True)
