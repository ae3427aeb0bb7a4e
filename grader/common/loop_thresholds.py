"""How far a training loop's steps may be lowered without taking out what the student's run
does past a threshold of its counter: `if step >= WARMUP: times.append(dt)`, `if step < 20:
continue` before timing. Lowered to the template's 10 steps, such a loop times no step at all
and its `sum(times) / len(times)` stops with ZeroDivisionError, which the student's own 300
steps never do (adv43 F6). So a loop lowered past a threshold T of its counter keeps T plus the
template's steps (20 + 10 = 30), as many steps past the warm-up as the template takes, never
more than the student wrote.

A threshold is a comparison of the counter with a value the grader reads without running the
script: a number, a name bound once to a number (`warmup = 20`, `WARMUP = 2 * 10`), an
expression of those (`step >= WARMUP + 5`, `step + 1 > 20`). Its step is where the comparison
first holds what it holds past the warm-up (`step >= 20`, `step < 20`: 20); an equality is
its one step (`step == 0`: 0, `step == 50`: 50). A modulo (`step % 50 == 0`) is no threshold: it
only keeps the steps by which it has taken every value it takes in the student's run (step 1
for `% 50 == 0`). Comparisons are read in the loop's function (the module's top level where the
loop is there) and in the file's functions the counter is handed to (`train_step(step)`). A
comparison of the counter with anything else (`step >= args.warmup`, `i < len(times)`) cannot
be read: the loop is left as written (Unreadable).
"""
from __future__ import annotations

import ast
import operator
from dataclasses import dataclass

from grader.common.ast_parents import ast_parents

_ARITHMETIC = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
               ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Div: operator.truediv,
               ast.Pow: lambda a, b: a ** b if abs(b) <= 64 and abs(a) <= 2 ** 20 else None}
_COMPARISONS = {ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Lt: operator.lt,
                ast.LtE: operator.le, ast.Eq: operator.eq, ast.NotEq: operator.ne,
                ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}
# The steps of the student's run a comparison is read over; past them it is not read.
MOST_READ = 100_000
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


class Unreadable(Exception):
    pass


@dataclass(frozen=True)
class Needs:
    """What lowering one loop must keep: `past` steps before the last threshold (the template's
    steps are kept beyond it), and `seen` steps by which every modulo test took all its values."""
    past: int | None = None
    seen: int = 0

    def fewest(self, most: int) -> int:
        return max(most, self.seen, 0 if self.past is None else self.past + most)


def loop_needs(tree: ast.Module, parents: dict, loop: ast.AST, counters, steps: int,
               skip=()) -> Needs:
    """The Needs of `loop`, whose `counters` count its steps from 0 (its `for` target, a
    `while` counter) over the `steps` of the student's run; `skip`: the comparisons that are
    the loop's bound (`while step < args.steps`, `if step == STEPS: break`). Unreadable where a
    comparison of a counter cannot be read."""
    return needs_of(counter_comparisons(tree, parents, loop, counters, skip), steps,
                    literal_names(tree))


def counter_comparisons(tree: ast.Module, parents: dict, loop: ast.AST, counters,
                        skip=()) -> list:
    """(comparison, {name: its value at a step}) of each comparison reading a counter of
    `loop`, in the loop's function and the file's functions the counter is handed to."""
    literals = literal_names(tree)
    functions = {node.name: node for node in tree.body
                 if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    skipped = {id(node) for node in skip}
    found = []
    scope = _enclosing_function(parents, loop) or tree
    pending = [(scope, {name: (lambda s: s) for name in counters}, ())]
    while pending:
        node, binders, seen = pending.pop()
        for inner in _walk(node, binders):
            if isinstance(inner, ast.Compare) and id(inner) not in skipped \
                    and _names_in(inner) & set(binders):
                found.append((inner, binders))
            elif isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) \
                    and inner.func.id in functions and inner.func.id not in seen \
                    and _names_in(inner) & set(binders):
                callee = functions[inner.func.id]
                handed = _handed(inner, callee, binders, literals)
                if handed:
                    pending.append((callee, handed, (*seen, callee.name)))
    return found


def needs_of(found: list, steps: int, literals: dict) -> Needs:
    """The Needs of the comparisons `found` (counter_comparisons) over a run of `steps`."""
    if not found:
        return Needs()
    if steps > MOST_READ:
        raise Unreadable
    past, every = None, 0
    for comparison, binders in found:
        first = _first_steps(comparison, binders, steps, literals)
        if len(first) < 2:
            continue   # the same at every step of the student's run: nothing to keep
        if _modulo(comparison, binders):
            every = max(every, 1 + max(first.values()))
        elif len(comparison.ops) == 1 and isinstance(comparison.ops[0], (ast.Eq, ast.In)):
            past = max(past or 0, first[True])   # `step == 50`: the one step it holds
        else:
            past = max(past or 0, max(first.values()))   # `step >= 20`, `step < 20`: 20
    return Needs(past, every)


def _first_steps(comparison: ast.Compare, binders, steps: int, literals: dict) -> dict:
    """{True/False: the first of the `steps` at which the comparison holds it}; read until both
    are found (a comparison holds one or the other)."""
    first = {}
    for step in range(steps):
        first.setdefault(_holds(comparison, {n: b(step) for n, b in binders.items()}, literals),
                         step)
        if len(first) == 2:
            break
    return first


def _modulo(comparison: ast.Compare, binders) -> bool:
    return any(isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod)
               and _names_in(node.left) & set(binders) for node in ast.walk(comparison))


def _holds(comparison: ast.Compare, env: dict, literals: dict) -> bool:
    left = value_of(comparison.left, env, literals)
    for op, right_node in zip(comparison.ops, comparison.comparators):
        right = value_of(right_node, env, literals)
        try:
            if not _COMPARISONS[type(op)](left, right):
                return False
        except TypeError:
            raise Unreadable from None
        left = right
    return True


def value_of(node, env: dict, literals: dict, depth: int = 0):
    """The number `node` holds with the names of `env` (and of `literals`: names bound once to
    a number) at their values; Unreadable where it is anything else."""
    if depth > 20:
        raise Unreadable
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.Name) and node.id in env:
        return env[node.id]
    if isinstance(node, ast.Name) and node.id in literals:
        return value_of(literals[node.id], {}, literals, depth + 1)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = value_of(node.operand, env, literals, depth + 1)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        try:
            value = _ARITHMETIC[type(node.op)](value_of(node.left, env, literals, depth + 1),
                                               value_of(node.right, env, literals, depth + 1))
        except (ArithmeticError, TypeError):
            raise Unreadable from None
        if value is None or isinstance(value, complex):
            raise Unreadable   # a power too large to work out, or not a number
        return value
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return tuple(value_of(e, env, literals, depth + 1) for e in node.elts)
    raise Unreadable


def literal_names(tree: ast.Module) -> dict:
    """{name: the expression of its one binding in the file}, for names bound once by a plain
    assignment (`warmup = 20`, `WARMUP: int = 2 * 10`) and nowhere else (no parameter, no
    `global`, no loop or augmented assignment); whether that expression is a number of
    literals is judged where it is read (value_of)."""
    bindings: dict[str, list] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bindings.setdefault(node.id, []).append(node)
        elif isinstance(node, ast.arg):
            bindings.setdefault(node.arg, []).append(node)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                bindings.setdefault(name, []).extend([node, node])
    parents = ast_parents(tree)
    found = {}
    for name, nodes in bindings.items():
        parent = parents.get(nodes[0]) if len(nodes) == 1 else None
        if isinstance(parent, ast.Assign) and parent.targets == nodes:
            found[name] = parent.value
        elif isinstance(parent, ast.AnnAssign) and parent.target is nodes[0] \
                and parent.value is not None:
            found[name] = parent.value
    return found


def _handed(call: ast.Call, callee, binders: dict, literals: dict) -> dict | None:
    """{parameter: binder} of the callee's parameters handed an expression of a counter
    (`train_step(model, step)`, `log(step=step + 1)`); Unreadable where the call's arguments
    cannot be paired with its parameters."""
    if isinstance(callee, ast.Lambda) or callee.args.vararg or callee.args.kwarg \
            or any(isinstance(a, ast.Starred) for a in call.args) \
            or any(k.arg is None for k in call.keywords):
        raise Unreadable
    parameters = [a.arg for a in callee.args.posonlyargs + callee.args.args]
    paired = list(zip(parameters, call.args)) + [(k.arg, k.value) for k in call.keywords]
    if len(call.args) > len(parameters):
        raise Unreadable
    handed = {}
    for parameter, argument in paired:
        if _names_in(argument) & set(binders):
            handed[parameter] = _binder(argument, binders, literals)
    return handed


def _binder(argument, binders: dict, literals: dict):
    def value(step):
        return value_of(argument, {n: b(step) for n, b in binders.items()}, literals)
    return value


def _walk(node, binders):
    """The nodes of `node` where the names of `binders` are its: not into a nested function
    that binds one of them again (a parameter or an assignment of its own)."""
    pending = [node]
    while pending:
        current = pending.pop()
        yield current
        for child in ast.iter_child_nodes(current):
            if isinstance(child, _FUNCTIONS) and _binds_again(child, binders):
                continue
            pending.append(child)


def _binds_again(function, binders) -> bool:
    names = {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)}
    names |= {n.id for n in ast.walk(function) if isinstance(n, ast.Name)
              and not isinstance(n.ctx, ast.Load)}
    declared = {name for n in ast.walk(function) if isinstance(n, (ast.Global, ast.Nonlocal))
                for name in n.names}
    return bool((names - declared) & set(binders))


def _enclosing_function(parents: dict, node):
    while node in parents:
        node = parents[node]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return node
    return None


def _names_in(node) -> set:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
