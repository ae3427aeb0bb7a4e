"""Sums in which a term and the same term detached cancel: `x + (side - side.detach())`.

Such a sum's value never depends on `side`, yet autograd sends a gradient back to it (the
derivative of `side - side.detach()` in `side` is 1). The grader's gradient watch
(grader/vgpu/observe.py _GradWatch) counts a GPU as used where a gradient reaches its layer
outputs, so a spare layer on another GPU added this way forged Practical 10's two-stage layout
on a one-stage replica (a red team's adv46 F1: 7.25 -> 10 of 12). No honest solution of this
course's practicals needs a term whose value cancels; a person reads the rare one that has it
(a straight-through estimator is the same shape, and outside the course's material).

Read statically: each chain of `+`/`-` (parentheses, unary minus and a `.reshape(...)` or
`.view(...)` of a whole inner sum flattened into signed terms) is searched for a term E and,
with the opposite sign, E detached (`E.detach()`, `E.data`, `E.detach().clone()`,
`torch.detach(E)`, `E.detach_()`; both scaled alike: `k * E`, `k * E.detach()`), compared
with ast.dump. A term scaled by zero (`E * 0`) is
not looked for: no gradient reaches it, and the gradient watch already reads zeros.
"""
from __future__ import annotations

import ast
from typing import Iterator

# Methods that keep a tensor's values (and pass its gradient on unchanged): looked through on
# a whole inner sum, and on either side of a pair.
_SAME_VALUES = frozenset({"reshape", "view", "view_as", "reshape_as", "flatten", "squeeze",
                          "unsqueeze", "contiguous", "clone", "to"})
_DETACHING_METHODS = frozenset({"detach", "detach_"})
_SHOWN_CHARACTERS = 60


def cancelling_sums(tree: ast.AST) -> Iterator[tuple[ast.BinOp, ast.AST, ast.AST]]:
    """(the outermost `+`/`-` chain, the term, the same term detached) for each chain of the
    tree that holds such a pair; each chain (and the inner sums it flattens) at most once."""
    consumed: set[int] = set()
    for node in ast.walk(tree):   # outer chains before the sums inside them
        if not _is_sum(node) or id(node) in consumed:
            continue
        terms = _signed_terms(node, consumed)
        pair = _cancelling_pair(terms)
        if pair is not None:
            yield (node, *pair)


def words(term: ast.AST, detached: ast.AST) -> str:
    """What the finding says about one pair, for the student and the person who reads it."""
    shown = _short(ast.unparse(term))
    return (f"`{shown}` and `{_short(ast.unparse(detached))}` with opposite signs add exactly "
            f"zero, so the result never depends on `{shown}`, while a gradient still flows back "
            "to it: the grader would count the work behind it (a layer, a GPU) as used. No "
            "solution of this course needs such a term. A straight-through estimator "
            "(`y_hard - y_soft.detach() + y_soft`) has the same shape but is outside the "
            "course's material: a person releases an honest one")


def _is_sum(node: ast.AST) -> bool:
    return isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub))


def _signed_terms(root: ast.BinOp, consumed: set[int]) -> list[tuple[int, ast.AST]]:
    """The chain's terms with their signs (+1, -1), read without recursion (a generated file's
    chain of thousands of terms); the inner sums flattened are added to `consumed`."""
    terms: list[tuple[int, ast.AST]] = []
    pending: list[tuple[int, ast.AST]] = [(1, root)]
    while pending:
        sign, node = pending.pop()
        inner = _whole_sum_reshaped(node)
        if inner is not None:
            node = inner
        if _is_sum(node):
            consumed.add(id(node))
            pending.append((sign, node.left))
            pending.append((-sign if isinstance(node.op, ast.Sub) else sign, node.right))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            pending.append((-sign if isinstance(node.op, ast.USub) else sign, node.operand))
        else:
            terms.append((sign, node))
    return terms


def _whole_sum_reshaped(node: ast.AST) -> ast.AST | None:
    """The sum inside `(a - b).reshape(...)` (or `.view(...)`, ...); None for anything else."""
    inner = _bare(node)
    return inner if _is_sum(inner) else None


def _same_values_method(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
        node.func.attr in _SAME_VALUES


def _bare(node: ast.AST) -> ast.AST:
    """The expression under its value-keeping methods (`side.reshape(s).clone()` -> `side`)."""
    while _same_values_method(node):
        node = node.func.value
    return node


def _plain(node: ast.AST) -> ast.AST:
    """`_bare`, also of each factor of a product or quotient (`0.5 * side.reshape(s)` ->
    `0.5 * side`): what two terms are compared as."""
    node = _bare(node)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)):
        return ast.BinOp(_plain(node.left), node.op, _plain(node.right))
    return node


def _detached(node: ast.AST) -> ast.AST | None:
    """E where `node` is E detached (`E.detach()`, `E.detach_()`, `E.data`, `torch.detach(E)`,
    any of them under `.clone()`, `.reshape(...)`, ...; `k * E.detach()` is `k * E` detached);
    None where it is not."""
    node = _bare(node)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)):
        right = _detached(node.right)
        if right is not None:
            return ast.BinOp(node.left, node.op, right)
        left = _detached(node.left)
        return None if left is None else ast.BinOp(left, node.op, node.right)
    if isinstance(node, ast.Attribute) and node.attr == "data":
        return node.value
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in _DETACHING_METHODS and not node.keywords):
        return None
    if not node.args:
        return node.func.value                      # E.detach()
    if len(node.args) == 1 and isinstance(node.func.value, ast.Name):
        return node.args[0]                         # torch.detach(E)
    return None


def _cancelling_pair(terms: list[tuple[int, ast.AST]]) -> tuple[ast.AST, ast.AST] | None:
    """(E, E detached) of two terms with opposite signs; None where no two cancel. Only a
    chain with a detached term has its terms written out (ast.dump), once each."""
    detached = [(sign, term, inner) for sign, term in terms
                if (inner := _detached(term)) is not None]
    if not detached:
        return None
    dumps: dict[int, str] = {}

    def dump(node: ast.AST) -> str:
        if id(node) not in dumps:
            dumps[id(node)] = ast.dump(_plain(node))
        return dumps[id(node)]

    for sign, term, inner in detached:
        wanted = ast.dump(_plain(inner))
        for other_sign, other in terms:
            if other_sign == -sign and other is not term and dump(other) == wanted:
                return other, term
    return None


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _SHOWN_CHARACTERS else text[:_SHOWN_CHARACTERS - 3] + "..."
