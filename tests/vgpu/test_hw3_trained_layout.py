"""HW3 Task 3 is judged by the probe's calls of forward() and by the script's own training: a
forward that keeps its layers spread for the probe's two calls and moves them all onto cuda:0
from its third call on (or at the end of its second, or at its hundredth) trains on one GPU,
which the script's own run shows: passes of one model object that ran on fewer GPUs than an
earlier pass of it, forward() having moved the layers in between (grader/checks/
hw3_trained_layout.py; the `model` of each traced `forward`, `moved_layers` of its output).

Each model here is trained as the base code's main() does (one forward pass under no_grad, then
training steps) on a traced virtual node, in this process; the grader's runs trace the same.
"""
import importlib.util
from pathlib import Path

import pytest

from grader.checks.hw3_trained_layout import first_collapse, model_passes

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "reference" / "hw3" / "model_parallel.py"
DIM, BATCH, DEPTH = 8, 4, 6

FORWARD = "    def forward(self, x):\n"


def _collapse_from_call(call: int, when: str = "before") -> tuple[str, str]:
    """forward() counts its calls and moves every layer onto cuda:0 from call `call` on:
    before running them ("before"), or after running them spread on call `call` - 1 ("after":
    the next pass starts collapsed, as a new model on cuda:0 would)."""
    move = "            for layer in self.layers:\n                layer.to('cuda:0')\n"
    if when == "before":
        return FORWARD, (FORWARD + "        self.calls = getattr(self, 'calls', 0) + 1\n"
                         f"        if self.calls >= {call}:\n" + move)
    return FORWARD, (FORWARD + "        out = self._spread_forward(x)\n"
                     "        self.calls = getattr(self, 'calls', 0) + 1\n"
                     f"        if self.calls >= {call - 1}:\n" + move +
                     "        return out\n\n    def _spread_forward(self, x):\n")


# Honest: __init__ keeps the layers on the host with the GPU each is for; forward() moves each
# there when it runs it (every call: a no-op once placed).
LAZY = [("                self.layers.append(nn.Linear(dim, dim).to(torch.device(f\"cuda:{gpu}\")))\n",
         "                self.layers.append(nn.Linear(dim, dim))\n                self.gpu_of.append(gpu)\n"),
        ("        self.layers = nn.ModuleList()\n",
         "        self.layers = nn.ModuleList()\n        self.gpu_of = []\n"),
        ("        for layer in self.layers:\n            layer_device",
         "        for gpu, layer in zip(self.gpu_of, self.layers):\n"
         "            layer.to(f'cuda:{gpu}')\n            layer_device")]


def student_module(tmp_path, *edits):
    source = REFERENCE.read_text()
    for old, new in edits:
        assert source.count(old) == 1, "reference/hw3/model_parallel.py changed under this test"
        source = source.replace(old, new)
    path = tmp_path / f"model_parallel_{len(list(tmp_path.iterdir()))}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def train_as_main_does(module, steps: int = 5, **build):
    import torch
    model = module.LargeLinearModelMP(DIM, DEPTH, **build)
    first = next(model.layers[0].parameters()).device
    x = torch.randn(BATCH, DIM, device=first)
    with torch.no_grad():
        model(x)   # Task 5's counted pass
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    for _ in range(steps):
        optimizer.zero_grad()
        out = model(x)
        out.pow(2).mean().backward()
        optimizer.step()
    return model


def test_the_reference_trains_on_every_gpu_it_was_probed_on(traced_vnode, tmp_path):
    events = traced_vnode(3)
    train_as_main_does(student_module(tmp_path))
    passes = model_passes(events)
    assert len(passes) == 6 and {p["model"] for p in passes} == {passes[0]["model"]}, (
        f"expected 6 passes of one model object in the trace; observed {passes}; where to look: "
        "grader/vgpu/observe.py's `forward` event (its `model` field)")
    assert all(p["gpus"] == ("cuda:0", "cuda:1", "cuda:2") for p in passes), passes
    assert first_collapse(events) is None


@pytest.mark.parametrize("call,when", [(3, "before"), (3, "after"), (6, "before")],
                         ids=["third-call", "after-second-call", "sixth-call"])
def test_a_forward_collapsing_after_the_probes_calls_is_seen_in_the_own_run(
        traced_vnode, tmp_path, call, when):
    events = traced_vnode(3)
    train_as_main_does(student_module(tmp_path, _collapse_from_call(call, when)))
    found = first_collapse(events)
    assert found is not None, (
        f"expected a collapse onto cuda:0 from forward()'s call {call} ({when} running the "
        f"layers); observed none in passes {model_passes(events)}; where to look: "
        "grader/checks/hw3_trained_layout.py first_collapse")
    assert found.later_gpus == ("cuda:0",) and len(found.earlier_gpus) == 3, found
    assert found.later == call and found.training, found
    assert "cuda:0 only" in found.said()


def test_layers_placed_by_forward_when_first_called_collapse_nothing(traced_vnode, tmp_path):
    events = traced_vnode(3)
    train_as_main_does(student_module(tmp_path, *LAZY))
    assert [p["gpus"] for p in model_passes(events)] == [("cuda:0", "cuda:1", "cuda:2")] * 6
    assert first_collapse(events) is None


def test_a_second_model_on_fewer_gpus_in_the_same_run_is_no_collapse(traced_vnode, tmp_path):
    """A script comparing node sizes in one run (Task 4) builds a model per size: the second,
    on fewer GPUs, is another object, even where it takes the freed first one's id."""
    import torch
    events = traced_vnode(3)
    module = student_module(tmp_path)
    train_as_main_does(module)            # spread over 3 GPUs, then freed
    original = torch.cuda.device_count
    torch.cuda.device_count = lambda: 1   # the model built next sees one GPU
    try:
        train_as_main_does(module)
    finally:
        torch.cuda.device_count = original
    numbers = [p["model"] for p in model_passes(events)]
    assert len(set(numbers)) == 2, f"expected two model objects; observed {numbers}"
    assert first_collapse(events) is None


def test_a_model_the_script_moves_onto_one_gpu_between_passes_is_no_collapse(traced_vnode,
                                                                             tmp_path):
    """A main() that times the same model on one GPU afterwards (`model.to("cuda:0")`, a Task 4
    baseline) moves it itself: forward() kept every layer where it found it."""
    import torch
    events = traced_vnode(3)
    model = train_as_main_does(student_module(tmp_path), steps=2)
    model.to("cuda:0")
    x = torch.randn(BATCH, DIM, device="cuda:0")
    model(x).sum().backward()
    passes = model_passes(events)
    assert passes[-1]["gpus"] == ("cuda:0",) and not any(p["moved"] for p in passes), passes
    assert first_collapse(events) is None, (
        f"expected no collapse for a model moved by main(); observed {first_collapse(events)}")


def test_a_pass_whose_layers_ran_unseen_is_not_judged():
    """A forward that calls F.linear on the weights runs no layer module: its passes carry no
    `layer_devices`, and nothing is told of them."""
    events = [{"event": "forward", "module": "LargeLinearModelMP", "model": 1, "n": n,
               "grad": True, "thread": "MainThread"} for n in (1, 2)]
    events = [events[0], {"event": "forward_out", "thread": "MainThread",
                          "layer_devices": ["cuda:0", "cuda:1"]},
              events[1], {"event": "forward_out", "thread": "MainThread"}]
    assert [p["gpus"] for p in model_passes(events)] == [("cuda:0", "cuda:1"), None]
    assert first_collapse(events) is None


def test_task3_fails_on_every_node_of_two_gpus_or_more_where_the_own_run_collapsed():
    """Task 3's cases read the probe's layout and the own run's verdict: a layout the probe saw
    spread fails where the script's training collapsed it, saying both; one GPU is no case."""
    from grader.checks.test_hw3 import GPUsLeftIdle, spread_layout
    collapsed = ("in your script's own run with DEPTH=20 on 5 GPUs, its forward pass 1 ran the "
                 "layers on cuda:0, cuda:1, its pass 3 (a training step) on cuda:0 only")
    layouts = [{"kind": "layout", "gpus": 2, "depth": 4, "n_layers": 4, "distinct_layers": 4,
                "devices": ["cuda:0", "cuda:0", "cuda:1", "cuda:1"]},
               {"kind": "layout", "gpus": 1, "depth": 4, "n_layers": 4, "distinct_layers": 4,
                "devices": ["cuda:0"] * 4}]
    probe = (layouts, None)
    assert spread_layout(probe, 2, 4)[2] == [2, 2]   # the probe's calls alone: spread
    with pytest.raises(GPUsLeftIdle) as failure:
        spread_layout(probe, 2, 4, collapsed)
    assert failure.value.cause == "moved", failure.value.cause
    assert "its pass 3 (a training step) on cuda:0 only" in str(failure.value), str(failure.value)
    assert "layers 0-1 on cuda:0, layers 2-3 on cuda:1" in str(failure.value), str(failure.value)
    assert spread_layout(probe, 1, 4, collapsed)[2] == [4]   # one GPU: cuda:0 is every GPU
