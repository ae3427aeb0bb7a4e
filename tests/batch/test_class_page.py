"""DIR/index.html, the class page: its numbers from a hand-built gradebook, its flags, the
batch writing it, and the page in headless Chromium."""
from __future__ import annotations

import csv
import html
import io
import json
import re
from pathlib import Path

import pytest

from tests.support.fake_graders import make_submission, zip_folder
from grader.batch.class_page import (class_summary, normalized_python, render_class_page,
                                     write_class_page)
from grader.batch.gradebook import Gradebook, RunConfig, RunRecord
from grader.batch.similarity import ADDED
from grader.batch.inputs import Student
from grader.scoring import build_result
from tests.support import run_test_batch
from tests.support.chromium_pipe import CHROMIUM, Chromium

CONFIG = RunConfig("test", "rubrics", {"hw3": "1"}, ("hw3",), "config")
HOSTILE = "<script>alert(1)</script>"
MP = "import torch\n\ndef split(model, gpus):\n    return [model]  # {comment}\n"


def check(check_id: str, passed: bool, feedback: str = "") -> dict:
    return {"id": check_id, "points": 1, "max_score": 1, "score": 1 if passed else 0,
            "status": "passed" if passed else "failed", "partial": "all", "passed": int(passed),
            "failed": int(not passed), "skipped": 0, "errors": 0, "cases": [], "feedback": feedback}


def hw3(layout: bool, trend: bool, step_ms: dict | None, feedback: str = "layout wrong") -> dict:
    checks = [check("hw3.task1.layout", layout, "" if layout else feedback),
              check("hw3.task2.trend", trend, "" if trend else "step time does not grow")]
    score = float(layout + trend)
    items = [{"id": f"hw3.item{i}", "title": "t", "kind": "auto", "score": c["score"], "max_score": 1,
              "points": 1, "status": c["status"], "feedback": c["feedback"], "checks": [c]}
             for i, c in enumerate(checks)]
    return {"id": "hw3", "title": "HW3", "rubric_version": "1", "score": score, "max_score": 2.0,
            "rubric_max_score": 2.0, "excluded_points": 0.0, "status": "graded", "errors": [],
            "pending_manual": [], "late": None, "items": items,
            "measurements": {"task2": {"step_time_ms": step_ms}} if step_ms else {}}


def record(book, key, status, content_hash, result=None, message=None, fingerprints=None,
           needs_person=False, name=None):
    book.record_run(Student(key, name or key.title()), content_hash, key, CONFIG,
                    RunRecord(status, "2026-05-01T10:00:00+00:00", "2026-05-01T10:01:00+00:00",
                              message, result, needs_person=needs_person), [],
                    fingerprints=fingerprints)


def fingerprint_of(source: str) -> str:
    """A fingerprint as the gradebook keeps one (grader/batch/similarity.py: of added code)."""
    import hashlib
    return ADDED + hashlib.sha256(normalized_python(source).encode()).hexdigest()


@pytest.fixture
def batch_dir(tmp_path):
    """Eight students: four graded (carol and dave uploaded the same bytes; alice and bob the
    same model_parallel.py apart from comments and blank lines), one of each problem, and one
    upload with nothing to grade; bob's overrides name an item that does not exist."""
    out = tmp_path / "out"
    out.mkdir()
    mp = {key: MP.format(comment=comment) + "\n\n" * (key == "bob")
          for key, comment in (("alice", "mine"), ("bob", "totally mine"))}
    mp["carol"] = mp["dave"] = "def other():\n    pass\n"
    prints = {key: {"hw3/model_parallel.py": fingerprint_of(text)} for key, text in mp.items()}
    book = Gradebook(out / "gradebook.sqlite")
    record(book, "alice", "graded", "h-alice",
           build_result("alice", [hw3(True, True, {"6": 10.0, "12": 20.0, "24": 40.0})]),
           fingerprints=prints["alice"], name="Alice Ääremaa")
    bob = build_result("bob", [hw3(False, True, {"6": 12.0, "12": 22.0, "24": 60.0}, HOSTILE)])
    bob["assignments"][0]["flags"] = [{"check": "hw3.task2.trend",
                                       "text": "task5.transfers_2gpus: reported 1, but the code "
                                               "makes 19 " + HOSTILE}]
    bob["override_problems"] = ["override 'hw3.task9' ignored: hw3 has no item with that id"]
    record(book, "bob", "graded", "h-bob", bob, fingerprints=prints["bob"])
    carol = build_result("carol", [hw3(False, False, None)])
    carol["assignments"][0]["answers"] = {"needs_manual_review": True, "problems": [
        "hw3/report.pdf has no text layer (a scan?)", "second problem"]}
    record(book, "carol", "graded", "h-same", carol, fingerprints=prints["carol"])
    dave = build_result("dave", [hw3(False, True, None)])
    dave["assignments"][0]["integrity"] = {
        "problems": ["hw3/model_parallel.py:1 reaches into the grader: imports grader " + HOSTILE,
                     "the trace of hw3 (2 GPU(s)): 3 line(s) were not written"],
        "withheld": True, "withheld_points": 1.0, "cleared": False, "comment": ""}
    record(book, "dave", "graded", "h-same", dave, fingerprints=prints["dave"])
    record(book, "eve", "timed_out", "h-eve", message="grading took longer than 1800 s and was stopped")
    record(book, "frank", "rejected", "raw:x", message="submission rejected: not a zip " + HOSTILE,
           result=build_result("frank", [hw3(False, False, None)]))
    record(book, "gina", "error", "h-gina", message="the grading process failed (exit 1)")
    record(book, "hank", "rejected", "raw:y", needs_person=True,
           message="no file of hw3 found anywhere in the upload; it holds hw3.docx " + HOSTILE,
           result=build_result("hank", [hw3(False, False, None)]))
    book.close()
    for key, files in {"alice": ("report.html", "instructor.md"), "bob": ("report.html", "instructor.md"),
                       "eve": ("grading-problem.txt",)}.items():
        for name in files:
            (out / "submissions" / key).mkdir(parents=True, exist_ok=True)
            (out / "submissions" / key / name).write_text(f"{key} {name}")
    return out


def test_summary_counts_rates_failures_and_flags(batch_dir):
    out = batch_dir
    page = write_class_page(out)
    assert page == out / "index.html"
    text = page.read_text(encoding="utf-8")

    assert ("8 students: 4 graded, 1 rejected, 1 for a person, 1 timed out, 1 errored."
            in text)
    # What needs a person, counted where the counts are (an instructor's day found "0 for a
    # person" above a list of overrides to correct).
    book = Gradebook(out / "gradebook.sqlite")
    summary = class_summary(book.current_runs())
    book.close()
    to_do = re.search(r'<p id="to-do">(.*?)</p>', text).group(1)
    assert to_do.startswith(
        f"For a person: 1 upload(s) with no grade until someone looks, "
        f"{len(summary['override_problems'])} override problem(s), 0 name(s) shared by uploads "
        f"kept apart, {len(summary['integrity'])} assignment(s) held for review, "
        f"{len(summary['answer_review'])} answer file(s) to read by hand, "
        f"{len(summary['answer_flags'])} flag(s) on reported numbers"), to_do
    assert summary["override_problems"], "the fixture has an override problem to count"
    # Pass rates, worst first: layout 1/4 before trend 3/4.
    rows = re.findall(r"<tr><td>(hw3\.[\w.]+)</td><td>hw3</td><td class=\"num\">(\d+)</td>"
                      r"<td class=\"num\">(\d+)</td><td class=\"num\">(\d+%)</td></tr>", text)
    assert rows == [("hw3.task1.layout", "1", "4", "25%"), ("hw3.task2.trend", "3", "4", "75%")]
    # Most common failure: layout (3 students), with the item id an override needs, and bob's
    # hostile feedback escaped as text.
    failures = text.split('id="failure-table"')[1].split("</table>")[0]
    assert failures.index("hw3.task1.layout") < failures.index("hw3.task2.trend")
    assert "<td><code>hw3.item0</code></td>" in failures
    assert '<td class="num">3</td>' in failures and html.escape(HOSTILE) in failures
    assert HOSTILE not in text
    # One assignment: its histogram only (the total's would be the same chart), and the
    # step-time plot.
    assert text.count('<svg') == 2
    assert "hw3: score distribution (n=4)" in text and "total: score distribution" not in text
    assert "HW3 Task 2: step time vs DEPTH across the class (n=2)" in text
    # The histogram counts students: whole-number ticks only.
    histogram = text[text.index("hw3: score distribution"):].split("</svg>")[0]
    ticks = re.findall(r'<text[^>]*text-anchor="end"[^>]*>([^<]+)</text>', histogram)
    assert ticks and all(re.fullmatch(r"\d+", t) for t in ticks), ticks
    # The problems, with their messages; the upload with nothing to grade is for a person.
    problems = text.split('id="problem-table"')[1].split("</table>")[0]
    assert re.search(r"eve.*timed out.*grading took longer than 1800 s", problems, re.S)
    assert "frank" in problems and "gina" in problems and "alice" not in problems
    assert "hank" not in problems and "Every submission was graded" not in text
    person = text.split('id="needs-person-table"')[1].split("</table>")[0]
    assert "hank" in person and "hw3.docx " + html.escape(HOSTILE) in person
    overrides = text.split('id="override-problem-table"')[1].split("</table>")[0]
    assert re.search(r"bob.*override &#39;hw3.task9&#39; ignored: hw3 has no item with that id",
                     overrides, re.S)
    # Flags: a reported number the code contradicts (escaped, with its item id), a report a
    # person must read.
    flags = text.split('id="answer-flag-table"')[1].split("</table>")[0]
    assert re.search(r"bob.*hw3.*hw3\.task2\.trend.*<code>hw3\.item1</code>.*reported 1, but the "
                     r"code makes 19", flags, re.S)
    assert html.escape(HOSTILE) in flags
    review = text.split('id="answer-review-table"')[1].split("</table>")[0]
    assert "carol" in review and "has no text layer (a scan?) (and 1 more)" in review
    # Held for review: code that could deceive the grader, with the first thing found.
    held = text.split('id="integrity-table"')[1].split("</table>")[0]
    assert re.search(r"dave.*hw3.*1\.0.*reaches into the grader: imports grader "
                     + re.escape(html.escape(HOSTILE)) + r" \(and 1 more\)", held, re.S)
    assert "alice" not in held
    # Flags: identical upload hash, and model_parallel.py equal apart from comments/blank lines.
    assert re.search(r'id="same-hash">\s*<li class="flag">carol, dave</li>\s*</ul>', text)
    same = text.split('id="same-code"')[1].split("</ul>")[0]
    assert re.findall(r"<code>hw3/model_parallel.py</code>: ([\w, ]+)</li>", same) == [
        "alice, bob", "carol, dave"]


def test_a_hold_the_staff_released_stays_on_the_page_with_their_comment(tmp_path):
    """A user's finding (users28, 13): after `hw3.integrity: {cleared: true, comment: ...}` the
    page said "None: no submission reaches into the grader", keeping no record that a hold had
    been found and released (instructor.md keeps both)."""
    out = tmp_path / "out"
    out.mkdir()
    book = Gradebook(out / "gradebook.sqlite")
    gus = build_result("gus", [hw3(True, True, None)])
    gus["assignments"][0]["integrity"] = {
        "problems": ["hw3/model_parallel.py:9 walks the interpreter's objects: gc.get_objects"],
        "withheld": False, "withheld_points": 0.0, "cleared": True,
        "comment": "a census of live tensors, never called " + HOSTILE}
    record(book, "gus", "graded", "h-gus", gus, name="Gus Census")
    record(book, "ann", "graded", "h-ann", build_result("ann", [hw3(True, True, None)]))
    book.close()
    text = write_class_page(out).read_text(encoding="utf-8")
    section = text.split('<h2 id="integrity">')[1].split("<h2")[0]
    assert "None: no submission reaches into the grader" not in section, section
    assert "None held now: the 1 hold(s) the grader found were released by the course staff" \
        in section, section
    released = section.split('id="integrity-released-table"')[1].split("</table>")[0]
    assert re.search(r"gus \(Gus Census\).*hw3.*walks the interpreter&#39;s objects: gc.get_objects"
                     r".*a census of live tensors, never called "
                     + re.escape(html.escape(HOSTILE)), released, re.S), released
    assert "ann" not in released


def test_every_student_is_listed_with_scores_and_links(batch_dir):
    out = batch_dir
    text = write_class_page(out, order=["practical4", "hw3"]).read_text(encoding="utf-8")
    table = text.split('id="student-table"')[1].split("</table>")[0]
    rows = re.findall(r'<tr class="student" id="student-(\w+)">(.*?)</tr>', table, re.S)
    assert [key for key, _ in rows] == ["alice", "bob", "carol", "dave", "eve", "frank", "gina", "hank"]
    cells = {key: re.findall(r"<td[^>]*>(.*?)</td>", row, re.S) for key, row in rows}
    assert cells["alice"][0].startswith("Alice Ääremaa<br><small>alice</small>")
    assert cells["alice"][2:5] == ["2/2", "2/2", "graded"]
    # held: no grade (grades.csv's cell is empty), never read as a score (adv39 F5)
    assert cells["dave"][2:5] == ["\u2014/2 (1 withheld)", "", "graded, held for review"]
    assert cells["frank"][2:5] == ["0/2", "0/2", "rejected"]          # a bad archive: a zero
    assert cells["hank"][2:5] == ["", "", "needs a person"]            # nothing to grade: none
    assert cells["eve"][2:5] == ["", "", "timed out"]
    assert '<a href="submissions/alice/report.html">report</a>' in cells["alice"][5]
    assert '<a href="submissions/alice/instructor.md">instructor.md</a>' in cells["alice"][6]
    assert '<a href="submissions/eve/grading-problem.txt">why not graded</a>' in cells["eve"][5]
    assert cells["carol"][5] == cells["carol"][6] == ""               # no files: no dead links


def test_summary_data_and_step_time_median(batch_dir):
    out = batch_dir
    book = Gradebook(out / "gradebook.sqlite")
    summary = class_summary(list(book.current_runs()), book.current_fingerprints())
    book.close()
    assert [d["id"] for d in summary["distributions"]] == ["hw3"]
    # grades.csv's own numbers: the rejected upload's 0 (frank) counts, the held one (dave) has
    # no number there and does not (an instructor's audit: the page had said otherwise).
    assert sorted(summary["distributions"][0]["scores"]) == [0.0, 0.0, 1.0, 2.0]
    assert [s["key"] for s in summary["step_time"]] == ["alice", "bob"]
    assert summary["same_hash"] == [["carol", "dave"]]
    assert summary["same_code"] == [{"file": "hw3/model_parallel.py",
                                     "groups": [["alice", "bob"], ["carol", "dave"]]}]
    assert [p["status"] for p in summary["problems"]] == ["timed_out", "rejected", "error"]
    assert [p["key"] for p in summary["needs_person"]] == ["hank"]
    assert [(h["key"], h["assignment"], h["more"]) for h in summary["integrity"]] == [
        ("dave", "hw3", 1)]


def test_normalized_python_ignores_comments_and_layout_only():
    a = "def f(x):\n    # add one\n    return x + 1\n"
    assert normalized_python(a) == normalized_python("def f(x):\n\n    return x+1   # ok\n")
    assert normalized_python(a) != normalized_python("def f(x):\n    return x + 2\n")


def test_the_batch_finds_identical_code_inside_zips_and_lists_uploads_for_a_person(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    # long enough not to be alike by chance (grader/batch/similarity.py MIN_ADDED_TOKENS)
    copied = ("import torch\n\ndef split(model, gpus):\n    per_gpu, extra = divmod(len(model), gpus)\n"
              "    blocks, start = [], 0\n    for gpu in range(gpus):\n"
              "        size = per_gpu + (1 if gpu < extra else 0)\n"
              "        blocks.append(model[start:start + size])\n        start += size\n"
              "    return blocks\n")
    subs.mkdir()
    for name, comment in (("ann", "# mine\n"), ("ben", "")):    # zipped, in different shapes
        folder = make_submission(tmp_path / name, score=5, extra=name)
        (folder / "hw3" / "model_parallel.py").write_text(comment + copied)
        zip_folder(folder, subs / f"{name}.zip", prefix="my work/" if name == "ben" else "")
    make_submission(subs / "cy", score=5, extra="cy")          # the template's own file: not compared
    (subs / "cy" / "hw3" / "model_parallel.py").write_bytes(
        (Path(__file__).resolve().parents[2] / "student_template/hw3/model_parallel.py").read_bytes())
    (subs / "dee" / "homework").mkdir(parents=True)
    (subs / "dee" / "homework" / "HW3 final.docx").write_bytes(b"PK\x03\x04 not code")
    report = run_test_batch(subs, out, ["practical4"])
    assert (report.progress.graded, report.progress.needs_person) == (3, 1)
    text = (out / "index.html").read_text()
    same = text.split('id="same-code"')[1].split("</ul>")[0]
    assert re.findall(r"<code>hw3/model_parallel.py</code>: ([\w, ]+)</li>", same) == ["ann, ben"]
    assert "homework/HW3 final.docx" in text.split('id="needs-person-table"')[1].split("</table>")[0]
    assert "Every submission was graded" not in text
    rows = {row[0]: row for row in csv.reader((out / "grades.csv").open())}
    assert rows["dee"][2:4] == ["", ""] and rows["dee"][4].startswith("needs a person: no file of")


def test_the_batch_writes_the_summary_and_a_render_failure_spares_the_grades(tmp_path, monkeypatch):
    subs, out = tmp_path / "subs", tmp_path / "out"
    make_submission(subs / "ann", score=10)
    make_submission(subs / "ben", score=10)          # same bytes as ann: flagged
    make_submission(subs / "cat", behaviour="crash")
    run_test_batch(subs, out, ["practical4"])
    text = (out / "index.html").read_text()
    assert "3 students: 2 graded, 0 rejected, 0 for a person, 0 timed out, 1 errored." in text
    assert re.search(r'<li class="flag">ann, ben</li>', text)
    assert "the grading process failed" in text

    import grader.batch.class_page as class_page
    monkeypatch.setattr(class_page, "render_class_page", lambda summary: 1 / 0)
    make_submission(subs / "dan", score=3)
    stream = io.StringIO()
    report = run_test_batch(subs, out, ["practical4"], stream=stream)
    assert report.progress.graded == 1
    assert "dan" in (out / "grades.csv").read_text()
    assert "index.html) not written" in stream.getvalue()


@pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is not installed")
def test_page_in_chromium(batch_dir, tmp_path):
    out = batch_dir
    page = write_class_page(out)
    browser = Chromium(tmp_path / "profile")
    try:
        session = browser.open_page(page.as_uri())
        browser.settle()
        assert browser.console_errors() == []
        assert browser.evaluate("document.querySelectorAll('script').length", session) == 0
        boxes = json.loads(browser.evaluate("""JSON.stringify([...document.querySelectorAll('svg.plot')]
          .map(s => { const b = s.getBoundingClientRect(); const st = getComputedStyle(s);
            return {w: b.width, h: b.height, shown: st.display !== 'none' && st.visibility === 'visible'}; }))""",
                                            session))
        assert len(boxes) == 2
        for box in boxes:
            assert box["shown"] and box["w"] > 100 and box["h"] > 100, box
        # Every student is a visible row; every link leads to a file of the batch folder.
        students = json.loads(browser.evaluate("""JSON.stringify([...document.querySelectorAll(
            '#student-table tr.student')].map(r => [r.id, r.getBoundingClientRect().height > 0,
            [...r.querySelectorAll('a')].map(a => a.href)]))""", session))
        assert [s[0] for s in students] == [f"student-{k}" for k in
                                            ("alice", "bob", "carol", "dave", "eve", "frank", "gina", "hank")]
        assert all(visible for _, visible, _ in students)
        links = [href for _, _, hrefs in students for href in hrefs]
        assert len(links) == 5
        for href in links:
            assert href.startswith("file://") and Path(href[len("file://"):]).is_file(), href
        # The page's own text: the sections the staff look for, nothing from a student as markup.
        body = browser.evaluate("document.body.innerText", session)
        for heading in ("Students", "Needs a person", "Overrides that could not be applied",
                        "Identical code"):
            assert heading in body
        assert HOSTILE in body            # shown as text, never run (no script element above)
        from PIL import Image, ImageStat
        image = Image.open(io.BytesIO(browser.screenshot(session))).convert("L")
        assert ImageStat.Stat(image).stddev[0] > 10
    finally:
        browser.close()


def with_written(result: dict, texts: dict[str, str]) -> dict:
    """An HW3 result with written answers (manual items) and a factual one."""
    result = json.loads(json.dumps(result))
    result["items"] += [{"id": f"hw3.{qid}", "title": qid, "kind": "manual", "score": 0,
                         "max_score": 1, "points": 1, "status": "manual", "pending": True,
                         "answer": qid, "checks": [], "feedback": ""} for qid in texts]
    result["answers"] = {"values": {**texts, "task5.transfers_2gpus": 1}}
    return result


def test_identical_written_answers_are_flagged_and_shared_facts_are_not(tmp_path):
    explanation = ("Naive model parallelism runs one GPU at a time, so five GPUs wait on each "
                   "other and are not faster than two.")
    book = Gradebook(tmp_path / "gradebook.sqlite")
    for key, text in [("ann", explanation), ("ben", "  NAIVE model parallelism runs one GPU at "
                      "a time, so five GPUs wait on each other and are not faster than two."),
                      ("cid", "Each GPU waits for the previous one: the work is sequential, "
                              "more GPUs only add transfers between them, so no speed-up."),
                      ("dan", "No."), ("eva", "No.")]:
        assignment = with_written(hw3(True, True, None), {"task4.explanation": text})
        record(book, key, "graded", f"hash-{key}", build_result(key, [assignment]))
    summary = class_summary(list(book.current_runs()), book.current_fingerprints())
    book.close()
    # ann and ben wrote the same text (case and spacing aside); dan's and eva's "No." is too
    # short to tell anything; the same factual answer (1 transfer) is every honest student's.
    assert summary["same_answers"] == [{"assignment": "hw3", "item": "hw3.task4.explanation",
                                        "groups": [["ann", "ben"]]}]
    page = render_class_page(summary)
    assert '<ul id="same-answers">' in page
    assert "hw3 <code>hw3.task4.explanation</code>: ann, ben" in page


def test_one_copied_answer_is_flagged_where_the_rest_of_the_sheet_differs(tmp_path):
    """An instructor's day: a student who copied 4 of 5 answers and rewrote one was not
    flagged (the whole sheet was compared); each answer is compared on its own, and named
    beside the answer in the students' instructor.md."""
    from grader.batch.published import note_shared_answers
    from grader.scoring import load_rubrics
    copied = {"task4.explanation": "Naive model parallelism runs one GPU at a time, so more "
                                   "GPUs only add transfers between them and no speed-up.",
              "task2.explanation": "Every layer adds the same work to the forward and the "
                                   "backward pass, so the step time grows linearly with DEPTH."}
    own = dict(copied, **{"task2.explanation": "The step time doubles when DEPTH doubles: each "
                                                "layer costs about the same, forward and back."})
    out = tmp_path / "out"
    out.mkdir()
    book = Gradebook(out / "gradebook.sqlite")
    for key, texts in (("kati", copied), ("juri", own), ("mari", copied)):
        record(book, key, "graded", f"h-{key}",
               build_result(key, [with_written(hw3(True, True, None), texts)]))
        (out / "submissions" / key).mkdir(parents=True)
    summary = class_summary(list(book.current_runs()))
    assert summary["same_answers"] == [
        {"assignment": "hw3", "item": "hw3.task2.explanation", "groups": [["kati", "mari"]]},
        {"assignment": "hw3", "item": "hw3.task4.explanation",
         "groups": [["juri", "kati", "mari"]]}]
    note_shared_answers(book, out, load_rubrics())
    juri = (out / "submissions" / "juri" / "instructor.md").read_text(encoding="utf-8")
    task4 = juri[juri.index("(`hw3.task4.explanation`"):]
    assert ("**The same text** (case and spacing ignored) as the answer of `kati`, `mari` in "
            "this batch") in task4.split("###")[0], juri
    assert juri.count("**The same text**") == 1
    # Mari rewrites hers: the note ends in everyone's view at the next batch.
    record(book, "mari", "graded", "h-mari-2", build_result("mari", [with_written(
        hw3(True, True, None), {"task4.explanation": "Only one GPU works at any moment."})]))
    note_shared_answers(book, out, load_rubrics())
    book.close()
    kati = (out / "submissions" / "kati" / "instructor.md").read_text(encoding="utf-8")
    assert kati.count("**The same text**") == 1 and "as the answer of `juri` in" in kati


def test_a_failures_example_is_a_student_past_the_templates_todos(tmp_path):
    """An instructor's day: every example of 'Most common failures' came from the untouched
    template (first by key), which shows nothing of how students really fail."""
    book = Gradebook(tmp_path / "gradebook.sqlite")
    todo = ("Observed: hw3/model_parallel.py (2 GPU(s)) stopped with NotImplementedError at "
            "model_parallel.py:40 (a TODO of the template is still to be written): Task 3")
    real = "Observed: hw3/model_parallel.py (2 GPU(s)) stopped with IndexError at x.py:3: out"
    for key, feedback in (("aaron_template", todo), ("beth", real), ("carl_template", todo)):
        record(book, key, "graded", f"h-{key}", build_result(key, [hw3(False, True, None, feedback)]))
    failures = class_summary(book.current_runs())["failures"]
    book.close()
    (layout,) = [f for f in failures if f["id"] == "hw3.task1.layout"]
    assert (layout["students"], layout["example_student"]) == (3, "beth"), layout
    assert "IndexError" in layout["example"]


def test_one_students_instructor_view_that_cannot_be_rendered_stops_nothing(tmp_path, capsys,
                                                                           monkeypatch):
    """The shared-answer notes are written at every batch's end: a view that cannot be made
    (a result of another version, a bug) leaves that student's file as it was, and the
    others are still written; the batch goes on to grades.csv."""
    from grader.batch.published import note_shared_answers
    from grader.reports import instructor
    from grader.scoring import load_rubrics
    text = ("Naive model parallelism runs one GPU at a time, so five GPUs wait on each other "
            "and are not faster than two.")
    out = tmp_path / "out"
    out.mkdir()
    book = Gradebook(out / "gradebook.sqlite")
    for key in ("ann", "ben"):
        record(book, key, "graded", f"h-{key}",
               build_result(key, [with_written(hw3(True, True, None), {"task4.explanation": text})]))
        (out / "submissions" / key).mkdir(parents=True)
    (out / "submissions" / "ann" / "instructor.md").write_text("as published")
    render = instructor.render_instructor_markdown

    def failing_for_ann(result, rubrics, shared=None):
        if result.get("submission") == "ann":
            raise KeyError("a field of another version")
        return render(result, rubrics, shared)

    monkeypatch.setattr(instructor, "render_instructor_markdown", failing_for_ann)
    note_shared_answers(book, out, load_rubrics())
    book.close()
    assert (out / "submissions" / "ann" / "instructor.md").read_text() == "as published"
    assert "as the answer of `ann`" in (out / "submissions" / "ben" / "instructor.md").read_text()
    assert "could not be rewritten" in capsys.readouterr().err


def test_a_sentence_many_students_write_is_no_copy(tmp_path):
    """A reviewer's find: at 40 characters, "When the batch size is divisible by the number of
    GPUs." (54) named every student who wrote it in each other's instructor.md."""
    book = Gradebook(tmp_path / "gradebook.sqlite")
    for key in ("ann", "ben"):
        assignment = with_written(hw3(True, True, None), {
            "task3.explanation": "When the batch size is divisible by the number of GPUs."})
        record(book, key, "graded", f"h-{key}", build_result(key, [assignment]))
    assert class_summary(list(book.current_runs()))["same_answers"] == []
    book.close()


def test_a_gradebooks_older_whole_file_fingerprints_are_not_compared(tmp_path):
    """Kept before only added code was fingerprinted: every correct Practical 5 script had the
    reference's (adv42 F2). A rerun that skips the unchanged uploads must not list them again."""
    book = Gradebook(tmp_path / "gradebook.sqlite")
    for key in ("alice", "bob"):
        record(book, key, "graded", f"h-{key}", build_result(key, [hw3(True, True, None)]),
               fingerprints={"practical5/practical5_dp.py": "0" * 64})
    summary = class_summary(list(book.current_runs()), book.current_fingerprints())
    book.close()
    assert (summary["same_code"], summary["code_compared"]) == ([], 0), (
        f"expected: whole-file fingerprints ignored; observed: {summary['same_code']}; where to "
        "look: grader/batch/class_page.py _of_added_code")
