"""What the integrity scan finds: one Finding per file, line and category, each of a kind.

*Tampering* (reaching the grader, walking the interpreter, replacing torch or builtins
functions, code the grader cannot read, a term whose value cancels but passes a gradient)
withholds an assignment's automatic points for review; a *note* (unusual but honest) is shown
to the instructor only (grader/scoring/score.py).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from grader.batch.printable import printable
from grader.common.text import readable_text

TAMPERING, NOTE = "tampering", "note"

# category -> (kind, how a finding of it reads)
CATEGORIES = {
    "grader": (TAMPERING, "reaches into the grader"),
    "grader_settings": (TAMPERING, "names the grader's settings"),
    "introspection": (TAMPERING, "inspects or rewrites the running interpreter"),
    "torch_internals": (TAMPERING, "uses PyTorch's private dispatch machinery"),
    "patching": (TAMPERING, "replaces a function or class of torch, builtins or the standard "
                            "library"),
    "dynamic_code": (TAMPERING, "runs code the grader cannot read"),
    "proc_files": (TAMPERING, "reads the process's /proc files"),
    "compiled": (TAMPERING, "contains compiled code without its source"),
    "shadowing": (TAMPERING, "replaces a module the grader's runtime uses"),
    "unreadable": (TAMPERING, "could not be checked"),
    # `x + (side - side.detach())`: no value, a gradient (cancelling.py; adv46 F1)
    "cancelling_term": (TAMPERING, "adds a term whose value cancels but which passes a "
                                   "gradient"),
    "environment": (NOTE, "reads environment variables"),
    "processes": (NOTE, "starts other programs or processes"),
    "serialization": (NOTE, "pickles data"),
    "dynamic_attribute": (NOTE, "looks an attribute up by a computed name"),
    "output": (NOTE, "redirects its output"),
    "exit_hooks": (NOTE, "registers exit or signal handlers"),
    "digests": (NOTE, "computes digests"),
    "library_settings": (NOTE, "changes a library's attribute"),
    "torch_private": (NOTE, "uses a private part of PyTorch"),
    "archive": (NOTE, "ships an archive"),
    "helper_module": (NOTE, "ships a module of its own"),
    "unparsable": (NOTE, "is not valid Python"),
    # A Python environment or a test module nothing imports: masked in every run
    # (grader/integrity/unrun.py), so what it holds is said, never held.
    "kept_out": (NOTE, "is kept out of every run"),
}

ASSIGNMENT_FOLDERS = ("practical4", "practical5", "practical6", "practical10", "hw3")


def shown(text: str) -> str:
    """A finding's words as people read them (integrity.json, result.json, the reports, the
    console): a file name's bytes that are not UTF-8 read as text (Python keeps them as lone
    surrogates, which no UTF-8 file takes: instructor.md could not be written beside
    `helper_\\xff.py`, a red team's adv31 L1), control characters escaped (a name holding an
    escape sequence or a line break rewrites no report line)."""
    return printable(readable_text(str(text)))


@dataclass(frozen=True)
class Finding:
    file: str          # relative to the submission
    line: int
    category: str
    what: str          # what the code does, for the student and the instructor
    code: str          # the line of source, shortened

    @property
    def kind(self) -> str:
        """TAMPERING (held for review) or NOTE (for the instructor only)."""
        return CATEGORIES[self.category][0]

    @property
    def assignment(self) -> str | None:
        """The assignment whose folder holds the file; None: a file outside them all."""
        top = Path(self.file).parts[0] if Path(self.file).parts else ""
        return top if top in ASSIGNMENT_FOLDERS else None

    def describe(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        code = f" (`{self.code}`)" if self.code else ""
        return f"{where} {CATEGORIES[self.category][1]}: {self.what}{code}"

    def shown(self) -> "Finding":
        """This finding as people read it: its file and its words `shown`. The scan works on
        the real paths, and hands its findings out so (scan.scan_submission)."""
        return Finding(shown(self.file), self.line, self.category, shown(self.what),
                       shown(self.code))

    def to_dict(self) -> dict:
        return {**asdict(self), "kind": self.kind, "assignment": self.assignment,
                "text": self.describe()}

    @classmethod
    def from_dict(cls, data: dict) -> "Finding":
        """Back from to_dict (the derived `kind`, `assignment` and `text` are made again)."""
        if data.get("category") not in CATEGORIES:
            raise ValueError(f"unknown finding category {data.get('category')!r}")
        return cls(str(data["file"]), int(data["line"]), str(data["category"]),
                   str(data["what"]), str(data["code"])).shown()
