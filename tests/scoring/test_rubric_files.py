"""The shipped rubrics load, add up, and name exactly the checks grader/checks implements."""
import pytest

from grader.scoring import load_rubrics

# The check ids agreed with grader/checks (see the brief); a typo on either side would
# otherwise make a check "did not run" for every student.
EXPECTED_CHECKS = {
    "practical4": {"practical4.chunk_shapes", "practical4.chunk_shapes_reported",
                   "practical4.chunks_equal_full", "practical4.layer_devices_reported",
                   "practical4.mp_layer_devices", "practical4.mp_one_transfer",
                   "practical4.mp_output_shape", "practical4.one_gpu_message",
                   "practical4.output_shape_reported",
                   "practical4.outputs_equal_reported", "practical4.transfers_reported"},
    "practical5": {"practical5.dp_loss_equals_single",
                   "practical5.equally_utilized_reported", "practical5.faster_reported",
                   "practical5.final_loss_equal_reported", "practical5.gathered_on_gpu0",
                   "practical5.gpu0_more_loaded_reported", "practical5.gpu0_most_memory",
                   "practical5.most_memory_gpu_reported",
                   "practical5.proportional_reported", "practical5.replicated",
                   "practical5.split_manually_reported", "practical5.split_sizes",
                   "practical5.split_table_reported", "practical5.timing_table_reported",
                   "practical5.usage_table_reported"},
    "practical6": {"practical6.compare_table_reported", "practical6.different_data",
                   "practical6.faster_reported", "practical6.gpu0_bottleneck_reported",
                   "practical6.grads_synchronised", "practical6.more_balanced_reported",
                   "practical6.params_equal_after_step", "practical6.per_rank_batch",
                   "practical6.per_rank_batch_reported", "practical6.rank_device",
                   "practical6.rank_gpu_table_reported",
                   "practical6.split_automatically_reported",
                   "practical6.timing_table_reported", "practical6.usage_table_reported",
                   "practical6.world_size",
                   "practical6.world_size_reported"},
    "practical10": {"practical10.batch_pattern_reported",
                    "practical10.broken_gpus_reported",
                    "practical10.broken_layout_one_gpu", "practical10.gpu_pair_per_rank",
                    "practical10.gpus_per_rank_reported",
                    "practical10.gradient_equals_full_batch",
                    "practical10.micro_batch_size_reported", "practical10.micro_batches",
                    "practical10.micro_batches_reported",
                    "practical10.micro_table_reported",
                    "practical10.num_processes_reported",
                    "practical10.one_process_per_replica",
                    "practical10.rank_gpus_reported", "practical10.single_process",
                    "practical10.sync_once_per_step"},
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


def test_no_practical_check_asks_for_a_speed_up(rubric_for):
    # The course expects none for Practical 5's small model: "did it get faster?" is an answer
    # compared with the student's own runs (practical5.faster_reported), never a requirement.
    for assignment in ("practical4", "practical5", "practical6", "practical10"):
        assert not [c for c in rubric_for(assignment).check_ids if "speedup" in c]


@pytest.mark.parametrize("assignment", ["practical4", "practical5", "practical6", "practical10"])
def test_practicals_are_worth_twelve_points(assignment, rubric_for):
    # The code, the answers checked against it (<assignment>.report) and the written answers
    # (manual items with points): rubrics/README.md gives the split of each.
    rubric = rubric_for(assignment)
    assert rubric.total_points == 12
    assert all(item.points > 0 for item in rubric.items if item.is_manual)
    assert 2 <= rubric.item(f"{assignment}.report").points <= 3


@pytest.mark.parametrize("assignment", ["practical4", "practical5", "practical6", "practical10"])
def test_practicals_text_answers_each_have_a_manual_item(assignment, rubric_for):
    from grader.answers.sheet import template_questions
    texts = {q.id for q in template_questions(assignment).values() if q.type == "text"}
    linked = {item.answer for item in rubric_for(assignment).items if item.is_manual}
    assert linked == texts
