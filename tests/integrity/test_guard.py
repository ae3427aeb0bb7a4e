"""The runtime's own checks (grader/vgpu/guard.py): what it installed is still what runs, and
what the submission's code does to the interpreter is seen whatever names it used.

The fast tests call `make_check` in this process (every replacement undone by monkeypatch);
the slow ones run scripts in the sandbox and read the run's integrity problems.
"""
from __future__ import annotations

import builtins
import itertools
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
import torch

from grader.vgpu import guard
from grader.vgpu.patcher import Patcher
from test_seal import run_source


def test_nothing_replaced_nothing_found():
    assert guard.make_check()() == []


@pytest.mark.parametrize("owner, name", [
    (torch.cuda, "device_count"), (torch, "allclose"), (torch.nn.Module, "__call__"),
    (torch.nn.Linear, "forward"), (torch.optim.SGD, "step"), (builtins, "isinstance"),
    (json.encoder.JSONEncoder, "encode"), (torch.Tensor, "backward"),
    (builtins, "sorted")])
def test_a_replaced_function_is_named_whatever_route_replaced_it(monkeypatch, owner, name):
    check = guard.make_check()
    original = getattr(owner, name)
    monkeypatch.setattr(owner, name, lambda *a, **k: original(*a, **k))  # still works
    found = check()
    monkeypatch.undo()
    assert len(found) == 1 and found[0].endswith(f".{name}"), found


def test_print_replaced_for_rank_zero_is_no_replacement(monkeypatch):
    """DDP code (torchvision's references, DeiT, MAE) replaces builtins.print so that only
    rank 0 prints; the runtime never relies on print (isinstance, sorted: still watched)."""
    check = guard.make_check()
    original = builtins.print
    monkeypatch.setattr(builtins, "print", lambda *a, **k: original(*a, **k))
    assert check() == []


def test_a_method_added_in_front_of_an_inherited_one_is_named(monkeypatch):
    # torch.Tensor.to comes from torch._C.TensorBase: `type(x).to = f` adds a `to` in front.
    check = guard.make_check()
    assert "to" not in vars(torch.Tensor)
    monkeypatch.setattr(torch.Tensor, "to", lambda self, *a, **k: self, raising=False)
    assert check() == ["torch.Tensor.to"]


def test_data_cached_on_a_class_is_no_replacement(monkeypatch):
    check = guard.make_check()
    monkeypatch.setattr(torch.Tensor, "__slotnames__", [], raising=False)  # copyreg's cache
    assert check() == []


def test_a_grader_functions_code_swapped_is_named(monkeypatch):
    from grader.vgpu import trace
    check = guard.make_check()
    monkeypatch.setattr(trace.Trace.emit, "__code__", (lambda self, event, **f: None).__code__)
    assert check() == ["grader.vgpu.trace.Trace.emit.__code__"]


def test_the_nodes_own_patches_are_not_replacements():
    patcher = Patcher()
    check = guard.make_check(patcher)
    try:
        patcher.set(torch.cuda, "device_count", lambda: 3)
        patcher.set(torch.Tensor, "get_device", lambda self: 0)
        assert check() == []
    finally:
        patcher.restore()


def test_the_nodes_mode_with_its_method_replaced_is_named(vnode):
    """Where the C path is built, the method torch calls on the node's mode is the mode's own
    attribute: a script that finds the mode on torch's stack and swaps it is found out."""
    handle = vnode(2)
    entries = guard._mode_entries(handle)
    assert guard._mode_and_hooks_in_place(handle, entries) == []
    mode = handle.modes[0]
    installed = vars(mode).get("__torch_function__")
    mode.__torch_function__ = lambda func, types, args=(), kwargs=None: func(*args)
    try:
        found = guard._mode_and_hooks_in_place(handle, entries)
    finally:
        if installed is None:
            del mode.__torch_function__
        else:
            mode.__torch_function__ = installed
    assert found == ["the node's torch-function mode (its __torch_function__ replaced)"], found


def test_torch_wrapping_its_own_function_is_no_replacement(monkeypatch):
    import functools
    check = guard.make_check()
    original = torch.manual_seed

    @functools.wraps(original)
    def wrapper(*a, **k):          # this test's file is no torch file: a replacement
        return original(*a, **k)
    monkeypatch.setattr(torch, "manual_seed", wrapper)
    assert check() == ["torch.manual_seed"]
    monkeypatch.undo()
    check = guard.make_check()
    # how torch._dynamo wraps torch.manual_seed when it is imported (torch/_compile.py)
    monkeypatch.setattr(torch, "manual_seed", torch._disable_dynamo(torch.manual_seed))
    assert check() == [], "torch._dynamo's own wrapper, written in torch's files"


def test_extra_owners_are_watched_too():
    namespace = {"measure": lambda: 1}
    check = guard.make_check(extra_owners=[("grader.harness.hw3_probe", namespace)])
    namespace["measure"] = lambda: 2
    assert check() == ["grader.harness.hw3_probe.measure"]


# -- in real runs --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def run_forked():
    """source -> the Observation of a run of it as practical4's script, forked, as a grading's
    runs are, from one fork server for the whole module (torch imported once, not per test;
    fresh runs where this machine cannot fork them)."""
    from grader.harness.execute import run_script, start_fork_server
    submission = Path(tempfile.mkdtemp(prefix="pdl-guard-", dir="/var/tmp"))
    (submission / "practical4").mkdir()
    for folder in (submission, submission / "practical4"):
        os.chmod(folder, 0o755)    # read by the sandbox's unprivileged user
    forks = start_fork_server(submission)
    scripts = itertools.count()

    def run(source: str):
        script = submission / "practical4" / f"script_{next(scripts)}.py"
        script.write_text(source)
        os.chmod(script, 0o644)
        return run_script(submission, f"practical4/{script.name}", gpus=2, timeout_s=120,
                          forks=forks)
    yield run
    if forks is not None:
        forks.close()
    shutil.rmtree(submission, ignore_errors=True)


def problems(run_forked, source) -> list[str]:
    return run_forked(source).integrity


ENDINGS = {
    "os._exit(0)": ("import os, torch\ntorch.ones(1, device='cuda:0')\nos._exit(0)\n", []),
    "sys.exit(0)": ("import sys, torch\ntorch.ones(1, device='cuda:0')\nsys.exit(0)\n", []),
    "an exception": ("import torch\ntorch.ones(1, device='cuda:0')\nraise ValueError('x')\n", []),
    "posix._exit(0)": ("import posix, torch\ntorch.ones(1, device='cuda:0')\nposix._exit(0)\n",
                       ["without the instrumentation's closing check"]),
    "atexit cleared": ("import atexit, torch\ntorch.ones(1, device='cuda:0')\natexit._clear()\n",
                       ["without the instrumentation's closing check"]),
    "exec into a new python": ("import os, sys, torch\ntorch.ones(1, device='cuda:0')\n"
                               "os.execv(sys.executable, [sys.executable, '-c', 'pass'])\n",
                               ["without the instrumentation's closing check"]),
}


@pytest.mark.slow
@pytest.mark.parametrize("ending", list(ENDINGS))
def test_only_ending_around_the_instrumentation_is_a_problem(tmp_path, ending):
    # Fresh interpreters, as on real GPUs: a forked run's end runs the closing check itself,
    # atexit cleared or not (grader/vgpu/clean_exit.py).
    source, expected = ENDINGS[ending]
    found = run_source(tmp_path, source).integrity
    assert len(found) == len(expected) and all(e in p for e, p in zip(expected, found)), (
        f"{ending}: expected {expected or 'no problem'}, observed {found}")


TRIPWIRES = {
    "gc.get_objects through an alias": "import gc as g\nobjects = g.get_objects()\n",
    "sys._getframe through a list": "import sys\nf = [sys][0]._getframe()\n",
    "getattr with a name from data": "import sys\nname = ''.join(reversed('emarfteg_'))\n"
                                     "f = getattr(sys, name)()\n",
    "a function's code object": "def f():\n    pass\nc = getattr(f, '__co' + 'de__')\n",
    "the process's memory": "p = '/proc/' + str(__import__('os').getpid()) + '/mem'\n"
                            "try:\n    open(p, 'rb')\nexcept PermissionError:\n    pass\n",
    "an audit hook of its own": "import sys\ntry:\n    sys.addaudithook(lambda *a: None)\n"
                                "except RuntimeError:\n    pass\n",
    "a profile function of its own": "import sys\nsys.setprofile(lambda *a: None)\n"
                                     "sys.setprofile(None)\n",
    "a profile function for every new thread": (
        "import threading\nthreading.setprofile(lambda *a: None)\n"
        "t = threading.Thread(target=print)\nt.start(); t.join()\nthreading.setprofile(None)\n"),
    # /dev/fd links to /proc/self/fd, so its parent is /proc/self: the memory, by a path that
    # names no /proc (the name read from data, as a forger would)
    "the process's memory through /dev/fd": "p = ''.join(reversed('mem/../df/ved/'))\n"
                                            "try:\n    open(p, 'rb')\n"
                                            "except PermissionError:\n    pass\n",
    "ctypes from the submission's own code": "import ctypes\nctypes.CDLL(None)\n",
    "inspect.stack from the submission's own code": "import inspect\ncaller = inspect.stack()[0]\n",
    "a torch class renamed": "import torch\ntorch.nn.Linear.__qualname__ = 'Dense'\n",
    "the defaults of torch's function read": "import torch\nd = torch.nn.functional.dropout.__defaults__\n",
    "the process's memory through a link of its own": (
        "import os\nos.symlink(''.join(reversed('mem/fles/corp/')), 'notes.bin')\n"
        "try:\n    open('notes.bin', 'rb')\nexcept PermissionError:\n    pass\n"),
}


@pytest.mark.slow
@pytest.mark.parametrize("route", list(TRIPWIRES))
def test_walking_the_interpreter_is_seen_at_run_time(run_forked, route):
    found = problems(run_forked, "import torch\ntorch.ones(1, device='cuda:0')\n" +
                     TRIPWIRES[route])
    assert any("walked or rewrote the interpreter" in p for p in found), (route, found)


HONEST_RUN = r"""
import collections, dataclasses, enum, logging, traceback, typing, warnings, inspect
import torch
logging.basicConfig(level=logging.INFO)
logging.info("step %d", 1)
warnings.warn("a warning")
Point = collections.namedtuple("Point", "x y")
@dataclasses.dataclass
class Config:
    depth: int = 6
class Color(enum.Enum):
    RED = 1
T = typing.TypeVar("T")
try:
    raise ValueError("caught")
except ValueError:
    traceback.print_exc()
print(inspect.signature(torch.nn.Linear.__init__))
model = torch.nn.Linear(4, 4).to("cuda:0")
torch.save(model.state_dict(), "ckpt.pt")
print(torch.load("ckpt.pt").keys())
import copy, pickle
print(len(pickle.dumps([1.0, 2.0])), copy.deepcopy(model).weight.device)
"""


PROFILED = r"""
import cProfile, io, pstats
import torch
profiler = cProfile.Profile()
profiler.enable()
x = torch.ones(64, 64, device="cuda:0") @ torch.ones(64, 64, device="cuda:0")
profiler.disable()
report = io.StringIO()
pstats.Stats(profiler, stream=report).sort_stats("cumulative").print_stats(5)
print(report.getvalue()[:300])
cProfile.run("torch.ones(4, device='cuda:1') * 2")
left_on = cProfile.Profile()
left_on.enable()   # never disabled: still profiling when the script ends
"""


@pytest.mark.slow
def test_profiling_with_cprofile_is_no_problem(run_forked):
    """cProfile's profiler is C code that counts calls and hands no frame to Python: the
    standard way to profile a training step, never a finding (a profile function of Python
    code, which is handed every frame, is: TRIPWIRES)."""
    observation = run_forked(PROFILED)
    assert observation.ok, observation.stderr[-2000:]
    assert observation.integrity == [], observation.integrity


LIBRARIES_USING_CTYPES = r"""
import multiprocessing
import pynvml
import torch
try:                      # what torch and the grader do on a real GPU: NVML through ctypes
    pynvml.nvmlInit()
    pynvml.nvmlShutdown()
except pynvml.NVMLError as error:
    print("no NVML here:", error)
from torch.distributed.elastic.utils.logging import get_logger
get_logger().warning("devices: %s", torch.cuda.device_count())   # inspect.stack() in torch
counter = multiprocessing.Value("i", 0)       # shared memory made of ctypes objects
with counter.get_lock():
    counter.value += 1
print(counter.value, len(multiprocessing.Array("d", 4)), torch.ones(2, device="cuda:0").sum())
"""


CHECKPOINT_ON_SIGTERM = r"""
import os, signal
import torch

seen = []


def on_sigterm(number, frame):
    seen.append((number, frame))


previous = signal.signal(signal.SIGTERM, on_sigterm)
assert signal.getsignal(signal.SIGTERM) is on_sigterm, "getsignal gives back the handler"
model = torch.nn.Linear(4, 4).to("cuda:0")
os.kill(os.getpid(), signal.SIGTERM)
model(torch.randn(2, 4, device="cuda:0")).sum().backward()
assert seen == [(signal.SIGTERM, None)], seen
torch.save(model.state_dict(), "ckpt.pt")
assert signal.signal(signal.SIGTERM, previous) is on_sigterm
print("handled without a frame")
signal.signal(signal.SIGINT, on_sigterm)      # left installed at the end: still no finding
"""


OWN_CLASSES_AND_DEFAULTS = r"""
import functools, json
import torch
import torch.nn as nn


def make_block(width):
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(width, width)

        def forward(self, x):
            return torch.relu(self.fc(x))
    Block.__name__ = Block.__qualname__ = f"Block{width}"
    Block.__doc__ = "a block"
    return Block


def scaled(cls):
    @functools.wraps(cls, updated=())
    class Scaled(cls):
        def forward(self, x):
            return super().forward(x) * 0.5
    return Scaled


@scaled
class Head(nn.Linear):
    "A linear head."


def train(epochs=3, lr=0.1):
    return lr


print(make_block(8)().to("cuda:0"), Head(2, 2).to("cuda:0"), train.__defaults__)
print(json.dumps({"gpus": torch.cuda.device_count()}))
"""


# Honest scripts that were findings, and what each must still print.
HONEST_SCRIPTS = {
    # A class factory naming its classes, functools.wraps on a class, reading a function's own
    # defaults (a torch class renamed or torch's defaults read still are: TRIPWIRES).
    "own classes renamed, own defaults read": (OWN_CLASSES_AND_DEFAULTS, '{"gpus": 2}'),
    # Training code that checkpoints on SIGTERM (a SLURM preemption): the node calls the handler
    # with frame=None, so it reaches nothing (a handler that walks the frame is a forgery of
    # tests/integrity/forgeries.py).
    "checkpoint on SIGTERM": (CHECKPOINT_ON_SIGTERM, "handled without a frame"),
    # On a real GPU pynvml loads NVML with ctypes.CDLL inside the run (an honest reference was
    # held for it once, on a lent H200); multiprocessing.Value builds ctypes objects; torch's
    # elastic logger calls inspect.stack(), a walker that calls walkers. The submission's own
    # calls are found (TRIPWIRES, LAUNDERED).
    "libraries using ctypes and inspect.stack": (LIBRARIES_USING_CTYPES, "1 4"),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(HONEST_SCRIPTS))
def test_honest_scripts_that_were_findings_are_no_problem(run_forked, name):
    source, printed = HONEST_SCRIPTS[name]
    observation = run_forked(source)
    assert observation.ok, observation.stderr[-2000:]
    assert printed in observation.stdout, observation.stdout[-1000:]
    assert observation.integrity == [], observation.integrity


@pytest.mark.slow
def test_the_submissions_ctypes_call_is_reported_where_it_made_it(run_forked):
    found = problems(run_forked, "import torch\nimport ctypes\n\n\nctypes.CDLL(None)\n")
    assert any("ctypes.dlopen" in p and ":5" in p for p in found), found


@pytest.mark.slow
def test_what_the_standard_library_does_for_an_honest_script_is_no_problem(run_forked):
    observation = run_forked(HONEST_RUN)
    assert observation.ok, observation.stderr[-2000:]
    assert observation.integrity == []


# adv21 A2: the StackOverflow idiom for the script's folder hands inspect.currentframe()'s
# frame (the script's own) straight to getfile; the audit hook had reported it, holding an
# honest upload. sys._getframe and the stdlib's other walkers stay reported (TRIPWIRES).
SCRIPT_FOLDER = r"""
import inspect, os
import torch
HERE = os.path.dirname(os.path.abspath(inspect.getfile(inspect.currentframe())))
def where():
    return inspect.getfile(inspect.currentframe())
print(HERE, where(), torch.ones(1, device="cuda:0").device)
"""


@pytest.mark.slow
def test_the_scripts_own_frame_handed_to_getfile_is_no_problem(run_forked):
    observation = run_forked(SCRIPT_FOLDER)
    assert observation.ok, observation.stderr[-2000:]
    assert observation.integrity == []


@pytest.mark.slow
def test_a_frame_that_is_not_the_callers_own_is_still_seen(run_forked):
    found = problems(run_forked, "import torch, sys, inspect\ntorch.ones(1, device='cuda:0')\n"
                     "f = sys._getframe(1)\nouter = inspect.getouterframes(inspect.currentframe())\n")
    assert any("sys._getframe" in p for p in found), found


LAUNDERED = {
    "gc.get_objects run by contextlib": "import contextlib, gc\n"
                                        "with contextlib.ExitStack() as stack:\n"
                                        "    stack.callback(gc.get_objects)\n",
    "sys._getframe as a thread's target": "import sys, threading\n"
                                          "t = threading.Thread(target=sys._getframe)\n"
                                          "t.start(); t.join()\n",
    "code compiled under torch's name": "import torch, os\n"
                                        "name = os.path.join(os.path.dirname(torch.__file__), 'x.py')\n"
                                        "code = compile('y = 1', name, 'exec')\n",
    "a signal handler installed through signal's C module": (
        "import _signal, signal\n_signal.signal(signal.SIGUSR1, lambda n, f: None)\n"),
    "ctypes.CDLL as a thread's target": "import ctypes, threading\n"
                                        "t = threading.Thread(target=ctypes.CDLL, args=(None,))\n"
                                        "t.start(); t.join()\n",
}


@pytest.mark.slow
@pytest.mark.parametrize("route", list(LAUNDERED))
def test_calls_handed_to_the_standard_library_are_seen_too(run_forked, route):
    found = problems(run_forked, "import torch\ntorch.ones(1, device='cuda:0')\n" +
                     LAUNDERED[route])
    assert found, f"{route}: no problem found"


@pytest.mark.parametrize("path, per_process", [
    ("/proc/self/mem", True), ("//proc/self/mem", True), ("/dev/fd/../mem", True),
    ("/proc", True), ("/proc/thread-self/maps", True),
    ("/proc/cpuinfo", False), ("/proc/meminfo", False), ("results/times.json", False),
    ("/dev/stdout", False), (3, False),
    # what realpath leaves of /dev/stdout when stdout is a pipe: no file of the process
    ("/proc/self/fd/pipe:[7]", False), ("/proc/1/fd/socket:[9]", False)])
def test_the_audit_hook_resolves_paths_as_the_kernel_does(path, per_process):
    from grader.vgpu.guard import _per_process_proc
    assert _per_process_proc(path) is per_process, path


def test_a_link_of_the_submissions_own_to_proc_is_resolved(tmp_path, monkeypatch):
    from grader.vgpu.guard import _per_process_proc
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.bin").symlink_to("/proc/self/mem")
    assert _per_process_proc("notes.bin") and _per_process_proc(str(tmp_path / "notes.bin"))
