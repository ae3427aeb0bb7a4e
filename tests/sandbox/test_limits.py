"""Denial-of-service attempts end, and are reported for what they were."""
import os
import secrets
import time
from pathlib import Path

import pytest

from grader.sandbox.clock import CONTENTION_CAP, RunClock
from grader.sandbox.limits import CGROUP_ROOT, _own_cgroup_paths, cgroup_version
from grader.sandbox.scratch import remove_tree, usage

# A run's budget stretches while other processes keep the CPUs busy (grader/sandbox/clock.py):
# on a shared machine a 2 s budget may last up to CONTENTION_CAP x 2 s of real time.
STRETCH = CONTENTION_CAP


@pytest.mark.usefixtures("cgroups")
def test_fork_flood_is_stopped_when_the_pids_limit_refuses_a_fork(run_python):
    """Stopped at the first refusal, not at its budget: a flood's processes retrying fork()
    keep the machine's CPUs in the kernel (the batch test's fork flood once took 82 s of a
    busy CI machine to grade practical4)."""
    r = run_python("""
import os, time
print('flooding', flush=True)
while True:
    try:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
    except OSError:
        time.sleep(0.01)
""", max_pids=64, timeout_s=60)
    assert r.pids_exceeded is True
    assert not r.timed_out and r.returncode != 0, (r.timed_out, r.returncode)
    # Stopped within a few polls of the refusal (the run's start included), with its output.
    assert r.duration_s < 30, r.duration_s      # far from its 60 s budget, on a busy machine too
    assert r.stdout == "flooding\n"


@pytest.mark.usefixtures("cgroups")
def test_a_run_holding_more_processes_than_it_may_is_stopped_before_its_threads_limit(run_python):
    """Processes alone are counted too: a flood of 512 torch processes forking and ending
    takes a 2-core machine for 10-20 s; far fewer are stopped at once."""
    r = run_python("""
import os, time
print('forking', flush=True)
for _ in range(200):
    if os.fork() == 0:
        time.sleep(30)
        os._exit(0)
time.sleep(30)
""", max_pids=512, max_processes=16, timeout_s=60)
    assert r.pids_exceeded is True and not r.timed_out and r.returncode != 0
    assert r.duration_s < 30, r.duration_s      # far from its 60 s budget, on a busy machine too


@pytest.mark.usefixtures("cgroups")
def test_a_run_that_forks_below_the_limit_is_not_stopped(run_python):
    r = run_python("""
import os
for _ in range(20):
    if os.fork() == 0:
        os._exit(0)
    os.wait()
print('done')
""", max_pids=64, max_processes=16)
    assert (r.returncode, r.pids_exceeded, r.stdout) == (0, False, "done\n")


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
    assert 2 <= r.duration_s < 2 * STRETCH + 1 and time.monotonic() - started < 2 * STRETCH + 2


@pytest.mark.usefixtures("bwrap")
def test_endless_output_is_truncated(run_python):
    r = run_python("import sys\nwhile True: sys.stdout.write('x' * 65536)",
                   output_limit_bytes=100_000, timeout_s=2)
    assert r.output_truncated
    assert r.stdout.count("x") == 100_000 and "bytes of output left out here" in r.stdout
    assert r.timed_out and r.duration_s < 2 * STRETCH + 1


@pytest.mark.usefixtures("bwrap")
def test_what_a_script_prints_last_survives_a_flood_before_it(run_python):
    """A TA's Gradescope trial: 10 MB printed first, and the Task 5 counts printed last had been
    dropped (and called never printed); a run keeps its output's first and last halves."""
    r = run_python("import sys\nfor _ in range(40): sys.stdout.write('x' * 65536)\n"
                   "print('to() calls: 20, real transfers: 1')", output_limit_bytes=100_000)
    assert r.output_truncated and r.returncode == 0
    assert r.stdout.startswith("x" * 50_000)
    assert r.stdout.rstrip().endswith("to() calls: 20, real transfers: 1"), r.stdout[-200:]
    assert len(r.stdout) < 100_200


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


@pytest.mark.usefixtures("bwrap")
def test_a_flood_of_bytes_into_the_scratch_folder_is_stopped(run_python, scratch):
    # 2 GB in 64 MB pieces. Into one file: the write past the limit fails (RLIMIT_FSIZE, EFBIG).
    limit = 256 * 2**20
    one = run_python("""
block = b"x" * (64 * 2**20)
try:
    with open("one.bin", "wb") as f:
        for _ in range(32):
            f.write(block)
    print("wrote 2 GB")
except OSError as e:
    print("refused:", e.errno)
""", scratch_limit_bytes=limit, timeout_s=60)
    assert one.stdout == "refused: 27\n", one.stdout + one.stderr
    assert (scratch / "one.bin").stat().st_size == limit
    (scratch / "one.bin").unlink()
    # Into many files: the watch on the folder's total stops the run.
    many = run_python("""
block = b"x" * (64 * 2**20)
for i in range(32):
    with open(f"part{i}.bin", "wb") as f:
        f.write(block)
    print(i, flush=True)
print("wrote 2 GB")
""", scratch_limit_bytes=limit, timeout_s=60)
    assert "wrote 2 GB" not in many.stdout
    assert many.disk_exceeded and many.returncode == 137 and not many.timed_out
    # Stopped soon after the limit (the watch looks every 0.1 s), nowhere near 2 GB.
    assert usage([scratch]).bytes < limit + 1024 * 2**20
    remove_tree(scratch)
    assert not scratch.exists()


@pytest.mark.usefixtures("bwrap")
def test_a_run_within_the_scratch_limit_is_not_flagged(run_python, scratch):
    r = run_python("open('trace.bin', 'wb').write(b'x' * 2**20)", scratch_limit_bytes=64 * 2**20)
    assert (r.returncode, r.disk_exceeded) == (0, False)


def test_remove_tree_removes_what_a_run_locked_or_nested(tmp_path):
    top = tmp_path / "scratch"
    top.mkdir()
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(1200):                  # deeper than Python's recursion limit
        os.mkdir("d", dir_fd=fd)
        inner = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(fd)
    locked = top / "locked"
    (locked / "inner").mkdir(parents=True)
    (locked / "inner" / "f").write_text("x")
    os.chmod(locked / "inner", 0o000)
    os.chmod(locked, 0o500)
    (top / "link").symlink_to(tmp_path / "outside")
    (tmp_path / "outside").write_text("kept")
    remove_tree(top)
    assert not top.exists()
    assert (tmp_path / "outside").read_text() == "kept"     # a link is removed, not followed


def test_the_run_clock_does_not_count_time_others_take(monkeypatch):
    import grader.sandbox.clock as clock_module
    own = {"runnable": 1}
    monkeypatch.setattr(clock_module, "runnable_threads", lambda tids: own["runnable"])

    def clock(cpus, machine):
        return RunClock(own_threads=lambda: [], cpus=cpus, machine=lambda: machine)
    # 4 CPUs, 7 runnable threads: this process, the run's 1, 5 others: (5 + 1) / 4 = 1.5x.
    assert clock(4, 7).slowdown() == 1.5
    assert clock(2, 2).slowdown() == 1.0           # only the run and this process
    assert clock(2, 40).slowdown() == CONTENTION_CAP   # a very busy machine: capped
    # A fork flood's own threads never stretch its budget.
    own["runnable"] = 500
    assert clock(2, 502).slowdown() == pytest.approx(1.0, abs=0.01)
    # The budget used is real time divided by the slowdown.
    own["runnable"] = 1
    busy = clock(4, 7)
    time.sleep(0.3)
    assert 0.3 / 1.5 <= busy.tick() < 0.6 / 1.5
    alone = RunClock()                                          # no cgroup: real time
    time.sleep(0.2)
    assert 0.2 <= alone.tick() < 0.5
