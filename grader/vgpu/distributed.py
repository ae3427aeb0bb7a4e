"""`torch.distributed` on virtual GPUs: nccl runs as gloo, and collectives are recorded.

Tensors on virtual GPUs are host tensors underneath, so gloo moves them for real between
processes; DDP's gradient all-reduce is observed through a comm hook that records each
bucket and then does what DDP's default does (average over the group).
"""
from __future__ import annotations

import functools
import threading

import torch

from grader.vgpu.clean_exit import install_for_spawned_children, note_process_group
from grader.vgpu.patcher import Patcher
from grader.vgpu.trace import call_site, get_trace

_COLLECTIVES = ("broadcast", "all_reduce", "all_reduce_coalesced", "reduce", "all_gather",
                "all_gather_into_tensor", "all_gather_coalesced", "gather", "scatter",
                "reduce_scatter", "reduce_scatter_tensor", "all_to_all", "all_to_all_single",
                "send", "recv", "isend", "irecv")


def _nbytes(value) -> int:
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, (list, tuple)):
        return sum(_nbytes(v) for v in value)
    return 0


def _gloo_backend(backend):
    if backend is None:
        return "gloo"
    text = str(backend).lower()
    # "nccl", "cuda:nccl,cpu:gloo", "nccl|gloo": every GPU backend becomes gloo.
    return "gloo" if "nccl" in text or text in ("cuda", "gloo") else backend


def install(patcher: Patcher, *, virtual: bool = True) -> None:
    """Record collectives; on virtual GPUs also run nccl as gloo."""
    import torch.distributed as dist
    if not dist.is_available():
        return
    import torch.distributed.distributed_c10d as c10d
    from torch.nn.parallel import DistributedDataParallel as DDP

    original_init = c10d.init_process_group

    @functools.wraps(original_init)
    def init_process_group(backend=None, *args, **kwargs):
        used = backend
        if virtual:
            kwargs.pop("device_id", None)  # binds a CUDA device to the group: none here
            used = _gloo_backend(backend)
        original_init(used, *args, **kwargs)
        note_process_group(dist.get_backend())
        get_trace().emit("init_process_group", backend_requested=str(backend),
                         backend_used=str(used), world_size=dist.get_world_size(),
                         global_rank=dist.get_rank(), site=call_site(2))

    original_barrier = c10d.barrier

    @functools.wraps(original_barrier)
    def barrier(group=None, async_op=False, device_ids=None):
        get_trace().emit("collective", op="barrier", bytes=0,
                         group_size=dist.get_world_size(group), site=call_site(2))
        if virtual:
            device_ids = None  # gloo has no devices to pick
        return original_barrier(group=group, async_op=async_op, device_ids=device_ids)

    for module in (dist, c10d):
        patcher.set(module, "init_process_group", init_process_group)
        patcher.set(module, "barrier", barrier)
        if virtual:
            patcher.set(module, "is_nccl_available", lambda: True)
        for name in _COLLECTIVES:
            original = getattr(c10d, name, None)
            if original is not None:
                patcher.set(module, name, _recorded(name, original, dist))

    original_broadcast_coalesced = dist._broadcast_coalesced

    def broadcast_coalesced(process_group, tensors, buffer_size, src=0):
        get_trace().emit("collective", op="broadcast", source="ddp_init", bytes=_nbytes(tensors),
                         group_size=process_group.size(), src=src)
        return original_broadcast_coalesced(process_group, tensors, buffer_size, src)

    patcher.set(dist, "_broadcast_coalesced", broadcast_coalesced)
    _install_ddp(patcher, DDP, dist)
    install_for_spawned_children(patcher)


_inside_hook = threading.local()


def _recorded(name, original, dist):
    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        trace = get_trace()
        if trace.enabled and not getattr(_inside_hook, "active", False):
            group = kwargs.get("group")
            trace.emit("collective", op=name, bytes=_nbytes(args[:2]),
                       group_size=dist.get_world_size(group) if dist.is_initialized() else None,
                       site=call_site(2))
        return original(*args, **kwargs)
    return wrapper


def _install_ddp(patcher: Patcher, DDP, dist) -> None:
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

    original_init = DDP.__init__
    original_forward = DDP.forward
    original_register = DDP.register_comm_hook
    original_builtin = DDP._register_builtin_comm_hook

    def traced_allreduce(process_group, bucket):
        group = process_group if process_group is not None else dist.group.WORLD
        get_trace().emit("collective", op="all_reduce", source="ddp_gradients",
                         bytes=bucket.buffer().numel() * bucket.buffer().element_size(),
                         group_size=dist.get_world_size(group), bucket=bucket.index(),
                         last_bucket=bucket.is_last())
        _inside_hook.active = True  # its own all_reduce is this one, not another
        try:
            return default_hooks.allreduce_hook(process_group, bucket)
        finally:
            _inside_hook.active = False

    def init(self, module, *args, **kwargs):
        original_init(self, module, *args, **kwargs)
        devices = sorted({str(p.device) for p in module.parameters()})
        get_trace().emit("ddp_wrap", module=type(module).__name__, param_devices=devices,
                         device_ids=[str(d) for d in (self.device_ids or [])],
                         world_size=dist.get_world_size(self.process_group),
                         site=call_site(2))

    def forward(self, *inputs, **kwargs):
        # Hook lazily, so that a script registering its own comm hook right after wrapping
        # keeps it (DDP accepts one hook only); that hook is then traced instead.
        if not getattr(self, "_pdl_hooked", False):
            self._pdl_hooked = True
            original_register(self, None, traced_allreduce)
        return original_forward(self, *inputs, **kwargs)

    def register_comm_hook(self, state, hook):
        self._pdl_hooked = True

        def traced(state_, bucket):
            get_trace().emit("collective", op="comm_hook", source="ddp_gradients",
                             hook=getattr(hook, "__name__", "hook"),
                             bytes=bucket.buffer().numel() * bucket.buffer().element_size(),
                             bucket=bucket.index(), last_bucket=bucket.is_last())
            return hook(state_, bucket)

        return original_register(self, state, traced)

    def register_builtin(self, comm_hook_type):
        self._pdl_hooked = True
        return original_builtin(self, comm_hook_type)

    patcher.set(DDP, "__init__", init)
    patcher.set(DDP, "forward", forward)
    patcher.set(DDP, "register_comm_hook", register_comm_hook)
    patcher.set(DDP, "_register_builtin_comm_hook", register_builtin)
