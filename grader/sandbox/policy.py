"""What a sandboxed run may do (SandboxPolicy) and what happened (SandboxResult)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(kw_only=True)
class SandboxPolicy:
    # Nothing of the host is visible inside but the system's programs and libraries and the
    # Python runtime (grader/sandbox/bwrap.py), and these: bound read-only at the same path
    # (the submission, the grader's runtime parts)...
    readonly: list[Path] = field(default_factory=list)
    # ...and bound read-write: the only places the student's code may write. Where the grader
    # runs as root they are handed to the sandbox's user (SANDBOX_UID) first.
    writable: list[Path] = field(default_factory=list)
    # Masked wherever something bound would show them: a folder becomes an empty read-only
    # tmpfs, a file reads as /dev/null (a submission's __pycache__ inside the submission).
    hidden: list[Path] = field(default_factory=list)
    # The writable folders together may hold at most this much (None: no limit). Each file is
    # capped at it (RLIMIT_FSIZE: the write fails with EFBIG), and the run is stopped as soon
    # as the folders' total passes it (checked every POLL_S); see SandboxResult.disk_exceeded.
    scratch_limit_bytes: int | None = 512 * 2**20
    # Size of the private /tmp and of /dev/shm each (their pages also count as the run's memory).
    tmpfs_bytes: int = 512 * 2**20
    network: bool = False
    memory_bytes: int | None = 4 * 2**30
    # Counts processes *and threads* (the pids cgroup does), including the two bwrap
    # processes; PyTorch starts one thread per core, so leave headroom.
    max_pids: int | None = 256
    # Processes alone (threads not counted) at once; the run is stopped as soon as it holds
    # more, or is refused one under max_pids (checked every POLL_S): a fork loop. Its processes
    # share one anon_vma root with every ancestor, so each fork and each exit waits on the
    # same lock: 512 of them took a 2-core machine's CPUs for 10-20 s to fork and to end.
    max_processes: int | None = None
    # Seconds of a machine the run has to itself: while other processes keep the CPUs busy the
    # run's clock runs slower, up to 2x (grader/sandbox/clock.py); then it is killed.
    timeout_s: float = 600
    # stdout and stderr are each kept up to this many bytes; the rest is read and dropped.
    output_limit_bytes: int = 1_000_000
    # The whole environment inside (the outer one is never inherited); missing PATH,
    # HOME (the first writable folder), TMPDIR and LANG get defaults.
    env: dict[str, str] = field(default_factory=dict)
    # Working directory inside; defaults to the first writable folder, else "/".
    cwd: Path | None = None
    # Real GPUs: bind /dev/nvidia*, /sys (read-only) and the CUDA library folders.
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
    # More than max_processes, or a process or thread refused (max_pids reached): the run was
    # stopped then. None when no pids cgroup was available to tell.
    pids_exceeded: bool | None
    output_truncated: bool
    duration_s: float
    sandboxed: bool
    backend: str  # "bwrap" or "subprocess"
    # Limits that could not be applied and why: callers should show these loudly.
    warnings: list[str] = field(default_factory=list)
    # Stopped because the writable folders grew past scratch_limit_bytes.
    disk_exceeded: bool = False
    # How much of timeout_s the run used: its real duration, less what other processes took
    # of the machine meanwhile (grader/sandbox/clock.py).
    budget_used_s: float = 0.0
