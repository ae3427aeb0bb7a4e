"""Rows of the model's outputs as Python lists (`Tensor.tolist()`), and tensors built from them.

Practical 4's Part 2 may combine the chunks' outputs as lists: `rows = []; for out in outputs:
rows += out.cpu().tolist()` (or `rows.extend(...)`), then `final = torch.tensor(rows)` (or
`np.array(rows)`, numpy_joins.py) compared with Part 1's output by numpy. Numbers in a list
carry no memory of where they came from, but the row lists `tolist()` returns keep their
identity as the script puts them together (`+=`, `extend`, `append` add the same list
objects): each row list of a forward pass's output (or input, or a copy of one) is remembered
with the storage it came from, and a tensor built from a list of them is recorded as a join of
those storages (rows.py's `concat`), its rows the tensor's own.

The row lists are held (strong references, the latest MAX_LISTED, MAX_VALUES numbers at most),
so no other list can take one's id while it is remembered. A row list changed after `tolist()` (`row[:] = part1_row`,
a red team's forgery) is still that row's list, but the join's rows are what the tensor holds:
rows no chunk's pass returned are not the chunks' (test_practical4.returned_by_chunks). Part 1's
output rebuilt from its own `.tolist()` (`torch.tensor(output.tolist())`, adv32 F2) is a join
of Part 1's output, never a combination of the chunks' outputs.
"""
from __future__ import annotations

import functools
import sys
import threading

import torch

from grader.vgpu.trace import _OWN_CODE, get_trace

# Row lists remembered at most (the oldest forgotten first): a batch's rows, as the records of
# rows hold (rows.MAX_ROWS), and at most MAX_VALUES numbers in them all (about 32 MB of Python
# floats), so that an evaluation that lists wide outputs batch after batch holds little.
MAX_LISTED = 1024
MAX_VALUES = 1 << 20
# The torch calls that build a tensor from a list of rows.
BUILDERS = ("tensor", "as_tensor")


class RowLists:
    """The row lists `Tensor.tolist()` gave of a forward pass's data (see the module doc)."""

    def __init__(self, recorder):
        self._recorder = recorder
        # id(row list) -> (it, its storage, how many numbers it holds)
        self._rows: dict[int, tuple[list, int, int]] = {}
        self._values = 0
        self._lock = threading.Lock()

    def listed(self, tensor, rows) -> None:
        """`rows` is what `tensor.tolist()` returned: its row lists remembered where `tensor` is
        (a part or copy of) a forward pass's input or output, while rows are recorded."""
        if isinstance(tensor, torch.Tensor) and self._recorder.recording():
            self.listed_from(self._recorder.pass_origin(tensor), rows, tensor.numel(), "tolist")

    def listed_from(self, origin, rows, size: int, how: str) -> None:
        """`rows` is what `.tolist()` returned of `size` numbers of the tensor whose storage is
        `origin` (`Tensor.tolist`, or `tolist` of the array `Tensor.numpy()` gave of it,
        numpy_lists.py): remembered, and the data said taken to the host
        (RowRecorder.exported), where `origin` is a forward pass's input's or output's."""
        if not isinstance(rows, list) or not rows or not self._recorder.from_a_pass(origin):
            return
        self._recorder.exported(origin, how)
        each = rows if isinstance(rows[0], list) else [rows]   # a 1-D tensor: one row
        values = max(1, size // len(each))
        with self._lock:
            for row in each:
                if isinstance(row, list):
                    self._forget(id(row))
                    self._rows[id(row)] = (row, origin, values)
                    self._values += values
            while self._rows and (len(self._rows) > MAX_LISTED or self._values > MAX_VALUES):
                self._forget(next(iter(self._rows)))   # the oldest first

    def _forget(self, key: int) -> None:
        entry = self._rows.pop(key, None)
        if entry is not None:
            self._values -= entry[2]

    def origin_of(self, value) -> int | None:
        """The storage a remembered row list came from, or None (not a list `tolist()` gave of
        a forward pass's data: a list of the script's own)."""
        entry = self._rows.get(id(value)) if self._rows else None
        return entry[1] if entry is not None and entry[0] is value else None

    def listed_rows(self, value) -> bool:
        """Whether `value` is a list whose first item is a remembered row list: a chunk's whole
        `.tolist()` (an item of `[o.tolist() for o in outputs]`, adv36 H2)."""
        return type(value) is list and bool(value) and self.origin_of(value[0]) is not None

    def parts(self, rows) -> list[tuple]:
        """(own, storage, shape) of a list of row lists, for RowRecorder.join_inputs: each run of
        rows from the same storage one input (the rows of one chunk's output)."""
        return runs([(None, self.origin_of(row), [len(row)] if isinstance(row, list) else [])
                     for row in rows])

    def install(self, patcher) -> None:
        patcher.set(torch.Tensor, "tolist", self._listing(torch.Tensor.tolist))
        for name in BUILDERS:
            patcher.set(torch, name, self._building(name, getattr(torch, name)))

    def _listing(self, original):
        @functools.wraps(original)
        def tolist(tensor, *args, **kwargs):
            rows = original(tensor, *args, **kwargs)
            # The user's lists only: torch's and the grader's own (row_prints lists its sums)
            # are none of the script's rows, at whatever address their tensor was made.
            caller = sys._getframe(1).f_code.co_filename
            if get_trace().enabled and not any(part in caller for part in _OWN_CODE):
                self.listed(tensor, rows)
            return rows
        return tolist

    def _building(self, name, original):
        @functools.wraps(original)
        def build(data, *args, **kwargs):
            out = original(data, *args, **kwargs)
            # Only a list whose first row came from a forward pass is looked at further: any
            # other call costs a type check and a lookup in an empty or small dict.
            if type(data) in (list, tuple) and data and isinstance(out, torch.Tensor) \
                    and out.dim() >= 2:
                caller = sys._getframe(1).f_code.co_filename
                if any(part in caller for part in _OWN_CODE):
                    return out
                if self.origin_of(data[0]) is not None:
                    self._recorder.record_join(f"torch.{name}", self.parts(data), out)
                elif out.dim() >= 3 and self.listed_rows(data[0]):
                    # Each chunk's whole `.tolist()` ([o.tolist() for o in outputs]): their
                    # rows, one level down (adv36 H2); any list not remembered is no chunk's.
                    parts = [p for item in data for p in self.parts(item if type(item) is list
                                                                    else [item])]
                    self._recorder.record_join(f"torch.{name}", parts, out.flatten(0, 1))
            return out
        return build


def runs(parts: list[tuple]) -> list[tuple]:
    """Row inputs (own, storage, shape of one row) put together: each run of consecutive rows
    of the same storage one input of that many rows."""
    joined: list[tuple] = []
    for own, storage, shape in parts:
        if joined and storage is not None and joined[-1][1] == storage \
                and joined[-1][2][1:] == list(shape):
            previous = joined[-1]
            joined[-1] = (None, storage, [previous[2][0] + 1, *previous[2][1:]])
        else:
            joined.append((None, storage, [1, *shape]))
    return joined
