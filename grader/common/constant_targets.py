"""Which value each name of a top-level assignment gets, read from the parsed source.

The course's scripts keep their constants as `NAME = <literal>`; students also write them
`BATCH_SIZE, MICRO_BATCHES = 64, 4`, `DIM = HIDDEN = 512` or `DEPTH: int = 6`. The grader reads
them (what the script was handed in with) and rewrites them (runs with other values): both go
through here, so every form the one knows the other knows too.
"""
from __future__ import annotations

import ast


def assignment_targets(statement: ast.stmt) -> list[ast.expr]:
    """The targets of a top-level assignment statement (`A = B = 4`: two), [] for any other
    statement. An annotation without a value (`DEPTH: int`) assigns nothing."""
    if isinstance(statement, ast.Assign):
        return list(statement.targets)
    if isinstance(statement, ast.AnnAssign) and statement.value is not None:
        return [statement.target]
    return []


def paired_values(target: ast.expr, value: ast.expr | None) -> list[tuple[str, ast.expr | None]]:
    """(name, the expression it is assigned) for every name `target` binds: a name's own part
    of a literal tuple or list (`A, (B, C) = 1, (2, 3)`), or None where the value cannot be
    told apart without running the script (`A, B = f()`, `A, *B = ...`)."""
    if isinstance(target, ast.Name):
        return [(target.id, value)]
    if isinstance(target, (ast.Tuple, ast.List)):
        if (isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts)
                and not any(isinstance(e, ast.Starred) for e in (*target.elts, *value.elts))):
            return [pair for part, part_value in zip(target.elts, value.elts)
                    for pair in paired_values(part, part_value)]
        return [(name, None) for part in target.elts for name, _ in paired_values(part, None)]
    if isinstance(target, ast.Starred):
        return [(name, None) for name, _ in paired_values(target.value, None)]
    return []   # an attribute or an item (`config.DEPTH = 6`, `d["x"] = 1`): no name of its own


def replace_values(target: ast.expr, value: ast.expr, new: dict) -> tuple[ast.expr, set]:
    """`value` with the parts that `target` assigns to a name of `new` replaced by that name's
    new value (a literal), and the names replaced so; names it binds but cannot be told apart
    in `value` are left for the caller."""
    if isinstance(target, ast.Name):
        if target.id in new:
            return ast.copy_location(ast.Constant(new[target.id]), value), {target.id}
        return value, set()
    if (isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List))
            and len(value.elts) == len(target.elts)
            and not any(isinstance(e, ast.Starred) for e in (*target.elts, *value.elts))):
        parts, done = [], set()
        for part, part_value in zip(target.elts, value.elts):
            replaced, names = replace_values(part, part_value, new)
            parts.append(replaced)
            done |= names
        return ast.copy_location(type(value)(elts=parts, ctx=ast.Load()), value), done
    return value, set()
