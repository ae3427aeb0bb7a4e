"""Fixtures for every test: virtual GPU nodes inside the test process (undone after each test)
and the `pdl-grade` command line."""
from dataclasses import dataclass

import pytest


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
