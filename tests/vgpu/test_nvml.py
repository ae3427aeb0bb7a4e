"""NVML sampling on real GPUs, exercised against a stand-in for the `pynvml` module (this
machine has no GPU; the GPU runner in CI uses the real library)."""
import sys
import time
import types

from grader.vgpu.nvml import NvmlSampler
from grader.vgpu.trace import Trace


def fake_pynvml(used_by_index, utilisation_by_index):
    module = types.ModuleType("pynvml")
    module.nvmlInit = lambda: None
    module.nvmlDeviceGetHandleByIndex = lambda i: i
    module.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(used=used_by_index[h])
    module.nvmlDeviceGetUtilizationRates = lambda h: types.SimpleNamespace(
        gpu=utilisation_by_index[h])
    return module


def test_samples_and_peaks_reach_the_trace(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml({0: 100, 1: 300}, {0: 7, 1: 93}))
    trace = Trace(None, 0)
    events = []
    trace.listeners.append(events.append)
    sampler = NvmlSampler(trace, [0, 1], period_s=0.01)
    assert sampler.start()
    time.sleep(0.1)
    sampler.stop()
    samples = [e for e in events if e["event"] == "nvml"]
    assert samples and samples[0]["samples"] == [
        {"device": "cuda:0", "memory_used": 100, "utilization": 7},
        {"device": "cuda:1", "memory_used": 300, "utilization": 93}]
    summary = [e for e in events if e["event"] == "nvml_summary"][0]
    assert summary["peak_memory_used"] == {"cuda:0": 100, "cuda:1": 300}
    assert summary["peak_utilization"] == {"cuda:0": 7, "cuda:1": 93}


def test_no_driver_is_reported_not_invented(monkeypatch):
    broken = types.ModuleType("pynvml")

    def fail():
        raise RuntimeError("NVML Shared Library Not Found")

    broken.nvmlInit = fail
    monkeypatch.setitem(sys.modules, "pynvml", broken)
    trace = Trace(None, 0)
    events = []
    trace.listeners.append(events.append)
    assert not NvmlSampler(trace, [0]).start()
    assert events == [{"event": "nvml", "rank": 0, "t": events[0]["t"], "available": False,
                       "reason": "NVML unavailable: NVML Shared Library Not Found"}]
