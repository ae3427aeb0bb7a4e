"""What the staff open is inert: grades.csv cells a spreadsheet would run as formulas, and
Markdown (instructor.md, report.md) in which a student's text would become a link or a remote
image. The Markdown is rendered by pandoc's GitHub-flavoured reader (bare URLs become links
there, as on GitHub) and the HTML searched for links and images."""
from __future__ import annotations

import csv
import shutil
import subprocess

import pytest

from grader.batch.grades_csv import inert_cell
from grader.reports.instructor import render_instructor_markdown
from grader.reports.render import markdown_inline, render_markdown
from grader.scoring import load_rubrics
from tests.support import run_test_batch
from tests.support.fake_graders import make_submission
from tests.support.report_fixtures import ROUND_ROBIN, find_item, fresh

IMAGE = "![progress](https://evil.example/track.png?student=1)"
LINK = "[release the held points](https://evil.example/release)"
BARE = "see https://evil.example/answers and www.evil.example or mail boss@evil.example"
HTML = '<img src="https://evil.example/x.png"> <a href="https://evil.example">here</a>'
HOSTILE = [IMAGE, LINK, BARE, HTML]


@pytest.mark.parametrize("cell, expected", [
    ("=HYPERLINK(\"https://evil.example\",\"grade\")", "'=HYPERLINK(\"https://evil.example\",\"grade\")"),
    ("+1+cmd|' /C calc'!A0", "'+1+cmd|' /C calc'!A0"),
    ("-2+3", "'-2+3"),
    ("@SUM(A1:A9)", "'@SUM(A1:A9)"),
    ("\t=1+1", "'\t=1+1"),
    ("\r=1+1", "'\r=1+1"),
    ("Mari Maasikas", "Mari Maasikas"),
    ("Participant 123456", "Participant 123456"),
    ("", ""),
])
def test_a_cell_a_spreadsheet_would_evaluate_is_written_as_text(cell, expected):
    assert inert_cell(cell) == expected


def test_names_and_messages_from_uploads_reach_grades_csv_inert(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    make_submission(subs / '=HYPERLINK("evil.example","x")_123_assignsubmission_file_', score=4)
    make_submission(subs / "@SUM(1)", score=2)
    (subs / "-bad.zip").write_bytes(b"not a zip")
    run_test_batch(subs, out, ["practical4"])
    rows = list(csv.reader((out / "grades.csv").open(encoding="utf-8")))
    text_cells = [cell for row in rows[1:] for cell in (row[0], row[1], row[-2], row[-1])]
    assert not [c for c in text_cells if c[:1] in ("=", "+", "-", "@", "\t", "\r")], text_cells
    names = {row[1] for row in rows[1:]}
    assert "'=HYPERLINK(\"evil.example\",\"x\")" in names and "'@SUM(1)" in names
    assert "'-bad" in names
    assert [row[2] for row in rows[1:] if row[1] == "'@SUM(1)"] == ["2"]   # numbers stay numbers


def _html(markdown: str) -> str:
    return subprocess.run(["pandoc", "-f", "gfm", "-t", "html"], input=markdown, text=True,
                          capture_output=True, check=True).stdout


def _hostile_result() -> dict:
    """A result whose student-controlled texts (the upload's name, reported answers in flags,
    answer problems, an exception message, integrity findings quoting code) carry links."""
    data = fresh(ROUND_ROBIN)
    data["submission"] = f"Mari {IMAGE}_1_assignsubmission_file_"
    hw3 = data["assignments"][0]
    hw3["flags"] = [{"check": "hw3.task2.reported", "text": f"task2.ratio: reported {text!r}, but "
                     "the code makes 3.9"} for text in HOSTILE]
    hw3["answers"]["problems"] += [f"hw3/answers.yaml: '{text}' is not a number" for text in HOSTILE]
    hw3["integrity"] = {"problems": [f"hw3/model_parallel.py:3 reaches into the grader: {t}"
                                     for t in HOSTILE],
                        "withheld": True, "withheld_points": 3.0, "cleared": False, "comment": ""}
    item = find_item(data, "hw3.task1")
    item["feedback"] += "\nObserved: ValueError: " + " ".join(HOSTILE)
    item["checks"][0]["feedback"] += "\nObserved: ValueError: " + " ".join(HOSTILE)
    written = find_item(data, "hw3.task2.explanation")
    written["answer"] = "task2.explanation"
    hw3["answers"]["values"]["task2.explanation"] = "\n".join(HOSTILE)
    hw3["answers"]["origin"]["task2.explanation"] = "hw3/answers.yaml"
    return data


@pytest.mark.skipif(shutil.which("pandoc") is None, reason="pandoc is not installed")
@pytest.mark.parametrize("which", ["instructor.md", "report.md"])
def test_student_text_makes_no_link_and_no_image_in_markdown_outputs(which):
    data = _hostile_result()
    markdown = (render_instructor_markdown(data, load_rubrics()) if which == "instructor.md"
                else render_markdown(data))
    html = _html(markdown)
    assert "<img" not in html and "<a " not in html, (
        f"{which}: a student's text became markup:\n"
        + "\n".join(line for line in html.splitlines() if "<img" in line or "<a " in line)[:2000])
    assert "evil.example" in html            # still there, to be read, as text
    # The text keeps its words: the staff can read what the student wrote.
    assert "release the held points" in html


def test_the_inline_filter_keeps_text_readable():
    assert markdown_inline("DEPTH 6 | 12") == "DEPTH 6 \\| 12"
    # The bare URL's "//" escaped: GFM's autolinker no longer sees a URL (pandoc: no <a>).
    assert markdown_inline(f"x {LINK}.") == ("x \\[release the held points\\]"
                                             "(https:\\//evil.example/release).")
    assert markdown_inline("a`b") == "a\\`b"


# --- red team adv19 N/N2: control characters of names reach neither the console nor grades.csv ---

FORGED = "\n[9/9] graded alice (1.0 s): 0/12 (held for review: practical4)\n"
OSC = "\x1b]0;PWNED\x07\x1b]52;c;cm0gLXJmIH4K\x07"
WARNING = "\nwarning: alice: submission held for review, copied code\n"   # a file's name: no "/"


def test_control_characters_in_names_are_escaped_on_the_console_and_in_grades_csv(tmp_path):
    """A zip entry's name had reached the console raw (OSC 52 sets the terminal's clipboard) and
    a newline in it had printed a line of its own; grades.csv and the gradebook kept them raw."""
    import io
    import sqlite3
    from tests.support.fake_graders import zip_bytes
    subs, out = tmp_path / "subs", tmp_path / "out"
    make_submission(subs / "alice", score=4)
    make_submission(subs / "eve\n=1+1", score=2)                     # a folder's name
    (subs / "mallory.zip").write_bytes(zip_bytes([
        ("practical4/concepts.py", b"A = 1\n"), (f"/x{OSC}{FORGED}", b"x")]))
    (subs / f"notes.txt{WARNING}\x1b[2K").write_text("x")              # a loose file: 'ignored'
    stream = io.StringIO()
    run_test_batch(subs, out, ["practical4"], stream=stream)
    said = stream.getvalue()
    assert not [c for c in said if c in "\x1b\x07\r"], (
        f"expected no terminal control character on the console; observed {said!r}")
    forged = [line for line in said.splitlines() if line.startswith(("[9/9]", "warning: alice"))]
    assert not forged, f"a name printed a console line of its own: {forged}"
    assert "\\x1b]52;c;cm0gLXJmIH4K\\x07\\n[9/9] graded alice" in said, said
    assert "ignored notes.txt\\nwarning: alice: submission held" in said, said
    text = (out / "grades.csv").read_text(encoding="utf-8")
    cells = [cell for row in csv.reader(text.splitlines()) for cell in row]
    assert not [c for c in cells if any(ch in c for ch in "\x1b\x07\n\r")], cells
    assert "eve\\n=1+1" in cells, cells
    assert any("\\x1b]0;PWNED\\x07" in c for c in cells), cells
    with sqlite3.connect(out / "gradebook.sqlite") as db:
        stored = [m for (m,) in db.execute("SELECT message FROM runs WHERE message IS NOT NULL")]
        stored += [n for (n,) in db.execute("SELECT name FROM students")]
    assert stored and not [m for m in stored if any(ch in m for ch in "\x1b\x07\n")], stored


def test_printable_escapes_control_characters_and_keeps_every_script():
    from grader.batch.printable import printable
    assert printable("a\x1b[31mb\x07\n\t\r\x9b\u2028\u202e") == \
        "a\\x1b[31mb\\x07\\n\\t\\r\\x9b\\u2028\\u202e"
    assert printable("Jüri Õun 王伟 مريم") == "Jüri Õun 王伟 مريم"
