"""The HW3 probe's peak memory per GPU (Task 4's table, its utilisation answer) is the peak of
the measured steps' own configuration: never negative, and the same whatever the probe measured
before it (a TA's audit: three students' 2-GPU rows read -5.65 MiB, because the models of the
earlier timing part were garbage-collected between the probe's baseline and the steps).

The probe runs here in the test process on a virtual node (the grader runs it sandboxed).
"""
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "reference" / "hw3" / "model_parallel.py"
DIM, BATCH = 64, 16
EARLIER = [(2, 8)]        # a part before Task 4 (the grader's: Task 2's trend)
TASK4 = [(2, 5), (5, 5)]  # the grader's DEPTH is 20: fewer layers, the same question


@pytest.fixture
def probe_of(vnode):
    from grader.harness.hw3_probe import Probe

    def make(model_file: Path):
        vnode(5)
        return Probe(str(model_file), lambda record: None)
    return make


def peaks(probe, configs) -> dict[str, list[int]]:
    found = probe._timing(configs, max(g for g, _ in configs), DIM, BATCH, 1, 1)
    return {key: run["peak_memory"] for key, run in found["results"].items()}


def cyclic_model(tmp_path) -> Path:
    """The reference with two things students write: a hook that keeps the model in a
    reference cycle (only the garbage collector frees it), and a gc.collect() before building
    "to free memory". The earlier part's models are then freed during the next build."""
    source = REFERENCE.read_text()
    old = "        self.to_calls = 0\n"
    assert source.count(old) == 1, "reference/hw3/model_parallel.py changed under this test"
    source = source.replace(old, old + "        self.layers[0].register_forward_pre_hook(\n"
                                         "            lambda module, args: setattr(self, 'hooked', True))\n")
    old = "        super().__init__()\n"
    source = source.replace(old, "        import gc\n        gc.collect()\n" + old)
    path = tmp_path / "model_parallel.py"
    path.write_text(source)
    return path


def test_peaks_do_not_count_what_earlier_parts_left_to_the_garbage_collector(probe_of,
                                                                              tmp_path):
    import gc
    model = cyclic_model(tmp_path)
    probe = probe_of(model)
    alone = peaks(probe, TASK4)
    gc.collect()
    probe = probe_of(model)
    peaks(probe, EARLIER)          # Task 2's part, as in the grader's plan: its models are garbage
    after_trend = peaks(probe, TASK4)
    assert all(m > 0 for run in after_trend.values() for m in run), after_trend
    assert after_trend == alone, (
        "Task 4's peaks after Task 2's part should be the configuration's own, as measured "
        f"alone: {alone}, observed {after_trend}")


def test_a_gpu_without_layers_shows_no_memory_and_one_with_layers_some(probe_of, tmp_path):
    """What test_task4_answer_are_all_gpus_utilised reads: memory 0 exactly where no layers."""
    source = REFERENCE.read_text()
    old = "        n = torch.cuda.device_count()\n"
    assert source.count(old) == 1, "reference/hw3/model_parallel.py changed under this test"
    path = tmp_path / "model_parallel.py"
    path.write_text(source.replace(old, "        n = min(2, torch.cuda.device_count())\n"))
    probe = probe_of(path)
    peaks(probe, EARLIER)
    five = peaks(probe, TASK4)["5x5"]
    assert five[2:] == [0, 0, 0] and min(five[:2]) > 0, five


def test_a_model_that_frees_what_it_held_before_still_has_positive_peaks(probe_of, tmp_path):
    """A module that keeps the last model it built in a global frees the earlier part's model
    while the next one is built: no collector can free it sooner, and its peaks stay above 0
    on every GPU with layers."""
    source = REFERENCE.read_text()
    old = "        self.to_calls = 0\n"
    assert source.count(old) == 1, "reference/hw3/model_parallel.py changed under this test"
    path = tmp_path / "model_parallel.py"
    path.write_text(source.replace(old, old + "        global LAST\n        LAST = self\n"))
    probe = probe_of(path)
    peaks(probe, EARLIER)
    after_trend = peaks(probe, TASK4)
    assert all(m > 0 for run in after_trend.values() for m in run), after_trend
