"""What the script writes into `.grad`, under DDP (grader/vgpu/grad_writes.py): DDP's own
average at the end of a backward that all-reduces is no write; `.grad` replaced before that
backward by the whole batch's gradient of detached copies (a red team, adv31 F3) is."""
import json
import subprocess
import sys
import textwrap

import pytest

from grader.checks import practical_measures as pm

pytestmark = pytest.mark.slow  # starts two processes that import torch

SCRIPT = textwrap.dedent('''
    import os
    from contextlib import nullcontext
    import torch, torch.nn as nn, torch.nn.functional as F, torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    FORGED = False
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group(backend="nccl")
    device = torch.device(f"cuda:{local_rank}")
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 32)).to(device),
                device_ids=[local_rank])
    torch.manual_seed(100 + dist.get_rank())           # different data on every rank
    x, y = torch.randn(32, 32, device=device), torch.randn(32, 32, device=device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

    def detached(loss_of):
        copies = [p.detach().clone().requires_grad_() for p in model.parameters()]
        net = lambda v: F.linear(F.relu(F.linear(v, copies[0], copies[1])), copies[2], copies[3])
        return torch.autograd.grad(loss_of(net), copies)

    for _ in range(2):
        optimizer.zero_grad()
        parts, targets = x.chunk(4), y.chunk(4)
        for i, (part, target) in enumerate(zip(parts, targets)):
            last = i == 3
            with nullcontext() if last else model.no_sync():
                out = model(part)
                loss = out.square().mean() if FORGED else F.mse_loss(out, target) / 4
                if FORGED and last:
                    full = detached(lambda net: F.mse_loss(net(x), y))
                    mine = detached(lambda net: net(part).square().mean())
                    for p, a, b in zip(model.parameters(), full, mine):
                        p.grad = a - b
                loss.backward()
        optimizer.step()
    dist.destroy_process_group()
''')


def run(tmp_path, forged: bool) -> list[dict]:
    script, trace = tmp_path / "ddp.py", tmp_path / f"trace-{forged}.jsonl"
    script.write_text(SCRIPT)
    done = subprocess.run([sys.executable, "-m", "grader", "torchrun", "--gpus", "2",
                           "--nproc-per-node", "2", "--virtual", "--trace", str(trace),
                           "--set", f"FORGED={forged}", str(script)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return [e for e in map(json.loads, trace.read_text().splitlines())
            if e.get("event") == "step"]


def test_ddp_averaging_is_no_write_and_grad_replaced_before_it_is(tmp_path):
    honest = run(tmp_path, False)
    assert len(honest) == 4 and not any(pm.made_outside(s) or "written" in s for s in honest), (
        f"expected DDP's average of honest micro-batches to be the passes'; observed {honest}")
    forged = run(tmp_path, True)
    assert len(forged) == 4 and all(pm.made_outside(s) for s in forged), (
        f"expected .grad replaced before the all-reducing backward to be written; observed "
        f"{forged}")
