"""A correct script with a lazy module (nn.LazyLinear: its weight has no size until the first
pass) runs under the trace as it runs on a GPU. Moving it to a GPU had read the uninitialised
weight's size, which raises: every graded (traced) run of such a script crashed, untraced
it ran (eng_tidy)."""
import json
import subprocess
import sys

LAZY = """import torch, torch.nn as nn
m = nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.Linear(8, 1)).to("cuda:0")
opt = torch.optim.SGD(m.parameters(), lr=0.1)
for _ in range(2):
    x = torch.randn(4, 5, device="cuda:0")
    opt.zero_grad(); m(x).sum().backward(); opt.step()
print("trained", tuple(m[0].weight.shape), m[0].weight.device)
"""


def test_a_lazy_layer_moved_to_a_gpu_trains_under_the_trace(tmp_path):
    script, trace = tmp_path / "lazy.py", tmp_path / "t.jsonl"
    script.write_text(LAZY)
    done = subprocess.run([sys.executable, "-m", "grader", "run", "--gpus", "1", "--virtual",
                           "--trace", str(trace), str(script)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and "trained (8, 5) cuda:0" in done.stdout, (
        "expected the lazy model to train on cuda:0 under the trace as without it; observed "
        f"exit {done.returncode}\n{done.stdout}\n{done.stderr[-1500:]} (grader/vgpu/mode.py "
        "_note_to, observe.py _layer: an UninitializedParameter has no numel)")
    events = [json.loads(line) for line in trace.read_text().splitlines() if line.strip()]
    layouts = [e["layers"] for e in events if e["event"] == "placement"]
    assert layouts and layouts[-1][0] == {"name": "0", "type": "Linear", "device": "cuda:0",
                                          "params": 48, "bytes": 192}, layouts
    assert not any(e.get("moved_layers") for e in events), (
        "the lazy layer given its size by the first pass moved no layer: no `moved_layers`")
