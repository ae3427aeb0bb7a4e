"""The integrity scan's findings name a student's files as people can read them (a red team's
adv31 L1).

A helper file whose name is not UTF-8 (`practical4/helper_\\xff.py`: a git repository can hold
one) was named in its finding by Python's surrogate escape (`helper_\\udcff.py`), which no UTF-8
file takes: `pdl-grade grade` graded it, but could not write instructor.md ("UnicodeEncodeError:
surrogates not allowed"). A finding's file, and its words that quote a file's name, are made
printable where the scan hands them out: bytes read as text (grader/common/text.py
readable_text, as result.json already showed them) and control characters escaped
(grader/batch/printable.py, as upload names are), so a name holding an escape sequence or a
line break cannot rewrite the instructor's report either. The scan itself still works on the
real paths (which files run, which are masked).
"""
from __future__ import annotations

import os

import pytest

from grader.grading.publish import publish
from grader.integrity.findings import Finding
from grader.integrity.scan import scan_submission
from tests.support.report_fixtures import ROUND_ROBIN, fresh

NOT_UTF8 = b"helper_\xff.py"
CONTROL = "helper_\x1b]52;c;x\x07\n.py"


def submission_with(tmp_path, name: bytes | str):
    folder = tmp_path / "submission" / "practical4"
    folder.mkdir(parents=True)
    (folder / "concepts.py").write_text("import torch\nprint(torch.ones(1))\n")
    with open(os.path.join(os.fsencode(folder), os.fsencode(name)), "wb") as handle:
        handle.write(b"X = 1\n")
    return tmp_path / "submission"


def helper_findings(submission) -> list[Finding]:
    found = [f for f in scan_submission(submission) if "helper_" in f.file]
    assert found, scan_submission(submission)
    return found


def shown(text: str) -> bool:
    """Text every UTF-8 file takes and no terminal or Markdown line acts on."""
    text.encode("utf-8")
    return not any(ord(c) < 0x20 or 0x7f <= ord(c) < 0xa0 for c in text)


def test_a_file_name_that_is_not_utf8_is_named_as_text(tmp_path):
    for finding in helper_findings(submission_with(tmp_path, NOT_UTF8)):
        assert finding.file == "practical4/helper_\u00ff.py", finding.file
        for text in (finding.file, finding.what, finding.code, finding.describe()):
            assert shown(text), repr(text)


def test_control_characters_in_a_file_name_are_escaped(tmp_path):
    for finding in helper_findings(submission_with(tmp_path, CONTROL)):
        assert finding.file == "practical4/helper_\\x1b]52;c;x\\x07\\n.py", finding.file
        for text in (finding.file, finding.what, finding.describe()):
            assert shown(text), repr(text)


def test_findings_read_back_from_an_older_integrity_json_are_named_as_text():
    """integrity.json written before: its raw surrogate escape read back (a re-score)."""
    finding = Finding.from_dict({"file": "practical4/helper_\udcff.py", "line": 0,
                                 "category": "helper_module",
                                 "what": "a module the template does not have", "code": ""})
    assert finding.file == "practical4/helper_\u00ff.py" and shown(finding.describe())


@pytest.mark.parametrize("name", [NOT_UTF8, CONTROL], ids=["not_utf8", "control"])
def test_instructor_md_is_written_beside_such_a_file(tmp_path, name):
    notes = [f.describe() for f in helper_findings(submission_with(tmp_path, name))]
    result = fresh(ROUND_ROBIN)
    result["assignments"][0]["integrity"] = {"problems": [], "notes": notes, "withheld": False}
    out = tmp_path / "out"
    publish(result, out)
    written = (out / "instructor.md").read_text(encoding="utf-8")
    assert "helper" in written and "\x1b" not in written
