"""HW3 probe: runs *inside* the sandboxed child, on the node, next to the student's code.

    python -m grader.harness.hw3_launch MODEL_FILE OUT_JSONL PLAN_JSON

Imports the student's `model_parallel.py` (once per node size, as a run on that node would) and
measures every configuration of the plan (layouts over node sizes and depths, transfers in one
forward pass, step times, memory), writing one sealed JSON line per configuration as soon as it
is done, so a later crash or hang loses nothing already measured. The scoring process only
reads these lines. The plan may also carry the course's base code (the template's script, as
text): Task 1 asks what *that* code does, so it is measured too, before any student code runs.

What the student's code could reach is kept out of its way: this module is loaded by the
launcher under no importable name and is in no `sys.modules` entry (`__main__` is the
launcher); the sealer of its records is taken before the model is imported and lives only in
the closure of `emit`; what it reads from the model goes through torch's own functions taken
before the model is imported (never the model's overridable methods), its hooks refuse calls
that do not come from torch, and before each record it checks that torch, builtins, the
runtime and this module are unreplaced (grader/vgpu/guard.py). Each layout's weights, input
and output are saved (tensors only) so that the grader can recompute the output outside
this process (grader/harness/hw3_recompute.py).
"""
from __future__ import annotations

import copy
import gc
import hashlib
import inspect
import io
import json
import os
import signal
import statistics
import sys
import time
import traceback
import types

from grader.harness.hw3_build import (MODEL_CLASS, SCRIPT, TRAINED_PART, class_file,
                                      classes_built_beside, construct)
from grader.harness.hw3_import import StudentImports
from grader.harness.hw3_recorded_call import PART as RECORDED_PART
from grader.harness.hw3_recompute import equals_any

CONFIG_TIME_LIMIT_S = 30



# Task 5's counters as the template names them (self.to_calls, self.transfers): reset before
# one forward pass and read after it, as the template's main() does, so the check can tell
# counting code from a count printed without it.
_COUNTERS = ("to_calls", "transfers")


def _reset_counters(model) -> bool:
    """Whether the model has the template's counters (now set to 0)."""
    try:
        if not all(isinstance(getattr(model, name, None), int) for name in _COUNTERS):
            return False
        for name in _COUNTERS:
            setattr(model, name, 0)
        return True
    except Exception:   # a property of the student's own that refuses: no counters to read
        return False


def _counters(model) -> list[int] | None:
    try:
        values = [getattr(model, name) for name in _COUNTERS]
    except Exception:
        return None
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return [int(v) for v in values]
    return None

class ConfigTimeout(Exception):
    pass


class ForwardSkipped(Exception):
    pass


def _on_alarm(signum, frame):
    raise ConfigTimeout(f"this configuration took longer than {CONFIG_TIME_LIMIT_S} s")


def one_device(device) -> str:
    """A layer's device; for a layer split over several (a bug the checks report), its first."""
    return device if isinstance(device, str) else device[0]


def student_site(error: BaseException, model_file: str) -> str | None:
    frames = [f for f in traceback.extract_tb(error.__traceback__)
              if os.path.abspath(f.filename) == os.path.abspath(model_file)]
    if not frames:
        return None
    frame = frames[-1]
    return f"{os.path.basename(model_file)}:{frame.lineno} ({frame.line or ''})".strip()


def devices_while_running(log: list, n_layers: int) -> list | None:
    """Each layer's device when forward() first ran it (the layer records of a logged
    forward), or None where some layer never ran or its device was not read."""
    ran = {}
    for entry in log:
        if entry.get("kind") == "layer" and entry.get("device") is not None:
            ran.setdefault(entry["index"], entry["device"])
    if len(ran) != n_layers:
        return None
    return [ran[i] for i in range(n_layers)]


def describe_error(error: BaseException, model_file: str) -> dict:
    return {"type": type(error).__name__, "message": str(error).strip()[:1500],
            "site": student_site(error, model_file)}


class TorchReadings:
    """torch's own ways of reading a model, taken before the student's module is imported:
    a model or layer class may override `parameters`, `register_forward_pre_hook` or
    `__call__`, and a Tensor class its `device`; these are the base functions, called
    unbound, so what they report is what torch has."""

    def __init__(self, torch):
        self.Module = torch.nn.Module
        # torch's own kinds only (a class of the student's could answer `device` itself); a
        # lazy module's (nn.LazyLinear) before its first pass is one (adv43: 2 of 15).
        self.tensor_types = (torch.Tensor, torch.nn.Parameter,
                             torch.nn.parameter.UninitializedParameter,
                             torch.nn.parameter.UninitializedBuffer)
        self.parameters = torch.nn.Module.parameters
        self.children = lambda module: list(object.__getattribute__(module, "_modules").values())
        self.state_dict = torch.nn.Module.state_dict
        self.add_pre_hook = torch.nn.Module.register_forward_pre_hook
        self.device_get = inspect.getattr_static(torch.Tensor, "device").__get__
        # The code that calls a module's forward pre-hooks (torch.nn.Module._call_impl and
        # the functions nested in it): a hook called from anywhere else is a forged call.
        codes, pending = set(), [torch.nn.Module._call_impl.__code__]
        while pending:
            code = pending.pop()
            codes.add(code)
            pending += [c for c in code.co_consts if inspect.iscode(c)]
        self.hook_callers = frozenset(codes)
        # torch's layer classes whose forward is arithmetic only, with that forward as torch
        # has it: the host's composition of a layout's layers applies them (hw3_recompute
        # rebuilds the same classes outside the run).
        from grader.harness.hw3_recompute import REBUILDABLE
        self.plain_forward = {layer: layer.forward for layer in
                              (getattr(torch.nn, name, None) for name in REBUILDABLE)
                              if isinstance(layer, type)}

    def device(self, tensor) -> str:
        if type(tensor) not in self.tensor_types:
            raise TypeError(f"a layer's parameter is a {type(tensor).__name__}, not a torch "
                            "tensor: keep the layers' weights as nn.Parameter")
        return str(self.device_get(tensor, type(tensor)))


class Probe:
    def __init__(self, model_file: str, emit, recorded: str | None = None,
                 trained: str | None = None):
        import torch
        self.torch = torch
        self.model_file = model_file
        self._emit = emit
        self.read = TorchReadings(torch)
        self.hung: dict | None = None
        from grader.vgpu import active
        from grader.vgpu.trace import Trace, get_trace
        self.activation = active()
        self.trace = get_trace()
        self.trace_emit_code = Trace.emit.__code__
        self.real_device_count = torch.cuda.device_count
        self.weights_dir = None
        self.node_size: int | None = None
        self.imports = StudentImports(model_file, ConfigTimeout)
        self.built_as: str | None = None   # the constructor call of the last build
        self.model_class: str | None = None   # the model's class, where not LargeLinearModelMP
        self.model_source: str | None = None  # the file defining it, where not the script
        # Whether the script also has the handout's class, which its main() does not build
        # (kept for Task 1, adv51 F1): the notes say which class was graded, and why.
        self.handout_class_kept = False
        # What the script's own runs passed the constructor (JSON text: read afresh per build).
        self.recorded = recorded
        # The class the script's own runs trained, where main() builds the handout's and
        # another (`built_beside`, said in the records for the checks to read the runs).
        self.trained = trained
        self.built_beside: list[str] | None = None
        self.handout_built = False   # main() builds the handout's class by name

    def module(self, dim: int, depth: int):
        """The student's module as a run on the current node imports it (hw3_import.py):
        imported on first use (the base code is measured before any student code runs), and
        again when the node changes size, so a module-level `torch.cuda.device_count()` sees
        this node. An import that fails is that configuration's error."""
        try:
            return self.imports.get(self.node_size, dim, depth)
        except BaseException as error:
            if isinstance(error, KeyboardInterrupt):
                raise
            error.described = dict(describe_error(error, self.model_file), during="import")
            raise

    def emit(self, record: dict) -> None:
        self._emit(record)

    # -- the node's size --------------------------------------------------------------------
    def use_gpus(self, n: int) -> bool:
        torch = self.torch
        if self.activation is not None and self.activation.virtual:
            self.activation.resize(n)
            self.node_size = n
            return True
        available = self.real_device_count()
        if n > available:
            return False
        torch.cuda.device_count = lambda: n  # the model may use only the first n GPUs
        self.node_size = n
        return True

    # -- building and running the student's model ---------------------------------------------
    def build(self, dim: int, depth: int, seed: int = 0, module=None, source=None):
        """The model, built as the student's script builds it (hw3_build.py) on this node."""
        self.torch.manual_seed(seed)
        calls: list[str] = []
        renamed: list[str] = []
        students = module is None   # not the course's base code
        if students:
            module, source = self.module(dim, depth), self.imports.source
            if self.built_beside is None:
                self.built_beside, self.handout_built = classes_built_beside(module, source)
        try:
            model = construct(module, dim, depth, calls, source=source, gpus=self.node_size,
                              notes=renamed, stop=(ConfigTimeout,),
                              recorded=self.recorded if students else None,
                              trained=self.trained if students else None)
        finally:
            self.built_as = calls[-1] if calls else None
            self.model_class = renamed[-1] if renamed else self.model_class
            self.handout_class_kept = self.handout_class_kept or bool(renamed) and isinstance(
                getattr(module, MODEL_CLASS, None), type)
        if students:
            # The feedback's "where to look" names the file the class is in (a helper module
            # the script imports it from has its __init__ and forward).
            source_file = class_file(type(model), module)
            self.model_source = source_file if source_file != SCRIPT else None
        return model

    def modules_of(self, model) -> list:
        """What the model's forward applies in order: `self.layers` as the base code keeps it
        (layers, or a stage per GPU; in a list, an nn.Sequential or an nn.ModuleDict); a model
        that keeps its layers under another name (`self.stages` of nn.Sequential, `self.blocks`)
        its layers with weights, in the order they were made (the handout never names the
        attribute)."""
        modules = getattr(model, "layers", None)
        if modules is None:
            # A layer registered twice (a list of the layers and stages reusing them) is one.
            modules = list({id(m): m for m in self.own_weights(model)}.values())
            if not modules:
                raise AttributeError(f"{type(model).__name__} holds no layer with weights (nn.Linear) "
                                     "that torch can see: keep the layers in an nn.ModuleList "
                                     "or nn.Sequential, as the base code's self.layers")
            return modules
        if isinstance(modules, self.torch.nn.ModuleDict):
            modules = self.read.children(modules)   # its values, in order (iterating: the keys)
        elif isinstance(modules, dict):
            modules = modules.values()
        modules = list(modules)
        for index, module in enumerate(modules):
            if not isinstance(module, self.read.Module):
                raise TypeError(f"self.layers[{index}] is a {type(module).__name__}, not an "
                                "nn.Module: keep the layers in an nn.ModuleList")
        return modules

    def own_weights(self, root) -> list:
        """The modules under `root` (itself included) that hold weights of their own, in the
        order they were registered: a stage nn.Sequential(Linear, ReLU, Linear, ReLU) is its
        two Linear layers."""
        found, pending, expanded = [], [root], set()
        while pending:
            module = pending.pop(0)
            if next(iter(self.read.parameters(module, recurse=False)), None) is not None:
                found.append(module)   # a layer used twice is found twice (distinct_layers)
            if id(module) not in expanded:
                expanded.add(id(module))
                pending[:0] = [m for m in self.read.children(module) if isinstance(m, self.read.Module)]
        return found

    def layers_of(self, model) -> list:
        """The layers with weights, in order: an activation kept in the list (nn.ReLU()) is
        not a layer of its own, and a stage per GPU (nn.Sequential of Linear and ReLU) is its
        Linear layers, so DEPTH layers are DEPTH however they are grouped."""
        return [layer for module in self.modules_of(model) for layer in self.own_weights(module)]

    def layer_devices(self, model) -> list:
        found = []
        for layer in self.layers_of(model):
            devices = sorted({self.read.device(p) for p in self.read.parameters(layer)})
            found.append(devices[0] if len(devices) == 1 else devices)
        return found

    def logged_forward(self, model, x, grad: bool = False):
        """Run forward, logging which layer runs on which device and every `.to()` between;
        under no_grad, or with gradients on where `grad` (as a training step calls it).

        A forward pass that hung once would hang again: later ones are not attempted (the
        layouts, built in __init__, are still measured)."""
        if self.hung is not None:
            skipped = ForwardSkipped(self.hung["message"])
            skipped.described = dict(self.hung, message="not run: an earlier forward pass "
                                     "hung (" + self.hung["message"] + ")")
            raise skipped
        try:
            return self._logged_forward(model, x, grad)
        except ConfigTimeout as error:
            self.hung = describe_error(error, self.model_file)
            error.described = self.hung
            raise

    def _logged_forward(self, model, x, grad: bool):
        log = []
        handles = []
        read, getframe = self.read, sys._getframe
        for i, layer in enumerate(self.layers_of(model)):
            def hook(module, args, index=i):
                if getframe(1).f_code not in read.hook_callers:
                    log.append({"kind": "forged", "what": "a layer hook called by the "
                                "submission, not by torch"})
                    return
                first = args[0] if args else None
                weight = next(iter(read.parameters(module, recurse=False)), None)
                log.append({"kind": "layer", "index": index,
                            "input_device": read.device(first)
                            if type(first) in read.tensor_types else None,
                            "device": read.device(weight) if weight is not None else None})
            handles.append(read.add_pre_hook(layer, hook))

        emit_code = self.trace_emit_code

        def listen(record):
            if getframe(1).f_code is not emit_code:
                log.append({"kind": "forged", "what": "a transfer reported by the submission, "
                            "not by the grader's trace"})
                return
            if record["event"] in ("to", "transfer"):
                log.append({"kind": record["event"], "src": record.get("src"),
                            "dst": record.get("dst"), "copied": record.get("copied", True),
                            "site": record.get("site")})

        self.trace.listeners.append(listen)
        try:
            with self.torch.set_grad_enabled(grad):
                out = model(x)
        finally:
            self.trace.listeners.remove(listen)
            for handle in handles:
                handle.remove()
        return out, log

    def _single_output(self, dim, depth, batch):
        torch = self.torch
        model = self.build(dim, depth)
        first = self.layer_devices(model)[0]
        x = torch.randn(batch, dim, generator=torch.Generator().manual_seed(1))
        out, _ = self.logged_forward(model, x.to(one_device(first)))
        return out.detach().cpu()

    def guarded(self, record: dict, work, emit: bool = True) -> None:
        signal.alarm(CONFIG_TIME_LIMIT_S)
        self.built_as = None
        try:
            record.update(work())
        except BaseException as error:  # the student's code may raise anything
            if isinstance(error, KeyboardInterrupt):
                raise
            record["error"] = getattr(error, "described", None) or describe_error(
                error, self.model_file)
        finally:
            signal.alarm(0)
        if self.built_as is not None:
            # A width or depth the constructor did not take shows as a wrong layer count or
            # a shape error; the feedback names the call, which the student can compare.
            record["built_as"] = self.built_as
        if self.model_class is not None:
            record["model_class"] = self.model_class   # a note for the student (no points)
            if self.handout_class_kept:
                record["handout_class_kept"] = True
        if self.model_source is not None:
            record["model_file"] = self.model_source   # where the feedback says to look
        if self.built_beside:
            record["built_beside"] = list(self.built_beside)
            record["handout_built"] = self.handout_built
        if emit:
            self.emit(record)

    # -- the plan's parts ---------------------------------------------------------------------
    def layouts(self, gpus: list[int], depths: list[int], dim: int, batch: int) -> None:
        single = {}
        if self.use_gpus(1):
            for depth in depths:
                # The same weights on one GPU: what every layout's output must equal.
                found = {}
                self.guarded(found, lambda: {"out": self._single_output(dim, depth, batch)},
                             emit=False)
                single[depth] = found.get("out")
        for n in gpus:
            if not self.use_gpus(n):
                for depth in depths:
                    self.emit({"kind": "layout", "gpus": n, "depth": depth,
                               "skipped": f"needs {n} GPUs"})
                continue
            for depth in depths:
                self.guarded({"kind": "layout", "gpus": n, "depth": depth},
                             lambda: self._layout(n, depth, dim, batch, single.get(depth)))

    def _layout(self, n, depth, dim, batch, reference_out):
        torch = self.torch
        model = self.build(dim, depth)
        layers = self.layers_of(model)
        result = {"devices": self.layer_devices(model), "n_layers": len(layers),
                  "distinct_layers": len({id(layer) for layer in layers})}
        x = torch.randn(batch, dim, generator=torch.Generator().manual_seed(1))
        first = result["devices"][0] if result["devices"] else "cpu"
        x = x.to(one_device(first))
        # Called twice: as the base code's main() first calls it, then with gradients on, as
        # a training step does. A forward() keyed on its call count or on
        # torch.is_grad_enabled() (every layer onto cuda:0 from the second call, or only while
        # it trains) shows the layout it trains with on the second call.
        try:
            first_out, first_log = self.logged_forward(model, x)
            out, log = self.logged_forward(model, x, grad=True)
        except BaseException as error:
            result["forward_error"] = getattr(error, "described", None) or describe_error(
                error, self.model_file)
            return result
        result["log"], result["log_first_call"] = log, first_log
        result["output_device"] = str(out.device)
        first_ran = devices_while_running(first_log, len(layers))
        ran = devices_while_running(log, len(layers)) or first_ran
        if ran is not None and ran != result["devices"]:
            # The layout that computed is the one the node runs: a forward() that moves its
            # layers (back onto cuda:0, or onto their GPUs only when first called) is read by
            # where each layer was when it ran, not where __init__ left it.
            result["devices_built"], result["devices"] = result["devices"], ran
        if first_ran is not None and first_ran != ran:
            result["devices_first_call"] = first_ran   # the later call's layout is judged
        # What the same weights give on one device: the layers applied in order on the host
        # (bare, or with the course's ReLU after each, as a forward that applies the activation
        # itself does), or, for a forward with work of its own, the model built on 1 GPU.
        modules = self.modules_of(model)
        composed = [self._layers_in_order_on_host(modules, x, relu) for relu in (False, True)]
        baselines = composed + ([reference_out] if reference_out is not None else [])
        # Both calls' outputs must equal one GPU's: the layout judged is the second call's.
        outputs = [out.detach().cpu(), first_out.detach().cpu()]
        differences = [max(float((got - b).abs().max()) for got in outputs)
                       for b in baselines if all(b.shape == got.shape for got in outputs)]
        result["matches_single_gpu"] = all(equals_any(got, baselines, torch) for got in outputs)
        result["matches_layers_in_order"] = all(equals_any(got, composed, torch)
                                                for got in outputs)
        result["max_difference"] = min(differences) if differences else None
        result["recompute"] = self.keep_for_recompute(f"{n}x{depth}", modules, x, outputs,
                                                      reference_out)
        return result

    # -- what the grader recomputes outside this process -----------------------------------
    def keep_for_recompute(self, name: str, layers, x, outputs, single) -> dict:
        """Save the layers' weights, the input and the outputs of the forward's calls (tensors
        only; the layout judged is the first output's) for grader/harness/hw3_recompute.py;
        returns what the record says about them."""
        from grader.harness.hw3_recompute import OTHER_CALL, describe_layers
        torch = self.torch
        structure, custom = describe_layers(layers, torch)
        tensors = {"input": x.detach().cpu().clone(), "output": outputs[0].clone()}
        tensors.update({OTHER_CALL.format(i): got.clone()
                        for i, got in enumerate(outputs[1:], 1)})
        if single is not None:
            tensors["single"] = single.detach().cpu().clone()
        for index, layer in enumerate(layers):
            for key, value in self.read.state_dict(layer).items():
                tensors[f"layer{index}.{key}"] = value.detach().cpu().clone()
        buffer = io.BytesIO()
        torch.save(tensors, buffer)
        data = buffer.getvalue()
        if self.weights_dir is None:
            return {"error": "no folder for the weights"}
        path = os.path.join(self.weights_dir, name + ".pt")
        _write_new(path, data)
        return {"file": os.path.basename(path), "sha256": hashlib.sha256(data).hexdigest(),
                "layers": structure, "custom": custom}

    def _layers_in_order_on_host(self, modules, x, relu: bool):
        with self.torch.no_grad():
            h = x.cpu()
            for module in modules:
                h = self._host_call(copy.deepcopy(module).cpu(), h)
                if relu:
                    h = self.torch.relu(h)  # idempotent: a ReLU kept in the list is no harm
        return h

    def _host_call(self, module, h):
        """A torch layer without hooks of its own, applied by torch's forward of its class:
        called, the runtime's hooks trace it as a pass of a model of its own (about half the
        layouts part's CPU: two host compositions per layout), and a hook the student put on
        every module would run for the grader's arithmetic."""
        forward = self.read.plain_forward.get(type(module))
        if forward is not None and not module._forward_hooks and not module._forward_pre_hooks:
            return forward(module, h)
        return module(h)

    def transfers(self, gpus: list[int], depth: int, dim: int, batch: int) -> None:
        for n in gpus:
            if not self.use_gpus(n):
                self.emit({"kind": "transfers", "gpus": n, "depth": depth,
                           "skipped": f"needs {n} GPUs"})
                continue
            self.guarded({"kind": "transfers", "gpus": n, "depth": depth},
                         lambda: self._transfers(depth, dim, batch))

    def _transfers(self, depth, dim, batch):
        torch = self.torch
        model = self.build(dim, depth)
        devices = self.layer_devices(model)
        x = torch.randn(batch, dim)
        # As the base code's main() gives it: the input already where the first layer is.
        first = one_device(devices[0]) if devices else "cpu"
        # Counted on forward()'s second call, with gradients on, as Task 3's layout is read: a
        # forward keyed on its call count or on torch.is_grad_enabled() counts what it trains
        # with (its first call had shown the spread layout's transfers).
        _, first_log = self.logged_forward(model, x.to(first))
        counting = _reset_counters(model)
        _, log = self.logged_forward(model, x.to(first), grad=True)
        # Where the layers ran (a forward that places its layers when called: not __init__'s).
        devices = devices_while_running(log, len(devices)) or devices
        result = {"devices": devices, "log": log, "log_first_call": first_log,
                  "counters": _counters(model) if counting else None}
        # A main() of the student's own may start from the host (a forward that moves only
        # when needed then makes one call more): measured too, where the forward takes it.
        try:
            _, result["log_from_host"] = self.logged_forward(model, x, grad=True)
        except ConfigTimeout:
            raise
        except Exception:
            pass
        return result

    def base_code(self, source: str, gpus: int, depth: int, dim: int, batch: int) -> None:
        """What the course's base code (the template's script, given as text) does with
        `depth` layers on `gpus` GPUs: where its layers are and where its forward moves the
        activation. Task 1 asks about this code, whatever the student changed since."""
        record = {"kind": "base_code", "gpus": gpus, "depth": depth}
        if not self.use_gpus(gpus):
            self.emit(dict(record, skipped=f"needs {gpus} GPUs"))
            return
        self.guarded(record, lambda: self._base_code(source, depth, dim, batch))

    def _base_code(self, source, depth, dim, batch):
        module = types.ModuleType("hw3_base_code")
        exec(compile(source, "hw3_base_code.py", "exec"), module.__dict__)
        model = self.build(dim, depth, module=module, source=source)
        devices = self.layer_devices(model)
        x = self.torch.randn(batch, dim).to(one_device(devices[0]))
        _, log = self.logged_forward(model, x)
        return {"devices": devices, "log": log}

    # -- step times: the simulated clock on virtual GPUs, the wall clock on real ones ----------
    def clock(self):
        """The node's simulated clock (virtual GPUs), or None (real GPUs: wall-clock time)."""
        if self.activation is not None and self.activation.virtual:
            return self.activation.node.clock
        return None

    def timing(self, label: str, configs: list, dim: int, batch: int, warmup: int,
               rounds: int, simulated: tuple[int, int] = (1, 3)) -> None:
        """Step times of several (GPUs, DEPTH) configurations. On virtual GPUs they come from
        the simulated clock: the same every round and on any machine, so `simulated` (warm-up
        steps, rounds: one and three) say all there is. On real GPUs they are measured in
        interleaved rounds (a burst of load then hits every configuration alike)."""
        configs = [tuple(c) for c in configs]
        most = max(g for g, _ in configs)
        if not self.use_gpus(most):
            self.emit({"kind": label, "skipped": f"needs {most} GPUs"})
            return
        on_simulated_clock = self.clock() is not None
        if on_simulated_clock:
            warmup, rounds = simulated
        self.guarded({"kind": label, "configs": [list(c) for c in configs],
                      "clock": "simulated" if on_simulated_clock else "real"},
                     lambda: self._timing(configs, most, dim, batch, warmup, rounds))

    def _timing(self, configs, most, dim, batch, warmup, rounds):
        # The earlier parts' models are garbage now, but a model in a reference cycle (a hook
        # that keeps it) waits for the collector: collected while a configuration was built,
        # they had made its peaks negative (a TA's audit: -5.65 MiB on 2 GPUs). Collected
        # first; what lives then is frozen, so the collection before each configuration scans
        # only what this part made (a full one takes a good part of a second).
        gc.collect()
        gc.freeze()
        try:
            return self._timed_configs(configs, most, dim, batch, warmup, rounds)
        finally:
            gc.unfreeze()

    def _timed_configs(self, configs, most, dim, batch, warmup, rounds):
        torch = self.torch
        runs, results = {}, {}
        for gpus, depth in configs:
            self.use_gpus(most)
            # What stays on the node beside this configuration: the models of the ones built
            # before it, and nothing the collector could still free.
            gc.collect()
            before = [torch.cuda.memory_allocated(i) for i in range(most)]
            self.use_gpus(gpus)  # the model sees a node of `gpus` GPUs when it is built
            model = self.build(dim, depth)
            devices = self.layer_devices(model)
            x = torch.randn(batch, dim, device=one_device(devices[0]))
            # The target where the model's output is: a forward that hands its output back to
            # cuda:0 (as DataParallel does) trains in the student's script, and a target on
            # the last layer's GPU had made the grader's own loss fail there (Tasks 2 and 4: 0).
            with torch.no_grad():
                output_device = model(x).device
            y = torch.randn(batch, dim, device=output_device)
            runs[gpus, depth] = (model, x, y, torch.optim.SGD(model.parameters(), lr=1e-3))
            self.use_gpus(most)
            # The peak of the measured steps: counted from right before them. Less than the
            # baseline here means something outside this configuration was freed since (the
            # student's code dropped what it held): the baseline falls with it, so a peak is
            # never below zero.
            resting = [torch.cuda.memory_allocated(i) for i in range(most)]
            for i in range(most):
                torch.cuda.reset_peak_memory_stats(i)
            for _ in range(warmup):
                self._step(runs[gpus, depth], most)
            # Where the layers train: read after the warm-up's training steps, as Task 3's
            # layout is read from forward()'s calls (a forward that places its layers when first
            # called, or moves them onto cuda:0 once it trains).
            devices = self.layer_devices(model)
            # This configuration's own footprint: the models built before it stay resident.
            results[f"{gpus}x{depth}"] = {
                "gpus": gpus, "depth": depth, "times_ms": [],
                "peak_memory": [torch.cuda.max_memory_allocated(i) - min(before[i], resting[i])
                                for i in range(gpus)],
                "layers_per_gpu": [devices.count(f"cuda:{i}") for i in range(gpus)]}
        for _ in range(rounds):
            for key in configs:
                results[f"{key[0]}x{key[1]}"]["times_ms"].append(self._step(runs[key], most))
        for found in results.values():
            found["median_ms"] = statistics.median(found["times_ms"])
        return {"results": results}

    def _step(self, run, gpus) -> float:
        """One training step, from idle GPUs to idle GPUs, in ms."""
        torch = self.torch
        model, x, y, optimizer = run
        clock = self.clock()
        # The simulated clock counts whole ns; the wall clock seconds.
        now, per_ms = (clock.host, 1e6) if clock is not None else (time.perf_counter, 1e-3)
        for i in range(gpus):
            torch.cuda.synchronize(i)
        started = now()
        optimizer.zero_grad()
        out = model(x)
        # The target follows an output that training moves (a forward that puts its layers
        # elsewhere once it trains): the step is then timed as the script's own trains.
        loss = torch.nn.functional.mse_loss(out, y.to(out.device))
        loss.backward()
        optimizer.step()
        for i in range(gpus):
            torch.cuda.synchronize(i)
        return (now() - started) / per_ms


def _write_new(path: str, data: bytes) -> None:
    """A new file at `path`, whatever student code put under that name before."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def _own_code(namespace: dict) -> set:
    """Every code object of this module's functions and methods, nested ones included."""
    codes, pending = set(), []
    for value in list(namespace.values()):
        if isinstance(value, type) and value.__module__ == namespace.get("__name__"):
            pending += [v for v in vars(value).values()]
        else:
            pending.append(value)
    pending = [getattr(v, "__code__", None) for v in pending]
    while pending:
        code = pending.pop()
        if code is None or code in codes or not inspect.iscode(code):
            continue
        codes.add(code)
        pending += [c for c in code.co_consts if inspect.iscode(c)]
    return codes


def _sealed_writer(out_path: str, seal, replaced, watched: list):
    """emit(record): one sealed line in OUT_JSONL, saying whether anything the probe relies on
    was replaced since the probe started (`tampered`, read as an integrity problem).

    Only the probe writes records: every frame on the stack when a record is written must be
    the probe's or its launcher's (a student's function reaching `emit`, or a method of the
    probe, is on the stack when it calls it). The probe's own objects (`watched`: the Probe
    and its TorchReadings, with what their attributes held) are compared before each record."""
    handle = open(out_path, "a", encoding="utf-8", buffering=1)
    write = handle.write
    alarm_handler = _on_alarm
    getsignal, SIGALRM, getframe = signal.getsignal, signal.SIGALRM, sys._getframe
    allowed = _own_code(globals())
    frame = getframe(1)
    while frame is not None:           # the launcher and runpy, below run()
        allowed.add(frame.f_code)
        frame = frame.f_back

    def emit(record: dict) -> None:
        frame = getframe(1)
        while frame is not None:
            if frame.f_code not in allowed:
                record = {"kind": "tampering", "what": "a record written from code that is not "
                          f"the probe's ({frame.f_code.co_filename}:{frame.f_lineno})"}
                break
            frame = frame.f_back
        found = replaced()
        if getsignal(SIGALRM) is not alarm_handler:
            found.append("the probe's time limit (its SIGALRM handler)")
        for owner, noted in watched:
            now = vars(owner)
            found += [f"the probe's {type(owner).__name__}.{name}" for name in
                      set(now) | set(noted) if name not in _PROBE_STATE and
                      now.get(name, _on_alarm) is not noted.get(name, _on_alarm)]
        if found:
            record = dict(record, tampered=found)
        write(seal(record) + "\n")
    return emit


# The probe's attributes that change as it measures (the rest is compared before each record;
# built_as words feedback, model_class and model_source name the class graded and its file).
_PROBE_STATE = frozenset({"hung", "node_size", "built_as", "model_class", "model_source",
                          "handout_class_kept", "built_beside",
                          "handout_built"})


def _keep_student_files_off_the_grader_path() -> None:
    # `python -m` put the working folder (the run's scratch, which student code can write) on
    # sys.path: off it. The model's own folder is put first only while the model imports
    # (import_student_module), as when the student runs the script.
    cwd = os.getcwd()
    sys.path[:] = [p for p in sys.path if p not in ("", ".", cwd)]


def run(argv: list[str]) -> int:
    """The probe's process, from the launcher (grader/harness/hw3_launch.py)."""
    model_file, out_path, plan_text = argv
    plan = json.loads(plan_text)
    # As `python hw3/model_parallel.py` sees it: a module-level argparse or sys.argv[1:] of the
    # student's finds no arguments (it found the probe's own and stopped).
    sys.argv = [model_file]
    signal.signal(signal.SIGALRM, _on_alarm)   # before the node: the probe's own handler
    import torch  # noqa: F401  (activates the node: the run's seal key is taken now)
    from grader.harness import hw3_recompute  # noqa: F401  (imported before student code)
    from grader.vgpu import active
    from grader.vgpu.guard import make_check
    from grader.vgpu.trace import get_trace, trust_no_more_code
    activation = active()
    replaced = make_check(activation.patcher if activation is not None else None,
                          extra_owners=[("grader.harness.hw3_probe", globals()),
                                        ("grader.harness.hw3_probe.Probe", Probe),
                                        ("grader.harness.hw3_probe.TorchReadings", TorchReadings)])
    watched: list = []
    emit = _sealed_writer(out_path, get_trace().sealer_for(out_path), replaced, watched)
    # Beside the records, named after them (grader/integrity/names.py: WEIGHTS_FOLDER).
    weights_dir = os.path.splitext(os.path.abspath(out_path))[0] + "-weights"
    os.makedirs(weights_dir, exist_ok=True)
    _keep_student_files_off_the_grader_path()
    trust_no_more_code()      # the student's model is imported next
    recorded = next((json.dumps(part["runs"]) for part in plan
                     if part.get("part") == RECORDED_PART), None)
    trained = next((part.get("name") for part in plan
                    if part.get("part") == TRAINED_PART), None)
    try:
        probe = Probe(model_file, emit, recorded, trained if isinstance(trained, str) else None)
    except BaseException as error:   # the probe could not start (the model imports later)
        emit({"kind": "import_error", "error": describe_error(error, model_file)})
        return 0
    probe.weights_dir = weights_dir
    watched += [(probe, dict(vars(probe))), (probe.read, dict(vars(probe.read)))]
    for index in range(len(plan)):
        part = json.loads(plan_text)[index]   # parsed afresh: nothing can edit what comes next
        kind = part.pop("part")
        if kind not in (RECORDED_PART, TRAINED_PART):   # given to the Probe as it started
            getattr(probe, kind)(**part)
    emit({"kind": "done"})
    return 0
