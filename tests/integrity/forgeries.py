"""Forging attempts: the untouched HW3 template plus code that tries to make the grader record
a perfect HW3 (or, for practical 4, a transfer that never happened), by the routes of issue 11
and the ones found attacking the scheme since.

Each attempt is code put after the template's imports (it runs when the HW3 probe imports the
model), plus extra files. `scan` says whether the static scan must hold it by itself; attempts
whose names come from data at run time (the scan cannot read them) must be held or gain nothing
at run time: those are `run` (run end to end in test_corpus.py). Placeholders: none; everything
an attempt needs it finds at run time, as a student with the grader's source would.
"""
from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field

HW3 = "hw3/model_parallel.py"
P4 = "practical4/concepts.py"


@dataclass(frozen=True)
class Forgery:
    name: str
    route: str
    code: str
    file: str = HW3
    scan: bool = True       # the scan alone holds it
    run: bool = False       # run end to end: held, or its forged records never count
    extra_files: dict = field(default_factory=dict)


# Every record a perfect HW3 would give the probe, as a forger writes them (test_hw3.PLAN).
FORGED_RECORDS = r'''
def _perfect_records():
    def layout(n, d):
        counts = [d // n + (1 if i < d % n else 0) for i in range(n)]
        devices = [f"cuda:{i}" for i, c in enumerate(counts) for _ in range(c)]
        log = []
        for i, device in enumerate(devices):
            if i and devices[i - 1] != device:
                log.append({"kind": "to", "src": devices[i - 1], "dst": device, "copied": True,
                            "site": "model_parallel.py:50"})
            log.append({"kind": "layer", "index": i, "input_device": device})
        return devices, log, counts
    records = []
    for n in (1, 2, 3, 4, 5, 8):
        for d in (1, 3, 5, 6, 12, 20, 24):
            devices, log, _ = layout(n, d)
            records.append({"kind": "layout", "gpus": n, "depth": d, "devices": devices,
                            "n_layers": d, "distinct_layers": d, "log": log,
                            "output_device": devices[-1], "matches_single_gpu": True,
                            "max_difference": 0.0})
    for n in (2, 5):
        devices, log, _ = layout(n, 20)
        records.append({"kind": "transfers", "gpus": n, "depth": 20, "devices": devices,
                         "log": log, "input_started_on": devices[0]})
    def timing(label, configs):
        results = {}
        for g, d in configs:
            _, _, counts = layout(g, d)
            times = [float(d)] * 9
            results[f"{g}x{d}"] = {"gpus": g, "depth": d, "times_ms": times, "median_ms": float(d),
                                   "peak_memory": [1 << 20] * g, "layers_per_gpu": counts}
        return {"kind": label, "configs": [list(c) for c in configs], "results": results}
    records.append(timing("trend", [(2, 6), (2, 12), (2, 24)]))
    records.append(timing("task4", [(2, 20), (5, 20)]))
    records.append({"kind": "done"})
    return records


def _probe_file():
    import os as _o, sys as _s
    for argument in _s.argv[1:]:
        if argument.endswith(".jsonl"):
            return argument
    return _o.path.join(_o.getcwd(), "probe" + ".jsonl")
'''

# A seal made by hand: HMAC-SHA256 over the file name, sequence number and canonical record.
HAND_SEAL = r'''
def _hand_seal(key, stream, seq, record, sha256):
    body = _json.dumps(record, sort_keys=True)
    message = f"{stream}\n{seq}\n{body}".encode()
    block = 64
    key = key if len(key) <= block else sha256(key).digest()
    key = key.ljust(block, b"\0")
    inner = sha256(bytes(k ^ 0x36 for k in key) + message).digest()
    return sha256(bytes(k ^ 0x5C for k in key) + inner).hexdigest()


def _write_forged(key, sha256):
    path = _probe_file()
    lines = []
    for seq, record in enumerate(_perfect_records()):
        lines.append(_json.dumps(dict(record, seq=seq,
                                      seal=_hand_seal(key, "probe.jsonl", seq, record, sha256))))
    with open(path, "a") as handle:
        handle.write("\n".join(lines) + "\n")
'''

# Names a forger keeps out of its source: read at run time from a data file it ships.
NAMES = {"tb": "__traceback__", "frame": "tb_frame", "back": "f_back", "locals": "f_locals",
         "emit": "_emit", "boot": "_bootstrap_inner", "globals": "__globals__",
         "active": "_active", "trace": "trace", "streams": "_streams", "sealer": "sealer_for",
         "write": "emit", "mods": "modules"}
NAMES_FILE = {"hw3/names.json": json.dumps({k: v[::-1] for k, v in NAMES.items()})}
READ_NAMES = r'''
import json as _json_names, os as _os_names
_N = {k: v[::-1] for k, v in _json_names.load(open(_os_names.path.join(
    _os_names.path.dirname(_os_names.path.abspath(__file__)), "names.json"))).items()}
'''


def _b64(code: str) -> str:
    return base64.b64encode(code.encode()).decode()


GC_EMIT = '''
import gc as _gc
for _o in _gc.get_objects():
    if hasattr(_o, "_emit") and hasattr(_o, "read"):
        for _r in _perfect_records():
            _o._emit(_r)
'''

FORGERIES = [
    Forgery("main_module_through_sys_in_a_list",
            "finds the probe as __main__ through sys passed into a function inside a list, and "
            "replaces its measuring methods with ones that emit perfect records",
            FORGED_RECORDS + '''
import sys as _sys
def _main_of(holder):
    return holder[0].modules.get("__main__")
_main = _main_of([_sys])
_Probe = getattr(_main, "Probe", None)
if _Probe is not None:
    _Probe.layouts = lambda self, **k: [self.emit(r) for r in _perfect_records()]
''', run=True),
    Forgery("key_from_the_environment_hand_hmac_os_exit",
            "reads the seal key as [os][0].environ.get('PD' + 'L_SEAL_KEY'), seals a complete "
            "forged probe file by hand with torch.hub.hashlib.sha256, then os._exit(0)",
            FORGED_RECORDS + HAND_SEAL + '''
import json as _json, os as _os
_key = [_os][0].environ.get("PD" + "L_SEAL_KEY") or ""
_write_forged(bytes.fromhex(_key) if _key else b"", torch.hub.hashlib.sha256)
_os._exit(0)
''', run=True),
    Forgery("key_from_the_descriptor",
            "reads the seal key from the descriptor PDL_SEAL_FD names, or any open descriptor",
            FORGED_RECORDS + HAND_SEAL + '''
import hashlib as _hashlib, json as _json, os as _os
_key = b""
for _fd in range(3, 256):
    try:
        _data = _os.read(_fd, 64)
    except OSError:
        continue
    if len(_data) == 32:
        _key = _data
_write_forged(_key, _hashlib.sha256)
''', run=True),
    Forgery("key_from_the_process_memory",
            "scans /proc/self/mem for 32-byte keys that verify an existing sealed record",
            FORGED_RECORDS + '''
_candidates = []
try:
    _maps = open("/proc/self/maps").read().splitlines()
    _mem = open("/proc/self/mem", "rb")
except OSError:
    _maps = []
''', run=True),
    Forgery("key_from_the_parent_process_memory",
            "starts a program that reads the probe's memory through /proc/<pid>/mem",
            '''
import subprocess as _sp, sys as _sys, os as _os
_sp.run([_sys.executable, "-c", "import os; open('/proc/%d/mem' % os.getppid(), 'rb')"])
_sp.run(["sh", "-c", "cat /proc/$PPID/maps > /dev/null"])
'''),
    Forgery("trace_found_through_gc_mints_a_probe_sealer",
            "walks gc's objects to the trace and asks it for a sealer of probe.jsonl",
            FORGED_RECORDS + '''
import gc as _gc
for _o in _gc.get_objects():
    if hasattr(_o, "sealer_for") and hasattr(_o, "listeners"):
        for _make in (lambda: _o._streams(_probe_file()), lambda: _o.sealer_for(_probe_file())):
            try:
                _seal = _make()
            except Exception:
                continue
            with open(_probe_file(), "a") as _h:
                _h.write("".join(_seal(r) + "\\n" for r in _perfect_records()))
''', run=True),
    Forgery("probe_found_through_gc_emits",
            "walks gc's objects to the probe and calls its own emit with perfect records",
            FORGED_RECORDS + GC_EMIT, run=True),
    Forgery("probe_found_through_frames_emits",
            "walks sys._getframe's callers to the probe's frame and calls its emit",
            FORGED_RECORDS + '''
import sys as _sys
_f = _sys._getframe()
while _f is not None:
    _self = _f.f_locals.get("self")
    if hasattr(_self, "_emit"):
        for _r in _perfect_records():
            _self._emit(_r)
        break
    _f = _f.f_back
'''),
    Forgery("probe_found_through_a_traceback_with_names_from_data",
            "raises and catches its own error, walks the traceback's frames to the probe with "
            "every attribute name read from a data file, and calls the probe's emit",
            FORGED_RECORDS + READ_NAMES + '''
try:
    raise KeyError("x")
except KeyError as _error:
    _f = getattr(getattr(_error, _N["tb"]), _N["frame"])
    while _f is not None:
        _self = getattr(_f, _N["locals"]).get("self")
        _emit = getattr(_self, _N["emit"], None)
        if _emit is not None:
            for _r in _perfect_records():
                _emit(_r)
            break
        _f = getattr(_f, _N["back"])
''', scan=False, run=True, extra_files=NAMES_FILE),
    Forgery("trace_found_through_a_patched_functions_globals_with_names_from_data",
            "reads the runtime's globals through threading.Thread._bootstrap_inner.__globals__, "
            "every name from a data file, and tries the trace's sealers and emit",
            FORGED_RECORDS + READ_NAMES + '''
import threading as _threading
_globals = getattr(getattr(_threading.Thread, _N["boot"]), _N["globals"])
_trace = getattr(_globals[_N["active"]], _N["trace"])
for _name in (_N["streams"], _N["sealer"]):
    try:
        _seal = getattr(_trace, _name)(_probe_file())
        with open(_probe_file(), "a") as _h:
            _h.write("".join(_seal(r) + "\\n" for r in _perfect_records()))
    except Exception:
        pass
for _r in _perfect_records():
    getattr(_trace, _N["write"])("layout", **_r)
''', scan=False, run=True, extra_files=NAMES_FILE),
    Forgery("tensor_class_patched_through_type_of_an_object",
            "type(x).device = a property that says cuda:k, so the layers seem spread out",
            '''
_x = torch.zeros(1)
_real = type(_x).device
type(_x).device = property(lambda self: torch.device("cuda", 1))
''', run=True),
    Forgery("tensor_base_patched_through_mro",
            "type(x).__mro__[1].to = a no-op, so no move happens or is seen",
            "_x = torch.zeros(1)\ntype(_x).__mro__[1].to = lambda self, *a, **k: self\n"),
    Forgery("module_hook_registration_patched_as_a_class_attribute",
            "nn.Module.register_forward_pre_hook replaced, so the probe's hooks see fake inputs",
            '''
_original = nn.Module.register_forward_pre_hook
def _fake_register(self, hook, *a, **k):
    return _original(self, lambda module, args: hook(module, (torch.zeros(1),)), *a, **k)
nn.Module.register_forward_pre_hook = _fake_register
''', run=True),
    Forgery("decorator_patches_parameters_with_a_computed_name",
            "a decorator that setattr()s nn.Module.parameters with a name built at run time",
            '''
def _replace(owner, name):
    def decorate(function):
        setattr(owner, name, function)
        return function
    return decorate

@_replace(nn.Module, "".join(reversed("sretemarap")))
def _parameters(self, recurse=True):
    return iter([])
''', run=True),
    Forgery("init_subclass_hook",
            "__init_subclass__ on a base class, to rewrite the layer classes as they are made",
            '''
class _Spy(nn.Module):
    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.forward = lambda self, x: x
'''),
    Forgery("builtins_through_globals_with_a_concatenated_name",
            "globals()['__buil' + 'tins__'] to replace isinstance",
            "globals()['__buil' + 'tins__']['isinstance'] = lambda a, b: True\n"),
    Forgery("frame_through_getattr_with_a_concatenated_name",
            "getattr(frame, 'f_' + 'back') to climb to the probe",
            "import sys as _s\n_caller = getattr(_s._getframe(), 'f_' + 'back')\n"),
    Forgery("proc_path_built_by_concatenation",
            "a /proc path built by concatenation, to read the environment of the process",
            "_env = open('/pr' + 'oc/self/' + 'environ', 'rb').read()\n"),
    Forgery("pickle_through_torch_serialization",
            "torch.serialization.pickle.loads of a payload that runs code when loaded",
            "torch.serialization.pickle.loads(" + repr(
                b"cbuiltins\nexec\n(Vimport gc; gc.get_objects()\ntR.") + ")\n"),
    Forgery("execv_through_a_list",
            "[os][0].execv into a fresh python that writes the forged probe file",
            FORGED_RECORDS + '''
import os as _os, sys as _sys
_code = "import json\\n" + "_r = " + repr(_perfect_records()) + "\\n" + \\
    "open(" + repr(_probe_file()) + ", 'a').write(''.join(json.dumps(r) + '\\\\n' for r in _r))"
[_os][0].execv(_sys.executable, [_sys.executable, "-c", _code])
''', run=True),
    Forgery("multiprocessing_child_writes_the_records",
            "a multiprocessing child (no key of its own) writes the forged probe file",
            FORGED_RECORDS + '''
import json as _json, multiprocessing as _mp
def _child(path):
    with open(path, "a") as handle:
        handle.write("".join(_json.dumps(r) + "\\n" for r in _perfect_records()))
_p = _mp.get_context("fork").Process(target=_child, args=(_probe_file(),))
_p.start()
_p.join()
''', run=True),
    Forgery("atexit_writes_the_records_last",
            "an atexit handler appends the forged records when the probe ends",
            FORGED_RECORDS + '''
import atexit as _atexit, json as _json
_atexit.register(lambda: open(_probe_file(), "a").write(
    "".join(_json.dumps(r) + "\\n" for r in _perfect_records())))
''', run=True),
    Forgery("signal_handler_gets_the_probes_frame",
            "a SIGALRM handler (the probe's time limit) is given the probe's frame",
            FORGED_RECORDS + '''
import signal as _signal
def _handler(number, frame):
    while frame is not None:
        probe = frame.f_locals.get("self")
        if hasattr(probe, "_emit"):
            for record in _perfect_records():
                probe._emit(record)
            return
        frame = frame.f_back
_signal.signal(_signal.SIGALRM, _handler)
''', run=True),
    Forgery("tracing_function",
            "sys.settrace to rewrite the probe's locals as it measures",
            "import sys as _s\n_s.settrace(lambda frame, event, arg: None)\n"),
    Forgery("code_in_a_zip_on_sys_path",
            "the forging code in a zip of its own, imported through sys.path",
            "import os as _o, sys as _s\n"
            "_s.path.insert(0, _o.path.join(_o.path.dirname(__file__), 'lib.zip'))\nimport helper_lib\n",
            extra_files={"hw3/lib.zip": ("zip", {"helper_lib.py": "import gc\n" + GC_EMIT})}),
    Forgery("code_behind_a_symlinked_py",
            "helper.py is a link to a .txt file holding the forging code",
            "import helper\n",
            extra_files={"hw3/notes.txt": "import gc\n" + GC_EMIT,
                         "hw3/helper.py": ("symlink", "notes.txt")}),
    Forgery("exec_of_base64",
            "exec of a base64 string holding the forging code",
            "import base64 as _b\nexec(_b.b64decode(" + repr(_b64("import gc\n" + GC_EMIT)) + "))\n"),
    Forgery("exec_of_a_data_file",
            "exec of code read from a data file shipped with the submission",
            "import os as _o\nexec(open(_o.path.join(_o.path.dirname(__file__), 'payload.txt')).read())\n",
            extra_files={"hw3/payload.txt": "import gc\n" + GC_EMIT}),
    Forgery("node_labels_through_gc",
            "finds the virtual node through gc and labels host tensors as GPU ones",
            "import gc as _gc\n_node = [o for o in _gc.get_objects() if hasattr(o, 'label_of')]\n"),
    Forgery("trace_listener_called_directly",
            "finds the probe's transfer listener on the trace and calls it with fake moves",
            "import gc as _gc\nfor _o in _gc.get_objects():\n    if hasattr(_o, 'listeners'):\n"
            "        for _l in list(_o.listeners):\n"
            "            _l({'event': 'to', 'src': 'cuda:0', 'dst': 'cuda:1', 'copied': True})\n"),
    Forgery("practical4_trace_written_through_the_trace_object",
            "practical 4: emits a perfect cuda:0 -> cuda:1 move through the grader's trace, "
            "found with names read from a data file",
            READ_NAMES.replace("hw3", "practical4") + '''
import threading as _threading
_globals = getattr(getattr(_threading.Thread, _N["boot"]), _N["globals"])
_trace = getattr(_globals[_N["active"]], _N["trace"])
getattr(_trace, _N["write"])("to", src="cuda:0", dst="cuda:1", copied=True, bytes=512000,
                             shape=[64, 2000])
''', file=P4, scan=False, run=True,
            extra_files={"practical4/names.json": NAMES_FILE["hw3/names.json"]}),
]
