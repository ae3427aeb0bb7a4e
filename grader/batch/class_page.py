"""DIR/index.html: the class page of a batch folder, rebuilt from the gradebook's current runs.

Every student (one row per person: their uploads of several Moodle assignments together,
grader/batch/people.py) with their score per assignment, status, and links to their report and
instructor view; what needs a person (uploads for a person, override problems, names shared
by uploads kept apart, submissions held for review and those the staff released with their
comment, reports to read, reports not handed in as the handout asks, symbolic links into the
course's or other students' files); the score distribution of grades.csv's own numbers (per assignment over
the cells holding a number, the empty ones counted with why; the total over the students with
every assignment) with its histograms, the pass
rate of every check (worst first), the most common failures with one example feedback each
and the item id an override needs, HW3's step time
against DEPTH across the class (median with min-max spread), the gradings that did not end in
a grade (timed out, errored, rejected, with their message), flags for reported numbers that
disagree with the measurements (with their item id), and near-identical submissions: the same
content hash for different students, and the same code added to a template file, comments,
docstrings and layout left out, where it is long enough not to be alike by chance
(fingerprints taken from the unpacked uploads, zips included, and kept in the gradebook:
grader/batch/similarity.py); a person's own uploads of two assignments are never a flag.

Feedback and messages come from student code and are hostile: the template autoescapes
everything; only the SVG built (and escaped) by grader.reports.plots is let through.
"""
from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping

import jinja2
from markupsafe import Markup

from grader.batch.gradebook import CurrentRun, Gradebook, grading_problem_text, no_grade_until
from grader.batch.grades_csv import grades_rows, short_message, upload_cell
from grader.batch.people import Person, people, person_of
from grader.batch.similarity import ADDED, MIN_ADDED_TOKENS, normalized_python
from grader.answers.collect import REPORT_NAME, SHEET_NAME
from grader.common.files import write_atomically
from grader.reports import plots
from grader.reports.formatting import format_points
from grader.reports.measurements import lookup

__all__ = ["write_class_page", "class_summary", "render_class_page", "normalized_python",
           "reports_not_handed_in"]

HISTOGRAM_BINS = 10
# Where a student's files are, relative to DIR (index.html's folder): links on the page.
STUDENT_FILES = {"report": "report.html", "instructor": "instructor.md",
                 "problem": "grading-problem.txt"}


def write_class_page(out_dir: Path, submissions_dir: Path | None = None,
                     order: list[str] | None = None, unmatched_overrides: list[str] = (),
                     unapplied_overrides: Mapping[str, str] | None = None,
                     partial: str = "") -> Path:
    """Render DIR/index.html from DIR/gradebook.sqlite. `order`: the course's assignments;
    `unmatched_overrides`: keys of this run's overrides file that name no submission;
    `unapplied_overrides`: {key: why} of overrides for uploads with nothing to grade;
    `partial`: why the page holds only part of the class (a batch stopped), said at its top.
    (`submissions_dir` is no longer read: the code fingerprints are in the gradebook.)"""
    out_dir = Path(out_dir)
    book = Gradebook(out_dir / "gradebook.sqlite")
    try:
        runs = list(book.current_runs())
        fingerprints = book.current_fingerprints()
    finally:
        book.close()
    files = {r.student.key: _student_files(out_dir, r.student.key) for r in runs}
    summary = class_summary(runs, fingerprints, order, files, unmatched_overrides,
                            unapplied_overrides)
    page = render_class_page({**summary, "partial": partial})
    return write_atomically(out_dir / "index.html", page)


def _student_files(out_dir: Path, key: str) -> dict[str, str]:
    folder = out_dir / "submissions" / key
    return {kind: f"submissions/{key}/{name}" for kind, name in STUDENT_FILES.items()
            if (folder / name).is_file()}


def class_summary(runs: Iterable[CurrentRun], fingerprints: Mapping[str, Mapping[str, str]] | None = None,
                  order: list[str] | None = None,
                  files: Mapping[str, Mapping[str, str]] | None = None,
                  unmatched_overrides: Iterable[str] = (),
                  unapplied_overrides: Mapping[str, str] | None = None) -> dict:
    """Everything the page shows, as plain data (the tests assert on this and on the HTML).
    `fingerprints`: {student: {code file: fingerprint}}; `files`: {student: {report,
    instructor, problem: link relative to DIR}}; `unmatched_overrides`: keys of the overrides
    file that name no submission; `unapplied_overrides`: {key: why} of overrides that name an
    upload with nothing to grade."""
    runs = sorted(runs, key=lambda r: r.student.key)
    graded = [r for r in runs if r.status == "graded" and r.result]
    counts = Counter(r.status for r in runs)
    order = _assignment_order(runs, order or [])
    persons, shared_names = people(runs, order)
    owner = person_of(persons)
    fingerprints = _of_added_code(fingerprints or {})
    code = [{"file": entry["file"], "groups": groups} for entry in _same_code(fingerprints)
            if (groups := _of_several_people(entry["groups"], owner))]
    names = {r.student.key: r.student.name for r in runs}
    return {
        "students": len(persons),
        "uploads": len(runs),
        "counts": {s: counts.get(s, 0) for s in ("graded", "rejected", "timed_out", "error")},
        "assignments": order,
        "roster": _roster(persons, order, files or {}),
        "shared_names": shared_names,
        "distributions": _distributions(runs, order, persons),
        "checks": _check_rates(graded),
        "failures": _common_failures(graded),
        "step_time": _step_times(graded),
        "problems": [{"key": r.student.key, "name": r.student.name, "status": r.status,
                      "message": r.message or ""} for r in runs
                     if r.status != "graded" and not r.needs_person] + [
            {"key": r.student.key, "name": r.student.name, "status": "grading problem",
             "message": grading_problem_text(a, p)}
            for r in runs for a, p in r.grading_problems.items()],
        "needs_person": [{"key": r.student.key, "name": r.student.name, "message": r.message or ""}
                         for r in runs if r.needs_person],
        "override_problems": _override_problems(runs) + [
            {"key": key, "name": key, "problem": "no such submission: its overrides were "
                                                 "ignored (a key is a folder name under "
                                                 "submissions/)"}
            for key in unmatched_overrides] + [
            {"key": key, "name": names.get(key, key), "problem": why}
            for key, why in sorted((unapplied_overrides or {}).items())],
        "answer_flags": _answer_flags(graded),
        "answer_review": _answer_reviews(graded),
        "reports_missing": reports_not_handed_in(graded),
        "integrity": _integrity_holds(graded),
        "integrity_released": _integrity_released(graded),
        "links_into": _links_into(graded),
        "same_hash": _of_several_people(_groups({r.student.key: r.content_hash for r in runs
                                                 if not r.content_hash.startswith("raw:")}), owner),
        "same_code": code,
        "same_answers": same_written_answers(graded),
        "code_compared": sum(1 for prints in fingerprints.values() if prints),
        "min_added_tokens": MIN_ADDED_TOKENS,
    }


def render_class_page(summary: Mapping[str, Any]) -> str:
    view = dict(summary)
    view.setdefault("partial", "")     # why only part of the class is shown (a batch stopped)
    view["histograms"] = [Markup(svg) for svg in (_histogram(d) for d in summary["distributions"]) if svg]
    view["step_plot"] = Markup(_step_plot(summary["step_time"])) if summary["step_time"] else None
    return _environment().get_template("class_page.html.j2").render(
        summary=view, min_written_chars=MIN_WRITTEN_CHARS)


# ---- the sections -------------------------------------------------------------------------

def _assignment_order(runs: list[CurrentRun], course_order: list[str]) -> list[str]:
    present = {a["id"] for r in runs for a in (r.result or {}).get("assignments", [])}
    present |= {a for r in runs for a in r.assignment_scores}
    return [a for a in course_order if a in present] + sorted(present - set(course_order))


def _roster(persons: list[Person], order: list[str],
            files: Mapping[str, Mapping[str, str]]) -> list[dict]:
    """Every student: name, status, the score of each assignment and the total (empty where
    there is no grade), and links to the files the staff open (of each upload, named by its
    assignments where a person has several)."""
    rows = []
    for person in persons:
        scores = {assignment: "" for assignment in order}
        statuses, links = [], []
        for run in person.runs:
            result = run.result or {}
            graded = run.status == "graded" or (run.status == "rejected" and not run.needs_person)
            problems = run.grading_problems   # no grade: the cell stays empty, as grades.csv's
            for found in result.get("assignments", []):
                if graded and found.get("id") in scores and found.get("id") not in problems:
                    scores[found["id"]] = _score_cell(found, found["id"] in run.held,
                                                      run.unread.get(found["id"]))
            status = "needs a person" if run.needs_person else run.status.replace("_", " ")
            if run.held:
                status = "graded, held for review"
            if problems:
                status += "".join(f", {grading_problem_text(a, short_message(p, 200))}"
                                  for a, p in problems.items())
            # No grade yet, as a held one's (grades.csv and Moodle leave it empty): the cell
            # says "—/15 (needs a person: ...)" and the status why.
            status += "".join(f", {no_grade_until(run.result, a, p)}" for a, p in run.unread.items())
            several = len(person.runs) > 1 and run.assignments
            of = f" ({', '.join(run.assignments)})" if several else ""
            statuses.append((status, of))
            own = files.get(run.student.key, {})
            if own.get("report"):
                links.append(("report" + of, own["report"]))
            elif own.get("problem"):
                links.append(("why not graded" + of, own["problem"]))
            if own.get("instructor"):
                links.append(("instructor.md" + of, own["instructor"]))
        # A held upload, or one whose answers wait for a person, has no total, as in
        # grades.csv: its points so far are no grade either (adv45 F2: "2/15" had been shown).
        whole = all(r.result and not r.without_grade
                    and (r.status == "graded" or (r.status == "rejected" and not r.needs_person))
                    for r in person.runs)
        total = (f"{format_points(sum(float(r.result.get('score', 0)) for r in person.runs))}/"
                 f"{format_points(sum(float(r.result.get('max_score', 0)) for r in person.runs))}"
                 if whole else "")
        plain = {status for status, _ in statuses}
        status = plain.pop() if len(plain) == 1 else "; ".join(s + of for s, of in statuses)
        rows.append({"key": person.keys[0], "student_keys": person.keys, "name": person.name,
                     "identifier": "; ".join(r.student.identifier for r in person.runs),
                     "status": status, "scores": scores, "total": total,
                     "flag": person.flag, "links": links})
    return rows


def _score_cell(found: Mapping[str, Any], held: bool, waiting: float | None = None) -> str:
    """"9.5/12"; a held assignment's as the console says it, "—/15 (5 withheld)": the score
    after withholding is no grade (grades.csv and Moodle leave it empty), and a TA skimming the
    page had read a held student's 0/15 as a zero (adv39 F5). Likewise one whose answers wait
    for a person (`waiting` points): "—/15 (needs a person: 8.5 points wait)", never the
    points read so far (adv45 F2: a password PDF's "2/15")."""
    most = format_points(found["max_score"])
    if waiting and not held:
        return f"\u2014/{most} (needs a person: {format_points(waiting)} points wait)"
    if not held:
        return f"{format_points(found['score'])}/{most}"
    withheld = format_points((found.get("integrity") or {}).get("withheld_points") or 0)
    return f"\u2014/{most} ({withheld} withheld)"


def _distributions(runs: list[CurrentRun], order: list[str],
                   persons: list[Person] = ()) -> list[dict]:
    """The statistics of grades.csv's own numbers (its rows, built by grades_rows from the same
    runs): each assignment over the students whose cell holds a number (a rejected upload's 0
    counts, as grades.csv and Moodle carry it), each empty cell counted apart with why it is
    empty; the total (with more than one assignment) over the students with a number for
    every assignment, out of the class total, a total of fewer assignments named apart (the
    page had averaged one HW3-only 10.5 of 15 as if out of 27, and left a rejected 0 out of
    the statistics that grades.csv and Moodle count)."""
    table = grades_rows(runs, order)
    header, rows = table[0], {row[table[0].index("Key")]: row for row in table[1:]}
    columns = [a for a in order if a in header] + [a for a in header if a not in order
                                                     and a in {x for r in runs for x in r.assignment_scores}]
    maxima = _assignment_maxima(runs)
    cells: dict[str, list[tuple[Person, float]]] = {a: [] for a in columns}
    empty: dict[str, Counter] = {a: Counter() for a in columns}
    totals, partial = [], []
    for person in persons:
        row = rows.get(upload_cell("; ".join(person.keys)))
        if row is None:
            continue
        numbers = {}
        for a in columns:
            number = _number(row[header.index(a)])
            if number is not None:
                numbers[a] = number
                cells[a].append((person, number))
            else:
                empty[a][_why_empty(person, a)] += 1
        total = row[header.index("Total")].strip() if "Total" in header else ""
        total = "" if _number(total) is None else total
        if total and len(numbers) == len(columns):
            totals.append((float(total), sum(_max_of(person, a, maxima) for a in columns)))
        elif total:
            partial.append({"name": person.name, "key": person.keys[0],
                            "total": total, "of": [a for a in columns if a in numbers],
                            "max": format_points(sum(_max_of(person, a, maxima) for a in numbers))})
    out = []
    for a in columns:
        scores = [score for _, score in cells[a]]
        if scores or empty[a]:
            top = max([_max_of(p, a, maxima) for p, _ in cells[a]] or [maxima.get(a, 0.0)])
            out.append(_statistics(a, a, scores, top, empty[a]))
    if len(columns) > 1:
        top = max([m for _, m in totals] or [sum(maxima.get(a, 0.0) for a in columns)])
        entry = _statistics("total", "total (every assignment)",
                            [t for t, _ in totals], top, Counter())
        entry["partial"] = partial
        entry["incomplete"] = len(persons) - len(totals) - len(partial)
        out.append(entry)
    return out


def _number(cell: str) -> float | None:
    """A cell of grades.csv as a number, None where it holds none (empty)."""
    try:
        return float(cell) if cell.strip() else None
    except ValueError:
        return None


def _statistics(ident: str, label: str, scores: list[float], top: float,
                empty: Counter) -> dict:
    return {"id": ident, "label": label, "scores": scores, "max_score": top, "n": len(scores),
            "max_points": format_points(top),
            "mean": format_points(statistics.fmean(scores)) if scores else "",
            "median": format_points(statistics.median(scores)) if scores else "",
            "zeros": sum(1 for s in scores if s == 0),
            "empty": sum(empty.values()),
            "empty_why": ", ".join(f"{n} {why}" for why, n in sorted(empty.items(),
                                                                      key=lambda e: (-e[1], e[0])))}


def _assignment_maxima(runs: list[CurrentRun]) -> dict[str, float]:
    """The most points of each assignment any result gives (for a cell whose run has none)."""
    found: dict[str, float] = {}
    for run in runs:
        for a in (run.result or {}).get("assignments") or []:
            if isinstance(a.get("max_score"), (int, float)):
                found[a["id"]] = max(found.get(a["id"], 0.0), float(a["max_score"]))
    return found


def _run_of(person: Person, assignment: str) -> CurrentRun | None:
    """The upload of the person that grades.csv's cell of `assignment` is of."""
    return next((r for r in person.runs if assignment in r.assignment_scores), None) or next(
        (r for r in person.runs if assignment in r.assignments or assignment in
         [a.get("id") for a in (r.result or {}).get("assignments") or []]), None)


def _max_of(person: Person, assignment: str, maxima: Mapping[str, float]) -> float:
    run = _run_of(person, assignment)
    for a in (run.result or {}).get("assignments") or [] if run else []:
        if a.get("id") == assignment and isinstance(a.get("max_score"), (int, float)):
            return float(a["max_score"])
    return maxima.get(assignment, 0.0)


def _why_empty(person: Person, assignment: str) -> str:
    """Why grades.csv's cell of a person's assignment holds no number, in the page's words."""
    run = _run_of(person, assignment)
    copied = next((r.result for r in person.runs
                   if assignment in ((r.result or {}).get("template_copies") or [])), None)
    if run is None and copied is not None:   # a course folder's untouched one
        whys = copied.get("template_copies_why")
        why = whys.get(assignment) if isinstance(whys, dict) else None
        return ("not handed in (the template, unchanged)" if why in (None, "the template, unchanged")
                else "not handed in (only what another assignment runs)")
    if run is None:
        return "no upload"
    if run.needs_person:
        return "needs a person"
    if run.status == "graded" and assignment in run.held:
        return "held for review"
    if run.status == "graded" and assignment in run.grading_problems:
        return "grading problem"
    if run.status == "graded" and assignment in run.unread:
        return "points waiting for a person"   # answers to read, or checks to grade by hand
    return {"timed_out": "timed out", "error": "errored", "graded": "no grade",
            "rejected": "rejected"}.get(run.status, run.status.replace("_", " "))


def _of_several_people(groups: list[list[str]], owner: Mapping[str, int]) -> list[list[str]]:
    """Groups of uploads alike that are not all one person's (Alice's HW3 zip and her
    Practical 4 zip holding the same hw3/ had flagged her as copying from herself)."""
    return [group for group in groups if len({owner.get(key, key) for key in group}) > 1]


def _override_problems(runs: list[CurrentRun]) -> list[dict]:
    """Overrides the scoring could not apply (unknown item id, points out of range): the
    instructor's mistakes, ignored until fixed (grader/scoring/overrides.py)."""
    return [{"key": r.student.key, "name": r.student.name, "problem": str(problem)}
            for r in runs for problem in (r.result or {}).get("override_problems") or []]


def _check_rates(graded: list[CurrentRun]) -> list[dict]:
    tally: dict[str, dict] = {}
    for run in graded:
        for assignment in run.result.get("assignments", []):
            for item in assignment.get("items", []):
                for check in item.get("checks") or []:
                    if check.get("status") == "skipped":
                        continue
                    entry = tally.setdefault(check["id"], {"id": check["id"], "assignment": assignment["id"],
                                                          "passed": 0, "total": 0})
                    entry["total"] += 1
                    entry["passed"] += check.get("status") == "passed"
    rows = list(tally.values())
    for row in rows:
        row["rate"] = row["passed"] / row["total"]
        row["percent"] = f"{100 * row['rate']:.0f}%"
    return sorted(rows, key=lambda r: (r["rate"], r["id"]))


def _common_failures(graded: list[CurrentRun], limit: int = 15) -> list[dict]:
    """Checks (or items without checks) that did not pass, by how many students, with the
    first student's feedback (by key) as the example: the first whose code got past the
    template's TODOs where there is one (an untouched template fails every check the same
    way, and shows nothing of how students really fail)."""
    found: dict[str, dict] = {}
    for run in graded:
        for assignment in run.result.get("assignments", []):
            for item in assignment.get("items", []):
                units = item.get("checks") or ([item] if item.get("kind") == "auto" else [])
                for unit in units:
                    if unit.get("status") not in ("failed", "partial", "error"):
                        continue
                    example = _example(unit, item)
                    entry = found.setdefault(unit["id"], {"id": unit["id"], "students": 0,
                                                          "item": item.get("id", ""),
                                                          "example_student": run.student.key,
                                                          "example": example})
                    entry["students"] += 1
                    if _AT_A_TODO in entry["example"] and _AT_A_TODO not in example:
                        entry.update(example_student=run.student.key, example=example)
    return sorted(found.values(), key=lambda f: (-f["students"], f["id"]))[:limit]


# How a run that stopped at one of the template's TODOs says so (grader/harness/observation.py).
_AT_A_TODO = "a TODO of the template is still to be written"


def _example(unit: Mapping, item: Mapping) -> str:
    text = unit.get("feedback") or item.get("feedback") or ""
    for case in unit.get("cases") or []:
        if not text and case.get("message"):
            text = case["message"]
    return str(text)[:1500]


def _step_times(graded: list[CurrentRun]) -> list[dict]:
    """One series per student: DEPTH -> measured step time (ms)."""
    series = []
    for run in graded:
        for assignment in run.result.get("assignments", []):
            measured = assignment.get("measurements") if assignment.get("id") == "hw3" else None
            if not isinstance(measured, Mapping):
                continue
            points = plots.series_points(lookup(measured, "task2.step_time_ms"))
            if points:
                series.append({"key": run.student.key, "points": points})
    return series


def _answer_flags(graded: list[CurrentRun]) -> list[dict]:
    """Reported numbers the student's own code contradicts, or implausibly far from what was
    measured: what the checks flagged, per student."""
    flags = []
    for run in graded:
        for assignment in run.result.get("assignments", []):
            item_of = {check.get("id"): item.get("id", "") for item in assignment.get("items", [])
                       for check in item.get("checks") or []}
            for flag in assignment.get("flags") or []:
                if isinstance(flag, Mapping):
                    check = str(flag.get("check") or "")
                    flags.append({"key": run.student.key, "name": run.student.name,
                                  "assignment": assignment.get("id", ""), "check": check,
                                  "item": item_of.get(check, ""),
                                  "text": str(flag.get("text") or "")})
    return flags


def _needing_a_person(graded: list[CurrentRun], block: str, flag: str,
                      extra: Mapping[str, str] = {}) -> list[dict]:
    """One row per assignment whose `block` (a dict of result.json) has `flag` set: the
    student, the first of its `problems` and how many more, and the `extra` fields asked for."""
    rows = []
    for run in graded:
        for assignment in run.result.get("assignments", []):
            found = assignment.get(block)
            if isinstance(found, Mapping) and found.get(flag):
                problems = [str(p) for p in found.get("problems") or []]
                rows.append({"key": run.student.key, "name": run.student.name,
                             "assignment": assignment.get("id", ""),
                             "problem": problems[0] if problems else "",
                             "more": max(0, len(problems) - 1),
                             **{name: found.get(field, 0) for name, field in extra.items()}})
    return rows


def _answer_reviews(graded: list[CurrentRun]) -> list[dict]:
    """Answers a person must read: an unreadable, scanned or partly read report."""
    return _needing_a_person(graded, "answers", "needs_manual_review")


# Where an assignment's answers are read from a report the handout asks for (HW3's
# "Report (PDF — single file)"): rubrics' answers_source.
REPORT_SOURCES = ("pdf", "pdf_then_sheet")


def reports_not_handed_in(graded: Iterable[CurrentRun]) -> list[dict]:
    """Per assignment that asks for a report, the students who handed none in as asked: no
    report at all (answers only in the answer sheet, or nothing), or one in another format
    (report.md for report.pdf), so the course's rule is applied to all of them alike. Only
    one handed in otherwise had been listed (as a report to read); no report at all was said
    only in each student's instructor.md. No points change here."""
    rows = []
    for run in graded:
        for assignment in (run.result or {}).get("assignments") or []:
            answers = assignment.get("answers")
            if not isinstance(answers, Mapping) or answers.get("source") not in REPORT_SOURCES:
                continue
            ident = str(assignment.get("id", ""))
            asked = f"{ident}/{REPORT_NAME}"
            files = {str(f.get("file")): f for f in answers.get("files") or []
                     if isinstance(f, Mapping)}
            report = files.get(asked)
            if report is None or report.get("status") != "missing":
                continue
            sheet = next((f for name, f in files.items() if f"{ident}/{SHEET_NAME}" in (name, f.get("read_as"))),
                         None)
            if answers.get("report_instead"):
                handed_in = f"{answers['report_instead']} instead of {asked}"
                kind = "another format"
            elif sheet is not None and sheet.get("status") != "missing":
                handed_in = (f"no report: answers only in {ident}/{SHEET_NAME}"
                             if answers.get("values") else
                             f"no report, and {ident}/{SHEET_NAME} answers nothing")
                kind = "none"
            else:
                handed_in = f"no report and no {ident}/{SHEET_NAME}"
                kind = "none"
            rows.append({"key": run.student.key, "name": run.student.name, "assignment": ident,
                         "asked": asked, "handed_in": handed_in, "kind": kind})
    return sorted(rows, key=lambda r: (r["assignment"], r["kind"] != "none", r["key"]))


def _integrity_holds(graded: list[CurrentRun]) -> list[dict]:
    """Assignments whose automatic points are withheld: code or records that could deceive
    the grader (grader/integrity), with the first thing found."""
    return _needing_a_person(graded, "integrity", "withheld", {"points": "withheld_points"})


def _integrity_released(graded: list[CurrentRun]) -> list[dict]:
    """Holds the course staff released (`<assignment>.integrity: {cleared: true, comment}`):
    kept on the page with what was found and the staff's comment, as instructor.md keeps them
    (users28: a cleared hold had left "None: no submission reaches into the grader")."""
    return _needing_a_person(graded, "integrity", "cleared", {"comment": "comment"})


def _links_into(graded: list[CurrentRun]) -> list[dict]:
    """Symbolic links of uploads that point into the grader's, the reference's or another
    student's files (result.json `links`, grader/batch/link_targets.py): possible copying, for a
    person (adv39 F3: only the batch log had said so). The score is not touched."""
    return [{"key": r.student.key, "name": r.student.name,
             "path": str(link.get("path")) + (f" in {link['in']}" if link.get("in") else ""),
             "target": str(link.get("target")), "into": str(link["into"])}
            for r in graded for link in (r.result or {}).get("links") or []
            if isinstance(link, Mapping) and link.get("into")]


def _groups(fingerprints: Mapping[str, str]) -> list[list[str]]:
    by_value = defaultdict(list)
    for key, value in fingerprints.items():
        by_value[value].append(key)
    return sorted(sorted(keys) for keys in by_value.values() if len(keys) > 1)


# A written answer shorter than this (a phrase, a sentence many would write: "When the batch
# size is divisible by the number of GPUs.") is alike by chance, not copied.
MIN_WRITTEN_CHARS = 80


def same_written_answers(graded: Iterable[CurrentRun]) -> list[dict]:
    """Per written answer (a manual item, as read from the sheet or the PDF), the groups of
    students who wrote the same text, case and spacing ignored: one copied answer is seen
    even where the rest of the sheet was changed. Factual answers are left out: honest
    students with the same correct code share them."""
    texts: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)
    for run in graded:
        for assignment in (run.result or {}).get("assignments") or []:
            values = (assignment.get("answers") or {}).get("values") or {}
            for item in assignment.get("items") or []:
                value = values.get(item.get("answer"))
                text = " ".join(str(value).lower().split()) if value else ""
                if item.get("kind") == "manual" and len(text) >= MIN_WRITTEN_CHARS:
                    texts[(str(assignment.get("id")), str(item.get("id")))][run.student.key] = text
    found = []
    for (assignment, item) in sorted(texts):
        groups = _groups(texts[(assignment, item)])
        if groups:
            found.append({"assignment": assignment, "item": item, "groups": groups})
    return found


def shared_answers_of(found: list[dict]) -> dict[str, dict[str, list[str]]]:
    """{student: {item id: the other students with the same text}} from same_written_answers."""
    shared: dict[str, dict[str, list[str]]] = defaultdict(dict)
    for entry in found:
        for group in entry["groups"]:
            for key in group:
                shared[key][entry["item"]] = [other for other in group if other != key]
    return dict(shared)


def _of_added_code(fingerprints: Mapping[str, Mapping[str, str]]) -> dict[str, dict[str, str]]:
    """The fingerprints of code added to the template; a gradebook's older whole-file ones are
    left out (every correct Practical 5 script had the reference's: adv42 F2)."""
    return {key: {name: value for name, value in prints.items() if value.startswith(ADDED)}
            for key, prints in fingerprints.items()}


def _same_code(fingerprints: Mapping[str, Mapping[str, str]]) -> list[dict]:
    """Per code file, the groups of students whose file is the same apart from comments and
    layout."""
    files = sorted({name for prints in fingerprints.values() for name in prints})
    found = []
    for name in files:
        groups = _groups({key: prints[name] for key, prints in fingerprints.items() if name in prints})
        if groups:
            found.append({"file": name, "groups": groups})
    return found


# ---- charts -------------------------------------------------------------------------------

def _histogram(distribution: Mapping) -> str | None:
    if not distribution["scores"]:
        return None
    top = float(distribution["max_score"]) or max(distribution["scores"]) or 1.0
    width = top / HISTOGRAM_BINS
    counts = [0] * HISTOGRAM_BINS
    for score in distribution["scores"]:
        counts[min(HISTOGRAM_BINS - 1, max(0, int(score / width)))] += 1
    bars = [(f"{format_points(i * width)}-{format_points((i + 1) * width)}", float(c)) for i, c in enumerate(counts)]
    title = f"{distribution['label']}: score distribution (n={distribution['n']})"
    return plots.bar_chart(title, "score (points)", "students", [("", bars)], whole_numbers=True)


def _step_plot(series: list[dict]) -> str:
    by_depth = defaultdict(list)
    for entry in series:
        for depth, ms in entry["points"]:
            by_depth[depth].append(ms)
    depths = sorted(by_depth)
    lines = [("median", [(d, statistics.median(by_depth[d])) for d in depths]),
             ("fastest", [(d, min(by_depth[d])) for d in depths]),
             ("slowest", [(d, max(by_depth[d])) for d in depths])]
    return plots.line_chart(f"HW3 Task 2: step time vs DEPTH across the class (n={len(series)})",
                            "DEPTH (layers)", "step time (ms)", lines)


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.PackageLoader("grader.batch", "templates"),
                              autoescape=True, undefined=jinja2.StrictUndefined,
                              trim_blocks=True, lstrip_blocks=True)
