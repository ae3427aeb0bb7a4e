"""What students' code may import when graded: torch, numpy and the standard library are there,
and a module that is not gets a message naming the grading environment."""
import re
import tomllib
from pathlib import Path

import pytest

from grader.harness.course_environment import (COURSE_PACKAGES, may_import, missing_module_note,
                                               read_only_note)
from grader.harness.execute import run_script
from grader.harness.observation import Observation

ROOT = Path(__file__).resolve().parents[2]


def test_every_course_package_is_a_dependency_installed_and_documented():
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {re.split(r"[<>=!~ ]", d)[0] for d in dependencies}
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("What your code may import"):][:1500]
    for package in COURSE_PACKAGES:
        assert package in names, f"{package} is not in pyproject.toml's dependencies"
        __import__(package)
        assert f"`{package}`" in section, f"README's 'What your code may import' lacks {package}"
    assert "numpy" in (ROOT / "scripts" / "install.sh").read_text()


def test_a_module_that_is_not_installed():
    note = missing_module_note("No module named 'matplotlib'")
    assert note.startswith("matplotlib is not installed in the grading environment")
    assert may_import() in note and "numpy" in note and "hand in matplotlib.py" in note


def test_a_missing_part_of_an_installed_package():
    note = missing_module_note("No module named 'torch.cuda.nope'")
    assert "torch is installed in the grading environment but has no module torch.cuda.nope" in note


def test_other_messages_get_no_note():
    assert missing_module_note("CUDA error: invalid device ordinal") is None


def test_the_run_problem_names_the_environment():
    run = Observation("hw3/model_parallel.py", gpus=2, returncode=1, events=[
        {"event": "exception", "type": "ModuleNotFoundError", "site": "model_parallel.py:14",
         "message": "No module named 'pandas_helpers'"}])
    problem = run.problem()
    assert "stopped with ModuleNotFoundError at model_parallel.py:14: No module named" in problem
    assert "pandas_helpers is not installed in the grading environment; the course's code may " \
           "import: torch, numpy and Python's standard library" in problem


@pytest.mark.slow
def test_numpy_imports_in_a_sandboxed_run_and_a_missing_module_is_explained(tmp_path):
    submission = tmp_path / "sub"
    (submission / "practical5").mkdir(parents=True)
    (submission / "practical5" / "uses_numpy.py").write_text(
        "import numpy as np\nimport torch\n"
        "times = np.array([3.0, 1.0, 2.0])\n"
        "x = torch.ones(2, device='cuda:0')\n"
        "print('median', float(np.median(times)), x.device)\n")
    (submission / "practical5" / "uses_seaborn.py").write_text("import seaborn_of_my_own\n")
    ran = run_script(submission, "practical5/uses_numpy.py", gpus=1, timeout_s=120,
                     scratch_root=tmp_path)
    assert ran.ok, ran.problem()
    assert "median 2.0 cuda:0" in ran.stdout
    missing = run_script(submission, "practical5/uses_seaborn.py", gpus=1, timeout_s=120,
                         scratch_root=tmp_path)
    assert not missing.ok
    assert "seaborn_of_my_own is not installed in the grading environment" in missing.problem()


def test_a_write_beside_the_script_is_told_where_a_run_may_write():
    run = Observation("hw3/model_parallel.py", gpus=2, returncode=1, events=[
        {"event": "exception", "type": "OSError", "site": "model_parallel.py:112",
         "message": "[Errno 30] Read-only file system: '/sub/hw3/runs'"}])
    problem = run.problem()
    assert "stopped with OSError at model_parallel.py:112: [Errno 30] Read-only" in problem
    assert "the submission's folder is read-only" in problem
    assert "the current working directory is writable" in problem
    assert read_only_note("[Errno 13] Permission denied: '/etc/x'") is None


def test_only_a_todo_is_called_the_templates_todo():
    torch_error = Observation("practical5/practical5_dp.py", gpus=2, returncode=1, events=[
        {"event": "exception", "type": "NotImplementedError", "site": "practical5_dp.py:33",
         "message": "Could not run 'aten::empty.memory_format' with arguments from the 'CUDA' "
                    "backend."}])
    assert "TODO" not in torch_error.problem()
    todo = Observation("practical5/practical5_dp.py", gpus=2, returncode=1, events=[
        {"event": "exception", "type": "NotImplementedError", "site": "practical5_dp.py:60",
         "message": "TODO (Practical 5): wrap the model in nn.DataParallel"}])
    assert "(a TODO of the template is still to be written): TODO (Practical 5)" in todo.problem()


def test_nccls_duplicate_gpu_error_is_told_its_usual_cause():
    """A student's audit: the crash of a DDP script with `torch.device("cuda")` on every rank
    gave NCCL's words and no hint."""
    from grader.harness.course_environment import duplicate_gpu_note
    from grader.harness.observation import Observation
    message = "NCCL error: invalid usage: Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 0"
    run = Observation("practical6/practical6_ddp.py", gpus=2, returncode=1,
                      events=[{"event": "exception", "type": "RuntimeError", "message": message}])
    assert "torch.cuda.set_device(local_rank)" in run.problem() and "cuda:{local_rank}" in run.problem()
    assert duplicate_gpu_note("CUDA out of memory") is None
