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
import threading
from dataclasses import dataclass, field

from grader.common.hardware import real_gpu_count

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
    environ_before: dict = field(default_factory=dict)   # variables set here: their old values

    def resize(self, n_gpus: int) -> None:
        """The virtual node made `n_gpus` GPUs large, CUDA_VISIBLE_DEVICES with it where the
        node set it (the HW3 probe measures one model on several node sizes)."""
        self.node.resize(n_gpus)
        if "CUDA_VISIBLE_DEVICES" in self.environ_before:
            os.environ["CUDA_VISIBLE_DEVICES"] = visible_list(n_gpus)

    def deactivate(self) -> None:
        global _active
        for name, value in self.environ_before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        self.environ_before.clear()
        if self.sampler is not None:
            self.sampler.stop()
        if self.observer is not None:
            from grader.vgpu import perturb
            perturb.uninstall()
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
    from grader.vgpu import guard
    arm_guard = guard.start(trace)  # first at exit, so its closing record comes last
    if virtual:
        _install_virtual(handle)
        _show_visible_devices(handle)
    else:
        _install_real(handle)
    if trace_path:
        # What the script does goes to the trace file; without one (a student's own run) the
        # module and optimizer hooks would only cost time.
        from grader.vgpu.observe import Observer
        handle.observer = Observer(trace, handle.node.clock if handle.node is not None else None)
        handle.observer.install(handle.patcher)
        from grader.vgpu import perturb
        perturb.install(trace, trace.probing, n_gpus)
        # Practical 10's invariance runs start alike, however the script seeds (adv54 F2).
        from grader.vgpu import steady_start
        steady_start.install(handle.patcher, trace)
        # The HW3 probe builds the model with the arguments the script's own run passed.
        from grader.vgpu import constructor_calls
        constructor_calls.install(handle.patcher, trace)
    arm_guard(handle)
    trace.emit("start", virtual=virtual, gpus=n_gpus, pid=os.getpid(),
               local_rank=int(os.environ.get("LOCAL_RANK", "0")),
               world_size=int(os.environ.get("WORLD_SIZE", "1")),
               torch=torch.__version__)
    return handle


def _show_visible_devices(handle: Activation) -> None:
    """A job on a node with GPUs finds them in CUDA_VISIBLE_DEVICES (SLURM's --gres sets it,
    and students' scripts read it): a virtual node's, where nothing set it. Its processes, and
    those they start, are then virtual by this process's decision, not by what the variable
    would say of real GPUs (grader/vgpu/ranks.py)."""
    if "CUDA_VISIBLE_DEVICES" in os.environ:
        return
    for name, value in (("CUDA_VISIBLE_DEVICES", visible_list(handle.n_gpus)),
                        (ENV_FORCE_VIRTUAL, "1")):
        handle.environ_before.setdefault(name, os.environ.get(name))
        os.environ[name] = value


def visible_list(n_gpus: int) -> str:
    return ",".join(str(i) for i in range(n_gpus))


def _trace_of_forked_child() -> None:
    if _active is not None:
        _active.trace.continue_in_forked_child()


os.register_at_fork(after_in_child=_trace_of_forked_child)


class ThreadHooks:
    """What every thread started while the node is active gets: the torch-function mode
    (modes are per thread: DataParallel's workers need one too) and, on virtual GPUs, a host
    timeline on the simulated clock that starts where its parent's was at `start()` and that
    the parent catches up with at `join()` (DataParallel's replicas launch in parallel), and
    a tape the parent takes over at `join()`."""

    def __init__(self, handle: Activation, make_mode, clock=None):
        self.handle = handle
        self.make_mode = make_mode
        self.clock = clock
        self.original_bootstrap = threading.Thread._bootstrap_inner
        self.original_start = threading.Thread.start
        self.original_join = threading.Thread.join
        from grader.vgpu.backward_schedule import record_threads
        self.record_threads = record_threads

    def bootstrap_inner(self, thread) -> None:
        if _active is not self.handle:
            return self.original_bootstrap(thread)
        if self.clock is not None:
            self.clock.start_thread(getattr(thread, "_pdl_host_start", None))
        try:
            with self.make_mode():
                return self.original_bootstrap(thread)
        finally:
            if self.clock is not None:
                thread._pdl_host_end = self.clock.host()
                thread._pdl_tape = self.clock.take_tape()

    def start(self, thread) -> None:
        from grader.vgpu.observe import inside_data_parallel
        thread._pdl_replica = inside_data_parallel()
        if self.clock is not None:
            thread._pdl_host_start = self.clock.host()
        return self.original_start(thread)

    def join(self, thread, timeout=None) -> None:
        self.original_join(thread, timeout)
        if self.clock is not None and not thread.is_alive():
            self.clock.host_wait(getattr(thread, "_pdl_host_end", None))
            # What the thread did that backward will replay (a DataParallel replica's forward).
            self.record_threads(self.clock, getattr(thread, "_pdl_tape", None))
            thread._pdl_tape = None

    def install(self, patcher) -> None:
        hooks = self

        def _bootstrap_inner(thread):
            return hooks.bootstrap_inner(thread)

        def start(thread):
            return hooks.start(thread)

        def join(thread, timeout=None):
            return hooks.join(thread, timeout)

        for function in (_bootstrap_inner, start, join):
            patcher.set(threading.Thread, function.__name__, function)
        mode = self.make_mode()
        mode.__enter__()
        self.handle.modes.append(mode)


def _install_virtual(handle: Activation) -> None:
    from grader.vgpu import (cuda_facade, dataparallel, device_type, distributed,
                             profiler, python_dispatch, serialization, sync_batch_norm,
                             tensor_patches, unsupported)
    from grader.vgpu.mode import VirtualGPUMode, install_autograd
    from grader.vgpu.node import Node, set_node
    from grader.vgpu.nvml import NOT_AVAILABLE
    from grader.vgpu.patcher import Patcher

    node = Node(handle.n_gpus)
    set_node(node)
    handle.node = node
    handle.patcher = patcher = Patcher()
    tensor_patches.install(patcher, node)
    cuda_facade.install(patcher, node)
    device_type.install(patcher)
    dataparallel.install(patcher, node)
    distributed.install(patcher, virtual=True, node=node)
    unsupported.install(patcher)
    sync_batch_norm.install(patcher)
    profiler.install(patcher)
    serialization.install(patcher, node)
    python_dispatch.install(patcher, VirtualGPUMode, node.c_path)
    install_autograd(patcher)
    ThreadHooks(handle, lambda: VirtualGPUMode(node), node.clock).install(patcher)
    handle.trace.emit("nvml", available=False, reason=NOT_AVAILABLE)


def _install_real(handle: Activation) -> None:
    from grader.vgpu import dataparallel, distributed
    from grader.vgpu.mode import RealGPUObserverMode
    from grader.vgpu.nvml import NvmlSampler
    from grader.vgpu.patcher import Patcher

    handle.patcher = Patcher()
    dataparallel.install_observer(handle.patcher)
    distributed.install(handle.patcher, virtual=False)
    ThreadHooks(handle, RealGPUObserverMode).install(handle.patcher)
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
