"""Practical 4, Part 2: the chunks' outputs put together on the host by other means than a join.

Honest students combine the chunks' host arrays with `np.array(outputs).reshape(-1, D)` (or
np.asarray), `np.block([[a], [b]])`, `np.r_[a, b]`, or rebuild the batch from row lists
(`rows += out.cpu().tolist()`, then `torch.tensor(rows)` or `np.array(rows)`), and compare with
numpy: no combination was seen and they lost chunks_equal_full and outputs_equal_reported
(7.1 of 9.5). These are now recorded as joins (grader/vgpu/numpy_joins.py, row_lists.py), the
verdict the same as torch.cat's, row by row. What combines the chunks must still hold rows the
chunks' passes returned (adv32 F1/F2): chunks run on zeros and Part 1's rows written into their
arrays or row lists stay failed, and Part 1's output rebuilt from its own `.tolist()` is Part 1's
output, no combination, even where the chunks did run on the batch.

A join's result is remembered by its memory's address only while what owns that memory lives
(RowRecorder._joined): a later tensor at a freed result's address joins nothing of it.
"""
from __future__ import annotations

import collections
import gc

import numpy as np
import pytest
import torch

from grader.checks import test_practical4 as p4
from grader.vgpu.rows import RowRecorder, storage_of, storage_owner

from tests.grading.test_practical4_numpy_combination import (BATCH, OUT, observed, on_host,
                                                             part1, zero_chunk_outputs)


def chunk_outputs(model, x):
    return [model(chunk) for chunk in torch.chunk(x, 2)]


def built(style, outputs):
    """Part 2's chunk outputs put together on the host the way `style` says."""
    hosts = [on_host(out) for out in outputs]
    if style == "np_array_reshape":
        return np.array(hosts).reshape(-1, OUT)
    if style == "np_array_reshape_batch":
        return np.array(hosts).reshape(BATCH, OUT)
    if style == "np_asarray_reshape":
        return np.asarray(hosts).reshape(-1, OUT)
    if style == "np_array_of_host_tensors":
        return np.array([out.detach().cpu() for out in outputs]).reshape(-1, OUT)
    if style == "np_array_of_rows":           # each chunk's array iterated row by row
        return np.array([row for host in hosts for row in host])
    if style == "np_block":
        return np.block([[host] for host in hosts])
    if style == "np_r":
        return np.r_[hosts[0], hosts[1]]
    if style == "np_r_tuple":
        return np.r_[tuple(hosts)]
    rows = []
    for out in outputs:
        if style.startswith("tolist_extend"):
            rows.extend(out.detach().cpu().tolist())
        elif style.startswith("tolist_append"):
            for row in out.detach().cpu().tolist():
                rows.append(row)
        elif style.startswith("tolist_rows"):  # one row tensor at a time
            rows += [row.tolist() for row in out.detach().cpu()]
        else:
            rows += out.detach().cpu().tolist()
    if style.endswith("_torch"):
        return torch.tensor(rows).numpy()
    if style.endswith("_as_tensor"):
        return torch.as_tensor(rows).numpy()
    return np.array(rows, dtype=np.float32)


STYLES = ["np_array_reshape", "np_array_reshape_batch", "np_asarray_reshape",
          "np_array_of_host_tensors", "np_array_of_rows", "np_block", "np_r", "np_r_tuple",
          "tolist_torch", "tolist_as_tensor", "tolist_numpy", "tolist_extend_numpy",
          "tolist_append_torch", "tolist_rows_numpy"]


@pytest.mark.parametrize("style", STYLES)
def test_the_chunks_outputs_built_on_the_host_are_the_combination(traced_vnode, style):
    events = traced_vnode(2)
    model, x, output = part1()
    final = built(style, chunk_outputs(model, x))
    verdict = seen_as_the_combination(events, final, output, style,
                                      "grader/vgpu/numpy_joins.py, row_lists.py")
    assert "test_practical4_host_builders.py" in verdict[1], verdict


def seen_as_the_combination(events, final, output, style: str, look: str):
    """`final` equals Part 1's `output`, and the trace's Part 2 verdict is that the chunks'
    outputs were combined into it (and the check passes): the verdict."""
    assert np.allclose(final, on_host(output), atol=1e-5), style
    run = observed(events)
    verdict = p4.combined_against_full(run, BATCH)
    assert verdict is not None and verdict[0] is True, (
        f"expected {style} seen as the chunks' combination of {BATCH} rows; observed {verdict} "
        f"({look})")
    p4.combined_equals_full(run, BATCH)
    return verdict


@pytest.mark.parametrize("style", ["np_array_reshape", "np_block", "np_r", "tolist_numpy"])
def test_the_chunks_built_in_reverse_are_said_out_of_order(traced_vnode, style):
    events = traced_vnode(2)
    model, x, output = part1()
    built(style, chunk_outputs(model, x)[::-1])
    verdict = p4.combined_against_full(observed(events), BATCH)
    assert verdict is not None and verdict[0] is False, (style, verdict)
    assert "not in order: its row 0 is the full output's row 32" in verdict[1], verdict


@pytest.mark.parametrize("style", ["np_array_reshape", "np_block", "np_r"])
def test_chunk_arrays_overwritten_then_built_combine_nothing(traced_vnode, style):
    """adv32 F1 with the new builders: the chunks run on zeros, their host arrays overwritten
    with Part 1's rows through numpy, then put together."""
    events = traced_vnode(2)
    model, x, output = part1()
    outputs = zero_chunk_outputs(model, x)
    hosts = [out.detach().cpu() for out in outputs]
    full, start = on_host(output), 0
    for host in hosts:
        host.numpy()[...] = full[start:start + len(host)]
        start += len(host)
    arrays = [host.numpy() for host in hosts]
    final = {"np_array_reshape": lambda: np.array(arrays).reshape(-1, OUT),
             "np_block": lambda: np.block([[a] for a in arrays]),
             "np_r": lambda: np.r_[arrays[0], arrays[1]]}[style]()
    assert np.allclose(final, full)
    run = observed(events)
    verdict = p4.combined_against_full(run, BATCH)
    assert verdict is not None and verdict[0] is False, verdict
    assert "not the rows the model's passes on the chunks returned" in verdict[1], verdict


def test_chunk_row_lists_overwritten_combine_nothing(traced_vnode):
    """adv32 F2 with row lists: the chunks run on zeros, their `.tolist()` rows overwritten in
    place with Part 1's (the same list objects), then built into an array."""
    events = traced_vnode(2)
    model, x, output = part1()
    rows = []
    for out in zero_chunk_outputs(model, x):
        rows += out.detach().cpu().tolist()
    for row, wanted in zip(rows, output.tolist()):
        row[:] = wanted
    assert np.allclose(np.array(rows), on_host(output))
    verdict = p4.combined_against_full(observed(events), BATCH)
    assert verdict is not None and verdict[0] is False, verdict
    assert "not the rows the model's passes on the chunks returned" in verdict[1], verdict


@pytest.mark.parametrize("build", ["torch_tensor_compared", "numpy_array"])
def test_part1s_output_rebuilt_from_its_rows_combines_nothing(traced_vnode, build):
    """The chunks run honestly, but what is compared is Part 1's output rebuilt from its own
    `.tolist()`: Part 1's rows, no chunk's. It had earned chunks_equal_full (its rows are the
    chunks' rows) through the torch.allclose comparison."""
    events = traced_vnode(2)
    model, x, output = part1()
    chunk_outputs(model, x)
    if build == "torch_tensor_compared":
        final = torch.tensor(output.tolist(), device=output.device)
        assert torch.allclose(final, output)
    else:
        final = np.array(output.detach().cpu().tolist())
        assert np.allclose(final, on_host(output))
    run = observed(events)
    assert p4.combined_against_full(run, BATCH) is None, build
    with pytest.raises(AssertionError) as failed:
        p4.combined_equals_full(run, BATCH)
    assert "rebuilt from its .tolist()" in str(failed.value)


def test_rows_of_part1_beside_a_chunks_rows_combine_nothing(traced_vnode):
    events = traced_vnode(2)
    model, x, output = part1()
    first, _ = chunk_outputs(model, x)
    rows = first.detach().cpu().tolist() + output[32:].detach().cpu().tolist()
    np.array(rows)
    assert p4.combined_against_full(observed(events), BATCH) is None


def test_arrays_side_by_side_or_with_slices_are_no_rows(traced_vnode):
    """np.block([[a, b]]) joins columns, np.r_ with a slice or a directive another thing:
    neither is recorded as a join of rows."""
    events = traced_vnode(2)
    model, x, _ = part1()
    hosts = [on_host(out) for out in chunk_outputs(model, x)]
    np.block([[hosts[0], hosts[1]]])
    np.r_["1", hosts[0], hosts[1]]
    np.r_[0:3, hosts[0][0]]
    assert not [e for e in events if e["event"] == "concat"], \
        [e.get("op") for e in events if e["event"] == "concat"]


def test_everyday_lists_and_arrays_are_not_recorded(traced_vnode):
    """Lists of numbers, lists of numpy's own arrays and tensors built from the script's own
    lists cost a type check: nothing recorded, no row lists remembered."""
    events = traced_vnode(2)
    model, x, _ = part1()
    chunk_outputs(model, x)
    np.array([[1.0, 2.0], [3.0, 4.0]])
    np.asarray([np.zeros(3), np.ones(3)])
    torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    torch.arange(6).reshape(2, 3).tolist()   # no forward pass's data
    np.r_[np.zeros((2, 3)), np.ones((2, 3))]
    np.block([[np.zeros((2, 3))], [np.ones((2, 3))]])
    assert not [e for e in events if e["event"] == "concat"]


def test_a_copy_of_a_join_joins_its_inputs_after_the_join_is_freed(traced_vnode):
    """`final = torch.cat([final, out]).clone()` from an empty start: each join's result is
    freed once cloned; the clone stands for the join's inputs while it lives."""
    events = traced_vnode(2)
    model, x, output = part1()
    final = torch.empty(0, OUT, device=output.device)
    for out in chunk_outputs(model, x):
        final = torch.cat([final, out]).clone()
    run = observed(events)
    verdict = p4.combined_against_full(run, BATCH)
    assert verdict is not None and verdict[0] is True, verdict


# -- RowRecorder._joined: a result's address is its own only while its memory lives -----------

def recorder():
    return RowRecorder(lambda: 0)


def test_a_live_joins_result_stands_for_its_inputs():
    rows = recorder()
    result = torch.zeros(4, 3)
    address = storage_of(result)
    rows.joined(address, storage_owner(result), [11, 12], [[2, 3], [2, 3]])
    assert rows.join_inputs([(address, address, [4, 3])]) == ([11, 12], [[2, 3], [2, 3]])


def test_a_freed_joins_address_stands_for_nothing_of_it():
    """A later tensor at a freed result's address (the allocator gives addresses again) is
    itself: the freed join's inputs were taken for it (rows.py `_joined` by address alone)."""
    rows = recorder()
    result = torch.zeros(4, 3)
    address = storage_of(result)
    rows.joined(address, storage_owner(result), [11, 12], [[2, 3], [2, 3]])
    del result
    gc.collect()
    assert rows.join_inputs([(address, address, [4, 3])]) == ([address], [[4, 3]]), \
        "expected a freed join's address to be forgotten (rows.py RowRecorder._live_join)"
    assert address not in rows._joined


def test_a_freed_numpy_joins_address_stands_for_nothing_of_it():
    rows = recorder()
    result = np.zeros((4, 3))
    address = int(result.__array_interface__["data"][0])
    rows.joined(address, result, [11], [[4, 3]])
    view = result.reshape(-1)   # a view keeps the result's memory, and its entry
    del result
    assert rows.join_inputs([(address, None, [12])]) == ([11], [[4, 3]])
    del view
    gc.collect()
    assert rows.join_inputs([(address, None, [12])]) == ([None], [[12]])


def test_row_lists_held_are_bounded_and_the_latest_kept(traced_vnode, monkeypatch):
    """An evaluation that lists its outputs batch after batch holds at most MAX_LISTED row lists
    and MAX_VALUES numbers (the oldest forgotten), and Part 2's rows, listed last, still count."""
    from grader.vgpu import row_lists, rows as rows_module
    monkeypatch.setattr(row_lists, "MAX_VALUES", 40 * OUT)
    monkeypatch.setattr(row_lists, "MAX_LISTED", 100)
    events = traced_vnode(2)
    model, x, output = part1()
    with torch.no_grad():
        for _ in range(10):
            model(torch.randn(BATCH, x.shape[1], device=x.device)).tolist()
    held = rows_module._recorder.lists
    assert len(held._rows) <= 40 and held._values <= 40 * OUT, (len(held._rows), held._values)
    monkeypatch.setattr(row_lists, "MAX_VALUES", BATCH * OUT)
    final = built("tolist_numpy", chunk_outputs(model, x))
    assert len(held._rows) == BATCH and held._values == BATCH * OUT, (len(held._rows), held._values, sorted(collections.Counter(v[2] for v in held._rows.values()).items()))
    assert np.allclose(final, on_host(output), atol=1e-5)
    verdict = p4.combined_against_full(observed(events), BATCH)
    assert verdict is not None and verdict[0] is True, verdict
