"""Finding, identifying and safely unpacking submissions (no grading involved)."""
import os
import shutil
import stat
import zipfile
from pathlib import Path

import pytest

from tests.support.fake_graders import make_submission, write_entries, zip_bytes, zip_folder
from grader.batch.inputs import Student, UnpackLimits, discover, prepare
from grader.sandbox.scratch import remove_tree


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
    # A link is skipped (tests/batch/test_upload_shapes.py), but its path is checked first.
    "symlink_outside": ([OK_FILE, (_symlink_info("../practical4/data"), b"/etc/passwd")],
                        "points outside the archive (../)"),
    # Not a data file: a data file past the limits is left out instead (test_left_out.py).
    "size_bomb": ([OK_FILE, (_deflated("practical4/zeros.txt"), b"\0" * 3_000_000)],
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
    data = zip_bytes([OK_FILE, (_deflated("practical4/zeros.txt"), b"\0" * 3_000_000)])
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
    # Skipped with a note, never followed: graded without it.
    assert linker.problem is None and not (linker.root / "practical4" / "answers.yaml").exists()
    assert any("skipped practical4/answers.yaml: a symbolic link (to /etc/passwd)" in n
               for n in linker.notes), linker.notes
    broken = prepare(found["broken"], tmp_path / "s2")
    assert broken.root is None and "broken.zip is not a readable zip file" in broken.problem


def test_no_root_ambiguous_root_and_duplicate_entries(tmp_path):
    subs = tmp_path / "subs"
    (subs / "empty" / "stuff").mkdir(parents=True)
    (subs / "empty" / "stuff" / "readme.txt").write_text("hello")
    make_submission(subs / "twice" / "v1")
    make_submission(subs / "twice" / "v2", score=3)      # two different versions
    make_submission(subs / "alice")
    zip_folder(subs / "alice", subs / "alice.zip")
    found, _ = _by_key(subs)
    empty = prepare(found["empty"], tmp_path / "a")
    assert empty.needs_person and "no file of practical4" in empty.problem
    assert "it holds stuff/readme.txt: a person should look at it" in empty.problem
    twice = prepare(found["twice"], tmp_path / "b")
    assert twice.needs_person and "ambiguous submission" in twice.problem
    # A folder and a zip of the same work: graded once (they had been rejected with a 0).
    alice = prepare(found["alice"], tmp_path / "c")
    assert alice.problem is None and "alice, alice.zip: the same files uploaded twice, graded " \
        "once" in alice.notes, alice
    make_submission(subs / "bob")
    make_submission(subs / "bob_v2", score=3)
    zip_folder(subs / "bob_v2", subs / "bob.zip")
    shutil.rmtree(subs / "bob_v2")
    bob = prepare(_by_key(subs)[0]["bob"], tmp_path / "d")
    assert bob.needs_person and "2 uploads of bob with different files: bob/ and bob.zip" \
        in bob.problem, bob.problem


# --- limits checked before anything is written; any failure is that upload's only -------------

def _with_method(data: bytes, name: str, method: int) -> bytes:
    """The zip `data` with entry `name` marked as compressed with `method` (zipfile cannot
    write Deflate64: Windows Explorer's archives are imitated by patching both headers)."""
    out = bytearray(data)
    encoded = name.encode()
    for signature, method_at, name_at in ((b"PK\x03\x04", 8, 30), (b"PK\x01\x02", 10, 46)):
        start = 0
        while (at := out.find(signature, start)) >= 0:
            if out[at + name_at:at + name_at + len(encoded)] == encoded:
                out[at + method_at:at + method_at + 2] = method.to_bytes(2, "little")
            start = at + 4
    return bytes(out)


def _prepare_one(tmp_path, name: str, data: bytes | None = None, limits=UnpackLimits()):
    subs = tmp_path / "subs"
    subs.mkdir(parents=True, exist_ok=True)
    if data is not None:
        (subs / name).write_bytes(data)
    found, _ = _by_key(subs)
    scratch = tmp_path / "scratch"
    return prepare(found[Path(name).stem], scratch, limits), scratch


@pytest.mark.parametrize("method, says", [
    (9, "compressed with Deflate64 (zip method 9) (what Windows Explorer"),
    (93, "compressed with Zstandard (zip method 93)"),
    (77, "compressed with an unknown method (zip method 77)")])
def test_compression_methods_python_cannot_inflate_are_refused_by_name(tmp_path, method, says):
    data = _with_method(zip_bytes([OK_FILE, ("hw3/model_parallel.py", b"X = 1\n" * 1000)]),
                        "hw3/model_parallel.py", method)
    prepared, scratch = _prepare_one(tmp_path, "windows.zip", data)
    assert prepared.root is None and says in prepared.problem, prepared.problem
    assert "zip the folder again with ordinary Deflate" in prepared.problem
    assert [p for p in scratch.rglob("*") if p.is_file()] == []


def test_an_entry_nested_1100_folders_deep_is_refused_before_unpacking(tmp_path):
    deep = "/".join(["d"] * 1100) + "/x.py"
    prepared, scratch = _prepare_one(tmp_path, "deep.zip", zip_bytes([OK_FILE, (deep, b"x")]))
    assert prepared.root is None
    assert "nested 1101 folders deep, more than the limit of 32" in prepared.problem
    assert [p for p in scratch.rglob("*") if p.is_file()] == []


def test_a_folder_upload_nested_1100_deep_is_refused_not_a_recursion_error(tmp_path):
    top = tmp_path / "subs" / "mallory"
    (top / "practical4").mkdir(parents=True)
    (top / "practical4" / "concepts.py").write_text("A = 1\n")
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(1100):
        os.mkdir("d", dir_fd=fd)
        inner = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(fd)
    try:
        prepared, _ = _prepare_one(tmp_path, "mallory")
        assert prepared.root is None and "nested more than 32 folders deep" in prepared.problem
        assert prepared.content_hash.startswith("raw:")       # stable: the next batch skips it
    finally:
        remove_tree(top)     # deeper than pytest's own clean-up of tmp_path can walk


def test_names_too_long_and_a_directory_of_too_many_entries(tmp_path):
    long_name = "practical4/" + "n" * 300 + ".py"
    prepared, _ = _prepare_one(tmp_path, "long.zip", zip_bytes([OK_FILE, (long_name, b"x")]))
    assert "a name is longer than 255 bytes" in prepared.problem
    # The end record claims 60000 entries: refused before zipfile reads the directory.
    data = bytearray(zip_bytes([OK_FILE]))
    end = data.rfind(b"PK\x05\x06")
    data[end + 8:end + 12] = (60000).to_bytes(2, "little") * 2
    many, _ = _prepare_one(tmp_path / "b", "many.zip", bytes(data),
                           limits=UnpackLimits(max_listed=50_000))
    assert "60000 entries, more than the limit of 50000 files and folders" in many.problem


def _directory_of(entries: int, claimed: int, padding: int = 0) -> bytes:
    """A zip of nothing but `entries` minimal central-directory entries whose end record claims
    `claimed` (the adversary's 63 MiB 'one entry' archive, smaller); with `padding` bytes before
    the directory and the record's offset left at 0 (zipfile reads the directory before the end
    record whatever the offset says: a review's way round a count made at the offset)."""
    import struct
    directory = b"".join(struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, 0, 0, 0, 0, 0, 0,
                                     len(name), 0, 0, 0, 0, 0, 0) + name
                         for name in (f"{i:x}".encode() for i in range(entries)))
    return b"\0" * padding + directory + struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, claimed, claimed,
                                                    len(directory), 0, 0)


@pytest.mark.parametrize("entries, padding, says", [
    # A directory far larger than 10,000 entries can honestly take: refused by its size.
    (400_000, 0, "room for more entries than the limit of 10000 files and folders"),
    # Small enough entries to fit that size: counted by their signatures, not the claim.
    (12_000, 0, "12000 entries in its directory (its end record says 1)"),
    (12_000, 4096, "12000 entries in its directory (its end record says 1)"),
])
def test_an_end_record_that_lies_about_its_entries_is_refused_before_zipfile_reads_them(
        tmp_path, monkeypatch, entries, padding, says):
    import zipfile
    def never(*args, **kwargs):
        raise AssertionError("zipfile was asked to read the directory of a refused archive")
    monkeypatch.setattr(zipfile, "ZipFile", never)
    prepared, _ = _prepare_one(tmp_path, "liar.zip", _directory_of(entries, claimed=1, padding=padding),
                               limits=UnpackLimits(max_listed=10_000))
    assert prepared.root is None and says in prepared.problem, prepared.problem
    assert "rejected as a possible archive bomb" in prepared.problem


def test_any_exception_while_preparing_rejects_that_upload_with_its_cause(tmp_path, monkeypatch):
    import grader.batch.inputs as inputs
    def explode(*args, **kwargs):
        raise RuntimeError("something nobody foresaw")
    monkeypatch.setattr(inputs, "find_root", explode)
    make_submission(tmp_path / "subs" / "alice")
    prepared, _ = _prepare_one(tmp_path, "alice")
    assert prepared.root is None
    assert prepared.problem == "could not be unpacked (RuntimeError: something nobody foresaw)"


def test_unpacked_files_are_readable_by_the_sandbox_user_whatever_the_archive_says(tmp_path):
    private = zipfile.ZipInfo("practical4/concepts.py")
    private.external_attr = (stat.S_IFREG | 0o600) << 16
    old = os.umask(0o077)
    try:
        prepared, _ = _prepare_one(tmp_path, "alice.zip", zip_bytes([(private, b"A = 1\n")]))
    finally:
        os.umask(old)
    concepts = prepared.root / "practical4" / "concepts.py"
    assert stat.S_IMODE(concepts.stat().st_mode) == 0o644
    assert stat.S_IMODE(concepts.parent.stat().st_mode) == 0o755


# --- the shapes students upload in ------------------------------------------------------------

HW3 = ("hw3/model_parallel.py", b"import torch\n")


def _root_of(tmp_path, entries: dict[str, bytes | list]) -> tuple:
    """Build SUBMISSIONS from {entry name: bytes of a file, or [(path, bytes)] for a zip, or
    {path: bytes} for a folder}; prepare its one student."""
    found, _ = _by_key(write_entries(tmp_path / "subs", entries))
    assert len(found) == 1, found
    prepared = prepare(next(iter(found.values())), tmp_path / "scratch")
    return prepared


@pytest.mark.parametrize("shape, entries", [
    ("a zip named after a folder it holds", {"alice.zip": [("hw3/" + HW3[0], HW3[1])]}),
    ("Moodle's flat download of hw3.zip", {
        "Jane Doe_42_assignsubmission_file_hw3.zip": [HW3, ("hw3/report.pdf", b"%PDF")]}),
    ("hw3.zip inside the Moodle folder", {
        "Jane Doe_42_assignsubmission_file_": {"hw3.zip": zip_bytes([HW3])}}),
    ("a top folder named after the student", {"alice": {"Alice Smith/" + HW3[0]: HW3[1]}}),
    ("files without their folder, in Moodle's folder", {
        "Jane Doe_42_assignsubmission_file_": {"model_parallel.py": HW3[1],
                                               "report.pdf": b"%PDF"}}),
    ("files without their folder, in a zip of any name", {
        "alice.zip": [("my homework/model_parallel.py", HW3[1]), ("my homework/answers.yaml", b"{}")]}),
    ("Moodle's flat download of loose files", {
        "Jane Doe_42_assignsubmission_file_model_parallel.py": HW3[1],
        "Jane Doe_42_assignsubmission_file_report.pdf": b"%PDF"}),
])
def test_common_upload_shapes_are_found_and_graded(tmp_path, shape, entries):
    prepared = _root_of(tmp_path, entries)
    assert prepared.problem is None, f"{shape}: {prepared.problem}"
    assert (prepared.root / "hw3" / "model_parallel.py").read_bytes() == HW3[1], (
        f"{shape}: hw3/model_parallel.py not at the root found ({prepared.root}): "
        f"{sorted(p.relative_to(tmp_path).as_posix() for p in prepared.root.rglob('*'))}")
    assert not (prepared.root / "hw3" / "hw3").exists()


def test_loose_files_say_where_they_were_put(tmp_path):
    prepared = _root_of(tmp_path, {"alice": {"model_parallel.py": HW3[1], "report.pdf": b"%PDF"}})
    assert any("graded as hw3/: the files of hw3 without their folder" in n for n in prepared.notes)
    assert (prepared.root / "hw3" / "report.pdf").is_file()


def test_loose_files_of_several_assignments_each_go_to_their_folder(tmp_path):
    prepared = _root_of(tmp_path, {"alice": {"model_parallel.py": HW3[1], "concepts.py": b"A = 1"}})
    assert prepared.problem is None, prepared.problem
    assert (prepared.root / "hw3" / "model_parallel.py").read_bytes() == HW3[1]
    assert (prepared.root / "practical4" / "concepts.py").read_bytes() == b"A = 1"


def test_an_upload_with_nothing_expected_anywhere_needs_a_person(tmp_path):
    prepared = _root_of(tmp_path, {"alice": {"hw3/homework.docx": b"PK...", "notes.txt": b"hi"}})
    assert prepared.root is None and prepared.needs_person
    assert "it holds notes.txt, hw3/homework.docx" in prepared.problem
    # An answer sheet alone in its assignment's folder is something to grade.
    sheet_only = _root_of(tmp_path / "b", {"bob": {"hw3/answers.yaml": b"task1: {}\n"}})
    assert sheet_only.problem is None and not sheet_only.needs_person


def test_one_zip_per_assignment_is_one_submission(tmp_path):
    """practical4.zip holding practical4/ beside hw3.zip holding hw3/ unpack into two folders
    that each hold an assignment: gathered, not refused as ambiguous (a 0 in Moodle)."""
    prepared = _root_of(tmp_path, {"Kai Kask_321_assignsubmission_file_": {
        "practical4.zip": zip_bytes([OK_FILE]), "hw3.zip": zip_bytes([HW3])}})
    assert prepared.problem is None, prepared.problem
    assert (prepared.root / "practical4" / "concepts.py").read_bytes() == OK_FILE[1]
    assert (prepared.root / "hw3" / "model_parallel.py").read_bytes() == HW3[1]
    assert "hw3/ graded from hw3/hw3/ (one folder per assignment in the upload)" in prepared.notes
    assert prepared.root.name.startswith("_gathered")


def test_zips_holding_different_assignments_are_gathered_even_when_unequal(tmp_path):
    """practical4+practical5 in one zip and hw3 in another: hw3 was silently left out (the zip
    with two assignments won) and graded as missing."""
    prepared = _root_of(tmp_path, {"alice": {
        "p45.zip": zip_bytes([OK_FILE, ("practical5/practical5_dp.py", b"A = 1\n")]),
        "hw3.zip": zip_bytes([HW3])}})
    assert prepared.problem is None, prepared.problem
    assert (prepared.root / "practical4" / "concepts.py").is_file()
    assert (prepared.root / "hw3" / "model_parallel.py").read_bytes() == HW3[1]


def test_an_assignment_folder_inside_a_folder_of_its_name_is_the_assignments(tmp_path):
    """An adversary's mixed shapes: practical4.zip holding practical4/ beside a practical5.zip of
    loose files; practical4 was graded from practical4/practical4/, every file missing."""
    prepared = _root_of(tmp_path, {"alice": {
        "practical4.zip": zip_bytes([OK_FILE]),
        "practical5.zip": zip_bytes([("practical5_dp.py", b"A = 1\n"), ("practical5_single.py", b"A = 1\n")])}})
    assert prepared.problem is None, prepared.problem
    assert (prepared.root / "practical4" / "concepts.py").read_bytes() == OK_FILE[1]
    assert (prepared.root / "practical5" / "practical5_dp.py").is_file()
    assert any("practical4/ graded from" in note for note in prepared.notes), prepared.notes
    assert not any(p.name.startswith("_practical4") for p in prepared.root.iterdir())
    again = _root_of(tmp_path / "again", {"alice": {
        "practical4.zip": zip_bytes([OK_FILE]),
        "practical5.zip": zip_bytes([("practical5_dp.py", b"A = 1\n"), ("practical5_single.py", b"A = 1\n")])}})
    assert again.content_hash == prepared.content_hash, "an unchanged upload is skipped next time"


def test_two_versions_of_one_assignment_stay_ambiguous(tmp_path):
    prepared = _root_of(tmp_path, {"alice": {"v1/" + HW3[0]: HW3[1], "v2/" + HW3[0]: b"import os\n"}})
    assert prepared.root is None and prepared.needs_person
    assert "ambiguous submission: several folders hold the assignments (v1/, v2/)" in prepared.problem


def test_an_entry_that_is_a_file_and_a_folder_is_said_in_the_uploads_own_names(tmp_path):
    prepared, scratch = _prepare_one(tmp_path, "clash.zip", zip_bytes([
        ("practical4/concepts.py/", b""), ("practical4/concepts.py", b"A = 1\n")]))
    assert prepared.problem == ("could not be unpacked: 'practical4/concepts.py' is both a file "
                                "and a folder in the upload"), prepared.problem
    assert str(scratch) not in prepared.problem


def test_keys_stay_what_earlier_gradebooks_have_and_collisions_do_not_depend_on_order(tmp_path):
    """A student graded under 'M_e_Tamm_7' (the ASCII-only keys) keeps that key (their runs and
    overrides), a new one gets the letters; only names that make one key get their name's hash,
    whatever else is in the folder."""
    subs = tmp_path / "subs"
    for name in ("Mäe Tamm_7_assignsubmission_file_", "a b", "a_b", "Ju\u0308ri", "Jüri.zip"):
        (subs / name).mkdir(parents=True) if not name.endswith(".zip") else \
            (subs / name).write_bytes(zip_bytes([OK_FILE]))
    found, _ = _by_key(subs)
    assert "Mäe_Tamm_7" in found
    known, _ = discover(subs, [Student("M_e_Tamm_7", "Mäe Tamm", "7")])
    assert "M_e_Tamm_7" in {s.student.key for s in known}
    pair = sorted(k for k in found if k.startswith("a_b"))
    assert len(pair) == 2 and all(len(k) == len("a_b_") + 8 for k in pair), pair
    # The same name typed two ways (a macOS folder and a zip) is one student's two uploads.
    juri = [s for k, s in found.items() if s.student.name in ("Ju\u0308ri", "Jüri")]
    assert len(juri) == 1 and juri[0].several and len(juri[0].sources) == 2
    (subs / "a_b").rmdir()
    again, _ = _by_key(subs)
    assert "a_b" in again, "without the other name, the plain key"


def test_a_derived_key_is_never_another_uploads_own_key(tmp_path):
    """An upload named like Jüri's derived key (anyone can compute it) had become one
    submission with Jüri's folder: Jüri zeroed, the row under the other name."""
    subs = tmp_path / "subs"
    for name in ("Jüri Tamm", "Jüri_Tamm"):     # one key, so each gets a derived one
        (subs / name).mkdir(parents=True)
    first, _ = _by_key(subs)
    juri = next(k for k, s in first.items() if s.student.name == "Jüri Tamm")
    (subs / f"{juri}.zip").write_bytes(zip_bytes([OK_FILE]))
    found, _ = _by_key(subs)
    assert len(found) == 3 and not any(s.problem for s in found.values()), \
        {k: (s.student.name, s.problem) for k, s in found.items()}
    assert found[juri].student.name == f"{juri}", "the upload named like the key keeps its name"
    assert {s.student.name for s in found.values()} == {"Jüri Tamm", "Jüri_Tamm", juri}


def test_a_very_long_upload_name_makes_a_key_a_folder_can_hold(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / ("b" * 251 + ".zip")).write_bytes(zip_bytes([OK_FILE]))
    (subs / ("b" * 250 + "c.zip")).write_bytes(zip_bytes([OK_FILE]))
    found, _ = _by_key(subs)
    assert len(found) == 2 and all(len(key) <= 120 for key in found), sorted(found)


def test_an_archive_the_batch_does_not_unpack_is_a_student_for_a_person(tmp_path):
    """A plain-layout carol.tar.gz or dave.7z had been ignored with a console line: the student
    was on no list at all."""
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "carol.tar.gz").write_bytes(b"\x1f\x8b\x08\x00" + b"\x00" * 40)
    (subs / "dave.7z").write_bytes(b"7z\xbc\xaf\x27\x1c" + b"\x00" * 40)
    (subs / "notes.txt").write_text("the instructor's")
    found, notes = _by_key(subs)
    assert sorted(found) == ["carol", "dave"] and any("ignored notes.txt" in n for n in notes)
    for key in ("carol", "dave"):
        prepared = prepare(found[key], tmp_path / key)
        assert prepared.needs_person and prepared.problem, prepared


def test_a_folder_upload_whose_code_alone_is_over_the_limits_tells_the_student_to_leave_data_out(
        tmp_path):
    """A red team's reference code beside a large checkpoint scored 0 with only "a possible
    archive bomb": such data is now left out (test_left_out.py); where what is left is still
    over, the student is told what to hand in."""
    subs = tmp_path / "subs"
    make_submission(subs / "dora")
    (subs / "dora" / "data").mkdir()
    (subs / "dora" / "data" / "checkpoint.pt").write_bytes(b"\0" * 600_000)
    (subs / "dora" / "data" / "generated.py").write_bytes(b"#" * 1_100_000)
    found, _ = _by_key(subs)
    prepared = prepare(found["dora"], tmp_path / "scratch", UnpackLimits(max_total_bytes=1_000_000))
    assert prepared.root is None
    assert "even with 1 data file (585.9 KiB) left out" in prepared.problem, prepared.problem
    assert "hand in the code, answers and report without datasets or checkpoints" in \
        prepared.problem, prepared.problem