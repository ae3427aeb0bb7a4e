"""nn.DataParallel on virtual GPUs: PyTorch's split rule, replicas, broadcasts and gathers."""
import pytest
import torch
import torch.nn as nn



class Probe(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(3, 2)
        self.seen = []

    def forward(self, x):
        self.seen.append((x.device.index, x.shape[0]))
        return self.layer(x)


@pytest.mark.parametrize("batch,gpus,expected", [
    (64, 2, [32, 32]), (64, 3, [22, 22, 20]), (64, 5, [13, 13, 13, 13, 12]),
    (6, 4, [2, 2, 2]), (5, 4, [2, 2, 1]), (9, 4, [3, 3, 3]), (17, 8, [3, 3, 3, 3, 3, 2]),
    (1, 4, [1]),
])
def test_split_sizes_and_replicas(vnode, batch, gpus, expected):
    handle = vnode(gpus)
    events = []
    handle.trace.listeners.append(events.append)
    module = Probe().cuda()
    out = nn.DataParallel(module)(torch.randn(batch, 3, device="cuda:0"))
    assert out.shape == (batch, 2) and out.device == torch.device("cuda:0")
    scatters = [e for e in events if e["event"] == "dp_scatter"]
    if len(expected) > 1:
        assert scatters[0]["sizes"] == expected
    # Only len(chunks) replicas run: a batch smaller than the node leaves GPUs idle.
    # (the replicas share the original's `seen` list: replicate() copies __dict__ shallowly)
    assert sorted(module.seen) == sorted(zip(range(len(expected)), expected))
    broadcasts = {e["dst"] for e in events if e["event"] == "transfer" and e["kind"] == "broadcast"}
    assert broadcasts == {f"cuda:{i}" for i in range(1, len(expected))}


def test_backward_reduces_gradients_onto_gpu0(vnode):
    handle = vnode(3)
    events = []
    handle.trace.listeners.append(events.append)
    module = Probe().cuda()
    nn.DataParallel(module)(torch.randn(64, 3, device="cuda:0")).sum().backward()
    reduces = [e for e in events if e["event"] == "transfer" and e["kind"] == "reduce"]
    assert {e["dst"] for e in reduces} == {"cuda:0"}
    assert {e["src"] for e in reduces} == {"cuda:1", "cuda:2"}
    assert module.layer.weight.grad.device == torch.device("cuda:0")
