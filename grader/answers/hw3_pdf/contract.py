"""What the HW3 report template promises: its labelled answers, tables and explanations.

student_template/hw3/REPORT_TEMPLATE.md is written from these lists; a label changed there
must change here too. Adding a question is adding an entry to a list below: the readers
(labels.py, tables.py, explanations.py) take every entry as it comes.

Patterns run on normalised text (lower case, dashes and spaces unified, see
layout.normalise); `\\s*` between words lets a label wrap onto the next line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


def _gpus_label(depth: int, gpus: int) -> str:
    # "Layers per GPU (DEPTH=6, 2 GPUs)", also "(depth = 6; 2 gpu)" or without brackets.
    return (
        rf"layers\s*per\s*gpu\s*[\(\[]?\s*depth\s*[=:]?\s*{depth}\s*[,;]?\s*{gpus}\s*gpus?\s*[\)\]]?"
    )


def _yes_no_label(words: str) -> str:
    # "... (yes/no):", "...? (yes or no)", "... [yes/no]", "... yes/no:" or just "...?".
    # No bare \s* at the end: a label with nothing after it must not run onto the next line.
    return words + r"(?:\s*\?)?(?:\s*[\(\[]?\s*yes\s*(?:/|or)\s*no\s*[\)\]]?(?:\s*\?)?)?"


# What may stand between a label and its answer: "Label: 3", "Label = 3", "Label | 3" (a
# table's cell), "Label -> 3", "Label? No".
LABEL_END = r"(?:[ \t]*[:=|>\-?])*[ \t]*"


@dataclass(frozen=True)
class LabelledAnswer:
    field: str
    pattern: str  # regex for the label, up to where the value starts
    # "int_list": "3, 3"; "int": one whole number; "yes_no": "yes" or "no" first, the rest
    # of the text kept as the explanation ({"value": "no", "explanation": "..."}).
    kind: str
    template_text: str  # as the template writes it, for messages
    # The handout's own question for it (hw3.txt: "Q1) How many layers are assigned to GPU 0
    # and GPU 1?"), which a report of the student's own structure answers after: read only
    # where the template's label is nowhere in the report.
    handout_pattern: str | None = None
    handout_text: str | None = None

    @property
    def task(self) -> int | None:
        found = re.match(r"task(\d+)\.", self.field)
        return int(found.group(1)) if found else None


# Before a handout's question: its number ("Q1)", "Q2:"), as the handout numbers Task 1's.
_HANDOUT_Q = r"(?:q\s*\d\s*[).:]\s*)?"

# Task 1 is about the provided code as the template ships it: DEPTH=6 on 2 GPUs, split by the
# handout's `if i < depth // 2`, so the data moves from GPU 0 to GPU 1 between layers 2 and 3
# (0-based), the 3rd and 4th counted from 1. The checks measure it (grader/checks/test_hw3.py);
# the reader needs it only to read a report's "3 and 4", which says no way of counting
# (labels.transfer_as_indices).
TASK1_DEPTH = 6
BASE_CODE_MOVE = (TASK1_DEPTH // 2 - 1, TASK1_DEPTH // 2)

LABELLED_ANSWERS = [
    LabelledAnswer("task1.layers_per_gpu", _gpus_label(6, 2), "int_list", "Layers per GPU (DEPTH=6, 2 GPUs)",
                   _HANDOUT_Q + r"how\s*many\s*layers\s*are\s*assigned\s*to\s*gpu\s*0\s*and\s*gpu\s*1\s*\?",
                   "Q1) How many layers are assigned to GPU 0 and GPU 1?"),
    LabelledAnswer(
        "task1.transfer_between", r"transfers?\s*between\s*layers", "int_list", "Transfer between layers"
    ),
    LabelledAnswer(
        "task2.depth_improves_speed",
        _yes_no_label(r"does\s*increasing\s*depth\s*improve\s*(?:the\s*)?speed"),
        "yes_no",
        "Does increasing DEPTH improve speed (yes/no)",
        _HANDOUT_Q + r"does\s*increasing\s*the\s*number\s*of\s*layers\s*improve\s*(?:the\s*)?speed\s*\?",
        "Does increasing the number of layers improve speed?",
    ),
    LabelledAnswer(
        "task4.all_gpus_utilised",
        _yes_no_label(r"all\s*gpus\s*utili[sz]ed\s*with\s*5\s*gpus?"),
        "yes_no",
        "All GPUs utilized with 5 GPUs (yes/no)",
        _HANDOUT_Q + r"are\s*all\s*(?:the\s*)?gpus\s*being\s*utili[sz]ed\s*\?",
        "Are all GPUs being utilized?",
    ),
    LabelledAnswer(
        "task4.more_gpus_faster",
        _yes_no_label(r"faster\s*with\s*5\s*gpus?\s*than\s*with\s*2(?:\s*gpus?)?"),
        "yes_no",
        "Faster with 5 GPUs than with 2 (yes/no)",
        _HANDOUT_Q + r"does\s*adding\s*more\s*gpus\s*make\s*(?:the\s*)?training\s*faster"
        r"(?:\s*in\s*this\s*(?:specific\s*)?setup)?\s*\?",
        "Does adding more GPUs make the training faster in this specific setup?",
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
        _yes_no_label(r"transfers\s*grow\s*with\s*the\s*number\s*of\s*gpus"),
        "yes_no",
        "Transfers grow with the number of GPUs (yes/no)",
    ),
]


@dataclass(frozen=True)
class Column:
    name: str  # the key in each row of the answer: "depth", "step_time_ms", ...
    header: str  # regex for the column's header cell
    kind: str  # "key" (whole number naming the row), "time_ms", "memory_mib_list"


_STEP_TIME = Column("step_time_ms", r"step\s*-?\s*times?|time\s*per\s*(?:\w+\s*){0,2}step|iteration\s*time", "time_ms")
_MEMORY = Column(
    "memory_per_gpu_mib",
    r"(?:peak\s*)?(?:gpu\s*)?(?:memory|\bmem\b)(?:\s*(?:usage|used|allocated))?"
    r"(?:\s*(?:per|/|of\s*each|on\s*each|by)\s*(?:gpu|device)s?)?",
    "memory_mib_list",
)


@dataclass(frozen=True)
class TableSpec:
    field: str
    key: Column
    values: tuple[Column, ...]
    expected_keys: tuple[int, ...]
    template_header: str
    # Whether rows at keys of the student's own choosing stand for the expected ones (Task 2's
    # "e.g., from 6 to 12, then 24"): as many rows as expected_keys make the table complete.
    own_keys_allowed: bool = False

    @property
    def task(self) -> int | None:
        found = re.match(r"task(\d+)\.", self.field)
        return int(found.group(1)) if found else None

    @property
    def key_name(self) -> str:
        return self.key.name


TABLES = [
    TableSpec(
        "task2.step_time_table",
        Column("depth", r"\bdepth\b|\b(?:number\s*of\s*|#\s*)?layers\b", "key"),
        (_STEP_TIME,),
        (6, 12, 24),
        "DEPTH | Step time (ms)",
        own_keys_allowed=True,
    ),
    TableSpec(
        "task4.table",
        Column("gpus", r"(?:\bnumber\s*of\s*|#\s*|\bnum\s*|\bn\s*)?\b(?:gpus?|devices)\b", "key"),
        (_STEP_TIME, _MEMORY),
        (2, 5),
        "GPUs | Step time (ms) | Memory per GPU (MiB)",
    ),
]

EXPLANATION_TASKS = (1, 2, 3, 4, 5)


def explanation_field(task: int) -> str:
    return f"task{task}.explanation"


# The question the report template asks under each "Task N explanation" heading
# (student_template/hw3/REPORT_TEMPLATE.md): a student filling the template in often keeps it
# above the answer, and it is no part of the answer (every student's would begin alike).
EXPLANATION_PROMPTS = {
    1: "At what exact point in the forward() method does the data move from GPU 0 to GPU 1, and why only there?",
    2: "Why or why not, based on your observations?",
    3: "Explain the logic you used to calculate which GPU receives which layer index.",
    4: "How are the GPUs used during a step, and why is it (not) faster?",
    5: "What is the relationship between the number of GPUs and the total communication overhead?",
}
_PROMPT_RES = {task: re.compile(r"^[\W_]*" + r"[\s*_`]+".join(re.escape(w) for w in prompt.split()) + r"[\s*_`]*",
                                re.IGNORECASE) for task, prompt in EXPLANATION_PROMPTS.items()}


def without_prompt(task: int, text: str) -> str:
    """`text` without the template's question at its start."""
    found = _PROMPT_RES[task].match(text) if task in _PROMPT_RES else None
    return text[found.end():] if found else text


# "Task 2 explanation", "1.2 Task 2 - Explanation:", "Explanation for Task 2", "Task 2: explanation".
EXPLANATION_HEADING = re.compile(
    r"^\W*(?:\d+(?:\.\d+)*\.?\s+)?(?:task\s*(?P<a>\d)\s*[-:.)]?\s*(?:explanation|answer)s?"
    r"|explanations?\s*(?:for|of|to)?\s*task\s*(?P<b>\d))\b\s*[:.\-]?\s*"
)

# A line that starts another part of the report ends an explanation; "1 Task 2", "2.1 Task 2".
SECTION_START = re.compile(r"^\W*(?:\d+(?:\.\d+)*\.?\s+)?(?:task|part|question|appendix)\s*(?P<task>\d*)\b")


def question_span(texts: list[str]) -> int:
    """How many of `texts` (a Question cell's lines, normalised, top to bottom) the question
    that opens the first of them runs over: a label or "Task N explanation" wrapped in a
    narrow cell. 0 when the first line opens none of the template's questions."""
    stream, starts = "", []
    for index, text in enumerate(texts):
        starts.append(len(stream))
        # A word hyphenated at the line's end ("im-" / "prove", as pdfTeX sets a narrow
        # column: a TA's clear "No" beside it went unread) is one word again.
        following = texts[index + 1] if index + 1 < len(texts) else ""
        hyphenated = re.search(r"[a-z]-$", text) and re.match(r"[a-z]", following)
        stream += text[:-1] if hyphenated else text + "\n"
    patterns = [r"[\W_]*" + a.pattern for a in LABELLED_ANSWERS] + [EXPLANATION_HEADING.pattern.lstrip("^")]
    end = max((m.end() for p in patterns if (m := re.match(p, stream))), default=0)
    return sum(1 for start in starts if start < end and stream[start:end].strip())


_LABELS_ALONE = [re.compile(r"[\W_]*" + a.pattern + LABEL_END) for a in LABELLED_ANSWERS]


def label_alone(text: str) -> bool:
    """Whether `text` (normalised) is one of the template's labels and nothing else: a
    Question cell, its answer in the cell beside it."""
    return any(label.fullmatch(text.strip()) for label in _LABELS_ALONE)


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


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def incomplete(field_id: str, value) -> str | None:
    """Why `value`, an answer to `field_id` as the report's reader or the answer sheet's gives
    it, is not a whole answer ("1 memory value for 2 GPUs", "no row for 5 GPUs"), or None
    when it is one (or the field is none of the report's). A yes/no is the sheet's bool or
    the report's {"value": "yes" | "no", ...}."""
    for spec in TABLES:
        if spec.field != field_id:
            continue
        rows = [row for row in value if isinstance(row, dict)] if isinstance(value, list) else []
        if not rows:
            return "no rows"
        keys = {row.get(spec.key.name) for row in rows}
        if not spec.own_keys_allowed or len(keys) < len(spec.expected_keys):
            absent = [k for k in spec.expected_keys if k not in keys]
            if absent:
                return "no row for " + ", ".join(f"{spec.key.name}={k}" for k in absent)
        for row in rows:
            for column in spec.values:
                cell = row.get(column.name)
                if column.kind == "memory_mib_list":
                    given = cell if isinstance(cell, list) else None
                    if given is None or not all(_number(v) for v in given):
                        return f"{spec.key.name}={row.get(spec.key.name)}: {column.name} not a list of numbers"
                    if len(given) != row.get(spec.key.name):
                        return f"{len(given)} memory value(s) for {row.get(spec.key.name)} GPUs"
                elif not _number(cell):
                    return f"{spec.key.name}={row.get(spec.key.name)}: {column.name} not a number"
        return None
    for answer in LABELLED_ANSWERS:
        if answer.field != field_id:
            continue
        if answer.kind == "int":
            return None if isinstance(value, int) and not isinstance(value, bool) else "not a whole number"
        if answer.kind == "int_list":
            return None if isinstance(value, list) and value and all(
                isinstance(v, int) and not isinstance(v, bool) for v in value) else "not a list of whole numbers"
        said = value.get("value") if isinstance(value, dict) else value
        return None if isinstance(said, bool) or said in ("yes", "no") else "not a yes or no"
    if field_id in {explanation_field(task) for task in EXPLANATION_TASKS}:
        return None if isinstance(value, str) and value.strip() else "no text"
    return None
