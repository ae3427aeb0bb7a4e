"""What the trace's observer of forward passes costs per pass, and the share of it that reading
the model's placement (grader/vgpu/observe.py `placement`) takes: a model of DEPTH layers
spread over 4 virtual GPUs, PASSES forward passes (with gradients, as a training batch's),
run untraced, traced as every graded run is, and traced with the end-of-pass placement read
left out (patched away in the child: the most that reading it less often could save).

    python benchmarks/observe_overhead.py [--runs 5] [--passes 200] [--depth 16] [--dim 64]

Each run is a fresh `pdl-grade run --virtual` process; the three kinds of run alternate, so
drifting load on a shared machine hits all alike. Times are the process's CPU time (steadier
than the wall clock where other work shares the machine). `placement` is also timed alone on
the same model on the node, per call: a traced pass reads it where the pass begins (for the
`placement` record) and again where it ends (`moved_layers`).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEPTH, DIM, BATCH_SIZE, GPUS, PASSES = 16, 64, 32, 4, 200

CHILD = textwrap.dedent('''
    import sys, time, torch, torch.nn as nn
    depth, dim, batch, gpus, passes, skip_end = (int(a) for a in sys.argv[1:7])
    if skip_end:   # the end-of-pass read left out: what skipping it could save at most
        from grader.vgpu.observe import Observer
        Observer._moved_in_pass = lambda self, module: False
    torch.manual_seed(0)

    class Spread(nn.Module):
        def __init__(self):
            super().__init__()
            self.devices = [f"cuda:{i * gpus // depth}" for i in range(depth)]
            self.layers = nn.ModuleList(nn.Linear(dim, dim).to(d) for d in self.devices)

        def forward(self, h):
            for layer, device in zip(self.layers, self.devices):
                h = torch.relu(layer(h.to(device)))
            return h

    model = Spread()
    x = torch.randn(batch, dim, device="cuda:0")
    for _ in range(5):
        model(x)
    used = time.process_time()
    for _ in range(passes):
        model(x)
    per_pass = (time.process_time() - used) / passes
    from grader.vgpu.observe import placement
    used = time.process_time()
    for _ in range(passes):
        placement(model)
    print(per_pass, (time.process_time() - used) / passes)
''')


def run(command: list[str]) -> str:
    """The last line the command printed."""
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=True, env=env)
    return done.stdout.strip().splitlines()[-1]


def per_pass(runs: int, child: Path, depth: int, dim: int, passes: int) -> dict:
    """Median CPU seconds per forward pass: untraced, traced, and traced without the
    end-of-pass placement read; and per placement() read of the model on the node."""
    args = [str(depth), str(dim), str(BATCH_SIZE), str(GPUS), str(passes)]
    node = [sys.executable, "-m", "grader", "run", "--gpus", str(GPUS), "--virtual"]
    traced = [*node, "--trace", str(child.parent / "trace.jsonl")]
    kinds = {"untraced": [*node, str(child), *args, "0"],
             "traced": [*traced, str(child), *args, "0"],
             "traced_no_end_read": [*traced, str(child), *args, "1"]}
    times: dict[str, list[float]] = {kind: [] for kind in [*kinds, "placement"]}
    for _ in range(runs):
        for kind, command in kinds.items():
            pass_s, placement_s = (float(t) for t in run(command).split())
            times[kind].append(pass_s)
            times["placement"].append(placement_s)
    return {kind: statistics.median(found) for kind, found in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--passes", type=int, default=PASSES)
    parser.add_argument("--depth", type=int, default=DEPTH)
    parser.add_argument("--dim", type=int, default=DIM)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        child = Path(tmp) / "child.py"
        child.write_text(CHILD)
        times = per_pass(options.runs, child, options.depth, options.dim, options.passes)
    one_read = times["placement"]
    cost = times["traced"] - times["untraced"]
    print(f"{options.passes} forward passes, DEPTH={options.depth} DIM={options.dim} batch "
          f"{BATCH_SIZE} on {GPUS} virtual GPUs, CPU time per pass (median of {options.runs}): "
          f"untraced {times['untraced'] * 1e3:.3f} ms, traced {times['traced'] * 1e3:.3f} ms "
          f"(the trace +{cost * 1e3:.3f} ms), traced without the end-of-pass placement read "
          f"{times['traced_no_end_read'] * 1e3:.3f} ms; one placement() read alone "
          f"{one_read * 1e3:.3f} ms = {one_read / times['traced']:.1%} of a traced pass")


if __name__ == "__main__":
    main()
