"""Practical 5's gather check where the script names DataParallel's output_device (adv51 F3).

The handout asks for no output device; `nn.DataParallel(model, output_device=2)` is a
documented option that relieves GPU 0, and had lost practical5.gathered_on_gpu0's 0.75 for not
being cuda:0. The outputs gathered on the GPU the script names pass; a default moved off cuda:0
by device_ids ([1, 2], nobody asked for cuda:1), a gather nowhere, or one on another GPU than
the named one still fail. The checks run here on traces written by hand, shaped as the virtual
GPUs write them (observe.py's forward_out says DataParallel's output_device and device_ids).
"""
from __future__ import annotations

import pytest

from grader.checks import test_practical5 as p5
from grader.harness.observation import Observation
from tests.grading.test_practical5_non_solutions import trained


def gathered(into, output_device, device_ids=(0, 1, 2)) -> Observation:
    run = trained(3, True)
    events = list(run.events)
    for i in range(3):
        events += [{"event": "transfer", "rank": 0, "kind": "gather", "src": f"cuda:{i}", "dst": dst}
                   for dst in into]
        events.append({"event": "forward_out", "rank": 0, "module": "DataParallel",
                       "device": into[0] if into else f"cuda:{output_device}",
                       "output_device": f"cuda:{output_device}",
                       "device_ids": [f"cuda:{d}" for d in device_ids]})
    return Observation(run.script, gpus=3, returncode=0, events=events, stdout=run.stdout)


@pytest.mark.parametrize("into, output_device, device_ids", [
    (["cuda:0"], 0, (0, 1, 2)),
    (["cuda:2"], 2, (0, 1, 2)),   # output_device=n_gpus - 1, as adv51's student wrote it
])
def test_outputs_on_the_asked_gpu_pass(into, output_device, device_ids):
    p5.test_outputs_gathered_on_gpu0(gathered(into, output_device, device_ids))


@pytest.mark.parametrize("into, output_device, device_ids", [
    (["cuda:1"], 1, (1, 2)),      # the default moved by device_ids: nobody asked for cuda:1
    ([], 2, (0, 1, 2)),           # never gathers
    (["cuda:1"], 2, (0, 1, 2)),   # gathers where the script did not ask
])
def test_outputs_elsewhere_fail(into, output_device, device_ids):
    with pytest.raises(AssertionError, match="gathered on"):
        p5.test_outputs_gathered_on_gpu0(gathered(into, output_device, device_ids))
