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
from pathlib import Path, PurePosixPath
from typing import Sequence

from grader.common.cpu_share import grading_share, thread_environment, threads_per_run
from grader.common.run_memory import run_memory_bytes
from grader.harness.observation import Observation, run_process_limits
from grader.integrity.names import PROBE_FILE, TRACE_FILE, WEIGHTS_FOLDER
from grader.integrity.scan import bytecode_caches
from grader.integrity.unrun import kept_out_of_runs
from grader.records import untrusted_files
from grader.records.seal import ENV_FD, hand_over, new_key, verify_lines
from grader.common.hardware import real_gpu_count
from grader.common.locations import data_folder
from grader.sandbox import SandboxPolicy, run_sandboxed
from grader.sandbox import forked_runs
from grader.sandbox.forked_runs import ForkServer
from grader.sandbox.scratch import remove_tree
from grader.vgpu import ENV_FORCE_VIRTUAL, ENV_GPUS, ENV_TRACE
from grader.vgpu.launch import BOOT_DIR, PACKAGE_ROOT, RUN_ON_NODE, visible_devices
from grader.vgpu.fork_server import ENV_PRELOAD_TRAINING as SERVER_PRELOAD_TRAINING
from grader.vgpu.fork_server import ENV_SUBMISSION_MODULES as SERVER_SUBMISSION_MODULES
from grader.vgpu.ranks import FORK_ENV as RANKS_FORK_ENV
from grader.vgpu.script_folder import module_names_in
from grader.vgpu.trace import merge_rank_files

REFERENCE_DIR = PACKAGE_ROOT / "reference"
DEFAULT_TIMEOUT_S = 180.0


# Extra folders to hide from student code (os.pathsep-separated), e.g. set by `pdl-grade batch`
# to its own folder and the folder of uploads, so no student can read another's work, and by
# `pdl-grade grade` for each assignment's checks to the other assignments' folders its runs may
# not see (grader/grading/views.py). (The sandbox shows nothing it is not given; these matter
# where something given holds them.)
HIDE_ENV = "PDL_SANDBOX_HIDE"
# What student code needs of the grader: the runtime inside its processes (grader/vgpu with
# its boot folder, the seal and the safe readers of records), the HW3 probe and the helpers
# they import; the sandbox binds only these, so reference/, rubrics/, tests/, the checks, the
# integrity scan's rules and every other package are absent inside.
RUNTIME_PARTS = ("__init__.py", "vgpu", "common", "records", "harness/__init__.py",
                 "harness/hw3_launch.py", "harness/hw3_probe.py", "harness/hw3_import.py",
                 "harness/hw3_recompute.py", "harness/hw3_build.py",
                 "harness/hw3_script_call.py", "harness/hw3_recorded_call.py")
# A run's working folder may hold this much (its trace and what the script saves).
SCRATCH_LIMIT_BYTES = 512 * 2**20


def runtime_parts() -> list[Path]:
    package = PACKAGE_ROOT / "grader"
    return [package / part for part in RUNTIME_PARTS if (package / part).exists()]


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
    # A Python environment zipped with the project and the student's own tests that nothing
    # imports: never run, so the scan only notes what they hold (grader/integrity/unrun.py).
    hidden += kept_out_of_runs(submission)
    return [p for p in hidden if p.resolve() != Path("/")]


def run_command(argv: list[str], *, submission: Path, scratch: Path, gpus: int,
                timeout_s: float, force_virtual: bool = False, extra_env: dict | None = None,
                forks: ForkServer | None = None, probe: bool = False, steady: bool = False):
    """Run `argv` sandboxed on the node; returns (SandboxResult, the verified trace, the key).

    The run's seal key reaches the run through an inherited pipe, never its environment: the
    first process reads it before any student code runs and closes it (grader/records/seal.py).
    With `forks` (the grading's fork server) and virtual GPUs, the run is forked from it rather
    than started as a fresh interpreter (grader/sandbox/forked_runs.py). `probe`: a value
    probe (grader/vgpu/perturb.py), said to the runtime by the key alone (seal.new_key);
    `steady`: the model's noise held still (grader/vgpu/model_noise.py), said the same way.
    """
    trace = scratch / TRACE_FILE
    key = new_key(marked=probe, steady=steady)
    key_fd = hand_over(key)
    env = run_environment(submission, gpus, force_virtual)
    env.update({ENV_TRACE: str(trace), ENV_FD: str(key_fd), **(extra_env or {})})
    policy = run_policy(submission, scratch, env, timeout_s=timeout_s, gpu=not force_virtual,
                        pass_fds=(key_fd,))
    try:
        result = None
        if forks is not None and forks_usable():
            result = forks.run(argv, policy, lambda: server_environment(env, submission))
            if result is None and forked_runs.required():
                raise RuntimeError(f"{forked_runs.SWITCH_ENV}=require, and this run could not "
                                   f"be forked: {forks.why_unusable or 'not a python run'}")
        if result is None:
            result = run_sandboxed(argv, policy)
    finally:
        os.close(key_fd)
    verified = merge_rank_files(str(trace), key)
    return result, verified, key


def run_environment(submission: Path, gpus: int, force_virtual: bool = False) -> dict[str, str]:
    """The environment of a run of `submission` on a node of `gpus` GPUs (its trace and key
    descriptor aside)."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": os.pathsep.join([str(BOOT_DIR), str(PACKAGE_ROOT)]),
        ENV_GPUS: str(gpus),
        # This run's share of the grading's cores (grader/common/cpu_share.py).
        **thread_environment(threads_per_run(grading_share())),
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PDL_SUBMISSION_ROOT": str(submission.resolve()),  # sites read as hw3/model_parallel.py
    }
    if os.environ.get(RANKS_FORK_ENV):   # the staff's switch: fresh interpreters per rank
        env[RANKS_FORK_ENV] = os.environ[RANKS_FORK_ENV]
    if force_virtual or os.environ.get(ENV_FORCE_VIRTUAL) == "1":
        env[ENV_FORCE_VIRTUAL] = "1"
    else:
        env.update(visible_devices(gpus, os.environ))
    if "CUDA_VISIBLE_DEVICES" not in env:   # virtual GPUs: their nvidia-smi comes first
        env["PATH"] = os.pathsep.join([str(BOOT_DIR / "bin"), env["PATH"]])
    return env


def run_policy(submission: Path, scratch: Path, env: dict[str, str], **fields) -> SandboxPolicy:
    processes, tasks = run_process_limits()
    return SandboxPolicy(readonly=[submission, *runtime_parts()], writable=[scratch],
                         hidden=_hidden_paths(submission), env=env, cwd=scratch,
                         memory_bytes=run_memory_bytes(), max_pids=tasks,
                         max_processes=processes,
                         scratch_limit_bytes=SCRATCH_LIMIT_BYTES, **fields)


# What differs between two runs of one grading: a fork server (which imports torch before any
# run) must not see these, or the boot would give it a node of its own.
PER_RUN_ENV = (ENV_GPUS, ENV_TRACE, ENV_FD, ENV_FORCE_VIRTUAL, RANKS_FORK_ENV, "CUDA_VISIBLE_DEVICES")


def server_environment(run_env: dict[str, str], submission: Path | None = None) -> dict[str, str]:
    """The environment a grading's fork server imports torch in: a run's, less what is the
    run's own (its threads, paths and PYTHONPATH are the grading's), and the submission's module
    names (grader/vgpu/fork_server.py preloads nothing any of them could stand in for)."""
    env = {name: value for name, value in run_env.items() if name not in PER_RUN_ENV}
    if submission is not None:
        env[SERVER_SUBMISSION_MODULES] = ",".join(sorted(submission_module_names(submission)))
    return env


def forks_usable() -> bool:
    """Runs may be forked from a fork server: virtual GPUs only (CUDA does not survive a fork
    after the driver was touched, and no GPU machine has checked what torch's imports touch)."""
    return real_gpu_count() == 0


def start_fork_server(submission: Path, parent: Path | None = None, *, training: bool = True,
                      apart: Sequence[Path] = ()) -> ForkServer | None:
    """A fork server for the gradings of `submission`, started now (its imports take a few
    seconds: start it before what else the grading does first; from a thread that outlives
    it); None where runs cannot fork. Its sandbox is the one every run forked from it gets:
    a run's, the folders `apart` hidden too (grader/grading/views.py: the other assignments'
    folders, which the runs of the checks given this server hide as well, HIDE_ENV).
    `training`: whether the graded assignments' scripts train (the rubrics' `trains`)."""
    if not forks_usable():
        return None
    forks = ForkServer(parent)
    env = server_environment(run_environment(submission, 1), submission)
    if not training:
        env[SERVER_PRELOAD_TRAINING] = "0"
    policy = run_policy(submission, forks.root, env, timeout_s=float("inf"))
    policy.hidden += [Path(p) for p in apart]
    forks.start(policy)
    return forks


def submission_module_names(submission: Path, limit: int = 5000) -> set[str]:
    """Names `import` finds beside the submission's scripts (every folder of it holding a .py
    file; at most `limit` entries looked at: an upload of thousands gets no preload at all)."""
    names: set[str] = set()
    seen = 0
    for folder, dirs, files in os.walk(submission):
        seen += len(dirs) + len(files)
        if seen > limit:
            return {"__too_many_files__"}
        dirs[:] = [d for d in dirs if not d.startswith(".") and d != "__pycache__"]
        if any(name.endswith(".py") for name in files):
            names |= module_names_in(folder)
    return names


# How the course starts each kind of script: `python SCRIPT`, or torchrun for scripts written
# for it (Practicals 6 and 10), with one process as much as with several. The checks say which;
# the grader never guesses from the script's text.
LAUNCHERS = ("python", "torchrun")


def launch_argv(command: list[str], *, launcher: str, nproc: int) -> list[str]:
    """The argv that starts `command` (the runner and the script) the way `launcher` would:
    torchrun's workers get RANK, LOCAL_RANK, WORLD_SIZE and a rendezvous address (see
    grader.vgpu.ranks), whatever the script contains."""
    if launcher not in LAUNCHERS:
        raise ValueError(f"launcher must be one of {LAUNCHERS}, got {launcher!r}")
    if launcher == "python":
        if nproc != 1:
            raise ValueError("`python SCRIPT` starts one process; use launcher='torchrun' for "
                             f"{nproc}")
        return [sys.executable, *command]
    return [sys.executable, "-m", "grader.vgpu.ranks", "--nproc", str(nproc), "--",
            sys.executable, *command]


def run_script(submission: Path, script: str, *, gpus: int, nproc: int = 1,
               launcher: str = "python", sets: dict | None = None,
               edits: list[tuple[str, str]] | None = None, args: list[str] | None = None,
               timeout_s: float = DEFAULT_TIMEOUT_S, scratch_root: Path | None = None,
               force_virtual: bool = False, forks: ForkServer | None = None,
               probe: bool = False, steady: bool = False) -> Observation:
    """Run `submission/script` as `launcher` starts it (`python`, or `torchrun` with `nproc`
    processes) on a node of `gpus` GPUs (virtual ones with `force_virtual`, even where the
    machine has enough real GPUs). `sets` change top-level constants, `edits` replace a text
    of the script that occurs exactly once (the runner's --set and --edit). `probe`: the run
    perturbs its layers' outputs (grader/vgpu/perturb.py); `steady`: its dropout and batch
    statistics are held still (grader/vgpu/model_noise.py)."""
    sets = dict(sets or {})
    edits = [tuple(edit) for edit in edits or []]
    args = list(args or [])
    path = submission / script
    observation = Observation(script=script, gpus=gpus, nproc=nproc, sets=sets, args=args,
                              launcher=launcher, edits=edits)
    if not path.is_file():
        observation.missing = True
        observation.instead = scripts_instead(submission, script)
        return observation
    scratch = new_scratch("run-", scratch_root, forks)
    command = [str(RUN_ON_NODE)]
    for name, value in sets.items():
        command += ["--set", f"{name}={value!r}"]
    for old, new in edits:
        command += ["--edit", old, new]
    command += [str(path.resolve()), *args]
    try:
        observe(observation, launch_argv(command, launcher=launcher, nproc=nproc),
                submission=submission, scratch=scratch, gpus=gpus, timeout_s=timeout_s,
                force_virtual=force_virtual, forks=forks, probe=probe, steady=steady)
    finally:
        remove_tree(scratch)   # what the run wrote is read: nothing of it stays on the disk
    return observation


def scripts_instead(submission: Path, script: str) -> list[str]:
    """The Python files and notebooks in a missing `script`'s folder that the template's folder
    does not have (paths as `script` is written): the script renamed, or never exported from
    its notebook, most likely. The template's own scripts there (practical5_single.py beside a
    missing practical5_dp.py) are not it."""
    folder = PurePosixPath(script).parent
    try:
        found = sorted(p.name for p in (submission / folder).iterdir()
                       if p.is_file() and p.suffix in (".py", ".ipynb")
                       and not p.name.startswith((".", "_")))
    except OSError:
        return []
    template = data_folder("student_template") / folder
    return [str(folder / name) for name in found if not (template / name).is_file()]


def new_scratch(prefix: str, scratch_root: Path | None, forks: ForkServer | None) -> Path:
    """A run's scratch folder: in its fork server's folder (the only one the server's sandbox
    may write), else under scratch_root."""
    if forks is not None:
        return forks.new_scratch(prefix)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=scratch_root))


def observe(observation: Observation, argv: list[str], **run_options) -> str:
    """Run `argv` sandboxed on the node and record in `observation` what happened; return the
    run's seal key, for files the run wrote beside its trace."""
    started = time.monotonic()
    result, verified, key = run_command(argv, **run_options)
    observation.duration_s = time.monotonic() - started
    observation.returncode = result.returncode
    observation.timed_out = result.timed_out
    observation.time_limit_s = run_options.get("timeout_s")
    observation.memory_exceeded = result.memory_exceeded
    observation.disk_exceeded = result.disk_exceeded
    observation.processes_exceeded = bool(result.pids_exceeded) and result.returncode != 0
    observation.stdout, observation.stderr = result.stdout, result.stderr
    observation.events = verified.records
    where = f"the trace of {observation.script} ({observation.configuration})"
    exited_normally = result.returncode == 0 and not result.timed_out
    observation.integrity = [f"{where}: {problem}" for problem in
                             verified.problems + verified.closing_problems(exited_normally)]
    observation.integrity_notes = [f"{where}: {note}" for note in verified.notes]
    observation.warnings = list(result.warnings)
    return key


HW3_LAUNCH_MODULE = "grader.harness.hw3_launch"   # loads hw3_probe.py under no importable name


def run_hw3_probe(submission: Path, plan: list[dict], *, gpus: int,
                  timeout_s: float = DEFAULT_TIMEOUT_S, scratch_root: Path | None = None,
                  forks: ForkServer | None = None, script: str = "hw3/model_parallel.py"):
    """Run the HW3 probe on the student's model file (`script`: another script of the
    submission's, where Task 3 may be in a script of its own: grader/checks/
    hw3_extra_scripts.py); returns (records, Observation)."""
    observation = Observation(script=script, gpus=gpus)
    model_file = submission / script
    probe = dict(gpus=gpus, timeout_s=timeout_s, scratch_root=scratch_root, forks=forks)
    if not model_file.is_file():
        observation.missing = True
        observation.instead = scripts_instead(submission, script)
        # Its absence is the student's (every check of their code says so); the base code's
        # measurement is the grader's own, which had errored Task 1 without it (a grading
        # problem, graded again in every batch). The probe imports the model only when a part
        # needs it: the course's parts run without one.
        course = [part for part in plan if part.get("part") in COURSE_PARTS]
        if not course:
            return [], observation
        records, measured = _probe(submission, model_file, course,
                                   Observation(script=script, gpus=gpus), **probe)
        observation.integrity += measured.integrity
        observation.integrity_notes += measured.integrity_notes
        return records, observation
    return _probe(submission, model_file, plan, observation, **probe)


# The probe's parts that measure the course's own code, before any part imports the student's
# model: Task 1 asks what the base code does, whatever the student's script.
COURSE_PARTS = ("base_code",)


def _probe(submission: Path, model_file: Path, plan: list[dict], observation: Observation, *,
           gpus: int, timeout_s: float, scratch_root: Path | None, forks: ForkServer | None):
    scratch = new_scratch("hw3-", scratch_root, forks)
    out = scratch / PROBE_FILE
    argv = [sys.executable, "-m", HW3_LAUNCH_MODULE, str(model_file.resolve()), str(out),
            json.dumps(plan)]
    try:
        key = observe(observation, argv, submission=submission, scratch=scratch, gpus=gpus,
                      timeout_s=timeout_s, forks=forks)
        return _read_probe_records(observation, out, key, scratch / WEIGHTS_FOLDER, gpus)
    finally:
        remove_tree(scratch)   # what the run wrote is read: nothing of it stays on the disk


def _read_probe_records(observation: Observation, out: Path, key, weights: Path, gpus: int):
    """The probe's sealed records and what they, and the weights it kept, say was tampered
    with; (records, observation)."""
    from grader.harness.hw3_recompute import recompute_outputs
    label = f"the HW3 probe's records ({gpus} GPU(s))"
    lines = untrusted_files.read_lines(out)
    if lines is None:   # no records (the probe never started), or a name student code made
        if os.path.lexists(out):
            observation.integrity.append(f"{label}: {out.name} was not a file the grader wrote")
        return [], observation
    verified = verify_lines(lines, key, out.name)
    observation.integrity += [f"{label}: {problem}" for problem in verified.problems]
    records = verified.records
    observation.integrity += _probe_tampering(records, label, observation)
    problems, notes = recompute_outputs(records, weights, label)
    observation.integrity += problems
    observation.integrity_notes += notes
    return records, observation


def _probe_tampering(records: list[dict], label: str, observation: Observation) -> list[str]:
    """What the probe's records say it found replaced or forged, and a probe that exited
    normally without its closing record."""
    found = []
    replaced = sorted({str(name) for r in records for name in (r.get("tampered") or [])})
    if replaced:
        found.append(f"{label}: the grader's instrumentation was replaced while the probe ran: "
                     + ", ".join(replaced[:12]))
    # Every forward pass's log: the layouts' two calls, the transfers' pass from the host too.
    logs = [r.get(key) or [] for r in records
            for key in ("log", "log_first_call", "log_from_host")]
    forged = sorted({str(entry.get("what")) for log in logs for entry in log
                     if isinstance(entry, dict) and entry.get("kind") == "forged"})
    forged += sorted({str(r.get("what")) for r in records if r.get("kind") == "tampering"})
    found += [f"{label}: {what}" for what in forged]
    if observation.returncode == 0 and not observation.timed_out and \
            not any(r.get("kind") in ("done", "import_error") for r in records):
        found.append(f"{label}: the probe exited normally without its closing record "
                     "(ended around it)")
    return found
