"""`pdl-grade check`'s causes (grader/reports/terminal.py) for failures a student's audit
(users28) saw split into many: a missing script is one cause, however each check says it and
with the file beside it that may be it renamed; one wrong per-rank batch over 2, 3 and 4
processes is one cause; and the case shown under a cause is the first it lists."""
from grader.harness.execute import run_script, scripts_instead
from grader.harness.observation import Observation, missing_script
from grader.reports.terminal import failure_causes, render_check_text
from tests.support.report_fixtures import TEMPLATE, find_item, fresh

P6 = "practical6/practical6_ddp.py"


def result_with(checks: dict[str, list[tuple[str, str]]], item_id: str = "hw3.task3") -> dict:
    """The template's result with `item_id`'s checks replaced: {check: [(case, message)]}."""
    result = fresh(TEMPLATE)
    find_item(result, item_id)["checks"] = [
        {"id": check, "status": "failed", "score": 0, "max_score": 1, "passed": 0,
         "failed": len(cases), "skipped": 0, "errors": 0, "feedback": "",
         "cases": [{"case": case, "outcome": "failed", "message": message}
                   for case, message in cases]}
        for check, cases in checks.items()]
    return result


def test_a_missing_script_is_one_cause_that_names_the_file_beside_it():
    missing = missing_script(P6, ["practical6/ddp.py"])
    checks = {
        "practical6.world_size": [(f"[{n}]", f"Expected: {n} process(es)\nObserved: {missing}\n"
                                            "Where to look: dist.init_process_group()")
                                  for n in (1, 2, 3, 4)],
        "practical6.grads_synchronised": [("", f"Expected: the same gradients\nObserved: {missing}"
                                               "\nWhere to look: wrap the model with DDP")],
        "practical6.world_size_reported": [("", "Expected: your answer can be compared\nObserved: "
                                                f"your code did not get that far: {missing}\n"
                                                "Where to look: make the code run first")],
        "practical6.timing_table_reported": [(f"[{a}]", "Expected: your answer can be compared\n"
                                                        "Observed: your code did not run to the "
                                                        f"end: {missing}\nWhere to look: make the "
                                                        "code run first")
                                             for a in ("complete", "consistent")]}
    causes = [c for c in failure_causes(result_with(checks)) if "practical6" in str(c.checks)]
    assert len(causes) == 1 and causes[0].count == 8 and list(causes[0].checks) == list(checks)
    text = render_check_text(result_with(checks))
    assert text.count("is missing from the submission") == 1, text
    assert ("practical6/ddp.py is there: the grader runs practical6/practical6_ddp.py; "
            "rename it.") in text
    assert "wrap the model with DDP" not in text   # a hint about code that is not there


def test_a_missing_script_says_which_python_files_stand_in_its_folder(tmp_path):
    (tmp_path / "practical6").mkdir()
    (tmp_path / "practical6" / "ddp.py").write_text("print('hi')\n")
    (tmp_path / "practical6" / "answers.yaml").write_text("answers: {}\n")
    assert scripts_instead(tmp_path, P6) == ["practical6/ddp.py"]
    run = run_script(tmp_path, P6, gpus=2)
    assert run.missing and run.problem() == (
        "practical6/practical6_ddp.py is missing from the submission: keep the template's file "
        "layout. practical6/ddp.py is there: the grader runs practical6/practical6_ddp.py; "
        "rename it.")
    # The template's own other script is no renamed copy of the missing one.
    (tmp_path / "practical5").mkdir()
    (tmp_path / "practical5" / "practical5_single.py").write_text("")
    assert scripts_instead(tmp_path, "practical5/practical5_dp.py") == []
    assert scripts_instead(tmp_path, "practical10/sample.py") == []   # no folder at all
    assert Observation(P6, gpus=2, missing=True).problem() == (
        "practical6/practical6_ddp.py is missing from the submission: keep the template's file "
        "layout.")


def test_one_wrong_per_rank_batch_over_several_process_counts_is_one_cause():
    """Each process count expects its own share (21 "or 22" on 3) and lists one line per rank:
    the same failure, in each configuration's numbers."""
    def message(n):
        share = f"{64 // n} rows" + (" (or 22, a DistributedSampler's padded share)" if n == 3 else "")
        return (f"Expected: with {n} processes each rank trains on BATCH_SIZE // world_size = "
                f"64 // {n} = {share}, so the global batch stays 64\nObserved: "
                + "; ".join(f"rank {r} trains on 64 rows" for r in range(n))
                + "\nWhere to look: x, y = get_batch(BATCH_SIZE // dist.get_world_size(), DIM, device)")
    checks = {"practical6.per_rank_batch": [(f"[{n}]", message(n)) for n in (2, 3, 4)],
              "practical6.different_data": [(f"[{n}]", f"Expected: the {n} ranks train on "
                                                       "different rows\nObserved: together the "
                                                       f"ranks train on {64 * n} rows\nWhere to "
                                                       "look: get_batch") for n in (2, 3, 4)]}
    causes = failure_causes(result_with(checks))
    batch = [c for c in causes if "practical6.per_rank_batch" in c.checks]
    assert len(batch) == 1 and batch[0].count == 3, [c.message for c in batch]
    assert "with 2 processes" in batch[0].message
    # Another check's failure stays its own cause, though its item is the same.
    assert [list(c.checks) for c in causes if "practical6" in str(c.checks)] == [
        ["practical6.per_rank_batch"], ["practical6.different_data"]]


def test_a_check_whose_cases_observe_different_things_keeps_them_apart():
    checks = {"practical6.per_rank_batch": [
        ("[2]", "Expected: 32 rows\nObserved: rank 0 trains on 64 rows; rank 1 trains on 64 rows"
                "\nWhere to look: get_batch"),
        ("[3]", "Expected: 21 rows\nObserved: forward passes on rank(s) [0] only\n"
                "Where to look: get_batch")]}
    causes = [c for c in failure_causes(result_with(checks))
              if "practical6.per_rank_batch" in c.checks]
    assert len(causes) == 2


def test_the_case_shown_under_a_cause_is_the_first_it_lists():
    """HW3's forward without its baton pass: the wording shown is the first that says where to
    look (Task 3's), so Task 3's check and case lead the lists, and a shown case of a check
    with no parameters is named."""
    error = ("RuntimeError at model_parallel.py:50 (x = torch.relu(layer(x))): Expected all "
             "tensors to be on the same device, but found at least two devices, cuda:0 and cuda:1!")
    checks = {
        "hw3.task2.trend": [("", "Building or running and training the model for (GPUs, DEPTH) "
                                 f"(2, 6), (2, 12) failed: {error}")],
        "hw3.task3.output_matches": [
            (f"[{g}gpus-depth{d}]", f"Expected: the forward pass runs\nObserved: {error}\n"
                                    "Where to look: LargeLinearModelMP.forward (the baton pass)")
            for g, d in ((2, 3), (2, 5), (3, 6))]}
    text = render_check_text(result_with(checks))
    assert ("4 cases of 2 checks failed the same way: hw3.task3.output_matches (3), "
            "hw3.task2.trend") in text, text
    assert "cases: [2gpus-depth3], [2gpus-depth5], [3gpus-depth6]" in text
    assert "the first of them (hw3.task3.output_matches[2gpus-depth3]):" in text

    # Shown as it came first: a check without parameters is named, not the first case listed.
    checks["hw3.task2.trend"] = [("", checks["hw3.task2.trend"][0][1]
                                  + "\nWhere to look: run it as the grader did")]
    text = render_check_text(result_with(checks))
    assert "the first of them (hw3.task2.trend):" in text, text
    assert "failed the same way: hw3.task2.trend, hw3.task3.output_matches (3)" in text
