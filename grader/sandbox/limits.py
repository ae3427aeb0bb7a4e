"""Per-run memory and process-count limits through cgroups (v1 and v2).

Why cgroups and not rlimits: RLIMIT_NPROC does nothing when the grader runs as root
and is shared by every sandbox of one uid; RLIMIT_AS counts PyTorch's huge virtual
reservations. A cgroup counts what the whole process tree really uses, and lets us
list (and kill) every process of the run whatever it did with setsid or fork.

The run's cgroup is created below the grader's own cgroup (so limits set on the
grader, e.g. by SLURM or a container, still apply on top) unless
PDL_SANDBOX_CGROUP_PARENT names another parent (relative to each hierarchy root),
e.g. a delegated cgroup on a cgroup v2 machine.
"""
from __future__ import annotations

import errno
import os
import secrets
import signal
import time
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
PARENT_OVERRIDE_ENV = "PDL_SANDBOX_CGROUP_PARENT"


def _read_counter(path: Path, key: str) -> int:
    """A `key value` line from a flat-keyed cgroup file (memory.events, pids.events...)."""
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


def _own_cgroup_paths(self_cgroup: Path) -> dict[str, str]:
    """Controller name ("memory", "pids", or "" for the v2 unified tree) -> our path."""
    paths: dict[str, str] = {}
    for line in self_cgroup.read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(","):
            paths[controller] = path
    return paths


class RunCgroup:
    """The cgroup(s) of one run: one directory on v2, one per controller on v1."""

    def __init__(self, version: int, dirs: dict[str, Path]):
        self.version = version
        self.dirs = dirs  # v1: {"memory": ..., "pids": ...}; v2: {"unified": ...}

    @property
    def procs_files(self) -> list[Path]:
        """Files the launcher writes its pid into before exec'ing the sandbox."""
        return [d / "cgroup.procs" for d in self.dirs.values()]

    def admit(self, pid: int) -> None:
        """Move the process `pid` into this cgroup (every hierarchy of it); OSError if not."""
        for procs in self.procs_files:
            procs.write_text(str(pid))

    def controller_dir(self, controller: str) -> Path | None:
        return self.dirs.get("unified") or self.dirs.get(controller)

    def memory_exceeded(self) -> bool:
        d = self.controller_dir("memory")
        if d is None:
            return False
        # v1 keeps the OOM-kill counter in memory.oom_control, v2 in memory.events.
        events = d / ("memory.events" if self.version == 2 else "memory.oom_control")
        return _read_counter(events, "oom_kill") > 0

    def pids_exceeded(self) -> bool | None:
        d = self.controller_dir("pids")
        if d is None or not (d / "pids.max").exists():
            return None
        # "max" counts forks refused because pids.max was reached.
        return _read_counter(d / "pids.events", "max") > 0

    def process_count(self) -> int:
        """Processes (not threads) in the run now."""
        for folder in self.dirs.values():
            try:
                return len((folder / "cgroup.procs").read_text().split())
            except OSError:
                continue
        return 0

    def pids(self) -> list[int]:
        found: set[int] = set()
        for procs in self.procs_files:
            try:
                found.update(int(p) for p in procs.read_text().split())
            except (OSError, ValueError):
                pass
        return sorted(found)

    def threads(self) -> list[int]:
        """Every thread of the run (for its clock: grader/sandbox/clock.py)."""
        name = "cgroup.threads" if self.version == 2 else "tasks"
        for d in self.dirs.values():
            try:
                return [int(t) for t in (d / name).read_text().split()]
            except (OSError, ValueError):
                continue
        return []

    def kill_all(self) -> None:
        """SIGKILL every process in the run, however it detached itself."""
        unified = self.dirs.get("unified")
        if unified is not None and (unified / "cgroup.kill").exists():
            try:
                (unified / "cgroup.kill").write_text("1")
                return
            except OSError:
                pass
        # No cgroup.kill (v1, or v2 before Linux 5.14): kill until the list stays empty;
        # the pids limit bounds how many a fork loop can add between rounds.
        for _ in range(100):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.005)

    def remove(self) -> None:
        """rmdir the cgroup(s); killed processes may take a moment to leave them (on a loaded
        machine more than 5 s: the suite in a fresh clone left one behind, once in four)."""
        deadline = time.monotonic() + REMOVE_WAIT_S
        for d in self.dirs.values():
            while True:
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError as e:
                    if e.errno != errno.EBUSY or time.monotonic() > deadline:
                        break
                    self.kill_all()
                    time.sleep(0.01)


# How long a run's cgroup is waited for to empty before it is left behind (only a cgroup whose
# killed processes have not all left it waits at all).
REMOVE_WAIT_S = 20


def cgroup_version(root: Path = CGROUP_ROOT) -> int | None:
    """2 on a unified hierarchy, 1 on legacy/hybrid (memory controller mounted), else None."""
    if (root / "cgroup.controllers").exists():
        return 2
    if (root / "memory").is_dir() or (root / "pids").is_dir():
        return 1
    return None


def _new_name() -> str:
    return f"pdl-sandbox-{os.getpid()}-{secrets.token_hex(4)}"


def _parent(hierarchy_root: Path, own_path: str) -> Path:
    override = os.environ.get(PARENT_OVERRIDE_ENV)
    return hierarchy_root / (override or own_path).lstrip("/")


def _create_v1(memory_bytes, max_pids, root, own, warnings) -> RunCgroup | None:
    name = _new_name()
    dirs: dict[str, Path] = {}
    try:
        for controller in ("memory", "pids"):
            if controller not in own or not (root / controller).is_dir():
                warnings.append(f"cgroup v1 {controller} controller not mounted")
                continue
            d = _parent(root / controller, own[controller]) / name
            d.mkdir()
            dirs[controller] = d
        if "memory" in dirs and memory_bytes is not None:
            (dirs["memory"] / "memory.limit_in_bytes").write_text(str(memory_bytes))
            # Without this, a machine with swap would swap instead of OOM-killing;
            # the file is absent when swap accounting is off, which is fine.
            try:
                (dirs["memory"] / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
            except OSError:
                pass
        if "pids" in dirs and max_pids is not None:
            (dirs["pids"] / "pids.max").write_text(str(max_pids))
    except OSError as e:
        RunCgroup(1, dirs).remove()
        warnings.append(f"cannot set up cgroup v1 limits: {e}")
        return None
    return RunCgroup(1, dirs) if dirs else None


def _create_v2(memory_bytes, max_pids, root, own, warnings) -> RunCgroup | None:
    parent = _parent(root, own.get("", "/"))
    # v2 only offers memory.max / pids.max in a child when the parent delegates the
    # controllers; enabling them fails (EBUSY) when the parent itself holds processes
    # and is not the root ("no internal processes"): then name a delegated parent.
    wanted = {"memory", "pids"}
    try:
        enabled = set((parent / "cgroup.subtree_control").read_text().split())
        missing = wanted - enabled
        if missing:
            (parent / "cgroup.subtree_control").write_text(" ".join("+" + c for c in sorted(missing)))
    except OSError as e:
        warnings.append(f"cannot enable memory/pids controllers in {parent}: {e}; "
                        f"set {PARENT_OVERRIDE_ENV} to a delegated cgroup")
    d = parent / _new_name()
    try:
        d.mkdir()
    except OSError as e:
        warnings.append(f"cannot create a cgroup under {parent}: {e}")
        return None
    cgroup = RunCgroup(2, {"unified": d})
    try:
        if memory_bytes is not None:
            if (d / "memory.max").exists():
                (d / "memory.max").write_text(str(memory_bytes))
                if (d / "memory.swap.max").exists():
                    (d / "memory.swap.max").write_text("0")
            else:
                warnings.append("memory controller not available: memory limit not enforced")
        if max_pids is not None:
            if (d / "pids.max").exists():
                (d / "pids.max").write_text(str(max_pids))
            else:
                warnings.append("pids controller not available: process limit not enforced")
    except OSError as e:
        cgroup.remove()
        warnings.append(f"cannot set cgroup v2 limits: {e}")
        return None
    return cgroup


def create_run_cgroup(memory_bytes: int | None, max_pids: int | None, *,
                      root: Path = CGROUP_ROOT,
                      self_cgroup: Path = Path("/proc/self/cgroup"),
                      ) -> tuple[RunCgroup | None, list[str]]:
    """A fresh cgroup carrying the limits, plus warnings for what could not be applied."""
    warnings: list[str] = []
    version = cgroup_version(root)
    if version is None:
        return None, [f"no cgroup filesystem at {root}: memory and process limits not enforced"]
    try:
        own = _own_cgroup_paths(self_cgroup)
    except (OSError, ValueError) as e:
        return None, [f"cannot read {self_cgroup}: {e}"]
    create = _create_v2 if version == 2 else _create_v1
    return create(memory_bytes, max_pids, root, own, warnings), warnings
