"""Scripts start as the course starts them: the check names the launcher, never the script's
text (issue 17, point 1), and the runner makes a handout's line change without touching the
student's file."""
from __future__ import annotations

import subprocess
import sys

import pytest

from grader.harness.execute import launch_argv, run_script
from grader.vgpu.script_edits import EditNotFound, apply_edits

COMMAND = ["runner.py", "script.py"]


def test_python_starts_one_plain_process():
    assert launch_argv(COMMAND, launcher="python", nproc=1) == [sys.executable, *COMMAND]


@pytest.mark.parametrize("nproc", [1, 2, 4])
def test_torchrun_starts_its_workers_with_any_number_of_processes(nproc):
    argv = launch_argv(COMMAND, launcher="torchrun", nproc=nproc)
    assert argv[:5] == [sys.executable, "-m", "grader.vgpu.ranks", "--nproc", str(nproc)]
    assert argv[-2:] == COMMAND


def test_a_launcher_the_course_does_not_use_is_refused():
    with pytest.raises(ValueError, match="launcher must be one of"):
        launch_argv(COMMAND, launcher="mpirun", nproc=2)
    with pytest.raises(ValueError, match="starts one process"):
        launch_argv(COMMAND, launcher="python", nproc=2)


def test_the_launch_does_not_depend_on_the_scripts_text(tmp_path, monkeypatch):
    seen = []
    monkeypatch.setattr("grader.harness.execute.observe",
                        lambda observation, argv, **options: seen.append(argv))
    for text in ("import os\nrank = int(os.environ['LOCAL_RANK'])\n",
                 "import torch.distributed as dist\ndist.init_process_group('nccl')\n"):
        (tmp_path / "p").mkdir(exist_ok=True)
        (tmp_path / "p" / "s.py").write_text(text)
        for launcher in ("python", "torchrun"):
            observation = run_script(tmp_path, "p/s.py", gpus=1, launcher=launcher,
                                     scratch_root=tmp_path)
            assert observation.launcher == launcher
    started = ["grader.vgpu.ranks" in argv for argv in seen]
    assert started == [False, True, False, True]


def test_the_configuration_names_the_launch_and_the_edit():
    from grader.harness.observation import Observation
    observation = Observation(script="practical10/sample.py", gpus=4, nproc=1, launcher="torchrun",
                              edits=[("a = 2\n", "a = 0\n")])
    assert observation.configuration == ("4 GPU(s), torchrun --nproc-per-node 1, with `a = 2` "
                                         "changed to `a = 0`")
    # A block by its first line: a student read P4's stand-in for Part 2 whole in each message.
    block = Observation(script="practical4/concepts.py", gpus=2,
                        edits=[("    raise NotImplementedError(\n        \"TODO ...\")\n", "    final_output = output\n")])
    assert block.configuration == "2 GPU(s), with `raise NotImplementedError( ...` changed to `final_output = output`"


# -- the runner's --edit ------------------------------------------------------------------------
def test_an_edit_replaces_text_that_occurs_once():
    assert apply_edits("a = 1\nb = 2\n", "s.py", [("b = 2", "b = 3")]) == "a = 1\nb = 3\n"


@pytest.mark.parametrize("source, found", [("a = 1\n", 0), ("b = 2\nb = 2\n", 2)])
def test_an_edit_whose_text_is_not_there_once_is_refused(source, found):
    with pytest.raises(EditNotFound, match=f"occurs {found} times"):
        apply_edits(source, "sample.py", [("b = 2", "b = 3")])


def test_the_runner_runs_the_edited_script_and_leaves_the_file(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("X = 1\ndevice1 = 'cuda:{}'.format(X + 2)\nprint(device1)\n")
    from grader.vgpu import launch
    RUNNER = launch.RUN_ON_NODE
    done = subprocess.run([sys.executable, str(RUNNER), "--set", "X=2", "--edit",
                           "format(X + 2)", "format(X)", str(script)],
                          capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(RUNNER.parents[2])})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "cuda:2"
    assert "X + 2" in script.read_text()
    missing = subprocess.run([sys.executable, str(RUNNER), "--edit", "not there", "x",
                              str(script)], capture_output=True, text=True, timeout=60,
                             env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(RUNNER.parents[2])})
    assert missing.returncode == 3 and "occurs 0 times" in missing.stderr


@pytest.mark.slow
def test_a_ddp_script_that_never_spells_local_rank_runs_under_torchrun_with_one_process(tmp_path):
    """The issue's case: rank from dist.get_rank() after init_process_group("nccl")."""
    submission, scratch = tmp_path / "submission", tmp_path / "scratch"
    (submission / "p").mkdir(parents=True)
    scratch.mkdir()
    (submission / "p" / "ddp.py").write_text(
        "import torch, torch.distributed as dist\n"
        "dist.init_process_group('nccl')\n"
        "rank = dist.get_rank()\n"
        "torch.cuda.set_device(rank)\n"
        "print('rank', rank, 'of', dist.get_world_size(), torch.ones(1).cuda().device)\n"
        "dist.destroy_process_group()\n")
    observation = run_script(submission, "p/ddp.py", gpus=1, nproc=1, launcher="torchrun",
                             scratch_root=scratch, force_virtual=True, timeout_s=120)
    assert observation.ok, observation.problem()
    assert "rank 0 of 1 cuda:0" in observation.stdout
    assert [e["world_size"] for e in observation.of("init_process_group")] == [1]
