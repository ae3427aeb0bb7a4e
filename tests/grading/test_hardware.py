"""Counting the machine's real GPUs (grader/common/hardware.py) without paying for torch where
the answer is known: every grading process asks, and a CUDA build's `import torch` costs about
6 CPU-seconds (seen on a lent 16-core H200 node: three imports made a practical4 grading cost
21 CPU-seconds there against 5 here)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from grader.common.hardware import cuda_hidden, torch_built_with_cuda

CPU_BUILD = "__version__ = '2.13.0+cpu'\ndebug = False\ncuda: Optional[str] = None\nhip: Optional[str] = None\n"
CUDA_BUILD = "__version__ = '2.11.0+cu130'\ndebug = False\ncuda: Optional[str] = '13.0'\nhip: Optional[str] = None\n"


@pytest.mark.parametrize("visible, hidden", [
    (None, False), ("", True), ("-1", True), (" -1,0", True), ("0", False), ("1,0", False),
    ("GPU-8f2a61c4", False)])
def test_cuda_visible_devices_hides_every_gpu_only_when_empty_or_negative(visible, hidden):
    environ = {} if visible is None else {"CUDA_VISIBLE_DEVICES": visible}
    assert cuda_hidden(environ) is hidden, (
        f"CUDA_VISIBLE_DEVICES={visible!r}: expected hidden={hidden} (what CUDA does)")


@pytest.mark.parametrize("text, cuda", [
    (CPU_BUILD, False), (CUDA_BUILD, True), ("cuda = None\n", False), ("cuda = '11.8'\n", True),
    ("__version__ = '9.9'\n", True)])          # no line to read: ask torch itself
def test_a_cuda_build_is_told_from_torch_version_py(text, cuda):
    assert torch_built_with_cuda(text) is cuda


def test_the_installed_torch_is_read_right():
    assert torch_built_with_cuda() is (torch.version.cuda is not None)


COUNT = r"""
import json, os, sys
real_exists = os.path.exists
os.path.exists = lambda p: True if p == "/dev/nvidiactl" else real_exists(p)   # a driver here
from grader.common import hardware
if sys.argv[1] == "cuda-build":
    hardware.torch_built_with_cuda = lambda text=None: True
print(json.dumps({"count": hardware.real_gpu_count(), "imported": "torch" in sys.modules}))
"""


def count_in_a_fresh_process(build: str, visible: str | None, extra: dict | None = None) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("CUDA_VISIBLE_DEVICES", "PDL_REAL_GPUS")}
    env.update(extra or {})
    if visible is not None:
        env["CUDA_VISIBLE_DEVICES"] = visible
    done = subprocess.run([sys.executable, "-c", COUNT, build], capture_output=True, text=True,
                          env=env, timeout=120, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("build, visible, imports", [
    ("cuda-build", "", False),            # a GPU node's cores, CUDA hidden: the batch's case
    ("cuda-build", "-1", False),
    ("installed", None, torch.version.cuda is not None),   # a CPU build: nothing to ask
    ("cuda-build", None, True)])          # GPUs may be visible: torch itself answers
def test_torch_is_imported_only_where_it_must_answer(build, visible, imports):
    found = count_in_a_fresh_process(build, visible)
    assert found["imported"] is imports, (
        f"{build}, CUDA_VISIBLE_DEVICES={visible!r}: expected torch "
        f"{'imported' if imports else 'not imported'}, observed {found}")
    if not imports:
        assert found["count"] == 0, found
    else:
        assert found["count"] == (torch.cuda.device_count() if torch.cuda.is_available() else 0)


def test_the_count_handed_down_by_the_grading_is_taken_without_torch():
    env_count = {"PDL_REAL_GPUS": "3"}
    found = count_in_a_fresh_process("cuda-build", None, env_count)
    assert found == {"count": 3, "imported": False}, found
    found = count_in_a_fresh_process("cuda-build", "", {"PDL_REAL_GPUS": "many"})   # not a count
    assert found == {"count": 0, "imported": False}, found


def test_the_checks_process_is_handed_the_count(monkeypatch, tmp_path):
    """The grading's CLI counted once; the pytest process of each assignment's checks (which
    asks for every check that needs GPUs) is told, not left to import torch again."""
    from grader.common.hardware import REAL_GPUS_ENV, real_gpu_count
    from grader.grading import run as grading_run
    seen = {}

    def fake_run(command, **options):
        seen.update(options["env"])
        return subprocess.CompletedProcess(command, 1, "", "")
    monkeypatch.setattr(grading_run.subprocess, "run", fake_run)
    grading_run.run_checks("practical4", tmp_path, tmp_path, 10.0)
    assert seen.get(REAL_GPUS_ENV) == str(real_gpu_count()), seen.get(REAL_GPUS_ENV)
