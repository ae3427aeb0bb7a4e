"""Names that provably hold an object the student's file made itself, of a plain kind.

The scan's name rules hold `x.device_count = ...` or `x.forward += ...` whatever `x` is, since an
alias of torch passed through a function, a list or a loop cannot be followed. Students also keep
their measurements in objects of their own (`stats = GpuStats()`, `phase = SimpleNamespace()`),
and setting a field there replaces nothing. This module finds the uses of a name that can only be
such an object: every binding of the name in its scope is a call of `types.SimpleNamespace` or of
a plain class the file defines once at module level (no bases but `object`, no metaclass, at most
dataclasses' decorator, no method that takes over attribute access or creation, no decorated
method or class attribute that could be a descriptor), and nothing else can rebind it (no
parameter, `global`, `nonlocal`, loop, `with`, import or deletion of it). The scan trusts these
only where no file of the submission can rebind another module's names (`may_rebind_names`:
namespaces as dictionaries, attribute setters, code built at run time, a module of the
submission handed around). Anything less certain keeps the name rules.
"""
from __future__ import annotations

import ast

_ATTRIBUTE_HOOKS = frozenset({"__new__", "__getattr__", "__getattribute__", "__setattr__",
                              "__delattr__", "__set_name__", "__init_subclass__",
                              "__class_getitem__", "__set__", "__get__", "__delete__",
                              "__torch_function__", "__torch_dispatch__"})
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def own_object_names(tree: ast.Module, imports: dict[str, str]) -> set[int]:
    """ids of the ast.Name nodes (loads) that can only be a plain object the file made.
    `imports`: local name -> what it imports (the scan's `modules`)."""
    module_bindings = _bindings(tree.body)
    declared_elsewhere = _declared_global_or_nonlocal(tree)

    def only_imported(name: str, target: str) -> bool:
        return imports.get(name) == target and all(
            kind == "import" for kind, _ in module_bindings.get(name, [])) and \
            name not in declared_elsewhere

    # A class whose attributes the file sets after its definition (`Stats.__new__ = ...`) may
    # make anything: not plain.
    changed = {part.value.id for node in ast.walk(tree) for target in _targets(node)
               for part in ast.walk(target)
               if isinstance(part, ast.Attribute) and isinstance(part.value, ast.Name)}
    plain = {node.name for node in tree.body if isinstance(node, ast.ClassDef)
             and node.name not in changed and _plain_class(node, only_imported) and
             [kind for kind, _ in module_bindings.get(node.name, [])] == ["class"]
             and node.name not in declared_elsewhere}
    makers = plain | {name for name in imports if only_imported(name, "types.SimpleNamespace")}

    functions = [scope for scope in ast.walk(tree)
                 if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef))]
    local = {id(f): _bindings(f.body, _parameters(f.args)) for f in functions}
    # A name some function binds may be that one where a nested function reads it: neither a
    # maker nor a module-level object is trusted inside functions under such a name.
    bound_in_functions = {name for names in local.values() for name in names}
    found: set[int] = set()
    module_own = _own_in(tree.body, module_bindings, makers, declared_elsewhere)
    found |= _loads(tree.body, module_own)
    for scope in functions:
        own = _own_in(scope.body, local[id(scope)], makers - bound_in_functions,
                      _declared_global_or_nonlocal(scope))
        own |= module_own - bound_in_functions   # module-level objects read here
        found |= _loads(scope.body, own)
    return found


def _targets(node: ast.AST) -> list:
    if isinstance(node, (ast.Assign, ast.Delete)):
        return node.targets
    if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        return [node.target]
    return []


def _plain_class(node: ast.ClassDef, only_imported) -> bool:
    if node.keywords or any(not (isinstance(b, ast.Name) and b.id == "object") for b in node.bases):
        return False

    def names(node, what: str) -> bool:
        """`node` is dataclasses' `what`: imported by name, or read from the module."""
        return isinstance(node, ast.Name) and only_imported(node.id, f"dataclasses.{what}") or \
            isinstance(node, ast.Attribute) and node.attr == what and \
            isinstance(node.value, ast.Name) and only_imported(node.value.id, "dataclasses")

    for decorator in node.decorator_list:
        if not names(decorator.func if isinstance(decorator, ast.Call) else decorator,
                     "dataclass"):
            return False
    for statement in node.body:
        bound = [statement.name] if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) \
            else [t.id for t in _targets(statement) if isinstance(t, ast.Name)]
        if any(name.startswith("__") and name not in ("__init__", "__post_init__", "__repr__",
                                                       "__str__", "__eq__") for name in bound):
            return False   # `__new__: object = field(default=...)`: dataclass makes it the class's
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if statement.decorator_list or statement.name in _ATTRIBUTE_HOOKS:
                return False
        elif isinstance(statement, ast.AnnAssign):
            value = statement.value
            if not isinstance(statement.target, ast.Name):
                return False
            if value is not None and not isinstance(value, ast.Constant) and \
                    not _plain_field(value, names):
                return False
        elif isinstance(statement, ast.Assign):
            if not isinstance(statement.value, ast.Constant) or \
                    not all(isinstance(t, ast.Name) for t in statement.targets):
                return False
        elif not (isinstance(statement, (ast.Expr, ast.Pass)) and
                  (isinstance(statement, ast.Pass) or isinstance(statement.value, ast.Constant))):
            return False
    return True


def _plain_field(value: ast.AST, names) -> bool:
    """`field(default=<a constant>)` or `field(default_factory=list)` (dict, set, tuple):
    nothing else may hide in a field's default (a descriptor, a function)."""
    if not (isinstance(value, ast.Call) and names(value.func, "field")) or value.args:
        return False
    for keyword in value.keywords:
        given = keyword.value
        if keyword.arg == "default_factory":
            if not (isinstance(given, ast.Name) and given.id in ("list", "dict", "set", "tuple")):
                return False
        elif not isinstance(given, ast.Constant):
            return False
    return True


def _own_in(body: list, bindings: dict, makers: set[str], declared: set[str]) -> set[str]:
    own = set()
    for name, found in bindings.items():
        if name in declared or not found:
            continue
        if all(kind == "assign" and _made_by(value, makers) for kind, value in found):
            own.add(name)
    return own


def _made_by(value, makers: set[str]) -> bool:
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and \
        value.func.id in makers


def _bindings(body: list, parameters: set[str] = frozenset()) -> dict[str, list]:
    """name -> [(kind, value)] of every binding in this scope (not in nested scopes)."""
    found: dict[str, list] = {name: [("parameter", None)] for name in parameters}

    def add(name, kind, value=None):
        found.setdefault(name, []).append((kind, value))

    def targets(target, kind, value=None):
        if isinstance(target, ast.Name):
            add(target.id, kind, value)
        elif isinstance(target, (ast.Tuple, ast.List, ast.Starred)):
            for element in (target.elts if not isinstance(target, ast.Starred) else [target.value]):
                targets(element, "other")

    for node in _in_scope(body):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                targets(target, "assign" if len(node.targets) == 1 else "other", node.value)
        elif isinstance(node, ast.AnnAssign):
            targets(node.target, "assign" if node.value is not None else "other", node.value)
        elif isinstance(node, (ast.AugAssign, ast.For, ast.AsyncFor)):
            targets(node.target, "other")
        elif isinstance(node, ast.NamedExpr):
            targets(node.target, "other")
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                targets(target, "other")
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    targets(item.optional_vars, "other")
        elif isinstance(node, ast.ExceptHandler) and node.name:
            add(node.name, "other")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                add((alias.asname or alias.name).split(".")[0], "import")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            add(node.name, "def")
        elif isinstance(node, ast.ClassDef):
            add(node.name, "class")
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            add(node.name, "other")
        elif isinstance(node, ast.MatchMapping) and node.rest:
            add(node.rest, "other")
        elif isinstance(node, ast.comprehension):
            targets(node.target, "other")   # (a comprehension's own scope: kept, to be safe)
    return found


def _in_scope(body: list):
    """Every node of these statements, not descending into nested functions or classes (their
    definitions themselves are yielded)."""
    pending = list(body)
    while pending:
        node = pending.pop()
        yield node
        if isinstance(node, _SCOPES):
            if not isinstance(node, ast.Lambda):
                pending += node.decorator_list
            continue
        pending += list(ast.iter_child_nodes(node))


def _loads(body: list, names: set[str]) -> set[int]:
    return {id(node) for node in _in_scope(body)
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in names}


def _parameters(arguments: ast.arguments) -> set[str]:
    every = arguments.posonlyargs + arguments.args + arguments.kwonlyargs
    names = {a.arg for a in every}
    for extra in (arguments.vararg, arguments.kwarg):
        if extra is not None:
            names.add(extra.arg)
    return names


def _declared_global_or_nonlocal(tree: ast.AST) -> set[str]:
    """Names declared `global` or `nonlocal` anywhere under `tree` (in a function: the names a
    nested one may rebind, or that it says are global)."""
    return {name for node in ast.walk(tree) if isinstance(node, (ast.Global, ast.Nonlocal))
            for name in node.names}


# What can rebind a module's names from outside its own statements: the namespaces as
# dictionaries, attribute setters, code built at run time, the import machinery.
_REBINDING_NAMES = frozenset({"globals", "vars", "locals", "setattr", "delattr", "exec", "eval",
                              "compile", "__import__", "__builtins__", "builtins", "importlib",
                              "runpy", "ctypes"})
_REBINDING_ATTRIBUTES = frozenset({"__dict__", "__setattr__", "__globals__", "__builtins__"})
_REBINDING_MODULES = frozenset({"builtins", "importlib", "__main__", "runpy", "ctypes", "gc",
                                "inspect"})
_MAKERS_MODULES = frozenset({"dataclasses", "types"})


def may_rebind_names(tree: ast.AST, own_modules) -> bool:
    """Whether this file could rebind a name of a module of the submission (its own included)
    other than by that module's own statements: then no file's objects are trusted as plain."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in _REBINDING_MODULES:
                    return True
                aliases[alias.asname or alias.name.split(".")[0]] = alias.name
        elif isinstance(node, ast.ImportFrom):
            if (node.module or "").split(".")[0] in _REBINDING_MODULES or \
                    any(alias.name == "*" for alias in node.names):
                return True   # (a star import rebinds names the file cannot list)
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module or ''}.{alias.name}"
    own = set(own_modules)
    modules = own | _MAKERS_MODULES
    # Names that stand for such a module itself (`import helper`, `from hw3 import helper`).
    guarded = {name for name, target in aliases.items() if target.split(".")[-1] in modules}
    # Such a module may be read from (`helper.record()`), never handed around: `target =
    # helper; target.stats = torch.cuda` or `[types][0].SimpleNamespace = ...` rebind its names.
    read_from = {id(node.value) for node in ast.walk(tree)
                 if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load)}
    # (a method called `sample` is no module `sample.py`)
    read_from |= {id(node.func) for node in ast.walk(tree)
                  if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)}
    for node in ast.walk(tree):
        if id(node) not in read_from and (
                isinstance(node, ast.Name) and node.id in guarded or
                isinstance(node, ast.Attribute) and node.attr in modules):
            return True
        if isinstance(node, ast.Name) and node.id in _REBINDING_NAMES:
            return True
        if isinstance(node, ast.Attribute) and node.attr in _REBINDING_ATTRIBUTES:
            return True
        for target in _targets(node):
            for part in ast.walk(target):
                if isinstance(part, ast.Attribute) and (
                        part.attr in modules or isinstance(part.value, ast.Name) and
                        set(aliases.get(part.value.id, "").split(".")) & modules):
                    # `helper.GpuStats = ...`, `hw3.helper.stats = ...` on a module of the
                    # submission, or `dataclasses.dataclass = ...`: what makes the objects
                    return True
    return False
