"""The instructor's view of one graded submission (`instructor.md` beside result.json).

What needs a person: each manual item with the rubric's guidance (never shown to students)
beside the text the student wrote for it, the flags the checks raised (reported numbers the
code cannot produce, implausible magnitudes), problems reading the answers, and an overrides
block to fill in and pass back with `pdl-grade grade --overrides FILE --rescore`.
"""
from __future__ import annotations

import json

from typing import Any, Mapping

from grader.answers.handed_in_names import is_sheet_name
from grader.common.text import answer_shown, is_table
from grader.reports.measurements import format_value
from grader.reports.jinja_env import environment, tidy
from grader.reports.pending import by_hand_points, pending_what, waiting_to_be_read
from grader.reports.student_view import (FILE_STATUS, display_name, file_shown, links_view,
                                         not_answered, not_graded_view, said_not_done,
                                         surely_unanswered, template_copies_view)


def instructor_view(result: Mapping[str, Any], rubrics: Mapping[str, Any],
                    shared: Mapping[str, list[str]] | None = None) -> dict[str, Any]:
    """`shared`: {item id: other students who wrote the same answer}, from a batch's class."""
    shared = shared or {}
    assignments = []
    for assignment in result.get("assignments") or []:
        rubric = rubrics.get(assignment.get("id"))
        guidance = {item.id: item.guidance for item in rubric.items} if rubric else {}
        answers = assignment.get("answers") or {}
        values, origin = answers.get("values") or {}, answers.get("origin") or {}
        unanswered = surely_unanswered(answers)
        not_done = said_not_done(answers)
        manual, short = [], []
        automatic = [i for i in assignment.get("items") or []
                     if i.get("kind") not in ("manual", "penalty") and i.get("max_score")]
        for item in assignment.get("items") or []:
            if item.get("kind") != "manual":
                if _below_full(item):
                    short.append({"id": item["id"], "score": format_value(item.get("score", 0)),
                                  "points": format_value(item.get("max_score", 0)),
                                  "waiting": format_value(item.get("pending_points") or 0)
                                  if item.get("pending_points") else None})
                continue
            qid = item.get("answer") or ""
            text = values.get(qid)
            manual.append({
                "id": item["id"], "title": item.get("title", ""),
                "points": format_value(item.get("max_score", 0)),
                "score": format_value(item.get("score", 0)),
                "pending": bool(item.get("pending")), "comment": "" if item.get("pending")
                else item.get("feedback", ""),
                "guidance": guidance.get(item["id"], ""), "answer_id": qid,
                # A table as its rows, a dict as its entries (a TA's audits 27 and 28).
                "text": answer_shown(text, lines=True) if is_table(text) or isinstance(
                    text, Mapping) else format_value(text) if text is not None else None,
                "source": origin.get(qid, ""),
                # The other file's answer in other words (a report and a sheet both handed in):
                # graded with this one, never left unread.
                "also": (answers.get("also") or {}).get(qid),
                "same_as": list(shared.get(item["id"]) or []),
                "unanswered": qid in unanswered,
                # What the student wrote where it says the task was not done ("Not done").
                "not_done": (not_done.get(qid) or {}).get("said"),
                "not_done_in": _written_in((not_done.get(qid) or {}).get("file")),
                "beside": _task_items(item["id"], automatic),
            })
        assignments.append({
            "id": assignment.get("id"), "title": assignment.get("title", ""),
            "score": format_value(assignment.get("score")),
            "max_score": format_value(assignment.get("max_score")),
            "flags": list(assignment.get("flags") or []),
            "review": bool(answers.get("needs_manual_review")),
            "files": [{"file": f.get("file"), "status": FILE_STATUS.get(f.get("status"), f.get("status")),
                       "shown": file_shown(f)}
                      for f in answers.get("files") or [] if isinstance(f, Mapping)],
            # A report handed in in another format than the handout asks for (hw3/report.md):
            # where a person reads the written answers, and what the overrides block is for.
            "report_instead": answers.get("report_instead"),
            "problems": list(answers.get("problems") or []),
            "missing": not_answered(answers),
            # Of those, what the report or the sheet says where it says they were not done.
            "not_done": _not_done_view(not_done),
            "not_done_by": _said_by(not_done),
            "unread": list(answers.get("unread") or []),
            # Those an answer sheet holds, as written (a pasted nvidia-smi box): read here, not
            # looked up in the student's YAML.
            "unread_texts": [{"id": qid, "file": str(held.get("file") or ""),
                              "text": str(held.get("text") or "").rstrip()}
                             for qid, held in (answers.get("unread_text") or {}).items()
                             if isinstance(held, Mapping) and held.get("text")],
            # Automatic items whose points wait for a person to read such an answer.
            "pending_unread": list(assignment.get("pending_unread") or []),
            # ... and those whose checks the grader could not run on code that itself runs.
            "pending_by_hand": [{"id": item["id"], "waiting": format_value(by_hand_points(item))}
                                for item in waiting_to_be_read(assignment) if by_hand_points(item)],
            "by_hand_why": _by_hand_why(assignment),
            "unread_cells": [cell for cell in answers.get("unread_cells") or []
                             if isinstance(cell, Mapping)],
            "manual": manual,
            "automatic_short": short,   # automatic items below full marks
            "integrity": assignment.get("integrity"),
        })
    # Named as the LMS names the student, never by a path: a batch grades an unpacked copy in
    # a scratch folder that is gone by the time anyone reads this.
    student = result.get("student") if isinstance(result.get("student"), Mapping) else {}
    key = student.get("key") if student.get("key") != display_name(result) else None
    batch_key = student.get("key") or None
    return {"submission": display_name(result) + (f" ({key})" if key else ""),
            "score": format_value(result.get("score")),
            "max_score": format_value(result.get("max_score")), "assignments": assignments,
            "pending_points": format_value(result.get("pending_points") or 0)
            if result.get("pending_points") else None,
            "pending_what": pending_what(result),
            "override_problems": [str(p) for p in result.get("override_problems") or []],
            "links": links_view(result.get("links")),
            # The upload's assignments a batch left out as not handed in, and why (the console
            # had been the only place that said so).
            "template_copies": template_copies_view(result),
            # A batch's student (keyed): scored through the batch, whose gradebook is the
            # record (a `grade --rescore` of this folder is overwritten by the next batch run).
            "batch_key": batch_key,
            "overrides": overrides_template(assignments, batch_key),
            "not_graded": not_graded_view(result, for_student=False)}


def _by_hand_why(assignment: Mapping[str, Any]) -> str:
    """What the grader said where it could not run an item's checks on working code: the first
    such case's feedback (the same cause for every check that reads the unbuilt model)."""
    for item in waiting_to_be_read(assignment):
        for check in item.get("checks") or []:
            if check.get("by_hand") and check.get("by_hand") == check.get("failed"):
                return next((str(c.get("message") or "") for c in check.get("cases") or []
                             if c.get("outcome") == "failed"), "")
    return ""


def _written_in(file: Any) -> str:
    """Which of the student's files an answer said not done is in, as instructor.md names it."""
    return "the answer sheet" if is_sheet_name(str(file or "")) else "the report"


def _said_by(not_done: Mapping[str, Mapping]) -> str:
    """"the report says", "the answer sheet says", or both "say": where the answers said not
    done are written."""
    files = list(dict.fromkeys(_written_in(said.get("file")) for said in not_done.values()))
    return " and ".join(files) + (" say" if len(files) > 1 else " says")


def _not_done_view(not_done: Mapping[str, Mapping]) -> list[dict]:
    """The answers said not done, those that say it in one place together: [{ids, said, where}]."""
    grouped: dict[tuple, list[str]] = {}
    for qid, said in not_done.items():
        place = ", ".join(str(p) for p in (said.get("file"), said.get("where")) if p)
        grouped.setdefault((str(said.get("said") or ""), place), []).append(qid)
    return [{"ids": ids, "said": said, "where": where} for (said, where), ids in grouped.items()]


def overrides_template(assignments: list[dict], batch_key: str | None = None) -> str:
    """A YAML skeleton for `--overrides`: every manual item, with its score where a person
    gave one and `points: null` where none did yet (null keeps it pending: a skeleton of 0s
    pasted unfilled had read as every answer graded 0); under the student's key for a
    batch's overrides file."""
    lines = ["# item id: {points: <0 .. max>, comment: \"...\"}  (points: null = not graded "
             "yet, the answer stays pending)"]
    if batch_key:
        # Quoted: a folder name may hold what YAML would read otherwise (a colon, a leading #).
        lines += ["# for the batch's --overrides file (one key per student):",
                  f"{json.dumps(batch_key)}:"]
    indent = "  " if batch_key else ""
    for assignment in assignments:
        integrity = assignment.get("integrity") or {}
        if integrity.get("withheld"):
            lines.append(f'{indent}# {assignment["id"]}\'s automatic points are withheld '
                         "(integrity); after looking, uncomment to release them:")
            lines.append(f'{indent}# {assignment["id"]}.integrity: {{cleared: true, comment: '
                         '"..."}')
        if assignment.get("unread") or assignment.get("unread_cells") or assignment.get("report_instead") \
                or assignment.get("pending_by_hand"):
            # Answers written but not read cost the automatic item that checks them: which
            # one, and its points now, so the instructor can set it (an audit: "override where
            # they are right" with only the manual items in the skeleton). A report in another
            # format than the handout's is graded as read: its items are listed too, for the
            # course's penalty or a regrade.
            comment = ("regraded by hand: an unread answer is right" if assignment.get("unread")
                       or assignment.get("unread_cells") else
                       f"regraded by hand from {assignment['report_instead']}"
                       if assignment.get("report_instead") else "graded by hand")
            by_hand = {i["id"] for i in assignment.get("pending_by_hand") or []}
            for item in assignment.get("automatic_short") or []:
                if item.get("waiting"):
                    # Its points wait for a person (an answer found but not read): null keeps
                    # them waiting, as a written answer's; a number is the whole item's grade.
                    why = ("checks the grader could not run on working code" if item["id"] in by_hand
                           else "an answer found but not read")
                    lines.append(f'{indent}{item["id"]}: {{points: null, comment: ""}}  # automatic: '
                                 f'{item["score"]} of {item["points"]} from the checks, {item["waiting"]} '
                                 f"waits for you ({why}): set the whole item's points")
                    continue
                lines.append(f'{indent}# {item["id"]}: {{points: {item["score"]}, comment: '
                             f'"{comment}"}}  # automatic, now {item["score"]} of {item["points"]}: '
                             'uncomment to set')
        for m in assignment["manual"]:
            comment = str(m["comment"]).replace("\\", "\\\\").replace('"', '\\"')
            points = "null" if m["pending"] else m["score"]
            if m["pending"] and m.get("unanswered"):
                # Nothing was handed in for it, and everything handed in was read, or what was
                # says it was not done: 0 is its grade, pasted as is (a TA's audit: a blank
                # answer had waited as pending; audit 30: so had a "Not done").
                points, comment = 0, "no answer handed in"
                if m.get("not_done"):
                    said = str(m["not_done"]).replace("\\", "\\\\").replace('"', '\\"')
                    comment = f"no answer handed in: {m['not_done_in']} says '{said}'"
            found = "  (says it was not done)" if m.get("not_done") else "  (no answer found)"
            lines.append(f'{indent}{m["id"]}: {{points: {points}, comment: "{comment}"}}'
                         f'  # of {m["points"]}' + (found if m.get("unanswered") else ""))
    return "\n".join(lines)


def _task_items(manual_id: str, automatic: list[Mapping[str, Any]]) -> list[dict]:
    """The automatic items of a written answer's task ("hw3.task3" beside
    "hw3.task3.explanation"), with their scores: a guidance that asks whether the answer
    matches the submitted code is then graded with what the checks found in it, not with the
    code opened by hand (a TA's audit)."""
    task = manual_id.rsplit(".", 1)[0]
    return [{"id": i["id"], "title": i.get("title", ""), "score": format_value(i.get("score", 0)),
             "points": format_value(i.get("max_score", 0)), "status": i.get("status", "")}
            for i in automatic if i.get("id") == task]


def _below_full(item: Mapping[str, Any]) -> bool:
    try:
        return float(item.get("score") or 0) < float(item.get("max_score") or 0)
    except (TypeError, ValueError):
        return False


def render_instructor_markdown(result: Mapping[str, Any], rubrics: Mapping[str, Any],
                               shared: Mapping[str, list[str]] | None = None) -> str:
    template = environment(autoescape=False).get_template("instructor.md.j2")
    return tidy(template.render(view=instructor_view(result, rubrics, shared)))
