"""Practical 10 with Part 5 done by a constant of the student's own (adv41 F1): a switch
`BREAK_MP = True` choosing between the handout's line and Part 5's in an if/else, or an offset
`STAGE1_OFFSET = 0` in `cuda:{local_rank + STAGE1_OFFSET}`, handed in set to Part 5's layout.
The change set back (part5_undone_edit) gave up on any sum given to device1, even in the branch
not taken or adding 0, so Parts 1 to 4 ran the broken layout: 7.25 of 12 where the same script
handed in with the switch off earned 10. The grader now sets the constant for each run
(second_stage_device.layout_switch, HandoutRuns.switch_set): the course's value for Parts 1 to
4, Part 5's for its run; and practical10.graded_as_handed_in says so.

The checks read only the script's text: here, the reference's sample.py with a student's edit.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from grader.checks import test_practical10 as p10
from grader.checks.second_stage_device import layout_switch
from tests.grading.test_practical10_handed_in_state import told

REFERENCE = Path(__file__).resolve().parents[2] / "reference" / "practical10" / "sample.py"
COURSE_LINE = '    device1 = torch.device(f"cuda:{local_rank + 2}")\n'
CONSTANTS = "SEED = 0\n"

IF_ELSE = ('    if BREAK_MP:\n        device1 = torch.device(f"cuda:{local_rank}")\n'
           '    else:\n        device1 = torch.device(f"cuda:{local_rank + 2}")\n')
IF_NOT = ('    if not MODEL_PARALLEL:\n        device1 = device0\n'
          '    else:\n        device1 = torch.device(f"cuda:{local_rank + 2}")\n')
IF_EXPRESSION = ('    device1 = torch.device(f"cuda:{local_rank if BREAK_MP else local_rank + 2}")'
                 '\n')
OFFSET = '    device1 = torch.device(f"cuda:{local_rank + STAGE1_OFFSET}")\n'


def script(line: str, constant: str) -> str:
    text = REFERENCE.read_text(encoding="utf-8")
    assert text.count(COURSE_LINE) == 1 and text.count(CONSTANTS) == 1
    return text.replace(COURSE_LINE, line).replace(CONSTANTS, CONSTANTS + constant)


def handed_in(tmp_path, line: str, constant: str) -> p10.HandoutRuns:
    path = tmp_path / "submission" / "practical10" / "sample.py"
    path.parent.mkdir(parents=True)
    path.write_text(script(line, constant), encoding="utf-8")
    return p10.HandoutRuns(runs=None, submission=path.parents[1])


@pytest.mark.parametrize("line, constant, course, broken", [
    (IF_ELSE, "BREAK_MP = True\n", {"BREAK_MP": False}, {}),
    (IF_ELSE, "BREAK_MP = False\n", {}, {"BREAK_MP": True}),
    (IF_NOT, "MODEL_PARALLEL: bool = False\n", {"MODEL_PARALLEL": True}, {}),
    (IF_EXPRESSION, "BREAK_MP = True\n", {"BREAK_MP": False}, {}),
    (OFFSET, "STAGE1_OFFSET = 0\n", {"STAGE1_OFFSET": 2}, {}),
    (OFFSET, "STAGE1_OFFSET = 1\n", {"STAGE1_OFFSET": 2}, {"STAGE1_OFFSET": 0}),
], ids=["if-else-on", "if-else-off", "if-not-device0", "if-expression", "offset-0", "offset-1"])
def test_parts_1_to_4_run_the_courses_layout_and_part_5_the_broken_one(
        tmp_path, line, constant, course, broken):
    handout = handed_in(tmp_path, line, constant)
    runs = {"Parts 1 to 4": handout.spec(), "Part 5": handout.spec(broken=True)}
    observed = {part: ({k: v for k, v in (spec["sets"] or {}).items()
                        if k not in p10.DEFAULTS}, spec["edits"]) for part, spec in runs.items()}
    assert observed == {"Parts 1 to 4": (course, ()), "Part 5": (broken, ())}, (
        f"expected the layout's constant set for each run (Parts 1 to 4: {course}, Part 5: "
        f"{broken}) and no text edit; observed (sets, edits) {observed}: see "
        "second_stage_device.layout_switch and HandoutRuns.switch_set")
    assert handout.can_break


@pytest.mark.parametrize("line, constant", [
    (COURSE_LINE, ""),                                    # the handout's line: the edits' case
    (OFFSET, "STAGE1_OFFSET = 2\n"),                      # the course's already: Part 5's edit
    # The other branch is no layout of Part 5's: no switch between the two.
    (IF_ELSE.replace('f"cuda:{local_rank}"', '"cpu"'), "BREAK_MP = True\n"),
    # Assigned again inside the script: no constant the runner can set.
    (IF_ELSE, "BREAK_MP = True\nBREAK_MP = not BREAK_MP\n"),
    (IF_ELSE, "BREAK_MP = 'yes'\n"),                      # no boolean
], ids=["handout-line", "offset-2", "other-branch-cpu", "reassigned", "not-a-bool"])
def test_no_switch_where_no_constant_chooses_the_layout(line, constant):
    found = layout_switch(script(line, constant))
    assert found is None, f"expected no layout switch in:\n{line}{constant}observed {found}"


def test_the_offset_left_at_2_keeps_part_5s_edit(tmp_path):
    handout = handed_in(tmp_path, OFFSET, "STAGE1_OFFSET = 2\n")
    assert handout.spec()["edits"] == () and handout.spec()["sets"] is None
    assert handout.spec(broken=True)["edits"] == (
        (OFFSET.rstrip("\n"), OFFSET.rstrip("\n").replace(" + STAGE1_OFFSET", "")),)


def test_the_report_says_which_value_each_part_ran_with(tmp_path):
    text, flags = told(handed_in(tmp_path, IF_ELSE, "BREAK_MP = True\n"))
    line = 1 + script(IF_ELSE, "").split(CONSTANTS)[0].count("\n") + 1
    assert (f"your practical10/sample.py was handed in with Part 5's layout chosen by BREAK_MP "
            f"= True (line {line}), so it was graded as the handout runs each part: Parts 1 to "
            "4, and your answers about them, ran with BREAK_MP = False, the course's layout "
            "(stage 1 on cuda:{local_rank + 2}); Part 5's run, and your answer about it "
            "(broken.gpus_in_use), with BREAK_MP = True") in text, text
    assert len(flags) == 1 and "the student's answers" in flags[0], flags
    text, _ = told(handed_in(tmp_path / "offset", OFFSET, "STAGE1_OFFSET = 0\n"))
    assert "ran with STAGE1_OFFSET = 2, the course's layout" in text, text
    assert "Part 5's run, and your answer about it (broken.gpus_in_use), with STAGE1_OFFSET " \
        "= 0" in text, text


def test_the_switch_handed_in_at_the_courses_layout_says_nothing(tmp_path):
    flags: list[str] = []
    p10.test_graded_as_the_handout_runs_it(handed_in(tmp_path, IF_ELSE, "BREAK_MP = False\n"),
                                           flags.append)
    assert flags == []


# -- the switch in other honest spellings (eng_p10sw) ---------------------------------------------
# Each had fallen back to the change set back, which gives up on a sum given to device1: handed
# in set to Part 5's layout, Parts 1 to 4 ran it (2.75 of 12 lost).

def if_else(test: str) -> str:
    return IF_ELSE.replace("if BREAK_MP:", f"if {test}:")


ARGPARSE_LINES = ('import argparse\n', 'parser = argparse.ArgumentParser()\n'
                  'parser.add_argument("--break-mp", action="store_true"{default})\n')


def argparse_script(default: str = "", test: str = "args.break_mp") -> str:
    """The switch a command-line flag: the graded runs pass no arguments (its default)."""
    text = script(if_else(test), "\n" + ARGPARSE_LINES[1].format(default=default))
    text = text.replace("import torch\n", ARGPARSE_LINES[0] + "import torch\n", 1)
    return text.replace("def main():\n", "def main():\n    args = parser.parse_args()\n", 1)


@pytest.mark.parametrize("line, constant, course, broken", [
    (if_else("BREAK_MP is True"), "BREAK_MP = True\n", {"BREAK_MP": False}, {}),
    (if_else("BREAK_MP == True"), "BREAK_MP = True\n", {"BREAK_MP": False}, {}),
    (if_else("BREAK_MP is not False"), "BREAK_MP = False\n", {}, {"BREAK_MP": True}),
    (if_else("not KEEP_MP"), "KEEP_MP = False\n", {"KEEP_MP": True}, {}),
    # Assigned twice at the top level (the runner's --set rewrites both): set in every run.
    (IF_ELSE, "BREAK_MP = False\nBREAK_MP = True  # Part 5\n", {"BREAK_MP": False},
     {"BREAK_MP": True}),
    # An offset written as an expression the grader works out.
    (OFFSET, "STAGE1_OFFSET = 1 - 1\n", {"STAGE1_OFFSET": 2}, {"STAGE1_OFFSET": 0}),
    (OFFSET, "NUM_GPUS = 4\nSTAGE1_OFFSET = NUM_GPUS // 2 - 2\n", {"STAGE1_OFFSET": 2},
     {"STAGE1_OFFSET": 0}),
    (OFFSET, "STAGE1_OFFSET = 2\nSTAGE1_OFFSET = 0\n", {"STAGE1_OFFSET": 2},
     {"STAGE1_OFFSET": 0}),
], ids=["is-true", "equals-true", "is-not-false", "not-keep", "assigned-twice", "offset-1-1",
        "offset-of-gpus", "offset-twice"])
def test_other_spellings_of_the_switch_are_set_for_each_run(tmp_path, line, constant, course,
                                                            broken):
    test_parts_1_to_4_run_the_courses_layout_and_part_5_the_broken_one(
        tmp_path, line, constant, course, broken)


FLAG = 'parser.add_argument("--break-mp", action="store_true"{})'


@pytest.mark.parametrize("default, test, course, broken", [
    ("", "args.break_mp", None, ", default=True"),
    (", default=True", "args.break_mp", ", default=False", None),
    ("", "args.break_mp is True", None, ", default=True"),
    ("", "not args.break_mp", ", default=True", None),
], ids=["flag", "flag-default-on", "flag-is-true", "not-flag"])
def test_a_flags_default_is_set_for_each_run(tmp_path, default, test, course, broken):
    """The graded runs pass no arguments: the flag's default is its value, set by an edit of
    its add_argument call alone (never by an argument the script would see)."""
    handout = handed_in_text(tmp_path, argparse_script(default, test))
    observed = {part: (spec["sets"], spec["edits"]) for part, spec in
                {"Parts 1 to 4": handout.spec(), "Part 5": handout.spec(broken=True)}.items()}
    expected = {part: (None, () if value is None else ((FLAG.format(default),
                                                         FLAG.format(value)),))
                for part, value in {"Parts 1 to 4": course, "Part 5": broken}.items()}
    assert observed == expected, (
        f"expected the flag's default set by an edit of its add_argument call for each run: "
        f"{expected}; observed {observed}: see grader/checks/switch_argument.py")


def handed_in_text(tmp_path, text: str, **beside: str) -> p10.HandoutRuns:
    path = tmp_path / "submission" / "practical10" / "sample.py"
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    for name, body in beside.items():
        (path.parent / name).write_text(body, encoding="utf-8")
    return p10.HandoutRuns(runs=None, submission=path.parents[1])


@pytest.mark.parametrize("imported, test, key", [
    ("import config\n", "config.BREAK_MP", "config.BREAK_MP"),
    ("import config as cfg\n", "cfg.BREAK_MP", "cfg.BREAK_MP"),
    ("from config import BREAK_MP\n", "BREAK_MP", "BREAK_MP"),
], ids=["module", "module-as", "from-module"])
def test_a_switch_in_an_own_config_module_is_set_after_its_import(tmp_path, imported, test, key):
    """The runner's --set rewrites the script alone: the value is assigned right after the
    import, on its line (no line of the script moves)."""
    text = script(if_else(test), "").replace("import torch\n", imported + "import torch\n", 1)
    handout = handed_in_text(tmp_path, text, **{"config.py": "BREAK_MP = True  # Part 5\n"})
    line = imported.rstrip("\n")
    assert (handout.spec()["sets"], handout.spec()["edits"]) == (
        None, ((f"\n{line}\n", f"\n{line}; {key} = False\n"),)), handout.spec()
    assert handout.spec(broken=True)["edits"] == (), handout.spec(broken=True)
    text_told, _ = told(handout)
    assert f"chosen by {key} = True (line 1 of config.py)" in text_told, text_told


@pytest.mark.parametrize("text", [
    # The namespace's value set by the script: the default is not what the run reads.
    argparse_script().replace("    args = parser.parse_args()\n",
                              "    args = parser.parse_args()\n    args.break_mp = True\n"),
    argparse_script().replace("parser.parse_args()", 'parser.parse_args(["--break-mp"])'),
    argparse_script().replace("import argparse\n", "import argparse\nimport sys\n").replace(
        "parser = argparse", 'sys.argv.append("--break-mp")\nparser = argparse'),
    argparse_script().replace('action="store_true"', 'action="store_true", type=bool'),
    argparse_script().replace("    args = parser.parse_args()\n",
                              "    args = parser.parse_args()\n    print(vars(args))\n"),
    # Set again in a function: no constant the runner can set.
    script(IF_ELSE, "BREAK_MP = True\n\n\ndef part5():\n    global BREAK_MP\n"
           "    BREAK_MP = False\n"),
    script(IF_ELSE, "BREAK_MP = None\n"),
    script(if_else("BREAK_MP is None"), "BREAK_MP = True\n"),
], ids=["namespace-assigned", "parsed-from-a-list", "argv-written", "flag-with-a-type",
        "namespace-read-whole", "set-in-a-function", "none", "is-none"])
def test_no_switch_where_something_else_may_give_it_its_value(text):
    found = layout_switch(text)
    assert found is None, f"expected no layout switch; observed {found}"


def test_the_report_says_where_else_the_switch_is_read(tmp_path):
    line = OFFSET + '    print(f"stage 1 is {STAGE1_OFFSET} GPUs further")\n'
    text, _ = told(handed_in(tmp_path, line, "STAGE1_OFFSET = 0\n"))
    printed = 1 + script(line, "STAGE1_OFFSET = 0\n").split("    print(f\"stage 1 is")[0].count(
        "\n")
    assert f"the value set reached every read of STAGE1_OFFSET, also on line {printed}, " \
        "besides the layout's choice" in text, text
