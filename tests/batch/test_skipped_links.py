"""Symbolic links in an upload are never followed, and the student and the instructor are told
(adv39 F3).

Urmas handed in `hw3/answers.yaml -> /work/main/reference/hw3/answers.yaml` (and report.pdf
likewise); Viktor a `zip -y` holding answers.yaml as a link. Neither link was followed (right:
no forged score), but report.md and instructor.md said "not handed in" and nothing else; the
only record of the links, and of where they pointed (the course's reference solution), was a
line in the batch log claiming "nothing graded needs one". Now each link is named in the
student's report and in instructor.md with its target, the answer file it stands for says it
is a link, and a link into the grader's, the reference's or another student's files is flagged
for the instructor (instructor.md, the class page) without changing the score."""
from __future__ import annotations

import json
import os
import subprocess
import shutil
from pathlib import Path

import pytest

from grader.batch.inputs import discover, prepare
from grader.common.locations import data_folder
from tests.support import run_test_batch
from tests.support.fake_graders import make_submission, write_entries, zip_bytes

REFERENCE = data_folder("reference")
INTO_REFERENCE = "the course's reference solutions"


def links_of(tmp_path: Path, subs: Path, key: str) -> list[dict]:
    found, _ = discover(subs)
    submission = next(s for s in found if s.student.key == key)
    prepared = prepare(submission, tmp_path / "scratch" / key)
    assert prepared.problem is None, prepared.problem
    return prepared.links


def test_a_folder_uploads_links_are_kept_with_where_they_point(tmp_path):
    subs = tmp_path / "hw3_download"
    urmas = make_submission(subs / "Urmas Linker_20175_assignsubmission_file_")
    os.symlink(REFERENCE / "hw3" / "answers.yaml", urmas / "hw3" / "answers.yaml")
    os.symlink("/etc", urmas / "hw3" / "etc")
    # An honest link to the student's own file, and one into a classmate's upload.
    (urmas / "answers_final.yaml").write_text("answers: {}\n")
    os.symlink("../answers_final.yaml", urmas / "practical4" / "answers.yaml")
    olga = make_submission(subs / "Olga Other_20176_assignsubmission_file_")
    os.symlink(olga / "hw3" / "model_parallel.py", urmas / "hw3" / "theirs.py")
    links = {link["path"]: link for link in links_of(
        tmp_path, subs, "Urmas_Linker_20175")}
    assert sorted(links) == ["hw3/answers.yaml", "hw3/etc", "hw3/theirs.py",
                             "practical4/answers.yaml"], links
    assert links["hw3/answers.yaml"] == {
        "path": "hw3/answers.yaml", "in": None,
        "target": str(REFERENCE / "hw3" / "answers.yaml"), "into": INTO_REFERENCE}, (
        f"expected the link into the reference flagged, observed {links['hw3/answers.yaml']} "
        "(grader/batch/link_targets.py linked_into)")
    assert links["hw3/theirs.py"]["into"] == \
        "another upload in SUBMISSIONS (Olga Other_20176_assignsubmission_file_)", links
    assert links["hw3/etc"]["into"] is None and links["practical4/answers.yaml"]["into"] is None, \
        "a link to /etc or to the student's own file is no sign of copying"


def test_a_zip_y_links_target_is_read_never_followed(tmp_path):
    if shutil.which("zip") is None:
        pytest.skip("Info-ZIP's zip is not installed: it stores links as `zip -y` does")
    source = make_submission(tmp_path / "src")
    os.symlink(REFERENCE / "hw3" / "answers.yaml", source / "hw3" / "answers.yaml")
    folder = tmp_path / "hw3_download" / "Viktor Ziplinker_20182_assignsubmission_file_"
    folder.mkdir(parents=True)
    subprocess.run(["zip", "-q", "-r", "-y", str(folder / "hw3.zip"), "."], cwd=source, check=True)
    (link,) = links_of(tmp_path, folder.parent, "Viktor_Ziplinker_20182")
    assert link == {"path": "hw3/answers.yaml", "in": "hw3.zip",
                    "target": str(REFERENCE / "hw3" / "answers.yaml"), "into": INTO_REFERENCE}, link
    unpacked = tmp_path / "scratch" / "Viktor_Ziplinker_20182"
    assert not [p for p in unpacked.rglob("answers.yaml")], "a link is never created"


def test_a_relative_link_inside_a_flat_zip_is_the_students_own(tmp_path):
    """Moodle's flat layout: the zip lies in SUBMISSIONS itself; its own relative link is not
    "another upload"."""
    from tests.batch.test_upload_shapes import _link
    subs = write_entries(tmp_path / "subs", {
        "Jane Doe_42_assignsubmission_file_work.zip": zip_bytes([
            ("hw3/model_parallel.py", b"import torch\n"), ("hw3/answers_final.yaml", b"{}\n"),
            _link("hw3/answers.yaml", b"answers_final.yaml")])})
    (link,) = links_of(tmp_path, subs, "Jane_Doe_42")
    assert (link["target"], link["into"]) == ("answers_final.yaml", None), link


def test_the_report_instructor_md_and_class_page_name_the_links(tmp_path, monkeypatch):
    monkeypatch.setenv("PDL_FAKE_CALLS", str(tmp_path / "calls.log"))
    subs, out = tmp_path / "subs", tmp_path / "out"
    urmas = make_submission(subs / "Urmas Linker_20175_assignsubmission_file_", score=7)
    os.symlink(REFERENCE / "practical4" / "answers.yaml", urmas / "practical4" / "answers.yaml")
    os.symlink("/etc", urmas / "etc")
    make_submission(subs / "Anna Tamm_20007_assignsubmission_file_", score=7)
    run_test_batch(subs, out, ["practical4"])
    folder = out / "submissions" / "Urmas_Linker_20175"
    result = json.loads((folder / "result.json").read_text())
    assert result["score"] == 7, "a link takes no points: the score is the grading's"
    target = str(REFERENCE / "practical4" / "answers.yaml")
    report = (folder / "report.md").read_text()
    assert "**Symbolic links in your upload**" in report and \
        f"- practical4/answers.yaml is a symbolic link (to {target})" in report, (
            f"expected the student's report to name the link and its target, observed:\n{report}")
    assert "possible copying" not in report and "points into" not in report, \
        "the flag is the instructor's"
    assert "Symbolic links in your upload" in (folder / "report.html").read_text()
    instructor = (folder / "instructor.md").read_text()
    assert f"- practical4/answers.yaml is a symbolic link to {target}: **points into " \
           f"{INTO_REFERENCE}**" in instructor, instructor
    assert "- etc is a symbolic link to /etc\n" in instructor, instructor
    page = (out / "index.html").read_text()
    table = page.split('id="links-into-table"')[1].split("</table>")[0]
    assert "Urmas_Linker_20175" in table and "etc</code>" not in table and \
        "Anna_Tamm" not in table, table
    anna = json.loads((out / "submissions" / "Anna_Tamm_20007" / "result.json").read_text())
    assert "links" not in anna and "Symbolic links" not in (
        out / "submissions" / "Anna_Tamm_20007" / "report.md").read_text()


def test_an_answer_file_that_is_a_link_says_so_where_files_are_listed(tmp_path):
    from grader.batch.inputs import Prepared
    from grader.batch.pipeline import _with_left_out
    from grader.reports.render import render_markdown
    from grader.scoring import build_result
    link = {"path": "hw3/answers.yaml", "in": "hw3.zip", "target": "/x/answers.yaml",
            "into": None}
    found = {"id": "hw3", "title": "HW3", "rubric_version": "1", "score": 2.0, "max_score": 15.0,
             "rubric_max_score": 15.0, "excluded_points": 0.0, "status": "graded", "errors": [],
             "pending_manual": [], "late": None, "items": [],
             "answers": {"files": [{"file": "hw3/report.pdf", "status": "missing"},
                                   {"file": "hw3/answers.yaml", "status": "missing"}]}}
    result = build_result("viktor", [found])

    class Context:
        prepared = Prepared(root=None, content_hash="h", links=[link])
    result = _with_left_out(result, Context())
    files = result["assignments"][0]["answers"]["files"]
    assert files[1]["link"] == "/x/answers.yaml" and "link" not in files[0], files
    markdown = render_markdown(result)
    assert "hw3/answers.yaml (a symbolic link to /x/answers.yaml, not followed: not handed in)" \
        in markdown, markdown
    assert "hw3/answers.yaml in hw3.zip is a symbolic link (to /x/answers.yaml)" in markdown


def test_links_in_a_whole_moodle_download_left_zipped_reach_the_students_report(tmp_path, monkeypatch):
    """The batch unzips a whole download given zipped; a participant's folder in it holding a
    link (a download re-zipped with `zip -ry`) had its link skipped and said nowhere: the
    student's report said "not handed in" for the answer file it stood for, and the instructor
    saw no flag for a link into the reference."""
    from tests.batch.test_upload_shapes import _link
    monkeypatch.setenv("PDL_FAKE_CALLS", str(tmp_path / "calls.log"))
    work = make_submission(tmp_path / "work", score=7)
    target = str(REFERENCE / "practical4" / "answers.yaml")
    folder = "Urmas Linker_20175_assignsubmission_file_"
    entries = [(f"{folder}/{path.relative_to(work).as_posix()}", path.read_bytes())
               for path in sorted(work.rglob("*")) if path.is_file()]
    entries.append(_link(f"{folder}/practical4/answers.yaml", target.encode()))
    entries.append(("Anna Tamm_20007_assignsubmission_file_/practical4/FAKE.json",
                    (work / "practical4" / "FAKE.json").read_bytes()))
    subs, out = tmp_path / "subs", tmp_path / "out"
    write_entries(subs, {"LTAT-Practical 4-12345.zip": zip_bytes(entries)})
    run_test_batch(subs, out, ["practical4"])
    urmas = out / "submissions" / "Urmas_Linker_20175"
    result = json.loads((urmas / "result.json").read_text())
    assert result.get("links") == [{"path": "practical4/answers.yaml", "in": None,
                                    "target": target, "into": INTO_REFERENCE}], (
        f"expected the download's link kept as a folder upload's is, observed "
        f"{result.get('links')} (grader/batch/zipped_downloads.py: Downloads.links)")
    report = (urmas / "report.md").read_text()
    assert f"- practical4/answers.yaml is a symbolic link (to {target})" in report, report
    assert f"**points into {INTO_REFERENCE}**" in (urmas / "instructor.md").read_text()
    anna = json.loads((out / "submissions" / "Anna_Tamm_20007" / "result.json").read_text())
    assert "links" not in anna, "a link is its own participant's, never a neighbour's"
