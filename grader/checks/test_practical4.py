"""Practical 4: data and model parallelism as concepts (practical4/concepts.py).

PYTEST_DONT_REWRITE: the assertion messages are the feedback; pytest's rewriting would bury them.
"""
import re

import pytest

from grader.checks.practical_answers import answer_against, device_name
from grader.checks.support import close, explain, require_run

SCRIPT = "practical4/concepts.py"
BATCH, IN_DIM, HIDDEN, OUT_DIM = 64, 1000, 2000, 1000


@pytest.fixture(scope="module", autouse=True)
def start_runs(runs):
    runs.prefetch(dict(script=SCRIPT, gpus=2), dict(script=SCRIPT, gpus=1))


@pytest.fixture(scope="module")
def two_gpus(runs):
    return runs.script(SCRIPT, gpus=2)


def outputs(observation, rows):
    return [e for e in observation.of("forward_out")
            if e.get("thread") == "MainThread" and e.get("shape", [None])[0] == rows]


@pytest.mark.check("practical4.baseline_shape")
def test_baseline_output_shape(two_gpus):
    require_run(two_gpus)
    shapes = [e["shape"] for e in outputs(two_gpus, BATCH)]
    assert [BATCH, OUT_DIM] in shapes, explain(
        f"Part 1's model maps a batch of {BATCH} to an output of shape [{BATCH}, {OUT_DIM}]",
        f"full-batch outputs of shapes {shapes or 'none'}",
        "Part 1 of concepts.py: the baseline Linear(1000,2000)-ReLU-Linear(2000,1000)")


@pytest.mark.check("practical4.chunk_shapes")
def test_two_chunks_of_half_the_batch(two_gpus):
    require_run(two_gpus)
    halves = outputs(two_gpus, BATCH // 2)
    assert len(halves) >= 2 and all(e["shape"] == [BATCH // 2, OUT_DIM] for e in halves), explain(
        f"torch.chunk splits the batch of {BATCH} into 2 chunks of {BATCH // 2}, and the model "
        f"runs on each: two outputs of shape [{BATCH // 2}, {OUT_DIM}]",
        f"{len(halves)} forward pass(es) on {BATCH // 2} rows "
        f"(all outputs: {[e['shape'] for e in two_gpus.of('forward_out')]})",
        "Part 2: `torch.chunk(x, 2, dim=0)` and one forward pass per chunk")


@pytest.mark.check("practical4.chunks_equal_full")
def test_concatenated_chunks_equal_full_output(two_gpus):
    require_run(two_gpus)
    halves = outputs(two_gpus, BATCH // 2)[:2]
    fulls = [e for e in outputs(two_gpus, BATCH) if e["shape"] == [BATCH, OUT_DIM]]
    assert len(halves) == 2 and fulls, explain(
        "Part 2 runs the model on the full batch and on its two chunks",
        f"{len(fulls)} full-batch and {len(halves)} chunk forward passes")
    combined = halves[0]["sum"] + halves[1]["sum"]
    assert any(close(combined, full["sum"], rel=1e-4, abs_=1e-3) for full in fulls), explain(
        "torch.cat of the two chunk outputs equals the full-batch output (same model, same data)",
        f"the chunk outputs add up to {combined:.6g}, the full outputs to "
        f"{[round(f['sum'], 6) for f in fulls]}",
        "Part 2: run the *same* model (same weights) on each chunk of the *same* batch")


def part3(observation):
    """The Part 3 layers: parameters of Linear(1000,2000) and Linear(2000,1000) by device."""
    first = IN_DIM * HIDDEN + HIDDEN
    second = HIDDEN * OUT_DIM + OUT_DIM
    found = {}
    for event in observation.of("placement"):
        for layer in event.get("layers", []):
            if layer.get("params") == first:
                found.setdefault("layer1", set()).add(str(layer.get("device")))
            elif layer.get("params") == second:
                found.setdefault("layer2", set()).add(str(layer.get("device")))
    return found


@pytest.mark.check("practical4.mp_layer_devices")
def test_model_parallel_layers_on_two_gpus(two_gpus):
    require_run(two_gpus)
    found = part3(two_gpus)
    assert "cuda:0" in found.get("layer1", set()) and "cuda:1" in found.get("layer2", set()), explain(
        "in Part 3, layer 1 (Linear 1000->2000) on cuda:0 and layer 2 (Linear 2000->1000) on cuda:1",
        f"layer 1 on {sorted(found.get('layer1', [])) or 'no GPU seen'}, layer 2 on "
        f"{sorted(found.get('layer2', [])) or 'no GPU seen'}",
        "Part 3: `.to('cuda:0')` for the first layer and `.to('cuda:1')` for the second")


@pytest.mark.check("practical4.mp_one_transfer")
def test_one_activation_transfer(two_gpus):
    require_run(two_gpus)
    moves = [e for e in two_gpus.copies() if e.get("src") == "cuda:0" and e.get("dst") == "cuda:1"
             and e.get("shape") == [BATCH, HIDDEN]]
    assert len(moves) == 1, explain(
        f"exactly one move of the activation [{BATCH}, {HIDDEN}] from cuda:0 to cuda:1 per "
        "forward pass of Part 3",
        f"{len(moves)} such move(s)" + (f" at {', '.join(str(m.get('site')) for m in moves)}"
                                       if moves else ""),
        "Part 3: `h = h.to('cuda:1')` between the two layers, once")


@pytest.mark.check("practical4.mp_output_shape")
def test_model_parallel_output_on_second_gpu(two_gpus):
    require_run(two_gpus)
    final = [e for e in outputs(two_gpus, BATCH) if e.get("device") == "cuda:1"]
    assert any(e["shape"] == [BATCH, OUT_DIM] for e in final), explain(
        f"Part 3's output of shape [{BATCH}, {OUT_DIM}] comes out on cuda:1",
        f"outputs on cuda:1: {[e['shape'] for e in final] or 'none'}",
        "Part 3: the second layer runs on cuda:1 and produces the output")


@pytest.mark.check("practical4.one_gpu_message")
def test_one_gpu_branch(runs):
    one = runs.script(SCRIPT, gpus=1)
    require_run(one)
    assert "at least 2 gpus" in one.stdout.lower(), explain(
        "with a single GPU the script prints 'Model parallelism requires at least 2 GPUs' and "
        "skips Part 3",
        f"output ended with: {one.stdout.strip().splitlines()[-1:] or 'nothing'}",
        "the `torch.cuda.device_count() < 2` branch before Part 3")


# -- What the answer sheet says, against what the code does -----------------------------------
# practical4/answers.yaml is compared with the grader's run of the same concepts.py on 2 GPUs.
SHEET = "practical4/answers.yaml"


def full_output_shape(observation):
    """Part 1: the shape of the first full-batch output (the baseline runs first)."""
    first = next((e for e in observation.of("forward_out") if e.get("thread") == "MainThread"),
                 None)
    return list(first["shape"]) if first and first.get("shape") else None


def chunk_input_shapes(observation):
    """Part 2: the input shapes of the forward passes on fewer rows than the batch."""
    return [list(e["batch"]) for e in observation.of("forward")
            if e.get("thread") == "MainThread" and e.get("batch") and e["batch"][0] < BATCH]


def outputs_equal(observation):
    """Part 2's `outputs equal:` as the script printed it; from the outputs' sums if it did
    not print it (None when neither is there)."""
    printed = re.findall(r"outputs equal:\s*(True|False)", observation.stdout)
    if printed:
        return printed[-1] == "True"
    halves = outputs(observation, BATCH // 2)[:2]
    fulls = outputs(observation, BATCH)
    if len(halves) < 2 or not fulls:
        return None
    return close(halves[0]["sum"] + halves[1]["sum"], fulls[0]["sum"], rel=1e-4, abs_=1e-3)


def gpu_to_gpu_activation_moves(observation):
    """Moves of an activation (BATCH rows) between two different GPUs during the forward
    passes: before the run's last forward pass starts (a move of the final output after it is
    no transfer between layers)."""
    events = [e for e in observation.events if e.get("rank", 0) == 0]
    last = max((i for i, e in enumerate(events) if e.get("event") == "forward"), default=-1)
    return [e for e in events[:last]
            if (e.get("event") == "transfer" or (e.get("event") == "to" and e.get("copied")))
            and str(e.get("src", "")).startswith("cuda")
            and str(e.get("dst", "")).startswith("cuda")
            and e.get("src") != e.get("dst") and (e.get("shape") or [None])[0] == BATCH]


def part3_only(observation):
    """The devices of Part 3's own layer1 and layer2: placements of modules holding one of the
    two layers (Part 1's baseline holds both, on one device)."""
    first = IN_DIM * HIDDEN + HIDDEN
    second = HIDDEN * OUT_DIM + OUT_DIM
    found = {}
    for event in observation.of("placement"):
        sizes = {layer.get("params") for layer in event.get("layers", [])}
        if {first, second} <= sizes:
            continue
        for layer in event.get("layers", []):
            name = {first: "layer1", second: "layer2"}.get(layer.get("params"))
            if name:
                device = layer.get("device")
                found.setdefault(name, set()).update(
                    map(str, device) if isinstance(device, list) else [str(device)])
    return found


@pytest.mark.check("practical4.output_shape_reported")
def test_reported_output_shape(two_gpus, answers, agree):
    truth = full_output_shape(two_gpus)
    agree("part1.output_shape", answer_against(answers, "part1.output_shape", two_gpus), truth,
          f"makes a Part 1 output of shape {truth}")


@pytest.mark.check("practical4.chunk_shapes_reported")
def test_reported_chunk_shapes(two_gpus, answers, agree):
    truth = chunk_input_shapes(two_gpus)
    agree("part2.chunk_shapes", answer_against(answers, "part2.chunk_shapes", two_gpus), truth,
          f"runs the model on chunks of shapes {truth or 'none'} in Part 2",
          expected=f"{truth} (one shape per chunk, in order)")


@pytest.mark.check("practical4.outputs_equal_reported")
def test_reported_outputs_equal(two_gpus, answers, agree):
    value = answer_against(answers, "part2.outputs_equal", two_gpus)
    truth = outputs_equal(two_gpus)
    agree("part2.outputs_equal", value, truth,
          "prints 'Part 2: outputs equal: " + str(truth) + "'" if truth is not None
          else "shows no comparison of the chunk outputs with the full output",
          expected={True: "yes", False: "no"}.get(truth, "what your code shows"))


@pytest.mark.check("practical4.layer_devices_reported")
@pytest.mark.parametrize("layer", ["layer1", "layer2"])
def test_reported_layer_devices(two_gpus, answers, agree, layer):
    qid = f"part3.{layer}_device"
    value = answer_against(answers, qid, two_gpus)
    seen = sorted(part3_only(two_gpus).get(layer, set()))
    truth = seen[0] if len(seen) == 1 else seen
    name = "Linear(1000, 2000)" if layer == "layer1" else "Linear(2000, 1000)"
    agree(qid, value, truth, f"puts {layer} ({name}) on {', '.join(seen) or 'no GPU'}",
          expected=f"{truth} (a device written like cuda:N)" if isinstance(truth, str) else None,
          compare_as=device_name(value) or value)


@pytest.mark.check("practical4.transfers_reported")
def test_reported_transfers_per_forward(two_gpus, answers, agree):
    value = answer_against(answers, "part3.transfers_per_forward", two_gpus)
    moves = gpu_to_gpu_activation_moves(two_gpus)
    agree("part3.transfers_per_forward", value, len(moves),
          f"moves the activation between GPUs {len(moves)} time(s) in Part 3's forward pass"
          + (" (" + ", ".join(f"{m['src']} -> {m['dst']}" for m in moves) + ")" if moves else ""))
