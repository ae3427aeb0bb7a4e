"""Practical 6's sheet asks for numbers its script does not print (nvidia-smi's per-GPU memory
and utilization) and for a "total time" (a student's audit, users28: they had to guess how to get
the memory without a GPU, and which total). The sheet's comments say where each comes from, and
which total the handout means: Practical 5's table, "Total Time (sec)", the total training time,
which the scripts print as `total time: X s` (every step)."""
from __future__ import annotations

import re

from grader.common.locations import data_folder

TEMPLATE = data_folder("student_template")


def comment_above(sheet: str, qid: str) -> str:
    """The comment lines right above the question's line."""
    lines = sheet.splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith(f"{qid}:"))
    above = []
    for line in reversed(lines[:at]):
        if not line.strip().startswith("#"):
            break
        above.insert(0, line.strip().lstrip("#").strip())
    return " ".join(above)


def test_the_usage_table_says_where_its_numbers_come_from():
    said = comment_above((TEMPLATE / "practical6" / "answers.yaml").read_text(), "usage.table")
    assert "watch -n 1 nvidia-smi" in said and "GPU-Util" in said and "Memory-Usage" in said
    assert "n/a" in said and "torch.cuda.max_memory_allocated(device)" in said
    script = (TEMPLATE / "practical6" / "practical6_ddp.py").read_text()
    if "max_memory_allocated" not in script:
        assert "prints neither" in said   # the script gives no memory: the sheet says so


def test_the_timing_table_says_which_total_it_means_and_the_lines_that_print_it():
    said = comment_above((TEMPLATE / "practical6" / "answers.yaml").read_text(), "timing.table")
    assert '"Total Time (sec)", the total training time' in said
    assert "`total time: X s` line" in said and "all STEPS steps together" in said
    assert "`step N: ... step time X s` lines" in said
    assert "median times STEPS" in said   # the simulated clock's total of every step
    # The lines named are the ones both scripts print.
    for script in ("practical6/practical6_ddp.py", "practical5/practical5_dp.py"):
        text = (TEMPLATE / script).read_text()
        assert re.search(r'print\(f"total time: \{sum\(step_times\)', text), script
        assert re.search(r'step time \{dt:\.4f\} s"', text), script
