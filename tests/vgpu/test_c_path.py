"""The virtual node's C hot path (grader/vgpu/_fastpath.c) against its Python twin.

The same workload runs on a node that uses the C path and on one switched to Python only
(PDL_VGPU_PURE_PYTHON=1, what a machine without a C compiler gets); everything a check could
read must come out identical to the last nanosecond and byte: the simulated clock of every GPU
and of the host, each parameter's gradient-ready time, memory allocated and peak per GPU, the
devices of the results, the tape backward replays, and PyTorch's error for a device mismatch.
"""
import shutil

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from grader.vgpu.backward_schedule import MOVES, PARALLEL
from grader.vgpu.c_path import ENV_PURE_PYTHON

GPUS = 4


def _workload(clock, names):
    """Everything the mode's generic path meets: model parallelism with moves, list inputs,
    tuple outputs, views, in-place ops, host scalars, host-only work, factories, gradients
    accumulated over two backward passes, an optimizer step, DataParallel's threads."""
    torch.manual_seed(0)
    seen = {}
    layers = nn.ModuleList([nn.Linear(32, 32).to(f"cuda:{i % GPUS}") for i in range(6)])
    for index, layer in enumerate(layers):
        names[id(layer.weight)], names[id(layer.bias)] = f"w{index}", f"b{index}"
    wide_layer = nn.Linear(256, 256).to("cuda:2")
    names[id(wide_layer.weight)], names[id(wide_layer.bias)] = "wide.w", "wide.b"
    optimizer = torch.optim.SGD([*layers.parameters(), *wide_layer.parameters()], lr=0.1)
    x = torch.randn(16, 32, device="cuda:0")
    tapes = []
    for step in range(2):
        h = x
        for index, layer in enumerate(layers):
            h = F.relu(layer(h.to(f"cuda:{index % GPUS}")))
        for _ in range(2):  # `.to` where the tensor already is (the second: a device known)
            h = h.to(h.device)
        first, second = h.chunk(2)                         # a tuple of outputs
        joined = torch.cat([second, first])                # a list of inputs
        scaled = joined.view(-1) * torch.tensor(2.0)       # a view; a host scalar
        scaled.add_(1.0)                                   # in place
        product = joined @ torch.ones(32, 8, device=f"cuda:{(len(layers) - 1) % GPUS}")
        host_only = torch.randn(8, 8).relu().sum()         # the host: no GPU
        # Big enough to be bound by arithmetic, not memory: a Linear's and a matmul's FLOPs.
        wide = wide_layer(torch.randn(64, 256, device="cuda:2"))
        square = wide @ wide.T
        loss = product.pow(2).mean() + scaled.mean() + host_only.to(product.device) * 0 \
            + square.mean().to(product.device)
        tapes.append(_tape(clock, names))
        loss.backward()                                    # the second one accumulates
        seen[f"backward{step}"] = _timelines(clock, names)
        seen[f"loss{step}"] = round(loss.item(), 6)
    optimizer.step()
    optimizer.zero_grad()
    replicated = nn.DataParallel(nn.Linear(32, 4).to("cuda:0"))
    for name, parameter in replicated.module.named_parameters():
        names[id(parameter)] = f"dp.{name}"
    replicated_out = replicated(torch.randn(16, 32, device="cuda:0")).sum()
    seen["replicas' tape"] = _tape(clock, names)  # their threads' work, side by side
    replicated_out.backward()
    seen["replicas' backward"] = _timelines(clock, names)
    try:
        layers[0](torch.randn(2, 32, device="cuda:1"))
    except RuntimeError as error:
        seen["mismatch"] = str(error)
    seen["devices"] = [str(t.device) for t in (h, first, joined, scaled, product, host_only)]
    seen["tapes"] = tapes
    return seen


def _timelines(clock, names):
    """Where the clock stands: every GPU's stream, the host, each gradient's ready time."""
    return (list(clock.busy_until), list(clock.comm_until), clock.host(),
            sorted((names.get(key, "?"), at) for key, at in clock.grad_ready.items()))


def _tape(clock, names):
    """The tape as positions and parameter names (entry ids and object ids differ per run);
    DataParallel's replicas (a PARALLEL entry) as their own tapes."""
    position: dict = {}

    def number(tape):
        for entry in tape:
            if entry[0] == PARALLEL:
                for child in entry[2]:
                    number(child)
            else:
                position[entry[1]] = len(position)

    def plain(value):
        if isinstance(value, torch.Tensor):
            return names.get(id(value), "tensor")
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        return value

    def written(tape):
        return [("parallel", [written(child) for child in entry[2]]) if entry[0] == PARALLEL
                else (entry[0], position[entry[1]], *plain(list(entry[2:-1])),
                      sorted(position.get(made, -1) for made in entry[-1]))
                for entry in tape]

    number(clock.tape())
    return written(clock.tape())


def _observe(vnode, monkeypatch, pure: bool):
    if pure:
        monkeypatch.setenv(ENV_PURE_PYTHON, "1")
    else:
        monkeypatch.delenv(ENV_PURE_PYTHON, raising=False)
    handle = vnode(GPUS)
    node, clock = handle.node, handle.node.clock
    assert (node.c_path is None) == pure
    assert (handle.modes[0]._fast is None) == pure
    # Where built, the method torch calls on the mode is the C dispatch, bound to the mode.
    assert ("__torch_function__" in vars(handle.modes[0])) == (not pure)
    names: dict = {}
    seen = _workload(clock, names)
    seen["end"] = _timelines(clock, names)
    seen["allocated"] = [torch.cuda.memory_allocated(i) for i in range(GPUS)]
    seen["peak"] = [torch.cuda.max_memory_allocated(i) for i in range(GPUS)]
    handle.deactivate()
    return seen


@pytest.fixture
def c_path_built():
    try:
        import grader.vgpu._fastpath  # noqa: F401  (whatever PDL_VGPU_PURE_PYTHON says)
    except ImportError:
        if shutil.which("gcc") or shutil.which("cc"):
            pytest.fail("grader/vgpu/_fastpath.c was not built although a C compiler is here: "
                        "reinstall with `pip install -e .` and read the compiler's output")
        pytest.skip("no C compiler here: the node runs its Python path only")


def test_c_and_python_paths_agree_record_for_record(c_path_built, vnode, monkeypatch):
    in_c = _observe(vnode, monkeypatch, pure=False)
    in_python = _observe(vnode, monkeypatch, pure=True)
    for key in in_python:
        assert in_c[key] == in_python[key], (
            f"the C fast path and the Python path disagree on {key}: "
            f"C {in_c[key]!r} vs Python {in_python[key]!r} (grader/vgpu/_fastpath.c)")
    assert in_c["mismatch"].startswith("Expected all tensors to be on the same device")
    assert in_c["end"][2] > 0 and any(in_c["peak"])
    replicas = [e for e in in_c["replicas' tape"] if e[0] == "parallel"]
    assert replicas and any(e[0] == MOVES for e in in_c["replicas' tape"]), (
        "the workload no longer exercises DataParallel's replicas and moves: the comparison "
        "would miss the replay's PARALLEL and MOVES entries")


def test_freed_storages_give_their_memory_back_on_the_c_path(c_path_built, vnode, monkeypatch):
    monkeypatch.delenv(ENV_PURE_PYTHON, raising=False)
    node = vnode(2).node
    before = torch.cuda.memory_allocated(1)
    x = torch.randn(256, 256, device="cuda:1")
    y = x.relu()                                           # labelled by the C path
    assert torch.cuda.memory_allocated(1) - before == 2 * 256 * 256 * 4
    assert y.device == torch.device("cuda", 1)
    del x, y
    assert torch.cuda.memory_allocated(1) == before
    assert not node.producers or all(isinstance(k, int) for k in node.producers)


def test_a_fractional_backward_factor_takes_the_python_replay(c_path_built, vnode, monkeypatch):
    """The C replay counts whole nanoseconds; a cost model that makes times floats must still
    be followed exactly (by Python)."""
    import dataclasses
    monkeypatch.delenv(ENV_PURE_PYTHON, raising=False)
    clock = vnode(2).node.clock
    clock.model = dataclasses.replace(clock.model, backward_factor=2.5)
    layer = nn.Linear(8, 8).to("cuda:1")
    layer(torch.randn(4, 8, device="cuda:1")).sum().backward()
    assert isinstance(clock.host(), float)
    before = clock.host()
    after_backward = (layer.weight * 2).sum()              # charged on a float timeline
    assert after_backward.device == torch.device("cuda", 1) and clock.host() > before
    on_host = torch.ones(3)
    before = clock.host()
    on_host.relu()                                         # host work: the launch only
    assert clock.host() == before + clock.host_op_ns


# -- the node's lock where the C path runs (grader/vgpu/_fastpath.c, GilLock) ------------------
def test_the_c_path_waits_while_another_thread_holds_the_nodes_lock(c_path_built, vnode,
                                                                    monkeypatch):
    """A Python section of the node (Node._label, _release) that lost the GIL half-way holds
    the lock: the C path must not update labels and memory under it."""
    import threading
    import time
    monkeypatch.delenv(ENV_PURE_PYTHON, raising=False)
    node = vnode(2).node
    x = torch.randn(64, 64, device="cuda:1")
    taken, hold_s = threading.Event(), 0.3

    def python_section():
        with node._lock:
            taken.set()
            time.sleep(hold_s)

    holder = threading.Thread(target=python_section)
    holder.start()
    taken.wait(5)
    started = time.perf_counter()
    y = x.relu()                                          # labelled by the C path
    waited = time.perf_counter() - started
    holder.join()
    assert waited >= hold_s * 0.5, (
        f"the C path labelled a storage after {waited:.3f} s while another thread held the "
        f"node's lock for {hold_s} s: it should have waited (grader/vgpu/_fastpath.c)")
    assert y.device == torch.device("cuda", 1)


def test_the_nodes_lock_lets_its_own_thread_through(c_path_built, vnode, monkeypatch):
    """A storage freed by a garbage collection that a Python section of the node started is
    released, by the C path, in the thread that holds the lock: no deadlock."""
    monkeypatch.delenv(ENV_PURE_PYTHON, raising=False)
    node = vnode(2).node
    before = torch.cuda.memory_allocated(0)
    with node._lock:
        y = torch.ones(128, device="cuda:0").relu()
        del y                                             # released under the held lock
    assert torch.cuda.memory_allocated(0) == before
    with pytest.raises(RuntimeError, match="does not hold"):
        node._lock.release()


def test_threads_labelling_in_c_and_in_python_keep_memory_exact(c_path_built, vnode,
                                                                monkeypatch):
    """Copies between GPUs asked for by keyword are labelled by Python, ops (and copies to a
    device seen before) by C: from several threads at once the node's memory is still the sum
    of what lives, and all of it comes back."""
    import threading
    monkeypatch.delenv(ENV_PURE_PYTHON, raising=False)
    vnode(2)
    before = [torch.cuda.memory_allocated(i) for i in range(2)]
    kept, errors = [], []

    def work(seed):
        try:
            generator = torch.Generator().manual_seed(seed)
            h = torch.randn(32, 32, generator=generator).to("cuda:0")
            for step in range(300):
                h = (h.to(device=f"cuda:{step % 2}") * 0.5).relu()  # Python copy, C ops
                h = h.to(f"cuda:{(step + 1) % 2}")                 # a copy in C
            kept.append(h)
        except Exception as error:  # reported below with the thread's own error
            errors.append(repr(error))

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    live = [sum(-(-t.untyped_storage().nbytes() // 512) * 512 for t in kept
                if t.device.index == i) for i in range(2)]
    assert [torch.cuda.memory_allocated(i) - before[i] for i in range(2)] == live
    kept.clear()
    assert [torch.cuda.memory_allocated(i) for i in range(2)] == before
