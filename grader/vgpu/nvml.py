"""NVML readings on real GPUs (what Practical 5 asks students to watch in `nvidia-smi`)."""
from __future__ import annotations

import threading

from grader.vgpu.trace import Trace

NOT_AVAILABLE = "virtual GPUs: utilisation is not measured (no hardware); memory is accounted"


class NvmlSampler:
    def __init__(self, trace: Trace, device_indices: list[int], period_s: float = 0.2):
        self.trace = trace
        self.indices = device_indices
        self.period = period_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.peak_used: dict[int, int] = {}
        self.peak_util: dict[int, int] = {}

    def start(self) -> bool:
        try:
            import pynvml
            pynvml.nvmlInit()
            self._nvml = pynvml
            self._handles = {i: pynvml.nvmlDeviceGetHandleByIndex(i) for i in self.indices}
        except Exception as error:  # no driver, no library: say so, invent nothing
            self.trace.emit("nvml", available=False, reason=f"NVML unavailable: {error}")
            return False
        self._thread = threading.Thread(target=self._run, name="pdl-nvml", daemon=True)
        self._thread.start()
        return True

    def _run(self):
        nvml = self._nvml
        while not self._stop.wait(self.period):
            samples = []
            for i, handle in self._handles.items():
                memory = nvml.nvmlDeviceGetMemoryInfo(handle)
                util = nvml.nvmlDeviceGetUtilizationRates(handle)
                self.peak_used[i] = max(self.peak_used.get(i, 0), memory.used)
                self.peak_util[i] = max(self.peak_util.get(i, 0), util.gpu)
                samples.append({"device": f"cuda:{i}", "memory_used": memory.used,
                                "utilization": util.gpu})
            self.trace.emit("nvml", available=True, samples=samples)

    def stop(self) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join(timeout=2)
        self.trace.emit("nvml_summary", available=True,
                        peak_memory_used={f"cuda:{i}": v for i, v in self.peak_used.items()},
                        peak_utilization={f"cuda:{i}": v for i, v in self.peak_util.items()})
        self._thread = None
