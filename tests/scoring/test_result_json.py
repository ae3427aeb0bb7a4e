"""result.json: totals, round trip, atomic writes, and a result when pytest could not run."""
import json
import os

import pytest

import grader
from grader.scoring import (SCHEMA, build_result, errored_assignment, hardware_info, parse_rubric,
                            read_result, score_assignment, write_result)
from grader.scoring import result as result_module
from scoring_reports import REAL_GPU_RUBRIC, all_passing, case, report


@pytest.fixture
def two_assignments(rubric_for):
    hw3, p = rubric_for("hw3"), parse_rubric(REAL_GPU_RUBRIC)
    p_tests = [case("p.code.right"), case("p.speedup.real", "skipped")]
    return [score_assignment(hw3, report(all_passing(hw3))), score_assignment(p, report(p_tests))]


def test_build_result_totals_and_header(two_assignments):
    result = build_result("submissions/alice", two_assignments,
                          hardware=hardware_info("virtual", 5, ["vgpu0", "vgpu1"]),
                          started_at="2026-05-01T10:00:00+00:00", duration_s=12.3456)
    assert result["schema"] == SCHEMA == "pdl-autograder/result/1"
    assert result["grader_version"] == grader.__version__
    # HW3: 10.5 automatic of 15 (4.5 wait for a person); practical 5: 11 (speed-up excluded).
    assert (result["score"], result["max_score"]) == (21.5, 26)
    assert result["duration_s"] == 12.346
    assert result["hardware"] == {"kind": "virtual", "gpus": 5, "names": ["vgpu0", "vgpu1"]}
    assert [a["id"] for a in result["assignments"]] == ["hw3", "p"]
    assert result["assignments"][1]["excluded_points"] == 1
    assert result["errors"] == []


def test_hardware_kind_is_checked():
    with pytest.raises(ValueError):
        hardware_info("quantum", 1)


def test_round_trip(tmp_path, two_assignments):
    result = build_result("alice", two_assignments, errors=["rubric for hw9 not found"])
    path = write_result(tmp_path / "out" / "result.json", result)
    assert read_result(path) == json.loads(json.dumps(result))
    assert read_result(path)["assignments"][0]["items"][0]["checks"][0]["id"] == "hw3.task1.layers_reported"


def test_read_result_rejects_other_files(tmp_path):
    path = tmp_path / "results.json"
    path.write_text('{"score": 44.0, "tests": []}')  # a Gradescope file, not ours
    with pytest.raises(ValueError, match="not a pdl-autograder/result/1 result"):
        read_result(path)


def test_failed_replace_keeps_the_old_file_and_no_temp(tmp_path, monkeypatch, two_assignments):
    path = tmp_path / "result.json"
    path.write_text("previous\n")

    def crash(*args):
        raise OSError("disk full")
    import grader.common.files as files_module
    monkeypatch.setattr(files_module.os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        write_result(path, build_result("alice", two_assignments))
    assert path.read_text() == "previous\n"
    assert os.listdir(tmp_path) == ["result.json"]


def test_unserialisable_result_never_touches_the_file(tmp_path):
    path = tmp_path / "result.json"
    path.write_text("previous\n")
    with pytest.raises((TypeError, ValueError)):
        write_result(path, {"schema": SCHEMA, "score": float("nan")})
    assert path.read_text() == "previous\n"
    assert os.listdir(tmp_path) == ["result.json"]


def test_errored_assignment_keeps_what_was_graded(tmp_path, rubric_for):
    hw3, p4 = rubric_for("hw3"), rubric_for("practical4")
    graded = score_assignment(hw3, report(all_passing(hw3)))
    crashed = errored_assignment(p4, "pytest timed out after 600 s",
                                 overrides={"practical4.questions.easier": {"points": 0, "comment": "ok"}})
    assert crashed.status == "error" and crashed.errors == ["pytest timed out after 600 s"]
    assert (crashed.score, crashed.max_score) == (0, 12)
    auto = [i for i in crashed.items if i.kind == "auto"]
    assert auto and all(i.status == "error" and "pytest timed out after 600 s" in i.feedback for i in auto)
    manual = [i for i in crashed.items if i.kind == "manual"]
    assert [(i.id, i.pending) for i in manual if not i.pending] == [
        ("practical4.questions.easier", False)]

    write_result(tmp_path / "result.json", build_result("bob", [graded, crashed]))
    saved = read_result(tmp_path / "result.json")
    assert (saved["score"], saved["max_score"]) == (10.5, 27)
    assert [a["status"] for a in saved["assignments"]] == ["graded", "error"]
