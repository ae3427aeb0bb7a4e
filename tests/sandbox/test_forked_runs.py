"""Runs forked from a grading's fork server (grader/sandbox/forked_runs.py) behave as fresh
sandboxed runs do: the same view, the same limits, and nothing a run does to the server
changes what the grader records of it or of the next run."""
import json
import os
import shutil
import socket
import sys
import tempfile
import time
from pathlib import Path

import pytest

from grader.records.seal import ENV_FD, hand_over, new_key
from grader.sandbox import SandboxPolicy, run_sandboxed
from grader.sandbox import forked_runs
from grader.sandbox.forked_runs import ForkServer

pytestmark = pytest.mark.usefixtures("cgroups")

BOOT = Path(forked_runs.__file__).resolve().parents[1] / "vgpu" / "boot"
PACKAGE_ROOT = Path(forked_runs.__file__).resolve().parents[2]


def _env(**extra) -> dict:
    return {"PYTHONPATH": os.pathsep.join([str(BOOT), str(PACKAGE_ROOT)]),
            "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1", **extra}


SCRIPTS = Path(tempfile.mkdtemp(prefix="pdl-forked-runs-", dir="/var/tmp"))
os.chmod(SCRIPTS, 0o755)    # read by the sandbox's unprivileged user


@pytest.fixture(scope="module", autouse=True)
def _scripts_removed():
    yield
    shutil.rmtree(SCRIPTS, ignore_errors=True)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    forks = ForkServer(tmp_path_factory.mktemp("forks"))
    assert _run(forks, "print('warm')").stdout == "warm\n", forks.why_unusable
    yield forks
    forks.close()


def _script(code: str) -> Path:
    script = SCRIPTS / f"script_{time.monotonic_ns()}.py"
    script.write_text(code)
    os.chmod(script, 0o644)
    return script


def _policy(scratch: Path, script: Path, **fields) -> SandboxPolicy:
    fields.setdefault("timeout_s", 30)
    return SandboxPolicy(readonly=[script.parent, PACKAGE_ROOT / "grader"], writable=[scratch],
                         cwd=scratch, env=_env(), **fields)


def _run(server: ForkServer, code: str, *, forked: bool = True, args=(), **fields):
    """Run `code` as a script, forked from `server` (or, forked=False, fresh), with a seal key
    handed over as the grader hands one to every run."""
    scratch = server.new_scratch("run-")
    script = _script(code)
    key_fd = hand_over(new_key())
    try:
        policy = _policy(scratch, script, pass_fds=(key_fd,), **fields)
        policy.env[ENV_FD] = str(key_fd)
        argv = [sys.executable, str(script), *args]
        if forked:
            result = server.run(argv, policy, _env)
            assert result is not None, f"the fork server was not used: {server.why_unusable}"
            return result
        return run_sandboxed(argv, policy)
    finally:
        os.close(key_fd)


def _refused_then_fresh(forks: ForkServer, code: str) -> str:
    """Asserts `forks` no longer forks a run of `code`; what the same run prints fresh."""
    scratch = forks.new_scratch("run-")
    key_fd = hand_over(new_key())
    script = _script(code)
    try:
        policy = _policy(scratch, script, pass_fds=(key_fd,))
        assert forks.run([sys.executable, str(script)], policy, _env) is None
        return run_sandboxed([sys.executable, str(script)], policy).stdout
    finally:
        os.close(key_fd)


VIEW = """
import os, sys
import __main__
print(__name__, __main__.__file__ == os.path.abspath(sys.argv[0]), sys.argv[1:])
print(sys.path[0] == os.path.dirname(os.path.abspath(sys.argv[0])), os.getcwd() == os.environ["HOME"])
print(sorted(k for k in os.environ if k.startswith(("PDL_", "PYTHON", "HOME", "TMPDIR"))))
print(os.getuid(), os.access("/tmp", os.W_OK), "fork_server" in " ".join(sys.modules))
print(open("/proc/self/status").read().count("Pid:"), len(os.listdir("/proc/self/fd")) > 2)
import multiprocessing.process, random, torch
print(multiprocessing.process.ORIGINAL_DIR == os.getcwd(),
      torch.get_num_threads() == int(os.environ.get("OMP_NUM_THREADS", torch.get_num_threads())))
print(torch.initial_seed(), random.random())   # differ from run to run, as in fresh processes
print(input() if False else "", file=sys.stderr, end="to stderr")
"""


def test_a_forked_run_sees_what_a_fresh_one_sees(server):
    forked, again = (_run(server, VIEW, args=("--steps", "3")) for _ in range(2))
    fresh = _run(server, VIEW, args=("--steps", "3"), forked=False)
    assert forked.returncode == 0, forked.stderr
    view, seeds = forked.stdout.rsplit("\n", 2)[0], forked.stdout.splitlines()[-1]
    assert (view, forked.stderr) == (fresh.stdout.rsplit("\n", 2)[0], fresh.stderr), (
        f"expected the forked run to print what the fresh one did:\n{fresh.stdout}\ngot:\n"
        f"{forked.stdout}")
    assert forked.stdout.splitlines()[0] == "__main__ True ['--steps', '3']"
    # Unseeded code draws other numbers in each run (torch and Python seed themselves from
    # the OS in a fresh process); runs forked from one server must not all draw the same.
    torch_seed, python_draw = seeds.split()
    other_torch_seed, other_python_draw = again.stdout.splitlines()[-1].split()
    assert torch_seed != other_torch_seed and python_draw != other_python_draw


def test_a_forked_runs_own_interpreters_are_told_of_the_bytecode_cache(server, monkeypatch):
    """Where the grader compiled torch for the runs (grader/common/bytecode.py), a forked run
    inherits the server's reading of it, and an interpreter it starts (torchrun's ranks) is
    told where it is, as a fresh run's would be."""
    from grader.sandbox import confined_run
    cache = Path("/var/tmp/pdl-bytecode-for-this-test")
    monkeypatch.setattr(confined_run, "shared_bytecode", lambda: cache)
    code = ("import os, subprocess, sys\n"
            "print(os.environ.get('PYTHONPYCACHEPREFIX'))\n"
            "print(subprocess.run([sys.executable, '-c', 'import sys; print(sys.pycache_prefix)'],"
            " capture_output=True, text=True).stdout.strip())\n")
    result = _run(server, code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [str(cache), str(cache)], result.stdout


def test_what_the_server_imported_stays_out_of_a_runs_garbage_collections(server):
    """torch's objects, shared with the server, are frozen (gc.freeze): a run's collections
    and its exit's search for unclosed files do not walk (and so copy) every page of them;
    what the run makes is collected as in a fresh process (its unclosed files are flushed:
    tests/vgpu/test_distributed.py)."""
    code = ("import gc\nprint(gc.get_freeze_count() > 100_000)\n"
            "cycle = []\ncycle.append(cycle)\ndel cycle\nprint(gc.collect() >= 1)\n")
    forked, fresh = _run(server, code), _run(server, code, forked=False)
    assert forked.returncode == 0, forked.stderr
    assert forked.stdout.split() == ["True", "True"], forked.stdout
    assert fresh.stdout.split() == ["False", "True"], fresh.stdout


TORCH_TEARDOWN = """
import atexit, weakref, torch
class Thing: pass
thing = Thing()
weakref.finalize(thing, print, "own finalizer")
atexit.register(print, "own atexit")
found = (f.peek() for f in list(weakref.finalize._registry) if f.atexit)
print(sum(1 for p in found if p and getattr(p[1], "__module__", "") == "torch.library"))
"""


def test_a_forked_run_leaves_torchs_libraries_at_exit_and_runs_its_own_handlers(server):
    """torch's operator libraries, registered as the server imported torch, are not torn down
    at each forked process's end (174 finalizers, about 0.035 CPU-s a process, undone by
    os._exit anyway); the script's own atexit handlers and finalizers run as in a fresh run."""
    forked, fresh = _run(server, TORCH_TEARDOWN), _run(server, TORCH_TEARDOWN, forked=False)
    assert forked.returncode == 0 and fresh.returncode == 0, forked.stderr + fresh.stderr
    assert fresh.stdout.split("\n")[1:] == ["own atexit", "own finalizer", ""], fresh.stdout
    assert int(fresh.stdout.split()[0]) > 0, fresh.stdout
    assert forked.stdout == "0\nown atexit\nown finalizer\n", (
        f"expected a forked run to leave torch's library finalizers (none to run at exit) and "
        f"to run its own handlers; observed {forked.stdout!r} (grader/vgpu/clean_exit.py "
        "leave_torch_libraries_at_exit, called by grader/vgpu/fork_server.py)")


WRITER_CALLS_KNOWN = """
from grader.records import genuine_frames
from grader.vgpu import trace
known = genuine_frames._writer_calls_by_id.cache_info().currsize
print(known >= 20, known)
"""


def test_a_forked_run_knows_the_runtimes_writer_calls_before_it_runs(server):
    """Which of the runtime's calls write records (genuine_frames.writing_call, asked at every
    record) is found once in the server for every run; a fresh run finds it as it goes (each
    rank had disassembled the same dozen functions, about 13 ms)."""
    forked, fresh = _run(server, WRITER_CALLS_KNOWN), _run(server, WRITER_CALLS_KNOWN,
                                                          forked=False)
    assert forked.returncode == 0 and fresh.returncode == 0, forked.stderr + fresh.stderr
    assert fresh.stdout == "False 0\n", fresh.stdout
    assert forked.stdout.startswith("True "), (
        f"expected a forked run to start knowing the writer calls of the runtime's modules "
        f"(grader/vgpu/trace.py WRITER_MODULES); observed {forked.stdout!r} (grader/vgpu/"
        "fork_server.py _learn_writer_calls, grader/records/genuine_frames.py "
        "learn_writer_calls)")


def test_exit_status_and_signals_come_back_as_from_a_fresh_run(server):
    assert _run(server, "import sys; sys.exit(3)").returncode == 3
    assert _run(server, "raise SystemExit('bad input')").returncode == 1
    killed = _run(server, "import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    assert killed.returncode == 128 + 9 and not killed.timed_out


def test_a_hang_is_stopped_at_its_budget_and_the_next_run_is_served(server):
    started = time.monotonic()
    hung = _run(server, "while True:\n    pass\n", timeout_s=2)
    assert hung.timed_out and hung.returncode is None
    assert time.monotonic() - started < 10
    assert _run(server, "print('next')").stdout == "next\n"


def test_memory_and_output_limits_are_the_runs_own(server):
    hog = _run(server, "x = bytearray(900 * 2**20)\nx[::4096] = b'1' * len(x[::4096])\n",
               memory_bytes=256 * 2**20)
    assert hog.memory_exceeded and hog.returncode != 0, hog
    flood = _run(server, "import sys\nfor _ in range(100): sys.stdout.write('x' * 100000)\n",
                 output_limit_bytes=10_000)
    assert flood.output_truncated and flood.stdout.count("x") == 10_000


def test_a_run_writing_past_its_scratch_limit_is_stopped(server):
    big = _run(server, "import os\nfor i in range(64):\n"
                       "    open(f'f{i}', 'wb').write(os.urandom(2**20))\n"
                       "import time; time.sleep(30)\n", scratch_limit_bytes=8 * 2**20)
    assert big.disk_exceeded and not big.timed_out


def test_the_server_is_out_of_reach_of_its_runs(server):
    # Not dumpable: no run reads the keys and descriptors the server hands to later runs. (The
    # runs inherit it: a run cannot read its own /proc/self/mem or environ either, which the
    # integrity rules refuse anyway; /proc/self/status, maps and fd stay readable.)
    r = _run(server, "import os\nfor name in ('mem', 'environ', 'fd'):\n"
                     "    try:\n        os.listdir(f'/proc/{os.getppid()}/{name}') if name == 'fd' "
                     "else open(f'/proc/{os.getppid()}/{name}', 'rb').read(1)\n"
                     "        print(name, 'read')\n"
                     "    except OSError as error:\n        print(name, type(error).__name__)\n")
    assert r.stdout == "mem PermissionError\nenviron PermissionError\nfd PermissionError\n", \
        r.stdout + r.stderr


def test_a_run_that_kills_the_server_gains_nothing_and_later_runs_start_fresh(tmp_path,
                                                                             monkeypatch):
    monkeypatch.setattr(forked_runs, "REPORT_TIMEOUT_S", 3)
    forks = ForkServer(tmp_path)
    try:
        assert _run(forks, "print('first')").stdout == "first\n"
        # It cannot report its own success: its exit status was the server's to report.
        killer = _run(forks, "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n"
                             "import time; time.sleep(1)\n")
        assert killer.returncode == 128 + 9
        assert any("fork server ended" in w for w in killer.warnings), killer.warnings
        assert _refused_then_fresh(forks, "print('after')") == "after\n"
        assert forks.why_unusable
    finally:
        forks.close()


def test_a_stopped_server_costs_the_next_run_a_handshake_then_runs_start_fresh(tmp_path,
                                                                               monkeypatch):
    monkeypatch.setattr(forked_runs, "HANDSHAKE_TIMEOUT_S", 2)
    monkeypatch.setattr(forked_runs, "REPORT_TIMEOUT_S", 3)
    forks = ForkServer(tmp_path)
    try:
        stopper = _run(forks, "import os, signal\nos.kill(os.getppid(), signal.SIGSTOP)\n")
        # Its exit is never reported (the server is stopped): counted as killed, never as 0.
        assert stopper.returncode == 128 + 9
        assert _refused_then_fresh(forks, "print('after')") == "after\n"
    finally:
        forks.close()


def test_switched_off_every_run_is_fresh(tmp_path, monkeypatch):
    monkeypatch.setenv(forked_runs.SWITCH_ENV, "0")
    forks = ForkServer(tmp_path)
    try:
        assert _refused_then_fresh(forks, "print(1)") == "1\n"
        assert forks.why_unusable == f"{forked_runs.SWITCH_ENV}=0"
    finally:
        forks.close()


SHARED_CLIENT = """
import os, sys
from pathlib import Path
sys.path.insert(0, {tests!r})
import test_forked_runs
from test_forked_runs import _run
from grader.sandbox.forked_runs import ForkServer
import shutil
shutil.rmtree(test_forked_runs.SCRIPTS)          # its import made one; the server shows this:
test_forked_runs.SCRIPTS = Path({scripts!r})
forks = ForkServer.inherited()
result = _run(forks, "import sys; print('torch' in sys.modules)")
print(result.stdout.strip(), forks.owner)
forks.close()
"""


def test_a_server_shared_with_a_child_process_serves_it_and_outlives_it(server):
    # `pdl-grade grade` starts one server per submission and hands it to each assignment's
    # checks process: torch was imported before the run's first line, in the server.
    import subprocess
    assert _run(server, "print('warm')").stdout == "warm\n"
    env, fds = server.share()
    assert env and fds
    child = subprocess.run([sys.executable, "-c", SHARED_CLIENT.format(
        tests=str(Path(__file__).parent), scripts=str(SCRIPTS))], env=dict(os.environ, **env), pass_fds=fds,
        capture_output=True, text=True, timeout=120)
    assert child.stdout == "True False\n", child.stdout + child.stderr
    # The child's close() left the server to its owner.
    assert _run(server, "import sys; print('torch' in sys.modules)").stdout == "True\n"


def test_a_server_shared_before_it_is_ready_is_awaited_by_the_child(tmp_path):
    """`pdl-grade grade` hands the server to the first checks process while the server still
    imports torch (the child's own start overlaps it): the child waits for the owner's word at
    its first run; the server's socket is read by the owner alone until then. A later child
    (the next assignment) gets the ready server."""
    import subprocess
    forks = ForkServer(tmp_path)
    try:
        forks.start(_policy(forks.new_scratch("server-"), _script("")))
        env, fds = forks.share()                  # at once: the server is still importing
        early = json.loads(env[forked_runs.SHARED_ENV])
        assert early["pid"] is None and early["ready_fd"] in fds and len(fds) == 2
        command = [sys.executable, "-c", SHARED_CLIENT.format(
            tests=str(Path(__file__).parent), scripts=str(SCRIPTS))]
        first = subprocess.run(command, env=dict(os.environ, **env), pass_fds=fds,
                               capture_output=True, text=True, timeout=120)
        assert first.stdout == "True False\n", first.stdout + first.stderr
        env, fds = forks.share()
        assert json.loads(env[forked_runs.SHARED_ENV])["pid"] and len(fds) == 1
        second = subprocess.run(command, env=dict(os.environ, **env), pass_fds=fds,
                                capture_output=True, text=True, timeout=120)
        assert second.stdout == "True False\n", second.stdout + second.stderr
    finally:
        forks.close()


def test_a_child_told_the_early_shared_server_failed_runs_fresh(tmp_path):
    """The owner's word is "unusable" (or the owner went away): the child's runs start as
    fresh interpreters, as with no server."""
    read, write = os.pipe()
    os.write(write, json.dumps({"unusable": "cannot start: no bwrap"}).encode())
    os.close(write)
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    theirs.close()
    child = ForkServer(_shared={"fd": ours.detach(), "pid": None, "root": str(tmp_path),
                                "ready_fd": read})
    try:
        assert child._ensure_started(lambda: None) is False
        assert child.why_unusable == "cannot start: no bwrap"
    finally:
        child.close()


def test_runs_without_a_server_start_bare(server):
    assert _run(server, "import sys; print('torch' in sys.modules)",
                forked=False).stdout == "False\n"


def test_each_assignments_checks_get_the_submissions_server(server, tmp_path, monkeypatch):
    # pdl-grade grade: one server per submission, handed to every assignment's pytest process.
    import subprocess
    from grader.grading import run as grading_run
    seen = []

    def fake_run(command, **options):
        seen.append((options["env"].get(forked_runs.SHARED_ENV), options.get("pass_fds")))
        return subprocess.CompletedProcess(command, 0, "", "")
    monkeypatch.setattr(grading_run.subprocess, "run", fake_run)
    for assignment in ("practical4", "hw3"):
        grading_run.run_checks(assignment, tmp_path, tmp_path, 30, forks=server)
    env, fds = server.share()
    assert seen == [(env[forked_runs.SHARED_ENV], fds)] * 2


def test_a_checks_process_given_a_server_forks_from_it(server, tmp_path, monkeypatch):
    import json
    from grader.checks.conftest import ScriptRuns
    env, _ = server.share()
    shared = json.loads(env[forked_runs.SHARED_ENV])
    shared["fd"] = os.dup(shared["fd"])     # what a child process would have: its own copy
    monkeypatch.setenv(forked_runs.SHARED_ENV, json.dumps(shared))
    runs = ScriptRuns(tmp_path, tmp_path, 30, 2)
    try:
        assert (runs.forks.owner, runs.forks.root) == (False, server.root)
    finally:
        runs.close()
    monkeypatch.delenv(forked_runs.SHARED_ENV)
    alone = ScriptRuns(tmp_path, tmp_path, 30, 2)
    try:
        assert alone.forks.owner and alone.forks.root.parent == tmp_path
    finally:
        alone.close()


@pytest.mark.parametrize("forked", [True, False], ids=["forked", "fresh"])
def test_a_helper_named_like_a_module_the_server_imported_is_the_students(server, forked):
    # The server has torch._dynamo, which imports the standard `profile`; a student's
    # hw3/profile.py must still be what `import profile` finds, as on the student's machine.
    from grader.harness.execute import run_script
    submission = Path(tempfile.mkdtemp(prefix="submission-", dir=SCRIPTS))
    (submission / "hw3").mkdir()
    (submission / "hw3" / "profile.py").write_text("layer_gpus = 'the student'\n")
    (submission / "hw3" / "uses_profile.py").write_text(
        "import torch, sys\nfrom profile import layer_gpus\n"
        "print(layer_gpus, 'torch._dynamo' in sys.modules)\n")
    for path in (submission, submission / "hw3"):
        os.chmod(path, 0o755)
    for path in (submission / "hw3").iterdir():
        os.chmod(path, 0o644)
    observation = run_script(submission, "hw3/uses_profile.py", gpus=2, timeout_s=60,
                             forks=server if forked else None)
    assert observation.stdout == f"the student {forked}\n", observation.stderr[-2000:]


def test_a_submission_that_could_shadow_a_lazy_import_gets_no_preload(tmp_path):
    # hw3/profile.py: with `python hw3/model_parallel.py`, the first optimizer step imports
    # dynamo, whose `import profile` finds the student's file; a server that had imported
    # dynamo ahead would hide that from the run. Such a submission's server imports torch only.
    import subprocess
    from grader.harness.execute import submission_module_names
    (tmp_path / "hw3").mkdir()
    for name in ("model_parallel.py", "profile.py", "notes.txt"):
        (tmp_path / "hw3" / name).write_text("")
    (tmp_path / "practical4").mkdir()
    (tmp_path / "practical4" / "concepts.py").write_text("")
    names = submission_module_names(tmp_path)
    assert names == {"model_parallel", "profile", "concepts"}
    probe = ("import torch\nfrom grader.vgpu.fork_server import shadowed_later\n"
             f"print(shadowed_later({','.join(sorted(names | {'torch'}))!r}))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(PACKAGE_ROOT)),
                          timeout=120)
    # torch is imported by every run before its script: no file can stand in for it there.
    assert done.stdout == "['profile']\n", done.stdout + done.stderr


TRAINS = """import sys, torch
preloaded = 'torch._dynamo' in sys.modules
model = torch.nn.Linear(4, 2).to('cuda:0')
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model(torch.ones(3, 4, device='cuda:0')).sum().backward()
optimizer.step()
print(preloaded, 'torch._dynamo' in sys.modules, model.weight.device)
"""


@pytest.mark.slow
@pytest.mark.parametrize("training", [False, True], ids=["trains_false", "trains"])
def test_a_server_for_scripts_that_never_train_preloads_no_training_yet_a_run_may_train(
        training, monkeypatch):
    # A rubric's `trains: false` (Practical 4) spares its grading's server the import of dynamo
    # (1.5 s of CPU); a student's run that trains anyway imports it itself and runs as before.
    from grader.harness.execute import run_script, start_fork_server
    monkeypatch.setenv(forked_runs.SWITCH_ENV, "require")      # no silent fresh run
    submission = Path(tempfile.mkdtemp(prefix="submission-", dir=SCRIPTS))
    (submission / "practical4").mkdir()
    (submission / "practical4" / "concepts.py").write_text(TRAINS)
    for path in (submission, submission / "practical4"):
        os.chmod(path, 0o755)
    os.chmod(submission / "practical4" / "concepts.py", 0o644)
    forks = start_fork_server(submission, training=training)
    try:
        observation = run_script(submission, "practical4/concepts.py", gpus=2, timeout_s=60,
                                 forks=forks)
    finally:
        forks.close()
    assert observation.stdout == f"{training} True cuda:0\n", observation.stderr[-2000:]
