"""HW3 grades the model class the script trains, where main() builds the handout's and another.

adv53 F0: an honest student keeps the handout's LargeLinearModelMP (the base code's two-GPU
split) for Task 1, prints its layout and drops it, then builds and trains Task 3's model from a
class of a new name; or picks one of the two behind a `--task` flag whose default is Task 3.
Since 20b0167 the handout's class stayed graded whenever main() builds it (against decoys):
6.5 of 15 against the TA's 10.5. Now the script's own run says which class trained (its trace:
passes with gradients, a backward and an optimizer step), and that one is graded; a decoy built
and never trained is not; where two classes trained, or none did, Tasks 3-5 wait for a person.
adv57 F-B, F-F: a hand-written update trains as an optimizer's step does, and of two classes
trained the one that ran on every GPU with the whole batch is graded (the base code timed for
Task 2 is no rival), unless it trained one pass or under half the other's (a decoy): held.

Each script here is run as the course runs it (main(), on a traced virtual node of 5 GPUs);
the probe's side is construct() with what the checks read from that run
(grader/checks/hw3_trained_class.py).
"""
from __future__ import annotations

import importlib.util
import sys
import textwrap
import types

import pytest

from grader.checks.hw3_trained_class import UNDECIDED, TrainedChoice, choose
from grader.harness.hw3_build import TRAINED_PART, classes_built_beside, construct
from grader.harness.hw3_script_call import renamed_model_note

NODE = 5
DIM, DEPTH = 8, 10

# The course's base code kept as the handout's class (Task 1), and Task 3's class of a new name.
SCRIPT = """
import argparse
import torch
import torch.nn as nn

DIM = 8
DEPTH = 10
STEPS = 2


class LargeLinearModelMP(nn.Module):
    def __init__(self, dim=DIM, depth=DEPTH):
        super().__init__()
        self.layers = nn.ModuleList([
            nn.Linear(dim, dim).to("cuda:0" if i < depth // 2 else "cuda:1")
            for i in range(depth)])
        self.built = "base"

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x.to(next(layer.parameters()).device)))
        return x


class LargeLinearModelDynamic(nn.Module):
    def __init__(self, dim=DIM, depth=DEPTH):
        super().__init__()
        n = torch.cuda.device_count()
        self.layers = nn.ModuleList([
            nn.Linear(dim, dim).to(f"cuda:{i * n // depth}") for i in range(depth)])
        self.built = "dynamic"

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x.to(next(layer.parameters()).device)))
        return x


def train(model, steps=STEPS, rows=4):
    x = torch.randn(rows, DIM, device=next(model.layers[0].parameters()).device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    for _ in range(steps):
        optimizer.zero_grad()
        model(x).pow(2).mean().backward()
        optimizer.step()


def train_by_hand(model, steps=STEPS, rows=4):
    x = torch.randn(rows, DIM, device=next(model.layers[0].parameters()).device)
    for _ in range(steps):
        for p in model.parameters():
            p.grad = None
        model(x).pow(2).mean().backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= 1e-3 * p.grad


def show(model):
    for i, layer in enumerate(model.layers):
        print(f"layer {i}: {next(layer.parameters()).device}")
"""

# main() as students write it; the class that should be graded (None: held for a person).
MAINS = {
    # adv53's both_seq_newname: Task 1's layout printed, the object dropped, Task 3's trained.
    "task1_printed_then_task3_trained": ("LargeLinearModelDynamic", """
        def main():
            base = LargeLinearModelMP(DIM, DEPTH)  # Task 1
            show(base)
            del base
            model = LargeLinearModelDynamic(DIM, DEPTH)  # Task 3
            show(model)
            train(model)
        """),
    # adv53's flag_choice: a --task flag whose default is Task 3.
    "flag_with_task3_as_default": ("LargeLinearModelDynamic", """
        def main():
            parser = argparse.ArgumentParser()
            parser.add_argument("--task", type=int, default=3)
            task = parser.parse_args().task
            model = (LargeLinearModelMP(DIM, DEPTH) if task == 1
                     else LargeLinearModelDynamic(DIM, DEPTH))
            train(model)
        """),
    "task1_in_a_function_then_task3": ("LargeLinearModelDynamic", """
        def task1():
            show(LargeLinearModelMP(DIM, DEPTH))

        def main():
            task1()
            model = LargeLinearModelDynamic(DIM, DEPTH)
            train(model)
        """),
    "factory_picked_by_a_constant": ("LargeLinearModelDynamic", """
        MODELS = {1: LargeLinearModelMP, 3: LargeLinearModelDynamic}
        TASK = 3

        def main():
            model = MODELS[TASK](DIM, DEPTH)
            train(model)
        """),
    # Decoys: the other class built and never trained: the handout's (trained) is graded.
    "decoy_built_and_never_trained": ("LargeLinearModelMP", """
        def main():
            decoy = LargeLinearModelDynamic(DIM, DEPTH)
            show(decoy)
            model = LargeLinearModelMP(DIM, DEPTH)
            train(model)
        """),
    "decoy_evaluated_without_gradients": ("LargeLinearModelMP", """
        def main():
            decoy = LargeLinearModelDynamic(DIM, DEPTH)
            with torch.no_grad():
                decoy(torch.zeros(4, DIM, device="cuda:0"))
            model = LargeLinearModelMP(DIM, DEPTH)
            train(model)
        """),
    # Two classes trained: the grader cannot tell which is Task 3's.
    "decoy_trained_one_step_then_replaced": (None, """
        def main():
            model = LargeLinearModelDynamic(DIM, DEPTH)
            train(model, steps=1)
            model = LargeLinearModelMP(DIM, DEPTH)
            train(model)
        """),
    # adv57 F-B: the decoy spread over every GPU stepped once by Adam on two rows, the base
    # code trained by a hand-written update (no torch.optim): both trained, neither ran Task
    # 4's run on every GPU with the whole batch; graded as the decoy before.
    "decoy_one_step_two_rows_then_base_updated_by_hand": (None, """
        def main():
            decoy = LargeLinearModelDynamic(DIM, DEPTH)
            train(decoy, steps=1, rows=2)
            train_by_hand(LargeLinearModelMP(DIM, DEPTH))
        """),
    # The decoy on the whole batch, once: one pass never wins.
    "decoy_one_step_whole_batch_then_base_updated_by_hand": (None, """
        def main():
            train(LargeLinearModelDynamic(DIM, DEPTH), steps=1)
            train_by_hand(LargeLinearModelMP(DIM, DEPTH))
        """),
    # Two classes trained the whole run, both on the handout's two GPUs of the base code:
    # neither spread, so the grader cannot tell.
    "two_classes_trained_neither_spread": (None, """
        class TwoGPUs(LargeLinearModelMP):
            pass

        def main():
            train(LargeLinearModelMP(DIM, DEPTH))
            train(TwoGPUs(DIM, DEPTH))
        """),
    # adv57 F-F: the handout's Task 2 times the base code (DEPTH vs. step time), Task 4 runs
    # Task 3's code on every GPU: the base code trained first is Task 2's, no rival (held for a
    # person before).
    "task2_base_timed_then_task3": ("LargeLinearModelDynamic", """
        def main():
            train(LargeLinearModelMP(DIM, DEPTH))
            train(LargeLinearModelDynamic(DIM, DEPTH))
        """),
    "task2_base_updated_by_hand_then_task3_by_hand": ("LargeLinearModelDynamic", """
        def main():
            train_by_hand(LargeLinearModelMP(DIM, DEPTH))
            train_by_hand(LargeLinearModelDynamic(DIM, DEPTH))
        """),
    "task3_trained_then_task2_base_timed": ("LargeLinearModelDynamic", """
        def main():
            model = LargeLinearModelDynamic(DIM, DEPTH)
            train(model)
            base = LargeLinearModelMP(DIM, DEPTH)
            train(base)
        """),
}


def script_module(tmp_path, body: str):
    source = SCRIPT + textwrap.dedent(body)
    path = tmp_path / f"model_parallel_{len(list(tmp_path.iterdir()))}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, source


def graded_after_the_run(traced_vnode, tmp_path, monkeypatch, body: str):
    """(the class construct() builds once the checks read the run, the checks' choice)."""
    monkeypatch.setattr(sys, "argv", ["model_parallel.py"])
    events = traced_vnode(NODE)
    module, source = script_module(tmp_path, body)
    module.main()
    beside, handout_built = classes_built_beside(module, source)
    records = [{"kind": "layout", "built_beside": beside, "handout_built": handout_built}]
    # A graded run's trace opens with its node's size (the fixture listens from after it).
    choice = choose(records, [[{"event": "start", "gpus": NODE}, *events]])
    trained = choice.part["name"] if choice.part else None
    model = construct(module, DIM, DEPTH, source=source, gpus=NODE, trained=trained)
    return type(model).__name__, choice


@pytest.mark.parametrize("name", sorted(MAINS))
def test_the_class_main_trains_is_graded(traced_vnode, tmp_path, monkeypatch, name):
    wanted, body = MAINS[name]
    graded, choice = graded_after_the_run(traced_vnode, tmp_path, monkeypatch, body)
    if wanted is None:
        assert choice.undecided and "a person will grade Tasks 3-5" in choice.undecided \
            and choice.part is None, (
                f"expected Tasks 3-5 held for a person (two classes trained); observed "
                f"{choice}; where to look: choose in grader/checks/hw3_trained_class.py")
        return
    assert graded == wanted and choice.undecided is None, (
        f"expected {wanted} graded (the class main() trains); observed {graded}, choice "
        f"{choice}; where to look: choose in grader/checks/hw3_trained_class.py and "
        "class_built_instead in grader/harness/hw3_build.py")


def test_without_the_runs_word_the_handouts_class_stays_graded(traced_vnode):
    """The probe's first run (nothing read from the script's runs yet) keeps the handout's
    class where main() builds both, and says which others main() builds."""
    traced_vnode(2)
    source = SCRIPT + textwrap.dedent(MAINS["task1_printed_then_task3_trained"][1])
    module = types.ModuleType("model_parallel")
    exec(compile(source, "model_parallel.py", "exec", dont_inherit=True), module.__dict__)
    assert classes_built_beside(module, source) == (["LargeLinearModelDynamic"], True)
    assert construct(module, DIM, DEPTH, source=source, gpus=2).built == "base"
    # A name the runs never trained (or not a class main() builds) changes nothing.
    assert construct(module, DIM, DEPTH, source=source, gpus=2, trained="show").built == "base"


@pytest.mark.parametrize("body", [
    "def main():\n    train(LargeLinearModelMP(DIM, DEPTH))\n",
    "def main():\n    train(LargeLinearModelDynamic(DIM, DEPTH))\n",
], ids=["handouts-only", "new-class-only"])
def test_nothing_is_beside_where_main_builds_one_class(body):
    source = SCRIPT + body
    module = types.ModuleType("model_parallel")
    exec(compile(source, "model_parallel.py", "exec", dont_inherit=True), module.__dict__)
    assert classes_built_beside(module, source) == ([], False)
    assert choose([{"built_beside": []}], [[]]) == TrainedChoice()


@pytest.mark.parametrize("handout_built, held", [(True, True), (False, False)],
                         ids=["main-builds-both-by-name", "factory-not-told"])
def test_where_no_class_trained_only_a_named_pair_is_held(handout_built, held):
    """A run that stopped before its first step (or trained a wrapper) tells nothing: held
    where main() builds the handout's class and another by name; where main()'s build was not
    told from the text (a factory), the handout's stays graded, as before the runs were read."""
    choice = choose([{"built_beside": ["Spread"], "handout_built": handout_built}], [[]])
    assert choice.part is None and bool(choice.undecided) == held, choice
    if held:
        assert "no model of these took a training step" in choice.undecided


def test_the_note_says_the_handouts_class_was_built_but_not_trained():
    said = renamed_model_note("LargeLinearModelDynamic", handout_class_kept=True,
                              handout_built=True)
    assert "did not train" in said and "main() does not build it" not in said, said
    assert TRAINED_PART == "trained_class"


def failed_check(check: str, folder, undecided: str | None):
    """A failing HW3 check as the checks' pytest_runtest_call wrapper sees it."""
    stash = pytest.Stash()
    if undecided:
        stash[UNDECIDED] = undecided
    marker = types.SimpleNamespace(args=(check,))
    return types.SimpleNamespace(
        funcargs={}, get_closest_marker=lambda name: marker if name == "check" else None,
        config=types.SimpleNamespace(getoption=lambda name: str(folder), stash=stash))


@pytest.mark.parametrize("check, undecided, held", [
    ("hw3.task3.all_gpus_used", "Held for the course staff: your main() builds A, B", True),
    ("hw3.task4.table_reported", "Held for the course staff: your main() builds A, B", True),
    ("hw3.task1.layers_reported", "Held for the course staff: your main() builds A, B", False),
    ("hw3.task3.all_gpus_used", None, False),
], ids=["task3-held", "task4-held", "task1-not-held", "decided-not-held"])
def test_an_undecided_class_holds_task3_to_5_failures_for_a_person(tmp_path, check, undecided,
                                                                   held):
    from grader.checks import conftest
    from grader.checks.support import GradedByHand
    (tmp_path / "hw3").mkdir()
    wrapper = conftest.pytest_runtest_call(failed_check(check, tmp_path, undecided))
    next(wrapper)
    with pytest.raises(AssertionError) as raised:
        wrapper.throw(AssertionError("Observed: no layer on cuda:2"))
    assert isinstance(raised.value, GradedByHand) == held, (
        f"expected {check} {'held for a person' if held else 'failed as it was'}; observed "
        f"{type(raised.value).__name__}: {raised.value}; where to look: "
        "_trained_class_undecided in grader/checks/conftest.py")
    if held:
        assert "your main() builds A, B" in str(raised.value) and \
            "no layer on cuda:2" in str(raised.value), str(raised.value)
