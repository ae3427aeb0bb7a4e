"""What a name stands for where the source reads it, as far as Python's scoping rules alone say.

Two questions the scan's name rules ask of a file:
- `local_names`: which reads of a name are of a variable of a function (a parameter, an
  assignment, a loop's or a comprehension's target), so not of the builtin of that name:
  `def main(eval=True): if eval:` passes no builtin around. A function's variable holds the
  builtin only if something handed it over, and that hand-over reads the builtin where it is one
  (or through `builtins`), where the scan judges it.
- `numeric_updates`: which augmented assignments `x.name += value` add a number (a constant,
  time.perf_counter(), arithmetic of those, a function's variable only ever given such values,
  a CUDA event's elapsed_time). `x.name op= number` computes `x.name op number` and stores the
  result: it succeeds only where `x.name` already holds a number (or a tensor), never where it
  holds a function, class or descriptor of torch's, so it replaces none (`times.forward +=
  t1 - t0` on any `times`).
"""
from __future__ import annotations

import ast

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_CLASS = "class"
_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)
# Functions that return a float or an int (Python makes the result an exact one).
_NUMBER_FUNCTIONS = frozenset({
    "time.perf_counter", "time.perf_counter_ns", "time.time", "time.time_ns", "time.monotonic",
    "time.monotonic_ns", "time.process_time", "time.process_time_ns", "time.thread_time",
    "time.thread_time_ns"})
_NUMBER_BUILTINS = frozenset({"float", "int", "len"})
_EVENT = "torch.cuda.Event"


# -- the names a scope binds ----------------------------------------------------------------
def _parameters(arguments: ast.arguments) -> set[str]:
    names = {a.arg for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs}
    names |= {a.arg for a in (arguments.vararg, arguments.kwarg) if a is not None}
    return names


def parameter_defaults(arguments: ast.arguments) -> list[tuple[str, ast.AST]]:
    """(parameter, its default value): what the parameter is where its caller gives none."""
    positional = arguments.posonlyargs + arguments.args
    with_default = positional[len(positional) - len(arguments.defaults):]
    pairs = [(a.arg, default) for a, default in zip(with_default, arguments.defaults)]
    return pairs + [(a.arg, default) for a, default in zip(arguments.kwonlyargs,
                                                          arguments.kw_defaults)
                    if default is not None]


def _outer_parts(node: ast.AST) -> list:
    """The parts of a definition or comprehension that run in the scope around it."""
    if isinstance(node, (*_FUNCTIONS, ast.Lambda)):
        arguments = node.args
        parts = arguments.defaults + [d for d in arguments.kw_defaults if d is not None]
        if not isinstance(node, ast.Lambda):
            parts += node.decorator_list + [a.annotation for a in
                                             arguments.posonlyargs + arguments.args +
                                             arguments.kwonlyargs + [arguments.vararg,
                                                                     arguments.kwarg]
                                             if a is not None and a.annotation is not None]
            parts += [node.returns] if node.returns is not None else []
        return parts
    if isinstance(node, ast.ClassDef):
        return node.decorator_list + node.bases + [k.value for k in node.keywords]
    if isinstance(node, _COMPREHENSIONS):
        return [node.generators[0].iter]
    return []


def _walrus_targets(node: ast.AST) -> set[str]:
    """Names a comprehension's `:=` binds in the function around it."""
    found, pending = set(), [node]
    while pending:
        part = pending.pop()
        if isinstance(part, ast.NamedExpr) and isinstance(part.target, ast.Name):
            found.add(part.target.id)
        if not isinstance(part, (*_FUNCTIONS, ast.Lambda, ast.ClassDef)) or part is node:
            pending += list(ast.iter_child_nodes(part))
    return found


def _scope_names(body: list) -> tuple[set[str], set[str]]:
    """(the names these statements bind in their own scope, the names they declare global):
    not those of nested functions, classes and comprehensions."""
    bound, declared_global = set(), set()
    pending = list(body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound.add(node.rest)
        elif isinstance(node, ast.Global):
            declared_global |= set(node.names)
        elif isinstance(node, ast.Nonlocal):
            bound |= set(node.names)
        if isinstance(node, _COMPREHENSIONS):
            bound |= _walrus_targets(node)
        if isinstance(node, (*_FUNCTIONS, ast.Lambda, ast.ClassDef, *_COMPREHENSIONS)):
            pending += _outer_parts(node)
            continue
        pending += list(ast.iter_child_nodes(node))
    return bound, declared_global


# -- reads of a function's own variables ----------------------------------------------------------
def local_names(tree: ast.AST, names) -> set[int]:
    """ids of the reads (ast.Name loads) of `names` that read a variable of a function, a lambda
    or a comprehension (theirs or one around them), never a global or a builtin."""
    names = frozenset(names)
    found: set[int] = set()
    if not any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(tree)):
        return found

    def local(name: str, chain: list) -> bool:
        for position, scope in enumerate(reversed(chain)):
            if scope is _CLASS:
                if position == 0:
                    return False   # a class body reads its own names, then the globals
                continue
            bound, declared_global = scope
            if name in declared_global:
                return False
            if name in bound:
                return True
        return False

    def visit(node: ast.AST, chain: list) -> None:
        if isinstance(node, ast.Name) and node.id in names and isinstance(node.ctx, ast.Load) \
                and local(node.id, chain):
            found.add(id(node))
        if isinstance(node, (*_FUNCTIONS, ast.Lambda)):
            for part in _outer_parts(node):
                visit(part, chain)
            body = node.body if isinstance(node.body, list) else [node.body]
            bound, declared_global = _scope_names(body)
            inner = chain + [(bound | _parameters(node.args), declared_global)]
            for statement in body:
                visit(statement, inner)
            return
        if isinstance(node, ast.ClassDef):
            for part in _outer_parts(node):
                visit(part, chain)
            for statement in node.body:
                visit(statement, chain + [_CLASS])
            return
        if isinstance(node, _COMPREHENSIONS):
            visit(node.generators[0].iter, chain)
            targets = {n.id for g in node.generators for n in ast.walk(g.target)
                       if isinstance(n, ast.Name)}
            inner = chain + [(targets, set())]
            for index, generator in enumerate(node.generators):
                visit(generator.target, inner)
                if index:
                    visit(generator.iter, inner)
                for condition in generator.ifs:
                    visit(condition, inner)
            for part in ((node.key, node.value) if isinstance(node, ast.DictComp)
                         else (node.elt,)):
                visit(part, inner)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, chain)

    visit(tree, [])
    return found


# -- imports that stay what they import ----------------------------------------------------------
def stable_imports(tree: ast.AST) -> dict[str, str]:
    """name -> what it imports, for the names every binding of which, in every scope, imports
    that same thing (`import time`, `from time import perf_counter`). None after a star import
    (it binds names nobody can list)."""
    targets: dict[str, set] = {}
    other: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                head = alias.name.split(".")[0]
                targets.setdefault(alias.asname or head, set()).add(
                    alias.name if alias.asname else head)
        elif isinstance(node, ast.ImportFrom):
            if any(alias.name == "*" for alias in node.names):
                return {}
            source = "." * node.level + (node.module or "")
            for alias in node.names:
                targets.setdefault(alias.asname or alias.name, set()).add(
                    f"{source}.{alias.name}")
        else:
            other |= _bound_by(node)
    return {name: next(iter(found)) for name, found in targets.items()
            if len(found) == 1 and name not in other}


def unbound_names(tree: ast.AST) -> set[str] | None:
    """A test for builtins: every name the file binds anywhere; None after a star import."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            return None
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
        bound |= _bound_by(node)
    return bound


def _bound_by(node: ast.AST) -> set[str]:
    if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
        return {node.id}
    if isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
        return {node.name}
    if isinstance(node, ast.arg):
        return {node.arg}
    if isinstance(node, ast.ExceptHandler) and node.name:
        return {node.name}
    if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
        return {node.name}
    if isinstance(node, ast.MatchMapping) and node.rest:
        return {node.rest}
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return set(node.names)
    return set()


def resolve(node: ast.AST, imports: dict[str, str]) -> str | None:
    """The dotted name an attribute chain on a stably imported name stands for."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in imports:
        return None
    return ".".join([imports[node.id], *reversed(parts)])


# -- numbers ------------------------------------------------------------------------------------
def numeric_updates(tree: ast.Module, module_level: bool = False) -> set[int]:
    """ids of the augmented assignments to an attribute (`x.name += value`) whose value is a
    number. `module_level`: a module-level variable counts too (no other file can rebind the
    module's names: own_objects.may_rebind_names)."""
    imports = stable_imports(tree)
    bound = unbound_names(tree)
    builtins = set() if bound is None else _NUMBER_BUILTINS - bound
    declared = {name for node in ast.walk(tree) if isinstance(node, (ast.Global, ast.Nonlocal))
                for name in node.names}
    found: set[int] = set()
    scopes = [node for node in ast.walk(tree) if isinstance(node, _FUNCTIONS)]
    if module_level:
        scopes.append(tree)
    for scope in scopes:
        statements = list(_statements(scope.body))
        parameters = _parameters(scope.args) if isinstance(scope, _FUNCTIONS) else set()
        numbers, events = _number_variables(statements, parameters, declared, imports, builtins)
        for node in statements:
            if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Attribute) and \
                    isinstance(node.op, _ARITHMETIC) and \
                    _numeric(node.value, numbers, events, imports, builtins):
                found.add(id(node))
    return found


def _statements(body: list):
    """Every node of these statements in their own scope (not nested functions, classes,
    lambdas or comprehensions)."""
    pending = list(body)
    while pending:
        node = pending.pop()
        yield node
        if isinstance(node, (*_FUNCTIONS, ast.Lambda, ast.ClassDef, *_COMPREHENSIONS)):
            continue
        pending += list(ast.iter_child_nodes(node))


def _number_variables(statements: list, parameters: set[str], declared: set[str], imports,
                      builtins) -> tuple[set[str], set[str]]:
    """(the scope's variables only ever given numbers, those only ever given a CUDA event)."""
    given: dict[str, list] = {name: [None] for name in parameters}
    judged: set[int] = set()   # the targets of the assignments read here
    for node in statements:
        if id(node) in judged:
            continue
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name):
            given.setdefault(node.targets[0].id, []).append(node.value)
            judged.add(id(node.targets[0]))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            given.setdefault(node.target.id, []).append(node.value)   # None: no value
            judged.add(id(node.target))
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            given.setdefault(node.target.id, []).append(
                node.value if isinstance(node.op, _ARITHMETIC) else None)
            judged.add(id(node.target))
        else:
            for name in _bound_by(node) | ({a.asname or a.name for a in node.names}
                                           if isinstance(node, (ast.Import, ast.ImportFrom))
                                           else set()):
                given.setdefault(name.split(".")[0], []).append(None)
        if isinstance(node, _COMPREHENSIONS):
            for name in _walrus_targets(node):
                given.setdefault(name, []).append(None)
    given = {name: values for name, values in given.items() if name not in declared}
    events = {name for name, values in given.items() if all(
        isinstance(v, ast.Call) and resolve(v.func, imports) == _EVENT for v in values)}
    # The largest set of variables whose every value is a number given that they all hold
    # numbers: true of every value they ever hold, by induction on the assignments run.
    numbers = {name for name, values in given.items() if None not in values}
    while True:
        kept = {name for name in numbers if all(
            _numeric(v, numbers, events, imports, builtins) for v in given[name])}
        if kept == numbers:
            return numbers, events
        numbers = kept


def _numeric(node: ast.AST, numbers: set[str], events: set[str], imports, builtins) -> bool:
    def numeric(node) -> bool:
        if isinstance(node, ast.Constant):
            return type(node.value) in (int, float)
        if isinstance(node, ast.BinOp):
            return isinstance(node.op, _ARITHMETIC) and numeric(node.left) and \
                numeric(node.right)
        if isinstance(node, ast.UnaryOp):
            return isinstance(node.op, (ast.USub, ast.UAdd)) and numeric(node.operand)
        if isinstance(node, ast.IfExp):
            return numeric(node.body) and numeric(node.orelse)
        if isinstance(node, ast.Name):
            return node.id in numbers
        if isinstance(node, ast.Call):
            function = node.func
            if isinstance(function, ast.Name) and function.id in builtins:
                return True
            if resolve(function, imports) in _NUMBER_FUNCTIONS:
                return True
            # start.elapsed_time(end) of a torch.cuda.Event
            return isinstance(function, ast.Attribute) and function.attr == "elapsed_time" \
                and isinstance(function.value, ast.Name) and function.value.id in events
        return False

    return numeric(node)


# -- values taken out of containers ------------------------------------------------------------
_ELEMENT_CALLS = frozenset({"next", "min", "max"})            # give one element of what they get
_CONTAINER_CALLS = frozenset({"list", "tuple", "set", "frozenset", "reversed", "sorted", "iter",
                              "dict"})   # give the elements of what they get
_ELEMENT_METHODS = frozenset({"get", "pop", "setdefault", "popitem", "popleft"})
_CONTAINER_METHODS = frozenset({"values", "items", "copy", "keys"})
_FILLING_METHODS = {"append": 0, "add": 0, "insert": 1, "appendleft": 0}   # -> the value's index
_EXTENDING_METHODS = frozenset({"extend", "update", "extendleft"})


class Containers:
    """What an expression can stand for where it is a value taken out of a container the file
    writes (`[nn.Module][0]`, `{"m": nn.Module}.get("m")`, `holders[i]` of a list the file
    fills with `append` or `holders[k] = ...`, `next(iter(...))`), chosen by a conditional,
    returned by a function of the file that returns its argument (`same(nn.Module)`), or bound
    to a name (every binding and loop of that name, and every parameter's default under it,
    wherever it is: a superset). Used where the scan asks "could this be torch's?": a container
    only delays the question."""

    MAX_DEPTH = 12
    MAX_FOUND = 256
    MAX_STEPS = 4000     # of one question: names bound to subscripts of names... stop there

    def __init__(self, tree: ast.AST, bindings: dict, loops: dict):
        self.bindings, self.loops = bindings, loops
        self.filled: dict[str, list] = {}        # name -> values put into it
        self.extended: dict[str, list] = {}      # name -> containers whose elements it takes
        self.functions: dict[str, list] = {}     # the file's functions, by name
        self.defaults: dict[str, list] = {}      # parameter -> its defaults (`def g(T=...)`)
        self._returned: dict[str, set[int]] = {}
        self._returned_values: dict[str, list] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    isinstance(node.func.value, ast.Name):
                owner, method = node.func.value.id, node.func.attr
                if method in _FILLING_METHODS and len(node.args) > _FILLING_METHODS[method]:
                    self.filled.setdefault(owner, []).append(node.args[_FILLING_METHODS[method]])
                elif method in _EXTENDING_METHODS and node.args:
                    self.extended.setdefault(owner, []).extend(node.args)
                elif method == "setdefault" and len(node.args) > 1:
                    self.filled.setdefault(owner, []).append(node.args[1])
            elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) \
                            and node.value is not None:
                        self.filled.setdefault(target.value.id, []).append(node.value)
                    elif isinstance(node, ast.AugAssign) and isinstance(target, ast.Name):
                        self.extended.setdefault(target.id, []).append(node.value)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions.setdefault(node.name, []).append(node)
            if isinstance(node, (*_FUNCTIONS, ast.Lambda)):
                for name, default in parameter_defaults(node.args):
                    self.defaults.setdefault(name, []).append(default)
        self.memo: dict[int, list] = {}
        self.by_name: dict[str, list] = {}   # name -> what its bindings can stand for
        self.cuts = 0                         # readings cut short (not kept in by_name)
        self.reading: set[str] = set()        # names being read (a cycle of them stops there)
        self.steps = self.MAX_STEPS

    def candidates(self, node: ast.AST) -> list[ast.AST]:
        """`node` and the expressions it can stand for."""
        if id(node) not in self.memo:
            found: list = []
            self.steps = self.MAX_STEPS
            self._candidates(node, 0, set(), found)
            self.memo[id(node)] = found
        return self.memo[id(node)]

    def elements(self, node: ast.AST) -> list[ast.AST]:
        """The expressions the elements (a dict's values) of a container can stand for."""
        found: list = []
        self.steps = self.MAX_STEPS
        self._elements(node, 0, set(), found)
        return found

    def _enter(self, kind: str, node, depth: int, seen: set, found: list) -> bool:
        """Counts a step of the reading; False where `node` was read so already or the
        reading's depth, size or budget is spent (a cut: the result is not remembered)."""
        self.steps -= 1
        if (kind, id(node)) in seen:
            return False
        if depth > self.MAX_DEPTH or len(found) > self.MAX_FOUND or self.steps < 0:
            self.cuts += 1
            return False
        seen.add((kind, id(node)))
        return True

    def _candidates(self, node, depth: int, seen: set, found: list) -> None:
        if not self._enter("value", node, depth, seen, found):
            return
        found.append(node)
        more = []
        if isinstance(node, ast.Name):
            found += self._of_name(node.id, depth)
        elif isinstance(node, ast.Subscript):
            self._elements(node.value, depth + 1, seen, found)
        elif isinstance(node, ast.IfExp):
            more = [node.body, node.orelse]
        elif isinstance(node, ast.BoolOp):
            more = node.values
        elif isinstance(node, ast.NamedExpr):
            more = [node.value]
        elif isinstance(node, ast.Call):
            function, arguments = node.func, node.args
            if isinstance(function, ast.Name) and function.id in _ELEMENT_CALLS and arguments:
                self._elements(arguments[0], depth + 1, seen, found)
            elif isinstance(function, ast.Attribute) and function.attr in _ELEMENT_METHODS:
                self._elements(function.value, depth + 1, seen, found)
            elif isinstance(function, ast.Name) and (self.returned(function.id) or
                                                     self.returned_values(function.id)):
                more = [arguments[i] for i in self.returned(function.id)
                        if i < len(arguments) and not isinstance(arguments[i], ast.Starred)]
                more += self.returned_values(function.id)   # `def get(): return torch.nn`
            elif isinstance(function, ast.Lambda) and isinstance(function.body, ast.Name):
                names = [a.arg for a in function.args.posonlyargs + function.args.args]
                if function.body.id in names and names.index(function.body.id) < len(arguments):
                    more = [arguments[names.index(function.body.id)]]
        for value in more:
            self._candidates(value, depth + 1, seen, found)

    def returned(self, name: str) -> set[int]:
        """The positions of the parameters a function of the file named so returns as they
        are (`def same(x): return x`)."""
        if name not in self._returned:
            self._returned[name] = set()
            for function in self.functions.get(name, []):
                positional = [a.arg for a in function.args.posonlyargs + function.args.args]
                for part in _statements(function.body):
                    if isinstance(part, ast.Return) and isinstance(part.value, ast.Name) and \
                            part.value.id in positional:
                        self._returned[name].add(positional.index(part.value.id))
        return self._returned[name]

    def returned_values(self, name: str) -> list[ast.AST]:
        """The names and dotted names other than its parameters that a function of the file
        named so returns (`def get(): return torch.nn.functional`)."""
        if name not in self._returned_values:
            values = []
            for function in self.functions.get(name, []):
                positional = {a.arg for a in function.args.posonlyargs + function.args.args}
                values += [part.value for part in _statements(function.body)
                           if isinstance(part, ast.Return) and
                           isinstance(part.value, (ast.Name, ast.Attribute)) and
                           not (isinstance(part.value, ast.Name) and part.value.id in positional)]
            self._returned_values[name] = values
        return self._returned_values[name]

    def _of_name(self, name: str, depth: int) -> list:
        """What a name's bindings can stand for: the same wherever the name is read, so read
        once (unless a cycle of names, the depth or the budget cut the reading short)."""
        if name in self.by_name:
            return self.by_name[name]
        if name in self.reading or depth > self.MAX_DEPTH:
            self.cuts += 1
            return []
        self.reading.add(name)
        cuts, found, seen = self.cuts, [], set()
        for value in self.bindings.get(name, []) + self.defaults.get(name, []):
            self._candidates(value, depth + 1, seen, found)
        for iterable in self.loops.get(name, []):
            self._elements(iterable, depth + 1, seen, found)
        self.reading.discard(name)
        if self.cuts == cuts:
            self.by_name[name] = found
        return found

    def _elements(self, node, depth: int, seen: set, found: list) -> None:
        """Adds to `found` the candidates of the elements of what `node` can stand for."""
        if not self._enter("elements", node, depth, seen, found):
            return
        containers: list = []
        self._candidates(node, depth + 1, set(), containers)
        for container in containers:
            items = []
            if isinstance(container, (ast.List, ast.Tuple, ast.Set)):
                for element in container.elts:
                    if isinstance(element, ast.Starred):
                        self._elements(element.value, depth + 1, seen, found)
                    else:
                        items.append(element)
            elif isinstance(container, ast.Dict):
                for key, value in zip(container.keys, container.values):
                    if key is None:   # {**other}
                        self._elements(value, depth + 1, seen, found)
                    else:
                        items.append(value)
            elif isinstance(container, ast.Name):
                items = self.filled.get(container.id, [])
                for other in self.extended.get(container.id, []):
                    self._elements(other, depth + 1, seen, found)
            elif isinstance(container, ast.Call):
                function = container.func
                if isinstance(function, ast.Name) and function.id in _CONTAINER_CALLS:
                    for argument in container.args:
                        self._elements(argument, depth + 1, seen, found)
                elif isinstance(function, ast.Attribute) and function.attr in _CONTAINER_METHODS:
                    self._elements(function.value, depth + 1, seen, found)
            for item in items:
                self._candidates(item, depth + 1, seen, found)
