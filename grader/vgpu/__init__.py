"""A node of N GPUs for unmodified PyTorch scripts: real GPUs where present, virtual ones
on a CPU-only machine. Either way the same observations go to the trace.

    handle = activate(4, trace_path="t.jsonl")   # in the process that runs the script
    ...
    handle.deactivate()

Scripts are normally run through `pdl-grade run` / `pdl-grade torchrun` (grader.vgpu.launch),
which activates the node in every process of the run.
"""
from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass, field

ENV_GPUS = "PDL_VGPU_GPUS"
ENV_TRACE = "PDL_VGPU_TRACE"
ENV_FORCE_VIRTUAL = "PDL_VGPU_FORCE_VIRTUAL"


@dataclass
class Activation:
    n_gpus: int
    virtual: bool
    trace: object
    node: object = None
    patcher: object = None
    modes: list = field(default_factory=list)
    observer: object = None
    sampler: object = None

    def deactivate(self) -> None:
        global _active
        if self.sampler is not None:
            self.sampler.stop()
        if self.observer is not None:
            self.observer.uninstall()
        for mode in reversed(self.modes):
            mode.__exit__(None, None, None)
        self.modes.clear()
        if self.patcher is not None:
            self.patcher.restore()
        from grader.vgpu.node import set_node
        from grader.vgpu.trace import Trace, set_trace
        set_node(None)
        self.trace.close()
        set_trace(Trace(None, 0))
        _active = None


_active: Activation | None = None


def active() -> Activation | None:
    return _active


def real_gpu_count() -> int:
    if sys.platform.startswith("linux") and not os.path.exists("/dev/nvidiactl") \
            and "torch" not in sys.modules:
        return 0  # no NVIDIA driver: don't pay for importing torch to learn that
    import torch
    try:
        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception:
        return 0


def activate(n_gpus: int, trace_path: str | None = None, *, rank: int | None = None,
             force_virtual: bool = False) -> Activation:
    """Make this process see a node of `n_gpus` GPUs (idempotent)."""
    global _active
    # Importing torch may itself activate the node (the boot hook fires on `import torch`):
    # import first, then look whether that already happened.
    import torch
    if _active is not None:
        return _active

    from grader.vgpu.trace import Trace, rank_file, set_trace
    if rank is None:
        rank = int(os.environ.get("RANK", "0"))
    trace = Trace(rank_file(trace_path, rank) if trace_path else None, rank, trace_path)
    set_trace(trace)
    virtual = force_virtual or real_gpu_count() < n_gpus
    handle = Activation(n_gpus=n_gpus, virtual=virtual, trace=trace)
    _active = handle
    if virtual:
        _install_virtual(handle)
    else:
        _install_real(handle)
    from grader.vgpu.observe import Observer
    handle.observer = Observer(trace)
    handle.observer.install(handle.patcher)
    trace.emit("start", virtual=virtual, gpus=n_gpus, pid=os.getpid(),
               local_rank=int(os.environ.get("LOCAL_RANK", "0")),
               world_size=int(os.environ.get("WORLD_SIZE", "1")),
               torch=torch.__version__)
    return handle


def _trace_of_forked_child() -> None:
    if _active is not None:
        _active.trace.continue_in_forked_child()


os.register_at_fork(after_in_child=_trace_of_forked_child)


def _push_mode_in_every_thread(handle: Activation, make_mode) -> None:
    original = threading.Thread._bootstrap_inner

    def bootstrap_inner(self):
        # Torch-function modes are per thread: DataParallel's workers need one too.
        if _active is handle:
            with make_mode():
                return original(self)
        return original(self)

    handle.patcher.set(threading.Thread, "_bootstrap_inner", bootstrap_inner)
    mode = make_mode()
    mode.__enter__()
    handle.modes.append(mode)


def _install_virtual(handle: Activation) -> None:
    from grader.vgpu import cuda_facade, dataparallel, distributed, tensor_patches, unsupported
    from grader.vgpu.mode import VirtualGPUMode
    from grader.vgpu.node import Node, set_node
    from grader.vgpu.nvml import NOT_AVAILABLE
    from grader.vgpu.patcher import Patcher

    node = Node(handle.n_gpus)
    set_node(node)
    handle.node = node
    handle.patcher = patcher = Patcher()
    tensor_patches.install(patcher, node)
    cuda_facade.install(patcher, node)
    dataparallel.install(patcher, node)
    distributed.install(patcher, virtual=True)
    unsupported.install(patcher)
    _push_mode_in_every_thread(handle, lambda: VirtualGPUMode(node))
    handle.trace.emit("nvml", available=False, reason=NOT_AVAILABLE)


def _install_real(handle: Activation) -> None:
    from grader.vgpu import dataparallel, distributed
    from grader.vgpu.mode import RealGPUObserverMode
    from grader.vgpu.nvml import NvmlSampler
    from grader.vgpu.patcher import Patcher

    handle.patcher = Patcher()
    dataparallel.install_observer(handle.patcher)
    distributed.install(handle.patcher, virtual=False)
    _push_mode_in_every_thread(handle, RealGPUObserverMode)
    if int(os.environ.get("LOCAL_RANK", "0")) == 0:  # one sampler per node is enough
        handle.sampler = NvmlSampler(handle.trace, list(range(handle.n_gpus)))
        if handle.sampler.start():
            import atexit
            atexit.register(handle.sampler.stop)


def activate_from_environment() -> Activation | None:
    """Used by the boot `sitecustomize` and run_on_node.py: the launcher's variables decide."""
    gpus = os.environ.get(ENV_GPUS)
    if not gpus:
        return None
    return activate(int(gpus), os.environ.get(ENV_TRACE) or None,
                    force_virtual=os.environ.get(ENV_FORCE_VIRTUAL) == "1")
