"""Virtual GPU nodes inside the test process, undone after each test."""
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
