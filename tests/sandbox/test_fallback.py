"""Where bwrap cannot run, the run still happens, but is labelled as unsandboxed."""
import pytest

import grader.sandbox.confined_run as runner


@pytest.fixture
def no_bwrap(monkeypatch):
    monkeypatch.setattr(runner, "sandbox_available", lambda: (False, "simulated: no userns"))


@pytest.fixture
def no_cgroups(monkeypatch):
    monkeypatch.setattr(runner, "create_run_cgroup", lambda *a, **k: (None, ["simulated"]))


@pytest.mark.usefixtures("no_bwrap")
def test_fallback_says_it_is_not_sandboxed(run_python, scratch):
    r = run_python("import os; print(os.getcwd(), os.environ.get('HOME')); raise SystemExit(3)")
    assert (r.sandboxed, r.backend, r.returncode) == (False, "subprocess", 3)
    assert r.stdout == f"{scratch.resolve()} {scratch.resolve()}\n"
    assert any(w.startswith("NOT SANDBOXED (simulated: no userns)") for w in r.warnings)


@pytest.mark.usefixtures("no_bwrap")
def test_fallback_still_enforces_timeout_and_output_cap(run_python):
    r = run_python("import sys\nwhile True: sys.stdout.write('y' * 4096)",
                   timeout_s=1, output_limit_bytes=10_000)
    assert r.timed_out and r.returncode is None and r.output_truncated
    kept = "".join(line for line in r.stdout.splitlines() if not line.startswith("[pdl-"))
    assert kept == "y" * 10_000 and r.duration_s < 3


@pytest.mark.usefixtures("no_bwrap", "no_cgroups")
def test_fallback_without_cgroups_bounds_memory_with_rlimit_data(run_python):
    r = run_python("blob = b'x' * (2 * 2**30)", memory_bytes=256 * 2**20)
    assert r.returncode == 1 and "MemoryError" in r.stderr
    assert r.pids_exceeded is None  # nothing could tell
    assert "simulated" in r.warnings


@pytest.mark.usefixtures("no_bwrap", "no_cgroups")
def test_fallback_reports_signals_like_bwrap(run_python):
    r = run_python("import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    assert r.returncode == 137
