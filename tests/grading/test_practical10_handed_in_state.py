"""Practical 10 handed in as the handout leaves it (a student's audit): Part 5 asks to replace
`device1 = torch.device(f"cuda:{local_rank + 2}")` with `... f"cuda:{local_rank}" ...`, and
Parts 2 and 3 leave the constants at the last values tried. The grader sets both back for the
other parts' runs (practical_measures.restored_layout_edit, HandoutRuns) and runs Part 5 with
the student's line; practical10.graded_as_handed_in says so, for no point, to the student (its
feedback) and to the instructor (a flag), and says nothing of a script left as the template
has it.

The check reads only the script's text: here, the reference's sample.py with the handout's
edits.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from grader.checks import test_practical10 as p10
from grader.scoring import default_rubrics_dir, load_rubric

REFERENCE = Path(__file__).resolve().parents[2] / "reference" / "practical10" / "sample.py"
COURSE_LINE = '    device1 = torch.device(f"cuda:{local_rank + 2}")\n'
PART5_LINE = '    device1 = torch.device(f"cuda:{local_rank}")\n'


def handed_in(tmp_path, *edits) -> p10.HandoutRuns:
    text = REFERENCE.read_text(encoding="utf-8")
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    script = tmp_path / "submission" / "practical10" / "sample.py"
    script.parent.mkdir(parents=True)
    script.write_text(text, encoding="utf-8")
    return p10.HandoutRuns(runs=None, submission=script.parents[1])


def told(handout) -> tuple[str, list[str]]:
    flags: list[str] = []
    with pytest.raises(AssertionError) as raised:
        p10.test_graded_as_the_handout_runs_it(handout, flags.append)
    return str(raised.value), flags


def test_the_handouts_own_state_says_nothing(tmp_path):
    flags: list[str] = []
    p10.test_graded_as_the_handout_runs_it(handed_in(tmp_path), flags.append)
    assert flags == []


def test_part5s_change_left_in_says_what_ran_with_which_line(tmp_path):
    handout = handed_in(tmp_path, (COURSE_LINE, PART5_LINE))
    line = 1 + REFERENCE.read_text(encoding="utf-8").split(COURSE_LINE)[0].count("\n")
    text, flags = told(handout)
    assert text.startswith("Expected: worth no point: this says how your script was graded")
    assert (f"Observed: your practical10/sample.py was handed in with Part 5's change in (line "
            f"{line}: `device1 = torch.device(f\"cuda:{{local_rank}}\")`), so it was graded as "
            "the handout runs each part: Parts 1 to 4, and your answers about them, ran with "
            "the handout's line put back (`device1 = torch.device(f\"cuda:{local_rank + 2}\")`); "
            "Part 5's run, and your answer about it (broken.gpus_in_use), with your line as "
            "written. This costs nothing, and your file was not changed") in text
    assert "Where to look: nothing to change in practical10/sample.py" in text
    assert "BATCH_SIZE = 128" not in text
    # The instructor's flag says the same of the student.
    assert len(flags) == 1 and "the student's line as written" in flags[0], flags
    assert "your" not in flags[0] and "(no point lost)" in flags[0]


def test_the_constants_left_at_the_last_values_tried_are_said_too(tmp_path):
    handout = handed_in(tmp_path, ("BATCH_SIZE = 64\n", "BATCH_SIZE = 128\n"),
                        ("MICRO_BATCHES = 4\n", "MICRO_BATCHES = 8\n"),
                        (COURSE_LINE, PART5_LINE.replace("\n", "   # Part 5: was + 2\n")))
    text, flags = told(handout)
    assert ("handed in with Part 5's change in (line" in text
            and "# Part 5: was + 2`) and BATCH_SIZE = 128, MICRO_BATCHES = 8 (the last values "
                "Parts 2 and 3 try)" in text), text
    assert ("each run had the BATCH_SIZE and MICRO_BATCHES its part asks for (BATCH_SIZE = 64, "
            "MICRO_BATCHES = 4 where the handout does not change them)") in text
    assert "MICRO_BATCHES = 8" in flags[0]


def test_a_constant_left_alone_is_said_without_part5(tmp_path):
    text, _ = told(handed_in(tmp_path, ("MICRO_BATCHES = 4\n", "MICRO_BATCHES = 2\n")))
    assert "handed in with MICRO_BATCHES = 2 (the last values" in text
    assert "Part 5" not in text.split("Observed:")[1]


def test_the_note_is_worth_no_point_beside_parts_4_and_5():
    rubric = load_rubric(default_rubrics_dir() / "practical10.yaml")
    rules = {rule.check: (item.id, rule.points) for item in rubric.items for rule in item.checks}
    assert rules["practical10.graded_as_handed_in"] == ("practical10.edge_cases", 0)
    assert rubric.total_points == 12
