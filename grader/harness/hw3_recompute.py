"""HW3's "same output as on one GPU", decided outside the student's process.

Inside the run, the probe saves for every layout it measures the layers' weights, the input,
the model's output and (when it could build it) the 1-GPU model's output: tensors only, with
their SHA-256 in the probe's sealed record (hw3_probe.keep_for_recompute). Here the grader
checks the files are the ones the probe sealed, copies them into a folder of its own, and
starts a child that imports no student code and loads tensors only
(`torch.load(weights_only=True)`), sandboxed like every run. The child rebuilds each layer
from torch's own classes (only layers made of the classes in `REBUILDABLE`; a layer class of
the submission's own cannot be rebuilt, and that is said), applies the layers in order to the
input and compares, with the probe's tolerance, the model's output with that and with the
1-GPU output. Its answer replaces the probe's own `matches_single_gpu`.

    python -I hw3_recompute.py JOBS_DIR      (the child: JOBS_DIR/jobs.json, *.pt)
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

RTOL, ATOL = 1e-4, 1e-5            # equals_any's, inside the run and here
# The outputs of the forward's other calls (the probe calls it twice): each must match too.
OTHER_CALL = "output_call{}"
MAX_FILE_BYTES = 64 * 2**20         # one layout's tensors; HW3's probe saves a few KiB
CHILD_TIMEOUT_S = 120.0
# torch classes rebuilt from their settings and weights: (settings read from the module)
REBUILDABLE = {
    "Linear": ("in_features", "out_features"),
    "ReLU": (), "GELU": ("approximate",), "Tanh": (), "Sigmoid": (), "SiLU": (),
    "Identity": (), "LeakyReLU": ("negative_slope",), "ELU": ("alpha",),
    "LayerNorm": ("normalized_shape", "eps", "elementwise_affine"),
}


def equals_any(got, outputs, torch) -> bool:
    """Whether `got` equals one of `outputs` of its shape and dtype, within the tolerance (the
    probe's comparison inside the run and this module's outside it)."""
    return any(bool(torch.allclose(got, b, rtol=RTOL, atol=ATOL)) for b in outputs
               if b.shape == got.shape and b.dtype == got.dtype)


# -- in the probe: what each layer is ---------------------------------------------------------
def describe_layers(layers, torch) -> tuple[list | None, str | None]:
    """(one description per layer, None) when every layer is made of torch classes this
    module rebuilds, else (None, the first other class's name)."""
    described = []
    for layer in layers:
        found, custom = _describe(layer, torch)
        if custom is not None:
            return None, custom
        described.append(found)
    return described, None


def _describe(module, torch):
    kind = type(module)
    if getattr(module, "_forward_hooks", None) or getattr(module, "_forward_pre_hooks", None):
        return None, f"{kind.__name__} (with hooks of its own)"
    if kind is torch.nn.Sequential:
        children = []
        for child in module:
            found, custom = _describe(child, torch)
            if custom is not None:
                return None, custom
            children.append(found)
        return {"type": "Sequential", "children": children}, None
    name = kind.__name__
    if getattr(torch.nn, name, None) is not kind or name not in REBUILDABLE:
        return None, name
    settings = {attribute: getattr(module, attribute) for attribute in REBUILDABLE[name]}
    if name == "Linear":
        settings["bias"] = module.bias is not None
    if name == "LayerNorm":
        settings["normalized_shape"] = list(settings["normalized_shape"])
        settings["bias"] = getattr(module, "bias", None) is not None
    return {"type": name, "settings": settings}, None


# -- in the trusted child ----------------------------------------------------------------------
def _build(description, torch):
    if description["type"] == "Sequential":
        return torch.nn.Sequential(*[_build(c, torch) for c in description["children"]])
    name, settings = description["type"], dict(description.get("settings") or {})
    if name not in REBUILDABLE:
        raise ValueError(f"not a layer this grader rebuilds: {name}")
    if name == "Linear":
        return torch.nn.Linear(settings["in_features"], settings["out_features"],
                               bias=bool(settings.get("bias", True)))
    if name == "LayerNorm":
        return torch.nn.LayerNorm(settings["normalized_shape"], eps=settings["eps"],
                                  elementwise_affine=settings["elementwise_affine"],
                                  bias=bool(settings.get("bias", True)))
    return getattr(torch.nn, name)(**settings)


def recompute_one(path: Path, layers: list | None, torch) -> dict:
    tensors = torch.load(path, weights_only=True, map_location="cpu")
    if not isinstance(tensors, dict) or not all(isinstance(v, torch.Tensor)
                                                for v in tensors.values()):
        return {"error": "not a file of tensors"}
    outputs = [tensors.get("output")] + [
        tensors[key] for key in sorted(tensors) if key.startswith(OTHER_CALL.format(""))]
    composed = []     # what the layers give applied in order
    if layers is not None:
        built = []
        for index, description in enumerate(layers):
            layer = _build(description, torch)
            prefix = f"layer{index}."
            weights = {k[len(prefix):]: v for k, v in tensors.items() if k.startswith(prefix)}
            layer.load_state_dict(weights, strict=True)
            built.append(layer.to(tensors["input"].dtype))
        # The layers in order, bare or with the course's ReLU after each (a forward that applies
        # the activation itself, as the base code's does; a ReLU in the list is no harm twice).
        for relu in (False, True):
            h = tensors["input"]
            with torch.no_grad():
                for layer in built:
                    h = layer(h)
                    if relu:
                        h = torch.relu(h)
            composed.append(h)
    single = [tensors["single"]] if "single" in tensors else []
    if not composed and not single:
        return {"error": "nothing to compare with"}

    def equal(baselines) -> bool:
        return all(equals_any(got, baselines, torch) for got in outputs)

    differences = [max(float((got - b).abs().max()) for got in outputs) for b in composed + single
                   if all(b.shape == got.shape and b.dtype == got.dtype for got in outputs)]
    # A forward with work of its own (no ReLU after the last layer) matches only its own 1-GPU
    # model; the layers' composition, said apart, tells a forward that skips a layer on every
    # device count (grader/checks/hw3_layout.layers_not_run_once_in_order).
    return {"matches": equal(composed + single),
            "matches_layers": equal(composed) if composed else None,
            "max_difference": min(differences) if differences else None}


def child_main(folder: str) -> int:
    import torch
    torch.set_num_threads(1)
    jobs = json.loads((Path(folder) / "jobs.json").read_text(encoding="utf-8"))
    for job in jobs:
        try:
            answer = recompute_one(Path(folder) / job["file"], job["layers"], torch)
        except Exception as error:   # a malformed file is this layout's problem only
            answer = {"error": f"{type(error).__name__}: {str(error)[:300]}"}
        print(json.dumps({"name": job["name"], **answer}), flush=True)
    return 0


# -- in the grader: check, copy, recompute, replace ---------------------------------------------
def recompute_outputs(records: list[dict], weights_dir: Path, label: str,
                      timeout_s: float = CHILD_TIMEOUT_S) -> tuple[list[str], list[str]]:
    """Replace every layout record's `matches_single_gpu` with the grader's own answer; returns
    (integrity problems, notes)."""
    from grader.records import untrusted_files
    problems, notes, jobs, by_name, custom = [], [], [], {}, set()
    for record in records:
        kept = record.get("recompute")
        if record.get("kind") != "layout":
            continue
        name = f"{record.get('gpus')}x{record.get('depth')}"
        if not isinstance(kept, dict) or "file" not in kept:
            if record.get("matches_single_gpu"):   # a claim nothing outside the run can check
                record["matches_single_gpu"] = False
                notes.append(f"{label}: {name}'s output was not saved for recomputation, so "
                             "it does not count as equal to one GPU's")
            continue
        try:
            data = untrusted_files.read_bytes(weights_dir / os.path.basename(str(kept["file"])),
                                              MAX_FILE_BYTES)
        except (OSError, untrusted_files.NotARegularFile):
            data = None
        if data is None or hashlib.sha256(data).hexdigest() != kept.get("sha256"):
            problems.append(f"{label}: the tensors the probe saved for {name} were changed or "
                            "removed after it saved them")
            record["matches_single_gpu"] = False
            continue
        if kept.get("custom"):
            custom.add(str(kept["custom"]))
        jobs.append({"name": name, "file": f"{len(jobs)}.pt", "layers": kept.get("layers"),
                     "data": data})
        by_name[name] = record
    if custom:
        notes.append(f"{label}: the layers use {', '.join(sorted(custom))}, which the grader "
                     "does not rebuild: each output was compared with the same model's on one "
                     "GPU, outside the run")
    if not jobs:
        return problems, notes
    answers, failure = _run_child(jobs, timeout_s)
    if failure:
        notes.append(f"{label}: the outputs could not be recomputed outside the run "
                     f"({failure}); the probe's own comparison is used")
        return problems, notes
    for name, record in by_name.items():
        answer = answers.get(name) or {"error": "no answer"}
        if answer.get("error"):
            record["matches_single_gpu"] = False
            record["recompute_error"] = answer["error"]
            continue
        claimed = record.get("matches_single_gpu")
        record["matches_single_gpu"] = bool(answer.get("matches"))
        record["matches_layers_in_order"] = answer.get("matches_layers")
        record["max_difference"] = answer.get("max_difference")
        record["recomputed"] = True
        if claimed is True and not answer.get("matches"):
            notes.append(f"{label}: the run said {name}'s output equals one GPU's; recomputed "
                         "outside the run from its weights, it does not")
    return problems, notes


def _bytecode_options() -> list[str]:
    """-I ignores PYTHONPYCACHEPREFIX: the child is told on its command line where the
    grader's compile of torch is (mounted read-only in its sandbox; grader/common/bytecode.py)."""
    from grader.common.bytecode import shared_bytecode
    cache = shared_bytecode()
    return ["-X", f"pycache_prefix={cache}"] if cache is not None else []


def _run_child(jobs: list[dict], timeout_s: float) -> tuple[dict, str | None]:
    from grader.sandbox import SandboxPolicy, run_sandboxed
    folder = Path(tempfile.mkdtemp(prefix="pdl-hw3-recompute-"))
    try:
        for job in jobs:
            (folder / job["file"]).write_bytes(job["data"])
        (folder / "jobs.json").write_text(json.dumps(
            [{k: v for k, v in job.items() if k != "data"} for job in jobs]), encoding="utf-8")
        # The child runs as the sandbox's unprivileged user: it must read what it recomputes
        # (the student's own weights; nothing secret), whatever the grader's umask.
        for path in folder.iterdir():
            path.chmod(0o644)
        folder.chmod(0o755)
        result = run_sandboxed(
            [sys.executable, "-I", *_bytecode_options(), str(Path(__file__).resolve()),
             str(folder)],
            SandboxPolicy(readonly=[folder, Path(__file__).resolve()], timeout_s=timeout_s, memory_bytes=2 * 2**30,
                          max_pids=64, env={"OMP_NUM_THREADS": "1"}))
        if result.timed_out or result.returncode != 0:
            tail = " ".join(result.stderr.strip().splitlines()[-2:])[:300]
            return {}, ("timed out" if result.timed_out else f"exit {result.returncode}: {tail}")
        answers = {}
        for line in result.stdout.splitlines():
            try:
                answer = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(answer, dict) and "name" in answer:
                answers[answer["name"]] = answer
        return answers, None
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    # -I: no PYTHONPATH, no user site, no working folder on sys.path; only the grader's root.
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.exit(child_main(sys.argv[1]))
