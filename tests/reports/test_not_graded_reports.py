"""Reports of an upload that was never graded ("needs a person", or refused): every format
says it was not graded and why, with no total (audit F5: `pdl-grade report` had rendered
"Total: 0 / 15 ... graded on unknown" for Eve's damaged zip, which nobody graded)."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from test_gradescope import validate
from grader.batch.pipeline import BatchOptions, run_batch
from grader.cli import main
from grader.reports.not_graded import NEEDS_PERSON, REJECTED, not_graded, not_graded_mark
from grader.scoring import build_result, errored_assignment, load_rubrics, write_result
from tests.support.fake_graders import scoring_grade

REASON = "could not be unpacked: hw3.zip is damaged (cut short: the upload did not finish)"


def rejection(kind: str, marked: bool = True) -> dict:
    """A result as the batch records an upload it did not grade (pipeline._record_rejection);
    `marked=False`: as batches wrote it before the `not_graded` mark."""
    message = ("needs a person: " if kind == NEEDS_PERSON else "submission rejected: ") + REASON
    result = build_result("Eve Lepp_1005_assignsubmission_file_/hw3.zip",
                          [errored_assignment(load_rubrics()["hw3"], message)],
                          duration_s=0.0, errors=[message])
    result["student"] = {"key": "Eve_Lepp_1005", "name": "Eve Lepp"}
    if marked:
        result["not_graded"] = not_graded_mark(kind, REASON)
    return result


def rendered(tmp_path: Path, result: dict) -> tuple[str, str, dict]:
    source = write_result(tmp_path / "result.json", result)
    out = tmp_path / "out"
    assert main(["report", str(source), "--out", str(out), "--format", "md,html,gradescope"]) == 0
    return ((out / "report.md").read_text(), (out / "report.html").read_text(),
            json.loads((out / "results.json").read_text()))


@pytest.mark.parametrize("marked", [True, False], ids=["marked", "written-before-the-mark"])
def test_needs_person_is_said_not_graded_in_every_format(tmp_path, marked):
    md, html, gradescope = rendered(tmp_path, rejection(NEEDS_PERSON, marked))
    for text, name in ((md, "report.md"), (html, "report.html"), (gradescope["output"], "results.json output")):
        assert "Not graded" in text, f"{name} does not say it was not graded:\n{text}"
        assert "cut short: the upload did not finish" in text, f"{name} does not give the reason"
        assert "Total" not in text and "/ 15" not in text, f"{name} shows a total:\n{text}"
        assert "on unknown" not in text, f"{name} says it was graded on unknown hardware"
        assert "not even 0" in text, f"{name} does not say that no points are counted"
    # Gradescope: a 0 it would record anyway, said to be no grade, and no failed tests.
    validate(gradescope)
    assert gradescope["score"] == 0.0 and gradescope["tests"] == []
    assert "that 0 is no grade" in gradescope["output"]
    assert gradescope["extra_data"]["not_graded"] == {"kind": NEEDS_PERSON, "reason": REASON}


def test_a_refused_upload_says_it_counts_as_zero(tmp_path):
    md, html, gradescope = rendered(tmp_path, rejection(REJECTED))
    for text in (md, html, gradescope["output"]):
        assert "Not graded" in text and "counts as 0" in text and "Total" not in text
    assert gradescope["extra_data"]["not_graded"]["kind"] == REJECTED


def test_a_graded_result_is_not_taken_for_one_never_graded():
    graded = rejection(NEEDS_PERSON, marked=False)
    graded["hardware"] = {"kind": "virtual", "gpus": 4, "names": []}
    assert not_graded(graded) is None
    graded["hardware"], graded["errors"] = None, ["pytest crashed"]
    assert not_graded(graded) is None


def test_the_batch_marks_an_upload_that_needs_a_person(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "grades"
    (subs / "carol").mkdir(parents=True)
    (subs / "carol" / "holiday.txt").write_text("nothing of the course's here\n")
    run_batch(subs, out, BatchOptions(assignments=("hw3",)), grade_fn=scoring_grade,
              stream=io.StringIO(), live=False)
    result = json.loads((out / "submissions" / "carol" / "result.json").read_text())
    assert result["not_graded"]["kind"] == NEEDS_PERSON, result.get("not_graded")
    md, _, gradescope = rendered(tmp_path, result)
    assert "Not graded" in md and "Total" not in md and gradescope["tests"] == []


def test_the_instructor_view_says_not_graded_with_no_total():
    from grader.reports.formats import render
    text = render("instructor", rejection(NEEDS_PERSON), rubrics=load_rubrics())
    assert "**Not graded** (needs a person)" in text and REASON in text
    assert "Total" not in text and "0 / 15" not in text, text[:600]
