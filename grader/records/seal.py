"""Sealed observation files: each record a run's instrumentation writes carries a sequence
number and an HMAC of the record, its number and the file's name.

The grader draws a fresh key per run and hands it to the processes it starts itself (the
runner, the ranks launcher, the HW3 probe) through an inherited pipe, never the environment:
the environment only says which descriptor to read (`ENV_FD`). The first thing to activate
in that process reads the key and closes the descriptor (`take_key`) before any student code
runs; from then on the key exists only inside the closures `sealer` returns (an HMAC object
already keyed), where code can reach it only by inspecting the interpreter (frames, closures,
the garbage collector): what the static scan holds for review. The scoring side verifies every
file the run left behind. A line written any other way (a script appending "good" records,
a file made up, a real one copied) has no valid seal; a record cut out leaves a gap in the
numbers; both are reported, and only records that verify are used.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import json.decoder
import json.encoder
import json.scanner
import os
import secrets
import sys
from dataclasses import dataclass, field
from typing import Callable

ENV_FD = "PDL_SEAL_FD"      # the descriptor holding the key (a pipe), in a graded run only
TAKEN = "taken"             # ENV_FD's value once the key has been read: children get none
KEY_BYTES = 32
_SEAL_FIELDS = ("seq", "seal")


def new_key(marked: bool = False, steady: bool = False) -> bytes:
    """A fresh key; `marked`: its last bit set, else cleared; `steady`: its bit before that.
    The mark tells the runtime that this is a value-probe run (grader/vgpu/perturb.py), the
    steady bit that it is one of Practical 10's invariance runs, whose model noise is held
    still (grader/vgpu/model_noise.py), by the one thing no student code can read: the key,
    taken before any of it runs."""
    key = bytearray(secrets.token_bytes(KEY_BYTES))
    key[-1] = (key[-1] & 0xFC) | int(marked) | int(steady) << 1
    return bytes(key)


def key_marked(key: bytes | None) -> bool:
    return bool(key) and bool(key[-1] & 1)


def key_steady(key: bytes | None) -> bool:
    return bool(key) and bool(key[-1] & 2)


def hand_over(key: bytes) -> int:
    """A descriptor to pass to a child (`pass_fds`, and its number in ENV_FD) from which it
    reads `key`; the caller closes it once the child has started."""
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, key)
    finally:
        os.close(write_end)
    os.set_inheritable(read_end, True)
    return read_end


def _no_memory_readers() -> None:
    """Make this process's memory unreadable to the other processes of the sandbox (they all
    run as the same user): without it a program the student's code starts could read the key
    out of /proc/<parent>/mem. Linux's PR_SET_DUMPABLE=0; it lasts until the process execs."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)   # PR_SET_DUMPABLE, 0
    except (OSError, AttributeError):
        pass


def take_key(environ=None) -> bytes | None:
    """The run's key, read once from the descriptor ENV_FD names, which is then closed; None
    outside a graded run, and for every later caller (student code included)."""
    environ = os.environ if environ is None else environ
    value = environ.get(ENV_FD)
    if not value or value == TAKEN:
        return None
    environ[ENV_FD] = TAKEN
    _no_memory_readers()
    try:
        fd = int(value)
    except ValueError:
        return None
    chunks = []
    try:
        while sum(map(len, chunks)) < 4 * KEY_BYTES:
            chunk = os.read(fd, 4 * KEY_BYTES)
            if not chunk:
                break
            chunks.append(chunk)
    except OSError:
        return None
    finally:
        try:
            os.close(fd)
        except OSError:
            pass
    key = b"".join(chunks)
    return key if len(key) == KEY_BYTES else None


def in_sealed_run(environ=None) -> bool:
    """Whether this process belongs to a graded run (with or without a key of its own)."""
    return ENV_FD in (os.environ if environ is None else environ)


def _json_functions():
    """(dumps, loads) for the writer: `json.dumps(x, sort_keys=True, default=str)` and
    `json.loads`, built from the C encoder and scanner taken when this module is imported
    (before any student code). Student code that later replaces json's Python-level functions
    or methods cannot change what is sealed, or make a record say what it did not say."""
    make_encoder, encode_string = json.encoder.c_make_encoder, json.encoder.c_encode_basestring_ascii
    make_scanner = json.scanner.c_make_scanner
    if make_encoder is None or encode_string is None or make_scanner is None:
        return (lambda value: json.dumps(value, sort_keys=True, default=str)), json.loads
    encode = make_encoder({}, str, encode_string, None, ": ", ", ", True, False, True)
    scan = make_scanner(json.decoder.JSONDecoder())
    join = "".join

    def dumps(value) -> str:
        return join(encode(value, 0))

    def loads(text: str):
        return scan(text, 0)[0]
    return dumps, loads


_dumps, _loads = _json_functions()


def _keyed(key: bytes, genuine: Callable[[object], bool] | None = None,
           writes: Callable[[object], bool] | None = None) -> Callable[[str, int, str], str]:
    """The HMAC of (stream, seq, body): the only place that holds the key (in an HMAC object:
    the raw key is not kept) and so the one check that cannot be stepped around. With
    `genuine`, it digests only for a sealer (its caller) called by a writer of the grader's
    (genuine_frames.frame_judge), itself called where the grader's code calls the writer by its
    name (`writes`, genuine_frames.writing_call); a writer's record of an attempt (a
    `tampering` record, read from the body itself) needs only the first two.

    Its state is keyword-only defaults, read only through `__kwdefaults__`, which raises the
    audit event the runtime's hook reports (grader/vgpu/guard.py); never a closure cell (read
    and rewritten without one). A keyword-only default can be overridden by a caller, so every
    caller of this function is itself a keyword-only default: nothing reaches it unaudited. A
    red team had overridden the sealer's own check (`seal(record, _refuse=...)`) and sealed
    the reference's records from an untouched template."""
    def digest(stream: str, seq: int, body: str, *,
               _copy=hmac.new(key, digestmod=hashlib.sha256).copy, _genuine=genuine,
               _writes=writes, _getframe=sys._getframe, _loads=_loads) -> str:
        if _genuine is not None:
            sealing = _getframe(1)
            writer = sealing.f_back if sealing is not None else None
            if sealing is None or writer is None or not _genuine(sealing) or \
                    not _genuine(writer):
                raise PermissionError("only the grader's instrumentation seals records")
            record = _loads(body)
            attempt = isinstance(record, dict) and "tampering" in (record.get("event"),
                                                                    record.get("kind"))
            caller = writer.f_back
            if not attempt and (caller is None or not _genuine(caller) or (
                    _writes is not None and not _writes(caller))):
                raise PermissionError("only the grader's instrumentation seals records")
        mac = _copy()
        mac.update(f"{stream}\n{seq}\n{body}".encode("utf-8"))
        return mac.hexdigest()
    return digest


def _body(record: dict) -> str:
    # Canonical text of the record without its seal: the writer and the reader agree on it
    # whatever order the reader's JSON parser keeps.
    return json.dumps({k: v for k, v in record.items() if k not in _SEAL_FIELDS},
                      sort_keys=True, default=str)


def sealer_factory(key: bytes | None, genuine: Callable[[object], bool] | None = None,
                   writes: Callable[[object], bool] | None = None
                   ) -> Callable[[str], Callable[[dict], str]]:
    """stream -> a function turning records into the sealed JSON lines of the file `stream`
    (plain JSON without a key). Each sealer numbers its own lines; it is not thread-safe:
    callers writing from several threads hold a lock around the call and the write.

    `genuine(frame)`: whether a frame runs the grader's own code (genuine_frames.frame_judge):
    every sealer the factory makes seals only when called by the grader's code, itself
    called by the grader's code where `writes(frame)`: calling the writer by its name
    (genuine_frames.writing_call). A red team had reached a sealer through the trace object
    (`trace._seal`, a patched function's `__globals__`), and later had a template engine compile
    its code under a file name in the grader's folder, and written the reference's records,
    sealed, from a template that trained nothing. The check is the digest's own (see _keyed):
    it holds the key, and nothing else can be stepped around."""
    if key is None:
        return lambda stream: (lambda record: json.dumps(record, default=str))

    # A sealer made for any stream seals nothing but for the grader's writers: the digest
    # checks who asks, every time.
    def for_stream(stream: str, *, _digest=_keyed(key, genuine, writes), _dumps=_dumps,
                   _loads=_loads, _basename=os.path.basename) -> Callable[[dict], str]:
        name = _basename(stream)
        seq = 0

        def seal(record: dict, *, _digest=_digest, _dumps=_dumps, _loads=_loads) -> str:
            nonlocal seq
            # Through JSON and back first (default=str as in the line itself), so the
            # reader's canonical text of what it parses is the text sealed here.
            record = _loads(_dumps(record))
            record.pop("seal", None)
            record["seq"] = seq
            body = _dumps({k: v for k, v in record.items() if k not in _SEAL_FIELDS})
            record["seal"] = _digest(name, seq, body)
            seq += 1
            return _dumps(record)
        return seal
    return for_stream


def sealer(key: bytes | None, stream: str) -> Callable[[dict], str]:
    return sealer_factory(key)(stream)


@dataclass
class Verified:
    records: list[dict] = field(default_factory=list)
    unsealed: int = 0          # lines that are not a record our instrumentation wrote
    missing: int = 0           # records cut out of the chain (sequence gaps)
    torn: bool = False         # the last line was cut short (a process killed mid-write)
    # processes whose instrumentation did not close its file (see grader/vgpu/guard.py)
    unclosed: int = 0
    # what the instrumentation found replaced when it closed (grader/vgpu/guard.py)
    replaced: list[str] = field(default_factory=list)
    # processes started by the submission itself, which had no key: their records are unused
    unkeyed: int = 0
    # what the runtime saw the submission's own code do to the interpreter (guard.py)
    tampering: list[str] = field(default_factory=list)

    @property
    def problems(self) -> list[str]:
        found = []
        if self.unsealed:
            found.append(f"{self.unsealed} line(s) were not written by the grader's "
                         "instrumentation (no valid seal)")
        if self.missing:
            found.append(f"{self.missing} record(s) written by the grader's instrumentation "
                         "were removed")
        if self.replaced:
            found.append("the grader's instrumentation was replaced while it ran: "
                         + ", ".join(sorted(set(self.replaced))[:12]))
        if self.tampering:
            found.append("the submission's code walked or rewrote the interpreter while it "
                         "ran: " + "; ".join(sorted(set(self.tampering))[:12]))
        return found

    def closing_problems(self, exited_normally: bool) -> list[str]:
        """A process that exits normally always closes its file (the runtime makes sure even
        through os._exit); one that did not was ended around the instrumentation."""
        if exited_normally and self.unclosed:
            return [f"{self.unclosed} process(es) exited normally without the instrumentation's "
                    "closing check (ended around it, e.g. posix._exit, atexit cleared, exec)"]
        return []

    @property
    def notes(self) -> list[str]:
        if self.unkeyed:
            return [f"{self.unkeyed} process(es) started by the submission itself (not by the "
                    "grader) ran torch: what they did is not part of the observations"]
        return []


def verify_lines(lines: list[str], key: bytes | None, stream: str) -> Verified:
    """The records of the sealed file `stream` that verify, and what did not; without a key
    (a run outside grading) every well-formed record is taken as it is."""
    result = Verified()
    stream = os.path.basename(stream)
    digest = _keyed(key) if key is not None else None
    lines = [line for line in lines if line.strip()]
    expected_seq = 0
    for index, line in enumerate(lines):
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            if index == len(lines) - 1:
                result.torn = True   # a killed writer's last line, not a forgery
            else:
                result.unsealed += 1
            continue
        if not isinstance(record, dict):
            result.unsealed += 1
            continue
        if digest is None:
            result.records.append(record)
            continue
        seal, seq = record.get("seal"), record.get("seq")
        if not isinstance(seal, str) or not isinstance(seq, int) or isinstance(seq, bool) or \
                seq < expected_seq or \
                not hmac.compare_digest(seal, digest(stream, seq, _body(record))):
            result.unsealed += 1   # forged, altered, replayed or out of order
            continue
        result.missing += seq - expected_seq
        expected_seq = seq + 1
        result.records.append({k: v for k, v in record.items() if k not in _SEAL_FIELDS})
    return result
