import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from grader.sandbox import SandboxPolicy, run_sandboxed


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
