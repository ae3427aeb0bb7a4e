"""The whole number a top-level constant holds when the grader runs the script, where it is
written as an expression the grader can work out without running it.

Students write a step count as `STEPS = 300`, but also `STEPS = 10 * 30`, `STEPS = EPOCHS *
BATCHES` (earlier constants), `STEPS = int(1e3)` or `STEPS = int(os.environ.get("STEPS", 300))`:
read as they evaluate in the grader's runs, whose environment holds no variable of the script's
own (grader/harness/execute.py run_environment: the run's own variables only), so an
environment read gives its default. Anything else (a call of the script's own, argparse,
sys.argv, a file) is unknown: None, and the caller leaves it as written.
"""
from __future__ import annotations

import ast
import operator

from grader.common.constant_targets import assignment_targets, paired_values

# Environment variables a graded run has (its own, torchrun's, the thread limits): a constant
# read from one of these is not its written default there.
_RUN_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK",
                  "GROUP_WORLD_SIZE", "ROLE_RANK", "ROLE_WORLD_SIZE", "MASTER_ADDR",
                  "MASTER_PORT", "PATH", "HOME")
_RUN_PREFIXES = ("TORCHELASTIC_", "TORCH_", "OMP_", "MKL_", "OPENBLAS_", "NUMEXPR_",
                 "VECLIB_", "PDL_", "CUDA_", "PYTHON", "NCCL_", "GLOO_")
_OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
              ast.FloorDiv: operator.floordiv, ast.Div: operator.truediv, ast.Mod: operator.mod,
              ast.Pow: operator.pow}
# Numbers past this are no step count (and `10 ** 10 ** 10` is never worked out).
_LARGEST = 10 ** 12


class _Unknown(Exception):
    pass


def whole_number_assigned(source: str, name: str) -> int | None:
    """The whole number the script's last top-level assignment of `name` gives it in a graded
    run, or None where it is not assigned at the top level, does not parse, or holds
    something else (a float that is not whole, a string, a value the grader cannot work out
    without running the script)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    known: dict[str, object] = {}
    for statement in tree.body:
        if not assignment_targets(statement):
            # `STEPS *= 30`, or a name set inside a top-level `if`, `for` or `try`: what it holds
            # then is not worked out (a rewrite of the plain assignment would not bound it).
            for name_set in _names_set(statement):
                known.pop(name_set, None)
        for target in assignment_targets(statement):
            for bound, value in paired_values(target, statement.value):
                try:
                    known[bound] = _value(value, known)
                except (_Unknown, ArithmeticError, ValueError, TypeError, RecursionError):
                    known.pop(bound, None)   # a later use of it is unknown too
    value = known.get(name)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if type(value) is int else None


def _names_set(statement: ast.stmt) -> set[str]:
    """The module-level names a statement that is no plain assignment may set (not those of a
    function's or class's own body, which run elsewhere or bind the class's)."""
    found, pending = set(), [statement]
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.add(node.id)
        pending.extend(ast.iter_child_nodes(node))
    return found


def _value(node: ast.expr | None, known: dict):
    if isinstance(node, ast.Constant) and type(node.value) in (int, float, str) \
            or isinstance(node, ast.Constant) and node.value is None:
        return node.value
    if isinstance(node, ast.Name) and node.id in known:
        return known[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        operand = _number(node.operand, known)
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left, right = _number(node.left, known), _number(node.right, known)
        if isinstance(node.op, ast.Pow) and (abs(right) > 64 or abs(left) > _LARGEST):
            raise _Unknown
        return _bounded(_OPERATORS[type(node.op)](left, right))
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
        for part in node.values:   # `os.environ.get("STEPS") or 300`
            value = _value(part, known)
            if value:
                return value
        return value
    if isinstance(node, ast.Call):
        return _call(node, known)
    raise _Unknown


def _number(node, known):
    value = _value(node, known)
    if type(value) not in (int, float):
        raise _Unknown
    return value


def _bounded(value):
    if abs(value) > _LARGEST:
        raise _Unknown
    return value


def _call(node: ast.Call, known: dict):
    if node.keywords:
        raise _Unknown
    function = ast.unparse(node.func)   # `os.environ.get`, `int`
    if function in ("int", "float", "round", "abs", "min", "max") and node.args:
        values = [_value(a, known) for a in node.args]
        if function in ("int", "float") and len(values) == 1 \
                and type(values[0]) in (int, float, str):
            return _bounded({"int": int, "float": float}[function](values[0]))
        if all(type(v) in (int, float) for v in values) and (
                function in ("min", "max") or len(values) == 1):
            return _bounded({"round": round, "abs": abs, "min": min, "max": max}[function](*values))
        raise _Unknown
    if function in ("os.environ.get", "os.getenv") and 1 <= len(node.args) <= 2:
        variable = _value(node.args[0], known)
        if type(variable) is not str or variable in _RUN_VARIABLES \
                or variable.startswith(_RUN_PREFIXES):
            raise _Unknown
        return _value(node.args[1], known) if len(node.args) == 2 else None
    raise _Unknown

