"""How numbers look wherever people read them (reports, the class page, grades.csv)."""
from __future__ import annotations

from typing import Any


def format_points(value: Any) -> str:
    """Points as the rubric would write them: 12, 2.5, 0.33 (scores are kept to two decimals);
    an absent value as an en dash."""
    if value is None:
        return "–"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{round(float(value), 2):g}"
    return str(value)
