"""The script's own run records what each model of the submission's classes was built with,
as data (grader/vgpu/constructor_calls.py), for the HW3 probe to build the model the same way
where the script's text cannot say it (adv42 F1: a required `tag` set with `+=`)."""
from __future__ import annotations

import importlib.util
import math
import sys
import textwrap

import pytest
import torch

from grader.vgpu import constructor_calls
from grader.vgpu.constructor_calls import EVENT, as_data
from grader.vgpu.patcher import Patcher
from grader.vgpu.trace import Trace

STUDENT = """
    import dataclasses
    import types
    import torch
    import torch.nn as nn

    DIM, DEPTH = 8, 4


    @dataclasses.dataclass
    class Config:
        dim: int = DIM
        depth: int = DEPTH
        name: str = "run"


    class Block(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.layer = nn.Linear(dim, dim)


    class LargeLinearModelMP(nn.Module):
        def __init__(self, dim=DIM, depth=DEPTH, *, tag, cfg=None, extra=None):
            super().__init__()
            self.layers = nn.ModuleList(Block(dim) for _ in range(depth))


    class Renamed(LargeLinearModelMP):
        pass


    def main():
        run_tag = 0
        run_tag += 3
        return LargeLinearModelMP(DIM, DEPTH, tag=run_tag, cfg=Config(name="x"),
                                  extra=[torch.device("cuda:1"), torch.float16, (1, 2.5),
                                         {"a": None}, types.SimpleNamespace(k=True), object()])
    """


@pytest.fixture
def recorded(tmp_path, monkeypatch):
    """(the student's module, imported from a submission folder, and the records its models
    write) with the recorder installed as a traced run installs it."""
    folder = tmp_path / "submission" / "hw3"
    folder.mkdir(parents=True)
    (folder / "model_parallel.py").write_text(textwrap.dedent(STUDENT))
    monkeypatch.setenv("PDL_SUBMISSION_ROOT", str(folder.parent))
    trace, patcher, records = Trace(None, 0), Patcher(), []
    trace.listeners.append(records.append)
    constructor_calls.install(patcher, trace)
    name = "student_model_parallel_under_test"
    spec = importlib.util.spec_from_file_location(name, folder / "model_parallel.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
        yield module, records
    finally:
        patcher.restore()
        sys.modules.pop(name, None)


def test_the_models_constructor_call_is_recorded_as_data(recorded):
    module, records = recorded
    module.main()
    (model,) = [r for r in records if r["event"] == EVENT and r["cls"] == "LargeLinearModelMP"]
    arguments = {name: (kind, value) for name, kind, value in model["arguments"]}
    assert arguments["dim"] == ("positional", 8) and arguments["depth"] == ("positional", 4)
    assert arguments["tag"] == ("keyword_only", 3), arguments
    assert arguments["cfg"] == ("keyword_only", {"dataclass": "Config", "fields": {
        "dim": 8, "depth": 4, "name": "x"}}), arguments["cfg"]
    assert arguments["extra"][1] == {"list": [
        {"device": "cuda:1"}, {"dtype": "torch.float16"}, {"tuple": [1, 2.5]},
        {"dict": [["a", None]]}, {"namespace": "SimpleNamespace", "fields": {"k": True}},
        {"object": "object"}]}, arguments["extra"]
    source = (model["file"], model["line"])
    assert source[0].endswith("model_parallel.py") and source[1] == textwrap.dedent(
        STUDENT).splitlines().index("    return LargeLinearModelMP(DIM, DEPTH, tag=run_tag, "
                                    "cfg=Config(name=\"x\"),") + 1, source


def test_blocks_are_recorded_a_few_times_only_and_torchs_own_modules_never(recorded):
    module, records = recorded
    module.LargeLinearModelMP(8, 10, tag=0)
    classes = [r["cls"] for r in records if r["event"] == EVENT]
    assert classes.count("Block") == constructor_calls.MAX_PER_CLASS, classes
    assert "Linear" not in classes and "ModuleList" not in classes, classes


def test_an_inherited_constructor_is_recorded_under_the_class_built(recorded):
    module, records = recorded
    module.Renamed(tag=5)
    (found,) = [r for r in records if r["event"] == EVENT and r["cls"] == "Renamed"]
    assert ["tag", "keyword_only", 5] in found["arguments"], found


def test_values_that_are_not_plain_are_named_not_written():
    folder = "/nowhere/"
    assert as_data(math.nan, folder) == {"float": "nan"}
    assert as_data("x" * 1000, folder) == {"object": "str"}
    assert as_data(torch.zeros(2), folder) == {"object": "Tensor"}
    assert as_data(2 ** 70, folder) == {"object": "int"}
    assert as_data([list(range(64))] * 64, folder)["list"][5] == {"object": "list"}, \
        "expected at most 256 values written of one argument"
    deep = [[[[[1]]]]]
    assert as_data(deep, folder) == {"list": [{"list": [{"list": [{"list": [
        {"object": "list"}]}]}]}]}
