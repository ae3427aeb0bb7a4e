"""The whole number a top-level constant holds when the grader runs the script, where it is
written as an expression the grader can work out without running it.

Students write a step count as `STEPS = 300`, but also `STEPS = 10 * 30`, `STEPS = EPOCHS *
BATCHES` (earlier constants), `STEPS = int(1e3)`, `STEPS = int(os.environ.get("STEPS", 300))`,
`int(os.environ["STEPS"]) if "STEPS" in os.environ else 300`, `int(sys.argv[1]) if
len(sys.argv) > 1 else 300` or `parser.parse_args().steps` (argparse, `default=300`): read as
they evaluate in the grader's runs of the practicals, which start the script with no arguments
(the handouts' `python SCRIPT` and `torchrun --nproc_per_node=N SCRIPT`;
grader/harness/execute.py run_script, args=() in every practical's run) and an environment
holding no variable of the script's own (execute.py run_environment), so an environment read
or an argument gives its default. Anything else (a call of the script's own, a file, a builtin
or module the script binds itself, an environment or sys.argv it writes before the read:
script_writes.py) is unknown: None, and the caller leaves it as written. A value worked out
wrongly would let the STEPS cap raise a run (adv40 F6), so anything in doubt is unknown.
"""
from __future__ import annotations

import ast
import operator

from grader.common.constant_targets import assignment_targets, paired_values
from grader.common.parsed_arguments import NotWorkedOut as _Unknown
from grader.common.parsed_arguments import namespace_value, parsed
from grader.common.script_writes import EVALUATED_BUILTINS, ScriptWrites, script_writes

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
_COMPARISONS = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt,
                ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
                ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}
_BUILTINS = {"int": int, "float": float, "round": round, "abs": abs, "min": min, "max": max,
             "len": len}
assert set(_BUILTINS) == EVALUATED_BUILTINS
# Numbers past this are no step count (and `10 ** 10 ** 10` is never worked out).
_LARGEST = 10 ** 12


class _ScriptPath:
    """sys.argv[0] of a graded run: the script's absolute path, equal to no option or number."""

    def __eq__(self, other):
        if isinstance(other, str) and not other.endswith(".py"):
            return False
        raise _Unknown

    __hash__ = object.__hash__


def whole_number_assigned(source: str, name: str, modules=None) -> int | None:
    """The whole number the script's last top-level assignment of `name` gives it in a graded
    run (no arguments, no environment variable of the script's own), or None where it is not
    assigned at the top level, does not parse, or holds something else (a float that is not
    whole, a string, a value the grader cannot work out without running the script).
    `modules(name)`: the text of the student's own module `name`, whose writes of the
    environment at import count (script_writes.py)."""
    try:
        tree = ast.parse(source)
        writes = script_writes(tree, modules)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if writes.opaque:   # globals(), exec, a star import: any name may hold anything
        return None
    known: dict[str, object] = {}
    for statement in tree.body:
        if not assignment_targets(statement):
            # `STEPS *= 30`, or a name set inside a top-level `if`, `for` or `try`: what it holds
            # then is not worked out (a rewrite of the plain assignment would not bound it).
            for name_set in _names_set(statement):
                known.pop(name_set, None)
        reading = _Reading(tree, writes, known, statement.end_lineno or statement.lineno)
        for target in assignment_targets(statement):
            for bound, value in paired_values(target, statement.value):
                try:
                    known[bound] = reading.value(value)
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


class _Reading:
    """The value of an expression of the top-level statement that ends at `line`, as the
    graded run computes it there."""

    def __init__(self, tree: ast.Module, writes: ScriptWrites, known: dict, line: int):
        self.tree, self.writes, self.known, self.line = tree, writes, known, line

    def value(self, node: ast.expr | None):
        if isinstance(node, ast.Constant) and type(node.value) in (int, float, str) \
                or isinstance(node, ast.Constant) and node.value is None:
            return node.value
        if isinstance(node, ast.Name) and node.id in self.known \
                and node.id not in self.writes.global_names:   # a function may set it
            return self.known[node.id]
        if isinstance(node, (ast.Name, ast.Attribute)) \
                and self.writes.canonical(node) == "sys.argv":
            if self.writes.argv_written(self.line):
                raise _Unknown
            return [_ScriptPath()]
        if isinstance(node, ast.Attribute):
            return namespace_value(self, node)   # `args.steps`
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            operand = self.number(node.operand)
            return -operand if isinstance(node.op, ast.USub) else operand
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return not self.value(node.operand)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            left, right = self.number(node.left), self.number(node.right)
            if isinstance(node.op, ast.Pow) and (abs(right) > 64 or abs(left) > _LARGEST):
                raise _Unknown
            return _bounded(_OPERATORS[type(node.op)](left, right))
        if isinstance(node, ast.BoolOp):
            for part in node.values:   # `os.environ.get("STEPS") or 300`
                value = self.value(part)
                if bool(value) == isinstance(node.op, ast.Or):
                    return value
            return value
        if isinstance(node, ast.IfExp):   # only the branch the run takes is worked out
            return self.value(node.body if self.value(node.test) else node.orelse)
        if isinstance(node, ast.Compare):
            return self.comparison(node)
        if isinstance(node, ast.Subscript):
            return self.item(node)
        if isinstance(node, ast.Call):
            return self.call(node)
        raise _Unknown

    def number(self, node):
        value = self.value(node)
        if type(value) not in (int, float):
            raise _Unknown
        return value

    def comparison(self, node: ast.Compare):
        left = self.value(node.left)
        for op, right_node in zip(node.ops, node.comparators):
            if type(op) not in _COMPARISONS:
                raise _Unknown
            if isinstance(op, (ast.In, ast.NotIn)) \
                    and self.writes.canonical(right_node) == "os.environ":
                found = not isinstance(self.environment(left), _Absent)
                outcome = found if isinstance(op, ast.In) else not found
                right = None
            else:
                right = self.value(right_node)
                _comparable(left), _comparable(right)
                outcome = _COMPARISONS[type(op)](left, right)
            if not outcome:
                return False
            left = right
        return True

    def item(self, node: ast.Subscript):
        if self.writes.canonical(node.value) == "os.environ":   # `os.environ["STEPS"]`
            found = self.environment(self.value(node.slice))
            if isinstance(found, _Absent):
                raise _Unknown   # a KeyError in the run: it takes no steps
            return found
        container = self.value(node.value)
        if not isinstance(container, (list, tuple)):
            raise _Unknown
        if isinstance(node.slice, ast.Slice):
            bounds = [None if part is None else self.number(part)
                      for part in (node.slice.lower, node.slice.upper, node.slice.step)]
            if any(b is not None and type(b) is not int for b in bounds) or bounds[2] == 0:
                raise _Unknown
            return container[slice(*bounds)]
        index = self.value(node.slice)
        if type(index) is not int or not -len(container) <= index < len(container):
            raise _Unknown   # an IndexError in the run
        return container[index]

    def environment(self, variable):
        """What the graded run's environment holds for `variable`: absent, unless it is one of
        the run's own (unknown) or the script set it before this line (unknown, but for the
        value an own module's import sets: script_writes.py environment_value)."""
        if type(variable) is not str or variable in _RUN_VARIABLES \
                or variable.startswith(_RUN_PREFIXES):
            raise _Unknown
        if self.writes.environment_written(variable, self.line):
            value = self.writes.environment_value(variable, self.line)
            if value is None:
                raise _Unknown
            return value
        return _Absent()

    def call(self, node: ast.Call):
        function = self.writes.canonical(node.func)   # None where the script binds the name
        if function == "argparse.ArgumentParser" or isinstance(node.func, ast.Attribute) \
                and isinstance(node.func.value, ast.Name) \
                and node.func.attr in ("parse_args", "parse_known_args"):
            return parsed(self, node)
        if node.keywords:
            raise _Unknown
        if function in _BUILTINS and node.args:
            values = [self.value(a) for a in node.args]
            if function == "len" and len(values) == 1 and isinstance(values[0], (list, tuple)):
                return len(values[0])
            if function in ("int", "float") and len(values) == 1 \
                    and type(values[0]) in (int, float, str):
                return _bounded(_BUILTINS[function](values[0]))
            if all(type(v) in (int, float) for v in values) and (
                    function in ("min", "max") or len(values) == 1) and function != "len":
                return _bounded(_BUILTINS[function](*values))
            raise _Unknown
        if function in ("os.environ.get", "os.getenv") and 1 <= len(node.args) <= 2:
            found = self.environment(self.value(node.args[0]))
            if not isinstance(found, _Absent):
                return found
            return self.value(node.args[1]) if len(node.args) == 2 else None
        raise _Unknown


class _Absent:
    """An environment variable the graded run does not have."""


def _comparable(value) -> None:
    if not (type(value) in (int, float, str, bool) or value is None
            or isinstance(value, (list, tuple, _ScriptPath))):
        raise _Unknown


def _bounded(value):
    if abs(value) > _LARGEST:
        raise _Unknown
    return value
