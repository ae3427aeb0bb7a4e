"""An upload over the unpack limits is graded without what the grader never reads (Python
environments, checkpoints, datasets, images, nested archives), each left-out file named for
the student; only code, answers and report over the limits still reject it (a red team's
reference code beside a 210 MiB checkpoint, or 5,200 dataset images, had scored 0)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from grader.batch.inputs import UnpackLimits, discover, prepare
from tests.batch.test_inputs import _deflated, _with_method
from tests.support import run_test_batch
from tests.support.fake_graders import make_submission, zip_bytes, zip_folder

SMALL = UnpackLimits(max_total_bytes=1_000_000, max_files=50)
CODE = [("practical4/concepts.py", b"A = 1\n"), ("hw3/model_parallel.py", b"import torch\n")]


def _prepare(tmp_path: Path, key: str, limits: UnpackLimits = SMALL):
    found, _ = discover(tmp_path / "subs")
    by_key = {s.student.key: s for s in found}
    return prepare(by_key[key], tmp_path / "scratch", limits)


def _files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def _zip_upload(tmp_path: Path, name: str, entries) -> None:
    (tmp_path / "subs").mkdir(parents=True, exist_ok=True)
    (tmp_path / "subs" / name).write_bytes(entries if isinstance(entries, bytes)
                                           else zip_bytes(entries))


def test_a_checkpoint_beside_the_code_is_left_out_and_the_code_graded(tmp_path):
    make_submission(tmp_path / "subs" / "dora")
    (tmp_path / "subs" / "dora" / "hw3" / "model.pt").write_bytes(b"\0" * 1_200_000)
    prepared = _prepare(tmp_path, "dora")
    assert prepared.root is not None and prepared.problem is None, prepared.problem
    assert prepared.left_out == ["hw3/model.pt (1.1 MiB)"]
    assert "hw3/model.pt" not in _files(prepared.root)
    assert "hw3/model_parallel.py" in _files(prepared.root)
    said = [n for n in prepared.notes if n.startswith("graded without")]
    assert said == ["graded without 1 data file (1.1 MiB) (model.pt: more than the limit of 1000000 "
                    "bytes unpacked): hw3/model.pt (1.1 MiB)"], prepared.notes


def test_an_upload_within_the_limits_is_copied_whole(tmp_path):
    make_submission(tmp_path / "subs" / "erin")
    (tmp_path / "subs" / "erin" / "hw3" / "model.pt").write_bytes(b"\0" * 1000)
    prepared = _prepare(tmp_path, "erin")
    assert prepared.left_out == [] and "hw3/model.pt" in _files(prepared.root)


def test_thousands_of_images_in_a_zip_are_left_out(tmp_path):
    images = [(f"practical4/data/img{i:04}.png", b"\x89PNG" + bytes(100)) for i in range(60)]
    _zip_upload(tmp_path, "fay.zip", CODE + images)
    prepared = _prepare(tmp_path, "fay")
    assert prepared.problem is None, prepared.problem
    assert _files(prepared.root) == ["hw3/model_parallel.py", "practical4/concepts.py"]
    assert len(prepared.left_out) == 60 and prepared.left_out[0] == "practical4/data/img0000.png (104 bytes)"
    assert any(n.startswith("graded without 60 data files (6.1 KiB) (fay.zip: 62 files, more "
                            "than the limit of 50 files)") and n.endswith(" and 50 more")
               for n in prepared.notes), prepared.notes


@pytest.mark.parametrize("mark", ["pyvenv.cfg", "conda-meta/history"])
def test_a_python_environment_in_a_zip_is_left_out_whole(tmp_path, mark):
    environment = [(f"hw3/.venv/{mark}", b"home = /usr/bin\n")] + [
        (f"hw3/.venv/lib/python3.11/site-packages/pkg/m{i}.py", b"X = 1\n") for i in range(60)]
    _zip_upload(tmp_path, "gus.zip", CODE + environment)
    prepared = _prepare(tmp_path, "gus")
    assert prepared.problem is None, prepared.problem
    assert prepared.left_out == ["hw3/.venv/ (a Python environment)"]
    assert _files(prepared.root) == ["hw3/model_parallel.py", "practical4/concepts.py"]


def test_a_python_environment_in_a_folder_upload_is_left_out_without_being_walked(tmp_path):
    make_submission(tmp_path / "subs" / "hal")
    venv = tmp_path / "subs" / "hal" / "venv"
    (venv / "lib").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    for i in range(60):
        (venv / "lib" / f"m{i}.py").write_text("X = 1\n")
    (venv / "lib" / "fifo").symlink_to("/dev/null")  # would be noted if the walk went in
    prepared = _prepare(tmp_path, "hal")
    assert prepared.problem is None, prepared.problem
    assert prepared.left_out == ["venv/ (a Python environment)"]
    assert not any("fifo" in n for n in prepared.notes)
    assert not (prepared.root / "venv").exists()


def test_a_checkpoint_compressed_with_deflate64_is_left_out_but_code_is_not(tmp_path):
    """Windows Explorer writes Deflate64 for large files: the checkpoint it compressed so is
    left out; the same method on the code still rejects the upload (nothing to grade)."""
    data = zip_bytes(CODE + [("hw3/model.pt", b"\0" * 5000)])
    _zip_upload(tmp_path, "ivy.zip", _with_method(data, "hw3/model.pt", 9))
    prepared = _prepare(tmp_path, "ivy", UnpackLimits())
    assert prepared.problem is None, prepared.problem
    assert prepared.left_out == ["hw3/model.pt (4.9 KiB)"]
    assert any("compressed with Deflate64 (zip method 9)" in n for n in prepared.notes)

    other = tmp_path / "other"
    _zip_upload(other, "jon.zip", _with_method(data, "hw3/model_parallel.py", 9))
    refused = _prepare(other, "jon", UnpackLimits())
    assert refused.root is None and "Deflate64" in refused.problem


def test_a_data_file_that_lies_about_its_size_or_is_damaged_is_left_out(tmp_path):
    data = zip_bytes(CODE + [(_deflated("hw3/zeros.bin"), b"\0" * 3_000_000)])
    marker = (3_000_000).to_bytes(4, "little")
    _zip_upload(tmp_path, "kim.zip", data.replace(marker, (10).to_bytes(4, "little")))
    prepared = _prepare(tmp_path, "kim")
    assert prepared.problem is None, prepared.problem
    assert prepared.left_out == ["hw3/zeros.bin (10 bytes)"]
    assert sum(p.stat().st_size for p in (tmp_path / "scratch").rglob("*") if p.is_file()) < 1000


def test_more_entries_than_any_listing_is_still_refused(tmp_path):
    images = [(f"d/{i}.png", b"") for i in range(120)]
    _zip_upload(tmp_path, "lou.zip", CODE + images)
    prepared = _prepare(tmp_path, "lou", UnpackLimits(max_files=50, max_listed=100))
    assert prepared.root is None
    assert "more than the limit of 100 files and folders" in prepared.problem, prepared.problem


def test_the_batch_grades_it_and_the_students_report_names_what_was_left_out(tmp_path, monkeypatch):
    monkeypatch.setenv("PDL_FAKE_CALLS", str(tmp_path / "calls.log"))
    subs, out = tmp_path / "subs", tmp_path / "out"
    make_submission(tmp_path / "upload", score=9)
    (tmp_path / "upload" / "hw3" / "model.pt").write_bytes(b"\0" * 1_200_000)
    subs.mkdir()
    zip_folder(tmp_path / "upload", subs / "Mia Moe_77_assignsubmission_file_hw.zip")
    report = run_test_batch(subs, out, ["practical4"], limits=SMALL)
    assert (report.progress.graded, report.progress.rejected) == (1, 0)
    folder = out / "submissions" / "Mia_Moe_77"
    result = json.loads((folder / "result.json").read_text())
    assert result["score"] == 9 and result["left_out"] == ["hw3/model.pt (1.1 MiB)"]
    markdown = (folder / "report.md").read_text()
    assert "**Left out of your upload**" in markdown and "- hw3/model.pt (1.1 MiB)" in markdown
    assert "Left out of your upload" in (folder / "report.html").read_text()
