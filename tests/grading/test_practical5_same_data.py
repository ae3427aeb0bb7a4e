"""Practical 5's DataParallel-vs-single-GPU comparison says what differs (a TA's audit 30, D2).

A DataParallel script drawing its data with `torch.randn(...).cuda()` (the CPU's generator)
beside a single-GPU script drawing with `torch.randn(..., device=...)` (the GPU's) trains on
other data from the first step on; the check's verdict stands (on real GPUs the data differ
too), but it had said "the weights differ from step 3 on / use the same SEED, model, data",
a step the float tolerance had chosen and a seed the student did use. The first batch's rows
of the two runs are compared: where they differ, the message says so and names the generators.

The check runs here on traces written by hand, shaped as the virtual GPUs write them.
"""
from __future__ import annotations

import pytest

from grader.checks import test_practical5 as p5
from test_practical5_non_solutions import run_check, trained

ROWS = [[float(i), 10.0 + i] for i in range(64)]
OTHER_ROWS = [[float(i) + 0.5, 20.0 + i] for i in range(64)]
# The audit's parameter sums: 0.05% apart at step 1, past the check's 0.1% at step 3.
SINGLE_SUMS = [19.228920547, 19.232357752, 19.235787537]
DP_SUMS = [19.219788348, 19.214116148, 19.208456523]


def with_data(run, rows, sums):
    """The run with its first training batch's rows and its weights' sum after each step."""
    first = next(e for e in run.events if e["event"] == "forward" and not e.get("nested"))
    first["rows"] = rows
    for event, total in zip(run.of("step"), sums):
        event["params"] = {"sum": total, "sumsq": 512.78}
    return run


class Runs:
    def __init__(self, dp_rows, dp_sums, single_sums=SINGLE_SUMS):
        self.dp_rows, self.dp_sums, self.single_sums = dp_rows, dp_sums, single_sums

    def dp(self, gpus):
        return with_data(trained(gpus, True), self.dp_rows, self.dp_sums)

    def single(self):
        return with_data(trained(1, False, script=p5.SINGLE), ROWS, self.single_sums)


def scripts(tmp_path, dp_draw: str, single_draw: str = "torch.randn(BATCH_SIZE, DIM, device=device)"):
    folder = tmp_path / "practical5"
    folder.mkdir(exist_ok=True)
    (folder / "practical5_dp.py").write_text(f"import torch\nx = {dp_draw}\n")
    (folder / "practical5_single.py").write_text(f"import torch\nx = {single_draw}\n")


def failure(handout, tmp_path) -> str:
    with pytest.raises(AssertionError) as raised:
        run_check(p5.test_data_parallel_matches_single_gpu, handout, tmp_path)
    return str(raised.value)


def said_all(text: str, *phrases: str) -> None:
    missing = [p for p in phrases if p not in text]
    assert not missing, f"expected the feedback to say {missing}; observed:\n{text}"


def test_data_drawn_on_the_cpu_beside_data_drawn_on_the_gpu_is_said_so(tmp_path):
    scripts(tmp_path, "torch.randn(cfg.batch_size, cfg.dim).cuda()")
    text = failure(Runs(OTHER_ROWS, DP_SUMS), tmp_path)
    said_all(text, "Observed: the two scripts train on different data from the first step: "
             "the first batch's inputs differ (64 of its 64 rows are not in practical5_single.py's "
             "first batch), so the weights differ from step 1 on",
             "torch.randn(...).cuda() draws from the CPU's random generator, torch.randn(..., "
             "device=...) from the GPU's: the same SEED gives other numbers",
             "practical5_dp.py draws with .cuda() / .to() after torch.randn, "
             "practical5_single.py with device=")
    assert "step 3" not in text and "use the same SEED" not in text, text


def test_other_data_without_a_generator_named_still_says_the_data_differ(tmp_path):
    scripts(tmp_path, "torch.randn(BATCH_SIZE, DIM, device=device) * 2")
    text = failure(Runs(OTHER_ROWS, DP_SUMS), tmp_path)
    said_all(text, "the two scripts train on different data from the first step",
             "torch.randn(...).cuda() draws from the CPU's random generator")
    assert "practical5_dp.py draws with .cuda()" not in text, text


def test_the_same_data_names_the_first_step_the_weights_differ(tmp_path):
    """The same first batch: the step is the first where the weights part beyond float
    rounding, not the one the check's 0.1% tolerance first exceeds."""
    scripts(tmp_path, "torch.randn(BATCH_SIZE, DIM, device=device)")
    text = failure(Runs(ROWS, DP_SUMS), tmp_path)
    said_all(text, "Observed: the weights differ from step 1 on (the first batch is the same in "
             "both scripts; they are more than 0.1% apart from step 3)",
             "use the same SEED, model, data, loss and optimizer")
    late = [SINGLE_SUMS[0], SINGLE_SUMS[1], DP_SUMS[2]]
    text = failure(Runs(ROWS, late), tmp_path)
    said_all(text, "the weights differ from step 3 on (the first batch is the same in both "
             "scripts)")


def test_the_same_data_and_weights_keep_the_point(tmp_path):
    scripts(tmp_path, "torch.randn(BATCH_SIZE, DIM, device=device)")
    run_check(p5.test_data_parallel_matches_single_gpu, Runs(ROWS, SINGLE_SUMS), tmp_path)


@pytest.mark.parametrize("source, found", [
    ("x = torch.randn(64, 512, device=device)", {"the GPU's generator"}),
    ("x = torch.randn(64, 512, device='cuda:0')", {"the GPU's generator"}),
    ("x = torch.randn(64, 512).cuda()", {"the CPU's generator"}),
    ("x = torch.randn(64, 512).to(device)", {"the CPU's generator"}),
    ("x = torch.randn(64, 512, device='cpu').cuda()", {"the CPU's generator"}),
    ("x = torch.randn(64, 512, device='cpu')", set()),
    ("x = torch.zeros(64, 512).cuda()", set()),
    ("x = torch.randn(64, 512,", set()),     # not Python: nothing said
])
def test_where_a_script_draws_its_tensors_is_read_from_its_source(tmp_path, source, found):
    from grader.checks.random_draws import generators
    path = tmp_path / "script.py"
    path.write_text(f"import torch\ndevice = 'cuda:0'\n{source}\n")
    assert generators(path) == found
