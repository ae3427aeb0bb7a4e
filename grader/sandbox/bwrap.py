"""The bubblewrap command line for a SandboxPolicy, and whether bwrap works here."""
from __future__ import annotations

import functools
import glob
import shutil
import subprocess
import sys
from pathlib import Path

from .policy import SandboxPolicy

# Seen from inside, the student's code runs as "nobody" (in its own user namespace,
# with every capability dropped and no way to create further user namespaces, which
# would otherwise be the route to regain mount rights).
SANDBOX_UID = 65534

_ISOLATION = [
    "--die-with-parent",   # if the grader dies, the sandbox dies
    "--new-session",       # no TIOCSTI into the grader's terminal (CVE-2017-5226)
    "--unshare-all",       # network, pid, ipc, uts, cgroup namespaces
    "--unshare-user", "--disable-userns",
    "--cap-drop", "ALL",
    "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID),
    "--hostname", "sandbox",
]


def _always_readonly() -> list[Path]:
    """The interpreter's prefixes and the grader package stay readable even when a
    hidden folder covers them (e.g. a pyenv Python under a hidden /root)."""
    grader_package = Path(__file__).resolve().parents[1]
    return [Path(sys.base_prefix), Path(sys.prefix), grader_package]


def _resolved(paths) -> list[Path]:
    # Resolve outside, so a symlink cannot redirect a bind; keep order, drop repeats.
    return list(dict.fromkeys(Path(p).resolve() for p in paths))


def build_bwrap_argv(argv: list[str], policy: SandboxPolicy, env: dict[str, str],
                     cwd: Path) -> list[str]:
    bwrap = shutil.which("bwrap") or "bwrap"
    cmd = [bwrap, *_ISOLATION]
    if policy.network:
        cmd.append("--share-net")
    # Everything read-only, then fresh /proc (our pid namespace), /dev, /tmp, /dev/shm.
    cmd += ["--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
            "--tmpfs", "/tmp", "--tmpfs", "/dev/shm"]
    if policy.gpu:
        for device in sorted(glob.glob("/dev/nvidia*")):
            cmd += ["--dev-bind", device, device]

    hidden_dirs = []
    hidden = _resolved(policy.hidden)
    bound = _resolved([*_always_readonly(), *policy.readonly, *policy.writable])

    def mask(path: Path) -> list[str]:
        if path.is_dir():
            hidden_dirs.append(path)
            return ["--tmpfs", str(path)]
        return ["--ro-bind", "/dev/null", str(path)] if path.exists() else []

    # A hidden path inside a folder that is bound (a submission's __pycache__) is masked after
    # that bind, which would otherwise cover the mask again.
    inside_binds = [path for path in hidden if any(path != b and path.is_relative_to(b)
                                                   for b in bound)]
    for path in hidden:
        if any(path != other and path.is_relative_to(other) for other in hidden):
            continue  # already masked by an outer hidden folder (a second tmpfs would break it)
        if path not in inside_binds:
            cmd += mask(path)
    for path in _resolved([*_always_readonly(), *policy.readonly]):
        if path.exists():
            cmd += ["--ro-bind", str(path), str(path)]
    for path in _resolved(policy.writable):
        cmd += ["--bind", str(path), str(path)]
    for path in inside_binds:
        cmd += mask(path)
    # Last, so bwrap could still create mount points for binds inside them; the
    # remount is not recursive, so those binds keep their own mode.
    for path in hidden_dirs:
        cmd += ["--remount-ro", str(path)]

    cmd += ["--chdir", str(cwd)]
    # --clearenv must come before the --setenv options: bwrap applies them in order.
    cmd.append("--clearenv")
    for key, value in env.items():
        cmd += ["--setenv", key, value]
    return [*cmd, "--", *argv]


@functools.lru_cache(maxsize=1)
def sandbox_available() -> tuple[bool, str]:
    """(True, version) when bwrap can build our sandbox here, else (False, why not)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return False, "bwrap not found (install the bubblewrap package)"
    probe = [bwrap, *_ISOLATION, "--ro-bind", "/", "/", "--proc", "/proc",
             "--dev", "/dev", "--tmpfs", "/tmp", "--", "true"]
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=20)
        version = subprocess.run([bwrap, "--version"], capture_output=True, text=True,
                                 timeout=20).stdout.strip()
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, f"bwrap could not be run: {e}"
    if done.returncode != 0:
        # Typical: user namespaces disabled (kernel.unprivileged_userns_clone=0,
        # AppArmor's restrict_unprivileged_userns) or a bwrap older than 0.8.
        return False, f"bwrap failed ({done.returncode}): {done.stderr.strip()}"
    return True, version
