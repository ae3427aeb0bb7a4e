"""Per-GPU memory is accounted like PyTorch's allocator: 512-byte blocks, freed with the tensor."""
import gc

import torch
import torch.nn as nn


def test_allocations_and_frees_are_counted(vnode):
    vnode(2)
    assert torch.cuda.memory_allocated(0) == 0
    a = torch.empty(1000, device="cuda:0")          # 4000 bytes -> 4096
    b = torch.empty(10, dtype=torch.float64, device="cuda:1")  # 80 -> 512
    assert torch.cuda.memory_allocated(0) == 4096
    assert torch.cuda.memory_allocated(1) == 512
    view = a[10:]
    assert torch.cuda.memory_allocated(0) == 4096, "a view allocates nothing"
    del a, view
    gc.collect()
    assert torch.cuda.memory_allocated(0) == 0
    assert torch.cuda.max_memory_allocated(0) == 4096
    torch.cuda.reset_peak_memory_stats(0)
    assert torch.cuda.max_memory_allocated(0) == 0
    del b


def test_model_memory_matches_hand_computed_sizes(vnode):
    vnode(2)
    dim = 256
    model = nn.Linear(dim, dim).to("cuda:1")
    weight = dim * dim * 4                 # 262144 bytes, a multiple of 512
    bias = -(-dim * 4 // 512) * 512        # 1024 bytes
    assert torch.cuda.memory_allocated(1) == weight + bias
    model(torch.randn(8, dim, device="cuda:1")).sum().backward()
    for p in model.parameters():
        assert p.grad is not None
    # Parameters plus their gradients (activations of the finished step are freed).
    assert torch.cuda.memory_allocated(1) == 2 * (weight + bias)
    optimizer = torch.optim.Adam(model.parameters())
    optimizer.step()
    # Adam keeps two moments per parameter (plus host-side step counters).
    assert torch.cuda.memory_allocated(1) == 4 * (weight + bias)
    assert torch.cuda.memory_allocated(0) == 0
    del optimizer
    gc.collect()
    assert torch.cuda.memory_allocated(1) == 2 * (weight + bias), "freed with the optimizer"
    free, total = torch.cuda.mem_get_info(1)
    assert 0 < free < total


def test_a_model_the_program_let_go_of_is_freed_while_its_run_is_traced(tmp_path):
    """The trace's step hook kept the last optimizer's parameters (and so their gradients) until
    the next step: HW3's Task 4 'measured' memory of its first configuration came out 1.8 MiB
    per GPU too small, the DEPTH-24 model before it being freed during its peak."""
    from grader.vgpu import activate, active
    assert active() is None
    handle = activate(1, force_virtual=True, trace_path=str(tmp_path / "trace.jsonl"))
    try:
        assert handle.observer is not None, "the run is traced: its step hook is installed"

        def train_once():
            model = nn.Sequential(*[nn.Linear(256, 256) for _ in range(4)]).to("cuda:0")
            optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
            model(torch.randn(8, 256, device="cuda:0")).sum().backward()
            optimizer.step()
        train_once()
        gc.collect()
        assert torch.cuda.memory_allocated(0) == 0, "nothing of a model no one holds stays allocated"
    finally:
        handle.deactivate()
