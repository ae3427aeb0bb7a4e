"""The text `pdl-grade check` and `pytest grader/` print: points per task, each cause of failure
once, what is left for a person (grader/reports/terminal.py)."""
from grader.reports.terminal import (earned_every_automatic_point, failure_causes,
                                     render_check_text)
from tests.support.report_fixtures import REFERENCE, ROUND_ROBIN, TEMPLATE, find_item, fresh, load

CRASH = ("Building or running the model with {gpus} GPU(s) and DEPTH={depth} failed: "
         "InvalidDeviceOrdinal at model_parallel.py:38 (nn.Sequential(nn.Linear(dim, dim), "
         "nn.ReLU()).to(device)): CUDA error: invalid device ordinal\n(the virtual node has "
         "{gpus} GPU(s): cuda:0 .. cuda:0; cuda:1 does not exist)")
TASK3 = ["hw3.task3.on_existing_gpu", "hw3.task3.balanced", "hw3.task3.all_gpus_used",
         "hw3.task3.no_layer_lost", "hw3.task3.output_matches", "hw3.task3.contiguous"]
DEPTHS = [1, 3, 5, 6, 12, 20, 24]


def two_gpus_hard_coded() -> dict:
    """HW3 with cuda:0/cuda:1 written into __init__: every one-GPU case of the six Task 3
    checks crashes the same way (42 cases), the three-GPU case of `balanced` fails on its own."""
    result = fresh(TEMPLATE)
    item = find_item(result, "hw3.task3")
    item["checks"] = []
    for check in TASK3:
        cases = [{"case": f"[1gpus-depth{d}]", "outcome": "failed",
                  "message": CRASH.format(gpus=1, depth=d)} for d in DEPTHS]
        if check == "hw3.task3.balanced":
            cases += [{"case": f"[3gpus-depth{d}]", "outcome": "failed",
                       "message": f"Expected: {d} layers over 3 GPUs: per-GPU counts that differ "
                                  f"by at most one\nObserved: layers per GPU [{d // 2}, {d - d // 2}, 0]"
                                  f"\nWhere to look: LargeLinearModelMP.__init__"}
                      for d in (12, 20, 24)]
        item["checks"].append({"id": check, "status": "partial", "score": 0.1, "max_score": 0.5,
                               "passed": 35, "failed": len(cases), "skipped": 0, "errors": 0,
                               "cases": cases, "feedback": ""})
    return result


def test_one_crash_in_42_cases_is_one_cause_naming_the_checks_it_cost():
    causes = failure_causes(two_gpus_hard_coded())
    crash = next(c for c in causes if "InvalidDeviceOrdinal" in c.message)
    assert crash.count == 42 and list(crash.checks) == TASK3
    assert sum("InvalidDeviceOrdinal" in c.message for c in causes) == 1
    # The three-GPU layouts differ in their numbers only: one more cause, not three.
    balanced = [c for c in causes if list(c.checks) == ["hw3.task3.balanced"]]
    assert len(balanced) == 1 and balanced[0].count == 3

    text = render_check_text(two_gpus_hard_coded())
    assert text.count("InvalidDeviceOrdinal") == 1, text
    assert "42 cases of 6 checks failed the same way" in text
    assert "[1gpus-depth1], [1gpus-depth3]" in text   # the configurations, once each


def test_a_layout_told_over_every_node_size_is_one_cause():
    """A round-robin layout fails `contiguous` on 3 to 8 GPUs; each case's expected layout is
    listed in parentheses and grows with the node ("(layers 0-1 on cuda:0, layer 2 on cuda:1,
    ...)"): a student was shown 9 causes for one design choice."""
    result = fresh(TEMPLATE)
    item = find_item(result, "hw3.task3")

    def expected(gpus, depth):
        blocks = [list(range(depth))[g::gpus] for g in range(gpus)]
        return ", ".join(f"layers {b[0]}-{b[-1]} on cuda:{g}" if len(b) > 1 else f"layer {b[0]} on cuda:{g}"
                         for g, b in enumerate(blocks))
    cases = [{"case": f"[{g}gpus-depth{d}]", "outcome": "failed",
              "message": f"Expected: contiguous blocks of layers per GPU, in GPU order ({expected(g, d)})\n"
                         f"Observed: layer 1 is on cuda:1, but an even contiguous split of {d} layers over "
                         f"{g} GPUs puts it on cuda:0\nWhere to look: LargeLinearModelMP.__init__"}
             for g, d in ((3, 5), (3, 6), (4, 5), (4, 12), (5, 6), (8, 12), (8, 20))]
    item["checks"] = [{"id": "hw3.task3.contiguous", "status": "partial", "score": 0.1, "max_score": 0.5,
                       "passed": 3, "failed": len(cases), "skipped": 0, "errors": 0, "cases": cases,
                       "feedback": ""}]
    causes = [c for c in failure_causes(result) if "hw3.task3.contiguous" in c.checks]
    assert len(causes) == 1 and causes[0].count == 7, [c.message for c in causes]


def test_one_crash_under_checks_that_expect_different_things_is_one_cause():
    """Practical 4's template: each check expects its own thing, but every one fails because
    the script stops at the TODO, in whichever configuration it ran; a missing answer stays
    its own cause (its fix is an answer)."""
    stop = ("practical4/concepts.py ({config}) stopped with NotImplementedError at concepts.py:58 "
            "(a TODO of the template is still to be written): TODO (Practical 4 Part 2)")
    result = fresh(TEMPLATE)
    item = find_item(result, "hw3.task3")
    item["checks"] = [
        {"id": check, "status": "failed", "score": 0, "max_score": 1, "passed": 0,
         "failed": len(configs), "skipped": 0, "errors": 0, "feedback": "",
         "cases": [{"case": label, "outcome": "failed",
                    "message": f"Expected: {expected}\nObserved: {stop.format(config=config)}"
                               f"\nWhere to look: Part 2"} for label, config in configs]}
        for check, expected, configs in [
            ("practical4.chunk_shapes", "the batch split into 2 chunks",
             [("[64]", "2 GPU(s)"), ("[63]", "2 GPU(s), BATCH_SIZE=63")]),
            ("practical4.mp_layer_devices", "layer1 on cuda:0, layer2 on cuda:1",
             [("", "2 GPU(s)")])]]
    item["checks"].append({
        "id": "practical4.chunk_shapes_reported", "status": "failed", "score": 0, "max_score": 1,
        "passed": 0, "failed": 1, "skipped": 0, "errors": 0, "feedback": "",
        "cases": [{"case": "", "outcome": "failed", "message":
                   "Expected: an answer\nObserved: no answer found; and your code could not be "
                   f"run to compare it with: {stop.format(config='2 GPU(s)')}"}]})
    causes = [c for c in failure_causes(result) if any("practical4" in k for k in c.checks)]
    assert [(c.count, list(c.checks)) for c in causes] == [
        (3, ["practical4.chunk_shapes", "practical4.mp_layer_devices"]),
        (1, ["practical4.chunk_shapes_reported"])]
    text = render_check_text(result)
    assert "3 cases of 2 checks failed the same way" in text
    assert "The checks it cost need your script to run to its end" in text and text.count("concepts.py:58") == 2


def test_one_exception_of_a_ddp_run_is_one_cause_however_each_check_leads_into_it():
    """A student's DDP(model, device_ids=[0]) on every rank (finding 6b): rank 1 (ranks 1-3
    over 4 processes) raises, the checks of the code quote the run's stop, the answer checks
    say the code "did not get that far" or "did not run to the end" before it: it was three
    causes. One, said once, with the ranks of its first run."""
    stop = ("practical6/practical6_ddp.py ({gpus} GPU(s), torchrun --nproc-per-node {gpus}) "
            "stopped with RuntimeError at practical6_ddp.py:42 on {ranks} only (rank 0 raised "
            "no error of its own): Expected all tensors to be on the same device, but found at "
            "least two devices, cuda:0 and cuda:1!")
    ranks = {2: "rank 1", 3: "ranks 1 and 2", 4: "ranks 1, 2 and 3"}

    def observed(lead="", gpus=2):
        return f"Observed: {lead}{stop.format(gpus=gpus, ranks=ranks[gpus])}"

    def check(check_id, cases):
        return {"id": check_id, "status": "failed", "score": 0, "max_score": 1, "passed": 0,
                "failed": len(cases), "skipped": 0, "errors": 0, "feedback": "",
                "cases": [{"case": label, "outcome": "failed", "message": message}
                          for label, message in cases]}
    result = fresh(TEMPLATE)
    find_item(result, "hw3.task3")["checks"] = [
        check("practical6.world_size", [
            (f"[{n}]", f"Expected: {n} processes training\n{observed(gpus=n)}\nWhere to look: "
                       "dist.init_process_group()") for n in (2, 3, 4)]),
        check("practical6.grads_synchronised", [("", f"Expected: equal gradients\n{observed()}")]),
        check("practical6.faster_reported", [("", "Expected: your answer to compare.faster can "
                                                  "be compared with what your code does\n"
                                                  + observed("your code did not get that far: "))]),
        check("practical6.timing_table_reported", [
            (f"[{aspect}]", "Expected: your answer to timing.table can be compared with what "
                            "your code does\n" + observed("your code did not run to the end: "))
            for aspect in ("complete", "consistent")])]
    causes = [c for c in failure_causes(result) if any("practical6" in k for k in c.checks)]
    assert len(causes) == 1 and causes[0].count == 7, [c.message for c in causes]
    text = render_check_text(result)
    assert text.count("Expected all tensors") == 1, text
    assert ("Observed: practical6/practical6_ddp.py (2 GPU(s), torchrun --nproc-per-node 2) "
            "stopped with RuntimeError at practical6_ddp.py:42 on rank 1 only (rank 0 raised no "
            "error of its own)") in text, text
    assert "did not get that far" not in text and "did not run to the end" not in text, text


def test_what_a_stop_carries_after_its_first_line_reaches_the_terminal():
    """The run's explanation under its crash line (here DDP's device_ids naming another GPU
    than the model's) was cut off: the terminal showed the crash line alone."""
    note = ("On rank 1 DDP(model, device_ids=[0]) (practical6_ddp.py:35) wraps a model on cuda:1: "
            "DDP moves every input to device_ids[0], so the forward pass meets two GPUs. Give "
            "each rank its own: DDP(model, device_ids=[local_rank]).")
    stop = ("Observed: practical6/practical6_ddp.py (2 GPU(s), torchrun --nproc-per-node 2) "
            "stopped with RuntimeError at practical6_ddp.py:42 on rank 1 only (rank 0 raised no "
            "error of its own): Expected all tensors to be on the same device\n" + note)
    result = fresh(TEMPLATE)
    find_item(result, "hw3.task3")["checks"] = [
        {"id": "practical6.world_size", "status": "failed", "score": 0, "max_score": 1,
         "passed": 0, "failed": 1, "skipped": 0, "errors": 0, "feedback": "",
         "cases": [{"case": "[2]", "outcome": "failed", "message":
                    f"Expected: 2 processes training\n{stop}\nWhere to look: init_process_group()"}]}]
    text = render_check_text(result)
    assert note in text, f"expected the stop's explanation in the terminal; observed:\n{text}"
    assert text.count(note) == 1 and "Where to look: init_process_group()" not in \
        text.split(note)[0], text


def answer_check(check: str, qid: str, observed: str, where: str) -> dict:
    return {"id": check, "status": "failed", "score": 0, "max_score": 0.25, "passed": 0,
            "failed": 1, "skipped": 0, "errors": 0, "feedback": "",
            "cases": [{"case": "", "outcome": "failed", "message":
                       f"Expected: an answer to: the question of {qid}\nObserved: {observed}\n"
                       f"Where to look: {where}"}]}


def test_an_empty_sheet_is_one_cause_naming_the_answers_to_write():
    stop = ("practical5/practical5_dp.py (2 GPU(s)) stopped with NotImplementedError at "
            "practical5_dp.py:60 (a TODO of the template is still to be written): TODO (P5)")
    result = fresh(TEMPLATE)
    item = find_item(result, "hw3.task3")
    qids = ["timing.faster", "usage.table", "dp.split_manually"]
    item["checks"] = [answer_check(f"practical5.check{n}", qid,
                                   "no answer found; and your code could not be run to compare "
                                   f"it with: {stop}", f"practical5/answers.yaml ({qid})")
                      for n, qid in enumerate(qids)]
    # An answer that was there but could not be read says why: its own cause.
    item["checks"].append(answer_check(
        "practical5.unreadable", "memory.most_memory_gpu",
        "no answer found (practical5/answers.yaml: memory.most_memory_gpu: expected a whole "
        "number, got 'cuda:0')", "practical5/answers.yaml (memory.most_memory_gpu)"))
    causes = [c for c in failure_causes(result) if any("practical5" in k for k in c.checks)]
    assert [c.missing for c in causes] == [qids, []], [c.message for c in causes]
    text = render_check_text(result)
    assert "3 answer(s) not found (3 check(s)): timing.faster, usage.table, dp.split_manually" \
        in text, text
    assert "Write them in practical5/answers.yaml" in text and text.count("TODO (P5)") == 1
    assert "expected a whole number, got 'cuda:0'" in text


def test_an_answer_it_cannot_read_beside_a_crashed_run_is_its_own_cause():
    """"your answer '...' could not be read as ..." (was "no answer found (...)") is fixed in the
    sheet, not in the code: never folded into the run's crash."""
    stop = ("practical5/practical5_dp.py (2 GPU(s)) stopped with NotImplementedError at "
            "practical5_dp.py:60 (a TODO of the template is still to be written): TODO (P5)")
    result = fresh(TEMPLATE)
    item = find_item(result, "hw3.task3")
    item["checks"] = [answer_check("practical5.unreadable", "timing.faster",
                                   "your answer 'It is what it is' could not be read as yes/no "
                                   "(true/false): write yes or no first; and your code could not "
                                   f"be run to compare it with: {stop}",
                                   "practical5/answers.yaml (timing.faster)")]
    causes = [c for c in failure_causes(result) if "practical5.unreadable" in c.checks]
    assert len(causes) == 1 and causes[0].message.startswith("Expected: an answer to"), causes
    assert "your answer 'It is what it is' could not be read" in render_check_text(result)

def test_answers_missing_from_a_report_are_listed_with_its_labels():
    result = fresh(TEMPLATE)
    item = find_item(result, "hw3.task3")
    labels = {"task5.transfers_2gpus": "Number of transfers with 2 GPUs",
              "task4.table": "the table 'GPUs | Step time (ms) | Memory per GPU (MiB)'"}
    item["checks"] = [answer_check(f"hw3.c{n}", qid, "no answer found",
                                   f"hw3/report.pdf ('{label}') or hw3/answers.yaml ({qid})")
                      for n, (qid, label) in enumerate(labels.items())]
    text = render_check_text(result)
    assert "2 answer(s) not found (2 check(s)):" in text
    assert "   - task5.transfers_2gpus ('Number of transfers with 2 GPUs')" in text, text
    assert "Write them in hw3/report.pdf, or in hw3/answers.yaml" in text


def test_a_run_that_stopped_is_one_cause_whether_or_not_its_message_says_observed():
    stop = ("practical5/practical5_dp.py (2 GPU(s)) stopped with NotImplementedError at "
            "practical5_dp.py:60: TODO")
    result = fresh(TEMPLATE)
    item = find_item(result, "hw3.task3")
    item["checks"] = [
        {"id": "practical5.a", "status": "failed", "score": 0, "max_score": 1, "passed": 0,
         "failed": 1, "skipped": 0, "errors": 0, "feedback": "",
         "cases": [{"case": "", "outcome": "failed",
                    "message": f"Expected: a scatter\nObserved: {stop}"}]},
        {"id": "practical5.b", "status": "failed", "score": 0, "max_score": 1, "passed": 0,
         "failed": 1, "skipped": 0, "errors": 0, "feedback": "",
         "cases": [{"case": "", "outcome": "failed", "message": stop}]}]
    causes = [c for c in failure_causes(result) if any("practical5" in k for k in c.checks)]
    assert [list(c.checks) for c in causes] == [["practical5.a", "practical5.b"]]


def test_one_exception_under_checks_of_several_tasks_is_one_cause_that_says_where_to_look():
    """HW3's forward that never moves x: Task 2's build, Task 3's forward and Task 5's counts
    each quote the same RuntimeError, naming their configurations their own way."""
    error = ("RuntimeError at model_parallel.py:50 (x = torch.relu(layer(x))): Expected all "
             "tensors to be on the same device, but found at least two devices, cuda:0 and cuda:1!")
    messages = {
        "hw3.task2.trend": f"Building or running and training the model for (GPUs, DEPTH) "
                           f"(2, 6), (2, 12) failed: {error}",
        "hw3.task3.output_matches": f"Expected: the forward pass runs\nObserved: {error}\n"
                                    "Where to look: LargeLinearModelMP.forward (the baton pass)",
        "hw3.task5.counts_printed": f"Building or running the model with 2 GPU(s) and DEPTH=20 "
                                    f"failed: {error}"}
    result = fresh(TEMPLATE)
    find_item(result, "hw3.task3")["checks"] = [
        {"id": check, "status": "failed", "score": 0, "max_score": 1, "passed": 0, "failed": 1,
         "skipped": 0, "errors": 0, "feedback": "",
         "cases": [{"case": "", "outcome": "failed", "message": message}]}
        for check, message in messages.items()]
    causes = [c for c in failure_causes(result) if "RuntimeError" in c.message]
    assert len(causes) == 1 and list(causes[0].checks) == list(messages), causes
    assert "Where to look: LargeLinearModelMP.forward" in causes[0].message


def test_every_failed_check_once_with_expected_observed_where():
    text = render_check_text(load(ROUND_ROBIN))
    for item in load(ROUND_ROBIN)["assignments"][0]["items"]:
        for check in item.get("checks") or []:
            if check["status"] != "passed":
                assert check["id"] in text, check["id"]
    assert "Expected:" in text and "Observed:" in text and "Where to look:" in text
    assert "support.py" not in text and "AssertionError" not in text


def test_points_per_task_and_the_total():
    result = load(ROUND_ROBIN)
    text = render_check_text(result)
    for assignment in result["assignments"]:
        for item in assignment["items"]:
            if item.get("kind", "auto") == "auto":
                assert item["title"] in text
    assert "total: 16 / 24" in text


def test_written_answers_are_left_for_a_person_with_their_points():
    result = fresh(ROUND_ROBIN)
    hw3 = result["assignments"][0]
    manual = {"id": "hw3.task1.explanation", "title": "Task 1 - written answer", "kind": "manual",
              "score": 0.0, "max_score": 2.0, "status": "manual", "pending": True,
              "answer": "task1.explanation", "checks": []}
    hw3["items"].append(manual)
    hw3["pending_manual"], hw3["pending_points"] = ["hw3.task1.explanation"], 2.0
    result["pending_points"] = 2.0
    others = [i for i in hw3["items"] if i.get("pending") and i is not manual]
    text = render_check_text(result)
    assert f"Still for a person (hw3): {len(others) + 1} written answer(s)" in text
    assert "Task 1 - written answer (2 point(s); task1.explanation: no answer found yet)" in text
    assert "2 point(s) in all wait for a person" in text
    hw3["answers"]["values"]["task1.explanation"] = "It moves once."
    assert "task1.explanation: answered" in render_check_text(result)


def test_answers_found_but_not_read_are_listed_as_waiting_for_a_person():
    """Their points wait (grader/scoring/score.py): the list beside the total names them, or
    the total's "in all" would count points the list never named."""
    result = fresh(ROUND_ROBIN)
    hw3 = result["assignments"][0]
    task1 = next(i for i in hw3["items"] if i["id"] == "hw3.task1")
    task1.update(status="pending", pending_points=1.0, score=task1["max_score"] - 1.0)
    result["pending_points"] = (result.get("pending_points") or 0) + 1.0
    text = render_check_text(result)
    assert "Still for a person: answers the grader found but could not read" in text, text
    assert f"- {task1['title']} (hw3: 1 point(s))" in text, text


def test_exit_decision_every_automatic_point():
    assert earned_every_automatic_point(load(REFERENCE))
    assert not earned_every_automatic_point(load(TEMPLATE))
    held = fresh(REFERENCE)
    for item in held["assignments"][0]["items"]:
        item["status"] = "withheld"
    held["assignments"][0]["integrity"] = {"withheld": True, "problems": ["concepts.py:3: gc"]}
    assert not earned_every_automatic_point(held)
    assert "held for review" in render_check_text(held) and "concepts.py:3: gc" in render_check_text(held)
    # A pending written answer is no automatic point: the student cannot earn it here.
    pending = fresh(REFERENCE)
    pending["assignments"][0]["items"].append({"id": "x.manual", "kind": "manual", "score": 0,
                                               "max_score": 1, "pending": True, "status": "manual"})
    assert earned_every_automatic_point(pending)


def test_unselected_checks_are_not_run_not_broken():
    result = fresh(TEMPLATE)
    for item in result["assignments"][0]["items"]:
        for check in item.get("checks") or []:
            check.update(passed=0, failed=0, skipped=0, errors=0, cases=[], status="error",
                         feedback=f"check {check['id']} did not run (a grading problem, not your code)")
    assert failure_causes(result, selected_only=True) == []
    assert "not run" in render_check_text(result, selected_only=True)
    assert len(failure_causes(result)) == 1   # in a grading, a check that did not run is a problem


def test_a_check_worth_no_point_is_told_apart_from_what_to_fix():
    """practical4.uneven_batch fails for a split right at the handout's batch of 64: the student
    has every point, and reads the tip under its own heading, not as something to fix; the
    same failure hitting a check with points is something to fix."""
    result = fresh(REFERENCE)   # every other check passed
    item = find_item(result, "hw3.task3")
    tip = {"id": "practical4.uneven_batch", "status": "failed", "score": 0, "max_score": 0,
           "points": 0, "passed": 0, "failed": 1, "skipped": 0, "errors": 0, "feedback": "",
           "cases": [{"case": "", "outcome": "failed",
                      "message": "Expected: the batch of 63 rows split\nObserved: [31, 31] rows"}]}
    item["checks"] = [tip]
    text = render_check_text(result)
    assert "Worth no point, but worth knowing" in text and "What to fix" not in text, text
    assert "practical4.uneven_batch" in text and "[31, 31] rows" in text
    costly = dict(tip, id="practical4.chunk_shapes", points=1, max_score=1)
    item["checks"] = [costly, tip]
    text = render_check_text(result)
    assert "What to fix" in text and "Worth no point" not in text, text


def test_a_report_handed_in_in_another_format_is_said_so_in_the_terminal_too():
    """`pdl-grade check` listed "hw3/report.md (read)" where the reports say it stands for the
    PDF the handout asks for."""
    result = fresh(REFERENCE)
    hw3 = next(a for a in result["assignments"] if a["id"] == "hw3")
    hw3.setdefault("answers", {})["files"] = [
        {"file": "hw3/report.md", "status": "ok", "instead_of": "hw3/report.pdf"}]
    text = render_check_text(result)
    assert "hw3: answers read from hw3/report.md (handed in instead of hw3/report.pdf, read)" \
        in text, text
