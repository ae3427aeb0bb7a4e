"""What runs during backward runs on the virtual GPUs as on real ones: activation checkpointing
(non-reentrant and reentrant), custom autograd Functions that move tensors between GPUs, hooks
and saved-tensor hooks. A checkpoint's recomputation is part of backward, never a forward pass
of the training loop (grader/vgpu/mode.py: engine_under_mode, packing; observe.in_backward).

Found by a red team (adv21 A1): `checkpoint(..., use_reentrant=False)` stopped with
CheckpointError (recomputed tensors labelled `cpu`), a custom Function's `g.to(...)` in
backward asked the CPU build for CUDA, and Practical 10 with a checkpointed stage counted
2 x MICRO_BATCHES forward passes per step.
"""
import copy
import warnings

import pytest
import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint, checkpoint_sequential


def make_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.0), nn.Linear(16, 8),
                         nn.Tanh())


class TwoStage(nn.Module):
    """Practical 10's model: a stage per GPU; `checkpointed` recomputes stage 0 in backward."""

    def __init__(self, first, second, use_reentrant=False):
        super().__init__()
        torch.manual_seed(0)
        self.stage0 = nn.Sequential(nn.Linear(8, 16), nn.ReLU()).to(first)
        self.stage1 = nn.Linear(16, 4).to(second)
        self.first, self.second = first, second
        self.use_reentrant = use_reentrant

    def forward(self, x):
        x = x.to(self.first)
        if self.use_reentrant:   # which gives stage 0 no gradient from an input without one
            x = x.detach().requires_grad_()
        x = checkpoint(self.stage0, x, use_reentrant=self.use_reentrant)
        return self.stage1(x.to(self.second))


def reference_gradients(batch):
    plain = TwoStage("cpu", "cpu")
    nn.functional.mse_loss(plain(batch), torch.zeros(len(batch), 4)).backward()
    return [p.grad.clone() for p in plain.parameters()]


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_checkpointed_stage_on_another_gpu_trains_as_on_the_cpu(vnode, use_reentrant):
    torch.manual_seed(1)
    batch = torch.randn(6, 8)
    expected = reference_gradients(batch)
    vnode(2)
    model = TwoStage("cuda:0", "cuda:1", use_reentrant)
    out = model(batch)
    assert out.device == torch.device("cuda:1")
    nn.functional.mse_loss(out, torch.zeros(6, 4, device="cuda:1")).backward()
    for parameter, want in zip(model.parameters(), expected):
        assert parameter.grad.device == parameter.device
        assert torch.equal(parameter.grad.cpu(), want)


def test_non_reentrant_checkpoint_sees_the_devices_of_its_saved_tensors(vnode):
    """The red team's failure: the forward's saved outputs looked like host tensors to the
    checkpoint's pack hook, and the recomputed ones did not (or the other way round)."""
    vnode(1)
    model = make_model().cuda()
    x = torch.randn(4, 8, device="cuda:0", requires_grad=True)
    checkpoint(model, x, use_reentrant=False).sum().backward()
    assert x.grad.device == torch.device("cuda:0")
    seq = checkpoint_sequential(model, 2, x, use_reentrant=False)
    seq.sum().backward()
    assert all(p.grad.device == torch.device("cuda:0") for p in model.parameters())


def test_saved_tensor_hooks_see_outputs_on_their_gpu_and_run_under_the_node(vnode):
    vnode(2)
    layer = nn.Linear(3, 3).to("cuda:1")
    packed, unpacked = [], []

    def pack(tensor):
        packed.append(str(tensor.device))
        return tensor.to("cuda:0")   # an offload elsewhere: a move between virtual GPUs

    def unpack(tensor):
        unpacked.append(str(tensor.device))
        return tensor.to("cuda:1")

    x = torch.randn(2, 3, device="cuda:1", requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = torch.relu(layer(x)).exp()   # relu and exp save their outputs
    y.sum().backward()
    assert packed and set(packed) == {"cuda:1"}
    assert unpacked and set(unpacked) == {"cuda:0"}
    assert x.grad.device == torch.device("cuda:1")
    # After the hooks the node dispatches as before (a mismatch is still PyTorch's error).
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.randn(2, device="cuda:0") + torch.randn(2, device="cuda:1")


class Hop(torch.autograd.Function):
    """A hand-written move between GPUs (a pipeline's send/receive as a Function)."""

    @staticmethod
    def forward(ctx, tensor, target):
        ctx.source = tensor.device
        return tensor.to(target)

    @staticmethod
    def backward(ctx, grad):
        assert grad.device != ctx.source, "the incoming gradient is on the output's GPU"
        return grad.to(ctx.source) * torch.ones(1, device=ctx.source), None


def test_custom_function_moving_between_gpus_in_forward_and_backward(vnode):
    torch.manual_seed(2)
    plain = make_model()
    x = torch.randn(5, 8)
    plain(x).pow(2).sum().backward()
    vnode(2)
    model = copy.deepcopy(plain).to("cuda:0")
    model.zero_grad()
    out = Hop.apply(model(x.to("cuda:0")), torch.device("cuda:1"))
    assert out.device == torch.device("cuda:1")
    out.pow(2).sum().backward()
    for got, want in zip(model.parameters(), plain.parameters()):
        assert got.grad.device == torch.device("cuda:0")
        assert torch.allclose(got.grad.cpu(), want.grad)


def test_tensor_hook_computes_on_the_gradients_gpu(vnode):
    vnode(2)
    x = torch.randn(3, device="cuda:1", requires_grad=True)
    seen = []

    def hook(grad):
        seen.append(str(grad.device))
        return grad + torch.ones(3, device="cuda:1")

    y = x * 2
    y.register_hook(hook)
    y.sum().backward()
    assert seen == ["cuda:1"]
    assert x.grad.device == torch.device("cuda:1")
    assert torch.equal(x.grad.cpu(), torch.full((3,), 4.0))


def test_checkpoint_inside_data_parallel_replicas(vnode):
    class Checkpointed(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = make_model()

        def forward(self, x):
            return checkpoint(self.net, x, use_reentrant=False)

    torch.manual_seed(3)
    x = torch.randn(12, 8)
    plain = Checkpointed()
    plain(x).sum().backward()
    vnode(3)
    model = copy.deepcopy(plain).cuda()
    model.zero_grad()
    nn.DataParallel(model)(x.cuda()).sum().backward()
    for got, want in zip(model.parameters(), plain.parameters()):
        assert got.grad.device == torch.device("cuda:0")
        assert torch.allclose(got.grad.cpu(), want.grad, atol=1e-6)


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_a_recomputation_is_no_forward_pass_of_the_step(traced_vnode, use_reentrant):
    """Per micro-batch one forward (with gradients) and one backward in the trace, however
    the stage is checkpointed; the recomputation is a `recompute` record."""
    events = traced_vnode(2)
    model = TwoStage("cuda:0", "cuda:1", use_reentrant)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    batch = torch.randn(8, 8)
    del events[:]   # the model's own moves
    for micro in batch.tensor_split(4):
        out = model(micro)
        nn.functional.mse_loss(out, torch.zeros(len(micro), 4, device="cuda:1")).backward()
    optimizer.step()
    kinds = [e["event"] for e in events]
    forwards = [e for e in events if e["event"] == "forward"]
    assert len(forwards) == 4 and all(e["grad"] for e in forwards)
    assert kinds.count("forward_out") == 4
    assert kinds.count("backward") == 4
    recomputes = [e for e in events if e["event"] == "recompute"]
    assert [(e["module"], e["batch"]) for e in recomputes] == [("Sequential", [2, 8])] * 4
    # The forward's moves only: the micro-batch to cuda:0 and the activation to cuda:1.
    moves = [(e["src"], e["dst"]) for e in events if e["event"] == "to" and e["copied"]]
    assert moves == [("cpu", "cuda:0"), ("cuda:0", "cuda:1")] * 4
    exit_record = [e for e in events if e["event"] == "exit"]
    assert not exit_record or exit_record[0]["forwards"] == 4


def test_a_checkpointed_root_module_is_recomputed_not_counted_twice(traced_vnode):
    """The whole model checkpointed in the training loop: its forward (under no_grad in the
    reentrant variant) trains; its recomputation in backward is no second pass."""
    events = traced_vnode(1)
    model = make_model().cuda()
    x = torch.randn(4, 8, device="cuda:0", requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for reentrant in (True, False):
            checkpoint(model, x, use_reentrant=reentrant).sum().backward()
    forwards = [e for e in events if e["event"] == "forward"]
    assert [e["grad"] for e in forwards] == [True, True]
    recomputes = [e for e in events if e["event"] == "recompute"]
    assert [e["module"] for e in recomputes] == ["Sequential", "Sequential"]
    assert sum(e["event"] == "backward" for e in events) == 2


def test_evaluation_under_no_grad_stays_an_evaluation_pass(traced_vnode):
    events = traced_vnode(1)
    model = make_model().cuda()
    with torch.no_grad():
        model(torch.randn(4, 8, device="cuda:0"))
    assert [e["grad"] for e in events if e["event"] == "forward"] == [False]


def test_the_mode_stack_is_left_as_it_was(vnode):
    from torch.overrides import _get_current_function_mode_stack
    vnode(2)
    before = list(_get_current_function_mode_stack())
    model = TwoStage("cuda:0", "cuda:1")
    model(torch.randn(2, 8)).sum().backward()
    with pytest.raises(ValueError):
        with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            raise ValueError("leaves the hooks")
    assert list(_get_current_function_mode_stack()) == before
    mode = before[-1]
    assert mode._saving == 0 and mode._in_flight is None


class Doubled(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor):
        return tensor * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


def test_a_custom_functions_output_is_no_leaf_to_the_backward_clock(vnode):
    """The tape saw no operation make a Function's output and took it for a leaf: replaying
    backward read its `.grad`, and torch warned "not a leaf Tensor" (SyncBatchNorm's summed
    statistics, grader/vgpu/sync_batch_norm.py), an error for a script that turns warnings
    into errors."""
    vnode(1)
    weight = torch.randn(3, device="cuda", requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(2):   # the second backward accumulates into the first's gradient
            (Doubled.apply(weight) * weight).sum().backward()
    assert torch.allclose(weight.grad.cpu(), 8 * weight.detach().cpu())
