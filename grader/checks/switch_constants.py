"""The constants a graded run of a Practical 10 script can set, each keyed as the script reads
it, for the switch choosing the second stage's layout (second_stage_device.layout_switch).

- The script's own: a name whose every binding is a top-level assignment, each of which the
  runner's --set rewrites (grader/vgpu/run_on_node.py), of a bool or whole number written as it
  is (the last one where assigned more than once: `BREAK_MP = False`, then `BREAK_MP = True  #
  Part 5`), or of a whole number written as an expression the grader works out
  (grader/common/constant_values.py: `OFFSET = 1 + 1`, `OFFSET = NUM_GPUS // 2`). Key: NAME.
- One of the student's own module beside the script (`config.py`), imported by a top-level
  statement of one line, that module's own constant as above: `from config import BREAK_MP`
  (key BREAK_MP, the name bound by nothing else) or `import config` read as
  `config.BREAK_MP` (key config.BREAK_MP, never assigned by the script). The runner's --set
  rewrites the script alone, so the run's edit assigns the value right after the import, on
  its line (`import config; config.BREAK_MP = False`: no line of the script moves), and every
  read of it in the script after the import has it.
"""
from __future__ import annotations

import ast
from typing import Callable, NamedTuple

from grader.common.constant_targets import assignment_targets, paired_values
from grader.common.constant_values import whole_number_assigned


class SettableConstant(NamedTuple):
    """`value`: what a graded run reads, assigned on `line` (of `place`: "" for the script,
    " of config.py" for an own module); `always_set`: set in every run, also at the value
    written (assigned more than once or as an expression); `edit(value)`: the run's (old, new)
    text of the script, None where the runner's --set sets it."""
    value: object
    line: int
    always_set: bool = False
    place: str = ""
    edit: Callable[[object], tuple[str, str]] | None = None


def settable_constants(tree: ast.Module, source: str, modules=None
                       ) -> dict[str, SettableConstant]:
    """{key: SettableConstant} (see the module's docstring); `modules(name)`: the text of the
    student's own module `name`, else None."""
    found = _own(tree, source, modules)
    if modules is not None:
        for key, constant in _imported(tree, source, modules).items():
            found.setdefault(key, constant)
    return found


def _own(tree: ast.Module, source: str, modules=None) -> dict[str, SettableConstant]:
    stores: dict[str, int] = {}
    for node in ast.walk(tree):
        for name in _bound_names(node):
            stores[name] = stores.get(name, 0) + 1
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                stores[name] = stores.get(name, 0) + 2   # set elsewhere: no constant
    assigned: dict[str, list] = {}
    for statement in tree.body:
        for target in assignment_targets(statement):
            for name, value in paired_values(target, statement.value):
                assigned.setdefault(name, []).append((value, statement.lineno))
    found = {}
    for name, values in assigned.items():
        if stores.get(name) != len(values):
            continue   # also bound in a function, a loop, an augmented assignment, an import
        line = values[-1][1]
        literal = [v.value for v, _ in values if isinstance(v, ast.Constant)
                   and type(v.value) in (bool, int)]
        if len(literal) == len(values):
            found[name] = SettableConstant(literal[-1], line, len(values) > 1)
        elif (worked_out := whole_number_assigned(source, name, modules)) is not None:
            found[name] = SettableConstant(worked_out, line, True)
    return found


def _bound_names(node) -> list[str]:
    if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
        return [node.id]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [alias.asname or alias.name.split(".")[0] for alias in node.names]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, ast.ExceptHandler) and node.name:
        return [node.name]
    return []


def _imported(tree: ast.Module, source: str, modules) -> dict[str, SettableConstant]:
    stores: dict[str, int] = {}
    for node in ast.walk(tree):
        for name in _bound_names(node):
            stores[name] = stores.get(name, 0) + 1
    assigned_attributes = {dotted(n) for n in ast.walk(tree)
                           if isinstance(n, ast.Attribute) and not isinstance(n.ctx, ast.Load)}
    found = {}
    for statement in tree.body:
        if not isinstance(statement, (ast.Import, ast.ImportFrom)) or \
                statement.lineno != statement.end_lineno or \
                isinstance(statement, ast.ImportFrom) and (statement.level or not statement.module):
            continue
        for alias in statement.names:
            module = statement.module if isinstance(statement, ast.ImportFrom) else alias.name
            text = modules(module) if "." not in module else None
            constants = _module_constants(text, modules)
            bound = alias.asname or alias.name
            if not constants or stores.get(bound) != 1:
                continue
            place = f" of {module}.py"
            if isinstance(statement, ast.Import):
                for name, constant in constants.items():
                    key = f"{bound}.{name}"
                    edit = _assigned_after(source, statement, key)
                    if key not in assigned_attributes and edit is not None:
                        found[key] = constant._replace(place=place, edit=edit)
            elif alias.name in constants:
                edit = _assigned_after(source, statement, bound)
                if edit is not None:
                    found[bound] = constants[alias.name]._replace(place=place, edit=edit)
    return found


def _module_constants(text: str | None, modules) -> dict[str, SettableConstant]:
    if text is None:
        return {}
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    return _own(tree, text, modules)


def _assigned_after(source: str, statement: ast.stmt, key: str):
    """The edit that assigns `key` a value right after the import `statement`, on its line."""
    lines = source.split("\n")
    line = lines[statement.lineno - 1]
    end = len(line.encode("utf-8")[:statement.end_col_offset].decode("utf-8", "replace"))
    before = "\n" if statement.lineno > 1 else ""
    after = "\n" if statement.lineno < len(lines) else ""

    def edit(value) -> tuple[str, str]:
        changed = f"{line[:end]}; {key} = {value!r}{line[end:]}"
        return before + line + after, before + changed + after
    old = before + line + after
    return edit if source.count(old) == 1 else None


def dotted(node) -> str | None:
    """`self.local_rank` for an attribute chain of names, `gpu` for a name; None otherwise."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = dotted(node.value)
        return f"{inner}.{node.attr}" if inner else None
    return None
