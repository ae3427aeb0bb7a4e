"""The inline SVG charts: well-formed, labelled, and drawn where the data says."""
from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from grader.reports import plots

SVG = "{http://www.w3.org/2000/svg}"
STEP_TIMES = {"6": 4.1, "12": 8.0, "24": 16.3}
TASK4 = {"2": {"step_time_ms": 13.2, "memory_per_gpu_mib": [2.6, 2.6]},
         "5": {"step_time_ms": 13.9, "memory_per_gpu_mib": [1.1, 1.0, 1.0, 1.0, 1.0]}}


def texts(root) -> list[str]:
    return [t.text for t in root.iter(f"{SVG}text")]


def test_step_time_plot_has_title_axes_ticks_and_labels():
    root = ET.fromstring(plots.step_time_plot(STEP_TIMES))
    assert root.get("role") == "img"
    title = root.find(f"{SVG}title")
    assert title.text == "Task 2: step time vs DEPTH (2 GPUs)"
    assert title.get("id") in root.get("aria-labelledby").split()
    assert "6 -> 4.1, 12 -> 8, 24 -> 16.3" in root.find(f"{SVG}desc").text
    labels = texts(root)
    assert {"DEPTH (layers)", "step time (ms)", "Task 2: step time vs DEPTH (2 GPUs)"} <= set(labels)
    assert {"0", "5", "10", "15", "20"} <= set(labels)       # y ticks cover 16.3
    assert len([l for l in root.iter(f"{SVG}line") if l.get("class") == "axis"]) == 2
    assert len(list(root.iter(f"{SVG}circle"))) == 3


def test_points_rise_with_depth():
    root = ET.fromstring(plots.step_time_plot(STEP_TIMES))
    circles = sorted((float(c.get("cx")), float(c.get("cy"))) for c in root.iter(f"{SVG}circle"))
    ys = [y for _, y in circles]
    assert ys == sorted(ys, reverse=True)   # SVG y grows downwards: larger time, smaller y


def test_reported_values_get_a_second_dashed_series():
    root = ET.fromstring(plots.step_time_plot(STEP_TIMES, {"6": 5.0, "24": 18.0}))
    series = [p for p in root.iter(f"{SVG}polyline")]
    assert len(series) == 2 and series[1].get("stroke-dasharray")
    assert {"measured", "reported"} <= set(texts(root))


def test_memory_plot_has_one_bar_per_gpu_with_heights_in_proportion():
    root = ET.fromstring(plots.memory_plot(TASK4))
    bars = [r for r in root.iter(f"{SVG}rect") if r.get("class") == "bar"]
    assert len(bars) == 7
    heights = [float(b.get("height")) for b in bars]
    assert heights[0] == pytest.approx(heights[1])
    assert heights[2] / heights[0] == pytest.approx(1.1 / 2.6, rel=1e-3)
    assert {"2 GPUs", "5 GPUs", "cuda:4", "peak memory (MiB)"} <= set(texts(root))
    assert bars[6].find(f"{SVG}title").text == "5 GPUs, cuda:4: 1"


@pytest.mark.parametrize("bad", [None, {}, {"x": 1}, {"6": "fast"}, {"6": -1.0},
                                 {"6": float("nan")}, [1, 2]])
def test_unusable_step_times_give_no_plot(bad):
    assert plots.step_time_plot(bad) is None


def test_unusable_memory_gives_no_plot():
    assert plots.memory_plot({"2": {"memory_per_gpu_mib": ["a"]}}) is None
    assert plots.memory_plot({"2": "oops"}) is None


def test_labels_are_escaped():
    svg = plots.bar_chart("t", "x <b>", "y", [("<g>", [("a&b", 1.0)])])
    ET.fromstring(svg)  # well-formed despite the markup in the labels
    assert "&lt;g&gt;" in svg and "a&amp;b" in svg


def test_nice_ticks():
    assert plots.nice_ticks(0, 16.3) == [0, 5, 10, 15, 20]
    assert plots.nice_ticks(6, 24) == [5, 10, 15, 20, 25]
    assert plots.nice_ticks(0, 2.6) == [0, 1, 2, 3]
    assert plots.nice_ticks(0, 0) == pytest.approx([0, 0.2, 0.4, 0.6, 0.8, 1.0])
