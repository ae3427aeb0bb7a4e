"""Fixtures for every test: virtual GPU nodes inside the test process (undone after each test)
and the `pdl-grade` command line."""
from dataclasses import dataclass

import pytest

from grader.sandbox import sandbox_available
from grader.sandbox.limits import create_run_cgroup


def pytest_addoption(parser):
    parser.addoption("--record-file-costs", metavar="PATH", default=None,
                     help="keep PATH (JSON) up to date with each test file's seconds, the "
                          "xdist worker that ran it and when (tests/support/file_costs.py)")


def pytest_configure(config):
    path = config.getoption("record_file_costs", None)
    if path and not hasattr(config, "workerinput"):   # where every report arrives
        from tests.support.file_costs import FileCosts
        config.pluginmanager.register(FileCosts(path), "pdl-file-costs")


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """`-n 2` (pytest-xdist, README: Tests) hands out whole test files: a module's gradings are
    made once (module-scoped fixtures, prefetched in order) and never twice on two workers.
    An explicit --dist wins."""
    if getattr(config.option, "numprocesses", None) and config.option.dist == "no":
        config.option.dist = "loadfile"


@pytest.fixture(scope="session", autouse=True)
def basetemp_made_before_threads(tmp_path_factory):
    """The matrices grade in threads (tests/support/gradings.py), each making a temp folder.
    pytest makes its base folder on first use, and under xdist (a fixed --basetemp per worker)
    two threads racing there fail with FileExistsError: make it before any thread starts."""
    tmp_path_factory.getbasetemp()


def _seeded() -> None:
    """The same random weights and batches in every run of a test on a node. The tests' models
    are tiny (DIM 8): on a batch of one row a ReLU can zero all of a layer's units, and then no
    gradient comes back through the layers before it, which the trace reads as their GPUs
    carrying none (grader/vgpu/observe.py _GradWatch; 8 of 300 seeds for a 6-layer HW3 model on
    one row). At the course's DIM 1024 that cannot happen; a test must not depend on the draw."""
    import torch
    torch.manual_seed(0)


@pytest.fixture
def vnode():
    from grader.vgpu import activate, active
    assert active() is None, "a node from an earlier test is still active"
    _seeded()
    handles = []

    def make(gpus: int):
        handle = activate(gpus, force_virtual=True)
        handles.append(handle)
        return handle

    yield make
    for handle in handles:
        handle.deactivate()


@pytest.fixture
def traced_vnode(tmp_path):
    """A virtual node whose run is traced as a graded run's is (forward passes, rows, steps):
    make(gpus) -> the trace's records so far, a list that grows as the test goes on."""
    from grader.vgpu import activate, active
    assert active() is None, "a node from an earlier test is still active"
    _seeded()
    handles = []

    def make(gpus: int) -> list[dict]:
        handle = activate(gpus, force_virtual=True,
                          trace_path=str(tmp_path / f"trace-{len(handles)}.jsonl"))
        handles.append(handle)
        events: list[dict] = []
        handle.trace.listeners.append(events.append)
        return events

    yield make
    for handle in handles:
        handle.deactivate()


# Where a test needs the sandbox (bubblewrap) or the runs' cgroups (memory, pids), it asks for
# these fixtures: skipped, saying why, on a machine that has neither.
def _cgroups_usable() -> tuple[bool, str]:
    cgroup, warnings = create_run_cgroup(64 * 2**20, 64)
    if cgroup is None or warnings:
        if cgroup is not None:
            cgroup.remove()
        return False, "; ".join(warnings) or "no cgroup"
    cgroup.remove()
    return True, ""


@pytest.fixture(scope="session")
def bwrap():
    """Skips the test, with the reason, where bubblewrap cannot sandbox here."""
    usable, why = sandbox_available()
    if not usable:
        pytest.skip(f"bubblewrap not usable here: {why}")


@pytest.fixture(scope="session")
def cgroups(bwrap):
    """Skips the test, with the reason, where this user cannot create cgroups."""
    usable, why = _cgroups_usable()
    if not usable:
        pytest.skip(f"cannot create memory/pids cgroups here: {why}")


@dataclass
class CliRun:
    code: int
    out: str
    err: str


@pytest.fixture
def pdl_grade(capsys):
    """pdl_grade("batch", SUBS, "--out", OUT, ...): `pdl-grade` run in this process, as a user
    types it; returns its exit code and what it printed."""
    from grader.cli import main

    def call(*argv) -> CliRun:
        capsys.readouterr()          # only this command's output
        code = main([str(arg) for arg in argv])
        captured = capsys.readouterr()
        return CliRun(code, captured.out, captured.err)
    return call
