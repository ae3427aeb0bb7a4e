"""Two versions of one assignment in one upload go to a person, naming both folders; honest
layouts holding one version are graded (adv39 F4).

Nora uploaded `practical4/` and `practical4_final/practical4/` with other code and other
answers: the outer one was graded 9.5/12 and the final one ignored in silence, where README
says two different versions of one assignment get no grade and go to a person. Which one counts
is the student's to say: a deeper folder of the assignment's name holding other files is a
second version (`*_final/`, `v2/`), unless a folder above it is named as a copy set aside
(`old/`, `backup/`, `drafts/`), which a person grading by hand would pass over too: the other
is graded, with a note; the same files there are a copy, graded once."""
from __future__ import annotations

import pytest

from grader.batch.inputs import discover, prepare
from tests.support.fake_graders import write_entries, zip_bytes

CODE = b"import torch\n\ndef split(x):\n    return x.chunk(2)\n"
FINAL = b"import torch\n\ndef split(x):\n    return torch.chunk(x, 2, dim=0)\n"
ANSWERS = b"assignment: practical4\nanswers:\n  part1.output_shape: '[64, 1000]'\n"
MOODLE = "Nora Twoversions_31042_assignsubmission_file_"


def prepared(tmp_path, files: dict[str, bytes], as_zip: bool = False):
    entry = {f"{MOODLE}": {"work.zip": zip_bytes(list(files.items()))}} if as_zip \
        else {MOODLE: files}
    found, _ = discover(write_entries(tmp_path / "p4_download", entry))
    (submission,) = found
    return prepare(submission, tmp_path / "scratch", assignments=["practical4"],
                   graded=["practical4"])


@pytest.mark.parametrize("as_zip", [False, True], ids=["folder", "zip"])
@pytest.mark.parametrize("second", ["practical4_final/practical4", "v2/practical4",
                                    "submission/practical4"])
def test_a_second_version_deeper_down_goes_to_a_person_naming_both(tmp_path, second, as_zip):
    found = prepared(tmp_path, {"practical4/concepts.py": CODE, "practical4/answers.yaml": ANSWERS,
                                f"{second}/concepts.py": FINAL,
                                f"{second}/answers.yaml": ANSWERS + b"  part1.note: final\n"},
                     as_zip)
    assert found.root is None and found.needs_person, (
        f"expected two versions to go to a person, observed root {found.root} and problem "
        f"{found.problem!r} (grader/batch/layout.py _no_second_version)")
    assert "two versions of practical4" in found.problem, found.problem
    assert "practical4/" in found.problem and f"{second}/" in found.problem, (
        f"expected both folders named, observed {found.problem!r}")


HONEST = {
    "one copy in a wrapper folder": {"Nora/pdl/practical4/concepts.py": CODE,
                                     "Nora/pdl/practical4/answers.yaml": ANSWERS},
    "a macOS shadow beside it": {"practical4/concepts.py": CODE, "practical4/answers.yaml": ANSWERS,
                                 "__MACOSX/practical4/._concepts.py": b"\0\5\26\7junk",
                                 "__MACOSX/practical4/concepts.py": b"resource fork"},
    "the same files twice, one deeper": {
        "practical4/concepts.py": CODE, "practical4/answers.yaml": ANSWERS,
        "copy/practical4/concepts.py": CODE, "copy/practical4/answers.yaml": ANSWERS},
    "a backup folder of loose files": {
        "practical4/concepts.py": CODE, "practical4/answers.yaml": ANSWERS,
        "practical4.bak/concepts.py": FINAL},
    "an empty folder of its name deeper down": {
        "practical4/concepts.py": CODE, "practical4/answers.yaml": ANSWERS,
        "old/practical4/notes.txt": b"nothing here yet"},
}


@pytest.mark.parametrize("as_zip", [False, True], ids=["folder", "zip"])
@pytest.mark.parametrize("shape", sorted(HONEST))
def test_one_version_is_graded(tmp_path, shape, as_zip):
    found = prepared(tmp_path, HONEST[shape], as_zip)
    assert found.problem is None and found.root is not None, (
        f"{shape}: expected graded, observed {found.problem!r}")
    assert (found.root / "practical4" / "concepts.py").read_bytes() == CODE, shape


@pytest.mark.parametrize("aside", ["old/practical4", "backup/2026-12-01/practical4",
                                   "Old_Drafts/practical4", "practical4_backup/practical4"])
def test_a_version_in_a_folder_set_aside_is_passed_over_with_a_note(tmp_path, aside):
    found = prepared(tmp_path, {"practical4/concepts.py": CODE, "practical4/answers.yaml": ANSWERS,
                                f"{aside}/concepts.py": FINAL,
                                f"{aside}/answers.yaml": ANSWERS + b"  part1.note: old\n"})
    assert found.problem is None and found.root is not None, (
        f"expected practical4/ graded beside {aside}/ (an older copy by its folder's name), "
        f"observed {found.problem!r} (grader/batch/layout.py _set_aside)")
    assert (found.root / "practical4" / "concepts.py").read_bytes() == CODE
    assert any(f"{aside}/ is kept aside" in n for n in found.notes), (
        f"expected a note naming {aside}/, observed {found.notes}")


def test_two_versions_both_set_aside_by_name_go_to_a_person(tmp_path):
    found = prepared(tmp_path, {"old/practical4/concepts.py": CODE,
                                "old/practical4/answers.yaml": ANSWERS,
                                "old/backup/practical4/concepts.py": FINAL,
                                "old/backup/practical4/answers.yaml": ANSWERS})
    assert found.needs_person and "two versions of practical4" in (found.problem or ""), (
        f"expected a person to decide between two set-aside copies, observed {found.problem!r}")


def test_a_copy_deeper_down_is_said_to_be_graded_once(tmp_path):
    found = prepared(tmp_path, HONEST["the same files twice, one deeper"])
    assert any("copy/practical4/ is a copy of practical4/" in n for n in found.notes), found.notes
