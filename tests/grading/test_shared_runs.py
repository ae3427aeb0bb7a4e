"""A run two assignments of one grading make alike, in one view, is made once (shared_runs.py):
Practical 6's Part 6 reruns practical5_dp.py on 2 GPUs exactly as Practical 5's checks ran it."""
from pathlib import Path

import pytest

from grader.checks import conftest as checks_conftest
from grader.checks.shared_runs import SHARED_RUNS_ENV, SHARED_RUNS_KEY_ENV, SharedRuns
from grader.grading import run as grading_run
from grader.harness.execute import run_environment
from grader.harness.observation import Observation

DP = "practical5/practical5_dp.py"
DP_SETS = {"BATCH_SIZE": 64}


@pytest.fixture
def made(monkeypatch):
    """The runs actually started (script, GPUs); each returns a finished Observation."""
    calls = []

    def fake_run_script(submission, script, **options):
        calls.append((script, options["gpus"]))
        return Observation(script=script, gpus=options["gpus"], sets=dict(options["sets"] or {}),
                           returncode=0, stdout=f"run {len(calls)}\n",
                           events=[{"event": "step", "rank": 0, "grads": {"sumsq": 1.5}}])

    monkeypatch.setattr(checks_conftest, "run_script", fake_run_script)
    monkeypatch.setattr(checks_conftest, "real_gpu_count", lambda: 0)
    return calls


def assignment_runs(monkeypatch, tmp_path, folder: Path | None, key: str = "k" * 64):
    """The ScriptRuns of one assignment's checks process, in the grading's `folder` of its view."""
    if folder is None:
        monkeypatch.delenv(SHARED_RUNS_ENV, raising=False)
    else:
        folder.mkdir(parents=True, exist_ok=True)
        monkeypatch.setenv(SHARED_RUNS_ENV, str(folder))
        monkeypatch.setenv(SHARED_RUNS_KEY_ENV, key)
    scratch = tmp_path / f"scratch-{len(list(tmp_path.iterdir()))}"
    scratch.mkdir()
    return checks_conftest.ScriptRuns(Path("sub"), scratch, 10.0, 5)


def dp_run(runs):
    """As both Practical 5 (HandoutRuns.dp(2)) and Practical 6 (dp_run) ask for it."""
    observation = runs.script(DP, gpus=2, sets=DP_SETS)
    runs.close()
    return observation


def test_a_later_assignment_reads_the_run_an_earlier_one_made_in_its_view(made, monkeypatch,
                                                                          tmp_path):
    view = tmp_path / "shared" / "view"
    practical5 = dp_run(assignment_runs(monkeypatch, tmp_path, view))
    practical6 = dp_run(assignment_runs(monkeypatch, tmp_path, view))
    assert made == [(DP, 2)], (
        f"expected practical5_dp.py on 2 GPUs started once for both assignments, observed "
        f"{made}: look at ScriptRuns._shared and SharedRuns.load in grader/checks/shared_runs.py")
    assert practical6 == practical5 and practical6.stdout == "run 1\n", (
        "expected Practical 6 to read the very run Practical 5 made (same stdout, same trace), "
        f"observed {practical6!r}")


def test_another_view_or_configuration_or_no_grading_makes_its_own_run(made, monkeypatch,
                                                                         tmp_path):
    shared = tmp_path / "shared"
    dp_run(assignment_runs(monkeypatch, tmp_path, shared / "view-a"))
    dp_run(assignment_runs(monkeypatch, tmp_path, shared / "view-b"))   # other folders hidden
    runs = assignment_runs(monkeypatch, tmp_path, shared / "view-a")
    runs.script(DP, gpus=3, sets=DP_SETS)                                 # another node
    runs.close()
    dp_run(assignment_runs(monkeypatch, tmp_path, None))                  # the repo's tests
    assert made == [(DP, 2), (DP, 2), (DP, 3), (DP, 2)], (
        f"expected a run of its own for another view, another node and outside a grading, "
        f"observed only {made}: a run is shared only under its view's folder and its run key")


def test_a_kept_run_not_sealed_with_the_gradings_key_is_made_again(made, monkeypatch, tmp_path):
    view = tmp_path / "shared" / "view"
    dp_run(assignment_runs(monkeypatch, tmp_path, view))
    # What a run with the folder in reach could leave: its own Observation, or the kept file
    # overwritten; the seal is a key only the grading's processes hold.
    forged = SharedRuns(view, b"guessed")
    [kept] = list(view.glob("*.run"))
    kept.unlink()
    key = (DP, 2, 1, "python", tuple(sorted(DP_SETS.items())), (), (), False)
    forged.keep(key, Observation(script=DP, gpus=2, returncode=0, stdout="forged\n"))
    assert kept.exists(), "the forged file should land where the kept run was (same run key)"
    again = dp_run(assignment_runs(monkeypatch, tmp_path, view))
    assert again.stdout != "forged\n" and len(made) == 2, (
        f"expected the forged run ignored and the run made again, observed {again.stdout!r} "
        f"after runs {made}: SharedRuns.load must check the seal")


def test_a_run_that_did_not_finish_is_not_kept(made, monkeypatch, tmp_path):
    view = tmp_path / "shared" / "view"
    view.mkdir(parents=True)
    shared = SharedRuns(view, b"k")
    shared.keep(("a",), Observation(script=DP, gpus=2, timed_out=True))
    shared.keep(("b",), Observation(script=DP, gpus=2, not_run="2 other runs hung"))
    assert not list(view.iterdir()), (
        "expected no run kept of one that timed out or was never started (a later assignment "
        f"makes it itself, as before), observed {sorted(p.name for p in view.iterdir())}")


def test_the_key_reaches_the_checks_never_a_run(monkeypatch, tmp_path):
    seen = {}

    def fake_run(argv, **options):
        seen.update(options["env"])
        raise grading_run.subprocess.TimeoutExpired(argv, 1)

    monkeypatch.setattr(grading_run.subprocess, "run", fake_run)
    folder = grading_run.view_folder(tmp_path, frozenset({tmp_path / "hw3"}))
    grading_run.run_checks("practical6", tmp_path, tmp_path, 10.0, shared=(folder, "s3cret"))
    assert seen[SHARED_RUNS_ENV] == str(folder) and seen[SHARED_RUNS_KEY_ENV] == "s3cret", (
        "expected the checks' process given the view's folder and the grading's key, observed "
        f"{ {k: v for k, v in seen.items() if k.startswith('PDL_SHARED')} }")
    monkeypatch.setenv(SHARED_RUNS_KEY_ENV, "s3cret")
    assert "s3cret" not in run_environment(tmp_path, 2).values(), (
        "expected a run's environment (execute.run_environment) never to hold the seal's key")
