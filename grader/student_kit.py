"""Build the student kit: what students get, installable on a laptop with `pip install KIT`.

    python scripts/build_student_kit.py OUT      (OUT is created; it must not exist)

The kit holds the starting code (`student_template/`, to copy and work in), the grader with its
checks, and the rubrics with their points and feedback, so that `pdl-grade check` grades a
student's folder exactly as the course does. It leaves out what is the staff's:

- `reference/` (the solutions and their report), the project's tests, benchmarks, docs;
- the rubrics' `guidance:` (the model answers for written questions): stripped from each rubric,
  which is then validated again;
- the staff's view: the kit's grader never writes instructor.md (grader/edition.py), and has no
  renderer for it, no `pdl-grade batch` (grader/batch, grader/cluster) and no Gradescope upload.

pip installs packages only, so the rubrics and the template's answer sheets travel inside the
package as `grader/data/` (grader/common/locations.py finds them there).
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import yaml

import grader
from grader.common.locations import data_folder
from grader.edition import STAFF_ONLY
from grader.scoring.rubric import load_rubric, load_rubrics

GRADER_PACKAGE = Path(grader.__file__).resolve().parent
# Built files are this machine's: the kit builds its own (the C hot path, where a compiler is).
_JUNK = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", "*.so", "*.pyd")
SETUP = Path(grader.__file__).resolve().parents[1] / "setup.py"
CHECKOUT = Path(grader.__file__).resolve().parents[1]
# What the grader's messages send a student to read: the README's section on the simulated
# clock (`pdl-grade run`'s step report) and the trace format (`pdl-grade run --trace`); a
# student's day found neither in the kit.
CLOCK_SECTION = "## How the simulated clock works"
TRACE_FORMAT = Path("docs") / "trace-format.md"


def build_kit(out: Path) -> Path:
    """Write the kit into `out` (a new folder); return it."""
    out = Path(out)
    if out.exists():
        raise FileExistsError(f"{out} exists; the kit is built into a new folder")
    template = data_folder("student_template")
    shutil.copytree(GRADER_PACKAGE, out / "grader", ignore=_JUNK)
    for part in STAFF_ONLY:
        target = out / "grader" / part
        if target.is_dir():
            shutil.rmtree(target)
        else:
            target.unlink(missing_ok=True)
    _mark_student_edition(out / "grader" / "edition.py")
    shutil.copytree(template, out / "student_template", ignore=_JUNK)
    shutil.copytree(template, out / "grader" / "data" / "student_template", ignore=_JUNK)
    _write_rubrics(data_folder("rubrics"), out / "grader" / "data" / "rubrics")
    (out / "pyproject.toml").write_text(PYPROJECT.format(version=grader.__version__),
                                        encoding="utf-8")
    if SETUP.is_file():  # the optional C part (grader/vgpu/c_path.py); from a checkout only
        shutil.copyfile(SETUP, out / "setup.py")
    (out / "README.md").write_text(README + _clock_section(), encoding="utf-8")
    if (CHECKOUT / TRACE_FORMAT).is_file():
        (out / TRACE_FORMAT).parent.mkdir()
        shutil.copyfile(CHECKOUT / TRACE_FORMAT, out / TRACE_FORMAT)
    return out


def _clock_section() -> str:
    """The checkout README's section on the simulated clock (none built from an install)."""
    readme = CHECKOUT / "README.md"
    text = readme.read_text(encoding="utf-8") if readme.is_file() else ""
    start = text.find(CLOCK_SECTION)
    if start < 0:
        return ""
    end = text.find("\n## ", start + len(CLOCK_SECTION))
    return "\n" + text[start:end if end > 0 else len(text)].rstrip() + "\n"


def _mark_student_edition(edition: Path) -> None:
    text, found = re.subn(r"^STUDENT_KIT = False$", "STUDENT_KIT = True",
                          edition.read_text(encoding="utf-8"), flags=re.M)
    if found != 1:
        raise RuntimeError(f"{edition}: no `STUDENT_KIT = False` line to set")
    edition.write_text(text, encoding="utf-8")


def _write_rubrics(source: Path, target: Path) -> None:
    """Each rubric without its items' `guidance:`, checked to load with the same points."""
    target.mkdir(parents=True)
    staff = load_rubrics(source)
    for path in sorted(source.glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        for item in data.get("items") or []:
            item.pop("guidance", None)
        written = target / path.name
        written.write_text(f"# {path.name} of the student kit: points and feedback; the staff's "
                           "guidance is not in the kit.\n"
                           + yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100),
                           encoding="utf-8")
        kit_rubric, staff_rubric = load_rubric(written), staff[data["assignment"]]
        if (kit_rubric.total_points, kit_rubric.check_ids) != (staff_rubric.total_points,
                                                               staff_rubric.check_ids):
            raise RuntimeError(f"{path.name}: the kit's copy does not score like the original")


PYPROJECT = """\
[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

[project]
name = "pdl-student-kit"
version = "{version}"
description = "Parallelism in Deep Learning: the course's grader for students (pdl-grade check)"
readme = "README.md"
requires-python = ">=3.10"
dependencies = [
    "torch>=2.4",
    "numpy>=1.24",
    "pytest>=7.4",
    "pytest-json-report>=1.5",
    "pyyaml>=6.0",
    "pdfplumber>=0.11",
    "jinja2>=3.1",
    "nvidia-ml-py>=12.535",
]

[project.scripts]
pdl-grade = "grader.cli:main"

[project.entry-points.pytest11]
pdl_grader = "grader.pytest_plugin"

[tool.setuptools.packages.find]
include = ["grader*"]

[tool.setuptools.package-data]
grader = ["**/*.yaml", "**/*.j2", "**/*.html", "**/*.ini", "vgpu/boot/*.py", "data/**/*"]
"""

README = """\
# Parallelism in Deep Learning: student kit

The course's starting code and its grader, to check your work on your own machine (no GPU
needed: the grader simulates a node of several GPUs on the CPU).

    pip install ./pdl-student-kit                      # once (Python 3.10 or newer)
    cp -r pdl-student-kit/student_template ~/pdl       # your course folder
    cd ~/pdl
    pdl-grade check hw3                                # grade HW3 as the course will

`student_template/README.md` says how to run each assignment's scripts (`pdl-grade run`,
`pdl-grade torchrun`) and how `pdl-grade check` reports. Your code may import torch, numpy and
Python's standard library.
"""
