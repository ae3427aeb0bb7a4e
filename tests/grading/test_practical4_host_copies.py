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

import pickle
from pathlib import Path

import numpy as np
import pytest
import torch

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
    if how == "np_array_of_tensor" and "no torch.cat of the chunks' outputs" in said:
        # In a CI worker that had run thousands of tests first, numpy's copy through torch's
        # __array__ was once not recorded as Part 1's export (the wording below), though it
        # still combined nothing (asserted above); alone, and in a graded run's fresh process,
        # it is. Left in the note as found, not yet understood.
        return
    assert "copy of Part 1's output" in said or "rebuilt from its .tolist()" in said, said


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


# -- the host array Tensor.numpy() gives: numpy's, to the script --------------------------------

def test_the_listed_array_behaves_as_numpys(traced_vnode):
    traced_vnode(2)
    model, x, output = part1()
    array = model(torch.chunk(x, 2)[0]).detach().cpu().numpy()
    assert isinstance(array, np.ndarray) and type(array).__name__ == "ndarray"
    assert repr(array).startswith("array("), repr(array)[:40]
    assert type(array - array) is np.ndarray and type(array.max()) is np.float32, \
        (type(array - array), type(array.max()))
    assert type(pickle.loads(pickle.dumps(array))) is np.ndarray
    assert torch.equal(torch.from_numpy(array), torch.tensor(array.tolist()))
    assert type(torch.randn(3, 2).numpy()) is np.ndarray, "no pass's data: numpy's own array"


def stopped_at(check, array):
    """The error `check(array)` raises, as a script stopped by it."""
    with pytest.raises(Exception) as raised:
        check(array)
    return raised.value


def exact_type_check(a):
    assert type(a) is np.ndarray


def exact_type_check_saying_it(a):
    assert type(a) == np.ndarray, type(a)


def other_assertion(a):
    assert a.shape == (1,)


def test_an_exact_type_check_of_the_listed_array_is_told_to_use_isinstance(traced_vnode):
    """adv38 H3: `assert type(a) is np.ndarray` on the array of an output stops the script (the
    array is the grader's subclass); its type says so, and the report tells isinstance."""
    from grader.harness.course_environment import tracked_array_note
    from grader.vgpu.numpy_lists import type_check_at_error
    traced_vnode(2)
    model, x, output = part1()
    array = output.detach().cpu().numpy()
    assert "grader's tracked view of numpy.ndarray" in str(type(array)), (
        f"expected the tracked array's type to say it is the grader's, observed {type(array)} "
        "(grader/vgpu/numpy_lists.py)")
    here = str(Path(__file__).parent)
    for check in (exact_type_check, exact_type_check_saying_it):
        assert type_check_at_error(stopped_at(check, array), here), (
            f"expected {check.__name__} seen as an exact type check of a tracked array")
    assert not type_check_at_error(stopped_at(other_assertion, array), here), (
        "an assertion on anything else than the type is no type check")
    assert not type_check_at_error(stopped_at(exact_type_check, [1.0]), here), (
        "a type check of a list (no tracked array) is not told about tracked arrays")
    note = tracked_array_note({"type": "AssertionError", "tracked_array": True})
    assert note and "isinstance(a, np.ndarray)" in note, note
    assert tracked_array_note({"type": "AssertionError", "message": ""}) is None


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
