"""gradescope/: the report PDF under any name, and setup.sh's self-check that grades the
bundled template (an image that cannot grade fails at build time)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gradescope.stage_submission import stage

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = REPO / "student_template"


def test_the_only_pdf_is_the_report(tmp_path):
    loose = tmp_path / "loose"
    loose.mkdir()
    (loose / "model_parallel.py").write_text("a = 1\n")
    (loose / "HW3 report - Jane Doe.pdf").write_bytes(b"%PDF-1.4 the report")
    notes = stage(loose, tmp_path / "out", TEMPLATE, ["hw3"])
    staged = tmp_path / "out" / "hw3"
    assert sorted(p.name for p in staged.iterdir()) == ["model_parallel.py", "report.pdf"]
    assert (staged / "report.pdf").read_bytes() == b"%PDF-1.4 the report"
    assert "hw3/: 'HW3 report - Jane Doe.pdf' is the only PDF: graded as hw3/report.pdf" in notes
    assert (loose / "HW3 report - Jane Doe.pdf").exists()       # the upload is untouched

    # In the template's layout too; never when report.pdf is there or the PDF is one of two.
    layout = tmp_path / "layout" / "hw3"
    layout.mkdir(parents=True)
    (layout / "Report.PDF").write_bytes(b"%PDF")
    stage(tmp_path / "layout", tmp_path / "out2", TEMPLATE, ["hw3"])
    assert [p.name for p in (tmp_path / "out2" / "hw3").iterdir()] == ["report.pdf"]
    for names in (["report.pdf", "notes.pdf"], ["a.pdf", "b.pdf"]):
        upload = tmp_path / "-".join(names)
        upload.mkdir()
        for name in names:
            (upload / name).write_bytes(b"%PDF")
        stage(upload, tmp_path / f"out-{upload.name}", TEMPLATE, ["hw3"])
        assert sorted(p.name for p in (tmp_path / f"out-{upload.name}" / "hw3").iterdir()) == sorted(names)


def _self_check(**env: str) -> subprocess.CompletedProcess:
    environment = {key: value for key, value in os.environ.items() if key != "PDL_GRADE"}
    environment.update(PDL_PYTHON=sys.executable, PDL_ASSIGNMENTS="practical4", **env)
    return subprocess.run([sys.executable, str(REPO / "gradescope" / "self_check.py"), str(REPO)],
                          env=environment, capture_output=True, text=True, timeout=600)


def test_self_check_fails_an_image_that_cannot_grade():
    broken = _self_check(PDL_GRADE="false")
    assert broken.returncode == 1
    assert "self_check: FAILED: the template was not graded: pdl-grade grade failed" in broken.stdout


@pytest.mark.slow
def test_self_check_grades_the_template():
    done = _self_check()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "self_check: ok: graded the template: 0.0 of 9.5 automatic points" in done.stdout


def test_setup_runs_the_self_check_and_an_editable_install():
    setup = (REPO / "gradescope" / "setup.sh").read_text()
    assert 'pip install -q -e "$SOURCE"' in setup
    assert setup.rstrip().endswith('gradescope/self_check.py "$SOURCE"')
    assert "gradescope/lock_down.py" in setup
