"""What a script does, anywhere in its text, that would make one of its top-level constants
evaluate otherwise than the grader works it out (constant_values.py): a builtin or module name
it binds itself (`def max`, `from numpy import int8 as int`), an environment variable it sets
(`os.environ["MY_STEPS"] = "1"`, putenv, update, setdefault, load_dotenv), a sys.argv it
changes, a module-level name a function sets (`global EPOCHS`), or a way around all of these
(globals(), exec, a star import, the builtins module). Where one of these comes before the
constant, its value is unknown (adv40 F6: the grader read 300 for a run of 1 step, and its cap
raised the run to 3).
"""
from __future__ import annotations

import ast
from collections import Counter
from dataclasses import dataclass, field

from grader.common.ast_parents import ast_parents

# An environment write whose variable the grader cannot name (`os.environ.update(d)`).
ANY_VARIABLE = "*"
# Reads of os.environ and sys.argv that change nothing; any other use of them (a write, or the
# object handed on where it may be written) counts as a write of them.
_ENVIRON_READS = {"get", "copy", "keys", "items", "values", "__contains__", "__getitem__"}
_ENVIRON_WRITES = {"update", "setdefault", "pop", "popitem", "clear", "__setitem__",
                   "__delitem__"}
_ARGV_READS = {"index", "count", "copy"}
# Calls that reach the module's names without naming them.
_OPAQUE_CALLS = {"globals", "locals", "vars", "exec", "eval", "__import__"}
# The builtins constant_values.py works out: the builtins module's others (`builtins.print =
# ...`, a rank prefix on every line) change nothing it reads.
EVALUATED_BUILTINS = {"int", "float", "round", "abs", "min", "max", "len"}


@dataclass
class ScriptWrites:
    imports: dict[str, str] = field(default_factory=dict)   # name -> what it imports ("os.environ")
    bindings: Counter = field(default_factory=Counter)      # module-level bindings of each name
    environment: list[tuple[int, str]] = field(default_factory=list)   # (line, variable)
    argv: list[int] = field(default_factory=list)           # lines that may change sys.argv
    global_names: set[str] = field(default_factory=set)     # set by a function (`global X`)
    opaque: bool = False
    # The value of an environment write that is known: {(line, variable): value}, for a
    # top-level import of an own module whose only write of the variable is a top-level
    # `os.environ.setdefault("STEPS", "300")` or `os.environ["STEPS"] = "300"`.
    environment_values: dict[tuple[int, str], str] = field(default_factory=dict)

    def canonical(self, node: ast.expr) -> str | None:
        """`os.environ.get` for `os.environ.get`, `environ.get` (from os import environ) or
        `o.environ.get` (import os as o); `int` for the builtin where the script binds no
        `int` of its own; None for anything else (a name of the script's, an expression)."""
        if isinstance(node, ast.Attribute):
            head = self.canonical(node.value)
            return None if head is None else f"{head}.{node.attr}"
        if not isinstance(node, ast.Name):
            return None
        if node.id in self.imports:
            return self.imports[node.id]
        return node.id if self.bindings[node.id] == 0 else None

    def environment_written(self, variable: str, line: int) -> bool:
        return any(at <= line and written in (variable, ANY_VARIABLE)
                   for at, written in self.environment)

    def environment_value(self, variable: str, line: int) -> str | None:
        """What the environment holds for `variable` at `line` where one write before it set
        it and that value is known (an own module's, at its import); None otherwise."""
        before = [(at, written) for at, written in self.environment
                  if at <= line and written in (variable, ANY_VARIABLE)]
        return self.environment_values.get(before[0]) if len(before) == 1 else None

    def argv_written(self, line: int) -> bool:
        return any(at <= line for at in self.argv)


def script_writes(tree: ast.Module, modules=None) -> ScriptWrites:
    """What the script writes; `modules(name)`, where given, is the text of the student's own
    module `name` (None for any other), whose writes at import count at the import's line."""
    return _writes(tree, modules, {})


def _writes(tree: ast.Module, modules, read: dict) -> ScriptWrites:
    writes = ScriptWrites()
    _read_bindings(tree, writes)
    parents = ast_parents(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            writes.global_names.update(node.names)
        elif isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            writes.opaque = True
        elif isinstance(node, (ast.Name, ast.Attribute)):
            _note_use(node, parents, writes)
    if modules is not None:
        _imported_writes(tree, writes, modules, read)
    return writes


def _imported_writes(tree: ast.Module, writes: ScriptWrites, modules, read: dict) -> None:
    """The environment and sys.argv that the student's own modules the script imports write
    (a `config.py` whose `os.environ.setdefault("STEPS", "1")` runs at `import config`), and
    those they import, as written at each line that imports them. A module that cannot be read
    through (a star import, globals(), a syntax error) may write any variable. `read`: {name:
    (its tree, its writes)} of the modules read so far (None while one is read: an import
    cycle, whose writes the outer import already counts)."""
    for node in ast.walk(tree):
        for name in _imported_modules(node):
            if name not in read:
                read[name] = None
                read[name] = _module_writes(modules(name), modules, read)
            if read[name] is None or read[name][1] is None:
                continue   # not the student's module, or one being read
            module_tree, imported = read[name]
            variables = {variable for _, variable in imported.environment}
            if imported.opaque:
                variables = {ANY_VARIABLE}
            writes.environment += [(node.lineno, variable) for variable in sorted(variables)]
            writes.argv += [node.lineno] if imported.argv or imported.opaque else []
            if node in tree.body and not imported.opaque:   # its top level runs right there
                for variable, value in _known_values(module_tree, imported).items():
                    writes.environment_values[(node.lineno, variable)] = value


def _module_writes(source: str | None, modules, read: dict):
    """(tree, writes) of an own module's text; (None, None) where it is not the student's."""
    if source is None:
        return None, None
    try:
        tree = ast.parse(source)
        return tree, _writes(tree, modules, read)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None, ScriptWrites(opaque=True)


def _known_values(tree: ast.Module, writes: ScriptWrites) -> dict[str, str]:
    """{variable: value} of a module's environment writes that are its only write of the
    variable, made by a top-level statement with literal strings (or a top-level import of a
    module that makes one). The graded run's environment holds no variable of the script's
    own, so setdefault sets it as plainly as an assignment."""
    known = {}
    for statement in tree.body:
        target = value = None
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call) \
                and writes.canonical(statement.value.func) == "os.environ.setdefault" \
                and len(statement.value.args) == 2 and not statement.value.keywords:
            target, value = statement.value.args
        elif isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
                and isinstance(statement.targets[0], ast.Subscript) \
                and writes.canonical(statement.targets[0].value) == "os.environ":
            target, value = statement.targets[0].slice, statement.value
        variable, value = _constant_string(target), _constant_string(value)
        if variable is not None and value is not None:
            known[(statement.lineno, variable)] = value
    known.update(writes.environment_values)
    counts = Counter(variable for _, variable in writes.environment)
    if counts[ANY_VARIABLE]:
        return {}
    return {variable: value for (line, variable), value in known.items()
            if counts[variable] == 1 and (line, variable) in writes.environment}


def _imported_modules(node: ast.AST) -> list[str]:
    """The absolute module names an import statement runs (`import a.b`: a and a.b; `from a
    import b`: a, and a.b where b is a module)."""
    if isinstance(node, ast.Import):
        dotted = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        dotted = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names
                                  if alias.name != "*"]
    else:
        return []
    parts = [name.split(".") for name in dotted]
    return [".".join(p[:k]) for p in parts for k in range(1, len(p) + 1)]


def _read_bindings(tree: ast.Module, writes: ScriptWrites) -> None:
    """The names the module binds, and those bound only by an import (to what they import)."""
    imported: dict[str, set] = {}
    pending = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if isinstance(node, ast.Import):
                    name = alias.asname or alias.name.split(".")[0]
                    target = alias.name if alias.asname else name
                else:
                    name = alias.asname or alias.name
                    target = f"{'.' * node.level}{node.module or ''}.{alias.name}"
                imported.setdefault(name, set()).add(target)
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            writes.bindings[node.name] += 1
            pending.extend(node.decorator_list)
            continue   # its own body binds its own names (a `global` is read apart)
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            writes.bindings[node.id] += 1
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            writes.bindings[node.name] += 1
        elif isinstance(node, ast.MatchMapping) and node.rest:
            writes.bindings[node.rest] += 1
        pending.extend(ast.iter_child_nodes(node))
    for node in ast.walk(tree):   # `global int` in a function binds the module's `int`
        if isinstance(node, ast.Global):
            writes.bindings.update(node.names)
    for name, targets in imported.items():
        if writes.bindings[name] == 0 and len(targets) == 1:
            writes.imports[name] = targets.pop()
        else:
            writes.bindings[name] += 1   # imported twice as different things, or set too


def _note_use(node: ast.expr, parents: dict, writes: ScriptWrites) -> None:
    what = writes.canonical(node)
    if what is None:
        return
    parent, line = parents.get(node), node.lineno
    if not isinstance(node.ctx, ast.Load):   # `os.environ = {}`, `sys.argv = [...]`
        parent = None
    elif isinstance(parent, ast.Attribute) and parent.value is node:
        return   # read as a part of a longer name (`os.environ` in `os.environ.get`)
    module, _, attribute = what.partition(".")
    if module in ("builtins", "__builtins__") and attribute in ("", *EVALUATED_BUILTINS) \
            or what == "sys.modules" \
            or what in _OPAQUE_CALLS and isinstance(parent, ast.Call) and parent.func is node:
        writes.opaque = True
    elif what.startswith("dotenv"):
        writes.environment.append((line, ANY_VARIABLE))
    elif what in ("os.putenv", "os.unsetenv"):
        writes.environment.append((line, _first_string(parent) or ANY_VARIABLE))
    elif what.startswith("os.environ."):
        method = what[len("os.environ."):]
        if method in _ENVIRON_WRITES:
            variable = _first_string(parent) if method in ("setdefault", "pop") else None
            writes.environment.append((line, variable or ANY_VARIABLE))
        elif method not in _ENVIRON_READS:
            writes.environment.append((line, ANY_VARIABLE))
    elif what == "os.environ":
        if isinstance(parent, ast.Subscript) and parent.value is node:
            if not isinstance(parent.ctx, ast.Load):
                writes.environment.append((line, _constant_string(parent.slice) or ANY_VARIABLE))
        elif not (isinstance(parent, ast.Compare) and node in parent.comparators):
            writes.environment.append((line, ANY_VARIABLE))   # handed on, rebound, changed
    elif what == "sys.argv" and not _argv_read(node, parent, writes):
        writes.argv.append(line)
    elif what.startswith("sys.argv.") and what[len("sys.argv."):] not in _ARGV_READS:
        writes.argv.append(line)


def _argv_read(node, parent, writes) -> bool:
    """`sys.argv[1]`, `sys.argv[1:]`, `len(sys.argv)`, `"--x" in sys.argv`."""
    if isinstance(parent, ast.Subscript) and parent.value is node:
        return isinstance(parent.ctx, ast.Load)
    if isinstance(parent, ast.Compare) and node in parent.comparators:
        return True
    return isinstance(parent, ast.Call) and writes.canonical(parent.func) == "len"


def _first_string(call) -> str | None:
    if isinstance(call, ast.Call) and call.args:
        return _constant_string(call.args[0])
    return None


def _constant_string(node) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None
