"""Turn an assignment's optional `measurements` (and the student's `answers`, same keys) into
rows a report can show side by side: (task, quantity, reported, measured).

Any nested dict of numbers and lists is accepted, so a new assignment's measurements show up
without code here; HW3's keys only get friendlier labels.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from grader.common.text import answer_shown, is_table

# Keys that only make sense in one assignment: (assignment, flattened path) -> label.
PATH_LABELS = {
    ("hw3", "task1.layers_per_gpu"): "layers per GPU (DEPTH=6, 2 GPUs)",
    ("hw3", "task3.layers_per_gpu_20_5"): "layers per GPU (DEPTH=20, 5 GPUs)",
}
# Quantity names as a student reads them; unknown names are shown with spaces for "_".
QUANTITY_LABELS = {
    "layers_per_gpu": "layers per GPU",
    "step_time_ms": "step time (ms)",
    "memory_per_gpu_mib": "peak memory per GPU (MiB)",
    "to_calls": ".to() calls in forward",
    "transfers": "GPU-to-GPU transfers",
    "total_time_s": "total time (s)",
    "gpus": "GPUs",
    "final_loss": "final loss",
    "split_per_gpu": "batch rows per GPU",
    "rank_to_gpu": "GPU of each rank",
    "gpus_per_rank": "GPUs per rank",
    "rank_gpus": "GPUs of each rank",
    "most_memory_gpu": "GPU with the most memory",
}
# What a numeric key means under a given path ("task2.step_time_ms" -> {"6": ...} is DEPTH=6).
NUMBER_KEY_MEANING = {
    ("hw3", "task2.step_time_ms"): "DEPTH={}",
    ("hw3", "task4"): "{} GPUs",
    ("hw3", "task5"): "{} GPUs",
    ("practical5", "dp.split_per_gpu"): "{} GPUs",
    ("practical6", "ddp.rank_to_gpu"): "rank {}",
    ("practical10", "hybrid.rank_gpus"): "rank {}",
}


# A yes/no fact whose measurement supports both answers is recorded as the answers accepted,
# "yes or no" (grader/checks/hw3_facts.py: accepted); shown so, beside "you reported: yes", it
# read as a bug. Said in words instead, with why both are right where the reason is known.
BOTH_ANSWERS = "either: yes or no, both are right here"
BOTH_ANSWERS_WHY = {
    ("hw3", "task4.all_gpus_utilised"):
        "either: yes (each GPU holds layers) or no (only one computes at a time), both are right",
    ("hw3", "task4.more_gpus_faster"):
        "either: yes or no, both are right (the step times are too close to call)",
    ("hw3", "task2.depth_improves_speed"):
        "either: yes or no, both are right (the step times are too close to call)",
    ("hw3", "task5.transfers_grow_with_gpus"):
        "either: yes (N GPUs make N - 1 transfers) or no (your code's own counts), both are right",
}


@dataclass(frozen=True)
class Row:
    task: str          # "Task 2", or the first key segment when it is not "taskN"
    quantity: str      # "step time (ms), DEPTH=6"
    path: str          # the flattened key, stable for tests and tooling
    reported: Any      # None when the student reported nothing for it
    measured: Any      # None when only the student's value exists


def comparison_rows(measurements: Mapping | None, answers: Mapping | None = None,
                    assignment: str = "") -> list[Row]:
    """One row per leaf value of either mapping, measured order first, then answer-only keys."""
    measured = dict(_flatten(measurements or {}))
    reported = dict(_flatten(answers or {}))
    paths = list(measured) + [p for p in reported if p not in measured]
    return [Row(task=_task(p), quantity=_quantity(p, assignment), path=".".join(p),
                reported=reported.get(p), measured=measured.get(p)) for p in paths]


def task_label(key: str) -> str:
    """"task2" -> "Task 2"; any other key as it is."""
    return _task(tuple(str(key).split(".")))


def lookup(data: Mapping | None, dotted: str):
    """data["task2.step_time_ms"] or data["task2"]["step_time_ms"]: both spellings occur."""
    if not isinstance(data, Mapping):
        return None
    if dotted in data:
        return data[dotted]
    head, _, rest = dotted.partition(".")
    return lookup(data.get(head), rest) if rest and head in data else None


def format_value(value: Any) -> str:
    """Numbers without trailing zeros, lists as "3, 3"; absent values as an en dash; a table
    answer as its rows and a dict as its entries (report.md's answers had shown P4's
    `{'each': [32, 1000]}` as a Python dict: a TA's audit 27)."""
    if value is None:
        return "–"
    if isinstance(value, Mapping) or is_table(value):
        return answer_shown(value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e6 else f"{value:.3e}"
    if isinstance(value, (list, tuple)):
        return ", ".join(format_value(v) for v in value)
    return str(value)


def format_measured(value: Any, path: str = "", assignment: str = "") -> str:
    """A measured value as format_value shows it, but the answers accepted for a yes/no fact
    the measurement cannot decide ("yes or no") in words a student reads right."""
    if isinstance(value, str) and sorted(w.strip().lower() for w in value.split(" or ")) == ["no", "yes"]:
        return BOTH_ANSWERS_WHY.get((assignment, path), BOTH_ANSWERS)
    return format_value(value)


def _flatten(value: Any, path: tuple[str, ...] = ()):
    # A key like "task1.layers_per_gpu" is split so it lines up with {"task1": {...}} too.
    if isinstance(value, Mapping):
        for key, inner in value.items():
            yield from _flatten(inner, path + tuple(str(key).split(".")))
    else:
        yield path, value


def _task(path: tuple[str, ...]) -> str:
    head = path[0] if path else ""
    if head.startswith("task") and head[4:].isdigit():
        return f"Task {head[4:]}"
    return head


def _quantity(path: tuple[str, ...], assignment: str) -> str:
    if (assignment, ".".join(path)) in PATH_LABELS:
        return PATH_LABELS[assignment, ".".join(path)]
    words, context = [], []
    for depth, key in enumerate(path[1:], start=1):
        if key.lstrip("-").replace(".", "", 1).isdigit():
            meaning = NUMBER_KEY_MEANING.get((assignment, ".".join(path[:depth])), "{}")
            context.append(meaning.format(key))
        else:
            words.append(QUANTITY_LABELS.get(key, key.replace("_", " ")))
    return ", ".join([" / ".join(words) or "value"] + context)
