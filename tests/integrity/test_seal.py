"""Sealed observations: what the instrumentation writes verifies; anything else is counted,
never used. How the key reaches a run (an inherited pipe, read once, never the environment)
and where it lives afterwards (closures only). The tests marked slow run real scripts in the
sandbox with a per-run key."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from grader.harness.execute import run_script
from grader.records import seal as seal_module
from grader.records.seal import (ENV_FD, TAKEN, hand_over, in_sealed_run, new_key, sealer,
                                 sealer_factory, take_key, verify_lines)
from grader.vgpu.trace import CLOSING_EVENT, Trace, merge_rank_files

KEY = new_key()
RECORDS = [{"event": "start", "rank": 0, "t": 0.0}, {"event": "to", "src": "cuda:0",
                                                     "dst": "cuda:1", "shape": [64, 2000]},
           {"event": "forward_out", "module": "Linear", "sum": 1.5, "device": object()}]


def sealed(stream="trace.jsonl.rank0.7", key=KEY) -> list[str]:
    seal = sealer(key, stream)
    return [seal(record) for record in RECORDS]


def test_what_the_instrumentation_writes_verifies_as_written():
    verified = verify_lines(sealed(), KEY, "trace.jsonl.rank0.7")
    assert verified.problems == []
    assert [r["event"] for r in verified.records] == ["start", "to", "forward_out"]
    assert all("seal" not in r and "seq" not in r for r in verified.records)
    assert isinstance(verified.records[2]["device"], str), "values are kept as JSON gave them"


def test_appended_and_altered_lines_are_not_used_and_are_counted():
    lines = sealed()
    forged = json.dumps({"event": "to", "src": "cuda:0", "dst": "cuda:1"})
    altered = json.loads(lines[1])
    altered["dst"] = "cuda:0"       # a real record, changed after sealing
    verified = verify_lines([lines[0], json.dumps(altered), lines[2], forged], KEY,
                            "trace.jsonl.rank0.7")
    assert [r["event"] for r in verified.records] == ["start", "forward_out"]
    assert verified.unsealed == 2
    assert "2 line(s) were not written by the grader's instrumentation" in verified.problems[0]


def test_a_record_cut_out_is_a_gap_and_the_rest_still_verify():
    lines = sealed()
    verified = verify_lines([lines[0], lines[2]], KEY, "trace.jsonl.rank0.7")
    assert [r["event"] for r in verified.records] == ["start", "forward_out"]
    assert verified.missing == 1 and verified.unsealed == 0
    assert "1 record(s) written by the grader's instrumentation were removed" in verified.problems


def test_replayed_or_reordered_records_do_not_count_twice():
    lines = sealed()
    verified = verify_lines([lines[0], lines[1], lines[1], lines[2]], KEY, "trace.jsonl.rank0.7")
    assert [r["event"] for r in verified.records] == ["start", "to", "forward_out"]
    assert verified.unsealed == 1
    backwards = verify_lines([lines[2], lines[0], lines[1]], KEY, "trace.jsonl.rank0.7")
    assert backwards.unsealed == 2 and len(backwards.records) == 1


def test_records_copied_into_another_file_or_sealed_with_another_key_fail():
    assert verify_lines(sealed(), KEY, "trace.jsonl.rank1.8").unsealed == 3
    other_key = new_key()
    assert verify_lines(sealed(key=other_key), KEY, "trace.jsonl.rank0.7").unsealed == 3


def test_a_torn_last_line_is_a_killed_writer_not_a_forgery():
    lines = sealed()
    verified = verify_lines(lines[:2] + [lines[2][:25]], KEY, "trace.jsonl.rank0.7")
    assert verified.torn and verified.problems == [] and len(verified.records) == 2
    torn_inside = verify_lines([lines[0], lines[1][:20], lines[2]], KEY, "trace.jsonl.rank0.7")
    assert torn_inside.unsealed == 1


def test_without_a_key_records_are_plain_json_and_read_as_they_are():
    plain = sealer(None, "x")({"event": "start"})
    assert json.loads(plain) == {"event": "start"}
    assert verify_lines([plain, "not json", plain], None, "x").records == [{"event": "start"}] * 2


def test_merge_keeps_only_verified_records_and_counts_what_was_there_before(tmp_path):
    trace = tmp_path / "trace.jsonl"
    trace.write_text('{"event": "forward_out", "sum": 1}\n')        # planted before the merge
    for rank, pid in ((0, 11), (1, 12)):
        seal = sealer(KEY, f"trace.jsonl.rank{rank}.{pid}")
        lines = [seal({"event": "start", "rank": rank}),
                 seal({"event": "to", "rank": rank})]
        if rank == 1:
            lines.append(json.dumps({"event": "to", "rank": 1}))  # appended by the script
        (tmp_path / f"trace.jsonl.rank{rank}.{pid}").write_text("\n".join(lines) + "\n")
    merged = merge_rank_files(str(trace), KEY)
    assert merged.unsealed == 2
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    assert [(e["rank"], e["event"]) for e in events] == [(0, "start"), (0, "to"),
                                                         (1, "start"), (1, "to")]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trace.jsonl"]


def test_merge_without_a_key_adds_to_an_earlier_trace(tmp_path):
    trace = tmp_path / "trace.jsonl"
    trace.write_text('{"event": "start", "rank": 0}\n')
    (tmp_path / "trace.jsonl.rank0.5").write_text('{"event": "exit", "rank": 0}\n')
    merge_rank_files(str(trace))
    assert [json.loads(line)["event"] for line in trace.read_text().splitlines()] == [
        "start", "exit"]


# -- the key: handed over through a pipe, read once, then only in closures -------------------
def test_the_key_is_read_once_from_its_descriptor_which_is_then_closed():
    key = new_key()
    fd = hand_over(key)
    environ = {ENV_FD: str(fd)}
    assert in_sealed_run(environ)
    assert take_key(environ) == key
    assert environ[ENV_FD] == TAKEN, "children of this process are told there is no key"
    with pytest.raises(OSError):
        os.fstat(fd)
    assert take_key(environ) is None, "whoever asks later (student code) gets nothing"
    assert in_sealed_run(environ)


@pytest.mark.parametrize("value", [None, "", "not-a-number", "99999", TAKEN])
def test_without_a_readable_descriptor_there_is_no_key(value):
    environ = {} if value is None else {ENV_FD: value}
    assert take_key(environ) is None


def test_a_short_or_long_key_is_refused():
    for wrong in (b"short", b"x" * 200):
        read_end, write_end = os.pipe()
        os.write(write_end, wrong)
        os.close(write_end)
        assert take_key({ENV_FD: str(read_end)}) is None


def _reachable_bytes(function, depth=0) -> list[bytes]:
    """Every bytes object reachable from a function's closure, recursively."""
    found = []
    for cell in function.__closure__ or ():
        value = cell.cell_contents
        if isinstance(value, bytes):
            found.append(value)
        elif callable(value) and hasattr(value, "__closure__") and depth < 4:
            found += _reachable_bytes(value, depth + 1)
    return found


def test_the_raw_key_is_kept_nowhere_once_the_sealer_is_made():
    key = new_key()
    seal = sealer(key, "trace.jsonl.rank0.1")
    assert key not in _reachable_bytes(seal), "the key is folded into an HMAC object"
    factory = sealer_factory(key)
    assert key not in _reachable_bytes(factory)
    assert not [v for v in vars(seal_module).values() if v == key]


def test_replacing_json_in_the_process_changes_nothing_that_is_sealed(monkeypatch):
    import json.encoder
    seal = sealer(KEY, "probe.jsonl")
    honest = seal({"kind": "layout", "matches_single_gpu": False})
    monkeypatch.setattr(json, "dumps", lambda *a, **k: '{"matches_single_gpu": true}')
    monkeypatch.setattr(json, "loads", lambda *a, **k: {"matches_single_gpu": True})
    monkeypatch.setattr(json.encoder.JSONEncoder, "encode", lambda self, o: "{}")
    again = sealer(KEY, "probe.jsonl")({"kind": "layout", "matches_single_gpu": False})
    monkeypatch.undo()
    assert again == honest
    assert verify_lines([again], KEY, "probe.jsonl").records == [
        {"kind": "layout", "matches_single_gpu": False}]


def test_a_trace_takes_the_key_from_the_descriptor(tmp_path, monkeypatch):
    key = new_key()
    monkeypatch.setenv(ENV_FD, str(hand_over(key)))
    trace = Trace(str(tmp_path / "trace.jsonl.rank0.1"), 0)
    seen = []
    trace.listeners.append(lambda record: (seen.append(record), record.update(event="x")))
    trace.emit("step", index=1)     # from this file: no code of the grader's instrumentation
    trace.close()
    assert os.environ[ENV_FD] == TAKEN
    lines = (tmp_path / "trace.jsonl.rank0.1").read_text().splitlines()
    (record,) = verify_lines(lines, key, "trace.jsonl.rank0.1").records
    assert record["event"] == "tampering" and "wrote a 'step' record" in record["what"], \
        "in a graded run only the instrumentation writes records; others are reported"
    assert seen[0]["event"] == "x", "a listener gets a copy: what it changes is not written"


def test_a_trace_mints_sealers_only_for_its_own_part_files(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_FD, str(hand_over(new_key())))
    trace = Trace(str(tmp_path / "trace.jsonl.rank0.1"), 0, str(tmp_path / "trace.jsonl"))
    trace._streams(str(tmp_path / "trace.jsonl.rank0.2"))     # a forked child's file
    with pytest.raises(ValueError):
        trace._streams(str(tmp_path / "probe.jsonl"))
    trace.close()


def _under_a_grader_file_name(function, *args):
    """`function(*args)` called from code compiled under a file name in the grader's package,
    in a namespace of its own: what a red team had a template engine make (jinja2 compiles the
    source and the file name its loader hands it) and call the instrumentation's writers from."""
    import grader
    folder = os.path.dirname(os.path.abspath(grader.__file__))
    namespace: dict = {}
    exec(compile("def call(f, *a):\n    return f(*a)\n", os.path.join(folder, "vgpu", "notes.py"),
                 "exec"), namespace)
    return namespace["call"](function, *args)


def test_the_probes_stream_is_given_once_and_seals_only_for_the_grader(tmp_path, monkeypatch):
    key = new_key()
    monkeypatch.setenv(ENV_FD, str(hand_over(key)))
    trace = Trace(str(tmp_path / "trace.jsonl.rank0.1"), 0)
    probe = trace.sealer_for(str(tmp_path / "probe.jsonl"))
    with pytest.raises(RuntimeError):
        trace.sealer_for(str(tmp_path / "probe.jsonl"))
    for caller in (lambda: probe({"kind": "done"}),
                   lambda: _under_a_grader_file_name(probe, {"kind": "done"}),
                   lambda: _under_a_grader_file_name(_under_a_grader_file_name, probe,
                                                     {"kind": "done"})):
        with pytest.raises(PermissionError):
            caller()
    trace.close()


def test_code_compiled_under_a_grader_file_name_writes_only_its_attempt(tmp_path, monkeypatch):
    """A red team's 9.5 of 12 from the untouched Practical 4 template: its template engine's code,
    compiled under a file name in the grader's folder, passed for the instrumentation with the
    trace's emit and the sealers, which had judged a caller by its code's file name."""
    key = new_key()
    monkeypatch.setenv(ENV_FD, str(hand_over(key)))
    trace = Trace(str(tmp_path / "trace.jsonl.rank0.1"), 0)
    _under_a_grader_file_name(trace.emit, "to", **{})
    with pytest.raises(PermissionError):
        _under_a_grader_file_name(trace._seal, {"event": "to", "dst": "cuda:1"})
    trace.close()
    lines = (tmp_path / "trace.jsonl.rank0.1").read_text().splitlines()
    records = verify_lines(lines, key, "trace.jsonl.rank0.1").records
    assert [r["event"] for r in records] == ["tampering"], records
    assert "test_seal.py" in records[0]["site"], "where the submission's code asked for it"


OWN_MODULE = """import sys


def here():
    return sys._getframe()


def call(f, *a):
    return f(*a)


def emit(write, record):
    return write(record)


def instrument(write, record):
    return emit(write, record)
"""


@pytest.fixture
def own_package(tmp_path, monkeypatch):
    """(judge, module, close): a package of the "grader's" own, whose modules `own_mod` and
    `late_mod` are the trusted ones; own_mod imported after the judge was made (learnt when
    first seen). `emit` is its writer (it hands a record to the sealer), `instrument` the code
    that writes (it calls emit), `call` a pass-through of its own."""
    import importlib
    import sys
    folder = tmp_path / "owned"
    folder.mkdir()
    (folder / "own_mod.py").write_text(OWN_MODULE)
    (folder / "late_mod.py").write_text(OWN_MODULE)
    monkeypatch.syspath_prepend(str(folder))
    from grader.records.genuine_frames import frame_judge
    judge, _admit, close = frame_judge(str(folder) + os.sep, ("own_mod", "late_mod"))
    module = importlib.import_module("own_mod")
    yield judge, module, close
    for name in ("own_mod", "late_mod", "helper_of_its_own"):
        sys.modules.pop(name, None)


def test_a_frame_is_the_graders_only_in_its_modules_own_namespace(own_package):
    import builtins
    import sys
    import types
    genuine, module, _close = own_package
    assert genuine(module.here()), "a function of a module of the folder runs its own code"
    borrowed = types.FunctionType(module.here.__code__, {"sys": sys, "__builtins__": builtins})
    assert not genuine(borrowed()), "the module's code run in a namespace of another's"
    namespace: dict = {}
    exec(compile(Path(module.__file__).read_text(), module.__file__, "exec"), namespace)
    assert not genuine(namespace["here"]()), "the module's own text, compiled again elsewhere"
    assert not genuine(sys._getframe()), "this test's own frame"


def test_a_module_of_the_submissions_own_posing_as_the_graders_is_not(own_package):
    """A red team: a helper module of the submission set its `__file__` to a grader file's and
    ran that file's text in its own namespace; a lazy lookup of every module had taken it for
    the grader's. Only the trusted modules' names are looked up, and nothing after close()."""
    import sys
    import types
    genuine, module, close = own_package
    impostor = types.ModuleType("helper_of_its_own")
    impostor.__file__ = module.__file__
    sys.modules["helper_of_its_own"] = impostor
    exec(compile(OWN_MODULE, module.__file__, "exec"), impostor.__dict__)
    assert not genuine(impostor.here()), "a module under a name of its own"
    close(module.here())
    import importlib
    late = importlib.import_module("late_mod")
    assert not genuine(late.here()), "a trusted name imported once student code may run"
    assert genuine(module.here()), "what was trusted before stays trusted"
    with pytest.raises(PermissionError):
        close(module.here())


def test_a_module_kept_out_of_sys_modules_is_admitted_once(tmp_path):
    """The HW3 probe is loaded under no importable name; its launcher admits it before any
    student code runs, and nothing can admit a namespace after it."""
    import importlib.util
    from grader.records.genuine_frames import frame_judge
    (tmp_path / "hidden.py").write_text("import sys\n\n\ndef here():\n    return sys._getframe()\n")
    genuine, admit, _close = frame_judge(str(tmp_path) + os.sep, ())
    spec = importlib.util.spec_from_file_location("not importable", tmp_path / "hidden.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert not genuine(module.here()), "not in sys.modules: not known before it is admitted"
    admit(module)
    assert genuine(module.here())
    other = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(other)
    with pytest.raises(PermissionError):
        admit(other)
    assert not genuine(other.here())


def test_a_sealer_seals_for_the_graders_writer_called_by_the_code_that_writes(own_package):
    """A red team had a pass-through closure of the grader's (`_call(method)`, reached through
    a patched function's `__globals__`) call the writer with the reference's records: the
    writer's caller must be code that writes records, not any code of the grader's."""
    from grader.records.genuine_frames import writing_call
    from grader.vgpu.trace import _genuine as graders
    genuine, module, _close = own_package
    # the sealers' own frames are the grader's, their callers the package's
    judge = lambda frame: genuine(frame) or graders(frame)   # noqa: E731
    seal = module.call(sealer_factory(KEY, judge, writing_call), "probe.jsonl")
    line = module.instrument(seal, {"kind": "done"})
    assert verify_lines([line], KEY, "probe.jsonl").records == [{"kind": "done"}]
    for refused in (lambda: module.emit(seal, {"kind": "done"}),               # from a test
                    lambda: module.call(module.emit, seal, {"kind": "done"}),  # a pass-through
                    lambda: module.call(seal, {"kind": "done"})):
        with pytest.raises(PermissionError):
            refused()
    namespace: dict = {}
    exec(compile(OWN_MODULE, module.__file__, "exec"), namespace)
    with pytest.raises(PermissionError):
        namespace["instrument"](seal, {"kind": "done"})


def test_a_process_of_a_graded_run_without_a_key_writes_beside_the_trace(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_FD, TAKEN)   # as a child the submission started sees it
    trace = Trace(str(tmp_path / "trace.jsonl.rank0.9"), 0)
    trace.emit("start")
    trace.emit("to", src="cuda:0", dst="cuda:1")
    trace.close()
    merged = merge_rank_files(str(tmp_path / "trace.jsonl"), new_key())
    assert merged.records == [] and merged.problems == [] and merged.unkeyed == 1
    assert "started by the submission itself" in merged.notes[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trace.jsonl"]


# -- the closing check: every process the runtime activated in closes its file ----------------
def closing_stream(tmp_path, records, name="trace.jsonl.rank0.5"):
    seal = sealer(KEY, name)
    (tmp_path / name).write_text("".join(seal(r) + "\n" for r in records))


def test_a_stream_without_its_closing_record_is_a_problem_only_after_a_normal_exit(tmp_path):
    closing_stream(tmp_path, [{"event": "nvml"}, {"event": "start"}, {"event": "to"}])
    merged = merge_rank_files(str(tmp_path / "trace.jsonl"), KEY)
    assert merged.problems == [] and merged.unclosed == 1
    assert merged.closing_problems(exited_normally=False) == []
    assert "without the instrumentation's closing check" in \
        merged.closing_problems(exited_normally=True)[0]


def test_a_forked_childs_stream_needs_no_closing_record(tmp_path):
    closing_stream(tmp_path, [{"event": "to"}], name="trace.jsonl.rank0.6")
    merged = merge_rank_files(str(tmp_path / "trace.jsonl"), KEY)
    assert merged.unclosed == 0 and merged.closing_problems(exited_normally=True) == []


def test_what_the_closing_check_found_replaced_is_a_problem(tmp_path):
    closing_stream(tmp_path, [{"event": "start"}, {"event": "tampering", "what": "gc.get_objects",
                                                   "site": "concepts.py:3"},
                              {"event": CLOSING_EVENT, "replaced": ["torch.Tensor.to"]}])
    merged = merge_rank_files(str(tmp_path / "trace.jsonl"), KEY)
    assert merged.unclosed == 0
    assert merged.problems == [
        "the grader's instrumentation was replaced while it ran: torch.Tensor.to",
        "the submission's code walked or rewrote the interpreter while it ran: "
        "gc.get_objects at concepts.py:3"]


# -- real runs: the key is drawn per run and never reaches student code -----------------------
def run_source(tmp_path: Path, source: str, gpus: int = 2):
    submission = tmp_path / "submission"
    (submission / "practical4").mkdir(parents=True)
    (submission / "practical4" / "concepts.py").write_text(source)
    return run_script(submission, "practical4/concepts.py", gpus=gpus, timeout_s=120,
                      scratch_root=tmp_path)


FORKING = """
import os, torch
x = torch.ones(4, 3, device="cuda:0")
pid = os.fork()
if pid == 0:                       # a forked child (a DataLoader worker, say) moves a tensor
    x.to("cuda:1")
    os._exit(0)
os.waitpid(pid, 0)
x.to("cuda:1")
print("done")
"""


@pytest.mark.slow
def test_a_forked_child_writes_its_own_sealed_file(tmp_path):
    observation = run_source(tmp_path, FORKING)
    assert observation.ok, observation.stderr
    assert observation.integrity == []
    moves = [e for e in observation.events if e["event"] == "to" and e.get("dst") == "cuda:1"]
    pids = {e["pid"] for e in observation.events if e["event"] == "start"}
    assert len(moves) == 2, "the parent's and the child's move are both observed"
    assert len(pids) == 1, "the child continues its parent's trace, it does not start another"


APPENDING = """
import os, torch
torch.ones(2, device="cuda:0")
for name in os.listdir("."):
    if "trace" in name:
        with open(name, "a") as handle:
            handle.write('{"event": "to", "rank": 0, "src": "cuda:0", "dst": "cuda:1"}\\n')
"""


@pytest.mark.slow
def test_lines_a_script_adds_to_its_trace_are_reported_and_dropped(tmp_path):
    observation = run_source(tmp_path, APPENDING)
    assert observation.ok, observation.stderr
    assert not [e for e in observation.events if e["event"] == "to" and e.get("dst") == "cuda:1"]
    assert observation.integrity == [
        "the trace of practical4/concepts.py (2 GPU(s)): 1 line(s) were not written by the "
        "grader's instrumentation (no valid seal)"]


LOOKING_FOR_THE_KEY = r"""
import os, sys, torch
torch.ones(2, device="cuda:0")
print("fd", os.environ.get("PDL_SEAL_FD"))
print("env", sorted(k for k in os.environ if "KEY" in k or "SEAL" in k))
readable = []
for fd in range(3, 256):
    try:
        readable.append(len(os.read(fd, 64)))
    except OSError:
        pass
print("read", readable)
for path in ("/proc/self/environ", "/proc/self/mem", f"/proc/{os.getppid()}/mem"):
    try:
        open(path, "rb").read(16)
        print("opened", path)
    except OSError as error:
        print("refused", path, type(error).__name__)
"""


@pytest.mark.slow
def test_the_key_never_reaches_student_code(tmp_path):
    observation = run_source(tmp_path, LOOKING_FOR_THE_KEY)
    assert observation.ok, observation.stderr
    out = observation.stdout.splitlines()
    assert out[:3] == ["fd taken", "env ['PDL_SEAL_FD']", "read []"], observation.stdout
    assert not [line for line in out if line.startswith("opened")], observation.stdout
    sealed = [e for e in observation.events if e["event"] == "start"]
    assert sealed, "the instrumentation itself got the key: its records verify"
    assert any("opened /proc/self/mem" in p for p in observation.integrity), observation.integrity


def test_a_sealer_reached_from_the_submissions_code_seals_nothing(tmp_path, monkeypatch):
    """A red team reached the trace's sealer (`trace._seal`, through `sys.modules` or a patched
    function's `__globals__`) and wrote the reference's records, sealed, from a template that
    trained nothing: 9.75 of Practical 6's 9.75 automatic points. A sealer seals only for the
    instrumentation's own writers (code of the grader's package), which check who called them."""
    key = new_key()
    monkeypatch.setenv(ENV_FD, str(hand_over(key)))
    trace = Trace(str(tmp_path / "trace.jsonl.rank0.1"), 0, str(tmp_path / "trace.jsonl"))
    forged = {"event": "step", "index": 1}
    with pytest.raises(PermissionError):
        trace._seal(forged)
    with pytest.raises(PermissionError):
        trace._streams(str(tmp_path / "trace.jsonl.rank0.99"))(forged)
    with pytest.raises(PermissionError):
        trace.sealer_for(str(tmp_path / "probe.jsonl"))({"kind": "done"})
    # The trace's own writer still seals; what the submission asks it to write is written as
    # what it is: an attempt.
    trace.emit("step", index=1)
    trace.close()
    lines = (tmp_path / "trace.jsonl.rank0.1").read_text().splitlines()
    records = verify_lines(lines, key, "trace.jsonl.rank0.1").records
    assert [r["event"] for r in records] == ["tampering"], records


def test_the_sealers_closure_hands_out_nothing_that_seals(tmp_path, monkeypatch):
    """An integrity audit: the HMAC function sat in the sealer's closure (read through
    `__closure__`, which no audit event reports, and whose cells can be rewritten without one)
    and sealed for anyone, and the keyed HMAC object's `copy` sat in its own closure. Neither
    they nor what decides who may seal are closure cells now: keyword-only defaults (reading
    `__kwdefaults__` is audited), and the HMAC function reached that way checks its caller."""
    import types
    monkeypatch.setenv(ENV_FD, str(hand_over(new_key())))
    trace = Trace(str(tmp_path / "trace.jsonl.rank0.1"), 0)
    reachable, frontier = [], [trace._seal]
    while frontier:
        function = frontier.pop()
        for cell in function.__closure__ or ():
            value = cell.cell_contents
            reachable.append(value)
            if isinstance(value, types.FunctionType):
                frontier.append(value)
    assert not [v for v in reachable if callable(v) or hasattr(v, "hexdigest")], reachable
    digest = trace._seal.__kwdefaults__["_digest"]
    with pytest.raises(PermissionError):
        digest("trace.jsonl.rank0.1", 0, "{}")
    trace.close()


@pytest.mark.parametrize("value,dumpable", [("7", 0), (TAKEN, 1), (None, 1)])
def test_a_graded_runs_process_is_unreadable_to_others_before_torch_is_imported(value, dumpable):
    """A red team: where bubblewrap cannot start every run is the same user, and another run
    could read the seal key through /proc/<pid>/fd during the second `import torch` takes; the
    boot makes the process non-dumpable at once where the run holds a key."""
    import subprocess
    import sys
    import grader
    boot = os.path.join(os.path.dirname(os.path.abspath(grader.__file__)), "vgpu", "boot")
    env = {k: v for k, v in os.environ.items() if k not in (ENV_FD, "PDL_VGPU_GPUS")}
    env["PYTHONPATH"] = boot
    if value is not None:
        env[ENV_FD] = value
    done = subprocess.run([sys.executable, "-c", "import ctypes, sys; "
                           "print(ctypes.CDLL(None).prctl(3, 0, 0, 0, 0), 'torch' in sys.modules)"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == [str(dumpable), "False"], done.stdout + done.stderr


WRITERS_CALLS = """
def named(trace, record):
    trace.emit("to", src=record if record else None, **{})


def held(write, record):
    write("tampering", what=(record and 3) or 4)


def stored(owner, record):
    owner.original_init(record)


def passed_on(method, *args, **kwargs):
    return method(*args, **kwargs)


def both(trace, owner, record):
    owner.original_init(record)
    trace.emit("to", src=record)
"""


def test_a_writer_is_trusted_only_at_a_call_that_names_it(tmp_path):
    """Two red teams had the grader's own code call the trace's emit without naming it (a
    pass-through handed it; a stored original, an instance attribute or a closure cell, swapped
    for it): only the call written `trace.emit(...)` / `write(...)` in the source counts."""
    import sys
    from grader.records.genuine_frames import writing_call
    seen = []

    class Recorder:
        def emit(self, *args, **kwargs):
            seen.append(writing_call(sys._getframe(1)))
        original_init = emit
    namespace: dict = {}
    exec(compile(WRITERS_CALLS, str(tmp_path / "writers.py"), "exec"), namespace)
    recorder = Recorder()
    namespace["named"](recorder, 1)
    namespace["held"](recorder.emit, 0)
    namespace["stored"](recorder, 1)
    namespace["passed_on"](recorder.emit, "to")
    namespace["both"](recorder, recorder, 1)
    assert seen == [True, True, False, False, False, True], seen


def test_a_sealers_keyword_only_defaults_passed_by_its_caller_seal_nothing(tmp_path, monkeypatch):
    """A red team: a keyword-only default is a parameter, so `seal(record, _refuse=<nothing>)`
    had switched the sealer's check off and sealed the reference's records. The digest, reached
    by nothing but audited `__kwdefaults__`, checks the whole chain itself; so does admitting a
    module, whatever one-shot flags its caller is handed."""
    import types
    key = new_key()
    monkeypatch.setenv(ENV_FD, str(hand_over(key)))
    trace = Trace(str(tmp_path / "trace.jsonl.rank0.1"), 0)
    plain = lambda record: json.dumps(record, sort_keys=True)   # noqa: E731
    for override in ({"_dumps": plain}, {"_dumps": plain, "_loads": json.loads}):
        with pytest.raises(PermissionError):
            trace._seal({"event": "to", "dst": "cuda:1"}, **override)
    for_stream = next(c.cell_contents for c in trace._streams.__closure__
                      if getattr(c.cell_contents, "__name__", "") == "for_stream")
    sealer = for_stream(str(tmp_path / "trace.jsonl.rank0.2"), _dumps=plain)
    with pytest.raises(PermissionError):
        sealer({"event": "to", "dst": "cuda:1"}, _dumps=plain)
    trace.close()
    from grader.records.genuine_frames import frame_judge
    genuine, admit, close = frame_judge(str(tmp_path) + os.sep, ())
    (tmp_path / "mine.py").write_text("import sys\n\n\ndef here():\n    return sys._getframe()\n")
    mine = types.ModuleType("mine")
    mine.__file__ = str(tmp_path / "mine.py")
    exec(compile((tmp_path / "mine.py").read_text(), mine.__file__, "exec"), mine.__dict__)
    close(mine.here())
    late = types.ModuleType("late")
    late.__file__ = mine.__file__
    exec(compile((tmp_path / "mine.py").read_text(), late.__file__, "exec"), late.__dict__)
    for attempt in (lambda: admit(late, _admitted=[], _closed=[]),
                    lambda: close(late.here(), _closed=[])):
        with pytest.raises(PermissionError):
            attempt()
    assert not genuine(late.here())


def test_the_writer_call_judge_keeps_nothing_its_caller_can_pass_or_rewrite(tmp_path):
    """A red team reached writing_call through the trace module's globals: handed a finder of
    its own (`_find=`), or writing into its cache (a keyword-only default's dict, read through
    inspect.signature, which raises no audit event of the submission's), it had the grader's
    pass-through closure taken for a writer call everywhere, and that closure then wrote a
    transfer that never happened. Every route here is what a submission could do; after all of
    them the pass-through is still no writer call."""
    import dis
    import inspect
    import sys
    from grader.records import genuine_frames
    from grader.records.genuine_frames import writing_call
    namespace: dict = {}
    exec(compile(WRITERS_CALLS, str(tmp_path / "writers.py"), "exec"), namespace)
    through = namespace["passed_on"]
    code = dis.Bytecode(through).codeobj            # the code object, read by the stdlib
    seen = type("Frame", (), {"f_code": code, "f_lasti": 0})()
    everywhere = lambda code, instructions: [(0, 1 << 30)]   # noqa: E731
    attempts = {"a finder passed": lambda: writing_call(seen, _find=everywhere)}
    for owner in (writing_call, getattr(writing_call, "__func__", None),
                  getattr(genuine_frames, "_writer_calls_of", None),
                  getattr(genuine_frames, "_writer_calls_by_id", None)):
        if owner is None:
            continue
        for name, parameter in inspect.signature(owner).parameters.items():
            if isinstance(parameter.default, dict):
                attempts[f"{name}'s dict written"] = \
                    lambda cache=parameter.default: cache.__setitem__(id(code),
                                                                      (code, [(0, 1 << 30)]))
            elif hasattr(parameter.default, "__dict__") and name == "_asked":
                asked = parameter.default
                attempts["another code asked about"] = lambda asked=asked: (
                    setattr(asked, "code", compile("x.emit(1)", "w", "eval")),
                    genuine_frames._writer_calls_by_id(id(code)))
    attempts["the cache asked with a finder"] = lambda: (
        setattr(writing_call.__self__[1], "code", code),
        genuine_frames._writer_calls_by_id(id(code), _find=everywhere))
    for attempt in attempts.values():
        try:
            attempt()
        except (TypeError, LookupError, AttributeError):
            pass
    calls = []

    class Recorder:
        def emit(self, *args, **kwargs):
            calls.append(writing_call(sys._getframe(1)))
    through(Recorder().emit, "to")
    assert calls == [False], (
        f"expected the grader's pass-through (a call of `method`, no writer named) to be no "
        f"writer call after {sorted(attempts)}; observed {calls} (grader/records/"
        "genuine_frames.py writing_call, _writer_calls_by_id)")
