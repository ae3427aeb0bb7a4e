"""Finding, identifying and safely unpacking submissions (no grading involved)."""
import os
import stat
import zipfile
from pathlib import Path

import pytest

from tests.support.fake_graders import make_submission, zip_bytes, zip_folder
from grader.batch.inputs import UnpackLimits, discover, prepare


def _by_key(folder: Path) -> dict:
    found, notes = discover(folder)
    return {s.student.key: s for s in found}, notes


def test_moodle_and_plain_layouts_are_identified_and_unpacked(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    # Moodle folder holding a zip whose content is nested one level (pdl/), with Mac junk.
    jane = subs / "Jane Doe_123456_assignsubmission_file_"
    jane.mkdir()
    (jane / "submission.zip").write_bytes(zip_bytes([
        ("pdl/practical4/concepts.py", b"A = 1\n"), ("pdl/hw3/model_parallel.py", b"B = 2\n"),
        ("__MACOSX/pdl/._concepts.py", b"junk"), ("pdl/practical4/__pycache__/x.pyc", b"pyc")]))
    # Moodle folder with the files nested one level down.
    make_submission(subs / "John Smith_654321_assignsubmission_file_" / "my work", score=5)
    # Moodle's flat layout (no folders): the zip carries the student's name and id.
    zip_folder(make_submission(tmp_path / "ann", score=3),
               subs / "Ann Lee_111_assignsubmission_file_work.zip")
    (subs / "Ann Lee_111_assignsubmission_onlinetext_").mkdir()
    (subs / "Ann Lee_111_assignsubmission_onlinetext_" / "onlinetext.html").write_text("<p>hi</p>")
    # Plain folder and plain zip.
    make_submission(subs / "dave", score=1)
    zip_folder(make_submission(tmp_path / "carol-src", score=2), subs / "carol.zip")
    (subs / "notes.txt").write_text("not a submission")

    found, notes = _by_key(subs)
    assert sorted(found) == ["Ann_Lee_111", "Jane_Doe_123456", "John_Smith_654321", "carol", "dave"]
    jane_sub = found["Jane_Doe_123456"]
    assert (jane_sub.student.name, jane_sub.student.participant_id) == ("Jane Doe", "123456")
    assert jane_sub.student.identifier == "Participant 123456"
    assert found["dave"].student.identifier == "dave" and found["dave"].student.participant_id is None
    assert any("onlinetext" in n for n in notes) and any("notes.txt" in n for n in notes)
    assert [p.name for p in found["Ann_Lee_111"].sources] == ["Ann Lee_111_assignsubmission_file_work.zip"]

    roots = {}
    for key, submission in found.items():
        prepared = prepare(submission, tmp_path / "scratch" / key)
        assert prepared.problem is None, (key, prepared.problem)
        roots[key] = prepared.root.relative_to(tmp_path / "scratch" / key).as_posix()
        assert (prepared.root / "practical4" / "concepts.py").is_file()
    assert roots == {"Jane_Doe_123456": "submission/pdl", "John_Smith_654321": "my work",
                     "Ann_Lee_111": "work", "carol": "carol", "dave": "."}
    jane_root = tmp_path / "scratch" / "Jane_Doe_123456" / "submission" / "pdl"
    assert (jane_root / "hw3" / "model_parallel.py").read_text() == "B = 2\n"
    assert not list((tmp_path / "scratch").rglob("__MACOSX")) and not list((tmp_path / "scratch").rglob("*.pyc"))


def test_content_hash_is_of_the_files_not_the_packaging(tmp_path):
    subs = tmp_path / "subs"
    make_submission(subs / "alice", score=4)
    zip_folder(subs / "alice", tmp_path / "bob.zip", prefix="nested/")
    (subs / "bob.zip").write_bytes((tmp_path / "bob.zip").read_bytes())
    found, _ = _by_key(subs)
    alice = prepare(found["alice"], tmp_path / "s1")
    bob = prepare(found["bob"], tmp_path / "s2")
    assert alice.content_hash == bob.content_hash          # same files, zipped and nested or not
    (subs / "alice" / "practical4" / "__pycache__").mkdir()
    (subs / "alice" / "practical4" / "__pycache__" / "concepts.pyc").write_bytes(b"x")
    assert prepare(found["alice"], tmp_path / "s1").content_hash == alice.content_hash
    (subs / "alice" / "practical4" / "concepts.py").write_text("ANSWER = 43\n")
    assert prepare(found["alice"], tmp_path / "s1").content_hash != alice.content_hash


def _symlink_info(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info


def _deflated(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


OK_FILE = ("practical4/concepts.py", b"A = 1\n")
BAD_ARCHIVES = {
    "dotdot": ([OK_FILE, ("../../escaped.py", b"x")], "points outside the archive (../)"),
    "dotdot_backslash": ([OK_FILE, ("practical4\\..\\..\\escaped.py", b"x")], "points outside"),
    "absolute": ([OK_FILE, ("/tmp/pdl-absolute-escape.py", b"x")], "absolute path"),
    "windows_absolute": ([OK_FILE, ("C:/evil.py", b"x")], "absolute path"),
    "symlink": ([OK_FILE, (_symlink_info("practical4/data"), b"/etc/passwd")], "symbolic link"),
    "size_bomb": ([OK_FILE, (_deflated("practical4/zeros.bin"), b"\0" * 3_000_000)],
                  "more than the limit of 1000000"),
    "count_bomb": ([OK_FILE] + [(f"practical4/f{i}.txt", b"") for i in range(60)],
                   "more than the limit of 50 files"),
}


@pytest.mark.parametrize("case", sorted(BAD_ARCHIVES))
def test_unsafe_archives_are_rejected_with_a_message(tmp_path, case):
    entries, expected = BAD_ARCHIVES[case]
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "mallory.zip").write_bytes(zip_bytes(entries))
    found, _ = _by_key(subs)
    scratch = tmp_path / "deep" / "deeper" / "scratch"
    prepared = prepare(found["mallory"], scratch, UnpackLimits(max_total_bytes=1_000_000, max_files=50))
    assert prepared.root is None
    assert expected in prepared.problem, prepared.problem
    assert prepared.content_hash.startswith("raw:")
    # Checked before anything is written: nothing unpacked, nothing escaped.
    assert [p for p in scratch.rglob("*") if p.is_file()] == []
    assert not list(tmp_path.rglob("escaped.py")) and not Path("/tmp/pdl-absolute-escape.py").exists()


def test_a_bomb_that_lies_about_its_size_is_stopped_while_inflating(tmp_path):
    # Headers claim 10 bytes; the data inflates to 3 MB. Counting real bytes catches it
    # (zipfile itself would also stop at the declared size; either way nothing big is written).
    data = zip_bytes([OK_FILE, (_deflated("practical4/zeros.bin"), b"\0" * 3_000_000)])
    marker = (3_000_000).to_bytes(4, "little")
    assert data.count(marker) == 2      # local header and central directory
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "liar.zip").write_bytes(data.replace(marker, (10).to_bytes(4, "little")))
    found, _ = _by_key(tmp_path / "subs")
    prepared = prepare(found["liar"], tmp_path / "scratch", UnpackLimits(max_total_bytes=1_000_000))
    assert prepared.root is None and prepared.problem
    assert sum(p.stat().st_size for p in (tmp_path / "scratch").rglob("*") if p.is_file()) <= 1_000_000


def test_symlink_in_a_folder_submission_and_not_a_zip(tmp_path):
    subs = tmp_path / "subs"
    make_submission(subs / "linker")
    os.symlink("/etc/passwd", subs / "linker" / "practical4" / "answers.yaml")
    (subs / "broken.zip").write_bytes(b"this is not a zip")
    found, _ = _by_key(subs)
    linker = prepare(found["linker"], tmp_path / "s1")
    assert linker.root is None and "answers.yaml is a symbolic link" in linker.problem
    broken = prepare(found["broken"], tmp_path / "s2")
    assert broken.root is None and "broken.zip is not a readable zip file" in broken.problem


def test_no_root_ambiguous_root_and_duplicate_entries(tmp_path):
    subs = tmp_path / "subs"
    (subs / "empty" / "stuff").mkdir(parents=True)
    (subs / "empty" / "stuff" / "readme.txt").write_text("hello")
    make_submission(subs / "twice" / "v1")
    make_submission(subs / "twice" / "v2")
    make_submission(subs / "alice")
    zip_folder(subs / "alice", subs / "alice.zip")
    found, _ = _by_key(subs)
    assert "no assignment folder found" in prepare(found["empty"], tmp_path / "a").problem
    assert "ambiguous submission" in prepare(found["twice"], tmp_path / "b").problem
    assert "several submissions for alice" in prepare(found["alice"], tmp_path / "c").problem
