"""Names that provably hold an object the student's file made itself, of a plain kind.

The scan's name rules hold `x.device_count = ...` or `x.forward += ...` whatever `x` is, since an
alias of torch passed through a function, a list or a loop cannot always be followed (a call from
another file, a value read from data; scopes.Containers follows the file's own). Students also keep
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
import sys
from functools import lru_cache
from pathlib import Path

from grader.common.ast_parents import ast_parents
from grader.common.locations import data_folder
from grader.integrity.names import TELLING_METHODS
from grader.integrity.scopes import local_names

_ATTRIBUTE_HOOKS = frozenset({"__new__", "__getattr__", "__getattribute__", "__setattr__",
                              "__delattr__", "__set_name__", "__init_subclass__",
                              "__class_getitem__", "__set__", "__get__", "__delete__",
                              "__torch_function__", "__torch_dispatch__"})
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
# torch's module classes a student's model derives from: none has a __new__ of its own, so
# `Net(...)` of a class of the student's on them is a new object of that class.
_MODULE_BASES = frozenset({"torch.nn.Module", "torch.nn.Sequential", "torch.nn.ModuleList",
                           "torch.nn.ModuleDict"})
# What such a class must not define: it would decide what `Net(...).to(device)` returns
# (nn.Module.to returns `self._apply(...)`, which returns self).
_MODULE_CLASS_RESERVED = _ATTRIBUTE_HOOKS | {"to", "_apply"}
# argparse: `parser.parse_args()` returns the Namespace it makes (no `namespace` given); the
# scan holds any assignment of these names (grader/integrity/source.py, _MAKES_OBJECTS), so
# neither the parser nor argparse's classes can be made to return anything else.
_PARSE = frozenset({"parse_args", "parse_intermixed_args"})
_PARSE_KNOWN = frozenset({"parse_known_args", "parse_known_intermixed_args"})
# Passes of the fixpoint that trusts parameters (a chain of calls deeper than this is left
# to the name rules).
_PARAMETER_PASSES = 8


def own_object_names(tree: ast.Module, imports: dict[str, str],
                     trust_parameters: bool = False) -> set[int]:
    """ids of the ast.Name nodes (loads) that can only be a plain object the file made.
    `imports`: local name -> what it imports (the scan's `modules`). `trust_parameters`: no
    other file can call this file's functions with values of its own (template_script), so a
    parameter every call here passes such an object is one too."""
    module_bindings = _bindings(tree.body)
    declared_elsewhere = _declared_global_or_nonlocal(tree)
    functions = [scope for scope in ast.walk(tree)
                 if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef))]
    local = {id(f): _bindings(f.body, _parameters(f.args)) for f in functions}
    # A name some function binds may be that one where a nested function reads it: neither a
    # maker nor a module-level object is trusted inside functions under such a name.
    bound_in_functions = {name for names in local.values() for name in names}
    in_functions: dict[str, list] = {}
    for names in local.values():
        for name, found_here in names.items():
            in_functions.setdefault(name, []).extend(found_here)

    def import_of(name: str) -> str | None:
        """What `name` imports wherever the file reads it: every binding of it, in every
        scope, imports that same thing."""
        every = module_bindings.get(name, []) + in_functions.get(name, [])
        targets = {value for kind, value in every if kind == "import"}
        if not every or name in declared_elsewhere or len(targets) != 1 or \
                any(kind != "import" for kind, _ in every):
            return None
        return next(iter(targets))

    def only_imported(name: str, target: str) -> bool:
        return import_of(name) == target

    def resolved(node: ast.AST) -> str | None:
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        head = import_of(node.id)
        return ".".join([head, *reversed(parts)]) if head else None

    # A class whose attributes the file sets after its definition (`Stats.__new__ = ...`) may
    # make anything: not plain.
    changed = {part.value.id for node in ast.walk(tree) for target in _targets(node)
               for part in ast.walk(target)
               if isinstance(part, ast.Attribute) and isinstance(part.value, ast.Name)}

    def defined_once(node: ast.ClassDef) -> bool:
        return node.name not in changed and node.name not in declared_elsewhere and \
            [kind for kind, _ in module_bindings.get(node.name, [])] == ["class"]

    plain = {node.name for node in tree.body if isinstance(node, ast.ClassDef)
             and defined_once(node) and _plain_class(node, only_imported)}
    # The student's own nn.Module classes, in the order they are defined (one may derive from
    # an earlier one).
    module_classes: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and defined_once(node) and \
                _module_class(node, module_classes, resolved):
            module_classes.add(node.name)
    makers = plain | {name for name in imports if only_imported(name, "types.SimpleNamespace")} \
        | {f"{name}.SimpleNamespace" for name in imports if only_imported(name, "types")}
    parsers_at_module = _parsers(module_bindings, resolved, declared_elsewhere)

    def own_in(body, bindings, scope_makers, scope_modules, declared, parsers, trusted=()):
        own = set(trusted)
        for name, found_here in bindings.items():
            if name in declared or not found_here:
                continue
            if all(_made_by(kind, value, scope_makers, scope_modules, parsers)
                   for kind, value in found_here):
                own.add(name)
        return own

    module_own = own_in(tree.body, module_bindings, makers, module_classes, declared_elsewhere,
                        parsers_at_module)
    calls = _calls_of_plain_functions(tree, module_bindings, declared_elsewhere) \
        if trust_parameters else {}
    trusted: dict[int, set[str]] = {}   # id(function) -> its parameters trusted so far
    for _ in range(_PARAMETER_PASSES):
        found = _loads(tree.body, module_own)
        for scope in functions:
            declared = _declared_global_or_nonlocal(scope)
            parsers = _parsers(local[id(scope)], resolved, declared) | \
                (parsers_at_module - bound_in_functions)
            own = own_in(scope.body, local[id(scope)], makers - bound_in_functions,
                         module_classes - bound_in_functions, declared, parsers,
                         trusted.get(id(scope), ()))
            own |= module_own - bound_in_functions   # module-level objects read here
            found |= _loads(scope.body, own)
        more = _trusted_parameters(calls, local, found, makers - bound_in_functions,
                                   module_classes - bound_in_functions)
        if more == trusted:
            break
        trusted = more
    return found


def template_script(relative: str) -> bool:
    """A file named like one of the course's scripts (practical5_dp.py, model_parallel.py):
    may_rebind_names holds every file that reaches a module of such a name, so no other file
    calls its functions."""
    return Path(relative).suffix == ".py" and Path(relative).stem in template_stems()


@lru_cache(maxsize=1)
def template_modules() -> frozenset[str]:
    """The .py files the course's template has ("hw3/model_parallel.py"), read where the grader
    keeps the template: beside grader/, or inside it in the student kit."""
    template = data_folder("student_template")
    return frozenset(p.relative_to(template).as_posix() for p in template.rglob("*.py")) \
        if template.is_dir() else frozenset()


def template_stems() -> frozenset[str]:
    return frozenset(Path(module).stem for module in template_modules())


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


def _module_class(node: ast.ClassDef, known: set[str], resolved) -> bool:
    """A class of the student's own on torch's nn.Module (or on another such class of theirs):
    `Net(...)` is a new Net, whatever its methods do. No metaclass or decorator, nothing that
    takes over making the object or its attributes."""
    if node.keywords or node.decorator_list or not node.bases:
        return False
    for base in node.bases:
        if not (resolved(base) in _MODULE_BASES or
                isinstance(base, ast.Name) and base.id in known):
            return False
    return not set(_bindings(node.body)) & _MODULE_CLASS_RESERVED


def _made_by(kind: str, value, makers: set[str], module_classes: set[str],
             parsers: set[str]) -> bool:
    """A binding that can only give a plain object the file made: a call of a plain class or
    of SimpleNamespace, a new object of the student's nn.Module class (`Net(...)`, also moved
    `Net(...).to(device)`), or the Namespace of a parser's parse_args()."""
    if kind == "unpack0":   # `args, rest = parser.parse_known_args()`
        return _parse_call(value, parsers, _PARSE_KNOWN)
    if kind != "assign":
        return False
    if isinstance(value, ast.Subscript) and isinstance(value.slice, ast.Constant) and \
            type(value.slice.value) is int and value.slice.value == 0:
        return _parse_call(value.value, parsers, _PARSE_KNOWN)
    if _parse_call(value, parsers, _PARSE):
        return True
    moved = False
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and \
            value.func.attr == "to" and isinstance(value.func.value, ast.Call):
        value, moved = value.func.value, True
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and \
            isinstance(value.func.value, ast.Name):   # types.SimpleNamespace()
        return not moved and f"{value.func.value.id}.{value.func.attr}" in makers
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)):
        return False
    return value.func.id in module_classes or not moved and value.func.id in makers


def _parse_call(value, parsers: set[str], methods: frozenset) -> bool:
    """`parser.parse_args()` (or `parse_args(argv)`) of an argparse parser, no namespace given
    (it would return that one)."""
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and \
        value.func.attr in methods and isinstance(value.func.value, ast.Name) and \
        value.func.value.id in parsers and len(value.args) <= 1 and \
        not any(isinstance(a, ast.Starred) for a in value.args) and \
        all(keyword.arg == "args" for keyword in value.keywords)


def _parsers(bindings: dict, resolved, declared: set[str]) -> set[str]:
    """Names of this scope that can only be an argparse.ArgumentParser."""
    return {name for name, found in bindings.items() if found and name not in declared and all(
        kind == "assign" and isinstance(value, ast.Call) and
        resolved(value.func) == "argparse.ArgumentParser" for kind, value in found)}


def _calls_of_plain_functions(tree: ast.Module, module_bindings: dict,
                              declared: set[str]) -> dict:
    """The module's own functions that are only ever called by name in this file: defined
    once, undecorated, never handed around, stored, rebound or called with unpacked
    arguments. function node -> its calls."""
    functions = {node.name: node for node in tree.body
                 if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and not node.decorator_list and node.name not in declared
                 and [kind for kind, _ in module_bindings.get(node.name, [])] == ["def"]}
    calls: dict[str, list] = {name: [] for name in functions}
    called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in calls:
            calls[node.func.id].append(node)
        name = None
        if isinstance(node, ast.Name):
            name = node.id if not (isinstance(node.ctx, ast.Load) and id(node) in called) \
                else None
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = node.name if functions.get(node.name) is not node else None
        elif isinstance(node, ast.arg):
            name = node.arg
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                calls.pop((alias.asname or alias.name).split(".")[0], None)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for declared_name in node.names:
                calls.pop(declared_name, None)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)):
            name = node.name
        elif isinstance(node, ast.ExceptHandler):
            name = node.name
        if name:
            calls.pop(name, None)   # used as a value, or a name bound again somewhere
    return {functions[name]: found for name, found in calls.items()
            if not any(isinstance(a, ast.Starred) for call in found for a in call.args)
            and not any(k.arg is None for call in found for k in call.keywords)}


def _trusted_parameters(calls: dict, local: dict, found: set[int], makers: set[str],
                        module_classes: set[str]) -> dict[int, set[str]]:
    """Each function's parameters that every call of it passes an object of the file's own
    (a name trusted so far, a maker's call) or a constant, and that it never binds again."""
    def trusted(value) -> bool:
        return isinstance(value, ast.Constant) or \
            isinstance(value, ast.Name) and id(value) in found or \
            _made_by("assign", value, makers, module_classes, set())

    result: dict[int, set[str]] = {}
    for function, found_calls in calls.items():
        arguments = function.args
        positional = arguments.posonlyargs + arguments.args
        defaults = dict(zip([a.arg for a in positional][len(positional) -
                                                         len(arguments.defaults):],
                            arguments.defaults))
        defaults |= {a.arg: d for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults)
                     if d is not None}
        declared = _declared_global_or_nonlocal(function)
        names = set()
        for index, parameter in enumerate(positional + arguments.kwonlyargs):
            name = parameter.arg
            if name in declared or local[id(function)].get(name) != [("parameter", None)]:
                continue   # bound again in the function (or by a nested one)
            if name in defaults and not trusted(defaults[name]):
                continue
            given = []
            for call in found_calls:
                if index < len(positional) and index < len(call.args):
                    given.append(call.args[index])
                given += [k.value for k in call.keywords if k.arg == name]
            if found_calls and all(trusted(value) for value in given):
                names.add(name)
        if names:
            result[id(function)] = names
    return result


def _bindings(body: list, parameters: set[str] = frozenset()) -> dict[str, list]:
    """name -> [(kind, value)] of every binding in this scope (not in nested scopes)."""
    found: dict[str, list] = {name: [("parameter", None)] for name in parameters}

    def add(name, kind, value=None):
        found.setdefault(name, []).append((kind, value))

    def targets(target, kind, value=None):
        if isinstance(target, ast.Name):
            add(target.id, kind, value)
        elif isinstance(target, (ast.Tuple, ast.List)) and kind == "assign" and target.elts \
                and isinstance(target.elts[0], ast.Name):
            add(target.elts[0].id, "unpack0", value)   # `args, rest = ...`: its first element
            for element in target.elts[1:]:
                targets(element, "other")
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
        elif isinstance(node, ast.Import):
            for alias in node.names:
                head = alias.name.split(".")[0]
                add(alias.asname or head, "import", alias.name if alias.asname else head)
        elif isinstance(node, ast.ImportFrom):
            source = "." * node.level + (node.module or "")
            for alias in node.names:
                add(alias.asname or alias.name, "import", f"{source}.{alias.name}")
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
_MAKERS_MODULES = frozenset({"dataclasses", "types", "argparse"})
# Modules no file of a submission can stand for: a submission module named like one of Python's
# own loses every trust (scan._objects_can_be_trusted), one named torch is held.
_LIBRARIES = frozenset(sys.stdlib_module_names) | {"torch"}


_READERS = frozenset({"print", "str", "repr", "len", "sorted", "dict", "list"})


def _only_reads(node: ast.AST) -> bool:
    """A call that only reads its arguments (prints, copies, logs, serialises them), or an
    f-string's value."""
    if isinstance(node, ast.FormattedValue):
        return True
    if not isinstance(node, ast.Call):
        return False
    function = node.func
    return isinstance(function, ast.Name) and function.id in _READERS or \
        isinstance(function, ast.Attribute) and function.attr in TELLING_METHODS


def _arguments(node: ast.AST) -> list:
    if isinstance(node, ast.FormattedValue):
        return [node.value]
    return [*node.args, *(keyword.value for keyword in node.keywords)]


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
    if _reaches_a_template_script(tree, aliases, guarded):
        return True
    # A function's own variable named like a builtin is that variable (`def main(eval=True)`).
    shadowed = local_names(tree, _REBINDING_NAMES)
    # Such a module may be read from (`helper.record()`), never handed around: `target =
    # helper; target.stats = torch.cuda` or `[types][0].SimpleNamespace = ...` rebind its names.
    read_from = {id(node.value) for node in ast.walk(tree)
                 if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load)}
    # (a method called `sample` is no module `sample.py`)
    read_from |= {id(node.func) for node in ast.walk(tree)
                  if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)}
    # `print(vars(stats))`, `json.dump(vars(args), f)`: the namespace only read, never written
    shown = {id(argument.func) for node in ast.walk(tree) if _only_reads(node)
             for argument in _arguments(node) if isinstance(argument, ast.Call)
             and isinstance(argument.func, ast.Name) and argument.func.id == "vars"
             and len(argument.args) == 1}
    for node in ast.walk(tree):
        if id(node) in shown:
            continue
        if id(node) not in read_from and (
                isinstance(node, ast.Name) and node.id in guarded or
                isinstance(node, ast.Attribute) and node.attr in modules):
            return True
        if isinstance(node, ast.Name) and node.id in _REBINDING_NAMES and id(node) not in shadowed:
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


def _reaches_a_template_script(tree: ast.AST, aliases: dict[str, str], guarded: set[str]) -> bool:
    """Whether this file reaches a module named like one of the course's scripts other than by
    calling something of it with constants (`LargeLinearModelMP(16, 6)` in a test of the
    student's own): it could call the script's functions with values of its own, and their
    parameters are trusted only where every call is in the script (own_object_names)."""
    template = template_stems()
    # (`from random import sample` is no practical10/sample.py: Python's own modules and torch
    # cannot be the submission's, which would shadow them)
    reach = {name for name, target in aliases.items()
             if set(target.lstrip(".").split(".")) & template and
             (target.startswith(".") or target.split(".")[0] not in _LIBRARIES)}
    parents = ast_parents(tree)

    def rooted(node) -> bool:
        while isinstance(node, ast.Attribute):
            node = node.value
        return isinstance(node, ast.Name) and node.id in reach | guarded

    def called_with_constants(node) -> bool:
        parent = parents.get(node)
        while isinstance(parent, ast.Attribute) and parent.value is node:
            node, parent = parent, parents.get(parent)
        return isinstance(parent, ast.Call) and parent.func is node and \
            all(isinstance(a, ast.Constant) for a in parent.args) and \
            all(k.arg is not None and isinstance(k.value, ast.Constant) for k in parent.keywords)

    for node in ast.walk(tree):
        if (isinstance(node, ast.Name) and node.id in reach and isinstance(node.ctx, ast.Load) or
                isinstance(node, ast.Attribute) and node.attr in template and
                rooted(node.value)) and not called_with_constants(node):
            return True
    return False
