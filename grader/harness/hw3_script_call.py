"""HW3 probe: how the student's own script builds its model, read from its code (no run).

The probe builds the model many times, at its own DIM, DEPTH and node size. A constructor that
takes more than (dim, depth) is called by the student's main() in a way the probe cannot guess
from the signature alone: `LargeLinearModelMP(DIM, DEPTH, torch.cuda.device_count())`, a list
of devices, a config object (adv39 F1: such a script ran to its end and scored 2 of 15). So the
script is read as Python reads it (its syntax tree): which class its main() builds, and with
which arguments, each argument said as the expression main() passes, with main()'s own local
names replaced by what they were assigned (`n = torch.cuda.device_count()`), so that the probe
can evaluate it in the module's namespace on the node it is measuring.

Only reads source text: runs inside the probe's sandboxed process, with no torch import.
"""
from __future__ import annotations

import ast
import functools
from dataclasses import dataclass, field

MODEL_CLASS = "LargeLinearModelMP"   # the handout's name for the model
SCRIPT = "hw3/model_parallel.py"      # the handout's script, where that class is
CONSTANTS = ("DIM", "DEPTH")         # the configuration the probe sets in the module

# Where the script's model is built, in the order they are read: main() as the course's code
# has it, the script's entry block, the module's top level, then any other function (a
# build_model() helper) but the student's own tests.
ENTRY = "main"


@dataclass
class ScriptCall:
    """One call `Callee(...)` of the script: its arguments as expressions that can be
    evaluated in the module's namespace (main()'s locals replaced by what they were assigned;
    a local set in a way that cannot be replayed, a loop variable, stays a marker that
    `unresolved` names)."""
    callee: str
    args: list
    keywords: dict
    text: str            # as written: "LargeLinearModelMP(DIM, DEPTH, n)"
    line: int
    where: str           # "main()", "the `if __name__ == '__main__':` block", ...
    # Per argument (position or keyword): the names the script gave it on the way (the local
    # `n_gpus`, the attribute `args.depth`), to tell what it is where it cannot be evaluated.
    hints: dict = field(default_factory=dict)
    starred: bool = False   # `*args` or `**kwargs` in the call: not replayed
    written: dict = field(default_factory=dict)   # each argument as written
    # What is called, locals replaced as in an argument (`model_cls` assigned `Spread if
    # USE_ALL_GPUS else LargeLinearModelMP`): the class a local alias stands for.
    function: ast.expr | None = None


class _Unresolved(ast.AST):
    """Stands for a local of the script that cannot be worked out without running it."""
    _fields = ("name",)


def _callee(node: ast.Call) -> str | None:
    if isinstance(node.func, ast.Name):
        return node.func.id
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    return None


def _own_nodes(scope: ast.AST):
    """The nodes of a function's body (or a block), not those of functions or classes defined
    inside it, which are other scopes."""
    pending = list(ast.iter_child_nodes(scope))
    while pending:
        node = pending.pop(0)
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            pending[:0] = list(ast.iter_child_nodes(node))


class _Locals:
    """A scope's plain assignments (`n = expr`), to replace its names in an argument by what
    they hold at the call; a name also set otherwise (a loop, `+=`, unpacking, `with ... as`,
    a parameter without a default) is unresolved."""

    def __init__(self, scope: ast.AST | None, parameters=()):
        self.assigned: dict[str, list[tuple[int, ast.expr]]] = {}
        self.other: set[str] = set()
        self.changed: set[str] = set()
        if scope is None:
            return
        for name, default in parameters:
            if default is None:
                self.other.add(name)
            else:
                self.assigned.setdefault(name, []).append((0, default))
        plain = set()
        for node in _own_nodes(scope):
            target = (node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1
                      else node.target if isinstance(node, ast.AnnAssign) and node.value is not None
                      else None)
            if isinstance(target, ast.Name):
                plain.add(id(target))
                self.assigned.setdefault(target.id, []).append((node.lineno, node.value))
        # A comprehension's variable is its own (`[... for i in range(n)]`), not the scope's.
        plain |= {id(n) for c in _own_nodes(scope) if isinstance(c, ast.comprehension)
                  for n in ast.walk(c.target)}
        for node in _own_nodes(scope):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and \
                    id(node) not in plain:
                self.other.add(node.id)
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                self.other.add(node.target.id)
            elif _changed_in_place(node):
                # `devices.append(...)`, `cfg["dim"] = DIM`: its assignment is not all it holds
                self.changed.add(_changed_in_place(node))

    def value_of(self, name: str, line: int):
        """What `name` holds at `line`: the last plain assignment before it, or _Unresolved,
        or None (not a local: the module's name)."""
        if name in self.other or (name in self.changed and name in self.assigned):
            return _Unresolved(name=name)
        before = [value for at, value in self.assigned.get(name, ()) if at < line]
        if name in self.assigned and not before:
            return _Unresolved(name=name)
        return before[-1] if before else None


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _changed_in_place(node: ast.AST) -> str | None:
    """The local a statement changes without assigning it: an item or attribute set or
    deleted (`cfg["dim"] = DIM`, `cfg.depth = DEPTH`), or a method called for its effect
    (`devices.append(d)`, `cfg.update(...)`)."""
    if isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.ctx, (ast.Store,
                                                                                  ast.Del)):
        return _root_name(node.value)
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and \
            isinstance(node.value.func, ast.Attribute):
        return _root_name(node.value.func.value)
    return None


class _Replace(ast.NodeTransformer):
    """An argument with the scope's locals replaced by what they were assigned (a few levels
    deep: `n = len(devices)` after `devices = [...]`), noting the names passed through."""

    def __init__(self, scope: _Locals, line: int):
        self.scope, self.line = scope, line
        self.names: list[str] = []
        self.depth = 0
        self.own: set[str] = set()   # names the expression binds itself (a comprehension's)

    def replaced(self, expression: ast.expr) -> ast.expr:
        self.own |= _bound_inside(expression)
        return self.visit(_copy(expression))

    def visit_Name(self, node: ast.Name):
        if not isinstance(node.ctx, ast.Load) or node.id in self.own:
            return node
        value = self.scope.value_of(node.id, self.line)
        if value is None:
            return node
        self.names.append(node.id)
        if isinstance(value, _Unresolved) or self.depth >= 8:
            return _Unresolved(name=node.id)
        self.depth += 1
        try:
            return self.replaced(value)
        finally:
            self.depth -= 1


def _bound_inside(node: ast.AST) -> set[str]:
    found = {n.id for c in ast.walk(node) if isinstance(c, ast.comprehension)
             for n in ast.walk(c.target) if isinstance(n, ast.Name)}
    found |= {a.arg for n in ast.walk(node) if isinstance(n, ast.Lambda)
              for a in n.args.posonlyargs + n.args.args + n.args.kwonlyargs}
    return found


def _copy(node: ast.AST) -> ast.AST:
    return ast.parse(ast.unparse(node), mode="eval").body


def _hint_names(node: ast.AST) -> list[str]:
    """The names an argument carries itself: `args.n_gpus` -> n_gpus, `n_gpus` -> n_gpus."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and \
            isinstance(node.slice.value, str):
        return [node.slice.value]   # config["n_gpus"]
    return []


def unresolved(node: ast.AST) -> str | None:
    """The first local of the script an argument needs that cannot be worked out, or None."""
    for inner in ast.walk(node):
        if isinstance(inner, _Unresolved):
            return inner.name
    return None


def reads_as_constant(node: ast.AST) -> str | None:
    """"DIM" or "DEPTH" where the argument is that constant of the module (`DEPTH`,
    `int(os.environ.get("DEPTH", DEPTH))`), else None."""
    if isinstance(node, ast.Name) and node.id in CONSTANTS:
        return node.id
    if isinstance(node, ast.Call) and _callee(node) in ("int", "get", "getenv"):
        seen = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in CONSTANTS}
        if len(seen) == 1:
            return seen.pop()
    return None


def _scopes(tree: ast.Module):
    """(where, scope node, its locals) in the order they are read."""
    functions = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    entry_blocks = [n for n in tree.body if isinstance(n, ast.If) and _is_main_test(n.test)]
    for function in functions:
        if function.name == ENTRY:
            yield "main()", function, _Locals(function, _parameters(function))
    for block in entry_blocks:
        yield "the `if __name__ == \"__main__\":` block", block, _Locals(block)
    top = ast.Module(body=[n for n in tree.body if not isinstance(
        n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n not in entry_blocks],
        type_ignores=[])
    yield "the module's top level", top, _Locals(None)
    for function in functions:
        if function.name != ENTRY and not function.name.startswith("test"):
            yield f"{function.name}()", function, _Locals(function, _parameters(function))


def _parameters(function) -> list[tuple[str, ast.expr | None]]:
    arguments = function.args
    positional = arguments.posonlyargs + arguments.args
    defaults = [None] * (len(positional) - len(arguments.defaults)) + list(arguments.defaults)
    found = [(a.arg, d) for a, d in zip(positional, defaults)]
    found += [(a.arg, d) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults)]
    found += [(a.arg, None) for a in (arguments.vararg, arguments.kwarg) if a is not None]
    return found


def _is_main_test(test: ast.expr) -> bool:
    names = {n.id for n in ast.walk(test) if isinstance(n, ast.Name)}
    strings = {n.value for n in ast.walk(test) if isinstance(n, ast.Constant)}
    return "__name__" in names and "__main__" in strings


def _read_call(node: ast.Call, where: str, scope: _Locals) -> ScriptCall:
    starred = any(isinstance(a, ast.Starred) for a in node.args) or any(
        k.arg is None for k in node.keywords)
    hints: dict = {}
    written: dict = {}

    def resolved(key, argument):
        replace = _Replace(scope, node.lineno)
        value = replace.replaced(argument)
        hints[key] = _hint_names(argument) + replace.names + _hint_names(value)
        written[key] = ast.unparse(argument)
        return value

    args = [resolved(i, a) for i, a in enumerate(node.args) if not isinstance(a, ast.Starred)]
    keywords = {k.arg: resolved(k.arg, k.value) for k in node.keywords if k.arg is not None}
    return ScriptCall(callee=_callee(node), args=args, keywords=keywords,
                      text=ast.unparse(node), line=node.lineno, where=where, hints=hints,
                      starred=starred, written=written,
                      function=_Replace(scope, node.lineno).replaced(node.func))


@functools.lru_cache(maxsize=8)
def script_calls(source: str) -> tuple[ScriptCall, ...]:
    """Every call of a name in the script (`X(...)`, `mod.X(...)`), main()'s first, in the
    order of _scopes and then of the source; () where the source does not parse."""
    found: list[ScriptCall] = []
    try:
        for where, scope, names in _scopes(ast.parse(source)):
            calls = [n for n in _own_nodes(scope) if isinstance(n, ast.Call) and _callee(n)]
            calls.sort(key=lambda n: (n.lineno, n.col_offset))
            found += [_read_call(call, where, names) for call in calls]
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        pass   # what was read so far (the probe's other ways of building remain)
    return tuple(found)


def model_call(source: str, class_name: str) -> ScriptCall | None:
    """The script's call that builds its model: of the calls of `class_name` in the first
    place that makes one (main()'s), one that asks torch for the GPUs (a single-GPU baseline
    built beside it, `LargeLinearModelMP(DIM, DEPTH, 1)`, is not the model Task 3 asks for),
    else one without a number written in, else the first."""
    found = [c for c in script_calls(source) if c.callee == class_name]
    first = [c for c in found if found and c.where == found[0].where]
    for wanted in (asks_for_gpus, lambda c: not _numbers_written_in(c), lambda c: True):
        chosen = next((c for c in first if wanted(c)), None)
        if chosen is not None:
            return chosen
    return None


def _arguments(call: ScriptCall) -> list:
    return list(call.args) + list(call.keywords.values())


def asks_for_gpus(call: ScriptCall | None) -> bool:
    if call is None:
        return False
    return any(isinstance(n, ast.Attribute) and n.attr == "device_count" or
               isinstance(n, ast.Name) and n.id == "device_count"
               for argument in _arguments(call) for n in ast.walk(argument))


def _numbers_written_in(call: ScriptCall) -> bool:
    return any(isinstance(a, ast.Constant) and type(a.value) is int for a in _arguments(call))


@functools.lru_cache(maxsize=8)
def classes_asking_for_gpus(source: str) -> frozenset[str]:
    """The classes the script defines whose code asks torch how many GPUs there are (Task 3's
    model, not a one-GPU baseline built beside it)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return frozenset()
    return frozenset(n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and any(
        isinstance(m, ast.Attribute) and m.attr == "device_count" for m in ast.walk(n)))


@functools.lru_cache(maxsize=8)
def classes_with_layers(source: str) -> frozenset[str]:
    """The classes the script defines whose code makes Linear layers (nn.Linear, a Linear of
    its own import): the model, not a helper (a timer, a config)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return frozenset()
    return frozenset(n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and any(
        (isinstance(m, ast.Name) and "Linear" in m.id) or
        (isinstance(m, ast.Attribute) and "Linear" in m.attr) for m in ast.walk(n)))


def renamed_model_note(name: str, handout_class_kept: bool = False,
                       handout_built: bool = False) -> str:
    """The student's note where the model class has another name than the handout's; or,
    `handout_class_kept`, where the script keeps the handout's class but its main() builds
    and runs another (Task 1's code kept beside Task 3's, adv51 F1); `handout_built`: main()
    builds the handout's class too, and its own runs trained the other (adv53 F0), or trained it
    spread where the handout's trained on fewer GPUs (Task 2's base code timed, adv57 F-F)."""
    if handout_class_kept:
        kept = ("which main() also builds, but your script's own runs did not train on every "
                "GPU with the whole batch" if
                handout_built else "main() does not build it")
        return (f"The grader graded {name}, which your script's main() builds and runs, for "
                f"Tasks 3-5, not the {MODEL_CLASS} class your hw3/model_parallel.py also "
                f"keeps ({kept}). No points are lost for that; where this is "
                "not the class you meant for Task 3, say so to the course staff.")
    return (f"hw3/model_parallel.py has no class {MODEL_CLASS} (the handout's name for the "
            f"model); the grader graded {name}, the model your script builds, in its place. "
            "No points are lost for the name, but keeping the handout's name makes your code "
            "easier to compare with the task.")
