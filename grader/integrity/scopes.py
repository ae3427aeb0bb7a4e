"""What a name stands for where the source reads it, as far as Python's scoping rules alone say.

`Scopes` answers, once per file, which scope each name is a variable of (a function, lambda,
comprehension or class body, or the module); the questions below, and the scan's aliases
(source.py), ask it rather than walking scopes again.
- `Containers`: what an expression can stand for, through containers, conditionals, the file's
  functions' returns, loops, and a parameter's default and what the calls of its function hand
  it: `def g(T): T.add = f` called as `g(torch.Tensor)` sets torch.Tensor.add, and a binding in
  another scope (`t = 1` in a function) leaves a module's `t = torch` as it was.
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
import copy

from grader.integrity.allowance import Allowance

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
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
    not those of nested functions, classes and comprehensions. A `nonlocal` name counts as
    bound (_declarations tells it apart)."""
    bound, declared_global, declared_nonlocal = _declarations(body)
    return bound | declared_nonlocal, declared_global


def _declarations(body: list) -> tuple[set[str], set[str], set[str]]:
    """(the names these statements bind in their own scope, those they declare global, those
    they declare nonlocal)."""
    bound, declared_global, declared_nonlocal = set(), set(), set()
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
            declared_nonlocal |= set(node.names)
        if isinstance(node, _COMPREHENSIONS):
            bound |= _walrus_targets(node)
        if isinstance(node, (*_FUNCTIONS, ast.Lambda, ast.ClassDef, *_COMPREHENSIONS)):
            pending += _outer_parts(node)
            continue
        pending += list(ast.iter_child_nodes(node))
    return bound - declared_nonlocal, declared_global, declared_nonlocal


# -- which scope a name is a variable of -------------------------------------------------------
class Scopes:
    """Which scope each name of a file is a variable of, by Python's rules alone: the function,
    lambda, comprehension or class body that binds it (a parameter, an assignment, a loop's
    target, an import, a definition), else the module (a global, or a builtin). `global` and
    `nonlocal` send a name to the module or to the function around that binds it; a class body
    sees its own names, its methods skip them."""

    def __init__(self, tree: ast.AST):
        self.tree = tree
        self._scope: dict[int, ast.AST] = {}   # id(ast.Name or ast.alias) -> its scope
        self._home: dict[int, ast.AST] = {}    # id(def or class) -> the scope its name is in
        self._visit(tree, [])

    def of(self, node: ast.AST) -> ast.AST:
        """The scope of a name (ast.Name), of what an import binds (ast.alias), or where a
        function or class is bound by its name (a def, a class): the module where unknown."""
        return self._scope.get(id(node)) or self._home.get(id(node)) or self.tree

    def local(self, node: ast.AST) -> bool:
        """A variable of a function, a lambda or a comprehension."""
        return isinstance(self.of(node), (*_FUNCTIONS, ast.Lambda, *_COMPREHENSIONS))

    def _lookup(self, name: str, chain: list) -> ast.AST:
        for position, (scope, bound, declared_global, declared_nonlocal) in \
                enumerate(reversed(chain)):
            if name in declared_global:
                return self.tree
            if isinstance(scope, ast.ClassDef):
                if position == 0 and name in bound:
                    return scope
                continue   # a method does not see its class's names
            if name in declared_nonlocal:
                continue
            if name in bound:
                return scope
        return self.tree

    def _visit(self, node: ast.AST, chain: list) -> None:
        if isinstance(node, ast.Name):
            self._scope[id(node)] = self._lookup(node.id, chain)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                self._scope[id(alias)] = self._lookup(
                    (alias.asname or alias.name).split(".")[0], chain)
        if isinstance(node, (*_FUNCTIONS, ast.Lambda, ast.ClassDef)):
            for part in _outer_parts(node):
                self._visit(part, chain)
            if not isinstance(node, ast.Lambda):
                self._home[id(node)] = self._lookup(node.name, chain)
            body = node.body if isinstance(node.body, list) else [node.body]
            bound, declared_global, declared_nonlocal = _declarations(body)
            if not isinstance(node, ast.ClassDef):
                bound |= _parameters(node.args) - declared_global - declared_nonlocal
            inner = chain + [(node, bound, declared_global, declared_nonlocal)]
            for statement in body:
                self._visit(statement, inner)
            return
        if isinstance(node, _COMPREHENSIONS):
            self._visit(node.generators[0].iter, chain)
            targets = {n.id for g in node.generators for n in ast.walk(g.target)
                       if isinstance(n, ast.Name)}
            inner = chain + [(node, targets, set(), set())]
            for index, generator in enumerate(node.generators):
                self._visit(generator.target, inner)
                if index:
                    self._visit(generator.iter, inner)
                for condition in generator.ifs:
                    self._visit(condition, inner)
            for part in ((node.key, node.value) if isinstance(node, ast.DictComp)
                         else (node.elt,)):
                self._visit(part, inner)
            return
        for child in ast.iter_child_nodes(node):
            self._visit(child, chain)


# -- reads of a function's own variables ----------------------------------------------------------
def local_names(tree: ast.AST, names, scopes: Scopes | None = None) -> set[int]:
    """ids of the reads (ast.Name loads) of `names` that read a variable of a function, a lambda
    or a comprehension (theirs or one around them), never a global or a builtin."""
    names = frozenset(names)
    reads = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id in names and
             isinstance(n.ctx, ast.Load)]
    if not reads:
        return set()
    scopes = scopes or Scopes(tree)
    return {id(read) for read in reads if scopes.local(read)}


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
                              "dict", "zip", "enumerate"})   # give the elements of what they get
_ELEMENT_METHODS = frozenset({"get", "pop", "setdefault", "popitem", "popleft"})
_CONTAINER_METHODS = frozenset({"values", "items", "copy", "keys"})
_FILLING_METHODS = {"append": 0, "add": 0, "insert": 1, "appendleft": 0}   # -> the value's index
_EXTENDING_METHODS = frozenset({"extend", "update", "extendleft"})
# How a variable is given what it holds: a value as it is, an element of a container (a loop),
# an element of an element (a loop that unpacks: `for i, m in enumerate(...)`), what an import
# binds, what the calls of its function hand a parameter, or (`*args`, `**kwargs`) the
# arguments they hand it packed.
_VALUE, _ELEMENT, _NESTED, _IMPORT, _ARGUMENT, _PACKED = (
    "value", "element", "nested", "import", "argument", "packed")
_KEYED = "keyed"   # handed by `**mapping`: the mapping's value under the parameter's name
# Calls that run a function they are handed (by the last part of the name called, wherever it
# comes from: a pool's, an executor's, an event loop's method, a builtin, threading's class):
# `name(function, *arguments, **keywords)`, the function's position ...
_RUNNING = {"submit": 0, "to_thread": 0, "register": 0, "run": 0, "call_soon": 0,
            "call_soon_threadsafe": 0, "run_in_executor": 1, "call_later": 1, "call_at": 1,
            "partial": 0, "partialmethod": 0}
# ... `name(function, arguments, keywords)` with the arguments packed (a tuple, a dict) ...
_RUNNING_PACKED = {"apply": 0, "apply_async": 0, "start_new_thread": 0, "start_new": 0,
                   "Timer": 1, "Thread": 1, "Process": 1}
# ... (Thread's and Process's own order: group, target, name, args, kwargs) ...
_PACKED_AT = {"Thread": 3, "Process": 3}
# ... `name(function, iterable, ...)`: each call handed an element of each iterable ...
_MAPPING = frozenset({"map", "imap", "imap_unordered", "map_async", "filter"})
# ... or the elements of an element of one (`itertools.starmap`).
_STARMAPPING = frozenset({"starmap", "starmap_async"})
_PARTIALS = frozenset({"partial", "partialmethod"})
_CONSTRUCTORS = ("__new__", "__init__")


def _decorator_names(function: ast.AST) -> set[str]:
    """The plain names a function is decorated with (`@staticmethod`)."""
    return {d.id for d in function.decorator_list if isinstance(d, ast.Name)}


class Containers:
    """What an expression can stand for where it is a value taken out of a container the file
    writes (`[nn.Module][0]`, `{"m": nn.Module}.get("m")`, `holders[i]` of a list the file
    fills with `append` or `holders[k] = ...`, `next(iter(...))`), chosen by a conditional,
    returned by a function of the file (`same(nn.Module)`; `pick(torch)` of a `def pick(m):
    return m.Tensor` is `torch.Tensor`: a returned parameter is what that call hands it), an
    attribute of any of those (`t.nn.functional` where `t` can be torch), or a variable: every
    binding of that variable in its scope (Scopes: an assignment, a loop, an import, a
    parameter's default) and, for a parameter, what every call of its function in the file hands
    it (`def g(T): T.add = f` called as `g(torch.Tensor)`), also where the function is only
    passed on (`map(g, [...])`, `Thread(target=g, args=...)`, `partial(g, ...)`, `submit`,
    `model.apply(g)`, a parameter it is called through: `_hand_offs`, `callees`) or is a
    class's `__init__` (`Patcher(torch.Tensor)`): a superset. Used where the scan
    asks "could this be torch's?": a container, a parameter or a loop only delays the question.
    `follow_calls` False: a parameter is its default only (a question about one call's own
    arguments, which other calls of the same function would mix up)."""

    MAX_DEPTH = 12
    MAX_FOUND = 256
    MAX_STEPS = 4000     # of one question: names bound to subscripts of names... stop there
    MAX_ROUNDS = 4       # of functions handed to functions handed to functions ...
    MAX_RUNS_DEPTH = 8   # of what a name runs: a name bound to a name bound to a partial ...
    MAX_RUNS = 4000      # steps of reading what one call runs

    def __init__(self, tree: ast.AST, scopes: Scopes | None = None):
        self.scopes = scopes or Scopes(tree)
        self.follow_calls = True
        self.variables: dict[tuple, list] = {}   # (id(scope), name) -> how it is given values
        self.rebound: set[tuple] = set()         # ... where a statement binds it (not only calls)
        self.imports: dict[int, str] = {}        # id(ast.alias) -> the module or name it imports
        self.filled: dict[tuple, list] = {}      # variable -> values put into it
        self.keys: dict[int, ast.AST] = {}       # id(a value put into a dict) -> its key
        self.extended: dict[tuple, list] = {}    # variable -> containers whose elements it takes
        self.functions: dict[tuple, list] = {}   # (id(scope), name) -> the functions bound so
        self.methods: dict[str, list] = {}       # name -> the functions a class body defines so
        self._method_names: dict[int, str] = {}  # ... id(method) -> its name
        self.classes: dict[tuple, list] = {}     # (id(scope), name) -> the classes bound so
        self.budget = self.MAX_RUNS               # of the reading of what one call runs
        self._consulted: set[int] = set()         # ... and the functions whose calls it read
        calls, nodes = [], 0
        for node in ast.walk(tree):
            nodes += 1
            if isinstance(node, ast.Call):
                calls.append(node)
                if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
                    owner, method = self._variable(node.func.value), node.func.attr
                    if method in _FILLING_METHODS and len(node.args) > _FILLING_METHODS[method]:
                        self.filled.setdefault(owner, []).append(
                            node.args[_FILLING_METHODS[method]])
                    elif method in _EXTENDING_METHODS and node.args:
                        self.extended.setdefault(owner, []).extend(node.args)
                    elif method == "setdefault" and len(node.args) > 1:
                        self.filled.setdefault(owner, []).append(node.args[1])
                        self.keys[id(node.args[1])] = node.args[0]
            elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) \
                            and node.value is not None:
                        self.filled.setdefault(self._variable(target.value), []).append(
                            node.value)
                        self.keys[id(node.value)] = target.slice
                    elif isinstance(node, ast.AugAssign) and isinstance(target, ast.Name):
                        self.extended.setdefault(self._variable(target), []).append(node.value)
                    elif not isinstance(node, ast.AugAssign) and node.value is not None:
                        self._bind(target, node.value)
            elif isinstance(node, ast.NamedExpr):
                self._bind(node.target, node.value)
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                if isinstance(node.target, ast.Name):
                    self._add(node.target, _ELEMENT, node.iter)
                else:
                    for name in _target_names(node.target):
                        self._add(name, _NESTED, node.iter)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                self._imported(node)
            if isinstance(node, (*_FUNCTIONS, ast.Lambda)):
                self._parameters_of(node)
            if isinstance(node, _FUNCTIONS):
                home = self.scopes.of(node)
                self.functions.setdefault((id(home), node.name), []).append(node)
                if isinstance(home, ast.ClassDef):
                    self.methods.setdefault(node.name, []).append(node)
                    self._method_names[id(node)] = node.name
            elif isinstance(node, ast.ClassDef):
                self.classes.setdefault((id(self.scopes.of(node)), node.name), []).append(node)
        self.stable = stable_imports(tree)
        self._returns: dict[int, list] = {}
        # The calls a function handed on is given (`map(patch, [...])`, `Thread(target=patch,
        # args=(...))`, `partial(patch, ...)`, `executor.submit(patch, ...)`, `model.apply(
        # patch)`): each made here as the call it makes, and kept (their ids are theirs).
        self.handed_calls = [made for call in calls for made in self._hand_offs(call)]
        # id(function) -> (a call of it, its shift); calls_of adds the calls of a method by its
        # name (`x.forward(...)`), kept once per name in by_method_name: every class's method of
        # that name is called by each, and one list per method made a file of N classes with
        # `super().__init__()` hold N * N of them (2 MiB of homework-like code: over 300 s).
        self.calls_to: dict[int, list] = {}
        self.by_method_name: dict[str, list] = {}   # name -> the calls of `something.name(...)`
        self._named = False                         # ... seen yet (from the second round on)
        self._order: dict[int, int] = {}            # id(call) -> its place among the calls
        self._fixed: dict[int, int] = {}            # id(function) -> how many of its calls_to
        # entries come first: those of calls that run it whatever else is known (`fixed` below)
        # A function handed to a parameter and called through it (`def each(fn, x): fn(x)`) is
        # known once the calls of the parameter's function are: those calls are read again,
        # until nothing more is found (what a call runs only grows with calls_to).
        fixed: dict[int, list] = {}      # of the calls that run what they run whatever else
        dynamic: dict[int, tuple] = {}   # id(call) -> (call, the functions read, what it runs)
        pending = calls + self.handed_calls
        self._order = {id(call): at for at, call in enumerate(pending)}
        earlier: tuple[dict, bool] = ({}, False)   # (calls per function, named seen) before
        for _round in range(self.MAX_ROUNDS):
            calls_to = {key: list(value) for key, value in fixed.items()}
            for call in pending:
                entry = dynamic.get(id(call))
                if entry is not None and all(self._count(key) == self._count(key, earlier)
                                             for key in entry[1]):
                    runs = entry[2]   # nothing it reads found more calls
                elif isinstance(call.func, ast.Attribute):
                    # It runs the methods so named, whatever else is known (_runs): fixed.
                    self.by_method_name.setdefault(call.func.attr, []).append(call)
                    continue
                else:
                    self._consulted = set()
                    runs = self.callees(call)
                    if self._consulted:
                        dynamic[id(call)] = (call, self._consulted, runs)
                for function, shift in runs:
                    calls_to.setdefault(id(function), []).append((call, shift))
                    if id(call) not in dynamic:
                        fixed.setdefault(id(function), []).append((call, shift))
            before = {key: len(value) for key, value in self.calls_to.items()}
            grown = any(len(value) != before.get(key, 0) for key, value in calls_to.items()) or \
                not self._named and any(name in self.methods for name in self.by_method_name)
            earlier = (before, self._named)
            if not self._named:   # the calls by a method's name, all known now
                self._index_method_calls()
            self.calls_to, pending, self._named = calls_to, \
                [entry[0] for entry in dynamic.values()], True
            self._fixed = {key: len(value) for key, value in fixed.items()}
            if not dynamic or not grown:
                break
        self._synthetic: dict[tuple, ast.Attribute] = {}   # chains made here, kept alive
        # The work all readings of this file may do, this one's and without_calls' copies'
        # (allowance.py): past it ReadingTooLarge, and the file is held unread.
        self.allowance = Allowance(nodes)
        self._fresh()

    def _fresh(self) -> None:
        self.memo: dict[int, list] = {}
        self.by_variable: dict[tuple, list] = {}   # what a variable's bindings can stand for
        self.cuts = 0                         # readings cut short (not kept in by_variable)
        self.reading: set[tuple] = set()      # variables being read (a cycle of them stops there)
        self.steps = self.MAX_STEPS

    def without_calls(self) -> "Containers":
        """The same file read with `follow_calls` False (see the class)."""
        other = copy.copy(self)
        other.follow_calls = False
        other._fresh()
        return other

    # -- what the file binds ----------------------------------------------------------------
    def _variable(self, name: ast.Name) -> tuple:
        """The variable a name reads or binds: (id(its scope), the name)."""
        return id(self.scopes.of(name)), name.id

    def _add(self, name: ast.Name, kind: str, value) -> None:
        key = self._variable(name)
        self.variables.setdefault(key, []).append((kind, value))
        self.rebound.add(key)

    def _bind(self, target: ast.AST, value: ast.AST) -> None:
        if isinstance(target, ast.Name):
            self._add(target, _VALUE, value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts) \
                    and not any(isinstance(e, ast.Starred) for e in target.elts + value.elts):
                for element, given in zip(target.elts, value.elts):
                    self._bind(element, given)
            else:   # `a, b = pair`: each can be any element of it
                for name in _target_names(target):
                    self._add(name, _ELEMENT, value)

    def _imported(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.ImportFrom) and (node.level or not node.module):
            return   # the submission's own modules
        for alias in node.names:
            if alias.name == "*":
                continue
            if isinstance(node, ast.Import):
                head = alias.name.split(".")[0]
                name, full = alias.asname or head, alias.name if alias.asname else head
            else:
                name, full = alias.asname or alias.name, f"{node.module}.{alias.name}"
            self.imports[id(alias)] = full
            key = (id(self.scopes.of(alias)), name)
            self.variables.setdefault(key, []).append((_IMPORT, alias))
            self.rebound.add(key)

    def _parameters_of(self, function: ast.AST) -> None:
        arguments = function.args
        for name, default in parameter_defaults(arguments):
            self.variables.setdefault((id(function), name), []).append((_VALUE, default))
        for argument in arguments.posonlyargs + arguments.args + arguments.kwonlyargs:
            self.variables.setdefault((id(function), argument.arg), []).append(
                (_ARGUMENT, function))
        for packed in (arguments.vararg, arguments.kwarg):
            if packed is not None:
                self.variables.setdefault((id(function), packed.arg), []).append(
                    (_PACKED, function))

    # -- calls of the file's functions ------------------------------------------------------
    def calls_of(self, function: ast.AST, parameter: str | None = None) -> list[tuple]:
        """The calls of a function found so far, each with its shift (see callees), in the order
        of the file. With `parameter`: only those that may hand it (or an unpacked argument)
        something, by what they hand, not the value, for _given gives nothing for the rest: a
        method's many calls by its name (`super().__init__()`, `x.forward(...)`) are skipped
        where they hand nothing or only the method's own `self`."""
        direct = self.calls_to.get(id(function), [])
        name = self._method_names.get(id(function))
        named = self.by_method_name.get(name, []) if self._named and name is not None else []
        if not named:
            return direct
        if parameter is not None:
            named = self._handing.get(name, [])
            positional = [a.arg for a in function.args.posonlyargs + function.args.args]
            if positional and positional[0] == parameter and \
                    "staticmethod" not in _decorator_names(function):
                # Its `self`: handed only through its class (`Net.patch(obj, ...)`).
                named = self._through.get((name, self.scopes.of(function).name), [])
        named = [(call, self._method_shift(function, call.func)) for call in named]
        fixed = self._fixed.get(id(function), 0)
        return sorted(direct[:fixed] + named, key=lambda entry: self._order[id(entry[0])]) + \
            direct[fixed:]

    def _index_method_calls(self) -> None:
        """by_method_name's calls that hand something (`x.name(...)` with arguments), and
        those of them through a name (`Net.name(obj, ...)`: (method name, that name) -> them),
        the only ones that may hand a method's `self`: calls_of reads each once."""
        self._handing: dict[str, list] = {}
        self._through: dict[tuple, list] = {}
        for name, calls in self.by_method_name.items():
            for call in calls:
                if not (call.args or call.keywords):
                    continue
                self._handing.setdefault(name, []).append(call)
                if isinstance(call.func.value, ast.Name):
                    self._through.setdefault((name, call.func.value.id), []).append(call)

    def _count(self, key: int, earlier: tuple | None = None) -> int:
        """How many calls of the function with this id were known (a round earlier: `earlier`,
        (calls per function, named calls seen) then)."""
        counts, named = earlier if earlier is not None else (
            {key: len(self.calls_to.get(key, ()))}, self._named)
        name = self._method_names.get(key)
        return counts.get(key, 0) + (len(self.by_method_name.get(name, ()))
                                     if named and name is not None else 0)

    def _method_shift(self, method: ast.AST, attribute: ast.Attribute) -> int:
        """A method's shift where `attribute` (`x.name`) is called: 0 for a static method and
        one called through its class (`Net.patch(obj, ...)` hands its `self` too), else 1."""
        decorators = _decorator_names(method)
        through_class = isinstance(attribute.value, ast.Name) and \
            attribute.value.id == self.scopes.of(method).name
        return 0 if "staticmethod" in decorators or \
            through_class and "classmethod" not in decorators else 1

    def callees(self, call: ast.Call) -> list[tuple[ast.AST, int]]:
        """The functions (and lambdas) of the file a call can run, each with its shift: how
        many of its first positional parameters the call does not hand (a bound method's
        `self`, a constructor's, what a `functools.partial` binds). By the name called in its
        scope (or a name bound to such a function, to a lambda, to a partial of one, to a class:
        its `__init__` or `__new__`, or a parameter handed one); a method by its name, whatever
        it is called on; a function a function of the file returns (a closure)."""
        self.budget = self.MAX_RUNS
        return self._runs(call.func, 0, set())

    def _runs(self, node: ast.AST, depth: int, seen: set) -> list[tuple[ast.AST, int]]:
        """What calling `node` runs (see callees)."""
        self.budget -= 1
        if depth > self.MAX_RUNS_DEPTH or id(node) in seen or self.budget < 0:
            return []
        seen.add(id(node))
        if isinstance(node, ast.Lambda):
            return [(node, 0)]
        if isinstance(node, ast.Name):
            key = self._variable(node)
            found = [(f, 0) for f in self.functions.get(key, [])]
            for cls in self.classes.get(key, []):
                found += [(f, 1) for f in self._constructors(cls, set())]
            for kind, value in self.variables.get(key, []):
                if kind == _VALUE:   # `g = patch`, `g = lambda ...`, `g = partial(patch, x)`
                    found += self._runs(value, depth + 1, seen)
                elif kind == _ELEMENT and isinstance(value, (ast.Tuple, ast.List, ast.Set)):
                    for element in value.elts:   # `for fn in (patch, other): fn(...)`
                        found += self._runs(element, depth + 1, seen)
                elif kind == _ARGUMENT:   # `def each(fn, x): fn(x)` called as each(patch, ..)
                    self._consulted.add(id(value))
                    for call, shift in self.calls_of(value, node.id):
                        for how, given in self._given(call, value, shift, node.id):
                            if how == _VALUE:
                                found += self._runs(given, depth + 1, seen)
            return found
        if isinstance(node, ast.Call):
            function = node.func
            called = function.id if isinstance(function, ast.Name) else \
                function.attr if isinstance(function, ast.Attribute) else None
            if called in _PARTIALS or (resolve(function, self.stable) or "").rpartition(".")[2] \
                    in _PARTIALS:
                if not node.args or any(isinstance(a, ast.Starred) for a in node.args):
                    return []   # (its own call hands what it binds: _hand_offs)
                bound = len(node.args) - 1
                return [(f, shift + bound)
                        for f, shift in self._runs(node.args[0], depth + 1, seen)]
            found = []   # `make()(...)` of a `def make(): ... return inner`
            for function, _shift in self._runs(function, depth + 1, seen):
                if getattr(function, "name", None) in _CONSTRUCTORS:
                    continue
                for value in self.returns(function):
                    found += self._runs(value, depth + 1, seen)
            return found
        if not isinstance(node, ast.Attribute):
            return []
        return [(method, self._method_shift(method, node))
                for method in self.methods.get(node.attr, [])]

    def _constructors(self, cls: ast.ClassDef, seen: set) -> list[ast.AST]:
        """What calling a class of the file runs with the arguments it is handed: its
        `__new__` and `__init__`, or where it defines neither, those of its bases of the file."""
        if id(cls) in seen:
            return []
        seen.add(id(cls))
        found = [statement for statement in cls.body
                 if isinstance(statement, _FUNCTIONS) and statement.name in _CONSTRUCTORS]
        if found:
            return found
        for base in cls.bases:
            if isinstance(base, ast.Name):
                for other in self.classes.get(self._variable(base), []):
                    found += self._constructors(other, seen)
        return found

    def _hand_offs(self, call: ast.Call) -> list[ast.Call]:
        """The calls `call` makes of a function it is handed (see _RUNNING ...), each as a call
        of that function with what it hands it: `map(f, xs)` as `f(xs[0])`, `Thread(target=f,
        args=a, kwargs=k)` as `f(*a, **k)`, `partial(f, x)` as `f(x)`, `executor.submit(f, x)`
        as `f(x)`, `model.apply(f)` as `f(model)` (nn.Module.apply hands the module itself)."""
        function, arguments = call.func, call.args
        called = function.id if isinstance(function, ast.Name) else \
            function.attr if isinstance(function, ast.Attribute) else None
        full = resolve(function, self.stable)
        last = full.rpartition(".")[2] if full else called
        if last is None:
            return []
        keywords = {k.arg: k.value for k in call.keywords if k.arg}
        plain = not any(isinstance(a, ast.Starred) for a in arguments)
        made = []

        def make(runs, given=(), named=()):
            if isinstance(runs, ast.Starred):
                return
            made.append(ast.copy_location(ast.Call(func=runs, args=list(given),
                                                   keywords=list(named)), call))

        def packed(positional, keyed):
            given = [ast.Starred(value=positional, ctx=ast.Load())] \
                if positional is not None else []
            named = [ast.keyword(arg=None, value=keyed)] if keyed is not None else []
            return given, named

        def argument(index, *names):
            if plain and index < len(arguments):
                return arguments[index]
            return next((keywords[n] for n in names if n in keywords), None)

        def element(iterable):
            return ast.Subscript(value=iterable, slice=ast.Constant(value=0), ctx=ast.Load())

        if "target" in keywords:   # threading.Thread, multiprocessing.Process, a class of theirs
            make(keywords["target"], *packed(keywords.get("args"), keywords.get("kwargs")))
        if last in _RUNNING_PACKED and plain and len(arguments) > _RUNNING_PACKED[last]:
            at = _RUNNING_PACKED[last]
            after = _PACKED_AT.get(last, at + 1)
            make(arguments[at], *packed(argument(after, "args"),
                                        argument(after + 1, "kwargs", "kwds")))
        if last == "apply" and isinstance(function, ast.Attribute) and arguments:
            make(arguments[0], [function.value])   # nn.Module.apply(fn): fn(module)
        if last in _MAPPING and plain and arguments:
            make(arguments[0], [element(iterable) for iterable in arguments[1:]])
        if last in _STARMAPPING and plain and len(arguments) > 1:
            make(arguments[0], [ast.Starred(value=element(arguments[1]), ctx=ast.Load())])
        if last in _RUNNING and len(arguments) > _RUNNING[last]:
            at = _RUNNING[last]
            make(arguments[at], arguments[at + 1:], call.keywords)
        return made

    def _given(self, call: ast.Call, function: ast.AST, shift: int,
               parameter: str) -> list[tuple[str, ast.AST]]:
        """What one call hands a parameter of the function it runs: (_VALUE, _ELEMENT or
        _KEYED, expression) each; unpacked arguments may hand it any of their elements."""
        arguments = function.args
        positional = [a.arg for a in arguments.posonlyargs + arguments.args]
        if parameter in positional[:shift]:
            return []   # a bound method's `self`: the object it is called on
        given = []
        if parameter in positional:
            index = positional.index(parameter) - shift
            plain = 0              # plain arguments before this one
            unpacked = False       # after `*xs`, a plain argument may be any later parameter
            for argument in call.args:
                if isinstance(argument, ast.Starred):
                    if unpacked or plain <= index:
                        given.append((_ELEMENT, argument.value))
                    unpacked = True
                    continue
                if index >= 0 and (plain == index or unpacked and plain <= index):
                    given.append((_VALUE, argument))
                plain += 1
        for keyword in call.keywords:
            if keyword.arg == parameter:
                given.append((_VALUE, keyword.value))
            elif keyword.arg is None:
                given.append((_KEYED, keyword.value))
        return given

    def parameter_of(self, node: ast.AST) -> ast.AST | None:
        """The function whose parameter `node` reads, where nothing but its calls give that
        parameter a value; else None."""
        if not isinstance(node, ast.Name):
            return None
        key = self._variable(node)
        if key in self.rebound:
            return None
        return next((value for kind, value in self.variables.get(key, [])
                     if kind == _ARGUMENT), None)

    def handed(self, call: ast.Call, function: ast.AST, shift: int,
               parameter: str) -> list[ast.AST] | None:
        """What one call of a function hands its parameter (its default where it hands
        none); None where the call may hand it unpacked."""
        given = self._given(call, function, shift, parameter)
        if any(how != _VALUE for how, _value in given):
            return None
        return [value for _how, value in given] or [
            default for name, default in parameter_defaults(function.args) if name == parameter]

    def _keyed(self, mapping: ast.AST, parameter: str, depth: int, seen: set,
               found: list) -> None:
        """What `**mapping` hands a parameter: a dict's value under its name (any value under a
        key the scan cannot read), a `dict(...)`'s keyword so named, one put into the dict under
        it (`kwargs["name"] = value`), or the keyword so named that the calls of a function hand
        its `**kwargs`."""
        if not self._enter("keyed", mapping, depth, seen, found):
            return
        containers: list = []
        self._candidates(mapping, depth + 1, set(), containers)
        for container in containers:
            pairs = []   # (key: None for a mapping unpacked into it, value)
            if isinstance(container, ast.Dict):
                pairs = list(zip(container.keys, container.values))
            elif isinstance(container, ast.Call) and isinstance(container.func, ast.Name) and \
                    container.func.id == "dict" and not container.args:
                pairs = [(None if k.arg is None else ast.Constant(k.arg), k.value)
                         for k in container.keywords]
            elif isinstance(container, ast.Name):
                variable = self._variable(container)
                pairs = [(self.keys[id(value)], value) for value in self.filled.get(variable, [])
                         if id(value) in self.keys]   # `kwargs["name"] = value`
                for other in self.extended.get(variable, []):   # `kwargs.update(...)`
                    self._keyed(other, parameter, depth + 1, seen, found)
                for kind, function in self.variables.get(variable, []):
                    if kind == _PACKED and function.args.kwarg is not None and \
                            function.args.kwarg.arg == container.id:
                        named = {a.arg for a in function.args.posonlyargs + function.args.args +
                                 function.args.kwonlyargs}
                        pairs += [(None if k.arg is None else ast.Constant(k.arg), k.value)
                                  for call, _shift in self.calls_of(function, "")
                                  for k in call.keywords if k.arg not in named]
            for key, value in pairs:
                if key is None:
                    self._keyed(value, parameter, depth + 1, seen, found)
                elif not isinstance(key, ast.Constant) or key.value == parameter:
                    self._candidates(value, depth + 1, seen, found)

    def _handed(self, how: str, node: ast.AST, parameter: str, depth: int, seen: set,
                found: list) -> None:
        """Adds to `found` what one of `_given`'s entries can stand for."""
        if how == _VALUE:
            self._candidates(node, depth + 1, seen, found)
        elif how == _ELEMENT:
            self._elements(node, depth + 1, seen, found)
        else:
            self._keyed(node, parameter, depth + 1, seen, found)

    def _packed(self, name: ast.Name, depth: int, seen: set, found: list) -> None:
        """The arguments the calls of a function hand its `*args` or `**kwargs` named so."""
        for kind, function in self.variables.get(self._variable(name), []):
            if kind != _PACKED:
                continue
            arguments = function.args
            named = {a.arg for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs}
            positional = arguments.vararg is not None and arguments.vararg.arg == name.id
            for call, shift in self.calls_of(function, ""):
                if positional:
                    fixed = len(arguments.posonlyargs + arguments.args) - shift
                    for at, argument in enumerate(call.args):
                        if isinstance(argument, ast.Starred):
                            self._elements(argument.value, depth + 1, seen, found)
                        elif at >= fixed:
                            self._candidates(argument, depth + 1, seen, found)
                    continue
                for keyword in call.keywords:
                    if keyword.arg is None:
                        self._elements(keyword.value, depth + 1, seen, found)
                    elif keyword.arg not in named:
                        self._candidates(keyword.value, depth + 1, seen, found)

    def returns(self, function: ast.AST) -> list[ast.AST]:
        """What a function (in its own scope) or a lambda returns."""
        if id(function) not in self._returns:
            self._returns[id(function)] = [function.body] if isinstance(function, ast.Lambda) \
                else [part.value for part in _statements(function.body)
                      if isinstance(part, ast.Return) and part.value is not None]
        return self._returns[id(function)]

    def _chained(self, base: ast.AST, attributes: tuple) -> ast.AST:
        """`base.a.b` for attributes (a, b), made once (its id stays that expression's)."""
        if not attributes:
            return base
        key = (id(base), attributes)
        if key not in self._synthetic:
            node = base
            for attribute in attributes:
                node = ast.Attribute(value=node, attr=attribute, ctx=ast.Load())
            self._synthetic[key] = node
        return self._synthetic[key]

    # -- the readings -----------------------------------------------------------------------
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
        self.allowance.spend()
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
            found += self._of_variable(node, depth)
        elif isinstance(node, ast.Attribute):
            bases: list = []   # `t.nn.functional` where `t` can be torch
            self._candidates(node.value, depth + 1, set(), bases)
            found += [self._chained(base, (node.attr,)) for base in bases[1:]]
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
            # (and what a function or method of the file so named returns: `holder.get()` of
            # a class with a `def get(self): return torch.Tensor`)
            self._returned(node, depth, seen, found)
        for value in more:
            self._candidates(value, depth + 1, seen, found)

    def _returned(self, call: ast.Call, depth: int, seen: set, found: list) -> None:
        """What a call of the file's functions returns: where that is a parameter, or an
        attribute chain on one (`return m.Tensor`), the chain on what this call hands it (its
        default where the call hands none); anything else as it is read."""
        for function, shift in self.callees(call):
            if getattr(function, "name", None) == "__init__":
                continue   # a class called: the object it makes, not what __init__ returns
            for value in self.returns(function):
                root, attributes = value, ()
                while isinstance(root, ast.Attribute):
                    root, attributes = root.value, (root.attr, *attributes)
                key = (id(function), getattr(root, "id", None))
                if not (isinstance(root, ast.Name) and self.scopes.of(root) is function and
                        key in self.variables and key not in self.rebound):
                    self._candidates(value, depth + 1, seen, found)
                    continue
                found.append(value)   # (as written too: `return self.T`, read by its name)
                given = self._given(call, function, shift, root.id) or [
                    (_VALUE, default) for name, default in parameter_defaults(function.args)
                    if name == root.id]
                for how, argument in given:
                    bases: list = []
                    self._handed(how, argument, root.id, depth, set(), bases)
                    found += [self._chained(base, attributes) for base in bases]

    def _of_variable(self, name: ast.Name, depth: int) -> list:
        """What a variable's bindings can stand for: the same wherever it is read, so read once
        (unless a cycle of variables, the depth or the budget cut the reading short)."""
        key = self._variable(name)
        if key in self.by_variable:
            self.allowance.spend(len(self.by_variable[key]))   # copied out by the caller
            return self.by_variable[key]
        if key in self.reading or depth > self.MAX_DEPTH:
            self.cuts += 1
            return []
        self.reading.add(key)
        cuts, found, seen = self.cuts, [], set()
        for kind, value in self.variables.get(key, []):
            if kind == _VALUE:
                self._candidates(value, depth + 1, seen, found)
            elif kind == _ELEMENT:
                self._elements(value, depth + 1, seen, found)
            elif kind == _NESTED:
                items: list = []
                self._elements(value, depth + 1, set(), items)
                for item in items:
                    found.append(item)
                    self._elements(item, depth + 1, seen, found)
            elif kind == _IMPORT:
                found.append(value)
            elif kind == _ARGUMENT and self.follow_calls:
                for call, shift in self.calls_of(value, name.id):
                    self.allowance.spend()
                    for how, given in self._given(call, value, shift, name.id):
                        self._handed(how, given, name.id, depth, seen, found)
        self.reading.discard(key)
        if self.cuts == cuts:
            self.by_variable[key] = found
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
                items = self.filled.get(self._variable(container), [])
                for other in self.extended.get(self._variable(container), []):
                    self._elements(other, depth + 1, seen, found)
                if self.follow_calls:
                    self._packed(container, depth, seen, found)
            elif isinstance(container, ast.Call):
                function = container.func
                if isinstance(function, ast.Name) and function.id in _CONTAINER_CALLS:
                    for argument in container.args:
                        self._elements(argument, depth + 1, seen, found)
                elif isinstance(function, ast.Attribute) and function.attr in _CONTAINER_METHODS:
                    self._elements(function.value, depth + 1, seen, found)
            for item in items:
                self._candidates(item, depth + 1, seen, found)


def _target_names(target: ast.AST) -> list[ast.Name]:
    """The names an unpacking target binds (`i, (a, *rest)`)."""
    return [n for n in ast.walk(target) if isinstance(n, ast.Name)]
