"""The parent map the scans walk up from a name (grader/common/ast_parents.py): script_writes,
own_objects' test of one's own that builds a template script's class with constants, and
Practical 10's second-stage device share it."""
from __future__ import annotations

import ast

import pytest

from grader.common.ast_parents import ast_parents
from grader.integrity.own_objects import may_rebind_names

SCRIPT = "x = 1\ny = x + 1\nprint(x, model.to(device=x))\n"


def test_every_node_but_the_root_has_the_node_that_holds_it():
    tree = ast.parse(SCRIPT)
    parents = ast_parents(tree)
    nodes = list(ast.walk(tree))
    assert tree not in parents, "expected: the module has no parent; observed: it has one"
    for node in nodes[1:]:
        assert node in list(ast.iter_child_nodes(parents[node])), (
            f"expected: {ast.dump(node)[:60]} among its parent's children; observed: parent "
            f"{type(parents[node]).__name__} does not hold it (grader/common/ast_parents.py)")
    # (the Load/Store contexts are shared singletons: one key, whichever parent came last)
    assert len(parents) == len({id(node) for node in nodes}) - 1


def test_alike_reads_on_different_lines_have_their_own_parents():
    # `x` is read three times; each read is its own node, kept apart (identity, not equality).
    tree = ast.parse(SCRIPT)
    parents = ast_parents(tree)
    reads = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == "x"
             and isinstance(n.ctx, ast.Load)]
    held_by = sorted(type(parents[n]).__name__ for n in reads)
    assert held_by == ["BinOp", "Call", "keyword"], (
        f"expected: the reads of x held by a BinOp, a Call and a keyword; observed: {held_by}")


@pytest.mark.parametrize("source, rebinds", [
    # a test of one's own building the script's model with constants keeps objects trusted
    ("import practical5_dp\nm = practical5_dp.Model(16, 6)\n", False),
    ("import practical5_dp\nm = practical5_dp.layers.Model(16, k=2)\n", False),
    # with values of its own, or the module handed on, it could call anything
    ("import practical5_dp\nn = 3\nm = practical5_dp.Model(n)\n", True),
    ("import practical5_dp\nm = practical5_dp\n", True),
])
def test_a_template_script_called_with_constants_is_read_through_the_parent_map(source, rebinds):
    observed = may_rebind_names(ast.parse(source), {"practical5_dp"})
    assert observed is rebinds, (
        f"expected may_rebind_names={rebinds}, observed {observed} for {source!r} "
        "(grader/integrity/own_objects.py _reaches_a_template_script)")
