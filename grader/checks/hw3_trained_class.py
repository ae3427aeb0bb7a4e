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

A pass trains whatever steps it (adv57 F-B): gradients on and a backward reaching it count, with
or without a torch.optim step, so a hand-written `p -= LR * p.grad` on the base code is training
too and a decoy stepped once by Adam is never the only class trained. Where two classes trained,
the one that ran Task 4's run as the handout asks (on every GPU of each run, the run's whole
batch: `spread_on_whole_batch`) is graded, and the other is no rival: the base code timed for
Task 2 on its two GPUs (adv57 F-F, /tmp/adv57/hw3/honest_both_timed). A class that trained one
pass, or fewer than half the passes of another, never wins that way (a decoy spread over all
GPUs for a step): held for a person as before.

Read from the probe's records and the runs' traces only: nothing of the student's is imported.
"""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from grader.checks.hw3_trained_layout import MODEL_CLASS, model_passes, training_passes
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
            if any(training_passes(events or [], name) or learning_passes(events or [], name)
                   for events in runs_events)]


def learning_passes(events: list[dict], model_class: str) -> list[dict]:
    """The passes of `model_class` with gradients on that a backward reached and whose layers
    ran somewhere the trace says: training whatever steps them (a torch.optim step or a
    hand-written update), unlike `training_passes`, which asks for an optimizer's step."""
    return [one for one in model_passes(events, model_class)
            if one["grad"] and one["used"] and one["gpus"] is not None]


def spread_on_whole_batch(events: list[dict], model_class: str, rivals: list[str]) -> bool:
    """Whether, in this run, a learning pass of `model_class` ran its layers on all of the
    run's GPUs (at most one per layer) on the run's whole batch: the most rows any learning
    pass of it or of `rivals` was handed. False where the class did not train in the run."""
    gpus = next((e.get("gpus") for e in events if e.get("event") == "start"), None)
    passes = learning_passes(events, model_class)
    if not isinstance(gpus, int) or not passes:
        return False
    batch = max((one["rows"] or 0 for name in [model_class, *rivals]
                 for one in learning_passes(events, name)), default=0)
    return any(len(set(one["gpus"])) >= min(gpus, one["layers"] or gpus)
               and (one["rows"] or 0) >= batch for one in passes)


def ran_task4(trained: list[str], runs_events: list[list[dict]]) -> str | None:
    """The one class of `trained` that ran the script's runs as Task 4 asks (spread on the
    whole batch in every run it trained in), having trained more than one pass and at least
    half the passes of each other class; None where no one class did."""
    passes = {name: sum(len(learning_passes(events or [], name)) for events in runs_events)
              for name in trained}
    spread = []
    for name in trained:
        rivals = [other for other in trained if other != name]
        ran = [events for events in runs_events if learning_passes(events or [], name)]
        if ran and all(spread_on_whole_batch(events, name, rivals) for events in ran) \
                and passes[name] > 1 and all(2 * passes[name] >= passes[other]
                                             for other in rivals):
            spread.append(name)
    return spread[0] if len(spread) == 1 else None


def choose(records: list[dict], runs_events: list[list[dict]]) -> TrainedChoice:
    """Which class to grade where the probe's records say main() builds the handout's class
    and another; `runs_events`: the traces of the script's own runs."""
    beside = built_beside(records)
    if not beside:
        return TrainedChoice()
    candidates = [MODEL_CLASS] + beside
    trained = trained_classes(candidates, runs_events)
    if len(trained) > 1:
        # The base code timed for Task 2 beside Task 3's model: the one that ran Task 4's run.
        task4 = ran_task4(trained, runs_events)
        trained = [task4] if task4 else trained
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
