"""DIR/index.html: the class page of a batch folder, rebuilt from the gradebook's current runs.

Score histograms per assignment and for the total, the pass rate of every check (worst first),
the most common failures with one example feedback each, HW3's step time against DEPTH across
the class (median with min-max spread, plus one faint line per student), the gradings that did
not end in a grade (timed out, errored, rejected, with their message), and flags for
reported numbers that disagree with the measurements (or are implausibly far from them), reports
that need a person (unreadable or partly read), and near-identical submissions: the same content
hash for different students, and the same
`hw3/model_parallel.py` once comments and whitespace are stripped (read from the uploads in
SUBMISSIONS when their folder is given: the unpacked copies are gone when a batch ends).

Feedback and messages come from student code and are hostile: the template autoescapes
everything; only the SVG built (and escaped) by grader.reports.plots is let through.
"""
from __future__ import annotations

import hashlib
import io
import re
import statistics
import tokenize
import zipfile
from collections import Counter, defaultdict
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping

import jinja2
from markupsafe import Markup

from grader.batch.gradebook import CurrentRun, Gradebook
from grader.common.files import write_atomically
from grader.reports import plots
from grader.reports.formatting import format_points
from grader.reports.measurements import lookup

HW3_FILE = "hw3/model_parallel.py"
MAX_SOURCE_BYTES = 2_000_000      # a larger model_parallel.py is not read for the comparison
HISTOGRAM_BINS = 10


def write_class_page(out_dir: Path, submissions_dir: Path | None = None,
                     order: list[str] | None = None) -> Path:
    """Render DIR/index.html from DIR/gradebook.sqlite. `order`: the course's assignments."""
    out_dir = Path(out_dir)
    book = Gradebook(out_dir / "gradebook.sqlite")
    try:
        runs = list(book.current_runs())
        sources = book.current_sources()
    finally:
        book.close()
    hw3_files = _hw3_fingerprints(runs, sources, Path(submissions_dir)) if submissions_dir else {}
    page = render_class_page(class_summary(runs, hw3_files, order))
    return write_atomically(out_dir / "index.html", page)


def class_summary(runs: Iterable[CurrentRun], hw3_files: Mapping[str, str] | None = None,
                  order: list[str] | None = None) -> dict:
    """Everything the page shows, as plain data (the tests assert on this and on the HTML)."""
    runs = sorted(runs, key=lambda r: r.student.key)
    graded = [r for r in runs if r.status == "graded" and r.result]
    counts = Counter(r.status for r in runs)
    return {
        "students": len(runs),
        "counts": {s: counts.get(s, 0) for s in ("graded", "rejected", "timed_out", "error")},
        "distributions": _distributions(graded, order or []),
        "checks": _check_rates(graded),
        "failures": _common_failures(graded),
        "step_time": _step_times(graded),
        "problems": [{"key": r.student.key, "name": r.student.name, "status": r.status,
                      "message": r.message or ""} for r in runs if r.status != "graded"],
        "answer_flags": _answer_flags(graded),
        "answer_review": _answer_reviews(graded),
        "integrity": _integrity_holds(graded),
        "same_hash": _groups({r.student.key: r.content_hash for r in runs
                              if not r.content_hash.startswith("raw:")}),
        "same_hw3": _groups(hw3_files or {}),
        "hw3_compared": len(hw3_files or {}),
    }


def render_class_page(summary: Mapping[str, Any]) -> str:
    view = dict(summary)
    view["histograms"] = [Markup(svg) for svg in (_histogram(d) for d in summary["distributions"]) if svg]
    view["step_plot"] = Markup(_step_plot(summary["step_time"])) if summary["step_time"] else None
    return _environment().get_template("class_page.html.j2").render(summary=view)


# ---- the sections -------------------------------------------------------------------------

def _distributions(graded: list[CurrentRun], course_order: list[str]) -> list[dict]:
    present = {a["id"] for r in graded for a in r.result.get("assignments", [])}
    order = [a for a in course_order if a in present] + sorted(present - set(course_order))
    out = []
    for assignment in order + ["total"]:
        scores, maxima = [], []
        for run in graded:
            if assignment == "total":
                scores.append(float(run.result["score"]))
                maxima.append(float(run.result["max_score"]))
                continue
            for a in run.result.get("assignments", []):
                if a["id"] == assignment:
                    scores.append(float(a["score"]))
                    maxima.append(float(a["max_score"]))
        if scores:
            out.append({"id": assignment, "scores": scores, "max_score": max(maxima),
                        "n": len(scores), "max_points": format_points(max(maxima)), "mean": format_points(statistics.fmean(scores)),
                        "median": format_points(statistics.median(scores))})
    return out


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
    first student's feedback (by key) as the example."""
    found: dict[str, dict] = {}
    for run in graded:
        for assignment in run.result.get("assignments", []):
            for item in assignment.get("items", []):
                units = item.get("checks") or ([item] if item.get("kind") == "auto" else [])
                for unit in units:
                    if unit.get("status") not in ("failed", "partial", "error"):
                        continue
                    entry = found.setdefault(unit["id"], {"id": unit["id"], "students": 0,
                                                          "example_student": run.student.key,
                                                          "example": _example(unit, item)})
                    entry["students"] += 1
    return sorted(found.values(), key=lambda f: (-f["students"], f["id"]))[:limit]


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
            for flag in assignment.get("flags") or []:
                if isinstance(flag, Mapping):
                    flags.append({"key": run.student.key, "name": run.student.name,
                                  "assignment": assignment.get("id", ""),
                                  "check": str(flag.get("check") or ""),
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


def _integrity_holds(graded: list[CurrentRun]) -> list[dict]:
    """Assignments whose automatic points are withheld: code or records that could deceive
    the grader (grader/integrity), with the first thing found."""
    return _needing_a_person(graded, "integrity", "withheld", {"points": "withheld_points"})


def _groups(fingerprints: Mapping[str, str]) -> list[list[str]]:
    by_value = defaultdict(list)
    for key, value in fingerprints.items():
        by_value[value].append(key)
    return sorted(sorted(keys) for keys in by_value.values() if len(keys) > 1)


# ---- HW3 source comparison ----------------------------------------------------------------

def normalized_python(source: str) -> str:
    """The code's tokens without comments, blank lines or layout (docstrings stay: code)."""
    try:
        tokens = tokenize.generate_tokens(io.StringIO(source).readline)
        kept = [t.string for t in tokens if t.type not in (
            tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
            tokenize.ENDMARKER)]
        return " ".join(kept)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        text = re.sub(r"#[^\n]*", "", source)
        return " ".join(text.split())


def _hw3_fingerprints(runs: list[CurrentRun], sources: Mapping[str, str],
                      submissions_dir: Path) -> dict[str, str]:
    out = {}
    for run in runs:
        for name in (sources.get(run.student.key) or "").split(", "):
            if not name:
                continue
            source = _read_hw3(submissions_dir / name)
            if source is not None:
                normalized = normalized_python(source)
                if normalized:
                    out[run.student.key] = hashlib.sha256(normalized.encode()).hexdigest()
                break
    return out


def _read_hw3(entry: Path) -> str | None:
    """hw3/model_parallel.py from an upload (a folder, or a zip), at most one folder down."""
    try:
        if entry.is_dir():
            for candidate in [entry / HW3_FILE, *sorted(entry.glob(f"*/{HW3_FILE}"))]:
                if candidate.is_file() and not candidate.is_symlink() \
                        and candidate.stat().st_size <= MAX_SOURCE_BYTES:
                    return candidate.read_text(encoding="utf-8", errors="replace")
        elif entry.is_file() and zipfile.is_zipfile(entry):
            with zipfile.ZipFile(entry) as archive:
                for info in archive.infolist():
                    parts = info.filename.split("/")
                    if info.filename.endswith(HW3_FILE) and len(parts) <= 3 \
                            and info.file_size <= MAX_SOURCE_BYTES:
                        return archive.read(info).decode("utf-8", errors="replace")
    except (OSError, zipfile.BadZipFile, RuntimeError, ValueError):
        return None
    return None


# ---- charts -------------------------------------------------------------------------------

def _histogram(distribution: Mapping) -> str | None:
    top = float(distribution["max_score"]) or max(distribution["scores"]) or 1.0
    width = top / HISTOGRAM_BINS
    counts = [0] * HISTOGRAM_BINS
    for score in distribution["scores"]:
        counts[min(HISTOGRAM_BINS - 1, max(0, int(score / width)))] += 1
    bars = [(f"{format_points(i * width)}-{format_points((i + 1) * width)}", float(c)) for i, c in enumerate(counts)]
    title = f"{distribution['id']}: score distribution (n={distribution['n']})"
    return plots.bar_chart(title, "score (points)", "students", [("", bars)])


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
