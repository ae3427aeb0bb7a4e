"""Sealed observation files: each record a run's instrumentation writes carries a sequence
number and an HMAC of the record, its number and the file's name.

The grader draws a fresh key per run and hands it to the run's processes in the environment
(`ENV_KEY`); the scoring side verifies every file the run left behind. A line written any other
way (a script appending "good" records to the trace, or making up a file of its own, or
copying a real one) has no valid seal, and a record cut out of a file leaves a gap in the
numbers; both are reported, and only records that verify are used. The key is as visible to
student code as to ours: reading it needs the grader's environment variables, which the static
scan (`scan.py`) reports, so a forgery needs two things the grader looks for, not one.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass, field

ENV_KEY = "PDL_SEAL_KEY"
_SEAL_FIELDS = ("seq", "seal")


def new_key() -> str:
    return secrets.token_hex(32)


def key_from_environment() -> bytes | None:
    value = os.environ.get(ENV_KEY)
    return bytes.fromhex(value) if value else None


def _digest(key: bytes, stream: str, seq: int, body: str) -> str:
    message = f"{stream}\n{seq}\n{body}".encode("utf-8")
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def _body(record: dict) -> str:
    # Canonical text of the record without its seal: the writer and the reader agree on it
    # whatever order the reader's JSON parser keeps.
    return json.dumps({k: v for k, v in record.items() if k not in _SEAL_FIELDS},
                      sort_keys=True, default=str)


class Sealer:
    """Turns records into sealed JSON lines for the file `stream` (its base name). Not
    thread-safe: callers writing from several threads hold a lock around `line` and the write."""

    def __init__(self, key: bytes | None, stream: str):
        self.key = key
        self.stream = os.path.basename(stream)
        self.seq = 0

    def line(self, record: dict) -> str:
        if self.key is None:
            return json.dumps(record, default=str)
        record = dict(record)
        record["seq"] = self.seq
        # default=str as in the line itself, so the reader's canonical text is the same
        record = json.loads(json.dumps(record, default=str))
        record["seal"] = _digest(self.key, self.stream, self.seq, _body(record))
        self.seq += 1
        return json.dumps(record)


@dataclass
class Verified:
    records: list[dict] = field(default_factory=list)
    unsealed: int = 0          # lines that are not a record our instrumentation wrote
    missing: int = 0           # records cut out of the chain (sequence gaps)
    torn: bool = False         # the last line was cut short (a process killed mid-write)

    @property
    def problems(self) -> list[str]:
        found = []
        if self.unsealed:
            found.append(f"{self.unsealed} line(s) were not written by the grader's "
                         "instrumentation (no valid seal)")
        if self.missing:
            found.append(f"{self.missing} record(s) written by the grader's instrumentation "
                         "were removed")
        return found


def verify_lines(lines: list[str], key: bytes | None, stream: str) -> Verified:
    """The records of the sealed file `stream` that verify, and what did not; without a key
    (a run outside grading) every well-formed record is taken as it is."""
    result = Verified()
    stream = os.path.basename(stream)
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
        if key is None:
            result.records.append(record)
            continue
        seal, seq = record.get("seal"), record.get("seq")
        if not isinstance(seal, str) or not isinstance(seq, int) or seq < expected_seq or \
                not hmac.compare_digest(seal, _digest(key, stream, seq, _body(record))):
            result.unsealed += 1   # forged, altered, replayed or out of order
            continue
        result.missing += seq - expected_seq
        expected_seq = seq + 1
        result.records.append({k: v for k, v in record.items() if k not in _SEAL_FIELDS})
    return result
