"""The observation ledger: JSON lines, one record per event, each tagged with the rank.

Every process of a run writes its own file (`<trace>.rank<r>.<pid>`) so that no two processes
ever share a file handle; the launcher merges them into the one trace file the user asked for.
The format is documented in docs/trace-format.md.
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time

SCHEMA = "pdl-autograder/trace/1"
_OWN_CODE = (os.sep + "torch" + os.sep, os.sep + os.path.join("grader", "vgpu") + os.sep,
             os.sep + "threading.py", os.sep + "contextlib.py", "<frozen ")


class Trace:
    def __init__(self, path: str | None, rank: int):
        self.rank = rank
        self.t0 = time.perf_counter()
        self._lock = threading.Lock()
        self._file = open(path, "a", buffering=1, encoding="utf-8") if path else None
        # In-process observers (the grader's harnesses count events without a file).
        self.listeners: list = []

    @property
    def enabled(self) -> bool:
        return self._file is not None or bool(self.listeners)

    def emit(self, event: str, **fields) -> None:
        if not self.enabled:
            return
        record = {"event": event, "rank": self.rank, "t": round(time.perf_counter() - self.t0, 6)}
        record.update(fields)
        for listener in self.listeners:
            listener(record)
        if self._file is not None:
            line = json.dumps(record, default=str)
            with self._lock:
                if self._file is not None:
                    self._file.write(line + "\n")

    def close(self) -> None:
        if self._file is not None:
            with self._lock:
                self._file.close()
                self._file = None


def display_path(filename: str) -> str:
    """A path as the student knows it: inside the submission (hw3/model_parallel.py), else as is."""
    root = os.environ.get("PDL_SUBMISSION_ROOT")
    if filename.startswith("<"):
        return filename
    if root and os.path.abspath(filename).startswith(os.path.abspath(root) + os.sep):
        return os.path.relpath(os.path.abspath(filename), root)
    return filename


def call_site(skip: int = 2) -> str | None:
    """file:line of the innermost frame that belongs to the user's code (not torch, not us)."""
    frame = sys._getframe(skip)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not any(part in filename for part in _OWN_CODE):
            return f"{display_path(filename)}:{frame.f_lineno}"
        frame = frame.f_back
    return None


_trace = Trace(None, 0)


def get_trace() -> Trace:
    return _trace


def set_trace(trace: Trace) -> None:
    global _trace
    _trace = trace


def rank_file(path: str, rank: int) -> str:
    return f"{path}.rank{rank}.{os.getpid()}"


def merge_rank_files(path: str) -> int:
    """Merge every `<path>.rank*` file into `path`, ordered by rank then time; return records."""
    folder = os.path.dirname(os.path.abspath(path))
    prefix = os.path.basename(path) + ".rank"
    records = []
    for name in sorted(os.listdir(folder)):
        if not name.startswith(prefix):
            continue
        part = os.path.join(folder, name)
        with open(part, encoding="utf-8") as handle:
            for line in handle:
                line = line.strip()
                if not line:
                    continue
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError:
                    # A process killed mid-write leaves a torn last line: keep the rest.
                    continue
        os.unlink(part)
    records.sort(key=lambda r: r.get("rank", 0))  # stable: each process keeps its order
    with open(path, "a", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record) + "\n")
    return len(records)


def read_trace(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]
