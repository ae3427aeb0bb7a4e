import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from grader.sandbox import SandboxPolicy, run_sandboxed, sandbox_available
from grader.sandbox.limits import create_run_cgroup



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


@pytest.fixture
def area():
    """A folder outside /tmp: the sandbox has a private /tmp, so anything under the
    host's /tmp would be invisible inside whatever the policy said."""
    d = Path(tempfile.mkdtemp(prefix="pdl-sandbox-test-", dir="/var/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def scratch(area: Path) -> Path:
    d = area / "scratch"
    d.mkdir()
    return d


@pytest.fixture
def run_python(scratch: Path):
    """Run `code` with this interpreter inside the sandbox; policy fields as keywords."""
    def run(code: str, **policy):
        policy.setdefault("writable", [scratch])
        policy.setdefault("timeout_s", 30)
        return run_sandboxed([sys.executable, "-c", code], SandboxPolicy(**policy))
    return run
