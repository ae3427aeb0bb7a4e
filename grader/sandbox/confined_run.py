"""run_sandboxed: start argv under bwrap (or, where bwrap cannot work, a loudly
labelled plain subprocess), inside a per-run cgroup, with timeout, output cap and a bound on
what it may write."""
from __future__ import annotations

import os
import pwd
import resource
import signal
import subprocess
import time
from dataclasses import dataclass, replace
from pathlib import Path

from grader.common.bytecode import PREFIX_ENV, shared_bytecode

from . import scratch
from .bwrap import (IDENTITY_FILES, SANDBOX_UID, build_bwrap_argv, runs_as_root, sandbox_available,
                    setpriv_path)
from .capture import capture
from .clock import RunClock
from .limits import RunCgroup, create_run_cgroup
from .policy import SandboxPolicy, SandboxResult

DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
# Where bwrap cannot work and the grader runs as root: the user (a name or a uid) to run student
# code as instead, e.g. "nobody" (gradescope/run_autograder sets it). Unset, such a run stays
# root, as before. It gives no isolation beyond file permissions: what that user may read, the
# run may read; the caller makes the grader's files unwritable and its secrets unreadable.
UNSANDBOXED_AS_ENV = "PDL_UNSANDBOXED_AS"

# The launcher waits for one line on stdin before exec'ing the real command. The
# grader puts the launcher's pid into the run's cgroup first and only then sends
# "go", so nothing the student runs can fork before it is confined; and if the
# grader cannot confine it, the launcher never execs anything.
_WAIT_FOR_GO = 'read -r go && [ "$go" = go ] || exit 125; exec "$@" </dev/null'


class SandboxSetupError(RuntimeError):
    """The sandbox could not be set up; nothing of the student's code ran."""


def inside_environment(policy: SandboxPolicy, home: Path) -> dict[str, str]:
    env = {"PATH": DEFAULT_PATH, "HOME": str(home), "TMPDIR": "/tmp", "LANG": "C.UTF-8"}
    env.update(policy.env)
    return env


def with_shared_bytecode(env: dict[str, str], policy: SandboxPolicy
                         ) -> tuple[dict[str, str], SandboxPolicy]:
    """A sandboxed Python reads the grader's compile of torch, read-only, where the
    installation has no bytecode (grader/common/bytecode.py); never an unsandboxed one."""
    cache = shared_bytecode()
    if cache is None or PREFIX_ENV in env:
        return env, policy
    return {**env, PREFIX_ENV: str(cache)}, replace(policy, readonly=[*policy.readonly, cache])


def _fallback_rlimits(policy: SandboxPolicy, cgroup: RunCgroup | None):
    """rlimits for what no cgroup carries (either backend); RLIMIT_NPROC is not used:
    it is per uid (shared with every other process of the user) and void for root."""
    has_memory_cgroup = cgroup is not None and cgroup.controller_dir("memory") is not None

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if policy.scratch_limit_bytes is not None:
            # No single file past the scratch limit (a write past it fails with EFBIG; Python
            # ignores SIGXFSZ); the watch in run_sandboxed bounds the total.
            resource.setrlimit(resource.RLIMIT_FSIZE, (policy.scratch_limit_bytes,) * 2)
        if policy.memory_bytes is not None and not has_memory_cgroup:
            # RLIMIT_DATA (private writable memory) rather than RLIMIT_AS, which
            # PyTorch's large virtual reservations would trip long before real use.
            resource.setrlimit(resource.RLIMIT_DATA, (policy.memory_bytes, policy.memory_bytes))
    return apply


def _signal_aware(returncode: int) -> int:
    # Popen reports death by signal N as -N; bwrap reports 128+N. Use bwrap's form.
    return 128 - returncode if returncode < 0 else returncode


def _identity_files() -> dict[str, int]:
    """/etc/passwd, group and hosts for inside, as memory files bwrap copies from (their fds
    are passed to it and closed here once it has started)."""
    fds = {}
    for path, text in IDENTITY_FILES.items():
        fd = os.memfd_create(f"sandbox{path.replace('/', '-')}", 0)
        os.write(fd, text.encode())
        os.lseek(fd, 0, os.SEEK_SET)
        fds[path] = fd
    return fds


def unsandboxed_user(environ=os.environ) -> tuple[str, int, int] | None:
    """(name, uid, gid) of UNSANDBOXED_AS_ENV, or None where it is unset. A user that does not
    exist, or no setpriv to become it, is a SandboxSetupError: never root instead."""
    wanted = environ.get(UNSANDBOXED_AS_ENV, "").strip()
    if not wanted:
        return None
    try:
        entry = pwd.getpwuid(int(wanted)) if wanted.isdigit() else pwd.getpwnam(wanted)
        name, uid, gid = entry.pw_name, entry.pw_uid, entry.pw_gid
    except KeyError:
        if not wanted.isdigit():
            raise SandboxSetupError(f"{UNSANDBOXED_AS_ENV}={wanted}: no such user") from None
        name, uid, gid = wanted, int(wanted), int(wanted)
    if uid == 0:
        raise SandboxSetupError(f"{UNSANDBOXED_AS_ENV}={wanted} is root")
    if setpriv_path() is None:
        raise SandboxSetupError(f"{UNSANDBOXED_AS_ENV}={wanted}, but no setpriv to drop to it "
                                "(util-linux)")
    return name, uid, gid


def hand_over_folders(writable: list[Path], uid: int = SANDBOX_UID,
                      gid: int = SANDBOX_UID) -> list[str]:
    """As root the run's user is SANDBOX_UID (or `uid`) on the host too: it must own its
    scratch. Where the filesystem refuses (root squashed on NFS), the folder is opened to
    everyone instead (its parent, the grader's, is not); returns warnings."""
    warnings = []
    for path in writable:
        try:
            os.chown(path, uid, gid)
        except OSError as error:
            os.chmod(path, 0o777)
            warnings.append(f"cannot give {path} to the sandbox's user ({error.strerror}): "
                            "opened it to everyone instead")
    return warnings


def _let_through(paths: list[Path]) -> None:
    """Search (x, never read) permission for others on the folders above `paths`, so that an
    unsandboxed run as another user reaches its scratch inside the grader's own temporary
    folders (pytest's are 0700); their other entries keep their own modes."""
    for path in paths:
        for parent in path.parents:
            try:
                mode = parent.stat().st_mode
                if not mode & 0o001:
                    os.chmod(parent, (mode & 0o7777) | 0o001)
            except OSError:
                pass


def _unreadable(paths: list[Path], limit: int = 2000) -> list[str]:
    """Up to three files or folders under `paths` that others cannot read (or enter): the
    sandbox's unprivileged user will not read them either."""
    found: list[str] = []
    stack = [Path(p) for p in paths]
    while stack and limit > 0 and len(found) < 3:
        path = stack.pop()
        limit -= 1
        try:
            mode = path.lstat().st_mode
        except OSError:
            continue
        if os.path.isdir(path) and not path.is_symlink():
            if mode & 0o005 != 0o005:
                found.append(str(path))
                continue
            try:
                stack += list(path.iterdir())
            except OSError:
                pass
        elif not path.is_symlink() and not mode & 0o004:
            found.append(str(path))
    return found


@dataclass
class Started:
    """A sandboxed program just started (and, with a cgroup, moved into it and let go)."""
    proc: subprocess.Popen
    cgroup: RunCgroup | None
    sandboxed: bool
    warnings: list[str]
    started: float


def start_sandboxed(argv: list[str], policy: SandboxPolicy, *, stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE) -> Started:
    """Start argv in the sandbox the policy describes, inside its own cgroup; the caller
    supervises it (supervise()) and removes the cgroup."""
    for path in policy.writable:
        if not Path(path).is_dir():
            raise ValueError(f"writable folder does not exist: {path}")
    home = Path(policy.writable[0]).resolve() if policy.writable else Path("/tmp")
    cwd = Path(policy.cwd).resolve() if policy.cwd else home if policy.writable else Path("/")
    env = inside_environment(policy, home)

    usable, why_not = sandbox_available()
    drop = unsandboxed_user() if not usable and runs_as_root() else None
    warnings: list[str] = []
    cgroup, cgroup_warnings = create_run_cgroup(policy.memory_bytes, policy.max_pids)
    warnings += cgroup_warnings
    data_fds: dict[str, int] = {}
    if usable:
        env, policy = with_shared_bytecode(env, policy)
        if runs_as_root() and setpriv_path():
            warnings += hand_over_folders([Path(p).resolve() for p in policy.writable])
            unreadable = _unreadable([Path(p).resolve() for p in policy.readonly])
            if unreadable:
                warnings.append("not readable by the sandbox's unprivileged user (give others "
                                "read access): " + ", ".join(unreadable))
        data_fds = _identity_files()
        # The environment goes in through bwrap's own (never its argv: /proc/1/cmdline is
        # readable inside).
        command, popen_env, popen_cwd = build_bwrap_argv(argv, policy, cwd, data_fds), env, "/"
    else:
        command, popen_env, popen_cwd = list(argv), env, str(cwd)
        if drop is None:
            warnings.append(f"NOT SANDBOXED ({why_not}): no filesystem, network or pid isolation")
        else:
            name, uid, gid = drop
            warnings.append(f"NOT SANDBOXED ({why_not}): ran as {name} (uid {uid}), without "
                            "filesystem, network or pid isolation")
            warnings += hand_over_folders([Path(p).resolve() for p in policy.writable], uid, gid)
            _let_through([Path(p).resolve() for p in [*policy.writable, *policy.readonly]])
            command = [setpriv_path(), f"--reuid={uid}", f"--regid={gid}", "--clear-groups",
                       "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--", *command]
    if cgroup is not None:
        command = ["/bin/sh", "-c", _WAIT_FOR_GO, "sandbox-launcher", *command]

    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            command, stdin=subprocess.PIPE if cgroup else subprocess.DEVNULL,
            stdout=stdout, stderr=stderr, env=popen_env, cwd=popen_cwd,
            start_new_session=True,  # its own process group, so a timeout kill gets all of it
            preexec_fn=_fallback_rlimits(policy, cgroup),
            pass_fds=(*policy.pass_fds, *data_fds.values()))
    except OSError:
        if cgroup:
            cgroup.remove()
        raise
    finally:
        for fd in data_fds.values():
            os.close(fd)
    if cgroup is not None:
        try:
            cgroup.admit(proc.pid)
            proc.stdin.write(b"go\n")
            proc.stdin.close()
        except OSError as e:
            kill_group(proc, cgroup)
            proc.wait()
            cgroup.remove()
            raise SandboxSetupError(f"cannot move the sandbox into its cgroup: {e}") from e
    return Started(proc, cgroup, usable, warnings, started)


def kill_group(proc, cgroup: RunCgroup | None) -> None:
    """SIGKILL a sandbox started by start_sandboxed: its process group and its cgroup."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    if cgroup is not None:
        cgroup.kill_all()


def run_sandboxed(argv: list[str], policy: SandboxPolicy) -> SandboxResult:
    started = start_sandboxed(argv, policy)
    proc, cgroup = started.proc, started.cgroup
    try:
        return supervise(proc, policy, cgroup, lambda: kill_group(proc, cgroup),
                         started=started.started, sandboxed=started.sandboxed,
                         warnings=started.warnings, backend="bwrap" if started.sandboxed
                         else "subprocess")
    finally:
        if proc.poll() is None:
            kill_group(proc, cgroup)
            proc.wait()
        if cgroup is not None:
            cgroup.remove()


def supervise(proc, policy: SandboxPolicy, cgroup: RunCgroup | None, kill_everything,
              *, started: float, sandboxed: bool, warnings: list[str], backend: str,
              extra_watch: tuple[Path, int] | None = None) -> SandboxResult:
    """Read the run's output while enforcing its time budget and its scratch limit; what
    happened. `proc` is a subprocess.Popen or anything with its poll/wait/returncode and
    stdout/stderr pipes (a run forked by grader/sandbox/forked_runs.py). `extra_watch`
    (FOLDER, N): the run is also stopped when FOLDER, which holds its writable folder beside
    others, grows past N scratch limits."""
    writable = [Path(p).resolve() for p in policy.writable]
    limit = policy.scratch_limit_bytes

    def over_disk_limit() -> bool:
        if limit is None:
            return False
        if extra_watch is not None:
            folder, times = extra_watch
            if scratch.usage([folder], stop_at=limit * times).over(limit * times):
                return True
        return scratch.usage(writable, stop_at=limit).over(limit)

    # Why `watch` stopped the run.
    stopped_for: set[str] = set()

    def over_a_limit() -> bool:
        # A fork loop is stopped now, not at its time budget (grader/sandbox/policy.py
        # max_processes: its processes keep the machine's CPUs in the kernel).
        if cgroup is not None and (cgroup.pids_exceeded() or (
                policy.max_processes is not None
                and cgroup.process_count() > policy.max_processes)):
            stopped_for.add("processes")
        elif limit is not None and writable and over_disk_limit():
            stopped_for.add("disk")
        return bool(stopped_for)

    # The budget is time of a machine the run has to itself (grader/sandbox/clock.py).
    clock = RunClock(cgroup.threads if cgroup is not None else None)
    captured = capture(proc, policy.timeout_s, policy.output_limit_bytes, kill_everything,
                       watch=over_a_limit, clock=clock)
    duration = time.monotonic() - started
    if cgroup is not None:
        # Normally empty already (bwrap's pid namespace died with it); in the
        # fallback this is what ends a detached grandchild.
        cgroup.kill_all()
    # A burst just before the end counts too.
    disk_exceeded = "disk" in stopped_for or (limit is not None and bool(writable)
                                              and over_disk_limit())
    return SandboxResult(
        returncode=None if captured.timed_out else _signal_aware(proc.returncode),
        stdout=captured.stdout.text(),
        stderr=captured.stderr.text(),
        timed_out=captured.timed_out,
        memory_exceeded=cgroup.memory_exceeded() if cgroup else False,
        pids_exceeded=("processes" in stopped_for or cgroup.pids_exceeded()) if cgroup else None,
        output_truncated=captured.stdout.truncated or captured.stderr.truncated,
        duration_s=duration,
        sandboxed=sandboxed,
        backend=backend,
        warnings=warnings,
        disk_exceeded=disk_exceeded,
        budget_used_s=round(clock.used, 3),
    )
