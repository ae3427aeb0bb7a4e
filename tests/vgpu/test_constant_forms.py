"""Constants written the other ways students write them (`BATCH_SIZE, MICRO_BATCHES = 64, 4`,
`A = B = 4`, `DEPTH: int = 6`): the grader reads and rewrites them as it does `NAME = 64`. A
tuple had been "must be assigned at the top level" and cost Practical 10 5.3 points (adv37 F2)."""
import pytest

from grader.checks.practical_measures import UNKNOWN, assigned_constants
from grader.vgpu.run_on_node import ConstantNotFound, rewrite_constants, rewrite_where_assigned

FORMS = {
    "tuple": "BATCH_SIZE, MICRO_BATCHES = 64, 4\nDIM, HIDDEN = 512, 1024\n",
    "list": "[BATCH_SIZE, MICRO_BATCHES] = [64, 4]\n",
    "nested": "(BATCH_SIZE, (MICRO_BATCHES, DIM)) = 64, (4, 512)\n",
    "chained": "MICRO_BATCHES = BATCH_SIZE = 4\nBATCH_SIZE = 64\n",
    "annotated": "BATCH_SIZE: int = 64\nMICRO_BATCHES: int = 4\n",
}


def run(source: str, values: dict) -> dict:
    namespace = {}
    exec(compile(rewrite_constants(source, "sample.py", values), "sample.py", "exec"), namespace)
    return namespace


@pytest.mark.parametrize("form", sorted(FORMS))
def test_each_form_is_read_as_handed_in(form):
    found = assigned_constants(FORMS[form], {"BATCH_SIZE", "MICRO_BATCHES"})
    assert found == {"BATCH_SIZE": 64, "MICRO_BATCHES": 4}, (
        f"expected the handed-in values of the {form} form {FORMS[form]!r}; observed {found} "
        "(grader/checks/practical_measures.py: assigned_constants)")


@pytest.mark.parametrize("form", sorted(FORMS))
def test_each_form_is_rewritten_and_keeps_its_other_names(form):
    namespace = run(FORMS[form], {"MICRO_BATCHES": 2})
    assert namespace["MICRO_BATCHES"] == 2 and namespace["BATCH_SIZE"] == 64, (
        f"expected MICRO_BATCHES=2 and BATCH_SIZE unchanged (64) for {FORMS[form]!r}; observed "
        f"{namespace.get('MICRO_BATCHES')}, {namespace.get('BATCH_SIZE')} "
        "(grader/vgpu/run_on_node.py: rewrite_where_assigned)")


def test_a_value_from_a_call_is_read_as_unknown_and_set_after_it():
    source = "def sizes():\n    return 64, 4\nBATCH_SIZE, MICRO_BATCHES = sizes()\n"
    assert assigned_constants(source, {"MICRO_BATCHES"}) == {"MICRO_BATCHES": UNKNOWN}
    namespace = run(source, {"MICRO_BATCHES": 1})
    assert (namespace["BATCH_SIZE"], namespace["MICRO_BATCHES"]) == (64, 1)


def test_a_starred_target_is_rewritten_after_it():
    namespace = run("MICRO_BATCHES, *REST = 4, 5, 6\n", {"MICRO_BATCHES": 8})
    assert namespace["MICRO_BATCHES"] == 8 and namespace["REST"] == [5, 6]


def test_an_attribute_or_item_is_not_a_constant():
    source = "class C: pass\nconfig = C()\nconfig.MICRO_BATCHES = 4\nd = {}\nd['x'], y = 1, 2\n"
    assert assigned_constants(source, {"MICRO_BATCHES"}) == {}
    with pytest.raises(ConstantNotFound):
        rewrite_constants(source, "sample.py", {"MICRO_BATCHES": 2})


def test_names_not_assigned_are_left_to_the_caller():
    tree, missing = rewrite_where_assigned("DIM, DEPTH = 1024, 6\n", "m.py", {"DEPTH": 20, "STEPS": 3})
    namespace = {}
    exec(compile(tree, "m.py", "exec"), namespace)
    assert missing == {"STEPS"} and (namespace["DIM"], namespace["DEPTH"]) == (1024, 20)
