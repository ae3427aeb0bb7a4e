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
    assert list((prepared.root / "venv").iterdir()) == []


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


# --- a red team's uploads (adv20) ------------------------------------------------------------

@pytest.mark.parametrize("prefix", ["", "pdl/"])
def test_a_course_folder_that_is_itself_a_venv_keeps_the_students_code(tmp_path, prefix):
    """`python -m venv .` in the course folder: bin/ and lib/ beside practical4/. The whole
    folder had been left out as the environment, and the upload sent to a person."""
    environment = [(f"{prefix}pyvenv.cfg", b"home = /usr/bin\n")] + [
        (f"{prefix}lib/python3.11/site-packages/pkg/m{i}.py", b"X = 1\n") for i in range(60)]
    code = [(prefix + name, data) for name, data in CODE]
    _zip_upload(tmp_path, "gina.zip", code + environment)
    prepared = _prepare(tmp_path, "gina")
    assert prepared.problem is None, prepared.problem
    assert prepared.left_out == [f"{prefix or './'} (a Python environment)"]
    assert _files(prepared.root) == ["hw3/model_parallel.py", "practical4/concepts.py"]


def test_a_folder_upload_that_is_itself_a_venv_keeps_the_students_code(tmp_path):
    make_submission(tmp_path / "subs" / "hana")
    (tmp_path / "subs" / "hana" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    for i in range(60):
        (tmp_path / "subs" / "hana" / "lib").mkdir(exist_ok=True)
        (tmp_path / "subs" / "hana" / "lib" / f"m{i}.py").write_text("X = 1\n")
    prepared = _prepare(tmp_path, "hana")
    assert prepared.problem is None, prepared.problem
    assert prepared.left_out == ["./ (a Python environment)"]
    assert "practical4/concepts.py" in _files(prepared.root)


def test_many_environments_cost_a_lookup_per_folder_of_each_path_not_one_per_environment():
    """25,000 `pyvenv.cfg` folders 28 deep had taken 15 minutes of the batch's one process:
    every entry was compared with every environment."""
    import zipfile
    from grader.batch import unpack
    deep = [f"d{i}" for i in range(28)]
    entries = [(zipfile.ZipInfo("/".join(deep + [f"v{i}", "pyvenv.cfg"])),
                deep + [f"v{i}", "pyvenv.cfg"]) for i in range(2000)]
    entries += [(zipfile.ZipInfo("/".join(deep + [f"n{i}", "x.py"])), deep + [f"n{i}", "x.py"])
                for i in range(2000)]

    class Counted(set):
        looked = 0

        def __contains__(self, key):
            Counted.looked += 1
            return super().__contains__(key)
    environments = Counted(unpack._environment_parts(entries))
    kept = unpack._without_data(entries, environments, unpack.Budget(SMALL, leave_out=True))
    assert len(kept) == 2000
    assert Counted.looked <= len(entries), Counted.looked


def test_more_entries_than_any_listing_says_what_to_hand_in(tmp_path):
    images = [(f"data/{i}.png", b"") for i in range(120)]
    _zip_upload(tmp_path, "carol.zip", CODE + images)
    prepared = _prepare(tmp_path, "carol", UnpackLimits(max_files=50, max_listed=100))
    assert "hand in the code, answers and report without datasets" in prepared.problem


@pytest.mark.parametrize("name", ["hw3/log/host_123.1712.pt.trace.json",
                                  "hw3/runs/events.out.tfevents.1712.host.0",
                                  "hw3/report1.nsys-rep",
                                  "data/cifar-10-batches-py/data_batch_1"])
def test_what_profilers_tensorboard_and_torchvision_write_is_left_out(tmp_path, name):
    _zip_upload(tmp_path, "ivan.zip", CODE + [(name, b"\0" * 1_200_000)])
    prepared = _prepare(tmp_path, "ivan")
    assert prepared.problem is None, prepared.problem
    assert len(prepared.left_out) == 1 and name.split("/")[1 if "cifar" in name else 0] in \
        prepared.left_out[0], prepared.left_out
    assert _files(prepared.root) == ["hw3/model_parallel.py", "practical4/concepts.py"]


def test_the_same_upload_on_time_and_in_late_is_within_the_limits_once(tmp_path):
    """Each upload has limits of its own: an identical late/ copy had counted twice and
    rejected the student with a 0."""
    work = zip_bytes(CODE + [("hw3/notes.txt", b"n" * 600_000)])
    for folder in ("subs/Jane Doe_7_assignsubmission_file_", "subs/late/Jane Doe_7_assignsubmission_file_"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "work.zip").write_bytes(work)
    prepared = _prepare(tmp_path, "Jane_Doe_7")
    assert prepared.problem is None, prepared.problem
    assert any("the same files uploaded twice, graded once" in n for n in prepared.notes)


def test_a_deflate64_file_in_an_environment_is_left_out_with_it(tmp_path):
    data = zip_bytes(CODE + [(".venv/pyvenv.cfg", b"home = /usr\n"),
                             (".venv/Lib/site-packages/torch/lib/torch_cuda.dll", b"\0" * 5000)])
    _zip_upload(tmp_path, "eve.zip", _with_method(
        data, ".venv/Lib/site-packages/torch/lib/torch_cuda.dll", 9))
    prepared = _prepare(tmp_path, "eve", UnpackLimits())
    assert prepared.problem is None, prepared.problem
    assert prepared.left_out == [".venv/ (a Python environment)"]


def test_the_same_code_handed_in_again_without_the_data_is_graded_again(tmp_path):
    """Its report had kept naming 5,016 left-out images: the upload was skipped as unchanged."""
    make_submission(tmp_path / "a" / "subs" / "kai")
    (tmp_path / "a" / "subs" / "kai" / "hw3" / "model.pt").write_bytes(b"\0" * 1_200_000)
    make_submission(tmp_path / "b" / "subs" / "kai")
    with_data, without = _prepare(tmp_path / "a", "kai"), _prepare(tmp_path / "b", "kai")
    assert with_data.left_out and not without.left_out
    assert with_data.content_hash != without.content_hash
    assert with_data.content_hash.startswith(without.content_hash + "+without:")


def test_the_left_out_list_is_bounded(tmp_path):
    images = [(f"data/img{i:04}.png", b"x") for i in range(300)]
    _zip_upload(tmp_path, "lea.zip", CODE + images)
    prepared = _prepare(tmp_path, "lea", UnpackLimits(max_files=50))
    assert len(prepared.left_out) == 201 and prepared.left_out[-1] == "and 100 more (100 bytes)"
