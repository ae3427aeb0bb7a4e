"""Practical 10, Part 5: the line change found by the script's syntax tree alone
(second_stage_device), in every spelling students write, and cut from the text so that the
runner can make it (its OLD must occur once: grader/vgpu/script_edits.py).

Text patterns had found `device1 = ...` lines by regular expressions beside the tree reader; a
script quoting the handout's line in a comment (`#   (was device1 = torch.device(f"cuda:
{local_rank + 2}"))`) had its edit's old text occur twice, and Part 5's run never started.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from grader.checks import practical_measures as pm
from grader.vgpu.script_edits import apply_edits

REFERENCE = Path(__file__).resolve().parents[2] / "reference" / "practical10" / "sample.py"
PROLOGUE = ('import os\nimport torch\n\nlocal_rank = int(os.environ["LOCAL_RANK"])\n'
            'world_size = int(os.environ["WORLD_SIZE"])\n')
COURSE_LINE = '    device1 = torch.device(f"cuda:{local_rank + 2}")\n'
PART5_LINE = '    device1 = torch.device(f"cuda:{local_rank}")\n'


def changed_by_part5(source: str) -> str:
    """The script as Part 5's run compiles it (the runner's edit), or a failure saying why."""
    edit = pm.broken_layout_edit(source)
    assert edit is not None, f"expected Part 5's change to be found; observed none in:\n{source}"
    return apply_edits(source, "sample.py", [edit])


@pytest.mark.parametrize("line, changed", [
    ('device1 = torch.device(f"cuda:{local_rank + 2}")',
     'device1 = torch.device(f"cuda:{local_rank}")'),
    ('device1 = torch.device(f"cuda:{2 + local_rank}")',
     'device1 = torch.device(f"cuda:{local_rank}")'),
    ('device1 = torch.device(f"cuda:{local_rank + world_size}")',
     'device1 = torch.device(f"cuda:{local_rank}")'),
    ('device1 = torch.device("cuda", local_rank + 2)',
     'device1 = torch.device("cuda", local_rank)'),
    ('device1 = torch.device("cuda:" + str(local_rank + 2))',
     'device1 = torch.device("cuda:" + str(local_rank))'),
    ('device1 = torch.device("cuda:{}".format(local_rank + 2))',
     'device1 = torch.device("cuda:{}".format(local_rank))'),
    ('device1 = torch.device("cuda:%d" % (local_rank + 2))',
     'device1 = torch.device("cuda:%d" % (local_rank))'),
    ('device1 = local_rank + 2', 'device1 = local_rank'),
    ('device1: torch.device = torch.device(f"cuda:{local_rank + 2}")',
     'device1: torch.device = torch.device(f"cuda:{local_rank}")'),
    ('device0, device1 = torch.device("cuda", local_rank), torch.device("cuda", local_rank + 2)',
     'device0, device1 = torch.device("cuda", local_rank), torch.device("cuda", local_rank)'),
    ('device0, device1 = [torch.device("cuda", local_rank + 2 * s) for s in range(2)]',
     'device0, device1 = [torch.device("cuda", local_rank) for s in range(2)]'),
    ('device1 = torch.device(f"cuda:{local_rank + 2}")  # was local_rank + 2, cuda:{x}',
     'device1 = torch.device(f"cuda:{local_rank}")  # was local_rank + 2, cuda:{x}'),
    ('stages = {"s0": torch.device("cuda", local_rank),\n'
     '          "s1": torch.device("cuda", local_rank + 2)}',
     'stages = {"s0": torch.device("cuda", local_rank),\n'
     '          "s1": torch.device("cuda", local_rank)}'),
    ('stage1 = nn.Linear(4, 4).to(f"cuda:{local_rank + 2}")',
     'stage1 = nn.Linear(4, 4).to(f"cuda:{local_rank}")'),
    ('h = torch.zeros(4, device=f"cuda:{local_rank + 2}")',
     'h = torch.zeros(4, device=f"cuda:{local_rank}")'),
], ids=["handout", "2 + rank", "+ world_size", "torch.device(cuda, n)", "str()", ".format()",
        "% formatting", "the GPU number", "annotated", "two targets", "offset inside a product",
        "a comment holding sums", "a dict of devices", ".to(f-string)", "device= keyword"])
def test_part5_is_the_one_sum_of_the_rank_and_an_offset(line, changed):
    source = f"{PROLOGUE}{line}\n"
    assert changed_by_part5(source) == f"{PROLOGUE}{changed}\n"


def test_the_handouts_line_quoted_in_a_comment_is_left_alone():
    """The line itself quoted in a comment: the edit's old text must still occur once."""
    source = (f"{PROLOGUE}def main():\n    # Part 5 replaces\n"
              f"    #     {COURSE_LINE.strip()}\n    # by\n    #     {PART5_LINE.strip()}\n"
              f"{COURSE_LINE}    return device1\n")
    code = source.rpartition(COURSE_LINE)
    assert changed_by_part5(source) == code[0] + PART5_LINE + code[2]


def test_device1s_own_sum_comes_before_sums_elsewhere():
    """The handout's line decides where the code has it; another sum (a spare tensor's device)
    does not make the change ambiguous."""
    source = (f"{PROLOGUE}{COURSE_LINE.strip()}\n"
              'probe = torch.zeros(1, device=f"cuda:{local_rank + 2}")\n')
    assert changed_by_part5(source) == source.replace(COURSE_LINE.strip(), PART5_LINE.strip())


@pytest.mark.parametrize("line", [
    'device1 = torch.device("cuda", 2 * 2 + local_rank)',          # cuda:r+4: no GPU of four
    'device1 = torch.device("cuda", first + world_size)',          # neither is the rank
    'device1 = torch.device(f"cuda:{local_rank + 2}")\n'
    'device1 = torch.device("cuda", local_rank + 2)',               # two places
    'print(f"stage 1 on cuda:{local_rank + 2}")',                  # a message, not a device
    'device1 = torch.device("cuda", (local_rank +\n    2))',      # split over lines: no text to cut
])
def test_no_change_where_no_single_sum_names_the_second_device(line):
    edit = pm.broken_layout_edit(f"{PROLOGUE}{line}\n")
    assert edit is None, f"expected no Part 5 change for {line!r}; observed {edit}"


@pytest.mark.parametrize("line, restored", [
    ('device0, device1 = torch.device("cuda", local_rank), torch.device("cuda", local_rank)',
     'device0, device1 = torch.device("cuda", local_rank), torch.device("cuda", local_rank + 2)'),
    ('self.device1 = torch.device("cuda:" + str(local_rank))',
     'self.device1 = torch.device("cuda:" + str(local_rank + 2))'),
    ('device0 = f"cuda:{local_rank}"\ndevice1 = device0  # Part 5',
     'device1 = f"cuda:{local_rank + 2}"  # Part 5'),
])
def test_part5_left_in_is_set_back_in_device1s_own_part(line, restored):
    source = f"{PROLOGUE}{line}\n"
    edit = pm.restored_layout_edit(source)
    assert edit is not None and source.count(edit[0]) == 1, (
        f"expected one place to set back; observed {edit}")
    assert edit[1].strip("\n") == restored, f"expected {restored!r}; observed {edit[1]!r}"


def test_the_reference_goes_there_and_back():
    """Part 5's change on the course's sample.py, then the change set back, is the file again:
    both edits are made by the runner as text."""
    reference = REFERENCE.read_text(encoding="utf-8")
    broken = changed_by_part5(reference)
    assert broken == reference.replace(COURSE_LINE, PART5_LINE)
    assert pm.broken_layout_edit(broken) is None
    assert apply_edits(broken, "sample.py", [pm.restored_layout_edit(broken)]) == reference
