"""`pdl-grade report RESULT_JSON --out DIR [--format ...]` (grader/cli/report.py)."""
from __future__ import annotations

import json
import shutil

from tests.support.report_fixtures import FIXTURES, ROUND_ROBIN
from grader.cli import main


def run(*argv: str) -> int:
    return main(["report", *argv])


def test_writes_every_format(tmp_path, capsys):
    out = tmp_path / "out"
    assert run(str(FIXTURES / ROUND_ROBIN), "--out", str(out), "--format",
               "md,html,gradescope", "--visibility", "visible", "--leaderboard") == 0
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "report.md", "results.json"]
    assert "**Total: 16 / 24**" in (out / "report.md").read_text()
    assert (out / "report.html").read_text().startswith("<!DOCTYPE html>")
    results = json.loads((out / "results.json").read_text())
    assert results["score"] == 16.0 and results["visibility"] == "visible"
    assert results["leaderboard"][0]["order"] == "asc"
    assert str(out / "results.json") in capsys.readouterr().out


def test_default_formats_are_the_student_reports(tmp_path):
    assert run(str(FIXTURES / ROUND_ROBIN), "--out", str(tmp_path)) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html", "report.md"]


def test_refuses_what_is_not_a_result(tmp_path, capsys):
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"score": 3}))
    assert run(str(other), "--out", str(tmp_path / "a")) == 2
    assert "not a pdl-autograder/result/1 result" in capsys.readouterr().err
    assert run(str(tmp_path / "missing.json"), "--out", str(tmp_path / "b")) == 2
    not_json = tmp_path / "x.json"
    not_json.write_text("{")
    assert run(str(not_json), "--out", str(tmp_path / "c")) == 2
    assert "is not JSON" in capsys.readouterr().err
    assert not any((tmp_path / d).exists() for d in "abc")


def test_unknown_format_is_an_error(tmp_path, capsys):
    shutil.copy(FIXTURES / ROUND_ROBIN, tmp_path / "result.json")
    assert run(str(tmp_path / "result.json"), "--out", str(tmp_path / "o"), "--format", "md,pdf") == 2
    assert "unknown format(s) pdf" in capsys.readouterr().err


def test_module_entry_point(tmp_path):
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-m", "grader", "report", str(FIXTURES / ROUND_ROBIN),
                           "--out", str(tmp_path), "--format", "gradescope"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "results.json").read_text())["score"] == 16.0
