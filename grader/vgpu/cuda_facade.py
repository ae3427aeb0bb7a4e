"""`torch.cuda` and `torch.accelerator` answering as on a node of N GPUs."""
from __future__ import annotations

import functools
import time
import types

import torch

from grader.vgpu.devices import parse
from grader.vgpu.node import VIRTUAL_DEVICE_NAME, VIRTUAL_TOTAL_MEMORY, Node
from grader.vgpu.patcher import Patcher
from grader.vgpu.unsupported import unsupported

_RESERVED_BLOCK = 2 * 2**20  # the caching allocator reserves in 2 MiB segments


class Event:
    """`torch.cuda.Event`: host wall-clock time; on a virtual GPU every op has finished."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False, **_):
        self.enable_timing = enable_timing
        self._time: float | None = None

    def record(self, stream=None):
        self._time = time.perf_counter()

    def elapsed_time(self, end_event: "Event") -> float:
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if self._time is None or end_event._time is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return (end_event._time - self._time) * 1000.0

    def synchronize(self):
        pass

    def query(self) -> bool:
        return True

    def wait(self, stream=None):
        pass


def install(patcher: Patcher, node: Node) -> None:
    def index_of(device=None) -> int:
        if device is None:
            return node.current_device()
        found = parse(node, device)
        if not isinstance(found, int):
            raise ValueError(f"Expected a cuda device, but got: {device}")
        return found

    class Stream:
        """A CUDA stream: work on a virtual GPU is already finished when it returns."""

        def __init__(self, device=None, priority: int = 0, **_):
            self.device = torch.device("cuda", index_of(device))
            self.priority = priority

        def wait_stream(self, stream):
            pass

        def wait_event(self, event):
            pass

        def record_event(self, event=None):
            event = event or Event()
            event.record(self)
            return event

        def synchronize(self):
            pass

        def query(self) -> bool:
            return True

        def is_capturing(self) -> bool:
            return False  # CUDA graphs are refused on virtual GPUs, so never capturing

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def __eq__(self, other):
            return isinstance(other, Stream) and other.device == self.device

        def __hash__(self):
            return hash(self.device)

        def __repr__(self):
            return f"<torch.cuda.Stream device={self.device} (virtual)>"

    class device:
        """`with torch.cuda.device(k):` switches this thread's current GPU."""

        def __init__(self, device):
            self.index = -1 if device is None or device == -1 else index_of(device)
            self.previous = -1

        def __enter__(self):
            if self.index != -1:
                self.previous = node.current_device()
                node.set_current_device(self.index)
            return self

        def __exit__(self, *exc):
            if self.previous != -1:
                node.set_current_device(self.previous)
            return False

    def stream(s=None):
        return s if s is not None else Stream()

    def properties(device=None):
        i = index_of(device)
        return types.SimpleNamespace(
            name=VIRTUAL_DEVICE_NAME, total_memory=VIRTUAL_TOTAL_MEMORY, major=9, minor=0,
            multi_processor_count=132, is_integrated=0, is_multi_gpu_board=0,
            uuid=f"GPU-virtual-{i}", L2_cache_size=50 * 2**20, warp_size=32,
            gcnArchName="", index=i)

    def reserved(nbytes: int) -> int:
        return -(-nbytes // _RESERVED_BLOCK) * _RESERVED_BLOCK

    def memory_stats(device=None) -> dict:
        i = index_of(device)
        return {
            "allocated_bytes.all.current": node.allocated[i],
            "allocated_bytes.all.peak": node.peak[i],
            "reserved_bytes.all.current": reserved(node.allocated[i]),
            "reserved_bytes.all.peak": reserved(node.peak[i]),
            "active_bytes.all.current": node.allocated[i],
            "active_bytes.all.peak": node.peak[i],
        }

    def memory_summary(device=None, abbreviated: bool = False) -> str:
        i = index_of(device)
        mib = 2**20
        return (f"|  Virtual GPU cuda:{i} memory summary (pdl-autograder accounting)   |\n"
                f"|  Allocated memory: {node.allocated[i] / mib:10.2f} MiB current, "
                f"{node.peak[i] / mib:10.2f} MiB peak |\n")

    def reset_peak(device=None):
        node.reset_peak(index_of(device))

    def set_device(device):
        node.set_current_device(index_of(device))

    def noop(*args, **kwargs):
        return None

    cuda = torch.cuda
    functions = {
        "is_available": lambda: True,
        "device_count": lambda: node.n,
        "current_device": node.current_device,
        "set_device": set_device,
        "device": device,
        "device_of": lambda tensor: device(tensor.get_device() if tensor.is_cuda else -1),
        "synchronize": lambda device=None: None,
        "get_device_name": lambda device=None: properties(device).name,
        "get_device_properties": properties,
        "get_device_capability": lambda device=None: (9, 0),
        "get_arch_list": lambda: ["sm_90"],
        "is_bf16_supported": lambda *a, **k: True,
        "is_initialized": lambda: True,
        "init": noop,
        "_lazy_init": noop,
        "Event": Event,
        "Stream": Stream,
        "stream": stream,
        "current_stream": lambda device=None: Stream(device),
        "default_stream": lambda device=None: Stream(device),
        "set_stream": noop,
        "memory_allocated": lambda device=None: node.allocated[index_of(device)],
        "max_memory_allocated": lambda device=None: node.peak[index_of(device)],
        "memory_reserved": lambda device=None: reserved(node.allocated[index_of(device)]),
        "max_memory_reserved": lambda device=None: reserved(node.peak[index_of(device)]),
        "reset_peak_memory_stats": reset_peak,
        "reset_max_memory_allocated": reset_peak,
        "reset_accumulated_memory_stats": noop,
        "memory_stats": memory_stats,
        "memory_summary": memory_summary,
        "mem_get_info": lambda device=None: (
            VIRTUAL_TOTAL_MEMORY - reserved(node.allocated[index_of(device)]),
            VIRTUAL_TOTAL_MEMORY),
        "empty_cache": noop,
        "set_per_process_memory_fraction": noop,
        "manual_seed": noop,
        "manual_seed_all": noop,
        "seed": noop,
        "seed_all": noop,
        "utilization": unsupported("GPU utilisation (NVML) on a virtual GPU"),
        "CUDAGraph": unsupported("CUDA graphs", kind="class"),
        "graph": unsupported("CUDA graphs", kind="class"),
        "make_graphed_callables": unsupported("CUDA graphs"),
        "nccl": unsupported("torch.cuda.nccl", kind="module"),
    }
    for dtype_name in ("FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor",
                       "LongTensor", "IntTensor", "ShortTensor", "CharTensor", "ByteTensor",
                       "BoolTensor"):
        functions[dtype_name] = unsupported(
            f"torch.cuda.{dtype_name} (use torch.tensor(..., device='cuda'))", kind="class")
    for name, value in functions.items():
        patcher.set(cuda, name, _distinct(value))

    accelerator = torch.accelerator

    class device_index(device):
        pass

    accelerator_functions = {
        "is_available": lambda *a, **k: True,
        "current_accelerator": lambda *a, **k: torch.device("cuda"),
        "device_count": lambda: node.n,
        "current_device_index": node.current_device,
        "current_device_idx": node.current_device,
        "set_device_index": set_device,
        "set_device_idx": set_device,
        "device_index": device_index,
        "current_stream": lambda device=None: Stream(device),
        "set_stream": noop,
        "synchronize": lambda device=None: None,
        "empty_cache": noop,
        "memory_allocated": functions["memory_allocated"],
        "max_memory_allocated": functions["max_memory_allocated"],
        "memory_reserved": functions["memory_reserved"],
        "max_memory_reserved": functions["max_memory_reserved"],
        "reset_peak_memory_stats": reset_peak,
        "memory_stats": memory_stats,
    }
    for name, value in accelerator_functions.items():
        if hasattr(accelerator, name):
            patcher.set(accelerator, name, _distinct(value))


def _distinct(value):
    """A function object of its own for every patched name.

    torch._dynamo maps torch's functions by identity to tracing rules and refuses one object
    that appears under two names with different rules.
    """
    if isinstance(value, type) or not callable(value):
        return value

    @functools.wraps(value)
    def patched(*args, **kwargs):
        return value(*args, **kwargs)

    return patched
