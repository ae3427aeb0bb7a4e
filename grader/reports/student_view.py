"""What a student may see of a result.json, shaped for the templates.

Fields are copied by name (an allow-list), so anything instructor-facing that a later version
of result.json adds (rubric guidance, override comments meant for staff, paths on the grading
machine) stays out of the student report unless it is added here on purpose.
"""
from __future__ import annotations

import re

import datetime as _dt
from pathlib import PurePath
from typing import Any, Mapping

from grader.answers.handed_in_names import is_read_as_sheet
from grader.reports.formatting import format_points
from grader.reports.measurements import (comparison_rows, format_measured, format_value,
                                         task_label)
from grader.reports.missing_scripts import absent_script, pointer, where_to_look
from grader.reports.not_graded import grading_problem_said, not_graded
from grader.reports.pending import pending_what
from grader.reports.stopped_runs import point_to_the_stop, stopped_runs
from grader.reports.student_wording import all_for_the_student, for_the_student

STATUS_WORDS = {
    "passed": "passed", "failed": "failed", "partial": "partly passed", "error": "error",
    "skipped": "skipped", "manual": "manual", "penalty": "penalty",
    "withheld": "withheld for review",
    # An automatic item the instructor scored (an override): the checks' verdict is no longer
    # what the points say, so it is not shown as the item's status.
    "overridden": "set by the instructor",
}


def display_name(result: Mapping[str, Any]) -> str:
    """Whose submission: the student's name from the LMS export (result.json's `student`,
    filled by the batch), else their key, else the submission folder's name."""
    student = result.get("student")
    if isinstance(student, Mapping):
        for key in ("name", "key"):
            if isinstance(student.get(key), str) and student[key].strip():
                return student[key].strip()
    return PurePath(str(result.get("submission") or "")).name


def student_view(result: Mapping[str, Any]) -> dict[str, Any]:
    hardware = result.get("hardware") or {}
    return {
        "submission": display_name(result),
        "started_at": _when(result.get("started_at")),
        "grader_version": result.get("grader_version"),
        "hardware": _hardware_text(hardware),
        "score": format_points(result.get("score")),
        "max_score": format_points(result.get("max_score")),
        "pending_points": format_points(result.get("pending_points"))
        if result.get("pending_points") else None,
        "pending_what": pending_what(result),
        "errors": all_for_the_student(result.get("errors")),
        "left_out": all_for_the_student(result.get("left_out")),
        "links": links_view(result.get("links")),
        "template_copies": template_copies_view(result),
        "assignments": [assignment_view(a, hardware) for a in result.get("assignments") or []],
        "not_graded": not_graded_view(result),
        "ungraded_ids": [str(a.get("id")) for a in result.get("assignments") or []
                         if isinstance(a, Mapping) and grading_problem_said(a)],
    }


# Why a folder of the upload was not graded as handed in, where its result does not say (a
# batch before template_copies_why had only the one reason).
_TEMPLATE_UNCHANGED = "the template, unchanged"


def template_copies_view(result: Mapping[str, Any]) -> list[dict[str, str]]:
    """The upload's assignment folders a batch did not grade as handed in (result.json
    `template_copies`), each with why (`template_copies_why`): the student's report and
    instructor.md both say so."""
    copies = result.get("template_copies")
    why = result.get("template_copies_why")
    why = why if isinstance(why, Mapping) else {}
    return [{"assignment": str(a), "why": str(why.get(a) or _TEMPLATE_UNCHANGED),
             "unchanged": not why.get(a) or why.get(a) == _TEMPLATE_UNCHANGED}
            for a in (copies if isinstance(copies, list) else [])]


def links_view(links: Any) -> list[dict[str, str]]:
    """The symbolic links a batch skipped in the upload (result.json `links`): where each is,
    what it names, and (for the instructor) what of the grader's or another student's it points
    into."""
    shown = []
    for link in links if isinstance(links, list) else []:
        if isinstance(link, Mapping) and link.get("path"):
            shown.append({"path": str(link["path"]) + (f" in {link['in']}" if link.get("in") else ""),
                          "target": str(link.get("target") or "a path the zip does not say"),
                          "into": str(link["into"]) if link.get("into") else None})
    return shown


def not_graded_view(result: Mapping[str, Any], *,
                    for_student: bool = True) -> dict[str, Any] | None:
    """What a report of an upload that was never graded says in place of its scores; the
    reason as the batch wrote it for the staff where `for_student` is False (instructor.md)."""
    found = not_graded(result)
    if found is None:
        return None
    if found.counts_as_zero:
        lead = "this upload was refused before any of its code ran, for this reason:"
        next_step = ("It counts as 0 in the course's records until you hand in an upload "
                     "that can be graded.")
    else:
        lead = ("the grader could not grade this upload, so it has no grade yet: a person of "
                "the course staff has to look at it first. The reason:")
        next_step = ("No points are counted for it, not even 0: the course staff will look at "
                     "your upload and grade it, or tell you what to hand in again.")
    reason = for_the_student(found.reason) if for_student else found.reason
    return {"kind": found.kind, "reason": reason, "lead": lead, "next": next_step,
            "assignments": [str(a.get("title") or a.get("id")) for a in
                            result.get("assignments") or [] if isinstance(a, Mapping)]}


def assignment_view(assignment: Mapping[str, Any],
                    hardware: Mapping[str, Any] | None = None) -> dict[str, Any]:
    items = assignment.get("items") or []
    measurements = assignment.get("measurements") or None
    reported = assignment.get("reported") or None
    hidden = bool(assignment.get("measurements_hidden"))
    rows = [] if hidden else comparison_rows(measurements, reported, str(assignment.get("id", "")))
    rubric = [i for i in items if i.get("kind") != "penalty"]
    rubric_items = [item_view(i) for i in rubric]
    missing = _missing_told_once(assignment, rubric, rubric_items)
    stops = _stops_told_once(rubric_items)
    unanswered = surely_unanswered(assignment.get("answers"))
    not_done = said_not_done(assignment.get("answers"))
    return {
        "id": assignment.get("id"),
        "title": assignment.get("title"),
        "rubric_version": assignment.get("rubric_version"),
        "status": assignment.get("status"),
        # Where the grader failed to grade it, its score is no grade: said in its place.
        "not_graded": grading_problem_said(assignment, name_checks=False),
        "score": format_points(assignment.get("score")),
        "max_score": format_points(assignment.get("max_score")),
        "excluded_points": format_points(assignment.get("excluded_points") or 0),
        "has_excluded": bool(assignment.get("excluded_points")),
        "rounding_note": rounding_note(assignment),
        "rubric_max_score": format_points(assignment.get("rubric_max_score")),
        "errors": all_for_the_student(assignment.get("errors")),
        "late": assignment.get("late"),
        "late_note": _late_without_penalty(assignment.get("late"), items),
        "rubric_items": _said_once(rubric_items),
        "missing": missing,
        "stops": stops,
        "environment_notes": [str(n) for n in assignment.get("environment_notes") or []],
        "penalties": [item_view(i) for i in items if i.get("kind") == "penalty"],
        "pending": [dict(item_view(i), unanswered=i.get("answer") in unanswered,
                         not_done=not_done.get(i.get("answer"), {}).get("said"))
                    for i in items if i.get("pending")],
        "measurements": measurements,
        "measurements_hidden": hidden,
        "answers": reported,
        "has_answers": bool(reported),
        "answer_notes": answer_notes(assignment.get("answers")),
        "review": review_note(assignment.get("integrity")),
        "rows": with_settings_rows(
            [{"task": r.task, "quantity": r.quantity, "path": r.path, "settings": False,
              "reported": format_value(r.reported),
              "measured": format_measured(r.measured, r.path, str(assignment.get("id", "")))}
             for r in rows], assignment.get("conditions")),
        "conditions": measured_under(assignment.get("conditions"), hardware or {},
                                     [r.path for r in rows]) if rows or hidden else None,
    }


SETTINGS_QUANTITY = "settings of the numbers below"
YOUR_SETTINGS = "yours: the settings you ran your script with"


def _settings_of(path: str, conditions: Any) -> str | None:
    """The key of `conditions` whose settings a row's value was measured under."""
    for key in conditions if isinstance(conditions, Mapping) else ():
        if path == key or path.startswith(f"{key}."):
            return key
    return None


def with_settings_rows(rows: list[dict], conditions: Any) -> list[dict]:
    """The table's rows, each task's led by a row saying at which settings each column's
    numbers were taken: a student's run at the handout's DIM=1024 with Adam beside the
    grader's at DIM=256 with SGD (200.4 MiB beside 3.13 MiB, in a passed task) read as a
    mismatch when the settings were said only under the table."""
    shown, out = set(), []
    for row in rows:
        key = _settings_of(row["path"], conditions)
        if key is not None and key not in shown:
            shown.add(key)
            out.append({"task": task_label(key), "quantity": SETTINGS_QUANTITY,
                        "path": f"{key}.settings", "settings": True, "reported": YOUR_SETTINGS,
                        "measured": f"the grader's: {conditions[key]}"})
        out.append(row)
    return out


def measured_under(conditions: Any, hardware: Mapping[str, Any],
                   paths: list[str] | None = None) -> dict[str, Any]:
    """What the measured column was measured under: the GPUs, and per task the settings the
    checks ran the code with (a student's own numbers come from their own runs, which the
    grader cannot know); "left": those of tasks none of whose values (`paths`) the table
    shows, whose settings row it therefore lacks."""
    kind = hardware.get("kind")
    gpus = ("virtual GPUs (simulated on the CPU: times come from the grader's simulated clock, "
            "the same on any machine; memory is what PyTorch allocated)" if kind == "virtual"
            else "real GPUs" if kind == "real" else "GPUs")
    names = ", ".join(sorted(set(hardware.get("names") or [])))
    settings = [{"task": task_label(key), "text": str(text)}
                for key, text in (conditions.items() if isinstance(conditions, Mapping) else [])]
    in_table = {_settings_of(path, conditions) for path in paths or ()}
    left = [entry for (key, _), entry in zip(
        conditions.items() if isinstance(conditions, Mapping) else [], settings)
        if key not in in_table]
    return {"gpus": gpus + (f" ({names})" if names else ""), "settings": settings, "left": left}


def item_view(item: Mapping[str, Any]) -> dict[str, Any]:
    checks = [check_view(c) for c in item.get("checks") or []]
    status = "overridden" if item.get("overridden") else item.get("status")
    return {
        "id": item.get("id"),
        "title": item.get("title"),
        "kind": item.get("kind", "auto"),
        "status": status,
        "status_word": STATUS_WORDS.get(status, status),
        "score": format_points(item.get("score")),
        "max_score": format_points(item.get("max_score")),
        "pending": bool(item.get("pending")),
        "overridden": bool(item.get("overridden")),
        "note": rubric_note(item),
        "checks": checks,
    }


# A line of a check's feedback that names its cases: "- [2], [3] and 4 more: " or
# "- test_name: " before the message.
_CASES_PREFIX = re.compile(r"^- (?:\[[^\]]*\](?:, \[[^\]]*\])*(?: and \d+ more)?|test_\w+): ",
                           re.M)
# The lines a check's feedback starts with, about the check itself (kept for every check).
_CHECK_HEAD = re.compile(r"^\S+: \d+ (?:of \d+ case\(s\) (?:did not pass|errored)|case\(s\) skipped)")


def _said_once(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One failure behind several checks (a script that does not run fails every check of
    the assignment; one layout fails Task 3's four checks) is told in full under the first;
    the others say so instead of repeating it."""
    first: dict[str, str] = {}
    for item in items:
        for check in item["checks"]:
            lines = check["feedback"].splitlines()
            head = [line for line in lines if _CHECK_HEAD.match(line)]
            body = _CASES_PREFIX.sub("- ", "\n".join(l for l in lines if l not in head)).strip()
            if not body or check["status"] == "passed" or check.get("told_above"):
                continue
            if body in first:
                check["feedback"] = "\n".join(
                    head + [f"- the same failure as {first[body]} above"])
            else:
                first[body] = check["id"]
    return items


def _stops_told_once(items: list[dict[str, Any]]) -> list[dict]:
    """A run that stopped (a SyntaxError, an exception, a hang) observed by several checks:
    told once, at the top of the assignment; each of those checks says which run it needed
    and points there."""
    failing = [check for item in items for check in item["checks"] if check["status"] != "passed"]
    stops = [stop for stop in stopped_runs(check["feedback"] for check in failing)
             if stop["checks"] > 1]
    told = {stop["text"] for stop in stops}
    for check in failing:
        check["feedback"] = point_to_the_stop(check["feedback"], told)
    return stops


def _missing_told_once(assignment: Mapping[str, Any], items: list[Mapping[str, Any]],
                       views: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A script the submission lacks fails every check that needed it: told once, at the top of
    the assignment, with those checks (the terminal's causes: grader/reports/terminal.py); a
    check whose every failed case is for it, and every skip it caused, points there instead of
    repeating it (HW3 without its script had said it in 33 places of report.md)."""
    from grader.reports.terminal import failure_causes   # terminal.py imports this module
    causes = [cause for cause in failure_causes({"assignments": [assignment]}) if cause.script]
    for item, view in zip(items, views):
        for check, shown in zip(item.get("checks") or [], view["checks"]):
            _point_to_the_missing(check, shown)
    return [{"script": cause.script, "said": cause.said, "where": where_to_look(cause.script),
             "checks": list(cause.checks)} for cause in causes]


def _point_to_the_missing(check: Mapping[str, Any], shown: dict[str, Any]) -> None:
    """`shown` (the check's view) pointing to the missing scripts told at the top: its failures
    where every one is for such a script, and its skip reasons that name one."""
    failing = [c for c in check.get("cases") or [] if c.get("outcome") in ("failed", "error")]
    found = [absent_script(str(c.get("message") or "")) for c in failing]
    if failing and all(found):
        scripts = list(dict.fromkeys(match.group("script") for match in found))
        head = [line for line in shown["feedback"].splitlines() if _CHECK_HEAD.match(line)]
        shown["feedback"] = "\n".join(head + [f"- {len(failing)} case(s): {pointer(scripts)}"])
        shown["told_above"] = True   # said where it points: not "the same failure as" another
    said = {}
    for reason in shown["skip_reasons"]:
        match = absent_script(reason)
        said[reason] = pointer([match.group("script")]) if match else reason
    if said and list(said.values()) != list(said):
        shown["skip_reasons"] = list(dict.fromkeys(said.values()))
        # A skipped check's own sentence lists its reasons too ("was skipped (a; b; c)"): each
        # pointer once.
        for reason, text in said.items():
            shown["feedback"] = shown["feedback"].replace(reason, text)
        for text in set(said.values()) - set(said):
            shown["feedback"] = re.sub(rf"(?:{re.escape(text)}; )+{re.escape(text)}",
                                       lambda _: text, shown["feedback"])


def check_view(check: Mapping[str, Any]) -> dict[str, Any]:
    cases = check.get("cases") or []
    return {
        "id": check.get("id"),
        "status": check.get("status"),
        "status_word": STATUS_WORDS.get(check.get("status"), check.get("status")),
        "score": format_points(check.get("score")),
        "max_score": format_points(check.get("max_score")),
        "counts": {k: check.get(k, 0) for k in ("passed", "failed", "skipped", "errors")},
        "feedback": check.get("feedback") or "",
        "skip_reasons": sorted({c.get("message") or "no reason given"
                                for c in cases if c.get("outcome") == "skipped"}),
    }


def rubric_note(item: Mapping[str, Any]) -> str:
    """The item's own text (the rubric's pass/fail/skipped text, a penalty's explanation, an
    instructor's comment): item feedback is that text followed by each check's feedback, and
    the checks are shown on their own."""
    text = item.get("feedback") or ""
    for check in item.get("checks") or []:
        if check.get("feedback"):
            text = text.replace(check["feedback"], "")
    return "\n".join(line for line in text.splitlines() if line.strip())




def _when(iso: Any) -> str | None:
    """"2026-05-01T10:00:00.123+00:00" -> "2026-05-01 10:00 UTC+00:00"; anything else as is."""
    try:
        moment = _dt.datetime.fromisoformat(str(iso))
    except ValueError:
        return None if iso is None else str(iso)
    return moment.strftime("%Y-%m-%d %H:%M") + (f" {moment.tzname()}" if moment.tzinfo else "")


def _hardware_text(hardware: Mapping[str, Any]) -> str:
    if not hardware:
        return "unknown"
    kind = "virtual (simulated)" if hardware.get("kind") == "virtual" else "real"
    names = ", ".join(sorted(set(hardware.get("names") or [])))
    return f"{hardware.get('gpus', '?')} {kind} GPU(s)" + (f": {names}" if names else "")


def not_answered(answers: Mapping[str, Any]) -> list[str]:
    """The questions answered nowhere; one written in words the reader does not take is not
    among them (its problem quotes it: "Not answered" had made an instructor skip it)."""
    unread = set(answers.get("unread") or [])
    return [qid for qid in answers.get("missing") or [] if qid not in unread]


# A problem an answer sheet has with one answer: "<sheet>: <id>: why" (grader/answers/sheet.py).
_SHEET_PROBLEM = re.compile(r"^(\S+): ([\w.]+): ")


def said_not_done(answers: Mapping[str, Any] | None) -> dict[str, dict]:
    """{question: {"file", "said", "where"}} of the answers that say the task was not done
    ("Not done", "N/A"): none, whatever else a person must read (a TA's audit 30)."""
    if not isinstance(answers, Mapping) or not isinstance(answers.get("declined"), Mapping):
        return {}
    missing = set(not_answered(answers))
    return {qid: said for qid, said in answers["declined"].items() if qid in missing and isinstance(said, Mapping)}


def surely_unanswered(answers: Mapping[str, Any] | None) -> set[str]:
    """The questions answered nowhere where everything handed in was read: no report that
    needs a person (scanned, unreadable), none in another format, no answer in words the
    reader does not take; and those whose answer says the task was not done ("Not done").
    A written answer among them is told as having none, not as waiting to be graded (a TA's
    audit: blank answers were listed as "pending instructor grading")."""
    return _read_and_unanswered(answers) | set(said_not_done(answers))


def _read_and_unanswered(answers: Mapping[str, Any] | None) -> set[str]:
    if not isinstance(answers, Mapping) or answers.get("needs_manual_review") \
            or answers.get("report_instead"):
        return set()
    if not answers.get("unread") and not answers.get("problems"):
        return set(not_answered(answers))
    # An answer sheet keeps each answer under its own id: one answer it could not read (an
    # nvidia-smi paste under usage.table) hides no other, so an empty one is still none (a TA's
    # audit 27: P5's unanswered Part 6 was left pending beside the paste while P10's was 0). A
    # problem of the file itself, or an answer under an id the sheet does not have, may be it.
    questions = answers.get("questions") or {}
    files = [f for f in answers.get("files") or [] if isinstance(f, Mapping)]
    if answers.get("source") != "sheet" or not files or any(f.get("status") not in ("ok", "problems") for f in files):
        return set()
    sheets = {str(f.get("file")) for f in files}
    for problem in answers.get("problems") or []:
        if is_read_as_sheet(str(problem)):   # a note of the sheet's name, no answer's problem
            continue
        about = _SHEET_PROBLEM.match(str(problem))
        if not about or about.group(1) not in sheets or about.group(2) not in questions:
            return set()
    return set(not_answered(answers))


def answer_notes(answers: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """What the student should know about how their answers were read: the files, what could
    not be found (listed, never silently scored zero) and problems with the files."""
    if not isinstance(answers, Mapping):
        return None
    files = [file_shown(f) for f in answers.get("files") or [] if isinstance(f, Mapping)]
    questions = answers.get("questions") or {}
    not_done = said_not_done(answers)
    # An answer that says the task was not done is quoted: the student sees it was read so.
    missing = [f"{qid}: {questions.get(qid, '')}".rstrip(": ")
               + (f" (you wrote '{not_done[qid].get('said', '')}')" if qid in not_done else "")
               for qid in not_answered(answers)]
    return {"files": files, "missing": missing,
            "problems": all_for_the_student(answers.get("problems")),
            "review": bool(answers.get("needs_manual_review")),
            "readings": readings(answers)}


def readings(answers: Mapping[str, Any]) -> list[dict[str, str]]:
    """Every answer as it was read, beside where it was read (file, page, the line or table),
    so that a misreading is visible to the student and the staff. Written explanations are
    shown by their start only: their full text is the instructor's to read."""
    values, origin = answers.get("values") or {}, answers.get("origin") or {}
    found = []
    for qid, value in values.items():
        if isinstance(value, Mapping) and "value" in value:      # a yes/no answer
            value = value.get("value")
        if isinstance(value, Mapping) and set(value) == {"each"}:   # "[32, 1000] each": one shape for every chunk
            each = value["each"]
            shown = (" × ".join(format_value(v) for v in each) if isinstance(each, list) else format_value(each)) \
                + " each"
        elif isinstance(value, list) and value and isinstance(value[0], Mapping):   # a table
            shown = "; ".join(" ".join(f"{k}={format_value(v)}" for k, v in row.items())
                              for row in value if isinstance(row, Mapping))
        else:
            shown = format_value(value)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        found.append({"id": str(qid), "value": shown, "origin": str(origin.get(qid, ""))})
    return found


FILE_STATUS = {"ok": "read", "partial": "read in part: see below", "unreadable": "could not be read",
               "missing": "not handed in", "problems": "read, with problems: see below"}


def file_shown(file: Mapping[str, Any]) -> str:
    """An answer file as the reports list it: "hw3/report.pdf (read in part: see below)"; a
    report handed in in another format says which file it stands for."""
    status = FILE_STATUS.get(file.get("status"), file.get("status"))
    instead = f"handed in instead of {file['instead_of']}, " if file.get("instead_of") else \
        f"read as {file['read_as']}, " if file.get("read_as") else ""
    if file.get("link"):    # a batch's upload held a link by its name (grader/batch/pipeline.py)
        instead = f"a symbolic link to {file['link']}, not followed: "
    return f"{file.get('file')} ({instead}{status})"


def review_note(integrity: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The integrity problems as the student sees them (the staff's comment stays out)."""
    if not integrity or not integrity.get("problems"):
        return None
    return {"problems": [str(p) for p in integrity["problems"]],
            "withheld": bool(integrity.get("withheld")),
            "withheld_points": format_points(integrity.get("withheld_points") or 0),
            "cleared": bool(integrity.get("cleared"))}


def rounding_note(assignment: Mapping[str, Any]) -> str | None:
    """Where the tasks' points as shown do not add up to the total as shown: each is its exact
    points rounded to 2 decimals, and so is the total (grader/scoring/score.py), as a TA adds the
    fractions; two tasks of 1/3 of a point are 0.33 each, their total 0.67."""
    items = assignment.get("items") or []
    try:
        shown = round(sum(float(i.get("score") or 0) for i in items), 2)
        total = round(float(assignment.get("score") or 0), 2)
    except (TypeError, ValueError):
        return None
    if shown == total:
        return None
    return (f"Each task's points are rounded to 2 decimals, and so is the total, from the exact "
            f"points: the tasks as shown add up to {format_points(shown)}, the total is "
            f"{format_points(total)}.")


def _late_without_penalty(late: dict | None, items: list[dict]) -> str | None:
    """A late submission that no policy charges, said all the same (an instructor reading the
    report would otherwise not know; grades.csv has its time)."""
    if not late or not late.get("days_late") or any(i.get("kind") == "penalty" for i in items):
        return None
    days = late["days_late"]
    return (f"Submitted {late.get('submitted_at')}, due {late.get('due')}: {days} started "
            f"day{'s' if days != 1 else ''} late. No late policy applies: nothing is deducted.")
