"""Practical 10, Part 5: the handout's line change found under every correct spelling of the
second stage's offset (adv21 A5: `cuda:{local_rank + world_size}` lost 1.25 points, the line
looked for with a literal `+ 2`). The change drops the offset and keeps the rank; what the
changed script then does is judged by its run (practical10.broken_layout_one_gpu)."""
import pytest

from grader.checks import practical_measures as pm

PROLOGUE = ('import os\n\ndef main():\n    local_rank = int(os.environ["LOCAL_RANK"])\n'
            '    gpu = local_rank\n    world_size = dist.get_world_size()\n'
            '    device0 = torch.device(f"cuda:{local_rank}")\n')


@pytest.mark.parametrize("line, changed", [
    ('    device1 = torch.device(f"cuda:{local_rank + world_size}")',
     '    device1 = torch.device(f"cuda:{local_rank}")'),
    ('    device1 = torch.device(f"cuda:{world_size + local_rank}")  # stage 1',
     '    device1 = torch.device(f"cuda:{local_rank}")  # stage 1'),
    ('    device1 = torch.device("cuda", local_rank + dist.get_world_size())',
     '    device1 = torch.device("cuda", local_rank)'),
    ('    device1 = torch.device(f"cuda:{local_rank + GPUS_PER_STAGE}")',
     '    device1 = torch.device(f"cuda:{local_rank}")'),
    ('    device1 = torch.device(f"cuda:{local_rank + torch.cuda.device_count() // 2}")',
     '    device1 = torch.device(f"cuda:{local_rank}")'),
    ('    device1 = torch.device(f"cuda:{gpu+world_size}")', '    device1 = torch.device(f"cuda:{gpu}")'),
    ('    device1 = torch.device("cuda:" + str(local_rank + world_size))',
     '    device1 = torch.device("cuda:" + str(local_rank))'),
    # The handout's own spelling, as before.
    ('    device1 = torch.device(f"cuda:{local_rank + 2}")',
     '    device1 = torch.device(f"cuda:{local_rank}")'),
])
def test_part5_finds_the_second_stage_whatever_the_offset_is_called(line, changed):
    assert pm.broken_layout_edit(f"{PROLOGUE}{line}\n    return device1\n") == (line, changed)


@pytest.mark.parametrize("line", [
    # Neither operand is the rank: no guess at which one Part 5 would keep.
    '    device1 = torch.device(f"cuda:{first + world_size}")',
    # Only a comment holds the sum.
    '    device1 = torch.device(f"cuda:{local_rank}")  # was local_rank + world_size',
])
def test_no_edit_without_the_rank_plus_an_offset_in_code(line):
    assert pm.broken_layout_edit(f"{PROLOGUE}{line}\n") is None


def test_two_candidate_lines_are_no_single_edit():
    line = '    device1 = torch.device(f"cuda:{local_rank + world_size}")\n'
    assert pm.broken_layout_edit(PROLOGUE + line + line) is None


def test_a_script_handed_in_after_part5_is_still_set_back():
    """(the other direction, unchanged): `cuda:{local_rank}` left in is set back to + 2."""
    source = PROLOGUE + '    device1 = torch.device(f"cuda:{local_rank}")\n'
    assert pm.broken_layout_edit(source) is None
    assert pm.restored_layout_edit(source) == (
        '\n    device1 = torch.device(f"cuda:{local_rank}")',
        '\n    device1 = torch.device(f"cuda:{local_rank + 2}")')
