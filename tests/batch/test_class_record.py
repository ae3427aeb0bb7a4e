"""The class record across Moodle downloads: one person is one row of grades.csv whatever
number each assignment's download gives them (grader/batch/people.py), a class overrides file
serves every download graded into the gradebook, a batch told no --assignment grades what the
uploads hold, and two downloads side by side (each with its `late/`) are read as Moodle's.

Fake gradings only (tests/support/fake_graders.py: `scoring_grade` scores like the real
grader without running code)."""
from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

from tests.support.fake_graders import scoring_grade
from grader.batch.gradebook import CurrentRun
from grader.batch.grades_csv import grades_rows
from grader.batch.inputs import Student, discover
from grader.batch.pipeline import BatchOptions, run_batch


def practical4_upload(folder: Path, passed: int = 10) -> Path:
    """An upload of Practical 4 only (as its Moodle assignment's download holds)."""
    (folder / "practical4").mkdir(parents=True, exist_ok=True)
    (folder / "practical4" / "concepts.py").write_text(f"A = {passed}\n")
    (folder / "practical4" / "FAKE.json").write_text(json.dumps({"score": passed}))
    return folder


def hw3_upload(folder: Path, passed: int = 10) -> Path:
    """An upload of HW3 only; the fake grading's spec rides in a practical4/ folder that holds
    none of Practical 4's files (so the upload holds HW3 alone)."""
    (folder / "hw3").mkdir(parents=True, exist_ok=True)
    (folder / "hw3" / "model_parallel.py").write_text(f"import torch  # {passed}\n")
    (folder / "practical4").mkdir(exist_ok=True)
    (folder / "practical4" / "FAKE.json").write_text(json.dumps({"score": passed}))
    return folder


def batch(subs: Path, out: Path, assignments=None, **options):
    stream = io.StringIO()
    summary = run_batch(subs, out, BatchOptions(assignments=assignments, **options),
                        grade_fn=scoring_grade, stream=stream, live=False)
    return summary, stream.getvalue()


def rows(out: Path) -> list[dict[str, str]]:
    return list(csv.DictReader((out / "grades.csv").open(encoding="utf-8")))


def moodle_row(pid: int, name: str, email: str) -> str:
    return (f'"Participant {pid}","{name}",{email},"Submitted for grading",,12.00,Yes,'
            '"Monday, 4 May 2026, 10:00 AM",-,\n')


def worksheet(path: Path, *participants: tuple[int, str, str]) -> Path:
    path.write_text('Identifier,"Full name","Email address",Status,Grade,"Maximum Grade",'
                    '"Grade can be changed","Last modified (submission)","Last modified (grade)",'
                    '"Feedback comments"\n' + "".join(moodle_row(*p) for p in participants),
                    encoding="utf-8")
    return path


# --- F1: one person, one row ----------------------------------------------------------------

def test_one_persons_uploads_of_two_moodle_downloads_are_one_row_of_the_record(tmp_path):
    """Moodle numbers each assignment's participants anew: Alice is 401101 in Practical 4's
    download and 502201 in HW3's. Both graded into one gradebook had made two students of her
    (two rows, the class page counting her twice, no course total anywhere)."""
    p4, hw3, out = tmp_path / "moodle_practical4", tmp_path / "moodle_hw3", tmp_path / "grades"
    practical4_upload(p4 / "Alice Tamm_401101_assignsubmission_file_", 10)
    practical4_upload(p4 / "Bob Kask_401102_assignsubmission_file_", 5)
    hw3_upload(hw3 / "Alice Tamm_502201_assignsubmission_file_", 10)
    hw3_upload(hw3 / "Lauri Laur_502204_assignsubmission_file_", 10)
    batch(p4, out, ("practical4",))
    batch(hw3, out, ("hw3",))

    found = {row["Full name"]: row for row in rows(out)}
    assert sorted(found) == ["Alice Tamm", "Bob Kask", "Lauri Laur"], (
        f"expected one row per person (Alice's two downloads in one); observed rows for "
        f"{[row['Full name'] for row in rows(out)]} (grades.csv, grader/batch/grades_csv.py)")
    alice = found["Alice Tamm"]
    assert alice["practical4"] and alice["hw3"], f"expected both of Alice's grades in her row: {alice}"
    assert float(alice["Total"]) == float(alice["practical4"]) + float(alice["hw3"]), alice
    assert alice["Identifier"] == "Participant 401101; Participant 502201", alice
    assert alice["Key"] == "Alice_Tamm_401101; Alice_Tamm_502201", alice
    # Bob has no HW3 upload: his row is his Practical 4, as before.
    assert (found["Bob Kask"]["hw3"], found["Bob Kask"]["Key"]) == ("", "Bob_Kask_401102")
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "3 students (4 uploads: one per student and assignment download)" in page, (
        "expected the class page to count people, not uploads; observed: "
        + page.split('<p id="counts">')[1].split("</p>")[0])
    # Each download's Moodle sheet keeps its own participants only (401101 is no HW3 participant).
    hw3_sheet = (out / "moodle" / "hw3.csv").read_text(encoding="utf-8")
    assert "Participant 502201" in hw3_sheet and "Participant 401101" not in hw3_sheet, hw3_sheet


def test_a_class_overrides_file_serves_both_downloads_and_still_catches_a_typo(tmp_path):
    """One overrides file per class: each download's batch had called the other download's
    keys "no such submission" (with nonsense suggestions), hiding a real typo among them."""
    p4, hw3, out = tmp_path / "moodle_practical4", tmp_path / "moodle_hw3", tmp_path / "grades"
    practical4_upload(p4 / "Alice Tamm_401101_assignsubmission_file_")
    hw3_upload(hw3 / "Alice Tamm_502201_assignsubmission_file_")
    overrides = tmp_path / "overrides.yaml"
    overrides.write_text("Alice_Tamm_401101:\n  practical4.questions.easier: {points: 0.5}\n"
                         "Alice_Tamm_502201:\n  hw3.task1.explanation: {points: 1}\n"
                         "Alice_Tam_502201:\n  hw3.task1.explanation: {points: 1}\n")
    batch(p4, out, ("practical4",), overrides=overrides)
    batch(hw3, out, ("hw3",), overrides=overrides)
    _, said = batch(p4, out, ("practical4",), overrides=overrides)

    assert "overrides for 'Alice_Tamm_502201' ignored" not in said, (
        "expected HW3's key, graded into this gradebook, not to be called unknown by "
        f"Practical 4's batch; observed:\n{said}")
    assert "overrides for 'Alice_Tam_502201' ignored: no such submission" in said, (
        f"expected the typo to be reported still; observed:\n{said}")
    problems = (out / "index.html").read_text(encoding="utf-8").split(
        'id="override-problem-table"')[1].split("</table>")[0]
    unknown = re.findall(r"<td>([^<]*)</td><td class=\"flag\">no such submission", problems)
    assert unknown == ["Alice_Tam_502201"], (
        f"expected the typo alone listed as naming no submission; observed {unknown}")
    by_key = {row["Key"]: row for row in rows(out)}
    assert float(by_key["Alice_Tamm_401101; Alice_Tamm_502201"]["Total"]) > 0, by_key


def test_two_people_of_one_name_in_one_download_stay_two_rows_and_are_flagged(tmp_path):
    """Two participants of one download are two people, whatever their names: put together
    by name they would lose a grade; they stay apart, said loudly."""
    subs, out = tmp_path / "moodle_practical4", tmp_path / "grades"
    practical4_upload(subs / "Mari Maasikas_7_assignsubmission_file_", 10)
    practical4_upload(subs / "Mari Maasikas_8_assignsubmission_file_", 5)
    _, said = batch(subs, out, ("practical4",))
    marys = [row for row in rows(out) if row["Full name"] == "Mari Maasikas"]
    assert len(marys) == 2, f"expected two rows, one per participant; observed {marys}"
    assert all("another upload of this name was kept apart" in row["Status"] for row in marys), marys
    assert "2 uploads of students named 'Mari Maasikas' (Mari_Maasikas_7, Mari_Maasikas_8) were " \
           "not put together: more than one of them has practical4 graded" in said, said
    shared = (out / "index.html").read_text(encoding="utf-8").split('id="shared-names"')[1]
    assert "Mari_Maasikas_7, Mari_Maasikas_8" in shared.split("</ul>")[0]


def test_moodle_emails_say_who_is_who_and_are_kept_in_the_gradebook(tmp_path):
    """With the worksheets given, their emails decide: one email is one person, two emails
    behind one name are two people (and a third upload of that name cannot be placed)."""
    p4, hw3, out = tmp_path / "moodle_practical4", tmp_path / "moodle_hw3", tmp_path / "grades"
    practical4_upload(p4 / "Jaan Tamm_11_assignsubmission_file_")
    practical4_upload(p4 / "Liis Kask_12_assignsubmission_file_")
    hw3_upload(hw3 / "Jaan Tamm_21_assignsubmission_file_")
    hw3_upload(hw3 / "Liis Kask-Mets_22_assignsubmission_file_")     # renamed since
    batch(p4, out, ("practical4",), moodle_worksheets=((None, worksheet(
        tmp_path / "p4.csv", (11, "Jaan Tamm", "jaan@uni.example"),
        (12, "Liis Kask", "liis@uni.example"))),))
    batch(hw3, out, ("hw3",), moodle_worksheets=((None, worksheet(
        tmp_path / "hw3.csv", (21, "Jaan Tamm", "jaan.tamm@uni.example"),
        (22, "Liis Kask-Mets", "LIIS@uni.example"))),))
    found = {row["Key"]: row for row in rows(out)}
    assert "Liis_Kask_12; Liis_Kask-Mets_22" in found, (
        f"expected one email's two names to be one person; observed keys {sorted(found)}")
    assert found["Liis_Kask_12; Liis_Kask-Mets_22"]["Email address"] == "liis@uni.example"
    assert "Jaan_Tamm_11" in found and "Jaan_Tamm_21" in found, (
        f"expected one name with two emails to be two people; observed keys {sorted(found)}")
    assert "another upload of this name was kept apart" in found["Jaan_Tamm_11"]["Status"]


def test_people_are_told_apart_from_a_gradebook_without_emails():
    """A gradebook from before schema 4 has no emails: names alone, as the rows say."""
    from grader.batch.people import people
    def run(key, name, assignment, email=None):
        return CurrentRun(Student(key, name, key.rsplit("_", 1)[-1], email), "graded", None, key,
                          "c", {"assignments": []}, {assignment: 1.0}, assignments=(assignment,))
    persons, warnings = people([run("A_1", "Ann Lee", "practical4"), run("A_2", "ann  LEE", "hw3"),
                                run("B_3", "Ben", "practical4")], ["practical4", "hw3"])
    assert [p.keys for p in persons] == [["A_1", "A_2"], ["B_3"]] and not warnings, (
        [p.keys for p in persons], warnings)
    table = grades_rows([run("A_1", "Ann Lee", "practical4"), run("A_2", "Ann Lee", "hw3")],
                        ["practical4", "hw3"])
    assert table == [["Identifier", "Full name", "practical4", "hw3", "Total", "Status", "Key"],
                     ["Participant 1; Participant 2", "Ann Lee", "1", "1", "2", "graded",
                      "A_1; A_2"]], table


# --- F2: what a batch told no --assignment grades -------------------------------------------

def test_without_assignment_the_batch_grades_what_the_uploads_hold(tmp_path):
    """The default had been every rubric: a Practical 4 download was graded 0 for the four
    other assignments, with Moodle sheets of zeros for each."""
    subs, out = tmp_path / "moodle_practical4", tmp_path / "grades"
    practical4_upload(subs / "Bob Kask_401102_assignsubmission_file_", 10)
    practical4_upload(subs / "Eve Saar_401105_assignsubmission_file_", 5)
    # One student's whole course folder: HW3 too, which the others were never asked for here.
    hw3_upload(practical4_upload(subs / "Alice Tamm_401101_assignsubmission_file_", 10), 10)
    summary, said = batch(subs, out)

    header = list(csv.reader((out / "grades.csv").open(encoding="utf-8")))[0]
    assert header == ["Identifier", "Full name", "practical4", "Total", "Status", "Key"], (
        f"expected grades.csv to have Practical 4 only; observed header {header}")
    written = sorted(p.name for p in (out / "moodle").glob("*.csv"))
    assert written == ["practical4.csv"], f"expected no Moodle sheet of zeros; observed {written}"
    choice = "\n".join(summary.assignment_choice)
    assert "graded: practical4 (in 3 of the 3 uploads holding an assignment's files)" in choice, choice
    assert ("not graded: hw3, in only 1 of them (Alice_Tamm_401101)" in choice
            and "--assignment hw3" in choice), choice
    assert choice in said or all(line in said for line in summary.assignment_choice)


def test_an_assignment_named_is_graded_for_everybody(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "grades"
    practical4_upload(subs / "bob")
    hw3_upload(practical4_upload(subs / "alice"))
    summary, _ = batch(subs, out, ("practical4", "hw3"))
    bob = next(row for row in rows(out) if row["Key"] == "bob")
    # (The fake grading scores what it is told to; a real one gives a missing hw3/ 0.)
    assert bob["hw3"] != "" and summary.assignment_choice == [], (bob, summary.assignment_choice)


def test_two_downloads_side_by_side_are_each_graded_for_their_own_assignment(tmp_path):
    """One folder holding both downloads: each is one assignment's (per folder, not a
    majority of the whole, which would leave the smaller download ungraded)."""
    subs, out = tmp_path / "combined", tmp_path / "grades"
    for pid, name in ((401101, "Alice Tamm"), (401102, "Bob Kask"), (401103, "Carmen Mets")):
        practical4_upload(subs / "moodle_practical4" / f"{name}_{pid}_assignsubmission_file_")
    hw3_upload(subs / "moodle_hw3" / "Alice Tamm_502201_assignsubmission_file_")
    summary, _ = batch(subs, out)
    by_key = {row["Key"]: row for row in rows(out)}
    alice = by_key["Alice_Tamm_401101; Alice_Tamm_502201"]
    assert alice["practical4"] and alice["hw3"] and by_key["Bob_Kask_401102"]["hw3"] == "", by_key
    assert any(line.startswith("moodle_hw3/: graded: hw3") for line in summary.assignment_choice)


# --- plain folders: a key per assignment -----------------------------------------------------

def test_a_plain_folder_graded_for_a_second_assignment_keeps_the_first_ones_grade(tmp_path):
    """Outside Moodle a student's folder keeps its name for every assignment. Graded for
    Practical 4 and then, into the same DIR, for HW3, alice's HW3 run had replaced her Practical
    4 run: her Practical 4 grade left grades.csv and her report left submissions/alice/."""
    p4, hw3, out = tmp_path / "p4_uploads", tmp_path / "hw3_uploads", tmp_path / "grades"
    practical4_upload(p4 / "alice", 10)
    practical4_upload(p4 / "bob", 5)
    hw3_upload(hw3 / "alice", 10)
    batch(p4, out, ("practical4",))
    _, said = batch(hw3, out, ("hw3",))

    found = {row["Full name"]: row for row in rows(out)}
    alice = found["alice"]
    assert alice["practical4"] and alice["hw3"], (
        f"expected alice's Practical 4 grade kept beside her HW3 grade in one row; observed "
        f"{alice} (grader/batch/assignment_keys.py)")
    assert alice["Key"] == "alice; alice.hw3", alice
    assert (out / "submissions" / "alice" / "result.json").is_file(), "Practical 4's report is gone"
    assert (out / "submissions" / "alice.hw3" / "result.json").is_file()
    assert "alice.hw3: alice's upload graded for hw3 under a key of its own: the key alice " \
           "holds their practical4 grade, which stays" in said, said

    # A new upload of the same assignment replaces its own record, not the other one.
    hw3_upload(hw3 / "alice", 3)
    practical4_upload(p4 / "alice", 4)
    batch(hw3, out, ("hw3",))
    _, said = batch(p4, out, ("practical4",))
    again = {row["Full name"]: row for row in rows(out)}["alice"]
    assert again["Key"] == "alice; alice.hw3", again
    assert float(again["practical4"]) < float(alice["practical4"]) \
        and float(again["hw3"]) < float(alice["hw3"]), (
        f"expected each new upload's lower score in its own column; before {alice}, after {again}")
    assert "under a key of its own" not in said, said


def test_a_course_repository_graded_one_assignment_at_a_time_keeps_each_grade(tmp_path):
    """A student's folder holding every assignment (a course repository), graded with
    --assignment per deadline into one DIR: each deadline's grade stays."""
    subs, out = tmp_path / "repos", tmp_path / "grades"
    hw3_upload(practical4_upload(subs / "alice", 10), 10)
    batch(subs, out, ("practical4",))
    batch(subs, out, ("hw3",))
    batch(subs, out, ("practical4",))   # run again: nothing new, nothing lost
    (alice,) = rows(out)
    assert alice["practical4"] and alice["hw3"] and alice["Key"] == "alice; alice.hw3", alice

    # At the term's end, both at once: one upload's grading takes over both records (it had
    # made two rows of one name, "two people with one name", with HW3 graded twice).
    _, said = batch(subs, out, ("practical4", "hw3"))
    (alice,) = rows(out)
    # graded (its written answers wait: "graded, provisional: ..."), one person, no flag
    assert (alice["Key"], alice["Status"].split(",")[0]) == ("alice", "graded"), alice
    assert "kept apart" not in alice["Status"], alice
    assert alice["practical4"] and alice["hw3"], alice
    assert "alice: its grading replaces the record of alice.hw3" in said, said
    assert not (out / "submissions" / "alice.hw3").exists()


def test_a_key_per_assignment_is_never_another_students_and_is_reused_once_free():
    from grader.batch.assignment_keys import keys_per_assignment
    from grader.batch.inputs import Submission
    alice = Submission(Student("alice", "alice"))
    # Another student's folder is named "alice.hw3": never hers too.
    known = [Student("alice", "alice"), Student("alice.hw3", "alice.hw3")]
    keys = keys_per_assignment([alice], {"alice": ("hw3",)}, {"alice": ("practical4",),
                               "alice.hw3": ("hw3",)}, known)
    assert [s.student.key for s in keys.found] == ["alice.hw3.x"], keys
    assert keys.graded_by == {"alice.hw3.x": ("hw3",)} and keys.replaces == {}, keys
    # Her own alice.hw3, whose record a later upload took over, is hers again.
    known = [Student("alice", "alice"), Student("alice.hw3", "alice")]
    keys = keys_per_assignment([alice], {"alice": ("hw3",)}, {"alice": ("practical4",)}, known)
    assert [s.student.key for s in keys.found] == ["alice.hw3"], keys
    assert "alice.hw3: alice's upload graded for hw3 under a key of its own: the key alice " \
           "holds their practical4 grade, which stays" in keys.lines[0], keys.lines


def test_a_dry_run_reads_the_gradebook_and_changes_nothing(tmp_path):
    """A dry run had created gradebook.sqlite and rewritten the published files."""
    subs, out = tmp_path / "subs", tmp_path / "grades"
    practical4_upload(subs / "alice", 10)
    summary, _ = batch(subs, out, ("practical4",), dry_run=True)
    assert not (out / "gradebook.sqlite").exists(), "a dry run created the gradebook"
    assert summary.plan[-1] == "alice: would be graded (practical4)", summary.plan
    batch(subs, out, ("practical4",))
    before = (out / "gradebook.sqlite").read_bytes()
    practical4_upload(subs / "alice", 4)
    summary, _ = batch(subs, out, ("practical4",), dry_run=True)
    assert summary.plan[-1] == "alice: would be graded (practical4)", summary.plan
    assert (out / "gradebook.sqlite").read_bytes() == before, "a dry run changed the gradebook"


# --- F3: a late/ folder of one download beside another --------------------------------------

def test_a_late_folder_inside_one_of_two_downloads_is_its_students_not_one_named_late(tmp_path):
    """combined/moodle_practical4/late/Greta Kuusk_..._/ had been graded as a student called
    "late": its folder was one level deeper than the batch looked for Moodle's folders."""
    subs = tmp_path / "combined"
    practical4_upload(subs / "moodle_practical4" / "Greta Kuusk_401108_assignsubmission_file_", 3)
    practical4_upload(subs / "moodle_practical4" / "late" / "Greta Kuusk_401108_assignsubmission_file_")
    practical4_upload(subs / "moodle_practical4" / "late" / "Hanna Rebane_401109_assignsubmission_file_")
    hw3_upload(subs / "moodle_hw3" / "Alice Tamm_502201_assignsubmission_file_")
    found, notes = discover(subs)
    students = [(s.student.name, s.student.participant_id) for s in found]
    assert students == [("Alice Tamm", "502201"), ("Greta Kuusk", "401108"),
                        ("Hanna Rebane", "401109")], (
        f"expected late/'s students as themselves; observed {students} (grader/batch/inputs.py "
        "_entries)")
    assert "moodle_practical4/late/ holds Moodle submissions: each of them graded as its " \
           "student's" in notes, notes
    greta = next(s for s in found if s.student.name == "Greta Kuusk")
    assert greta.several and greta.export == "moodle_practical4", greta


def test_an_instructors_notes_beside_the_late_submissions_leave_them_their_students(tmp_path):
    """late/ holding a list of who is late beside Moodle's folders had been one upload of a
    student called "late"; a student's folder holding code beside a Moodle-named one stays
    the student's (adv19 C3)."""
    subs = tmp_path / "moodle_practical4"
    practical4_upload(subs / "late" / "Greta Kuusk_401108_assignsubmission_file_")
    practical4_upload(subs / "late" / "Hanna Rebane_401109_assignsubmission_file_")
    (subs / "late" / "who is late.txt").write_text("Greta: 2 days (illness)\n")
    (subs / "late" / "README.md").write_text("# late uploads\n")
    practical4_upload(subs / "bob" / "Vera Victim_401101_assignsubmission_file_")
    (subs / "bob" / "solution.py").write_text("print('mine')\n")
    found, notes = discover(subs)
    students = sorted(s.student.key for s in found)
    assert students == ["Greta_Kuusk_401108", "Hanna_Rebane_401109", "bob"], (
        f"expected late/'s students as themselves and bob as bob; observed {students} "
        "(grader/batch/inputs.py _holds_others)")
    assert "ignored late/who is late.txt: not a folder, a .zip, an archive or a Moodle " \
           "submission file" in notes, notes


def test_a_late_reupload_with_other_files_is_named_in_the_status_whole(tmp_path):
    """The on-time and late uploads differ: the status names where each is and what to do,
    and grades.csv keeps it whole (it had been cut at 200 characters, mid-sentence)."""
    subs, out = tmp_path / "moodle_practical4", tmp_path / "grades"
    practical4_upload(subs / "Greta Kuusk_401108_assignsubmission_file_", 3)
    practical4_upload(subs / "late" / "Greta Kuusk_401108_assignsubmission_file_", 10)
    batch(subs, out, ("practical4",))
    status = rows(out)[0]["Status"]
    assert status == (
        "needs a person: 2 uploads of Greta Kuusk with different files: Greta "
        "Kuusk_401108_assignsubmission_file_/ and late/Greta Kuusk_401108_assignsubmission_file_/. "
        "Which one counts is for a person to decide: move the other out of moodle_practical4/ "
        "and run the batch again"), f"observed status {status!r} (grader/batch/grades_csv.py)"


def test_a_long_status_is_cut_where_a_clause_ends_and_says_where_the_rest_is():
    from grader.batch.grades_csv import short_message
    text = "a part of the message that goes on, " * 20 + "and its end."
    cut = short_message(text)
    assert cut.endswith("that goes on [...] (in full on index.html)") and len(cut) < len(text), (
        f"expected a cut at a clause's end with where the rest is; observed {cut!r}")
    assert short_message("short: kept whole.") == "short: kept whole."


# --- red team adv19 C3: a student's folder unseats no one ------------------------------------

def test_a_students_folder_holding_a_moodle_named_folder_unseats_no_one(tmp_path):
    """Vera was graded; bob's e-mailed folder, added later, held a folder named like Vera's
    Moodle submission: her grade had become "needs a person: 2 uploads" and bob had no row."""
    subs, out = tmp_path / "moodle_practical4", tmp_path / "grades"
    practical4_upload(subs / "Vera Victim_401101_assignsubmission_file_", 10)
    practical4_upload(subs / "Olga Other_401102_assignsubmission_file_", 5)
    batch(subs, out, ("practical4",))
    before = {row["Key"]: row for row in rows(out)}
    practical4_upload(subs / "bob", 7)
    practical4_upload(subs / "bob" / "Vera Victim_401101_assignsubmission_file_", 0)
    summary, said = batch(subs, out, ("practical4",))
    after = {row["Key"]: row for row in rows(out)}
    assert after["Vera_Victim_401101"] == before["Vera_Victim_401101"], (
        f"expected Vera's grade untouched; observed {after['Vera_Victim_401101']} "
        "(grader/batch/inputs.py _entries)")
    assert after["bob"]["Status"].split(",")[0] == "graded" and after["bob"]["practical4"], after
    assert sorted(after) == ["Olga_Other_401102", "Vera_Victim_401101", "bob"], sorted(after)
    assert summary.progress.skipped == 2 and summary.progress.graded == 1, said


# --- red team adv19 H: an assignment half the uploads hold ------------------------------------

def test_an_assignment_only_half_the_uploads_hold_is_not_graded_for_them_all(tmp_path):
    """Two late uploads of Practical 4, one of them a whole course folder with hw3/: "at least
    half" had graded HW3 for both (the other's 0) and written moodle/hw3.csv with Practical 4's
    participant numbers, which Moodle gives per assignment."""
    subs, out = tmp_path / "moodle_practical4_late", tmp_path / "grades"
    practical4_upload(subs / "Ann Able_501_assignsubmission_file_", 10)
    hw3_upload(practical4_upload(subs / "Ben Busy_502_assignsubmission_file_" / "course", 10), 10)
    summary, said = batch(subs, out)
    header = list(csv.reader((out / "grades.csv").open(encoding="utf-8")))[0]
    assert header == ["Identifier", "Full name", "practical4", "Total", "Status", "Key"], (
        f"expected Practical 4 alone graded; observed header {header} (grader/batch/pipeline.py "
        "choose_assignments)")
    written = sorted(p.name for p in (out / "moodle").glob("*.csv"))
    assert written == ["practical4.csv"], f"expected no HW3 sheet of this download; observed {written}"
    choice = "\n".join(summary.assignment_choice)
    assert "not graded: hw3, in only 1 of them (Ben_Busy_502)" in choice, choice


def test_a_download_without_a_majority_is_graded_for_the_most_held_and_said(tmp_path):
    """One upload of Practical 4, one of HW3: which one the download is for cannot be told. Both
    are graded (no upload is left out), and the Moodle sheets are said to hold this download's
    participant numbers for two assignments, one of them wrongly."""
    subs, out = tmp_path / "moodle_late", tmp_path / "grades"
    practical4_upload(subs / "Ann Able_501_assignsubmission_file_", 10)
    hw3_upload(subs / "Ben Busy_502_assignsubmission_file_", 10)
    summary, said = batch(subs, out)
    choice = "\n".join(summary.assignment_choice)
    assert ("no assignment is in more than half of the 2 uploads holding an assignment's files: "
            "graded for those most of them hold, practical4 and hw3 (--assignment chooses)") \
        in choice, choice
    warning = ("the Moodle download's uploads are graded for practical4 and hw3, but a Moodle "
               "download is one assignment's and numbers its participants for it: moodle/"
               "practical4.csv and moodle/hw3.csv both hold its participant numbers, which are "
               "right in the one of the assignment it was downloaded from; upload only that "
               "one (or grade it with --assignment)")
    assert warning in summary.progress.warnings, summary.progress.warnings
