"""A two-column table written as the handouts print it: one "key -> value" per line.

Practical 6's Part 2 shows its answer so ("Rank 0 → GPU 0" / "Rank 1 → GPU 1"), Practical 10's
Part 1 prints "Rank 0: cuda:0 + cuda:2", and Practical 5's split is told "2 GPUs: 32/32". Each
line is read as the sheet's keyed mapping is ({"Rank 0": "GPU 0"}: sheet._keyed_rows), where
every entry names its key by one whole number; anything less clear is left for a person.
"""
from __future__ import annotations

import re

from .numbers import MAX_VALUE_CHARS, whole_number_in

# Between a key and its value: an arrow, or a colon that is not a device's ("cuda:0").
_ARROW = re.compile(r"\s*(?:->|→|=>|⇒)\s*")
_COLON = re.compile(r"(?<!cuda)(?<!gpu)(?<!device)(?<!dev)\s*:\s*", re.IGNORECASE)
# A list marker before an entry ("- Rank 0 -> GPU 0", "• ...", "1. ..."), kept out of its key.
_MARKER = re.compile(r"^\s*(?:[-*•]|\d+[.)](?=\s))\s*")


def keyed_lines(text: str) -> dict[str, str] | None:
    """{key: value} of text written one entry per line, or one line of entries split by ';'
    (else by ',' where every part is an entry), each "KEY sep VALUE" with sep one of ->, →, =>
    or ':'. None where any entry is not one, two entries have one key, or a key does not name
    exactly one whole number ("Rank 0 and 1 -> GPU 0", "first -> GPU 0"): a person reads it."""
    if len(text) > MAX_VALUE_CHARS:
        return None
    lines = [line for line in text.strip().splitlines() if line.strip()]
    if len(lines) == 1:
        lines = _entries_of_one_line(lines[0])
    entries = [_entry(line) for line in lines]
    if not entries or any(entry is None for entry in entries):
        return None
    keys = [whole_number_in(key) if len(re.findall(r"\d+", key)) == 1 else None for key, _ in entries]
    if any(key is None for key in keys) or len(set(keys)) != len(keys):
        return None
    return dict(entries)


def _entries_of_one_line(line: str) -> list[str]:
    if ";" in line:
        return line.split(";")
    parts = line.split(",")
    return parts if len(parts) > 1 and all(_entry(part) is not None for part in parts) else [line]


def _entry(line: str) -> tuple[str, str] | None:
    """(key, value) of one "KEY sep VALUE"; None where there is no separator, or more than one
    (a chain of arrows says more than which value the key has)."""
    line = _MARKER.sub("", line.strip())
    arrows = _ARROW.split(line)
    parts = arrows if len(arrows) > 1 else _COLON.split(line, maxsplit=1)
    # A colon beside the arrow ("Rank 0: cuda:0 -> cuda:2"), or one in the value ("2 GPUs: 32,
    # 3 GPUs: 22"): more than one key's value, or a key with more than one.
    if len(parts) != 2 or any(_COLON.search(part) for part in parts):
        return None
    key, value = parts[0].strip(), parts[1].strip().rstrip(".;,").strip()
    return (key, value) if key and value else None


# The lines the course's scripts print of each rank's GPUs, pasted as the table (adv51 F6):
# Practical 6's handout prints "Rank: 0 | Local Rank: 0" (the local rank is the GPU the rank
# sets), Practical 10's reference "[Rank 0] stage 0 on cuda:0, stage 1 on cuda:2".
_LOCAL_RANK_LINE = re.compile(r"\s*(?:[-*•]\s*)?rank\s*[:=]?\s*(\d+)\s*[|,;]\s*local[ _]rank\s*[:=]?\s*(\d+)"
                              r"\s*\.?\s*", re.IGNORECASE)
_STAGES_LINE = re.compile(r"\s*(?:[-*•]\s*)?\[\s*rank\s*(\d+)\s*\]\s*:?\s*(?P<stages>.+)", re.IGNORECASE)
_PRINT_START = re.compile(r"\s+(?=\[\s*rank\s*\d+\s*\]|\brank\s*[:=]?\s*\d+\s*[|,;]\s*local[ _]rank)",
                          re.IGNORECASE)
_STAGE_ON = re.compile(r"\bstage\s*(\d+)\s+on\s+(cuda:\d+)\b", re.IGNORECASE)


def printed_rank_lines(text: str) -> str | None:
    """The printed lines as the handouts' "Rank 0 -> GPU 0" lines (keyed_lines reads them): a
    stage line's GPUs in its stages' order. None where any line is neither print, or a stage
    line names other words, a stage twice or skips one ("stage 1 on cuda:2" alone)."""
    if len(str(text)) > MAX_VALUE_CHARS:
        return None
    # YAML folds a quoted string's lines into one: each print starts a line again.
    text = _PRINT_START.sub("\n", str(text))
    lines = [line for line in text.strip().splitlines() if line.strip()]
    said = []
    for line in lines:
        local = _LOCAL_RANK_LINE.fullmatch(line)
        staged = _STAGES_LINE.fullmatch(line) if local is None else None
        if local is not None:
            said.append(f"Rank {local.group(1)} -> GPU {local.group(2)}")
            continue
        stages = {int(n): gpu for n, gpu in _STAGE_ON.findall(staged["stages"])} if staged else {}
        rest = _STAGE_ON.sub(" ", staged["stages"]) if staged else ""
        if not stages or sorted(stages) != list(range(len(stages))) \
                or len(stages) != len(_STAGE_ON.findall(staged["stages"])) \
                or re.sub(r"\b(?:and)\b|[\s,;.]", "", rest, flags=re.IGNORECASE):
            return None
        said.append(f"Rank {staged.group(1)} -> " + " + ".join(stages[n] for n in sorted(stages)))
    return "\n".join(said)
