"""Practical 4, Part 2: the chunks' outputs listed through numpy, Part 1's output copied through
the host, and chunk passes whose rows the budget dropped after Part 1 (eng_p4e).

Honest students list each chunk's host array (`rows += model(c).detach().cpu().numpy().tolist()`)
and build the batch with np.array or torch.tensor, compared by numpy: numpy's `tolist` cannot be
wrapped, so no combination was seen and they lost 2.4 points (7.1 of 9.5). `Tensor.numpy()` of a
forward pass's data now gives an array whose `tolist()` is remembered (grader/vgpu/numpy_lists.py).

The chunks run on the batch and thrown away, and Part 1's output copied through the host and
compared by torch.allclose (rebuilt from copies of its row lists, a red team's adv36 F4; its
numpy `.tolist()`; a numpy copy) earned every Part 2 point (9.5 of 9.5; now 7.1): Part 1's rows
and the chunks' are equal, so where the values came from decides (`part1_copies`).

Passes on other data after Part 1 that spend the records of rows left the chunk passes' rows
unrecorded and excused any combination (chunks on other data, host arrays overwritten with Part
1's rows: 6.1 -> 9.5). A pass whose rows were dropped now stands only for Part 1's rows its
output's sum adds up to (`stood_for`), so a timing loop on fresh inputs keeps its points.
"""
from __future__ import annotations

import gc
import pickle

import numpy as np
import pytest
import torch
import torch.nn as nn

from grader.checks import test_practical4 as p4
from grader.vgpu import rows as vrows

from tests.grading.test_practical4_chunk_passes import overwritten_with_part1
from tests.grading.test_practical4_numpy_combination import (BATCH, IN, OUT, observed, on_host,
                                                             part1)


def chunk_outputs(model, x):
    return [model(chunk) for chunk in torch.chunk(x, 2)]


def listed_through_numpy(style, outputs):
    """Part 2's chunk outputs listed through numpy and built into the batch the way `style` says."""
    if style == "np_concatenate_of_whole_lists":
        return np.concatenate([o.detach().cpu().numpy().tolist() for o in outputs])
    rows = []
    for out in outputs:
        if style == "row_by_row":
            for row in out.detach().cpu().numpy():
                rows.append(row.tolist())
        elif style == "no_grad_cpu":
            with torch.no_grad():
                rows.extend(out.cpu().numpy().tolist())
        else:
            rows += out.detach().cpu().numpy().tolist()
    if style == "torch_tensor_of_rows":
        return torch.tensor(rows).numpy()
    return np.array(rows)


HONEST = ["np_array_of_rows", "torch_tensor_of_rows", "np_concatenate_of_whole_lists",
          "row_by_row", "no_grad_cpu"]


def assert_the_combination(run, style):
    verdict = p4.combined_against_full(run, BATCH)
    assert verdict is not None and verdict[0] is True, (
        f"expected {style} seen as the chunks' combination of {BATCH} rows; observed {verdict} "
        "(grader/vgpu/numpy_lists.py, row_lists.py)")
    p4.combined_equals_full(run, BATCH)


@pytest.mark.parametrize("style", HONEST)
def test_rows_listed_through_numpy_are_the_combination(traced_vnode, style):
    events = traced_vnode(2)
    model, x, output = part1()
    final = listed_through_numpy(style, chunk_outputs(model, x))
    assert np.allclose(final, on_host(output), atol=1e-5)
    assert_the_combination(observed(events), style)


def test_part1_taken_to_the_host_first_leaves_the_combination(traced_vnode):
    """The reference array made before Part 2 (`expected = output...numpy()`) is Part 1's, the
    rows listed after it the chunks'."""
    events = traced_vnode(2)
    model, x, output = part1()
    expected = output.detach().cpu().numpy()
    final = listed_through_numpy("np_array_of_rows", chunk_outputs(model, x))
    assert np.allclose(final, expected, atol=1e-5)
    assert_the_combination(observed(events), "np_array_of_rows after Part 1's numpy()")


def test_rows_listed_through_numpy_in_reverse_are_out_of_order(traced_vnode):
    events = traced_vnode(2)
    model, x, output = part1()
    listed_through_numpy("np_array_of_rows", chunk_outputs(model, x)[::-1])
    verdict = p4.combined_against_full(observed(events), BATCH)
    assert verdict is not None and verdict[0] is False, verdict
    assert "not in order: its row 0 is the full output's row 32" in verdict[1], verdict


def copied_through_the_host(how, output):
    """Part 1's output brought back as a tensor of its own the way `how` says."""
    if how == "row_list_copies":        # adv36 F4
        return torch.tensor([list(row) for row in output.tolist()], device=output.device)
    if how == "numpy_tolist":
        return torch.tensor(output.detach().cpu().numpy().tolist(), device=output.device)
    if how == "numpy_halves_tolist":
        rows = []
        for half in torch.chunk(output, 2):
            rows += half.detach().cpu().numpy().tolist()
        return torch.tensor(rows, device=output.device)
    if how == "numpy_copy":
        return torch.from_numpy(output.detach().cpu().numpy().copy()).to(output.device)
    if how == "np_array_of_tensor":      # numpy copies it through torch's __array__
        return torch.tensor(np.array(output.detach().cpu())).to(output.device)
    raise ValueError(how)


COPIES = ["row_list_copies", "numpy_tolist", "numpy_halves_tolist", "numpy_copy",
          "np_array_of_tensor"]


@pytest.mark.parametrize("how", COPIES)
def test_part1s_output_copied_through_the_host_combines_nothing(traced_vnode, how):
    """The chunks run on the batch and are thrown away; Part 1's output copied through the
    host is compared with it (the torch.allclose of a tensor of its own had passed)."""
    events = traced_vnode(2)
    model, x, output = part1()
    chunk_outputs(model, x)
    final = copied_through_the_host(how, output)
    assert torch.allclose(final, output)
    run = observed(events)
    verdict = p4.combined_against_full(run, BATCH)
    assert verdict is None or verdict[0] is False, (
        f"expected Part 1's output copied through the host ({how}) to combine nothing; observed "
        f"{verdict} (test_practical4.part1_copies, grader/vgpu/numpy_lists.py)")
    with pytest.raises(AssertionError) as failed:
        p4.combined_equals_full(run, BATCH)
    said = str(failed.value)
    # np_array_of_tensor: the host copy `.cpu()` made is freed at once, and the tensor built next
    # may be made at its address; that tensor is a tensor of its own all the same (the records
    # of copies stand only while the copy lives), so the wording is the same either way
    # (test_a_tensor_made_where_a_freed_host_copy_was_is_its_own pins that address).
    assert "copy of Part 1's output" in said or "rebuilt from its .tolist()" in said, said


@pytest.mark.parametrize("path", ["c", "python"])
def test_numpys_copy_of_part1s_output_is_its_export_on_either_dispatch(traced_vnode,
                                                                      monkeypatch, path):
    """np.array(t) calls torch's __array__ through the virtual GPUs' mode, whose dispatch runs in
    C or, where that was not built, in Python (c_path.py): a frame of the grader's more, which
    had hidden the script's call, so the copy was no export of Part 1's and a tensor built from
    it passed for the combination (np_array_of_tensor, found in a CI worker)."""
    from grader.vgpu.c_path import ENV_PURE_PYTHON, c_module
    if path == "c":
        if c_module() is None:
            pytest.skip("the C dispatch is not built here")
        monkeypatch.delenv(ENV_PURE_PYTHON, raising=False)
    else:
        monkeypatch.setenv(ENV_PURE_PYTHON, "1")
    events = traced_vnode(2)
    model, x, output = part1()
    thrown_away = chunk_outputs(model, x)
    host = output.detach().cpu()   # kept: no later tensor is made at its address
    final = torch.tensor(np.array(host)).to(output.device)
    assert torch.allclose(final, output) and len(thrown_away) == 2
    with pytest.raises(AssertionError) as failed:
        p4.combined_equals_full(observed(events), BATCH)
    assert "copy of Part 1's output" in str(failed.value), (
        f"expected numpy's copy told as a copy of Part 1's output on the {path} dispatch; "
        f"observed {failed.value} (grader/vgpu/numpy_lists.py _PASSED)")


def test_a_tensor_of_its_own_from_the_chunks_is_still_compared(traced_vnode):
    """The fallback stays for honest tensors of their own: the chunks' row lists copied (Part
    1's output listed before, for a print), or values read one by one with Part 1's output
    taken to the host only after the comparison."""
    events = traced_vnode(2)
    model, x, output = part1()
    print(output.tolist()[0][:3])
    outputs = chunk_outputs(model, x)
    final = torch.tensor([list(row) for out in outputs for row in out.tolist()],
                         device=output.device)
    assert torch.allclose(final, output, atol=1e-5)
    assert_the_combination(observed(events), "copies of the chunks' row lists")


def test_values_read_one_by_one_then_part1_listed_after(traced_vnode):
    events = traced_vnode(2)
    model, x, output = part1()
    outputs = chunk_outputs(model, x)
    final = torch.tensor([[float(v) for v in row] for out in outputs for row in out],
                         device=output.device)
    assert torch.allclose(final, output, atol=1e-5)
    output.detach().cpu().numpy()
    assert_the_combination(observed(events), "values read one by one")


# -- memory freed and made again at the same address --------------------------------------------
# A record keyed by an address (a copy's, a pass's data's) stands only while the memory it was
# taken from lives (rows.py `_copy_entry`, `pass_origin`). A host buffer of numpy's own makes
# the same address for certain: each torch.from_numpy(buffer) is a new tensor memory of which
# lives at it, whatever the allocator does.


def test_a_tensor_at_a_freed_copys_address_is_its_own(traced_vnode):
    """A host buffer reused: Part 1's output copied into it to print its rows, that tensor freed;
    the chunks' rows written into the buffer, a tensor made of it compared with Part 1's output.
    The record of the freed copy made it Part 1's output under another name: no combination
    (chunks_equal_full lost)."""
    events = traced_vnode(2)
    model, x, output = part1()
    buffer = np.empty((BATCH, OUT), dtype=np.float32)
    shown = torch.from_numpy(buffer)
    shown.copy_(output.detach())            # the whole tensor: a copy of Part 1's output
    print(shown[:2])
    address = shown.untyped_storage().data_ptr()
    del shown
    buffer[:] = [list(row) for out in chunk_outputs(model, x) for row in out.tolist()]
    final = torch.from_numpy(buffer)
    assert final.untyped_storage().data_ptr() == address
    assert torch.allclose(final, output.detach().cpu(), atol=1e-5)
    assert_the_combination(observed(events), "a tensor made where a freed copy of Part 1's was")
    recorder = vrows._recorder
    assert recorder.origin(final) == address and recorder.pass_origin(final) is None, (
        f"expected the tensor made at the freed copy's address to be its own (origin {address}, "
        f"no pass's data); observed origin {recorder.origin(final)}, pass origin "
        f"{recorder.pass_origin(final)} (grader/vgpu/rows.py _copy_entry)")


def test_a_live_copy_is_still_its_tensors(traced_vnode):
    """The copy's record stands while it lives, also once the tensor it copies is freed
    (`model(c).detach().cpu()`: the pass's output is freed at once)."""
    traced_vnode(2)
    model, x, output = part1()
    buffer = np.empty((BATCH, OUT), dtype=np.float32)
    shown = torch.from_numpy(buffer)
    shown.copy_(output.detach())
    recorder = vrows._recorder
    assert recorder.origin(shown) == vrows.storage_of(output), "the copy is not Part 1's output"
    host = model(torch.chunk(x, 2)[0]).detach().cpu()
    origin = recorder.pass_origin(host)
    assert origin is not None and origin != vrows.storage_of(host), (
        "expected a live host copy of a freed chunk output to be that output's data; observed "
        f"{origin} (grader/vgpu/rows.py pass_origin)")
    assert recorder.lists.origin_of(host.tolist()[0]) == origin


class FromBuffer(nn.Module):
    """A layer whose output is a tensor of a host buffer's memory (its address known)."""

    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(IN, OUT)
        self.buffer = np.empty((BATCH, OUT), dtype=np.float32)

    def forward(self, x):
        out = torch.from_numpy(self.buffer)
        with torch.no_grad():
            out.copy_(self.layer(x))
        return out


def test_a_tensor_at_a_freed_pass_outputs_address_is_no_pass_data(traced_vnode):
    """A pass's output freed, a tensor of the script's own made at its address: its rows listed
    or taken to numpy are no pass's (no export, no row lists)."""
    events = traced_vnode(2)
    model = FromBuffer()
    passed = model(torch.randn(BATCH, IN))
    address = passed.untyped_storage().data_ptr()
    recorder = vrows._recorder
    assert recorder.from_a_pass(address), "the pass's output is not recorded"
    del passed
    gc.collect()   # a module's output can sit in a reference cycle a while
    own = torch.from_numpy(model.buffer)
    assert own.untyped_storage().data_ptr() == address
    exports = [e for e in events if e.get("event") == "export"]
    rows = own.tolist()
    own.numpy().tolist()
    assert recorder.lists.origin_of(rows[0]) is None, (
        f"expected the row lists of a tensor made at a freed pass output's address ({address}) "
        "to be no pass's; observed them remembered as its (grader/vgpu/rows.py pass_origin)")
    assert [e for e in events if e.get("event") == "export"] == exports, (
        "expected no export of a tensor of the script's own made at a freed pass's address; "
        "observed one (grader/vgpu/numpy_lists.py)")
    assert recorder.pass_origin(own) is None, recorder.pass_origin(own)


def test_part1s_host_copy_printed_then_the_chunks_built_where_it_was(traced_vnode):
    """The same through the allocator, as a script does it: Part 1's rows printed from
    `output.detach().cpu()` (freed at once), the chunks' rows built into a tensor next, at that
    copy's address where the allocator hands it back (skipped where it does not)."""
    events = traced_vnode(2)
    model, x, output = part1()
    rows = [list(row) for out in chunk_outputs(model, x) for row in out.tolist()]   # copies
    for _ in range(16):
        shown = output.detach().cpu()
        address = shown.untyped_storage().data_ptr()
        del shown
        final = torch.tensor(rows, device="cuda:0")
        if final.untyped_storage().data_ptr() == address:
            break
    else:
        pytest.skip("the CPU allocator did not make the tensor at the freed copy's address")
    assert torch.allclose(final, output, atol=1e-5)
    assert_the_combination(observed(events), "a tensor built where a freed copy of Part 1's was")


# -- the host array Tensor.numpy() gives: numpy's own -------------------------------------------

def test_the_host_arrays_are_numpys_own(traced_vnode):
    """adv38 H3: `assert type(a) is np.ndarray` on the array of an output stopped the script
    (0.4 of 12): the array was a subclass of the grader's that followed its `.tolist()` rows.
    numpy's own tolist follows them now (grader/vgpu/type_namespace.py), the arrays stay numpy's."""
    traced_vnode(2)
    model, x, output = part1()
    arrays = {"Part 1's output": output.detach().cpu().numpy(),
              "a chunk's output": model(torch.chunk(x, 2)[0]).detach().cpu().numpy(),
              "a row of one": output.detach().cpu().numpy()[3],
              "np.asarray of one": np.asarray(output.detach().cpu())}
    for what, array in arrays.items():
        assert type(array) is np.ndarray and type(array) == np.ndarray \
            and array.__class__ is np.ndarray, (
                f"expected {what} on the host to be numpy's own ndarray; observed {type(array)} "
                "(grader/vgpu/numpy_lists.py)")
    array = arrays["a chunk's output"]
    assert repr(array).startswith("array("), repr(array)[:40]
    assert type(pickle.loads(pickle.dumps(array))) is np.ndarray
    assert torch.equal(torch.from_numpy(array), torch.tensor(array.tolist()))


def test_exact_type_checks_before_listing_keep_the_combination(traced_vnode):
    """The p4_typeis student, listing: each chunk's host array checked by type, then listed."""
    events = traced_vnode(2)
    model, x, output = part1()
    full_np = output.detach().cpu().numpy()
    assert type(full_np) is np.ndarray, type(full_np)
    rows = []
    for out in chunk_outputs(model, x):
        part = out.detach().cpu().numpy()
        assert type(part) == np.ndarray and part.__class__ is np.ndarray, type(part)
        rows += part.tolist()
    final = np.array(rows)
    assert type(final) is np.ndarray and np.allclose(final, full_np, atol=1e-5)
    assert_the_combination(observed(events), "rows listed after exact type checks")


def test_part1s_rows_listed_beside_the_chunks_arrays_combine_nothing(traced_vnode):
    """The chunks' host arrays made (and thrown away), Part 1's listed and rebuilt: every row's
    values are a chunk's too, only which array was listed tells (a forgery)."""
    events = traced_vnode(2)
    model, x, output = part1()
    thrown_away = [out.detach().cpu().numpy() for out in chunk_outputs(model, x)]
    assert len(thrown_away) == 2
    final = torch.tensor(output.detach().cpu().numpy().tolist(), device=output.device)
    assert torch.allclose(final, output, atol=1e-5)
    verdict = p4.combined_against_full(observed(events), BATCH)
    assert verdict is None or verdict[0] is False, (
        "expected Part 1's rows listed through numpy, beside the chunks' host arrays, to combine "
        f"nothing; observed {verdict} (grader/vgpu/numpy_lists.py)")


def test_the_grader_lists_nothing_of_numpys_once_its_node_is_gone(tmp_path):
    """ndarray.tolist is numpy's own method again after the node is deactivated."""
    from grader.vgpu import activate
    plain = np.ndarray.__dict__["tolist"]
    handle = activate(2, force_virtual=True, trace_path=str(tmp_path / "trace.jsonl"))
    try:
        assert np.ndarray.__dict__["tolist"] is not plain, "the node did not follow tolist"
    finally:
        handle.deactivate()
    assert np.ndarray.__dict__["tolist"] is plain and np.arange(3.0).tolist() == [0.0, 1.0, 2.0]


# -- the records of rows spent after Part 1 --------------------------------------------------------

def flood(model, rows=BATCH + 1):
    """Passes on other data that spend the records of rows (rows.py's budget)."""
    for _ in range(vrows.MAX_RECORDS + 2):
        model(torch.randn(rows, IN, device="cuda:0"))


def test_a_flood_after_part1_excuses_no_forged_combination(traced_vnode):
    events = traced_vnode(2)
    model, x, output = part1()
    flood(model)
    hosts = overwritten_with_part1(chunk_outputs(model, torch.randn_like(x)), output)
    torch.cat(hosts)
    run = observed(events)
    assert all(p["rows_out_dropped"] for p in p4.chunk_passes(run, BATCH)), "no budget spent"
    verdict = p4.combined_against_full(run, BATCH)
    assert verdict is not None and verdict[0] is False, (
        "expected chunks on other data, their rows dropped after Part 1, to excuse nothing; "
        f"observed {verdict} (test_practical4.chunks_unrecorded, stood_for)")
    assert "does not add up to the sum of those rows" in verdict[1], verdict
    with pytest.raises(AssertionError) as failed:
        p4.split_into_chunks(run, BATCH)
    assert "were not recorded" in str(failed.value)


def test_dropped_passes_after_recorded_chunks_excuse_nothing(traced_vnode):
    """Chunks on other data recorded, the budget spent, two more passes (dropped) on other data:
    they stand for no rows of Part 1's, so they excuse none of the overwritten rows."""
    events = traced_vnode(2)
    model, x, output = part1()
    outputs = chunk_outputs(model, torch.randn_like(x))
    flood(model)
    chunk_outputs(model, torch.randn_like(x))
    torch.cat(overwritten_with_part1(outputs, output))
    verdict = p4.combined_against_full(observed(events), BATCH)
    assert verdict is not None and verdict[0] is False, verdict
    assert "not the rows the model's passes on the chunks returned" in verdict[1], verdict


def test_a_timing_loop_on_fresh_batches_keeps_part2s_points(traced_vnode):
    events = traced_vnode(2)
    model, x, output = part1()
    flood(model, rows=BATCH)
    final = torch.cat(chunk_outputs(model, x))
    assert torch.allclose(final, output, atol=1e-5)
    run = observed(events)
    assert all(p["rows_out_dropped"] for p in p4.chunk_passes(run, BATCH)), "no budget spent"
    p4.split_into_chunks(run, BATCH)
    assert_the_combination(run, "torch.cat after a timing loop on fresh batches")


def test_a_dropped_pass_stands_for_the_nearest_rows():
    """Rows [sum, sum of squares]; two runs whose sums are within rounding of each other: the
    nearest is the one the pass ran on."""
    known = [[1.0, 1.0], [2.0, 4.0], [3.0, 9.0], [1.0000001, 1.0], [2.0, 4.0], [10.0, 100.0]]
    assert p4.stood_for({"out_shape": [2, OUT], "sum_out": 3.0000001}, known) == known[3:5]
    assert p4.stood_for({"out_shape": [2, OUT], "sum_out": 5.0}, known) == known[1:3]
    assert p4.stood_for({"out_shape": [2, OUT], "sum_out": 7.5}, known) is None
    assert p4.stood_for({"out_shape": [2, OUT], "sum_out": None}, known) is None
