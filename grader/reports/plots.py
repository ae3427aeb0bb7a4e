"""Inline SVG charts for the HTML report, built as text (no matplotlib: the grader must not
pull a plotting stack onto a grading machine for two small charts).

Every chart has axes, ticks, axis labels, a visible title and an SVG <title>/<desc> for
screen readers. Values are escaped: measurements come from a run of student code.
"""
from __future__ import annotations

import math
from html import escape
import re
from typing import Mapping, Sequence

WIDTH, HEIGHT = 560, 320
LEFT, RIGHT, TOP, BOTTOM = 64, 24, 40, 64   # margins: room for tick labels and axis labels
# Distinguishable for common colour-vision deficiencies (Okabe-Ito); series also differ by dash.
COLORS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00")


def step_time_plot(measured: Mapping | None, reported: Mapping | None = None) -> str | None:
    """Step time against DEPTH (Task 2): the measured line, and the student's if reported."""
    series = [(name, series_points(data)) for name, data in (("measured", measured), ("reported", reported))]
    series = [(name, pts) for name, pts in series if pts]
    if not series:
        return None
    return line_chart("Task 2: step time vs DEPTH (2 GPUs)", "DEPTH (layers)", "step time (ms)",
                      series)


def memory_plot(task4: Mapping | None) -> str | None:
    """Peak memory of each GPU (Task 4), one group of bars per GPU count."""
    groups = []
    for gpus, entry in (task4 or {}).items():
        memory = entry.get("memory_per_gpu_mib") if isinstance(entry, Mapping) else None
        if isinstance(memory, Sequence) and memory and all(_is_amount(m) for m in memory):
            groups.append((f"{gpus} GPUs", [(f"cuda:{i}", float(m)) for i, m in enumerate(memory)]))
    if not groups:
        return None
    return bar_chart("Task 4: peak memory per GPU (DEPTH=20)", "GPU", "peak memory (MiB)", groups)


def line_chart(title: str, x_label: str, y_label: str,
               series: list[tuple[str, list[tuple[float, float]]]]) -> str:
    xs = [x for _, pts in series for x, _ in pts]
    ys = [y for _, pts in series for _, y in pts]
    x_ticks, y_ticks = nice_ticks(min(xs), max(xs)), nice_ticks(0.0, max(ys))
    sx = _scale(x_ticks[0], x_ticks[-1], LEFT, WIDTH - RIGHT)
    sy = _scale(y_ticks[0], y_ticks[-1], HEIGHT - BOTTOM, TOP)
    parts = _axes(x_ticks, y_ticks, sx, sy, x_label, y_label)
    for index, (name, pts) in enumerate(series):
        color, dash = COLORS[index % len(COLORS)], "" if index == 0 else ' stroke-dasharray="6 4"'
        path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in pts)
        parts.append(f'<polyline class="series" points="{path}" fill="none" stroke="{color}" '
                     f'stroke-width="2"{dash}/>')
        parts += [f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3.5" fill="{color}"/>'
                  for x, y in pts]
        parts.append(_legend_entry(index, name, color, dash))
    description = "; ".join(f"{name}: " + ", ".join(f"{_fmt(x)} -> {_fmt(y)}" for x, y in pts)
                            for name, pts in series)
    return _svg(title, f"{y_label} against {x_label}. {description}", parts)


def bar_chart(title: str, x_label: str, y_label: str,
              groups: list[tuple[str, list[tuple[str, float]]]], whole_numbers: bool = False) -> str:
    """`whole_numbers`: the values are counts (students): ticks only at whole numbers."""
    bars = sum(len(b) for _, b in groups) + len(groups) - 1   # one empty slot between groups
    slot = (WIDTH - LEFT - RIGHT) / max(bars, 1)
    y_ticks = nice_ticks(0.0, max(v for _, b in groups for _, v in b), whole=whole_numbers)
    sy = _scale(y_ticks[0], y_ticks[-1], HEIGHT - BOTTOM, TOP)
    parts = _axes(None, y_ticks, None, sy, x_label, y_label)
    position = 0
    for index, (group, bars_of_group) in enumerate(groups):
        color, start = COLORS[index % len(COLORS)], position
        for label, value in bars_of_group:
            x = LEFT + position * slot
            parts.append(f'<rect class="bar" x="{x + slot * 0.1:.1f}" y="{sy(value):.1f}" '
                         f'width="{slot * 0.8:.1f}" height="{sy(0) - sy(value):.1f}" '
                         f'fill="{color}"><title>{escape(group)}, {escape(label)}: '
                         f'{_fmt(value)}</title></rect>')
            parts.append(_text(x + slot / 2, HEIGHT - BOTTOM + 14, label, size=10))
            position += 1
        middle = LEFT + (start + position) / 2 * slot
        parts.append(_text(middle, HEIGHT - BOTTOM + 30, group, weight="bold"))
        position += 1
    description = "; ".join(f"{group}: " + ", ".join(f"{label} {_fmt(v)}" for label, v in bars_of_group)
                            for group, bars_of_group in groups)
    return _svg(title, f"{y_label} per {x_label}. {description}", parts)


def nice_ticks(low: float, high: float, target: int = 5, whole: bool = False) -> list[float]:
    """Round tick values (1, 2, 2.5 or 5 x 10^k apart) covering [low, high]; `whole`: only
    whole numbers (a count of students has no 0.5)."""
    if high <= low:
        high = low + (abs(low) or 1.0)
    raw = (high - low) / target
    power = 10 ** math.floor(math.log10(raw))
    multiples = (1, 2, 5, 10) if whole else (1, 2, 2.5, 5, 10)
    step = next(m * power for m in multiples if m * power >= raw)
    if whole:
        step = max(1, round(step))
    first = math.floor(low / step) * step
    ticks = [first]
    while ticks[-1] < high - 1e-9 * step:
        ticks.append(round(ticks[-1] + step, 10))
    return ticks


def _axes(x_ticks, y_ticks, sx, sy, x_label: str, y_label: str) -> list[str]:
    bottom, right = HEIGHT - BOTTOM, WIDTH - RIGHT
    parts = [f'<line class="axis" x1="{LEFT}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="#333"/>',
             f'<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{bottom}" stroke="#333"/>']
    for value in y_ticks:
        y = sy(value)
        parts.append(f'<line x1="{LEFT - 5}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}" '
                     f'stroke="#ddd"/>')
        parts.append(_text(LEFT - 8, y + 4, _fmt(value), anchor="end", size=11))
    for value in x_ticks or []:
        x = sx(value)
        parts.append(f'<line x1="{x:.1f}" y1="{bottom}" x2="{x:.1f}" y2="{bottom + 5}" stroke="#333"/>')
        parts.append(_text(x, bottom + 18, _fmt(value), size=11))
    parts.append(_text((LEFT + right) / 2, HEIGHT - 10, x_label))
    parts.append(f'<text x="16" y="{(TOP + bottom) / 2:.1f}" text-anchor="middle" font-size="12" '
                 f'transform="rotate(-90 16 {(TOP + bottom) / 2:.1f})">{escape(y_label)}</text>')
    return parts


def _svg(title: str, description: str, parts: list[str]) -> str:
    uid = "plot-" + re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")   # stable ids: reproducible output
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" role="img" '
            f'width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" '
            f'aria-labelledby="{uid}-title {uid}-desc" font-family="sans-serif">'
            f'<title id="{uid}-title">{escape(title)}</title>'
            f'<desc id="{uid}-desc">{escape(description)}</desc>'
            f'<rect width="{WIDTH}" height="{HEIGHT}" fill="#fff"/>'
            + _text(WIDTH / 2, 22, title, size=14, weight="bold") + "".join(parts) + "</svg>")


def _legend_entry(index: int, name: str, color: str, dash: str) -> str:
    x, y = LEFT + 16, TOP + 8 + 18 * index   # top left: the lines rise to the right
    return (f'<line x1="{x}" y1="{y}" x2="{x + 24}" y2="{y}" stroke="{color}" stroke-width="2"{dash}/>'
            + _text(x + 30, y + 4, name, anchor="start", size=11))


def _text(x: float, y: float, text: str, *, anchor: str = "middle", size: int = 12,
          weight: str = "normal") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}" '
            f'font-weight="{weight}">{escape(str(text))}</text>')


def _scale(low: float, high: float, out_low: float, out_high: float):
    span = (high - low) or 1.0
    return lambda v: out_low + (v - low) / span * (out_high - out_low)


def series_points(data: Mapping | None) -> list[tuple[float, float]]:
    """{"6": 4.1, "12": 8.0} -> [(6, 4.1), (12, 8.0)], sorted; non-numbers are left out."""
    if not isinstance(data, Mapping):
        return []
    points = []
    for key, value in data.items():
        try:
            x = float(key)
        except (TypeError, ValueError):
            continue
        if _is_amount(value) and math.isfinite(x):
            points.append((x, float(value)))
    return sorted(points)


def _is_amount(value) -> bool:
    """A finite number >= 0: times and memory; anything else would draw a broken chart."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value) and value >= 0)


def _fmt(value: float) -> str:
    return f"{value:.4g}"
