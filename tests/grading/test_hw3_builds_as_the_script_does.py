"""The HW3 probe builds the student's model as the student's own main() builds it (adv39 F1):
a constructor with a required GPU count, keyword-only parameters, a list of devices, a config
object, a class under another name than the handout's. Each script here is written as a
student writes it and runs correctly; the probe must build it at its own DIM, DEPTH and node
size. Scripts the probe cannot replay must say which call was tried and why.

The classes record how they were built (no GPU needed); torch.cuda.device_count() says the
node's size, as the probe's node makes it say."""
from __future__ import annotations

import textwrap
import types

import pytest
import torch

from grader.harness.hw3_build import CannotBuild, construct

NODE = 5     # GPUs on the node the probe measures
DIM, DEPTH = 16, 20   # the probe's configuration (the scripts say 1024 and 6)


@pytest.fixture(autouse=True)
def node_of_five(monkeypatch):
    monkeypatch.setattr(torch.cuda, "device_count", lambda: NODE)


def script(body: str) -> tuple[types.ModuleType, str]:
    """The student's module as the probe imports it (its main() not run), and its text."""
    source = "import torch\nimport torch.nn as nn\nDIM = 1024\nDEPTH = 6\n" + textwrap.dedent(body)
    module = types.ModuleType("model_parallel")
    exec(compile(source, "model_parallel.py", "exec", dont_inherit=True), module.__dict__)
    return module, source


def build(body: str, calls: list | None = None, notes: list | None = None):
    module, source = script(body)
    return construct(module, DIM, DEPTH, calls, source=source, gpus=NODE, notes=notes)


# Each a correct script: (its code, what the model must have been built with).
CORRECT = {
    "required_gpu_count": ("""
        class LargeLinearModelMP:
            def __init__(self, dim, depth, num_gpus):
                self.built = (dim, depth, num_gpus)

        def main():
            model = LargeLinearModelMP(DIM, DEPTH, torch.cuda.device_count())

        if __name__ == "__main__":
            main()
        """, (DIM, DEPTH, NODE)),
    "gpu_count_in_a_local": ("""
        class LargeLinearModelMP:
            def __init__(self, dim, depth, n):
                self.built = (dim, depth, n)

        def main():
            torch.manual_seed(0)
            n_gpus = torch.cuda.device_count()
            print(f"GPUs: {n_gpus}")
            model = LargeLinearModelMP(DIM, DEPTH, n_gpus)

        main()
        """, (DIM, DEPTH, NODE)),
    "keyword_only": ("""
        class LargeLinearModelMP:
            def __init__(self, *, depth, dim, world_size):
                self.built = (dim, depth, world_size)

        def main():
            model = LargeLinearModelMP(dim=DIM, depth=DEPTH,
                                       world_size=torch.cuda.device_count())
        """, (DIM, DEPTH, NODE)),
    "devices_list": ("""
        class LargeLinearModelMP:
            def __init__(self, dim, depth, devices):
                self.built = (dim, depth, [str(d) for d in devices])

        def main():
            devices = [torch.device(f"cuda:{i}") for i in range(torch.cuda.device_count())]
            model = LargeLinearModelMP(DIM, DEPTH, devices)
        """, (DIM, DEPTH, [f"cuda:{i}" for i in range(NODE)])),
    "devices_appended_in_a_loop": ("""
        class LargeLinearModelMP:
            def __init__(self, dim, depth, gpu_ids):
                self.built = (dim, depth, list(gpu_ids))

        def main():
            gpu_ids = []
            for i in range(torch.cuda.device_count()):
                gpu_ids.append(i)
            model = LargeLinearModelMP(DIM, DEPTH, gpu_ids)
        """, (DIM, DEPTH, list(range(NODE)))),
    "dataclass_config": ("""
        from dataclasses import dataclass, field

        @dataclass
        class Config:
            dim: int = DIM
            depth: int = DEPTH
            num_gpus: int = field(default_factory=torch.cuda.device_count)

        class LargeLinearModelMP:
            def __init__(self, config):
                self.built = (config.dim, config.depth, config.num_gpus)

        def main():
            cfg = Config()
            model = LargeLinearModelMP(cfg)
        """, (DIM, DEPTH, NODE)),
    "dict_config": ("""
        class LargeLinearModelMP:
            def __init__(self, config):
                self.built = (config["dim"], config["depth"])

        def main():
            model = LargeLinearModelMP({"dim": DIM, "depth": DEPTH})
        """, (DIM, DEPTH)),
    "depth_loop_and_argparse_gpus": ("""
        import argparse

        class LargeLinearModelMP:
            def __init__(self, dim, depth, gpus):
                self.built = (dim, depth, gpus)

        def main():
            parser = argparse.ArgumentParser()
            parser.add_argument("--gpus", type=int, default=torch.cuda.device_count())
            args = parser.parse_args()
            for depth in (6, 12, 24):
                model = LargeLinearModelMP(DIM, depth, args.gpus)
        """, (DIM, DEPTH, NODE)),
    "single_gpu_baseline_built_first": ("""
        class LargeLinearModelMP:
            def __init__(self, dim, depth, num_gpus):
                self.built = (dim, depth, num_gpus)

        def main():
            baseline = LargeLinearModelMP(DIM, DEPTH, 1)
            model = LargeLinearModelMP(DIM, DEPTH, torch.cuda.device_count())
        """, (DIM, DEPTH, NODE)),
    "gpu_count_in_a_local_named_size": ("""
        class LargeLinearModelMP:
            def __init__(self, dim, depth, world_size):
                self.built = (dim, depth, world_size)

        def main():
            size = torch.cuda.device_count()
            model = LargeLinearModelMP(DIM, DEPTH, size)
        """, (DIM, DEPTH, NODE)),
    "entry_block_without_main": ("""
        class LargeLinearModelMP:
            def __init__(self, dim, depth, n_devices):
                self.built = (dim, depth, n_devices)

        if __name__ == "__main__":
            n = torch.cuda.device_count()
            model = LargeLinearModelMP(DIM, DEPTH, n)
        """, (DIM, DEPTH, NODE)),
    "class_only_required_world_size": ("""
        class LargeLinearModelMP:
            def __init__(self, dim, depth, world_size):
                self.built = (dim, depth, world_size)
        """, (DIM, DEPTH, NODE)),
    "optional_gpus_passed_by_main": ("""
        class LargeLinearModelMP:
            def __init__(self, dim=DIM, depth=DEPTH, n_gpus=2):
                self.built = (dim, depth, n_gpus)

        def main():
            model = LargeLinearModelMP(n_gpus=torch.cuda.device_count())
        """, (DIM, DEPTH, NODE)),
}


@pytest.mark.parametrize("name", CORRECT)
def test_a_correct_script_is_built_as_its_main_builds_it(name):
    body, expected = CORRECT[name]
    calls: list[str] = []
    model = build(body, calls)
    assert model.built == expected, (
        f"[{name}] expected the model built with {expected}, observed {model.built} "
        f"(the call the grader made: {calls}); where to look: grader/harness/hw3_build.py "
        "replay() and construct()")


def test_the_call_made_is_told_with_the_probes_values():
    calls: list[str] = []
    build(CORRECT["required_gpu_count"][0], calls)
    assert calls == [f"LargeLinearModelMP({DIM}, {DEPTH}, {NODE})"], calls


def test_a_gpu_count_the_script_writes_as_a_number_is_kept():
    """main() passes 2: the script uses two GPUs on any node, and so does the grader's build
    (what the student's own run does; Task 3's checks then say the other GPUs were idle)."""
    calls: list[str] = []
    model = build("""
        class LargeLinearModelMP:
            def __init__(self, dim, depth, num_gpus):
                self.built = (dim, depth, num_gpus)

        def main():
            model = LargeLinearModelMP(DIM, DEPTH, 2)
        """, calls)
    assert model.built == (DIM, DEPTH, 2) and calls == [f"LargeLinearModelMP({DIM}, {DEPTH}, 2)"]


RENAMED = """
    class Timer:
        def __init__(self):
            self.times = []

    class NaiveModelParallel(nn.Module):
        def __init__(self, dim=DIM, depth=DEPTH):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(dim, dim) for _ in range(depth)])
            self.built = (dim, depth)

    def main():
        timer = Timer()
        model = NaiveModelParallel(DIM, DEPTH)
        loss_fn = nn.MSELoss()
    """


def test_a_renamed_model_class_is_the_one_main_builds_and_is_noted():
    notes: list[str] = []
    calls: list[str] = []
    model = build(RENAMED, calls, notes)
    assert type(model).__name__ == "NaiveModelParallel" and model.built == (DIM, DEPTH), calls
    assert notes == ["NaiveModelParallel"], notes
    assert calls == [f"NaiveModelParallel({DIM}, {DEPTH})"], calls


def test_a_renamed_model_built_after_a_one_gpu_baseline_is_the_model():
    """main() times a one-GPU baseline first, then its model-parallel class: the class that
    asks torch for the GPUs is Task 3's model."""
    notes: list[str] = []
    model = build("""
        class SingleGPU(nn.Module):
            def __init__(self, dim=DIM, depth=DEPTH):
                super().__init__()
                self.layers = nn.Sequential(*[nn.Linear(dim, dim) for _ in range(depth)])

        class ModelParallel(nn.Module):
            def __init__(self, dim=DIM, depth=DEPTH):
                super().__init__()
                n = torch.cuda.device_count()
                self.layers = nn.ModuleList([nn.Linear(dim, dim) for _ in range(depth)])
                self.built = (dim, depth, n)

        def main():
            baseline = SingleGPU(DIM, DEPTH)
            model = ModelParallel(DIM, DEPTH)
        """, notes=notes)
    assert type(model).__name__ == "ModelParallel" and model.built == (DIM, DEPTH, NODE), notes
    assert notes == ["ModelParallel"]


def test_the_handouts_class_name_is_not_noted():
    notes: list[str] = []
    build(CORRECT["required_gpu_count"][0], notes=notes)
    assert notes == []


def test_a_renamed_class_the_script_never_builds_is_the_only_one_with_layers():
    notes: list[str] = []
    model = build("""
        class Stack(nn.Module):
            def __init__(self, dim=DIM, depth=DEPTH):
                super().__init__()
                self.layers = nn.Sequential(*[nn.Linear(dim, dim) for _ in range(depth)])
                self.built = (dim, depth)
        """, notes=notes)
    assert model.built == (DIM, DEPTH) and notes == ["Stack"]


def test_two_unbuilt_model_classes_are_not_guessed():
    with pytest.raises(CannotBuild) as raised:
        build("""
            class SingleGPU(nn.Module):
                def __init__(self, dim=DIM, depth=DEPTH):
                    super().__init__()
                    self.layers = nn.Sequential(*[nn.Linear(dim, dim) for _ in range(depth)])

            class Pipeline(nn.Module):
                def __init__(self, dim=DIM, depth=DEPTH):
                    super().__init__()
                    self.layers = nn.ModuleList([nn.Linear(dim, dim) for _ in range(depth)])
            """)
    message = str(raised.value)
    assert "defines no class LargeLinearModelMP" in message and "Pipeline, SingleGPU" in message, \
        message


def test_a_call_that_cannot_be_replayed_says_which_call_and_why():
    """main() builds its config from a file the grader's build cannot read (an honest script
    whose config.yaml was not handed in): the message names the call, its line and the error,
    and the signatures the grader tried besides."""
    with pytest.raises(CannotBuild) as raised:
        build("""
            def load_config(path):
                with open(path) as handle:
                    return handle.read()

            class LargeLinearModelMP:
                def __init__(self, dim, depth, settings):
                    self.built = (dim, depth, settings)

            def main():
                model = LargeLinearModelMP(DIM, DEPTH, load_config("no-such-config.yaml"))
            """)
    message = str(raised.value)
    for expected in ("LargeLinearModelMP(dim, depth, settings) cannot be built",
                     "your script builds it as `LargeLinearModelMP(DIM, DEPTH, "
                     "load_config('no-such-config.yaml'))` (line ",
                     "in main()", "`load_config('no-such-config.yaml')` (parameter settings)",
                     "FileNotFoundError", "LargeLinearModelMP(DIM, DEPTH) (two positional"):
        assert expected in message, f"expected {expected!r} in the message, observed: {message}"


def test_a_config_filled_in_place_is_not_replayed_half_done():
    """`cfg = {}` then `cfg["dim"] = DIM`: the assignment alone would build from an empty
    dict (the student's KeyError, not theirs); it is said as a call the grader cannot make."""
    with pytest.raises(CannotBuild, match="`cfg` is set in a way the grader does not replay"):
        build("""
            class LargeLinearModelMP:
                def __init__(self, cfg):
                    self.built = (cfg["dim"], cfg["depth"])

            def main():
                cfg = {}
                cfg["dim"] = DIM
                cfg["depth"] = DEPTH
                model = LargeLinearModelMP(cfg)
            """)


def test_a_constructor_with_no_call_in_the_script_says_so():
    with pytest.raises(CannotBuild, match="no call of LargeLinearModelMP found in your script"):
        build("""
            class LargeLinearModelMP:
                def __init__(self, spec):
                    self.built = spec
            """)


def test_the_probes_time_limit_is_not_swallowed_by_a_failing_argument():
    class TimeLimit(Exception):
        pass

    module, source = script("""
        def slow():
            raise STOP("this configuration took longer than 30 s")

        class LargeLinearModelMP:
            def __init__(self, dim, depth, num_gpus):
                self.built = (dim, depth, num_gpus)

        def main():
            model = LargeLinearModelMP(DIM, DEPTH, slow())
        """)
    module.STOP = TimeLimit
    with pytest.raises(TimeLimit):
        construct(module, DIM, DEPTH, source=source, gpus=NODE, stop=(TimeLimit,))
    # Without it, the failing argument falls back to the parameter's name: the node's count.
    assert construct(module, DIM, DEPTH, source=source, gpus=NODE).built == (DIM, DEPTH, NODE)


def test_a_renamed_class_is_the_one_whose_own_run_is_read_for_a_collapse():
    """Task 3 reads the script's own run for a forward that collapses its layers onto cuda:0
    after the probe's calls (grader/checks/hw3_trained_layout.py), by the model's class name:
    a renamed class is read under its own name, or renaming had escaped that check."""
    from grader.checks.hw3_trained_layout import first_collapse
    from grader.checks.test_hw3 import probed_class
    records = [{"kind": "layout", "gpus": 2, "depth": 4, "model_class": "NaiveModelParallel"}]
    passes = [(1, ["cuda:0", "cuda:1"], False), (2, ["cuda:0", "cuda:1"], False),
              (3, ["cuda:0"], True)]
    events = []
    for n, devices, moved in passes:
        events += [{"event": "forward", "module": "NaiveModelParallel", "model": 1, "n": n,
                    "grad": True, "thread": "MainThread", "step": n - 1},
                   {"event": "forward_out", "thread": "MainThread", "layer_devices": devices,
                    "moved_layers": moved},
                   {"event": "forward_used", "n": n},   # a training step: backward, step
                   {"event": "step", "index": n, "optimizer_n": 1}]
    assert probed_class((records, None)) == "NaiveModelParallel"
    found = first_collapse(events, 2, probed_class((records, None)))
    assert found is not None and found.later == 3, (
        f"expected the renamed model's collapse at pass 3; observed {found}; where to look: "
        "own_run_collapse in grader/checks/test_hw3.py")
    assert probed_class(([{"kind": "layout"}], None)) == "LargeLinearModelMP"
