"""Practical 4, Part 2: which forward passes are chunk passes, and what excuses rows not recorded
(a red team's adv36 F1).

A combination must hold rows the chunks' passes returned (adv32 F1/F2). Rows of a pass whose
output was not recorded could be anything, so such a pass excused the combination: but a pass
had no rows when it never returned a tensor too: a call that raised
(`try: model(torch.zeros(1, 1)) except RuntimeError: pass`) or a module of one parameter
returning a float. One such call after Part 1 then excused chunks run on other data whose host
copies were overwritten with Part 1's rows (6.1 -> 8.5), and with no chunk run at all made the
failed call Part 2's chunk (5.7 -> 8.1). Only rows the budget dropped (`rows_out_dropped`, said
by the recorder) excuse, at most as many as those passes returned; a pass that returned no
tensor is no chunk pass.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn as nn

from grader.checks import test_practical4 as p4
from grader.vgpu import rows as vrows

from tests.grading.test_practical4_numpy_combination import (BATCH, IN, observed, on_host,
                                                             part1, zero_chunk_outputs)


def failed_call(model):
    """A pass that raises: a forward record, no output."""
    try:
        model(torch.zeros(1, 1))
    except RuntimeError:
        pass


class Probe(nn.Module):
    """A module of its own parameter that returns a float, not a tensor."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(1))

    def forward(self, x):
        return float((x * self.weight).sum())


def overwritten_with_part1(outputs, output):
    """adv32 F1: the chunk outputs' host arrays overwritten with Part 1's rows through numpy."""
    hosts = [out.detach().cpu() for out in outputs]
    full, start = on_host(output), 0
    for host in hosts:
        host.numpy()[...] = full[start:start + len(host)]
        start += len(host)
    return hosts


def test_a_pass_that_raised_excuses_no_forged_combination(traced_vnode):
    events = traced_vnode(2)
    model, x, output = part1()
    hosts = overwritten_with_part1(zero_chunk_outputs(model, x), output)
    failed_call(model)
    final = torch.cat([torch.from_numpy(h.numpy()) for h in hosts])
    assert torch.allclose(final, output.cpu())
    run = observed(events)
    verdict = p4.combined_against_full(run, BATCH)
    assert verdict is not None and verdict[0] is False, (
        "expected: chunks on zeros overwritten with Part 1's rows fail even beside a call that "
        f"raised; observed {verdict} (test_practical4.returned_by_chunks)")
    assert "not the rows the model's passes on the chunks returned" in verdict[1], verdict
    assert all(p["out_shape"] for p in p4.all_chunk_passes(run, BATCH)), \
        "a pass that raised is no chunk pass (test_practical4.all_chunk_passes)"


def test_a_module_returning_a_float_excuses_nothing(traced_vnode):
    events = traced_vnode(2)
    model, x, output = part1()
    hosts = overwritten_with_part1(zero_chunk_outputs(model, x), output)
    Probe().to("cuda:0")(torch.ones(1, IN, device="cuda:0"))
    np.concatenate([h.numpy() for h in hosts])
    verdict = p4.combined_against_full(observed(events), BATCH)
    assert verdict is not None and verdict[0] is False, verdict


def test_a_failed_call_is_no_chunk_pass(traced_vnode):
    """adv36 fA5: no chunk run; a failed call, then a numpy copy of Part 1's output compared by
    torch.allclose, had been taken as Part 2 (its 'chunk' the failed call)."""
    events = traced_vnode(2)
    model, x, output = part1()
    failed_call(model)
    copy = torch.from_numpy(output.detach().cpu().numpy().copy())
    assert torch.allclose(copy, output.cpu())
    run = observed(events)
    assert p4.chunk_passes(run, BATCH) == [], p4.chunk_passes(run, BATCH)
    assert p4.combined_against_full(run, BATCH) is None


def test_rows_the_budget_dropped_still_excuse_an_honest_combination(traced_vnode):
    """The excuse stays for what it is for: chunks on the batch whose output rows the budget
    dropped (passes on other data after Part 1), joined and compared on the host."""
    events = traced_vnode(2)
    model, x, output = part1()
    for _ in range(vrows.MAX_RECORDS):
        model(torch.randn(BATCH // 2, IN, device="cuda:0"))
    outputs = [model(chunk) for chunk in torch.chunk(x, 2)]
    final = np.concatenate([on_host(o) for o in outputs])
    assert np.allclose(final, on_host(output), atol=1e-5)
    run = observed(events)
    assert any(p["rows_out_dropped"] for p in p4.all_chunk_passes(run, BATCH))
    p4.combined_equals_full(run, BATCH)


# -- adv36 F2: the chunk passes are passes of Part 1's model -------------------------------------

class Replay(nn.Module):
    """A module of one parameter that ignores its chunk and returns slices of Part 1's output."""

    def __init__(self, full):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(1, device=full.device))
        self.full, self.at = full.detach(), 0

    def forward(self, chunk):
        rows = self.full[self.at:self.at + chunk.shape[0]] * self.scale
        self.at += chunk.shape[0]
        return rows


@pytest.mark.parametrize("name", ["Replay", "Sequential"])
def test_another_module_returning_part1s_rows_runs_no_chunk(traced_vnode, name):
    """Also where its class is named as Part 1's model's (`Sequential`): told apart by the class
    itself (`class_id`), not its name (eng_p4e, 8.5 -> 5.7)."""
    events = traced_vnode(2)
    model, x, output = part1()
    replay = type(name, (Replay,), {})(output)
    final = torch.cat([replay(c) for c in torch.chunk(torch.zeros_like(x), 2)])
    assert torch.allclose(final, output)
    run = observed(events)
    assert p4.chunk_passes(run, BATCH) == [], [p["module"] for p in p4.chunk_passes(run, BATCH)]
    verdict = p4.combined_against_full(run, BATCH)
    assert verdict is None or verdict[0] is False, verdict


def test_per_gpu_copies_of_the_model_run_the_chunks(traced_vnode):
    """The honest style the check must keep: a deepcopy of the model on each GPU."""
    import copy
    events = traced_vnode(2)
    model, x, output = part1()
    replicas = [copy.deepcopy(model).to(f"cuda:{i}") for i in range(2)]
    outputs = [r(c.to(f"cuda:{i}")) for i, (r, c) in enumerate(zip(replicas, torch.chunk(x, 2)))]
    torch.cat([o.to("cuda:0") for o in outputs])
    run = observed(events)
    assert len(p4.chunk_passes(run, BATCH)) == 2
    p4.split_into_chunks(run, BATCH)
    p4.combined_equals_full(run, BATCH)


# -- adv36 F3: the rows budget spent before Part 1 excuses nothing -------------------------------

def test_a_flood_before_part1_excuses_nothing(traced_vnode):
    events = traced_vnode(2)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(IN, 16), nn.ReLU(), nn.Linear(16, 5)).to("cuda:0")
    for _ in range(40):
        model(torch.randn(BATCH + 1, IN, device="cuda:0"))
    x = torch.randn(BATCH, IN, device="cuda:0")
    model(x)
    torch.cat([model(c) for c in torch.chunk(torch.zeros_like(x) + 1e-3, 2)])
    run = observed(events)
    assert p4.full_batch_pass(run, BATCH)["rows_out_dropped"], "the flood spent no budget"
    verdict = p4.combined_against_full(run, BATCH)
    assert verdict is not None and verdict[0] is False, verdict
    assert "were not recorded" in verdict[1], verdict
    with pytest.raises(AssertionError) as failed:
        p4.split_into_chunks(run, BATCH)
    assert "were not recorded" in str(failed.value)
