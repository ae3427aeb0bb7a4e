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

from grader.records import untrusted_files
from grader.records.genuine_frames import frame_judge, writing_call
from grader.records.seal import (Verified, in_sealed_run, key_marked, key_steady, sealer_factory,
                                 take_key, verify_lines)

SCHEMA = "pdl-autograder/trace/1"
# The last record of every process the runtime activated in (grader/vgpu/guard.py).
CLOSING_EVENT = "closing_check"
# What the runtime's audit hook saw the submission's code do (grader/vgpu/guard.py).
TAMPERING_EVENT = "tampering"
# A process of a graded run that has no key (started by the submission itself, e.g. a
# `subprocess.run([sys.executable, ...])`) writes here: read by nobody, counted as a note.
UNKEYED_SUFFIX = ".unkeyed"
_OWN_CODE = (os.sep + "torch" + os.sep, os.sep + os.path.join("grader", "vgpu") + os.sep,
             os.sep + "threading.py", os.sep + "contextlib.py", "<frozen ")


class Trace:
    def __init__(self, path: str | None, rank: int, base_path: str | None = None):
        self.rank = rank
        self.t0 = time.perf_counter()
        self._lock = threading.Lock()
        # The run's seal key is read here, once per process, before any student code runs
        # (grader/records/seal.py); it lives on only inside the sealers' closures.
        key = take_key() if path else None
        self._keyless = bool(path) and key is None and in_sealed_run()
        self.probing = key_marked(key)   # a value-probe run (grader/vgpu/perturb.py)
        # One of Practical 10's invariance runs: dropout and batch statistics held still, the
        # seeds alike, the steps' gradients sketched (grader/vgpu/model_noise.py,
        # steady_start.py, gradient_sketch.py).
        self.steady = key_steady(key)
        if self._keyless:
            path += UNKEYED_SUFFIX
        self._streams, self._probe_sealer = _sealers(key, base_path or path or "")
        del key
        self._file = open(path, "a", buffering=1, encoding="utf-8") if path else None
        self._seal = self._streams(path or "")
        # The trace the user asked for: a forked child writes its own file beside it.
        self.base_path = base_path
        # In-process observers (the grader's harnesses count events without a file).
        self.listeners: list = []

    def continue_in_forked_child(self) -> None:
        """After fork: the child must not write into its parent's file (two writers, two
        sequence numberings): it gets a file of its own."""
        self._lock = threading.Lock()
        if self._file is not None and self.base_path:
            self._file = None  # the parent's handle: leave it to the parent
            path = rank_file(self.base_path, self.rank) + (UNKEYED_SUFFIX if self._keyless else "")
            self._file = open(path, "a", buffering=1, encoding="utf-8")
            self._seal = self._streams(path)

    def sealer_for(self, stream: str):
        """A sealer, with this run's key, for one more file of the run (the HW3 probe's own
        records); given once per process, to the grader's code that asks before student code
        runs."""
        return self._probe_sealer(stream)

    @property
    def enabled(self) -> bool:
        return self._file is not None or bool(self.listeners)

    def emit(self, event: str, **fields) -> None:
        if not self.enabled:
            return
        if not _writer(sys._getframe(1)):
            # Code of the submission that reached this object: what it wanted written is not
            # written; that it tried is. (Asked of every call, never of a setting of the
            # object's, which the code that reached it could change.)
            fields = {"what": f"wrote a '{event}' record through the grader's trace",
                      "site": call_site(2)}
            event = "tampering"   # TAMPERING_EVENT, as a literal no code can rebind
        record = {"event": event, "rank": self.rank, "t": round(time.perf_counter() - self.t0, 6)}
        record.update(fields)
        if self._file is not None:
            with self._lock:
                if self._file is not None:
                    self._file.write(self._seal(record) + "\n")
        # Sealed first; each listener gets its own copy, so none can change what is written.
        for listener in list(self.listeners):
            listener(dict(record))

    def close(self) -> None:
        if self._file is not None:
            with self._lock:
                self._file.close()
                self._file = None


_GRADER_FOLDER = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
# The modules whose code writes records (calls a trace's emit), and the two the writing goes
# through: a frame is the grader's only in one of them, in its own namespace
# (grader/records/genuine_frames.py). The HW3 probe, kept out of sys.modules, is admitted by its
# launcher (grader/harness/hw3_launch.py).
WRITER_MODULES = ("grader.vgpu", "grader.vgpu.cancelled", "grader.vgpu.constructor_calls",
                  "grader.vgpu.dataparallel",
                  "grader.vgpu.distributed",
                  "grader.vgpu.guard", "grader.vgpu.mode", "grader.vgpu.numpy_joins",
                  "grader.vgpu.nvml", "grader.vgpu.observe", "grader.vgpu.perturb",
                  "grader.vgpu.rows",
                  "grader.vgpu.run_on_node",
                  "grader.vgpu.trace", "grader.records.seal")
_genuine, admit_unlisted_module, _close = frame_judge(_GRADER_FOLDER, WRITER_MODULES)


def _writer(frame) -> bool:
    """Whether `frame` is the instrumentation writing a record: the grader's own code that
    calls the writer (not a pass-through of the grader's handed a writer by student code)."""
    return _genuine(frame) and writing_call(frame)


def trust_no_more_code() -> None:
    """Called by a runner just before the student's code starts: every writer module is
    imported now and the runner itself is trusted (its module is `__main__` only until the
    script takes that name); no module imported later, by the student's code or for it, is
    taken for the grader's."""
    import importlib

    import torch  # noqa: F401  (first: where the runtime is enabled it starts as torch is imported)
    for name in WRITER_MODULES:
        if name != "grader.vgpu.run_on_node":
            importlib.import_module(name)
    _close(sys._getframe(1))


def _sealers(key: bytes | None, trace_path: str):
    """(rank-file sealers, the one-shot sealer of one more stream). The first makes sealers
    only for this trace's own part files (a forked child's included); the second gives one
    sealer, once, for another file of the run (the HW3 probe's): nothing holding a Trace can
    mint sealers for the probe's records."""
    factory = sealer_factory(key, _genuine, writing_call)
    prefix = os.path.basename(trace_path).split(".rank")[0] + ".rank"
    basename = os.path.basename
    given = []

    def rank_files(stream: str):
        if key_given and not basename(stream).startswith(prefix):
            raise ValueError(f"{stream}: not a part file of this trace")
        return factory(stream)

    def once(stream: str):
        if given:
            raise RuntimeError("the run's second sealed stream was already given out")
        given.append(True)
        return factory(stream)
    key_given = key is not None
    return rank_files, once


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


def merge_rank_files(path: str, key: bytes | None = None) -> Verified:
    """Merge every `<path>.rank*` file into `path` (which is replaced), ordered by rank then
    time, keeping only records that verify against the run's seal `key`; return what was kept
    and what was not. In a graded run (a key) anything already in `path` was not written by the
    instrumentation, which only writes the rank files: it counts as unsealed. Without a key (a
    student's own `pdl-grade run`) the new records are added after the earlier runs' ones.
    The folder may hold what student code made (symlinks, FIFOs): see untrusted_files."""
    folder = os.path.dirname(os.path.abspath(path))
    prefix = os.path.basename(path) + ".rank"
    merged = Verified()
    sources = [name for name in sorted(os.listdir(folder)) if name.startswith(prefix)]
    unkeyed = [name for name in sources if name.endswith(UNKEYED_SUFFIX)]
    sources = [name for name in sources if name not in unkeyed]
    merged.unkeyed = len(unkeyed)
    for name in unkeyed:   # never read: nothing in them was observed with the run's key
        try:
            os.unlink(os.path.join(folder, name))
        except OSError:
            pass
    earlier = untrusted_files.read_lines(path) if os.path.lexists(path) else []
    if earlier is None or key is not None:
        merged.unsealed += 1 if earlier is None else sum(1 for line in earlier if line.strip())
        earlier = []
    for name in sources:
        part = os.path.join(folder, name)
        lines = untrusted_files.read_lines(part)
        if lines is None:
            merged.unsealed += 1    # a symlink, FIFO or folder with a part file's name
        else:
            verified = verify_lines(lines, key, name)
            _check_closing(verified, key)
            merged.records += verified.records
            merged.unclosed += verified.unclosed
            merged.replaced += verified.replaced
            merged.tampering += verified.tampering
            merged.unsealed += verified.unsealed
            merged.missing += verified.missing
        try:
            os.unlink(part)
        except OSError:
            pass  # a folder: left where it is, already counted
    merged.records.sort(key=lambda r: r.get("rank", 0) if isinstance(r.get("rank"), int) else 0)
    # stable sort: each process keeps its order
    untrusted_files.replace(path, "".join(line + "\n" for line in earlier if line.strip())
                            + "".join(json.dumps(record) + "\n" for record in merged.records))
    return merged



def _check_closing(verified: Verified, key: bytes | None) -> None:
    """A process the runtime activated in (its file has a `start`) ends its file with
    the guard's closing record; what that record found replaced is a problem of the run. (A
    forked child continues its parent's file and starts with no `start`: nothing asked.)"""
    records = verified.records
    for record in records:
        if record.get("event") == CLOSING_EVENT:
            verified.replaced += [str(r) for r in record.get("replaced") or []]
        elif record.get("event") == TAMPERING_EVENT:
            verified.tampering.append(f"{record.get('what')} at {record.get('site')}")
    if key is None or not any(record.get("event") == "start" for record in records):
        return
    if records[-1].get("event") != CLOSING_EVENT:
        verified.unclosed += 1
