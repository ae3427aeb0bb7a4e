"""Denial-of-service attempts end, and are reported for what they were."""
import os
import secrets
import time
from pathlib import Path

import pytest

from grader.sandbox.limits import CGROUP_ROOT, _own_cgroup_paths, cgroup_version


@pytest.mark.usefixtures("cgroups")
def test_fork_flood_is_stopped_by_the_pids_limit(run_python):
    r = run_python("""
import os, time
started = refused = 0
for _ in range(2000):
    try:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        started += 1
    except OSError:
        refused += 1
print(started, refused)
""", max_pids=64)
    started, refused = map(int, r.stdout.split())
    assert started < 64 and refused > 1900
    assert r.pids_exceeded is True
    # The sleeping children did not keep the run alive: the pid namespace died with it.
    assert r.returncode == 0 and not r.timed_out and r.duration_s < 10


@pytest.mark.usefixtures("cgroups")
def test_memory_bomb_is_reported(run_python):
    r = run_python("blob = b'x' * (2 * 2**30); print('survived')", memory_bytes=256 * 2**20)
    assert r.memory_exceeded is True
    assert r.returncode == 137  # SIGKILL from the OOM killer
    assert "survived" not in r.stdout


@pytest.mark.usefixtures("cgroups")
def test_normal_run_is_not_flagged(run_python):
    r = run_python("blob = b'x' * (32 * 2**20); import threading; print(len(blob))",
                   memory_bytes=256 * 2**20, max_pids=64)
    assert (r.returncode, r.memory_exceeded, r.pids_exceeded) == (0, False, False)


@pytest.mark.usefixtures("bwrap")
def test_endless_loop_is_killed_at_the_timeout(run_python):
    started = time.monotonic()
    r = run_python("print('looping', flush=True)\nwhile True: pass", timeout_s=2)
    assert r.timed_out and r.returncode is None
    assert r.stdout == "looping\n"  # output up to the kill is kept
    assert 2 <= r.duration_s < 4 and time.monotonic() - started < 5


@pytest.mark.usefixtures("bwrap")
def test_endless_output_is_truncated(run_python):
    r = run_python("import sys\nwhile True: sys.stdout.write('x' * 65536)",
                   output_limit_bytes=100_000, timeout_s=2)
    assert r.output_truncated
    assert r.stdout == "x" * 100_000
    assert r.timed_out and r.duration_s < 4


@pytest.mark.usefixtures("bwrap")
def test_detached_child_does_not_outlive_the_run(run_python, scratch):
    token = f"pdl-detached-{secrets.token_hex(6)}"
    started, late = scratch / "started", scratch / "late"
    r = run_python(f"""
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        # argv carries the token so the host can look for this process afterwards.
        os.execvp("sh", ["sh", "-c", "touch {started}; sleep 1.5; touch {late}; sleep 60", "{token}"])
    os._exit(0)
while not os.path.exists({str(started)!r}):
    time.sleep(0.01)
print("detached")
""")
    assert r.stdout == "detached\n" and r.returncode == 0 and not r.timed_out
    assert r.duration_s < 1.5  # the run did not wait for the grandchild either

    def alive() -> list[str]:
        found = []
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                if token.encode() in cmdline.read_bytes():
                    found.append(cmdline.parent.name)
            except OSError:
                pass
        return found

    assert alive() == []
    time.sleep(2)
    assert not late.exists()


@pytest.mark.usefixtures("cgroups")
def test_run_cgroups_are_removed(run_python):
    own = _own_cgroup_paths(Path("/proc/self/cgroup"))
    parents = ([CGROUP_ROOT / own[""].lstrip("/")] if cgroup_version() == 2 else
               [CGROUP_ROOT / c / own[c].lstrip("/") for c in ("memory", "pids")])

    def leftovers():
        return [p for parent in parents for p in parent.glob(f"pdl-sandbox-{os.getpid()}-*")]

    run_python("print(1)")
    run_python("while True: pass", timeout_s=0.5)
    assert leftovers() == []


@pytest.mark.usefixtures("cgroups")
def test_nothing_runs_when_the_run_cannot_be_confined(run_python, scratch, monkeypatch):
    from grader.sandbox import SandboxSetupError
    from grader.sandbox.limits import RunCgroup
    monkeypatch.setattr(RunCgroup, "procs_files", property(lambda self: [Path("/proc/nonexistent/x")]))
    with pytest.raises(SandboxSetupError):
        run_python(f"open({str(scratch / 'ran')!r}, 'w')")
    assert not (scratch / "ran").exists()
