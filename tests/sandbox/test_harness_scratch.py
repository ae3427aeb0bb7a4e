"""The harness's runs leave nothing on the disk: each run's scratch folder is removed once what
it wrote has been read, and a run that floods it is stopped and says why."""
from pathlib import Path

import pytest

from grader.harness.execute import run_script

pytestmark = pytest.mark.usefixtures("bwrap")


def _submission(area: Path, code: str) -> Path:
    folder = area / "submission" / "practical4"
    folder.mkdir(parents=True)
    (folder / "concepts.py").write_text(code)
    return folder.parent


def test_a_run_leaves_no_scratch_behind(area):
    scratch_root = area / "runs"
    scratch_root.mkdir()
    submission = _submission(area, "open('saved.txt', 'w').write('x' * 1000)\nprint('done')\n")
    run = run_script(submission, "practical4/concepts.py", gpus=1, timeout_s=60,
                     scratch_root=scratch_root, force_virtual=True)
    assert run.ok and run.stdout.strip().endswith("done"), run.problem()
    assert list(scratch_root.iterdir()) == []


def test_a_run_writing_2_gb_into_its_folder_is_stopped_and_leaves_nothing(area):
    scratch_root = area / "runs"
    scratch_root.mkdir()
    submission = _submission(area, """
block = b"x" * (64 * 2**20)
for i in range(32):
    with open(f"dump{i}.bin", "wb") as f:
        f.write(block)
print("wrote 2 GB")
""")
    run = run_script(submission, "practical4/concepts.py", gpus=1, timeout_s=120,
                     scratch_root=scratch_root, force_virtual=True)
    assert run.disk_exceeded and not run.ok and "wrote 2 GB" not in run.stdout
    assert "wrote more files than its working folder may hold and was stopped" in run.problem()
    assert list(scratch_root.iterdir()) == []
