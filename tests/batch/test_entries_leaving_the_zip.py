"""A zip whose entries leave it (`../`, absolute paths) is refused saying what to do, and with
every such entry and every link out of it named, not only the first (adv45 F5: Sergei's hw3.zip
held '../../evil.py' beside links to /etc and /etc/passwd; the message named the first entry
and said only "rejected", and the links were reported nowhere)."""
from __future__ import annotations

from pathlib import Path

from grader.batch.inputs import discover, prepare
from tests.batch.test_inputs import _symlink_info
from tests.support.fake_graders import zip_bytes

CODE = ("hw3/model_parallel.py", b"import torch\n")


def _problem(tmp_path: Path, entries) -> str:
    subs = tmp_path / "subs"
    (subs / "Sergei Slip_100013_assignsubmission_file_").mkdir(parents=True)
    (subs / "Sergei Slip_100013_assignsubmission_file_" / "hw3.zip").write_bytes(zip_bytes(entries))
    found, _ = discover(subs)
    prepared = prepare(found[0], tmp_path / "scratch")
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
