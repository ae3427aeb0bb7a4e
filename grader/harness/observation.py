"""What one run of a student's script showed: exit status, output and the trace's events.

The events are claims written by a process that ran student code: they are read as plain
JSON, checked for shape where used, and never trusted to carry a score.
"""
from __future__ import annotations

import os
import re
from collections import defaultdict
from dataclasses import dataclass, field

from grader.harness.course_environment import (device_mismatch_note, duplicate_gpu_note,
                                               missing_module_note, read_only_note,
                                               static_graph_note)

# Processes, and processes with their threads, of one run at once, at least: the reference's
# runs hold 5 and 18 on 2 cores; a run with more is stopped (a fork loop).
RUN_MAX_PROCESSES = 128
RUN_MAX_TASKS = 512
# Ranks of one run at most (Practical 6 and 10 launch up to 4 with torchrun).
RANKS_AT_MOST = 4


def run_process_limits(cores: int | None = None) -> tuple[int, int]:
    """(processes, processes with their threads) one run may hold at once on this machine.
    Honest code sizes its workers by the machine's cores: `DataLoader(num_workers=
    os.cpu_count())` in each of 4 torchrun ranks is 4 x (cores + 1) processes (adv32 S1: 64
    workers a rank stopped an honest Practical 6 under a flat 128), so the limits grow with the
    cores; a fork loop's cost shrinks with them too."""
    cores = cores or os.cpu_count() or 1
    processes = max(RUN_MAX_PROCESSES, RANKS_AT_MOST * (cores + 2))
    return processes, max(RUN_MAX_TASKS, 4 * processes)

_GRADER_FOLDER = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
# The runtime raises the errors a real GPU would (a device that does not exist, two devices in
# one operation) from its own code: those are the student's.
_RUNTIME_FOLDER = os.path.join(_GRADER_FOLDER, "vgpu") + os.sep
_TRACEBACK_FILE = re.compile(r'^\s*File "([^"]+)", line \d+', re.MULTILINE)


def missing_script(script: str, instead: list[str]) -> str:
    """A script the submission lacks, and the files beside it that may be it under another name
    or as a notebook: a student who renamed practical6_ddp.py to ddp.py had been told only that
    the script was missing, by every check that needed it, and so had one who handed in
    model_parallel.ipynb (adv45 F3), never told to export it."""
    said = f"{script} is missing from the submission: keep the template's file layout."
    scripts = [name for name in instead if not name.endswith(".ipynb")]
    notebooks = [name for name in instead if name.endswith(".ipynb")]
    if len(scripts) == 1:
        said += f" {scripts[0]} is there: the grader runs {script}; rename it."
    elif scripts:
        said += (f" {', '.join(scripts[:-1])} and {scripts[-1]} are there: the grader runs "
                 f"{script}; rename the one that is it.")
    if notebooks:
        named = (f"{notebooks[0]} is a notebook" if len(notebooks) == 1 else
                 f"{', '.join(notebooks[:-1])} and {notebooks[-1]} are notebooks")
        said += (f" {named}: the grader runs only Python scripts; export it as one (Jupyter's "
                 f"File > Download as > Python (.py), or `jupyter nbconvert --to script "
                 f"{notebooks[0]}`) and hand in {script}.")
    return said


def _graders_own_failure(stderr: str) -> bool:
    """Whether the last traceback in `stderr` ends in the grader's own code (not its runtime's
    stand-ins for a GPU, which raise what the student's code caused)."""
    files = _TRACEBACK_FILE.findall(stderr or "")
    return bool(files) and files[-1].startswith(_GRADER_FOLDER) and \
        not files[-1].startswith(_RUNTIME_FOLDER)


@dataclass
class Observation:
    script: str
    gpus: int
    nproc: int = 1
    sets: dict = field(default_factory=dict)
    args: list = field(default_factory=list)
    launcher: str = "python"          # or "torchrun" (with nproc processes)
    edits: list = field(default_factory=list)  # (old, new) text replacements in the script
    missing: bool = False
    # Where the script is missing: the .py files its folder holds that the template does not
    # (practical6/ddp.py for practical6/practical6_ddp.py), most likely the script renamed, and
    # its notebooks (.ipynb), the script never exported.
    instead: list = field(default_factory=list)
    returncode: int | None = None
    timed_out: bool = False
    time_limit_s: float | None = None     # the run's time budget (the rubric's run_timeout_s)
    memory_exceeded: bool = False
    disk_exceeded: bool = False           # wrote more than its working folder may hold
    processes_exceeded: bool = False      # started as many processes and threads as a run may
    not_run: str | None = None            # why the run was not started (other runs hung)
    stdout: str = ""
    stderr: str = ""
    events: list[dict] = field(default_factory=list)
    duration_s: float = 0.0
    warnings: list[str] = field(default_factory=list)
    # What the run left that the grader's instrumentation did not write, or found replaced
    # (see grader/integrity): withholds the points for review.
    integrity: list[str] = field(default_factory=list)
    # Unusual but honest things seen in the run (a process the submission started that the
    # grader did not observe, ...): shown to the instructor, never held.
    integrity_notes: list[str] = field(default_factory=list)
    # Measures worked out from `events` that several checks read, each worked out once per run
    # (practical_measures.step_batches): no part of the run's record, and not carried into a
    # copy made with other events (dataclasses.replace).
    derived: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    # -- how the run went ---------------------------------------------------------------------
    @property
    def configuration(self) -> str:
        parts = [f"{self.gpus} GPU(s)"]
        if self.launcher == "torchrun":
            parts.append(f"torchrun --nproc-per-node {self.nproc}")
        elif self.nproc > 1:
            parts.append(f"{self.nproc} processes")
        parts += [f"{k}={v}" for k, v in self.sets.items()]
        parts += [f"with `{_first_line(old)}` changed to `{_first_line(new)}`" for old, new in self.edits]
        if self.args:
            parts.append(" ".join(self.args))
        return ", ".join(parts)

    @property
    def ok(self) -> bool:
        return (not self.missing and not self.timed_out and self.not_run is None
                and self.returncode == 0)

    def problem(self) -> str | None:
        """Why the run cannot be graded, in words a student can act on (None if it ran)."""
        where = f"{self.script} ({self.configuration})"
        if self.missing:
            return missing_script(self.script, self.instead)
        if self.not_run:
            return (f"{where} was not run: {self.not_run}. Look for an endless loop (at import "
                    "too), a sleep, or a rank waiting for a collective no other rank joins.")
        if self.timed_out:
            within = f" (within {self.time_limit_s:g} s)" if self.time_limit_s else ""
            return (f"{where} did not finish in time{within} and was stopped: look for an "
                    "endless loop, a rank waiting for a collective no other rank joins, a sleep, "
                    "or far too many steps.")
        if self.disk_exceeded:
            return (f"{where} wrote more files than its working folder may hold and was "
                    "stopped: save only what the assignment asks for.")
        if self.processes_exceeded:
            processes, tasks = run_process_limits()
            return (f"{where} started more processes at once than a run may ({processes} "
                    f"processes, {tasks} with their threads) and was stopped: look for os.fork(), "
                    "multiprocessing or subprocess called in a loop, or a DataLoader's "
                    "num_workers or a Pool sized far beyond the machine's "
                    f"{os.cpu_count()} cores.")
        if self.memory_exceeded:
            return f"{where} used more memory than allowed and was stopped."
        if self.returncode == 0:
            return None
        for exception in sorted(self.of("exception"), key=_cause_first):
            site = f" at {exception['site']}" if exception.get("site") else ""
            message = str(exception.get("message", "")).strip().splitlines()
            inside = replica_error(message, os.path.basename(self.script))
            if inside:
                site, message = inside
            # The template's TODOs raise NotImplementedError("TODO ..."); torch raises it too
            # ("Could not run 'aten::...'"), which is no TODO.
            todo = " (a TODO of the template is still to be written)" if exception.get(
                "type") == "NotImplementedError" and (
                not message or "todo" in message[0].lower()) else ""
            missing = (missing_module_note(exception.get("message", ""))
                       or read_only_note(exception.get("message", ""))
                       or duplicate_gpu_note(exception.get("message", ""))
                       or static_graph_note(exception.get("message", ""))
                       or self._ddp_device_note()
                       or device_mismatch_note(exception.get("message", ""),
                                               exception.get("site")))
            return (f"{where} stopped with {exception.get('type')}{site}"
                    f"{self._ranks_that_raised(exception)}{todo}: "
                    f"{message[0] if message else ''}" + (f"\n{missing}" if missing else ""))
        for error in self.of("error"):
            return f"{where}: {error.get('message')}"
        tail = "\n".join(self.stderr.strip().splitlines()[-6:])
        if _graders_own_failure(self.stderr):
            # A student's audit: a fault of the grader's own (raised in its records' code) read
            # as their script's exit, and sent them debugging correct code.
            return (f"{where} was stopped by a failure of the grader's own code, not of yours "
                    "(a grading problem: tell the course staff).\nLast lines of its output:\n"
                    f"{tail}")
        return f"{where} exited with status {self.returncode}.\nLast lines of its output:\n{tail}"

    def _ddp_device_note(self) -> str | None:
        """Where a rank wrapped its model with DDP(..., device_ids=[...]) naming a GPU the model
        is not on (device_ids=[0] on every rank): DDP moves each input to that GPU, and the
        forward pass then fails on two devices, far from the line at fault."""
        for wrap in self.of("ddp_wrap"):
            given = [str(d) for d in wrap.get("device_ids") or []]
            named = {f"cuda:{d}" if d.isdigit() else d for d in given}
            held = [d for d in wrap.get("param_devices") or [] if d.startswith("cuda")]
            if named and held and set(held) - named:
                site = f" ({wrap['site']})" if wrap.get("site") else ""
                return (f"On rank {wrap.get('rank', 0)} DDP(model, device_ids=[{', '.join(given)}])"
                        f"{site} wraps a model on {', '.join(held)}: DDP moves every input to "
                        "device_ids[0], so the forward pass meets two GPUs. Give each rank its "
                        "own: DDP(model, device_ids=[local_rank]).")
        return None

    def _ranks_that_raised(self, shown: dict) -> str:
        """For a run of several processes, which ranks raised the exception the problem shows
        (its type at its site), and that the others raised nothing of their own: one rank's
        bug (DDP(model, device_ids=[0]) on every rank fails on rank 1 only) reads otherwise as
        every rank's. "" for one process. grader/reports/stopped_runs.RANKS reads it back."""
        ranks = self.ranks() or list(range(self.nproc))
        own = [e for e in self.of("exception") if not _peer_died(e)]
        kind = (shown.get("type"), shown.get("site"))
        raised = sorted({e.get("rank", 0) for e in own if (e.get("type"), e.get("site")) == kind})
        if len(ranks) < 2 or not raised:   # one process, or no rank's own error to name
            return ""
        others = [rank for rank in ranks if rank not in raised]
        if not others:
            return " on every rank"
        other_errors = sorted({e.get("rank", 0) for e in own} & set(others))
        if other_errors:
            return f" on {_ranks_named(raised)} ({_ranks_named(other_errors)} raised another error)"
        whose = "its" if len(others) == 1 else "their"
        return (f" on {_ranks_named(raised)} only ({_ranks_named(others)} raised no error of "
                f"{whose} own)")

    # -- queries on the trace --------------------------------------------------------------------
    def of(self, event: str, rank: int | None = None) -> list[dict]:
        return [e for e in self.events
                if e.get("event") == event and (rank is None or e.get("rank") == rank)]

    def ranks(self) -> list[int]:
        return sorted({e.get("rank", 0) for e in self.of("start")})

    def by_step(self, rank: int = 0) -> list[list[dict]]:
        """The rank's events cut at each optimizer step: element k is what led to step k+1."""
        steps, current = [], []
        for event in self.events:
            if event.get("rank", 0) != rank:
                continue
            current.append(event)
            if event.get("event") == "step":
                steps.append(current)
                current = []
        return steps

    def copies(self, rank: int | None = None) -> list[dict]:
        """Every move of data between two different devices (`.to`, copy_, DataParallel)."""
        moves = [e for e in self.of("to", rank) if e.get("copied")]
        moves += self.of("transfer", rank)
        return sorted(moves, key=lambda e: (e.get("rank", 0), e.get("t", 0.0)))

    def final_memory(self, rank: int = 0) -> dict[str, int]:
        """Peak bytes per device as the run ended."""
        for event in reversed(self.of("exit", rank)):
            return {m["device"]: int(m["peak"]) for m in event.get("memory", [])}
        return {}

    def step_times_ms(self, rank: int = 0) -> tuple[list[float], str]:
        """The rank's optimizer steps' times in ms, and the clock they come from: on virtual
        GPUs the simulated clock ("simulated": each step's `sim_step_ms`, the same on any
        machine), on real GPUs the wall clock ("real": the gaps between the steps' records,
        so one time fewer than steps)."""
        steps = self.of("step", rank)
        simulated = [e["sim_step_ms"] for e in steps
                     if isinstance(e.get("sim_step_ms"), (int, float))]
        if steps and len(simulated) == len(steps):
            return [float(t) for t in simulated], "simulated"
        stamps = [e["t"] for e in steps if isinstance(e.get("t"), (int, float))]
        return [(b - a) * 1000 for a, b in zip(stamps, stamps[1:])], "real"

    def fingerprints(self, kind: str) -> dict[int, list[dict]]:
        """Per rank, the `grads` or `params` fingerprints of every optimizer step."""
        found = defaultdict(list)
        for event in self.of("step"):
            found[event.get("rank", 0)].append(event.get(kind) or {})
        return dict(found)


# What a rank raises when another rank of its process group died first: a consequence, never
# the cause a student should be shown (gloo's words; the others wait in their collective).
_PEER_DIED = ("Connection closed by peer", "remote worker crashing", "Connection reset by peer")


# DataParallel re-raises a replica's error as "Caught X in replica N on device N." with the
# original traceback below it (torch's ExceptionWrapper).
_REPLICA = re.compile(r"Caught \w+ in (replica \d+ on device \d+)\.")


def replica_error(message: list[str], script: str) -> tuple[str, list[str]] | None:
    """(site, message) of the error a DataParallel replica raised, from its original traceback:
    the script's innermost line there and the original error's own words. The re-raise names
    only the line that called the wrapper and "Caught RuntimeError in replica 0", never the
    student's own error (a broken forward read as "Caught RuntimeError" at the call)."""
    caught = _REPLICA.match(message[0]) if message else None
    if not caught or len(message) < 2:
        return None
    lines = [re.search(r'File "[^"]*?([^/"]+)", line (\d+)', line) for line in message]
    own = [m for m in lines if m and m.group(1) == script]
    site = f" at {script}:{own[-1].group(2)}" if own else ""
    original = message[-1].strip()
    return f"{site} ({caught.group(1)})", [original.partition(": ")[2] or original]


def _peer_died(exception: dict) -> bool:
    message = str(exception.get("message", ""))
    return any(words in message for words in _PEER_DIED)


def _cause_first(exception: dict) -> tuple:
    """Order a run's exceptions so the one that ended it comes first: a rank's own error
    before another rank's report that its peer went away, then the earliest."""
    return (_peer_died(exception), exception.get("t", 0.0))


def _ranks_named(ranks: list[int]) -> str:
    """"rank 1", "ranks 1 and 2", "ranks 1, 2 and 3"."""
    numbers = [str(rank) for rank in ranks]
    if len(numbers) == 1:
        return f"rank {numbers[0]}"
    return f"ranks {', '.join(numbers[:-1])} and {numbers[-1]}"


def _first_line(text: str) -> str:
    """An edit's text as a run's label shows it: a block by its first line."""
    lines = text.strip().splitlines()
    return lines[0] + (" ..." if len(lines) > 1 else "") if lines else ""
