"""The simulated clock of a virtual node: when each GPU, and the host, is done with its work.

CUDA is asynchronous: the host enqueues work and moves on; each GPU runs its stream in order.
So the clock keeps one timeline per host thread (how far the script has got launching work)
and one per GPU (until when its stream is busy), in simulated seconds since activation:

- an operation costs its host thread `host_op_s`; on its GPU it starts when both the stream is
  free and the host has launched it, and lasts its cost (grader/vgpu/cost_model.py);
- a copy between GPUs runs on the destination's stream once the source's stream has produced
  the data; a copy to or from the host blocks the host until it is done;
- `synchronize`, `.item()`, printing a tensor make the host wait for the GPU;
- DDP's all-reduce runs on a communication stream of its own beside the compute stream.

Nothing here reads a wall clock: the same script gives the same times on any machine, under
any load. Times are whole nanoseconds (costs are rounded to the nanosecond when they are laid
on a timeline), so a duration is the same wherever on the timeline it falls: the same work
measured twice in one run gives the same number to the last digit. Work whose result needs a
gradient is also written on a tape per host thread, which `backward()` replays on these
timelines (grader/vgpu/backward_schedule.py).
"""
from __future__ import annotations

import threading

from grader.vgpu.cost_model import MODEL, CostModel

TAPE_LIMIT = 200_000  # entries of work waiting for a backward, per thread


def ns(seconds: float) -> int:
    return round(seconds * 1e9)


def ms(nanoseconds: int) -> float:
    """A duration on the clock (whole ns) in milliseconds."""
    return nanoseconds / 1e6


class _ThreadState(threading.local):
    """Each host thread's part of the clock. The class attributes are what a thread the node
    did not see start reads (not timed), so the hot paths read `state.on` without a getattr."""
    host: int | None = None
    untimed = 0
    on = False


class _Untimed:
    """The context of `SimulatedClock.untimed` (a class: a generator context costs more)."""
    __slots__ = ("state",)

    def __init__(self, state):
        self.state = state

    def __enter__(self):
        state = self.state
        state.untimed += 1
        state.on = False

    def __exit__(self, *exc):
        state = self.state
        state.untimed -= 1
        state.on = state.untimed == 0 and state.host is not None
        return False


class SimulatedClock:
    def __init__(self, n_gpus: int, model: CostModel = MODEL):
        self.model = model
        # In ns since activation: until when each GPU's stream, and its communication stream,
        # is busy.
        self.busy_until: list[int] = []
        self.comm_until: list[int] = []
        self.resize(n_gpus)
        # When each parameter's gradient is complete (by id), for DDP's gradient buckets.
        self.grad_ready: dict[int, int] = {}
        # Whether the script read a time off it (torch.cuda.Event.elapsed_time): the times it
        # printed are then, at least in part, this clock's (step_report says so).
        self.events_read = False
        self._local = _ThreadState()
        self.start_thread(0)  # the thread that made the node is the script's main thread

    @property
    def model(self) -> CostModel:
        return self._model

    @model.setter
    def model(self, model: CostModel) -> None:
        self._model = model
        # The model's constants as the hot paths use them (the mode inlines CostModel.kernel).
        self.host_op_ns = ns(model.host_op_s)
        self.kernel_s = model.kernel_s
        self.s_per_byte = 1.0 / model.memory_bytes_per_s
        self.s_per_flop = 1.0 / model.flops_per_s
        self.backward_factor = model.backward_factor
        # The same, in the order the C fast path (grader/vgpu/_fastpath.c) reads them at once.
        self.hot = (self.s_per_byte, self.s_per_flop, self.kernel_s, self.backward_factor,
                    self.host_op_ns)

    @staticmethod
    def ns(seconds: float) -> int:
        return round(seconds * 1e9)

    def copy_ns(self, nbytes: int) -> int:
        """How long a copy of `nbytes` between two GPUs takes (ns)."""
        return round(self._model.copy(nbytes) * 1e9)  # ns(), without a frame per copy

    def resize(self, n_gpus: int) -> None:
        grow = max(0, n_gpus - len(self.busy_until))
        self.busy_until = self.busy_until[:n_gpus] + [0] * grow
        self.comm_until = self.comm_until[:n_gpus] + [0] * grow

    # -- host threads ----------------------------------------------------------------------------
    def host(self) -> int | None:
        """This thread's host time (ns); None for a thread the node did not see start (not
        timed)."""
        return self._local.host

    def start_thread(self, at: int | None) -> None:
        """In a new thread: its host timeline starts where its parent's was when it started it,
        with a tape of its own (backward_schedule)."""
        state = self._local
        state.host = at
        state.untimed = 0
        state.on = at is not None  # timed: `timed`, kept as one flag for the hot paths
        state.tape = []

    # -- the tape of work backward will replay (grader/vgpu/backward_schedule.py) -----------------
    def record(self, entry: tuple) -> None:
        tape = self._local.tape
        tape.append(entry)
        if len(tape) > TAPE_LIMIT:  # a forward nothing back-propagates: keep the newest
            del tape[:len(tape) // 2]

    def tape(self) -> list:
        return getattr(self._local, "tape", [])

    def take_tape(self) -> list:
        tape = getattr(self._local, "tape", [])
        self._local.tape = []
        return tape

    def host_wait(self, until: int | None) -> None:
        """The host blocks until `until` (a joined thread's end, an event, a GPU's stream)."""
        state = self._local
        if until is not None and state.host is not None and until > state.host:
            state.host = until

    @property
    def timed(self) -> bool:
        """Whether work in this thread goes on the clock: a thread the node saw start, outside
        `untimed`."""
        return self._local.on

    def untimed(self) -> "_Untimed":
        """`with clock.untimed():` work that is already on the timelines (a backward pass laid
        out in advance) or that a real GPU would fold into other work: not charged again."""
        return _Untimed(self._local)

    # -- work --------------------------------------------------------------------------------------
    def host_op(self) -> None:
        """An operation on host tensors: the host's launch cost only."""
        if self.timed:
            self._local.host += self.host_op_ns

    def launch(self, device: int, seconds: float) -> int:
        """One kernel of `seconds` on `device`; returns when it ends. (The caller checks
        `timed`: this is the hottest path of the node.)"""
        state = self._local
        host = state.host = state.host + self.host_op_ns
        busy = self.busy_until
        start = busy[device] if busy[device] > host else host
        end = busy[device] = start + round(seconds * 1e9)
        return end

    def copy(self, source: int | None, target: int | None, nbytes: int,
             lane: int | None = None) -> int:
        """A copy of `nbytes` from `source` to `target` (None: the host). Between GPUs it runs on
        the target's stream (or on `lane`'s, DataParallel's GPU 0) after the source's stream
        has produced the data; to or from the host it blocks the host."""
        # Every `x.to(device)` between GPUs comes here: `timed`, `host()`, `model` and ns()
        # read directly, one Python frame instead of five.
        state = self._local
        if not state.on or source == target:
            return state.host or 0
        state.host += self.host_op_ns
        busy = self.busy_until
        cost = round(self._model.copy(nbytes, host_side=source is None or target is None) * 1e9)
        start = state.host
        for device in (source, target, lane):
            if device is not None and busy[device] > start:
                start = busy[device]
        end = start + cost
        for device in (target, lane) if target is not None else (source,):
            if device is not None:
                busy[device] = end
        if source is None or target is None:
            state.host = end  # a copy from or to pageable host memory is synchronous
        return end

    def collective(self, device: int, op: str, nbytes: int, group_size: int) -> int:
        """A collective the script calls: on the GPU's stream, in order with its other work."""
        if not self.timed:
            return self.busy_until[device]
        return self.launch(device, self.model.collective(op, nbytes, group_size))

    def overlapped_collective(self, device: int, ready: int, op: str, nbytes: int,
                              group_size: int) -> int:
        """DDP's all-reduce of a gradient bucket: on the communication stream, as soon as the
        bucket is `ready`, overlapping the rest of backward; the compute stream waits for it
        before the next work (DDP's finalize_backward)."""
        start = max(self.comm_until[device], ready)
        end = self.comm_until[device] = start + ns(self.model.collective(op, nbytes, group_size))
        if end > self.busy_until[device]:
            self.busy_until[device] = end
        return end

    def stream_wait(self, device: int, until: int) -> None:
        """`stream.wait_event(e)`: later work on the device starts after `until`."""
        if until > self.busy_until[device]:
            self.busy_until[device] = until

    # -- reading the clock ---------------------------------------------------------------------
    def device_time(self, device: int) -> int:
        """When work enqueued now on `device` would start (an event recorded on its stream)."""
        host = self.host() or 0
        return max(self.busy_until[device], host)

    def synchronize(self, device: int | None = None) -> None:
        """The host waits for `device`'s streams (None: every GPU)."""
        devices = range(len(self.busy_until)) if device is None else (device,)
        for d in devices:
            self.host_wait(max(self.busy_until[d], self.comm_until[d]))

    def read_back(self, device: int) -> None:
        """`.item()`, printing a tensor, `if tensor:`: a small copy to the host, after the
        device's stream has finished what was enqueued before."""
        if self.timed:
            self.host_wait(max(self.busy_until[device], self._local.host + self.host_op_ns)
                           + ns(self.model.host_link_s))

    def completion(self) -> int:
        """When everything enqueued so far is done: the host's time after synchronizing every
        GPU (ns)."""
        return max([self.host() or 0, *self.busy_until, *self.comm_until])
