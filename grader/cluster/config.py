"""Settings of the SLURM backend: command-line options over a YAML file over defaults.

The YAML file (`--slurm-config FILE`), every key optional (a key not listed here is refused,
naming the closest accepted one):

    partition: gpu              # sbatch --partition
    gpus_per_job: 4             # --gres=gpu:N; default: the most any graded rubric's `gpus` asks
    gres_name: gpu              # the GRES name of the cluster's GPUs
    time: "00:30:00"            # --time (HH:MM:SS, MM:SS or D-HH:MM:SS); default: from --timeout
    cpus_per_task: 4            # --cpus-per-task
    mem: 32G                    # --mem
    account: pdl                # --account
    qos: normal                 # --qos
    sbatch_args: ["--constraint=a100"]   # anything else, passed as is
    setup: ["module load cuda/12.4", "source /shared/venv/bin/activate"]  # run before grading
    python: python3             # the interpreter the job grades with (default below)
    command: ["python3", "-m", "grader", "grade"]  # the whole grade command (default: python's)
    poll_interval_s: 5          # how often the batch asks SLURM about its jobs
    max_jobs: 50                # jobs queued at once (default: all submissions at once)
    result_wait_s: 30           # how long to wait for a finished job's result.json to appear
                                # (a shared filesystem may show it late)

The job runs its setup lines, then `<python> -m grader grade ...` with this checkout of the
grader on PYTHONPATH. `python` defaults to `python3` from the environment the setup lines
prepare (a venv they activate, a module they load) when there are setup lines, and to this
very interpreter (its absolute path, on the filesystem the nodes share) when there are none:
an absolute path had run after the setup lines too, which then changed nothing.
"""
from __future__ import annotations

import difflib
import math
import re
import sys
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

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
        if self.command is not None and not self.command:
            raise SlurmConfigError("command must not be empty")
        if self.python is not None and (not isinstance(self.python, str)
                                        or not self.python.strip()):
            raise SlurmConfigError("python must be an interpreter's name or path, got "
                                   f"{self.python!r}")
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
        """Without a `time`, the batch's per-submission timeout, rounded up to whole minutes
        (SLURM counts time limits in minutes)."""
        if self.time is not None:
            return self
        return replace(self, time=seconds_to_time(timeout_s))


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
