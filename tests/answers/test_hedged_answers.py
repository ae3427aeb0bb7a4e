"""Hedged answers that offer a second value are held for a person, never read as their first
number (red team adv54 F3: "2 - could be 4", "32 (16)", "8x maybe" and "1.2 (maybe 1.5)" were
read as 2, 32, 8 and 1.2 and paid). Beside each, the honest form with a remark on the same
answer, which must keep being read.
"""
from __future__ import annotations

import pytest

from grader.answers.sheet import NotRead, coerce, template_questions

HW3 = template_questions("hw3")
P5 = template_questions("practical5")
P6 = template_questions("practical6")
P10 = template_questions("practical10")
WHERE = "see grader/answers/numbers.py remark_on_count, HEDGE_WORDS and sheet.py _int, _cell, _value_with_remark"
HELD = "not read"


def _read(raw, question):
    try:
        return coerce(raw, question, [])
    except (NotRead, ValueError) as error:
        return f"{HELD}: {error}"


@pytest.mark.parametrize("question, raw, read", [
    # The red team's hedges (adv54 F3): a second count offered after a dash.
    (P10["hybrid.num_processes"], "2 - could be 4", HELD),
    (P10["hybrid.gpus_per_rank"], "2 - otherwise 1", HELD),
    (P10["hybrid.micro_batches_per_step"], "4 - possibly 1", HELD),
    (P10["hybrid.micro_batch_size"], "16 - else 64", HELD),
    (P6["ddp.world_size"], "2 - possibly 1", HELD),
    (P6["ddp.per_rank_batch"], "32 - otherwise 64", HELD),
    (P6["ddp.world_size"], "2 - unless you count 4", HELD),
    (P6["ddp.world_size"], "1 - but 19 calls; 19 if counting calls", HELD),   # a second count, no hedge word
    # ... or bare in brackets after a count.
    (P6["ddp.per_rank_batch"], "32 (64)", HELD),
    (HW3["task5.transfers_5gpus"], "4 (16)", HELD),
    # ... or after a count, inside brackets holding a hedge or a second count (adv56 F5).
    (P10["hybrid.num_processes"], "2 (two or four)", HELD),
    (P10["hybrid.gpus_per_rank"], "2 (4 perhaps)", HELD),
    (P10["hybrid.micro_batches_per_step"], "4 (else eight)", HELD),
    (P10["hybrid.micro_batch_size"], "16 (32 alternatively)", HELD),
    (P6["ddp.per_rank_batch"], "32 (sixty-four?)", HELD),
    (P6["ddp.per_rank_batch"], "32 (~64)", HELD),
    (P6["ddp.per_rank_batch"], "32 (≈64)", HELD),
    (P6["ddp.per_rank_batch"], "32 (unless 64)", HELD),
    (P6["ddp.per_rank_batch"], "32 (guess: 64)", HELD),
    (P6["ddp.per_rank_batch"], "32 (64 is also possible)", HELD),
    (P6["ddp.world_size"], "2 (2, 4)", HELD),
    (P6["ddp.world_size"], "2 (2/4)", HELD),
    (P6["ddp.world_size"], "2 (two, four)", HELD),
    # Honest remarks on the count keep being read.
    (P6["ddp.world_size"], "2 (one per GPU)", 2),
    (P6["ddp.world_size"], "2 (two processes)", 2),
    (P6["ddp.world_size"], "2 (cuda:0 and cuda:1)", 2),
    (P6["ddp.per_rank_batch"], "32 (64/2)", 32),
    (P6["ddp.per_rank_batch"], "32 (BATCH_SIZE / world size)", 32),
    (HW3["task5.transfers_5gpus"], "4 (with 2 GPUs it was 1)", 4),
    (P6["ddp.per_rank_batch"], "32 samples per GPU (64 total)", 32),   # adv55's honest sheet
    (P6["ddp.per_rank_batch"], "32 (out of 64)", 32),
    (P6["ddp.per_rank_batch"], "32 (64 total, maybe)", HELD),
    # A total smaller than its part, a second count in another language (adv57 F-A).
    (P6["ddp.per_rank_batch"], "32 (16 total)", HELD),
    (P10["hybrid.num_processes"], "2 (vier)", HELD),
    (P10["hybrid.micro_batches_per_step"], "4 (acht)", HELD),
    (P10["hybrid.num_processes"], "2 (zwei)", 2),
    (P10["hybrid.num_processes"], "2 (due to DDP's one process per GPU)", 2),
    (P6["ddp.world_size"], "2 - ranks 0 and 1", 2),
    (P6["ddp.world_size"], "2 - cuda:0 and cuda:1", 2),
    (P10["hybrid.num_processes"], "2 - one per data-parallel replica", 2),
    (P6["ddp.world_size"], "5 - 1", 4),
    (HW3["task5.to_calls_5gpus"], "20, one per layer", 20),
    (HW3["task5.transfers_5gpus"], "4 (N-1)", 4),
    (P10["hybrid.micro_batch_size"], "16 samples (64/4)", 16),
    (P10["hybrid.micro_batches_per_step"], "4 micro-batches of 16", 4),
])
def test_a_count_with_a_hedged_remark_is_held(question, raw, read):
    got = _read(raw, question)
    ok = got.startswith(read) if isinstance(read, str) and isinstance(got, str) else got == read
    assert ok, f"{question.id} {raw!r}: expected {read!r}, observed {got!r} ({WHERE})"


@pytest.mark.parametrize("cells, read", [
    # The red team's table rows: a bare second count in brackets, a hedged "x".
    ({"micro_batches": 2, "passes_per_step": "2 (4)", "micro_batch_size": "32 (16)"},
     {"micro_batches": 2, "passes_per_step": "2 (4)", "micro_batch_size": "32 (16)"}),
    ({"micro_batches": 8, "passes_per_step": "8x maybe", "micro_batch_size": "8 (64)"},
     {"micro_batches": 8, "passes_per_step": "8x maybe", "micro_batch_size": "8 (64)"}),
    # A calculation that comes to another count is a second answer too.
    ({"micro_batches": 2, "passes_per_step": "2x fwd or bwd", "micro_batch_size": "32 (64/4)"},
     {"micro_batches": 2, "passes_per_step": "2x fwd or bwd", "micro_batch_size": "32 (64/4)"}),
    # Honest: the calculation that comes to the count, the passes' kinds.
    ({"micro_batches": 2, "passes_per_step": "2x", "micro_batch_size": "32 (64/2)"},
     {"micro_batches": 2, "passes_per_step": 2, "micro_batch_size": 32}),
    ({"micro_batches": 8, "passes_per_step": "8x fwd/bwd", "micro_batch_size": "8 (one per rank)"},
     {"micro_batches": 8, "passes_per_step": 8, "micro_batch_size": 8}),
    # adv55's honest rows: the passes counted by kind. Practical 10's "how many forward/backward
    # steps" counts a forward with its backward as one step (the check does): "k forward + k
    # backward" answers k (adv55 B); unequal kinds keep the total; a hedge stays a hedge.
    ({"micro_batches": 2, "passes_per_step": "4 (2 forward + 2 backward)", "micro_batch_size": 32},
     {"micro_batches": 2, "passes_per_step": 2, "micro_batch_size": 32}),
    ({"micro_batches": 8, "passes_per_step": "16 (8 fwd and 8 bwd)", "micro_batch_size": 8},
     {"micro_batches": 8, "passes_per_step": 8, "micro_batch_size": 8}),
    ({"micro_batches": 2, "passes_per_step": "4 (3 forward + 1 backward)", "micro_batch_size": 32},
     {"micro_batches": 2, "passes_per_step": 4, "micro_batch_size": 32}),
    ({"micro_batches": 2, "passes_per_step": "6 (2 forward + 2 backward)", "micro_batch_size": 32},
     {"micro_batches": 2, "passes_per_step": "6 (2 forward + 2 backward)", "micro_batch_size": 32}),
    ({"micro_batches": 2, "passes_per_step": "4 (2 forward + 2 backward?)", "micro_batch_size": 32},
     {"micro_batches": 2, "passes_per_step": "4 (2 forward + 2 backward?)", "micro_batch_size": 32}),
    ({"micro_batches": 2, "passes_per_step": "4 (3 forward + 2 backward)", "micro_batch_size": 32},
     {"micro_batches": 2, "passes_per_step": "4 (3 forward + 2 backward)", "micro_batch_size": 32}),
])
def test_a_micro_batch_cell_offering_a_second_count_is_kept_as_written(cells, read):
    got = _read([cells], P10["micro.table"])
    assert got == [read], f"expected {read!r}, observed {got!r} ({WHERE})"


@pytest.mark.parametrize("total, read", [
    ("1.2 (maybe 1.5)", "1.2 (maybe 1.5)"),
    ("3.5 (possibly 2)", "3.5 (possibly 2)"),
    ("2.4 (unsure)", "2.4 (unsure)"),
    ("3.1 (2.5)", "3.1 (2.5)"),
    ("0.081 (1.5 s)", "0.081 (1.5 s)"),
    # Honest: what the time was measured over, or on which clock.
    ("0.081 (10 steps)", 0.081),
    ("0.081 s (10 steps)", 0.081),
    ("1.72 (simulated)", 1.72),
])
def test_a_time_with_a_hedged_remark_is_kept_as_written(total, read):
    got = _read([{"method": "single", "gpus": 1, "step_time_s": 0.0081, "total_time_s": total}],
                P5["timing.table"])
    assert got[0]["total_time_s"] == read, f"{total!r}: expected {read!r}, observed {got!r} ({WHERE})"


@pytest.mark.parametrize("raw, read", [
    ("3, 3 (one per GPU)", [3, 3]),
    ("3, 3 (6/2 each)", [3, 3]),
    ("3, 3 (2, 4 alternatively)", HELD),   # adv56 F5: another list offered in the remark
    ("3 and 3 (else 2 and 4)", HELD),
    ("[3, 3] (or [2, 4])", HELD),
])
def test_a_layer_list_with_a_hedged_remark_is_held(raw, read):
    got = _read(raw, HW3["task1.layers_per_gpu"])
    ok = got.startswith(read) if isinstance(read, str) and isinstance(got, str) else got == read
    assert ok, f"{raw!r}: expected {read!r}, observed {got!r} ({WHERE})"


@pytest.mark.parametrize("raw, read", [
    ("[0, 1] (2 and 3 idle)", [0, 1]),
    ("[0, 1] (2 and 3 probably idle)", HELD),
])
def test_a_list_with_a_hedged_idle_remark_is_held(raw, read):
    got = _read(raw, P10["broken.gpus_in_use"])
    ok = got.startswith(read) if isinstance(read, str) and isinstance(got, str) else got == read
    assert ok, f"{raw!r}: expected {read!r}, observed {got!r} ({WHERE})"
