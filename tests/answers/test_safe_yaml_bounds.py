"""Answer sheets and overrides are YAML a person wrote: grader.common.safe_yaml reads them with
bounds, so no sheet can make the grader spend minutes or gigabytes on it (a red team's 100 KB
of "[" timed a whole grading out: PyYAML's scanner is quadratic in open flow collections)."""
from __future__ import annotations

import time

import pytest

from grader.common.safe_yaml import MAX_DEPTH, YamlError, load_yaml_text


@pytest.mark.parametrize("text", ["[" * 100_000, "{a: " * 50_000, "- " * 50_000 + "x",
                                  "[" * 400_000 + "]" * 400_000],
                         ids=["unclosed-flow", "flow-mappings", "block-sequences", "closed-flow"])
def test_a_deeply_nested_text_is_refused_at_once(text):
    started = time.process_time()
    with pytest.raises(YamlError, match=f"nested more than {MAX_DEPTH} levels deep"):
        load_yaml_text(text, source="answers.yaml")
    assert time.process_time() - started < 5, "refused after reading its first part"


def test_a_sheet_as_deep_as_students_write_it_is_read():
    sheet = ("answers:\n  task4.table:\n    value:\n      - {gpus: 2, step_time_ms: 5.1, "
             "memory_per_gpu_mib: [80, 80]}\n      - {gpus: 5, step_time_ms: 5.3, "
             "memory_per_gpu_mib: [40, 40, 40, 40, 40]}\n")
    data = load_yaml_text(sheet)
    assert data["answers"]["task4.table"]["value"][1]["memory_per_gpu_mib"] == [40] * 5
    nested = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert load_yaml_text(nested) is not None, f"{MAX_DEPTH} levels are still read"
