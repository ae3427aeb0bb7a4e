"""`pdl-grade grade` from the command line, with a relative --out, as the README runs it."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def graded_from_the_command_line(tmp_path_factory, request):
    """`pdl-grade grade reference --out out-rel` (relative: the folder it is run in) of
    Practicals 4 and 5, run once for the two tests below. Where a fork server can run,
    PDL_FORK_SERVER=require fails any run that falls back to a fresh interpreter."""
    try:
        request.getfixturevalue("cgroups")   # skips where no fork server can run (no sandbox)
        fresh_allowed = ""
    except pytest.skip.Exception as why:
        fresh_allowed = str(why) or "no fork server can run here"
    folder = tmp_path_factory.mktemp("graded-cli")
    env = dict(os.environ, **({} if fresh_allowed else {"PDL_FORK_SERVER": "require"}))
    done = subprocess.run([sys.executable, "-m", "grader", "grade", str(ROOT / "reference"),
                           "--out", "out-rel", "--assignment", "practical4", "--assignment",
                           "practical5"], cwd=folder, env=env, capture_output=True, text=True,
                          timeout=300)
    return done, folder / "out-rel", fresh_allowed   # why runs may start fresh: "" where none may


def test_relative_out_folder_and_exit_status(graded_from_the_command_line):
    done, out, _ = graded_from_the_command_line
    assert done.returncode == 0, done.stderr
    result = json.loads((out / "result.json").read_text())
    # Every automatic point; the written answers (2.5 points of manual items) wait for a person.
    practical4 = next(a for a in result["assignments"] if a["id"] == "practical4")
    assert result["errors"] == [] and (practical4["score"], practical4["max_score"]) == (9.5, 12.0)
    assert any(line.startswith("practical4") and "9.5 / 12" in line
               for line in done.stdout.splitlines()), done.stdout


def test_every_run_of_a_grading_is_forked_from_the_submissions_server(
        graded_from_the_command_line):
    # The fork server pdl-grade starts for the submission must serve every assignment's
    # checks process (a server started from a thread that then ended died with it, unseen:
    # only slower).
    done, out, fresh_allowed = graded_from_the_command_line
    if fresh_allowed:
        pytest.skip(fresh_allowed)
    assert done.returncode == 0, done.stderr
    result = json.loads((out / "result.json").read_text())
    assert result["errors"] == [] and (result["score"], result["max_score"]) == (18.75, 24.0), (
        "expected the reference's automatic points with every run forked; see "
        f"{out}/checks-*.log for 'could not be forked'")


def test_a_held_assignment_says_so_on_the_console(pdl_grade, tmp_path, monkeypatch):
    """`pdl-grade grade` printed a held assignment as "0 / 12  graded": the withheld points
    and the hold were only in report.md (a student read the 0 as their grade)."""
    import grader.grading
    held = {"id": "practical5", "score": 0, "max_score": 12, "status": "graded",
            "integrity": {"withheld": True, "withheld_points": 9.25, "problems": ["..."]}}
    result = {"assignments": [held], "score": 0, "max_score": 12, "pending_points": 2.75}
    monkeypatch.setattr(grader.grading, "grade_submission", lambda *a, **k: result)
    (tmp_path / "practical5").mkdir()
    run = pdl_grade("grade", tmp_path, "--out", tmp_path / "out", "--assignment", "practical5")
    line = next(line for line in run.out.splitlines() if line.startswith("practical5"))
    assert "held for review: the checks gave 9.25, withheld until the course staff look" in line, (
        f"expected the hold beside the 0; observed {line!r} (grader/cli/grade.py)")


def test_the_total_line_names_answers_waiting_to_be_read_apart_from_written_ones(
        pdl_grade, tmp_path, monkeypatch):
    """An answer found but not read waits for a person (grader/scoring/score.py); the console
    had called all the waiting points "written answers"."""
    import grader.grading
    task1 = {"id": "hw3.task1", "kind": "auto", "score": 1, "max_score": 2, "status": "pending",
             "pending_points": 1}
    hw3 = {"id": "hw3", "score": 9.5, "max_score": 15, "status": "graded", "items": [task1]}
    result = {"assignments": [hw3], "score": 9.5, "max_score": 15, "pending_points": 5.5}
    monkeypatch.setattr(grader.grading, "grade_submission", lambda *a, **k: result)
    (tmp_path / "hw3").mkdir()
    run = pdl_grade("grade", tmp_path, "--out", tmp_path / "out", "--assignment", "hw3")
    line = next(line for line in run.out.splitlines() if line.startswith("total"))
    assert ("(written answers worth 4.5, and answers the grader found but could not read worth "
            "1 of the 15 points are still for a person to grade)") in line, line


def test_the_fork_server_preloads_training_only_where_an_assignment_trains(monkeypatch, tmp_path):
    # A rubric's `trains` (rubrics/README.md): Practical 4 alone does not. Each assignment of the
    # reference has a server of its own (its runs see its own folder only, grader/grading/
    # views.py): Practical 4's preloads nothing of training beside hw3's, which does.
    from grader.grading import run as grading_run
    from grader.scoring import load_rubrics
    asked = []
    monkeypatch.setattr(grading_run, "start_fork_server_quietly",
                        lambda submission, training, apart: asked[-1].append(training))
    monkeypatch.setattr(grading_run, "scan_source_and_groups", lambda submission, out: (
        [], [frozenset({name}) for name in ("hw3", "practical4", "practical5")]))
    monkeypatch.setattr(grading_run, "run_checks", lambda *args, **kwargs: (None, "not run"))
    rubrics = load_rubrics()
    for n, assignments in enumerate((["practical4"], ["practical4", "hw3"], ["practical5"])):
        asked.append([])
        grading_run.run_submission(ROOT / "reference", tmp_path / str(n), rubrics, assignments)
    assert asked == [[False], [False, True], [True]], (
        "expected one server per assignment, preloading training where it trains; observed "
        f"the servers' `training` per grading: {asked}")
