"""Settings of the SLURM backend: command-line options over a YAML file over defaults.

The YAML file (`--slurm-config FILE`), every key optional (a key not listed here is refused,
naming the closest accepted one):

    partition: gpu              # sbatch --partition
    gpus_per_job: 4             # --gres=gpu:N; default: the most any graded rubric's `gpus` asks
    gres_name: gpu              # the GRES name of the cluster's GPUs
    time: "00:35:00"            # --time (HH:MM:SS, MM:SS or D-HH:MM:SS); default: the batch's
                                # --timeout plus JOB_MARGIN_S for start-up and results
    cpus_per_task: 4            # --cpus-per-task; default: one core per run side by side (4)
    mem: 26G                    # --mem; default: runs side by side x --memory + GRADER_MEMORY
    account: pdl                # --account
    qos: normal                 # --qos
    sbatch_args: ["--constraint=a100"]   # anything else, passed as is
    setup: ["module load cuda/12.4", "source /shared/venv/bin/activate"]  # run before grading
    python: python3             # the interpreter the job grades with (default below)
    job_names: tags             # tags (default): pdl-<8 hex> per student, the same in every
                                # batch; keys: the student's key (their name: only where the
                                # cluster hides other users' jobs, SLURM's PrivateData=jobs)
    command: ["python3", "-m", "grader", "grade"]  # the whole grade command (default: python's)
    poll_interval_s: 5          # how often the batch asks SLURM about its jobs
    max_jobs: 50                # jobs queued at once (default: all submissions at once)
    result_wait_s: 30           # how long to wait for a finished job's result.json to appear
                                # (a shared filesystem may show it late)

What a job asks for by default follows from what one grading does: it runs up to
MOST_RUNS_AT_ONCE (4) runs of student code side by side, one core each (grader/common/
cpu_share.py), each in a memory cgroup of the batch's `--memory` (default 6G,
grader/common/run_memory.py), beside the grader's own processes (pytest, the reports:
GRADER_MEMORY). So `--cpus-per-task=4 --mem=26G` by default; with `cpus_per_task: 2` the
grading runs 2 side by side and `mem` follows (14G). A `mem` below what the runs may use is
allowed and warned about: SLURM would stop the whole grading (OUT_OF_MEMORY) where the grader
would have stopped one run and said so in the student's report.

The job's time limit is the batch's `--timeout` plus JOB_MARGIN_S (setting up the
environment, starting Python, the grader's own stop after its timeout, writing the results):
the job script stops the grading itself at `--timeout`, so a student's report says the
grader's timeout, not SLURM's. A `time` that leaves less than that margin is warned about.

The job runs its setup lines, then `<python> -m grader grade ...` with the grader the setup
lines provide (a venv with the grader installed), or else this checkout of the grader on
PYTHONPATH. `python` defaults to `python3` from the environment the setup lines prepare (a
venv they activate, a module they load) when there are setup lines, and to this very
interpreter (its absolute path, on the filesystem the nodes share) when there are none: an
absolute path had run after the setup lines too, which then changed nothing.
"""
from __future__ import annotations

import difflib
import math
import re
import sys
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from grader.common.cpu_share import MOST_RUNS_AT_ONCE, runs_at_once

# Beside the runs' cgroups, a grading's own processes: the grade command, pytest and the
# checks, the reports (a PDF is parsed in a child of its own).
GRADER_MEMORY_MIB = 2048
# A job's time over the batch's --timeout: the setup lines (module load, a venv), Python and
# the grader starting (torch's bytecode compiled once on a fresh node), the grading's own stop
# after its timeout (TIMEOUT_KILL_AFTER_S), writing result.json and the reports.
JOB_MARGIN_S = 300
TIMEOUT_KILL_AFTER_S = 30
# Names people write for a setting, and the setting they mean (the README had said
# "cpus/mem" and "extra sbatch arguments").
_MEANT = {"cpus": "cpus_per_task", "cpu": "cpus_per_task", "cores": "cpus_per_task",
          "ncpus": "cpus_per_task", "cpus_per_job": "cpus_per_task",
          "memory": "mem", "mem_per_job": "mem", "ram": "mem",
          "extra": "sbatch_args", "extra_args": "sbatch_args", "args": "sbatch_args",
          "sbatch": "sbatch_args", "options": "sbatch_args",
          "gpus": "gpus_per_job", "gpu": "gpus_per_job", "gres": "gpus_per_job",
          "time_limit": "time", "walltime": "time", "timeout": "time",
          "modules": "setup", "module": "setup", "setup_lines": "setup", "prologue": "setup",
          "interpreter": "python", "queue": "partition"}
_SLURM_SIZE = re.compile(r"\d+[KMGT]?", re.IGNORECASE)
# A job's name is shown to every user of the cluster by squeue unless SLURM hides other users'
# jobs (PrivateData=jobs): by default a tag per student, not the key that holds their name.
JOB_NAME_KINDS = ("tags", "keys")



class SlurmConfigError(ValueError):
    """A bad option or config file: the batch does not start."""


@dataclass(frozen=True)
class SlurmSettings:
    partition: str | None = None
    gpus_per_job: int | None = None
    gres_name: str = "gpu"
    time: str | None = None
    cpus_per_task: int | None = None
    mem: str | None = None
    account: str | None = None
    qos: str | None = None
    sbatch_args: tuple[str, ...] = ()
    setup: tuple[str, ...] = ()
    python: str | None = None
    command: tuple[str, ...] | None = None
    poll_interval_s: float = 5.0
    max_jobs: int | None = None
    result_wait_s: float = 30.0
    job_names: str = "tags"

    @classmethod
    def load(cls, path: str | Path | None = None, **overrides: Any) -> "SlurmSettings":
        """The file's values, then every override that is not None."""
        values: dict[str, Any] = {}
        if path:
            values.update(_read_yaml(Path(path)))
        values.update({k: v for k, v in overrides.items() if v is not None})
        unknown = sorted(set(values) - {f.name for f in fields(cls)})
        if unknown:
            raise SlurmConfigError(unknown_keys_message(unknown, [f.name for f in fields(cls)]))
        for key in ("sbatch_args", "setup", "command"):
            if key in values:
                value = values[key]
                if isinstance(value, str) or not all(isinstance(v, str) for v in value):
                    raise SlurmConfigError(f"{key} must be a list of strings")
                values[key] = tuple(value)
        settings = cls(**values)
        settings.validate()
        return settings

    def validate(self) -> None:
        if self.gpus_per_job is not None and (not isinstance(self.gpus_per_job, int) or self.gpus_per_job < 0):
            raise SlurmConfigError(f"gpus_per_job must be a non-negative integer, got {self.gpus_per_job!r}")
        if self.time is not None:
            time_to_seconds(self.time)
        if self.cpus_per_task is not None and (isinstance(self.cpus_per_task, bool)
                                               or not isinstance(self.cpus_per_task, int)
                                               or self.cpus_per_task < 1):
            raise SlurmConfigError(f"cpus_per_task must be a positive integer, got "
                                   f"{self.cpus_per_task!r}")
        if self.mem is not None and not _SLURM_SIZE.fullmatch(str(self.mem).strip()):
            raise SlurmConfigError(f"mem must be a SLURM memory size such as 26G or 16000M, "
                                   f"got {self.mem!r}")
        if self.command is not None and not self.command:
            raise SlurmConfigError("command must not be empty")
        if self.python is not None and (not isinstance(self.python, str)
                                        or not self.python.strip()):
            raise SlurmConfigError("python must be an interpreter's name or path, got "
                                   f"{self.python!r}")
        if self.job_names not in JOB_NAME_KINDS:
            raise SlurmConfigError(f"job_names must be one of {', '.join(JOB_NAME_KINDS)}, got "
                                   f"{self.job_names!r}")
        if self.poll_interval_s <= 0:
            raise SlurmConfigError("poll_interval_s must be positive")
        if self.max_jobs is not None and self.max_jobs < 1:
            raise SlurmConfigError("max_jobs must be at least 1")

    def interpreter(self) -> str:
        """The Python the job grades with (see the module's docstring)."""
        return self.python or ("python3" if self.setup else sys.executable)

    def grade_command(self) -> tuple[str, ...]:
        return self.command or (self.interpreter(), "-m", "grader", "grade")

    def with_time_from(self, timeout_s: float) -> "SlurmSettings":
        """Without a `time`, the batch's per-submission timeout plus JOB_MARGIN_S, rounded up
        to whole minutes (SLURM counts time limits in minutes): the grading's own timeout
        stops it first, and is what its report says."""
        if self.time is not None:
            return self
        return replace(self, time=seconds_to_time(timeout_s + JOB_MARGIN_S))

    # -- what a job asks for ------------------------------------------------------------------
    def cpus(self) -> int:
        """--cpus-per-task: `cpus_per_task`, else a core for each run side by side."""
        return self.cpus_per_task or MOST_RUNS_AT_ONCE

    def runs_side_by_side(self) -> int:
        """Runs of student code one grading starts at once on the job's cores."""
        return runs_at_once(self.cpus())

    def needed_memory_mib(self, run_memory_bytes: int) -> int:
        """What a grading may use: its runs side by side, each at its limit, and the grader."""
        return self.runs_side_by_side() * math.ceil(run_memory_bytes / 2**20) + GRADER_MEMORY_MIB

    def memory(self, run_memory_bytes: int) -> str:
        """--mem: `mem`, else what a grading may use (needed_memory_mib)."""
        if self.mem is not None:
            return str(self.mem).strip()
        return mib_to_slurm(self.needed_memory_mib(run_memory_bytes))


def time_to_seconds(text: str) -> int:
    """SLURM's time formats: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S."""
    value = str(text).strip()
    day_hours = re.fullmatch(r"(\d+)-(\d+)(?::(\d+))?(?::(\d+))?", value)
    if day_hours:
        d, h, m, s = (int(x or 0) for x in day_hours.groups())
        return ((d * 24 + h) * 60 + m) * 60 + s
    parts = value.split(":")
    if not all(p.isdigit() for p in parts) or not 1 <= len(parts) <= 3:
        raise SlurmConfigError(f"time {text!r} is not a SLURM time (HH:MM:SS, MM:SS, D-HH:MM:SS)")
    numbers = [int(p) for p in parts]
    if len(numbers) == 1:
        return numbers[0] * 60
    if len(numbers) == 2:
        return numbers[0] * 60 + numbers[1]
    return (numbers[0] * 60 + numbers[1]) * 60 + numbers[2]


def seconds_to_time(seconds: float) -> str:
    minutes = max(1, math.ceil(seconds / 60))
    return f"{minutes // 60:02d}:{minutes % 60:02d}:00"


def mib_to_slurm(mib: int) -> str:
    """SLURM's --mem text for `mib` MiB (its G is 1024 M)."""
    return f"{mib // 1024}G" if mib % 1024 == 0 else f"{mib}M"


def slurm_size_mib(text: str) -> int:
    """MiB of a SLURM memory size (a bare number is MiB, as sbatch reads it)."""
    value = str(text).strip().upper()
    unit = value[-1] if value[-1:] in "KMGT" else "M"
    number = int(value.rstrip("KMGT"))
    return {"K": math.ceil(number / 1024), "M": number, "G": number * 1024,
            "T": number * 1024 * 1024}[unit]


def unknown_keys_message(unknown: list[str], accepted: list[str]) -> str:
    """The refusal of keys no setting has: each with the setting meant where one is close,
    and the accepted keys."""
    named = []
    for key in unknown:
        text = str(key)
        normal = text.strip().lower().replace("-", "_").replace(" ", "_")
        meant = _MEANT.get(normal) or (normal if normal in accepted else None)
        if meant is None:
            close = difflib.get_close_matches(normal, accepted, n=1, cutoff=0.6)
            meant = close[0] if close else None
        named.append(f"{text} (did you mean {meant}?)" if meant else text)
    return (f"unknown SLURM setting(s): {', '.join(named)}; the settings are "
            f"{', '.join(accepted)} (grader/cluster/config.py)")


def _read_yaml(path: Path) -> dict[str, Any]:
    import yaml
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as problem:
        raise SlurmConfigError(f"cannot read {path}: {problem}") from None
    if not isinstance(data, dict):
        raise SlurmConfigError(f"{path} must be a mapping of settings")
    return data
