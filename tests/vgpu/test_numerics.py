"""Results on virtual GPUs equal a plain CPU run: the node relabels, it never changes the maths."""
import copy

import torch
import torch.nn as nn


def train(model, place, steps=3, optimizer_class=torch.optim.Adam):
    torch.manual_seed(1)
    x, y = torch.randn(16, 8), torch.randn(16, 8)
    optimizer = optimizer_class(model.parameters(), lr=0.01)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(place(model, x), y.to(model_output_device(model)))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, [p.detach().cpu().clone() for p in model.parameters()]


def model_output_device(model):
    return next(reversed(list(model.parameters()))).device


def pipeline_forward(model, x):
    for layer in model:
        x = layer(x.to(next(layer.parameters()).device)) if list(layer.parameters()) else layer(x)
    return x


def make_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(),
                         nn.Linear(16, 8))


def test_model_parallel_training_equals_cpu(vnode):
    plain = make_model()
    expected = train(copy.deepcopy(plain), pipeline_forward)
    vnode(3)
    split = copy.deepcopy(plain)
    for layer, device in zip(split, ["cuda:0", "cuda:0", "cuda:1", "cuda:1", "cuda:2"]):
        layer.to(device)
    observed = train(split, pipeline_forward)
    assert observed[0] == expected[0], "losses must be bit-identical to the CPU run"
    for got, want in zip(observed[1], expected[1]):
        assert torch.equal(got, want)


def test_data_parallel_gradients_equal_cpu(vnode):
    plain = make_model()
    x, y = torch.randn(64, 8), torch.randn(64, 8)
    nn.functional.mse_loss(plain(x), y).backward()
    vnode(5)
    model = copy.deepcopy(plain).cuda()
    model.zero_grad()
    wrapped = nn.DataParallel(model)
    out = wrapped(x.cuda())
    assert out.device == torch.device("cuda:0")
    loss = nn.functional.mse_loss(out, y.cuda())
    loss.backward()
    for got, want in zip(model.parameters(), plain.parameters()):
        assert got.grad.device == torch.device("cuda:0")
        torch.testing.assert_close(got.grad.cpu(), want.grad, rtol=1e-5, atol=1e-6)
