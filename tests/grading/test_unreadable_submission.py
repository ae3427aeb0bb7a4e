"""adv34 F5: `pdl-grade grade` on a folder only its owner can read (what `unzip` gives a TA whose
umask is 077). As root every run drops to the sandbox's unprivileged user: the reference
Practical 4 had been graded 0/12 "graded", its report blaming a PermissionError on the
student's code, where the batch (which copies uploads readable) gave 9.5."""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import grader.grading.readable as readable
from grader.grading.raw import RawRun
from grader.grading.readable import closed_parts, readable_submission

ROOT = Path(__file__).resolve().parents[2]


def umask_077_upload(folder: Path) -> Path:
    """A student's Practical 4 as unzip leaves it under umask 077, with a helper script kept
    executable and a link to the answers (links stay links)."""
    code = folder / "practical4"
    code.mkdir(parents=True)
    (code / "concepts.py").write_text("import answers_helper\nprint('ran')\n")
    (code / "answers.yaml").write_text("part2:\n  same_result: true\n")
    (code / "run.sh").write_text("#!/bin/sh\npython3 concepts.py\n")
    os.symlink("answers.yaml", code / "answers_link.yaml")
    for path in [folder, code, *code.iterdir()]:
        if not path.is_symlink():
            path.chmod(0o700 if path.is_dir() or path.name == "run.sh" else 0o600)
    return folder


def modes(tree: Path) -> dict[str, str]:
    return {p.relative_to(tree).as_posix(): oct(stat.S_IMODE(p.lstat().st_mode))
            for p in sorted(tree.rglob("*")) if not p.is_symlink()}


def test_closed_parts_are_those_others_cannot_read_or_enter(tmp_path):
    upload = umask_077_upload(tmp_path / "sub")
    closed = {p.relative_to(upload).as_posix() for p in closed_parts(upload, by_others=True)}
    assert closed == {".", "practical4", "practical4/concepts.py", "practical4/answers.yaml",
                      "practical4/run.sh"}, (
        f"expected every 0600 file and 0700 folder (never the link); observed {sorted(closed)}")


def test_as_root_the_runs_read_a_private_copy_with_the_batchs_modes(tmp_path, monkeypatch):
    monkeypatch.setattr(readable, "runs_as_root", lambda: True)
    upload = umask_077_upload(tmp_path / "sub")
    with readable_submission(upload) as copy:
        assert copy != upload and copy.name == "sub", copy
        assert not closed_parts(copy, by_others=True), (
            f"expected a copy others (the sandbox's user) can read; observed {modes(copy)}")
        assert stat.S_IMODE(copy.stat().st_mode) == 0o755
        assert modes(copy) == {"practical4": "0o755", "practical4/answers.yaml": "0o644",
                               "practical4/concepts.py": "0o644", "practical4/run.sh": "0o755"}
        assert (copy / "practical4/concepts.py").read_bytes() == \
            (upload / "practical4/concepts.py").read_bytes()
        assert os.readlink(copy / "practical4/answers_link.yaml") == "answers.yaml"
        assert (copy / "practical4/concepts.py").stat().st_mtime_ns == \
            (upload / "practical4/concepts.py").stat().st_mtime_ns
    assert not copy.exists(), "the private copy must be removed after the grading"
    assert stat.S_IMODE((upload / "practical4/concepts.py").stat().st_mode) == 0o600, (
        "the instructor's folder itself is never changed")


def test_a_readable_folder_is_graded_where_it_is(tmp_path, monkeypatch):
    monkeypatch.setattr(readable, "runs_as_root", lambda: True)
    upload = umask_077_upload(tmp_path / "sub")
    subprocess.run(["chmod", "-R", "a+rX", str(upload)], check=True)
    with readable_submission(upload) as graded:
        assert graded == upload, "no copy where the runs can read the folder"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file: nothing is closed to it")
def test_a_folder_the_grader_cannot_read_is_refused_not_graded(tmp_path, pdl_grade):
    upload = umask_077_upload(tmp_path / "sub")
    (upload / "practical4" / "concepts.py").chmod(0)
    run = pdl_grade("grade", upload, "--out", tmp_path / "out", "--assignment", "practical4")
    assert run.code == 2 and "not readable by the grader (practical4/concepts.py)" in run.err \
        and "chmod -R a+rX" in run.err, (run.code, run.err)
    assert not (tmp_path / "out" / "result.json").exists(), "no grade, no zero"


def test_a_file_closed_to_a_grader_not_root_is_refused_with_what_to_do(tmp_path, pdl_grade,
                                                                       monkeypatch):
    """The same refusal wherever the tests run (root reads everything: its access is faked)."""
    monkeypatch.setattr(readable, "runs_as_root", lambda: False)
    real_access = os.access
    monkeypatch.setattr(readable.os, "access", lambda path, mode: not str(path).endswith(
        "concepts.py") and real_access(path, mode))
    upload = umask_077_upload(tmp_path / "sub")
    run = pdl_grade("grade", upload, "--out", tmp_path / "out", "--assignment", "practical4")
    assert run.code == 2 and "not readable by the grader (practical4/concepts.py)" in run.err \
        and "chmod -R a+rX" in run.err, (run.code, run.err)
    assert not (tmp_path / "out" / "result.json").exists(), "no grade, no zero"
    run = pdl_grade("check", "practical4", "--submission", upload, "--out", tmp_path / "mine")
    assert run.code == 2 and "pdl-grade check: " in run.err and "chmod -R a+rX" in run.err, (
        f"expected pdl-grade check to refuse the same way; observed {run.code} {run.err}")


def test_the_grading_runs_on_the_copy_and_records_the_folder_named(tmp_path, monkeypatch):
    """grade_submission hands the runs the readable copy; run.json and result.json name the
    instructor's folder (the copy is gone)."""
    import grader.grading.grade as grade
    monkeypatch.setattr(readable, "runs_as_root", lambda: True)
    upload = umask_077_upload(tmp_path / "sub")
    seen = []

    def run_submission(submission, out, rubrics, assignments, **options):
        seen.append((submission, closed_parts(submission, by_others=True)))
        out.mkdir(parents=True, exist_ok=True)
        run = RawRun(str(submission), [], started_at="2026-05-01T12:00:00+00:00")
        run.save(out)   # nothing run: fast
        return run
    monkeypatch.setattr(grade, "run_submission", run_submission)
    result = grade.grade_submission(upload, tmp_path / "out", ["practical4"])
    (ran_on, closed), = seen
    assert ran_on != upload.resolve() and closed == [], (
        f"expected the runs given a copy the sandbox's user reads; observed {ran_on} with "
        f"{closed} closed (grader/grading/readable.py)")
    run_json = json.loads((tmp_path / "out" / "run.json").read_text())
    assert result["submission"] == run_json["submission"] == str(upload.resolve())


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0,
                    reason="only as root do the runs drop to another user (the sandbox's)")
def test_the_reference_unzipped_under_umask_077_gets_the_batchs_grade(tmp_path):
    upload = tmp_path / "sub"
    shutil.copytree(ROOT / "reference" / "practical4", upload / "practical4")
    subprocess.run(["chmod", "-R", "go-rwx", str(upload)], check=True)
    done = subprocess.run([sys.executable, "-m", "grader", "grade", str(upload), "--out",
                           str(tmp_path / "out"), "--assignment", "practical4"],
                          capture_output=True, text=True, timeout=300)
    result = json.loads((tmp_path / "out" / "result.json").read_text())
    assert (done.returncode, result["score"]) == (0, 9.5), (
        f"expected the reference's 9.5 (the batch's grade); observed exit {done.returncode}, "
        f"{result['score']}; see {tmp_path / 'out'}/report.md\n{done.stdout}{done.stderr}")
