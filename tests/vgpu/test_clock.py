"""The simulated clock against hand-computed timelines.

A cost model with round numbers makes every expectation a line of arithmetic: a Linear layer
of 100x100 weights (no bias) on a batch of 10 rows does 2 x 10 x 100 x 100 = 2e5 FLOPs, so at
1e9 FLOP/s it takes T = 0.2 ms (its backward 2T); memory traffic is free; each operation costs
the host 1 us to launch; copies cost bytes over the link (10 rows: 4000 bytes, 0.4 ms at
1e7 B/s). Small tensors and a slow nominal GPU keep the real work small. Every time below is
in ms.
"""
import dataclasses
import time

import pytest
import torch
import torch.nn as nn

from grader.vgpu.cost_model import CostModel

D, B = 100, 10
T = 0.2          # ms: one layer's forward on the whole batch
HOST = 0.001     # ms: one launch on the host
MODEL = CostModel(host_op_s=1e-6, kernel_s=0.0, flops_per_s=1e9, memory_bytes_per_s=1e18,
                  backward_factor=2, link_bytes_per_s=1e7, link_s=0.0,
                  host_link_bytes_per_s=1e18, host_link_s=0.0, collective_s=0.0)


def link_ms(rows: int, model: CostModel = MODEL) -> float:
    """A copy of `rows` activations (rows x D floats) between two GPUs."""
    return rows * D * 4 / model.link_bytes_per_s * 1000


@pytest.fixture
def timed(vnode):
    """A virtual node of n GPUs whose clock uses `model` (default: MODEL above)."""
    def make(gpus: int, model: CostModel = MODEL):
        handle = vnode(gpus)
        handle.node.clock.model = model
        return handle.node.clock
    return make


def layer(device) -> nn.Module:
    return nn.Linear(D, D, bias=False).to(device)


def sync_all():
    for i in range(torch.cuda.device_count()):
        torch.cuda.synchronize(i)


def measured_ms(clock, work) -> float:
    """Simulated ms of `work`, from idle GPUs to idle GPUs (as the HW3 probe measures)."""
    sync_all()
    started = clock.host()
    work()
    sync_all()
    return (clock.host() - started) / 1e6  # the clock counts ns


def naive_mp_step_ms(clock, depth: int, gpus: int) -> float:
    """One training step of `depth` layers in contiguous blocks over `gpus` GPUs (HW3)."""
    devices = [f"cuda:{i * gpus // depth}" for i in range(depth)]
    layers = [layer(d) for d in devices]
    x = torch.randn(B, D, device=devices[0])
    y = torch.randn(B, D, device=devices[-1])
    optimizer = torch.optim.SGD([p for l in layers for p in l.parameters()], lr=0.1)

    def step():
        optimizer.zero_grad()
        h = x
        for module, device in zip(layers, devices):
            h = module(h.to(device))
        nn.functional.mse_loss(h, y).backward()
        optimizer.step()

    step()  # warm-up, as every measurement does
    return measured_ms(clock, step)


# -- naive model parallelism: one GPU at a time -------------------------------------------------
@pytest.mark.parametrize("depth,gpus", [(6, 1), (6, 2), (6, 3), (12, 2), (24, 2), (20, 5)])
def test_naive_model_parallelism_is_sequential(timed, depth, gpus):
    clock = timed(gpus)
    # Forward T per layer, backward 2T, every GPU boundary crossed once each way; the first
    # launch is the only host time not hidden behind the GPUs' work.
    expected = HOST + 3 * depth * T + 2 * (gpus - 1) * link_ms(B)
    assert naive_mp_step_ms(clock, depth, gpus) == pytest.approx(expected, abs=1e-6)


def test_more_gpus_give_no_speed_up_and_time_is_linear_in_depth(timed):
    clock = timed(5)
    two, five = naive_mp_step_ms(clock, 20, 2), naive_mp_step_ms(clock, 20, 5)
    assert five > two, "more GPUs only add transfers to a sequential chain"
    by_depth = [naive_mp_step_ms(clock, depth, 2) for depth in (6, 12, 24)]
    assert by_depth[1] - by_depth[0] == pytest.approx(3 * 6 * T, abs=1e-6)
    assert by_depth[2] - by_depth[1] == pytest.approx(3 * 12 * T, abs=1e-6)


def test_a_host_bound_step_costs_its_launches(timed):
    """Tiny layers: the GPUs wait for the host, and time counts the operations launched."""
    clock = timed(2, dataclasses.replace(MODEL, flops_per_s=1e18))  # the layers take no time
    x = torch.randn(4, D, device="cuda:0")
    l0, l1 = layer("cuda:0"), layer("cuda:1")
    with torch.no_grad():
        # The first linear and the copy are launched one after the other; the copy then takes
        # its time on the link; the second linear was launched meanwhile and takes no time.
        assert measured_ms(clock, lambda: l1(l0(x).to("cuda:1"))) == pytest.approx(
            2 * HOST + link_ms(4), abs=1e-9)


def test_backward_costs_only_what_the_loss_depends_on(timed):
    """A detached activation and a forward nobody back-propagates cost their forward only."""
    clock = timed(1)
    l0, l1 = layer("cuda:0"), layer("cuda:0")
    x, y = torch.randn(B, D, device="cuda:0"), torch.randn(B, D, device="cuda:0")

    def step():
        l0(x)                                           # forward only: its result is dropped
        h = l1(l0(x).detach())                          # backward stops at the detach
        nn.functional.mse_loss(h, y).backward()
    step()
    # Three forwards (3T) and one backward (2T); the first launch is the only host time seen.
    assert measured_ms(clock, step) == pytest.approx(HOST + 5 * T, abs=1e-9)


# -- a copy waits for its input; a synchronize for its GPU --------------------------------------
def test_a_copy_waits_for_its_input_and_other_gpus_do_not(timed):
    timed(2)
    l0, l1 = layer("cuda:0"), layer("cuda:1")
    x0, x1 = torch.randn(B, D, device="cuda:0"), torch.randn(B, D, device="cuda:1")
    start, own_work, copied = (torch.cuda.Event(enable_timing=True) for _ in range(3))
    sync_all()
    start.record()
    with torch.no_grad():
        a = l0(l0(x0))                       # GPU 0: launched at 1 and 2 us, busy until 1us + 2T
        b = l1(x1)                           # GPU 1: launched at 3 us, its own work only
        own_work.record(torch.cuda.current_stream(1))
        moved = a.to("cuda:1")               # launched at 4 us, waits for GPU 0's result
        copied.record(torch.cuda.current_stream(1))
    assert start.elapsed_time(own_work) == pytest.approx(3 * HOST + T, abs=1e-9)
    assert start.elapsed_time(copied) == pytest.approx(HOST + 2 * T + link_ms(B), abs=1e-9)
    assert moved.device == torch.device("cuda:1") and b.device == torch.device("cuda:1")


def test_synchronize_waits_for_its_gpu_and_item_for_the_value(timed):
    clock = timed(2)
    l0, l1 = layer("cuda:0"), layer("cuda:1")
    x0, x1 = torch.randn(B, D, device="cuda:0"), torch.randn(B, D, device="cuda:1")
    sync_all()
    t0 = clock.host()
    with torch.no_grad():
        l0(x0)                               # GPU 0 busy until 1us + T
        out = l1(l1(x1))                     # GPU 1 busy until 2us + 2T
    assert (clock.host() - t0) / 1e6 == pytest.approx(3 * HOST), "launching does not wait"
    torch.cuda.synchronize()                 # the current GPU only, as in CUDA
    assert (clock.host() - t0) / 1e6 == pytest.approx(HOST + T, abs=1e-9)
    total = out.sum()                        # queued behind GPU 1's work ...
    total.item()                             # ... whose value the host waits for
    assert (clock.host() - t0) / 1e6 == pytest.approx(2 * HOST + 2 * T, abs=1e-9)
    sync_all()                               # every GPU: nothing left to wait for
    assert (clock.host() - t0) / 1e6 == pytest.approx(2 * HOST + 2 * T, abs=1e-9)


# -- DataParallel: replicas in parallel, the traffic on GPU 0 ------------------------------------
@pytest.mark.parametrize("gpus", [2, 4, 5])
def test_data_parallel_replicas_run_in_parallel_and_gpu0_carries_the_traffic(timed, gpus):
    clock = timed(gpus, dataclasses.replace(MODEL, host_op_s=0.0))
    model = nn.DataParallel(layer("cuda:0"))
    x = torch.randn(B, D, device="cuda:0")
    with torch.no_grad():
        model(x)
        forward = measured_ms(clock, lambda: model(x))
    rows = [len(c) for c in torch.arange(B).chunk(gpus)]
    params = D * D * 4 / MODEL.link_bytes_per_s * 1000
    # GPU 0 sends every other GPU its chunk and a copy of the weights, runs its own replica
    # (T over its share of the batch) once the copies are out, then receives every output.
    expected = (sum(link_ms(r) for r in rows[1:]) + (gpus - 1) * params + T * rows[0] / B
                + sum(link_ms(r) for r in rows[1:]))
    assert forward == pytest.approx(expected, abs=1e-9)
    assert forward < T + (gpus - 1) * params + 2 * link_ms(B), "the replicas overlap"


def test_data_parallel_step_against_one_gpu(timed):
    """A full step: backward scatters the output's gradient, runs the replicas' backward in
    parallel, and reduces every replica's weight gradient onto GPU 0."""
    clock = timed(2, dataclasses.replace(MODEL, host_op_s=0.0))
    x = torch.randn(B, D, device="cuda:0")
    y = torch.randn(B, D, device="cuda:0")

    def step_of(model):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

        def step():
            optimizer.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
        step()
        return measured_ms(clock, step)

    single = step_of(layer("cuda:0"))
    assert single == pytest.approx(3 * T, abs=1e-9)
    params = D * D * 4 / MODEL.link_bytes_per_s * 1000
    half = link_ms(B // 2)
    forward = half + params + T / 2 + half
    backward = half + 2 * T / 2 + params   # scatter the gradient, replicas, reduce onto GPU 0
    assert step_of(nn.DataParallel(layer("cuda:0"))) == pytest.approx(forward + backward,
                                                                      abs=1e-9)


# -- DDP: each bucket's all-reduce overlaps the rest of backward -------------------------------
@pytest.fixture
def fake_group():
    """A process group of 2 or 4 ranks inside this process (PyTorch's fake backend); DDP's
    gradient buckets then go through a comm hook, which the node times as an all-reduce."""
    import torch.distributed as dist
    from torch.testing._internal.distributed.fake_pg import FakeStore

    def make(world_size):
        dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=world_size)
    yield make
    if dist.is_initialized():
        dist.destroy_process_group()


def _returned(state, bucket):
    future = torch.futures.Future()
    future.set_result(bucket.buffer())
    return future


@pytest.mark.parametrize("world_size", [2, 4])
def test_ddp_all_reduce_overlaps_backward(timed, fake_group, world_size):
    from torch.nn.parallel import DistributedDataParallel as DDP
    model = dataclasses.replace(MODEL, link_bytes_per_s=2e8)
    clock = timed(1, model)
    fake_group(world_size)
    # A tiny bucket cap: each weight is a bucket of its own (after DDP's first step).
    ddp = DDP(nn.Sequential(layer("cuda:0"), layer("cuda:0")), device_ids=[0],
              bucket_cap_mb=0.01)
    ddp.register_comm_hook(None, _returned)
    x, y = torch.randn(B, D, device="cuda:0"), torch.randn(B, D, device="cuda:0")
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)

    def step():
        optimizer.zero_grad()
        nn.functional.mse_loss(ddp(x), y).backward()
        optimizer.step()
    step()
    # Ring all-reduce of one bucket (a 100x100 weight, 40 kB): 2 (n-1)/n x 40 kB over 2e8 B/s.
    a = 2 * (world_size - 1) / world_size * D * D * 4 / model.link_bytes_per_s * 1000
    # The second layer's gradient is ready after 2T of forward and 2T of its backward; its
    # all-reduce runs while the first layer's backward (2T) does; the first layer's bucket
    # follows when both its gradient and the link are ready.
    second_ready, first_ready = 4 * T, 6 * T
    expected = HOST + max(second_ready + a, first_ready) + a
    assert measured_ms(clock, step) == pytest.approx(expected, abs=1e-9)
    assert expected < HOST + 6 * T + 2 * a, "only the last bucket's all-reduce is exposed"


# -- micro-batches: the stages of a pipeline overlap ---------------------------------------------
@pytest.mark.parametrize("micro_batches", [1, 2, 5])
def test_micro_batches_overlap_the_stages(timed, micro_batches):
    fast_link = dataclasses.replace(MODEL, link_bytes_per_s=1e8)
    clock = timed(2, fast_link)
    stage0, stage1 = layer("cuda:0"), layer("cuda:1")
    x = torch.randn(B, D, device="cuda:0")

    def pipeline():
        with torch.no_grad():
            return [stage1(stage0(chunk).to("cuda:1")) for chunk in x.chunk(micro_batches)]
    pipeline()
    t = T / micro_batches                     # a stage on one micro-batch
    copy = link_ms(B // micro_batches, fast_link)
    # GPU 1 is the bottleneck: it starts after the first micro-batch's stage 0, then copies
    # in and runs stage 1 for each micro-batch while GPU 0 works on the next ones.
    expected = HOST + t + micro_batches * (copy + t)
    assert measured_ms(clock, pipeline) == pytest.approx(expected, abs=1e-9)


# -- the verdict does not depend on the machine --------------------------------------------------
def test_a_slow_host_gives_the_same_simulated_times(timed):
    from torch.nn.modules.module import register_module_forward_pre_hook
    clock = timed(3)
    quick = [naive_mp_step_ms(clock, 6, g) for g in (2, 3)]
    handle = register_module_forward_pre_hook(lambda module, args: time.sleep(0.002))
    try:
        slowed_at = time.perf_counter()
        slow = [naive_mp_step_ms(clock, 6, g) for g in (2, 3)]
        slowed_by = time.perf_counter() - slowed_at
    finally:
        handle.remove()
    assert slowed_by > 0.05, "the host really was slowed"
    assert slow == quick


def test_events_read_the_simulated_clock_and_perf_counter_the_wall_clock(timed):
    timed(1)
    l0, x = layer("cuda:0"), torch.randn(B, D, device="cuda:0")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    sync_all()
    wall = time.perf_counter()
    start.record()
    with torch.no_grad():
        l0(x)
    end.record()
    end.synchronize()
    assert start.elapsed_time(end) == pytest.approx(HOST + T, abs=1e-9)
    assert time.perf_counter() > wall, "time.perf_counter stays the wall clock"
