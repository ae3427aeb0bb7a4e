"""Practical 4, Part 2: the chunks' outputs combined with numpy are their combination.

An honest student who brings the outputs to the host and joins them there
(`outputs = [model(c).detach().cpu().numpy() for c in chunks]; final = np.concatenate(outputs)`,
or np.vstack, compared by np.allclose, np.array_equal or `np.abs(a - b).max()`) lost
chunks_equal_full and outputs_equal_reported (2.4 points): the virtual GPUs see torch's ops
only, so no combination was recorded. numpy's joins of arrays that are the chunk outputs' host
copies are now recorded as torch.cat's are (grader/vgpu/numpy_joins.py): the same `concat`
record, each input written with the storage of the tensor its memory belongs to, so the same
verdict, row by row, decides. What numpy holds in memory of its own (a copy, an array of numpy's
own making) is no chunk's output: Part 1's output copied and cut and glued back in numpy, or
joined beside a chunk's output, combines nothing.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn as nn

from grader.checks import test_practical4 as p4
from grader.harness.observation import Observation

BATCH, IN, OUT = 64, 12, 5


def observed(events, batch=BATCH):
    return Observation("practical4/concepts.py", gpus=2, returncode=0, events=list(events),
                       stdout="")


def part1(batch=BATCH):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(IN, 16), nn.ReLU(), nn.Linear(16, OUT)).to("cuda:0")
    x = torch.randn(batch, IN).to("cuda:0")
    return model, x, model(x)


def on_host(tensor) -> np.ndarray:
    return tensor.detach().cpu().numpy()


def joined(style, model, x):
    """Part 2's chunk outputs brought to the host and joined by numpy the way `style` says."""
    chunks = torch.chunk(x, 2)
    if style == "no_grad":
        with torch.no_grad():
            outputs = [model(chunk).cpu().numpy() for chunk in chunks]
        return np.concatenate(outputs, axis=0)
    if style == "host_tensors":          # np.concatenate of the host tensors themselves
        return np.concatenate([model(chunk).detach().cpu() for chunk in chunks])
    if style == "to_cpu_then_detach":
        return np.vstack([model(chunk).to("cpu").detach().numpy() for chunk in chunks])
    outputs = [on_host(model(chunk)) for chunk in chunks]
    if style == "concatenate":
        return np.concatenate(outputs)
    if style == "vstack":
        return np.vstack(outputs)
    if style == "concat":                # numpy 2's alias
        return np.concat(outputs)
    if style == "stack":
        return np.stack(outputs).reshape(-1, OUT)
    if style == "append":
        return np.append(outputs[0], outputs[1], axis=0)
    raise ValueError(style)


STYLES = ["concatenate", "vstack", "concat", "stack", "append", "no_grad", "host_tensors",
          "to_cpu_then_detach"]


@pytest.mark.parametrize("style", STYLES)
def test_the_chunks_outputs_joined_by_numpy_are_the_combination(traced_vnode, style):
    events = traced_vnode(2)
    model, x, output = part1()
    final = joined(style, model, x)
    full = on_host(output)
    print(np.allclose(final, full, atol=1e-5), np.array_equal(final, full),
          np.abs(final - full).max())
    run = observed(events)
    verdict = p4.combined_against_full(run, BATCH)
    assert verdict is not None and verdict[0] is True, (style, verdict)
    assert "numpy." in verdict[1] and "test_practical4_numpy_combination.py" in verdict[1], verdict
    p4.combined_equals_full(run, BATCH)


def test_an_uneven_batch_joined_by_numpy_is_the_combination(traced_vnode):
    events = traced_vnode(2)
    model, x, output = part1(batch=63)
    np.concatenate([on_host(model(chunk)) for chunk in torch.chunk(x, 2)])
    p4.combined_equals_full(observed(events), 63)


def test_the_chunks_joined_in_reverse_by_numpy_are_said_out_of_order(traced_vnode):
    events = traced_vnode(2)
    model, x, output = part1()
    outputs = [on_host(model(chunk)) for chunk in torch.chunk(x, 2)]
    np.concatenate(outputs[::-1])
    verdict = p4.combined_against_full(observed(events), BATCH)
    assert verdict is not None and verdict[0] is False, verdict
    assert "not in order: its row 0 is the full output's row 32" in verdict[1], verdict


def test_chunks_run_but_never_joined_combine_nothing(traced_vnode):
    """The chunks' outputs brought to the host, then Part 1's output compared with itself."""
    events = traced_vnode(2)
    model, x, output = part1()
    outputs = [on_host(model(chunk)) for chunk in torch.chunk(x, 2)]
    full = on_host(output)
    assert outputs and np.allclose(full, on_host(output))
    run = observed(events)
    assert p4.combined_against_full(run, BATCH) is None
    with pytest.raises(AssertionError):
        p4.combined_equals_full(run, BATCH)


@pytest.mark.parametrize("style", ["split", "copied_halves", "beside_a_chunk"])
def test_part1s_output_joined_by_numpy_combines_nothing(traced_vnode, style):
    """Part 1's output cut and glued back in numpy (adv28's trick, in numpy), a numpy copy of it
    (memory of numpy's own, no chunk's output), or one half of it beside a chunk's output."""
    events = traced_vnode(2)
    model, x, output = part1()
    outputs = [on_host(model(chunk)) for chunk in torch.chunk(x, 2)]
    full = on_host(output)
    if style == "split":
        final = np.concatenate(np.split(full, 2))
    elif style == "copied_halves":
        final = np.vstack([full[:32].copy(), full[32:].copy()])
    else:
        final = np.concatenate([outputs[0], full[32:]])
    assert np.allclose(final, full, atol=1e-5)
    run = observed(events)
    assert p4.combined_against_full(run, BATCH) is None, style
    with pytest.raises(AssertionError) as failed:
        p4.combined_equals_full(run, BATCH)
    if style != "copied_halves":   # numpy's own memory is recorded nowhere
        assert "that are not the outputs of the model's passes on the chunks" in str(failed.value)


def test_numpys_own_arrays_are_not_recorded(traced_vnode):
    """A dataset built with numpy (no tensor's memory in it) spends no record of rows: the
    budget is the torch.cat's and the chunk outputs'."""
    events = traced_vnode(2)
    part1()
    for _ in range(10):
        np.concatenate([np.random.rand(BATCH, OUT), np.random.rand(BATCH, OUT)])
        np.vstack([np.zeros((2, 3)), np.ones((2, 3))])
    assert not [e for e in events if e["event"] == "concat"]


def test_numpys_joins_record_nothing_once_training_has_stepped(traced_vnode):
    """As torch.cat's: rows are recorded before the first optimizer step only."""
    events = traced_vnode(1)
    model, x, output = part1()
    torch.optim.SGD(model.parameters(), lr=0.1).step()
    np.concatenate([on_host(model(chunk)) for chunk in torch.chunk(x, 2)])
    assert not [e for e in events if e["event"] == "concat"]


def zero_chunk_outputs(model, x):
    """Part 2 forged (a red team's adv32 F1/F2): the model run on chunks of zeros, no row of
    the batch; their outputs are not Part 1's rows."""
    return [model(chunk) for chunk in torch.chunk(torch.zeros_like(x), 2)]


@pytest.mark.parametrize("join", ["numpy", "torch_cat"])
def test_chunk_outputs_overwritten_through_numpy_combine_nothing(traced_vnode, join):
    """adv32 F1: the chunk outputs' host arrays overwritten with Part 1's rows by numpy (whose
    writes are not recorded), then joined: the join's rows are not the chunk passes' outputs."""
    events = traced_vnode(2)
    model, x, output = part1()
    hosts = [out.detach().cpu() for out in zero_chunk_outputs(model, x)]
    full, start = on_host(output), 0
    for host in hosts:
        host.numpy()[...] = full[start:start + len(host)]
        start += len(host)
    final = np.concatenate([h.numpy() for h in hosts]) if join == "numpy" else torch.cat(hosts)
    assert np.allclose(np.asarray(final), full)
    run = observed(events)
    verdict = p4.combined_against_full(run, BATCH)
    assert verdict is None or verdict[0] is False, verdict
    with pytest.raises(AssertionError) as failed:
        p4.combined_equals_full(run, BATCH)
    assert "not the rows the model's passes on the chunks returned" in str(failed.value)


@pytest.mark.parametrize("copy", ["numpy_copy", "tolist"])
def test_part1s_output_copied_outside_torch_and_compared_combines_nothing(traced_vnode, copy):
    """adv32 F2: no join at all; Part 1's output copied by numpy or rebuilt from a list (a
    tensor of its own) compared with Part 1's output, the chunks run on zeros."""
    events = traced_vnode(2)
    model, x, output = part1()
    zero_chunk_outputs(model, x)
    if copy == "numpy_copy":
        final = torch.from_numpy(on_host(output).copy()).to(output.device)
    else:
        final = torch.tensor(output.tolist(), device=output.device)
    assert torch.allclose(final, output)
    verdict = p4.combined_against_full(observed(events), BATCH)
    assert verdict is None or verdict[0] is False, verdict


@pytest.mark.parametrize("style", ["np_append_loop", "np_concatenate_loop", "torch_cat_loop"])
def test_outputs_accumulated_from_an_empty_start_are_the_combination(traced_vnode, style):
    """adv32 H3: `final = np.empty((0, D)); for o in outputs: final = np.append(final, o,
    axis=0)` (and torch.cat's loop from torch.empty(0, D)): each join's input that is an
    earlier join's result stands for that join's inputs; an input of no rows is none."""
    events = traced_vnode(2)
    model, x, output = part1()
    outputs = [model(chunk) for chunk in torch.chunk(x, 2)]
    if style == "torch_cat_loop":
        final = torch.empty(0, OUT, device=output.device)
        for out in outputs:
            final = torch.cat([final, out])
    else:
        final = np.empty((0, OUT), dtype=np.float32)
        for out in outputs:
            final = np.append(final, on_host(out), axis=0) if style == "np_append_loop" \
                else np.concatenate([final, on_host(out)])
    run = observed(events)
    verdict = p4.combined_against_full(run, BATCH)
    assert verdict is not None and verdict[0] is True, (style, verdict)
    p4.combined_equals_full(run, BATCH)
