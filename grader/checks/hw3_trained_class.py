"""HW3: which model class the script trains, where its main() builds the handout's and another.

An honest student keeps the handout's LargeLinearModelMP for Task 1 (its layout printed, the
object dropped) and builds Task 3's model from a class of a new name, in sequence or behind a
flag whose default is Task 3 (adv53 F0: /tmp/adv53/hw3/both_seq_newname, flag_choice). The
script's text alone cannot tell that from a decoy built beside the handout's class and never
trained, so the probe kept the handout's class: 6.5 of 15 against the TA's 10.5, told about a
layout the script's runs never used. The script's own runs (Task 5's, DEPTH=20 on 2 and 5
GPUs) say which: the class whose passes trained (gradients on, reached by a backward, taken by
an optimizer step; hw3_trained_layout.training_passes) is the one graded. Where none of them
trained, or more than one did, the grader cannot tell: Tasks 3-5's failures wait for a person
(conftest.pytest_runtest_call) rather than fail on a class the student may not have meant.

Read from the probe's records and the runs' traces only: nothing of the student's is imported.
"""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from grader.checks.hw3_trained_layout import MODEL_CLASS, training_passes
from grader.harness.hw3_build import TRAINED_PART

# Where the probe fixture leaves why the class graded could not be told (the config's stash).
UNDECIDED = pytest.StashKey[str]()
GRADED_BY_HAND = "hw3.trained_class_undecided"


@dataclass(frozen=True)
class TrainedChoice:
    """`part`: the probe plan's part naming the class to grade instead of the handout's (None:
    the handout's stays graded); `undecided`: why no one class could be chosen, for the
    student and the staff (None where one was)."""
    part: dict | None = None
    undecided: str | None = None


def built_beside(records: list[dict]) -> list[str]:
    """The classes main() builds beside the handout's, as the probe's records say."""
    found = next((r["built_beside"] for r in records if isinstance(r.get("built_beside"), list)),
                 [])
    return [name for name in found if isinstance(name, str) and name != MODEL_CLASS]


def trained_classes(candidates: list[str], runs_events: list[list[dict]]) -> list[str]:
    """Those of `candidates` (class names) with a training pass in any of the runs."""
    return [name for name in candidates
            if any(training_passes(events or [], name) for events in runs_events)]


def choose(records: list[dict], runs_events: list[list[dict]]) -> TrainedChoice:
    """Which class to grade where the probe's records say main() builds the handout's class
    and another; `runs_events`: the traces of the script's own runs."""
    beside = built_beside(records)
    if not beside:
        return TrainedChoice()
    candidates = [MODEL_CLASS] + beside
    trained = trained_classes(candidates, runs_events)
    if trained == [MODEL_CLASS]:
        return TrainedChoice()
    if len(trained) == 1:
        return TrainedChoice(part={"part": TRAINED_PART, "name": trained[0]})
    if not trained and not any(r.get("handout_built") is True for r in records):
        # main() was not seen to build the handout's class (a factory, a call not told from
        # the text): nothing says it is not the model, as before the runs were read.
        return TrainedChoice()
    built = ", ".join(candidates)
    why = (f"your script's own runs trained {' and '.join(trained)}" if trained else
           "no model of these took a training step in your script's own runs (DEPTH=20 on 2 "
           "and 5 GPUs)")
    return TrainedChoice(undecided=(
        f"Held for the course staff: your main() builds {built}, and {why}, so the grader "
        f"cannot tell which is your Task 3 model. It graded {MODEL_CLASS}; a person will grade "
        "Tasks 3-5 from the class your script trains. Next time, train only the Task 3 model "
        "in main(), or keep the handout's class name for it."))
