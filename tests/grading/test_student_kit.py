"""The student kit: what students get holds no solutions and no staff guidance, installs with
one pip command, and its `pdl-grade check` grades the template there, never writing the
staff's view."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from grader.scoring import load_rubrics
from grader.student_kit import build_kit

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def kit(tmp_path_factory) -> Path:
    return build_kit(tmp_path_factory.mktemp("kit") / "pdl-student-kit")


def files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def test_the_kit_leaves_out_the_staffs_material(kit):
    names = files(kit)
    assert not [n for n in names if n.startswith("reference") or "/reference/" in n]
    assert not [n for n in names if "report.pdf" in n or n.endswith("REPORT.md")]
    for staff in ("grader/batch/", "grader/cluster/", "grader/reports/instructor.py",
                  "grader/reports/templates/instructor.md.j2", "grader/student_kit.py", "tests/",
                  "gradescope/"):
        assert not [n for n in names if n.startswith(staff)], staff
    # No model answer anywhere: every rubric's guidance text is absent from every file.
    guidance = [item.guidance for rubric in load_rubrics().values() for item in rubric.items
                if item.guidance]
    assert guidance
    for name in names:
        text = (kit / name).read_text(encoding="utf-8", errors="replace")
        assert not [g for g in guidance if g[:60] in text], name


def test_the_kits_rubrics_keep_points_and_feedback_without_guidance(kit):
    staff = load_rubrics()
    ours = load_rubrics(kit / "grader" / "data" / "rubrics")
    assert list(ours) == list(staff)
    for assignment, rubric in ours.items():
        raw = yaml.safe_load((kit / "grader" / "data" / "rubrics" / f"{assignment}.yaml").read_text())
        assert all("guidance" not in item for item in raw["items"])
        assert rubric.total_points == staff[assignment].total_points
        assert [(i.id, i.points, i.feedback) for i in rubric.items] == \
               [(i.id, i.points, i.feedback) for i in staff[assignment].items]


def test_the_kit_is_the_student_edition_with_the_template(kit):
    assert "STUDENT_KIT = True" in (kit / "grader" / "edition.py").read_text()
    assert files(kit / "student_template") == [n for n in files(ROOT / "student_template")
                                               if "__pycache__" not in n]
    assert "pdl-grade check" in (kit / "README.md").read_text()
    assert 'name = "pdl-student-kit"' in (kit / "pyproject.toml").read_text()


def test_what_the_graders_messages_send_a_student_to_read_is_in_the_kit(kit):
    """A student's day: `pdl-grade run` sent them to "How the simulated clock works" and
    `--trace` to docs/trace-format.md, neither of which the kit had."""
    from grader.vgpu import step_report
    readme = (kit / "README.md").read_text()
    assert "## How the simulated clock works" in readme and "Asynchronous launches" in readme
    said = Path(step_report.__file__).read_text()
    assert "README.md, 'How the simulated clock works'" in said
    assert (kit / "docs" / "trace-format.md").read_text() == \
        (ROOT / "docs" / "trace-format.md").read_text()


def test_the_base_code_task_1_runs_is_found_in_the_installed_kit(kit):
    """Installed by pip, the kit holds the template inside grader/data/: Task 1 had looked
    beside the package and errored for every student (a student's day: 8.5 of 10.5)."""
    checks = kit / "grader" / "checks" / "test_hw3.py"
    source = checks.read_text()
    assert 'BASE_CODE = data_folder("student_template") / "hw3" / "model_parallel.py"' in source
    assert (kit / "grader" / "data" / "student_template" / "hw3" / "model_parallel.py").is_file()


def test_the_kit_builds_its_own_c_path_and_carries_none_built_here(kit):
    """The virtual node's C part travels as source with its optional build (a laptop without
    a compiler installs the kit all the same, on the Python path); this machine's build does
    not travel (another Python or OS could not load it)."""
    names = files(kit)
    assert "setup.py" in names and "grader/vgpu/_fastpath.c" in names
    assert "optional=True" in (kit / "setup.py").read_text()
    assert not [n for n in names if n.endswith((".so", ".pyd"))]


def test_a_kit_is_built_into_a_new_folder_only(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "build_student_kit.py"),
                           str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "exists" in done.stderr


@pytest.mark.slow
def test_installed_in_a_fresh_venv_it_checks_the_template(kit, tmp_path):
    venv = tmp_path / "venv"
    # The system's pip runs in the venv and installs there (ensurepip's own copy of pip had
    # cost a quarter of this test); a system without one gets ensurepip's.
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip",
                    str(venv)], check=True, timeout=300)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}   # only what pip installed
    bin_dir = venv / "bin"
    if subprocess.run([str(bin_dir / "python"), "-m", "pip", "--version"], env=env,
                      capture_output=True, timeout=120).returncode != 0:
        subprocess.run([str(bin_dir / "python"), "-m", "ensurepip", "-q"], env=env, check=True,
                       timeout=300)
    install = subprocess.run([str(bin_dir / "python"), "-m", "pip", "install", "-q", str(kit)],
                             env=env, capture_output=True, text=True, timeout=600)
    assert install.returncode == 0, install.stdout + install.stderr
    where = subprocess.run([str(bin_dir / "python"), "-c", "import grader; print(grader.__file__)"],
                           env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert where.stdout.startswith(str(venv)), where.stdout + where.stderr
    if shutil.which("gcc") or shutil.which("cc"):  # pip built the C path beside the Python one
        built = subprocess.run([str(bin_dir / "python"), "-c", "from grader.vgpu.c_path import "
                                "c_module; print(c_module() is not None)"], env=env, cwd=tmp_path,
                               capture_output=True, text=True, timeout=120)
        assert built.stdout.strip() == "True", built.stdout + built.stderr

    work = tmp_path / "work"
    work.mkdir()
    mine = work / "mine"
    subprocess.run(["cp", "-r", str(kit / "student_template"), str(mine)], check=True)
    check = subprocess.run([str(bin_dir / "pdl-grade"), "check", "practical4"], env=env, cwd=mine,
                           capture_output=True, text=True, timeout=600)
    assert check.returncode == 1, check.stdout + check.stderr
    assert "practical4: Practical 4" in check.stdout and "0 / 12" in check.stdout
    assert "7 cases of 7 checks failed the same way" in check.stdout

    # HW3 by `pdl-grade grade` (one grading for both what it shows: `check` is above): Task 1
    # runs the base code the kit carries, and the student's edition writes no staff's view.
    graded = tmp_path / "graded"
    grade = subprocess.run([str(bin_dir / "pdl-grade"), "grade", str(mine), "--out", str(graded),
                            "--assignment", "hw3"], env=env, cwd=work,
                           capture_output=True, text=True, timeout=600)
    assert grade.returncode == 0, grade.stdout + grade.stderr
    [hw3] = json.loads((graded / "result.json").read_text())["assignments"]
    task1 = next(item for item in hw3["items"] if item["id"] == "hw3.task1")
    assert hw3["status"] == "graded" and not hw3["errors"], hw3["errors"]
    assert task1["status"] == "failed" and task1["score"] == 0, task1
    assert not [c["id"] for c in task1["checks"] if c["status"] == "error"], task1
    assert (graded / "report.md").is_file() and not (graded / "instructor.md").exists()
    refused = subprocess.run([str(bin_dir / "pdl-grade"), "report", str(graded / "result.json"),
                              "--out", str(graded), "--format", "instructor"], env=env,
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "unknown format" in refused.stderr
    assert not (graded / "instructor.md").exists()
