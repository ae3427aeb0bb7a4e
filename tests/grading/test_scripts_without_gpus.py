"""The course's scripts on a laptop: plain `python`/`torchrun` without GPUs say which
`pdl-grade` command runs them on virtual GPUs; `pdl-grade torchrun` names the student's script
when it fails and prints no warnings of the grader's own on exit."""
import ast
import os
import subprocess
import sys
import warnings
from pathlib import Path
from types import SimpleNamespace

import pytest

from grader.vgpu import clean_exit
from grader.vgpu.torchrun_launcher import failure_summary

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = {   # script -> the command its message must name
    "practical4/concepts.py": "pdl-grade run --gpus 2 practical4/concepts.py",
    "practical5/practical5_single.py": "pdl-grade run --gpus 1 practical5/practical5_single.py",
    "practical5/practical5_dp.py": "pdl-grade run --gpus 3 practical5/practical5_dp.py",
    "practical6/practical6_ddp.py":
        "pdl-grade torchrun --gpus 2 --nproc-per-node 2 practical6/practical6_ddp.py",
    "practical10/sample.py": "pdl-grade torchrun --gpus 4 --nproc-per-node 2 practical10/sample.py",
}
FOLDERS = ["reference", "student_template"]
NO_GPU = dict(os.environ, CUDA_VISIBLE_DEVICES="")   # a GPU machine, seen as a laptop


def _guard(path: Path) -> ast.If | None:
    """The top-level `if not torch.cuda.is_available():` before the first def or class."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            return None
        if isinstance(node, ast.If) and "torch.cuda.is_available()" in ast.unparse(node.test):
            return node
    return None


@pytest.mark.parametrize("folder", FOLDERS)
@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_the_no_gpu_message_comes_before_any_cuda_call(folder, script):
    guard = _guard(ROOT / folder / script)
    assert guard is not None, f"{folder}/{script}: no `if not torch.cuda.is_available():` near the top"
    assert SCRIPTS[script] in ast.unparse(guard).replace("' '", " ").replace("''", "")


def _up_to_the_guard(folder: str, script: str) -> str:
    path = ROOT / folder / script
    return "".join(path.read_text().splitlines(keepends=True)[:_guard(path).end_lineno])


# A script that stops at its guard runs the same lines in both folders (the test below): run
# in the template's only, as a student starts it. Practical 4's Parts 1-2 go on on the CPU past
# it, and differ.
RUN_IN = [(script, folder) for script in sorted(SCRIPTS) for folder in FOLDERS
          if script == "practical4/concepts.py" or folder == "student_template"]


@pytest.mark.parametrize("script", sorted(set(SCRIPTS) - {"practical4/concepts.py"}))
def test_a_script_stopped_at_its_guard_is_the_same_there_in_both_folders(script):
    assert _up_to_the_guard("reference", script) == _up_to_the_guard("student_template", script)


@pytest.mark.slow
@pytest.mark.parametrize("script, folder", RUN_IN)
def test_plain_python_without_gpus_says_what_to_run(folder, script):
    done = subprocess.run([sys.executable, script], cwd=ROOT / folder, env=NO_GPU,
                          capture_output=True, text=True, timeout=120)
    assert "No CUDA GPU found" in done.stderr and SCRIPTS[script] in done.stderr, done.stderr
    assert "_cuda_setDevice" not in done.stderr and "not compiled with CUDA" not in done.stderr
    if script != "practical4/concepts.py":   # P4's Parts 1-2 run on the CPU
        assert done.returncode == 1 and "Traceback" not in done.stderr


def test_torchrun_failure_summary_names_the_script_and_each_rank():
    failures = {1: SimpleNamespace(local_rank=1, exitcode=-15),
                0: SimpleNamespace(local_rank=0, exitcode=1)}
    text = failure_summary("practical6/practical6_ddp.py", failures)
    assert text.splitlines() == [
        "pdl-grade torchrun: practical6/practical6_ddp.py failed:",
        "  rank 0 (local rank 0): exit code 1",
        "  rank 1 (local rank 1): killed by SIGTERM",
        "The traceback of each failed rank is printed above."]


def test_flushing_files_at_exit_touches_no_deprecated_torch_object():
    import torch.distributed as dist
    assert dist.reduce_op is not None   # alive, as in every process that imported torch
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clean_exit._flush_open_files()
    assert [str(w.message) for w in caught] == []


def _pdl_torchrun(script: str, *sets: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "grader", "torchrun", "--gpus", "2",
                           "--nproc-per-node", "2", *(a for s in sets for a in ("--set", s)),
                           script], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))


@pytest.mark.slow
def test_pdl_grade_torchrun_failure_names_the_students_script():
    done = _pdl_torchrun("student_template/practical6/practical6_ddp.py", "STEPS=1")
    output = done.stdout + done.stderr
    assert done.returncode == 1
    assert "pdl-grade torchrun: student_template/practical6/practical6_ddp.py failed:" in done.stderr
    assert 'File "student_template/practical6/practical6_ddp.py"' in done.stderr   # each rank's
    assert "run_on_node.py" not in output and "runner.py" not in output and "ChildFailedError" not in output
    assert "FutureWarning" not in output


@pytest.mark.slow
def test_pdl_grade_torchrun_exits_without_warnings_of_its_own():
    done = _pdl_torchrun("reference/practical6/practical6_ddp.py", "STEPS=1")
    assert done.returncode == 0, done.stderr
    assert "final loss" in done.stdout
    assert "Warning" not in done.stderr, done.stderr


def test_flushing_at_the_end_survives_a_metaclass_without_a_hash(tmp_path):
    """A reviewer's find: the exit's search for unclosed files hashed every type, and a
    student's metaclass with __eq__ and no __hash__ made a correct forked run exit 1."""
    code = ("class Meta(type):\n    def __eq__(cls, other):\n        return cls is other\n"
            "class Odd(metaclass=Meta):\n    pass\nkept = Odd()\n"
            f"log = open({str(tmp_path / 'log.txt')!r}, 'w')\nlog.write('written')\n"
            "from grader.vgpu.clean_exit import end_without_finalisation\n"
            "end_without_finalisation(0)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "log.txt").read_text() == "written"
