"""HW3 Tasks 4 and 5 run Task 3's model (adv52 F3).

The handout's Tasks 4 and 5: "Use your modified code from Task 3", DEPTH=20 on 2 and 5 GPUs, the
layers spread over all of them. The untouched base code (cuda:0 and cuda:1 only) or every layer
on cuda:0, with a sheet agreeing with that code ("not all utilised", 1 or 0 transfers on 5 GPUs,
"they do not grow"), had kept all 4.5 points of Tasks 4 and 5 (8.5 of 15, a TA's 5.5 to 6.5).
Now a part about a run on N GPUs counts only where the layout puts layers on every one of them;
the .to() calls (DEPTH in any layout) and "5 GPUs are not faster" stand alone.

The checks run here on probe records written by hand, shaped as grader/harness/hw3_probe.py
writes them.
"""
from __future__ import annotations

import pytest

from grader.answers.collect import Answers
from grader.checks import test_hw3 as hw3
from grader.harness.observation import Observation
from tests.support.hw3_logs import even_layout, forward_log

DEPTH = hw3.TASK4_DEPTH
MIB = 2 ** 20


class _Run:
    def problem(self):
        return ""


class _Runs:
    def script(self, **spec):
        return Observation(script="hw3/model_parallel.py", gpus=spec.get("gpus", 2),
                           returncode=0, events=[])


def layout(name: str, gpus: int) -> list[str]:
    """Each layer's device: the base code's two-GPU split, all on cuda:0, or an even spread."""
    if name == "base":
        return ["cuda:0" if i < DEPTH // 2 else "cuda:1" for i in range(DEPTH)]
    if name == "one_gpu":
        return ["cuda:0"] * DEPTH
    return even_layout(gpus, DEPTH)


def probe_of(name: str):
    records = []
    results = {}
    for gpus in hw3.TASK4_GPUS:
        devices = layout(name, gpus)
        layers = hw3.counts_per_gpu(devices, gpus)
        records.append({"kind": "transfers", "gpus": gpus, "depth": hw3.TRANSFER_DEPTH,
                        "devices": devices, "log": forward_log(devices)})
        results[f"{gpus}x{DEPTH}"] = {"median_ms": 1.72, "layers_per_gpu": layers,
                                      "peak_memory": [n * 10 * MIB for n in layers]}
    records.append({"kind": "task4", "clock": "simulated",
                    "configs": [[g, DEPTH] for g in hw3.TASK4_GPUS], "results": results})
    return records, _Run()


def sheet_of(name: str) -> Answers:
    """Answers that agree with the code `name` runs (adv52's hw3_tmpl_own and hw3_onegpu)."""
    memory = {g: [round(n * 10.0, 1) for n in hw3.counts_per_gpu(layout(name, g), g)]
              for g in hw3.TASK4_GPUS}
    copies = {g: sum(e.get("copied", False) for e in forward_log(layout(name, g)))
              for g in hw3.TASK4_GPUS}
    values = {"task4.table": [{"gpus": g, "step_time_ms": 1.72, "memory_per_gpu_mib": memory[g]}
                              for g in hw3.TASK4_GPUS],
              "task4.all_gpus_utilised": name == "spread",
              "task5.to_calls_2gpus": DEPTH, "task5.to_calls_5gpus": DEPTH,
              "task5.transfers_2gpus": copies[2], "task5.transfers_5gpus": copies[5],
              "task5.transfers_grow_with_gpus": copies[5] > copies[2]}
    return Answers("hw3", "sheet", values=values,
                   origin={qid: "hw3/answers.yaml" for qid in values})


def failures(name: str) -> dict[str, str]:
    """Each Task 4/5 part that fails on layout `name` with its agreeing sheet -> its feedback."""
    probe, answers = probe_of(name), sheet_of(name)
    parts = {f"table_{a}": (hw3.test_task4_reported_table_agrees_with_the_runs,
                            (probe, answers, {}, {}, lambda text: None, a))
             for a in hw3.TASK4_ASPECTS}
    parts["utilised"] = (hw3.test_task4_answer_are_all_gpus_utilised, (probe, answers, {}, {}))
    parts["growth"] = (hw3.test_task5_answer_does_communication_grow_with_gpus,
                       (probe, answers, {}, {}))
    specs = {g: {"gpus": g} for g in hw3.TASK4_GPUS}
    for gpus in hw3.TASK4_GPUS:
        for quantity in ("to_calls", "transfers"):
            parts[f"{quantity}_{gpus}"] = (hw3.test_task5_reported_counts_match,
                                           (probe, _Runs(), specs, answers, {},
                                            lambda text: None, gpus, quantity))
    found = {}
    for part, (check, args) in parts.items():
        try:
            check(*args)
        except AssertionError as failure:
            found[part] = str(failure)
        except pytest.skip.Exception:
            found[part] = "skipped"
    return found


@pytest.mark.parametrize("name, lost, skipped", [
    # The base code's split: its 2-GPU run spreads, its 5-GPU run does not.
    ("base", {"table_5gpus", "utilised", "transfers_5", "growth"}, {"table_speed", "table_memory"}),
    # Every layer on cuda:0: neither run spreads.
    ("one_gpu", {"table_2gpus", "table_5gpus", "utilised", "transfers_2", "transfers_5", "growth"},
     {"table_speed", "table_memory"}),
    ("spread", set(), set()),
], ids=["base-code", "all-on-cuda0", "task3-done"])
def test_only_what_stands_alone_pays_without_task3s_layout(name, lost, skipped):
    found = failures(name)
    assert {p for p, text in found.items() if text == "skipped"} == skipped, found
    failed = {p: text for p, text in found.items() if text != "skipped"}
    assert set(failed) == lost, (
        f"[{name}] expected exactly {sorted(lost)} to fail (grader/checks/test_hw3.py "
        f"not_task3s_model), observed {sorted(failed)}: {failed}")
    for part, text in failed.items():
        for phrase in ("Tasks 4 and 5 run Task 3's model with DEPTH=20",
                       "Use your modified code from Task 3", "that run is not the task's",
                       "Where to look: Task 3's checks above"):
            assert phrase in text, f"[{name}] {part}: expected {phrase!r} in:\n{text}"


def test_the_idle_gpus_are_named():
    text = failures("base")["utilised"]
    assert "your layout leaves cuda:2, cuda:3, cuda:4 without layers on 5 GPUs (layers per " \
        "GPU [10, 10, 0, 0, 0])" in text, text
