"""Fixtures of the checks: the submission, and runs of its code on the node (cached per session,
so every check that looks at the same run shares it)."""
from __future__ import annotations

import json
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from grader.answers.collect import collect_answers
from grader.harness.execute import run_hw3_probe, run_script
from grader.checks.hw3_extra_scripts import GRADED_BY_HAND as HELD_BY_HAND
from grader.checks.hw3_extra_scripts import (SPREAD_GPUS, SPREAD_PLAN, held_message, is_held,
                                             not_held_note, not_spread, spread_models_elsewhere)
from grader.checks.hw3_trained_class import GRADED_BY_HAND as UNDECIDED_BY_HAND
from grader.checks.hw3_trained_class import UNDECIDED
from grader.harness.hw3_script_call import SCRIPT, renamed_model_note
from grader.harness.observation import Observation
from grader.sandbox.forked_runs import ForkServer
from grader.checks.shared_runs import SharedRuns
from grader.checks.support import HIDE_ANSWERS_ENV, AnswerNotRead, GradedByHand, must_agree
from grader.common.cpu_share import grading_share, runs_at_once
from grader.common.hardware import real_gpu_count
from grader.harness.course_environment import display_stand_in_notes
from grader.pytest_plugin import (ENVIRONMENT_NOTES, INTEGRITY_NOTES, INTEGRITY_PROBLEMS, check_id,
                                  default_submission)

def pytest_configure(config):
    # `pytest grader/` run by a student: their loop before handing in (grader/checks/support.py);
    # the course's grading sets "0" for its checks. A hook, not an import's side effect: the
    # repo's own tests import this module.
    os.environ.setdefault(HIDE_ANSWERS_ENV, "1")


# A script that did not finish in time this often is not started again: its other
# configurations would hang too (an endless loop at import hangs them all) and each would cost
# a whole budget; their checks fail saying so.
HANGS_BEFORE_GIVING_UP = 2
HW3_SCRIPT = "hw3/model_parallel.py"      # what the HW3 probe imports


class ScriptRuns:
    def __init__(self, submission: Path, scratch: Path, timeout_s: float, default_gpus: int,
                 budgets: dict[str, float] | None = None):
        self.submission = submission
        self.scratch = scratch
        self.timeout_s = timeout_s
        self.default_gpus = default_gpus
        # Per assignment, the time one run may take: the rubric's run_timeout_s, never more
        # than --check-timeout (an endless loop costs its checks, not the batch).
        self.budgets = {a: min(timeout_s, b) for a, b in (budgets or {}).items()}
        self._runs: dict = {}
        self._hung: dict[str, int] = {}
        # The runs handed to the check now running (pytest_runtest_call below), None between
        # checks: a failure of one says where its run stopped, if the check did not.
        self.handed: list[Observation] | None = None
        self._lock = threading.Lock()
        # Runs are separate processes: a module's runs go side by side, as many as this
        # grading's share of the cores keeps busy (grader/common/cpu_share.py).
        self._pool = ThreadPoolExecutor(max_workers=runs_at_once(grading_share()))
        # torch imported once for all of them (grader/sandbox/forked_runs.py): in the fork
        # server `pdl-grade grade` started for this assignment's view of the submission
        # (grader/grading/views.py), else in this grading's.
        self.forks = ForkServer.inherited() or ForkServer(scratch)
        # The runs this grading's other assignments made in the same view, shared with them.
        self.shared = SharedRuns.from_environment()

    def _submit(self, key, work):
        if key not in self._runs:
            self._runs[key] = self._pool.submit(work)
        return self._runs[key]

    def _script_future(self, script, gpus=None, nproc=1, launcher="python", sets=None,
                       edits=(), args=(), like_gpus=None, probe=False, steady=False):
        gpus = gpus or self.default_gpus
        # Virtual when a run it is compared with must be virtual (too few real GPUs for it):
        # real and virtual GPUs draw different random numbers for the same seed.
        virtual = like_gpus is not None and real_gpu_count() >= gpus and real_gpu_count() < like_gpus
        edits = tuple(tuple(edit) for edit in edits)
        key = (script, gpus, nproc, launcher, tuple(sorted((sets or {}).items())), edits,
               tuple(args), virtual) + (("probe",) if probe else ()) + \
            (("steady",) if steady else ())
        return self._submit(key, lambda: self._unless_hung(script, lambda: self._shared(
            key, lambda: run_script(
                self.submission, script, gpus=gpus, nproc=nproc, launcher=launcher, sets=sets,
                edits=list(edits), args=list(args), timeout_s=self.budget(script),
                scratch_root=self.scratch, force_virtual=virtual, forks=self.forks,
                probe=probe, steady=steady)),
            Observation(script=script, gpus=gpus, nproc=nproc, launcher=launcher,
                        sets=dict(sets or {}), args=list(args))))

    def _shared(self, key: tuple, start) -> Observation:
        """The run of `key` another assignment of this grading already made in this view
        (shared_runs.py), else start()'s, kept for the assignments after this one."""
        if self.shared is None:
            return start()
        kept = self.shared.load(key)
        if kept is not None:
            return kept
        observation = start()
        self.shared.keep(key, observation)
        return observation

    def _unless_hung(self, script: str, start, skipped: Observation, probe: bool = False):
        """start() unless `script` already hung HANGS_BEFORE_GIVING_UP times; counts its hangs.
        `probe`: start() is the HW3 probe's, which returns (records, Observation)."""
        with self._lock:
            hung = self._hung.get(script, 0)
        if hung >= HANGS_BEFORE_GIVING_UP:
            skipped.not_run = (f"{hung} other runs of {script} did not finish in time (within "
                               f"{self.budget(script):g} s), so this one was not started")
            return ([], skipped) if probe else skipped
        outcome = start()
        observation = outcome[1] if probe else outcome
        if getattr(observation, "timed_out", False):
            with self._lock:
                self._hung[script] = self._hung.get(script, 0) + 1
        return outcome

    def budget(self, script: str) -> float:
        """Seconds a run of `script` (practical5/x.py: practical5's budget) may take."""
        return self.budgets.get(Path(script).parts[0], self.timeout_s)

    def prefetch(self, *runs: dict) -> None:
        """Start these runs now (keyword sets of `script`), so they overlap."""
        for run in runs:
            self._script_future(**run)

    def script(self, script: str, *, gpus: int | None = None, nproc: int = 1,
               launcher: str = "python", sets: dict | None = None, edits=(), args: tuple = (),
               like_gpus: int | None = None, probe: bool = False, steady: bool = False):
        """One run's Observation, started as `launcher` starts it (`python`, or `torchrun`
        with `nproc` processes, as the course launches the script); `like_gpus=N`: on the
        same kind of GPUs (real or virtual) as a run with N GPUs, for checks that compare the
        numbers of the two; `probe`: a value probe of the run (grader/vgpu/perturb.py);
        `steady`: the model's dropout and batch statistics held still (model_noise.py)."""
        observation = self._script_future(script, gpus, nproc, launcher, sets, edits, args,
                                          like_gpus, probe, steady).result()
        # A probe's stops are the probe's, not what a check of the script's runs reports.
        if self.handed is not None and not probe:
            self.handed.append(observation)
        return observation

    def hw3(self, plan: list[dict], gpus: int, script: str = HW3_SCRIPT):
        # The probe counts its own hangs: it imports the module, it does not run main(), so
        # scripts that hang (too many steps, a deadlock in main) say nothing about it. One run
        # per plan: a second carries what the script's own runs passed the constructor.
        # `script`: another of hw3/'s scripts, where Task 3 may be (hw3_extra_scripts.py).
        key = ("hw3-probe", gpus, json.dumps(plan, sort_keys=True)) + (
            (script,) if script != HW3_SCRIPT else ())
        label = "the HW3 probe" + (f" of {script}" if script != HW3_SCRIPT else "")
        return self._submit(key, lambda: self._unless_hung(
            label, lambda: run_hw3_probe(
                self.submission, [dict(p) for p in plan], gpus=gpus,
                timeout_s=self.budget("hw3") * 2, scratch_root=self.scratch, forks=self.forks,
                script=script),
            Observation(script=script, gpus=gpus), probe=True)).result()

    def _observations(self) -> list[Observation]:
        found = []
        for future in self._runs.values():
            if future.done() and not future.cancelled() and future.exception() is None:
                outcome = future.result()
                found.append(outcome[1] if isinstance(outcome, tuple) else outcome)
        return found

    def environment_notes(self) -> list[str]:
        """What the runs' environment stood in for (a display-only tqdm or matplotlib), and
        a model class the HW3 probe took under another name than the handout's."""
        notes = [note for observation in self._observations()
                 for note in display_stand_in_notes(observation.stderr)]
        notes += [renamed_model_note(record["model_class"],
                                     record.get("handout_class_kept") is True,
                                     bool(record.get("built_beside")))
                  for records in self._probe_records()
                  for record in records if isinstance(record.get("model_class"), str)]
        return list(dict.fromkeys(notes))

    def _probe_records(self) -> list[list[dict]]:
        return [future.result()[0] for key, future in self._runs.items()
                if key[0] == "hw3-probe" and len(key) == 3   # not another script's
                and future.done() and not future.cancelled()
                and future.exception() is None]

    def integrity_problems(self, notes: bool = False) -> list[str]:
        """What the runs left that the grader's instrumentation did not write or found
        replaced (held for review); with `notes`, the unusual but honest things they showed."""
        found = []
        for observation in self._observations():
            seen = observation.integrity_notes if notes else observation.integrity
            found += [p for p in seen if p not in found]
        return found

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        self.forks.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """A check that failed on a run that stopped early (a crash, a hang) says so, where its
    message does not already: a check reading what the run did before it stopped (two chunk
    passes of three, a split but no concatenation) otherwise leaves the student guessing why
    (audit29: the batch-63 run of Practical 4 crashed, its check named only the passes seen)."""
    runs = item.funcargs.get("runs")
    if runs is not None:
        runs.handed = []
    try:
        return (yield)
    except (AnswerNotRead, GradedByHand):
        raise
    except AssertionError as failure:
        undecided = _trained_class_undecided(item)
        if undecided:
            raise GradedByHand(f"{undecided}\nWhat the grader found in {SCRIPT}:\n{failure}",
                               UNDECIDED_BY_HAND) from None
        elsewhere, not_held = _task3_elsewhere(item, runs)
        if elsewhere:
            raise GradedByHand(f"{held_message(elsewhere)}\nWhat the grader found in "
                               f"{SCRIPT}:\n{failure}", HELD_BY_HAND) from None
        if not_held:
            failure.args = (str(failure).rstrip("\n") + not_held_note(not_held),) + \
                failure.args[1:]
        stops = _stops_not_said(str(failure), _runs_of(item, runs))
        if not stops:
            raise
        # The same exception, its message extended: the traceback still points into the check.
        failure.args = (str(failure).rstrip("\n") + "".join(
            f"\nObserved: {stop}" for stop in stops),) + failure.args[1:]
        raise
    finally:
        if runs is not None:
            runs.handed = None


def _task3_elsewhere(item, runs) -> tuple[dict[str, list[str]], dict[str, str]]:
    """For a failed HW3 Task 3-5 check: the scripts beside hw3/model_parallel.py that build a
    model over all GPUs where that script keeps the base code (hw3_extra_scripts.py), each
    built in the sandbox first (`runs`, the session's); and why the others that looked like
    it from their text were not taken (their model did not spread, or could not be built)."""
    if not is_held(check_id(item)):
        return {}, {}
    chosen = item.config.getoption("--submission")
    found = spread_models_elsewhere(Path(chosen) if chosen else default_submission())
    held, not_held = {}, {}
    for path, classes in found.items():
        if runs is None:   # nothing to build it with: its text alone holds nothing
            not_held[path] = "the grader could not build its model"
            continue
        records, run = runs.hw3(SPREAD_PLAN, gpus=SPREAD_GPUS, script=path)
        why = not_spread(records, None if run is None or run.ok else run.problem())
        if why is None:
            held[path] = classes
        else:
            not_held[path] = why
    return held, not_held


def _trained_class_undecided(item) -> str | None:
    """For a failed HW3 Task 3-5 check: why the grader could not tell which of the classes
    main() builds the script trains (hw3_trained_class.py), where it could not."""
    stash = getattr(item.config, "stash", None)
    return stash.get(UNDECIDED, None) if stash is not None and is_held(check_id(item)) else None


def _runs_of(item, runs) -> list[Observation]:
    """The runs a check read: those its fixtures are, and those it asked `runs` for."""
    given = [value for value in item.funcargs.values() if isinstance(value, Observation)]
    return given + list(runs.handed or []) if runs is not None else given


def _stops_not_said(message: str, observations: list[Observation]) -> list[str]:
    stops = []
    for observation in observations:
        problem = None if observation.ok else observation.problem()
        if problem and problem.split("\n")[0] not in message and problem not in stops:
            stops.append(problem)
    return stops


@pytest.fixture(scope="session")
def submission(request) -> Path:
    chosen = request.config.getoption("--submission")
    path = Path(chosen).resolve() if chosen else default_submission().resolve()
    if not path.is_dir():
        raise AssertionError(f"The submission folder {path} does not exist: pass "
                             "--submission PATH (or set PDL_SUBMISSION) to the folder with "
                             "practical4/, practical5/, ..., hw3/ in it.")
    return path


@pytest.fixture(scope="session")
def runs(request, submission, tmp_path_factory):
    from grader.scoring.rubric import load_rubrics
    budgets = {a: r.run_timeout_s for a, r in load_rubrics(request.config.getoption("--rubrics")).items()
               if r.run_timeout_s is not None}
    # Every check names the node it needs; 5 GPUs (HW3's largest) is only the fallback.
    runs = ScriptRuns(submission, tmp_path_factory.mktemp("runs"),
                      request.config.getoption("--check-timeout"), 5, budgets)
    yield runs
    runs.close()
    request.config.stash[INTEGRITY_PROBLEMS] = runs.integrity_problems()
    request.config.stash[INTEGRITY_NOTES] = runs.integrity_problems(notes=True)
    request.config.stash[ENVIRONMENT_NOTES] = runs.environment_notes()


@pytest.fixture(scope="session")
def answer_book(request, submission):
    """The submission's answers per assignment, read once (the PDF in a time-limited child)."""
    from grader.scoring.rubric import load_rubrics
    rubrics = load_rubrics(request.config.getoption("--rubrics"))
    read: dict = {}

    def answers_of(assignment: str):
        if assignment not in read:
            rubric = rubrics.get(assignment)
            read[assignment] = collect_answers(
                submission, assignment, rubric.answers_source if rubric else None)
        return read[assignment]
    return answers_of


@pytest.fixture
def answers(request, answer_book):
    """The answers of the assignment this check belongs to; the first check of an assignment
    that asks for them carries them into result.json (the assignment's `answers`)."""
    assignment = (check_id(request.node) or request.module.__name__).split(".")[0]
    found = answer_book(assignment)
    if not getattr(found, "_recorded", False):
        found._recorded = True
        request.node._pdl_answers = found.to_dict()
    return found


@pytest.fixture
def agree(answers, measured, reported_values, flag):
    """agree(qid, value, truth, observed_in_code, expected=None, compare_as=None): both sides
    go to the reports under `qid`; the check fails (and flags) unless the answer is what the
    code does. `compare_as`: the answer in the form `truth` has (a device name, "yes")."""
    def check(qid, value, truth, observed_in_code, expected=None, compare_as=None):
        measured[qid] = truth
        reported_values[qid] = value
        must_agree(answers, qid, value if compare_as is None else compare_as, truth,
                   expected or str(truth), observed_in_code, flag)
    return check
