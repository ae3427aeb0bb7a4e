"""Reading a script's message that it has too few GPUs for a part (Practical 4's Part 3).

The handout asks for "a clear message, not crash" and gives one wording ("Model parallelism
requires at least 2 GPUs."); students write their own ("Skipping Part 3: found 1 GPU(s), need
>= 2", "Not enough GPUs for model parallelism (found 1, need 2)", "Only one GPU available:
skipping model parallelism"). A line says it when it names GPUs (or CUDA devices) and a lack
of them (need, at least, fewer, not enough, only one, skip ...) in the same line; a line
about GPUs without a lack ("Output on GPU 1") or about nothing of the kind ("Done.") does not.
"""
from __future__ import annotations

import re

# The handout's wording and its close variants: "requires at least 2 GPUs", "two or more
# GPUs", "2+ GPUs", "more than one GPU", "multiple GPUs".
_HANDOUT_LIKE = re.compile(r"(?:at least|minimum of|needs?|requires?)\s+(?:2|two)\b.*?gpus?|"
                           r"(?:2|two)\s*(?:\+|or more)\s*gpus?|more than one gpu|multiple gpus|"
                           r"(?:2|two) or more", re.I)
_GPUS = re.compile(r"gpu|cuda[ _-]?device", re.I)
# Words of lack. "only" counts before a count ("only one GPU", "only 1 GPU found"), never in
# "runs only on GPU 0".
_LACK = re.compile(r"\bneed|\brequire|\bat least\b|\bminimum\b|\bfewer\b|\bless than\b|"
                   r"\bnot enough\b|\binsufficient\b|\btoo few\b|\bskip|\bmore than (?:one|1)\b|"
                   r"\bmultiple\b|(?:\b2|\btwo)\s*(?:\+|or more)|[<>]=?\s*2\b|"
                   r"\bonly\s+(?:\d+|one|a single|a)\b|\bunavailable\b|\bnot available\b|"
                   r"\bmissing\b|\bno second\b", re.I)
# A library's warning (torch's "UserWarning: ... CUDA ... not available"): read only for the
# handout's own wording, never as the student's words of lack.
_WARNING = re.compile(r"\b[A-Z]\w*Warning: ")
# What an uncaught exception writes: its lines are a crash, never the message.
_TRACEBACK = "Traceback (most recent call last)"


def too_few_gpus_line(output: str) -> str | None:
    """The first line of `output` that says there are too few GPUs, else None."""
    for line in output.splitlines():
        if _HANDOUT_LIKE.search(line) or (
                _GPUS.search(line) and _LACK.search(line) and not _WARNING.search(line)):
            return line.strip()
    return None


def ended_by_exit(run) -> bool:
    """Whether the run stopped itself with `sys.exit(...)` (or `raise SystemExit`) with a
    failing status: no exception, no error of the grader's, no traceback, and not stopped from
    outside (time, memory). The course's own P5/P6 templates say they lack GPUs that way
    (`sys.exit("No CUDA GPU found: ...")`: status 1, the message on stderr)."""
    if run.ok or run.returncode in (None, 0) or run.returncode < 0:
        return False
    stopped = (run.missing or run.timed_out or run.not_run or run.memory_exceeded
               or run.disk_exceeded or run.processes_exceeded)
    return not stopped and not run.of("exception") and not run.of("error") \
        and _TRACEBACK not in (run.stderr or "")
