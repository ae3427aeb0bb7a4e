"""The real grader, once: two small submissions (the reference solution and the untouched
student template), practical4 only, through the command line with two workers."""
import csv
import json
import shutil
from pathlib import Path

import pytest

from tests.support.fake_graders import zip_folder

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_reference_and_template_graded_for_real(tmp_path, pdl_grade):
    subs, out = tmp_path / "subs", tmp_path / "out"
    # The reference as a Moodle folder, the template as a plain zip with a top folder.
    shutil.copytree(REPO / "reference" / "practical4",
                    subs / "Ref Erence_1_assignsubmission_file_" / "practical4")
    shutil.copytree(REPO / "student_template" / "practical4", tmp_path / "tpl" / "practical4")
    # Begun (the template unchanged is no work handed in, and is held for a person: F4 of adv44).
    with (tmp_path / "tpl" / "practical4" / "concepts.py").open("a") as begun:
        begun.write("# started: TODO the rest\n")
    zip_folder(tmp_path / "tpl", subs / "template.zip", prefix="my-submission/")

    run = pdl_grade("batch", subs, "--out", out, "--assignment", "practical4", "--workers", "2",
                    "--timeout", "300")
    assert run.code == 0, run.err

    reference = json.loads((out / "submissions" / "Ref_Erence_1" / "result.json").read_text())
    template = json.loads((out / "submissions" / "template" / "result.json").read_text())
    assert [a["id"] for a in reference["assignments"]] == ["practical4"]
    # Every automatic point; the written answers (manual items) wait for a person.
    auto = [i for i in reference["assignments"][0]["items"] if i["kind"] == "auto"]
    assert reference["score"] == sum(i["max_score"] for i in auto) > 0, reference["errors"]
    assert reference["submission"] == "Ref Erence_1_assignsubmission_file_"
    assert template["score"] < template["max_score"]
    assert (out / "submissions" / "template" / "checks-practical4.json").is_file()
    rows = list(csv.reader((out / "grades.csv").open()))
    assert rows[0] == ["Identifier", "Full name", "practical4", "Total", "Status", "Key"]
    # Its written answers wait for a person: the grade is provisional, and says so (adv39 M2).
    waiting = f"{reference['pending_points']:g}"
    assert rows[1] == ["Participant 1", "Ref Erence", f"{reference['score']:g}",
                       f"{reference['score']:g}", "graded, provisional: practical4 "
                       f"({waiting} points wait for a person)", "Ref_Erence_1"]
    assert rows[2][:2] == ["template", "template"] and float(rows[2][2]) == template["score"]
    err = run.err
    assert "2/2 done: 2 graded, 0 failed" in err
