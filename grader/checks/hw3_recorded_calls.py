"""HW3: what the student's own runs passed their model's constructor, for the probe to reuse.

Where the probe could not build the model from the script's text while the script itself
built and ran it (adv42 F1: a required argument set with `+=`; 8.5 points of Tasks 2-5 had
waited for a person with nothing measured), the probe runs again with the arguments the
script's runs recorded (grader/vgpu/constructor_calls.py), as data only: the probe rebuilds
them on its node (grader/harness/hw3_recorded_call.py). Nothing here loads student objects.
"""
from __future__ import annotations

import json

from grader.harness.hw3_recorded_call import PART
from grader.vgpu.constructor_calls import EVENT

# The probe's plan goes to it on its command line: what it carries of the runs is kept short.
MAX_TEXT = 32_000
_FIELDS = ("cls", "file", "line", "arguments")


def recorded_part(runs: list[tuple[int, int, int, object]]) -> dict | None:
    """The plan's part with the constructor calls of each run: `runs` are (GPUs, DIM, DEPTH,
    the run's Observation) as the script was run; None where no run recorded one (or the
    records are too long to hand over)."""
    found = []
    for gpus, dim, depth, run in runs:
        calls = [{k: event.get(k) for k in _FIELDS} for event in run.of(EVENT)
                 if isinstance(event.get("arguments"), list)]
        if calls:
            found.append({"gpus": gpus, "dim": dim, "depth": depth, "calls": calls})
    if not found:
        return None
    part = {"part": PART, "runs": found}
    return part if len(json.dumps(part)) <= MAX_TEXT else None
