"""Run one script of a submission on the node, in a sandboxed child, and read its trace.

Student code never runs in the process that scores it: the child writes JSON observations
(the vgpu trace) into a scratch folder, and this process reads them back as data.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

from grader.harness.observation import Observation
from grader.integrity import untrusted_files
from grader.integrity.scan import bytecode_caches
from grader.integrity.seal import ENV_KEY, new_key, verify_lines
from grader.sandbox import SandboxPolicy, run_sandboxed
from grader.vgpu import ENV_FORCE_VIRTUAL, ENV_GPUS, ENV_TRACE
from grader.vgpu.launch import BOOT_DIR, PACKAGE_ROOT, RUN_ON_NODE, visible_devices
from grader.vgpu.trace import merge_rank_files

REFERENCE_DIR = PACKAGE_ROOT / "reference"
DEFAULT_TIMEOUT_S = 180.0


# Extra folders to hide from student code (os.pathsep-separated), e.g. set by `pdl-grade batch`
# to its own folder and the folder of uploads, so no student can read another's work.
HIDE_ENV = "PDL_SANDBOX_HIDE"


def _hidden_paths(submission: Path) -> list[Path]:
    # The reference solutions stay invisible to student code (unless they are what is graded).
    hidden = []
    if REFERENCE_DIR.is_dir() and REFERENCE_DIR.resolve() != submission.resolve():
        hidden.append(REFERENCE_DIR)
    # Other students' submissions usually sit beside this one (a folder of submissions): hide
    # the parent folder; the submission itself is bound back read-only inside it.
    hidden.append(submission.resolve().parent)
    hidden += [Path(p) for p in os.environ.get(HIDE_ENV, "").split(os.pathsep) if p]
    # Python would load a submitted __pycache__/*.pyc instead of the source the grader read
    # (the .pyc names the source's size and time, both easy to match): never let it see them.
    hidden += bytecode_caches(submission)
    return [p for p in hidden if p.resolve() != Path("/")]


def run_command(argv: list[str], *, submission: Path, scratch: Path, gpus: int,
                timeout_s: float, force_virtual: bool = False, extra_env: dict | None = None):
    trace = scratch / "trace.jsonl"
    key = new_key()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": os.pathsep.join([str(BOOT_DIR), str(PACKAGE_ROOT)]),
        ENV_GPUS: str(gpus),
        ENV_TRACE: str(trace),
        ENV_KEY: key,
        "OMP_NUM_THREADS": "1",
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PDL_SUBMISSION_ROOT": str(submission.resolve()),  # sites read as hw3/model_parallel.py
    }
    if force_virtual or os.environ.get(ENV_FORCE_VIRTUAL) == "1":
        env[ENV_FORCE_VIRTUAL] = "1"
    else:
        env.update(visible_devices(gpus, os.environ))
    env.update(extra_env or {})
    policy = SandboxPolicy(readonly=[submission, PACKAGE_ROOT / "grader"], writable=[scratch],
                           hidden=_hidden_paths(submission), timeout_s=timeout_s, env=env,
                           cwd=scratch, gpu=not force_virtual, memory_bytes=6 * 2**30,
                           max_pids=512)
    result = run_sandboxed(argv, policy)
    verified = merge_rank_files(str(trace), bytes.fromhex(key))
    return result, verified, key


def run_script(submission: Path, script: str, *, gpus: int, nproc: int = 1,
               sets: dict | None = None, args: list[str] | None = None,
               timeout_s: float = DEFAULT_TIMEOUT_S, scratch_root: Path | None = None,
               force_virtual: bool = False) -> Observation:
    """Run `submission/script` with `nproc` processes on a node of `gpus` GPUs (virtual ones
    with `force_virtual`, even where the machine has enough real GPUs)."""
    sets = dict(sets or {})
    args = list(args or [])
    path = submission / script
    observation = Observation(script=script, gpus=gpus, nproc=nproc, sets=sets, args=args)
    if not path.is_file():
        observation.missing = True
        return observation
    scratch = Path(tempfile.mkdtemp(prefix="run-", dir=scratch_root))
    command = [str(RUN_ON_NODE)]
    for name, value in sets.items():
        command += ["--set", f"{name}={value!r}"]
    command += [str(path.resolve()), *args]
    if nproc > 1 or "LOCAL_RANK" in _script_text(path):
        argv = [sys.executable, "-m", "grader.vgpu.ranks", "--nproc", str(nproc), "--",
                sys.executable, *command]
    else:
        argv = [sys.executable, *command]
    observe(observation, argv, submission=submission, scratch=scratch, gpus=gpus,
            timeout_s=timeout_s, force_virtual=force_virtual)
    return observation


def observe(observation: Observation, argv: list[str], **run_options) -> str:
    """Run `argv` sandboxed on the node and record in `observation` what happened; return the
    run's seal key (hex), for files the run wrote beside its trace."""
    started = time.monotonic()
    result, verified, key = run_command(argv, **run_options)
    observation.duration_s = time.monotonic() - started
    observation.returncode = result.returncode
    observation.timed_out = result.timed_out
    observation.memory_exceeded = result.memory_exceeded
    observation.stdout, observation.stderr = result.stdout, result.stderr
    observation.events = verified.records
    observation.integrity = [f"the trace of {observation.script} ({observation.configuration}): "
                             f"{problem}" for problem in verified.problems]
    observation.warnings = list(result.warnings)
    return key


def _script_text(path: Path) -> str:
    try:
        return untrusted_files.read_text(path, limit=2**20)[0]
    except (OSError, untrusted_files.NotARegularFile):
        return ""


HW3_PROBE = Path(__file__).resolve().parent / "hw3_probe.py"


def run_hw3_probe(submission: Path, plan: list[dict], *, gpus: int,
                  timeout_s: float = DEFAULT_TIMEOUT_S, scratch_root: Path | None = None):
    """Run the HW3 probe on the student's model file; returns (records, Observation)."""
    script = "hw3/model_parallel.py"
    observation = Observation(script=script, gpus=gpus)
    model_file = submission / script
    if not model_file.is_file():
        observation.missing = True
        return [], observation
    scratch = Path(tempfile.mkdtemp(prefix="hw3-", dir=scratch_root))
    out = scratch / "probe.jsonl"
    argv = [sys.executable, str(HW3_PROBE), str(model_file.resolve()), str(out), json.dumps(plan)]
    key = observe(observation, argv, submission=submission, scratch=scratch, gpus=gpus,
                  timeout_s=timeout_s)
    lines = untrusted_files.read_lines(out)
    if lines is None:   # no records (the probe never started), or a name student code made
        if os.path.lexists(out):
            observation.integrity.append(f"the HW3 probe's records ({gpus} GPU(s)): "
                                         f"{out.name} was not a file the grader wrote")
        return [], observation
    verified = verify_lines(lines, bytes.fromhex(key), out.name)
    observation.integrity += [f"the HW3 probe's records ({gpus} GPU(s)): {problem}"
                              for problem in verified.problems]
    return verified.records, observation
