"""The HW3 probe's import of the student's module (grader/harness/hw3_import.py), on small
planted files written the ways students write them.

A script that calls main() at its top level (no `__main__` guard, a notebook export) trained
at every import, at the file's DIM and steps, and the probe ran out of time (adv37 F1: 2 to
8.5 of 15 points, "look for an endless loop"); a layout from constants worked out from DEPTH at
the top kept the file's DEPTH (adv37 F4)."""
import signal
import textwrap
import time

import pytest

from grader.harness.hw3_import import (StudentImports, TrainsWhenImported,
                                       imports_configuration, top_level_work)

BARE_MAIN = """
    import time
    DIM = 1024
    DEPTH = 20
    STEPS = 10**6
    TRAINED = []

    class LargeLinearModelMP:
        def __init__(self, dim=DIM, depth=DEPTH):
            self.depth = depth

    def main():
        for step in range(STEPS):
            TRAINED.append(DIM)

    main()
"""
DERIVED = """
    DIM, DEPTH = 1024, 6
    NUM_GPUS = 2
    LAYERS_PER_GPU = DEPTH // NUM_GPUS

    class LargeLinearModelMP:
        def __init__(self):
            self.per_gpu = LAYERS_PER_GPU
"""
GUARDED = """
    DIM = 1024
    DEPTH = 6

    class LargeLinearModelMP:
        def __init__(self, dim=DIM, depth=DEPTH):
            x = dim * depth
            self.x = x

    def main():
        model = LargeLinearModelMP(DIM, DEPTH)

    if __name__ == "__main__":
        main()
"""


class Stop(Exception):
    """Stands for the probe's ConfigTimeout."""


def planted(tmp_path, source: str) -> str:
    folder = tmp_path / "hw3"
    folder.mkdir(exist_ok=True)
    path = folder / "model_parallel.py"
    path.write_text(textwrap.dedent(source))
    return str(path)


def test_a_top_level_main_trains_only_the_grader_s_short_run(tmp_path):
    imports = StudentImports(planted(tmp_path, BARE_MAIN), Stop)
    started = time.monotonic()
    module = imports.get(2, 16, 6)
    assert module.TRAINED == [16] * 3, (
        "expected the import to run main() with STEPS=3 at the configuration's DIM=16, as the "
        f"grader's script runs set them; observed {len(module.TRAINED)} steps at DIM "
        f"{set(module.TRAINED)} (grader/harness/hw3_import.py: StudentImports._rewritten)")
    assert time.monotonic() - started < 5
    assert imports.get(2, 16, 12) is module, "one import per node size where DEPTH is not derived"
    assert imports.get(3, 16, 12) is not module, "a node of another size imports again"


def test_constants_derived_from_depth_follow_each_configuration(tmp_path):
    imports = StudentImports(planted(tmp_path, DERIVED), Stop)
    assert imports.per_configuration
    for depth, per_gpu in ((20, 10), (6, 3), (12, 6)):
        module = imports.get(2, 16, depth)
        assert module.LAYERS_PER_GPU == per_gpu, (
            f"expected LAYERS_PER_GPU = DEPTH // 2 = {per_gpu} when the configuration's "
            f"DEPTH is {depth}, as the student's run with that DEPTH sees it; observed "
            f"{module.LAYERS_PER_GPU} (hw3_import.py: imports_configuration, StudentImports.get)")
        assert module.DIM == 16


@pytest.mark.parametrize("source, expected", [
    (DERIVED, True), (BARE_MAIN, False), (GUARDED, False),
    ("DEPTH = 6\nclass LargeLinearModelMP:\n    HALF = DEPTH // 2\n", True),
    ("DEPTH = 6\nSPLIT = [DEPTH // 2]\ndef layout(split=SPLIT):\n    return split\n", True),
    # the notebook's top-level `x` is not the forward's parameter x
    ("DIM = 8\nx = [0] * DIM\nclass LargeLinearModelMP:\n    def forward(self, x):\n"
     "        return x\n", False),
    ("DEPTH = 6\nN = DEPTH\ndef f():\n    global N\n    N = 2\n    return N\n", True),
])
def test_which_modules_follow_depth_through_their_import(source, expected):
    assert imports_configuration(textwrap.dedent(source)) is expected, source


def test_an_import_that_runs_past_the_limit_says_why_and_is_not_run_again(tmp_path):
    path = planted(tmp_path, "def main():\n    while True:\n        pass\n\nmain()\n")

    def stop(signum, frame):
        raise Stop("this configuration took longer than 1 s")
    previous = signal.signal(signal.SIGALRM, stop)
    imports = StudentImports(path, Stop)
    try:
        signal.alarm(1)
        with pytest.raises(TrainsWhenImported) as first:
            imports.get(2, 16, 6)
        signal.alarm(0)
        started = time.monotonic()
        with pytest.raises(TrainsWhenImported) as again:
            imports.get(3, 16, 6)
        assert time.monotonic() - started < 0.5, "the import is not run again"
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    message = str(first.value)
    assert "5: main()" in message and 'if __name__ == "__main__"' in message, message
    assert again.value is first.value


def test_a_rewrite_that_breaks_the_import_falls_back_to_the_file(tmp_path):
    source = "STEPS = 50\nassert STEPS > 10, 'too few steps'\nclass LargeLinearModelMP:\n    pass\n"
    module = StudentImports(planted(tmp_path, source), Stop).get(1, 16, 6)
    assert module.STEPS == 50


def test_top_level_work_names_calls_and_loops_not_definitions_or_guards():
    work = top_level_work(textwrap.dedent(BARE_MAIN))
    assert work == ["16: main()"], work
    assert top_level_work(textwrap.dedent(GUARDED)) == []


WARM_UP = """
    import statistics
    DIM = 1024
    STEPS = 20
    TIMED = []

    class LargeLinearModelMP:
        def __init__(self, dim=DIM):
            self.dim = dim

    def main():
        for step in range({bound}):
            if step >= 5:   # the first steps warm up: not timed
                TIMED.append(step)
        print(statistics.median(TIMED))

    main()
"""


@pytest.mark.parametrize("bound, steps", [
    ("STEPS", 8),                                    # 5 warm-up steps + the short run's 3
    ("5 + STEPS", 3),                                # the template's: the warm-up on top
])
def test_a_loop_timed_past_a_warm_up_keeps_the_short_runs_steps_past_it(tmp_path, bound, steps):
    """At STEPS=3 a loop timing only `if step >= 5:` timed nothing, and its
    `statistics.median` stopped the grader's runs of a script whose own 20 steps finish: Task
    5's runs were told "did not run to its end" and flagged for a penalty (hw3.script_runs)."""
    from grader.checks.test_hw3 import task5_script_specs
    from grader.harness.hw3_import import short_run
    path = planted(tmp_path, WARM_UP.replace("{bound}", bound))
    with open(path, encoding="utf-8") as handle:
        source = handle.read()
    assert short_run(source) == {"STEPS": steps}, (
        f"expected the short run of `range({bound})` with `if step >= 5:` to take {steps} "
        f"steps; observed {short_run(source)} (hw3_import.short_run, loop_bound.constant_fewest)")
    assert task5_script_specs(tmp_path)[2]["sets"]["STEPS"] == steps, (
        "expected Task 5's runs to take the short run's steps (test_hw3.task5_script_specs)")
    module = StudentImports(path, Stop).get(2, 16, 6)
    assert module.TIMED == list(range(5, 5 + 3)), (
        f"expected the import's main() to time 3 steps past the warm-up; observed {module.TIMED}")


@pytest.mark.parametrize("source", [
    "STEPS = 20\nfor step in range(STEPS):\n    if step >= int(input()):\n        pass\n",
    "STEPS = 2\nfor step in range(STEPS):\n    if step >= 5:\n        pass\n",
    "STEPS = 20\nfor step in range(STEPS):\n    pass\n",
])
def test_a_short_run_without_a_warm_up_it_reads_takes_3_steps_as_before(source):
    from grader.harness.hw3_import import short_run
    assert short_run(source) == {"STEPS": 3}, (
        f"expected STEPS=3 for {source!r}: no warm-up read; observed {short_run(source)}")
