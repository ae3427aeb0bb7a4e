"""The grader's marks on autograd nodes, kept where the script can neither read nor write them.

The gradient sources (gradient_sources.py) mark a forward pass's output node, the nodes whose
outside gradients they already hook, and the reentrant checkpoints their walk went through. The
marks had been kept in the node's `metadata`, a dict of the node's that the script reads and
writes: a red team read a real pass's mark there and wrote one naming the whole-batch loss's own
node beside it (adv31; `node._set_sequence_nr` even lets a node take another's number).

Here a mark lives in a table of the grader's own, keyed by the node's `metadata` dict: a Python
object the node makes once and keeps for its whole life, so its id names the node for as long
as the table holds the dict (holding it, the id cannot pass to another object). A hook the
node alone holds (a no-op pre-hook, registered with the first mark) goes when the node goes,
and takes the node's marks with it: a graph the script lets go of leaves nothing behind.
"""
from __future__ import annotations

import threading
import weakref


def _metadata(node):
    try:
        return node.metadata
    except (AttributeError, RuntimeError, TypeError):
        return None


class NodeMarks:
    """Marks (a name and a value) on autograd nodes, for as long as each node lives."""

    def __init__(self):
        # Reentrant: a garbage collection inside a locked part may free a node or parameter,
        # whose callback takes the lock again in the same thread.
        self._lock = threading.RLock()
        # id(node.metadata) -> (that metadata dict, {mark: value}, the witness's weak reference)
        self._marks: dict[int, tuple[dict, dict, weakref.ref]] = {}

    def put(self, node, mark: str, value=True) -> bool:
        """Mark `node` (False where it cannot be marked: no metadata, or no hooks)."""
        metadata = _metadata(node)
        if not isinstance(metadata, dict):
            return False
        key = id(metadata)
        with self._lock:
            held = self._marks.get(key)
            if held is not None and held[0] is metadata:
                held[1][mark] = value
                return True

        def witness(grad_outputs):
            return None

        try:
            node.register_prehook(witness)
        except (AttributeError, RuntimeError, TypeError):
            return False

        def gone(_ref, key=key):
            with self._lock:
                held = self._marks.get(key)
                if held is not None and held[2] is _ref:
                    del self._marks[key]

        held = (metadata, {mark: value}, weakref.ref(witness, gone))
        with self._lock:
            self._marks[key] = held
        return True

    def get(self, node, mark: str, default=None):
        """The value of `node`'s mark, or `default`."""
        metadata = _metadata(node)
        if metadata is None:
            return default
        held = self._marks.get(id(metadata))
        if held is None or held[0] is not metadata:
            return default
        return held[1].get(mark, default)

    def __len__(self) -> int:
        return len(self._marks)
