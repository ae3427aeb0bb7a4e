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

    def argv_written(self, line: int) -> bool:
        return any(at <= line for at in self.argv)


def script_writes(tree: ast.Module) -> ScriptWrites:
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
    return writes


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
