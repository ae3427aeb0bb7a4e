"""Practical 4, Part 2: which tensor is the chunks' combined output, told from recorded events.

torch.cat's result is the combination where the script concatenates; a script that fills a
tensor of its own chunk by chunk (a TA's s14: `final_output = torch.empty(...)`, then
`final_output[a:b] = model(chunk)`) is judged by the tensor it compares with Part 1's output
(the template's `torch.allclose(final_output, output)`), and only where that tensor is its own:
a forward pass's output under another name (`final_output = model(x)` after running the chunks
for nothing) has Part 1's rows without combining anything, and earns nothing.
"""
from __future__ import annotations

from grader.checks.test_practical4 import combined_against_full
from grader.harness.observation import Observation

BATCH, OUT = 64, 1000
ROWS = [[float(i + 1), float((i + 1) ** 2)] for i in range(BATCH)]


def forward(rows, storage, batch=BATCH):
    return [{"event": "forward", "thread": "MainThread", "step": 0, "batch": [batch, 1000],
             "rows": rows, "module": "Sequential"},
            {"event": "forward_out", "thread": "MainThread", "shape": [batch, OUT],
             "rows": rows, "storage": storage, "device": "cuda:0"}]


def run_with(*events) -> Observation:
    part1 = forward(ROWS, storage=100)
    chunks = forward(ROWS[:32], 200, batch=32) + forward(ROWS[32:], 300, batch=32)
    return Observation("practical4/concepts.py", gpus=2, returncode=0,
                       events=part1 + chunks + list(events))


def compare(rows, storage, other_storage=100):
    return {"event": "compare", "rank": 0, "op": "allclose", "site": "concepts.py:66", "operands": [
        {"shape": [BATCH, OUT], "rows": rows, "storage": storage},
        {"shape": [BATCH, OUT], "rows": ROWS, "storage": other_storage}]}


def test_a_tensor_filled_chunk_by_chunk_is_the_combined_output():
    verdict = combined_against_full(run_with(compare(ROWS, storage=400)), BATCH)
    assert verdict is not None and verdict[0] is True, verdict
    assert "compared with Part 1's at concepts.py:66" in verdict[1]


def test_a_tensor_filled_in_the_wrong_order_is_said_so():
    verdict = combined_against_full(run_with(compare(ROWS[32:] + ROWS[:32], storage=400)), BATCH)
    assert verdict is not None and verdict[0] is False
    assert "not in order: its row 0 is the full output's row 32" in verdict[1], verdict


def test_a_forward_pass_output_under_another_name_combines_nothing():
    """`final_output = model(x)` after the chunks ran: Part 1's rows, no combination."""
    again = forward(ROWS, storage=500)
    assert combined_against_full(run_with(*again, compare(ROWS, storage=500)), BATCH) is None
    # Part 1's output compared with itself, or with a chunk's output, neither.
    assert combined_against_full(run_with(compare(ROWS, storage=100)), BATCH) is None


def test_no_combination_without_the_chunks_run():
    part1 = forward(ROWS, storage=100)
    run = Observation("practical4/concepts.py", gpus=2, returncode=0,
                      events=part1 + [compare(ROWS, storage=400)])
    assert combined_against_full(run, BATCH) is None


def test_torch_cat_decides_where_the_script_concatenates():
    cat = {"event": "concat", "rank": 0, "op": "cat", "dim": 0, "shape": [BATCH, OUT], "site": "concepts.py:60",
           "rows": ROWS[32:] + ROWS[:32]}
    verdict = combined_against_full(run_with(cat, compare(ROWS, storage=400)), BATCH)
    assert verdict[0] is False and "torch.cat at concepts.py:60" in verdict[1], verdict
