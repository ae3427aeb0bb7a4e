"""Each virtual GPU draws from a generator of its own, as a real GPU does (random_state.py).

What must hold is which draws are alike, as on the course's GPUs: the host and a GPU seeded
alike give different numbers; every GPU seeded alike gives the same; torch.cuda's seeding and
state functions act on the GPUs only; torch.Generator(device="cuda") draws as its GPU would; a
host generator for a GPU op is PyTorch's error. A TA's Practical 5 drew its data on the host in
one script and on the GPU in the other: on real GPUs they train on different data, and the
virtual GPUs had said the opposite.
"""
import pytest
import torch
import torch.nn.functional as F


def test_a_gpu_draws_other_numbers_than_the_host_for_the_same_seed(vnode):
    vnode(2)
    torch.manual_seed(0)
    host = torch.randn(64)
    torch.manual_seed(0)
    gpu0 = torch.randn(64, device="cuda:0")
    torch.manual_seed(0)
    gpu1 = torch.randn(64, device="cuda:1")
    assert not torch.equal(host, gpu0.cpu()), "cuda:0 drew the host's numbers"
    assert torch.equal(gpu0.cpu(), gpu1.cpu()), "two GPUs seeded alike drew different numbers"
    assert gpu0.device == torch.device("cuda", 0)


def test_drawing_on_a_gpu_leaves_the_hosts_stream_where_it_was(vnode):
    vnode(1)
    torch.manual_seed(3)
    expected = torch.randn(8)
    torch.manual_seed(3)
    torch.rand(100, device="cuda")                   # the GPU's numbers, not the host's
    assert torch.equal(torch.randn(8), expected)


def test_ops_on_a_gpu_tensor_use_the_gpus_generator(vnode):
    vnode(1)
    ones = torch.ones(256)
    torch.manual_seed(0)
    on_host = F.dropout(ones, 0.5)
    torch.manual_seed(0)
    on_gpu = F.dropout(ones.to("cuda:0"), 0.5)
    torch.manual_seed(0)
    again = F.dropout(ones.to("cuda:0"), 0.5)
    assert not torch.equal(on_host, on_gpu.cpu())
    assert torch.equal(on_gpu.cpu(), again.cpu())
    torch.manual_seed(0)
    filled = torch.empty(32, device="cuda:0").normal_()
    torch.manual_seed(0)
    assert torch.equal(filled.cpu(), torch.randn(32, device="cuda:0").cpu())


def test_torch_cuda_seeds_and_states_the_gpus_only(vnode):
    vnode(2)
    torch.manual_seed(11)
    host = torch.randn(4)
    torch.manual_seed(11)
    torch.cuda.manual_seed(5)                       # the current GPU, cuda:0
    assert torch.cuda.initial_seed() == 5
    seeded_5 = torch.randn(4, device="cuda:0")
    assert torch.equal(torch.randn(4), host), "torch.cuda.manual_seed moved the host's stream"
    torch.cuda.manual_seed_all(5)
    assert torch.equal(torch.randn(4, device="cuda:1").cpu(), seeded_5.cpu())

    state = torch.cuda.get_rng_state("cuda:1")
    first = torch.rand(4, device="cuda:1")
    torch.cuda.set_rng_state(state, "cuda:1")
    assert torch.equal(torch.rand(4, device="cuda:1").cpu(), first.cpu())
    with torch.random.fork_rng(devices=[0, 1]):     # PyTorch's own use of those functions
        torch.rand(4, device="cuda:0")
    assert len(torch.cuda.get_rng_state_all()) == 2


def test_a_generator_of_a_gpu_draws_as_its_gpu(vnode):
    vnode(2)
    generator = torch.Generator(device="cuda:1").manual_seed(7)
    assert generator.device == torch.device("cuda", 1) and generator.initial_seed() == 7
    assert isinstance(generator, torch.Generator)
    drawn = torch.randn(8, device="cuda:1", generator=generator)
    torch.cuda.manual_seed_all(7)
    assert torch.equal(drawn.cpu(), torch.randn(8, device="cuda:1").cpu())
    host = torch.Generator().manual_seed(7)
    assert isinstance(host, torch.Generator) and host.device == torch.device("cpu")
    assert not torch.equal(torch.randn(8, generator=host), drawn.cpu())


@pytest.mark.parametrize("device, generator_device, found", [
    ("cuda:0", "cpu", "cpu"), ("cpu", "cuda:0", "cuda")])
def test_a_generator_of_the_other_kind_is_pytorchs_error(vnode, device, generator_device, found):
    vnode(1)
    generator = torch.Generator(device=generator_device)
    with pytest.raises(RuntimeError, match=f"device type for generator but found '{found}'"):
        torch.randn(4, device=device, generator=generator)
