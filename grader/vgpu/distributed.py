"""`torch.distributed` on virtual GPUs: nccl runs as gloo, and collectives are recorded.

Tensors on virtual GPUs are host tensors underneath, so gloo moves them for real between
processes; DDP's gradient all-reduce is observed through a comm hook that records each
bucket and then does what DDP's default does (average over the group). On the simulated
clock a collective costs the ring formula; a DDP bucket's all-reduce starts when its
gradients are ready and runs beside the rest of backward. Each process keeps its own clock:
the ranks are taken to reach a collective together (they run the same steps).
"""
from __future__ import annotations

import contextlib
import functools
import threading

import torch

from grader.vgpu.clean_exit import install_for_spawned_children, note_process_group
from grader.vgpu.fingerprints import combined, prints_of
from grader.vgpu.patcher import Patcher
from grader.vgpu.synced_grads import SYNCED_GRADIENTS, bucket_slices
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


# NCCL gives each rank of a communicator a GPU of its own: two ranks of one group on one GPU
# fail where the group's first collective sets the communicator up (DDP's constructor, which
# checks the parameters across ranks). Gloo, which runs nccl here, allows it: without this a
# script putting every rank on cuda:0 trained on virtual GPUs and crashed on the course's.
_NCCL_GROUPS: dict[int, dict] = {}   # id(group) -> {"devices": {rank: device} once exchanged}


def _duplicate_gpu_error(rank: int, other: int, device: int) -> RuntimeError:
    # NCCL's words, the detail first (a check's feedback quotes an error's first line).
    return RuntimeError(
        f"NCCL error: invalid usage: Duplicate GPU detected : rank {rank} and rank {other} both "
        f"on CUDA device {device} (NCCL gives each rank of a process group a GPU of its own)"
        "\nncclInvalidUsage: This usually reflects invalid usage of NCCL library.")


def check_nccl_devices(dist, group, device) -> None:
    """Raise NCCL's "Duplicate GPU detected" where another rank of an nccl group uses the
    same GPU (`device`, a torch.device) for the group's communicator; checked once per group,
    at its first collective on GPU tensors, as NCCL sets its communicator up then."""
    state = _NCCL_GROUPS.get(id(group if group is not None else _default_group()))
    if state is None:
        return
    if "devices" not in state:
        # Every rank exchanges at the same collective, whatever its tensor's device (a rank
        # skipping it would leave the others waiting): -1 for one not on a GPU.
        from torch.distributed import distributed_c10d as c10d
        on_gpu = getattr(device, "type", None) == "cuda"
        index = (device.index if device.index is not None else torch.cuda.current_device()) \
            if on_gpu else -1
        gathered = [None] * dist.get_world_size(group)
        _inside_hook.active = True   # the exchange is the grader's, not the script's
        try:
            c10d.all_gather_object(gathered, (dist.get_rank(group), index), group=group)
        finally:
            _inside_hook.active = False
        state["devices"] = dict(gathered)
    devices = state["devices"]
    mine = dist.get_rank(group)
    for other, index in sorted(devices.items()):
        if other != mine and index == devices.get(mine) and index >= 0:
            raise _duplicate_gpu_error(max(mine, other), min(mine, other), index)


class ProcessGroupPatches:
    """`init_process_group`, `barrier` and the collectives of `torch.distributed`, recorded;
    on virtual GPUs (`virtual`) nccl becomes gloo and device arguments are dropped, and the
    collectives are charged to the `node`'s simulated clock."""

    def __init__(self, dist, virtual: bool, node=None):
        import torch.distributed.distributed_c10d as c10d
        self.dist = dist
        self.virtual = virtual
        self.node = node
        self.original_init = c10d.init_process_group
        self.original_barrier = c10d.barrier
        self.original_broadcast_coalesced = dist._broadcast_coalesced

    def init_process_group(self, backend=None, *args, **kwargs):
        dist = self.dist
        used = backend
        if self.virtual:
            kwargs.pop("device_id", None)  # binds a CUDA device to the group: none here
            used = _gloo_backend(backend)
        self.original_init(used, *args, **kwargs)
        note_process_group(dist.get_backend(), _default_group())
        if self.virtual and used != backend and "nccl" in str(backend).lower():
            _NCCL_GROUPS[id(_default_group())] = {}
        else:   # a group made again after destroy_process_group may reuse an old one's id
            _NCCL_GROUPS.pop(id(_default_group()), None)
        get_trace().emit("init_process_group", backend_requested=str(backend),
                         backend_used=str(used), world_size=dist.get_world_size(),
                         global_rank=dist.get_rank(), site=call_site(2))

    def barrier(self, group=None, async_op=False, device_ids=None):
        get_trace().emit("collective", op="barrier", bytes=0,
                         group_size=self.dist.get_world_size(group), site=call_site(2))
        if self.virtual:
            device_ids = None  # gloo has no devices to pick
        return self.original_barrier(group=group, async_op=async_op, device_ids=device_ids)

    def broadcast_coalesced(self, process_group, tensors, buffer_size, src=0):
        """DDP's broadcast of rank 0's weights when wrapping."""
        get_trace().emit("collective", op="broadcast", source="ddp_init", bytes=_nbytes(tensors),
                         group_size=process_group.size(), src=src)
        return self.original_broadcast_coalesced(process_group, tensors, buffer_size, src)

    def install(self, patcher: Patcher) -> None:
        import torch.distributed.distributed_c10d as c10d
        dist = self.dist
        init = functools.wraps(self.original_init)(_call(self.init_process_group))
        barrier = functools.wraps(self.original_barrier)(_call(self.barrier))
        for module in (dist, c10d):
            patcher.set(module, "init_process_group", init)
            patcher.set(module, "barrier", barrier)
            if self.virtual:
                patcher.set(module, "is_nccl_available", lambda: True)
            for name in _COLLECTIVES:
                original = getattr(c10d, name, None)
                if original is not None:
                    patcher.set(module, name, _recorded(name, original, dist, self.node))
        patcher.set(dist, "_broadcast_coalesced", self.broadcast_coalesced)


def _default_group():
    import torch.distributed.distributed_c10d as c10d
    try:
        return c10d._get_default_group()
    except (RuntimeError, ValueError, AttributeError):
        return None


def _call(method):
    """A plain function calling `method`, for functools.wraps to dress as the original."""
    def function(*args, **kwargs):
        return method(*args, **kwargs)
    return function


def install(patcher: Patcher, *, virtual: bool = True, node=None) -> None:
    """Record collectives; on virtual GPUs also run nccl as gloo, timed on `node`'s clock."""
    import torch.distributed as dist
    if not dist.is_available():
        return
    from torch.nn.parallel import DistributedDataParallel as DDP

    ProcessGroupPatches(dist, virtual, node).install(patcher)
    buckets = None
    if node is not None:   # virtual GPUs: every storage is the host's
        from grader.vgpu.ddp_buckets import PerGpuBuckets
        buckets = PerGpuBuckets(dist, node)
        buckets.install(patcher)
    DDPPatches(DDP, dist, node, buckets).install(patcher)
    install_for_spawned_children(patcher)


_inside_hook = threading.local()
# A collective being recorded on this thread: torch hands the call to the virtual GPUs' mode
# (`__torch_function__` of its tensors), which calls it again, and it had been recorded and
# charged to the clock twice.
_recording = threading.local()
# The collectives a layer of torch's makes on the script's behalf (SyncBatchNorm's statistics),
# recorded with that `source`: the checks take a source-less all-reduce after backward for the
# script's own averaging of its gradients (test_practical10.py, own_gradient_reduce).
_library = threading.local()


@contextlib.contextmanager
def library_collectives(source: str):
    """Collectives made inside this block are recorded as `source`'s."""
    before = getattr(_library, "source", None)
    _library.source = source
    try:
        yield
    finally:
        _library.source = before


def _recorded(name, original, dist, node=None):
    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        if getattr(_recording, "active", False):
            return original(*args, **kwargs)
        _recording.active = True
        try:
            return _record_and_call(name, original, dist, node, args, kwargs)
        finally:
            _recording.active = False
    return wrapper


def _record_and_call(name, original, dist, node, args, kwargs):
    if not getattr(_inside_hook, "active", False):
        trace = get_trace()
        group = kwargs.get("group")
        size = dist.get_world_size(group) if dist.is_initialized() else None
        if trace.enabled:
            source = getattr(_library, "source", None)
            trace.emit("collective", op=name, bytes=_nbytes(args[:2]), group_size=size,
                       site=call_site(3), **({"source": source} if source else {}))
        if node is not None:
            _charge_collective(node, name, args, size)
            tensor = _first_tensor(args)
            if tensor is not None:
                check_nccl_devices(dist, group, tensor.device)
    return original(*args, **kwargs)


def _first_tensor(args):
    return next((t for value in args[:2] for t in (
        value if isinstance(value, (list, tuple)) else [value]) if isinstance(t, torch.Tensor)),
        None)


def _charge_collective(node, name, args, group_size) -> None:
    """A collective the script calls, on the stream of the GPU its tensor lives on."""
    tensor = _first_tensor(args)
    device = node.label_of(tensor) if tensor is not None else None
    if device is not None:
        node.clock.collective(device, name, _nbytes(args[:2]), group_size or 1)


def _synced_bucket(bucket) -> list | None:
    """The bucket is about to be all-reduced (synced_grads.py): its parameters are held, and
    where each one's gradient lies in its buffer is returned for `_when_reduced`."""
    SYNCED_GRADIENTS.bucket(bucket.parameters())
    try:
        return bucket_slices(bucket)
    except Exception:   # a bucket of another make: read as held only
        return None


def _when_reduced(future, slices):
    """`future` (a comm hook's) handing its reduced buffer on as it was, once it is kept
    per parameter (synced_grads.py): the gradient DDP then writes into each `.grad`."""
    if slices is None or not hasattr(future, "then"):
        return future

    def kept(done):
        result = done.value()   # an all-reduce that failed raises here, as DDP would see it
        try:
            SYNCED_GRADIENTS.reduced(slices, result)
        except Exception:   # never the script's failure
            pass
        return result

    return future.then(kept)


def _bucket_bytes(bucket) -> int:
    return bucket.buffer().numel() * bucket.buffer().element_size()


class DDPPatches:
    """DistributedDataParallel recorded: its wrapping, and each gradient bucket's all-reduce
    (through a comm hook that then does what DDP's default does: average over the group);
    on virtual GPUs (`node`) each bucket's all-reduce is laid on the simulated clock."""

    def __init__(self, DDP, dist, node=None, buckets=None):
        self.DDP = DDP
        self.dist = dist
        self.node = node
        self.buckets = buckets   # grader/vgpu/ddp_buckets.py, on virtual GPUs
        self.original_init = DDP.__init__
        self.original_forward = DDP.forward
        self.original_register = DDP.register_comm_hook
        self.original_builtin = DDP._register_builtin_comm_hook

    def traced_allreduce(self, process_group, bucket):
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
        dist = self.dist
        group = process_group if process_group is not None else dist.group.WORLD
        size = dist.get_world_size(group)
        get_trace().emit("collective", op="all_reduce", source="ddp_gradients",
                         bytes=_bucket_bytes(bucket), group_size=size,
                         bucket=bucket.index(), last_bucket=bucket.is_last())
        slices = _synced_bucket(bucket)
        self.charge_bucket(bucket, size)
        _inside_hook.active = True  # its own all_reduce is this one, not another
        try:
            return _when_reduced(
                self._untimed(default_hooks.allreduce_hook, process_group, bucket), slices)
        finally:
            _inside_hook.active = False

    def charge_bucket(self, bucket, group_size) -> None:
        """The bucket's all-reduce on the communication stream, from when its last gradient
        is ready (the averaging DDP does with it is folded into the all-reduce)."""
        node = self.node
        if node is None:
            return
        parameters = bucket.parameters()
        device = node.label_of(parameters[0]) if parameters else None
        if device is None:
            return
        # A parameter whose gradient the tape did not see made (used through a view): ready
        # when the backward is done, so its bucket waits rather than starts early.
        done = node.clock.busy_until[device]
        ready = max(node.clock.grad_ready.get(id(p), done) for p in parameters)
        node.clock.overlapped_collective(device, ready, "all_reduce", _bucket_bytes(bucket),
                                         group_size)

    def _untimed(self, hook, *args):
        if self.node is None:
            return hook(*args)
        with self.node.clock.untimed():
            return hook(*args)

    def init(self, ddp, module, *args, **kwargs):
        if self.node is not None:   # virtual GPUs: NCCL's rule of one GPU per rank
            first = next(iter(module.parameters()), None)
            # DDP(module, device_ids, output_device, dim, broadcast_buffers, init_sync,
            # process_group, ...): the group is its sixth argument after the module.
            group = kwargs.get("process_group", args[5] if len(args) > 5 else None)
            check_nccl_devices(self.dist, group, first.device if first is not None else None)
        self.original_init(ddp, module, *args, **kwargs)
        if self.buckets is not None:
            self.buckets.watch(ddp)
        from grader.vgpu import step_report
        from grader.vgpu.observe import parallel_model
        parallel_model(module)
        step_report.parallel_model(module)
        devices = sorted({str(p.device) for p in module.parameters()})
        trace = get_trace()
        # The weights the model starts from (rank 0's, as DDP broadcast them): two runs of the
        # script that start elsewhere (a seed drawn from the system) give other gradients
        # whatever the loop does (Practical 10's invariance, grader/checks/gradient_noise.py).
        start = combined(prints_of(module.parameters())) if trace.enabled else (0.0, 0.0)
        trace.emit("ddp_wrap", module=type(module).__name__, param_devices=devices,
                   device_ids=[str(d) for d in (ddp.device_ids or [])],
                   world_size=self.dist.get_world_size(ddp.process_group),
                   params={"sum": start[0], "sumsq": start[1]}, site=call_site(3))

    def forward(self, ddp, *inputs, **kwargs):
        # Hook lazily, so that a script registering its own comm hook right after wrapping
        # keeps it (DDP accepts one hook only); that hook is then traced instead.
        if not getattr(ddp, "_pdl_hooked", False):
            ddp._pdl_hooked = True
            self.original_register(ddp, None, self.traced_allreduce)
        return self.original_forward(ddp, *inputs, **kwargs)

    def register_comm_hook(self, ddp, state, hook):
        ddp._pdl_hooked = True

        def traced(state_, bucket):
            get_trace().emit("collective", op="comm_hook", source="ddp_gradients",
                             hook=getattr(hook, "__name__", "hook"), bytes=_bucket_bytes(bucket),
                             bucket=bucket.index(), last_bucket=bucket.is_last())
            slices = _synced_bucket(bucket)
            # Timed as DDP's own all-reduce of the bucket, whatever the hook does with it.
            self.charge_bucket(bucket, self.dist.get_world_size(ddp.process_group))
            return _when_reduced(self._untimed(hook, state_, bucket), slices)

        return self.original_register(ddp, state, traced)

    def register_builtin(self, ddp, comm_hook_type):
        ddp._pdl_hooked = True
        return self.original_builtin(ddp, comm_hook_type)

    def install(self, patcher: Patcher) -> None:
        patches = self
        # Plain functions: they become DDP's methods, bound to the wrapper object.

        def __init__(ddp, module, *args, **kwargs):
            patches.init(ddp, module, *args, **kwargs)

        def forward(ddp, *inputs, **kwargs):
            return patches.forward(ddp, *inputs, **kwargs)

        def register_comm_hook(ddp, state, hook):
            return patches.register_comm_hook(ddp, state, hook)

        def _register_builtin_comm_hook(ddp, comm_hook_type):
            return patches.register_builtin(ddp, comm_hook_type)

        for function in (__init__, forward, register_comm_hook, _register_builtin_comm_hook):
            patcher.set(self.DDP, function.__name__, function)
