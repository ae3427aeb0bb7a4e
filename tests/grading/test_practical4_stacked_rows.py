"""Practical 4, Part 2: the chunks' outputs combined row by row with a stack, or as each chunk's
whole `.tolist()` (a red team's adv36 H1 and H2: honest scripts lost 2.4 points, 9.5 -> 7.1).

H1: `torch.stack([row for out in outputs for row in out])` (or np.stack) stacks rows of one
dimension into [64, D]; the recorder flattened every stack along dim 0, so it read 64,000 rows of
one number. Only a stack of whole outputs ([chunks, rows, D]) is flattened now.
H2: `np.concatenate([o.tolist() for o in outputs])`, `np.array([...]).reshape(-1, D)`,
`torch.tensor([...]).reshape(-1, D)`: a list of each chunk's whole `.tolist()` is followed one
level down to the row lists it holds (grader/vgpu/row_lists.py, numpy_joins.py).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from grader.checks import test_practical4 as p4

from tests.grading.test_practical4_host_builders import seen_as_the_combination
from tests.grading.test_practical4_numpy_combination import (BATCH, OUT, observed, on_host,
                                                             part1, zero_chunk_outputs)


def combined(style, outputs):
    if style == "torch_stack_rows":
        return torch.stack([row for out in outputs for row in out]).detach().cpu().numpy()
    if style == "torch_stack_host_rows":
        rows = []
        for out in outputs:
            rows.extend(out.detach().cpu())
        return torch.stack(rows).numpy()
    if style == "np_stack_rows":
        return np.stack([row for out in outputs for row in on_host(out)])
    lists = [out.detach().cpu().tolist() for out in outputs]
    if style == "np_concatenate_tolists":
        return np.concatenate(lists)
    if style == "np_array_tolists":
        return np.array(lists).reshape(BATCH, OUT)
    if style == "torch_tensor_tolists":
        return torch.tensor(lists).reshape(-1, OUT).numpy()
    raise ValueError(style)


STYLES = ["torch_stack_rows", "torch_stack_host_rows", "np_stack_rows",
          "np_concatenate_tolists", "np_array_tolists", "torch_tensor_tolists"]


@pytest.mark.parametrize("style", STYLES)
def test_rows_stacked_or_whole_tolists_are_the_combination(traced_vnode, style):
    events = traced_vnode(2)
    model, x, output = part1()
    final = combined(style, [model(chunk) for chunk in torch.chunk(x, 2)])
    seen_as_the_combination(events, final, output, style,
                            "rows.py _recorded's stack, numpy_joins._inputs, row_lists.listed_rows")


@pytest.mark.parametrize("style", ["torch_stack_rows", "np_stack_rows", "np_concatenate_tolists",
                                   "torch_tensor_tolists"])
def test_stacked_rows_of_chunks_on_zeros_are_not_part1s(traced_vnode, style):
    events = traced_vnode(2)
    model, x, _ = part1()
    combined(style, zero_chunk_outputs(model, x))
    verdict = p4.combined_against_full(observed(events), BATCH)
    assert verdict is not None and verdict[0] is False, (style, verdict)


def test_whole_tolists_mutated_with_part1s_rows_combine_nothing(traced_vnode):
    """adv32 F2 one level down: chunks on zeros, their row lists overwritten with Part 1's."""
    events = traced_vnode(2)
    model, x, output = part1()
    lists = [out.detach().cpu().tolist() for out in zero_chunk_outputs(model, x)]
    for row, wanted in zip([r for rows in lists for r in rows], output.tolist()):
        row[:] = wanted
    assert np.allclose(np.concatenate(lists), on_host(output))
    verdict = p4.combined_against_full(observed(events), BATCH)
    assert verdict is not None and verdict[0] is False, verdict
    assert "not the rows the model's passes on the chunks returned" in verdict[1], verdict


def test_a_stack_of_whole_outputs_is_still_flattened(traced_vnode):
    events = traced_vnode(2)
    model, x, _ = part1()
    torch.stack([model(chunk) for chunk in torch.chunk(x, 2)])
    stacks = [e for e in events if e["event"] == "concat" and e.get("op") == "stack"]
    assert stacks and stacks[-1]["shape"] == [BATCH, OUT], stacks[-1:]
