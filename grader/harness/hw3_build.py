"""HW3 probe: building the student's model at the probe's DIM, DEPTH and node size.

The probe measures the model on its own configurations, so it builds it itself, many times.
It builds it the way the student's script does (hw3_script_call.py: the call in main(), each
argument evaluated in the module on the node being measured, DIM and DEPTH set to the
configuration's); where that call cannot be replayed, with the arguments the script's own
runs passed the constructor (hw3_recorded_call.py, where the checks hand them over), else from
the constructor's signature: its parameters by name (dim, depth, a GPU count, a list of
devices) or by their defaults (the module's DIM and DEPTH). The model class is the handout's
LargeLinearModelMP, or, where the script has none, the nn.Module with Linear layers its main()
builds (adv39 F1b).

Runs inside the probe's sandboxed process; imports torch only to make a list of devices.
"""
from __future__ import annotations

import ast
import copy
import dataclasses
import inspect
import os
import textwrap
import weakref

from grader.harness.hw3_recorded_call import NotRecorded, recorded_call
from grader.harness.hw3_script_call import (ENTRY, MODEL_CLASS, SCRIPT, ScriptCall,
                                            asks_for_gpus, classes_asking_for_gpus,
                                            classes_with_layers, model_call, reads_as_constant,
                                            script_calls, unresolved)

# Constructor parameters the probe recognises by name (lower case), in order of preference.
DIM_NAMES = ("dim", "hidden_dim", "hidden_size", "hidden", "width", "size", "d_model",
             "features", "in_features", "input_dim", "input_size", "in_dim", "dim_in",
             "in_size", "num_features", "n_features", "feature_dim", "embed_dim", "n_embd",
             "model_dim", "layer_dim", "layer_size", "n_hidden", "hidden_units", "units", "d")
DEPTH_NAMES = ("depth", "num_layers", "n_layers", "layers", "n_layer", "num_layer", "nlayers",
               "layer_count", "num_blocks", "n_blocks", "num_hidden_layers",
               "n_hidden_layers", "number_of_layers", "num_linear", "n_linear", "layers_count",
               "total_layers", "model_depth")
# A count of GPUs (given the node's size) and a list of devices (given the node's devices).
GPU_COUNT_NAMES = ("num_gpus", "n_gpus", "ngpus", "gpus", "num_gpu", "n_gpu", "gpu_count",
                   "gpus_count", "number_of_gpus", "num_devices", "n_devices", "ndevices",
                   "num_device", "n_device", "device_count", "devices_count", "world_size",
                   "n_dev", "num_dev", "ndev", "gpu_num", "num_cuda", "n_cuda", "num_stages",
                   "n_stages", "num_parts", "n_parts", "available_gpus")
DEVICE_LIST_NAMES = ("devices", "device_list", "devices_list", "gpu_list", "gpus_list",
                     "gpu_devices", "cuda_devices", "available_devices", "device_names",
                     "gpu_ids", "device_ids", "gpu_indices", "device_indices", "gpu_idx",
                     "ids")
# The ways the probe builds the model without the script's own call, said with the name of the
# class it builds ({model}: LargeLinearModelMP, or a class of the student's own name).
SIGNATURES = ("{model}(dim=..., depth=...) (e.g. `def __init__(self, dim=DIM, "
              "depth=DEPTH)`), {model}(DIM, DEPTH) (two positional parameters), or "
              "{model}() with the module constants DIM and DEPTH (`def "
              "__init__(self)`, as the course's code does); a parameter named as a GPU count "
              "(num_gpus) gets torch.cuda.device_count(), one named as a list of devices "
              "(devices, gpu_ids) the node's GPUs")


# The probe plan's part that names the class the script's own runs trained (its "name"), where
# main() builds the handout's class and another (grader/checks/hw3_trained_class.py).
TRAINED_PART = "trained_class"


class CannotBuild(TypeError):
    pass


class CannotReplay(Exception):
    """The script's own call cannot be made by the probe: why (the student is told)."""


def role_of(name: str | None) -> str | None:
    """"dim", "depth", "gpus" or "devices", as a parameter's (or a local's) name reads."""
    if not name:
        return None
    name = name.lower()
    for role, names in (("dim", DIM_NAMES), ("depth", DEPTH_NAMES), ("gpus", GPU_COUNT_NAMES),
                        ("devices", DEVICE_LIST_NAMES)):
        if name in names:
            return role
    return None


def is_torch_module(cls) -> bool:
    """cls subclasses torch.nn.Module (read from its bases: no torch import here)."""
    return isinstance(cls, type) and any(
        base.__name__ == "Module" and base.__module__.startswith("torch.nn")
        for base in cls.__mro__)


class Node:
    """The configuration a build is for: DIM, DEPTH and the node's GPUs (as
    torch.cuda.device_count() says on the node being measured, unless given)."""

    def __init__(self, dim: int, depth: int, gpus: int | None = None):
        self.dim, self.depth, self._gpus = dim, depth, gpus

    @property
    def gpus(self) -> int:
        if self._gpus is None:
            import torch
            self._gpus = torch.cuda.device_count()
        return self._gpus

    def value(self, role: str, name: str | None = None):
        if role == "dim":
            return self.dim
        if role == "depth":
            return self.depth
        if role == "gpus":
            return self.gpus
        # A list of devices: indices where the name says so (`gpu_ids`, as DataParallel's
        # device_ids), else torch.device objects.
        if name and ("id" in name.lower() or "ind" in name.lower()):
            return list(range(self.gpus))
        import torch
        return [torch.device(f"cuda:{i}") for i in range(self.gpus)]


def _call(cls, args: tuple, kwargs: dict, calls: list | None, signature=None, given=()):
    """cls(*args, **kwargs), said in `calls` with the parameters left to a default that is
    the module's DIM or DEPTH as imported (`LargeLinearModelMP(num_layers=20); left to its
    default: width=1024`): the configuration did not reach them."""
    if calls is not None:
        text = f"{cls.__name__}(" + ", ".join(
            [_short(a) for a in args] + [f"{k}={_short(v)}" for k, v in kwargs.items()]) + ")"
        if signature is not None:
            bound = signature.bind_partial(*args, **kwargs).arguments
            left = [f"{p.name}={p.default!r}" for p in signature.parameters.values()
                    if p.name not in bound and type(p.default) is int and p.default in given]
            if left:
                text += "; left to its default: " + ", ".join(left)
        calls.append(text)
    return cls(*args, **kwargs)


def _short(value) -> str:
    try:
        text = repr(value)
    except Exception:   # a repr of the student's own that fails
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 120 else text[:117] + "..."


# Each student module's DIM and DEPTH as its import set them (construct sets them after).
_IMPORTED_CONSTANTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _defaulted_to(parameters, given: tuple, which: int, taken: str | None) -> str | None:
    """The one constructor parameter, of a name the lists above lack, whose default is the
    module's own DIM (which=0) or DEPTH (which=1) as imported: `input_size=DIM` takes the
    width whatever it is called. None where the two constants are equal (no telling them
    apart), or where no parameter, or more than one, is defaulted to that constant."""
    wanted, other = given[which], given[1 - which]
    if type(wanted) is not int or wanted == other:
        return None
    found = [p.name for p in parameters
             if p.name != taken and type(p.default) is int and p.default == wanted]
    return found[0] if len(found) == 1 else None


def model_class(module, source: str | None,
                trained: str | None = None) -> tuple[type, str | None]:
    """The model class and, where it is not the handout's LargeLinearModelMP, its name (the
    report notes it): an nn.Module with Linear layers that the script builds (main()'s first),
    else the only one the script defines. `trained`: the class the script's own runs trained,
    where main() builds the handout's and another (classes_built_beside)."""
    cls = getattr(module, MODEL_CLASS, None)
    if isinstance(cls, type):
        # The handout's class kept for Task 1 beside a new one that main() builds and runs
        # (adv51 F1): the one run is graded.
        instead = class_built_instead(module, source, cls, trained) if source else None
        return (instead, instead.__name__) if instead is not None else (cls, None)
    with_layers = classes_with_layers(source) if source else frozenset()
    built = []
    for call in script_calls(source) if source else ():
        value = vars(module).get(call.callee)
        if is_torch_module(value) and value not in built:
            built.append(value)
    defined = [v for v in vars(module).values() if is_torch_module(v)
               and getattr(v, "__module__", None) == module.__name__]
    helpers = [c for c in built if c.__module__ != module.__name__
               and not c.__module__.startswith("torch")]   # from a module beside the script
    layered = [c for c in defined if c.__name__ in with_layers]
    # Of the classes the script builds, one that asks for the GPUs (itself, or main()'s call
    # of it) before a one-GPU baseline built first.
    asking = classes_asking_for_gpus(source) if source else frozenset()
    models = sorted((c for c in built if c.__name__ in with_layers), key=lambda c: not (
        c.__name__ in asking or asks_for_gpus(model_call(source, c.__name__))))
    for candidates in (models, helpers, layered if len(layered) == 1 else []):
        if candidates:
            return candidates[0], candidates[0].__name__
    names = ", ".join(sorted(c.__name__ for c in defined)) or "none"
    raise CannotBuild(f"hw3/model_parallel.py defines no class {MODEL_CLASS} (the handout's "
                      "model), and the grader could not tell which class is the model: none "
                      "that the script builds holds Linear layers (nn.Module classes it "
                      f"defines: {names}). Keep the class name of the course's base code")


def class_built_instead(module, source: str, handout: type,
                        trained: str | None = None) -> type | None:
    """The model class the script's entry (main(), else its `__main__` block, else its top
    level: the first of these that builds a model) builds where that is not the handout's
    class: called by name, through a local alias (`model_cls = Spread if USE_ALL_GPUS else
    LargeLinearModelMP`) or through a function (`build_model()`, in the script or a module
    beside it). Where the entry also builds, or may build, the handout's class (Task 1's
    layout printed before Task 3's model, a choice behind a flag, a factory, a decoy): the
    class named `trained`, which the script's own runs trained (adv53 F0: read from their
    trace by the checks, grader/checks/hw3_trained_class.py), else None: the handout's."""
    built, maybe_handout = entry = _entry_builds(module, source)
    if handout in built or maybe_handout:
        return next((c for c in _beside(module, handout, entry)
                     if trained is not None and c.__name__ == trained), None)
    asking = classes_asking_for_gpus(source)
    return sorted(built, key=lambda c: c.__name__ not in asking)[0]


def classes_built_beside(module, source: str | None) -> tuple[list[str], bool]:
    """(the names of the model classes the script's entry builds, or may build, beside the
    handout's LargeLinearModelMP, whether it builds the handout's by name): which of them is
    graded is what the script's own runs trained. ([], False) where it builds only one."""
    handout = getattr(module, MODEL_CLASS, None)
    if not source or not isinstance(handout, type):
        return [], False
    built, maybe_handout = entry = _entry_builds(module, source)
    if not (handout in built or maybe_handout):
        return [], False
    names = [c.__name__ for c in _beside(module, handout, entry)]
    return names, bool(names) and handout in built


def _entry_builds(module, source: str) -> tuple[list, bool]:
    """(the student's model classes the entry builds, whether it calls something that may be
    the handout's class and could not be told without running it: so where no entry is seen
    to build a model, as through a factory `MODELS[TASK](DIM, DEPTH)`)."""
    scopes: dict[str, list] = {}
    for call in script_calls(source):
        scopes.setdefault(call.where, []).append(call)
    for where, calls in scopes.items():
        if where != f"{ENTRY}()" and where.endswith("()"):
            continue   # another function: what it builds counts where the entry calls it
        built, maybe_handout = [], False
        for call in calls:
            classes, unknown = _classes_called(call, module, source)
            built += [c for c in classes if c not in built]
            maybe_handout |= unknown and any(isinstance(n, ast.Name) and n.id == MODEL_CLASS
                                             for n in ast.walk(call.function))
        if built or maybe_handout:
            return built, maybe_handout
    return [], True


def _beside(module, handout: type, entry: tuple[list, bool]) -> list:
    """The student's model classes other than the handout's that the entry builds; where it
    may build the handout's through something not told without running it (`MODELS[
    args.kind]`), the script's own as well. Which of them holds the model is the runs' to
    say: a class that never trains (a timer of the student's, a decoy) is never chosen."""
    built, maybe_handout = entry
    own = [v for v in vars(module).values() if _own_model(v)
           and getattr(v, "__module__", None) == module.__name__] if maybe_handout else []
    return [c for c in dict.fromkeys(built + own) if c is not handout]


def _classes_called(call, module, source: str) -> tuple[list, bool]:
    """The student's nn.Module classes a call builds (itself, or the function it calls, one
    level down), and whether what it calls could not be told without running the script."""
    value = vars(module).get(call.callee) if call.callee else None
    if value is None and call.function is not None and not any(
            isinstance(n, (ast.Call, ast.Lambda)) for n in ast.walk(call.function)):
        try:   # a local alias: a name, an attribute or a conditional, nothing called
            value = eval(compile(ast.fix_missing_locations(ast.Expression(
                body=call.function)), "hw3/model_parallel.py", "eval"), vars(module))
        except Exception:
            return [], True
    if _own_model(value):
        return [value], False
    if inspect.isfunction(value) and not str(value.__module__).startswith("torch"):
        text = _function_source(value, module, source)
        found = [value.__globals__.get(c.callee) for c in script_calls(text)] if text else []
        return [c for c in dict.fromkeys(f for f in found if _own_model(f))], False
    return [], False


def _function_source(function, module, source: str) -> str | None:
    """A function's own text: from the script's (`source`) where the script defines it, else
    from its module's file (a helper module beside the script)."""
    if function.__module__ == module.__name__:
        try:
            found = [n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)
                     and n.name == function.__name__]
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        return ast.get_source_segment(source, found[-1]) if found else None
    try:
        return textwrap.dedent(inspect.getsource(function))
    except (OSError, TypeError):
        return None


def _own_model(value) -> bool:
    """An nn.Module class of the submission's (not one of torch's own)."""
    return is_torch_module(value) and not value.__module__.startswith("torch")


def class_file(cls, module) -> str:
    """The file that defines the model class, as the student names it (SCRIPT, or a helper
    module beside it), for the feedback to point at: where the class is imported from another
    file, `__init__` and `forward` are there."""
    script = getattr(module, "__file__", None)
    try:
        found = inspect.getsourcefile(cls)
    except Exception:   # a class without a source file of its own, or one that hides it
        found = None
    if not script or not found:
        return SCRIPT
    root = os.path.dirname(os.path.dirname(os.path.abspath(script)))
    relative = os.path.relpath(os.path.abspath(found), root).replace(os.sep, "/")
    return SCRIPT if relative.startswith("../") else relative


def configured(value, node: Node, module):
    """A config object passed to the constructor (a dataclass, a dict, a namespace, a class of
    the script's own) with its dim and depth fields set to the configuration's: a dataclass's
    defaults were the module's constants at import, not the probe's."""
    roles = ("dim", "depth")
    try:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            changes = {f.name: node.value(role_of(f.name)) for f in dataclasses.fields(value)
                       if role_of(f.name) in roles and f.init}
            return dataclasses.replace(value, **changes) if changes else value
        if type(value) is dict:
            return {k: node.value(role_of(k)) if isinstance(k, str) and role_of(k) in roles
                    and type(v) is int else v for k, v in value.items()}
        kind = type(value)
        if kind.__name__ in ("SimpleNamespace", "Namespace") or (
                kind.__module__ == module.__name__ and not is_torch_module(kind)):
            names = [n for n in dir(value) if not n.startswith("_") and role_of(n) in roles
                     and type(getattr(value, n, None)) is int]
            if names:
                value = copy.copy(value)
                for name in names:
                    setattr(value, name, node.value(role_of(name)))
    except Exception:   # a config of the student's own that refuses: passed as it is
        pass
    return value


def _replayed_value(call: ScriptCall, key, parameter: str | None, module, node: Node,
                    given: tuple, stop: tuple):
    """The value the probe passes for one argument of the script's call; `stop`: the probe's
    own exceptions (its time limit), which no failure of the expression may swallow."""
    expression = call.args[key] if isinstance(key, int) else call.keywords[key]
    hints = call.hints.get(key, [])
    role = {"DIM": "dim", "DEPTH": "depth"}.get(reads_as_constant(expression))
    role = role or next((r for r in [role_of(parameter)] if r in ("dim", "depth")), None)
    if role is None and isinstance(expression, ast.Constant) and type(expression.value) is int \
            and given[0] != given[1] and expression.value in given:
        role = ("dim", "depth")[given.index(expression.value)]
    # A name on the way (a loop's `depth`, `args.depth`) says it, unless the parameter's own
    # name says a GPU count or devices (`size = torch.cuda.device_count()` is no width).
    if role is None and role_of(parameter) not in ("gpus", "devices"):
        role = next((r for r in map(role_of, hints) if r in ("dim", "depth")), None)
    if role is not None:
        return node.value(role)
    missing = unresolved(expression)
    problem = (f"`{missing}` is set in a way the grader does not replay (it evaluates a "
               "name's one plain assignment, not a loop, `+=`, an argument of main() or a "
               "change made after it)") if missing else None
    if missing is None:
        try:
            code = compile(ast.fix_missing_locations(ast.Expression(body=expression)),
                           "hw3/model_parallel.py", "eval")
            return configured(eval(code, vars(module)), node, module)
        except stop:
            raise
        except (Exception, SystemExit) as error:   # the student's expression: its error
            problem = f"it raised {type(error).__name__}: {error}"
    fallback = role_of(parameter) or next((r for r in map(role_of, hints) if r), None)
    if fallback in ("gpus", "devices"):
        return node.value(fallback, parameter or (hints[0] if hints else None))
    argument = f"`{call.written.get(key, '?')}`" + (f" (parameter {parameter})" if parameter
                                                    else "")
    raise CannotReplay(f"its argument {argument} could not be worked out: {problem}")


def replay(call: ScriptCall, signature: inspect.Signature, module, node: Node, given: tuple,
           stop: tuple = ()):
    """The bound arguments of the script's own call at the probe's configuration."""
    if call.starred:
        raise CannotReplay("it passes *args or **kwargs")
    try:
        bound = signature.bind(*range(len(call.args)), **{k: k for k in call.keywords})
    except TypeError as error:
        raise CannotReplay(f"its arguments do not fit the signature ({error})") from None

    def value(key, parameter):
        return _replayed_value(call, key, parameter, module, node, given, stop)

    for name, placed in list(bound.arguments.items()):
        kind = signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            bound.arguments[name] = tuple(value(k, None) for k in placed)
        elif kind is inspect.Parameter.VAR_KEYWORD:
            bound.arguments[name] = {k: value(k, k) for k in placed}
        else:
            bound.arguments[name] = value(placed, name)
    return bound


def construct(module, dim: int, depth: int, calls: list | None = None, *,
              source: str | None = None, gpus: int | None = None, notes: list | None = None,
              stop: tuple = (), recorded: str | None = None, trained: str | None = None):
    """Build the student's model for `dim` and `depth` on a node of `gpus` GPUs (None: as
    torch.cuda.device_count() says): as the script's own main() builds it (`source`, the
    script's text), else by the constructor's signature: by keyword, positionally, or
    (`__init__(self)`) from the module's constants DIM and DEPTH, which are set first in every
    case, so a constructor that reads them sees the configuration too. The signature is matched
    with `inspect` before the call: a TypeError raised inside the student's __init__ is
    theirs, not a wrong guess. The call made is appended to `calls`
    (`LargeLinearModelMP(input_size=16, num_layers=20)`), for the feedback to name; a model
    class of another name than the handout's is appended to `notes`. `stop`: the probe's own
    exceptions (its time limit), raised through whatever the script's call raised.
    `recorded`: what the script's own runs passed the constructor (hw3_recorded_call.py, JSON),
    used where the script's call cannot be replayed from its text. `trained`: the class the
    script's own runs trained, where main() builds the handout's class and another."""
    cls, renamed = model_class(module, source, trained)
    if renamed and notes is not None:
        notes.append(renamed)
    given = _IMPORTED_CONSTANTS.setdefault(module, (vars(module).get("DIM"),
                                                    vars(module).get("DEPTH")))
    module.DIM, module.DEPTH = dim, depth
    node = Node(dim, depth, gpus)
    try:
        signature = inspect.signature(cls)
    except (TypeError, ValueError):
        return _call(cls, (), {}, calls)
    parameters = [p for p in signature.parameters.values()
                  if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    named = {p.name.lower(): p.name for p in parameters}
    dim_name = next((named[n] for n in DIM_NAMES if n in named), None)
    depth_name = next((named[n] for n in DEPTH_NAMES if n in named), None)
    dim_name, depth_name = (dim_name or _defaulted_to(parameters, given, 0, depth_name),
                            depth_name or _defaulted_to(parameters, given, 1, dim_name))
    keywords = {name: value for name, value in ((dim_name, dim), (depth_name, depth)) if name}

    script_call = model_call(source, cls.__name__) if source else None
    why_not = None
    if script_call is not None:
        try:
            bound = replay(script_call, signature, module, node, given, stop)
        except CannotReplay as error:
            why_not = (f"your script builds it as `{script_call.text}` (line {script_call.line}, "
                       f"in {script_call.where}), which the grader could not make: {error}")
        else:
            # What the call leaves to a default of the module's DIM or DEPTH is the probe's.
            for name, value in keywords.items():
                if name not in bound.arguments and signature.parameters[name].kind in (
                        inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY):
                    bound.arguments[name] = value
            return _call(cls, bound.args, bound.kwargs, calls, signature, given)
    if recorded is not None:
        try:
            args, kwargs = recorded_call(recorded, cls.__name__, script_call.line if script_call
                                         else None, signature, module, node, role_of)
        except stop:
            raise
        except NotRecorded as error:
            why_recorded = str(error)
        except Exception as error:   # a config class of the student's that refused its fields
            why_recorded = f"rebuilding its arguments raised {type(error).__name__}: {error}"
        else:
            made = _call(cls, args, kwargs, calls, signature, given)
            if calls:
                calls[-1] += "; the arguments your script's own run passed, at this configuration"
            return made
        why_not = (why_not + "; nor with the arguments your script's own run passed: "
                   if why_not else "the arguments your script's own run passed could not be "
                   "used: ") + why_recorded

    # Required parameters named as a GPU count or a list of devices: the node's.
    for p in parameters:
        if p.default is p.empty and p.name not in keywords and role_of(p.name) in ("gpus",
                                                                                  "devices"):
            keywords[p.name] = node.value(role_of(p.name), p.name)
    for args, kwargs in (((), keywords), ((), {}), ((dim, depth), {})):
        try:
            signature.bind(*args, **kwargs)
        except TypeError:
            continue
        return _call(cls, args, kwargs, calls, signature, given)
    ways = SIGNATURES.format(model=cls.__name__)
    tried = (f"the grader tries {ways}: none of these fits"
             if why_not else f"the grader builds it as {ways}"
             + ("" if source is None else f" (no call of {cls.__name__} found in your script)"))
    raise CannotBuild(f"{class_file(cls, module)}: {cls.__name__}{signature} cannot be built: "
                      + (f"{why_not}. Besides that call, " if why_not else "") + tried)
