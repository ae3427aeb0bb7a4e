"""DDP under torchrun and mp.spawn on virtual GPUs: nccl runs as gloo, gradients really sync."""
import json
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.slow  # every test here starts processes that import torch

DDP_SCRIPT = textwrap.dedent('''
    import os, torch, torch.nn as nn, torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    WRAP = True
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group(backend="nccl")
    device = torch.device(f"cuda:{local_rank}")
    torch.manual_seed(0)
    model = nn.Linear(8, 4).to(device)
    if WRAP:
        model = DDP(model, device_ids=[local_rank])
    torch.manual_seed(100 + dist.get_rank())          # different data on every rank
    x, y = torch.randn(16, 8, device=device), torch.randn(16, 4, device=device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(2):
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
    dist.barrier(device_ids=[local_rank])
    dist.destroy_process_group()
''')


def pdl_grade(*args, timeout=240):
    return subprocess.run([sys.executable, "-m", "grader", *args], capture_output=True,
                          text=True, timeout=timeout)


def read(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def ddp_runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ddp")
    script = folder / "ddp.py"
    script.write_text(DDP_SCRIPT)
    runs = {}
    for wrap in (True, False):
        trace = folder / f"trace-{wrap}.jsonl"
        done = pdl_grade("torchrun", "--gpus", "2", "--nproc-per-node", "2", "--virtual",
                         "--trace", str(trace), "--set", f"WRAP={wrap}", str(script))
        assert done.returncode == 0, done.stderr[-3000:]
        runs[wrap] = read(trace)
    return runs


def step_prints(events, kind):
    prints = {}
    for event in events:
        if event["event"] == "step":
            prints.setdefault(event["rank"], []).append(round(event[kind]["sum"], 6))
    return prints


def test_ranks_merged_into_one_trace(ddp_runs):
    events = ddp_runs[True]
    starts = [e["rank"] for e in events if e["event"] == "start"]
    assert sorted(starts) == [0, 1], "one node per worker; torchrun's agent process gets none"
    inits = [e for e in events if e["event"] == "init_process_group"]
    assert {(e["backend_requested"], e["backend_used"], e["world_size"]) for e in inits} == {
        ("nccl", "gloo", 2)}
    wraps = {e["rank"]: e["param_devices"] for e in events if e["event"] == "ddp_wrap"}
    assert wraps == {0: ["cuda:0"], 1: ["cuda:1"]}


def test_ddp_makes_gradients_equal_across_ranks(ddp_runs):
    grads = step_prints(ddp_runs[True], "grads")
    assert grads[0] == grads[1]
    synced = [e for e in ddp_runs[True] if e["event"] == "collective"
              and e.get("source") == "ddp_gradients"]
    assert len(synced) == 4, "one bucket all-reduced per backward, per rank, for 2 steps"


def test_without_ddp_gradients_differ(ddp_runs):
    """The negative control: without DDP each rank keeps its own gradients."""
    grads = step_prints(ddp_runs[False], "grads")
    assert grads[0] != grads[1]
    assert not [e for e in ddp_runs[False] if e.get("source") == "ddp_gradients"]


def test_simulated_step_times_are_the_same_on_every_run(ddp_runs, tmp_path):
    """The simulated clock of each rank gives the same step times, to the digit, on a rerun
    (whatever the machine did meanwhile); every step carries them."""
    script = tmp_path / "ddp.py"
    script.write_text(DDP_SCRIPT)
    trace = tmp_path / "again.jsonl"
    done = pdl_grade("torchrun", "--gpus", "2", "--nproc-per-node", "2", "--virtual",
                     "--trace", str(trace), str(script))
    assert done.returncode == 0, done.stderr[-3000:]

    def times(events):
        found = {}
        for event in events:
            if event["event"] == "step":
                found.setdefault(event["rank"], []).append(event["sim_step_ms"])
        return found
    first, again = times(ddp_runs[True]), times(read(trace))
    assert sorted(first) == [0, 1] and all(len(t) == 2 and min(t) > 0 for t in first.values())
    assert again == first


def test_mp_spawn_children_get_the_node(tmp_path):
    script = tmp_path / "spawn.py"
    store = tmp_path / "store"
    script.write_text(textwrap.dedent(f'''
        import torch, torch.distributed as dist, torch.multiprocessing as mp

        def work(rank, world):
            dist.init_process_group("nccl", init_method="file://{store}", rank=rank,
                                    world_size=world)
            t = torch.full((2,), float(rank + 1), device=f"cuda:{{rank}}")
            dist.all_reduce(t)
            print(f"rank {{rank}} on {{t.device}} sum {{t.tolist()}}", flush=True)
            dist.destroy_process_group()

        if __name__ == "__main__":
            assert torch.cuda.device_count() == 2
            mp.spawn(work, args=(2,), nprocs=2)
    '''))
    done = pdl_grade("run", "--gpus", "2", "--virtual", str(script))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "rank 0 on cuda:0 sum [3.0, 3.0]" in done.stdout
    assert "rank 1 on cuda:1 sum [3.0, 3.0]" in done.stdout


def test_ddp_moves_inputs_to_its_device_through_a_side_stream(tmp_path):
    """DDP copies inputs that live on another GPU on a side stream (`_get_stream`, then
    `record_stream`), as on real GPUs: the copy is a recorded transfer, and a module on another
    GPU than `device_ids` fails with PyTorch's own device mismatch (not a TypeError of the node's
    own making, as once)."""
    script = tmp_path / "side_stream.py"
    trace = tmp_path / "trace.jsonl"
    script.write_text(textwrap.dedent(f'''
        import torch, torch.nn as nn, torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        dist.init_process_group("nccl", init_method="file://{tmp_path / 'store'}", rank=0,
                                world_size=1)
        ddp = DDP(nn.Linear(8, 8).to("cuda:0"), device_ids=[0])
        print("output on", ddp(torch.randn(4, 8, device="cuda:1")).device)
        wrong = DDP(nn.Linear(8, 8).to("cuda:0"), device_ids=[1])
        try:
            wrong(torch.randn(4, 8, device="cuda:0"))
        except RuntimeError as error:
            print("refused:", error)
        dist.destroy_process_group()
    '''))
    done = pdl_grade("run", "--gpus", "2", "--virtual", "--trace", str(trace), str(script))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "output on cuda:0" in done.stdout
    assert ("refused: Expected all tensors to be on the same device, but found at least two "
            "devices, cuda:1 and cuda:0!") in done.stdout, done.stdout
    moves = [(e["src"], e["dst"]) for e in read(trace) if e["event"] == "to" and e["copied"]]
    assert ("cuda:1", "cuda:0") in moves and ("cuda:0", "cuda:1") in moves, moves


def test_a_collective_the_script_calls_is_recorded_once(tmp_path):
    """torch hands a collective on virtual GPUs' tensors to the node's mode, which calls it
    again: it had been recorded, and charged to the simulated clock, twice."""
    script = tmp_path / "own_all_reduce.py"
    trace = tmp_path / "trace.jsonl"
    script.write_text(textwrap.dedent(f'''
        import torch, torch.distributed as dist
        dist.init_process_group("nccl", init_method="file://{tmp_path / 'store'}", rank=0,
                                world_size=1)
        t = torch.ones(4, device="cuda:0")
        dist.all_reduce(t)
        dist.all_gather([torch.empty(4, device="cuda:0")], t)
        dist.destroy_process_group()
    '''))
    done = pdl_grade("run", "--gpus", "1", "--virtual", "--trace", str(trace), str(script))
    assert done.returncode == 0, done.stderr[-3000:]
    own = [(e["op"], e["site"].rsplit("/", 1)[-1]) for e in read(trace)
           if e["event"] == "collective"]
    assert own == [("all_reduce", "own_all_reduce.py:6"), ("all_gather", "own_all_reduce.py:7")], own


@pytest.mark.parametrize("ending, status", [("sys.exit(3)", 3), ("raise ValueError('x')", 1),
                                            ("pass", 0)])
def test_gloo_process_ends_without_finalisation_but_keeps_exit_code(tmp_path, ending, status):
    """A process that used gloo skips interpreter finalisation (gloo can abort there), yet its
    exit status, its own atexit handlers, unclosed files and the trace's exit record survive."""
    script = tmp_path / "one_rank.py"
    flag = tmp_path / "atexit-ran"
    unclosed = tmp_path / "unclosed.txt"
    trace = tmp_path / "trace.jsonl"
    script.write_text(textwrap.dedent(f'''
        import atexit, sys, torch, torch.distributed as dist
        atexit.register(lambda: open({str(flag)!r}, "w").write("yes"))
        log = open({str(unclosed)!r}, "w")
        log.write("written but never closed")
        dist.init_process_group("nccl", init_method="file://{tmp_path / 'store'}", rank=0,
                                world_size=1)
        dist.all_reduce(torch.ones(2, device="cuda:0"))
        dist.destroy_process_group()
        {ending}
    '''))
    done = pdl_grade("run", "--gpus", "1", "--virtual", "--trace", str(trace), str(script))
    assert done.returncode == status, done.stderr[-3000:]
    assert flag.read_text() == "yes"
    assert unclosed.read_text() == "written but never closed"
    assert any(e["event"] == "exit" for e in read(trace)), "the trace must still be finished"


def test_a_gloo_group_outlives_destroy_process_group_until_the_process_ends(tmp_path):
    """A group's destructor joins gloo's workers holding the GIL, and a worker still dropping
    a finished collective's tensors waits for the GIL: a P6 with all_gather_object hung when
    DDP's reducer let go of the group after destroy_process_group() (4-rank runs beside two
    busy processes: four tries each hung within their first two runs; with the groups kept,
    16 runs of 16 ended). Every gloo group is
    kept until the process ends, without finalisation, so no destructor runs."""
    script = tmp_path / "kept.py"
    script.write_text(textwrap.dedent(f'''
        import torch, torch.nn as nn, torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        from grader.vgpu import clean_exit
        dist.init_process_group("nccl", init_method="file://{tmp_path / 'store'}", rank=0,
                                world_size=1)
        group = dist.distributed_c10d._get_default_group()
        model = DDP(nn.Linear(4, 4).to("cuda:0"), device_ids=[0])
        gathered = [None]
        dist.all_gather_object(gathered, [1.0, 2.0])
        dist.destroy_process_group()
        print("group kept:", any(kept is group for kept in clean_exit._kept_groups))
    '''))
    done = pdl_grade("run", "--gpus", "1", "--virtual", str(script))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "group kept: True" in done.stdout, done.stdout


@pytest.mark.parametrize("backend", ["nccl", "gloo"])
def test_two_ranks_on_one_gpu_fail_under_nccl_as_on_real_gpus(tmp_path, backend):
    """NCCL gives each rank of a group a GPU of its own ("Duplicate GPU detected" in DDP's
    constructor on the course's GPUs); gloo, which runs nccl here, allows it. A TA's P6 with
    every rank on cuda:0 trained on virtual GPUs (8.25 points) and crashes on real ones."""
    script = tmp_path / "ddp.py"
    script.write_text(DDP_SCRIPT.replace('torch.device(f"cuda:{local_rank}")', 'torch.device("cuda:0")')
                      .replace("torch.cuda.set_device(local_rank)", "torch.cuda.set_device(0)")
                      .replace("device_ids=[local_rank]", "device_ids=[0]")
                      .replace('backend="nccl"', f'backend="{backend}"'))
    done = pdl_grade("torchrun", "--gpus", "2", "--nproc-per-node", "2", "--virtual", str(script))
    if backend == "gloo":
        assert done.returncode == 0, done.stderr[-3000:]
    else:
        assert done.returncode != 0
        assert "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 0" in done.stderr
