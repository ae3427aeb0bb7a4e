"""Where the grader's data folders are: `rubrics/` and `student_template/` (whose answer
sheets say which questions there are); and where torch is installed, found without importing it.

In the grader's checkout (and an editable install of it) they sit beside the `grader` package.
The student kit is installed by pip as a package alone, so the kit carries them inside it, as
`grader/data/<name>` (scripts/build_student_kit.py); that copy wins where it exists.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

GRADER_PACKAGE = Path(__file__).resolve().parents[1]


def data_folder(name: str) -> Path:
    inside = GRADER_PACKAGE / "data" / name
    return inside if inside.is_dir() else GRADER_PACKAGE.parent / name


def installed_torch_folder() -> Path | None:
    """torch's package folder, without `import torch` (seconds of CPU); None if not found."""
    try:
        spec = importlib.util.find_spec("torch")
        return Path(next(iter(spec.submodule_search_locations)))
    except (ImportError, AttributeError, TypeError, StopIteration, ValueError):
        return None
