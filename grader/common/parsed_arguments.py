"""What argparse gives a top-level constant in a graded run, which starts the script with no
arguments: each argument's `default=` (adv40 H3: `parser.add_argument("--steps", type=int,
default=300)` then `STEPS = parser.parse_known_args()[0].steps` ran 300 steps and timed out).

Read only where nothing else can change it: a parser bound once at the top level by
`argparse.ArgumentParser(...)` (no parents, argument_default or prefix_chars), its arguments
added by top-level `parser.add_argument(...)` statements and used otherwise only to parse or
print help before the constant; the parsed namespace only read by attribute. Anything else
(set_defaults, argument groups, a custom type or action, a required argument, a parser built in
a function) is unknown (constant_values.py).
"""
from __future__ import annotations

import ast

_PARSER_USES = {"add_argument", "parse_args", "parse_known_args", "print_help", "print_usage",
                "format_help", "format_usage"}
_PARSER_OPTIONS = {"prog", "usage", "description", "epilog", "formatter_class", "add_help",
                   "allow_abbrev", "exit_on_error"}
_ARGUMENT_OPTIONS = {"type", "default", "help", "dest", "metavar", "choices", "required", "nargs",
                     "action"}
_CONVERSIONS = {"int": int, "float": float}


class NotWorkedOut(Exception):
    pass


class Parser:
    """A top-level `NAME = argparse.ArgumentParser(...)`."""


class Namespace:
    def __init__(self, values: dict):
        self.values = values


_UNKNOWN = object()   # an argument whose default is not worked out


def parsed(reading, node: ast.Call):
    """`argparse.ArgumentParser(...)`: a Parser; `parser.parse_args()`: the Namespace of the
    defaults; `parser.parse_known_args()`: (that Namespace, [])."""
    if reading.writes.canonical(node.func) == "argparse.ArgumentParser":
        if len(node.args) > 1 or any(k.arg not in _PARSER_OPTIONS for k in node.keywords):
            raise NotWorkedOut
        return Parser()
    parser = node.func.value.id
    if not isinstance(reading.known.get(parser), Parser) or not _bound_once(reading, parser):
        raise NotWorkedOut
    arguments = [reading.value(a) for a in node.args] + [
        reading.value(k.value) for k in node.keywords if k.arg == "args"]
    if any(k.arg != "args" for k in node.keywords) or len(arguments) > 1 \
            or arguments and arguments[0] != [] \
            or not arguments and reading.writes.argv_written(reading.line):
        raise NotWorkedOut   # parsed from arguments of the script's own, or a changed sys.argv
    namespace = Namespace(_defaults(reading, parser))
    return namespace if node.func.attr == "parse_args" else (namespace, [])


def namespace_value(reading, node: ast.Attribute):
    """`args.steps`, `parser.parse_args().steps`: the argument's default."""
    if isinstance(node.value, ast.Name) and not (
            _bound_once(reading, node.value.id) and _only_read(reading, node.value.id)):
        raise NotWorkedOut   # `args.steps = 10`, `vars(args)`, set in a function
    namespace = reading.value(node.value)
    if not isinstance(namespace, Namespace):
        raise NotWorkedOut
    value = namespace.values.get(node.attr, _UNKNOWN)
    if value is _UNKNOWN:
        raise NotWorkedOut
    return value


def _bound_once(reading, name: str) -> bool:
    return reading.writes.bindings[name] == 1 and name not in reading.writes.global_names


def _references(reading, name: str):
    """(reference, its parent) of every `name` read before the constant's line."""
    for node in ast.walk(reading.tree):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Name) and child.id == name \
                    and isinstance(child.ctx, ast.Load) and child.lineno <= reading.line:
                yield child, node


def _only_read(reading, name: str) -> bool:
    return all(isinstance(parent, ast.Attribute) and isinstance(parent.ctx, ast.Load)
               and not parent.attr.startswith("_") and not _called(reading, parent)
               for _, parent in _references(reading, name))


def _called(reading, attribute: ast.Attribute) -> bool:
    return any(isinstance(node, ast.Call) and node.func is attribute
               for node in ast.walk(reading.tree) if getattr(node, "lineno", 0) <= reading.line)


def _defaults(reading, parser: str) -> dict:
    """{dest: default} of the parser's arguments, added by top-level statements before the
    constant's line; NotWorkedOut where the parser is used any other way before it."""
    added = {id(s.value) for s in reading.tree.body
             if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call)}
    calls = []
    for _, parent in _references(reading, parser):
        if not (isinstance(parent, ast.Attribute) and parent.attr in _PARSER_USES
                and _called(reading, parent)):
            raise NotWorkedOut   # set_defaults, add_argument_group, handed on
        if parent.attr == "add_argument":
            call = next(n for n in ast.walk(reading.tree)
                        if isinstance(n, ast.Call) and n.func is parent)
            if id(call) not in added:
                raise NotWorkedOut   # added in a function or a block: maybe not, maybe later
            calls.append(call)
    defaults: dict = {}
    for call in sorted(calls, key=lambda c: c.lineno):
        dest, default = _argument(reading, call)
        defaults[dest] = _UNKNOWN if dest in defaults else default   # which one wins: unread
    return defaults


def _argument(reading, call: ast.Call) -> tuple[str, object]:
    flags = [reading.value(a) for a in call.args]
    options = {k.arg: k.value for k in call.keywords}
    if not flags or not all(isinstance(f, str) and f for f in flags) \
            or None in options or not set(options) <= _ARGUMENT_OPTIONS:
        raise NotWorkedOut
    optional = flags[0].startswith("-")
    if "dest" in options:
        dest = reading.value(options["dest"])
    elif optional:
        dest = next((f for f in flags if f.startswith("--")), flags[0]).lstrip("-").replace("-", "_")
    else:
        dest = flags[0]
    nargs = reading.value(options["nargs"]) if "nargs" in options else None
    if "action" in options and reading.value(options["action"]) != "store" \
            or "required" in options and reading.value(options["required"]) is not False \
            or not isinstance(dest, str) \
            or (nargs not in (None, "?") if optional else nargs not in ("?", "*")):
        raise NotWorkedOut   # a flag, a count, or a run that stops for a missing argument
    if "default" not in options:
        return dest, [] if nargs == "*" else None
    try:
        default = reading.value(options["default"])
    except (NotWorkedOut, ArithmeticError, ValueError, TypeError):
        return dest, _UNKNOWN
    if isinstance(default, str) and "type" in options:
        # argparse converts a string default with the argument's type.
        conversion = _CONVERSIONS.get(reading.writes.canonical(options["type"]))
        try:
            default = conversion(default) if conversion else _UNKNOWN
        except ValueError:
            default = _UNKNOWN
    return dest, default
