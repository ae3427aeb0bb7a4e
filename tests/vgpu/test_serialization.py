"""torch.save and torch.load on virtual GPUs (grader/vgpu/serialization.py) behave as on real
GPUs: a checkpoint of cuda:N tensors comes back on cuda:N, `map_location` in each of its forms
(PyTorch's DDP tutorial maps cuda:0 to the rank's GPU) moves it, and loading onto a GPU counts
its memory there. Before, every form of map_location naming a GPU failed with "Storage device
not recognized: cuda" and checkpoints came back on the host."""
import pytest
import torch
import torch.nn as nn


@pytest.fixture
def checkpoint(vnode, tmp_path):
    vnode(2)
    torch.manual_seed(0)
    model = nn.Linear(64, 64).to("cuda:0")
    path = tmp_path / "ckpt.pt"
    torch.save(model.state_dict(), path)
    return path, model


def devices(state) -> set[str]:
    return {str(tensor.device) for tensor in state.values()}


def test_a_checkpoint_comes_back_on_the_gpu_it_was_saved_from(checkpoint):
    path, model = checkpoint
    state = torch.load(path)
    assert devices(state) == {"cuda:0"}, "saved from cuda:0, loaded without map_location"
    assert torch.equal(state["weight"].cpu(), model.weight.detach().cpu())


@pytest.mark.parametrize("map_location", [
    "cuda:1", torch.device("cuda", 1), {"cuda:0": "cuda:1"},
    lambda storage, location: storage.cuda(1)],
    ids=["string", "device", "dict (the DDP tutorial)", "function"])
def test_map_location_moves_it_to_another_gpu(checkpoint, map_location):
    path, model = checkpoint
    before = torch.cuda.memory_allocated(1)
    state = torch.load(path, map_location=map_location)
    assert devices(state) == {"cuda:1"}, f"expected cuda:1, observed {devices(state)}"
    assert torch.cuda.memory_allocated(1) - before >= 64 * 64 * 4, "the load allocates on cuda:1"
    replica = nn.Linear(64, 64).to("cuda:1")
    replica.load_state_dict(state)
    out = replica(torch.ones(2, 64, device="cuda:1"))
    assert out.device == torch.device("cuda:1")
    assert torch.allclose(out.cpu(), model(torch.ones(2, 64, device="cuda:0")).cpu())


def test_map_location_to_the_host_and_a_whole_model(checkpoint, tmp_path):
    path, model = checkpoint
    assert devices(torch.load(path, map_location="cpu")) == {"cpu"}
    torch.save(model.to("cuda:1"), tmp_path / "model.pt")
    loaded = torch.load(tmp_path / "model.pt", weights_only=False)
    assert loaded.weight.device == torch.device("cuda:1")


def test_a_gpu_the_node_does_not_have_gives_pytorchs_message(checkpoint):
    path, _ = checkpoint
    with pytest.raises(RuntimeError, match="deserialize object on CUDA device 5 but "
                                           "torch.cuda.device_count.. is 2"):
        torch.load(path, map_location="cuda:5")


def test_the_registry_is_pytorchs_own_again_after_the_node(vnode, tmp_path):
    import torch.serialization as serialization
    original = list(serialization._package_registry)
    handle = vnode(1)
    assert serialization._package_registry != original
    handle.deactivate()
    assert serialization._package_registry == original
    torch.save({"x": torch.ones(2)}, tmp_path / "host.pt")
    assert torch.load(tmp_path / "host.pt")["x"].device == torch.device("cpu")
