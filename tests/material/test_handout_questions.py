"""Every question of each practical's handout is on its answer sheet, and graded: a factual
answer by a check against the student's own runs, a written one by a manual item with points.

HANDOUT_QUESTIONS copies the handouts' questions (and tables to fill) word for word; where the
course's handouts are at hand (/work/shared/handouts, or PDL_HANDOUTS), the test also checks
that each one is really there, so a change of handout shows up here.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from grader.answers.sheet import template_questions
from grader.scoring import default_rubrics_dir, load_rubric

ROOT = Path(__file__).resolve().parents[2]
HANDOUTS = Path(os.environ.get("PDL_HANDOUTS", "/work/shared/handouts"))

# handout text -> the answer-sheet ids that answer it
HANDOUT_QUESTIONS = {
    "practical4": {
        "Which approach is easier to implement?": ["questions.easier"],
        "Which approach helps when the model is too large?": ["questions.model_too_large"],
        "What is the main overhead in model parallelism?": ["questions.mp_overhead"],
    },
    "practical5": {
        "Step Time (sec)Total Time (sec)": ["timing.table"],
        "Did training become faster?": ["timing.faster"],
        "Is the speedup proportional to number of GPUs?": ["timing.proportional"],
        "What differences do you observe in memory usage?": ["memory.most_memory_gpu",
                                                             "memory.differences"],
        "Split per GPU": ["dp.split_per_gpu"],
        "Is the batch split manually in your code?": ["dp.split_manually"],
        "How does DataParallel divide the batch across GPUs?": ["dp.split_explanation"],
        "When is the split equal?": ["dp.split_equal_when"],
        "When is it uneven?": ["dp.split_uneven_when"],
        "Why does this happen?": ["dp.split_why"],
        "watch -n 1 nvidia-smi": ["usage.table"],
        "Is GPU 0 more loaded than others?": ["usage.gpu0_more_loaded"],
        "Are all GPUs equally utilized?": ["usage.equally_utilized"],
        "Where could a bottleneck occur?": ["usage.bottleneck"],
        "What is the main advantage of DataParallel?": ["discussion.advantage"],
        "What is its main limitation?": ["discussion.limitation"],
        "Why might it not scale well to many GPUs?": ["discussion.scaling"],
    },
    "practical6": {
        "Output appears from multiple ranks": ["ddp.world_size"],
        "Rank 0 → GPU 0": ["ddp.rank_to_gpu"],
        "Is data split automatically?": ["data.split_automatically"],
        "How is batch size distributed across GPUs?": ["ddp.per_rank_batch"],
        "When does communication happen?": ["comm.when"],
        "Why is it needed?": ["comm.why"],
        "GPU utilization": ["usage.table"],
        "Are GPUs more balanced?": ["usage.more_balanced"],
        "Is GPU 0 still a bottleneck?": ["usage.gpu0_bottleneck"],
        "AspectDPDDP": ["compare.table"],
        "Which is faster?": ["compare.faster", "timing.table"],
        "Which scales better?": ["compare.scales_better"],
        "Why?": ["compare.why"],
    },
    "practical10": {
        "Q1) How many processes are running?": ["hybrid.num_processes"],
        "Q2) Which GPUs does each rank use?": ["hybrid.rank_gpus", "hybrid.gpus_per_rank"],
        "Q3) How many micro-batches are processed?": ["hybrid.micro_batches_per_step",
                                                      "hybrid.micro_batch_size"],
        "Q4) When does synchronization happen?": ["hybrid.sync_when"],
        "Q1) What changes in the output?": ["micro.output_changes", "broken.output_changes"],
        "Q2) How many forward/backward steps now?": ["micro.table"],
        "Q1) Does execution pattern change?": ["batch.pattern_changes"],
        "Q2) What stays the same?": ["batch.what_stays"],
        "Q1) What happens to [Rank 1]?": ["single.rank1"],
        "Q2) Is synchronization still happening?": ["single.sync"],
        "Q2) Are multiple GPUs still used?": ["broken.gpus_in_use", "broken.output_changes"],
    },
}


def graded_ids(assignment: str) -> dict[str, str]:
    """Sheet id -> how it is graded: "manual" (an item with points) or "check" (named in the
    assignment's check module, which compares it with the student's runs)."""
    rubric = load_rubric(default_rubrics_dir() / f"{assignment}.yaml")
    found = {item.answer: "manual" for item in rubric.items if item.is_manual and item.points > 0}
    source = (ROOT / "grader" / "checks" / f"test_{assignment}.py").read_text()
    for qid in template_questions(assignment):
        if re.search(rf'"{re.escape(qid)}"', source):
            found.setdefault(qid, "check")
    return found


@pytest.mark.parametrize("assignment", sorted(HANDOUT_QUESTIONS))
def test_every_handout_question_is_on_the_sheet_and_graded(assignment):
    sheet = template_questions(assignment)
    graded = graded_ids(assignment)
    for question, ids in HANDOUT_QUESTIONS[assignment].items():
        for qid in ids:
            assert qid in sheet, f"{assignment}: '{question}' has no {qid} on the answer sheet"
            assert qid in graded, f"{assignment}: {qid} ('{question}') is graded nowhere"


@pytest.mark.parametrize("assignment", sorted(HANDOUT_QUESTIONS))
def test_every_sheet_answer_is_graded(assignment):
    graded = graded_ids(assignment)
    ungraded = [qid for qid in template_questions(assignment) if qid not in graded]
    assert not ungraded, f"{assignment}: answers no check or manual item grades: {ungraded}"


@pytest.mark.parametrize("assignment", sorted(HANDOUT_QUESTIONS))
def test_the_questions_are_the_handouts(assignment):
    handout = HANDOUTS / f"{assignment}.txt"
    if not handout.is_file():
        pytest.skip(f"the course's handout is not here ({handout}); set PDL_HANDOUTS")
    text = handout.read_text(encoding="utf-8")
    missing = [q for q in HANDOUT_QUESTIONS[assignment] if q not in text]
    assert not missing, f"{assignment}: not in the handout: {missing}"
