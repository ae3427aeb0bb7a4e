"""An archive the grader cannot unpack gets no grade, never a zero, and the person it goes to is
told what is wrong with the file (adv39 F6, M1).

- A password-protected zip (`zip -P`, a zip tool that encrypts by default) had been rejected:
  0 in grades.csv, Moodle and Gradescope, for work nobody looked at, while a .rar went to a
  person.
- An empty hw3.zip said only "it holds no files"; a hw3.rar only "it holds hw3.rar"."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from grader.batch.inputs import discover, prepare
from tests.support.fake_graders import zip_bytes

MOODLE = "{name}_2020{n}_assignsubmission_file_"
CODE = b"import torch\n\nDEPTH = 6\n"


def prepared_upload(tmp_path: Path, name: str, files: dict[str, bytes]):
    subs = tmp_path / "hw3_download"
    folder = subs / MOODLE.format(name=name, n=len(name))
    folder.mkdir(parents=True)
    for rel, data in files.items():
        (folder / rel).write_bytes(data)
    found, _ = discover(subs)
    (submission,) = found
    return prepare(submission, tmp_path / "scratch", assignments=["hw3"], graded=["hw3"])


def password_zip(tmp_path: Path) -> bytes:
    if shutil.which("zip") is None:
        pytest.skip("Info-ZIP's zip is not installed: it makes the password-protected zip")
    source = tmp_path / "src"
    (source / "hw3").mkdir(parents=True)
    (source / "hw3" / "model_parallel.py").write_bytes(CODE)
    subprocess.run(["zip", "-q", "-r", "-P", "secret", str(tmp_path / "hw3.zip"), "hw3"],
                   cwd=source, check=True)
    return (tmp_path / "hw3.zip").read_bytes()


def test_a_password_protected_zip_is_for_a_person_not_a_zero(tmp_path):
    prepared = prepared_upload(tmp_path, "Boris Password", {"hw3.zip": password_zip(tmp_path)})
    assert prepared.root is None and prepared.needs_person, (
        f"expected no grade and a person to look (as a .rar gets), observed needs_person="
        f"{prepared.needs_person}, problem {prepared.problem!r} (grader/batch/unpack.py "
        "check_zip_entry)")
    assert "hw3.zip is password-protected" in prepared.problem, prepared.problem
    assert "without a password" in prepared.problem, prepared.problem


def test_an_empty_zip_is_said_to_be_empty(tmp_path):
    prepared = prepared_upload(tmp_path, "Ada Emptyzip", {"hw3.zip": zip_bytes([])})
    assert prepared.needs_person, prepared
    assert "hw3.zip is an empty zip archive (it holds no files)" in prepared.problem, (
        f"expected the message to say what is wrong with the zip, observed {prepared.problem!r} "
        "(grader/batch/layout.py require_expected_files, its `why`)")


def test_a_rar_is_said_to_be_a_rar_the_grader_cannot_unpack(tmp_path):
    prepared = prepared_upload(tmp_path, "Cyril Rar",
                               {"hw3.rar": b"Rar!\x1a\x07\x01\x00" + b"\x00" * 64})
    assert prepared.needs_person, prepared
    assert "hw3.rar is a RAR archive, which the grader cannot unpack (ask the student for a " \
           ".zip)" in prepared.problem, prepared.problem


def test_an_honest_zip_beside_an_empty_one_is_graded(tmp_path):
    """The empty zip is only named where nothing else can be graded."""
    prepared = prepared_upload(tmp_path, "Dina Twozips", {
        "hw3.zip": zip_bytes([("hw3/model_parallel.py", CODE)]),
        "old.zip": zip_bytes([])})
    assert prepared.problem is None and (prepared.root / "hw3" / "model_parallel.py").is_file(), \
        prepared.problem
