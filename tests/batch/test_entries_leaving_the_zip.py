"""A zip whose entries leave it (`../`, absolute paths) is refused saying what to do, and with
every such entry and every link out of it named, not only the first (adv45 F5: Sergei's hw3.zip
held '../../evil.py' beside links to /etc and /etc/passwd; the message named the first entry
and said only "rejected", and the links were reported nowhere)."""
from __future__ import annotations

from pathlib import Path

import pytest

from grader.batch.inputs import UnpackLimits, discover, prepare
from grader.batch.zipped_downloads import moodle_downloads, with_download_problems
from tests.batch.test_inputs import _symlink_info
from tests.support.fake_graders import write_entries, zip_bytes

CODE = ("hw3/model_parallel.py", b"import torch\n")


def _problem(tmp_path: Path, entries, graded=None) -> str:
    subs = tmp_path / "subs"
    (subs / "Sergei Slip_100013_assignsubmission_file_").mkdir(parents=True)
    (subs / "Sergei Slip_100013_assignsubmission_file_" / "hw3.zip").write_bytes(zip_bytes(entries))
    found, _ = discover(subs)
    prepared = prepare(found[0], tmp_path / "scratch", graded=graded)
    assert prepared.root is None, "expected the zip refused"
    assert not list(tmp_path.rglob("evil.py")), "nothing may be written outside the scratch"
    return prepared.problem or ""


def test_every_entry_and_link_out_of_the_zip_is_named_with_what_to_do(tmp_path):
    problem = _problem(tmp_path, [CODE, ("../../evil.py", b"x"), ("../up.py", b"x"),
                                  (_symlink_info("hw3/etc_link"), b"/etc"),
                                  (_symlink_info("answers_link.yaml"), b"/etc/passwd"),
                                  (_symlink_info("hw3/inside_link"), b"model_parallel.py")])
    for said in ("'../../evil.py' (../)", "'../up.py' (../)", "hw3/etc_link (to /etc)",
                 "answers_link.yaml (to /etc/passwd)", "zip the folder itself",
                 "no path in it leaves it"):
        assert said in problem, (f"expected {said!r} in the rejection; observed {problem!r} "
                                 "(grader/batch/unpack.py _unpack_entries / leaving_the_zip)")
    assert "inside_link" not in problem, f"a link within the zip is no problem: {problem!r}"


def test_one_entry_out_keeps_its_words_and_gains_the_advice(tmp_path):
    problem = _problem(tmp_path, [CODE, ("../../evil.py", b"x")])
    assert problem.startswith("hw3.zip: entry '../../evil.py' points outside the archive (../); "
                              "rejected: zip the folder itself"), problem
    absolute = _problem(tmp_path / "absolute", [CODE, ("/tmp/evil.py", b"x")])
    assert absolute.startswith("hw3.zip: entry '/tmp/evil.py' has an absolute path; rejected: "
                               "zip the folder itself"), absolute


@pytest.mark.parametrize("graded, example", [
    (("practical4",), "`zip -r practical4.zip practical4`"),
    (("practical4", "hw3"), "`zip -r FOLDER.zip FOLDER`")], ids=["one", "several"])
def test_the_advice_names_the_assignment_the_upload_is_graded_for(tmp_path, graded, example):
    """The example had always been `zip -r hw3.zip hw3`: a Practical 4 student was told to zip
    hw3/. It names the one assignment graded, or FOLDER where the batch grades several."""
    problem = _problem(tmp_path, [("practical4/concepts.py", b"A = 1\n"), ("../../evil.py", b"x")],
                       graded=graded)
    assert f"(e.g. {example}, or the file manager's 'Compress' on the folder)" in problem, (
        f"expected the advice's example {example} for an upload graded for {graded}; observed "
        f"{problem!r}; where: grader/batch/unpack.py with_own_example, grader/batch/inputs.py "
        "prepare")
    assert "hw3.zip hw3" not in problem, problem


def test_a_zipped_downloads_participant_gets_the_advice_of_its_assignment(tmp_path):
    """A participant's folder of a whole Moodle download left zipped is refused before the batch
    knows what it grades: the advice is named when the upload is prepared for its assignment."""
    entries = [("Anna Tamm_100007_assignsubmission_file_/practical4/concepts.py", b"A = 1\n"),
               ("Sergei Slip_100013_assignsubmission_file_/practical4/concepts.py", b"A = 1\n"),
               ("Sergei Slip_100013_assignsubmission_file_/../../evil.py", b"x")]
    subs = write_entries(tmp_path / "subs", {"P4-download-all.zip": zip_bytes(entries)})
    downloads = moodle_downloads(subs / "P4-download-all.zip", tmp_path / "out", UnpackLimits())
    found, _ = discover(downloads.folder)
    with_download_problems(found, downloads)
    sergei = next(s for s in found if s.student.key.startswith("Sergei"))
    problem = prepare(sergei, tmp_path / "scratch", graded=("practical4",)).problem or ""
    assert "points outside the archive" in problem and \
        "(e.g. `zip -r practical4.zip practical4`," in problem, (
            f"expected Sergei's refusal to advise zipping practical4/; observed {problem!r}; "
            "where: grader/batch/inputs.py prepare, grader/batch/unpack.py with_own_example")
