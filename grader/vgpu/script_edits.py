"""A handout's line change, made on the text of a student's script before it runs.

Practical 10's Part 5 asks the student to replace `device1 = torch.device(f"cuda:{local_rank +
2}")` with `... f"cuda:{local_rank}" ...` and look at what changes; the grader makes that change
itself (the runner's `--edit OLD NEW`) instead of asking for a flag the handout does not have.
The file is never touched: the edited text is what gets compiled, under the file's own name.
"""
from __future__ import annotations

import os


class EditNotFound(Exception):
    pass


def apply_edits(source: str, filename: str, edits: list[tuple[str, str]]) -> str:
    """`source` with each OLD replaced by NEW; OLD must occur exactly once (else the change
    would land somewhere the handout did not mean, or nowhere)."""
    for old, new in edits:
        found = source.count(old)
        if found != 1:
            raise EditNotFound(
                f"{os.path.basename(filename)}: the line to change, `{old.strip()}`, occurs "
                f"{found} times in the script (it must occur once, as in the course's code)")
        source = source.replace(old, new)
    return source
