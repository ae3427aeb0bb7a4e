"""Each node of a parsed script to the node that holds it, for the scans that judge a name by
where it is used (the call it is the function of, the assignment it is the value of) and so
walk up the tree from it (script_writes, integrity/own_objects, checks/second_stage_device).
"""
from __future__ import annotations

import ast


def ast_parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    """{node: the node it is a child of}, for every node of `tree` but its root. Nodes hash by
    identity, so two alike subtrees (`x` read on two lines) are different keys."""
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
