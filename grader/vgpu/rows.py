"""Which rows a forward pass saw, and what a concatenation put together: row fingerprints.

Questions of the practicals are about rows, not sums: does each DDP rank train on different
samples, and do they add up to the batch (Practical 6)? Is `torch.cat` of the chunk outputs
the full-batch output, row by row and in order (Practical 4)? A row's fingerprint is two
numbers, the sum and the sum of squares of its elements in float64: rows drawn from different
random numbers differ in both, and a row computed twice differs only by float rounding.

They are recorded only where those questions look, so a long run's trace does not grow:
forward passes of the script's own threads (not DataParallel's replicas) before the first
optimizer step (the data a rank starts with; the chunks of a script that never steps), and
`torch.cat` (`concat`, `concatenate`, `vstack`, `stack`) and the comparisons
`torch.allclose`/`torch.equal` called from the user's own code. At most MAX_ROWS rows a record
and MAX_RECORDS records of each kind (BUDGETS) per process: passes with gradients (training
batches), passes without (an evaluation or a timing loop under no_grad must not use up the
training passes' records, a red team's adv28), concatenations (and fills), comparisons. Rows recorded once
are not spent again: a record whose rows equal an earlier one's carries `rows_as`, that one's
`rows_id` (a timing loop runs the same batch 30 times). Where a budget is spent the record says
so (`rows_dropped`): the checks read that as not recorded, never as other rows.

A pass with gradients whose rows find the budget spent as it runs is not given up: its rows are
held (the latest MAX_RECORDS such passes), and recorded when a backward pass first reaches it
(`reached`: a `forward_rows` record naming the pass, from a budget of its own, "trained"). A
training pass is one a backward reaches, which is not known while it runs; passes no backward
reaches (a CUDA warm-up of 40 passes with autograd on, a red team's adv31 H3) spend nothing of
it, so they can no longer leave the training batch unrecorded (Practical 6's different_data had
been skipped, and the bug it looks for hidden).

After the first step the rows of a pass with gradients are held the same way and recorded when a
backward first reaches it (a `step_rows` record naming the pass, from the "later" budget): each
step's training rows, so that the ranks' rows are compared at every step, not their count only
(a red team's forger gave every rank the share at the first step and the same rows after it).
Rows recorded before are not spent again (`rows_as`), so a loop over one batch spends nothing.

A concatenation records where each of its inputs lives (`storages`): the chunks' outputs, not
Part 1's output cut into pieces and glued back (adv28). A copy of a tensor is that tensor: an
input moved to another device first (`out.to(x.device)`), cloned (`out.clone()`, a red team's
adv29 A2 had lost 2.4 points with it), made contiguous, of another dtype (`.double()`),
deep-copied, or copied whole into a tensor of its own (`buf.copy_(out)`, `buf[:] = out`) is
written with the storage it was copied from (`copied`, called by the virtual GPUs' mode and the
real-GPU observer for every such copy), so `final_output = output.clone()` is Part 1's output
(adv29 B3), never a combination. Records keyed by an address (a copy's, a pass's data's) stand
only while the memory they were taken from lives there (a weak reference to its storage, as for
earlier joins): a host copy of Part 1's output printed and freed, the combined output made next
at its address is a tensor of its own, not Part 1's output under another name.

A combined output need not come from torch.cat: a tensor allocated first and filled row by row
(`final[a:b] = out`, `final[a:b].copy_(out)`, `final.index_copy_(0, idx, out)`) is recorded as
it is filled (`fill`, `wrote`): which rows of which storage, from which tensor (its storage, as
for concatenations), with the rows written. Only writes of a forward pass's input or output (or a
copy or part of one) are recorded: the fills a combination is made of, and Part 1's output cut
into a tensor of its own, which combines no chunk's output (a TA's audit29 D1: a filled tensor
compared by `(a - b).abs().max()`, not allclose, lost 2.4 points).
"""
from __future__ import annotations

import functools
import hashlib
import os
import sys
import threading
import weakref

import torch

from grader.vgpu.row_lists import RowLists
from grader.vgpu.trace import _OWN_CODE, call_site, get_trace

MAX_ROWS = 1024
MAX_RECORDS = 64
# The budgets, each of MAX_RECORDS records per process: forward passes with gradients (or inside
# a reentrant checkpoint: they train), forward passes under no_grad, concatenations (and fills),
# comparisons, and passes with gradients recorded when a backward reached them ("trained": those
# that found "rows" spent as they ran; "later": those after the first step).
BUDGETS = ("rows", "eval", "concat", "compare", "trained", "later")
# Copies made before the first step, remembered (the latest ones) to tell the tensor a moved or
# cloned output was copied from; as many storages of forward passes, whose writes are fills.
MAX_COPIES = 4096
# torch.stack too: stacked along dim 0 and flattened, the chunks' outputs are the batch's rows
# (its rows are recorded as the flattened tensor's, dim 0).
_CONCATENATIONS = ("cat", "concat", "concatenate", "vstack", "stack")
# A combined output written another way (a tensor allocated first and filled slice by slice) is
# seen where the script compares it with Part 1's output: the template's own
# torch.allclose(final_output, output) line.
_COMPARISONS = ("allclose", "equal")
# At most this many rows of a fill's destination are named (`at`): a batch's.
MAX_AT = MAX_ROWS


def _significant(value: float) -> float:
    return float(f"{value:.10g}")


def storage_of(tensor) -> int | None:
    """Where a tensor's elements live (its storage's address): tells a tensor of its own from
    a model's output under another name, which equal values cannot."""
    try:
        with torch._C.DisableTorchFunction():
            return int(tensor.untyped_storage().data_ptr())
    except (RuntimeError, TypeError, AttributeError, NotImplementedError):
        return None


def storage_owner(tensor):
    """The object that owns a tensor's memory (its UntypedStorage: torch keeps one Python
    object for it while the storage lives), or None."""
    try:
        with torch._C.DisableTorchFunction():
            return tensor.untyped_storage()
    except (RuntimeError, TypeError, AttributeError, NotImplementedError):
        return None


def _weakly(owner):
    """A weak reference to `owner` (what owns a tensor's memory), or None where it takes none."""
    try:
        return weakref.ref(owner) if owner is not None else None
    except TypeError:
        return None


def _lives_at(alive, address: int) -> bool:
    """Whether the memory a record was taken from (`alive`, a weak reference to what owns it:
    `_weakly`) still lives at `address`; a record of memory that takes no weak reference
    (None) stands as it is."""
    if alive is None:
        return True
    owner = alive()
    if owner is None:
        return False
    try:
        with torch._C.DisableTorchFunction():
            return int(owner.data_ptr()) == address   # resize_ moves a storage's memory
    except (RuntimeError, TypeError, AttributeError):
        return True


def rows_digest(prints) -> str:
    """A short name of a record's rows: equal names, equal rows (`rows_id`, `rows_as`)."""
    return hashlib.blake2b(repr(prints).encode(), digest_size=8).hexdigest()


def row_prints(tensor) -> list[list[float]] | None:
    """[[sum, sum of squares], ...] of the first MAX_ROWS rows of `tensor` (dim 0), or None
    for something that has no rows of numbers."""
    if not isinstance(tensor, torch.Tensor) or tensor.dim() == 0 or tensor.is_complex():
        return None
    with torch.no_grad(), torch._C.DisableTorchFunction():
        rows = tensor.detach()[:MAX_ROWS]
        flat = rows.reshape(rows.shape[0], -1).double()
        sums = flat.sum(dim=1).tolist()
        squares = (flat * flat).sum(dim=1).tolist()
    return [[_significant(s), _significant(q)] for s, q in zip(sums, squares)]


def in_replica_thread() -> bool:
    """Whether this thread is a DataParallel replica's: started while a DataParallel forward
    ran in the thread that started it (parallel_apply's worker), its pass part of the
    wrapper's. A thread the script starts, even inside a module of its own, runs passes of its
    own (ThreadHooks.start marks which)."""
    return bool(getattr(threading.current_thread(), "_pdl_replica", False))


class RowRecorder:
    """Decides where row fingerprints are recorded; one per process (see the module doc)."""

    def __init__(self, steps_taken):
        self._steps_taken = steps_taken  # () -> optimizer steps so far in this process
        self._records = dict.fromkeys(BUDGETS, 0)
        self._named: set[str] = set()             # rows_id of the rows recorded so far
        # a copy's storage -> (a weak reference to what owns the copy's memory, the storage it
        # came from): a copy freed, its address may be any later tensor's, which copies nothing
        # (`_copy_entry`)
        self._copied_from: dict[int, tuple] = {}
        # storages of the passes' inputs and outputs -> a weak reference to what owns that
        # memory (None where it takes none): the data a later tensor at that address is not
        self._passes: dict[int, object] = {}
        self._exported: dict[int, None] = {}      # those of them whose data went to the host
        # a recorded join's result (its memory's address) -> (a weak reference to what owns that
        # memory: its torch storage or numpy array; its inputs' (storage, shape)), an earlier
        # join's result among them standing for that join's inputs while it lives
        self._joined: dict[int, tuple] = {}
        # pass number -> the rows of its input, for passes with gradients that found "rows"
        # spent, until a backward reaches them (the latest MAX_RECORDS)
        self._held: dict[int, list] = {}
        # the same for passes with gradients after the first step (`step_rows`)
        self._later: dict[int, list] = {}
        self._lock = threading.Lock()
        # the row lists `tolist()` gave of the passes' data, and tensors built from them
        self.lists = RowLists(self)

    def _recording(self) -> bool:
        """Whether rows are recorded here at all: before the first optimizer step, in the
        script's own threads, and not inside backward (a checkpoint's recomputation is no pass
        of the training loop)."""
        return not (self._steps_taken() or in_replica_thread()
                    or torch._C._current_graph_task_id() != -1)

    def _take(self, kind: str) -> bool:
        with self._lock:
            return self._spend(kind)

    def _spend(self, kind: str) -> bool:
        """One record of `kind`'s budget, where one is left (the caller holds the lock)."""
        if self._records[kind] >= MAX_RECORDS:
            return False
        self._records[kind] += 1
        return True

    def _rows(self, prints, kind: str) -> dict:
        """The rows fields of a record: the rows and their `rows_id`; `rows_as` where the same
        rows were recorded before (nothing spent); `rows_dropped` where `kind`'s budget is."""
        digest = rows_digest(prints)
        with self._lock:
            if digest in self._named:
                return {"rows_as": digest}
            if not self._spend(kind):
                return {"rows_dropped": True}
            self._named.add(digest)
        return {"rows": prints, "rows_id": digest}

    def fields(self, tensor, pass_number: int | None = None) -> dict:
        """The rows fields and `storage` of a forward or forward_out record, or nothing where
        rows are not recorded. `pass_number`: the pass whose input `tensor` is; where its rows
        find the budget spent, they are held until a backward reaches it (`reached`)."""
        if tensor is None:
            return {}
        if not self._recording():
            if pass_number is not None:
                self._hold_later(tensor, pass_number)
            return {}
        prints = row_prints(tensor)
        if prints is None:
            return {}
        from grader.vgpu.observe import _checkpointed   # observe imports this module
        kind = "rows" if torch.is_grad_enabled() or _checkpointed() else "eval"
        storage = storage_of(tensor)
        if storage is not None:
            with self._lock:
                # A pass's output is new memory: a copy freed before, at the same address, is
                # no longer what lives there.
                self._copied_from.pop(storage, None)
                self._passes.pop(storage, None)
                self._joined.pop(storage, None)
                self._passes[storage] = _weakly(storage_owner(tensor))
                if len(self._passes) > MAX_COPIES:
                    del self._passes[next(iter(self._passes))]
                # what was exported from there before (a freed tensor's) is not this data
                self._exported.pop(storage, None)
        found = self._rows(prints, kind)
        if found.get("rows_dropped") and kind == "rows" and pass_number is not None:
            with self._lock:
                self._held[pass_number] = prints
                if len(self._held) > MAX_RECORDS:   # the oldest go first
                    del self._held[next(iter(self._held))]
        return {**found, "storage": storage}

    def _hold_later(self, tensor, pass_number: int) -> None:
        """The rows of a pass with gradients after the first step, in the script's own
        threads, held until a backward reaches it (`reached`)."""
        from grader.vgpu.observe import _checkpointed   # observe imports this module
        if not self._steps_taken() or in_replica_thread() \
                or torch._C._current_graph_task_id() != -1 \
                or not (torch.is_grad_enabled() or _checkpointed()):
            return
        prints = row_prints(tensor)
        if prints is None:
            return
        with self._lock:
            self._later[pass_number] = prints
            if len(self._later) > MAX_RECORDS:   # the oldest go first
                del self._later[next(iter(self._later))]

    def reached(self, pass_number: int) -> None:
        """A backward pass first reached pass `pass_number`: the rows of its input, held since
        it ran with the budget spent, are recorded now (`forward_rows`, from the "trained"
        budget), as those of a pass that trains; after the first step, `step_rows` (from the
        "later" budget)."""
        with self._lock:
            prints = self._held.pop(pass_number, None)
            later = self._later.pop(pass_number, None)
        trace = get_trace()
        if not trace.enabled:
            return
        if prints is not None:
            trace.emit("forward_rows", n=pass_number, **self._rows(prints, "trained"))
        if later is not None:
            trace.emit("step_rows", n=pass_number, **self._rows(later, "later"))

    def copied(self, source, copy) -> None:
        """`copy` was made of `source` (`.to()` to another device or dtype, `clone`,
        `contiguous`, `.double()`, deepcopy, a whole copy_): remembered, so a concatenation,
        comparison or fill of the copy is written with the storage it came from."""
        if not isinstance(source, torch.Tensor) or not isinstance(copy, torch.Tensor) \
                or not self._recording():
            return
        origin, made = storage_of(source), storage_of(copy)
        if origin is None or made is None or origin == made:
            return
        origin = self.origin(source)
        alive = _weakly(storage_owner(copy))
        with self._lock:
            self._copied_from.pop(made, None)
            self._copied_from[made] = (alive, origin)
            if len(self._copied_from) > MAX_COPIES:   # the oldest go first
                del self._copied_from[next(iter(self._copied_from))]
            inputs = self._live_join(origin) if self._joined else None
        if inputs is not None:
            # A join's result moved or cloned (`torch.cat(outs).cpu()`) joins the same inputs,
            # for as long as the copy lives, whether or not the original still does.
            self.joined(made, storage_owner(copy), [part for part, _ in inputs],
                        [shape for _, shape in inputs])

    def origin(self, tensor) -> int | None:
        """The storage of `tensor`, or of the tensor it is a copy of."""
        storage = storage_of(tensor)
        entry = self._copy_entry(storage)
        return entry[1] if entry is not None else storage

    def pass_origin(self, tensor) -> int | None:
        """`origin(tensor)` where `tensor` is (a part or copy of) a forward pass's input or
        output, else None: memory made at the address of a pass's freed data, or of a freed copy
        of it, is none of that pass's (a host copy of Part 1's output printed and freed, the
        combined output built next at its address, had been Part 1's output under another name,
        and an honest comparison lost the chunks' combination)."""
        storage = storage_of(tensor)
        entry = self._copy_entry(storage)
        if entry is not None:   # a copy of a pass's data stands for it, freed or not
            return entry[1] if entry[1] in self._passes else None
        if storage is None or storage not in self._passes:
            return None
        return storage if _lives_at(self._passes.get(storage), storage) else None

    def _copy_entry(self, storage: int | None) -> tuple | None:
        """The record of the copy whose memory is at `storage` (`copied`), while that memory
        lives (any tensor there shares it: torch.from_numpy of its array): a record whose copy
        was freed, its address now another tensor's, is forgotten."""
        entry = self._copied_from.get(storage) if self._copied_from and storage is not None \
            else None
        if entry is None or _lives_at(entry[0], storage):
            return entry
        with self._lock:
            if self._copied_from.get(storage) is entry:
                del self._copied_from[storage]
        return None

    def wrote(self, destination, source, index=None, *, indexed: bool = False) -> None:
        """`source` was written into `destination`: `destination.copy_(source)` (`indexed`
        False), `destination[index] = source` or `destination.index_copy_(0, index, source)`
        (`indexed`, `index` a tensor of rows for index_copy_). Into every row of its storage,
        a copy (`copied`); into some rows, a `fill` record, where `source` is (a part or copy
        of) a forward pass's input or output."""
        if not isinstance(source, torch.Tensor) or not isinstance(destination, torch.Tensor) \
                or not self._recording():
            return
        trace = get_trace()
        if not trace.enabled:
            return
        origin = self.pass_origin(source)
        if origin is None or origin == storage_of(destination):
            return
        try:
            with torch.no_grad(), torch._C.DisableTorchFunction():
                written = _rows_written(destination, index, indexed, source)
        except (RuntimeError, TypeError, ValueError, IndexError, NotImplementedError):
            return
        if written is None:
            return
        positions, total, values = written
        if positions == list(range(total)):
            self.copied(source, destination)   # the whole tensor: a copy, no combination
            return
        site = call_site(2)
        if site is None:
            return   # torch's or the grader's own writes
        prints = row_prints(values)
        trace.emit("fill", storage=storage_of(destination), rows_total=total,
                   at=positions[:MAX_AT], shape=list(source.shape), source=origin,
                   **(self._rows(prints, "concat") if prints is not None else {}), site=site)

    def exported(self, origin: int, how: str) -> None:
        """The data of the forward pass's input or output whose storage is `origin` was taken to
        the host from the user's code, as Python lists or a numpy array (`how`: "tolist",
        "numpy"): an `export` record, the first time only. A tensor the script compares with
        Part 1's output that holds Part 1's rows is a copy of Part 1's output, no combination,
        where Part 1's output was taken to the host before the comparison and no chunk's output
        was (test_practical4.compared_with_full: rebuilt from copies of its row lists, a red
        team's adv36 F4, or from a numpy copy)."""
        trace = get_trace()
        if not trace.enabled:
            return
        with self._lock:
            if origin in self._exported:
                return
            self._exported[origin] = None
            if len(self._exported) > MAX_COPIES:   # the oldest go first
                del self._exported[next(iter(self._exported))]
        trace.emit("export", storage=origin, how=how, site=call_site(2))

    def recording(self) -> bool:
        """Whether rows are recorded now (`_recording`), for numpy_joins."""
        return self._recording()

    def from_a_pass(self, storage: int | None) -> bool:
        """Whether `storage` (an `origin`) is a forward pass's input's or output's."""
        return storage is not None and storage in self._passes

    def join_inputs(self, inputs) -> tuple[list, list]:
        """(storages, shapes) of a join's inputs, given as (own, storage, shape): `own` the
        address of the memory the input lives in (its torch storage, its numpy array's), or
        None; `storage` what it is written as (`origin`). An input whose memory is a recorded
        join's result, still alive, stands for that join's inputs, and an input of no rows is
        none. A loop that accumulates from an empty start (`final = np.empty((0, D))`,
        `final = np.append(final, out, axis=0)`; `final = torch.cat([final, out])`, a red
        team's adv32 H3) then joins the chunks' outputs, as one join of them all would."""
        storages, shapes = [], []
        inputs = list(inputs)   # before the lock: reading an input may take it
        with self._lock:
            for own, storage, shape in inputs:
                parts = self._live_join(own) or self._live_join(storage) or [(storage, shape)]
                for part, part_shape in parts:
                    if part_shape and part_shape[0] == 0:
                        continue
                    storages.append(part)
                    shapes.append(part_shape)
        return storages, shapes

    def joins_remembered(self) -> bool:
        """Whether any join's result is remembered (`joined`)."""
        return bool(self._joined)

    def _live_join(self, address: int | None) -> list | None:
        """The inputs of the recorded join whose result lives at `address`, while what owns that
        memory lives (the caller holds the lock). Once it is freed the address may be any
        later tensor's or array's, which joins nothing of that join's: forgotten."""
        entry = self._joined.get(address) if address is not None else None
        if entry is None:
            return None
        if entry[0]() is None:
            del self._joined[address]
            return None
        return entry[1]

    def joined(self, storage: int | None, owner, storages: list, shapes: list) -> None:
        """A recorded join's result lives at `storage`, memory `owner` holds (its torch
        UntypedStorage, or its numpy array): remembered for a later join of it while `owner`
        lives (a weak reference: keeping it alive would keep the result's memory)."""
        if not storage or owner is None:
            return
        try:
            alive = weakref.ref(owner)
        except TypeError:
            return
        with self._lock:
            self._joined.pop(storage, None)
            self._joined[storage] = (alive, list(zip(storages, shapes)))
            if len(self._joined) > MAX_COPIES:   # the oldest go first
                del self._joined[next(iter(self._joined))]

    def record_join(self, op: str, parts, rows, *, storage=None, owner=None, device=None,
                    dim: int = 0) -> None:
        """A join of the host's (numpy's, a tensor built from row lists) along `dim`, recorded as
        torch.cat's is where an input is (a part or copy of) a forward pass's input or output:
        `parts` its inputs as (own, storage, shape) (`join_inputs`), `rows` a tensor whose dim
        0 are the result's rows, or a function that makes it (called only where the join is
        recorded); `storage`/`owner` where the result lives and what holds that memory (a later
        join of it joins these inputs), `rows`' own by default."""
        if not self._recording():
            return
        storages, shapes = self.join_inputs(parts)
        if not any(self.from_a_pass(part) for part in storages):
            return   # no forward pass's input or output (nor a copy of one) in it
        if callable(rows):
            rows = rows()
        if storage is None:
            storage, owner = storage_of(rows), storage_owner(rows)
        if dim == 0:
            self.joined(storage, owner, storages, shapes)
        get_trace().emit("concat", op=op, shape=list(rows.shape),
                         device=device or str(rows.device), inputs=shapes, storages=storages,
                         storage=storage, dim=dim, **self.concat_rows(row_prints(rows)),
                         site=call_site(2))

    def concat_rows(self, prints) -> dict:
        """The rows fields of a concatenation's record, from the concatenations' budget."""
        return self._rows(prints, "concat") if prints is not None else {}

    def install_concatenations(self, patcher) -> None:
        global _recorder
        from grader.vgpu import numpy_joins, numpy_lists   # numpy_joins reads row_prints here
        _recorder = self
        for name in _CONCATENATIONS:
            original = getattr(torch, name, None)
            if original is not None:
                patcher.set(torch, name, self._recorded(name, original))
        self.lists.install(patcher)          # tensors built from the outputs' row lists
        numpy_joins.install(self, patcher)   # the same records of numpy's joins on the host
        numpy_lists.install(self, patcher)   # the row lists of the outputs' host arrays

    def _recorded(self, name, original):
        @functools.wraps(original)
        def concatenation(*args, **kwargs):
            out = original(*args, **kwargs)
            caller = sys._getframe(1).f_code.co_filename
            trace = get_trace()
            # A stack inside torch (a DataLoader's collate) is no combining of the student's.
            inside_torch = name == "stack" and f"{os.sep}torch{os.sep}" in caller
            if trace.enabled and not any(part in caller for part in _OWN_CODE) and not inside_torch \
                    and isinstance(out, torch.Tensor) and self._recording():
                parts = args[0] if args else kwargs.get("tensors", ())
                dim = args[1] if len(args) > 1 else kwargs.get("dim", kwargs.get("axis", 0))
                if isinstance(dim, int) and dim < 0:   # torch.cat(outputs, dim=-2): counted from the end
                    dim += out.dim()
                rows = out
                # Stacked whole outputs ([chunks, rows, D]) are their rows; stacked rows of one
                # dimension ([rows, D]) are already (flattened, 64 rows had read as 64,000 of one
                # number: a red team's honest adv36 H1, 9.5 -> 7.1).
                if name == "stack" and dim == 0 and out.dim() >= 3:
                    rows = out.flatten(0, 1)
                prints = row_prints(rows)
                storages, shapes = self.join_inputs(
                    (storage_of(t), self.origin(t), list(t.shape))
                    for t in parts if isinstance(t, torch.Tensor))
                if dim == 0:
                    self.joined(storage_of(out), storage_owner(out), storages, shapes)
                trace.emit("concat", op=name, shape=list(rows.shape), device=str(out.device),
                           inputs=shapes, storages=storages, storage=storage_of(out), dim=dim,
                           **(self._rows(prints, "concat") if prints is not None else {}),
                           site=call_site(2))
            return out
        return concatenation

    def install_comparisons(self, patcher) -> None:
        for name in _COMPARISONS:
            for owner in (torch, torch.Tensor):
                original = getattr(owner, name, None)
                if original is not None:
                    patcher.set(owner, name, self._compared(name, original))

    def _compared(self, name, original):
        @functools.wraps(original)
        def comparison(first, second, *args, **kwargs):
            out = original(first, second, *args, **kwargs)
            caller = sys._getframe(1).f_code.co_filename
            trace = get_trace()
            if trace.enabled and not any(part in caller for part in _OWN_CODE) \
                    and isinstance(first, torch.Tensor) and isinstance(second, torch.Tensor) \
                    and self._recording():
                # Comparisons count apart: a script comparing in a loop must not use up the
                # records of the forward passes the checks read.
                kept = self._take("compare")
                trace.emit("compare", op=name, site=call_site(2), operands=[
                    {"shape": list(t.shape), "storage": self.origin(t),
                     **({"rows": row_prints(t)} if kept else {"rows_dropped": True})}
                    for t in (first, second)])
            return out
        return comparison


def _rows_written(destination, index, indexed, source):
    """(rows of `destination`'s storage written, in order; the rows that storage holds; the
    values written, one row each) where `source` goes into whole rows (dim 0) of a contiguous
    tensor, or None (a column, a strided view: no rows of a combined output)."""
    base = destination._base if destination._base is not None else destination
    if base.dim() == 0 or not base.is_contiguous() or base.stride(0) == 0 \
            or base.storage_offset() % base.stride(0):
        return None
    row = base.stride(0)
    storage_rows = base.untyped_storage().nbytes() // (row * base.element_size())
    picked = None
    view = destination
    if indexed and isinstance(index, torch.Tensor) and index.dim() <= 1 \
            and not index.is_floating_point() and index.dtype != torch.bool and destination.dim():
        picked = index.reshape(-1).tolist()        # index_copy_(0, index, source)
    elif indexed:
        view = destination[index]
        if view.untyped_storage().data_ptr() != base.untyped_storage().data_ptr():
            # Advanced indexing along dim 0 (a tensor or list of rows, a mask): those rows.
            rows = torch.as_tensor(index)
            if rows.dtype == torch.bool:
                rows = rows.reshape(-1).nonzero().reshape(-1)
            if rows.dim() != 1 or rows.is_floating_point():
                return None
            picked, view = rows.tolist(), destination
    if picked is None:
        offset = view.storage_offset() - base.storage_offset()
        if view.dim() == base.dim() - 1:            # one row: final[i] = out[j]
            count = 1
        elif view.dim() == base.dim() and view.is_contiguous():
            count = view.shape[0]
        else:
            return None
        if offset % row or view.numel() != count * row:
            return None
        start = (base.storage_offset() + offset) // row
        positions = list(range(start, start + count))
        shape = (count, *base.shape[1:])
    else:
        if destination.dim() != base.dim() or not destination.is_contiguous():
            return None
        start = destination.storage_offset() // row
        positions = [start + (p % destination.shape[0]) for p in picked]
        shape = (len(picked), *destination.shape[1:])
    return positions, storage_rows, source.detach().expand(shape)


_recorder: RowRecorder | None = None   # the process's, once the observer installed it


def copied(source, copy) -> None:
    """`copy` was made of `source` (`.to()`, clone, ...): for the concatenations' and
    comparisons' `storages` (RowRecorder.copied). Nothing before the observer is installed."""
    recorder = _recorder
    if recorder is not None:
        recorder.copied(source, copy)


def wrote(destination, source, index=None, *, indexed: bool = False) -> None:
    """`source` written into `destination` (RowRecorder.wrote): a copy, or a fill."""
    recorder = _recorder
    if recorder is not None:
        recorder.wrote(destination, source, index, indexed=indexed)
