"""Text the grader writes for the course staff, said to the student where a student reads it.

Some problems and reasons are written where the staff act on them: a report and an answer
sheet that disagree ("check which the student meant"), an upload no one can grade ("a person
should look (... ask the student to upload it again)"). The instructor's view (instructor.md)
keeps them as written; everything a student reads (report.md and report.html, Gradescope's
output, the summary of `pdl-grade check` and `pytest grader/`) says them to "you", through
`for_the_student`. One table: a new staff-side phrase is added here once, and
tests/reports/test_student_wording.py reads every string of the grader for such phrases and
fails on one that reaches a student unturned (a student's audit found "check which the student
meant" in their own report).
"""
from __future__ import annotations

import re

# (what the staff read, what the student reads), longest first: a phrase's own remedy for the
# staff ("unpack it by hand") is no step of the student's. Whole phrases only, never a word
# alone ("the student's" -> "your"): the texts quote the student's own answers and output,
# which are shown as written.
_PHRASES = (
    (r"a person should look \(download it again from Moodle, or ask the student to upload it "
     r"again\)", "a person of the course staff will look at it (and may ask you to upload it "
                 "again)"),
    (r"a person should look at it \(unpack it by hand, or ask the student for a \.zip\)",
     "a person of the course staff will look at it (and may ask you for a .zip)"),
    (r"a person should look \(ask the student to upload it without a password\)",
     "a person of the course staff will look at it (and may ask you to upload it without a "
     "password)"),
    (r"\(ask the student for a \.zip\)", "(the course staff may ask you for a .zip)"),
    (r"a person should look at it", "a person of the course staff will look at it"),
    (r"a person should read the code", "a person of the course staff will read the code"),
    (r"check which the student meant", "a person will check which you meant"),
    (r"check that it was read as written", "a person will check that it was read as written"),
)
_TURNS = tuple((re.compile(staff), student) for staff, student in _PHRASES)


def for_the_student(text: str) -> str:
    """`text` as the student reads it: the staff's phrases said to "you"."""
    for staff, student in _TURNS:
        text = staff.sub(student, text)
    return text


def all_for_the_student(texts) -> list[str]:
    return [for_the_student(str(text)) for text in texts or []]
