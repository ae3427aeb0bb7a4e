"""Student reports (Markdown and HTML) rendered from real result.json files."""
from __future__ import annotations

import re
from html.parser import HTMLParser

from tests.support.report_fixtures import REFERENCE, ROUND_ROBIN, TEMPLATE, XSS, find_item, with_hostile_feedback
from grader.reports import render_html, render_markdown
from grader.reports.formatting import format_points


def section(markdown: str, heading: str) -> str:
    """The text under `heading` up to the next heading of any level."""
    start = markdown.index(heading)
    end = re.search(r"\n#{1,3} ", markdown[start + len(heading):])
    return markdown[start: start + len(heading) + (end.start() if end else len(markdown))]


def test_markdown_scores_per_assignment_and_task(result):
    md = render_markdown(result(REFERENCE))
    assert "**Total: 25 / 25**" in md
    assert "## Practical 4 - Data and model parallelism, the basic ideas: 10 / 10" in md
    assert "## Home Work 3 - Model parallelism with LargeLinearModelMP: 15 / 15" in md
    assert "| Task 1 - Split DEPTH=6 layers over 2 GPUs | passed | 3 / 3 |" in md
    assert "| `practical4.mp_one_transfer` | passed | 2 / 2 | 1 / 0 / 0 / 0 |" in md


def test_markdown_failing_check_shows_expected_and_observed(result):
    md = render_markdown(result(ROUND_ROBIN))
    task1 = section(md, "### Task 1 - Split DEPTH=6 layers over 2 GPUs: 0 / 3 (failed)")
    assert "| `hw3.task1.layout` | failed | 0 / 2 | 0 / 1 / 0 / 0 |" in task1
    assert ("Expected: DEPTH=6 on 2 GPUs: layers 0-2 on cuda:0 and layers 3-5 on cuda:1\n"
            "Observed: layer 0 on cuda:0, layer 1 on cuda:1, layer 2 on cuda:0") in task1
    task3 = section(md, "### Task 3 - Distribute the layers over any number of GPUs: 2 / 3 (partly passed)")
    assert "| `hw3.task3.contiguous` | failed | 0 / 1 | 19 / 23 / 0 / 0 |" in task3
    assert "| `hw3.task3.balanced` | passed | 0.5 / 0.5 | 42 / 0 / 0 / 0 |" in task3


def test_markdown_skipped_check_gives_its_reason_and_the_excluded_points(result):
    md = render_markdown(result(ROUND_ROBIN))
    speedup = section(md, "### Speed-up on real GPUs: 0 / 0 (skipped)")
    assert ("- skipped because: needs 2 real GPU(s), this machine has 0: virtual GPUs cannot "
            "show real speed-ups or utilisation") in speedup
    assert ("1 of the rubric's 10 points could not be checked on this machine and are left out "
            "of the maximum.") in md


def test_markdown_late_penalty_is_its_own_line_and_manual_items_are_pending(result):
    md = render_markdown(result(ROUND_ROBIN))
    hw3 = section(md, "## Home Work 3")
    assert "| Late penalty (2 days late) | penalty | -2.2 |" in hw3
    assert "| **total** | graded | **8.8 / 15** |" in hw3
    assert "**Late penalty (2 days late): -2.2**. Submitted 2026-05-02T10:00:00+02:00" in hw3
    assert "| Task 3 - written answer: the layout rule | pending | 0 / 0 |" in hw3
    assert "Pending instructor grading: Task 2 - written answer" in hw3
    written = section(md, "### Task 3 - written answer: the layout rule")
    assert "*Pending: to be graded by the instructor.*" in written


def test_a_late_submission_no_policy_charges_is_said_late_in_both_reports(result):
    """HW3's handout has no late policy, so the rubric charges none (an instructor's audit: 31
    minutes late cost 1.45 points); the report still says it was late."""
    data = result(REFERENCE)
    hw3 = next(a for a in data["assignments"] if a["id"] == "hw3")
    hw3["late"] = {"submitted_at": "2026-05-01T00:30:00+03:00", "due": "2026-04-30T23:59:00+03:00",
                   "days_late": 1, "fraction_lost": 0.0}
    said = "Submitted 2026-05-01T00:30:00+03:00, due 2026-04-30T23:59:00+03:00: 1 started day late. " \
           "No late policy applies: nothing is deducted."
    assert f"**Late**: {said}" in section(render_markdown(data), "## Home Work 3")
    assert f"<strong>Late</strong>: {said}" in render_html(data)
    assert "**Late**" not in render_markdown(result(REFERENCE))


def test_markdown_template_points_at_the_todo(result):
    md = render_markdown(result(TEMPLATE))
    assert "**Total: 0 / 15**" in md
    assert "NotImplementedError at model_parallel.py:35" in md
    assert md.count("(failed)") >= 5


def test_markdown_measurements_reported_next_to_measured(result):
    md = render_markdown(result(ROUND_ROBIN))
    assert "| task | quantity | you reported (your runs) | measured (the grader's runs) |" in md
    # Measured by the grader on the round-robin submission; "reported" is the fixture's example.
    assert "| Task 2 | step time (ms), DEPTH=24 | 30 | 27.64 |" in md
    assert "| Task 5 | GPU-to-GPU transfers, 5 GPUs | 4 | 19 |" in md
    assert "| Task 4 | peak memory per GPU (MiB), 5 GPUs | – | 2.07, 2.01, 2.01, 2.01, 2.13 |" in md
    assert "| Task 3 | layers per GPU (DEPTH=20, 5 GPUs) | – | 4, 4, 4, 4, 4 |" in md


def test_measurements_are_optional(result):
    data = result(REFERENCE)
    hw3 = data["assignments"][1]
    del hw3["measurements"]
    md, page = render_markdown(data), render_html(data)
    assert "Measured" not in md and "<svg" not in page
    hw3["measurements"] = {"task2.step_time_ms": {"6": 4.0}}          # partial data is fine
    assert "| Task 2 | step time (ms), DEPTH=6 | 4 |" in render_markdown(data)
    assert page.count("<svg") == 0 and render_html(data).count("<svg") == 1


def test_instructor_details_stay_out_of_the_student_report(result):
    data = result(ROUND_ROBIN)
    item = find_item(data, "hw3.task2.explanation")
    item["guidance"] = "SECRET-GUIDANCE: accept answers saying linear"
    data["submission"] = "/srv/grading/alice-4711"
    for text in (render_markdown(data), render_html(data)):
        assert "SECRET-GUIDANCE" not in text
        assert "/srv/grading" not in text


def test_html_escapes_student_controlled_text(result):
    page = render_html(with_hostile_feedback(result(ROUND_ROBIN)))
    assert XSS not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    scripts = _Tags("script")
    scripts.feed(page)
    assert scripts.count == 0
    assert "Content-Security-Policy" in page and "default-src 'none'" in page


def test_markdown_keeps_student_text_inert(result):
    md = render_markdown(with_hostile_feedback(result(ROUND_ROBIN)))
    # In feedback: inside a code block (shown literally); in table cells: Markdown-escaped.
    for match in re.finditer(re.escape(XSS), md):
        before = md[:match.start()]
        assert before.count("```") % 2 == 1, "raw markup outside a code block"
    assert "| Task 1 | layers per GPU (DEPTH=6, 2 GPUs) | \\<script>alert(1)\\</script>, 3 \\| 3 | 3, 3 |" in md


def test_code_block_cannot_be_closed_by_the_student(result):
    data = result(ROUND_ROBIN)
    check = find_item(data, "hw3.task1")["checks"][0]
    check["feedback"] = "Observed: ```\n# Injected heading\n````"
    md = render_markdown(data)
    assert "\n`````text\nObserved: ```\n# Injected heading\n````\n`````\n" in md


def test_html_has_plots_with_accessible_titles(result):
    page = render_html(result(ROUND_ROBIN))
    assert page.count('<svg xmlns="http://www.w3.org/2000/svg" class="plot" role="img"') == 2
    assert "<title id=\"plot-task-2-step-time-vs-depth-2-gpus-title\">Task 2: step time vs DEPTH (2 GPUs)</title>" in page
    assert "Task 4: peak memory per GPU (DEPTH=20)" in page
    assert page.count("<svg") == 2  # Practical 5 has no measurements: no plot
    # Parses as HTML with balanced sections.
    parser = _Tags("section")
    parser.feed(page)
    assert parser.count == parser.closed > 0


def test_html_failing_check_and_skip_reason(result):
    page = render_html(result(ROUND_ROBIN))
    assert '<span class="status status-failed">failed</span>' in page
    assert "Observed: layer 0 on cuda:0, layer 1 on cuda:1" in page
    assert ("<li>skipped because: needs 2 real GPU(s), this machine has 0: virtual GPUs cannot "
            "show real speed-ups or utilisation</li>") in page
    assert "<strong>Late penalty (2 days late): -2.2</strong>" in page
    assert '<p id="total"><strong>Total: 16 / 24</strong></p>' in page


class _Tags(HTMLParser):
    def __init__(self, tag: str):
        super().__init__()
        self.tag, self.count, self.closed = tag, 0, 0

    def handle_starttag(self, tag, attrs):
        self.count += tag == self.tag

    def handle_endtag(self, tag):
        self.closed += tag == self.tag


def test_answers_not_found_are_listed_with_the_files_read(result):
    md = render_markdown(result(ROUND_ROBIN))
    answers = section(md, "### Your answers")
    assert ("Your answer files: hw3/report.pdf (read in part: see below); hw3/answers.yaml (not handed in)."
            in answers)
    assert "An instructor will look at your report by hand." in answers
    assert "- task2.explanation: How does the step time grow with DEPTH, and why?" in answers
    assert "could be 30000 or 30.000" in answers
    page = render_html(result(ROUND_ROBIN))
    assert '<ul class="missing"><li>task2.explanation: How does the step time grow' in page


def test_points_still_waiting_for_a_person_are_said_in_the_total(result):
    graded = result(ROUND_ROBIN)
    graded["pending_points"] = 3
    score, maximum = format_points(graded["score"]), format_points(graded["max_score"])
    for text in (render_markdown(graded), render_html(graded)):
        # The pending points are part of the maximum, not of the score: "(3 of them ...)"
        # beside the score had read as included in it.
        expected = (f"(written answers worth 3 of the {maximum} points are still to be graded by "
                    f"the staff: they are not in the {score} yet)")
        assert expected in text, (f"expected the total to say {expected!r}; observed: "
                                  f"{re.search(r'Total: .*', text).group(0)[:300]!r} "
                                  "(grader/reports/templates/report.*.j2)")
    graded["pending_points"] = 0
    assert "still to be graded" not in render_markdown(graded)


def test_each_answer_is_shown_with_where_it_was_read(result):
    graded = result(ROUND_ROBIN)
    hw3 = next(a for a in graded["assignments"] if a["id"] == "hw3")
    hw3["answers"] = {"values": {"task5.transfers_2gpus": 1, "task2.step_time_table": [
                          {"depth": 6, "step_time_ms": 182.59}]},
                      "origin": {"task5.transfers_2gpus": "hw3/report.pdf, page 3, line "
                                 "'Number of transfers with 2 GPUs: 1'",
                                 "task2.step_time_table": "hw3/report.pdf, page 2, table"},
                      "files": [{"file": "hw3/report.pdf", "status": "ok"}]}
    markdown = render_markdown(graded)
    assert ("| `task5.transfers_2gpus` | 1 | hw3/report.pdf, page 3, line 'Number of transfers "
            "with 2 GPUs: 1' |") in markdown
    assert "| `task2.step_time_table` | depth=6 step_time_ms=182.6 | hw3/report.pdf, page 2, table |" in markdown
    html = render_html(graded)
    assert "<td>hw3/report.pdf, page 2, table</td>" in html


def test_a_check_with_cases_beside_skipped_ones_says_those_were_not_counted(result):
    """A failed check whose one-GPU cases count only when they fail (HW3 Task 3): its skipped
    cases' reason is "cases not counted", not "skipped because" under a check that failed (read
    grading a broken submission by hand: "**hw3.task3.all_gpus_used** (failed) - skipped
    because: ..."). A check skipped whole still says "skipped because"."""
    graded = result(ROUND_ROBIN)
    check = find_item(graded, "hw3.task3")["checks"][-1]
    reason = "one GPU: any layout that runs passes this, so it counts only when it fails"
    check["cases"].append({"case": "[1gpus-depth3]", "outcome": "skipped", "message": reason})
    check["skipped"] += 1
    md = section(render_markdown(graded), "### Task 3 - Distribute the layers over any number "
                                          "of GPUs")
    assert f"- cases not counted: {reason}" in md and f"skipped because: {reason}" not in md, (
        f"expected the failed check's skipped cases said 'not counted'; observed:\n{md} "
        "(grader/reports/templates/item.md.j2)")
    html = render_html(graded)
    assert f"<li>cases not counted: {reason}</li>" in html, "report.html.j2: skip-reasons list"
    assert "skipped because: needs 2 real GPU(s)" in render_markdown(graded)
