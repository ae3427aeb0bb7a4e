"""Student keys keep the letters of any script (audit F12: `Jüri Õunapuu_1009` had become
`J_ri_unapuu_1009`, `王伟/` `unnamed_0c6e5fe8`), stay safe as folder names, and a class graded
with the ASCII-only keys keeps working: a re-run on its --out grades nobody again, duplicates
no row, and its overrides file (of the old keys) still applies; an overrides file of either
form applies to the student whose key is the other form, with a note.

The old gradebook is made by the old key function itself (grader/batch/earlier_keys.py
`legacy_key`, the ASCII-only grader's), patched in for the first batch. Fake gradings only."""
from __future__ import annotations

import csv
import io
import json
import unicodedata
from pathlib import Path

import pytest

import grader.batch.assignment_keys
import grader.batch.inputs
from grader.batch.earlier_keys import legacy_key
from grader.batch.inputs import MAX_KEY_BYTES, safe_key
from grader.batch.pipeline import BatchOptions, run_batch
from tests.support.fake_graders import calls, scoring_grade


# --- the key itself ------------------------------------------------------------------------

def test_keys_keep_letters_of_any_script():
    assert safe_key("Jüri Õunapuu_1009") == "Jüri_Õunapuu_1009"
    assert safe_key("王伟") == "王伟" and safe_key("李娜") == "李娜"
    assert safe_key("Jüri Tamm") != safe_key("Jõri Tamm")
    # However the name was typed (macOS writes "ü" as "u" and a mark): one key, NFC.
    decomposed = unicodedata.normalize("NFD", "Jüri Õunapuu_1009")
    assert safe_key(decomposed) == "Jüri_Õunapuu_1009"


@pytest.mark.parametrize("name", ["../../etc/passwd", ".hidden", "a/b\\c", "tab\there",
                                  "new\nline", "rtl\u202eexe.py", "nul\x00byte", "ﾠ\u3164",
                                  "王" * 200, "Ö" * 300, "..", "／fullwidth／slash"])
def test_keys_are_safe_folder_names(name):
    key = safe_key(name)
    assert key and key not in (".", "..") and not key.startswith(".")
    assert "/" not in key and "\\" not in key and "\x00" not in key
    assert all(unicodedata.category(c)[0] not in "CZ" for c in key), ascii(key)
    assert len(key.encode("utf-8")) <= MAX_KEY_BYTES, (len(key.encode()), key)
    assert unicodedata.normalize("NFC", key) == key


@pytest.mark.parametrize("name", ["Alice Tamm_1001", "bob", "Mari-Liis O'Connor_1010",
                                  "x" * 300, "a b", "a_b", "  .dots. ", "hw3 (1)"])
def test_an_ascii_name_keeps_the_key_it_always_had(name):
    assert safe_key(name) == legacy_key(name)


# --- a class graded with the old keys --------------------------------------------------------

def upload(folder: Path, passed: int = 10) -> Path:
    (folder / "practical4").mkdir(parents=True, exist_ok=True)
    (folder / "practical4" / "concepts.py").write_text(f"A = {passed}\n")
    (folder / "practical4" / "FAKE.json").write_text(json.dumps({"score": passed}))
    return folder


CLASS = ["Jüri Õunapuu_1009_assignsubmission_file_", "Alice Tamm_1001_assignsubmission_file_",
         "王伟", "李娜", "Jüri Tamm", "Jõri Tamm"]
OLD_KEYS = "J_ri_unapuu_1009"
OVERRIDE = "  practical4.questions.easier: {points: 0.5, comment: looked at}\n"


def batch(subs: Path, out: Path, overrides: Path | None = None) -> str:
    stream = io.StringIO()
    run_batch(subs, out, BatchOptions(assignments=("practical4",), overrides=overrides),
              grade_fn=scoring_grade, stream=stream, live=False)
    return stream.getvalue()


def rows(out: Path) -> dict[str, dict[str, str]]:
    return {row["Key"]: row for row in csv.DictReader((out / "grades.csv").open(encoding="utf-8"))}


@pytest.fixture
def old_class(tmp_path, monkeypatch):
    """(submissions, the --out graded with the ASCII-only keys, its overrides file)."""
    subs, out = tmp_path / "class", tmp_path / "grades"
    for name in CLASS:
        upload(subs / name)
    overrides = tmp_path / "overrides.yaml"
    overrides.write_text(f"{OLD_KEYS}:\n{OVERRIDE}")
    with monkeypatch.context() as old:
        old.setattr(grader.batch.inputs, "safe_key", legacy_key)
        old.setattr(grader.batch.assignment_keys, "safe_key", legacy_key)
        batch(subs, out, overrides)
    return subs, out, overrides


def test_the_old_gradebook_was_made_with_the_old_keys(old_class):
    _, out, _ = old_class
    keys = sorted(rows(out))
    assert OLD_KEYS in keys and "Alice_Tamm_1001" in keys
    assert sum(k.startswith("unnamed_") for k in keys) == 2, keys
    assert sum(k.startswith("J_ri_Tamm_") for k in keys) == 2, keys


def test_a_rerun_on_an_old_gradebook_keeps_every_key_grade_and_override(old_class, tmp_path,
                                                                       monkeypatch):
    subs, out, overrides = old_class
    before = rows(out)
    upload(subs / "Mari Õun")                       # a student new to the class
    log = tmp_path / "calls.log"
    monkeypatch.setenv("PDL_FAKE_CALLS", str(log))
    said = batch(subs, out, overrides)

    after = rows(out)
    assert [k for k in after if k != "Mari_Õun"] == list(before), (
        f"expected every student under the key of their earlier grading; observed {list(after)}")
    assert [key for key, _ in calls(log)] == ["Mari_Õun"], (
        f"expected only the new student graded; observed {calls(log)}\n{said}")
    assert after[OLD_KEYS]["practical4"] == before[OLD_KEYS]["practical4"]
    assert "looked at" in (out / "submissions" / OLD_KEYS / "report.md").read_text()
    assert "ignored" not in said, said
    folders = sorted(p.name for p in (out / "submissions").iterdir())
    assert folders == sorted(after), folders


def test_old_keys_overrides_apply_to_a_fresh_out_with_a_note(old_class, tmp_path):
    subs, _, overrides = old_class
    fresh = tmp_path / "fresh"
    said = batch(subs, fresh, overrides)
    assert "Jüri_Õunapuu_1009" in rows(fresh) and OLD_KEYS not in rows(fresh)
    assert (f"overrides for '{OLD_KEYS}' applied to Jüri_Õunapuu_1009" in said
            and "write Jüri_Õunapuu_1009 in the overrides file" in said), said
    result = json.loads((fresh / "submissions" / "Jüri_Õunapuu_1009" / "result.json").read_text())
    assert result["overrides"] == {"practical4.questions.easier": {"points": 0.5,
                                                                   "comment": "looked at"}}


def test_new_keys_overrides_apply_to_an_old_gradebook_with_a_note(old_class, tmp_path):
    subs, out, _ = old_class
    written_new = tmp_path / "overrides-new.yaml"
    written_new.write_text(f"Jüri_Õunapuu_1009:\n{OVERRIDE}")
    said = batch(subs, out, written_new)
    assert f"overrides for 'Jüri_Õunapuu_1009' applied to {OLD_KEYS}" in said, said
    assert "no such submission" not in said, said
    assert "looked at" in (out / "submissions" / OLD_KEYS / "report.md").read_text()
