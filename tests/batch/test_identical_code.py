"""The class page's "Identical code" flag compares what each student added to the template, and
only where that is long enough not to be alike by chance (adv42 F2: every honest Practical 5
student, whose whole solution is the handout's one line, was listed with every other, and so was
a Practical 6 class following the template's hints). A real copy of a longer solution is still
flagged, its comments and docstring reworded."""
from __future__ import annotations

import re
from pathlib import Path

from grader.batch.similarity import MIN_ADDED_TOKENS, added_tokens
from tests.fixtures.planted_bugs import REFERENCE, TEMPLATE, apply_replacements
from tests.support import run_test_batch
from tests.support.fake_graders import make_submission

P5_TODO = '''    # TODO: wrap `model` in nn.DataParallel (one line).
    raise NotImplementedError(
        "TODO (Practical 5): wrap the model in nn.DataParallel so that each forward "
        "pass splits the batch over all visible GPUs; see the Practical 5 handout, "
        "DataParallel section")
'''
P6_TODOS = (
    '''    # TODO (Part 2): add the handout's print of this process's rank and local rank:
    #     print(f"Rank: {dist.get_rank()} | Local Rank: {local_rank}")
''', '''    # TODO: wrap `model` in DDP for this process's GPU (device_ids=[...]).
    raise NotImplementedError(
        "TODO (Practical 6): wrap the model in DDP with device_ids=[local_rank]; "
        "see the Practical 6 handout, DistributedDataParallel section")
''', '''    # TODO: fill in the per-rank batch size: BATCH_SIZE is the global batch,
    # shared out equally over all processes (dist.get_world_size()).
    #     x, y = get_batch(BATCH_SIZE // ..., DIM, device)
    raise NotImplementedError(
        "TODO (Practical 6): give each rank its share of the global batch with "
        "x, y = get_batch(BATCH_SIZE // <number of processes>, DIM, device); "
        "see the Practical 6 handout, data sharding")
''')


def _hand_in(subs: Path, key: str, rel: str, text: str) -> None:
    """An upload graded for Practical 4 by the fake grader, holding `rel` with `text`."""
    folder = make_submission(subs / key, score=5, extra=key)
    (folder / rel).parent.mkdir(parents=True, exist_ok=True)
    (folder / rel).write_text(text, encoding="utf-8")


def _flagged(subs: Path, out: Path) -> list[str]:
    """The class page's "Identical code" lines ("file: a, b"), after a batch of `subs`."""
    report = run_test_batch(subs, out, ["practical4"])
    assert report.progress.graded == len(list(subs.iterdir())), report.progress
    page = (out / "index.html").read_text(encoding="utf-8")
    section = page.split("<h3>Identical code")[1].split("<h3>")[0]
    assert f"only where it is {MIN_ADDED_TOKENS} tokens or more" in section, section
    return re.findall(r"<code>([\w/.]+)</code>: ([\w, ]+)</li>", section)


def _p5(line: str) -> str:
    text = (TEMPLATE / "practical5/practical5_dp.py").read_text(encoding="utf-8")
    return apply_replacements(text, [(P5_TODO, line)], "practical5_dp.py")


def test_two_honest_practical5_one_liners_are_not_identical_code(tmp_path):
    subs = tmp_path / "subs"
    _hand_in(subs, "alice", "practical5/practical5_dp.py",
             _p5("    # wrap for multi-GPU\n    model = nn.DataParallel(model)\n"))
    _hand_in(subs, "bob", "practical5/practical5_dp.py",
             _p5("    model = nn.DataParallel(model)  # Bob: split batch over all GPUs\n"))
    assert _flagged(subs, tmp_path / "out") == [], (
        "expected: no Identical-code flag for two honest Practical 5 students (the handout's one "
        "line is every right answer); observed: flagged; where to look: "
        "grader/batch/similarity.py MIN_ADDED_TOKENS and added_tokens")


def test_two_honest_practical6_scripts_following_the_hints_are_not_identical_code(tmp_path):
    subs = tmp_path / "subs"
    text = (TEMPLATE / "practical6/practical6_ddp.py").read_text(encoding="utf-8")
    for key, comment in (("carol", ""), ("dan", "    # print rank (Part 2)\n")):
        _hand_in(subs, key, "practical6/practical6_ddp.py", apply_replacements(text, [
            (P6_TODOS[0], comment + '    print(f"Rank: {dist.get_rank()} | Local Rank: {local_rank}")\n'),
            (P6_TODOS[1], "    model = DDP(model, device_ids=[local_rank])\n"),
            (P6_TODOS[2], "    x, y = get_batch(BATCH_SIZE // dist.get_world_size(), DIM, device)\n")],
            "practical6_ddp.py"))
    assert _flagged(subs, tmp_path / "out") == [], (
        "expected: no Identical-code flag for the three lines the Practical 6 template's hints "
        "spell out; observed: flagged; where to look: grader/batch/similarity.py")


def test_a_copied_hw3_solution_with_its_comments_and_docstring_reworded_is_flagged(tmp_path):
    subs = tmp_path / "subs"
    solution = (REFERENCE / "hw3/model_parallel.py").read_text(encoding="utf-8")
    _hand_in(subs, "erin", "hw3/model_parallel.py", solution)
    copy = apply_replacements(solution, [
        ('"""HW3: naive model parallelism with LargeLinearModelMP (Lecture 8\'s base code, tasks done).',
         '"""My HW3, written by me alone.'),
        ("        # Task 3: contiguous blocks whose sizes differ by at most one layer, the first\n",
         "        # spread the layers over the GPUs (my idea)\n"),
        ("            # Task 5: .to() returns x itself when it is already there; only a change of\n",
         "            # count the moves\n")], "hw3/model_parallel.py")
    _hand_in(subs, "fred", "hw3/model_parallel.py", copy)
    assert len(added_tokens(copy, (TEMPLATE / "hw3/model_parallel.py").read_text())) >= MIN_ADDED_TOKENS
    assert _flagged(subs, tmp_path / "out") == [("hw3/model_parallel.py", "erin, fred")], (
        "expected: the copied HW3 solution flagged (the same added code, comments and docstring "
        "aside); where to look: grader/batch/similarity.py code_tokens")


def test_the_practical10_reference_handed_in_by_two_students_is_flagged(tmp_path):
    subs = tmp_path / "subs"
    solution = (REFERENCE / "practical10/sample.py").read_text(encoding="utf-8")
    added = added_tokens(solution, (TEMPLATE / "practical10/sample.py").read_text(encoding="utf-8"))
    assert len(added) >= MIN_ADDED_TOKENS, (
        f"the reference's micro-batch loop adds {len(added)} tokens to the template: the "
        "threshold would let a copy of it through")
    for key in ("gus", "hana"):
        _hand_in(subs, key, "practical10/sample.py", solution)
    assert _flagged(subs, tmp_path / "out") == [("practical10/sample.py", "gus, hana")]
