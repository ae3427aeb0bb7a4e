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

from .yes_no import read_yes_no

TEMPLATE_ROOT = data_folder("student_template")   # beside grader/, or inside it in the student kit
MAX_SHEET_BYTES = 1 << 20  # a sheet is a few KiB; anything huge is not one


@dataclass(frozen=True)
class Question:
    id: str
    type: str
    text: str
    columns: tuple[str, ...] = ()


@dataclass
class SheetAnswers:
    values: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    found: bool = False


def template_questions(assignment: str, root: Path = TEMPLATE_ROOT) -> dict[str, Question]:
    data = yaml.safe_load((root / assignment / "answers.yaml").read_text(encoding="utf-8"))
    return {qid: Question(qid, spec["type"], spec.get("question", ""),
                          tuple(spec.get("columns", ())))
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
        data = load_yaml_text(path.read_text(encoding="utf-8"), source=display,
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
            result.problems.append(f"{display}: '{qid}' is not a question of this sheet; ignored")
            continue
        raw = entry.get("rows" if question.type == "table" else "value") \
            if isinstance(entry, dict) else entry  # a bare `id: 3` is accepted too
        try:
            value = coerce(raw, question)
        except ValueError as error:
            result.problems.append(f"{display}: {qid}: {error}")
            continue
        if value is not None:
            result.values[question.id] = value
    return result


def coerce(raw: Any, question: Question) -> Any:
    """The answer in its template type, None when not answered; ValueError when it cannot be."""
    if raw is None or (isinstance(raw, str) and not raw.strip()) or raw == []:
        return None
    kind = question.type
    if kind in ("text", "str"):
        return str(raw).strip()
    if kind == "int":
        return _int(raw)
    if kind == "bool":
        return _yes_no(raw)
    if kind == "list[int]":
        return _int_list(raw)
    if kind == "list[list[int]]":
        if not isinstance(raw, list):
            raise ValueError(f"expected a list of lists such as [[32, 16], [32, 16]], got {raw!r}")
        return [_int_list(inner) for inner in raw]
    if kind == "table":
        return _table(raw, question)
    raise ValueError(f"unknown answer type {kind!r} in the template")


def _yes_no(raw: Any) -> bool | None:
    """`no` (YAML's false), "No.", "no, because ...", or the PDF reader's shape
    {value: no, explanation: ...}; the same rule as the PDF report (yes_no.read_yes_no)."""
    if isinstance(raw, dict) and "value" in raw:
        raw = raw["value"]
        if raw is None:
            return None
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip()
    if text.lower() in ("true", "y"):
        return True
    if text.lower() in ("false", "n"):
        return False
    answer = read_yes_no(text)
    if answer.answered:
        return answer.value == "yes"
    if answer.unanswered:
        return None
    raise ValueError(f"expected yes/no (true/false), got {raw!r}: write yes or no first")


def _int(raw: Any) -> int:
    if isinstance(raw, bool):
        raise ValueError(f"expected a whole number, got {raw!r}")
    if isinstance(raw, int):
        return raw
    if isinstance(raw, float) and raw.is_integer():
        return int(raw)
    if isinstance(raw, str) and re.fullmatch(r"\s*-?\d+\s*", raw):
        return int(raw)
    raise ValueError(f"expected a whole number, got {raw!r}")


def _int_list(raw: Any) -> list[int]:
    if isinstance(raw, str):  # "3, 3" or "[3, 3]"
        raw = [part for part in re.split(r"[\s,;]+", raw.strip().strip("[]()")) if part]
    if not isinstance(raw, (list, tuple)):
        raise ValueError(f"expected a list of whole numbers such as [3, 3], got {raw!r}")
    return [_int(item) for item in raw]


def _number(raw: Any) -> float | int:
    if isinstance(raw, bool):
        raise ValueError(f"expected a number, got {raw!r}")
    if isinstance(raw, (int, float)):
        return raw
    if isinstance(raw, str):
        text = raw.strip().replace(",", ".") if raw.count(",") == 1 and "." not in raw else raw.strip()
        try:
            return float(text) if re.search(r"[.eE]", text) else int(text)
        except ValueError:
            pass
    raise ValueError(f"expected a number, got {raw!r}")


def _cell(raw: Any) -> Any:
    if isinstance(raw, list):
        return [_list_item(item) for item in raw]
    if isinstance(raw, str) and not re.fullmatch(r"\s*-?[\d.,]+(e-?\d+)?\s*", raw):
        if raw.strip().startswith("["):
            return [_list_item(p) for p in re.split(r"[\s,;]+", raw.strip().strip("[]")) if p]
        return raw.strip()  # a word, e.g. method: dp
    return _number(raw)


def _list_item(raw: Any) -> Any:
    """A number; a GPU written as a device ("cuda:2") is its index, as the tables ask."""
    if isinstance(raw, str):
        device = re.fullmatch(r"\s*(?:cuda|gpu)\s*:?\s*(\d+)\s*", raw, re.IGNORECASE)
        if device:
            return int(device.group(1))
    return _number(raw)


def _table(raw: Any, question: Question) -> list[dict]:
    if not isinstance(raw, list) or not all(isinstance(row, dict) for row in raw):
        raise ValueError("expected rows as a list of mappings, e.g. "
                         f"- {{{', '.join(f'{c}: ...' for c in question.columns)}}}")
    rows = []
    for number, row in enumerate(raw, 1):
        unknown = [str(k) for k in row if str(k) not in question.columns]
        if unknown:
            raise ValueError(f"row {number} has column(s) {', '.join(unknown)}; the table's "
                             f"columns are {', '.join(question.columns)}")
        rows.append({str(k): _cell(v) for k, v in row.items() if v is not None})
    return rows
