"""Upload shapes that zeroed honest students (the batch audit's findings 3, 7, 8, 9, 11, 12 and
16): each is graded, or where the grader cannot decide, left for a person (no grade, no zero).

Nothing is graded here: discover + prepare (unpack, find the root), or the layout and unpack
functions themselves."""
import os
import stat
import zipfile
from pathlib import Path

import pytest

from tests.support.fake_graders import write_entries, zip_bytes
from grader.batch.inputs import discover, prepare
from grader.batch.layout import NeedsPerson, find_root
from grader.batch.unpack import Budget, UnpackLimits, extract_zip

CONCEPTS = ("concepts.py", b"import torch\nANSWER = 42\n")
SHEET = ("answers.yaml", b"assignment: practical4\nanswers:\n  part1.output_shape: {value: [64, 1000]}\n")
P5 = ("practical5_dp.py", b"import torch.nn as nn\n")
HW3 = ("model_parallel.py", b"import torch\n")


def _course(prefix: str = "") -> list[tuple[str, bytes]]:
    """A course folder as students keep it: practical4/, practical5/, hw3/ under `prefix`."""
    return [(f"{prefix}practical4/{CONCEPTS[0]}", CONCEPTS[1]), (f"{prefix}practical4/{SHEET[0]}", SHEET[1]),
            (f"{prefix}practical5/{P5[0]}", P5[1]), (f"{prefix}hw3/{HW3[0]}", HW3[1])]


def _prepare(tmp_path: Path, entries: dict):
    """SUBMISSIONS from {entry name: bytes of a file, [(path, bytes)] for a zip, or {path:
    bytes} for a folder}; its one student prepared."""
    found, _ = discover(write_entries(tmp_path / "subs", entries))
    assert len(found) == 1, found
    return prepare(found[0], tmp_path / "scratch")


def _graded(prepared) -> None:
    assert prepared.problem is None and not prepared.needs_person, prepared.problem


# --- finding 3: a course folder zipped from an absolute path ------------------------------------

@pytest.mark.parametrize("entries", [
    # `zip -r work.zip /home/jane/pdl` in Moodle's folder: work/home/jane/pdl/practical4/
    {"Jane Deep_203_assignsubmission_file_": {"work.zip": zip_bytes(_course("home/jane/pdl/"))}},
    # macOS `zip -r work.zip Users/jane/pdl`, Moodle's flat download
    {"Mac Abs_204_assignsubmission_file_work.zip": _course("Users/jane/pdl/")},
], ids=["home-jane-pdl", "Users-jane-pdl"])
def test_a_course_folder_zipped_from_an_absolute_path_is_found(tmp_path, entries):
    prepared = _prepare(tmp_path, entries)
    _graded(prepared)
    assert prepared.root.as_posix().endswith("/jane/pdl")
    assert (prepared.root / "practical4" / "concepts.py").read_bytes() == CONCEPTS[1]


def test_files_nested_deeper_than_the_search_need_a_person_never_nothing_found(tmp_path):
    deep = "a/b/c/d/e/f/g/h/"
    prepared = _prepare(tmp_path, {"alice.zip": _course(deep)})
    assert prepared.root is None and prepared.needs_person, prepared.problem
    assert "no assignment folder found" not in prepared.problem
    assert f"files of the assignments were found (alice/{deep}hw3/model_parallel.py" in prepared.problem
    assert "within 6 folders of the top" in prepared.problem


# --- finding 7: the same upload twice -----------------------------------------------------------

def test_the_same_zip_uploaded_twice_is_graded_once(tmp_path):
    """Moodle keeps `work.zip` and `work (1).zip`: identical, not an ambiguity."""
    course = _course("pdl/")
    prepared = _prepare(tmp_path, {"Twice Same_205_assignsubmission_file_work.zip": course,
                                   "Twice Same_205_assignsubmission_file_work (1).zip": course})
    _graded(prepared)
    assert prepared.root == tmp_path / "scratch" / "work" / "pdl"
    assert "work (1)/pdl/ is a copy of work/pdl/ (the same files uploaded twice): graded once" \
        in prepared.notes


def test_the_same_loose_files_twice_are_graded_once(tmp_path):
    loose = [CONCEPTS, SHEET]
    prepared = _prepare(tmp_path, {"Kai_7_assignsubmission_file_work.zip": loose,
                                   "Kai_7_assignsubmission_file_work (1).zip": loose})
    _graded(prepared)
    assert (prepared.root / "practical4" / "answers.yaml").read_bytes() == SHEET[1]
    assert "work (1)/ is a copy of work/ (the same files uploaded twice): graded once" in prepared.notes


def test_one_assignment_twice_beside_another_is_gathered(tmp_path):
    p4 = [("practical4/" + CONCEPTS[0], CONCEPTS[1])]
    prepared = _prepare(tmp_path, {"alice": {"p4.zip": zip_bytes(p4), "p4 (1).zip": zip_bytes(p4),
                                             "hw3.zip": zip_bytes([("hw3/" + HW3[0], HW3[1])])}})
    _graded(prepared)
    assert (prepared.root / "practical4" / "concepts.py").is_file()
    assert (prepared.root / "hw3" / "model_parallel.py").is_file()


def test_two_different_versions_need_a_person_not_a_zero(tmp_path):
    prepared = _prepare(tmp_path, {"alice": {
        "v1/practical4/concepts.py": b"A = 1\n", "v2/practical4/concepts.py": b"A = 2\n"}})
    assert prepared.root is None and prepared.needs_person
    assert "ambiguous submission: several folders hold the assignments (v1/, v2/) with " \
           "different files" in prepared.problem


# --- finding 8: a folder of other case; loose files beside another assignment's folder ---------

def test_an_assignment_folder_named_in_other_case_is_that_assignments(tmp_path):
    course = {rel.replace("practical4/", "Practical4/"): data for rel, data in _course()}
    prepared = _prepare(tmp_path, {"Caps Folder_301_assignsubmission_file_": course})
    _graded(prepared)
    assert prepared.root == tmp_path / "scratch"
    assert (prepared.root / "practical4" / "concepts.py").read_bytes() == CONCEPTS[1]
    assert any(n.startswith("Practical4/ graded as practical4/") for n in prepared.notes), prepared.notes


def test_loose_files_beside_another_assignments_folder_get_their_own(tmp_path):
    prepared = _prepare(tmp_path, {"Loose Mix_302_assignsubmission_file_": {
        "practical5/" + P5[0]: P5[1], CONCEPTS[0]: CONCEPTS[1], SHEET[0]: SHEET[1],
        "helper.py": b"X = 1\n",
        # An environment zipped with the project: its packages' files are no assignment's.
        "venv/pyvenv.cfg": b"home = /usr/bin\n", "venv/lib/python3.11/site-packages/pkg/sample.py": b""}})
    _graded(prepared)
    root = prepared.root
    assert not (root / "practical10").exists()
    assert (root / "practical5" / "practical5_dp.py").is_file()
    assert sorted(p.name for p in (root / "practical4").iterdir()) == \
        ["answers.yaml", "concepts.py", "helper.py"]
    assert any("graded as practical4/: the files of practical4 without their folder" in n
               for n in prepared.notes), prepared.notes


def test_loose_files_above_the_root_get_their_folder_in_it(tmp_path):
    prepared = _prepare(tmp_path, {"alice.zip": [("pdl/practical5/" + P5[0], P5[1]), CONCEPTS]})
    _graded(prepared)
    assert prepared.root.name == "pdl"
    assert (prepared.root / "practical4" / "concepts.py").read_bytes() == CONCEPTS[1]


def test_loose_files_of_one_assignment_in_folders_that_differ_need_a_person(tmp_path):
    prepared = _prepare(tmp_path, {"alice": {"practical5/" + P5[0]: P5[1],
                                             "old/concepts.py": b"A = 1\n", "new/concepts.py": b"A = 2\n"}})
    assert prepared.root is None and prepared.needs_person
    assert "the files of practical4 without their folder are in several folders with different " \
           "content (new/, old/)" in prepared.problem


# --- finding 9: loose files of several assignments ----------------------------------------------

def test_loose_files_of_several_assignments_each_go_to_their_own_folder(tmp_path):
    prepared = _prepare(tmp_path, {"Loose Plus_172_assignsubmission_file_": {
        CONCEPTS[0]: CONCEPTS[1], SHEET[0]: SHEET[1], HW3[0]: HW3[1], "utils.py": b"U = 1\n"}})
    _graded(prepared)
    root = prepared.root
    assert sorted(p.name for p in (root / "practical4").iterdir()) == ["answers.yaml", "concepts.py", "utils.py"]
    assert sorted(p.name for p in (root / "hw3").iterdir()) == ["model_parallel.py", "utils.py"]
    assert any("utils.py (in the top of the upload) put into each of hw3/, practical4/" in n
               for n in prepared.notes), prepared.notes


def test_moodles_flat_download_of_several_assignments_files(tmp_path):
    # The answer sheet says whose it is by its answer ids alone (no `assignment:` line).
    sheet = b"answers:\n  part1.output_shape: {value: [64, 1000]}\n  part3.layer1_device: {value: cuda:0}\n"
    prefix = "Flat Plus_173_assignsubmission_file_"
    prepared = _prepare(tmp_path, {prefix + CONCEPTS[0]: CONCEPTS[1], prefix + "answers.yaml": sheet,
                                   prefix + P5[0]: P5[1]})
    _graded(prepared)
    assert (prepared.root / "practical4" / "answers.yaml").read_bytes() == sheet
    assert sorted(p.name for p in (prepared.root / "practical5").iterdir()) == ["practical5_dp.py"]


def test_a_sheet_beside_several_assignments_that_says_whose_in_no_way_needs_a_person(tmp_path):
    prepared = _prepare(tmp_path, {"alice": {CONCEPTS[0]: CONCEPTS[1], HW3[0]: HW3[1],
                                             "answers.yaml": b"answers: {}\n"}})
    assert prepared.root is None and prepared.needs_person
    assert "answers.yaml is beside the files of hw3, practical4 and says whose it is in no way" \
        in prepared.problem


# --- finding 11: symbolic links are skipped, never followed -------------------------------------

def _link(name: str, target: bytes) -> tuple[zipfile.ZipInfo, bytes]:
    info = zipfile.ZipInfo(name)
    info.external_attr = (stat.S_IFLNK | 0o777) << 16     # what `zip -ry` and Finder store
    return info, target


def test_a_link_in_a_zip_is_skipped_with_a_note(tmp_path):
    prepared = _prepare(tmp_path, {"Finder Zip_232_assignsubmission_file_": {"pdl.zip": zip_bytes(
        _course("pdl/") + [_link("pdl/practical4/data", b"/Users/jane/datasets")])}})
    _graded(prepared)
    data = prepared.root / "practical4" / "data"
    assert not data.exists() and not data.is_symlink()
    # The target is said (what `zip -y` stored), and the link is kept for the reports (adv39 F3).
    assert "skipped pdl/practical4/data in pdl.zip: a symbolic link (to /Users/jane/datasets); " \
           "links are never followed, so the file it names is not graded: hand in the file " \
           "itself" in prepared.notes, prepared.notes
    assert prepared.links == [{"path": "pdl/practical4/data", "in": "pdl.zip",
                               "target": "/Users/jane/datasets", "into": None}], prepared.links


def test_a_link_in_a_folder_upload_is_skipped_never_followed(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("not the student's")
    folder = tmp_path / "subs" / "alice"
    (folder / "practical4").mkdir(parents=True)
    (folder / "practical4" / "concepts.py").write_bytes(CONCEPTS[1])
    os.symlink(secret, folder / "practical4" / "notes.txt")
    os.symlink(tmp_path, folder / "everything")
    prepared = _prepare(tmp_path, {})
    _graded(prepared)
    assert sorted(p.name for p in (tmp_path / "scratch").rglob("*")) == ["concepts.py", "practical4"]
    assert f"skipped practical4/notes.txt: a symbolic link (to {secret}); links are never " \
           "followed, so the file it names is not graded: hand in the file itself" \
           in prepared.notes, prepared.notes
    # Into SUBMISSIONS' parent, not another upload: no flag.
    assert [(link["path"], link["into"]) for link in prepared.links] == [
        ("everything", None), ("practical4/notes.txt", None)], prepared.links
    # A FIFO is still refused (reading one would block the batch).
    os.mkfifo(folder / "practical4" / "pipe")
    fifo = _prepare(tmp_path, {})
    assert fifo.root is None and not fifo.needs_person
    assert "pipe is not a regular file" in fifo.problem


def test_a_name_left_in_latin_1_by_unzip_is_said_as_the_student_wrote_it(tmp_path):
    """Messages name such a file as text (they had carried a lone surrogate, printed as
    `L\\udcf6sung.py` on the console, or not at all where its encoding is strict)."""
    folder = tmp_path / "subs" / "alice" / "practical4"
    folder.mkdir(parents=True)
    (folder / "concepts.py").write_bytes(CONCEPTS[1])
    os.symlink(b"L\xf6sung.py", os.path.join(os.fsencode(folder), b"L\xf6sung-link.py"))
    prepared = _prepare(tmp_path, {})
    _graded(prepared)
    assert ("skipped practical4/Lösung-link.py: a symbolic link (to Lösung.py); links are "
            "never followed, so the file it names is not graded: hand in the file itself") \
        in prepared.notes, prepared.notes
    assert [(link["path"], link["target"]) for link in prepared.links] == [
        ("practical4/Lösung-link.py", "Lösung.py")], prepared.links
    os.mkfifo(os.path.join(os.fsencode(folder), b"R\xf6hre"))
    fifo = _prepare(tmp_path, {})
    assert "Röhre is not a regular file" in fifo.problem
    assert all(text.encode("utf-8") for text in [fifo.problem, *prepared.notes])


def test_a_link_made_an_entry_of_the_submissions_folder_needs_a_person(tmp_path):
    elsewhere = tmp_path / "elsewhere" / "alice"
    (elsewhere / "practical4").mkdir(parents=True)
    (elsewhere / "practical4" / "concepts.py").write_bytes(CONCEPTS[1])
    (tmp_path / "subs").mkdir()
    os.symlink(elsewhere, tmp_path / "subs" / "alice")
    prepared = _prepare(tmp_path, {})
    assert prepared.root is None and prepared.needs_person
    assert "alice is a symbolic link in the submissions folder" in prepared.problem


# --- finding 12: a .zip that is no zip ----------------------------------------------------------

def test_a_rar_renamed_zip_needs_a_person(tmp_path):
    rar = b"Rar!\x1a\x07\x01\x00rest-of-a-rar-archive"
    prepared = _prepare(tmp_path, {"Renamed Rar_222_assignsubmission_file_": {"work.zip": rar}})
    assert prepared.root is None and prepared.needs_person
    assert "work.zip is not a readable zip file: it is a RAR archive named .zip" in prepared.problem
    # A zip that is damaged (truncated) is no verdict on the work either (audit F5: a 0 had
    # gone to Moodle for an upload that did not finish): a person's, with no grade.
    truncated = zip_bytes(_course())[:200]
    archive = tmp_path / "work.zip"
    archive.write_bytes(truncated)
    with pytest.raises(NeedsPerson) as raised:
        extract_zip(archive, tmp_path / "out", Budget(UnpackLimits()))
    assert "no end-of-archive record" in str(raised.value)
    archive.write_bytes(b"7z\xbc\xaf\x27\x1c" + b"\0" * 40)
    with pytest.raises(NeedsPerson, match="work.zip is not a readable zip file: it is a 7z archive"):
        extract_zip(archive, tmp_path / "out", Budget(UnpackLimits()))


# --- finding 16: a file named in other case -----------------------------------------------------

def test_a_file_named_in_other_case_is_the_templates(tmp_path):
    prepared = _prepare(tmp_path, {"Upper PY_305_assignsubmission_file_": {
        "practical4/concepts.PY": CONCEPTS[1], "practical4/Answers.YAML": SHEET[1]}})
    _graded(prepared)
    assert sorted(p.name for p in (prepared.root / "practical4").iterdir()) == ["answers.yaml", "concepts.py"]
    assert "practical4/concepts.PY graded as practical4/concepts.py (the template's name: Linux, " \
           "unlike Windows and macOS, tells names apart by their case)" in prepared.notes
    # Beside a file of the template's own name, the other stays as it is.
    top = tmp_path / "top"
    (top / "practical4").mkdir(parents=True)
    (top / "practical4" / "concepts.py").write_bytes(CONCEPTS[1])
    (top / "practical4" / "CONCEPTS.PY").write_bytes(b"old = True\n")
    assert find_root(top, assignments=["practical4"]) == top
    assert (top / "practical4" / "concepts.py").read_bytes() == CONCEPTS[1]
    assert (top / "practical4" / "CONCEPTS.PY").read_bytes() == b"old = True\n"


def test_loose_files_named_in_other_case_are_found(tmp_path):
    """Moodle's flat download of `Concepts.PY` alone: 'no file of practical4 found' before."""
    prepared = _prepare(tmp_path, {"Jane_9_assignsubmission_file_Concepts.PY": CONCEPTS[1]})
    _graded(prepared)
    assert (prepared.root / "practical4" / "concepts.py").read_bytes() == CONCEPTS[1]


# --- finding 16: Moodle's submissions one level down (an instructor's late/) --------------------

def _moodle(course_prefix: str = "") -> dict:
    return {rel: data for rel, data in _course(course_prefix)}


def test_moodle_submissions_in_a_folder_of_their_own_are_each_their_students(tmp_path):
    """`late/Jane Doe_5_assignsubmission_file_/` had been graded as a student called `late`,
    with no participant id: no Moodle row reached Jane."""
    subs = write_entries(tmp_path / "subs", {
        "Bob Ray_6_assignsubmission_file_": _moodle(),
        "late/Jane Doe_5_assignsubmission_file_": _moodle(),
        "late/Jim Poe_7_assignsubmission_file_work.zip": _course()})
    found, notes = discover(subs)
    assert [(s.student.name, s.student.participant_id) for s in found] == [
        ("Bob Ray", "6"), ("Jane Doe", "5"), ("Jim Poe", "7")]
    assert "late/ holds Moodle submissions: each of them graded as its student's" in notes
    for submission in found:
        _graded(prepare(submission, tmp_path / "scratch" / submission.student.key))


def test_a_students_folder_is_never_taken_for_one_of_moodle_submissions(tmp_path):
    found, notes = discover(write_entries(tmp_path / "subs", {"alice": _moodle("pdl/")}))
    assert [s.student.name for s in found] == ["alice"] and not notes


@pytest.mark.parametrize("same", [True, False], ids=["same-files", "different-files"])
def test_a_student_on_time_and_late_is_graded_once_or_left_to_a_person(tmp_path, same):
    late = _moodle() if same else {**_moodle(), "practical4/concepts.py": b"A = 2\n"}
    found, _ = discover(write_entries(tmp_path / "subs", {
        "Jane Doe_5_assignsubmission_file_": _moodle(),
        "late/Jane Doe_5_assignsubmission_file_": late}))
    assert len(found) == 1 and found[0].several, found
    prepared = prepare(found[0], tmp_path / "scratch")
    if same:
        _graded(prepared)
        assert any("graded once" in note for note in prepared.notes), prepared.notes
    else:
        assert prepared.root is None and prepared.needs_person, prepared.problem
        # Both folders have one name: only where each is tells the late one, and the advice
        # is what works here (an instructor's day read "(or keep one and upload again)").
        assert ("2 uploads of Jane Doe with different files: Jane Doe_5_assignsubmission_file_/ "
                "and late/Jane Doe_5_assignsubmission_file_/. Which one counts is for a person "
                "to decide: move the other out of subs/ and run the batch again"
                == prepared.problem), (
            f"expected the message to place each upload (late/ for the late one) and say to move "
            f"one out; observed: {prepared.problem!r} (grader/batch/inputs.py _one_of_the_copies)")


# --- red team adv19 C/C2: a folder named like Moodle's inside a student's own ---------------------

@pytest.mark.parametrize("others", [
    # A Moodle download with a plain folder beside it (bob's work, e-mailed and unzipped)
    {"Vera Victim_401101_assignsubmission_file_": _moodle(),
     "Olga Other_401102_assignsubmission_file_": _moodle()},
    # A class of plain folders
    {"alice": _moodle(), "carol": _moodle()},
], ids=["beside-a-moodle-download", "plain-class"])
def test_a_folder_named_like_moodles_inside_a_students_folder_is_that_students(tmp_path, others):
    """bob/ held his practical4/ and a folder named like Vera's Moodle submission: bob/ had been
    read as a folder of Moodle's submissions, Vera got "2 uploads" (her grade gone) and bob no
    row. Only a folder of nothing but Moodle's submissions holds other students' uploads."""
    bob = {**_moodle(), **{f"Vera Victim_401101_assignsubmission_file_/{rel}": b"A = 0\n"
                           for rel in _moodle()}}
    found, notes = discover(write_entries(tmp_path / "subs", {**others, "bob": bob}))
    sources = {s.student.key: [p.relative_to(tmp_path / "subs").as_posix() for p in s.sources]
               for s in found}
    assert sources["bob"] == ["bob"], (
        f"expected bob/ as bob's upload, whole; observed {sources} (grader/batch/inputs.py "
        "_entries)")
    assert all(not s.several for s in found), sources
    assert not [n for n in notes if "holds Moodle submissions" in n], notes
    assert ("bob/ holds a folder named like a Moodle submission (Vera "
            "Victim_401101_assignsubmission_file_/) beside files of its own: graded as one upload, "
            "bob's") in notes[0], notes
    bob_prepared = prepare(next(s for s in found if s.student.key == "bob"), tmp_path / "scratch")
    assert bob_prepared.root is not None, bob_prepared.problem


def test_a_folder_of_moodle_submissions_alone_is_still_read_as_theirs(tmp_path):
    """late/ holding Moodle's folders and flat files only (junk and hidden files aside)."""
    found, notes = discover(write_entries(tmp_path / "subs", {
        "Bob Ray_6_assignsubmission_file_": _moodle(),
        "late/Jane Doe_5_assignsubmission_file_": _moodle(),
        "late/.DS_Store": b"junk",
        "late/Jim Poe_7_assignsubmission_file_work.zip": _course()}))
    assert [s.student.key for s in found] == ["Bob_Ray_6", "Jane_Doe_5", "Jim_Poe_7"], found
    assert "late/ holds Moodle submissions: each of them graded as its student's" in notes


# --- red team adv19 A: one assignment's folder twice, its names differing in case ------------------

@pytest.mark.parametrize("same", [True, False], ids=["same-files", "different-files"])
def test_an_assignment_folder_twice_in_two_cases_is_graded_once_or_left_to_a_person(tmp_path, same):
    """`practical4/` and `Practical4/` (one folder on Windows and macOS, two on Linux) with
    different files: one had been graded and the other ignored, without a word."""
    other = CONCEPTS[1] if same else b"A = 0  # the template\n"
    prepared = _prepare(tmp_path, {"casecl.zip": [
        (f"practical4/{CONCEPTS[0]}", CONCEPTS[1]), (f"practical4/{SHEET[0]}", SHEET[1]),
        (f"Practical4/{CONCEPTS[0]}", other), (f"Practical4/{SHEET[0]}", SHEET[1])]})
    if same:
        _graded(prepared)
        assert "casecl/Practical4/ is a copy of casecl/practical4/ (their names differ only in " \
               "case): graded once" in prepared.notes, prepared.notes
    else:
        assert prepared.root is None and prepared.needs_person, prepared.problem
        assert prepared.problem == (
            "two versions of practical4: casecl/practical4/ and casecl/Practical4/ hold different "
            "files (their names differ only in case, one folder on Windows and macOS); which one "
            "counts is for a person to decide (or keep one and upload again)"), prepared.problem


def test_a_file_beside_one_of_its_name_in_other_case_is_said(tmp_path):
    top = tmp_path / "top"
    (top / "practical4").mkdir(parents=True)
    (top / "practical4" / "concepts.py").write_bytes(CONCEPTS[1])
    (top / "practical4" / "CONCEPTS.PY").write_bytes(b"old = True\n")
    notes: list[str] = []
    assert find_root(top, assignments=["practical4"], notes=notes) == top
    assert "practical4/CONCEPTS.PY is not graded: practical4/concepts.py, of the template's " \
           "name, is (their names differ only in case)" in notes, notes


def test_a_loose_report_in_markdown_goes_with_its_assignment(tmp_path):
    """The grader reads hw3/report.md handed in instead of the PDF (flagged for the staff): a
    loose one had stayed at the top of the upload, unread."""
    prepared = _prepare(tmp_path, {"Mark Down_173_assignsubmission_file_": {
        CONCEPTS[0]: CONCEPTS[1], HW3[0]: HW3[1],
        "report.md": b"# HW3 report\nLayers per GPU: 3, 3\n"}})
    _graded(prepared)
    assert sorted(p.name for p in (prepared.root / "hw3").iterdir()) == ["model_parallel.py",
                                                                         "report.md"]
    assert sorted(p.name for p in (prepared.root / "practical4").iterdir()) == ["concepts.py"]
