"""What the reports say around the numbers: whose submission (the LMS name, not a folder),
under which settings the grader measured, and a report that was not handed in versus one that
could not be read."""
from pathlib import Path

import pytest

from grader.answers.collect import collect_answers
from grader.grading.raw import AssignmentRun, RawRun
from grader.grading.score import score_run
from grader.reports.instructor import render_instructor_markdown
from grader.reports.render import render_html, render_markdown
from grader.scoring import load_rubrics
from tests.support.report_fixtures import ROUND_ROBIN, fresh

MOODLE_FOLDER = "/tmp/pdl-batch-x1/work/mari-3f2a/unpacked/Mari Maasikas_123456_assignsubmission_file_"


def named(result: dict) -> dict:
    result["submission"] = MOODLE_FOLDER
    result["student"] = {"key": "Mari_Maasikas_123456", "name": "Mari Maasikas"}
    return result


def test_headings_show_the_students_name_not_the_folder():
    result = named(fresh(ROUND_ROBIN))
    md, page = render_markdown(result), render_html(result)
    assert md.startswith("# Grading report: Mari Maasikas\n")
    assert "<h1>Grading report: Mari Maasikas</h1>" in page
    assert "assignsubmission" not in md and "assignsubmission" not in page
    instructor = render_instructor_markdown(result, load_rubrics())
    assert instructor.startswith("# Instructor view: Mari Maasikas (Mari_Maasikas_123456)\n")
    assert "/tmp/" not in instructor and "unpacked" not in instructor


def test_without_a_name_the_folders_name_and_never_its_path():
    result = fresh(ROUND_ROBIN)
    result["submission"] = "/tmp/pdl-batch-x1/work/liis/Liis_HW3"
    assert render_markdown(result).startswith("# Grading report: Liis_HW3\n")
    assert render_instructor_markdown(result, load_rubrics()).startswith("# Instructor view: Liis_HW3\n")


def test_score_run_carries_the_student_into_result_json():
    rubrics = load_rubrics()
    run = RawRun("/scratch/x", [AssignmentRun("practical4", None, "did not run")])
    result = score_run(run, rubrics, student={"key": "mari", "name": "Mari Maasikas"}).to_dict()
    assert result["student"] == {"key": "mari", "name": "Mari Maasikas"}
    assert "student" not in score_run(run, rubrics).to_dict()


def test_measured_values_say_the_settings_they_were_measured_under():
    result = fresh(ROUND_ROBIN)
    hw3 = result["assignments"][0]
    hw3["conditions"] = {"task2": "DEPTH 6, 12, 24 on 2 GPUs, DIM=256, batch 64",
                         "task4": "DEPTH=20 on 2 and 5 GPUs, DIM=256, batch 64"}
    hw3["conditions"]["task9"] = "no value of the table"   # told under it
    md, page = render_markdown(result), render_html(result)
    assert "*Measured* is the grader's run of your code on virtual GPUs" in md
    assert "*you reported* is what your own runs gave, with your settings" in md
    # Each task's settings lead its rows in the table (a student's audit, users28: 200.4 MiB
    # at DIM=1024 with Adam beside the grader's 3.13 MiB at DIM=256 with SGD, in a passed
    # task, read as a mismatch while the settings were said only under the table).
    assert ("| Task 2 | *settings of the numbers below* | *yours: the settings you ran your "
            "script with* | *the grader's: DEPTH 6, 12, 24 on 2 GPUs, DIM=256, batch 64* |\n"
            "| Task 2 | step time (ms), DEPTH=6 |") in md, md
    assert ("| Task 4 | *settings of the numbers below* | *yours: the settings you ran your "
            "script with* | *the grader's: DEPTH=20 on 2 and 5 GPUs, DIM=256, batch 64* |") in md
    assert md.count("DEPTH=20 on 2 and 5 GPUs, DIM=256, batch 64") == 1
    assert "- Task 9: no value of the table" in md and "- Task 2:" not in md
    assert ("<tr class=\"settings\"><td>Task 2</td><td><em>settings of the numbers below</em>"
            "</td>") in page
    assert "<em>the grader&#39;s: DEPTH 6, 12, 24 on 2 GPUs, DIM=256, batch 64</em>" in page
    assert "<li>Task 9: no value of the table</li>" in page
    result["hardware"] = {"kind": "real", "gpus": 5, "names": ["NVIDIA H200"]}
    assert ("on real GPUs (NVIDIA H200), at the settings each task's first row says"
            in render_markdown(result))


def test_hw3_checks_declare_the_settings_of_what_they_measure():
    from grader.checks import test_hw3
    under = test_hw3.MEASURED_UNDER
    assert f"DIM={test_hw3.TIMING_DIM}" in under["task2"] and f"DIM={test_hw3.TIMING_DIM}" in under["task4"]
    assert "batch 64" in under["task4"] and f"DEPTH={test_hw3.TASK4_DEPTH}" in under["task4"]


@pytest.mark.slow
def test_a_missing_report_is_not_handed_in_and_a_broken_one_could_not_be_read(tmp_path):
    hw3 = tmp_path / "sub" / "hw3"
    hw3.mkdir(parents=True)
    missing = collect_answers(tmp_path / "sub", "hw3", "pdf_then_sheet").to_dict()
    assert missing["files"][0]["status"] == "missing"
    (hw3 / "report.pdf").write_bytes(b"%PDF-1.4 broken")
    broken = collect_answers(tmp_path / "sub", "hw3", "pdf_then_sheet").to_dict()
    assert broken["files"][0]["status"] == "unreadable"
    result = fresh(ROUND_ROBIN)
    for answers, words in ((missing, "hw3/report.pdf (not handed in)"),
                           (broken, "hw3/report.pdf (could not be read)")):
        result["assignments"][0]["answers"] = answers
        assert words in render_markdown(result)
        instructor = render_instructor_markdown(result, load_rubrics())
        assert "unreadable" not in instructor


def test_one_failure_behind_several_checks_is_told_once_in_the_report():
    """A script that stops at a TODO fails every check of the assignment with the same
    message: the report tells it under the first check and points there from the others."""
    result = fresh(ROUND_ROBIN)
    stop = ("practical5/practical5_dp.py (2 GPU(s)) stopped with SyntaxError: '(' was never "
            "closed (practical5_dp.py, line 59)")
    item = result["assignments"][0]["items"][0]
    shared = []
    for n, label in enumerate(("[2], [3], [5]", "test_model_replicated", "[2]")):
        check = {"id": f"hw3.same{n}", "status": "failed", "score": 0, "max_score": 1,
                 "passed": 0, "failed": 1, "skipped": 0, "errors": 0, "cases": [],
                 "feedback": f"hw3.same{n}: 1 of 1 case(s) did not pass (0 of 1 point(s)).\n"
                             f"- {label}: {stop}"}
        shared.append(check)
    item["checks"] = shared + [{**shared[0], "id": "hw3.other", "feedback":
                                "hw3.other: 1 of 1 case(s) did not pass (0 of 1 point(s)).\n"
                                "- [2]: Expected: a scatter\nObserved: none"}]
    md = render_markdown(result)
    assert md.count("was never closed") == 1, md
    assert "hw3.same1: 1 of 1 case(s) did not pass" in md
    assert md.count("- the same failure as hw3.same0 above") == 2
    assert "Expected: a scatter" in md


def test_a_ddp_runs_stop_is_told_once_whichever_ranks_raised_it_and_however_checks_lead_in():
    """Finding 6b: one exception of a DDP run, raised by rank 1 over 2 processes and by ranks
    1 to 3 over 4, quoted by a check of the code and by answer checks that say the code "did
    not get that far" or "did not run to the end": one stop at the top, the checks pointing
    there."""
    stop = ("practical6/practical6_ddp.py ({n} GPU(s), torchrun --nproc-per-node {n}) stopped "
            "with RuntimeError at practical6_ddp.py:42 on {ranks} only (rank 0 raised no error "
            "of its own): Expected all tensors to be on the same device")
    result = fresh(ROUND_ROBIN)
    item = result["assignments"][0]["items"][0]
    item["checks"] = [
        {"id": f"practical6.c{k}", "status": "failed", "score": 0, "max_score": 1, "passed": 0,
         "failed": 1, "skipped": 0, "errors": 0, "cases": [], "feedback":
         f"practical6.c{k}: 1 of 1 case(s) did not pass (0 of 1 point(s)).\n"
         f"- {label}: Expected: thing {k}\nObserved: {lead}{stop.format(n=n, ranks=ranks)}"}
        for k, (label, lead, n, ranks) in enumerate((
            ("[2]", "", 2, "rank 1"), ("[4]", "", 4, "ranks 1, 2 and 3"),
            ("test_faster", "your code did not get that far: ", 2, "rank 1"),
            ("[complete]", "your code did not run to the end: ", 2, "rank 1")))]
    md = render_markdown(result)
    assert md.count("Expected all tensors") == 1, md
    assert ("- practical6/practical6_ddp.py stopped with RuntimeError at practical6_ddp.py:42 on "
            "rank 1 only (rank 0 raised no error of its own): Expected all tensors to be on the "
            "same device (runs: 2 GPU(s), torchrun --nproc-per-node 2; 4 GPU(s), torchrun "
            "--nproc-per-node 4; 4 checks)") in md, md
    assert ("Observed: your code did not run to the end: practical6/practical6_ddp.py (2 GPU(s), "
            "torchrun --nproc-per-node 2) did not run to its end (what stopped it: at the top") \
        in md, md


def test_what_a_stop_carries_is_told_with_it_at_the_top_and_not_again_below():
    """The fix under a crash (here DDP's device_ids naming another GPU than the model's) was
    left out of the stop told at the top and repeated under every check's pointer there."""
    note = ("On rank 1 DDP(model, device_ids=[0]) wraps a model on cuda:1: give each rank its "
            "own, DDP(model, device_ids=[local_rank]).")
    stop = ("practical6/practical6_ddp.py (2 GPU(s), torchrun --nproc-per-node 2) stopped with "
            "RuntimeError at practical6_ddp.py:42 on rank 1 only (rank 0 raised no error of its "
            "own): Expected all tensors to be on the same device\n" + note)
    result = fresh(ROUND_ROBIN)
    result["assignments"][0]["items"][0]["checks"] = [
        {"id": f"practical6.c{k}", "status": "failed", "score": 0, "max_score": 1, "passed": 0,
         "failed": 1, "skipped": 0, "errors": 0, "cases": [], "feedback":
         f"practical6.c{k}: 1 of 1 case(s) did not pass (0 of 1 point(s)).\n"
         f"- [2]: Expected: thing {k}\nObserved: {stop}\nWhere to look: place {k}"}
        for k in range(2)]
    md = render_markdown(result)
    top = md.split("**Your code did not run to its end**")[1].split("###")[0]
    assert "Expected all tensors" in top and "device_ids=\\[local_rank\\]" in top, top
    assert md.count("wraps a model on cuda:1") == 1, md
    assert "Where to look: place 0" in md and "Where to look: place 1" in md, md


def test_a_run_that_stopped_is_told_once_at_the_top_and_each_check_keeps_what_it_expected():
    """A SyntaxError fails every check that runs the script, each expecting something else:
    the stop is told once at the top of the assignment (with the runs it stopped), and each
    check keeps its Expected and Where-to-look lines and says which run it needed. A stop only
    one check observed stays where it is."""
    result = fresh(ROUND_ROBIN)
    stop = ("stopped with SyntaxError: '(' was never closed (concepts.py, line 88)")
    item = result["assignments"][0]["items"][0]
    checks = []
    for n, (label, configuration, lead) in enumerate((
            ("test_split", "2 GPU(s)", ""), ("[63]", "2 GPU(s), BATCH_SIZE=63", ""),
            ("test_answer", "2 GPU(s)", "your code did not get that far: "))):
        checks.append({"id": f"practical4.c{n}", "status": "failed", "score": 0,
                       "max_score": 1, "passed": 0, "failed": 1, "skipped": 0, "errors": 0,
                       "cases": [], "feedback":
                       f"practical4.c{n}: 1 of 1 case(s) did not pass (0 of 1 point(s)).\n"
                       f"- {label}: Expected: thing {n}\nObserved: {lead}practical4/concepts.py "
                       f"({configuration}) {stop}\nWhere to look: part {n}"})
    checks.append({**checks[0], "id": "practical4.alone", "feedback":
                   "practical4.alone: 1 of 1 case(s) did not pass (0 of 1 point(s)).\n"
                   "- test_one: Expected: a message\nObserved: practical4/concepts.py (1 GPU(s))"
                   " stopped with ValueError: no GPU\nWhere to look: part 9"})
    item["checks"] = checks
    md, page = render_markdown(result), render_html(result)
    assert md.count("was never closed") == 1 and page.count("was never closed") == 1, md
    assert ("- practical4/concepts.py stopped with SyntaxError: '(' was never closed "
            "(concepts.py, line 88) (runs: 2 GPU(s); 2 GPU(s), BATCH_SIZE=63; 3 checks)") in md
    md_top = md.index("**Your code did not run to its end**")
    assert md_top < md.index("**practical4.c0**"), "the stop is told before the checks"
    for n in range(3):
        assert f"Expected: thing {n}" in md and f"Where to look: part {n}" in md
    assert ("Observed: practical4/concepts.py (2 GPU(s), BATCH_SIZE=63) did not run to its end "
            "(what stopped it: at the top of this assignment)") in md
    assert "Observed: your code did not get that far: practical4/concepts.py (2 GPU(s)) did not" in md
    assert ("Observed: practical4/concepts.py (1 GPU(s)) stopped with ValueError: no GPU" in md
            and md.count("no GPU") == 1)
    assert "Your code did not run to its end" in page


def test_the_recount_message_names_its_configuration_once():
    """The counts a second run must print were told as "run again with DEPTH=3 on 5 GPUs ...
    prints ... (DEPTH=3 on 5 GPUs, as the grader counted them ...)"."""
    from grader.checks.test_hw3 import counts_said
    alone = counts_said([(3, 2)], 5, 3)
    assert alone.startswith("'to() calls: 3, real transfers: 2' (DEPTH=3 on 5 GPUs, as the grader"), alone
    in_a_sentence = counts_said([(3, 2)], None)
    assert "DEPTH=" not in in_a_sentence and "(as the grader counted them: " in in_a_sentence, (
        f"expected the counts without a second mention of the configuration; observed {in_a_sentence!r}")
