"""Fixtures for every test: virtual GPU nodes inside the test process (undone after each test)
and the `pdl-grade` command line."""
from dataclasses import dataclass

import pytest

from grader.sandbox import sandbox_available
from grader.sandbox.limits import create_run_cgroup


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """`-n 2` (pytest-xdist, README: Tests) hands out work units (`work_unit`): whole test
    files, so that a module's gradings are made once (module-scoped fixtures) and never twice
    on two workers, the two matrices cut in a few units of their own; the longest first, in the
    order below, so that the many short files fill the other worker's time and the tail. An
    explicit --dist wins."""
    if getattr(config.option, "numprocesses", None) and config.option.dist == "no":
        config.option.dist = "loadgroup"
        config.option.loadscopereorder = False


# The longest work units, longest first (about 8, 7, 3, 3, 1.5 and 1.5 minutes on 2 cores).
LONGEST_FIRST = ["tests/grading/test_practicals_matrix.py:practical10",
                 "tests/grading/test_hw3_matrix.py:0", "tests/grading/test_hw3_matrix.py:1",
                 "tests/grading/test_practicals_matrix.py:practical6",
                 "tests/hostile/test_hostile_submissions.py", "tests/integrity/test_corpus.py",
                 "tests/grading/test_hw3_matrix.py:2",
                 "tests/grading/test_practicals_matrix.py:practical5",
                 "tests/grading/test_practicals_matrix.py:practical4",
                 "tests/grading/test_practicals_matrix.py:whole",
                 "tests/batch/test_time_budgets.py", "tests/cluster/test_slurm_backend.py"]


def work_unit(item) -> str:
    """The file a test is in; a matrix's gradings by assignment (the practicals) or in three
    parts (HW3), each a unit with its own gradings (tests/support/gradings.py prefetches only
    within one)."""
    path = item.nodeid.split("::")[0]
    name = getattr(item, "callspec", None) and item.callspec.params.get("name")
    if path.endswith("test_practicals_matrix.py") and item.originalname in (
            "test_reference_gets_every_automatic_point",
            "test_template_gets_no_automatic_point_and_points_at_the_todos"):
        return f"{path}:whole"
    if not isinstance(name, str):
        return path
    if path.endswith("test_practicals_matrix.py"):
        from tests.fixtures import practical_variants as pv
        return f"{path}:{pv.BY_NAME[name].assignment if name in pv.BY_NAME else 'whole'}"
    if path.endswith("test_hw3_matrix.py"):
        from tests.fixtures import hw3_variants as hv
        names = [variant.name for variant in hv.VARIANTS]
        return f"{path}:{names.index(name) % 3 if name in names else 2}"
    return path


def pytest_collection_modifyitems(config, items):
    if getattr(config.option, "dist", "no") != "loadgroup":
        return
    for item in items:
        item.add_marker(pytest.mark.xdist_group(work_unit(item)))
    rank = {unit: index for index, unit in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(work_unit(item), len(rank)))


@pytest.fixture(scope="session", autouse=True)
def basetemp_made_before_threads(tmp_path_factory):
    """The matrices grade in threads (tests/support/gradings.py), each making a temp folder.
    pytest makes its base folder on first use, and under xdist (a fixed --basetemp per worker)
    two threads racing there fail with FileExistsError: make it before any thread starts."""
    tmp_path_factory.getbasetemp()


@pytest.fixture
def vnode():
    from grader.vgpu import activate, active
    assert active() is None, "a node from an earlier test is still active"
    handles = []

    def make(gpus: int):
        handle = activate(gpus, force_virtual=True)
        handles.append(handle)
        return handle

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
