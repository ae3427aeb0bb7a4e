"""Code whose value never depends on a term while autograd still sends that term a gradient.

`x + (side - side.detach())` never depends on `side`, yet the derivative of `side -
side.detach()` in `side` is 1. The grader's gradient watch (grader/vgpu/observe.py _GradWatch)
counts a GPU as used where a gradient reaches its layer outputs, so a spare layer on another
GPU joined this way forged Practical 10's two-stage layout on a one-stage replica (red teams'
adv46 F1 and adv48 F1-F3: 7.25 -> 10 of 12). No honest solution of this course's practicals
needs such a term; a person reads the rare one that has it (a straight-through estimator is
the same shape, and outside the course's material). Three forms are read, statically:

- A sum in which a term E and, with the opposite sign and the same factor, E detached cancel.
  A sum is a `+`/`-` chain, a call that adds or subtracts (`torch.sub(a, b)`, `torch.add(a, b,
  alpha=-1)`, `a.sub(b)`, `a.add_(b)`, `a.rsub(b)`, `operator.sub(a, b)`, `sum([...])`,
  `torch.stack([...]).sum(0)`, a helper of the file that returns a sum of its parameters), or
  the augmented assignments and in-place adds of one target in one function body (`y += side`
  ... `y -= side.detach()`). E detached is `E.detach()`, `E.data`, `torch.detach(E)`,
  `torch.Tensor.detach(E)`, an imported `detach(E)`, `X.new_tensor(E)`, under methods that keep
  the values (`.clone()`, `.float()`, `.cpu()`, `.to(...)`, `.reshape(...)`, `[...]`,
  `torch.clone(...)`). Numeric factors are compared by value (`side - 1 * side.detach()`,
  `2 * side - side.detach() * 2`). Within one function body a name (or `self.name`) bound to
  another (`s2 = side`) is read as it; a name bound to E detached (`d = side.detach()` ... `side
  - d`) only in a sum that `forward` returns or assigns to what it returns: elsewhere `old =
  p.detach().clone()` ... `p - old` is a parameter's change after a step.
- A custom torch.autograd.Function whose forward never uses one of its tensor inputs (beyond
  saving it, or reading its shape, device or dtype) while backward returns a gradient for it.
- A hook on an autograd node (`z.grad_fn.register_hook`, `register_prehook`): it can hand the
  layer behind `side * 0` a full gradient.

A term scaled by zero without such a hook is not looked for: no gradient reaches it, and the
gradient watch already reads zeros.
"""
from __future__ import annotations

import ast
from bisect import bisect_right
from typing import Iterator

# Methods that keep a tensor's values (and pass its gradient on unchanged): looked through on
# a whole inner sum, and on either side of a pair.
_SAME_VALUES = frozenset({"reshape", "view", "view_as", "reshape_as", "flatten", "squeeze",
                          "unsqueeze", "contiguous", "clone", "to", "float", "double", "half",
                          "bfloat16", "cpu", "cuda", "type_as"})
_DETACHING = frozenset({"detach", "detach_"})
# Tensor methods that add (+1) or subtract (-1) their argument, alpha times
_ADDING_METHODS = {"add": 1, "add_": 1, "sub": -1, "sub_": -1, "subtract": -1,
                   "subtract_": -1}
# Functions of torch and operator that add or subtract their second argument
_ADDING_FUNCTIONS = {"add": 1, "sub": -1, "subtract": -1}
_ADDING_MODULES = frozenset({"torch", "operator"})
# What a Function's forward may read of an input without using its values
_METADATA = frozenset({"shape", "device", "dtype", "size", "dim", "ndim", "ndimension",
                       "numel", "requires_grad", "is_cuda"})
_NODE_HOOKS = frozenset({"register_hook", "register_prehook"})
_NODE_ATTRIBUTES = frozenset({"grad_fn", "next_functions"})
_SHOWN_CHARACTERS = 60
_MOST_ALIASES = 8          # names followed, one to the next, from a term
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef)
# Nodes no form reads (`Load`, `+`, `<`): left out of the walk, which they would double
_MARKS = (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)

Position = tuple[int, int]


def cancelling_findings(tree: ast.AST) -> Iterator[tuple[ast.AST, str]]:
    """(the node to name, what it does) for each form of the module docstring in the tree."""
    nodes, scopes = _read(tree)      # the tree is walked once for every form
    for node, term, detached in _sums(nodes, scopes):
        yield node, words(term, detached)
    yield from _functions_without_values(nodes)
    yield from _node_hooks(nodes)


def cancelling_sums(tree: ast.AST) -> Iterator[tuple[ast.AST, ast.AST, ast.AST]]:
    """(the outermost sum or the statement that completes it, the term, the same term
    detached) for each sum of the tree that holds such a pair; each sum (and the inner sums
    it flattens) at most once."""
    return _sums(*_read(tree))


def _sums(nodes: list[ast.AST], scopes: list[tuple[ast.AST, list]]
          ) -> Iterator[tuple[ast.AST, ast.AST, ast.AST]]:
    reader = _Reader(nodes)
    for scope, own in scopes:
        body = _Body(scope, own)
        reader.body = body
        consumed: set[int] = set()
        for node, statement in body.nodes:   # outer sums before the sums inside them
            if id(node) in consumed or reader.expand(node) is None:
                continue
            terms = reader.signed_terms(node, consumed)
            pair = reader.cancelling_pair(terms, body.flows_out(statement))
            if pair is not None:
                yield (node, *pair)
        yield from reader.updates_in_place(body)


def words(term: ast.AST, detached: ast.AST) -> str:
    """What the finding says about one pair, for the student and the person who reads it."""
    shown = _short(ast.unparse(term))
    return (f"`{shown}` and `{_short(ast.unparse(detached))}` with opposite signs add exactly "
            f"zero, so the result never depends on `{shown}`, while a gradient still flows back "
            "to it: the value cancels but a gradient flows, and the grader would count the work "
            "behind it (a layer whose output does not reach the model's output, its GPU) as "
            "used. No "
            "solution of this course needs such a term. A straight-through estimator "
            "(`y_hard - y_soft.detach() + y_soft`) has the same shape but is outside the "
            "course's material: a person releases an honest one")


def _read(tree: ast.AST) -> tuple[list[ast.AST], list[tuple[ast.AST, list]]]:
    """(every node of the tree, [(the module or a function, its own nodes each with its
    statement)]): a function's nodes are its own, not its enclosing scope's; each list has
    parents first and is in source order. One walk, without recursion."""
    every: list[ast.AST] = [tree]
    scopes: list[tuple[ast.AST, list]] = [(tree, [])]
    pending = [(child, None, 0) for child in reversed(list(ast.iter_child_nodes(tree)))]
    while pending:
        node, statement, scope = pending.pop()
        every.append(node)
        if isinstance(node, _SCOPES):
            scopes.append((node, []))
            scope, statement = len(scopes) - 1, None
        else:
            if isinstance(node, ast.stmt):
                statement = node
            scopes[scope][1].append((node, statement))
        pending.extend((child, statement, scope)
                       for child in reversed(list(ast.iter_child_nodes(node)))
                       if not isinstance(child, _MARKS))
    return every, scopes


def _own_nodes(function: ast.AST) -> list[tuple[ast.AST, ast.stmt | None]]:
    return next(own for scope, own in _read(function)[1] if scope is function)


def _key(node: ast.AST) -> str | None:
    """The name a plain alias can be bound to: `name` or `self.name`."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
            node.value.id == "self":
        return f"self.{node.attr}"
    return None


def _position(node: ast.AST) -> Position:
    return getattr(node, "lineno", 0), getattr(node, "col_offset", 0)


def _end(node: ast.AST) -> Position:
    return getattr(node, "end_lineno", 0) or 0, getattr(node, "end_col_offset", 0) or 0


class _Body:
    """One function body (or the module's code): its nodes, where each name is bound (a
    binding counts from the end of its statement) and, in `forward`, what it returns."""

    def __init__(self, scope: ast.AST, nodes: list[tuple[ast.AST, ast.stmt | None]]):
        self.nodes = nodes
        self.stores: dict[str, list[tuple[Position, ast.AST | None]]] = {}
        returned: set[str] = set()
        for node, statement in self.nodes:
            if isinstance(node, ast.expr) and not isinstance(node, ast.NamedExpr):
                continue
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                plain = len(targets) == 1 and not isinstance(node, ast.AugAssign)
                for target in targets:
                    self._store(target, node.value if plain else None, _end(statement or node))
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                self._store(node.target, None, _end(node.target))
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                self._store(node.optional_vars, None, _end(node.optional_vars))
            elif isinstance(node, ast.Return) and node.value is not None and \
                    getattr(scope, "name", None) == "forward":
                returned |= {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
        self.forward = getattr(scope, "name", None) == "forward"
        self.returned = returned
        for stores in self.stores.values():
            stores.sort(key=lambda store: store[0])
        self.positions = {key: [at for at, _ in stores] for key, stores in self.stores.items()}

    def _store(self, target: ast.AST, value: ast.AST | None, at: Position) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._store(element, None, at)
            return
        if isinstance(target, ast.Starred):
            target = target.value
        key = _key(target)
        if key is not None:
            self.stores.setdefault(key, []).append((at, value))

    def bound(self, key: str, at: Position) -> tuple[Position, ast.AST | None] | None:
        """The last binding of `key` before `at`: (where it ends, the value bound or None)."""
        count = bisect_right(self.positions.get(key, ()), at)
        return self.stores[key][count - 1] if count else None

    def rebound(self, key: str, after: Position, before: Position) -> bool:
        positions = self.positions.get(key, ())
        return bisect_right(positions, before) > bisect_right(positions, after)

    def flows_out(self, statement: ast.stmt | None) -> bool:
        """Whether a sum of this statement is what `forward` returns (or assigns to a name it
        returns): where a detached copy bound to a name on a line of its own is read."""
        if not self.forward or statement is None:
            return False
        if isinstance(statement, ast.Return):
            return True
        if isinstance(statement, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) \
                else [statement.target]
            return any(isinstance(t, ast.Name) and t.id in self.returned for t in targets)
        return False


class _Reader:
    """Reads sums as signed terms, and terms as (factor, what is multiplied, detached)."""

    def __init__(self, nodes: list[ast.AST]):
        self.modules = set(_ADDING_MODULES)   # names of torch and operator in this file
        self.imported: dict[str, str] = {}    # `sub` of `from torch import sub` -> "sub"
        for node in nodes:
            if isinstance(node, ast.Import):
                self.modules |= {a.asname or a.name.split(".")[0] for a in node.names
                                 if a.name.split(".")[0] in _ADDING_MODULES}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in \
                    _ADDING_MODULES:
                self.imported.update({a.asname or a.name: a.name for a in node.names})
        self.body: _Body | None = None
        self.helpers: dict = {}
        self.helpers = self._helpers(nodes)

    # -- sums ------------------------------------------------------------------------------

    def expand(self, node: ast.AST) -> list[tuple[int, ast.AST]] | None:
        """The signed parts of a sum (`a - b`, `torch.sub(a, b)`, `sum([a, -b])`, a helper's
        call); None for anything else."""
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            return [(1, node.left), (-1 if isinstance(node.op, ast.Sub) else 1, node.right)]
        if not isinstance(node, ast.Call) or any(isinstance(a, ast.Starred) for a in node.args):
            return None
        func, args = node.func, node.args
        name = self._function_name(func)
        if name is not None and len(args) == 2:
            if name in _ADDING_FUNCTIONS:     # torch.sub(a, b, alpha=k), operator.sub(a, b)
                return [(1, args[0]), (_ADDING_FUNCTIONS[name], self._alpha(node, args[1]))]
            if name == "rsub":                # torch.rsub(a, b) = b - a
                return [(1, args[1]), (-1, self._alpha(node, args[0]))]
        if isinstance(func, ast.Attribute) and name is None and len(args) == 1:
            if func.attr in _ADDING_METHODS:  # a.sub(b), a.add_(b, alpha=k)
                return [(1, func.value), (_ADDING_METHODS[func.attr], self._alpha(node, args[0]))]
            if func.attr == "rsub":           # a.rsub(b) = b - a
                return [(1, args[0]), (-1, self._alpha(node, func.value))]
        listed = self._summed_list(node)
        if listed is not None:
            return [(1, element) for element in listed]
        return self._helper_call(node)

    def _function_name(self, func: ast.AST) -> str | None:
        """`sub` for `torch.sub`, `operator.sub`, an imported `sub`: a function of torch or
        operator; None for a method or anything else."""
        if isinstance(func, ast.Name):
            return self.imported.get(func.id)
        if isinstance(func, ast.Attribute) and self._module_path(func.value):
            return func.attr
        return None

    def _module_path(self, node: ast.AST) -> bool:
        """`torch`, `torch.Tensor`, `operator`: a dotted name from a module of this file."""
        while isinstance(node, ast.Attribute):
            node = node.value
        return isinstance(node, ast.Name) and node.id in self.modules

    @staticmethod
    def _alpha(call: ast.Call, term: ast.AST) -> ast.AST:
        alpha = next((k.value for k in call.keywords if k.arg == "alpha"), None)
        return term if alpha is None else ast.BinOp(alpha, ast.Mult(), term)

    def _summed_list(self, node: ast.Call) -> list[ast.AST] | None:
        """The elements of `sum([...])` (and its start) or of `torch.stack([...]).sum(0)`."""
        func = node.func
        if isinstance(func, ast.Name) and func.id == "sum" and node.args and \
                isinstance(node.args[0], (ast.List, ast.Tuple)):
            return list(node.args[0].elts) + node.args[1:] + [k.value for k in node.keywords
                                                              if k.arg == "start"]
        stacked = None
        if isinstance(func, ast.Attribute) and func.attr == "sum":
            stacked = func.value if self._function_name(func) is None else \
                (node.args[0] if node.args else None)
        if isinstance(stacked, ast.Call) and self._function_name(stacked.func) == "stack" and \
                stacked.args and isinstance(stacked.args[0], (ast.List, ast.Tuple)):
            elements = stacked.args[0].elts
            return None if any(isinstance(e, ast.Starred) for e in elements) else list(elements)
        return None

    def _helpers(self, nodes: list[ast.AST]) -> dict[tuple[str, bool], tuple[int, list]]:
        """(name, a method?) -> (its parameters' count, their signed positions in what it
        returns) for each function (or lambda bound to a name) of the file that returns a sum
        of its parameters only: `def combine(a, b): return a - b`. A name defined twice
        differently is left."""
        found: dict[tuple[str, bool], list | None] = {}
        for node in nodes:
            if isinstance(node, _SCOPES):
                name, args, body = node.name, node.args, node.body
                if body and isinstance(body[0], ast.Expr) and \
                        isinstance(body[0].value, ast.Constant):
                    body = body[1:]         # the docstring
                if len(body) != 1 or not isinstance(body[0], ast.Return) or \
                        body[0].value is None:
                    continue
                returned = body[0].value
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                    isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Lambda):
                name, args, returned = node.targets[0].id, node.value.args, node.value.body
            else:
                continue
            params = [a.arg for a in args.posonlyargs + args.args]
            method = bool(params) and params[0] in ("self", "cls")
            if method:
                params = params[1:]
            if args.vararg or args.kwonlyargs or args.kwarg or len(params) < 2:
                continue
            template = self._template(returned, params)
            template = template and (len(params), template)
            key = (name, method)
            found[key] = template if found.get(key, template) == template else None
        return {key: template for key, template in found.items() if template}

    def _template(self, returned: ast.AST, params: list[str]) -> list[tuple[int, int]] | None:
        if self.expand(self._bare(returned)) is None:
            return None
        template = []
        for sign, term in self.signed_terms(returned, set()):
            term = self._bare(term)
            if not (isinstance(term, ast.Name) and term.id in params):
                return None
            template.append((sign, params.index(term.id)))
        return template

    def _helper_call(self, node: ast.Call) -> list[tuple[int, ast.AST]] | None:
        func = node.func
        if isinstance(func, ast.Name):
            helper = self.helpers.get((func.id, False))
        elif isinstance(func, ast.Attribute) and _key(func) is not None:
            helper = self.helpers.get((func.attr, True))
        else:
            return None
        if helper is None or node.keywords or len(node.args) != helper[0]:
            return None
        return [(sign, node.args[index]) for sign, index in helper[1]]

    def signed_terms(self, root: ast.AST, consumed: set[int]) -> list[tuple[int, ast.AST]]:
        """The sum's terms with their signs (+1, -1), read without recursion (a generated
        file's chain of thousands of terms); the inner sums flattened are added to
        `consumed`."""
        terms: list[tuple[int, ast.AST]] = []
        pending: list[tuple[int, ast.AST]] = [(1, root)]
        while pending:
            sign, node = pending.pop()
            parts = self.expand(node)
            if parts is None:
                inner = self._bare(node)
                parts = self.expand(inner)
                node = inner if parts is not None else node
            if parts is not None:
                consumed.add(id(node))
                pending.extend((sign * part_sign, part) for part_sign, part in reversed(parts))
            elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
                pending.append((-sign if isinstance(node.op, ast.USub) else sign, node.operand))
            else:
                terms.append((sign, node))
        return terms

    # -- terms -----------------------------------------------------------------------------

    def _kept(self, node: ast.AST) -> ast.AST | None:
        """The tensor under a method (or torch function) that keeps its values, or under a
        whole-tensor index (`[...]`, `[:]`); None for anything else."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in _SAME_VALUES:
            if self._module_path(node.func.value):
                return node.args[0] if node.args else None      # torch.clone(E)
            return node.func.value
        if isinstance(node, ast.Subscript) and (
                (isinstance(node.slice, ast.Constant) and node.slice.value is Ellipsis)
                or (isinstance(node.slice, ast.Slice)
                    and not (node.slice.lower or node.slice.upper or node.slice.step))):
            return node.value
        return None

    def _bare(self, node: ast.AST) -> ast.AST:
        while (inner := self._kept(node)) is not None:
            node = inner
        return node

    def _detached_of(self, node: ast.AST) -> ast.AST | None:
        """E where `node` is E detached (`E.detach()`, `E.data`, `torch.detach(E)`,
        `torch.Tensor.detach(E)`, an imported `detach(E)`, `X.new_tensor(E)`); None else."""
        if isinstance(node, ast.Attribute) and node.attr == "data":
            return node.value
        if not isinstance(node, ast.Call):
            return None
        func = node.func
        if isinstance(func, ast.Name) and len(node.args) == 1 and \
                (func.id in _DETACHING or self.imported.get(func.id) in _DETACHING):
            return node.args[0]
        if not isinstance(func, ast.Attribute):
            return None
        if func.attr in _DETACHING:
            if self._module_path(func.value):
                return node.args[0] if len(node.args) == 1 else None
            return func.value if not node.args else None
        if func.attr == "new_tensor" and len(node.args) == 1:
            return node.args[0]
        return None

    def _unwrap(self, node: ast.AST, out: bool) -> tuple[ast.AST, bool]:
        """(the tensor under value-keeping methods, detaches and aliases, whether it was
        detached). `out`: the sum is what `forward` returns, where a name bound to a detached
        copy is followed too."""
        detached, hops = False, 0
        at = _position(node)
        while True:
            inner = self._kept(node)
            if inner is None and (inner := self._detached_of(node)) is not None:
                detached = True
            if inner is not None:
                node = inner
                continue
            alias = self._alias(node, at, out) if hops < _MOST_ALIASES else None
            if alias is None:
                return node, detached
            node, at, copy_detached = alias
            detached |= copy_detached
            hops += 1

    def _alias(self, node: ast.AST, at: Position,
               out: bool) -> tuple[ast.AST, Position, bool] | None:
        """(what a name stands for, where it was bound, detached) where the name was last
        bound to another name (or a detached one) in this body, and neither was rebound
        since; None where it was not."""
        key = _key(node)
        if key is None or self.body is None:
            return None
        binding = self.body.bound(key, at)
        if binding is None or binding[1] is None:
            return None
        where, value = binding
        base, detached = value, False
        while True:
            inner = self._kept(base)
            if inner is None and (inner := self._detached_of(base)) is not None:
                detached = True
            if inner is None:
                break
            base = inner
        named = _key(base)
        if named is None or named == key or (detached and not out) or \
                self.body.rebound(named, where, at):
            return None
        return base, where, detached

    def _term(self, node: ast.AST, out: bool) -> tuple[float, list[tuple[int, ast.AST]], bool]:
        """(its numeric factor, the other factors with their powers (1, -1), detached)."""
        factor, parts, detached = 1.0, [], False
        pending = [(1, node)]
        while pending:
            power, node = pending.pop()
            node, was_detached = self._unwrap(node, out)
            detached |= was_detached
            number = _number(node)
            if number is not None:
                factor = factor * number if power > 0 else \
                    (factor / number if number else float("nan"))
            elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)):
                pending.append((power, node.left))
                pending.append((-power if isinstance(node.op, ast.Div) else power, node.right))
            elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
                factor = -factor if isinstance(node.op, ast.USub) else factor
                pending.append((power, node.operand))
            else:
                parts.append((power, node))
        return factor, parts, detached

    def cancelling_pair(self, terms: list[tuple[int, ast.AST]],
                        out: bool) -> tuple[ast.AST, ast.AST] | None:
        """(E, E detached) of two terms whose factors add to zero; None where no two cancel.
        Only a sum with a detached term has its terms written out (ast.dump), once each."""
        read = [(term, *self._term(term, out), sign) for sign, term in terms]
        if not any(detached for *_, detached, _ in read):
            return None
        keyed: dict[str, list[tuple[ast.AST, float, bool]]] = {}
        for term, factor, parts, detached, sign in read:
            if factor != factor or factor == 0:     # nan (a division by 0), or zero
                continue
            key = repr(sorted((power, ast.dump(part)) for power, part in parts))
            keyed.setdefault(key, []).append((term, sign * factor, detached))
        for same in keyed.values():
            for term, factor, detached in same:
                if detached:
                    continue
                for other, other_factor, other_detached in same:
                    if other_detached and abs(factor + other_factor) <= 1e-9 * abs(factor):
                        return term, other
        return None

    # -- one target updated in place, statement after statement ------------------------------

    def updates_in_place(self, body: _Body) -> Iterator[tuple[ast.AST, ast.AST, ast.AST]]:
        """`y = x.clone(); y += side; y -= side.detach()` (or `y.add_(side)` ...): the updates
        of one target in one body read as one sum, from its last plain assignment on; a pair
        is named at the statement that completes it."""
        assigned: dict[str, ast.AST] = {}     # target -> its last plain value, not yet read
        runs: dict[str, dict[str, list[tuple[ast.AST, float, bool, ast.stmt]]]] = {}
        for node, _ in body.nodes:
            if not isinstance(node, (ast.Assign, ast.AugAssign, ast.Expr)):
                continue
            update = self._update(node)
            if update is None:
                if isinstance(node, ast.Assign) and len(node.targets) == 1:
                    target = _key(node.targets[0]) or ast.unparse(node.targets[0])
                    assigned[target] = node
                    runs.pop(target, None)
                continue
            target, sign, value = update
            out = body.flows_out(node)
            run = runs.get(target)
            if run is None:
                run = runs[target] = {}
                first = assigned.pop(target, None)
                if first is not None:
                    self._add_terms(run, first, 1, first.value, out)
            pair = self._add_terms(run, node, sign, value, out)
            if pair is not None:
                yield (node, *pair)

    def _update(self, node: ast.AST) -> tuple[str, int, ast.AST] | None:
        """(target, sign, what is added) of `y += v`, `y -= v`, `y.add_(v)`, `y.sub_(v)`."""
        if isinstance(node, ast.AugAssign) and isinstance(node.op, (ast.Add, ast.Sub)):
            return _key(node.target) or ast.unparse(node.target), \
                -1 if isinstance(node.op, ast.Sub) else 1, \
                node.value
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and \
                isinstance(node.value.func, ast.Attribute) and \
                node.value.func.attr in ("add_", "sub_", "subtract_") and \
                (parts := self.expand(node.value)) is not None:
            target = node.value.func.value
            return _key(target) or ast.unparse(target), parts[1][0], parts[1][1]
        return None

    def _add_terms(self, run: dict, statement: ast.stmt, sign: int, value: ast.AST,
                   out: bool) -> tuple[ast.AST, ast.AST] | None:
        """Adds one statement's terms to a run (terms keyed by what they multiply); the pair
        one of them makes with a term of an earlier statement, if any."""
        pair = None
        added = []
        for term_sign, term in self.signed_terms(value, set()):
            factor, parts, detached = self._term(term, out)
            if factor != factor or factor == 0:
                continue
            key = repr(sorted((power, ast.dump(part)) for power, part in parts))
            factor *= sign * term_sign
            for other, other_factor, other_detached, where in run.get(key, ()):
                if pair is None and where is not statement and detached != other_detached \
                        and abs(factor + other_factor) <= 1e-9 * abs(factor):
                    pair = (term, other) if other_detached else (other, term)
            added.append((key, (term, factor, detached, statement)))
        for key, entry in added:
            run.setdefault(key, []).append(entry)
        return pair


def _number(node: ast.AST) -> float | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and \
            not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        number = _number(node.operand)
        return None if number is None else (-number if isinstance(node.op, ast.USub)
                                            else number)
    return None


# -- a custom autograd.Function that hands a gradient to an input its forward never used ----

def _functions_without_values(nodes: list[ast.AST]) -> Iterator[tuple[ast.AST, str]]:
    for node in nodes:
        if not (isinstance(node, ast.ClassDef) and any(_names_function(b) for b in node.bases)):
            continue
        methods = {m.name: m for m in node.body if isinstance(m, _SCOPES)}
        forward, backward = methods.get("forward"), methods.get("backward")
        if forward is None or backward is None:
            continue
        params = [a.arg for a in forward.args.posonlyargs + forward.args.args]
        ctx = None
        if "setup_context" not in methods and params:
            ctx, params = params[0], params[1:]
        unused = [(index, name) for index, name in enumerate(params)
                  if not _used(forward, name, ctx)]
        if not unused:
            continue
        for returned, _ in _own_nodes(backward):
            if not (isinstance(returned, ast.Return) and returned.value is not None):
                continue
            value = returned.value
            gradients = value.elts if isinstance(value, ast.Tuple) else [value]
            for index, name in unused:
                if index < len(gradients) and not _is_none(gradients[index]):
                    yield returned, _function_words(node.name, name, gradients[index])
                    break


def _names_function(base: ast.AST) -> bool:
    """`Function`, `torch.autograd.Function`, `autograd.Function`."""
    return (isinstance(base, ast.Name) and base.id == "Function") or \
        (isinstance(base, ast.Attribute) and base.attr == "Function")


def _is_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _used(forward: ast.AST, name: str, ctx: str | None) -> bool:
    """Whether forward reads `name`'s values: not only saving it for backward
    (`ctx.save_for_backward`, `ctx.mark_*`, `ctx.kept = name`) or reading its shape, device
    or dtype."""
    pending = list(forward.body)
    while pending:
        node = pending.pop()
        if ctx is not None and _on_ctx(node, ctx):
            continue
        if isinstance(node, ast.Attribute) and node.attr in _METADATA and \
                isinstance(node.value, ast.Name) and node.value.id == name:
            continue
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load):
            return True
        pending.extend(ast.iter_child_nodes(node))
    return False


def _on_ctx(node: ast.AST, ctx: str) -> bool:
    """`ctx.save_for_backward(...)`, `ctx.mark_dirty(...)`, `ctx.kept = ...`."""
    def of_ctx(target: ast.AST) -> bool:
        return isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and \
            target.value.id == ctx
    if isinstance(node, ast.Call) and of_ctx(node.func):
        return node.func.attr == "save_for_backward" or node.func.attr.startswith("mark_")
    return isinstance(node, ast.Assign) and all(of_ctx(t) for t in node.targets)


def _function_words(function: str, name: str, gradient: ast.AST) -> str:
    return (f"`{function}.forward` never uses its input `{name}` (at most it saves it), so the "
            f"output never depends on `{name}`, yet `{function}.backward` returns a gradient "
            f"for it (`{_short(ast.unparse(gradient))}`): the value cancels but a gradient "
            "flows, and the grader would count the work behind it (a layer whose output does "
            "not reach the model's output, its GPU) as used. No "
            "solution of this course needs such a Function: a person reads it")


# -- a hook on an autograd node -------------------------------------------------------------

def _node_hooks(nodes: list[ast.AST]) -> Iterator[tuple[ast.AST, str]]:
    graph_nodes = {t.id for n in nodes if isinstance(n, ast.Assign) and _reaches_node(n.value)
                   for t in n.targets if isinstance(t, ast.Name)}
    for node in nodes:
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in _NODE_HOOKS):
            continue
        owner = node.func.value
        if _reaches_node(owner) or (isinstance(owner, ast.Name) and owner.id in graph_nodes) or \
                (isinstance(owner, ast.Attribute) and owner.attr == "Node"):
            shown = _short(ast.unparse(node.func))
            yield node, (f"`{shown}` hooks a node of autograd's graph: the hook can replace the "
                         "gradients that node hands back, so a term whose value is cancelled "
                         "(`side * 0`) can still pass a full gradient to the layer behind it: "
                         "the value cancels but a gradient flows, and the grader would count "
                         "that layer (its output does not reach the model's output) and its "
                         "GPU as used. No "
                         "solution of this course hooks autograd's nodes: a person reads it")


def _reaches_node(node: ast.AST) -> bool:
    """`z.grad_fn`, `z.grad_fn.next_functions[0][0]`: an expression of autograd's nodes."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        if isinstance(node, ast.Attribute) and node.attr in _NODE_ATTRIBUTES:
            return True
        node = node.func if isinstance(node, ast.Call) else node.value
    return False


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _SHOWN_CHARACTERS else text[:_SHOWN_CHARACTERS - 3] + "..."
