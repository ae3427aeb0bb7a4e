"""A student's own run on virtual GPUs says its step times on the simulated clock (what the
grader's timing checks read), since the times the script prints are the CPU's wall clock."""
from __future__ import annotations

import inspect
import re
import subprocess
import sys

import torch
import torch.nn as nn

from grader.vgpu import step_report


def train(depth: int, steps: int, data_work: int = 0, per_layer: bool = False) -> None:
    layers = [nn.Linear(64, 64).to(f"cuda:{i % 2}") for i in range(depth)]
    optimizers = [torch.optim.SGD(layer.parameters(), lr=0.1) for layer in layers] if per_layer \
        else [torch.optim.SGD([p for layer in layers for p in layer.parameters()], lr=0.1)]
    for _ in range(steps):
        for _ in range(data_work):   # a batch made before the step's forward pass
            torch.randn(256, 256, device="cuda:0") @ torch.randn(256, 256, device="cuda:0")
        x = torch.randn(32, 64, device="cuda:0")
        for layer in layers:
            x = layer(x.to(next(layer.parameters()).device))
        for optimizer in optimizers:
            optimizer.zero_grad()
        x.sum().backward()
        for optimizer in optimizers:
            optimizer.step()


# The same training as a script of its own, for `pdl-grade run`.
TRAIN = ("import torch\nimport torch.nn as nn\n\n" + inspect.getsource(train)
         + "\n\ntrain(2, 5)\nprint(\"trained\")\n")


def simulated_steps(depth: int, data_work: int = 0,
                    per_layer: bool = False) -> step_report.SimulatedSteps:
    from grader.vgpu import activate
    handle = activate(2, force_virtual=True)
    steps = step_report.watch(handle)
    try:
        train(depth, steps=4, data_work=data_work, per_layer=per_layer)
    finally:
        steps.close()
        handle.deactivate()
    return steps


def simulated_step_ms(depth: int) -> list[float]:
    return simulated_steps(depth).step_ms()


def test_a_steps_time_is_its_training_work_as_the_grader_measures_it():
    """From the step's first forward pass to its optimizer step (practical_measures.
    work_seconds): data made before the forward is not the method's time. Step to step, a TA's
    P6 run had said DataParallel was faster where the grader's checks said DDP."""
    plain, with_data = simulated_steps(2), simulated_steps(2, data_work=3)
    assert with_data.step_ms() == plain.step_ms()
    gaps = [(b - a) / 1e6 for a, b in zip(with_data.done_ns, with_data.done_ns[1:])]
    assert min(gaps) > max(with_data.step_ms()), (gaps, with_data.step_ms())


def test_step_times_are_the_simulated_clocks_the_same_every_run_and_grow_with_depth():
    shallow, again, deep = (simulated_step_ms(d) for d in (2, 2, 6))
    assert len(shallow) == 3, f"4 optimizer steps give 3 step times (the first left out): {shallow}"
    assert shallow == again, f"the simulated clock should not depend on the machine's load: " \
                             f"{shallow} then {again}"
    assert min(deep) > max(shallow), f"6 layers should take longer than 2: {deep} vs {shallow}"


def test_nothing_is_said_without_an_optimizer_step_and_one_step_says_why(vnode):
    handle = vnode(2)
    steps = step_report.watch(handle)
    assert steps.summary() is None, "a script that never steps gets no line"
    train(2, steps=1)
    steps.close()
    assert "1 optimizer step, no step time" in steps.summary()


def test_only_a_steps_first_forward_pass_goes_through_a_module_hook(vnode):
    """A global module hook sends every module call through nn.Module's slow path; the report
    needs only each step's first forward pass, so its hook is gone after that one until the
    next optimizer step."""
    from torch.nn.modules import module as module_hooks
    handle = vnode(2)
    before = len(module_hooks._global_forward_pre_hooks)
    steps = step_report.watch(handle)
    layer = nn.Linear(8, 8).to("cuda:0")
    optimizer = torch.optim.SGD(layer.parameters(), lr=0.1)
    try:
        for step in range(2):
            assert len(module_hooks._global_forward_pre_hooks) == before + 1, (
                f"step {step}: a hook should wait for the step's first forward pass")
            layer(torch.randn(4, 8, device="cuda:0")).sum().backward()
            assert len(module_hooks._global_forward_pre_hooks) == before, (
                f"step {step}: after the first forward pass no report hook should be left")
            optimizer.step()
    finally:
        steps.close()
    assert len(module_hooks._global_forward_pre_hooks) == before, "close() removes the hooks"
    assert len(steps.work_ns) == 2 and None not in steps.work_ns


def test_no_counting_where_the_grader_traces_the_run(tmp_path):
    from grader.vgpu import activate
    handle = activate(2, str(tmp_path / "t.jsonl"), force_virtual=True)
    try:
        assert step_report.watch(handle) is None, "graded runs read the trace's step records"
    finally:
        handle.deactivate()


def test_pdl_grade_run_ends_with_the_simulated_step_time(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    done = subprocess.run([sys.executable, "-m", "grader", "run", "--gpus", "2", "--virtual",
                           str(script)], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "trained", "the script's own output stays as it was"
    said = re.search(r"virtual GPUs: 5 optimizer steps; on the simulated clock .* the median step "
                     r"took (\d+\.\d+) ms", done.stderr)
    assert said and float(said.group(1)) > 0, (
        f"`pdl-grade run` should end by saying the simulated step time; stderr:\n{done.stderr}")
    assert "wall clock" in done.stderr and "simulated" in done.stderr
    # A handout's table asks for a total time too: the steps after the first, summed.
    total = re.search(r"the 4 steps after the first (\d+\.\d+) ms in all", done.stderr)
    assert total and float(total.group(1)) >= 4 * float(said.group(1)) * 0.5, done.stderr


def test_times_read_off_cuda_events_are_said_to_be_the_simulated_clocks():
    """A TA's audit: a script timing its steps with torch.cuda.Event printed the simulated
    clock's own times and was told they were this computer's wall clock, to be thrown away."""
    from grader.vgpu import activate
    handle = activate(2, force_virtual=True)
    steps = step_report.watch(handle)
    try:
        train(2, steps=2)
        assert "this computer's wall clock, not GPU speed: without" in steps.summary()
        start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
        start.record()
        train(2, steps=2)
        end.record()
        end.synchronize()
        start.elapsed_time(end)
        said = steps.summary()
    finally:
        steps.close()
        handle.deactivate()
    assert "measured with torch.cuda.Event are on this simulated clock too" in said, said
    assert "time.perf_counter() are this computer's wall clock" in said, said


def test_one_optimizer_per_layer_takes_one_step_per_backward():
    """Both layers' optimizers stepped after the same backward: 4 training steps of about the
    one optimizer's time, not 8 steps whose every other time is the gap between two optimizers'
    steps (adv53 F4: microseconds read as DataParallel's step time)."""
    whole, per_layer = simulated_steps(2), simulated_steps(2, per_layer=True)
    assert len(per_layer.done_ns) == 4 and len(per_layer.step_ms()) == 3, (
        f"Expected: 4 steps, 3 timed. Observed: {len(per_layer.done_ns)} steps, times "
        f"{per_layer.step_ms()}. Where to look: grader/vgpu/step_report.py SimulatedSteps")
    assert min(per_layer.step_ms()) > 0.9 * min(whole.step_ms()), (
        f"Expected: each step about one optimizer's step time, {whole.step_ms()} ms. "
        f"Observed: {per_layer.step_ms()} ms. Where to look: grader/vgpu/step_report.py")


def test_another_optimizers_steps_are_no_steps_of_the_ddp_model(vnode):
    """A probe on the model's detached output with an optimizer of its own, stepped twice per
    step of the model wrapped in DDP: the summary counts the model's steps, as the grader's
    trace does (side steps, grader/vgpu/side_steps.py), not three times as many."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    steps = step_report.watch(vnode(1))
    dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1)
    try:
        model = DDP(nn.Linear(16, 16).to("cuda:0"))
        probe = nn.Linear(16, 1).to("cuda:0")
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        probing = torch.optim.SGD(probe.parameters(), lr=0.1)
        for _ in range(3):
            out = model(torch.randn(8, 16, device="cuda:0"))
            out.sum().backward()
            for _ in range(2):
                probing.zero_grad()
                probe(out.detach()).sum().backward()
                probing.step()
            optimizer.step()
            optimizer.zero_grad()
    finally:
        steps.close()
        dist.destroy_process_group()
    assert len(steps.done_ns) == 3, f"3 steps of the model expected, counted {len(steps.done_ns)}"
