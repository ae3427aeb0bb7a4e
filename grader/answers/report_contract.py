"""What the HW3 report template promises: labels, tables, sections, fields.

student_template/hw3/REPORT_TEMPLATE.md is written from the same list; a
label changed there must change here too. Patterns run on normalised text
(lower case, dashes and spaces unified, see report_parser.normalise), and
`\\s*` between words lets a label wrap onto the next line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


def _gpus_label(depth: int, gpus: int) -> str:
    # "Layers per GPU (DEPTH=6, 2 GPUs)", also "(depth = 6; 2 gpu)" or without brackets.
    return (
        rf"layers\s*per\s*gpu\s*[\(\[]?\s*depth\s*[=:]?\s*{depth}\s*[,;]?\s*{gpus}\s*gpus?\s*[\)\]]?"
    )


@dataclass(frozen=True)
class LabelledAnswer:
    field: str
    pattern: str  # regex for the label, up to where the value starts
    kind: str  # "int_list", "int" or "yes_no"
    template_text: str  # as the template writes it, for messages


LABELLED_ANSWERS = [
    LabelledAnswer("task1.layers_per_gpu", _gpus_label(6, 2), "int_list", "Layers per GPU (DEPTH=6, 2 GPUs)"),
    LabelledAnswer(
        "task1.transfer_between", r"transfers?\s*between\s*layers", "int_list", "Transfer between layers"
    ),
    LabelledAnswer(
        "task2.depth_improves_speed",
        r"does\s*increasing\s*depth\s*improve\s*(?:the\s*)?speed\s*(?:\(\s*yes\s*/\s*no\s*\))?",
        "yes_no",
        "Does increasing DEPTH improve speed (yes/no)",
    ),
    LabelledAnswer(
        "task4.all_gpus_utilised",
        r"all\s*gpus\s*utili[sz]ed\s*with\s*5\s*gpus?\s*(?:\(\s*yes\s*/\s*no\s*\))?",
        "yes_no",
        "All GPUs utilized with 5 GPUs (yes/no)",
    ),
    LabelledAnswer(
        "task4.more_gpus_faster",
        r"faster\s*with\s*5\s*gpus?\s*than\s*with\s*2\s*(?:gpus?\s*)?(?:\(\s*yes\s*/\s*no\s*\))?",
        "yes_no",
        "Faster with 5 GPUs than with 2 (yes/no)",
    ),
    LabelledAnswer(
        "task5.to_calls_2gpus",
        r"number\s*of\s*\.?\s*to\s*\(?\s*\)?\s*calls\s*with\s*2\s*gpus?",
        "int",
        "Number of .to() calls with 2 GPUs",
    ),
    LabelledAnswer(
        "task5.transfers_2gpus", r"number\s*of\s*transfers\s*with\s*2\s*gpus?", "int", "Number of transfers with 2 GPUs"
    ),
    LabelledAnswer(
        "task5.to_calls_5gpus",
        r"number\s*of\s*\.?\s*to\s*\(?\s*\)?\s*calls\s*with\s*5\s*gpus?",
        "int",
        "Number of .to() calls with 5 GPUs",
    ),
    LabelledAnswer(
        "task5.transfers_5gpus", r"number\s*of\s*transfers\s*with\s*5\s*gpus?", "int", "Number of transfers with 5 GPUs"
    ),
    LabelledAnswer(
        "task5.transfers_grow_with_gpus",
        r"transfers\s*grow\s*with\s*the\s*number\s*of\s*gpus\s*(?:\(\s*yes\s*/\s*no\s*\))?",
        "yes_no",
        "Transfers grow with the number of GPUs (yes/no)",
    ),
]

_STEP_TIME = r"(?:step\s*-?\s*time|time\s*per\s*step)"


@dataclass(frozen=True)
class TableSpec:
    field: str
    # The header line must start with the first column's name, so prose that
    # mentions "step time" and "DEPTH" is not taken for the header.
    header_pattern: str
    key_name: str  # "depth" or "gpus"
    expected_keys: tuple[int, ...]
    has_memory_column: bool
    template_header: str


TABLES = [
    TableSpec(
        "task2.step_time_table",
        rf"^\W*depth\b.*{_STEP_TIME}",
        "depth",
        (6, 12, 24),
        False,
        "DEPTH | Step time (ms)",
    ),
    TableSpec(
        "task4.table",
        rf"^\W*(?:number\s*of\s*|#\s*|n\s*)?gpus?\b.*{_STEP_TIME}.*memory",
        "gpus",
        (2, 5),
        True,
        "GPUs | Step time (ms) | Memory per GPU (MiB)",
    ),
]

EXPLANATION_TASKS = (1, 2, 3, 4, 5)


def explanation_field(task: int) -> str:
    return f"task{task}.explanation"


# "Task 2 explanation", "Task 2 - Explanation:", "Explanation for Task 2".
EXPLANATION_HEADING = re.compile(
    r"^\W*(?:task\s*(?P<a>\d)\s*[-:.)]?\s*explanations?|explanations?\s*(?:for|of|to)?\s*task\s*(?P<b>\d))\b\s*[:.\-]?\s*"
)

# A line that starts another part of the report ends an explanation.
SECTION_START = re.compile(r"^\W*(?:task\s*\d|part\s*\d|question\s*\d)\b")


def expected_fields() -> list[str]:
    """Every answer the report must hold. A table that is there but lacks a
    row is reported as missing "task2.step_time_table[depth=24]" instead."""
    return (
        [a.field for a in LABELLED_ANSWERS]
        + [t.field for t in TABLES]
        + [explanation_field(task) for task in EXPLANATION_TASKS]
    )


def template_label(field_id: str) -> str | None:
    """How the report template labels this answer, for messages; None if it has no label."""
    for answer in LABELLED_ANSWERS:
        if answer.field == field_id:
            return answer.template_text
    for table in TABLES:
        if table.field == field_id:
            return f"the table '{table.template_header}'"
    for task in EXPLANATION_TASKS:
        if explanation_field(task) == field_id:
            return f"Task {task} explanation"
    return None
