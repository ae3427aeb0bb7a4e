"""What a sandboxed run may do (SandboxPolicy) and what happened (SandboxResult)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(kw_only=True)
class SandboxPolicy:
    # The whole root filesystem is mounted read-only anyway; paths listed here are
    # bound read-only *again* after the hidden paths are masked, so a read-only path
    # inside a hidden folder (e.g. a Python prefix under /root) stays visible.
    readonly: list[Path] = field(default_factory=list)
    # The only places the student's code may write (bound read-write).
    writable: list[Path] = field(default_factory=list)
    # Masked inside: a folder becomes an empty read-only tmpfs, a file reads as /dev/null.
    hidden: list[Path] = field(default_factory=list)
    network: bool = False
    memory_bytes: int | None = 4 * 2**30
    # Counts processes *and threads* (the pids cgroup does), including the two bwrap
    # processes; PyTorch starts one thread per core, so leave headroom.
    max_pids: int | None = 256
    timeout_s: float = 600
    # stdout and stderr are each kept up to this many bytes; the rest is read and dropped.
    output_limit_bytes: int = 1_000_000
    # The whole environment inside (the outer one is never inherited); missing PATH,
    # HOME (the first writable folder), TMPDIR and LANG get defaults.
    env: dict[str, str] = field(default_factory=dict)
    # Working directory inside; defaults to the first writable folder, else "/".
    cwd: Path | None = None
    # Bind /dev/nvidia* so CUDA works (/sys is already visible read-only).
    gpu: bool = False
    # Descriptors the sandboxed program inherits, at the same numbers (e.g. the read end of a
    # pipe holding a run's seal key: grader/records/seal.py); every other one is closed.
    pass_fds: tuple[int, ...] = ()


@dataclass
class SandboxResult:
    # Exit status; 128+N when the program died from signal N (bwrap's convention, also
    # used by the fallback); None when the run was killed at the timeout.
    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool
    memory_exceeded: bool
    # None when no pids cgroup was available to tell.
    pids_exceeded: bool | None
    output_truncated: bool
    duration_s: float
    sandboxed: bool
    backend: str  # "bwrap" or "subprocess"
    # Limits that could not be applied and why: callers should show these loudly.
    warnings: list[str] = field(default_factory=list)
