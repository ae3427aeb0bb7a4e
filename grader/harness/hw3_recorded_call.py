"""HW3 probe: the model built with the arguments the student's own run passed its constructor.

Where the script's call cannot be replayed from its text (hw3_script_call.py: a required
argument set with `+=`, a seed or a config object the script fills in; adv42 F1), the probe
builds the model with what the script's own runs (DEPTH=20 on 2 and 5 GPUs) recorded as each
model of the submission's classes was built (grader/vgpu/constructor_calls.py writes it, as
data). The configuration is the probe's: an argument that is the run's DIM or DEPTH (by its
parameter's name, or by its value where the runs' DIM and DEPTH differ) becomes the probe's,
one that is the run's GPU count or its list of GPUs (by name, or by a value that follows the
node's size from one run to the other) the probe's node's; the same within a config object
(a dataclass or namespace of the script's, rebuilt from its fields). An argument that changed
from one run to the other for no reason the probe can tell is not guessed.

Runs inside the probe's sandboxed process; reads only the recorded data (JSON), never an
object of the student's run.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import types

from grader.harness.hw3_script_call import SCRIPT

# The plan's part that carries the runs' records (grader/checks/hw3_recorded_calls.py).
PART = "recorded_calls"
_NAMESPACES = {"SimpleNamespace": types.SimpleNamespace, "Namespace": argparse.Namespace}


class NotRecorded(Exception):
    """The recorded arguments cannot be replayed: why (the student is told)."""


def recorded_call(text: str, class_name: str, line: int | None, signature, module, node,
                  role_of) -> tuple[tuple, dict]:
    """(args, kwargs) for `class_name` on `node` (hw3_build.Node) from the runs' records
    (`text`: JSON, the plan's part); `line`: the script's call of the class, whose record is
    preferred; `role_of`: a parameter's role as its name says (hw3_build.role_of)."""
    chosen = _chosen_calls(json.loads(text), class_name, line)
    if not chosen:
        raise NotRecorded(f"your script's own run recorded no {class_name} being built")
    resolver = _Resolver(chosen, module, node, role_of)
    args, kwargs, rest = [], {}, ()
    varargs = any(kind == "var_positional" and value != {"tuple": []}
                  for _, kind, value in chosen[0][1]["arguments"])
    for name, kind, _ in chosen[0][1]["arguments"]:
        value = resolver.value(name, [arguments[name] for arguments in resolver.by_name])
        if kind == "positional_only" or (kind == "positional" and varargs):
            args.append(value)
        elif kind == "var_positional":
            rest = tuple(value)
        elif kind == "var_keyword":
            kwargs.update(value)
        else:
            kwargs[name] = value
    args = tuple(args) + rest
    try:
        signature.bind(*args, **kwargs)
    except TypeError as error:
        raise NotRecorded(f"the recorded arguments do not fit its signature ({error})") from None
    return args, kwargs


def _chosen_calls(runs: list, class_name: str, line: int | None) -> list[tuple[dict, dict]]:
    """(run, call) per run that built the class: the call made at the script's `line`, else
    the first."""
    chosen = []
    for run in runs:
        calls = [c for c in run.get("calls", ()) if c.get("cls") == class_name]
        at_line = [c for c in calls if line is not None and c.get("line") == line
                   and c.get("file") == SCRIPT]
        if calls:
            chosen.append((run, (at_line or calls)[0]))
    names = [[name for name, _, _ in call["arguments"]] for _, call in chosen]
    # Runs whose constructor had other parameters (a class edited between runs: none here)
    # are left out rather than mixed.
    return [pair for pair, own in zip(chosen, names) if own == names[0]] if chosen else []


class _Resolver:
    def __init__(self, chosen, module, node, role_of):
        self.runs = [run for run, _ in chosen]
        self.by_name = [{name: value for name, _, value in call["arguments"]}
                        for _, call in chosen]
        self.module, self.node, self.role_of = module, node, role_of

    def value(self, name: str | None, seen: list):
        """The value for a parameter (or a config's field) `name`, recorded as `seen` (one per
        run), on the probe's node."""
        role = self.role_of(name) if isinstance(name, str) else None
        if all(type(v) is int for v in seen):
            role = role if role in ("dim", "depth", "gpus") else self._role_by_value(seen)
            if role is not None:
                return self.node.value(role)
        devices = self._devices(name, role, seen)
        if devices is not None:
            return devices
        first = seen[0]
        fields = _fields(first)
        if fields is not None and all(_same_kind(v, first) for v in seen):
            tag = _tag(first)
            values = {key: self.value(key, [_fields(v)[key] for v in seen]) for key in fields}
            return self._rebuilt(tag, first[tag], values)
        if any(v != first for v in seen):
            said = " and ".join(f"{_said(v)} on {run['gpus']} GPU(s)"
                                for v, run in zip(seen, self.runs))
            raise NotRecorded(f"`{name}` was {said}: the grader cannot tell what it is on "
                              "another node")
        return self.decoded(first)

    def _role_by_value(self, seen: list[int]) -> str | None:
        """"depth" or "dim" where each run's value is that run's DEPTH (or DIM) and the two
        differ; "gpus" where the value follows the node's size from run to run."""
        for role, other in (("depth", "dim"), ("dim", "depth")):
            if all(v == run[role] != run[other] for v, run in zip(seen, self.runs)):
                return role
        if len({run["gpus"] for run in self.runs}) > 1 and all(
                v == run["gpus"] for v, run in zip(seen, self.runs)):
            return "gpus"
        return None

    def _devices(self, name, role, seen):
        """The node's GPUs, written as the run wrote them (indices, "cuda:i", torch.device),
        where the argument is the run's list of GPUs: by its name, or by following the node's
        size from run to run."""
        lists = [v.get("list", v.get("tuple")) if isinstance(v, dict) else None for v in seen]
        if any(items is None for items in lists) or not lists[0]:
            return None
        if not all(len(items) == run["gpus"] for items, run in zip(lists, self.runs)):
            return None
        if role != "devices" and len({len(items) for items in lists}) < 2:
            return None
        element, gpus = lists[0][0], range(self.node.gpus)
        if type(element) is int:
            made = list(gpus)
        elif isinstance(element, str):
            made = [f"cuda:{i}" for i in gpus]
        elif isinstance(element, dict) and "device" in element:
            made = [self.decoded({"device": f"cuda:{i}"}) for i in gpus]
        else:
            return None
        return tuple(made) if "tuple" in seen[0] else list(made)

    def _rebuilt(self, tag: str, kind: str, values: dict):
        if tag == "dict":
            return dict(values)
        if tag == "namespace":
            if kind not in _NAMESPACES:
                raise NotRecorded(f"its config is a {kind}, which the grader does not rebuild")
            return _NAMESPACES[kind](**values)
        cls = vars(self.module).get(kind)
        if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
            raise NotRecorded(f"its config class {kind} is not a dataclass the grader finds "
                              "in hw3/model_parallel.py")
        return cls(**values)

    def decoded(self, value):
        """A recorded value as the object it stood for (constructor_calls.as_data)."""
        if not isinstance(value, dict):
            return value
        if "fields" in value:
            tag = "dataclass" if "dataclass" in value else "namespace"
            return self._rebuilt(tag, value.get(tag), {k: self.decoded(v)
                                                       for k, v in value["fields"].items()})
        tag, inner = next(iter(value.items()), (None, None))
        if tag == "float":
            return float(inner)
        if tag in ("list", "tuple"):
            items = [self.decoded(v) for v in inner]
            return items if tag == "list" else tuple(items)
        if tag == "dict":
            return {self.decoded(k): self.decoded(v) for k, v in inner}
        if tag in ("device", "dtype"):
            import torch
            made = torch.device(inner) if tag == "device" else getattr(
                torch, inner.split(".", 1)[-1], None)
            if tag == "dtype" and not isinstance(made, torch.dtype):
                raise NotRecorded(f"its dtype {inner} is not one torch has")
            return made
        raise NotRecorded(f"an argument is a {inner} object, which the grader cannot rebuild "
                          "from your run (it rebuilds numbers, strings, lists, dicts, devices "
                          "and config dataclasses)")


def _fields(value) -> dict | None:
    """The fields of a recorded config (a dataclass, a namespace, a dict of string keys)."""
    if not isinstance(value, dict):
        return None
    if "fields" in value and ("dataclass" in value or "namespace" in value):
        return value["fields"]
    pairs = value.get("dict")
    if pairs is not None and len(value) == 1 and all(isinstance(k, str) for k, _ in pairs):
        return dict(pairs)
    return None


def _same_kind(value, first) -> bool:
    if not isinstance(value, dict):
        return False
    if "dict" in first:
        return _fields(value) is not None and "dict" in value and \
            list(_fields(value)) == list(_fields(first))
    tag = _tag(first)
    return value.get(tag) == first[tag] and list(value.get("fields", {})) == list(first["fields"])


def _tag(config: dict) -> str:
    """"dataclass", "namespace" or "dict": which kind of config a recorded one is."""
    return next(tag for tag in ("dataclass", "namespace", "dict") if tag in config)


def _said(value) -> str:
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."
