"""The HW3 probe's step times on virtual GPUs come from the simulated clock: the answers of
Tasks 2 and 4 follow from the student's code, never from how busy the machine is.

The probe runs here in the test process on a virtual node (the grader runs it sandboxed);
the checks of grader/checks/test_hw3.py read the same records.
"""
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "reference" / "hw3" / "model_parallel.py"
# The checks' sizes (grader/checks/test_hw3.py), smaller where the answer does not depend on
# them, so the test stays quick.
DIM, BATCH = 64, 16
TREND = [(2, 6), (2, 12), (2, 24)]
TASK4 = [(2, 20), (5, 20)]


@pytest.fixture
def emitted():
    """The records the probe emitted (sealed and written to a file when the grader runs it)."""
    return []


@pytest.fixture
def probe_of(vnode, emitted):
    from grader.harness.hw3_probe import Probe

    def make(model_file: Path = REFERENCE):
        vnode(5)
        return Probe(str(model_file), emitted.append)
    return make


def medians(probe, configs, rounds=2):
    found = probe._timing(configs, max(g for g, _ in configs), DIM, BATCH, 1, rounds)
    return [found["results"][f"{g}x{d}"]["median_ms"] for g, d in configs], found


@pytest.mark.slow
def test_reference_times_grow_with_depth_and_five_gpus_are_no_faster(probe_of):
    probe = probe_of()
    trend, found = medians(probe, TREND)
    assert trend[0] < trend[1] < trend[2] and trend[2] >= 1.5 * trend[0], trend
    # Every round of a configuration is the same simulated step.
    assert all(len(set(r["times_ms"])) == 1 for r in found["results"].values())
    two, five = medians(probe, TASK4)[0]
    assert five >= two, "naive model parallelism: more GPUs add transfers, not speed"


def test_timing_records_say_which_clock(probe_of, emitted):
    probe = probe_of()
    probe.timing("trend", [list(c) for c in TREND], DIM, BATCH, warmup=2, rounds=9)
    record = emitted[-1]
    assert record["clock"] == "simulated"
    # On the simulated clock one warm-up step and three rounds say all there is.
    assert [len(r["times_ms"]) for r in record["results"].values()] == [3, 3, 3]


@pytest.mark.slow
def test_a_slowed_host_gives_the_same_step_times(probe_of):
    import time

    from torch.nn.modules.module import register_module_forward_pre_hook
    probe = probe_of()
    quick = medians(probe, TREND + TASK4)[0]
    handle = register_module_forward_pre_hook(lambda module, args: time.sleep(0.001))
    try:
        started = time.perf_counter()
        slow = medians(probe, TREND + TASK4)[0]
        assert time.perf_counter() - started > 0.3, "the host really was slowed"
    finally:
        handle.remove()
    assert slow == quick


def planted(tmp_path, old: str, new: str) -> Path:
    source = REFERENCE.read_text()
    assert source.count(old) == 1, "reference/hw3/model_parallel.py changed under this test"
    buggy = tmp_path / "model_parallel.py"
    buggy.write_text(source.replace(old, new))
    return buggy


def test_a_forward_through_seven_layers_only_has_flat_step_times(probe_of, tmp_path):
    """forward() runs the first six layers and the last, whatever DEPTH built: every step
    does the same work. Task 2's trend check must fail it, and on the simulated clock it does, anywhere.
    (A constructor that reads the module's DEPTH is no bug: the probe sets the constants
    before it builds, as the course's own base code needs.)"""
    buggy = planted(tmp_path, "        for layer in self.layers:\n",
                    "        for layer in [*self.layers[:6], self.layers[-1]]:\n")
    trend = medians(probe_of(buggy), TREND)[0]
    # Flat within what the optimizer's step over the unused layers adds (tens of ns).
    assert max(trend) < 1.02 * min(trend), trend


def test_an_activation_detached_between_gpus_makes_five_gpus_faster(probe_of, tmp_path):
    """`x = x.detach()` where the activation changes GPU: backward stops at the last GPU's
    block, so the more GPUs, the less backward. Task 4's no-speed-up check must fail it."""
    buggy = planted(tmp_path, "                self.transfers += 1\n",
                    "                self.transfers += 1\n                x = x.detach()\n")
    two, five = medians(probe_of(buggy), TASK4)[0]
    assert five < two / 1.05, (two, five)
