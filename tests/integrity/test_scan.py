"""The static source scan (grader/integrity/scan.py): what it reports, what it must leave alone.

Every snippet is written into a throwaway submission folder and read by `scan_submission`;
nothing here runs student code or starts a process. Positives cover every category of
`CATEGORIES`, with the evasions a student could try (aliases, computed names, getattr/setattr);
negatives are the idioms honest solutions use; the course's own material (reference/,
student_template/, every planted bug) must give no finding at all. The evasions at the end are
the ones a first version missed, each with why it matters.
"""
from __future__ import annotations

import os
import sys
import threading
import zipfile
from pathlib import Path

import pytest

from tests.fixtures import hw3_variants as hv
from tests.fixtures import practical_variants as pv

from grader.integrity import scan  # noqa: E402
from grader.integrity.scan import (  # noqa: E402
    ASSIGNMENT_FOLDERS, CATEGORIES, MAX_FILE_BYTES, Finding, bytecode_caches, findings_for,
    scan_submission)

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_FILE = "practical4/concepts.py"


# -- helpers ----------------------------------------------------------------------------------
def write(submission: Path, files: dict[str, str | bytes]) -> Path:
    for relative, content in files.items():
        path = submission / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return submission


def scan_snippet(tmp_path: Path, source: str, file: str = DEFAULT_FILE) -> list[Finding]:
    return scan_submission(write(tmp_path, {file: source}))


def shown(findings: list[Finding]) -> str:
    return "\n".join(f.describe() for f in findings) or "(no finding)"


def scan_in_thread(submission: Path, seconds: float = 5.0) -> list[Finding]:
    """scan_submission, failing (instead of hanging the suite) if it does not return in time."""
    result: dict = {}
    worker = threading.Thread(target=lambda: result.update(found=scan_submission(submission)),
                              daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"the scan did not return within {seconds} s"
    return result["found"]


# -- 1. positives: every category, with evasions ------------------------------------------------
# (id, source, category, line of the finding)
POSITIVES = [
    # grader
    ("import_grader", "import grader\n", "grader", 1),
    ("from_grader_import", "from grader.vgpu import trace\n", "grader", 1),
    ("import_grader_submodule_as", "import grader.vgpu.trace as t\n", "grader", 1),
    ("names_trace_file", "import os\nf = open(os.path.join(d, 'trace.jsonl'), 'a')\n",
     "grader", 2),
    ("names_probe_file", "path = 'out/probe.jsonl'\n", "grader", 1),
    # digests: what forging a seal needs
    ("import_hmac", "import hmac\nh = hmac.new(key, line, 'sha256')\n", "digests", 1),
    ("from_hashlib", "from hashlib import sha256\n", "digests", 1),
    # grader_settings
    ("pdl_key_subscript", "import os\nk = os.environ['PDL_SEAL_KEY']\n", "grader_settings", 2),
    ("pdl_getenv", "import os\np = os.getenv('PDL_VGPU_TRACE')\n", "grader_settings", 2),
    ("pdl_set", "import os\nos.environ['PDL_VGPU_GPUS'] = '8'\n", "grader_settings", 2),
    ("pdl_in_fstring", "import os\nv = os.environ.get(f'PDL_{x}')\n", "grader_settings", 2),
    # environment
    ("from_os_import_environ_dict", "from os import environ\nsettings = dict(environ)\n",
     "environment", 2),
    ("environ_computed_subscript", "import os\nname = 'RANK'\nv = os.environ[name]\n",
     "environment", 3),
    ("environ_iterated", "import os\nfor key in os.environ:\n    print(key)\n", "environment", 2),
    ("environ_copy", "import os\nsnapshot = os.environ.copy()\n", "environment", 2),
    ("environ_items", "import os\npairs = list(os.environ.items())\n", "environment", 2),
    ("environ_get_computed", "import os\nv = os.environ.get(prefix + 'KEY')\n",
     "environment", 2),
    ("environ_in_computed", "import os\nfound = name in os.environ\n", "environment", 2),
    ("environ_printed_via_module_alias", "import os as o\nprint(o.environ)\n", "environment", 2),
    ("environ_name_alias", "import os\nenv = os.environ\npairs = list(env.items())\n",
     "environment", 3),
    ("environ_unpacked", "import os\nx = {**os.environ}\n", "environment", 2),
    ("environ_update_from_dict_object", "import os\nos.environ.update(saved)\n",
     "environment", 2),
    ("getenv_computed", "import os\nv = os.getenv(name)\n", "environment", 2),
    ("from_os_import_getenv_computed", "from os import getenv as g\nv = g(name)\n",
     "environment", 2),
    ("environb", "import os\nraw = os.environb\n", "environment", 2),
    ("import_posix", "import posix\n", "environment", 1),
    # dynamic_code
    ("exec", "exec('x = 1')\n", "dynamic_code", 1),
    ("eval", "y = eval('1 + 1')\n", "dynamic_code", 1),
    ("compile", "c = compile('1', 'f', 'eval')\n", "dynamic_code", 1),
    ("dunder_import_computed", "m = __import__('gr' + 'ader')\n", "dynamic_code", 1),
    ("importlib_import_module", "import importlib\nm = importlib.import_module('gr' + 'ader')\n",
     "dynamic_code", 2),
    ("from_importlib_import", "from importlib import import_module\n", "dynamic_code", 1),
    ("import_pickle", "import pickle\n", "dynamic_code", 1),
    ("import_ctypes", "import ctypes\n", "dynamic_code", 1),
    ("from_ctypes_import", "from ctypes import CDLL\n", "dynamic_code", 1),
    ("import_marshal", "import marshal\n", "dynamic_code", 1),
    ("import_runpy", "import runpy\n", "dynamic_code", 1),
    ("types_function_type", "import types\nf = types.FunctionType(code, {})\n",
     "dynamic_code", 2),
    # introspection
    ("import_gc", "import gc\nobjects = gc.get_objects()\n", "introspection", 1),
    ("import_inspect", "import inspect\n", "introspection", 1),
    ("import_builtins", "import builtins\n", "introspection", 1),
    ("sys_getframe", "import sys\nframe = sys._getframe(1)\n", "introspection", 2),
    ("frame_f_back", "caller = frame.f_back\n", "introspection", 1),
    ("frame_f_globals", "g = frame.f_globals\n", "introspection", 1),
    ("traceback_tb_frame", "f = error.__traceback__.tb_frame\n", "introspection", 1),
    ("closure", "cells = fn.__closure__\n", "introspection", 1),
    ("function_globals", "g = fn.__globals__\n", "introspection", 1),
    ("function_code", "c = fn.__code__\n", "introspection", 1),
    ("subclasses", "subclasses = object.__subclasses__()\n", "introspection", 1),
    ("dunder_builtins_name", "b = __builtins__\n", "introspection", 1),
    ("sys_modules", "import sys\nm = sys.modules['torch']\n", "introspection", 2),
    ("from_sys_import_modules", "from sys import modules\n", "introspection", 1),
    ("sys_alias_getframe", "import sys as s\nf = s._getframe()\n", "introspection", 2),
    ("sys_settrace", "import sys\nsys.settrace(tracer)\n", "introspection", 2),
    ("sys_meta_path", "import sys\nsys.meta_path.insert(0, finder)\n", "introspection", 2),
    ("threading_settrace", "import threading\nthreading.settrace(tracer)\n",
     "introspection", 2),
    ("getattr_literal_sys_modules", "import sys\nm = getattr(sys, 'modules')\n",
     "introspection", 2),
    ("vars_of_module", "import torch\nnames = vars(torch)\n", "introspection", 2),
    ("module_dict", "import torch\nd = torch.__dict__\n", "introspection", 2),
    ("getattr_computed_on_torch", "import torch\nname = '_C'\nc = getattr(torch, name)\n",
     "introspection", 3),
    ("getattr_computed_on_os", "import os\nf = getattr(os, 'sys' + 'tem')\n",
     "introspection", 2),
    # torch_internals
    ("torch_alias_private", "import torch as t\nc = t._C\n", "torch_internals", 2),
    ("torch_private_call", "import torch\ntorch._C._set_grad_enabled(False)\n",
     "torch_internals", 2),
    ("import_torch_private", "import torch._C\n", "torch_internals", 1),
    ("from_torch_import_private", "from torch import _C\n", "torch_internals", 1),
    ("import_python_dispatch",
     "from torch.utils._python_dispatch import TorchDispatchMode\n", "torch_internals", 1),
    ("import_torch_overrides", "import torch.overrides\n", "torch_internals", 1),
    ("getattr_literal_private", "import torch\nc = getattr(torch, '_C')\n",
     "torch_internals", 2),
    ("subclass_torch_function_mode",
     "from torch.overrides import TorchFunctionMode\n\nclass M(TorchFunctionMode):\n    pass\n",
     "torch_internals", 3),
    ("subclass_torch_function_mode_dotted",
     "import torch\n\nclass M(torch.overrides.TorchFunctionMode):\n    pass\n",
     "torch_internals", 3),
    ("subclass_dispatch_mode_unimported", "class M(TorchDispatchMode):\n    pass\n",
     "torch_internals", 1),
    ("define_torch_function",
     "import torch\n\nclass T(torch.Tensor):\n    @classmethod\n"
     "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
     "        return func(*args)\n", "torch_internals", 5),
    ("define_torch_dispatch",
     "class T:\n    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):\n"
     "        pass\n", "torch_internals", 2),
    ("as_subclass", "import torch\ny = x.as_subclass(torch.Tensor)\n", "torch_internals", 2),
    ("make_subclass", "import torch\ny = torch.Tensor._make_subclass(T, x)\n",
     "torch_internals", 2),
    # patching
    ("assign_torch_attribute", "import torch\ntorch.Tensor.to = fake_to\n", "patching", 2),
    ("assign_through_module_alias", "import torch\nT = torch\nT.Tensor.to = fake_to\n",
     "patching", 3),
    ("assign_through_class_alias_nn",
     "import torch.nn as nn\nL = nn.Linear\nL.forward = fake_forward\n", "patching", 3),
    ("assign_through_class_alias_from",
     "from torch import nn\nL = nn.Linear\nL.forward = fake_forward\n", "patching", 3),
    ("assign_imported_class", "from torch.nn import Linear\nLinear.forward = fake_forward\n",
     "patching", 2),
    ("setattr_literal", "import torch\nsetattr(torch.Tensor, 'to', fake_to)\n", "patching", 2),
    ("setattr_computed", "import torch\nname = 'to'\nsetattr(torch.Tensor, name, fake_to)\n",
     "patching", 3),
    ("delattr", "import torch\ndelattr(torch.Tensor, 'to')\n", "patching", 2),
    ("del_attribute", "import torch\ndel torch.cuda.device_count\n", "patching", 2),
    ("device_count_lambda", "import torch\ntorch.cuda.device_count = lambda: 8\n",
     "patching", 2),
    ("tuple_target", "import torch\ntorch.cuda.device_count, torch.cuda.is_available = f, g\n",
     "patching", 2),
    ("augmented", "import torch\ntorch.cuda.device_count += 1\n", "patching", 2),
    ("stdlib_time", "import time\ntime.perf_counter = lambda: 0.0\n", "patching", 2),
    ("dist_alias", "import torch.distributed as dist\ndist.all_reduce = lambda *a, **k: None\n",
     "patching", 2),
    ("inside_function",
     "import torch\n\ndef patch():\n    torch.Tensor.to = fake_to\n", "patching", 4),
    # processes
    ("import_subprocess", "import subprocess\nsubprocess.run(['ls'])\n", "processes", 1),
    ("from_subprocess_import", "from subprocess import run\n", "processes", 1),
    ("os_system", "import os\nos.system('nvidia-smi')\n", "processes", 2),
    ("os_popen", "import os\nout = os.popen('ls').read()\n", "processes", 2),
    ("os_fork", "import os\npid = os.fork()\n", "processes", 2),
    ("os_execv", "import os\nos.execv('/bin/sh', ['sh'])\n", "processes", 2),
    ("os_posix_spawn", "import os\nos.posix_spawn('/bin/sh', ['sh'], {})\n", "processes", 2),
    ("from_os_import_system", "from os import system\n", "processes", 1),
    ("import_pty", "import pty\n", "processes", 1),
    # proc_files
    ("open_proc_environ", "data = open('/proc/self/environ').read()\n", "proc_files", 1),
    ("path_proc", "from pathlib import Path\np = Path('/proc')\n", "proc_files", 2),
    ("fstring_proc", "p = f'/proc/{pid}/environ'\n", "proc_files", 1),
    ("percent_proc", "p = '/proc/%d/maps' % pid\n", "proc_files", 1),
]


@pytest.mark.parametrize("source, category, line",
                         [pytest.param(*case[1:], id=case[0]) for case in POSITIVES])
def test_code_that_could_deceive_the_grader_is_reported(tmp_path, source, category, line):
    findings = scan_snippet(tmp_path, source)
    match = [f for f in findings if (f.line, f.category) == (line, category)]
    assert match, (f"expected a '{category}' finding on line {line} of\n{source}\n"
                   f"observed:\n{shown(findings)}")
    finding = match[0]
    assert all(f.file == DEFAULT_FILE for f in findings)
    assert finding.code == source.splitlines()[line - 1].strip(), "the code shown is the line"
    assert finding.what, "every finding says what the code does"
    text = finding.describe()
    assert text.startswith(f"{DEFAULT_FILE}:{line} {CATEGORIES[category]}: "), text
    assert f"(`{finding.code}`)" in text, text


# Findings about the files themselves (names, compiled code, size): line 0, no code.
FILE_POSITIVES = [
    # (id, files, file of the finding, category)
    ("stdlib_name_in_assignment", {"practical4/json.py": "x = 1\n"}, "practical4/json.py",
     "shadowing"),
    ("torch_name", {"hw3/torch.py": "x = 1\n"}, "hw3/torch.py", "shadowing"),
    ("numpy_name_top_level", {"numpy.py": "x = 1\n"}, "numpy.py", "shadowing"),
    ("sitecustomize", {"practical6/sitecustomize.py": ""}, "practical6/sitecustomize.py",
     "shadowing"),
    ("pynvml", {"practical10/pynvml.py": ""}, "practical10/pynvml.py", "shadowing"),
    ("grader_package_folder", {"grader/__init__.py": "", "grader/vgpu.py": "x = 1\n"},
     "grader", "shadowing"),
    ("stdlib_package_folder", {"json/__init__.py": ""}, "json", "shadowing"),
    ("torch_folder_without_init", {"torch/readme.txt": "hi"}, "torch", "shadowing"),
    ("legacy_pyc", {"practical4/helper.pyc": b"\x00\x01compiled"}, "practical4/helper.pyc",
     "compiled"),
    ("shared_object", {"practical4/helper.so": b"\x7fELF"}, "practical4/helper.so", "compiled"),
    ("extension_module", {"hw3/fast.cpython-311-x86_64-linux-gnu.so": b"\x7fELF"},
     "hw3/fast.cpython-311-x86_64-linux-gnu.so", "compiled"),
    ("pyo", {"practical5/old.pyo": b"\x00"}, "practical5/old.pyo", "compiled"),
    ("too_large", {"practical4/big.py": "#" * (MAX_FILE_BYTES + 1)}, "practical4/big.py",
     "unreadable"),
]


@pytest.mark.parametrize("files, file, category",
                         [pytest.param(*case[1:], id=case[0]) for case in FILE_POSITIVES])
def test_files_that_could_deceive_the_grader_are_reported(tmp_path, files, file, category):
    findings = scan_submission(write(tmp_path, files))
    match = [f for f in findings if (f.file, f.category) == (file, category)]
    assert match, f"expected a '{category}' finding for {file}; observed:\n{shown(findings)}"
    finding = match[0]
    assert (finding.line, finding.code) == (0, ""), "a file's finding has no line and no code"
    assert finding.describe().startswith(f"{file} {CATEGORIES[category]}: "), finding.describe()


def test_a_too_large_file_is_not_parsed(tmp_path):
    findings = scan_snippet(tmp_path, "import grader\n" + "#" * MAX_FILE_BYTES)
    assert [(f.line, f.category) for f in findings] == [(0, "unreadable")], shown(findings)
    assert "MiB" in findings[0].what


def test_past_the_file_limit_the_rest_is_reported_unread(tmp_path, monkeypatch):
    monkeypatch.setattr(scan, "MAX_FILES", 3)
    write(tmp_path, {f"practical4/m{n}.py": "x = 1\n" for n in range(3)})
    write(tmp_path, {"practical4/m3.py": "import grader\n", "practical4/m4.py": "import gc\n"})
    findings = scan_submission(tmp_path)
    assert [(f.file, f.line, f.category) for f in findings] == [
        ("practical4/m3.py", 0, "unreadable")], shown(findings)
    assert "more than 3 files" in findings[0].what


def test_every_category_has_a_positive_case():
    covered = {case[2] for case in POSITIVES} | {case[3] for case in FILE_POSITIVES}
    assert covered == set(CATEGORIES), f"categories without a case: {set(CATEGORIES) - covered}"


def test_findings_are_sorted_by_file_and_line_and_said_once_per_line_and_category(tmp_path):
    write(tmp_path, {
        "practical4/b.py": "import os\nimport gc, inspect\nx = eval('1') + eval('2')\n",
        "practical4/a.py": "x = 1\nexec('y = 2')\n"})
    findings = scan_submission(tmp_path)
    assert [(f.file, f.line, f.category) for f in findings] == [
        ("practical4/a.py", 2, "dynamic_code"),
        ("practical4/b.py", 2, "introspection"),   # gc and inspect: one line, one finding
        ("practical4/b.py", 3, "dynamic_code")], shown(findings)


def test_long_lines_are_shortened_in_the_finding(tmp_path):
    source = "import os\nos.system('" + "x" * 200 + "')\n"
    (finding,) = scan_snippet(tmp_path, source)
    assert len(finding.code) == 100 and finding.code.endswith("..."), finding.code
    assert finding.code.startswith("os.system('xxx")


def test_a_finding_is_reported_in_any_python_file_at_any_depth(tmp_path):
    write(tmp_path, {"practical6/utils/deep/helper.py": "import gc\n",
                     "top_level.py": "import grader\n"})
    findings = scan_submission(tmp_path)
    assert [(f.file, f.category) for f in findings] == [
        ("practical6/utils/deep/helper.py", "introspection"),
        ("top_level.py", "grader")], shown(findings)


# -- 2. negatives: what honest students write -------------------------------------------------
NEGATIVES = {
    "environ_literal_key": "import os\nrank = int(os.environ['LOCAL_RANK'])\n",
    "environ_get_default": "import os\nworld = int(os.environ.get('WORLD_SIZE', 1))\n",
    "environ_contains": "import os\nif 'RANK' in os.environ:\n    pass\n",
    "environ_not_contains": "import os\nif 'RANK' not in os.environ:\n    pass\n",
    "environ_set": "import os\nos.environ['MASTER_ADDR'] = 'localhost'\n"
                   "os.environ['MASTER_PORT'] = str(29500)\n",
    "environ_setdefault": "import os\nos.environ.setdefault('X', '1')\n",
    "environ_pop_and_del": "import os\nos.environ.pop('X', None)\ndel os.environ['Y']\n",
    "environ_update_kwargs": "import os\nos.environ.update(MASTER_ADDR='localhost')\n",
    "environ_in_fstring": "import os\nprint(f\"rank {os.environ['RANK']}\")\n",
    "from_os_import_environ_literal": "from os import environ\nr = environ['RANK']\n",
    "getenv_literal": "import os\nrank = os.getenv('RANK')\n",
    "cuda_visible_devices": "import os\nos.environ['CUDA_VISIBLE_DEVICES'] = ','.join(ids)\n",
    "backends_settings": "import torch\ntorch.backends.cudnn.benchmark = True\n"
                         "torch.backends.cudnn.deterministic = True\n"
                         "torch.backends.cuda.matmul.allow_tf32 = True\n",
    "backends_setattr": "import torch\nsetattr(torch.backends.cudnn, 'benchmark', True)\n",
    "setattr_getattr_on_self": (
        "import torch.nn as nn\n\nclass M(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        for i in range(3):\n"
        "            setattr(self, f'layer{i}', nn.Linear(4, 4))\n\n"
        "    def forward(self, x):\n        for i in range(3):\n"
        "            x = getattr(self, f'layer{i}')(x)\n        return x\n"),
    "getattr_literal_on_nn": "import torch.nn as nn\nact = getattr(nn, 'ReLU')()\n",
    "hasattr_on_module": "import torch\nok = hasattr(torch, 'compile')\n",
    "getattr_computed_on_object": "layer = getattr(model, name)\n",
    "model_to_device": "model.to('cuda:1')\nx = x.to(f'cuda:{rank}')\n",
    "device_count": "import torch\nn = torch.cuda.device_count()\n",
    "mp_spawn": "import torch\ntorch.multiprocessing.spawn(run, args=(2,), nprocs=2)\n",
    "mp_alias_spawn": "import torch.multiprocessing as mp\nmp.spawn(run, nprocs=2, join=True)\n",
    "init_process_group": "import torch.distributed as dist\ndist.init_process_group('nccl')\n"
                          "dist.all_reduce(t)\ndist.destroy_process_group()\n",
    "ddp_import": "from torch.nn.parallel import DistributedDataParallel as DDP\n"
                  "model = DDP(model, device_ids=[rank])\n",
    "perf_counter": "import time\nstart = time.perf_counter()\n",
    "docstrings_name_grader_things": (
        '"""Sets PDL_VGPU_TRACE? No: the grader writes trace.jsonl and reads /proc."""\n'
        "def f():\n    '''Mentions PDL_SEAL_KEY, probe.jsonl and /proc/self/environ.'''\n"
        "    return 1\n\nclass C:\n    \"\"\"PDL_VGPU_GPUS\"\"\"\n"),
    "comments_name_grader_things": "# import grader; os.environ['PDL_SEAL_KEY']; exec(x)\nx = 1\n",
    "future_import": "from __future__ import annotations\n",
    "module_state_of_objects": (
        "import torch\nimport torch.nn as nn\nm = nn.Linear(2, 2)\n"
        "m.weight = nn.Parameter(m.weight * 2)\nx = torch.randn(2)\nx.data = x.data * 2\n"
        "x.requires_grad = True\n"),
    "torch_version": "import torch\nprint(torch.__version__)\n",
    "vars_of_args": "cfg = vars(args)\n",
    "seeds_and_settings": "import torch\nimport random\nimport numpy as np\n"
                          "torch.manual_seed(0)\nrandom.seed(0)\nnp.random.seed(0)\n"
                          "torch.set_num_threads(1)\n",
    "sys_basics": "import sys\nimport os\nsys.path.insert(0, os.path.dirname(__file__))\n"
                  "print(sys.argv)\nsys.exit(0)\n",
    "main_guard": "if __name__ == '__main__':\n    main()\n",
    "relative_import": "from .helpers import run\nfrom . import helpers\n",
    "checkpointing": "import torch\ntorch.save(model.state_dict(), 'ckpt.pt')\n"
                     "state = torch.load('ckpt.pt')\n",
    "functional_alias": "import torch.nn.functional as F\ny = F.relu(x)\n",
    "no_grad_and_sync": "import torch\nwith torch.no_grad():\n    torch.cuda.synchronize()\n",
    "os_path_and_files": "import os\nos.makedirs('out', exist_ok=True)\n"
                         "p = os.path.join('out', 'loss.txt')\n",
    "attribute_of_alias_rebound": "import time\ntime = Timer()\ntime.start = 0\n",
}


@pytest.mark.parametrize("source", list(NEGATIVES.values()), ids=list(NEGATIVES))
def test_honest_idioms_give_no_finding(tmp_path, source):
    findings = scan_snippet(tmp_path, source)
    assert findings == [], f"false positive on\n{source}\n{shown(findings)}"


def test_bytecode_caches_beside_their_source_are_no_finding(tmp_path):
    write(tmp_path, {"practical4/concepts.py": "x = 1\n",
                     "practical4/__pycache__/concepts.cpython-311.pyc": b"\x00compiled",
                     "hw3/__pycache__/model_parallel.cpython-311.pyc": b"\x00compiled",
                     "hw3/__pycache__/json.py": "import grader\n",
                     "__pycache__/x.cpython-311.pyc": b"\x00"})
    findings = scan_submission(tmp_path)
    assert findings == [], f"__pycache__ is masked at run time, not a finding:\n{shown(findings)}"


def test_a_syntax_error_is_no_finding_and_no_crash(tmp_path):
    write(tmp_path, {"practical4/broken.py": "import grader\ndef f(:\n",
                     "practical4/nul.py": b"import gc\x00\n",
                     "practical4/ok.py": "import gc\n"})
    findings = scan_submission(tmp_path)
    assert [(f.file, f.category) for f in findings] == [("practical4/ok.py", "introspection")], \
        f"files that cannot run are not findings; the others are still read:\n{shown(findings)}"


def test_non_python_files_are_not_read(tmp_path):
    write(tmp_path, {"practical4/answers.yaml": "note: import grader, PDL_SEAL_KEY\n",
                     "hw3/REPORT.md": "exec('x') /proc/self/environ trace.jsonl\n",
                     "hw3/report.pdf": b"%PDF-1.4 import grader",
                     "practical4/notes.txt": "import os; os.system('ls')\n"})
    findings = scan_submission(tmp_path)
    assert findings == [], shown(findings)


def test_symlinks_are_not_followed(tmp_path):
    submission = write(tmp_path / "submission", {"practical4/concepts.py": "x = 1\n"})
    outside = write(tmp_path / "outside", {"evil.py": "import grader\n"})
    folder = submission / "practical4"
    (folder / "zero.py").symlink_to("/dev/zero")
    (folder / "loop.py").symlink_to(folder / "loop.py")
    (folder / "up").symlink_to(submission, target_is_directory=True)
    (folder / "elsewhere").symlink_to(outside, target_is_directory=True)
    (folder / "evil.py").symlink_to(outside / "evil.py")
    findings = scan_in_thread(submission)
    assert findings == [], shown(findings)


def test_a_fifo_does_not_hang_the_scan(tmp_path):
    write(tmp_path, {"practical4/concepts.py": "x = 1\n"})
    os.mkfifo(tmp_path / "practical4" / "pipe.py")
    assert scan_in_thread(tmp_path) == []


# -- 3. the course's own material ---------------------------------------------------------------
@pytest.mark.parametrize("folder", ["reference", "student_template"])
def test_course_material_gives_no_finding(folder):
    findings = scan_submission(ROOT / folder)
    assert findings == [], f"{folder}/ is reported:\n{shown(findings)}"


MATRIX = ([(v.name, hv.build, v) for v in hv.VARIANTS]
          + [(v.name, pv.plant, v) for v in pv.VARIANTS])


@pytest.mark.parametrize("name, build, variant", MATRIX, ids=[m[0] for m in MATRIX])
def test_the_matrices_submissions_give_no_finding(name, build, variant, tmp_path):
    """Every way of writing a solution, and every honest mistake, of the grading matrices."""
    findings = scan_submission(build(variant, tmp_path / "submission"))
    assert findings == [], f"[{name}] an honest submission is reported:\n{shown(findings)}"


# -- 4. assignment, findings_for, to_dict ----------------------------------------------------
@pytest.mark.parametrize("file, assignment", [
    *[(f"{a}/x.py", a) for a in ASSIGNMENT_FOLDERS],
    ("hw3/sub/deep/x.py", "hw3"),
    ("x.py", None), ("lib/hw3/x.py", None), ("practical7/x.py", None),
    ("Practical4/x.py", None), ("hw3.py", None), ("", None)])
def test_a_findings_assignment_is_its_top_assignment_folder(file, assignment):
    assert Finding(file, 1, "grader", "w", "c").assignment == assignment


def test_assignment_folders_are_the_courses():
    assert set(ASSIGNMENT_FOLDERS) == {"practical4", "practical5", "practical6", "practical10",
                                       "hw3"}


def test_findings_for_an_assignment_include_those_outside_every_assignment(tmp_path):
    write(tmp_path, {"hw3/model_parallel.py": "import grader\n",
                     "hw3/sub/helper.py": "import gc\n",
                     "practical4/concepts.py": "import gc\n",
                     "practical10/sample.py": "import pickle\n",
                     "common/util.py": "exec('x')\n",
                     "top.py": "import inspect\n",
                     "json.py": ""})
    findings = scan_submission(tmp_path)
    assert len(findings) == 7, shown(findings)
    assert {f.file for f in findings_for(findings, "hw3")} == {
        "hw3/model_parallel.py", "hw3/sub/helper.py", "common/util.py", "top.py", "json.py"}
    assert {f.file for f in findings_for(findings, "practical4")} == {
        "practical4/concepts.py", "common/util.py", "top.py", "json.py"}
    assert {f.file for f in findings_for(findings, "practical6")} == {
        "common/util.py", "top.py", "json.py"}
    assert findings_for([], "hw3") == []


def test_to_dict_has_everything_a_report_shows(tmp_path):
    (finding,) = scan_snippet(tmp_path, "x = 1\nimport gc\n", file="hw3/model_parallel.py")
    data = finding.to_dict()
    assert data == {"file": "hw3/model_parallel.py", "line": 2, "category": "introspection",
                    "what": "imports gc", "code": "import gc", "assignment": "hw3",
                    "text": finding.describe()}
    assert data["text"] == ("hw3/model_parallel.py:2 inspects or rewrites the running "
                            "interpreter: imports gc (`import gc`)")


def test_to_dict_of_a_file_outside_assignments():
    data = Finding("helper.so", 0, "compiled", "a .so file", "").to_dict()
    assert (data["assignment"], data["line"], data["code"]) == (None, 0, "")
    assert data["text"] == f"helper.so {CATEGORIES['compiled']}: a .so file"


# -- 5. bytecode caches ------------------------------------------------------------------------
def test_bytecode_caches_are_found_at_any_depth(tmp_path):
    write(tmp_path, {"__pycache__/a.pyc": b"", "practical4/__pycache__/b.pyc": b"",
                     "hw3/x/y/z/__pycache__/c.pyc": b"", "hw3/x/y/z/w.py": "",
                     "practical5/__pycache__/__pycache__/d.pyc": b"",
                     "practical6/no_cache.py": ""})
    (tmp_path / "practical10" / "__pycache__").mkdir(parents=True)  # even an empty one
    found = bytecode_caches(tmp_path)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in found) == [
        "__pycache__", "hw3/x/y/z/__pycache__", "practical10/__pycache__",
        "practical4/__pycache__", "practical5/__pycache__"]
    assert all(p.is_dir() for p in found)


def test_bytecode_caches_are_not_followed_through_symlinks(tmp_path):
    outside = tmp_path / "outside"
    write(outside, {"pkg/__pycache__/a.pyc": b""})
    submission = write(tmp_path / "submission", {"practical4/concepts.py": ""})
    (submission / "practical4" / "link").symlink_to(outside, target_is_directory=True)
    assert bytecode_caches(submission) == []
    assert bytecode_caches(tmp_path / "missing") == []


def test_course_material_bytecode_caches_are_listed():
    # student_template/ carries __pycache__ leftovers; they are found (to be masked at run time)
    # and, as tested above, are no finding.
    template = ROOT / "student_template"
    expected = sorted(p.relative_to(template).as_posix() for p in template.rglob("__pycache__"))
    assert sorted(p.relative_to(template).as_posix() for p in bytecode_caches(template)) == \
        expected


# -- evasions a first version of scan.py missed (each was a strict xfail until fixed) ------------
# (id, source, category expected anywhere in the file, why it matters)
MISSED = [
    ("getattr_literal_environ_then_copied",
     "import os\ne = getattr(os, 'environ')\nd = dict(e)\n", "environment",
     "getattr(os, 'environ') is not tracked as os.environ, so dict(e) copies the whole "
     "environment unreported"),
    ("environ_private_data", "import os\nd = os.environ._data\n", "environment",
     "an attribute of os.environ other than a called method (here the raw dict of every "
     "variable) is never judged: generic_visit skips os.environ under an ast.Attribute"),
    ("environ_method_bound_not_called", "import os\nk = os.environ.keys\nnames = list(k())\n",
     "environment", "os.environ.keys taken without calling it is not judged"),
    ("star_import_os_environ", "from os import *\nd = dict(environ)\n", "environment",
     "names bound by `from os import *` are unknown to the scanner"),
    ("star_import_os_system", "from os import *\nsystem('ls')\n", "processes",
     "names bound by `from os import *` are unknown to the scanner"),
    ("aliased_exec", "run = exec\nrun('x = 1')\n", "dynamic_code",
     "exec/eval/compile/__import__ are only caught when called by their own name"),
    ("aliased_setattr", "import torch\ns = setattr\ns(torch.Tensor, 'to', fake_to)\n",
     "patching", "setattr is only caught when called by its own name"),
    ("setattr_star_args", "import torch\nsetattr(*[torch.Tensor, 'to', fake_to])\n", "patching",
     "setattr with *args has fewer than 2 positional args in the AST and is skipped"),
    ("object_setattr", "import torch\nobject.__setattr__(torch.cuda, 'device_count', f)\n",
     "patching", "object.__setattr__/type.__setattr__ on a module or class is not judged"),
    ("import_after_use",
     "def patch():\n    torch.Tensor.to = fake_to\n\nimport torch\npatch()\n", "patching",
     "aliases are learnt in visiting order, so a function body above the import is read with "
     "`torch` unknown"),
    ("annotated_assignment_patch", "import torch\ntorch.Tensor.to: object = fake_to\n",
     "patching", "ast.AnnAssign has no visitor: `x.attr: T = value` is never judged"),
    ("annotated_assignment_alias", "import torch\nT: object = torch\nT.Tensor.to = fake_to\n",
     "patching", "an alias made by an annotated assignment is not tracked"),
    ("tuple_assignment_alias", "import torch\nT, n = torch, 1\nT.Tensor.to = fake_to\n",
     "patching", "an alias made by tuple unpacking is not tracked"),
    ("walrus_alias", "import torch\nprint(T := torch)\nT.Tensor.to = fake_to\n", "patching",
     "an alias made by := is not tracked"),
    ("getenvb_pdl", "import os\nk = os.getenvb(b'PDL_SEAL_KEY')\n", "grader_settings",
     "bytes constants are not checked for PDL_ names, and os.getenvb is not judged"),
    ("bytes_proc_path", "data = open(b'/proc/self/environ').read()\n", "proc_files",
     "bytes constants are not checked for /proc paths"),
    ("double_slash_proc_path", "data = open('//proc/self/environ').read()\n", "proc_files",
     "the /proc check is on the raw text, not the normalised path ('//proc', '/./proc')"),
    ("asyncio_subprocess", "import asyncio\nasyncio.create_subprocess_shell('ls')\n",
     "processes", "asyncio.create_subprocess_shell/_exec start programs and are not listed"),
    ("globals_builtins_key", "b = globals()['__builtins__']\n", "introspection",
     "__builtins__ is caught only as a name, not as the key of globals()"),
]


@pytest.mark.parametrize("source, category", [
    pytest.param(source, category, id=name) for name, source, category, _why in MISSED])
def test_evasions_are_reported(tmp_path, source, category):
    findings = scan_snippet(tmp_path, source)
    assert category in {f.category for f in findings}, (
        f"expected a '{category}' finding for\n{source}\nobserved:\n{shown(findings)}")


def test_a_nested_package_named_like_a_module_shadows_it(tmp_path):
    findings = scan_submission(write(tmp_path, {"practical4/concepts.py": "import json\n",
                                                "practical4/json/__init__.py": "x = 1\n"}))
    assert ("practical4/json", "shadowing") in {(f.file, f.category) for f in findings}, \
        shown(findings)


def test_a_symlink_named_like_a_module_shadows_it(tmp_path):
    write(tmp_path, {"practical4/helper.py": "x = 1\n"})
    (tmp_path / "practical4" / "torch.py").symlink_to("helper.py")
    findings = scan_submission(tmp_path)
    assert ("practical4/torch.py", "shadowing") in {(f.file, f.category) for f in findings}, \
        shown(findings)


def test_an_archive_of_modules_is_reported(tmp_path):
    write(tmp_path, {"practical5/practical5_dp.py":
                     "import os, sys\nsys.path.insert(0, os.path.join(os.path.dirname(__file__), "
                     "'lib.zip'))\nimport hidden\n"})
    with zipfile.ZipFile(tmp_path / "practical5" / "lib.zip", "w") as archive:
        archive.writestr("hidden.py", "import grader\n")
    findings = scan_submission(tmp_path)
    assert findings, "expected some finding (the zip's code could not be checked); observed none"


def test_environ_update_with_a_literal_dict_is_no_finding(tmp_path):
    source = ("import os\nos.environ.update({'MASTER_ADDR': 'localhost', "
              "'MASTER_PORT': '29500'})\n")
    findings = scan_snippet(tmp_path, source)
    assert findings == [], shown(findings)


def test_setting_a_variable_of_the_submissions_own_module_is_no_finding(tmp_path):
    findings = scan_submission(write(tmp_path, {
        "practical5/helpers.py": "EPOCHS = 10\n",
        "practical5/practical5_dp.py": "import helpers\nhelpers.EPOCHS = 1\n"}))
    assert findings == [], shown(findings)
