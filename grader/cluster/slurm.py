"""A thin client of SLURM's command-line tools: `sbatch --parsable` to submit; `squeue` and
`scontrol show job` (then `sacct`, then the jobcomp file) to learn a job's state; `scancel`
to stop jobs.

`scontrol` answers from the controller's memory, which keeps a finished job for MinJobAge
(300 s by default); `sacct` needs slurmdbd, which small clusters (and the tests) lack; the
jobcomp file (JobCompType=jobcomp/filetxt) keeps every finished job but no reason. One of
them knows each job that ever ran.
"""
from __future__ import annotations

import datetime as dt
import os
import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

# Base states after which a job will not run again (scontrol/sacct names).
TERMINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
            "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY", "SPECIAL_EXIT", "REVOKED"}
# Reasons for which a pending job will never start as submitted.
HOPELESS_PENDING = {"BadConstraints", "PartitionConfig", "PartitionTimeLimit",
                    "PartitionNodeLimit", "InvalidAccount", "InvalidQOS"}
COMMAND_TIMEOUT_S = 60


class SlurmError(RuntimeError):
    """A SLURM command failed; the message is SLURM's."""


@dataclass(frozen=True)
class JobInfo:
    job_id: str
    state: str                    # base state: PENDING, RUNNING, COMPLETED, TIMEOUT, ...
    reason: str | None            # scontrol's Reason (None when "None" or unknown)
    exit_code: int | None         # the batch script's exit status
    signal: int | None            # the signal that ended it, if one did
    run_time_s: float | None
    start_time: float | None      # epoch seconds
    time_limit: str | None
    source: str                   # "squeue", "scontrol", "sacct" or "jobcomp"
    completing: bool = False      # still cleaning up (files may not be complete yet)

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL and not self.completing


def _run(argv: list[str], env: dict | None = None) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S,
                              env=env, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise SlurmError(f"{argv[0]} not found: is this a SLURM submit host?") from None
    except subprocess.TimeoutExpired:
        raise SlurmError(f"{shlex.join(argv[:3])} ... did not answer in {COMMAND_TIMEOUT_S} s") from None


def sbatch(script: Path, args: list[str]) -> str:
    """Submit; the job id, or SlurmError with sbatch's own words."""
    done = _run(["sbatch", "--parsable", *args, str(script)])
    if done.returncode != 0:
        lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
        message = lines[-1] if lines else f"exit {done.returncode}"
        raise SlurmError(re.sub(r"^(sbatch: error: )?(Batch job submission failed: )?", "", message))
    # --parsable prints "jobid" or "jobid;cluster".
    return done.stdout.strip().splitlines()[-1].split(";")[0]


def scancel(job_ids: list[str] | None = None, *, name: str | None = None) -> None:
    """Best effort: a job that already ended is not an error."""
    argv = ["scancel"]
    if name:
        argv += [f"--name={name}", f"--user={os.getuid()}"]
    if job_ids:
        argv += list(job_ids)
    elif not name:
        return
    try:
        _run(argv)
    except SlurmError:
        pass


def jobs_commented(comment: str) -> list[str]:
    """This user's jobs SLURM still lists whose comment is `comment` (a batch's tag); [] where
    squeue fails."""
    try:
        done = _run(["squeue", "--noheader", f"--user={os.getuid()}", "--format=%i|%k"])
    except SlurmError:
        return []
    if done.returncode != 0:
        return []
    found = []
    for line in done.stdout.splitlines():
        job_id, sep, text = line.strip().partition("|")
        if sep and text == comment:
            found.append(job_id)
    return found


def query(job_ids: list[str]) -> dict[str, JobInfo]:
    """What SLURM knows of these jobs; a job no source knows is absent."""
    found: dict[str, JobInfo] = {}
    if not job_ids:
        return found
    found.update(_from_scontrol(job_ids))
    missing = [j for j in job_ids if j not in found]
    if missing:
        found.update(_from_sacct(missing))
        missing = [j for j in job_ids if j not in found]
    if missing:
        found.update(_from_jobcomp(missing))
    return found


# -- squeue + scontrol -----------------------------------------------------------------------
def _from_scontrol(job_ids: list[str]) -> dict[str, JobInfo]:
    """One `squeue` for all our jobs (cheap for the controller, unlike listing every job of the
    cluster); `scontrol show job` only for the jobs that ended (for their exit code)."""
    found: dict[str, JobInfo] = {}
    ended = list(job_ids)
    done = _run(["squeue", "--noheader", "--states=all", f"--jobs={','.join(job_ids)}",
                 "--format=%i|%T|%r"])
    if done.returncode == 0:
        ended = []
        listed = set()
        for line in done.stdout.splitlines():
            parts = line.strip().split("|")
            if len(parts) != 3 or parts[0] not in job_ids:
                continue
            job_id, state, reason = parts
            listed.add(job_id)
            if state in TERMINAL:
                ended.append(job_id)
            else:
                found[job_id] = JobInfo(job_id, state, None if reason in ("None", "") else reason,
                                        None, None, None, None, None, "squeue",
                                        completing=state == "COMPLETING")
        ended += [j for j in job_ids if j not in listed]
    for job_id in ended:
        shown = _run(["scontrol", "show", "job", "--oneliner", job_id])
        if shown.returncode == 0 and shown.stdout.strip():
            fields = parse_fields(shown.stdout.strip().splitlines()[0])
            if fields.get("JobId") == job_id:
                found[job_id] = _info_from_fields(fields, "scontrol")
    return found


def parse_fields(line: str) -> dict[str, str]:
    """`Key=Value Key=Value ...`; values may contain spaces only where SLURM puts none, except
    Reason/Comment-like free text, which is glued back to its key."""
    fields: dict[str, str] = {}
    key = None
    for token in line.split():
        if "=" in token and re.match(r"^[A-Za-z][A-Za-z0-9_/:]*=", token):
            key, value = token.split("=", 1)
            fields[key] = value
        elif key is not None:
            fields[key] += " " + token
    return fields


def _info_from_fields(fields: dict[str, str], source: str) -> JobInfo:
    raw_state = fields.get("JobState", "UNKNOWN")
    state = raw_state.split()[0].rstrip("+")
    exit_code, signal = _exit(fields.get("ExitCode"))
    reason = fields.get("Reason")
    if reason in (None, "None", "(null)"):
        reason = None
    start = _epoch(fields.get("StartTime"))
    return JobInfo(job_id=fields.get("JobId", ""), state=state, reason=reason,
                   exit_code=exit_code, signal=signal, run_time_s=_duration(fields.get("RunTime")),
                   start_time=start, time_limit=fields.get("TimeLimit"), source=source,
                   completing=state == "COMPLETING")


def _exit(text: str | None) -> tuple[int | None, int | None]:
    if not text or ":" not in text:
        return None, None
    code, sig = text.split(":", 1)
    try:
        return int(code), (int(sig) or None)
    except ValueError:
        return None, None


def _epoch(text: str | None) -> float | None:
    if not text or text in ("Unknown", "None", "N/A"):
        return None
    try:
        return dt.datetime.fromisoformat(text).timestamp()   # local time, as SLURM prints it
    except ValueError:
        return None


def _duration(text: str | None) -> float | None:
    if not text or text in ("INVALID", "UNLIMITED", "Partition_Limit"):
        return None
    try:
        days, _, rest = text.rpartition("-")
        parts = [int(p) for p in rest.split(":")]
        while len(parts) < 3:
            parts.insert(0, 0)
        return (int(days or 0) * 24 + parts[0]) * 3600 + parts[1] * 60 + parts[2]
    except ValueError:
        return None


# -- sacct ------------------------------------------------------------------------------------
def _from_sacct(job_ids: list[str]) -> dict[str, JobInfo]:
    try:
        done = _run(["sacct", "--noheader", "--parsable2", "--allocations", "--jobs", ",".join(job_ids),
                     "--format=JobID,State,ExitCode,Reason,ElapsedRaw,Start,Timelimit"])
    except SlurmError:
        return {}
    if done.returncode != 0:        # "Slurm accounting storage is disabled": no slurmdbd
        return {}
    found = {}
    for line in done.stdout.splitlines():
        parts = line.split("|")
        if len(parts) < 7 or parts[0] not in job_ids:
            continue
        job_id, state, exit_text, reason, elapsed, start, limit = parts[:7]
        exit_code, signal = _exit(exit_text)
        found[job_id] = JobInfo(job_id, state.split()[0].rstrip("+"),
                                None if reason in ("", "None") else reason, exit_code, signal,
                                float(elapsed) if elapsed.isdigit() else None, _epoch(start),
                                limit or None, "sacct")
    return found


# -- jobcomp file -----------------------------------------------------------------------------
def jobcomp_file() -> Path | None:
    done = _run(["scontrol", "show", "config"])
    if done.returncode != 0:
        return None
    config = {}
    for line in done.stdout.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            config[key.strip()] = value.strip()
    if config.get("JobCompType") != "jobcomp/filetxt" or not config.get("JobCompLoc"):
        return None
    return Path(config["JobCompLoc"])


def _from_jobcomp(job_ids: list[str]) -> dict[str, JobInfo]:
    try:
        path = jobcomp_file()
        lines = path.read_text(errors="replace").splitlines() if path else []
    except (SlurmError, OSError):
        return {}
    wanted, found = set(job_ids), {}
    for line in lines:                       # later lines win (a requeued job ends twice)
        fields = parse_fields(line)
        if fields.get("JobId") in wanted:
            info = _info_from_fields(fields, "jobcomp")
            found[info.job_id] = info
    return found
