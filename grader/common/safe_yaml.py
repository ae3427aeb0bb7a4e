"""YAML from people, read with bounds: a 500-byte file must not become gigabytes.

PyYAML's safe loader runs no code, but an alias makes two places share one object, so nested
anchors ("billion laughs") build a small object graph that anything walking it (json.dumps
into result.json, a report template) expands exponentially, and an alias to an ancestor makes
a cycle. Answer sheets and overrides never need that: a document is refused when it is larger
than `max_bytes`, uses more than `max_aliases` aliases, or would expand to more than
`max_nodes` values; a cycle is refused too. So is one nested deeper than `max_depth` (a sheet
is a few levels deep): PyYAML's scanner keeps one possible key per open flow collection and
checks them all at every token, so 100 KB of "[" took minutes and 1 MiB would take hours; the
depth is counted on the parser's events as they come, so such a text is refused after about a
thousand characters. The refusal is a YamlError with a message that names the cause, for the
file's owner.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

MAX_BYTES = 2 * 2**20
MAX_ALIASES = 100
MAX_NODES = 100_000
MAX_DEPTH = 32


class YamlError(ValueError):
    """The text is not YAML, or it is YAML the grader will not expand."""


def load_yaml_text(text: str, *, source: str = "the file", max_bytes: int = MAX_BYTES,
                   max_aliases: int = MAX_ALIASES, max_nodes: int = MAX_NODES,
                   max_depth: int = MAX_DEPTH) -> Any:
    if len(text.encode("utf-8", "replace")) > max_bytes:
        raise YamlError(f"{source} is larger than {max_bytes // 2**10} KiB")
    try:
        _check_events(text, source, max_aliases, max_depth)
        data = yaml.safe_load(text)
    except yaml.YAMLError as problem:
        mark = getattr(problem, "problem_mark", None)
        line = f" (line {mark.line + 1})" if mark is not None else ""
        raise YamlError(f"{source} is not valid YAML{line}: {' '.join(str(problem).split())}") from None
    except RecursionError:
        raise YamlError(f"{source} is nested too deeply") from None
    _check_expansion(data, source, max_nodes)
    return data


def _check_events(text: str, source: str, max_aliases: int, max_depth: int) -> None:
    """Aliases and nesting, counted on the parser's events before anything is built."""
    aliases = depth = 0
    for event in yaml.parse(text):
        if isinstance(event, yaml.AliasEvent):
            aliases += 1
        elif isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            depth += 1
            if depth > max_depth:
                raise YamlError(f"{source} is nested more than {max_depth} levels deep (lists "
                                "or mappings inside each other); an answer sheet needs a few")
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            depth -= 1
    if aliases > max_aliases:
        raise YamlError(f"{source} uses {aliases} YAML aliases (*name); at most "
                        f"{max_aliases} are read")


def load_yaml_file(path: str | Path, **limits: int) -> Any:
    path = Path(path)
    max_bytes = limits.get("max_bytes", MAX_BYTES)
    with open(path, "rb") as handle:
        raw = handle.read(max_bytes + 1)
    if len(raw) > max_bytes:
        raise YamlError(f"{path.name} is larger than {max_bytes // 2**10} KiB")
    return load_yaml_text(raw.decode("utf-8", "replace"), source=path.name, **limits)


def _check_expansion(data: Any, source: str, max_nodes: int) -> None:
    """Count the values a full walk would visit (aliases counted every time they are used),
    without recursion and stopping as soon as the budget is spent."""
    budget = max_nodes
    # (value, ids of the containers above it): an alias to an ancestor is a cycle.
    stack: list[tuple[Any, frozenset[int]]] = [(data, frozenset())]
    while stack:
        value, above = stack.pop()
        budget -= 1
        if budget < 0:
            raise YamlError(f"{source} expands to more than {max_nodes} values (nested aliases?)")
        if isinstance(value, (dict, list)):
            if id(value) in above:
                raise YamlError(f"{source} refers to itself (a YAML alias inside its own anchor)")
            inner = above | {id(value)}
            children = (list(value.keys()) + list(value.values())) if isinstance(value, dict) \
                else value
            stack.extend((child, inner) for child in children)
