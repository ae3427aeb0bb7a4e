"""Practical 4, Part 2: a copy of a tensor is that tensor, and a tensor filled row by row with
the chunks' outputs is their combination (a TA's audit29 D1, a red team's adv29 A2 and B3).

D1: `final_output = torch.zeros(64, 1000)` filled by slices (`final_output[i*n:(i+1)*n] =
out_i`) and compared by `(final_output - output).abs().max() < 1e-6`, not torch.allclose, lost
chunks_equal_full and outputs_equal_reported (2.4 points): only a torch.cat or an allclose/equal
call was a combination. A fill is now recorded (rows.py `fill`), and the filled tensor is the
chunk outputs' rows in the order they fill it, whatever the script compares it with.
A2: `outputs.append(out.clone())` then torch.cat lost the same 2.4 points, as a clone was a
tensor of its own, no chunk's output. B3: `final_output = output.clone()` beside chunks run for
nothing earned them, the clone being a tensor of the script's own. Copies (clone, contiguous,
a dtype's method, deepcopy, a whole copy_) are now written as the tensor they copy.
"""
from __future__ import annotations

import copy

import pytest
import torch
import torch.nn as nn

from grader.checks import test_practical4 as p4
from grader.harness.observation import Observation

BATCH, IN, OUT = 64, 12, 5
HALF = BATCH // 2


def observed(events) -> Observation:
    return Observation("practical4/concepts.py", gpus=2, returncode=0, events=list(events),
                       stdout="")


def part1(device="cuda:0"):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(IN, 16), nn.ReLU(), nn.Linear(16, OUT)).to(device)
    x = torch.randn(BATCH, IN).to(device)
    return model, x, model(x)


def combine(style, model, x, device="cuda:0"):
    """Part 2 written the way `style` says; the combined output."""
    chunks = torch.chunk(x, 2)
    final = torch.zeros(BATCH, OUT, device=device)
    if style == "slices":                       # audit29's p4_prealloc_absmax
        for i, chunk in enumerate(chunks):
            out_i = model(chunk)
            final[i * HALF:(i + 1) * HALF] = out_i
    elif style == "slice_copy_":
        for i, chunk in enumerate(chunks):
            final[i * HALF:(i + 1) * HALF].copy_(model(chunk))
    elif style == "narrow_copy_":
        for i, chunk in enumerate(chunks):
            final.narrow(0, i * HALF, HALF).copy_(model(chunk))
    elif style == "index_copy_":
        for i, chunk in enumerate(chunks):
            final.index_copy_(0, torch.arange(i * HALF, (i + 1) * HALF, device=device),
                              model(chunk))
    elif style == "index_list":
        for i, chunk in enumerate(chunks):
            final[list(range(i * HALF, (i + 1) * HALF))] = model(chunk)
    elif style == "row_by_row":
        for i, chunk in enumerate(chunks):
            out = model(chunk)
            for j in range(HALF):
                final[i * HALF + j] = out[j]
    elif style == "clone":                      # adv29 A2
        final = torch.cat([model(chunk).clone() for chunk in chunks])
    elif style == "detach_clone":
        final = torch.cat([model(chunk).detach().clone() for chunk in chunks])
    elif style == "deepcopy":
        with torch.no_grad():
            final = torch.cat([copy.deepcopy(model(chunk)) for chunk in chunks])
    elif style == "contiguous":
        final = torch.cat([model(chunk).t().contiguous().t().contiguous() for chunk in chunks])
    elif style == "double":
        final = torch.cat([model(chunk).double() for chunk in chunks]).float()
    elif style == "copy_into_fresh":
        outputs = []
        for chunk in chunks:
            kept = torch.empty(HALF, OUT, device=device)
            kept.copy_(model(chunk))
            outputs.append(kept)
        final = torch.cat(outputs)
    return final


HONEST = ["slices", "slice_copy_", "narrow_copy_", "index_copy_", "index_list", "row_by_row",
          "clone", "detach_clone", "deepcopy", "contiguous", "double", "copy_into_fresh"]


@pytest.mark.parametrize("compared", ["abs_max", "none"])
@pytest.mark.parametrize("style", HONEST)
def test_the_chunks_outputs_combined_any_way_are_the_combination(traced_vnode, style,
                                                                 compared):
    events = traced_vnode(2)
    model, x, output = part1()
    final = combine(style, model, x)
    if compared == "abs_max":                  # no allclose, no equal: nothing recorded here
        assert bool((final - output).abs().max() < 1e-5)
    verdict = p4.combined_against_full(observed(events), BATCH)
    assert verdict is not None and verdict[0] is True, (style, verdict)


def test_a_filled_tensor_is_judged_by_its_rows_in_the_order_filled(traced_vnode):
    events = traced_vnode(2)
    model, x, output = part1()
    outputs = [model(chunk) for chunk in torch.chunk(x, 2)]
    final = torch.empty(BATCH, OUT, device="cuda:0")
    final[:HALF] = outputs[1]
    final[HALF:] = outputs[0]
    torch.allclose(final, output)
    verdict = p4.combined_against_full(observed(events), BATCH)
    assert verdict is not None and verdict[0] is False, verdict
    assert "not in order: its row 0 is the full output's row 32" in verdict[1], verdict
    assert "filled with the chunks' outputs at" in verdict[1], verdict


def test_a_tensor_filled_only_half_way_says_which_rows_are_missing(traced_vnode):
    events = traced_vnode(2)
    model, x, output = part1()
    final = torch.zeros(BATCH, OUT, device="cuda:0")
    for chunk in torch.chunk(x, 2):
        final[:HALF] = model(chunk)            # the same rows twice
    verdict = p4.combined_against_full(observed(events), BATCH)
    assert verdict is not None and verdict[0] is False, verdict
    assert "rows 32-63" in verdict[1], verdict


@pytest.mark.parametrize("forgery", ["clone_of_full", "clone_compared_by_abs_max",
                                     "pieces_of_full_filled", "full_copied_whole",
                                     "full_cloned_then_cat"])
def test_part1s_output_copied_or_cut_into_a_tensor_combines_nothing(traced_vnode, forgery):
    """Chunks run for nothing; the 'combined' output is Part 1's, copied or cut and filled."""
    events = traced_vnode(2)
    model, x, output = part1()
    for chunk in torch.chunk(x, 2):
        model(chunk)                           # its output thrown away
    if forgery in ("clone_of_full", "clone_compared_by_abs_max"):   # adv29 B3
        final = output.clone()
    elif forgery == "pieces_of_full_filled":
        final = torch.empty(BATCH, OUT, device="cuda:0")
        final[:HALF] = output[:HALF]
        final[HALF:] = output[HALF:]
    elif forgery == "full_copied_whole":
        final = torch.empty(BATCH, OUT, device="cuda:0")
        final.copy_(output.detach())
    else:
        final = torch.cat([piece.clone() for piece in torch.chunk(output, 2)])
    if forgery == "clone_compared_by_abs_max":
        (final - output).abs().max()
    else:
        torch.allclose(final, output)
    run = observed(events)
    assert p4.combined_against_full(run, BATCH) is None, forgery
    with pytest.raises(AssertionError):
        p4.combined_equals_full(run, BATCH)


def test_part1s_pieces_filled_are_named_in_the_feedback(traced_vnode):
    events = traced_vnode(2)
    model, x, output = part1()
    for chunk in torch.chunk(x, 2):
        model(chunk)
    final = torch.empty(BATCH, OUT, device="cuda:0")
    final[:HALF] = output[:HALF]
    final[HALF:] = output[HALF:]
    with pytest.raises(AssertionError) as failed:
        p4.combined_equals_full(observed(events), BATCH)
    assert "is filled with a tensor that is not the output of a model's pass" in \
        str(failed.value)


def test_a_fill_is_recorded_on_the_real_gpu_observer_too(tmp_path):
    """RealGPUObserverMode (real GPUs; run here on the host) records fills and copies as the
    virtual GPUs' mode does."""
    from grader.vgpu.mode import RealGPUObserverMode
    from grader.vgpu.observe import Observer
    from grader.vgpu.patcher import Patcher
    from grader.vgpu.trace import Trace, get_trace, set_trace

    before = get_trace()
    trace = Trace(None, 0)
    events: list[dict] = []
    trace.listeners.append(events.append)
    set_trace(trace)
    patcher = Patcher()
    observer = Observer(trace)
    observer.install(patcher)
    try:
        with RealGPUObserverMode():
            model, x, output = part1("cpu")
            final = combine("slices", model, x, device="cpu")
            (final - output).abs().max()
            cloned = combine("clone", model, x, device="cpu")
    finally:
        observer.uninstall()
        patcher.restore()
        set_trace(before)
    assert [e["at"][0] for e in events if e["event"] == "fill"] == [0, HALF], events
    verdict = p4.combined_against_full(observed(events), BATCH)
    assert verdict is not None and verdict[0] is True, verdict
    del cloned
