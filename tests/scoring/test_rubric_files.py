"""The shipped rubrics load, add up, and name exactly the checks grader/checks implements."""
from pathlib import Path

import pytest

from grader.scoring import load_rubrics

# The check ids agreed with grader/checks (see the brief); a typo on either side would
# otherwise make a check "did not run" for every student.
REFERENCE = Path(__file__).resolve().parents[2] / "reference"
EXPECTED_CHECKS = {
    "practical4": {"practical4.chunk_shapes", "practical4.chunk_shapes_reported",
                   "practical4.chunks_equal_full", "practical4.uneven_batch", "practical4.layer_devices_reported",
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
                   "practical6.rank_printed",
                   "practical6.rank_gpu_table_reported",
                   "practical6.split_automatically_reported",
                   "practical6.timing_table_reported", "practical6.usage_table_reported",
                   "practical6.world_size",
                   "practical6.world_size_reported"},
    "practical10": {"practical10.batch_pattern_reported",
                    "practical10.broken_gpus_reported",
                    "practical10.broken_layout_one_gpu", "practical10.gpu_pair_per_rank",
                    "practical10.graded_as_handed_in",
                    "practical10.gpus_per_rank_reported",
                    "practical10.gradient_equals_full_batch",
                    "practical10.micro_batch_size_reported", "practical10.micro_batches", "practical10.uneven_micro_batches",
                    "practical10.micro_batches_reported",
                    "practical10.micro_table_reported",
                    "practical10.num_processes_reported",
                    "practical10.one_process_per_replica",
                    "practical10.rank_gpus_reported", "practical10.single_process",
                    "practical10.sync_once_per_step"},
    "hw3": {"hw3.task1.layers_reported", "hw3.task1.transfer_reported",
            "hw3.task2.table_reported", "hw3.task2.speed_answer", "hw3.task2.trend",
            "hw3.task3.all_gpus_used", "hw3.task3.balanced", "hw3.task3.output_matches",
            "hw3.task3.contiguous", "hw3.task4.table_reported", "hw3.task4.utilised_answer",
            "hw3.task4.faster_answer", "hw3.task4.no_speedup", "hw3.task5.counts_printed",
            "hw3.task5.counts_reported", "hw3.task5.growth_answer", "hw3.script_runs"},
}


def test_every_assignment_has_a_rubric():
    assert set(load_rubrics()) == set(EXPECTED_CHECKS)


@pytest.mark.parametrize("assignment", sorted(EXPECTED_CHECKS))
def test_rubric_names_exactly_the_implemented_checks(assignment):
    rubric = load_rubrics()[assignment]
    assert sorted(rubric.check_ids) == sorted(EXPECTED_CHECKS[assignment])
    assert rubric.gpus >= 1
    assert any(item.is_manual for item in rubric.items), "written questions need a manual item"


def test_hw3_is_five_tasks_of_three_points(rubric_for):
    """The handout: "Task N (3 Points)", five tasks. Each task's points are its automatic item
    (`hw3.taskN`), its written answer (`hw3.taskN.explanation`, manual) and, for Tasks 2 and
    4, a measurement worth nothing (`hw3.taskN.measured`)."""
    rubric = rubric_for("hw3")
    assert rubric.total_points == 15
    for n in range(1, 6):
        own = [item for item in rubric.items if item.id.startswith(f"hw3.task{n}")]
        assert sum(item.points for item in own) == 3, f"Task {n}"
        written = [item for item in own if item.is_manual]
        assert [(item.id, item.answer) for item in written] == [
            (f"hw3.task{n}.explanation", f"task{n}.explanation")]
        assert written[0].points > 0 and written[0].guidance, "a person grades it by the guidance"
    measured = {item.id: item.points for item in rubric.items if item.id.endswith(".measured")}
    assert measured == {"hw3.task2.measured": 0, "hw3.task4.measured": 0}


def test_hw3_runnable_code_is_shown_for_no_points(rubric_for):
    """The handout's "Code files ... Must be runnable" carries no points of its own: shown,
    flagged, and any penalty left to the course (an instructor's audit)."""
    item = rubric_for("hw3").item("hw3.runnable")
    assert item.points == 0 and [c.check for c in item.checks] == ["hw3.script_runs"]


def test_hw3_contiguity_is_shown_for_no_points(rubric_for):
    """Task 3's handout asks for an even spread only: blocks are a 0-point item beside it."""
    rubric = rubric_for("hw3")
    assert "hw3.task3.contiguous" not in [c.check for c in rubric.item("hw3.task3").checks]
    blocks = rubric.item("hw3.task3.blocks")
    assert blocks.points == 0 and [c.check for c in blocks.checks] == ["hw3.task3.contiguous"]
    assert "no points" in blocks.title and "round-robin" in blocks.feedback.failed
    assert "costs no point" in blocks.feedback.failed
    assert sum(c.points for c in rubric.item("hw3.task3").checks) == 2


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


def test_hw3_is_due_at_2359_tartu_summer_time(rubric_for):
    import datetime as dt

    from grader.scoring.late import lateness
    rubric = rubric_for("hw3")
    assert rubric.timezone == "Europe/Tallinn"
    assert rubric.due.isoformat() == "2026-04-30T23:59:00+03:00"  # EEST on 30 April
    on_time = dt.datetime.fromisoformat("2026-04-30T20:58:00+00:00")
    an_hour_after = dt.datetime.fromisoformat("2026-04-30T23:30:00+02:00")  # 00:30 in Tartu
    assert lateness(on_time, rubric.due, rubric.late_policy).days_late == 0
    assert lateness(an_hour_after, rubric.due, rubric.late_policy).days_late == 1


@pytest.mark.parametrize("assignment", sorted(EXPECTED_CHECKS))
def test_every_shipped_rubric_states_its_run_budget(assignment, rubric_for):
    """run_timeout_s = max(30, 4 x the reference's slowest run) (rubrics/README.md): at least
    the floor, and far below --check-timeout's 180 s, so a hang costs its checks only."""
    budget = rubric_for(assignment).run_timeout_s
    assert budget is not None and 30 <= budget <= 90, (assignment, budget)


def test_only_practical4s_scripts_never_train(rubric_for):
    """`trains: false` spares a grading the import of torch._dynamo (rubrics/README.md); the
    other assignments' scripts build an optimizer or DDP, whose first use imports it."""
    assert {a for a in sorted(EXPECTED_CHECKS) if not rubric_for(a).trains} == {"practical4"}
    for assignment in sorted(EXPECTED_CHECKS):
        scripts = (REFERENCE / assignment).glob("*.py")
        trains = any(word in path.read_text(encoding="utf-8") for path in scripts
                     for word in ("optim", "backward(", "DistributedDataParallel"))
        assert trains == rubric_for(assignment).trains, assignment
