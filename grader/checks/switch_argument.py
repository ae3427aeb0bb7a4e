"""A command-line flag as the switch between Practical 10's layouts: `parser.add_argument(
"--break-mp", action="store_true")` read as `if args.break_mp: device1 = ...{local_rank}...
else: device1 = ...{local_rank + 2}...` (second_stage_device.layout_switch).

The graded runs start the script with no arguments (grader/common/constant_values.py), so the
flag holds its default there, and a run sets the switch by changing that default in the text of
its add_argument call and nothing else (the run's `--edit`, as loop_bound.py lowers a steps
default): `default=True` written in, or the written default changed. That is the flag's value
in the run only where nothing else gives it one, so the flag is read only where:
- one add_argument call of the file has its dest, with action store_true or store_false and
  at most a literal bool default, help and dest besides;
- the namespace it is read from is only bound from `parse_args()` / `parse_known_args()[0]`
  called with no arguments of the script's own, and the dest is never assigned (`args.break_mp
  = True`);
- nothing reads or changes the arguments unseen: set_defaults, subparsers, vars, getattr,
  setattr, exec, eval, a star import, a sys.argv the script writes.
"""
from __future__ import annotations

import ast
from typing import Callable, NamedTuple

from grader.common.script_writes import script_writes

_OPTIONS = {"action", "default", "help", "dest"}
_ACTIONS = {"store_true": False, "store_false": True}   # the default where none is written
_PARSES = {"parse_args", "parse_known_args"}
_UNREAD_ATTRIBUTES = {"set_defaults", "add_subparsers", "__dict__", "_get_kwargs",
                      "parse_intermixed_args", "add_mutually_exclusive_group"}
_UNREAD_CALLS = {"vars", "getattr", "setattr", "exec", "eval"}


class FlagSwitch(NamedTuple):
    """`name`: how the report names it ("the default of --break-mp"); `written`: its default
    as handed in, on `line`; `reads(node)`: whether a node reads the flag; `edit(value)`: the
    run's (old, new) text that makes the default `value`."""
    name: str
    written: bool
    line: int
    reads: Callable[[ast.AST], bool]
    edit: Callable[[bool], tuple[str, str]]


def flag_switch(source: str, tree: ast.Module, test: ast.expr) -> FlagSwitch | None:
    """The flag an `if`'s test reads (`args.break_mp`, `not args.keep_mp`), where it can be set
    for a run as the module's docstring says; None otherwise."""
    read = {(n.value.id, n.attr) for n in ast.walk(test) if isinstance(n, ast.Attribute)
            and isinstance(n.value, ast.Name) and isinstance(n.ctx, ast.Load)}
    if len(read) != 1:
        return None
    namespace, dest = read.pop()
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Attribute) and n.func.attr == "add_argument"]
    dests = [_dest(call) for call in calls]
    if None in dests or dests.count(dest) != 1 or not _parsed_only(tree, namespace) \
            or _read_unseen(tree, dest):
        return None
    call = calls[dests.index(dest)]
    options = {k.arg: k.value for k in call.keywords}
    action = options.get("action")
    default = options.get("default")
    if None in options or not set(options) <= _OPTIONS or not _is_text(action) \
            or action.value not in _ACTIONS or default is not None and not (
                isinstance(default, ast.Constant) and type(default.value) is bool):
        return None
    text = ast.get_source_segment(source, call)
    if not text or source.count(text) != 1:
        return None
    written = default.value if default is not None else _ACTIONS[action.value]
    flag = next(a.value for a in call.args if a.value.startswith("--") or a is call.args[-1])

    def reads(node) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == dest and \
            isinstance(node.value, ast.Name) and node.value.id == namespace

    def edit(value: bool) -> tuple[str, str]:
        if default is None:
            body = text[:-1].rstrip()
            return text, body + (" " if body.endswith(",") else ", ") + \
                f"default={value!r}" + text[len(body):]
        start = _offset(source, default.lineno, default.col_offset) \
            - _offset(source, call.lineno, call.col_offset)
        end = start + len(ast.get_source_segment(source, default))
        return text, text[:start] + repr(value) + text[end:]

    return FlagSwitch(f"the default of {flag}", written, call.lineno, reads, edit)


def _dest(call: ast.Call) -> str | None:
    """What argparse names the argument (`--break-mp`: break_mp); None where not read."""
    if not call.args or not all(_is_text(a) for a in call.args) or any(
            k.arg is None or k.arg == "dest" and not _is_text(k.value) for k in call.keywords):
        return None
    for keyword in call.keywords:
        if keyword.arg == "dest":
            return keyword.value.value
    flags = [a.value for a in call.args]
    if not flags[0].startswith("-"):
        return flags[0]
    return next((f for f in flags if f.startswith("--")), flags[0]).lstrip("-").replace("-", "_")


def _parsed_only(tree: ast.Module, namespace: str) -> bool:
    """Whether every binding of `namespace` is `... = <parser>.parse_args()` or `... =
    <parser>.parse_known_args()[0]`, called without arguments."""
    bound = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == namespace
             and not isinstance(n.ctx, ast.Load)]
    assignments = [n for n in ast.walk(tree) if isinstance(n, ast.Assign)
                   and any(isinstance(t, ast.Name) and t.id == namespace for t in n.targets)]
    return bool(bound) and len(bound) == len(assignments) and all(
        len(a.targets) == 1 and _parses(a.value) for a in assignments) and not any(
        isinstance(n, (ast.Global, ast.Nonlocal, ast.arg)) and namespace in (
            n.names if isinstance(n, (ast.Global, ast.Nonlocal)) else [n.arg])
        for n in ast.walk(tree))


def _parses(value) -> bool:
    if isinstance(value, ast.Subscript) and isinstance(value.slice, ast.Constant) and \
            value.slice.value == 0:
        value = value.value
        wanted = "parse_known_args"
    else:
        wanted = "parse_args"
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and \
        value.func.attr == wanted and not value.args and not value.keywords


def _read_unseen(tree: ast.Module, dest: str) -> bool:
    """Whether anything but the parser's defaults may give the flag its value."""
    writes = script_writes(tree)
    if writes.opaque or writes.argv:
        return True
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and (node.attr in _UNREAD_ATTRIBUTES or (
                node.attr == dest and not isinstance(node.ctx, ast.Load))):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in _UNREAD_CALLS:
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in _PARSES and (node.args or node.keywords):
            return True   # parsed from a list of the script's own
    return False


def _is_text(node) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _offset(source: str, lineno: int, col_offset: int) -> int:
    """The character offset of an ast position (its column counts UTF-8 bytes)."""
    lines = source.split("\n")
    before = sum(len(line) + 1 for line in lines[:lineno - 1])
    return before + len(lines[lineno - 1].encode("utf-8")[:col_offset].decode("utf-8", "replace"))
