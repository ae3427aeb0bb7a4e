"""`torch.cuda` and `torch.accelerator` answering as on a node of N GPUs.

Each piece takes the node it answers for, so it can be built and tested alone:
`CudaFunctions(node)` holds the module-level functions (`device_count`, `memory_stats`, ...),
and `bound(Event, node)`, `bound(Stream, node)`, `bound(DeviceContext, node)` give the classes
`torch.cuda` exposes. Timing (events, streams, `synchronize`) reads the node's simulated clock.
`install` puts them in place.
"""
from __future__ import annotations

import functools
import types

import torch

from grader.vgpu.clock import ms
from grader.vgpu.devices import parse
from grader.vgpu.node import VIRTUAL_DEVICE_NAME, VIRTUAL_TOTAL_MEMORY, Node
from grader.vgpu.patcher import Patcher
from grader.vgpu.random_state import generator_type
from grader.vgpu.unsupported import unsupported

_RESERVED_BLOCK = 2 * 2**20  # the caching allocator reserves in 2 MiB segments
_TENSOR_TYPES = ("FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor",
                 "IntTensor", "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor")


def device_index(node: Node, device=None) -> int:
    """The GPU a `device` argument of `torch.cuda.*` names (None: this thread's current one)."""
    if device is None:
        return node.current_device()
    found = parse(node, device)
    if not isinstance(found, int):
        raise ValueError(f"Expected a cuda device, but got: {device}")
    return found


def reserved(nbytes: int) -> int:
    return -(-nbytes // _RESERVED_BLOCK) * _RESERVED_BLOCK


def bound(cls: type, node: Node) -> type:
    """`cls` for one node: torch.cuda's classes are constructed without a node argument."""
    return type(cls.__name__, (cls,), {"node": node, "__module__": cls.__module__,
                                       "__qualname__": cls.__qualname__})


class Event:
    """`torch.cuda.Event`: a mark on a GPU's stream, timed by the node's simulated clock.

    Recorded, it stands for the moment the stream reaches it: when the work enqueued before it
    ends, or now if the GPU is idle. `elapsed_time` is the simulated time between two marks.
    """
    node: Node  # set by `bound`

    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False, **_):
        self.enable_timing = enable_timing
        self._time: int | None = None  # ns on the node's clock
        self._device: int | None = None

    def record(self, stream=None):
        device = stream.device.index if stream is not None else self.node.current_device()
        self._device = device
        self._time = self.node.clock.device_time(device)

    def elapsed_time(self, end_event: "Event") -> float:
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if self._time is None or end_event._time is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        self.node.clock.events_read = True
        return ms(end_event._time - self._time)

    def synchronize(self):
        self.node.clock.host_wait(self._time)

    def query(self) -> bool:
        return self._time is None or self._time <= (self.node.clock.host() or 0)

    def wait(self, stream=None):
        if self._time is not None:
            device = stream.device.index if stream is not None else self.node.current_device()
            self.node.clock.stream_wait(device, self._time)


class Stream:
    """A CUDA stream. Each virtual GPU runs one stream: every stream of a GPU shares its
    timeline on the simulated clock (work on side streams does not overlap)."""
    node: Node  # set by `bound`

    def __init__(self, device=None, priority: int = 0, **_):
        self.device = torch.device("cuda", device_index(self.node, device))
        self.priority = priority

    def wait_stream(self, stream):
        pass  # one timeline per GPU: already in order

    def wait_event(self, event):
        event.wait(self)

    def record_event(self, event=None):
        event = event or bound(Event, self.node)()
        event.record(self)
        return event

    def synchronize(self):
        self.node.clock.synchronize(self.device.index)

    def query(self) -> bool:
        clock = self.node.clock
        return clock.busy_until[self.device.index] <= (clock.host() or 0)

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


class DeviceContext:
    """`with torch.cuda.device(k):` switches this thread's current GPU."""
    node: Node  # set by `bound`

    def __init__(self, device):
        self.index = -1 if device is None or device == -1 else device_index(self.node, device)
        self.previous = -1

    def __enter__(self):
        if self.index != -1:
            self.previous = self.node.current_device()
            self.node.set_current_device(self.index)
        return self

    def __exit__(self, *exc):
        if self.previous != -1:
            self.node.set_current_device(self.previous)
        return False


def _noop(*args, **kwargs):
    return None


class CudaFunctions:
    """The functions of `torch.cuda` that a script calls, answered from the node."""

    def __init__(self, node: Node):
        self.node = node
        self.Event = bound(Event, node)
        self.Stream = bound(Stream, node)
        self.device = bound(DeviceContext, node)

    # -- devices ---------------------------------------------------------------------------
    def device_count(self) -> int:
        return self.node.n

    def current_device(self) -> int:
        return self.node.current_device()

    def set_device(self, device) -> None:
        self.node.set_current_device(device_index(self.node, device))

    def device_of(self, tensor):
        return self.device(tensor.get_device() if tensor.is_cuda else -1)

    def get_device_properties(self, device=None):
        i = device_index(self.node, device)
        return types.SimpleNamespace(
            name=VIRTUAL_DEVICE_NAME, total_memory=VIRTUAL_TOTAL_MEMORY, major=9, minor=0,
            multi_processor_count=132, is_integrated=0, is_multi_gpu_board=0,
            uuid=f"GPU-virtual-{i}", L2_cache_size=50 * 2**20, warp_size=32,
            gcnArchName="", index=i)

    def get_device_name(self, device=None) -> str:
        return self.get_device_properties(device).name

    def synchronize(self, device=None) -> None:
        """The host waits for one GPU (the current one by default), as in CUDA."""
        self.node.clock.synchronize(device_index(self.node, device))

    # -- streams -------------------------------------------------------------------------------
    def stream(self, s=None):
        return s if s is not None else self.Stream()

    def current_stream(self, device=None):
        return self.Stream(device)

    # -- random numbers: each GPU's own generator (grader/vgpu/random_state.py) ---------------
    def manual_seed(self, seed) -> None:
        self.node.random.manual_seed(self.node.current_device(), int(seed))

    def manual_seed_all(self, seed) -> None:
        self.node.random.manual_seed_all(int(seed))

    def seed(self) -> None:
        self.node.random.seed(self.node.current_device())

    def seed_all(self) -> None:
        self.node.random.manual_seed_all(self.node.random.seed(self.node.current_device()))

    def initial_seed(self) -> int:
        return self.node.random.initial_seed(self.node.current_device())

    def get_rng_state(self, device="cuda") -> torch.Tensor:
        return self.node.random.get_state(device_index(self.node, device))

    def set_rng_state(self, new_state, device="cuda") -> None:
        self.node.random.set_state(device_index(self.node, device), new_state)

    def get_rng_state_all(self) -> list:
        return [self.node.random.get_state(i) for i in range(self.node.n)]

    def set_rng_state_all(self, new_states) -> None:
        for index, state in enumerate(new_states):
            self.node.random.set_state(index, state)

    # -- memory --------------------------------------------------------------------------------
    def memory_allocated(self, device=None) -> int:
        return self.node.allocated[device_index(self.node, device)]

    def max_memory_allocated(self, device=None) -> int:
        return self.node.peak[device_index(self.node, device)]

    def memory_reserved(self, device=None) -> int:
        return reserved(self.memory_allocated(device))

    def max_memory_reserved(self, device=None) -> int:
        return reserved(self.max_memory_allocated(device))

    def reset_peak_memory_stats(self, device=None) -> None:
        self.node.reset_peak(device_index(self.node, device))

    def memory_stats(self, device=None) -> dict:
        i = device_index(self.node, device)
        allocated, peak = self.node.allocated[i], self.node.peak[i]
        return {
            "allocated_bytes.all.current": allocated,
            "allocated_bytes.all.peak": peak,
            "reserved_bytes.all.current": reserved(allocated),
            "reserved_bytes.all.peak": reserved(peak),
            "active_bytes.all.current": allocated,
            "active_bytes.all.peak": peak,
        }

    def memory_summary(self, device=None, abbreviated: bool = False) -> str:
        i = device_index(self.node, device)
        mib = 2**20
        return (f"|  Virtual GPU cuda:{i} memory summary (pdl-autograder accounting)   |\n"
                f"|  Allocated memory: {self.node.allocated[i] / mib:10.2f} MiB current, "
                f"{self.node.peak[i] / mib:10.2f} MiB peak |\n")

    def mem_get_info(self, device=None) -> tuple[int, int]:
        return VIRTUAL_TOTAL_MEMORY - self.memory_reserved(device), VIRTUAL_TOTAL_MEMORY

    # -- what torch.cuda and torch.accelerator are given -------------------------------------
    def cuda_table(self) -> dict:
        table = {
            "is_available": lambda: True,
            "device_count": self.device_count,
            "current_device": self.current_device,
            "set_device": self.set_device,
            "device": self.device,
            "device_of": self.device_of,
            "synchronize": self.synchronize,
            "get_device_name": self.get_device_name,
            "get_device_properties": self.get_device_properties,
            "get_device_capability": lambda device=None: (9, 0),
            "get_arch_list": lambda: ["sm_90"],
            "is_bf16_supported": lambda *a, **k: True,
            "is_initialized": lambda: True,
            "init": _noop,
            "_lazy_init": _noop,
            "Event": self.Event,
            "Stream": self.Stream,
            "stream": self.stream,
            "current_stream": self.current_stream,
            "default_stream": self.current_stream,
            "set_stream": _noop,
            "memory_allocated": self.memory_allocated,
            "max_memory_allocated": self.max_memory_allocated,
            "memory_reserved": self.memory_reserved,
            "max_memory_reserved": self.max_memory_reserved,
            "reset_peak_memory_stats": self.reset_peak_memory_stats,
            "reset_max_memory_allocated": self.reset_peak_memory_stats,
            "reset_accumulated_memory_stats": _noop,
            "memory_stats": self.memory_stats,
            "memory_summary": self.memory_summary,
            "mem_get_info": self.mem_get_info,
            "empty_cache": _noop,
            "set_per_process_memory_fraction": _noop,
            "manual_seed": self.manual_seed,
            "manual_seed_all": self.manual_seed_all,
            "seed": self.seed,
            "seed_all": self.seed_all,
            "initial_seed": self.initial_seed,
            "get_rng_state": self.get_rng_state,
            "set_rng_state": self.set_rng_state,
            "get_rng_state_all": self.get_rng_state_all,
            "set_rng_state_all": self.set_rng_state_all,
            "utilization": unsupported("GPU utilisation (NVML) on a virtual GPU"),
            "list_gpu_processes": unsupported("NVML's list of GPU processes on a virtual GPU"),
            "CUDAGraph": unsupported("CUDA graphs", kind="class"),
            "graph": unsupported("CUDA graphs", kind="class"),
            "make_graphed_callables": unsupported("CUDA graphs"),
            "nccl": unsupported("torch.cuda.nccl", kind="module"),
        }
        for name in _TENSOR_TYPES:
            table[name] = unsupported(
                f"torch.cuda.{name} (use torch.tensor(..., device='cuda'))", kind="class")
        return table

    def accelerator_table(self) -> dict:
        return {
            "is_available": lambda *a, **k: True,
            "current_accelerator": lambda *a, **k: torch.device("cuda"),
            "device_count": self.device_count,
            "current_device_index": self.current_device,
            "current_device_idx": self.current_device,
            "set_device_index": self.set_device,
            "set_device_idx": self.set_device,
            "device_index": type("device_index", (self.device,), {}),
            "current_stream": self.current_stream,
            "set_stream": _noop,
            "synchronize": self.synchronize,
            "empty_cache": _noop,
            "memory_allocated": self.memory_allocated,
            "max_memory_allocated": self.max_memory_allocated,
            "memory_reserved": self.memory_reserved,
            "max_memory_reserved": self.max_memory_reserved,
            "reset_peak_memory_stats": self.reset_peak_memory_stats,
            "memory_stats": self.memory_stats,
        }


def _nvtx_noop(*args, **kwargs) -> int:
    return 0


# NVTX ranges and marks only label a profiler's timeline (Nsight): with no profiler attached
# they do nothing on a real GPU either, and a virtual GPU has none. (A CPU build of torch has no
# NVTX: "NVTX functions not installed".) range() calls range_push and range_pop.
NVTX_FUNCTIONS = ("range_push", "range_pop", "range_start", "range_end", "mark")


def install(patcher: Patcher, node: Node) -> CudaFunctions:
    functions = CudaFunctions(node)
    for name, value in functions.cuda_table().items():
        patcher.set(torch.cuda, name, _distinct(value))
    patcher.set(torch, "Generator", generator_type(node, parse))
    import torch.cuda.nvtx as nvtx
    for name in NVTX_FUNCTIONS:
        if hasattr(nvtx, name):
            patcher.set(nvtx, name, _distinct(_nvtx_noop))
    for name, value in functions.accelerator_table().items():
        if hasattr(torch.accelerator, name):
            patcher.set(torch.accelerator, name, _distinct(value))
    return functions


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
