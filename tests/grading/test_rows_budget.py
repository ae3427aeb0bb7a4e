"""Row fingerprints from a real traced run: what a concatenation joins, and the records' budget
(a red team's adv28, F2 and F3).

F2: `final_output = torch.cat(torch.chunk(output, 2))` is Part 1's output cut and glued back, no
chunk run through the model; it earned Practical 4's chunks_equal_full (2 points) and the
answer's 0.4. A concatenation now counts only where its inputs are the chunk passes' outputs
(as the passes returned them, or copies `.to()` made of them).

F3: 64 records of rows a process were shared by every pass, so a timing loop (P4) or a
validation before training (P6) used them up and the checks read the passes that followed as
holding no rows ("the chunks hold 0 rows of the batch", "no rank recorded the rows it trained
on"). Passes under no_grad now have records of their own, rows recorded once are named again
(`rows_as`) instead of spent again, and a record past the budget says `rows_dropped`, which the
checks read as not known.
"""
from __future__ import annotations

import json
import threading

import pytest
import torch
import torch.nn as nn

from grader.checks import practical_measures as pm
from grader.checks import test_practical4 as p4
from grader.checks import test_practical6 as p6
from grader.harness.observation import Observation
from grader.vgpu import rows as vrows

BATCH, IN, OUT = 64, 12, 5


def observed(events, script="practical4/concepts.py", gpus=2) -> Observation:
    return Observation(script, gpus=gpus, returncode=0, events=list(events), stdout="")


def model_on(device="cuda:0") -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(IN, 16), nn.ReLU(), nn.Linear(16, OUT)).to(device)


def part1(extra_passes=0, no_grad=False):
    """Part 1 of Practical 4 on the node, with `extra_passes` timing passes after it."""
    model = model_on()
    x = torch.randn(BATCH, IN).to("cuda:0")
    output = model(x)
    with torch.no_grad() if no_grad else torch.enable_grad():
        for _ in range(extra_passes):
            model(x)
    return model, x, output


def verdict(events):
    run = observed(events)
    return p4.combined_against_full(run, BATCH)


# -- F2: what the concatenation joins ------------------------------------------------------------


def test_the_full_output_cut_and_glued_back_is_no_combination(traced_vnode):
    events = traced_vnode(2)
    _, x, output = part1()
    for chunk in torch.chunk(x, 2):
        print(chunk.shape)
    final_output = torch.cat(torch.chunk(output, 2))
    assert torch.allclose(final_output, output)
    run = observed(events)
    assert p4.combined_against_full(run, BATCH) is None
    with pytest.raises(AssertionError) as failed:
        p4.combined_equals_full(run, BATCH)
    assert "that are not the outputs of the model's passes on the chunks" in str(failed.value)


def test_the_full_output_glued_back_beside_chunks_run_for_nothing_is_none(traced_vnode):
    events = traced_vnode(2)
    model, x, output = part1()
    for chunk in torch.chunk(x, 2):
        model(chunk)                       # run, its output thrown away
    final_output = torch.cat(torch.chunk(output, 2))
    torch.allclose(final_output, output)
    assert verdict(events) is None
    # A copy of Part 1's output moved away and back is Part 1's output too.
    events.clear()
    model, x, output = part1()
    for chunk in torch.chunk(x, 2):
        model(chunk)
    final_output = output.to("cuda:1").to("cuda:0")
    torch.allclose(final_output, output)
    assert verdict(events) is None


@pytest.mark.parametrize("style", ["cat", "concat", "vstack", "comprehension", "stack",
                                   "moved_to_cpu_and_back", "replica_per_gpu", "threads",
                                   "no_grad"])
def test_the_chunks_outputs_joined_are_the_combination(traced_vnode, style):
    events = traced_vnode(2)
    model, x, output = part1()
    chunks = torch.chunk(x, 2)
    if style == "comprehension":
        final_output = torch.cat([model(chunk) for chunk in chunks])
    elif style == "moved_to_cpu_and_back":
        final_output = torch.cat([model(chunk).cpu() for chunk in chunks]).to("cuda:0")
    elif style == "replica_per_gpu":
        outputs = []
        for i, chunk in enumerate(chunks):
            replica = model_on(f"cuda:{i}")
            replica.load_state_dict(model.state_dict())
            outputs.append(replica(chunk.to(f"cuda:{i}")).to(x.device))
        final_output = torch.cat(outputs)
    elif style == "threads":
        outputs = [None] * len(chunks)

        def run_chunk(i, chunk):
            outputs[i] = model(chunk)
        workers = [threading.Thread(target=run_chunk, args=(i, c)) for i, c in enumerate(chunks)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        final_output = torch.cat(outputs)
    elif style == "no_grad":
        with torch.no_grad():
            final_output = torch.cat([model(chunk) for chunk in chunks])
    elif style == "stack":
        final_output = torch.stack([model(chunk) for chunk in chunks]).flatten(0, 1)
    else:
        final_output = getattr(torch, style)([model(chunk) for chunk in chunks])
    torch.allclose(final_output, output, atol=1e-5)
    found = verdict(events)
    assert found is not None and found[0] is True, (style, found)
    assert "torch.cat at" in found[1], found


def test_manual_scatter_parallel_apply_and_gather_combine(traced_vnode):
    events = traced_vnode(2)
    model, x, output = part1()
    replicas = nn.parallel.replicate(model, [0, 1])
    inputs = nn.parallel.scatter(x, [0, 1])
    outputs = nn.parallel.parallel_apply(replicas, inputs)
    final_output = nn.parallel.gather(outputs, 0)
    torch.allclose(final_output, output, atol=1e-5)
    found = verdict(events)
    assert found is not None and found[0] is True, found


def test_chunks_joined_in_reverse_are_said_out_of_order(traced_vnode):
    events = traced_vnode(2)
    model, x, output = part1()
    outputs = [model(chunk) for chunk in torch.chunk(x, 2)]
    torch.cat(outputs[::-1])
    found = verdict(events)
    assert found is not None and found[0] is False and "not in order" in found[1], found


# -- F3: the budget of records -------------------------------------------------------------------


def test_a_timing_loop_in_part1_costs_no_point(traced_vnode):
    """The red team's honest P4: Part 1 timed with 5 + 30 passes under no_grad."""
    events = traced_vnode(2)
    model, x, output = part1(extra_passes=35, no_grad=True)
    outputs = [model(chunk) for chunk in torch.chunk(x, 2)]
    torch.allclose(torch.cat(outputs), output, atol=1e-5)
    run = observed(events)
    p4.split_into_chunks(run, BATCH)
    p4.combined_equals_full(run, BATCH)
    # The timing loop's passes name the rows recorded for the first (nothing spent).
    repeats = [e for e in events if e["event"] in ("forward", "forward_out") and "rows_as" in e]
    assert len(repeats) >= 2 * 34, len(repeats)


def test_a_timing_loop_with_gradients_costs_no_point(traced_vnode):
    events = traced_vnode(2)
    model, x, output = part1(extra_passes=100)
    outputs = [model(chunk) for chunk in torch.chunk(x, 2)]
    torch.allclose(torch.cat(outputs), output, atol=1e-5)
    run = observed(events)
    p4.split_into_chunks(run, BATCH)
    p4.combined_equals_full(run, BATCH)


def test_rows_past_the_budget_are_not_known_not_wrong(traced_vnode):
    """Passes on ever other inputs use the budget up: the chunks' rows are dropped, said so,
    and the check decides on what is known (the chunks' sizes)."""
    events = traced_vnode(2)
    model, x, output = part1()
    for _ in range(vrows.MAX_RECORDS):
        model(torch.randn(BATCH, IN, device="cuda:0"))
    outputs = [model(chunk) for chunk in torch.chunk(x, 2)]
    torch.allclose(torch.cat(outputs), output, atol=1e-5)
    run = observed(events)
    chunks = p4.chunk_passes(run, BATCH)
    assert chunks and all(p["rows_dropped"] and p["rows_in"] is None for p in chunks)
    p4.split_into_chunks(run, BATCH)
    p4.combined_equals_full(run, BATCH)


def test_a_validation_before_training_leaves_the_training_rows(traced_vnode):
    """The red team's honest P6 (one rank here): 40 no_grad passes of 8 rows, then training."""
    events = traced_vnode(1)
    model = model_on()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with torch.no_grad():
        for vx in torch.randn(320, IN, device="cuda:0").split(8):
            model(vx)
    x = torch.randn(32, IN, device="cuda:0")
    model(x).pow(2).mean().backward()
    optimizer.step()
    run = observed(events, script="practical6/practical6_ddp.py", gpus=1)
    rows = pm.first_step_rows(run, 0)
    assert len(rows) == 32 and not pm.first_step_rows_dropped(run, 0)


def test_a_training_batch_seen_before_under_no_grad_is_named_again(traced_vnode):
    events = traced_vnode(1)
    model = model_on()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(32, IN, device="cuda:0")
    with torch.no_grad():
        model(x)                           # the loss before training, on the same batch
    model(x).pow(2).mean().backward()
    optimizer.step()
    run = observed(events, script="practical6/practical6_ddp.py", gpus=1)
    training = [e for e in events if e["event"] == "forward" and e["grad"]]
    assert "rows_as" in training[0] and "rows" not in training[0]
    assert len(pm.first_step_rows(run, 0)) == 32


def test_different_data_is_not_failed_on_rows_not_recorded(monkeypatch):
    """P6's check, with every training pass's rows dropped: never 'no rank recorded', and no
    longer skipped (a skip left the maximum, adv31 H3): nothing known says other rows, so it
    passes (tests/grading/test_practical6_warmup_rows.py: the outputs compared where they are
    recorded)."""
    events = []
    for rank in (0, 1):
        events += [{"event": "start", "rank": rank},
                   {"event": "forward", "rank": rank, "n": 1, "step": 0, "batch": [32, 10],
                    "thread": "MainThread", "grad": True, "rows_dropped": True},
                   {"event": "forward_out", "rank": rank, "shape": [32, 10],
                    "thread": "MainThread", "rows_dropped": True},
                   {"event": "forward_used", "rank": rank, "n": 1, "step": 0},
                   {"event": "backward", "rank": rank},
                   {"event": "step", "rank": rank, "index": 1}]
    run = observed(events, script="practical6/practical6_ddp.py")
    monkeypatch.setattr(p6, "ddp_run", lambda runs, processes: run)
    p6.test_ranks_train_on_different_rows_of_one_batch(None, 2)
    # One rank's rows recorded, the other's dropped: what is known decides, and passes.
    events[1] = {**events[1], "rows": [[float(i), float(i * i)] for i in range(32)]}
    del events[1]["rows_dropped"]
    run = observed(events, script="practical6/practical6_ddp.py")
    p6.test_ranks_train_on_different_rows_of_one_batch(None, 2)


def test_a_flood_of_passes_keeps_the_trace_bounded(traced_vnode, tmp_path):
    """Hundreds of passes on ever other inputs, joined and compared: rows for at most
    MAX_RECORDS records of each budget, every other record small. (Unbounded, 200 rounds
    hold rows in about 1000 records, over the bound below.)"""
    events = traced_vnode(1)
    model = model_on()
    for i in range(200):
        y = model(torch.randn(BATCH, IN, device="cuda:0"))
        with torch.no_grad():
            model(torch.randn(BATCH, IN, device="cuda:0"))
        torch.cat([y, y])
        torch.allclose(y, y)
    with_rows = [e for e in events if e.get("rows")]
    with_rows += [o for e in events if e["event"] == "compare" for o in e["operands"]
                  if o.get("rows")]
    assert len(with_rows) <= 2 * vrows.MAX_RECORDS * len(vrows.BUDGETS), len(with_rows)
    dropped = [e for e in events if e.get("rows_dropped")]
    assert len(dropped) > 500
    small = max(len(json.dumps(e)) for e in dropped)
    assert small < 600, small
