"""The shipped rubrics load, add up, and name exactly the checks grader/checks implements."""
import pytest

from grader.scoring import load_rubrics

# The check ids agreed with grader/checks (see the brief); a typo on either side would
# otherwise make a check "did not run" for every student.
EXPECTED_CHECKS = {
    "practical4": {"practical4.baseline_shape", "practical4.chunk_shapes",
                   "practical4.chunks_equal_full", "practical4.mp_layer_devices",
                   "practical4.mp_one_transfer", "practical4.mp_output_shape",
                   "practical4.one_gpu_message", "practical4.output_shape_reported",
                   "practical4.chunk_shapes_reported", "practical4.outputs_equal_reported",
                   "practical4.layer_devices_reported", "practical4.transfers_reported"},
    "practical5": {"practical5.split_sizes", "practical5.replicated",
                   "practical5.gathered_on_gpu0", "practical5.gpu0_most_memory",
                   "practical5.dp_loss_equals_single", "practical5.real_speedup",
                   "practical5.split_table_reported", "practical5.most_memory_gpu_reported",
                   "practical5.final_loss_equal_reported", "practical5.timing_table_reported"},
    "practical6": {"practical6.world_size", "practical6.rank_device", "practical6.per_rank_batch",
                   "practical6.grads_synchronised", "practical6.params_equal_after_step",
                   "practical6.world_size_reported", "practical6.rank_gpu_table_reported",
                   "practical6.per_rank_batch_reported", "practical6.timing_table_reported"},
    "practical10": {"practical10.one_process_per_replica", "practical10.gpu_pair_per_rank",
                    "practical10.micro_batches", "practical10.sync_once_per_step",
                    "practical10.batch_size_invariant", "practical10.single_process",
                    "practical10.broken_mp_one_gpu", "practical10.num_processes_reported",
                    "practical10.gpus_per_rank_reported", "practical10.rank_gpus_reported",
                    "practical10.micro_batches_reported", "practical10.micro_batch_size_reported"},
    "hw3": {"hw3.task1.layout", "hw3.task1.transfer", "hw3.task2.trend",
            "hw3.task3.on_existing_gpu", "hw3.task3.balanced", "hw3.task3.all_gpus_used",
            "hw3.task3.no_layer_lost", "hw3.task3.output_matches", "hw3.task3.contiguous",
            "hw3.task4.all_gpus_hold_layers", "hw3.task4.no_speedup", "hw3.task4.recorded",
            "hw3.task5.to_calls", "hw3.task5.transfers", "hw3.task1.reported",
            "hw3.task2.reported", "hw3.task3.reported", "hw3.task4.reported",
            "hw3.task5.reported"},
}


def test_every_assignment_has_a_rubric():
    assert set(load_rubrics()) == set(EXPECTED_CHECKS)


@pytest.mark.parametrize("assignment", sorted(EXPECTED_CHECKS))
def test_rubric_names_exactly_the_implemented_checks(assignment):
    rubric = load_rubrics()[assignment]
    assert sorted(rubric.check_ids) == sorted(EXPECTED_CHECKS[assignment])
    assert rubric.gpus >= 1
    assert any(item.is_manual for item in rubric.items), "written questions need a manual item"


def test_hw3_is_five_tasks_of_three_points_and_a_report_point(rubric_for):
    rubric = rubric_for("hw3")
    assert rubric.total_points == 20
    auto = {item.id: item.points for item in rubric.items if not item.is_manual}
    assert auto == {**{f"hw3.task{n}": 3 for n in range(1, 6)},
                    **{f"hw3.task{n}.report": 1 for n in range(1, 6)}}
    assert all(item.points == 0 for item in rubric.items if item.is_manual)
    assert {item.answer for item in rubric.items if item.is_manual} == {
        f"task{n}.explanation" for n in range(1, 6)}


def test_hw3_round_robin_costs_exactly_one_point(rubric_for):
    task3 = rubric_for("hw3").item("hw3.task3")
    contiguous = [c for c in task3.checks if c.check == "hw3.task3.contiguous"]
    assert len(contiguous) == 1
    assert contiguous[0].points == 1 and contiguous[0].partial == "all"
    assert "round-robin" in task3.feedback.failed


def test_real_gpu_speedup_is_excluded_when_skipped(rubric_for):
    rule = rubric_for("practical5").item("practical5.speedup").checks[0]
    assert rule.check == "practical5.real_speedup" and rule.when_skipped == "exclude"


@pytest.mark.parametrize("assignment", ["practical4", "practical5", "practical6", "practical10"])
def test_practicals_are_worth_twelve_points(assignment, rubric_for):
    # 10 for the code, 2 for the answer sheet agreeing with it (<assignment>.report).
    rubric = rubric_for(assignment)
    assert rubric.total_points == 12
    assert rubric.item(f"{assignment}.report").points == 2


@pytest.mark.parametrize("assignment", ["practical4", "practical5", "practical6", "practical10"])
def test_practicals_text_answers_each_have_a_manual_item(assignment, rubric_for):
    from grader.answers.sheet import template_questions
    texts = {q.id for q in template_questions(assignment).values() if q.type == "text"}
    linked = {item.answer for item in rubric_for(assignment).items if item.is_manual}
    assert linked == texts


@pytest.mark.parametrize("assignment", sorted(EXPECTED_CHECKS))
def test_every_shipped_rubric_states_its_run_budget(assignment, rubric_for):
    """run_timeout_s = max(30, 4 x the reference's slowest run) (rubrics/README.md): at least
    the floor, and far below --check-timeout's 180 s, so a hang costs its checks only."""
    budget = rubric_for(assignment).run_timeout_s
    assert budget is not None and 30 <= budget <= 90, (assignment, budget)
