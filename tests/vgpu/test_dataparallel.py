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


def _forwards(events):
    return [e for e in events if e["event"] == "forward"]


def test_replicas_passes_are_marked_part_of_the_wrappers_pass(traced_vnode):
    # The checks read the script's own passes (practical_measures.forward_passes): a
    # DataParallel replica's pass runs in a worker thread started inside the wrapper's forward.
    events = traced_vnode(2)
    module = nn.Sequential(nn.Linear(3, 2)).cuda()
    nn.DataParallel(module)(torch.randn(8, 3, device="cuda:0"))
    forwards = _forwards(events)
    wrapper = [e for e in forwards if not e.get("nested")]
    replicas = [e for e in forwards if e.get("nested")]
    assert [e["module"] for e in wrapper] == ["DataParallel"] and wrapper[0]["thread"] == "MainThread"
    assert sorted(e["input_device"] for e in replicas) == ["cuda:0", "cuda:1"]
    assert all(e["thread"] != "MainThread" for e in replicas)


def test_passes_in_threads_the_script_starts_are_its_own(traced_vnode):
    # Part 2 of Practical 4 with a thread per chunk, or torch's parallel_apply called by hand
    # (no wrapper around it): these passes are the script's, rows and all.
    import threading
    events = traced_vnode(2)
    module = nn.Sequential(nn.Linear(3, 2)).cuda()
    chunks = torch.randn(8, 3, device="cuda:0").chunk(2)
    workers = [threading.Thread(target=module, args=(chunk,)) for chunk in chunks]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    replicas = nn.parallel.replicate(module, [0, 1])
    nn.parallel.parallel_apply(replicas, [chunks[0], chunks[1].to("cuda:1")])
    forwards = _forwards(events)
    assert len(forwards) == 4 and not any(e.get("nested") for e in forwards)
    # The same chunks run twice: the second time their rows name the first's (rows_as).
    assert all(e["thread"] != "MainThread" and (e.get("rows") or e.get("rows_as"))
               for e in forwards)


def test_threads_a_module_of_the_scripts_starts_in_its_forward_run_passes_of_its_own(traced_vnode):
    # Hand-made data parallelism (a red team's honest Part 2, adv26): a wrapper without
    # parameters whose forward runs the model on each chunk in a thread of its own. Only
    # DataParallel's forward makes replicas.
    import threading

    class ChunksInThreads(nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, x):
            outputs = [None, None]

            def run(i, chunk):
                outputs[i] = self.model(chunk)
            workers = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(x.chunk(2))]
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.join()
            return torch.cat(outputs)

    events = traced_vnode(2)
    module = nn.Sequential(nn.Linear(3, 2)).cuda()
    ChunksInThreads(module)(torch.randn(8, 3, device="cuda:0"))
    forwards = _forwards(events)
    assert sorted((e["module"], e["batch"][0], bool(e.get("nested"))) for e in forwards) == [
        ("ChunksInThreads", 8, False), ("Sequential", 4, False), ("Sequential", 4, False)], forwards
