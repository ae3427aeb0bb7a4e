"""Practical 10, Part 5: the second stage's device found wherever the student wrote it (adv37 F7).

Part 5 says to replace `device1 = torch.device(f"cuda:{local_rank + 2}")` by `... f"cuda:
{local_rank}" ...`; the grader makes that change itself. A student whose TwoStageModel picks its
own devices (`self.device1 = torch.device(f"cuda:{local_rank + 2}")` in `__init__(self,
local_rank)`) lost broken_layout_one_gpu 0.5 and broken_gpus_reported 0.25 (9.25 of 12 against
the reference's 10): the line was looked for as `device1 = ...` only. The sum is now found in
the code wherever it names a device (an attribute, a dict, `.to(...)`, other spellings of the
string); where no single place holds it, the student is told so, and not charged where the run
of their own layout shows the course's (rank r: cuda:r + cuda:r+2) and Part 5 was answered.
Exactness: a replica on one GPU has no model parallelism for Part 5 to break, and earns
nothing by it.
"""
from __future__ import annotations

import pytest

from grader.answers.collect import Answers
from grader.checks import practical_measures as pm
from grader.checks import test_practical10 as p10
from tests.grading.test_practical10_non_solutions import traced
from tests.support.gradings import Gradings, names_in_order

MODEL = '''\
import os
import torch
import torch.nn as nn


class TwoStageModel(nn.Module):
    def __init__(self, local_rank, dim=512, hidden=1024):
        super().__init__()
        # stage 0 on this rank's GPU, stage 1 two GPUs further
{devices}
        self.stage0 = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU()).to(self.device0)
        self.stage1 = nn.Linear(hidden, dim).to(self.device1)


def main():
    # Part 5 of the handout breaks model parallelism by changing the next line to
    #     device1 = torch.device(f"cuda:{{local_rank}}")
    local_rank = int(os.environ["LOCAL_RANK"])
    model = TwoStageModel(local_rank)
    print(f"[Rank {{local_rank}}] stage 1 on cuda:{{local_rank + 2}}")
'''

# (how the devices are written in __init__, the line as Part 5 leaves it)
FOUND = {
    "attribute (adv37 F7)": (
        '        self.device0 = torch.device(f"cuda:{local_rank}")\n'
        '        self.device1 = torch.device(f"cuda:{local_rank + 2}")',
        '        self.device1 = torch.device(f"cuda:{local_rank}")'),
    "torch.device('cuda', rank + 2) in the class": (
        '        self.device0 = torch.device("cuda", local_rank)\n'
        '        self.device1 = torch.device("cuda", local_rank + 2)',
        '        self.device1 = torch.device("cuda", local_rank)'),
    "a dict of devices": (
        '        self.devices = {"stage0": torch.device(f"cuda:{local_rank}"),\n'
        '                        "stage1": torch.device(f"cuda:{local_rank + 2}")}\n'
        '        self.device0, self.device1 = self.devices["stage0"], self.devices["stage1"]',
        '                        "stage1": torch.device(f"cuda:{local_rank}")}'),
    "a subscript target": (
        '        self.devices = {}\n'
        '        self.devices["stage1"] = torch.device(f"cuda:{2 + local_rank}")\n'
        '        self.device0, self.device1 = f"cuda:{local_rank}", self.devices["stage1"]',
        '        self.devices["stage1"] = torch.device(f"cuda:{local_rank}")'),
    "'cuda:' + str(rank + 2)": (
        '        self.device0 = "cuda:" + str(local_rank)\n'
        '        self.device1 = "cuda:" + str(local_rank + 2)',
        '        self.device1 = "cuda:" + str(local_rank)'),
    "'cuda:{}'.format(rank + 2) under a name of its own": (
        '        self.device0 = torch.device(f"cuda:{local_rank}")\n'
        '        second = torch.device("cuda:{}".format(local_rank + 2))\n'
        '        self.device1 = second',
        '        second = torch.device("cuda:{}".format(local_rank))'),
    "the GPU numbers as a tuple": (
        '        gpus = (local_rank, local_rank + 2)\n'
        '        self.device0, self.device1 = (torch.device("cuda", g) for g in gpus)',
        '        gpus = (local_rank, local_rank)'),
    "the offset as the world size": (
        '        world_size = int(os.environ["WORLD_SIZE"])\n'
        '        self.device0 = torch.device(f"cuda:{local_rank}")\n'
        '        self.device1 = torch.device(f"cuda:{local_rank + world_size}")',
        '        self.device1 = torch.device(f"cuda:{local_rank}")'),
}


@pytest.mark.parametrize("devices, changed", FOUND.values(), ids=list(FOUND))
def test_part5s_change_is_made_wherever_the_second_stage_is_placed(devices, changed):
    source = MODEL.format(devices=devices)
    edit = pm.broken_layout_edit(source)
    assert edit is not None, (
        "expected Part 5's change to be found (practical_measures.broken_layout_edit, "
        f"second_stage_device); observed none in:\n{devices}")
    old, new = edit
    assert source.count(old) == 1, f"the edit's old text must occur once; observed {old!r}"
    assert new.splitlines()[-1] == changed, (
        f"expected the line as Part 5 leaves it, {changed!r}; observed {new!r}")
    # What the other parts run is the script as written: nothing to set back.
    assert pm.restored_layout_edit(source) is None


@pytest.mark.parametrize("devices, restored", [
    ('        self.device0 = torch.device(f"cuda:{local_rank}")\n'
     '        self.device1 = torch.device(f"cuda:{local_rank}")  # Part 5',
     '        self.device1 = torch.device(f"cuda:{local_rank + 2}")  # Part 5'),
    ('        self.device0 = torch.device("cuda", local_rank)\n'
     '        self.device1 = self.device0',
     '        self.device1 = torch.device("cuda", local_rank + 2)'),
], ids=["the rank alone", "the first stage's device"])
def test_part5s_change_left_in_an_attribute_is_set_back_for_the_other_parts(devices, restored):
    """Handed in as the handout leaves it, the model picking its own devices: Parts 1 to 4 run
    the course's layout, Part 5 the script as written (nothing more to change)."""
    source = MODEL.format(devices=devices)
    edit = pm.restored_layout_edit(source)
    assert edit is not None and edit[1].strip("\n") == restored, (
        f"expected the line set back to {restored!r}; observed {edit}")
    assert pm.broken_layout_edit(source) is None


def test_the_stages_own_to_calls_are_changed_once():
    source = MODEL.format(devices='        self.device0 = f"cuda:{local_rank}"\n'
                                  '        self.device1 = None').replace(
        "nn.Linear(hidden, dim).to(self.device1)", "nn.Linear(hidden, dim).to(local_rank + 2)")
    assert pm.broken_layout_edit(source) == (
        "        self.stage1 = nn.Linear(hidden, dim).to(local_rank + 2)",
        "        self.stage1 = nn.Linear(hidden, dim).to(local_rank)")


@pytest.mark.parametrize("devices", [
    # The sum only in a comment and a printed message (the template's own lines).
    '        self.device0 = self.device1 = torch.device(f"cuda:{local_rank}")',
    # Two places with the sum: no single change.
    '        self.device0 = torch.device(f"cuda:{local_rank}")\n'
    '        self.devices = [torch.device(f"cuda:{local_rank + 2}")]\n'
    '        self.spare = torch.device("cuda", local_rank + 2)\n'
    '        self.device1 = self.devices[-1]',
    # The offset beside something that is not the rank.
    '        self.device0 = torch.device("cuda", 0)\n'
    '        self.device1 = torch.device("cuda", self.first + self.world)',
], ids=["only a comment and a message", "two places", "not the rank"])
def test_no_change_where_no_single_place_gives_the_rank_plus_an_offset(devices):
    assert pm.broken_layout_edit(MODEL.format(devices=devices)) is None


# The handout's line with the offset inside a product: `local_rank + 2 * s` is the rank plus
# (2 * s), never (local_rank + 2) * s. adv40 H2's honest P10 had it changed into `local_rank * s`
# (rank 1's stage 0 on cuda:0 beside rank 0's: "Duplicate GPU detected"), 9.25 of 12.
SCRIPT_MAIN = '''\
import os
import torch

local_rank = int(os.environ["LOCAL_RANK"])
{line}
print(device0, device1)
'''


def test_an_offset_inside_a_product_is_dropped_whole():
    line = 'device0, device1 = [torch.device("cuda", local_rank + 2 * s) for s in range(2)]'
    edit = pm.broken_layout_edit(SCRIPT_MAIN.format(line=line))
    assert edit == (line, 'device0, device1 = [torch.device("cuda", local_rank) for s in '
                          'range(2)]'), (
        "expected Part 5's change to drop `2 * s` whole, leaving both stages on cuda:"
        "{local_rank} (practical_measures._SECOND_STAGE must not take `local_rank + 2` out of "
        f"`local_rank + 2 * s`); observed {edit}")


@pytest.mark.parametrize("line", [
    'device1 = torch.device("cuda", s * local_rank + 2)',
    'device1 = torch.device("cuda", 2 + local_rank * s)',
    'device1 = torch.device("cuda", 2 * 2 + local_rank)',
    'device1 = torch.device("cuda", local_rank + world_size / 2)',
], ids=["rank inside a product", "offset beside a product", "two inside a product",
        "offset inside a quotient"])
def test_a_sum_whose_operand_is_bound_tighter_is_no_rank_plus_an_offset(line):
    """Dropping `+ 2` or `2 +` there would leave something other than the rank (`s * local_rank`,
    `local_rank * s`, `2 * local_rank`): no change is better than a wrong one."""
    edit = pm.broken_layout_edit(SCRIPT_MAIN.format(line=line))
    assert edit is None, (
        f"expected no Part 5 change for {line!r} (the rank is not an operand of the `+` "
        f"alone); observed {edit}")


@pytest.mark.parametrize("line, changed", [
    ('device1 = torch.device(f"cuda:{self.local_rank + 2}")',
     'device1 = torch.device(f"cuda:{self.local_rank}")'),
    ('device1 = torch.device(f"cuda:{2 + int(os.environ[\'LOCAL_RANK\'])}")',
     'device1 = torch.device(f"cuda:{int(os.environ[\'LOCAL_RANK\'])}")'),
    ('device1 = torch.device(f"cuda:{local_rank + torch.cuda.device_count() // 2}")',
     'device1 = torch.device(f"cuda:{local_rank}")'),
], ids=["an attribute", "a call after the 2", "a floor quotient as the offset"])
def test_whole_operands_are_still_changed(line, changed):
    edit = pm.broken_layout_edit(SCRIPT_MAIN.format(line=line))
    assert edit == (line, changed), f"expected {changed!r}; observed {edit}"


# -- the checks: exactness, and not charging for a change the grader could not make ---------------


def placed(run, layout: dict[int, list[int]]):
    """The traced run with each rank's model on the GPUs `layout` gives it."""
    run.events[:0] = [{"event": "placement", "rank": r, "module": "TwoStageModel",
                       "layers": [{"name": f"stage{i}", "device": f"cuda:{g}", "params": 10}
                                  for i, g in enumerate(gpus)]}
                      for r, gpus in layout.items()]
    return run


COURSE = {0: [0, 2], 1: [1, 3]}
BROKEN = {0: [0], 1: [1]}


class Handout:
    """HandoutRuns' interface: the runs of the script's own layout and of Part 5's."""

    def __init__(self, layout, broken=None, can_break=True):
        self.layout, self.broken_layout, self.can_break = layout, broken, can_break

    def run(self, processes=2, **sets):
        return placed(traced("micro", processes=processes), self.layout)

    def broken(self):
        return placed(traced("micro"), self.broken_layout)


def sheet(gpus=(0, 1)) -> Answers:
    values = {"broken.gpus_in_use": list(gpus), "broken.output_changes": "both stages on cuda:r"}
    return Answers("practical10", "sheet", values=values,
                   origin={qid: "practical10/answers.yaml" for qid in values})


def agree_as_the_course_does(answers):
    told = []

    def agree(qid, value, truth, observed, expected=None):
        told.append((qid, value, truth, observed))
        p10.must_agree(answers, qid, value, truth, expected or str(truth), observed)
    return agree, told


def test_the_changed_run_counts_where_the_course_layout_has_two_stages():
    handout = Handout(COURSE, BROKEN)
    p10.test_broken_layout_puts_each_replica_on_one_gpu(handout, sheet())
    agree, told = agree_as_the_course_does(sheet())
    p10.test_reported_gpus_after_the_broken_layout(handout, sheet(), agree)
    assert [t[:3] for t in told] == [("broken.gpus_in_use", [0, 1], [0, 1])], told


def test_a_replica_on_one_gpu_earns_nothing_from_part5():
    """One stage on cuda:{local_rank + 2}: Part 5's change puts it on cuda:r, which is no
    broken model parallelism (the change being found there must not give points)."""
    for text in part5_failures(Handout({0: [2], 1: [3]}, BROKEN)):
        assert "Part 5 breaks model parallelism" in text and "rank 0's model sits on cuda:2 " \
            "alone" in text, f"expected the one-GPU replica told; observed:\n{text}"


def part5_failures(handout) -> list[str]:
    """What Part 5's two checks (broken_layout_one_gpu, broken_gpus_reported) say when each
    fails, as it must, for `handout`."""
    said = []
    for check, args in ((p10.test_broken_layout_puts_each_replica_on_one_gpu, (sheet(),)),
                        (p10.test_reported_gpus_after_the_broken_layout,
                         (sheet(), agree_as_the_course_does(sheet())[0]))):
        with pytest.raises(AssertionError) as failure:
            check(handout, *args)
        said.append(str(failure.value))
    return said


def test_a_change_the_grader_could_not_make_is_not_charged_where_the_course_layout_shows():
    handout = Handout(COURSE, can_break=False)
    p10.test_broken_layout_puts_each_replica_on_one_gpu(handout, sheet())
    agree, told = agree_as_the_course_does(sheet())
    p10.test_reported_gpus_after_the_broken_layout(handout, sheet(), agree)
    assert [t[:3] for t in told] == [("broken.gpus_in_use", [0, 1], [0, 1])], told
    assert "the grader could not make the change itself" in told[0][3], told[0][3]
    # A wrong answer is still wrong: cuda:2 and cuda:3 are what Part 5 frees.
    agree, _ = agree_as_the_course_does(sheet((2, 3)))
    with pytest.raises(AssertionError):
        p10.test_reported_gpus_after_the_broken_layout(handout, sheet((2, 3)), agree)


def test_the_student_is_told_the_change_was_not_made():
    flags = []
    with pytest.raises(AssertionError) as failure:
        p10.test_graded_as_the_handout_runs_it(NotFound(), flags.append)
    text = str(failure.value)
    for phrase in ("worth no point", "for the grader to change as Part 5 asks",
                   "Part 5's run was not made", "so that the grader can make Part 5's change"):
        assert phrase in text, f"expected the note to say {phrase!r}; observed:\n{text}"
    assert flags and "Part 5's run was not made" in flags[0], flags


class NotFound(Handout):
    def __init__(self):
        super().__init__(COURSE, can_break=False)

    def part5_left_in(self):
        return None

    def switch_left_in(self):
        return None

    def constants_left(self):
        return {}


@pytest.mark.parametrize("layout, answers, said", [
    ({0: [0, 2], 1: [1, 3]}, Answers("practical10", "sheet", values={}, origin={}),
     "no answer found to Part 5's questions"),
    ({0: [0], 1: [1]}, sheet(), "could not make Part 5's change itself; and the run with your "
                                "own layout does not show the course's"),
    ({0: [2], 1: [3]}, sheet(), "could not make Part 5's change itself; and the run with your "
                                "own layout does not show the course's"),
], ids=["part 5 not answered", "one GPU per replica", "one stage on cuda:r+2"])
def test_without_the_change_nothing_is_given_that_the_runs_do_not_show(layout, answers, said):
    handout = Handout(layout, can_break=False)
    with pytest.raises(AssertionError) as failure:
        p10.test_broken_layout_puts_each_replica_on_one_gpu(handout, answers)
    text = str(failure.value)
    assert said in text, f"expected {said!r}; observed:\n{text}"


# -- a spare layer on the second GPU is no second stage (adv40 F5) --------------------------------
# One stage on cuda:r and an unused nn.Linear(1, 1) on cuda:r+2 scored 10 of 12, the reference's
# (7.25 without the spare): the GPUs a model sits on had counted as those it runs on.


def ran_on(run, gpus_of_rank: dict[int, list[int]]):
    """The run with each forward pass's layers seen running on `gpus_of_rank[rank]`
    (forward_out's layer_devices, as the virtual GPUs record them)."""
    events = []
    for event in run.events:
        events.append(event)
        if event.get("event") == "forward":
            rank = event["rank"]
            events.append({"event": "forward_out", "rank": rank, "thread": "MainThread",
                           "shape": event["batch"], "device": f"cuda:{gpus_of_rank[rank][-1]}",
                           "layer_devices": [f"cuda:{g}" for g in gpus_of_rank[rank]]})
    run.events[:] = events
    return run


class SpareOnSecondGpu(Handout):
    """Placed on cuda:r and cuda:r+2 (COURSE), the layers run on cuda:r only."""

    def __init__(self, can_break=True, ran=None):
        super().__init__(COURSE, BROKEN, can_break)
        self.ran = ran or {0: [0], 1: [1]}

    def run(self, processes=2, **sets):
        return ran_on(super().run(processes), self.ran)


def test_a_spare_layer_on_the_second_gpu_is_no_second_stage():
    run = SpareOnSecondGpu().run()
    assert [p10.stage_gpus(run, r) for r in (0, 1)] == [[0], [1]], (
        "expected the GPUs the training passes ran layers on, [0] and [1] (a GPU where no "
        f"layer ran is no stage: test_practical10.stage_gpus); observed "
        f"{[p10.stage_gpus(run, r) for r in (0, 1)]}")
    assert p10.one_gpu_replicas(run) == {0: [0], 1: [1]}


@pytest.mark.parametrize("can_break", [True, False], ids=["change found", "change not found"])
def test_a_spare_layer_earns_no_part5(can_break):
    said = "rank 0's model sits on cuda:0 alone" if can_break else "does not show the course's"
    for text in part5_failures(SpareOnSecondGpu(can_break)):
        assert said in text, f"expected {said!r}; observed:\n{text}"


def test_a_spare_layer_is_no_gpu_pair():
    with pytest.raises(AssertionError) as failure:
        p10.test_rank_uses_gpus_r_and_r_plus_2(SpareOnSecondGpu())
    text = str(failure.value)
    assert "its training passes ran layers on cuda:0 only" in text, (
        f"expected gpu_pair_per_rank to name the GPUs the layers ran on; observed:\n{text}")
    part4 = sheet()
    part4.values.update({"single.rank1": "gone", "single.sync": "yes, over one process"})
    with pytest.raises(AssertionError) as failure:
        p10.test_single_process_runs(SpareOnSecondGpu(), part4)
    text = str(failure.value)
    assert "its training passes ran layers on cuda:0" in text, (
        f"expected single_process to name the GPUs the layers ran on; observed:\n{text}")


def test_two_stages_that_run_keep_the_pair():
    """The course's layout, its layers seen running on both GPUs (stage 0's first)."""
    handout = SpareOnSecondGpu(ran={0: [0, 2], 1: [1, 3]})
    p10.test_rank_uses_gpus_r_and_r_plus_2(handout)
    run = handout.run()
    assert [p10.stage_gpus(run, r) for r in (0, 1)] == [[0, 2], [1, 3]]
    assert p10.one_gpu_replicas(run) == {}
    p10.test_broken_layout_puts_each_replica_on_one_gpu(handout, sheet())


# -- whole gradings (slow): the reference with its devices chosen elsewhere ----------------------
REFERENCE_DEVICES = ('    device0 = torch.device(f"cuda:{local_rank}")\n'
                     '    device1 = torch.device(f"cuda:{local_rank + 2}")\n')
GRADED = {
    # adv37 F7's shape: the model picks its own devices from the rank, in a dict.
    "devices chosen in the model, in a dict": ([
        ("    def __init__(self, device0, device1, dim=DIM, hidden=HIDDEN):\n"
         "        super().__init__()\n"
         "        self.device0 = device0\n"
         "        self.device1 = device1\n",
         "    def __init__(self, local_rank, dim=DIM, hidden=HIDDEN):\n"
         "        super().__init__()\n"
         '        self.devices = {"stage0": torch.device("cuda", local_rank),\n'
         '                        "stage1": torch.device("cuda", local_rank + 2)}\n'
         '        device0, device1 = self.devices["stage0"], self.devices["stage1"]\n'
         "        self.device0, self.device1 = device0, device1\n"),
        (REFERENCE_DEVICES, ""),
        ("    model = TwoStageModel(device0, device1)\n",
         "    model = TwoStageModel(local_rank)\n    device0, device1 = model.device0, model.device1\n"),
        ('    print(f"[Rank {rank}] stage 0 on {device0}, stage 1 on {device1}")\n', ""),
    ], "passed"),
    # Not two stages: both on device1 (cuda:{local_rank + 2}). Part 5's change puts the replica
    # on cuda:r, which had earned broken_layout_one_gpu and broken_gpus_reported.
    "one GPU per replica, at local_rank + 2": ([
        ("        self.stage0 = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU()).to(device0)\n",
         "        self.stage0 = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU()).to(device1)\n"),
        ("        x = self.stage0(x.to(self.device0))\n", "        x = self.stage0(x.to(self.device1))\n"),
    ], "failed"),
}


@pytest.fixture(scope="module")
def graded_whole(request, tmp_path_factory):
    """name in GRADED -> its result.json, each graded once and both at once (a grading is mostly
    one process at a time: tests/support/gradings.py)."""
    from grader.grading import grade_submission
    from tests.fixtures.planted_bugs import REFERENCE, apply_replacements, copy_tree

    def grade_one(name: str) -> dict:
        base = tmp_path_factory.mktemp("part5-graded")
        submission = copy_tree(REFERENCE, base / "submission")
        script = submission / p10.SCRIPT
        script.write_text(apply_replacements(script.read_text(encoding="utf-8"), GRADED[name][0],
                                             "sample.py"), encoding="utf-8")
        return grade_submission(submission, base / "out", ["practical10"])

    gradings = Gradings(grade_one, names_in_order(request))
    yield gradings.get
    gradings.close()


@pytest.mark.slow
@pytest.mark.parametrize("name", list(GRADED))
def test_part5s_checks_graded_whole(graded_whole, name):
    status = GRADED[name][1]
    result = graded_whole(name)
    checks = {check["id"]: check for item in result["assignments"][0]["items"]
              for check in item["checks"]}
    for check in ("practical10.broken_layout_one_gpu", "practical10.broken_gpus_reported"):
        assert checks[check]["status"] == status, (
            f"expected {check} {status}; observed {checks[check]['status']}: "
            f"{checks[check]['feedback']}")
