"""The HW3 probe builds the model with the arguments the script's own run passed its
constructor, where the script's call cannot be replayed from its text (adv42 F1: `def
__init__(self, dim=DIM, depth=DEPTH, *, tag)` with main()'s `run_tag += SEED`: no model, and
8.5 points of Tasks 2-5 waiting for a person with nothing measured).

The runs' records are written here as grader/vgpu/constructor_calls.py writes them (DEPTH=20
at DIM=256 on 2 and 5 GPUs, as the checks run the script); the probe's configuration is its
own (DIM=16, DEPTH=12 on a node of 3 GPUs). No GPU needed: the classes record how they were
built."""
from __future__ import annotations

import json
import textwrap
import types

import pytest
import torch

from grader.harness.hw3_build import CannotBuild, construct

NODE = 3                 # GPUs on the node the probe measures
DIM, DEPTH = 16, 12      # the probe's configuration
RUN_DIM, RUN_DEPTH = 256, 20   # the script's own runs (test_hw3.task5_script_specs)


@pytest.fixture(autouse=True)
def node_of_three(monkeypatch):
    monkeypatch.setattr(torch.cuda, "device_count", lambda: NODE)


def script(body: str) -> tuple[types.ModuleType, str]:
    source = ("import torch\nimport torch.nn as nn\nfrom dataclasses import dataclass\n"
              "DIM = 1024\nDEPTH = 6\nSEED = 0\n" + textwrap.dedent(body))
    module = types.ModuleType("model_parallel")
    exec(compile(source, "model_parallel.py", "exec", dont_inherit=True), module.__dict__)
    return module, source


def runs(arguments_by_gpus: dict[int, list], line: int | None = None) -> str:
    """The plan's recorded runs (JSON), one call of LargeLinearModelMP per run."""
    return json.dumps([{"gpus": gpus, "dim": RUN_DIM, "depth": RUN_DEPTH,
                        "calls": [{"cls": "LargeLinearModelMP", "file": "hw3/model_parallel.py",
                                   "line": line, "arguments": arguments}]}
                       for gpus, arguments in arguments_by_gpus.items()])


def same_on_both(arguments: list) -> str:
    return runs({2: arguments, 5: arguments})


def build(body: str, recorded: str | None, calls: list | None = None):
    module, source = script(body)
    return construct(module, DIM, DEPTH, calls, source=source, gpus=NODE, recorded=recorded)


TAG_FROM_AUGMENTED = """
    class LargeLinearModelMP:
        def __init__(self, dim=DIM, depth=DEPTH, *, tag):
            self.built = (dim, depth, tag)

    def main():
        torch.manual_seed(SEED)
        run_tag = 0
        run_tag += SEED
        model = LargeLinearModelMP(DIM, DEPTH, tag=run_tag)
    """
TAG_RECORDED = [["dim", "positional", RUN_DIM], ["depth", "positional", RUN_DEPTH],
                ["tag", "keyword_only", 0]]


def test_a_required_keyword_set_with_augmented_assignment_is_built_as_the_run_passed_it():
    with pytest.raises(CannotBuild):   # the script's text alone: no call fits (adv42 F1)
        build(TAG_FROM_AUGMENTED, None)
    calls: list[str] = []
    model = build(TAG_FROM_AUGMENTED, same_on_both(TAG_RECORDED), calls)
    assert model.built == (DIM, DEPTH, 0), (
        f"expected the probe's DIM and DEPTH with the run's tag=0; observed {model.built}; "
        "where to look: recorded_call in grader/harness/hw3_recorded_call.py")
    assert calls == [f"LargeLinearModelMP(dim={DIM}, depth={DEPTH}, tag=0); the arguments your "
                     "script's own run passed, at this configuration"], calls


# Each a correct script the text cannot replay: (its code, the runs' records by GPU count, what
# the model must have been built with on the probe's node).
CORRECT = {
    "config_dataclass_filled_in_place": ("""
        @dataclass
        class Config:
            dim: int = DIM
            depth: int = DEPTH
            seed: int = 0

        class LargeLinearModelMP:
            def __init__(self, cfg):
                self.built = (cfg.dim, cfg.depth, cfg.seed)

        def main():
            cfg = Config(dim=DIM, depth=DEPTH)
            cfg.seed += 7
            model = LargeLinearModelMP(cfg)
        """, {g: [["cfg", "positional", {"dataclass": "Config", "fields": {
            "dim": RUN_DIM, "depth": RUN_DEPTH, "seed": 7}}]] for g in (2, 5)},
        (DIM, DEPTH, 7)),
    "gpu_count_of_an_unknown_name_counted_in_a_loop": ("""
        class LargeLinearModelMP:
            def __init__(self, dim, depth, n):
                self.built = (dim, depth, n)

        def main():
            n = 0
            for _ in range(torch.cuda.device_count()):
                n += 1
            model = LargeLinearModelMP(DIM, DEPTH, n)
        """, {g: [["dim", "positional", RUN_DIM], ["depth", "positional", RUN_DEPTH],
                  ["n", "positional", g]] for g in (2, 5)},
        (DIM, DEPTH, NODE)),
    "gpus_of_an_unknown_name_appended_in_a_loop": ("""
        class LargeLinearModelMP:
            def __init__(self, dim, depth, places):
                self.built = (dim, depth, [str(d) for d in places])

        def main():
            places = []
            for i in range(torch.cuda.device_count()):
                places.append(torch.device(f"cuda:{i}"))
            model = LargeLinearModelMP(DIM, DEPTH, places)
        """, {g: [["dim", "positional", RUN_DIM], ["depth", "positional", RUN_DEPTH],
                  ["places", "positional", {"list": [{"device": f"cuda:{i}"}
                                                      for i in range(g)]}]] for g in (2, 5)},
        (DIM, DEPTH, [f"cuda:{i}" for i in range(NODE)])),
    "settings_dict_with_a_dtype_and_a_tuple": ("""
        class LargeLinearModelMP:
            def __init__(self, settings, **extra):
                self.built = (settings["layers"], settings["width"], settings["dtype"],
                              extra["shape"])

        def main():
            settings = {}
            settings["layers"] = DEPTH
            settings["width"] = DIM
            settings["dtype"] = torch.float32
            model = LargeLinearModelMP(settings, shape=(1, 2))
        """, {g: [["settings", "positional", {"dict": [
            ["layers", RUN_DEPTH], ["width", RUN_DIM], ["dtype", {"dtype": "torch.float32"}]]}],
            ["extra", "var_keyword", {"dict": [["shape", {"tuple": [1, 2]}]]}]] for g in (2, 5)},
        (DEPTH, DIM, torch.float32, (1, 2))),
}


@pytest.mark.parametrize("name", sorted(CORRECT))
def test_a_call_only_the_run_shows_is_built_at_the_probes_configuration(name):
    body, recorded, want = CORRECT[name]
    with pytest.raises(CannotBuild):
        build(body, None)
    model = build(body, runs(recorded))
    assert model.built == want, (
        f"{name}: expected {want}; observed {model.built}; where to look: _Resolver.value in "
        "grader/harness/hw3_recorded_call.py")


def test_the_call_at_the_scripts_line_is_the_one_replayed():
    """A one-GPU baseline built first (tag=1) and the model at main()'s call (tag=0)."""
    module, source = script(TAG_FROM_AUGMENTED)
    line = source.splitlines().index("    model = LargeLinearModelMP(DIM, DEPTH, tag=run_tag)") + 1
    baseline = {"cls": "LargeLinearModelMP", "file": "hw3/model_parallel.py", "line": line - 3,
                "arguments": TAG_RECORDED[:2] + [["tag", "keyword_only", 1]]}
    recorded = json.loads(runs({2: TAG_RECORDED, 5: TAG_RECORDED}, line=line))
    for run in recorded:
        run["calls"].insert(0, baseline)
    model = construct(module, DIM, DEPTH, source=source, gpus=NODE, recorded=json.dumps(recorded))
    assert model.built == (DIM, DEPTH, 0), f"expected main()'s call (tag=0); observed {model.built}"


def test_an_argument_that_changed_between_the_runs_is_not_guessed():
    recorded = runs({g: TAG_RECORDED[:2] + [["tag", "keyword_only", 10 + g]] for g in (2, 5)})
    with pytest.raises(CannotBuild) as failed:
        build(TAG_FROM_AUGMENTED, recorded)
    said = str(failed.value)
    assert "`tag` was 12 on 2 GPU(s) and 15 on 5 GPU(s)" in said and "run_tag" in said, said


def test_an_object_argument_is_said_and_not_rebuilt():
    recorded = same_on_both(TAG_RECORDED[:2] + [["tag", "keyword_only", {"object": "Tagger"}]])
    with pytest.raises(CannotBuild) as failed:
        build(TAG_FROM_AUGMENTED, recorded)
    assert "a Tagger object, which the grader cannot rebuild" in str(failed.value), failed.value


def test_a_run_that_built_no_model_leaves_the_old_message():
    with pytest.raises(CannotBuild) as failed:
        build(TAG_FROM_AUGMENTED, json.dumps([{"gpus": 2, "dim": RUN_DIM, "depth": RUN_DEPTH,
                                               "calls": []}]))
    assert "recorded no LargeLinearModelMP being built" in str(failed.value), failed.value


@pytest.mark.slow
def test_the_red_teams_required_tag_is_graded_as_the_reference(tmp_path):
    """adv42 F1 end to end: the reference with a required keyword `tag` that main() sets with
    `+=`. Before: 8.5 points of Tasks 2-5 waited for a person; now every check of the probe is
    graded on what it measured, as for the reference."""
    from grader.grading import grade_submission
    from tests.fixtures.planted_bugs import REFERENCE, apply_replacements, copy_tree
    submission = tmp_path / "submission"
    copy_tree(REFERENCE, submission)
    script = submission / "hw3" / "model_parallel.py"
    script.write_text(apply_replacements(script.read_text(), [
        ("    def __init__(self, dim=DIM, depth=DEPTH):\n",
         "    def __init__(self, dim=DIM, depth=DEPTH, *, tag):\n"),
        ("    model = LargeLinearModelMP(DIM, DEPTH)\n",
         "    run_tag = 0\n    run_tag += SEED\n"
         "    model = LargeLinearModelMP(DIM, DEPTH, tag=run_tag)\n")],
        "a required tag set with +="))
    result = grade_submission(submission, tmp_path / "out", ["hw3"])
    (assignment,) = result["assignments"]
    waiting = [c["id"] for item in assignment["items"] for c in item["checks"] if c["by_hand"]]
    assert not waiting and assignment["score"] == 10.5, (
        f"expected the reference's 10.5 of 15 with no check waiting for a person; observed "
        f"{assignment['score']}, waiting: {waiting}; where to look: the probe fixture in "
        "grader/checks/test_hw3.py, grader/harness/hw3_recorded_call.py")
