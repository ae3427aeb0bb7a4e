"""HW3 grades the model class the script's main() builds and runs, not always the handout's.

adv51 F1: an honest student keeps the provided LargeLinearModelMP for Task 1 and writes Task 3
as a NEW class that main() builds (`model = DynamicLargeLinearModelMP(DIM, DEPTH)`, through an
alias `model_cls = ... if USE_ALL_GPUS else LargeLinearModelMP`, or through `build_model()` in
a module beside the script). The probe took the untouched LargeLinearModelMP whenever the
module had one: 7/15 and 6.5/15 against the reference's 10.5, told "the base code's split is
still in place". The class main() builds is graded now, and the student is told which.

The defences stay: a spread class the script never builds, a decoy object built beside the
handout's class, a class built only under a flag the grader never sets leave the handout's
class graded (older red teams' decoys). Each script here is written as a student writes it.
"""
from __future__ import annotations

import sys
import textwrap
import types

import pytest
import torch

from grader.harness.hw3_build import construct
from grader.harness.hw3_script_call import renamed_model_note

NODE = 5
DIM, DEPTH = 16, 10

# The course's base code, kept for Task 1 (on CPU here: the probe's node is not needed to tell
# which class is built).
BASE = """
import argparse
import torch
import torch.nn as nn
DIM = 1024
DEPTH = 6


class LargeLinearModelMP(nn.Module):
    def __init__(self, dim=DIM, depth=DEPTH):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(dim, dim) for _ in range(depth)])
        self.built = ("base", dim, depth)


class {spread}(nn.Module):
    def __init__(self, dim=DIM, depth=DEPTH):
        super().__init__()
        n = torch.cuda.device_count()
        self.layers = nn.ModuleList([nn.Linear(dim, dim) for _ in range(depth)])
        self.built = ("spread", dim, depth, n)
"""

HONEST = {
    # adv51's hw3_newclass2: main() builds the new class, Task 1's call left in a comment.
    "new_class_built_in_main": """
        def main():
            # Task 1 used: model = LargeLinearModelMP(DIM, DEPTH)
            model = DynamicLargeLinearModelMP(DIM, DEPTH)
            model(torch.zeros(2, DIM))

        if __name__ == "__main__":
            main()
        """,
    # adv51's hw3_newclass: a module constant picks the class through a local alias.
    "alias_picked_by_a_constant": """
        USE_ALL_GPUS = True   # False: the provided 2-GPU split (Task 1)

        def main():
            model_cls = DynamicLargeLinearModelMP if USE_ALL_GPUS else LargeLinearModelMP
            model = model_cls(DIM, DEPTH)
        """,
    "helper_function_in_the_script": """
        def build_model(dim, depth):
            return DynamicLargeLinearModelMP(dim, depth)

        def main():
            model = build_model(DIM, DEPTH)
        """,
    "built_at_the_top_level": """
        model = DynamicLargeLinearModelMP(DIM, DEPTH)
        """,
}

DECOYS = {
    "spread_class_never_built": """
        def main():
            model = LargeLinearModelMP(DIM, DEPTH)
        """,
    "decoy_object_beside_the_handouts": """
        def main():
            decoy = DynamicLargeLinearModelMP(DIM, DEPTH)
            model = LargeLinearModelMP(DIM, DEPTH)
        """,
    "alias_behind_a_flag_the_grader_never_sets": """
        def main():
            parser = argparse.ArgumentParser()
            parser.add_argument("--spread", action="store_true")
            args = parser.parse_args()
            model_cls = DynamicLargeLinearModelMP if args.spread else LargeLinearModelMP
            model = model_cls(DIM, DEPTH)
        """,
    "if_statement_behind_a_flag": """
        SPREAD = False

        def main():
            if SPREAD:
                model = DynamicLargeLinearModelMP(DIM, DEPTH)
            else:
                model = LargeLinearModelMP(DIM, DEPTH)
        """,
    "alias_picked_by_a_constant_left_off": """
        USE_ALL_GPUS = False

        def main():
            model_cls = DynamicLargeLinearModelMP if USE_ALL_GPUS else LargeLinearModelMP
            model = model_cls(DIM, DEPTH)
        """,
    "task1_function_called_beside_task3s": """
        def task1():
            return LargeLinearModelMP(DIM, DEPTH)

        def main():
            baseline = task1()
            model = DynamicLargeLinearModelMP(DIM, DEPTH)
        """,
}


@pytest.fixture(autouse=True)
def node_of_five(monkeypatch):
    monkeypatch.setattr(torch.cuda, "device_count", lambda: NODE)


def build(body: str, spread: str = "DynamicLargeLinearModelMP", name: str = "model_parallel"):
    source = BASE.format(spread=spread) + textwrap.dedent(body)
    module = types.ModuleType(name)
    exec(compile(source, "model_parallel.py", "exec", dont_inherit=True), module.__dict__)
    notes: list[str] = []
    model = construct(module, DIM, DEPTH, source=source, gpus=NODE, notes=notes)
    return model, notes


@pytest.mark.parametrize("name", sorted(HONEST))
def test_the_class_main_builds_is_graded_where_the_handouts_is_kept_beside_it(name):
    model, notes = build(HONEST[name])
    assert model.built == ("spread", DIM, DEPTH, NODE) and notes == ["DynamicLargeLinearModelMP"], (
        f"expected the class main() builds, DynamicLargeLinearModelMP, built and noted; "
        f"observed {model.built}, notes {notes}; where to look: class_built_instead in "
        "grader/harness/hw3_build.py")


@pytest.mark.parametrize("name", sorted(DECOYS))
def test_the_handouts_class_stays_graded_where_main_builds_it_or_may(name):
    model, notes = build(DECOYS[name])
    assert model.built == ("base", DIM, DEPTH) and notes == [], (
        f"expected the handout's LargeLinearModelMP graded (the other class is a decoy, or "
        f"built only where the grader cannot tell); observed {model.built}, notes {notes}; "
        "where to look: class_built_instead in grader/harness/hw3_build.py")


def test_a_class_built_by_a_helper_module_beside_the_script(tmp_path):
    """adv51's hw3_helperfile: `from mp_utils import build_model`, the class in mp_utils.py."""
    helper = tmp_path / "mp_utils_hw3cls.py"
    helper.write_text(textwrap.dedent("""
        import torch
        import torch.nn as nn

        class AllGPUModel(nn.Module):
            def __init__(self, dim, depth):
                super().__init__()
                self.layers = nn.ModuleList([nn.Linear(dim, dim) for _ in range(depth)])
                self.built = ("helper", dim, depth, torch.cuda.device_count())

        def build_model(dim, depth):
            return AllGPUModel(dim, depth)
        """))
    sys.path.insert(0, str(tmp_path))
    try:
        model, notes = build("""
            from mp_utils_hw3cls import build_model

            def main():
                model = build_model(DIM, DEPTH)  # Task 1 ran LargeLinearModelMP(DIM, DEPTH)
            """)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("mp_utils_hw3cls", None)
    assert model.built == ("helper", DIM, DEPTH, NODE) and notes == ["AllGPUModel"], (
        model.built, notes)


def test_the_note_says_which_class_was_graded_and_does_not_say_the_handouts_is_missing():
    said = renamed_model_note("DynamicLargeLinearModelMP", handout_class_kept=True)
    assert "DynamicLargeLinearModelMP, which your script's main() builds and runs" in said and \
        "has no class" not in said, said
    assert "has no class LargeLinearModelMP" in renamed_model_note("PipelineMLP")
