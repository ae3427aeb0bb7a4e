"""Which rows a forward pass saw, and what a concatenation put together: row fingerprints.

Questions of the practicals are about rows, not sums: does each DDP rank train on different
samples, and do they add up to the batch (Practical 6)? Is `torch.cat` of the chunk outputs
the full-batch output, row by row and in order (Practical 4)? A row's fingerprint is two
numbers, the sum and the sum of squares of its elements in float64: rows drawn from different
random numbers differ in both, and a row computed twice differs only by float rounding.

They are recorded only where those questions look, so a long run's trace does not grow:
forward passes of the script's own threads (not DataParallel's replicas) before the first
optimizer step (the data a rank starts with; the chunks of a script that never steps), at
most MAX_ROWS rows each and MAX_RECORDS records per process; and `torch.cat` (`concat`, `concatenate`, `vstack`) and the comparisons
`torch.allclose`/`torch.equal` called from the user's own code, under the same limits.
"""
from __future__ import annotations

import functools
import os
import sys
import threading

import torch

from grader.vgpu.trace import _OWN_CODE, call_site, get_trace

MAX_ROWS = 1024
MAX_RECORDS = 64
# torch.stack too: stacked along dim 0 and flattened, the chunks' outputs are the batch's rows
# (its rows are recorded as the flattened tensor's, dim 0).
_CONCATENATIONS = ("cat", "concat", "concatenate", "vstack", "stack")
# A combined output written another way (a tensor allocated first and filled slice by slice) is
# seen where the script compares it with Part 1's output: the template's own
# torch.allclose(final_output, output) line.
_COMPARISONS = ("allclose", "equal")


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
        self._records = {"rows": 0, "compare": 0}
        self._lock = threading.Lock()

    def _take(self, kind: str = "rows") -> bool:
        # Comparisons count apart: a script comparing in a loop must not use up the records of
        # the forward passes the checks read.
        # Nor inside backward: a checkpoint's recomputation is no pass of the training loop.
        if self._steps_taken() or in_replica_thread() or torch._C._current_graph_task_id() != -1:
            return False
        with self._lock:
            if self._records[kind] >= MAX_RECORDS:
                return False
            self._records[kind] += 1
            return True

    def fields(self, tensor) -> dict:
        """`{"rows": ...}` for a forward record, or nothing where rows are not recorded."""
        if tensor is None or not self._take():
            return {}
        prints = row_prints(tensor)
        return {} if prints is None else {"rows": prints, "storage": storage_of(tensor)}

    def install_concatenations(self, patcher) -> None:
        for name in _CONCATENATIONS:
            original = getattr(torch, name, None)
            if original is not None:
                patcher.set(torch, name, self._recorded(name, original))

    def _recorded(self, name, original):
        @functools.wraps(original)
        def concatenation(*args, **kwargs):
            out = original(*args, **kwargs)
            caller = sys._getframe(1).f_code.co_filename
            trace = get_trace()
            # A stack inside torch (a DataLoader's collate) is no combining of the student's.
            inside_torch = name == "stack" and f"{os.sep}torch{os.sep}" in caller
            if trace.enabled and not any(part in caller for part in _OWN_CODE) and not inside_torch \
                    and isinstance(out, torch.Tensor) and self._take():
                parts = args[0] if args else kwargs.get("tensors", ())
                dim = args[1] if len(args) > 1 else kwargs.get("dim", kwargs.get("axis", 0))
                if isinstance(dim, int) and dim < 0:   # torch.cat(outputs, dim=-2): counted from the end
                    dim += out.dim()
                rows = out
                if name == "stack" and dim == 0 and out.dim() >= 2:
                    rows = out.flatten(0, 1)
                trace.emit("concat", op=name, shape=list(rows.shape), device=str(out.device),
                           inputs=[list(t.shape) for t in parts if isinstance(t, torch.Tensor)],
                           dim=dim, rows=row_prints(rows), site=call_site(2))
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
                    and self._take("compare"):
                trace.emit("compare", op=name, site=call_site(2), operands=[
                    {"shape": list(t.shape), "rows": row_prints(t), "storage": storage_of(t)}
                    for t in (first, second)])
            return out
        return comparison
