"""Practical 10's Part 4 (torchrun --nproc_per_node=1, the handout's constants) reads the
invariance check's one-process run of MICRO_BATCHES = 4 (its noise held still): the same
command, so one run fewer per grading (issue 15 item 1). Its check still reads the stages of
rank 0 with what the probe of the handout's run found unmoved there."""
from __future__ import annotations

from pathlib import Path

import pytest

from grader.checks import test_practical10 as p10
from grader.harness.observation import Observation

REFERENCE = Path(__file__).resolve().parents[2] / "reference" / "practical10" / "sample.py"


class AskedRuns:
    """ScriptRuns' `script` as HandoutRuns calls it: one Observation per distinct run asked."""

    def __init__(self):
        self.made: dict[tuple, Observation] = {}

    def script(self, **spec) -> Observation:
        key = tuple(sorted((name, repr(value)) for name, value in spec.items()))
        if key not in self.made:
            self.made[key] = Observation(script=spec["script"], gpus=spec["gpus"],
                                         nproc=spec["nproc"], launcher=spec["launcher"],
                                         sets=dict(spec["sets"] or {}), returncode=0)
        return self.made[key]


def handout_of(tmp_path, micro_batches_left: int | None = None) -> p10.HandoutRuns:
    text = REFERENCE.read_text(encoding="utf-8")
    if micro_batches_left is not None:   # Part 2's last value tried, left in the file
        assert text.count("MICRO_BATCHES = 4\n") == 1
        text = text.replace("MICRO_BATCHES = 4\n", f"MICRO_BATCHES = {micro_batches_left}\n")
    script = tmp_path / "submission" / "practical10" / "sample.py"
    script.parent.mkdir(parents=True)
    script.write_text(text, encoding="utf-8")
    return p10.HandoutRuns(runs=AskedRuns(), submission=script.parents[1])


@pytest.mark.parametrize("left", [None, 8], ids=["as_handed_out", "micro_batches_8_left_in"])
def test_part4_reads_the_invariance_run_of_four_micro_batches(tmp_path, left):
    handout = handout_of(tmp_path, left)
    invariance = handout.run(processes=1, MICRO_BATCHES=p10.MICRO, steady=True)
    part4 = handout.run(processes=1)
    assert part4 is invariance, (
        "expected Part 4's run (one process, the handout's constants) to be the invariance "
        f"check's steady run of MICRO_BATCHES = {p10.MICRO}, observed another run "
        f"({part4.configuration} against {invariance.configuration}): look at HandoutRuns.run")
    one_process = [key for key in handout.runs.made if ("nproc", "1") in key]
    assert len(one_process) == 1, (
        f"expected one one-process run for Part 4 and MICRO_BATCHES = {p10.MICRO}, observed "
        f"{len(one_process)}: {one_process}")


def test_part4_still_reads_what_the_probe_found_unmoved(tmp_path):
    handout = handout_of(tmp_path)
    part4 = handout.run(processes=1)
    handouts = handout.run()
    assert part4.derived.get("unmoved") == {0: handouts.derived["unmoved"].get(0, {})}, (
        "expected Part 4's run to carry rank 0's unmoved GPUs from the probe of the handout's "
        f"run (stage_gpus reads them), observed {part4.derived.get('unmoved')!r}")
