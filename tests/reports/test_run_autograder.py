"""gradescope/run_autograder against a temporary folder standing in for /autograder."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from test_gradescope import validate

REPO = Path(__file__).resolve().parents[2]
RUN_AUTOGRADER = REPO / "gradescope" / "run_autograder"
FORGED = {"score": 100.0, "tests": [], "output": "forged by the submission"}


def autograder_root(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    (root / "results").mkdir()
    for name, text in files.items():
        path = root / "submission" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / "submission_metadata.json").write_text(json.dumps(
        {"created_at": "2026-05-01T10:00:00.000000-07:00", "users": [{"name": "A"}],
         "assignment": {"due_date": "2026-05-02T23:59:00.000000-07:00"}}))
    # What a submission (or a leftover) could have put there: must never be published.
    (root / "results" / "results.json").write_text(json.dumps(FORGED))
    return root


def environment(root: Path, fake_bin: Path | None = None, **extra: str) -> dict:
    env = dict(os.environ)
    env.update(AUTOGRADER_ROOT=str(root), PDL_GRADER_DIR=str(REPO), PDL_PYTHON=sys.executable,
               PDL_ASSIGNMENTS="hw3")
    env.update(extra)
    env.pop("PDL_GRADE", None)
    if fake_bin:   # the fake `pdl-grade` on PATH stands for the grader
        env["PATH"] = f"{fake_bin}{os.pathsep}{env['PATH']}"
        env["PDL_GRADE"] = "pdl-grade"
    return env


def fake_pdl_grade(tmp_path: Path, body: str) -> Path:
    """A `pdl-grade` on PATH that behaves as `body` says (a crash, a hang)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    script = folder / "pdl-grade"
    script.write_text("#!/usr/bin/env bash\n" + body)
    script.chmod(0o755)
    return folder


def published(root: Path) -> dict:
    results = json.loads((root / "results" / "results.json").read_text())
    validate(results)
    assert results != FORGED
    return results


def test_crash_writes_score_zero_with_the_error(tmp_path):
    root = autograder_root(tmp_path, {"hw3/model_parallel.py": "x = 1\n"})
    crash = fake_pdl_grade(tmp_path, f"""
echo '{json.dumps(FORGED)}' > "$AUTOGRADER_ROOT/results/results.json"
echo 'Traceback (most recent call last):' >&2
echo 'RuntimeError: rubric hw3 exploded <b>here</b>' >&2
exit 3
""")
    done = subprocess.run([str(RUN_AUTOGRADER)], env=environment(root, crash),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    results = published(root)
    assert results["score"] == 0 and results["tests"] == []
    assert "pdl-grade grade failed (exit status 3)" in results["output"]
    assert "RuntimeError: rubric hw3 exploded <b>here</b>" in results["output"]
    # The log tail is quoted inside a code block, never as Markdown/HTML.
    before = results["output"].split("RuntimeError")[0]
    assert before.count("```") % 2 == 1
    assert results["extra_data"] == {"error": "pdl-grade grade failed (exit status 3)"}
    # Shown at once (a student learns of it before the deadline), the log kept for the staff.
    assert (results["visibility"], results["stdout_visibility"]) == ("visible", "hidden")


def test_results_are_valid_even_without_a_working_python(tmp_path):
    root = autograder_root(tmp_path, {"model_parallel.py": "x = 1\n"})
    env = environment(root, fake_pdl_grade(tmp_path, "exit 0\n"), PDL_PYTHON=str(tmp_path / "no-python"))
    subprocess.run([str(RUN_AUTOGRADER)], env=env, capture_output=True, text=True, timeout=60)
    results = published(root)
    assert results["score"] == 0 and "crashed" in results["output"]


def test_stopped_grading_still_publishes(tmp_path):
    root = autograder_root(tmp_path, {"model_parallel.py": "x = 1\n"})
    hang = fake_pdl_grade(tmp_path, "sleep 60\n")
    work = tmp_path / "work"
    work.mkdir()
    process = subprocess.Popen([str(RUN_AUTOGRADER)], env=environment(root, hang, TMPDIR=str(work)),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    started = False
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not started:   # until the (fake) grader runs
        started = any("grading hw3" in p.read_text() for p in work.glob("*/grading.log"))
        time.sleep(0.1)
    assert started
    process.send_signal(signal.SIGTERM)
    process.communicate(timeout=20)
    results = published(root)
    assert results["score"] == 0
    assert "stopped before grading finished" in results["output"]


def test_real_grader_on_a_loose_file_upload(tmp_path):
    """The real grader on the reference Practical 4, uploaded as loose files. By default it
    runs from the source (`python -m grader`), never a `pdl-grade` on PATH: a non-editable
    install's console script has no rubrics/ beside it (every upload scored 0 on Gradescope)."""
    files = {p.name: p.read_text() for p in sorted((REPO / "reference" / "practical4").iterdir())
             if p.suffix in (".py", ".yaml")}  # the code and its answer sheet
    root = autograder_root(tmp_path, files)
    installed = fake_pdl_grade(tmp_path, "echo 'pdl-grade: no rubric for practical4; the "
                                         "assignments are ' >&2\nexit 2\n")
    env = environment(root, PDL_ASSIGNMENTS="practical4")
    env["PATH"] = f"{installed}{os.pathsep}{env['PATH']}"
    done = subprocess.run([str(RUN_AUTOGRADER)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    results = published(root)
    # Every automatic point (9.5); the written answers (2.5) wait for a person.
    assert results["score"] == 9.5, results["output"]
    assert [t["number"] for t in results["tests"]] == ["1.1", "1.2", "1.3", "1.4"]
    assert all(t["status"] == "passed" for t in results["tests"])
    staged = next(l for l in done.stdout.splitlines() if "practical4/: " in l)  # logged
    assert sorted(staged.split("practical4/: ")[1].split(", ")) == ["answers.yaml", "concepts.py"]
    assert "submitted at: 2026-05-01T10:00:00.000000-07:00" in done.stdout
    assert not list(root.glob("submission/practical4"))        # the upload itself is untouched


def test_staging_finds_the_layout(tmp_path):
    from gradescope.stage_submission import stage
    template = REPO / "student_template"
    nested = tmp_path / "nested"
    (nested / "my-project" / "hw3").mkdir(parents=True)
    (nested / "my-project" / "hw3" / "model_parallel.py").write_text("a = 1\n")
    stage(nested, tmp_path / "out1", template, ["hw3"])
    assert (tmp_path / "out1" / "hw3" / "model_parallel.py").read_text() == "a = 1\n"

    loose = tmp_path / "loose"
    loose.mkdir()
    for name in ("model_parallel.py", "concepts.py", "notes.txt"):
        (loose / name).write_text(name)
    notes = stage(loose, tmp_path / "out2", template, ["hw3", "practical4"])
    assert sorted(p.name for p in (tmp_path / "out2" / "hw3").iterdir()) == ["model_parallel.py"]
    assert sorted(p.name for p in (tmp_path / "out2" / "practical4").iterdir()) == ["concepts.py"]
    assert "hw3/: model_parallel.py" in notes


def test_setup_script_parses():
    for script in ("setup.sh", "run_autograder"):
        subprocess.run(["bash", "-n", str(REPO / "gradescope" / script)], check=True)
    assert os.access(REPO / "gradescope" / "run_autograder", os.X_OK)


def test_zip_has_the_scripts_at_its_root_and_no_solutions(tmp_path):
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("needs the git checkout (the zip lists git-tracked files)")
    from gradescope.build_zip import build
    with zipfile.ZipFile(build(tmp_path / "autograder.zip", "hw3 practical4")) as archive:
        names = set(archive.namelist())
        assert {"setup.sh", "run_autograder", "grader/cli/__init__.py", "rubrics/hw3.yaml",
                "student_template/hw3/model_parallel.py", "pyproject.toml"} <= names
        assert not any(n.startswith(("reference/", "tests/", "benchmarks/")) for n in names)
        assert archive.getinfo("run_autograder").external_attr >> 16 & 0o111
        assert "${PDL_ASSIGNMENTS:-hw3 practical4}" in archive.read("run_autograder").decode()


def test_a_grading_problem_is_published_as_no_grade_not_as_a_crash(tmp_path):
    # `pdl-grade grade` exits 3 where it failed to grade an assignment (grader/common/
    # exit_codes.py), its result.json written: the results say which, with no points for it.
    from grader.scoring import build_result, load_rubrics, score_assignment
    from tests.support.fake_graders import fake_report
    hw3 = load_rubrics()["hw3"]
    report = fake_report(hw3, 10)
    broken = hw3.check_ids[0]
    report["tests"] = [t for t in report["tests"] if t["metadata"]["check"] != broken]
    graded = tmp_path / "graded.json"
    graded.write_text(json.dumps(build_result("submission", [score_assignment(hw3, report)])))
    root = autograder_root(tmp_path, {"hw3/model_parallel.py": "x = 1\n"})
    problem = fake_pdl_grade(tmp_path, f"""
while [[ $# -gt 0 ]]; do [[ $1 == --out ]] && out=$2; shift; done
mkdir -p "$out" && cp {graded} "$out/result.json"
exit 3
""")
    done = subprocess.run([str(RUN_AUTOGRADER)], env=environment(root, problem),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    results = published(root)
    assert "pdl-grade grade failed" not in results["output"] and "error" not in results["extra_data"], \
        results["output"]
    assert "**Not graded: a grading problem**" in results["output"]
    assert results["tests"] == [] and results["score"] == 0
