"""The instructor's view: guidance beside the student's text, flags, an overrides skeleton."""
from __future__ import annotations

import copy
import re

import yaml

from tests.support.report_fixtures import ROUND_ROBIN, find_item
from grader.grading import write_rendered
from grader.reports.instructor import render_instructor_markdown
from grader.reports.render import render_html, render_markdown
from grader.scoring import load_rubrics


def with_written_answer(result: dict) -> dict:
    data = copy.deepcopy(result)
    item = find_item(data, "hw3.task2.explanation")
    item["answer"] = "task2.explanation"
    hw3 = data["assignments"][0]
    hw3["answers"]["values"]["task2.explanation"] = "Every layer adds work; the GPUs take turns."
    hw3["answers"]["origin"]["task2.explanation"] = "hw3/report.pdf"
    hw3["flags"] = [{"check": "hw3.task2.reported", "text": "ratio 9.0 far from the measured 3.9"}]
    return data


def test_manual_items_show_guidance_and_the_students_text(result):
    md = render_instructor_markdown(with_written_answer(result(ROUND_ROBIN)), load_rubrics())
    task2 = md[md.index("### Task 2 - written answer"):]
    task2 = task2[:task2.index("\n### ")]
    assert "*Guidance:* 1 point: the step time grows roughly in proportion to DEPTH" in task2
    assert "Student's answer (`task2.explanation`, from hw3/report.pdf):" in task2
    assert "Every layer adds work; the GPUs take turns." in task2
    assert "- `hw3.task2.reported`: ratio 9.0 far from the measured 3.9" in md
    assert "**Answers: manual review needed.**" in md


def test_the_overrides_skeleton_is_valid_yaml_for_every_manual_item(result):
    data = result(ROUND_ROBIN)
    md = render_instructor_markdown(data, load_rubrics())
    block = md[md.index("## Overrides to fill in"):].split("```text\n", 1)[1].split("\n```")[0]
    overrides = yaml.safe_load(block)
    manual = [i["id"] for a in data["assignments"] for i in a["items"] if i["kind"] == "manual"]
    assert list(overrides) == manual
    assert all(set(v) == {"points", "comment"} for v in overrides.values())


def test_a_batchs_student_is_scored_through_the_batch_under_their_key(result):
    """A `grade --rescore` of one folder of a batch is overwritten by the next batch run, and
    never reaches grades.csv: a batch's student gets the batch's overrides file, keyed."""
    data = result(ROUND_ROBIN)
    data["student"] = {"key": "Mari_Maasikas_101", "name": "Mari Maasikas"}
    md = render_instructor_markdown(data, load_rubrics())
    assert "pdl-grade batch SUBMISSIONS --out DIR --overrides overrides.yaml" in md
    assert "pdl-grade grade SUBMISSION" not in md
    block = md[md.index("## Overrides to fill in"):].split("```text\n", 1)[1].split("\n```")[0]
    overrides = yaml.safe_load(block)
    manual = [i["id"] for a in data["assignments"] for i in a["items"] if i["kind"] == "manual"]
    assert list(overrides) == ["Mari_Maasikas_101"] and list(overrides["Mari_Maasikas_101"]) == manual
    # One submission graded on its own keeps the single command.
    del data["student"]
    assert "pdl-grade grade SUBMISSION --out DIR --rescore" in render_instructor_markdown(
        data, load_rubrics())


def test_guidance_and_flags_stay_out_of_the_student_reports(result):
    data = with_written_answer(result(ROUND_ROBIN))
    for text in (render_markdown(data), render_html(data)):
        assert "Accept answers saying the time grows" not in text
        assert "far from the measured" not in text


def test_report_command_writes_the_instructor_view(result, tmp_path):
    written = write_rendered(with_written_answer(result(ROUND_ROBIN)), tmp_path, ["instructor"])
    assert [p.name for p in written] == ["instructor.md"]
    assert "## Overrides to fill in" in written[0].read_text()


def held_for_review(result: dict, cleared: bool = False) -> dict:
    data = copy.deepcopy(result)
    data["assignments"][0]["integrity"] = {
        "problems": ["hw3/model_parallel.py:4 reaches into the grader: imports grader.vgpu"],
        "withheld": not cleared, "withheld_points": 12.5, "cleared": cleared,
        "comment": "staff only: looked, harmless" if cleared else ""}
    return data


def test_a_hold_shows_what_was_found_and_how_to_release_it(result):
    md = render_instructor_markdown(held_for_review(result(ROUND_ROBIN)), load_rubrics())
    assert "**Integrity: automatic points withheld** (12.5 point(s) the checks gave)" in md
    assert "- hw3/model_parallel.py:4 reaches into the grader: imports grader.vgpu" in md
    block = md[md.index("## Overrides to fill in"):].split("```text\n", 1)[1].split("\n```")[0]
    release = [line[2:] for line in block.splitlines() if ".integrity:" in line]
    assert yaml.safe_load(release[0]) == {"hw3.integrity": {"cleared": True, "comment": "..."}}
    cleared = render_instructor_markdown(held_for_review(result(ROUND_ROBIN), cleared=True),
                                         load_rubrics())
    assert "**Integrity: cleared** by the staff (staff only: looked, harmless)" in cleared
    assert ".integrity:" not in cleared.split("## Overrides to fill in")[1]


def test_students_see_the_hold_but_not_the_staff_comment(result):
    held = held_for_review(result(ROUND_ROBIN))
    for text in (render_markdown(held), render_html(held)):
        assert "Held for review" in text and "(the checks gave 12.5)" in text
        assert "imports grader.vgpu" in text
    cleared = held_for_review(result(ROUND_ROBIN), cleared=True)
    for text in (render_markdown(cleared), render_html(cleared)):
        assert "Reviewed by the course staff" in text and "Held for review" not in text
        assert "staff only" not in text


def test_ignored_overrides_and_pending_points_are_told_to_the_instructor(result):
    graded = result(ROUND_ROBIN)
    graded["pending_points"] = 2.5
    graded["override_problems"] = ["override 'hw3.task9' ignored: hw3 has no item with that id"]
    text = render_instructor_markdown(graded, load_rubrics())
    total = re.search(r"Total: .*", text).group(0)
    assert (f"; written answers worth 2.5 of the {graded['max_score']:g} points wait for a person "
            f"(they are not in the {graded['score']:g} yet)") in total, (
        f"expected the instructor's total to say the 2.5 are not in the score; observed: {total!r}")
    assert "**Overrides that were ignored**" in text
    assert "- override 'hw3.task9' ignored: hw3 has no item with that id" in text
    # ...and never to the student:
    assert "hw3.task9" not in render_markdown(graded) and "hw3.task9" not in render_html(graded)


def with_notes_only(result: dict) -> dict:
    data = copy.deepcopy(result)
    data["assignments"][0]["integrity"] = {
        "problems": [], "notes": ["hw3/profile.py ships a module of its own: a module named "
                                  "'profile' shadows the standard library's 'profile' for the "
                                  "code beside it"],
        "withheld": False, "withheld_points": 0.0, "cleared": False, "comment": ""}
    return data


def test_notes_are_shown_to_the_instructor_only_and_withhold_nothing(result):
    data = with_notes_only(result(ROUND_ROBIN))
    md = render_instructor_markdown(data, load_rubrics())
    assert "**Worth knowing**" in md and "shadows the standard library's 'profile'" in md
    assert "automatic points withheld" not in md
    assert ".integrity:" not in md.split("## Overrides to fill in")[1]
    for text in (render_markdown(data), render_html(data)):
        assert "profile" not in text and "Held for review" not in text


def test_an_answer_written_in_words_it_cannot_read_is_never_called_not_answered(result):
    """A TA's HW3 audit: "All 5 hold 4 layers each, so yes"-like answers the reader refuses
    were listed under "Not answered", and an instructor scanning for overrides skipped them."""
    data = copy.deepcopy(result(ROUND_ROBIN))
    answers = data["assignments"][0]["answers"]
    answers["missing"] = ["task4.all_gpus_utilised", "task1.transfer_between"]
    answers["unread"] = ["task4.all_gpus_utilised"]
    answers["problems"] = ["hw3/answers.yaml: task4.all_gpus_utilised: expected yes/no (true/"
                           "false), got 'mostly, I would say': write yes or no first"]
    md = render_instructor_markdown(data, load_rubrics())
    assert "Not answered: `task1.transfer_between`." in md
    assert ("Written where or how the grader cannot read them, so scored 0 (the problems above "
            "say why; read them, and override where they are right: the overrides block at the end lists the automatic items below full marks, commented): "
            "`task4.all_gpus_utilised`.") in md
    html = render_html(data)
    assert "task1.transfer_between" in html and "task4.all_gpus_utilised:" not in \
        html[html.index('class="missing"'):].split("</ul>")[0]


def test_table_cells_it_cannot_read_are_listed_with_the_answers_it_cannot_read(result):
    """A TA's audit: "about 7,5 ms" in a timing table was not read, and instructor.md's list of
    what the grader cannot read named whole answers only."""
    data = copy.deepcopy(result(ROUND_ROBIN))
    answers = data["assignments"][0]["answers"]
    answers["missing"], answers["unread"] = ["task4.all_gpus_utilised"], ["task4.all_gpus_utilised"]
    answers["unread_cells"] = [{"id": "task2.step_time_table", "row": "6", "column": "step_time_ms",
                                "text": "about 50-60 ms"},
                               {"id": "task4.table", "row": "2", "column": "memory_per_gpu_mib",
                                "text": "`x` *y*"}]
    md = render_instructor_markdown(data, load_rubrics())
    assert ("Written where or how the grader cannot read them, so scored 0 (the problems above, "
            "and for a table's cells its checks' feedback, say why; read them, and override where "
            "they are right: the overrides block at the end lists the automatic items below "
            "full marks, commented): `task4.all_gpus_utilised`, "
            "`task2.step_time_table` (row 6, step_time_ms: about 50-60 ms), "
            "`task4.table` (row 2, memory_per_gpu_mib: \\`x\\` \\*y\\*).") in md, md
    answers["missing"], answers["unread"] = [], []
    md = render_instructor_markdown(data, load_rubrics())
    assert ("say why; read them, and override where they are right: the overrides block at the "
            "end lists the automatic items below full marks, commented): `task2.step_time_table` "
            "(row 6") in md

def test_the_overrides_skeleton_leaves_unfilled_answers_pending(result):
    """The skeleton had been pre-filled with `points: 0`: pasted unfilled, every written
    answer read as graded 0 (and the Moodle comment stopped saying answers were waiting)."""
    from tests.support.fake_graders import fake_report
    from grader.reports.instructor import overrides_template
    from grader.scoring import build_result, load_rubrics, score_assignment
    rubrics = load_rubrics()
    rubric = rubrics["practical4"]
    graded = score_assignment(rubric, fake_report(rubric, passed=10),
                              overrides={"practical4.questions.easier": {"points": 0.5,
                                                                         "comment": "good"}})
    text = render_instructor_markdown(build_result("kadri", [graded]), rubrics)
    block = text.split("## Overrides to fill in")[1].split("```text\n")[1].split("\n```")[0]
    skeleton = yaml.safe_load(block)
    assert skeleton["practical4.questions.easier"] == {"points": 0.5, "comment": "good"}
    unfilled = {k: v for k, v in skeleton.items() if k != "practical4.questions.easier"}
    assert unfilled and all(v["points"] is None for v in unfilled.values()), (
        f"expected every answer no person graded yet to be `points: null`; observed {unfilled} "
        "(grader/reports/instructor.py overrides_template)")
    # Pasted back unfilled: the answers stay pending, and no problem is reported.
    again = score_assignment(rubric, fake_report(rubric, passed=10), overrides=skeleton)
    pending = set(again.pending_manual)
    assert pending == set(unfilled) and again.pending_points == 0.5 * len(unfilled), (
        f"expected {sorted(unfilled)} pending; observed {sorted(pending)}")
    assert "points: null = not graded yet" in overrides_template([])


def test_unread_answers_bring_their_automatic_items_into_the_skeleton_commented():
    """instructor.md said "override where they are right" of answers it could not read, and
    the skeleton listed only the written answers: the automatic items below full marks are
    there too, commented (pasted as they are, they change nothing), with their points now."""
    from grader.reports.instructor import overrides_template
    view = {"id": "practical4", "manual": [], "unread": ["part1.output_shape"], "unread_cells": [],
            "automatic_short": [{"id": "practical4.report", "score": "1.2", "points": "2"}]}
    skeleton = overrides_template([view])
    line = next(l for l in skeleton.splitlines() if "practical4.report" in l)
    assert line.startswith("# practical4.report: {points: 1.2,") and "now 1.2 of 2" in line
    assert yaml.safe_load(line.lstrip("# ").split("  #")[0]) == {
        "practical4.report": {"points": 1.2, "comment": "regraded by hand: an unread answer is right"}}
    assert yaml.safe_load(skeleton) is None, "commented, the skeleton sets nothing"
    quiet = dict(view, unread=[])
    assert "practical4.report" not in overrides_template([quiet]), (
        "only where answers went unread")


def fully_read_without(result: dict, qid: str, item_id: str) -> dict:
    """The fixture with everything handed in read, and no answer anywhere to `qid`."""
    data = copy.deepcopy(result)
    hw3 = data["assignments"][0]
    hw3["answers"].update(missing=[qid], problems=[], unread=[], needs_manual_review=False)
    find_item(data, item_id)["answer"] = qid
    find_item(data, "hw3.task4.explanation")["answer"] = "task4.explanation"
    hw3["answers"]["values"]["task4.explanation"] = "Only one GPU computes at a time."
    return data


def test_a_written_answer_never_handed_in_is_told_as_such_and_skeletoned_as_0(result):
    """A TA's audit: explanations the student never wrote were listed as "pending instructor
    grading" and skeletoned `points: null`; everything handed in being read, 0 is the grade."""
    data = fully_read_without(result(ROUND_ROBIN), "task2.explanation", "hw3.task2.explanation")
    md = render_instructor_markdown(data, load_rubrics())
    block = md[md.index("## Overrides to fill in"):].split("```text\n", 1)[1].split("\n```")[0]
    skeleton = yaml.safe_load(block)
    assert skeleton["hw3.task2.explanation"] == {"points": 0, "comment": "no answer handed in"}
    assert skeleton["hw3.task4.explanation"]["points"] is None   # answered: a person grades it
    student = render_markdown(data)
    pending = next(line for line in student.splitlines() if line.startswith("Pending instructor"))
    assert "Task 2 - written answer: how and why the step time grows with DEPTH (no answer found" in pending
    assert pending.count("no answer found") == 1, pending


def test_an_answer_maybe_in_a_report_it_could_not_read_stays_pending(result):
    data = fully_read_without(result(ROUND_ROBIN), "task2.explanation", "hw3.task2.explanation")
    data["assignments"][0]["answers"]["needs_manual_review"] = True
    md = render_instructor_markdown(data, load_rubrics())
    block = md[md.index("## Overrides to fill in"):].split("```text\n", 1)[1].split("\n```")[0]
    assert yaml.safe_load(block)["hw3.task2.explanation"]["points"] is None
    assert "no answer found" not in render_markdown(data)


def test_a_written_answer_is_shown_beside_what_the_checks_found_in_its_tasks_code(result):
    """A TA's audit: the Task 3 explanation (a divmod rule) was read with no word that Task 3's
    code had earned 0 with the base code's split still in place; the guidance asks whether the
    rule matches the submitted __init__."""
    data = copy.deepcopy(result(ROUND_ROBIN))
    find_item(data, "hw3.task3")["score"] = 0
    find_item(data, "hw3.task3")["status"] = "failed"
    md = render_instructor_markdown(data, load_rubrics())
    manual = [i for i in data["assignments"][0]["items"] if i["kind"] == "manual"
              and i["id"].startswith("hw3.task3.")]
    assert manual, "the fixture has a Task 3 written answer"
    section = md[md.index(f"(`{manual[0]['id']}`"):]
    section = section[:section.index("\n### ")] if "\n### " in section else section
    assert "*The task's code, as the checks found it:*" in section and "(`hw3.task3`): 0 of 3 (failed)" in section, section  # the fixture's older rubric: 3 points
