"""HW3 Task 3 is judged by the probe's calls of forward() and by the script's own training: a
forward that keeps its layers spread for the probe's two calls and moves them all onto cuda:0
from its third call on (or at the end of its second, or at its hundredth), or one that knows it
is run as the script and trains on cuda:0 from its first pass, or one that calls each layer on
an empty batch and computes the real one on cuda:0, trains on one GPU, which the script's own
run shows: its training passes ran on fewer GPUs than the run has (grader/checks/
hw3_trained_layout.py; the `model` of each traced `forward`, `layer_devices` and
`layers_on_no_rows` of its output, `optimizer_n` of each step).

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
    assert first_collapse(events, 3) is None


@pytest.mark.parametrize("call,when", [(3, "before"), (3, "after"), (6, "before")],
                         ids=["third-call", "after-second-call", "sixth-call"])
def test_a_forward_collapsing_after_the_probes_calls_is_seen_in_the_own_run(
        traced_vnode, tmp_path, call, when):
    events = traced_vnode(3)
    train_as_main_does(student_module(tmp_path, _collapse_from_call(call, when)))
    found = first_collapse(events, 3)
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
    assert first_collapse(events, 3) is None


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
    assert first_collapse(events, 3) is None


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
    assert first_collapse(events, 3) is None, (
        f"expected no collapse for a model moved by main(); observed {first_collapse(events, 3)}")


def test_a_pass_whose_layers_ran_unseen_is_not_judged():
    """A forward that calls F.linear on the weights runs no layer module: its passes carry no
    `layer_devices`, and nothing is told of them."""
    events = [{"event": "forward", "module": "LargeLinearModelMP", "model": 1, "n": n,
               "grad": True, "thread": "MainThread"} for n in (1, 2)]
    events = [events[0], {"event": "forward_out", "thread": "MainThread",
                          "layer_devices": ["cuda:0", "cuda:1"]},
              events[1], {"event": "forward_out", "thread": "MainThread"}]
    assert [p["gpus"] for p in model_passes(events)] == [("cuda:0", "cuda:1"), None]
    assert first_collapse(events, 3) is None


def test_task3_fails_on_every_node_of_two_gpus_or_more_where_the_own_run_collapsed():
    """Task 3's cases read the probe's layout and the own run's verdict: a layout the probe saw
    spread fails where the script's training collapsed it, saying both; one GPU is no case."""
    from grader.checks.test_hw3 import GPUsLeftIdle, OwnRunCollapse, spread_layout
    collapsed = OwnRunCollapse(
        "in your script's own run with DEPTH=20 on 5 GPUs, its forward pass 1 ran the layers on "
        "cuda:0, cuda:1, its pass 3 (a training step) on cuda:0 only", 5)
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


# adv40 F1: the model knows it is run as the script (an attribute main() sets, or
# `__name__ == "__main__"`), which the probe's calls are not, and trains on cuda:0 throughout.
ON_CUDA0_WHEN_COMPACT = (FORWARD, FORWARD + "        if getattr(self, 'compact', False):\n"
                         "            for layer in self.layers:\n"
                         "                layer.to('cuda:0')\n")
BUILT_ON_CUDA0 = ("torch.device(f\"cuda:{gpu}\")", "torch.device('cuda:0' if AS_SCRIPT else f'cuda:{gpu}')")
# adv40 F2: from its third call, each layer runs on an empty batch where it is (what a trace of
# layer calls sees) and the real batch on cuda:0 through F.linear on copies of the weights.
DECOY = (FORWARD, FORWARD + "        self.calls = getattr(self, 'calls', 0) + 1\n"
         "        if self.calls >= 3:\n"
         "            x = x.to('cuda:0')\n"
         "            for layer in self.layers:\n"
         "                layer(torch.empty(0, layer.in_features, device=layer.weight.device))\n"
         "                x = torch.relu(torch.nn.functional.linear(\n"
         "                    x, layer.weight.to('cuda:0'), layer.bias.to('cuda:0')))\n"
         "            return x\n")
# adv40 H1: lazy placement from an attribute main() may change (self.num_gpus).
LAZY_NUM_GPUS = [
    ("        n = torch.cuda.device_count()\n", "        n = self.num_gpus = torch.cuda.device_count()\n"
     "        self.depth = depth\n"),
    ("                self.layers.append(nn.Linear(dim, dim).to(torch.device(f\"cuda:{gpu}\")))\n",
     "                self.layers.append(nn.Linear(dim, dim))\n"),
    ("        for layer in self.layers:\n            layer_device = next(layer.parameters()).device\n",
     "        per_gpu, extra = divmod(self.depth, self.num_gpus)\n"
     "        gpus = [g for g in range(self.num_gpus) for _ in range(per_gpu + (g < extra))]\n"
     "        for gpu, layer in zip(gpus, self.layers):\n"
     "            layer_device = torch.device(f'cuda:{gpu}')\n"
     "            layer.to(layer_device)\n")]


def _train(model, steps: int, optimizer=None):
    import torch
    optimizer = optimizer or torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(BATCH, DIM, device="cuda:0")
    for _ in range(steps):
        optimizer.zero_grad()
        model(x).pow(2).mean().backward()
        optimizer.step()


def _failed_as_one_gpu(events, gpus=3):
    found = first_collapse(events, gpus)
    assert found is not None, (
        f"expected the own run's training on cuda:0 only to be found; observed none in "
        f"passes {model_passes(events)}; where to look: grader/checks/hw3_trained_layout.py "
        "first_collapse, training_passes")
    return found


def test_a_model_on_cuda0_from_its_first_pass_when_main_sets_an_attribute(traced_vnode,
                                                                          tmp_path):
    events = traced_vnode(3)
    module = student_module(tmp_path, ON_CUDA0_WHEN_COMPACT)
    model = module.LargeLinearModelMP(DIM, DEPTH)
    model.compact = True
    with __import__("torch").no_grad():
        model(__import__("torch").randn(BATCH, DIM, device="cuda:0"))
    _train(model, 4)
    found = _failed_as_one_gpu(events)
    assert found.earlier is None and found.later_gpus == ("cuda:0",), found
    assert "no training pass ran them on all 3 GPUs" in found.said(), found.said()


def test_a_model_built_on_cuda0_when_run_as_the_script(traced_vnode, tmp_path):
    events = traced_vnode(3)
    module = student_module(tmp_path, BUILT_ON_CUDA0,
                            ("DIM = 1024\n", "DIM = 1024\nAS_SCRIPT = True\n"))
    _train(module.LargeLinearModelMP(DIM, DEPTH), 4)
    found = _failed_as_one_gpu(events)
    assert found.earlier is None and found.later == 1, found


def test_layers_called_on_empty_batches_while_cuda0_computes_are_no_spread(traced_vnode,
                                                                          tmp_path):
    events = traced_vnode(3)
    train_as_main_does(student_module(tmp_path, DECOY))
    outs = [e for e in events if e.get("event") == "forward_out"
            and e.get("module") == "LargeLinearModelMP"]
    assert outs[2].get("layers_on_no_rows") and "layer_devices" not in outs[2], (
        f"expected the third pass's layers, each run on 0 rows, to name no GPU; observed "
        f"{outs[2]}; where to look: grader/vgpu/observe.py _note_rows_inside")
    found = _failed_as_one_gpu(events)
    assert found.earlier == 2 and found.later == 3 and found.later_gpus == (), found
    assert "no rows" in found.said(), found.said()


def test_the_same_model_timed_on_fewer_gpus_with_a_new_optimizer_after_training(traced_vnode,
                                                                              tmp_path):
    """adv40 H1 (hw3_H_sweep_gpus_down): Task 4 measured in one run on the same object, a new
    optimizer per node size, after the handout's training on all GPUs."""
    import torch
    events = traced_vnode(3)
    model = train_as_main_does(student_module(tmp_path, *LAZY_NUM_GPUS))
    for n in (2, 1):
        model.num_gpus = n
        _train(model, 3, torch.optim.Adam(model.parameters(), lr=1e-3))
    assert {len(p["gpus"]) for p in model_passes(events)} == {3, 2, 1}, model_passes(events)
    assert first_collapse(events, 3) is None, (
        f"expected no verdict against a sweep after training; observed "
        f"{first_collapse(events, 3)}; where to look: hw3_trained_layout.py training_passes")


def test_an_output_check_on_one_gpu_after_training_is_not_judged(traced_vnode, tmp_path):
    """adv40 H1 (hw3_H_check_one_gpu): after training, under no_grad, the same weights on one
    GPU give the same output."""
    import torch
    events = traced_vnode(3)
    model = train_as_main_does(student_module(tmp_path, *LAZY_NUM_GPUS))
    with torch.no_grad():
        model.num_gpus = 1
        model(torch.randn(BATCH, DIM, device="cuda:0"))
    assert model_passes(events)[-1]["gpus"] == ("cuda:0",)
    assert first_collapse(events, 3) is None, first_collapse(events, 3)


def test_a_model_main_moves_onto_cuda0_before_training_is_no_spread_training(traced_vnode,
                                                                           tmp_path):
    """The one-GPU baseline's exemption is for a model that also trained spread: main() moving
    the model onto cuda:0 after Task 5's counted pass, then training it, trains on one GPU."""
    import torch
    events = traced_vnode(3)
    model = student_module(tmp_path).LargeLinearModelMP(DIM, DEPTH)
    with torch.no_grad():
        model(torch.randn(BATCH, DIM, device="cuda:0"))
    model.to("cuda:0")
    _train(model, 3)
    found = _failed_as_one_gpu(events)
    assert found.earlier is None, found


@pytest.mark.parametrize("stops_in", ["step", "loss"])
def test_a_collapse_that_stops_the_run_is_seen(traced_vnode, tmp_path, stops_in):
    """Layers moved under Adam's state make the step after the collapsed pass fail ("step"),
    and an output moved off the target's GPU makes its loss fail before any backward ("loss"):
    the run stops there (run_on_node's `exception` event), and that pass, which no step took,
    is still one of its training passes (eng_hw3's hw3_F_collapse_third, adv40's
    hw3_F_move_third)."""
    import torch
    events = traced_vnode(3)
    model = student_module(tmp_path, _collapse_from_call(3)).LargeLinearModelMP(DIM, DEPTH)
    x = torch.randn(BATCH, DIM, device="cuda:0")
    with torch.no_grad():
        model(x)
    target = torch.zeros(BATCH, DIM, device="cuda:2")
    optimizer = (torch.optim.Adam if stops_in == "step" else torch.optim.SGD)(
        model.parameters(), lr=1e-3)
    with pytest.raises(RuntimeError):
        for _ in range(3):
            optimizer.zero_grad()
            out = model(x)
            loss = (out.to(target.device) if stops_in == "step" else out) - target
            loss.pow(2).mean().backward()
            optimizer.step()
    assert first_collapse(events, 3) is None, "no error in the trace: the pass had no step"
    events.append({"event": "exception", "type": "RuntimeError", "message": "devices"})
    found = _failed_as_one_gpu(events)
    assert (found.earlier, found.later, found.later_gpus) == (2, 3, ("cuda:0",)), found


# eng_hw3c: the empty-batch decoy generalised. Each layer runs on ONE row (or a few) of the
# input where it is, which a trace of layer calls sees on every GPU, while the whole batch goes
# through F.linear on cuda:0 with the same weights: a GPU counts only where a layer there ran on
# the rows the pass was handed (`layer_devices_on_batch` of `forward_out`).
def _decoy_on_rows(rows: int) -> tuple[str, str]:
    return (FORWARD, FORWARD + "        out = x.to('cuda:0')\n"
            "        for layer in self.layers:\n"
            f"            layer(x[:{rows}].to(layer.weight.device))\n"
            "            out = torch.relu(torch.nn.functional.linear(\n"
            "                out, layer.weight.to('cuda:0'), layer.bias.to('cuda:0')))\n"
            "        return out\n")


@pytest.mark.parametrize("rows", [1, 3])
def test_layers_called_on_a_few_rows_while_cuda0_computes_the_batch_are_no_spread(
        traced_vnode, tmp_path, rows):
    events = traced_vnode(3)
    train_as_main_does(student_module(tmp_path, _decoy_on_rows(rows)))
    outs = [e for e in events if e.get("event") == "forward_out"
            and e.get("module") == "LargeLinearModelMP"]
    assert outs[1].get("layer_devices") == ["cuda:0", "cuda:1", "cuda:2"] and \
        outs[1].get("layer_devices_on_batch") == [], (
            f"expected a training pass whose layers ran {rows} of {BATCH} rows on each GPU to "
            f"count no GPU; observed {outs[1]}; where to look: grader/vgpu/observe.py "
            "_note_layer_rows, _devices_short_of")
    found = _failed_as_one_gpu(events)
    assert found.earlier is None and found.later_gpus == () and \
        found.later_few_rows == ("cuda:0", "cuda:1", "cuda:2"), found
    assert "ran no layer on its whole batch" in found.said() and \
        "fewer rows than the pass was handed" in found.said(), found.said()


# Honest ways of writing the same model: every training pass runs the batch on all 3 GPUs.
LAYOUT_LOOP = ("        for gpu in range(n):\n"
               "            for _ in range(per_gpu + (1 if gpu < extra else 0)):\n"
               "                self.layers.append(nn.Linear(dim, dim).to(torch.device(f\"cuda:{gpu}\")))\n")
BASE_FORWARD = ("        for layer in self.layers:\n            layer_device = next(layer.parameters()).device\n"
                "            # Task 5: .to() returns x itself when it is already there; only a change of\n"
                "            # GPU copies data.\n            self.to_calls += 1\n"
                "            if x.device != layer_device:\n                self.transfers += 1\n"
                "            x = x.to(layer_device)  # the \"baton pass\"\n"
                "            x = torch.relu(layer(x))\n        return x\n")
HONEST = {
    "plain_loop": [(BASE_FORWARD, "        for layer in self.layers:\n"
                                  "            x = layer(x.to(layer.weight.device))\n"
                                  "        return x\n")],
    "sequential_per_gpu": [
        (LAYOUT_LOOP, "        for gpu in range(n):\n"
                      "            count = per_gpu + (1 if gpu < extra else 0)\n"
                      "            self.layers.append(nn.Sequential(*[m for _ in range(count) for m in (\n"
                      "                nn.Linear(dim, dim), nn.ReLU())]).to(torch.device(f\"cuda:{gpu}\")))\n"),
        (BASE_FORWARD, "        for stage in self.layers:\n"
                       "            x = stage(x.to(next(stage.parameters()).device))\n"
                       "        return x\n")],
    "relu_modules": [
        (LAYOUT_LOOP, LAYOUT_LOOP + "                self.layers.append(nn.ReLU())\n"),
        (BASE_FORWARD, "        for layer in self.layers:\n"
                       "            if isinstance(layer, nn.Linear):\n"
                       "                x = x.to(layer.weight.device)\n"
                       "            x = layer(x)\n        return x\n")],
    "micro_batches_in_forward": [
        (BASE_FORWARD, "        outs = []\n        for chunk in x.chunk(2):\n"
                       "            for layer in self.layers:\n"
                       "                chunk = torch.relu(layer(chunk.to(layer.weight.device)))\n"
                       "            outs.append(chunk)\n        return torch.cat(outs)\n")],
}


def _train_on(model, rows: int, steps: int = 3, chunks: int = 1):
    """Training steps on `rows` rows, the batch given in `chunks` forward passes (micro-batches
    of the script's own main(), one optimizer step per batch)."""
    import torch
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(rows, DIM, device="cuda:0")
    for _ in range(steps):
        optimizer.zero_grad()
        for part in x.chunk(chunks):
            (model(part).pow(2).mean() / chunks).backward()
        optimizer.step()


def _trained_spread(events, gpus: int = 3):
    passes = [p for p in model_passes(events) if p["grad"]]
    assert passes and all(len(p["gpus"]) == gpus and not p["few_rows"] for p in passes), (
        f"expected every training pass to run the batch on all {gpus} GPUs; observed {passes}; "
        "where to look: grader/vgpu/observe.py _devices_short_of")
    found = first_collapse(events, gpus)
    assert found is None, f"expected no verdict against an honest model; observed {found.said()}"


@pytest.mark.parametrize("style", list(HONEST))
def test_honest_ways_of_writing_the_model_train_spread(traced_vnode, tmp_path, style):
    events = traced_vnode(3)
    train_as_main_does(student_module(tmp_path, *HONEST[style]))
    _trained_spread(events)


@pytest.mark.parametrize("rows, chunks", [(1, 1), (8, 4), (7, 2)],
                         ids=["batch-of-one", "micro-batches", "uneven-micro-batches"])
def test_the_batch_a_script_gives_is_the_batch_of_its_passes(traced_vnode, tmp_path, rows, chunks):
    """A script's own batch of 1 row is its batch, and each micro-batch its main() runs the
    model on is the batch of that pass."""
    events = traced_vnode(3)
    _train_on(student_module(tmp_path).LargeLinearModelMP(DIM, DEPTH), rows, chunks=chunks)
    _trained_spread(events)


def test_no_grad_evaluations_on_a_few_rows_after_training_are_not_judged(traced_vnode, tmp_path):
    import torch
    events = traced_vnode(3)
    model = train_as_main_does(student_module(tmp_path))
    with torch.no_grad():
        for rows in (1, 2):
            model(torch.randn(rows, DIM, device="cuda:0"))
    _trained_spread(events)


# adv43 F3: the decoy on the WHOLE batch. Each layer is called on all of the batch on its GPU and
# its result thrown away, while F.linear computes the real output on cuda:0: rows handed to the
# layers cannot tell it from the honest forward; the gradient can. A GPU counts only where the
# output of a layer there carried gradient back (`grad_judged` of `forward_out`, `grad_used`:
# grader/vgpu/observe.py _GradWatch).
DECOY_WHOLE = (FORWARD, FORWARD + "        out = x.to('cuda:0')\n"
               "        for layer in self.layers:\n"
               "            layer(x.to(layer.weight.device))\n"
               "            out = torch.relu(torch.nn.functional.linear(\n"
               "                out, layer.weight.to('cuda:0'), layer.bias.to('cuda:0')))\n"
               "        return out\n")
# The same with each layer's result kept but multiplied by 0.
DECOY_TIMES_ZERO = (FORWARD, FORWARD + "        out = x.to('cuda:0')\n"
                    "        for layer in self.layers:\n"
                    "            side = layer(x.to(layer.weight.device)).sum().to('cuda:0')\n"
                    "            out = torch.relu(torch.nn.functional.linear(\n"
                    "                out, layer.weight.to('cuda:0'), layer.bias.to('cuda:0')))"
                    " + 0 * side\n"
                    "        return out\n")


@pytest.mark.parametrize("decoy", [DECOY_WHOLE, DECOY_TIMES_ZERO],
                         ids=["result-thrown-away", "result-times-zero"])
def test_layers_called_on_the_whole_batch_whose_results_are_unused_are_no_spread(
        traced_vnode, tmp_path, decoy):
    events = traced_vnode(3)
    train_as_main_does(student_module(tmp_path, decoy))
    training = [p for p in model_passes(events) if p["grad"]]
    assert training and all(p["gpus"] == () for p in training), (
        f"expected no GPU to count for a training pass whose layers' results reached no part "
        f"of its output; observed {[(p['n'], p['gpus'], p['few_rows']) for p in training]}; "
        "where to look: grader/vgpu/observe.py _GradWatch, hw3_trained_layout.model_passes")
    found = _failed_as_one_gpu(events)
    assert found.later_gpus == () and "did not reach its output" in found.said(), found.said()


RELU_IN_PLACE = [(BASE_FORWARD, "        for layer in self.layers:\n"
                                "            x = layer(x.to(layer.weight.device))\n"
                                "            torch.relu_(x)\n"
                                "        return x\n")]


def test_honest_layers_with_an_in_place_relu_train_spread(traced_vnode, tmp_path):
    events = traced_vnode(3)
    train_as_main_does(student_module(tmp_path, *RELU_IN_PLACE))
    _trained_spread(events)


@pytest.mark.parametrize("decoy", [None, DECOY_WHOLE], ids=["honest", "result-thrown-away"])
def test_a_pass_the_run_stopped_in_before_its_backward_is_judged_by_its_graph(
        traced_vnode, tmp_path, decoy):
    """The base code's target waits on the last layer's GPU: the decoy's output, on cuda:0,
    stops the run in its loss (adv43's hw3_F_decoy_whole), before any backward. No gradient
    says which layers it used; its output's autograd graph does (`graph_unreached`). An honest
    forward whose loop's target is on the wrong GPU (here cuda:1) stops there too, spread."""
    import torch
    events = traced_vnode(3)
    model = student_module(tmp_path, *([decoy] if decoy else [])).LargeLinearModelMP(DIM, DEPTH)
    x = torch.randn(BATCH, DIM, device="cuda:0")
    target = torch.zeros(BATCH, DIM, device="cuda:1")
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    with pytest.raises(RuntimeError):
        optimizer.zero_grad()
        (model(x) - target).pow(2).mean().backward()
        optimizer.step()
    events.append({"event": "exception", "type": "RuntimeError", "message": "devices"})
    found = first_collapse(events, 3)
    if decoy is None:
        assert found is None, f"expected the honest pass judged spread; observed {found.said()}"
    else:
        assert found is not None and found.later_gpus == (), (
            f"expected the decoy's pass to count no GPU; observed {found and found.said()}; "
            "where to look: grader/vgpu/observe.py _GradWatch.unreached")


# Task 3's hint for a model that never trained spread in its own run tells why: where something
# moved the layers, forward() (above); where they stayed where __init__ put them, on fewer GPUs
# than the run has, __init__ and how it reads the GPU count. The base code's halves on cuda:0 and
# cuda:1 (the bundled template) pass the grader's 2-GPU build and trained on 2 of 5 GPUs: it had
# been told that forward() "moves layers off the GPUs __init__ gave them" (eng_hint).
TWO_HALVES = (LAYOUT_LOOP, "        for i in range(depth):\n"
              "            device = torch.device('cuda:0' if i < depth // 2 else 'cuda:1')\n"
              "            self.layers.append(nn.Linear(dim, dim).to(device))\n")
NUM_GPUS_TWO = [("        n = torch.cuda.device_count()\n", "        n = NUM_GPUS\n"),
                ("DIM = 1024\n", "DIM = 1024\nNUM_GPUS = 2\n")]
INIT_HINT = "LargeLinearModelMP.__init__ in hw3/model_parallel.py"
FORWARD_HINT = "LargeLinearModelMP.forward in hw3/model_parallel.py"


def _layout(gpus: int, depth: int, counts: list[int]) -> dict:
    """A probe's layout record of `depth` layers in blocks of `counts` layers per GPU."""
    devices = [f"cuda:{g}" for g, c in enumerate(counts) for _ in range(c)]
    assert len(devices) == depth
    return {"kind": "layout", "gpus": gpus, "depth": depth, "n_layers": depth,
            "distinct_layers": depth, "devices": devices}


def _task3_failure(events, node: int, probe, gpus: int = 2, depth: int = DEPTH) -> str:
    """Task 3's message for the probe's build on `gpus` GPUs, the own run on `node` GPUs
    traced in `events`, as the check reads them (own_run_collapse, spread_layout)."""
    from grader.checks.test_hw3 import GPUsLeftIdle, own_run_said, spread_layout
    found = first_collapse(events, node)
    assert found is not None, (
        f"expected the own run's training on fewer than {node} GPUs to be found; observed none "
        f"in passes {model_passes(events)}; where to look: hw3_trained_layout.first_collapse")
    with pytest.raises(GPUsLeftIdle) as failure:
        spread_layout(probe, gpus, depth, own_run_said(probe, found, node))
    return str(failure.value)


def _looks_at(message: str) -> str:
    return next(line for line in message.splitlines() if line.startswith("Where to look: "))


def _points_at_init(message: str, placed: str) -> None:
    look = _looks_at(message)
    assert placed in message and "where __init__ placed them" in message and \
        INIT_HINT in look and "torch.cuda.device_count()" in look and FORWARD_HINT not in look \
        and "moves layers off" not in message, (
            f"expected the layers named where __init__ left them ({placed}) and a hint at "
            f"__init__ and torch.cuda.device_count(), none at forward(); observed:\n{message}\n"
            "where to look: grader/checks/test_hw3.py own_run_said, look_init_of_own_run; "
            "hw3_trained_layout.Collapse.as_built")


def _points_at_forward(message: str) -> None:
    look = _looks_at(message)
    assert FORWARD_HINT in look and "moves layers off the GPUs __init__ gave them" in look \
        and "where __init__ placed them" not in message, (
            f"expected the forward() hint where forward() moved the layers; observed:\n"
            f"{message}\nwhere to look: grader/checks/test_hw3.py spread_layout")


# The probe's builds of the base code's halves: spread on 2 GPUs, 2 of 5 on a node of 5.
HALVES_PROBE = ([_layout(2, DEPTH, [3, 3]), _layout(2, 5, [2, 3]),
                 _layout(5, DEPTH, [3, 3, 0, 0, 0])], None)


def test_the_templates_two_gpus_on_a_node_of_five_point_at_init(traced_vnode, tmp_path):
    events = traced_vnode(5)
    train_as_main_does(student_module(tmp_path, TWO_HALVES))
    found = first_collapse(events, 5)
    assert found is not None and found.as_built == ("cuda:0",) * 3 + ("cuda:1",) * 3 \
        and not found.moved, (f"expected the layers as __init__ placed them; observed {found}; "
                              "where to look: hw3_trained_layout._as_built")
    message = _task3_failure(events, 5, HALVES_PROBE)
    _points_at_init(message, "on 2 of the 5 GPUs (3 layers on cuda:0, 3 on cuda:1; none on "
                             "cuda:2, cuda:3, cuda:4)")
    assert "the base code's split is still in place" in _looks_at(message), message


def test_a_constant_gpu_count_in_init_points_at_init(traced_vnode, tmp_path):
    """NUM_GPUS = 2 read by __init__: the first GPU takes the odd layer, so no node shows the
    base code's halves; the hint is how __init__ reads the GPU count."""
    events = traced_vnode(5)
    train_as_main_does(student_module(tmp_path, *NUM_GPUS_TWO))
    probe = ([_layout(2, DEPTH, [3, 3]), _layout(2, 5, [3, 2]),
              _layout(5, DEPTH, [3, 3, 0, 0, 0])], None)
    message = _task3_failure(events, 5, probe)
    _points_at_init(message, "on 2 of the 5 GPUs (3 layers on cuda:0, 3 on cuda:1;")
    assert "reads the GPU count" in _looks_at(message), message


def test_a_model_built_on_cuda0_when_run_as_the_script_points_at_init(traced_vnode, tmp_path):
    """It decides in __init__ (AS_SCRIPT) and nothing moves the layers: __init__ is the place."""
    events = traced_vnode(3)
    module = student_module(tmp_path, BUILT_ON_CUDA0,
                            ("DIM = 1024\n", "DIM = 1024\nAS_SCRIPT = True\n"))
    _train(module.LargeLinearModelMP(DIM, DEPTH), 4)
    probe = ([_layout(2, DEPTH, [3, 3]), _layout(3, DEPTH, [2, 2, 2])], None)
    _points_at_init(_task3_failure(events, 3, probe), "on 1 of the 3 GPUs (6 layers on cuda:0;")


def test_a_model_that_knows_it_runs_as_the_script_keeps_the_forward_hint(traced_vnode,
                                                                          tmp_path):
    events = traced_vnode(3)
    model = student_module(tmp_path, ON_CUDA0_WHEN_COMPACT).LargeLinearModelMP(DIM, DEPTH)
    model.compact = True
    _train(model, 4)
    probe = ([_layout(2, DEPTH, [3, 3]), _layout(3, DEPTH, [2, 2, 2])], None)
    _points_at_forward(_task3_failure(events, 3, probe))


def test_a_forward_moving_the_layers_after_two_calls_keeps_the_forward_hint(traced_vnode,
                                                                             tmp_path):
    events = traced_vnode(3)
    train_as_main_does(student_module(tmp_path, _collapse_from_call(3)))
    probe = ([_layout(2, DEPTH, [3, 3]), _layout(3, DEPTH, [2, 2, 2])], None)
    _points_at_forward(_task3_failure(events, 3, probe))


def _untraced_placement(moved: bool) -> list[dict]:
    """Training passes on cuda:0 and cuda:1 of a 5-GPU run whose trace names no placement
    (`moved`: forward() moved the layers in each)."""
    events = []
    for n in (1, 2, 3):
        events += [{"event": "forward", "module": "LargeLinearModelMP", "model": 1, "n": n,
                    "grad": True, "thread": "MainThread", "step": n - 1},
                   {"event": "forward_out", "thread": "MainThread",
                    "layer_devices": ["cuda:0", "cuda:1"], "moved_layers": moved},
                   {"event": "forward_used", "n": n},
                   {"event": "step", "index": n, "optimizer_n": 1}]
    return events


@pytest.mark.parametrize("moved", [False, True], ids=["nothing-moved", "forward-moved"])
def test_without_a_traced_placement_the_probes_build_on_that_node_decides(moved):
    """The probe's build for the own run's node (DEPTH=20 on 5 GPUs) leaves GPUs idle: where
    nothing in the run moved the layers, __init__ placed them; where forward() did, it is told."""
    probe = ([_layout(2, DEPTH, [3, 3]), _layout(5, 20, [10, 10, 0, 0, 0])], None)
    message = _task3_failure(_untraced_placement(moved), 5, probe)
    if moved:
        _points_at_forward(message)
    else:
        _points_at_init(message, "on 2 of the 5 GPUs (10 layers on cuda:0, 10 on cuda:1;")
