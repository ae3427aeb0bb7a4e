"""HW3's feedback names the model class the grader built, and the file it is in.

Since 2bfff02 a script whose model class has another name than the handout's (`class
PipelineMLP(nn.Module)`, built in main()) is graded, but every "where to look" still named
`LargeLinearModelMP.__init__` / `LargeLinearModelMP.forward`, which the student's file does not
have. The probe's records name the class it built (`model_class`, where renamed) and the file
defining it (`model_file`, where not hw3/model_parallel.py: a helper module the script imports
it from); the handout's names are the fallback where neither was found.

Each failure here is one Task 3, 4 or 5 check failing on records as the probe writes them.
"""
from __future__ import annotations

import importlib.util
import sys

import pytest

from grader.checks import test_hw3 as hw3
from grader.harness.hw3_build import CannotBuild, class_file, construct
from grader.harness.observation import Observation

RENAMED = {"model_class": "PipelineMLP"}


def layout(gpus: int, depth: int, devices: list[str], **named) -> dict:
    return {"kind": "layout", "gpus": gpus, "depth": depth, "n_layers": depth,
            "distinct_layers": depth, "devices": devices, **named}


def probe(*records: dict):
    return list(records), Observation("hw3/model_parallel.py", gpus=5, returncode=0)


def failure(check, *args) -> str:
    with pytest.raises(AssertionError) as raised:
        check(*args)
    return str(raised.value)


def all_on_cuda0(**named) -> list[dict]:
    return [layout(n, d, ["cuda:0"] * d, **named) for n, d in ((3, 5), (4, 6), (5, 12))]


def test_a_renamed_class_with_every_layer_on_cuda0_is_named_in_task3s_feedback():
    said = failure(hw3.test_task3_layers_on_every_gpu, probe(*all_on_cuda0(**RENAMED)), 3, 5,
                   lambda text: None, None)
    assert "Where to look: PipelineMLP.__init__ in hw3/model_parallel.py" in said, (
        f"expected Task 3's feedback to name the class the grader built, PipelineMLP.__init__; "
        f"observed:\n{said}\nwhere to look: look_task3 in grader/checks/test_hw3.py")
    assert "LargeLinearModelMP" not in said, said


def test_a_class_in_a_helper_module_is_named_with_that_file():
    records = all_on_cuda0(model_class="PipelineMLP", model_file="hw3/stages.py")
    said = failure(hw3.test_task3_layers_on_every_gpu, probe(*records), 4, 6,
                   lambda text: None, None)
    assert "PipelineMLP.__init__ in hw3/stages.py" in said, said


def test_the_handouts_name_is_the_fallback_where_the_probe_found_no_other():
    said = failure(hw3.test_task3_layers_on_every_gpu, probe(*all_on_cuda0()), 3, 5,
                   lambda text: None, None)
    assert "LargeLinearModelMP.__init__ in hw3/model_parallel.py" in said, said


UNEVEN = ["cuda:0", "cuda:0", "cuda:0", "cuda:1", "cuda:2"]


@pytest.mark.parametrize("check, found, want", [
    (hw3.test_task3_even_split, layout(3, 5, UNEVEN, **RENAMED), "PipelineMLP.__init__ in"),
    (hw3.test_task3_contiguous_blocks,
     layout(3, 5, ["cuda:0", "cuda:1", "cuda:2", "cuda:0", "cuda:1"], **RENAMED),
     "PipelineMLP.__init__ in"),
    (hw3.test_task3_every_layer_once_and_output_equals_one_device,
     dict(layout(3, 5, ["cuda:0", "cuda:0", "cuda:1", "cuda:1", "cuda:2"], **RENAMED),
          matches_single_gpu=False, max_difference=0.5), "PipelineMLP.forward in"),
    (hw3.test_task3_every_layer_once_and_output_equals_one_device,
     dict(layout(3, 5, ["cuda:0", "cuda:0", "cuda:1", "cuda:1", "cuda:2"], **RENAMED),
          forward_error={"type": "RuntimeError", "message": "boom"}), "PipelineMLP.forward in"),
], ids=["balance", "blocks", "output", "forward-error"])
def test_every_task3_check_names_the_built_class(check, found, want):
    said = failure(check, probe(found), 3, 5, None)
    assert want in said and "LargeLinearModelMP" not in said, said


def test_task4_and_the_moved_layers_name_the_built_class():
    task4 = {"kind": "task4", "configs": [[2, 20], [5, 20]], **RENAMED,
             "results": {"2x20": {"median_ms": 10.0}, "5x20": {"median_ms": 5.0}}}
    said = failure(hw3.test_task4_more_gpus_no_faster, probe(task4))
    assert "PipelineMLP.forward in hw3/model_parallel.py" in said, said
    moved = dict(layout(3, 5, ["cuda:0"] * 5, **RENAMED),
                 devices_built=["cuda:0", "cuda:0", "cuda:1", "cuda:1", "cuda:2"])
    said = failure(hw3.test_task3_layers_on_every_gpu, probe(moved), 3, 5, lambda text: None,
                   None)
    assert "PipelineMLP.forward in hw3/model_parallel.py (the baton pass): it moves layers" in said


def test_the_file_of_a_class_imported_from_a_helper_module(tmp_path):
    folder = tmp_path / "hw3"
    folder.mkdir()
    (folder / "stages.py").write_text("class PipelineMLP:\n    pass\n")
    (folder / "model_parallel.py").write_text("from stages import PipelineMLP\n\nclass Own:\n"
                                              "    pass\n")
    sys.path.insert(0, str(folder))
    try:
        spec = importlib.util.spec_from_file_location("model_parallel", folder / "model_parallel.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        assert class_file(module.PipelineMLP, module) == "hw3/stages.py"
        assert class_file(module.Own, module) == "hw3/model_parallel.py"
        assert class_file(int, module) == "hw3/model_parallel.py"   # no source of its own
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop("stages", None)


def test_a_renamed_class_that_cannot_be_built_is_named_in_the_signatures_tried():
    import types
    source = ("import torch.nn as nn\nDIM = 8\nDEPTH = 4\n\n"
              "class PipelineMLP(nn.Module):\n"
              "    def __init__(self, cfg):\n        super().__init__()\n"
              "        self.layers = nn.ModuleList([nn.Linear(8, 8)])\n\n"
              "def main():\n    cfg = {}\n    cfg['dim'] = DIM\n    model = PipelineMLP(cfg)\n")
    module = types.ModuleType("model_parallel")
    exec(compile(source, "model_parallel.py", "exec", dont_inherit=True), module.__dict__)
    with pytest.raises(CannotBuild) as raised:
        construct(module, 16, 6, source=source, gpus=2)
    said = str(raised.value)
    assert "PipelineMLP(dim=..., depth=...)" in said and "LargeLinearModelMP" not in said, said


@pytest.mark.slow
def test_a_renamed_class_with_every_layer_on_cuda0_graded_end_to_end(tmp_path):
    """The brief's repro: the reference with its class renamed PipelineMLP and every layer on
    cuda:0 (`.cuda()`), graded: Task 3's feedback names PipelineMLP.__init__."""
    from grader.grading import grade_submission
    from tests.fixtures.planted_bugs import REFERENCE, apply_replacements, copy_tree
    submission = tmp_path / "submission"
    copy_tree(REFERENCE, submission)
    script = submission / "hw3" / "model_parallel.py"
    script.write_text(apply_replacements(script.read_text(), [
        ("class LargeLinearModelMP(nn.Module):\n", "class PipelineMLP(nn.Module):\n"),
        ("    model = LargeLinearModelMP(DIM, DEPTH)\n", "    model = PipelineMLP(DIM, DEPTH)\n"),
        ('nn.Linear(dim, dim).to(torch.device(f"cuda:{gpu}"))', "nn.Linear(dim, dim).cuda()")],
        "renamed, every layer on cuda:0"))
    result = grade_submission(submission, tmp_path / "out", ["hw3"])
    (assignment,) = result["assignments"]
    task3 = next(i for i in assignment["items"] if i["id"] == "hw3.task3")
    assert task3["score"] == 0 and "Where to look: PipelineMLP.__init__ in hw3/model_parallel.py" \
        in task3["feedback"], task3["feedback"]
    report = (tmp_path / "out" / "report.md").read_text()
    assert "LargeLinearModelMP.__init__" not in report and \
        "LargeLinearModelMP.forward" not in report, report
