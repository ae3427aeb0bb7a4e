"""HW3 probe: runs *inside* the sandboxed child, on the node, next to the student's code.

    python hw3_probe.py MODEL_FILE OUT_JSONL PLAN_JSON

Imports the student's `model_parallel.py` once and measures every configuration of the plan
(layouts over node sizes and depths, transfers in one forward pass, step times, memory),
writing one JSON line per configuration as soon as it is done, so a later crash or hang
loses nothing already measured. The scoring process only reads these lines.
"""
from __future__ import annotations

import importlib.util
import json
import os
import signal
import statistics
import sys
import time
import traceback

CONFIG_TIME_LIMIT_S = 30


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


def describe_error(error: BaseException, model_file: str) -> dict:
    return {"type": type(error).__name__, "message": str(error).strip()[:1500],
            "site": student_site(error, model_file)}


class Probe:
    def __init__(self, model_file: str, out_path: str):
        import torch
        self.torch = torch
        self.model_file = model_file
        self.out = open(out_path, "a", encoding="utf-8", buffering=1)
        from grader.integrity.seal import Sealer, key_from_environment
        self.sealer = Sealer(key_from_environment(), out_path)
        self.hung: dict | None = None
        from grader.vgpu import active
        from grader.vgpu.trace import get_trace
        self.activation = active()
        self.trace = get_trace()
        self.real_device_count = torch.cuda.device_count
        spec = importlib.util.spec_from_file_location("model_parallel", model_file)
        self.module = importlib.util.module_from_spec(spec)
        sys.modules["model_parallel"] = self.module
        spec.loader.exec_module(self.module)

    def emit(self, record: dict) -> None:
        self.out.write(self.sealer.line(record) + "\n")

    # -- the node's size --------------------------------------------------------------------
    def use_gpus(self, n: int) -> bool:
        torch = self.torch
        if self.activation is not None and self.activation.virtual:
            self.activation.node.resize(n)
            return True
        available = self.real_device_count()
        if n > available:
            return False
        torch.cuda.device_count = lambda: n  # the model may use only the first n GPUs
        return True

    # -- building and running the student's model ---------------------------------------------
    def build(self, dim: int, depth: int, seed: int = 0):
        self.torch.manual_seed(seed)
        cls = self.module.LargeLinearModelMP
        try:
            return cls(dim=dim, depth=depth)
        except TypeError:
            return cls(dim, depth)

    def layers_of(self, model):
        layers = getattr(model, "layers", None)
        if layers is None:
            raise AttributeError("LargeLinearModelMP keeps no `self.layers`: the template asks "
                                 "for the layers, in order, in `self.layers`")
        return list(layers)

    def layer_devices(self, model) -> list:
        found = []
        for layer in self.layers_of(model):
            devices = sorted({str(p.device) for p in layer.parameters()})
            found.append(devices[0] if len(devices) == 1 else devices)
        return found

    def logged_forward(self, model, x):
        """Run forward, logging which layer runs on which device and every `.to()` between.

        A forward pass that hung once would hang again: later ones are not attempted (the
        layouts, built in __init__, are still measured)."""
        if self.hung is not None:
            skipped = ForwardSkipped(self.hung["message"])
            skipped.described = dict(self.hung, message="not run: an earlier forward pass "
                                     "hung (" + self.hung["message"] + ")")
            raise skipped
        try:
            return self._logged_forward(model, x)
        except ConfigTimeout as error:
            self.hung = describe_error(error, self.model_file)
            error.described = self.hung
            raise

    def _logged_forward(self, model, x):
        log = []
        handles = []
        for i, layer in enumerate(self.layers_of(model)):
            def hook(module, args, index=i):
                first = args[0] if args else None
                log.append({"kind": "layer", "index": index,
                            "input_device": str(first.device) if hasattr(first, "device") else None})
            handles.append(layer.register_forward_pre_hook(hook))

        def listen(record):
            if record["event"] in ("to", "transfer"):
                log.append({"kind": record["event"], "src": record.get("src"),
                            "dst": record.get("dst"), "copied": record.get("copied", True),
                            "site": record.get("site")})

        self.trace.listeners.append(listen)
        try:
            with self.torch.no_grad():
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
        try:
            record.update(work())
        except BaseException as error:  # the student's code may raise anything
            if isinstance(error, KeyboardInterrupt):
                raise
            record["error"] = getattr(error, "described", None) or describe_error(
                error, self.model_file)
        finally:
            signal.alarm(0)
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
        try:
            out, log = self.logged_forward(model, x)
        except BaseException as error:
            result["forward_error"] = getattr(error, "described", None) or describe_error(
                error, self.model_file)
            return result
        result["log"] = log
        result["output_device"] = str(out.device)
        # What the same weights give on one device: the layers applied in order on the host,
        # or (for a forward that adds work of its own between layers) the model built on 1 GPU.
        baselines = [self._layers_in_order_on_host(layers, x)]
        if reference_out is not None:
            baselines.append(reference_out)
        got = out.detach().cpu()
        differences = [float((got - b).abs().max()) for b in baselines if b.shape == got.shape]
        result["matches_single_gpu"] = any(
            torch.allclose(got, b, rtol=1e-4, atol=1e-5) for b in baselines if b.shape == got.shape)
        result["max_difference"] = min(differences) if differences else None
        return result

    def _layers_in_order_on_host(self, layers, x):
        import copy
        with self.torch.no_grad():
            h = x.cpu()
            for layer in layers:
                h = copy.deepcopy(layer).cpu()(h)
        return h

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
        # The input starts on the host, as data from a loader does: its move onto the first
        # GPU is reported apart from the moves between GPUs.
        x = torch.randn(batch, dim)
        try:
            _, log = self.logged_forward(model, x)
            started_on = "cpu"
        except BaseException:
            # A forward that expects its input on the first GPU already, as main() gives it.
            first = one_device(devices[0])
            _, log = self.logged_forward(model, x.to(first))
            started_on = first
        return {"devices": devices, "log": log, "input_started_on": started_on}

    # -- step times: the simulated clock on virtual GPUs, the wall clock on real ones ----------
    def clock(self):
        """The node's simulated clock (virtual GPUs), or None (real GPUs: wall-clock time)."""
        if self.activation is not None and self.activation.virtual:
            return self.activation.node.clock
        return None

    def timing(self, label: str, configs: list, dim: int, batch: int, warmup: int,
               rounds: int) -> None:
        """Step times of several (GPUs, DEPTH) configurations. On virtual GPUs they come from
        the simulated clock: the same every round and on any machine, so one warm-up step and
        three rounds say all there is. On real GPUs they are measured in interleaved rounds (a
        burst of load then hits every configuration alike)."""
        configs = [tuple(c) for c in configs]
        most = max(g for g, _ in configs)
        if not self.use_gpus(most):
            self.emit({"kind": label, "skipped": f"needs {most} GPUs"})
            return
        simulated = self.clock() is not None
        if simulated:
            warmup, rounds = min(warmup, 1), min(rounds, 3)
        self.guarded({"kind": label, "configs": [list(c) for c in configs],
                      "clock": "simulated" if simulated else "real"},
                     lambda: self._timing(configs, most, dim, batch, warmup, rounds))

    def _timing(self, configs, most, dim, batch, warmup, rounds):
        torch = self.torch
        runs, results = {}, {}
        for gpus, depth in configs:
            self.use_gpus(most)
            before = [torch.cuda.memory_allocated(i) for i in range(most)]
            self.use_gpus(gpus)  # the model sees a node of `gpus` GPUs when it is built
            model = self.build(dim, depth)
            devices = self.layer_devices(model)
            first = one_device(devices[0])
            last = one_device(devices[-1])
            x = torch.randn(batch, dim, device=first)
            y = torch.randn(batch, dim, device=last)
            runs[gpus, depth] = (model, x, y, torch.optim.SGD(model.parameters(), lr=1e-3))
            self.use_gpus(most)
            for i in range(most):
                torch.cuda.reset_peak_memory_stats(i)
            for _ in range(warmup):
                self._step(runs[gpus, depth], most)
            # This configuration's own footprint: the models built before it stay resident.
            results[f"{gpus}x{depth}"] = {
                "gpus": gpus, "depth": depth, "times_ms": [],
                "peak_memory": [torch.cuda.max_memory_allocated(i) - before[i]
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
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        for i in range(gpus):
            torch.cuda.synchronize(i)
        return (now() - started) / per_ms


def main(argv: list[str]) -> int:
    model_file, out_path, plan_text = argv
    plan = json.loads(plan_text)
    signal.signal(signal.SIGALRM, _on_alarm)
    try:
        probe = Probe(model_file, out_path)
    except BaseException as error:
        from grader.integrity.seal import Sealer, key_from_environment
        sealer = Sealer(key_from_environment(), out_path)
        with open(out_path, "a", encoding="utf-8") as out:
            out.write(sealer.line({"kind": "import_error",
                                   "error": describe_error(error, model_file)}) + "\n")
        return 0
    for part in plan:
        kind = part.pop("part")
        getattr(probe, kind)(**part)
    probe.emit({"kind": "done"})
    return 0


if __name__ == "__main__":
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.exit(main(sys.argv[1:]))
