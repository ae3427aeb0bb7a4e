"""Read a student's answer sheet (`<assignment>/answers.yaml`) against the template's.

The template's sheet (student_template/<assignment>/answers.yaml) is the authority on which
ids exist and what type each answer has; the student's copy only supplies values. A value of
the wrong type is a problem with a message naming the id and what was expected, never a
crash, and that answer counts as not given.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from grader.common.locations import data_folder
from grader.common.safe_yaml import YamlError, load_yaml_text
from grader.common.text import did_you_mean

from .cell_forms import column_named_by_quantity, plain_measured, without_quantity_label
from .declined import says_not_done
from .keyed_lines import keyed_lines, printed_rank_lines
from .numbers import (APPROXIMATELY, HEDGE_WORDS, MAX_VALUE_CHARS, between_layers, chunk_shapes_said,
                      chunks_asked_about, column_in_another_unit, column_unit, compound_number_word,
                      counted_shape_said, decimal_mark, each_shape_said, formula_alone, gpu_count_given,
                      int_list_answering, int_list_in, int_lists_in, joined_groups, layer_pair_said,
                      measured_range_in, not_available, quantity_in, rows_of_counted_chunks, shape_in, shape_said,
                      shapes_in, shows_decimal_mark, size_each_said, size_of_equal_parts,
                      micro_batches_said, remark_on_count, times_shape_said, whole_number_in,
                      without_gpu_label, without_markdown, without_memory_totals,
                      worked_out_value)
from .yes_no import read_growth, read_in_the_questions_word, read_yes_no

TEMPLATE_ROOT = data_folder("student_template")   # beside grader/, or inside it in the student kit
MAX_SHEET_BYTES = 1 << 20  # a sheet is a few KiB; anything huge is not one


# The types a template's question may have ("gpu": a GPU's index, read from "cuda:0" too).
ANSWER_TYPES = frozenset({"int", "gpu", "bool", "str", "text", "list[int]", "list[list[int]]",
                          "table"})


@dataclass(frozen=True)
class Question:
    id: str
    type: str
    text: str
    columns: tuple[str, ...] = ()
    # Table columns of words (method: dp, ddp: multiple): kept as written, never read as numbers.
    text_columns: tuple[str, ...] = ()


@dataclass
class SheetAnswers:
    values: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    found: bool = False
    # Questions answered in words the reader does not take (each has its problem): written,
    # so never "not answered".
    unread: list[str] = field(default_factory=list)
    # id -> what the student is told of each: "your answer '...' could not be read as ...".
    unread_why: dict[str, str] = field(default_factory=dict)
    # Table cells it could not read (the table itself was): {id, row, column, text}.
    unread_cells: list[dict] = field(default_factory=list)
    # id -> the answer as written, of those not read: for the person who reads it (a pasted
    # nvidia-smi box, a TA's audit 27, had to be looked up in the YAML).
    unread_text: dict[str, str] = field(default_factory=dict)
    # id -> the answer as written, where it says the task was not done ("Not done", "N/A",
    # "skipped"): an empty answer, 0, the student told what they wrote, as the HW3 report's
    # (declined.py). It had been "found but could not read" under a number, held for a person.
    declined: dict[str, str] = field(default_factory=dict)


# The most of an unread answer kept to show (a runaway paste stays readable in instructor.md).
MAX_UNREAD_TEXT = 4000


def written_text(raw: Any) -> str:
    """An answer as the student wrote it, for a person: text as is, anything else as YAML shows it."""
    text = raw if isinstance(raw, str) else repr(raw)
    return text if len(text) <= MAX_UNREAD_TEXT else \
        text[:MAX_UNREAD_TEXT] + f"\n... [{len(text) - MAX_UNREAD_TEXT} more characters]"


class NotRead(ValueError):
    """An answer written in a form the reader does not take. str(): the problem as the sheet's
    problems list it ("expected X, got 'raw'"); `said`: what the student is told ("your answer
    'raw' could not be read as X"), never "no answer found" for an answer that is there."""

    def __init__(self, problem: str, said: str):
        super().__init__(problem)
        self.said = said


def _refused(expected: str, raw: Any, hint: str = "") -> NotRead:
    hint = f": {hint}" if hint else ""
    text = " ".join((raw if isinstance(raw, str) else repr(raw)).split())
    quoted = repr(text[:117] + "..." if len(text) > 120 else text)
    return NotRead(f"expected {expected}, got {raw!r}{hint}",
                   f"your answer {quoted} could not be read as {expected}{hint}")


def template_questions(assignment: str, root: Path = TEMPLATE_ROOT) -> dict[str, Question]:
    data = yaml.safe_load((root / assignment / "answers.yaml").read_text(encoding="utf-8"))
    return {qid: Question(qid, spec["type"], spec.get("question", ""),
                          tuple(spec.get("columns", ())), tuple(spec.get("text_columns", ())))
            for qid, spec in (data.get("answers") or {}).items()}


def read_sheet(path: Path, questions: dict[str, Question], display: str) -> SheetAnswers:
    result = SheetAnswers()
    if not path.is_file():
        return result
    result.found = True
    if path.stat().st_size > MAX_SHEET_BYTES:
        result.problems.append(f"{display} is larger than 1 MiB; it was not read")
        return result
    try:
        # Bounded: a few hundred bytes of nested aliases must not expand in the grader.
        data = load_yaml_text(sheet_text(path.read_bytes()), source=display,
                              max_bytes=MAX_SHEET_BYTES)
    except UnicodeDecodeError as error:
        result.problems.append(f"{display} is not UTF-8 text ({error.reason}); no answer of it was read")
        return result
    except YamlError as error:
        result.problems.append(f"{str(error)[:300]}; no answer of it was read")
        return result
    answers = data.get("answers") if isinstance(data, dict) else None
    if not isinstance(answers, dict):
        result.problems.append(f"{display} has no 'answers:' mapping; keep the template's layout")
        return result
    for qid, entry in answers.items():
        question = questions.get(str(qid))
        if question is None:
            # What it says is shown: a remark a student adds under a key of their own (a TA's
            # audit: `task4.comment`) reaches the person who reads instructor.md.
            said = entry.get("value", entry) if isinstance(entry, dict) else entry
            said = " ".join(str(said).split()) if said not in (None, "") else ""
            shown = f" (it says: {said[:157] + '...' if len(said) > 160 else said!s})" if said else ""
            # A typo's question is named (a student had to pair this line with the "not
            # found" list themselves): of those the sheet leaves unanswered, so that a remark
            # under a key of its own (task5.comment_2gpus) is not taken for a typo.
            unanswered = [q for q in questions if q not in {str(k) for k in answers}]
            result.problems.append(f"{display}: '{qid}' is not a question of this sheet"
                                   f"{did_you_mean(str(qid), unanswered)}; ignored{shown}")
            continue
        raw = entry.get("rows" if question.type == "table" else "value") \
            if isinstance(entry, dict) else entry  # a bare `id: 3` is accepted too
        if says_not_done(raw):
            result.declined[question.id] = " ".join(raw.split())
            continue
        notes: list[str] = []
        try:
            value = coerce(raw, question, notes)
        except ValueError as error:
            result.problems.append(f"{display}: {qid}: {error}")
            result.unread.append(question.id)
            result.unread_why[question.id] = error.said if isinstance(error, NotRead) else \
                f"your answer could not be read: {error}"
            result.unread_text[question.id] = written_text(raw)
            continue
        except (ArithmeticError, TypeError, RecursionError) as error:   # one answer fails alone
            result.problems.append(f"{display}: {qid}: could not be read ({type(error).__name__}); "
                                   "write the value as the template shows")
            result.unread.append(question.id)
            result.unread_why[question.id] = ("your answer could not be read; write the value as "
                                              "the template shows")
            result.unread_text[question.id] = written_text(raw)
            continue
        # What was read with a remark for a person (a range of times read as its middle).
        result.problems += [f"{display}: {qid}: {note}" for note in notes]
        if value is not None:
            result.values[question.id] = value
            if question.type == "table":
                result.unread_cells += cells_not_read(value, question)
    return result


def cells_not_read(rows: list[dict], question: Question) -> list[dict]:
    """The cells of a table that stayed words where the column wants a number or a list ("about
    7-8 ms", "4 x 13 + 12"): for a person, as unread answers are. A column of words, and a
    value said not to be available ("n/a" where nvidia-smi could not run), are no such cells."""
    cells = []
    for number, row in enumerate(rows, 1):
        key = row.get(question.columns[0]) if question.columns else None
        label = str(number) if key is None else str(key)
        for column, value in row.items():
            if column in question.text_columns:
                continue
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, str) and not not_available(item):
                    cells.append({"id": question.id, "row": label, "column": column, "text": item})
    return cells


def sheet_text(data: bytes) -> str:
    """An answer sheet's text in the encodings Windows editors save: UTF-8 (with or without
    Notepad's BOM), UTF-16 with its BOM (Notepad's "Unicode"), else Windows-1252 ("ANSI"):
    a sheet saved so lost its answers (a batch audit). Bytes none of them reads raise."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("cp1252")


# The template's placeholder, or one a student leaves for later: not an answer ("you reported ?"
# had been a wrong answer, flagged to the instructor as a disagreement).
_PLACEHOLDER = re.compile(r"\s*(?:\?+|\.{2,}|…|[-–—]+|_+|todo|tbd|tba|yes\s*/\s*no)\s*", re.IGNORECASE)
_DASH = re.compile(r"\s*[-–—]+\s*")


def coerce(raw: Any, question: Question, notes: list[str] | None = None) -> Any:
    """The answer in its template type, None when not answered; ValueError when it cannot be.
    `notes`: where given, what was read with a remark for a person is added to it."""
    if raw is None or (isinstance(raw, str) and not raw.strip()) or raw == []:
        return None
    if isinstance(raw, str) and len(raw) <= 40 and _PLACEHOLDER.fullmatch(raw):
        return None
    kind = question.type
    if kind in ("text", "str"):
        return str(raw).strip()
    if isinstance(raw, str) and len(raw) > MAX_VALUE_CHARS and kind == "table":
        raise _pasted(raw, question)
    if isinstance(raw, str) and len(raw) > MAX_VALUE_CHARS and kind != "bool":
        raise ValueError(f"{len(raw)} characters where a value is expected; write the value alone")
    if isinstance(raw, str) and kind != "table":
        raw = without_markdown(raw)   # "**1**", "`20`": a sheet written like a README
    if kind == "int":
        part = size_of_equal_parts(raw, question.text) if isinstance(raw, str) else None
        part = micro_batches_said(raw, question.text) if part is None and isinstance(raw, str) else part
        if part is not None:
            return part   # "32 + 32" for the samples each rank processes: 32 each
        # "With 5 GPUs: 4" under "... on 5 GPUs: how many ...?" is 4
        return _int(raw, gpus=gpu_count_given(question.text))
    if kind == "gpu":
        return _int(raw, gpu=True)
    if kind == "bool":
        return _yes_no(raw, question.text)
    if kind == "list[int]":
        if _is_about_a_shape(question) and isinstance(raw, str) and shape_in(raw) is not None:
            return shape_in(raw)   # "64x1000", as shapes are written
        # The question's words decide a few forms: "3 each" for each GPU it names, "before
        # layer 3" for a move between two layers.
        try:
            found = _int_list(raw, question.text)
            said = layer_pair_said(raw) if isinstance(raw, str) and between_layers(question.text) else None
            if said is not None and said.counted_from == 1 and notes is not None:
                # "3rd and 4th": the student counts from 1, and says so; the question asks for
                # 0-based indices, so the pair is theirs minus one, said to a person.
                notes.append(f"'{raw}' read as layers counted from 1, which are the 0-based indices "
                             f"{' and '.join(map(str, found))}")
            return found
        except NotRead:
            # The line the script prints ("Output shape: torch.Size([64, 1000])"), a shape
            # with a remark ("64 x 1000 (batch x features)").
            said = shape_said(raw) if _is_about_a_shape(question) and isinstance(raw, str) else None
            if said is None:
                raise
            return said
    if kind == "list[list[int]]":
        lists = int_lists_in(raw) if isinstance(raw, str) else None
        if lists is None and isinstance(raw, str) and _is_about_a_shape(question):
            # "32x1000, 32x1000"; the lines Part 2 prints ("Processing chunk 0 with shape ...").
            lists = shapes_in(raw) or chunk_shapes_said(raw)
            # "2 chunks of 32x1000 each": the count the student gives (the check then holds it
            # to the code's), else "32x1000 each": as many as the question's chunks, if it says.
            each = (counted_shape_said(raw) or times_shape_said(raw) or each_shape_said(raw)) \
                if lists is None else None
            if each is not None:
                shape, count = each[0], each[1] or chunks_asked_about(question.text)
                return [shape] * count if count else {"each": shape}
        if lists is not None:
            return lists
        if isinstance(raw, list) and _is_about_a_shape(question) \
                and all(isinstance(item, str) and shape_in(item) for item in raw):
            return [shape_in(item) for item in raw]   # ["32x1000", "32x1000"]
        if not isinstance(raw, list):
            rows_only = _is_about_a_shape(question) and isinstance(raw, str) and rows_of_counted_chunks(raw)
            raise _refused("a list of lists such as [[32, 16], [32, 16]]", raw,
                           "one size is a chunk's rows, not its shape: write each chunk's whole shape, "
                           "e.g. '2 chunks of 32x16 each'" if rows_only else "")
        return [_int_list(inner) for inner in raw]
    if kind == "table":
        return _table(raw, question, notes)
    raise ValueError(f"unknown answer type {kind!r} in the template")


# A yes/no copied with the label the script prints before it ("Outputs equal: True"): a few
# words and a colon. A label that says no itself ("Not equal: True") is left for a person.
_PRINTED_LABEL = re.compile(r"^(?P<label>[A-Za-z][A-Za-z ()]{0,40}?)\s*[:=]\s*(?P<rest>\S.*)$", re.S)
_NEGATION = re.compile(r"\b(?:not|no|never|yes|true|false)\b|n't|\b(?:un|in|non-?)(?:equal|identical|"
                       r"same)|\bdiffer", re.I)


def _is_about_a_shape(question: Question) -> bool:
    return "shape" in question.id.lower()


def _yes_no(raw: Any, question: str = "") -> bool | None:
    """`no` (YAML's false), "No.", "no, because ...", or the PDF reader's shape
    {value: no, explanation: ...}; the same rule as the PDF report (yes_no.read_yes_no). A
    sentence saying the question's own comparative word or its antonym, and nothing else,
    answers too ("faster?": "It got slower."; yes_no.read_in_the_questions_word)."""
    if isinstance(raw, dict) and "value" in raw:
        raw = raw["value"]
        if raw is None:
            return None
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip()
    if text.lower() == "y":
        return True
    if text.lower() == "n":
        return False
    # "Linearly: N - 1" to "does it grow with the number of GPUs?" (yes_no.read_growth).
    answer = read_growth(text, question) or read_yes_no(text)
    label = _PRINTED_LABEL.match(text)
    if not answer.answered and label and not _NEGATION.search(label["label"]):
        answer = read_yes_no(label["rest"])   # "Outputs equal: True", the script's own line
    if not answer.answered and not answer.unanswered and not answer.hedged:
        answer = read_in_the_questions_word(text, question)
    if answer.answered:
        return answer.value == "yes"
    if answer.unanswered:
        return None
    if answer.hedged:
        raise _refused("one answer, yes or no", raw, "it gives both or takes its answer back "
                       "('maybe', 'it depends', 'or ...'); choose one and explain after it")
    raise _refused("yes/no (true/false)", raw, "write yes or no first")


def _int(raw: Any, gpu: bool = False, gpus: int | None = None) -> int:
    """3, "3", "one", "32 per GPU", "cuda:0" (numbers.whole_number_in); `gpus`: the GPU count
    the question gives as its setting."""
    if isinstance(raw, bool):
        raise ValueError(f"expected a whole number, got {raw!r}")
    if isinstance(raw, int):
        return raw
    if isinstance(raw, float) and raw.is_integer():
        return int(raw)
    if isinstance(raw, str):
        # A calculation of numbers alone ("5 - 1", "13 x 4 + 12") is its value here, where the
        # question asks for one count; never for a GPU's index.
        number = whole_number_in(raw, gpu=gpu, gpus=gpus, arithmetic=not gpu)
        if number is not None:
            return number
        remark = _DASHED_REMARK.fullmatch(raw)
        if remark is not None and not re.search(r"\bnot\b", remark["remark"], re.IGNORECASE) \
                and remark_on_count(remark["remark"], int(remark["number"])):
            return int(remark["number"])   # "2 - ranks 0 and 1": the count, then words on it
        if compound_number_word(raw):   # "thirty-two": no formula, though its hyphen reads as one (adv55 I)
            raise _refused("a whole number", raw, "a number in words is read up to twenty: write it in digits")
        if formula_alone(raw):   # "N - 1": which number N is, the answer does not say
            raise _refused("a whole number", raw, "a formula, not its value: write the number it "
                           "comes to here (with the formula if you like: 'formula = number')")
    raise _refused("a whole number", raw)


# A count, a dash, then words about it ("2 - one per data-parallel replica"), as "2 (ranks 0
# and 1)" is read (adv51 F8); never "5 - 1" (a calculation: its words start with no letter).
# A comma the same ("2, one for each data-parallel replica", adv55 I); never "2, 4" nor "2, or 4".
_DASHED_REMARK = re.compile(r"\s*(?P<number>\d+)(?:\s+[-–—]|\s*,)\s+(?P<remark>[A-Za-z].*)", re.DOTALL)


def _int_list(raw: Any, question: str = "") -> list[int]:
    if isinstance(raw, str):  # "3, 3", "[3, 3]", "32/32", "torch.Size([64, 1000])"
        found = int_list_answering(raw, question)
        idle = _IDLE_REMARK.fullmatch(raw) if found is None else None
        if idle is not None and not re.search(HEDGE_WORDS, idle["remark"], re.IGNORECASE):
            found = int_list_answering(idle["listed"], question)   # "[0, 1] (2 and 3 idle)"
            if found is not None and {int(n) for n in re.findall(r"\d+", idle["remark"])} & set(found):
                found = None   # "[0, 1] (1 idle)": the remark takes back a GPU listed
        if found is None:
            raise _refused("a list of whole numbers such as [5, 4] or 5, 4", raw)
        return found
    if isinstance(raw, dict):
        raw = _by_gpu(raw)   # {0: 3, 1: 3}, {"GPU 0": 3, "GPU 1": 3}: the values, GPU 0's first
    if not isinstance(raw, (list, tuple)):
        raise _refused("a list of whole numbers such as [5, 4] or 5, 4", raw)
    if _numpy_printed(raw):
        return _int_list(raw[0], question)   # [3 3]: YAML's ['3 3'], numpy's way of printing [3, 3]
    return [_int(item, gpu=True) for item in raw]


# A list, then a remark in brackets on the GPUs left out ("[0, 1] (2 and 3 idle)", adv51 F8).
_IDLE_REMARK = re.compile(r"\s*(?P<listed>[^()]*?\S)\s*\((?P<remark>[^()]*\b(?:idle|unused|not\s+used|"
                          r"free|empty)\b[^()]*)\)\s*\.?\s*", re.IGNORECASE)


def _by_gpu(raw: dict) -> list | dict:
    """A mapping keyed by GPU ({0: 3, 1: 3}, {"GPU 0": 3, "cuda:1": 3}) as its values in the
    GPUs' order (adv51 F8), where its keys are exactly GPUs 0 .. n-1; else as written (refused)."""
    keys = [key if isinstance(key, int) and not isinstance(key, bool) else
            whole_number_in(str(key), gpu=True) if re.fullmatch(r"\s*(?:gpu|cuda)?\s*:?\s*\d+\s*", str(key),
                                                               re.IGNORECASE) else None
            for key in raw]
    if None in keys or sorted(keys) != list(range(len(keys))):
        return raw
    return [value for _, value in sorted(zip(keys, raw.values()))]


# numpy prints an array without commas ("[3 3]", "[80.3 80.1 80.6]"); pasted into the sheet,
# YAML reads it as a list of ONE string, "3 3": the numbers it lists, never the first alone.
_SPACED_NUMBERS = re.compile(r"\s*-?\d+(?:\.\d*)?(?:\s+-?\d+(?:\.\d*)?)+\s*")


def _numpy_printed(raw: Any) -> bool:
    return isinstance(raw, (list, tuple)) and len(raw) == 1 and isinstance(raw[0], str) \
        and _SPACED_NUMBERS.fullmatch(raw[0]) is not None


# One value said for every GPU of the row in a per-GPU column ("200 MiB per GPU", "~80 each",
# "about 0.2 GB on each GPU"), as "3 each" is in a list of layers per GPU (numbers._EACH_RE).
_EVERY_GPU = re.compile(r"(?P<value>.+?)\s*(?:each|apiece|per\s+gpu|(?:on|for|in)\s+(?:each|every)"
                        r"(?:\s+gpu)?)\s*\.?\s*", re.IGNORECASE)


def _cell(raw: Any, column: str, mark: str | None = None, gpus: int | None = None,
          notes: list[str] | None = None) -> Any:
    """A table cell: a number in the column's unit where its name gives one (step_time_s,
    memory_mib: "7.5 ms", "1012MiB", "38%", "1 234 ms"; a narrow range of times its middle), a
    list ("22/22/20", "[cuda:0, cuda:2]"), a whole number ("Rank 0", "8 samples"), else the
    words as written (method: dp). `mark`: the decimal mark the table's numbers of this kind
    show (_table_marks); `gpus`: the row's GPU count, for one value said "each" in a per-GPU
    column or a split; `notes`: what was read with a remark for a person is added to it."""
    unit = column_unit(column)
    if _numpy_printed(raw):
        return _cell(raw[0], column, mark, gpus, notes)   # [80.3 80.1]: YAML's ['80.3 80.1']
    if isinstance(raw, list):
        return [_list_item(item, unit, mark) for item in raw]
    if not isinstance(raw, str):
        return raw
    text = without_markdown(raw.strip())
    if unit is not None:
        said = text
        text = _CLOCK_REMARK.sub("", text)
        as_written, text = text, plain_measured(text, column, unit)   # "Median step time: 56 ms"
        if unit == "mib":
            text = without_memory_totals(text)   # nvidia-smi's "1012MiB / 81920MiB": one GPU's 1012
        # In a cell of one value per GPU a plain space may list them ("100 100"): no grouping.
        per_gpu = "per_gpu" in column
        _never_guessed(joined_groups(text, spaces=not per_gpu), unit, mark, column)
        every = (_EVERY_GPU.fullmatch(said) or _EVERY_GPU.fullmatch(text)) if per_gpu and gpus else None
        if every is not None and quantity_in(every["value"], unit, mark) is not None:
            return [quantity_in(every["value"], unit, mark)] * gpus
        one = quantity_in(text, unit, mark, spaces_group=not per_gpu)
        values = _quantities(text, unit, mark, column)
        if values is None and per_gpu and _SPACED_NUMBERS.fullmatch(text):
            values = [quantity_in(part, unit, mark) for part in text.split()]   # numpy's "80.3 80.1"
        if values is not None and per_gpu:   # one value per GPU: a list
            return values
        if one is None and values is not None and unit == "mib" and len(values) == 2 \
                and values[1] > values[0] and "/" in text:
            return values[0]   # nvidia-smi's "1012MiB / 81920MiB": used of total
        if one is None:
            one = _value_with_remark(text, unit, mark)   # "0.081 (10 steps)"
        span = measured_range_in(text, unit, mark) if one is None else None
        # numbers says why the middle: a narrow range of times, any percentage range in 0-100
        if span is not None and (span.within(0, 100) if unit == "percent" else span.narrow):
            shown = f"{span.middle:g} {'%' if unit == 'percent' else unit}"
            if notes is not None:
                notes.append(f"{column} '{said}' read as {shown}, the middle of its range")
            return span.middle
        return one if one is not None else as_written
    if column == "split" and gpus:
        each = size_each_said(text)   # "32 each", "2 chunks of 32 each": every GPU's of the row
        if each is not None:
            size, count = each
            return [size] * gpus if count in (None, gpus) else text
    lead = _COUNT_WITH_REMARK.fullmatch(text)
    each_kind = _EACH_KIND.fullmatch(lead["remark"]) if lead is not None and column.startswith("passes") else None
    if each_kind is not None and each_kind["forward"] == each_kind["backward"] \
            and int(lead["count"]) == 2 * int(each_kind["forward"]):
        # "4 (2 forward + 2 backward)": Practical 10's "how many forward/backward steps" counts a
        # forward with its backward as one step, as the check does: the breakdown is the answer
        # (adv55 B), k, not the passes' total, 2k. Unequal kinds keep the total (a3d6391).
        return int(each_kind["forward"])
    if "=" in text:
        # "64/2 = 32": a formula with its value, read as a single answer's (a TA's audit29 D3:
        # the cell was kept as words, scored wrong, where the same scalar answer was read).
        worked = worked_out_value(text)
        if worked is not None:
            return worked
    listed = int_list_in(text)
    if listed is not None:
        return listed[0] if len(listed) == 1 else listed
    times = _TIMES.fullmatch(text) if column not in ("split", "gpus") else None
    if times is not None:   # "2x", "8x fwd/bwd": how many times, where a count is asked
        return text if re.search(HEDGE_WORDS, text, re.IGNORECASE) else int(times["count"])
    if lead is not None and not remark_on_count(lead["remark"], int(lead["count"])):
        return text   # "32 (16)", "2 (maybe 4)": a second answer offered, for a person (adv54 F3)
    if lead is not None and whole_number_in(text) is not None:
        return whole_number_in(text)   # "32 (64/2)": the number, then how it comes, as a scalar's
    if re.fullmatch(r"-?\d+\.\d+", text):
        return float(text)
    number = whole_number_in(text)
    if number is not None and re.search(r"[a-z]", text, re.IGNORECASE):
        return number
    return text  # a word, e.g. method: dp


# A count said as how many times ("2x", "8x fwd/bwd"); never a shape ("4x13") nor a product.
_TIMES = re.compile(r"\s*(?P<count>\d+)\s*[x×](?:\s+[A-Za-z][A-Za-z/+ ]*)?\s*\.?\s*", re.IGNORECASE)
# Passes counted by kind in a remark: "2 forward + 2 backward", "8 fwd and 8 bwd".
_EACH_KIND = re.compile(r"\s*(?P<forward>\d+)\s*(?:forwards?|fwd|fw)\s*(?:passes)?\s*(?:\+|,|&|\band\b|/)\s*"
                        r"(?P<backward>\d+)\s*(?:backwards?|bwd|bw)\s*(?:pass(?:es)?)?\s*", re.IGNORECASE)
# A number, then a remark on it in brackets ("32 (64/2)"): whole_number_in reads it.
_COUNT_WITH_REMARK = re.compile(r"\s*(?P<count>\d+)\s*\((?P<remark>[^()]*)\)\s*\.?\s*")
# A value, then a remark in brackets ("0.081 (10 steps)", "7.5 ms (median)").
_VALUE_WITH_REMARK = re.compile(r"\s*(?P<value>[^()]*?\d[^()]*?)\s*\((?P<remark>[^()]*)\)\s*\.?\s*")


def _value_with_remark(text: str, unit: str, mark: str | None) -> float | int | None:
    """The value of "0.081 (10 steps)" in the column's unit, as a single answer's "N (remark)"
    is read (adv51 F5: the cell had stayed words, scored 0). None where the brackets name a
    unit ("7.5 (ms)", read before this as 7.5 ms by cell_forms where it is of the column's kind;
    "842 (ms)" in a MiB column: another kind's, never read past), a GPU count ("1.72 (2 GPUs)": measured on which
    setup) or another answer ("0.08 (or 0.09)", "1.2 (maybe 1.5)", "3.1 (2.5)": a hedge, or a
    number that counts nothing, adv54 F3): left for the check to say so."""
    found = _VALUE_WITH_REMARK.fullmatch(text)
    if found is None or re.search(HEDGE_WORDS + r"|\bgpus?\b", found["remark"], re.IGNORECASE) \
            or re.search(r"\d(?![\d.,]*\s*[A-Za-z])", found["remark"]) \
            or re.search(r"\d[\d.,]*\s*" + _UNIT_WORDS + r"\b", found["remark"], re.IGNORECASE) \
            or quantity_in("1 " + found["remark"], unit, mark) is not None \
            or re.fullmatch(r"\s*(?:in\s+)?" + _UNIT_WORDS + r"\s*", found["remark"], re.IGNORECASE):
        return None   # "842 (ms)" in a MiB column: a unit of another kind is never read past
    return quantity_in(found["value"], unit, mark)


def _never_guessed(text: str, unit: str, mark: str | None, column: str) -> None:
    """ValueError for a time or percentage like "1,826" that nothing in its table decides: 1826
    or 1.826 (an adversary's '912, 1,826, 3,652 ms' was read 912, 1.826, 3.652). MiB stay
    grouped thousands ("1,012 MiB"), as nvidia-smi's readers write them."""
    if unit == "mib" or mark is not None:
        return
    for token in re.findall(r"\d+(?:[.,]\d+)+", text):
        if "," in token and shows_decimal_mark(token) is None:
            whole, _, frac = token.partition(",")
            raise ValueError(f"{column} '{text}' could be {whole}{frac} or {whole}.{frac}: nothing "
                             "else in the table shows which; write it without the comma, or with "
                             "a decimal point")


_BARE_NUMBER = re.compile(r"\s*(?:" + APPROXIMATELY + r"\s*)?\d+(?:[.,]\d+)*\s*", re.IGNORECASE)
# Which clock or how a value was measured, said after it as `pdl-grade run` asks students
# without a GPU to ("1.720 ms (simulated)", "0.608 ms, simulated", "2.040 (sim.)", "1.727
# (simulated clock)", "80.1 MiB (peak)", "1.72 ms/step", "80 MiB each"): a remark on the value,
# not part of it. A unit in brackets ("0.0075 (s)") is no remark, nor one with a number in it.
_UNIT_WORDS = r"(?:ms|s|sec|secs|seconds?|µs|us|mib|mb|gib|gb|kib|kb|bytes?|%)"
_CLOCK_REMARK = re.compile(r"(?<=[\d\w.)])\s*(?:"
                           # a remark in brackets with no number and no unit alone in it
                           r"\((?![^()]*\d)(?![^()]*(?:" + HEDGE_WORDS + r"))(?!\s*" + _UNIT_WORDS +
                           r"\s*\))[^()]*\)|"
                           r",?\s+(?:simulated|sim\.|virtual|median|measured|average|avg\.?|mean|peak)"
                           r"(?:\s+(?:clock|time|gpus?|run|on\s+(?:the\s+)?cpu))?|"
                           r"\s*/\s*(?:step|iter(?:ation)?)|\s+per\s+(?:step|iter(?:ation)?)|\s+each)\s*\.?\s*$",
                           re.IGNORECASE)


def _quantities(text: str, unit: str, mark: str | None = None, column: str = "") -> list | None:
    """Several values of one unit in one cell: "80, 80", "80 MiB / 80 MiB", "1,5 GiB, 1,5 GiB";
    "80,80" too, but only where nothing else separates them and the parts are alike ("1012,5"
    is one value with a decimal comma); each may be labelled with its GPU and the `column`'s
    quantity, as the script prints it ("GPU 0: max memory allocated 200.4 MiB"). None unless
    there are two or more and each is one."""
    body = text.strip("[]() ")
    separated = re.search(r",\s|[/;|]|\band\b", body) is not None
    if separated:
        parts = re.split(r"\s*(?:,\s+|[/;|]|\band\b)\s*", body)
    else:
        parts = body.split(",")
        if len({len(part.strip()) for part in parts}) != 1:
            return None
    parts = [without_gpu_label(without_quantity_label(part, column, gpu_label=True))
             for part in parts if part.strip()]
    # A unit written once, after the last value, is every value's ("0.2, 0.2 GB").
    last = re.fullmatch(r"\s*(?:" + APPROXIMATELY + r"\s*)?[\d.,eE+-]+\s*([a-zµμ]+)\s*\.?\s*", parts[-1],
                        re.IGNORECASE) if parts else None
    if last is not None and all(_BARE_NUMBER.fullmatch(part) for part in parts[:-1]):
        parts = [f"{part.strip()} {last.group(1)}" for part in parts[:-1]] + parts[-1:]
    # Split at a separator, each part is one value: spaces in it group thousands ("1 012 MiB").
    values = [quantity_in(part, unit, mark, spaces_group=separated) for part in parts]
    return values if len(values) > 1 and all(v is not None for v in values) else None


def _list_item(raw: Any, unit: str | None, mark: str | None = None) -> Any:
    """A number in the column's unit; a GPU written as a device ("cuda:2") is its index; a
    value labelled with its GPU ("cuda:0: 80") is the value."""
    if isinstance(raw, bool) or not isinstance(raw, str):
        return raw
    raw = without_markdown(raw)
    text = without_gpu_label(raw)
    if unit is not None:
        value = quantity_in(text, unit, mark)
        if value is not None:
            return value
    number = whole_number_in(text, gpu=text == raw)
    if number is None and re.fullmatch(r"\s*-?\d+[.,]\d+\s*", text):
        return float(text.replace(",", "."))
    return raw.strip() if number is None else number  # the check says what it is not


def markdown_rows(text: str, question: Question) -> list[dict] | None:
    """A table written in Markdown as the table's text ("| DEPTH | Step time (ms) |", its rows),
    each header named like its column ("Step time (ms)" is step_time_ms); None when the text is
    no such table (markdown_table says why)."""
    return markdown_table(text, question)[0]


# A Markdown table's rule line under its header ("|---|:-:|", "---|---").
_RULE_LINE = re.compile(r"\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?")


def _pipe_cells(line: str) -> list[str]:
    line = line.strip()
    line = line[1:] if line.startswith("|") else line
    line = line[:-1] if line.endswith("|") else line
    return [cell.strip() for cell in line.split("|")]


def markdown_table(text: str, question: Question) -> tuple[list[dict] | None, str | None]:
    """(the rows, None) for a pipe table: a header naming the table's columns, then its rows,
    with the rule line under the header or without it (the handout's Part 4 table copied as
    pipe rows, "#GPUs | Batch Size | Split per GPU" first: a TA's audit lost a whole right
    table so); (None, why not) for pipe rows that are no such table; (None, None) for text that
    has no pipe rows at all."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if len(lines) < 2 or not all("|" in line for line in lines if not _RULE_LINE.fullmatch(line)):
        return None, None
    ruled = _RULE_LINE.fullmatch(lines[1]) is not None
    body = [_pipe_cells(line) for line in lines[2 if ruled else 1:] if not _RULE_LINE.fullmatch(line)]
    first = _pipe_cells(lines[0])
    header = [_column_name(without_markdown(cell)) for cell in first]
    # "| Median step time |" over "56.23 ms" cells (adv55 D): the quantity named, its unit in every cell.
    header = [name if _names_a_column(name, question) else
              column_named_by_quantity(without_markdown(cell), question.columns,
                                       [row[i] if i < len(row) else "" for row in body]) or name
              for i, (cell, name) in enumerate(zip(first, header))]
    columns = ", ".join(question.columns)
    unknown = [cell for cell, name in zip(first, header) if not _names_a_column(name, question)]
    if unknown and not ruled:
        return None, (f"its first line '{lines[0]}' is not a header of the table's columns ({columns}): "
                      f"start it with one, e.g. '| {' | '.join(question.columns)} |'")
    if unknown:
        return None, (f"its header names {', '.join(repr(cell) for cell in unknown)}, which "
                      f"{'is' if len(unknown) == 1 else 'are'} not a column of this table ({columns})")
    if not body:
        return None, "it has a header but no rows under it"
    longer = next((number for number, row in enumerate(body, 1) if len(row) > len(header)), None)
    if longer is not None:
        return None, (f"its row {longer} ('{' | '.join(body[longer - 1])}') has {len(body[longer - 1])} cells "
                      f"where the header has {len(header)}")
    return [{name: value for name, value in zip(header, row) if value} for row in body], None


# The handouts' own headers of the sheet's tables (Practical 5: "Set up | Step Time (sec) |
# Total Time (sec)", "#GPUs | Batch Size | Split per GPU"; nvidia-smi's "GPU-Util" and
# "Memory-Usage"), as the columns the template names them; each only where the table has that
# column. Units in a header are read as a column named in another unit is ("Step Time (sec)").
HANDOUT_HEADERS = {"set_up": "method", "setup": "method", "split_per_gpu": "split",
                   "gpu_util": "utilization_percent", "memory_usage": "memory_mib",
                   # The short forms students head nvidia-smi's two numbers with where the
                   # handout gives no header (Practical 5's Part 5): "Util %", "Mem MiB".
                   "util": "utilization_percent", "util_percent": "utilization_percent",
                   "utilization": "utilization_percent", "gpu_utilization": "utilization_percent",
                   "utilisation": "utilization_percent", "gpu_util_percent": "utilization_percent",
                   "mem": "memory_mib", "mem_mib": "memory_mib", "memory": "memory_mib",
                   "used_mib": "memory_mib", "memory_used": "memory_mib",
                   "memory_used_mib": "memory_mib", "mem_used": "memory_mib",
                   "mem_used_mib": "memory_mib", "gpu_memory": "memory_mib",
                   "gpu_memory_mib": "memory_mib"}
# A column of the handout's table the sheet does not ask for: left out where no column of the
# table is about batches (P5's split table: the batch of 64). Any other unknown column is
# refused, never dropped: its cells may be the answer under a name the reader does not know
# (P10's micro-batch size written "batch_size").
LEFT_OUT = {"batch_size": "batch"}


def _names_a_column(name: str, question: Question) -> bool:
    return name in question.columns or column_in_another_unit(name, question.columns) is not None \
        or HANDOUT_HEADERS.get(name) in question.columns or _left_out(name, question)


def _left_out(name: str, question: Question) -> bool:
    about = LEFT_OUT.get(name)
    return about is not None and name not in question.columns \
        and not any(about in column for column in question.columns)


def _column_name(text: str) -> str:
    """A header or key as a column's name: "Step time (ms)" is step_time_ms."""
    return re.sub(r"[^a-z0-9]+", "_", str(text).lower()).strip("_")


def _in_the_tables_units(row: dict, question: Question) -> dict:
    """The row with a column named in another unit (step_time_s, memory_per_gpu_gb) as the
    table's column (step_time_ms, memory_per_gpu_mib), each value labelled with the unit its
    name gave, so it is read in that unit. A column the table has is kept as it is."""
    out = {}
    for key, value in row.items():
        name = _column_name(key)
        if str(key) not in question.columns and _left_out(name, question):
            continue
        found = None if str(key) in question.columns else \
            (name, None) if name in question.columns else \
            (HANDOUT_HEADERS[name], None) if HANDOUT_HEADERS.get(name) in question.columns else \
            column_in_another_unit(name, question.columns)
        if found is None or found[0] in row or found[0] in out:
            out[key] = value
        else:
            out[found[0]] = value if found[1] is None else _labelled(value, found[1])
    return out


def _labelled(value: Any, unit: str) -> Any:
    if isinstance(value, list):
        return [_labelled(item, unit) for item in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value!r} {unit}"
    if isinstance(value, str) and value.strip() and not re.search(r"[a-zµμ%]", value.lower()):
        return f"{value.strip()} {unit}"
    return value


def _keyed_rows(raw: dict, question: Question) -> list[dict] | None:
    """Rows written as a mapping keyed by the table's first column, its row key (`single: {gpus:
    1, step_time_s: ...}`, `2: "32/32"` for {gpus: 2, split: "32/32"}): the rows they are. None
    where a key is a column's name (one row written as a mapping), a row's own key disagrees,
    or a bare value has no one column to go to."""
    if not raw or not question.columns or any(_names_a_column(_column_name(key), question)
                                              for key in raw):
        return None
    key_column, values = question.columns[0], list(raw.values())
    if all(isinstance(value, dict) for value in values):
        if any(key_column in {_column_name(name) for name in value} for value in values):
            return None
        return [{key_column: key, **value} for key, value in raw.items()]
    if len(question.columns) == 2 and not any(isinstance(value, dict) for value in values):
        return [{key_column: key, question.columns[1]: value} for key, value in raw.items()]
    return None


# nvidia-smi's output as it prints it: its banner, a memory cell ("1012MiB / 32768MiB"), a
# rule of its box. Pasted where a table's rows belong, it is told as such, whatever its length.
_NVIDIA_SMI = re.compile(r"NVIDIA-SMI|\d\s*MiB\s*/\s*\d+\s*MiB|^\s*[+|][-=+]{20,}", re.MULTILINE)
# Example cells for a table whose every column has one (the nvidia-smi tables): a row a student
# can copy the form of, where "gpu: ..." had not said which numbers go where (a TA's audit 27).
_EXAMPLE_CELLS = {"gpu": "0", "utilization_percent": "38", "memory_mib": "1012"}


def _pasted(raw: str, question: Question) -> NotRead:
    """A program's output pasted where a table's rows belong (nvidia-smi's box, a TA's audit 27):
    the rows are what is read, which "write the value alone" did not say; the paste itself is
    kept for a person (an answer found but not read: instructor.md shows it)."""
    example = example_row(question)
    what = "nvidia-smi's output" if _NVIDIA_SMI.search(raw) else f"{len(raw)} characters of text"
    return NotRead(f"{what} pasted where the table's rows are expected: kept for a person to read, "
                   f"not read by the grader; write one row per line, e.g. {example}",
                   f"your table is {what} pasted as it was printed: it is kept for the course staff to "
                   f"read, but the grader does not read pasted output. The table wants the values you "
                   f"read from it as rows, one per line, e.g. {example}")


def example_row(question: Question) -> str:
    """One row of the table in the sheet's format, e.g. - {gpu: 0, utilization_percent: 38,
    memory_mib: 1012}; columns without an example value show `...`."""
    cells = _EXAMPLE_CELLS if all(c in _EXAMPLE_CELLS for c in question.columns) else {}
    return f"- {{{', '.join(f'{c}: {cells.get(c, chr(46) * 3)}' for c in question.columns)}}}"


def _table(raw: Any, question: Question, notes: list[str] | None = None) -> list[dict]:
    why = None
    if isinstance(raw, str):
        # The script's own printed lines ("Rank: 0 | Local Rank: 0"), a pipe in them or not.
        raw = printed_rank_lines(raw) or raw
        rows, why = markdown_table(raw, question)
        # Not a pipe table: the handout's "Rank 0 → GPU 0" lines, keyed as a mapping is.
        raw = rows or (keyed_lines(raw) if why is None else None) or raw
    if isinstance(raw, dict):
        raw = _keyed_rows(raw, question) or raw
    if isinstance(raw, list):
        raw = _rows_in_column_order(_split_rows_listed_as_sizes(raw, question), question)
    if not isinstance(raw, list) or not all(isinstance(row, dict) for row in raw):
        if isinstance(raw, str) and _NVIDIA_SMI.search(raw):
            raise _pasted(raw, question)
        example = example_row(question)
        if why:   # a Markdown table: what keeps it from being read, not only another way to write it
            raise NotRead(f"a table written in Markdown that could not be read: {why}",
                          f"your table could not be read: {why}")
        raise NotRead(f"expected rows as a list of mappings, e.g. {example}",
                      f"your table could not be read as its rows: write them as a list of "
                      f"mappings, e.g. {example}")
    rows = []
    # The batch each row splits (P5's table has the handout's "Batch Size" column, which the
    # sheet does not ask for), else the one the question gives ("with BATCH_SIZE=64").
    batches = [_batch_of(row, _asked_batch(question)) for row in raw]
    raw = [_in_the_tables_units(row, question) for row in raw]
    for number, row in enumerate(raw, 1):
        unknown = [str(k) for k in row if str(k) not in question.columns]
        if unknown:
            problem = (f"row {number} has column(s) {', '.join(unknown)}; the table's columns are "
                       f"{', '.join(question.columns)}")
            raise NotRead(problem, f"your table could not be read: {problem}")
    marks = _table_marks(raw, question)
    for row, batch in zip(raw, batches):
        gpus = _cell(row.get("gpus"), "gpus")
        gpus = gpus if isinstance(gpus, int) and not isinstance(gpus, bool) and gpus > 0 else None
        rows.append({str(k): without_markdown(v.strip()) if isinstance(v, str) and str(k) in question.text_columns
                     else _split(v, gpus, batch) if str(k) == "split" and gpus
                     else _cell(v, str(k), marks.get(_unit_kind(str(k))), gpus, notes)
                     for k, v in row.items() if v is not None and not _no_value(v, str(k))})
    return rows


def _rows_in_column_order(raw: list, question: Question) -> list:
    """Rows written as lists in the order of the sheet's own `columns:` line (`[single, 1,
    "0,299 ms", "2,694 ms"]` under [method, gpus, step_time_s, total_time_s]) as the mappings
    they are: only where every such row is as long as the columns, which it then fits one way
    only; a row of another length leaves them all as written (refused as not rows)."""
    listed = [row for row in raw if isinstance(row, (list, tuple))]
    if not listed or not question.columns or any(len(row) != len(question.columns) for row in listed):
        return raw
    return [dict(zip(question.columns, row)) if isinstance(row, (list, tuple)) else row for row in raw]


# The most GPUs a node has (8, the largest common one; the handouts' srun asks for at most 5):
# a split table's row naming more (`[32, 32]` read as {gpus: 32, split: 32}) is no GPU count.
MOST_GPUS_ON_A_NODE = 8


def _asked_batch(question: Question) -> int | None:
    """The batch the question splits ("with BATCH_SIZE=64"), else None."""
    asked = re.search(r"\bbatch_size\s*=\s*(\d+)", question.text, re.IGNORECASE)
    return int(asked.group(1)) if asked else None


def _whole_numbers(row: list | tuple) -> list[int] | None:
    """A list row's values as whole numbers (32, "32"), else None."""
    numbers = []
    for value in row:
        if isinstance(value, int) and not isinstance(value, bool):
            numbers.append(value)
        elif isinstance(value, str) and re.fullmatch(r"\s*\d{1,6}\s*", value):
            numbers.append(int(value))
        else:
            return None
    return numbers


def _split_rows_listed_as_sizes(raw: list, question: Question) -> list:
    """A split table's list rows that are the per-GPU sizes themselves (`rows: [[32, 32]]`: 32
    rows on each of 2 GPUs, cuda:0 first; `[22, 22, 20]`) as the rows they mean ({gpus: 2,
    split: [32, 32]}): whole numbers adding up to the question's batch where the sheet's
    columns cannot be them (no node has 32 GPUs; a row of three is not two columns). Zipped
    with the columns, [32, 32] had been 32 GPUs and the 2-GPU answer marked wrong. A row of two
    that could be either (a GPU count a node has beside a size, [2, 62]; [4, 60]) is for a
    person; one that fits the columns ([2, 32]: 2 GPUs of 32 each) is left to them."""
    batch = _asked_batch(question)
    if batch is None or not {"gpus", "split"} <= set(question.columns):
        return raw
    rows = []
    for number, row in enumerate(raw, 1):
        sizes = _whole_numbers(row) if isinstance(row, (list, tuple)) and len(row) >= 2 else None
        if sizes is None or min(sizes) < 0:
            rows.append(row)
            continue
        adds_up = sum(sizes) == batch
        as_columns = len(sizes) == len(question.columns) == 2
        count, each = (sizes[0], sizes[1]) if as_columns else (0, 0)
        a_node_has = 1 <= count <= MOST_GPUS_ON_A_NODE
        if as_columns and count * each == batch and not adds_up:
            rows.append(row)                       # [2, 32]: 2 GPUs of 32 each
        elif adds_up and not a_node_has:
            rows.append({"gpus": len(sizes), "split": sizes})
        elif as_columns and not adds_up and a_node_has:
            rows.append(row)                       # [3, 22]: a size, which the check says is not the split
        elif as_columns:
            what = (f"could be {count} GPUs of {each} rows each or the sizes {sizes} (cuda:0 "
                    f"first, {batch} in all)" if adds_up else
                    f"cannot be {count} GPUs (a node has at most {MOST_GPUS_ON_A_NODE}), nor the "
                    f"per-GPU sizes of the batch of {batch}")
            problem = (f"row {number} {list(row)!r} {what}: kept for a person to read; write it "
                       f"as - {{gpus: ..., split: [...]}}, e.g. - {{gpus: 2, split: [32, 32]}}")
            raise NotRead(problem, f"your table could not be read: {problem}")
        else:
            rows.append(row)                       # three or more numbers not adding up: as written
    return rows


def _batch_of(row: dict, asked: int | None) -> int | None:
    """The batch a row of a split table says it splits ("Batch Size" 64), else `asked`."""
    for key, value in row.items():
        if _column_name(key) in ("batch_size", "batch"):
            number = _cell(value, "batch_size")
            if isinstance(number, int) and not isinstance(number, bool) and number > 0:
                return number
    return asked


# A remark giving the batch the split adds up to: "(64 total)", "(total: 64)", "(= 64)",
# "(of 64)", ", 64 in total".
_TOTAL_REMARK = re.compile(r"(?:\s*[(,;]\s*|\s+[-–—]\s+|\s+)(?:(?:(?:in\s+)?total\s*:?\s*|=\s*|of\s+)"
                           r"(?P<first>\d+)|(?P<last>\d+)\s*(?:samples?|rows?)?\s*(?:in\s+total|total|overall|"
                           r"in\s+all))\s*(?:samples?|rows?)?\s*\)?\s*\.?\s*$", re.IGNORECASE)


def _split(raw: Any, gpus: int, batch: int | None) -> Any:
    """A cell of a split table (P5's "Split per GPU"), for a row of `gpus` GPUs splitting
    `batch` rows: the sizes as listed ("32/32"); one size said for every GPU ("32 each", "32
    per GPU", with the total beside it: "32 per GPU (64 total)"); one size alone ("32", as the
    column's header says "per GPU") for every GPU where that many GPUs of it make the batch
    (32 on 2 GPUs of 64). A TA's audit: "32" and "32 per GPU (64 total)" had been [32], a wrong
    answer for a right one. Anything else as _cell reads it: "22" for 3 GPUs is one size, not
    the split (22, 22, 20), and the check says so; a total that is not what the sizes add up
    to ("32 per GPU (128 total)") is for a person."""
    total = None
    if isinstance(raw, int) and not isinstance(raw, bool):
        size, count, each = raw, None, False
    elif isinstance(raw, str):
        text = without_markdown(raw.strip())
        # "64/2 = 32 per GPU": one size, worked out (its "= 32" is no total, and [32] had been
        # a wrong split for a right one).
        worked = worked_out_value(text) if "=" in text else None
        remark = _TOTAL_REMARK.search(text) if worked is None else None
        said = text[:remark.start()] if remark else text
        total = int(remark["first"] or remark["last"]) if remark else None
        found = size_each_said(said) if worked is None else None
        alone = re.fullmatch(r"\s*(\d+)\s*(?:samples?|rows?)?\s*\.?\s*", said)
        if worked is None and found is None and alone is None and "=" in said:
            worked = worked_out_value(said)   # "64/2 = 32 per GPU (64 total)"
        if found is None and alone is None and worked is None:
            return _cell(raw, "split", gpus=gpus)
        size, count = found if found is not None else (int(alone.group(1)) if alone else worked, None)
        each = found is not None
    else:
        return _cell(raw, "split", gpus=gpus)
    if count not in (None, gpus):
        return _cell(raw, "split", gpus=gpus)
    if total is not None:   # the student's own total: what the sizes add up to, or for a person
        return [size] * gpus if total == size * gpus else raw
    if each or (batch is not None and size * gpus == batch):
        return [size] * gpus
    return _cell(raw, "split", gpus=gpus)


def _no_value(value: Any, column: str) -> bool:
    """A placeholder left in a cell ("?", "...", "TODO"): no value. A dash stays where it says
    the value is not available (utilization without nvidia-smi: numbers.not_available)."""
    return isinstance(value, str) and len(value) <= 40 and _PLACEHOLDER.fullmatch(value) is not None \
        and not (column_unit(column) == "percent" and _DASH.fullmatch(value))


def _unit_kind(column: str) -> str | None:
    unit = column_unit(column)
    return "time" if unit in ("s", "ms") else unit


def _table_marks(raw: list[dict], question: Question) -> dict[str, str]:
    """Per kind of quantity (times, MiB, percentages), the decimal mark the table's own numbers
    show: that kind's where they decide it, else the whole table's, as the PDF reader decides
    it: beside "0,912 ms", "1,826 ms" is 1.826 ms; beside "950.5 ms" (or 950.5 written as a
    YAML number) 1826 ms. A kind left undecided has none (an ambiguous "1,826" is then said)."""
    texts: dict[str, list[str]] = {}
    for row in raw:
        for column, value in row.items():
            kind = _unit_kind(str(column))
            if kind is None or str(column) in question.text_columns:
                continue
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, float):
                    item = repr(item)   # written with a point: YAML read it as a float
                if isinstance(item, str):
                    texts.setdefault(kind, []).append(item)
    table = decimal_mark(item for items in texts.values() for item in items)
    marks = {kind: decimal_mark(items) or table for kind, items in texts.items()}
    return {kind: mark for kind, mark in marks.items() if mark}
