"""Stage 1, run: a submission -> raw observations on disk (a `RawRun`).

Each assignment's checks run in their own pytest process, rooted in the grader's own files (no
conftest or plugin of the submission is ever loaded); student code runs only in the sandboxed
children those checks start. A crash or hang of one assignment's checks costs that assignment
only: it is recorded as the assignment's problem and the next one runs. The submission's source
is scanned (read, never run) for code that could deceive the grader (grader/integrity).
"""
from __future__ import annotations

import datetime as dt
import hashlib
import os
import secrets
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from grader.common.bytecode import PREFIX_ENV, shared_bytecode
from grader.checks.shared_runs import SHARED_RUNS_ENV, SHARED_RUNS_KEY_ENV
from grader.checks.support import HIDE_ANSWERS_ENV
from grader.common.hardware import real_gpu_count, real_gpu_environment, real_gpu_names
from grader.common.text import last_lines
from grader.grading.views import ViewServers, unlinked_view, views_of
from grader.grading.raw import (AssignmentRun, RawRun, read_json, check_log_file,
                                check_results_file, load_findings, save_findings)
from grader.scoring import hardware_info
from grader.scoring.rubric import Rubric

GRADER_ROOT = Path(__file__).resolve().parents[2]       # the folder holding grader/
CHECKS_DIR = GRADER_ROOT / "grader" / "checks"
# Generous: an assignment runs several scripts; each run has its own, shorter, timeout.
ASSIGNMENT_TIMEOUT_S = 1200
DEFAULT_CHECK_TIMEOUT_S = 180.0


def run_submission(submission: Path, out: Path, rubrics: Mapping[str, Rubric],
                   assignments: Sequence[str], *, rubrics_dir: str | None = None,
                   check_timeout: float = DEFAULT_CHECK_TIMEOUT_S) -> RawRun:
    """Run the checks of `assignments` on `submission`; their results go into `out`."""
    started, clock = dt.datetime.now(dt.timezone.utc).isoformat(), time.monotonic()
    submission, out = Path(submission).resolve(), Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    run = RawRun(str(submission), [], hardware=hardware_for(rubrics, assignments),
                 started_at=started)
    # Each assignment's runs see its folder, the shared files and its group's folders only, and
    # are forked from a fork server of that view (grader/grading/views.py): torch imported once
    # per view. The first one imports while the source is scanned.
    servers = ViewServers(lambda view, training: start_fork_server_quietly(
        submission, training=training, apart=sorted(view)))
    # A run two assignments make alike in one view is made once (grader/checks/shared_runs.py).
    shared_runs = tempfile.TemporaryDirectory(prefix="pdl-shared-runs-")
    shared_key = secrets.token_hex(32)
    trains = {a: a in rubrics and rubrics[a].trains for a in assignments}
    if assignments:
        servers.serve(unlinked_view(submission, assignments[0]), trains[assignments[0]])
    try:
        groups = None
        try:
            run.findings, groups = scan_source_and_groups(submission, out)
        except Exception as error:   # the scan is a tripwire: its failure must not stop grading
            run.problems.append(f"the integrity scan of the source failed ({error!r}): a "
                                "person should read the code")
        views = views_of(submission, assignments, groups)

        def training(view) -> bool:   # whether a run of the view trains: preload dynamo
            return any(trains[a] for a in assignments if views[a] == view)
        alike = Counter(views[a] for a in assignments)   # a view graded once shares nothing
        for index, assignment in enumerate(assignments):
            servers.keep_only([views[a] for a in assignments[index:]])
            forks = servers.serve(views[assignment], training(views[assignment]))
            ahead = next((views[a] for a in assignments[index:]
                          if views[a] != views[assignment]), None)
            if ahead is not None:   # it imports while this assignment's checks run
                servers.serve(ahead, training(ahead))
            try:
                results, problem = run_checks(
                    assignment, submission, out, check_timeout, rubrics_dir, forks=forks,
                    apart=views[assignment],
                    shared=(view_folder(Path(shared_runs.name), views[assignment]), shared_key)
                    if alike[views[assignment]] > 1 else None)
            except Exception as error:   # one assignment's trouble is that assignment's only
                results, problem = None, f"the checks of {assignment} could not run: {error!r}"
            run.assignments.append(AssignmentRun(assignment, results, problem))
    finally:
        servers.close()
        shared_runs.cleanup()
    run.duration_s = round(time.monotonic() - clock, 2)
    run.save(out)
    return run


def checks_command(assignment: str, submission: Path, results: Path, timeout: float,
                   rubrics_dir: str | None = None) -> list[str]:
    rubrics = [f"--rubrics={Path(rubrics_dir).resolve()}"] if rubrics_dir else []
    return [sys.executable, "-m", "pytest", str(CHECKS_DIR / f"test_{assignment}.py"),
            f"--submission={submission}", f"--check-timeout={timeout}", *rubrics,
            "--json-report", f"--json-report-file={results}", "--json-report-omit=collectors",
            "-p", "grader.pytest_plugin", "-p", "pytest_jsonreport.plugin",
            "-p", "no:cacheprovider", "-q", "--no-header", "-rN",
            f"--rootdir={CHECKS_DIR}", "-c", str(CHECKS_DIR / "pytest.ini")]


def start_fork_server_quietly(submission: Path, *, training: bool = True,
                              apart: Sequence[Path] = ()):
    """The submission's fork server, its runs not seeing the folders `apart`, or None (then
    each run imports torch itself)."""
    from grader.harness.execute import start_fork_server
    try:
        return start_fork_server(submission, training=training, apart=apart)
    except Exception:   # noqa: BLE001 - a slower grading, not a failed one
        return None


def view_folder(shared: Path, view) -> Path:
    """The folder of `shared` (a grading's) that keeps the runs made in `view`."""
    name = hashlib.sha256("\0".join(sorted(map(str, view))).encode()).hexdigest()[:16]
    folder = shared / name
    folder.mkdir(exist_ok=True)
    return folder


def run_checks(assignment: str, submission: Path, out: Path, timeout: float,
               rubrics_dir: str | None = None, *, forks=None, apart: Iterable[Path] = (),
               shared: tuple[Path, str] | None = None) -> tuple[dict | None, str | None]:
    """(the checks' results, None) or (None, why there are none). `forks`: a fork server the
    checks' runs are forked from (grader/sandbox/forked_runs.py), its sandbox hiding `apart`
    as the checks' own runs do: the folders of the submission their runs must not see
    (grader/grading/views.py). `shared`: (folder, key) of the runs the grading's assignments
    of this view share (grader/checks/shared_runs.py)."""
    from grader.harness.execute import HIDE_ENV
    results = out / check_results_file(assignment)
    results.unlink(missing_ok=True)
    env = dict(os.environ, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", PYTHONDONTWRITEBYTECODE="1",
               **real_gpu_environment())
    hidden = [*filter(None, env.get(HIDE_ENV, "").split(os.pathsep)), *map(str, apart)]
    if hidden:
        env[HIDE_ENV] = os.pathsep.join(hidden)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(GRADER_ROOT), env.get("PYTHONPATH")]))
    # The course's grading shows what the code does beside each answer; `pdl-grade check` sets
    # it to "1" (grader/checks/support.py).
    env[HIDE_ANSWERS_ENV] = "1" if os.environ.get(HIDE_ANSWERS_ENV) == "1" else "0"
    cache = shared_bytecode()   # trusted, and it writes none: it may read the runs' cache
    if cache is not None:
        env[PREFIX_ENV] = str(cache)
    shared_env, shared_fds = forks.share() if forks is not None else ({}, ())
    if shared is not None:
        env[SHARED_RUNS_ENV], env[SHARED_RUNS_KEY_ENV] = str(shared[0]), shared[1]
    env.update(shared_env)
    with tempfile.TemporaryDirectory(prefix="pdl-grade-") as cwd:
        try:
            done = subprocess.run(checks_command(assignment, submission, results, timeout,
                                                 rubrics_dir),
                                  cwd=cwd, env=env, capture_output=True, text=True,
                                  timeout=ASSIGNMENT_TIMEOUT_S, pass_fds=shared_fds)
        except subprocess.TimeoutExpired:
            return None, (f"grading {assignment} took longer than {ASSIGNMENT_TIMEOUT_S} s and "
                          "was stopped")
    output = done.stdout + done.stderr
    (out / check_log_file(assignment)).write_text(output, encoding="utf-8")
    loaded = read_json(results) if results.exists() else None
    if not isinstance(loaded, dict):
        return None, (f"the checks of {assignment} could not run (pytest exit "
                      f"{done.returncode}):\n{last_lines(output, 8)}")
    return loaded, None


def scan_source_and_groups(submission: Path, out: Path) -> tuple[list, list | None]:
    """(scan_source's findings, the assignments whose files run together: None where the scan
    did not finish)."""
    from grader.integrity.contained import scan_and_group_contained
    # In a child of its own with a memory limit: a file built to blow the scan's memory holds
    # this submission's points, and nothing else (grader/integrity/contained.py).
    findings, groups = (scan_and_group_contained(submission) if Path(submission).is_dir()
                        else ([], []))
    save_findings(out, findings)
    return findings, groups


def scan_source(submission: Path, out: Path, *, reuse: bool = False) -> list:
    """The static integrity scan of the submission's source, kept in out/integrity.json so that
    a re-score uses the same findings without the submission (`reuse`: read it back if there)."""
    if reuse:
        kept = load_findings(out)
        if kept is not None:
            return kept
    return scan_source_and_groups(submission, out)[0]


def hardware_for(rubrics: Mapping[str, Rubric], assignments: Sequence[str]) -> dict:
    """Real GPUs when the machine has as many as the graded rubrics need, else virtual ones."""
    needed = max((rubrics[a].gpus for a in assignments if a in rubrics), default=0)
    found = real_gpu_count()
    if found and found >= needed:
        return hardware_info("real", found, real_gpu_names(found))
    return hardware_info("virtual", needed)
