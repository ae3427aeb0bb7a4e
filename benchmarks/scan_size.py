"""What the integrity scan costs as a Python file grows: time and peak memory of
scan_submission on generated files of 100 KB, 400 KB and 2 MiB (the per-file limit).

    python benchmarks/scan_size.py [--sizes 100K 400K 2M] [--shapes aliases ordinary data]
                                   [--timeout 300]

Shapes:
- aliases: a red team's file (adv34 F3): one function whose variables alias one another and
  torch (`v5 = T if 5 % 2 else v4`), each put through a loop that sets an attribute on it.
  Every variable can stand for all the ones before it, which made the scan quadratic.
- ordinary: homework-like code, functions and a model class repeated under new names.
- data: a pasted dataset (one list literal of rows of floats).
Each file is scanned in a child process of its own (its peak RSS is the child's maxrss), which
is killed at --timeout.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

_CHILD = """
import json, resource, sys, time
from pathlib import Path
from grader.integrity.scan import scan_submission
started = time.process_time()
findings = scan_submission(Path(sys.argv[1]))
print(json.dumps({"cpu_s": time.process_time() - started,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "findings": len(findings),
                  "held_unread": [f.what for f in findings if f.category == "unreadable"]}))
"""

_ORDINARY = '''
class Net{i}(nn.Module):
    def __init__(self, width={i} % 7 + 8):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 2))

    def forward(self, x):
        h = self.layers(x)
        return h.softmax(dim=-1)


def train_{i}(model, loader, epochs=2, lr=0.01):
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for epoch in range(epochs):
        for step, (x, y) in enumerate(loader):
            x, y = x.to("cuda:0"), y.to("cuda:0")
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        print(f"epoch {{epoch}} loss {{sum(losses) / len(losses):.4f}}")
    return losses
'''


def aliases(count: int) -> str:
    lines = ["import torch", "def g(T):", "    v0 = T"]
    for i in range(1, count):
        lines.append(f"    v{i} = T if {i} % 2 else v{i-1}")
        lines.append(f"    for k{i} in (v{i}, torch.Tensor):\n        k{i}.tag = {i}")
    lines.append("g(torch)")
    return "\n".join(lines) + "\n"


def ordinary(count: int) -> str:
    head = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
    return head + "".join(_ORDINARY.format(i=i) for i in range(count))


def data(count: int) -> str:
    rows = ",\n".join("    [" + ", ".join(f"{(i * 31 + j) % 997 / 997:.6f}" for j in range(8)) + "]"
                      for i in range(count))
    return "import torch\nDATA = [\n" + rows + "\n]\nX = torch.tensor(DATA)\n"


SHAPES = {"aliases": aliases, "ordinary": ordinary, "data": data}


def sized(shape: str, size: int) -> str:
    """The shape's file grown to about `size` bytes (a little under)."""
    make = SHAPES[shape]
    per_unit = len(make(200)) / 200
    count = max(2, int(size / per_unit))
    while len(make(count)) > size:
        count = int(count * 0.97)
    return make(count)


def parse_size(text: str) -> int:
    scale = {"K": 1000, "M": 2**20}.get(text[-1].upper(), 1)
    return int(float(text.rstrip("kKmM")) * scale)


def measure(source: str, timeout: float) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "hw3").mkdir()
        (Path(folder) / "hw3" / "model_parallel.py").write_text(source)
        try:
            done = subprocess.run([sys.executable, "-c", _CHILD, folder], capture_output=True,
                                  text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"cpu_s": None, "timed_out": timeout}
        if done.returncode:
            return {"cpu_s": None, "error": done.stderr.strip().splitlines()[-1:]}
        return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["100K", "400K", "2M"])
    parser.add_argument("--shapes", nargs="+", default=list(SHAPES), choices=list(SHAPES))
    parser.add_argument("--timeout", type=float, default=300)
    options = parser.parse_args()
    print(f"{'shape':10} {'bytes':>9} {'CPU s':>8} {'peak MB':>8} findings  held unread")
    for shape in options.shapes:
        for size in map(parse_size, options.sizes):
            source = sized(shape, size)
            result = measure(source, options.timeout)
            if result.get("cpu_s") is None:
                print(f"{shape:10} {len(source):9} {'>' + str(int(options.timeout)) if 'timed_out' in result else 'failed':>8}"
                      f" {'':>8} {result.get('error', '')}", flush=True)
                continue
            print(f"{shape:10} {len(source):9} {result['cpu_s']:8.1f} {result['peak_mb']:8.0f} "
                  f"{result['findings']:8}  {'; '.join(result['held_unread'])[:60]}", flush=True)


if __name__ == "__main__":
    main()
