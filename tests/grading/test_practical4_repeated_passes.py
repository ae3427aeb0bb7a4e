"""Practical 4: a Part 2 or Part 3 run again (timed, as tutorials do) is judged on one forward
pass, never on the sum of its repetitions (a red team's adv31 H2).

An honest script that timed Part 3's forward (3 warm-up and 10 timed `layer2(layer1(x).to(
device1))` passes) was told "11 move(s) of the activation" and its right answer "1 transfer"
was marked wrong (1.9 points); one that timed Part 2 (`torch.cat([model(c) for c in chunks])`
10 times) was told "22 forward pass(es) on parts of the batch (704 of the batch's 64 rows)" and
lost its chunk shapes (1.4 points). The checks now count the moves of each Part 3 forward pass
(every one must move the activation exactly once) and read Part 2's first run of chunk passes
that covers the batch; what they must still catch is caught: a Part 3 that moves the
activation twice per pass, a Part 2 of 3 chunks, chunks that leave rows of the batch out.

Real traced runs on 2 virtual GPUs, the batch of 64 with smaller layers (the checks know
Part 3's layers by their parameter counts, set here to the small layers').
"""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from grader.checks import test_practical4 as p4
from grader.harness.observation import Observation
from tests.grading.test_practical4_stopped_part3 import agree_with

BATCH, IN_DIM, HIDDEN, OUT_DIM = p4.BATCH, 12, 20, 10
TIMED = 10


@pytest.fixture(autouse=True)
def small_layers(monkeypatch):
    """The handout's layers (1000 -> 2000 -> 1000) made small, so a test takes well under a
    second: the checks read the sizes from these names."""
    for name, value in (("IN_DIM", IN_DIM), ("HIDDEN", HIDDEN), ("OUT_DIM", OUT_DIM),
                        ("LAYER1_PARAMS", IN_DIM * HIDDEN + HIDDEN),
                        ("LAYER2_PARAMS", HIDDEN * OUT_DIM + OUT_DIM)):
        monkeypatch.setattr(p4, name, value)


def observed(events) -> Observation:
    return Observation(p4.SCRIPT, gpus=2, returncode=0, events=list(events), stdout="")


def parts_1_and_2(split=2, timed=0, timing_first=False, rows=None):
    """Parts 1 and 2 as the reference writes them; `timed`: the chunked forward (and the full
    one) run again that many times under no_grad afterwards (adv31's p2_timed), or before the
    combination (`timing_first`: the last repetition's outputs are the ones combined)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(IN_DIM, HIDDEN), nn.ReLU(),
                          nn.Linear(HIDDEN, OUT_DIM)).to("cuda:0")
    x = torch.randn(BATCH, IN_DIM).to("cuda:0")
    output = model(x)
    chunks = torch.chunk(x, split) if rows is None else [x[a:b] for a, b in rows]
    if timing_first:
        with torch.no_grad():
            for _ in range(timed):
                outputs = [model(c) for c in chunks]
        final_output = torch.cat(outputs)
    else:
        final_output = torch.cat([model(c) for c in chunks])
    if final_output.shape == output.shape:
        torch.allclose(final_output, output, atol=1e-5)
    if timed and not timing_first:
        with torch.no_grad():
            for _ in range(timed):
                model(x)
            for _ in range(timed):
                torch.cat([model(c) for c in chunks])


class TwoGPUModel(nn.Module):
    """Part 3 as a module of the student's own (the PyTorch tutorial's style)."""

    def __init__(self):
        super().__init__()
        self.layer1 = nn.Linear(IN_DIM, HIDDEN).to("cuda:0")
        self.layer2 = nn.Linear(HIDDEN, OUT_DIM).to("cuda:1")

    def forward(self, x):
        return self.layer2(self.layer1(x).to("cuda:1"))


def part3(round_trips=0, warm_up=0, timed=0, no_grad=False, module=False):
    """Part 3 with loose layers (or `module`: a module of the student's), the activation moved
    to cuda:1 once per forward pass, and `round_trips` times more back to cuda:0 and on again;
    then `warm_up` and `timed` passes more."""
    layer1 = nn.Linear(IN_DIM, HIDDEN).to("cuda:0")
    layer2 = nn.Linear(HIDDEN, OUT_DIM).to("cuda:1")
    x = torch.randn(BATCH, IN_DIM).to("cuda:0")

    def loose(inp):
        out = layer1(inp).to("cuda:1")
        for _ in range(round_trips):
            out = out.to("cuda:0").to("cuda:1")
        return layer2(out)

    forward = TwoGPUModel() if module else loose

    forward(x)
    with torch.no_grad() if no_grad else torch.enable_grad():
        for _ in range(warm_up + timed):
            forward(x)


# -- Part 3: one move of the activation per forward pass -----------------------------------------


@pytest.mark.parametrize("no_grad, module", [(False, False), (True, False), (False, True)],
                         ids=["autograd", "no_grad", "module"])
def test_a_timed_part3_moves_the_activation_once_per_forward(traced_vnode, no_grad, module):
    events = traced_vnode(2)
    parts_1_and_2()
    part3(warm_up=3, timed=TIMED, no_grad=no_grad, module=module)
    run = observed(events)
    p4.test_one_activation_transfer(run)
    answers, agree = agree_with({"part3.transfers_per_forward": 1})
    p4.test_reported_transfers_per_forward(run, answers, agree)


@pytest.mark.parametrize("timed", [0, TIMED], ids=["once", "timed"])
def test_a_part3_that_moves_the_activation_more_than_once_still_fails(traced_vnode, timed):
    events = traced_vnode(2)
    parts_1_and_2()
    part3(round_trips=1, timed=timed)
    run = observed(events)
    with pytest.raises(AssertionError) as failure:
        p4.test_one_activation_transfer(run)
    assert "3 move(s) of the activation between GPUs in one forward pass" in str(failure.value), \
        str(failure.value)
    answers, agree = agree_with({"part3.transfers_per_forward": 1})
    with pytest.raises(AssertionError) as failure:
        p4.test_reported_transfers_per_forward(run, answers, agree)
    assert "3 time(s)" in str(failure.value), str(failure.value)
    answers, agree = agree_with({"part3.transfers_per_forward": 3})
    p4.test_reported_transfers_per_forward(run, answers, agree)


def test_one_extra_move_in_a_later_pass_is_still_caught(traced_vnode):
    """Every forward pass must move the activation once: a timed pass that moves it three
    times fails the check, while the answer is about the first pass."""
    events = traced_vnode(2)
    parts_1_and_2()
    part3(timed=2)
    part3(round_trips=1)
    run = observed(events)
    with pytest.raises(AssertionError) as failure:
        p4.test_one_activation_transfer(run)
    assert "[1, 1, 1, 3]" in str(failure.value), str(failure.value)


# -- Part 2: the first run of chunk passes that covers the batch -----------------------------------


@pytest.mark.parametrize("timing_first", [False, True], ids=["timed_after", "timed_before_cat"])
def test_a_timed_part2_is_read_as_its_two_chunks(traced_vnode, timing_first):
    events = traced_vnode(2)
    parts_1_and_2(timed=TIMED, timing_first=timing_first)
    part3()
    run = observed(events)
    assert [p["rows"] for p in p4.chunk_passes(run, BATCH)] == [32, 32]
    p4.split_into_chunks(run, BATCH)
    p4.combined_equals_full(run, BATCH)
    answers, agree = agree_with({"part2.chunk_shapes": [[32, IN_DIM], [32, IN_DIM]]})
    p4.test_reported_chunk_shapes(run, answers, agree)
    p4.test_one_activation_transfer(run)
    p4.test_output_comes_out_of_second_gpu(run)


@pytest.mark.parametrize("timed", [0, TIMED], ids=["once", "timed"])
def test_a_part2_of_three_chunks_still_fails(traced_vnode, timed):
    events = traced_vnode(2)
    parts_1_and_2(split=3, timed=timed)
    run = observed(events)
    with pytest.raises(AssertionError) as failure:
        p4.split_into_chunks(run, BATCH)
    assert "3 forward pass(es) on parts of the batch, of [22, 22, 20] rows" in str(failure.value), \
        str(failure.value)


@pytest.mark.parametrize("timed", [0, TIMED], ids=["once", "timed"])
def test_chunks_that_leave_rows_out_still_fail(traced_vnode, timed):
    events = traced_vnode(2)
    parts_1_and_2(timed=timed, rows=[(0, 16), (16, 32)])
    run = observed(events)
    with pytest.raises(AssertionError) as failure:
        p4.split_into_chunks(run, BATCH)
    assert "of [16, 16] rows (32 of the batch's 64 rows)" in str(failure.value), \
        str(failure.value)
