"""The static source scan (grader/integrity/scan.py): what it holds, what it notes, what it
must leave alone.

Every snippet is written into a throwaway submission folder and read by `scan_submission`;
nothing here runs student code or starts a process. TAMPERING lists code that reaches the
grader or the interpreter's machinery, including the forging routes found against earlier
versions (a module passed into a function or kept in a list, names built by concatenation,
class-level patching, ...): each must give a *tampering* finding. NOTES lists unusual but
honest code: a *note*, never tampering. HONEST is what students write every day: no finding
at all. The course's own material (reference/, student_template/, every planted bug) gives
none either. End-to-end gradings of both kinds are in test_corpus.py.
"""
from __future__ import annotations

import os
import pickle
import threading
import zipfile
from pathlib import Path

import pytest

from tests.fixtures import hw3_variants as hv
from tests.fixtures import practical_variants as pv
from tests.support.files import write

from grader.integrity import scan  # noqa: E402
from grader.integrity.scan import (  # noqa: E402
    ASSIGNMENT_FOLDERS, CATEGORIES, MAX_FILE_BYTES, NOTE, TAMPERING, Finding, bytecode_caches,
    findings_for, scan_submission, split_by_kind)

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_FILE = "practical4/concepts.py"


# -- helpers ----------------------------------------------------------------------------------
def scan_snippet(tmp_path: Path, source: str, file: str = DEFAULT_FILE) -> list[Finding]:
    return scan_submission(write(tmp_path, {file: source}))


def shown(findings: list[Finding]) -> str:
    return "\n".join(f"[{f.kind}] {f.describe()}" for f in findings) or "(no finding)"


def scan_in_thread(submission: Path, seconds: float = 5.0) -> list[Finding]:
    """scan_submission, failing (instead of hanging the suite) if it does not return in time."""
    result: dict = {}
    worker = threading.Thread(target=lambda: result.update(found=scan_submission(submission)),
                              daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"the scan did not return within {seconds} s"
    return result["found"]


# A student's model whose `use_chunks` replaces its own `self.forward` (the known limits'
# audit): `before` the class (a decorator of the file's own), `decorator` lines over
# use_chunks, `body` more of the class (a method that copies `self`), `after` it (its uses).
MODEL_IMPORTS = "import copy\nimport functools\nimport time\nimport torch\nimport torch.nn as nn\n"
OWN_FORWARD = "        self.forward = self._chunked\n"


def model_source(before: str = "", decorator: str = "", body: str = "", after: str = "") -> str:
    return (MODEL_IMPORTS + before +
            "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.l = nn.Linear(4, 4)\n    def _chunked(self, x):\n"
            "        return self.l(x)\n" + body + decorator +
            "    def use_chunks(self, n=4):\n        self.chunks = n\n" + OWN_FORWARD + after)


def decorator_source(*lines: str) -> str:
    """`def deco(fn):` with these lines as its body."""
    return "def deco(fn):\n" + "".join(f"    {line}\n" for line in lines)


def held_at(name: str, source: str, text: str, category: str = "patching") -> tuple:
    """A TAMPERING case whose finding is on the first line holding `text`."""
    line = next(number for number, code in enumerate(source.splitlines(), 1) if text in code)
    return name, source, category, line


def own_forward_held(name: str, **parts) -> tuple:
    """A TAMPERING case: the model's `self.forward = ...` held, `self` being any object."""
    return held_at(name, model_source(**parts), OWN_FORWARD.strip())


# The student's own decorator that forwards what its wrapper is given (honest), and a copy of
# the model made by its own method.
LOG_CALL = ("def log_call(fn):\n    @functools.wraps(fn)\n    def inner(*a, **k):\n"
            "        print('calling', fn.__name__)\n        return fn(*a, **k)\n    return inner\n")
CHUNKED_COPY = ("    def chunked_copy(self, n):\n        clone = copy.deepcopy(self)\n"
                "        clone.chunks = n\n        clone.forward = fake\n        return clone\n")


# -- 1. tampering: held for review ------------------------------------------------------------
# (id, source, category, line of the finding)
TAMPERING_CASES = [
    # the grader itself: its modules, records, settings, the program that started the run
    ("import_grader", "import grader\n", "grader", 1),
    ("from_grader_import", "from grader.vgpu import trace\n", "grader", 1),
    ("import_grader_submodule_as", "import grader.vgpu.trace as t\n", "grader", 1),
    ("import_dunder_main", "import __main__\nprobe = __main__.Probe\n", "grader", 1),
    ("names_trace_file", "import os\nf = open(os.path.join(d, '.pdl-trace.jsonl'), 'a')\n",
     "grader", 2),
    ("names_probe_file", "path = 'out/.pdl-probe.jsonl'\n", "grader", 1),
    ("names_weights_folder", "p = scratch + '/.pdl-probe-weights/2x6.pt'\n", "grader", 1),
    ("names_trace_file_after_a_hole", "f = open(f'{d}.pdl-trace.jsonl')\n", "grader", 1),
    ("grader_module_by_string", "import importlib\nm = importlib.import_module('gra' + 'der.vgpu')\n",
     "grader", 2),
    ("grader_object_attribute", "t = thing.get_trace()\nt.listeners.clear()\n", "grader", 1),
    ("grader_listeners", "tr.listeners.append(fake)\n", "grader", 1),
    ("grader_c_path", "fast = mode._fastpath.FastPath(node=fake)\n", "grader", 1),
    ("main_module_by_string", "m = mods.get('__main__')\n", "grader", 1),
    ("pdl_key_subscript", "import os\nk = os.environ['PDL_SEAL_KEY']\n", "grader_settings", 2),
    ("pdl_getenv", "import os\np = os.getenv('PDL_VGPU_TRACE')\n", "grader_settings", 2),
    ("pdl_set", "import os\nos.environ['PDL_VGPU_GPUS'] = '8'\n", "grader_settings", 2),
    ("pdl_in_fstring", "import os\nv = os.environ.get(f'PDL_{x}')\n", "grader_settings", 2),
    ("pdl_concatenated_list_os",
     "import os\nk = [os][0].environ.get('PD' + 'L_SEAL_KEY')\n", "grader_settings", 2),
    ("pdl_fd", "import os\nfd = int(os.environ['PDL_SEAL_FD'])\n", "grader_settings", 2),
    ("pdl_bytes", "import os\nk = os.getenvb(b'PDL_SEAL_KEY')\n", "grader_settings", 2),
    ("pdl_joined", "import os\nk = os.environ.get(''.join(['PD', 'L_', 'SEAL']))\n",
     "grader_settings", 2),
    # the interpreter: frames, closures, code, class walks, gc's object lists, sys.modules
    ("sys_getframe", "import sys\nframe = sys._getframe(1)\n", "introspection", 2),
    ("frame_f_back", "caller = frame.f_back\n", "introspection", 1),
    ("frame_f_back_computed", "caller = getattr(frame, 'f_' + 'back')\n", "introspection", 1),
    ("frame_f_locals_passed", "def peek(f):\n    return f.f_locals\n", "introspection", 2),
    ("traceback_tb_frame", "f = error.__traceback__.tb_frame\n", "introspection", 1),
    ("closure", "cells = fn.__closure__\n", "introspection", 1),
    ("closure_cell_contents", "v = cells[0].cell_contents\n", "introspection", 1),
    ("function_globals", "g = fn.__globals__\n", "introspection", 1),
    ("function_code", "c = fn.__code__\n", "introspection", 1),
    ("bound_self", "owner = torch.cuda.current_device.__wrapped__.__self__\n",
     "introspection", 1),
    ("subclasses", "subclasses = object.__subclasses__()\n", "introspection", 1),
    ("mro_walk", "base = type(x).__mro__[1]\n", "introspection", 1),
    ("bases_walk", "base = T.__bases__[0]\n", "introspection", 1),
    ("dunder_builtins_name", "b = __builtins__\n", "introspection", 1),
    ("globals_builtins_concatenated", "b = globals()['__buil' + 'tins__']\n", "introspection",
     1),
    ("sys_modules", "import sys\nm = sys.modules['torch']\n", "introspection", 2),
    ("sys_modules_through_a_list",
     "def find(holder):\n    return holder[0].modules.get('x')\nimport sys\nfind([sys])\n",
     "introspection", 2),
    ("from_sys_import_modules", "from sys import modules\n", "introspection", 1),
    ("sys_modules_by_getattr", "import sys\nm = getattr(sys, 'mod' + 'ules')\n",
     "introspection", 2),
    ("sys_computed_getattr", "import sys\nm = getattr(sys, name)\n", "introspection", 2),
    ("vars_of_sys", "import sys\nm = vars(sys)\n", "introspection", 2),
    ("sys_settrace", "import sys\nsys.settrace(tracer)\n", "introspection", 2),
    ("threading_settrace", "import threading\nthreading.settrace(tracer)\n", "introspection",
     2),
    ("sys_meta_path", "import sys\nsys.meta_path.insert(0, finder)\n", "introspection", 2),
    ("gc_get_objects", "import gc\nobjects = gc.get_objects()\n", "introspection", 2),
    ("gc_alias_referrers", "import gc as g\nr = g.get_referrers(x)\n", "introspection", 2),
    ("gc_from_import", "from gc import get_objects\n", "introspection", 1),
    ("inspect_currentframe", "import inspect\nf = inspect.currentframe()\n", "introspection",
     2),
    ("inspect_stack", "import inspect\nf = inspect.stack()[1]\n", "introspection", 2),
    ("traceback_walk_stack", "import traceback\nfs = list(traceback.walk_stack(None))\n",
     "introspection", 2),
    ("import_posix", "import posix\nposix._exit(0)\n", "introspection", 1),
    ("name_from_bytes", "n = bytes([102, 95, 98, 97, 99, 107]).decode()\n", "introspection", 1),
    ("name_from_chr", "n = chr(102) + '_back'\n", "introspection", 1),
    ("name_from_base64", "import base64\nn = base64.b64decode('X19nbG9iYWxzX18=').decode()\n",
     "introspection", 2),
    ("name_from_rot13", "import codecs\nn = codecs.decode('s_onpx', 'rot13')\n",
     "introspection", 2),
    ("name_reversed", "n = 'kcab_f'[::-1]\n", "introspection", 1),
    ("name_from_constant_variables", "a = 'f_'\nb = 'back'\nn = a + b\n", "introspection", 3),
    ("name_from_loop", "for part in (('__glo', 'bals__'),):\n    n = part[0] + part[1]\n",
     "introspection", 2),
    ("name_through_format", "n = '{}{}'.format('__clo', 'sure__')\n", "introspection", 1),
    ("name_in_fstring_of_constants", "a = 'sure'\nn = f'__clo{a}__'\n", "introspection", 2),
    ("getattr_unpacked", "g = getattr(*pair)\n", "introspection", 1),
    # signal's C module installs a handler the node cannot wrap: it gets the interrupted frame
    ("signal_c_module", "import _signal\n_signal.signal(10, peek)\n", "introspection", 1),
    # PyTorch's private machinery
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
    ("getattr_concatenated_private", "import torch\nc = getattr(torch, '_' + 'C')\n",
     "torch_internals", 2),
    ("global_hook_table", "from torch.nn.modules import module\nh = module._global_forward_hooks\n",
     "torch_internals", 2),
    ("layer_hook_table", "hooks = layer._forward_pre_hooks\n", "torch_internals", 1),
    # autograd's engine called directly (a red team, adv30)
    ("execution_engine",
     "from torch.autograd.variable import Variable\n"
     "Variable._execution_engine.run_backward((loss,), (None,), False, False, (), False)\n",
     "torch_internals", 2),
    ("engine_run_backward", "import torch\ntorch.autograd.graph._engine_run_backward((l,), (None,))\n",
     "torch_internals", 2),
    ("hook_handle_dict", "d = handle.hooks_dict_ref()\n", "torch_internals", 1),
    ("subclass_torch_function_mode",
     "from torch.overrides import TorchFunctionMode\n\nclass M(TorchFunctionMode):\n    pass\n",
     "torch_internals", 3),
    ("subclass_dispatch_mode_unimported", "class M(TorchDispatchMode):\n    pass\n",
     "torch_internals", 1),
    ("define_torch_function",
     "import torch\n\nclass T(torch.Tensor):\n    @classmethod\n"
     "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
     "        return func(*args)\n", "torch_internals", 5),
    ("as_subclass", "import torch\ny = x.as_subclass(torch.Tensor)\n", "torch_internals", 2),
    # replacing torch's, builtins' or the standard library's functions and classes
    ("assign_torch_attribute", "import torch\ntorch.Tensor.to = fake_to\n", "patching", 2),
    ("assign_through_module_alias", "import torch\nT = torch\nT.Tensor.to = fake_to\n",
     "patching", 3),
    ("assign_through_class_alias_nn",
     "import torch.nn as nn\nL = nn.Linear\nL.forward = fake_forward\n", "patching", 3),
    ("assign_imported_class", "from torch.nn import Linear\nLinear.forward = fake_forward\n",
     "patching", 2),
    ("type_of_object_to", "type(x).to = fake_to\n", "patching", 1),
    # through `self`, what the instrumentation relies on or a private name is still replaced
    ("type_of_self_to", "type(self).to = fake_to\n", "patching", 1),
    # what only looks like an object of the student's own
    ("own_maker_rebound_through_globals",
     "from types import SimpleNamespace\nimport torch\n"
     "globals()['SimpleNamespace'] = lambda: torch.cuda\nns = SimpleNamespace()\n"
     "ns.device_count = lambda: 8\n", "patching", 5),
    ("own_object_rebound_in_a_loop",
     "from types import SimpleNamespace\nimport torch\nns = SimpleNamespace()\n"
     "for ns in [torch.cuda]:\n    pass\nns.device_count = lambda: 8\n", "patching", 6),
    ("own_object_as_a_parameter",
     "def tune(ns):\n    ns.device_count = lambda: 8\n", "patching", 2),
    ("own_class_with_setattr",
     "class Stats:\n    def __setattr__(self, name, value):\n        pass\n"
     "s = Stats()\ns.memory_allocated = 1\n", "patching", 5),
    ("own_class_with_a_base",
     "import torch\nclass Stats(type(torch.cuda)):\n    pass\n"
     "s = Stats('x')\ns.memory_allocated = 1\n", "patching", 5),
    # an adversary's routes around it (/work/audit/own_objects_adversary.md)
    ("dataclass_field_named_new",
     "import torch\nfrom dataclasses import dataclass, field\n@dataclass\nclass Stats:\n"
     "    __new__: object = field(default=lambda cls, *a, **k: torch.cuda)\n"
     "s = Stats()\ns.device_count = lambda: 8\n", "patching", 7),
    ("dataclass_field_default_a_descriptor",
     "import torch\nfrom dataclasses import dataclass, field\n@dataclass\nclass Stats:\n"
     "    peak: object = field(default=property(lambda s: 1))\n"
     "s = Stats()\ns.device_count = lambda: 8\n", "patching", 7),
    ("maker_module_handed_around",
     "import torch, types\n[types][0].SimpleNamespace = lambda: torch.cuda\n"
     "from types import SimpleNamespace\nns = SimpleNamespace()\n"
     "ns.max_memory_allocated = lambda i=0: 0\n", "patching", 5),
    ("class_of_own_object_changed_in_init",
     "class D:\n    pass\nclass C:\n    def __init__(self):\n"
     "        object.__setattr__(self, '__class__', D)\nstats = C()\n"
     "stats.device_count = len\n", "patching", 7),
    ("counter_on_type_of_self_through_radd",
     "type(self).device += Replacement(property(lambda t: 'cuda:0'))\n", "patching", 1),
    ("constant_none_on_type_of_self", "type(self).grad = None\n", "patching", 1),
    ("facade_function_through_a_list", "import torch\n[torch.cuda][0].memory_stats = dict\n",
     "patching", 2),
    ("own_class_given_a_new_after_its_definition",
     "import torch\nclass Stats:\n    pass\nStats.__new__ = staticmethod(lambda cls: torch.cuda)\n"
     "s = Stats()\ns.device_count = lambda: 8\n", "patching", 6),
    ("dataclass_decorator_replaced",
     "import dataclasses, torch\ndataclasses.dataclass = lambda c: lambda: torch.cuda\n"
     "@dataclasses.dataclass\nclass Stats:\n    pass\ns = Stats()\n"
     "s.device_count = lambda: 8\n", "patching", 7),
    ("own_maker_rebound_by_a_star_import",
     "from types import SimpleNamespace\nfrom helpers import *\nns = SimpleNamespace()\n"
     "ns.device_count = lambda: 8\n", "patching", 4),
    ("own_maker_shadowed_in_an_enclosing_function",
     "import torch\nclass Stats:\n    pass\ndef outer():\n    Stats = lambda: torch.cuda\n"
     "    def inner():\n        s = Stats()\n        s.device_count = lambda: 8\n"
     "    inner()\n", "patching", 8),
    ("class_of_self_private", "self.__class__._call_impl = fake\n", "patching", 1),
    ("class_of_self_forward", "self.__class__.forward = fake\n", "patching", 1),
    ("class_of_self_given_a_property",
     "type(self).device = property(lambda t: 'cuda:1')\n", "patching", 1),
    ("type_mro_to", "type(x).__mro__[0].to = fake_to\n", "patching", 1),
    ("class_of_object", "x.__class__.device = property(lambda self: 'cuda:1')\n", "patching",
     1),
    ("object_class_swapped", "x.__class__ = FakeTensor\n", "patching", 1),
    ("module_passed_to_function",
     "def patch(m):\n    m.cuda.device_count = lambda: 8\nimport torch\npatch(torch)\n",
     "patching", 2),
    ("class_in_a_loop", "import torch\nfor c in [torch.Tensor]:\n    c.to = fake\n", "patching",
     3),
    ("decorator_patching",
     "def replace(owner):\n    def deco(fn):\n        owner.to = fn\n        return fn\n"
     "    return deco\n", "patching", 3),
    ("forward_of_a_class_from_a_list", "for c in classes:\n    c.forward = fake\n", "patching",
     2),
    ("init_subclass", "class Evil:\n    def __init_subclass__(cls, **kw):\n        pass\n",
     "patching", 2),
    ("setattr_literal", "import torch\nsetattr(torch.Tensor, 'to', fake_to)\n", "patching", 2),
    ("setattr_computed_on_torch", "import torch\nsetattr(torch.Tensor, name, fake_to)\n",
     "patching", 2),
    ("setattr_concatenated_name", "setattr(t, 't' + 'o', fake)\n", "patching", 1),
    ("delattr", "import torch\ndelattr(torch.Tensor, 'to')\n", "patching", 2),
    ("del_attribute", "import torch\ndel torch.cuda.device_count\n", "patching", 2),
    ("tuple_target", "import torch\ntorch.cuda.device_count, torch.cuda.is_available = f, g\n",
     "patching", 2),
    ("stdlib_time", "import time\ntime.perf_counter = lambda: 0.0\n", "patching", 2),
    ("perf_counter_of_anything", "clock.perf_counter = lambda: 0.0\n", "patching", 1),
    ("json_encoder", "import json\njson.encoder.JSONEncoder.encode = forged\n", "patching", 2),
    ("object_setattr", "import torch\nobject.__setattr__(torch.cuda, 'device_count', f)\n",
     "introspection", 2),
    ("trace_file_switched_off", "t._file = None\n", "patching", 1),
    ("import_after_use",
     "def patch():\n    torch.Tensor.to = fake_to\n\nimport torch\npatch()\n", "patching", 2),
    ("annotated_assignment_patch", "import torch\ntorch.Tensor.to: object = fake_to\n",
     "patching", 2),
    # code the grader cannot read
    ("exec_computed", "exec(code)\n", "dynamic_code", 1),
    ("eval_computed", "y = eval(expression)\n", "dynamic_code", 1),
    ("compile_computed", "c = compile(text, 'f', 'exec')\n", "dynamic_code", 1),
    ("exec_of_constant_is_read", "exec('import gc; gc.get_objects()')\n", "introspection", 1),
    ("exec_of_base64", "import base64\nexec(base64.b64decode('aW1wb3J0IHN5czsgc3lzLl9nZXRmcmFtZSgp'))\n",
     "introspection", 2),
    ("aliased_exec", "run = exec\nrun('x = 1')\n", "dynamic_code", 1),
    ("dunder_import_computed", "m = __import__(name)\n", "dynamic_code", 1),
    ("importlib_computed", "import importlib\nm = importlib.import_module(name)\n",
     "dynamic_code", 2),
    ("importlib_util", "import importlib.util\n", "dynamic_code", 1),
    ("import_ctypes", "import ctypes\n", "dynamic_code", 1),
    ("import_marshal", "import marshal\n", "dynamic_code", 1),
    ("import_runpy", "import runpy\n", "dynamic_code", 1),
    ("types_function_type", "import types\nf = types.FunctionType(code, {})\n", "dynamic_code",
     2),
    ("define_reduce", "class P:\n    def __reduce__(self):\n        return (print, ('x',))\n",
     "dynamic_code", 2),
    ("pickle_loads_payload", "import pickle\npickle.loads(" + repr(
        b"cbuiltins\neval\n(Vprint(1)\ntR.") + ")\n", "dynamic_code", 2),
    # /proc
    ("open_proc_environ", "data = open('/proc/self/environ').read()\n", "proc_files", 1),
    ("path_proc", "from pathlib import Path\np = Path('/proc')\n", "proc_files", 2),
    ("fstring_proc", "p = f'/proc/{pid}/environ'\n", "proc_files", 1),
    ("percent_proc", "p = '/proc/%d/maps' % pid\n", "proc_files", 1),
    ("concatenated_proc", "p = '/pr' + 'oc/self/' + 'mem'\n", "proc_files", 1),
    ("joined_proc", "import os\np = os.path.join('/', 'proc', 'self', 'maps')\n", "proc_files",
     2),
    ("double_slash_proc", "data = open('//proc/self/environ').read()\n", "proc_files", 1),
    ("dev_fd_parent_is_proc", "m = open('/dev/fd/../mem', 'rb')\n", "proc_files", 1),
    # raw memory: numpy's array interface over an address reads any byte of the process
    ("numpy_array_interface_of_a_class",
     "import numpy as np\nv = np.asarray(type('V', (), {'__array_interface__': spec})())\n",
     "introspection", 2),
    ("array_interface_defined", "class V:\n    __array_interface__ = {'data': (address, True)}\n",
     "introspection", 2),
    ("array_interface_property",
     "class V:\n    @property\n    def __array_interface__(self):\n        return spec\n",
     "introspection", 3),
    ("numpy_as_strided", "from numpy.lib.stride_tricks import as_strided\n", "introspection", 1),
    ("numpy_as_strided_through_alias",
     "import numpy as np\nv = np.lib.stride_tricks.as_strided(a, (1 << 30,), (1,))\n",
     "introspection", 2),
    ("ctypes_through_numpy", "import numpy as np\nc = np.ctypeslib.ctypes\n", "dynamic_code", 2),
    ("ctypes_through_torch", "import torch\ns = torch.cuda.ctypes.string_at\n", "dynamic_code",
     2),
    # a grader setting's name finished at run time
    ("pdl_prefix_concatenated_later", "import os\nv = os.environ.get('PDL_' + name)\n",
     "grader_settings", 2),
    ("bytes_proc", "data = open(b'/proc/self/environ').read()\n", "proc_files", 1),
    # -- a third audit's narrowed rules (/tmp/adv15): what each still holds --------------------
    # A parameter is trusted as the file's own object only where every call in the script
    # passes one: one call with torch's class, a default, the function handed to something
    # else, rebound, decorated, or called with unpacked arguments keeps the name rule.
    ("parameter_given_a_torch_class_by_one_call",
     "import torch\nfrom types import SimpleNamespace\ndef tweak(m):\n"
     "    m.forward = lambda self, x: x\ntweak(SimpleNamespace())\ntweak(torch.nn.Linear)\n",
     "patching", 4),
    ("parameter_with_a_torch_default",
     "import torch\ndef tweak(x, m=torch.cuda):\n    m.device_count = lambda: 8\ntweak(1)\n",
     "patching", 3),
    ("parameter_of_a_function_handed_to_a_thread",
     "import threading, torch\nfrom types import SimpleNamespace\ndef tweak(m):\n"
     "    m.device_count = lambda: 8\ntweak(SimpleNamespace())\n"
     "threading.Thread(target=tweak, args=(torch.cuda,)).start()\n", "patching", 4),
    ("parameter_of_a_function_called_through_an_alias",
     "import torch\nfrom types import SimpleNamespace\ndef tweak(m):\n"
     "    m.device_count = lambda: 8\ntweak(SimpleNamespace())\ng = tweak\ng(torch.cuda)\n",
     "patching", 4),
    ("parameter_rebound_in_its_function",
     "import torch\nfrom types import SimpleNamespace\ndef tweak(m):\n    m = torch.cuda\n"
     "    m.device_count = lambda: 8\ntweak(SimpleNamespace())\n", "patching", 5),
    ("parameter_of_a_decorated_function",
     "import torch\nfrom types import SimpleNamespace\ndef deco(f):\n    f(torch.cuda)\n"
     "    return f\n@deco\ndef tweak(m):\n    m.device_count = lambda: 8\n"
     "tweak(SimpleNamespace())\n",
     "patching", 8),
    ("parameter_given_by_unpacked_keywords",
     "import torch\nfrom types import SimpleNamespace\ndef tweak(m):\n"
     "    m.device_count = lambda: 8\ntweak(SimpleNamespace())\ntweak(**{'m': torch.cuda})\n",
     "patching", 4),
    ("parameter_of_a_method", "import torch\nclass H:\n    def tweak(self, m):\n"
     "        m.device_count = lambda: 8\nH().tweak(torch.cuda)\n", "patching", 4),
    # `x.name += value` adds a number only where the value is one: anything else chooses the
    # result (`__radd__`); a flag (`is_cuda`) holds a number already
    ("augmented_assignment_whose_value_chooses_the_result",
     "import torch\nclass R:\n    def __radd__(self, other):\n        return lambda: 8\n"
     "def f(x):\n    x.device_count += R()\nf(torch.cuda)\n", "patching", 6),
    ("augmented_assignment_of_a_variable_given_an_object_too",
     "import time, torch\ndef f(x):\n    t = time.perf_counter()\n    t = R()\n"
     "    x.device_count += t\nf(torch.cuda)\n", "patching", 5),
    ("augmented_assignment_through_a_float_of_its_own",
     "import torch\ndef float(v):\n    return R()\ndef f(x):\n    x.device_count += float(1)\n"
     "f(torch.cuda)\n", "patching", 5),
    ("augmented_assignment_of_a_flag", "def f(x):\n    x.is_cuda += 1\nf(t)\n", "patching", 2),
    # argparse: a namespace of one's own passed to parse_args is what it returns; what makes
    # objects (a parser's parse_args, a class's __new__, nn.Module._apply) may not be replaced
    ("argparse_given_a_namespace",
     "import argparse, torch\np = argparse.ArgumentParser()\n"
     "args = p.parse_args(namespace=torch.cuda)\nargs.device_count = lambda: 8\n", "patching", 4),
    ("argparse_given_a_namespace_positionally",
     "import argparse, torch\np = argparse.ArgumentParser()\nargs = p.parse_args([], torch.cuda)\n"
     "args.device_count = lambda: 8\n", "patching", 4),
    ("parse_args_replaced_on_a_parser_handed_around",
     "import argparse, torch\np = argparse.ArgumentParser()\ndef f(x):\n"
     "    x.parse_args = lambda *a: torch.cuda\nf(p)\n", "patching", 4),
    ("private_parse_replaced_on_argparse_class",
     "import argparse, torch\ndef f(c):\n"
     "    c._parse_known_args = lambda self, a, n: (torch.cuda, [])\n"
     "f(argparse.ArgumentParser)\n", "patching", 3),
    ("new_replaced_on_a_class_handed_around",
     "import torch\nclass Stats:\n    pass\ndef f(c):\n"
     "    c.__new__ = staticmethod(lambda cls: torch.cuda)\nf(Stats)\ns = Stats()\n"
     "s.device_count = lambda: 8\n", "patching", 5),
    ("module_apply_replaced_on_a_class_handed_around",
     "import torch.nn as nn\ndef f(c):\n    c._apply = lambda self, fn: nn.Linear\nf(nn.Module)\n",
     "patching", 3),
    # an instance of the student's own nn.Module class is theirs; not one of torch's layers, nor
    # of a class that decides what it makes
    ("forward_of_a_torch_layer_instance",
     "import torch.nn as nn\nm = nn.Linear(2, 2)\nm.forward = timed(m.forward)\n", "patching", 3),
    ("forward_of_a_module_class_with_a_new",
     "import torch.nn as nn\nclass Net(nn.Module):\n    def __new__(cls):\n"
     "        return nn.Linear\nm = Net()\nm.forward = timed\n", "patching", 6),
    ("forward_of_a_module_class_whose_to_returns_another",
     "import torch.nn as nn\nclass Net(nn.Module):\n    def to(self, *a):\n"
     "        return nn.Linear\nm = Net().to('cuda')\nm.forward = timed\n", "patching", 6),
    ("forward_of_a_module_moved_by_cuda",
     "import torch.nn as nn\nclass Net(nn.Module):\n    pass\nm = Net().cuda()\n"
     "m.forward = timed\n", "patching", 5),
    # a name bound by a function is not the builtin; a read where it is the builtin still is
    ("eval_declared_global", "def main():\n    global eval\n    run(eval)\n", "dynamic_code", 3),
    ("eval_after_a_comprehension_of_that_name",
     "def f(xs):\n    ys = [eval for eval in xs]\n    run(eval)\n", "dynamic_code", 3),
    ("eval_as_a_default", "def main(flag=eval):\n    return flag\n", "dynamic_code", 1),
    ("eval_after_a_parameter_of_that_name_given_a_default",
     "import torch\ndef f(eval=torch.nn):\n    pass\neval(data)\n", "dynamic_code", 4),
    ("eval_in_a_class_body", "class C:\n    x = eval\n    eval = 1\n", "dynamic_code", 2),
    ("builtin_exec_handed_to_a_function",
     "import builtins\ndef run(fn, code):\n    return fn(code)\nrun(builtins.exec, data)\n",
     "dynamic_code", 4),
    # `self` is the student's own object only in a method of the student's own class called on
    # an object: not in a plain function's parameter named so, nor in a method called with
    # another first argument (read from its class, handed around, or called through its
    # class's name in another method)
    ("self_parameter_of_a_plain_function_given_a_torch_class",
     "import torch\ndef patch(self):\n    self.forward = lambda *a: a\npatch(torch.nn.Linear)\n",
     "patching", 3),
    ("method_called_on_its_class_with_a_torch_class",
     "import torch\nclass H:\n    def patch(self):\n        self.forward = fake\n"
     "H.patch(torch.nn.Linear)\n", "patching", 4),
    ("method_called_through_type_of_an_instance",
     "import torch\nclass H:\n    def patch(self, fn=None):\n        self.forward = fn\n"
     "h = H()\ntype(h).patch(torch.nn.Linear, fake)\n", "patching", 4),
    ("method_handed_to_map",
     "import torch\nclass H:\n    def patch(self):\n        self.forward = fake\n"
     "list(map(H.patch, [torch.nn.Linear]))\n", "patching", 4),
    ("method_of_a_class_handed_to_a_function",
     "import torch\nclass H:\n    def patch(self, fn=None):\n        self.forward = fn\n"
     "def call(k):\n    k.patch(torch.nn.Linear)\ncall(H)\n", "patching", 4),
    ("method_looked_up_by_name_on_its_class",
     "import torch\nclass H:\n    def patch(self):\n        self.forward = fake\n"
     "getattr(H, 'pat' + 'ch')(torch.nn.Linear)\n", "patching", 4),
    ("method_read_from_the_class_namespace",
     "import torch\nclass H:\n    def patch(self):\n        self.forward = fake\n"
     "vars(H)['patch'](torch.nn.Linear)\n", "patching", 4),
    ("staticmethod_with_a_parameter_named_self",
     "import torch\nclass H:\n    @staticmethod\n    def patch(self):\n"
     "        self.forward = fake\nH().patch(torch.nn.Linear)\n", "patching", 5),
    ("method_whose_decorator_calls_it",
     "import torch\ndef run(f):\n    f(torch.nn.Linear)\n    return f\nclass H:\n    @run\n"
     "    def patch(self):\n        self.forward = fake\n", "patching", 8),
    ("self_bound_again_in_a_method",
     "import torch\nclass H:\n    def patch(self):\n        self = torch.nn.Linear\n"
     "        self.forward = fake\n", "patching", 5),
    ("self_at_module_level", "import torch\nself = torch.nn.Linear\nself.forward = fake\n",
     "patching", 3),
    ("self_of_a_lambda", "import torch\npatch = lambda self: setattr(self, 'forward', fake)\n"
     "patch(torch.nn.Linear)\n", "patching", 2),
    ("method_handing_its_self_to_a_patching_method",
     "import torch\nclass A:\n    def patch(self):\n        self.forward = fake\nclass B:\n"
     "    def go(self):\n        A.patch(self)\nB.go(torch.nn.Linear)\n", "patching", 4),
    ("classmethod_calling_a_method_with_another_object",
     "import torch\nclass H:\n    def patch(self):\n        self.forward = fake\n"
     "    @classmethod\n    def go(cls):\n        cls.patch(torch.nn.Linear)\n", "patching", 4),
    ("object_setattr_on_self_of_a_plain_function",
     "import torch\ndef patch(self):\n    object.__setattr__(self, 'forward', fake)\n"
     "patch(torch.nn.Linear)\n", "introspection", 3),
    ("hook_table_of_self_of_a_plain_function",
     "def clear(self):\n    self._forward_hooks.clear()\n", "torch_internals", 2),
    # a call handed torch's class and a name still replaces by proxy (print included)
    ("print_handed_a_torch_class_and_a_name",
     "import torch\nprint(torch.nn.Module, 'parameters')\n", "patching", 2),
    ("setattr_through_a_helper_handed_torch_cuda",
     "import torch\ndef put(owner, name, value):\n    setattr(owner, name, value)\n"
     "put(torch.cuda, 'device_count', lambda: 8)\n", "patching", 4),
    ("setattr_helper_handed_the_owner_in_a_list",
     "import torch.nn as nn\ndef put(owner, name, value):\n    setattr(owner, name, value)\n"
     "put([nn.Module][0], 'forward', fake)\n", "patching", 4),
    ("setattr_helper_handed_the_owner_in_a_tuple",
     "import torch.nn as nn\ndef put(owner, name, value):\n    setattr(owner, name, value)\n"
     "put((nn.Linear,)[-1], 'forward', fake)\n", "patching", 4),
    ("setattr_helper_handed_the_owner_in_a_dict",
     "import torch.nn as nn\ndef put(owner, name, value):\n    setattr(owner, name, value)\n"
     "put({'m': nn.Module}['m'], 'forward', fake)\n", "patching", 4),
    ("setattr_helper_handed_the_owner_by_dict_get",
     "import torch.nn as nn\ndef put(owner, name, value):\n    setattr(owner, name, value)\n"
     "put({'m': nn.Module}.get('m'), 'forward', fake)\n", "patching", 4),
    ("setattr_helper_handed_the_owner_by_next_iter",
     "import torch.nn as nn\ndef put(owner, name, value):\n    setattr(owner, name, value)\n"
     "put(next(iter([nn.Module])), 'forward', fake)\n", "patching", 4),
    ("setattr_helper_handed_the_owner_from_a_list_variable",
     "import torch.nn as nn\ndef put(owner, name, value):\n    setattr(owner, name, value)\n"
     "holders = [None, nn.Module]\nput(holders[i], 'forward', fake)\n", "patching", 5),
    ("setattr_helper_handed_the_owner_from_a_list_appended_to",
     "import torch.nn as nn\ndef put(owner, name, value):\n    setattr(owner, name, value)\n"
     "holders = []\nholders.append(nn.Module)\nput(holders[-1], 'forward', fake)\n", "patching", 6),
    ("setattr_helper_handed_the_owner_from_a_dict_filled_in",
     "import torch.nn as nn\ndef put(owner, name, value):\n    setattr(owner, name, value)\n"
     "table = {}\ntable['m'] = nn.Module\nput(table['m'], 'forward', fake)\n", "patching", 6),
    ("setattr_helper_handed_the_owner_through_an_identity_function",
     "import torch.nn as nn\ndef put(owner, name, value):\n    setattr(owner, name, value)\n"
     "def same(x):\n    return x\nput(same(nn.Module), 'forward', fake)\n", "patching", 6),
    ("setattr_helper_handed_the_owner_through_a_conditional",
     "import torch.nn as nn\ndef put(owner, name, value):\n    setattr(owner, name, value)\n"
     "put(nn.Module if flag else None, 'forward', fake)\n", "patching", 4),
    ("setattr_helper_handed_everything_unpacked_from_a_list",
     "import torch.nn as nn\ndef put(owner, name, value):\n    setattr(owner, name, value)\n"
     "put(*[nn.Module, 'forward', fake])\n", "patching", 4),
    ("setattr_helper_handed_everything_unpacked_from_a_dict",
     "import torch.nn as nn\ndef put(owner, name, value):\n    setattr(owner, name, value)\n"
     "put(**{'owner': nn.Module, 'name': 'forward', 'value': fake})\n", "patching", 4),
    ("setattr_helper_handed_the_name_in_a_dict",
     "import torch.nn as nn\ndef put(owner, name, value):\n    setattr(owner, name, value)\n"
     "put(nn.Module, {'n': 'forward'}['n'], fake)\n", "patching", 4),
    # a function of torch's replaced through a container, by setattr or assignment
    ("setattr_on_torch_from_a_list", "import torch\nsetattr([torch][0], 'matmul', fake)\n",
     "patching", 2),
    ("assignment_on_torch_from_a_dict", "import torch\nm = {'t': torch}\nm['t'].matmul = fake\n",
     "patching", 3),
    ("assignment_on_torch_from_a_loop", "import torch\nfor t in (torch,):\n    t.matmul = fake\n",
     "patching", 3),
    ("builtins_setattr_of_a_torch_function",
     "import builtins, torch\nbuiltins.setattr(torch, 'matmul', fake)\n", "patching", 2),
    # sys.modules: sys under any name, or any object but torch.nn
    ("sys_modules_through_os", "import os\nm = os.sys.modules\n", "introspection", 2),
    ("sys_modules_through_argparse", "import argparse\nm = argparse._sys.modules\n",
     "introspection", 2),
    ("nn_rebound_to_sys",
     "import torch.nn as nn\nimport sys\ndef f():\n    return nn.modules\nnn = sys\n",
     "introspection", 4),
    # a setting's name: a file's name cut back, or one naming a setting's family, still is
    ("pdl_file_name_cut_back", "import os\nv = os.environ.get(f'PDL_{x}.json'[:-5])\n",
     "grader_settings", 2),
    ("pdl_file_name_cut_back_later", "name = ('PDL_' + x + '.json')[:-5]\n", "grader_settings", 1),
    ("pdl_file_name_replaced", "name = f'PDL_{x}.json'.replace('.json', '')\n",
     "grader_settings", 1),
    ("pdl_file_name_as_a_key", "import os\nv = os.environ[f'PDL_{x}.json']\n",
     "grader_settings", 2),
    ("pdl_family_in_a_file_name", "f = open(f'PDL_SEAL_{x}.json')\n", "grader_settings", 1),
    # ... and one whose name is cut around a part computed at run time: 'PDL' or one of its
    # letters, a computed part (a separator read from data), then a setting's family
    ("pdl_and_family_around_a_computed_separator",
     "import os\nk = os.environ.get('PDL' + sep + 'SEAL_KEY')\n", "grader_settings", 2),
    ("pdl_and_family_in_an_fstring_around_a_computed_part", "k = f'PDL{sep}SEAL_KEY'\n",
     "grader_settings", 1),
    ("pdl_and_family_joined_by_a_computed_separator", "k = sep.join(['PDL', 'SEAL_KEY'])\n",
     "grader_settings", 1),
    ("pdl_and_family_formatted_around_a_computed_part", "k = 'PDL{}SEAL_KEY'.format(sep)\n",
     "grader_settings", 1),
    ("pdl_and_family_percent_formatted", "k = 'PDL%sVGPU_TRACE' % sep\n", "grader_settings", 1),
    ("pdl_computed_after_its_first_letter", "k = 'P' + middle + 'SEAL_FD'\n",
     "grader_settings", 1),
    ("pdl_without_its_underscore_then_computed", "k = 'PDL' + rest\n", "grader_settings", 1),
    ("pdl_lowercase_made_upper", "k = ('pdl' + sep + 'seal_key').upper()\n", "grader_settings",
     1),
    ("pdl_and_family_around_a_computed_part_in_a_file_name",
     "f = open(f'PDL{sep}SEAL_{x}.json')\n", "grader_settings", 1),
    # unittest.mock (and pytest's MonkeyPatch) replace what they are given until undone, which
    # the runtime's closing check (grader/vgpu/guard.py) never sees: by a name written out,
    # built, or computed at run time
    ("mock_patch_of_a_torch_function", "from unittest import mock\n"
     "mock.patch('torch.matmul', fake).start()\n", "patching", 2),
    ("mock_patch_of_a_concatenated_torch_name", "from unittest import mock\n"
     "mock.patch('torch.' + 'matmul', fake).start()\n", "patching", 2),
    ("mock_patch_of_a_torch_name_in_an_fstring", "import unittest.mock\nop = 'matmul'\n"
     "unittest.mock.patch(f'torch.{op}', fake).start()\n", "patching", 3),
    ("mock_patch_of_a_torch_name_computed_at_run_time", "from unittest.mock import patch\n"
     "patch(f'torch.{name}', fake).start()\n", "patching", 2),
    ("mock_patch_of_a_name_in_a_variable", "from unittest import mock\n"
     "mock.patch(target, fake).start()\n", "patching", 2),
    ("mock_patch_of_a_name_given_by_keyword", "from unittest import mock\n"
     "mock.patch(target='torch.' + op, new=fake).start()\n", "patching", 2),
    ("mock_patch_as_a_decorator", "from unittest import mock\n"
     "@mock.patch('torch.cuda.device_count', return_value=8)\ndef main(m):\n    pass\n",
     "patching", 2),
    ("mock_patch_through_an_alias", "from unittest import mock\nreplace = mock.patch\n"
     "replace('torch.' + 'mm', fake).start()\n", "patching", 3),
    ("mock_patch_object_of_a_torch_function", "import torch\nfrom unittest import mock\n"
     "mock.patch.object(torch, 'mat' + 'mul', fake).start()\n", "patching", 3),
    ("mock_patch_object_by_a_computed_name", "import torch\nfrom unittest import mock\n"
     "mock.patch.object(torch.nn.functional, name, fake).start()\n", "patching", 3),
    ("mock_patch_object_of_anything_by_a_computed_name", "from unittest import mock\n"
     "mock.patch.object(owner, name, fake).start()\n", "patching", 2),
    ("mock_patch_multiple_on_torch", "import torch\nfrom unittest import mock\n"
     "mock.patch.multiple(torch, matmul=fake).start()\n", "patching", 3),
    ("mock_patch_multiple_on_a_module_named", "from unittest import mock\n"
     "mock.patch.multiple('torch.' + 'nn.functional', relu=fake).start()\n", "patching", 2),
    ("mock_patch_dict_of_the_loaded_modules", "from unittest import mock\n"
     "mock.patch.dict('sys.' + 'modules', {'grader': None}).start()\n", "patching", 2),
    ("monkeypatch_setattr_on_torch", "import torch, pytest\nmp = pytest.MonkeyPatch()\n"
     "mp.setattr(torch, 'matmul', fake)\n", "patching", 3),
    ("monkeypatch_setattr_of_a_dotted_torch_name", "import pytest\n"
     "pytest.MonkeyPatch().setattr('torch.' + 'matmul', fake)\n", "patching", 2),
    # a method's own `self` handed torch's class from the class body, or by a default
    ('method_called_bare_in_its_class_body',
     'import torch.nn as nn\nclass Net(nn.Module):\n    def patch(self, f):\n        self.forward = f\n    patch(nn.Linear, fake)\n', "patching", 4),
    ('method_aliased_in_its_class_body',
     'import torch.nn as nn\nclass Net(nn.Module):\n    def patch(self, f):\n        self.forward = f\n    alias = patch\nNet.alias(nn.Linear, fake)\n', "patching", 4),
    ('method_kept_in_a_table_of_its_class',
     "import torch.nn as nn\nclass Net(nn.Module):\n    def patch(self, f):\n        self.forward = f\n    TABLE = {'p': patch}\nNet.TABLE['p'](nn.Linear, fake)\n", "patching", 4),
    ('metaclass_method_called_in_its_body',
     'import torch\nclass Meta(type):\n    def patch(self, f):\n        self.forward = f\n    patch(torch.nn.Linear, fake)\n', "patching", 4),
    ('self_with_a_torch_default',
     'import torch.nn as nn\nclass Net(nn.Module):\n    def patch(self=nn.Linear, f=fake):\n        self.forward = f\nNet.patch()\n', "patching", 4),
    # an owner returned by a function of the file, or bound in the expression
    ("torch_module_returned_by_a_function", "import torch\ndef get():\n"
     "    return torch.nn.functional\nget().linear = fake\n", "patching", 4),
    ("torch_module_bound_by_a_walrus", "import torch\n(F := torch.nn.functional).linear = fake\n",
     "patching", 2),
    # torch's module kept in an attribute of a class or of an object, then set through it
    ("torch_module_kept_in_a_class_attribute", "import torch\nclass Holder:\n"
     "    F = torch.nn.functional\nHolder.F.linear = fake\n", "patching", 4),
    ("torch_module_kept_in_an_objects_attribute", "import torch\nclass Net:\n"
     "    def __init__(self):\n        self.F = torch.nn.functional\n"
     "    def patch(self):\n        self.F.linear = fake\n", "patching", 6),
    # torch's module or class kept in a parameter's default, then set through it
    ("torch_class_kept_in_a_parameters_default",
     "import torch\ndef g(T=torch.Tensor):\n    T.add = fake\n", "patching", 3),
    ("torch_module_kept_in_a_parameters_default",
     "import torch\ndef g(F=torch.nn.functional):\n    F.linear = fake\n", "patching", 3),
    ("torch_class_kept_in_a_methods_default", "import torch.nn as nn\nclass M:\n"
     "    def m(self, L=nn.Linear):\n        L.extra_repr = fake\n", "patching", 4),
    ("torch_kept_in_a_default_and_set_down_its_attributes",
     "import torch\ndef g(t=torch):\n    t.nn.functional.linear = fake\n", "patching", 3),
    ("torch_class_kept_in_a_default_and_set_with_setattr",
     "import torch\ndef g(T=torch.Tensor):\n    setattr(T, 'add', fake)\n", "patching", 3),
    ("torch_class_kept_in_a_keyword_only_default",
     "import torch\ndef g(*, T=torch.Tensor):\n    T.add = fake\n", "patching", 3),
    ("torch_class_kept_in_a_lambdas_default",
     "import torch\ng = lambda T=torch.Tensor: setattr(T, 'add', fake)\n", "patching", 2),
    ("torch_class_kept_in_a_tuple_default",
     "import torch\ndef g(Ts=(torch.Tensor,)):\n    Ts[0].add = fake\n", "patching", 3),
    ("torch_class_of_a_default_named_again",
     "import torch\ndef g(T=torch.Tensor):\n    X = T\n    X.add = fake\n", "patching", 4),
    ("torch_class_of_a_default_set_in_a_nested_function", "import torch\n"
     "def g(T=torch.Tensor):\n    def inner():\n        T.add = fake\n    inner()\n",
     "patching", 4),
    ("torch_module_of_a_default_patched_with_mock", "import torch\nfrom unittest import mock\n"
     "def g(F=torch.nn.functional):\n    mock.patch.object(F, 'linear', fake).start()\n",
     "patching", 4),
    # torch's module or class handed to a function of the file and set through its parameter
    # there, as it would be written out at that call (names outside the instrumentation's own
    # list, so that the parameter's value decides)
    ("torch_class_handed_to_a_parameter",
     "import torch\ndef g(T):\n    T.add = fake\ng(torch.Tensor)\n", "patching", 3),
    ("torch_module_handed_to_a_parameter_by_keyword",
     "import torch\ndef g(x, F=None):\n    F.linear = fake\ng(1, F=torch.nn.functional)\n",
     "patching", 3),
    ("torch_handed_to_a_parameter_and_set_down_its_attributes",
     "import torch\ndef g(t):\n    t.nn.functional.linear = fake\ng(torch)\n", "patching", 3),
    ("torch_class_handed_to_a_parameter_set_with_setattr",
     "import torch\ndef g(T):\n    setattr(T, 'add', fake)\ng(torch.Tensor)\n", "patching", 3),
    ("torch_class_and_a_name_handed_to_a_setattr_helper",
     "import torch\ndef put(owner, name, value):\n    setattr(owner, name, value)\n"
     "put(torch.Tensor, 'add', fake)\n", "patching", 3),
    ("torch_class_and_a_name_handed_on_to_a_setattr_helper",
     "import torch\ndef put(owner, name, value):\n    setattr(owner, name, value)\n"
     "def outer(T, n):\n    put(T, n, fake)\nouter(torch.Tensor, 'add')\n", "patching", 3),
    ("torch_class_and_a_name_read_from_data_handed_to_a_setattr_helper",
     "import torch\ndef put(owner, name, value):\n    setattr(owner, name, value)\n"
     "put(torch.Tensor, input(), fake)\n", "patching", 3),
    ("torch_class_handed_to_a_method",
     "import torch\nclass H:\n    def tweak(self, T):\n        T.add = fake\n"
     "H().tweak(torch.Tensor)\n", "patching", 4),
    ("torch_class_handed_to_a_method_through_its_class",
     "import torch\nclass H:\n    def tweak(self, T):\n        T.add = fake\n"
     "H.tweak(H(), torch.Tensor)\n", "patching", 4),
    ("torch_class_handed_on_by_a_second_function",
     "import torch\ndef inner(X):\n    X.add = fake\ndef outer(T):\n    inner(T)\n"
     "outer(torch.Tensor)\n", "patching", 3),
    ("torch_class_handed_to_a_function_called_through_an_alias",
     "import torch\ndef g(T):\n    T.add = fake\nh = g\nh(torch.Tensor)\n", "patching", 3),
    ("torch_class_handed_to_a_lambda",
     "import torch\ng = lambda T: setattr(T, 'add', fake)\ng(torch.Tensor)\n", "patching", 2),
    ("torch_class_handed_unpacked",
     "import torch\ndef g(T):\n    T.add = fake\ng(*[torch.Tensor])\n", "patching", 3),
    ("torch_class_handed_by_unpacked_keywords",
     "import torch\ndef g(T):\n    T.add = fake\ng(**{'T': torch.Tensor})\n", "patching", 3),
    ("torch_classes_handed_packed_to_a_loop",
     "import torch\ndef g(*classes):\n    for T in classes:\n        T.add = fake\n"
     "g(torch.Tensor, torch.nn.Module)\n", "patching", 4),
    ("torch_classes_handed_in_a_list_to_a_loop",
     "import torch\ndef patch_all(classes):\n    for T in classes:\n        T.add = fake\n"
     "patch_all([torch.Tensor])\n", "patching", 4),
    # ... or returned by a function that reads it from what it is handed
    ("torch_class_returned_from_an_argument",
     "import torch\ndef pick(m):\n    return m.Tensor\npick(torch).add = fake\n", "patching", 4),
    ("torch_class_returned_from_an_argument_and_named",
     "import torch\ndef pick(m):\n    return m.Tensor\nT = pick(torch)\nT.add = fake\n",
     "patching", 5),
    ("torch_class_returned_from_an_argument_set_with_setattr",
     "import torch\ndef pick(m):\n    return m.Tensor\nsetattr(pick(torch), 'add', fake)\n",
     "patching", 4),
    # an alias of torch's that a binding elsewhere (in a function, in a branch) does not undo
    ("torch_alias_named_again_in_a_function",
     "import torch\nt = torch\ndef f():\n    t = 1\n    return t\n"
     "t.nn.functional.linear = fake\n", "patching", 6),
    ("torch_module_import_named_again_in_a_function",
     "import torch.nn.functional as F\ndef f():\n    F = 2\n    return F\nF.linear = fake\n",
     "patching", 5),
    ("torch_module_import_named_again_in_a_function_set_with_setattr",
     "import torch.nn.functional as F\ndef f():\n    F = 2\n    return F\n"
     "setattr(F, 'linear', fake)\n", "patching", 5),
    ("torch_alias_named_again_in_a_branch",
     "import torch\nt = torch\nif cond:\n    t = None\nt.nn.functional.linear = fake\n",
     "patching", 5),
    ("torch_itself_named_again_in_a_function",
     "import torch\ndef f():\n    torch = None\ntorch.nn.functional.linear = fake\n",
     "patching", 4),
    # torch's modules or classes in loops that unpack, or set down their attributes
    ("torch_classes_in_a_loop_with_an_index",
     "import torch\nfor i, m in enumerate((torch, torch.Tensor)):\n    m.add = fake\n",
     "patching", 3),
    ("torch_class_and_a_name_in_a_loop_over_pairs",
     "import torch\nfor T, name in [(torch.Tensor, 'add')]:\n    setattr(T, name, fake)\n",
     "patching", 3),
    ("torch_class_zipped_with_a_name_in_a_loop",
     "import torch\nfor T, name in zip([torch.Tensor], ['add']):\n    setattr(T, name, fake)\n",
     "patching", 3),
    ("torch_class_in_a_loop_over_a_dicts_items",
     "import torch\nfor k, T in {'t': torch.Tensor}.items():\n    T.add = fake\n", "patching", 3),
    ("torch_module_in_a_loop_set_down_its_attributes",
     "import torch\nfor m in (torch.nn,):\n    m.functional.linear = fake\n", "patching", 3),
    # a method replacing its own forward under a decorator of the file's own that can hand it
    # another first argument: one that calls it with one, rebinds or drops what it forwards,
    # adds a keyword, hands out itself or the method, or is not the file's function
    own_forward_held("own_decorator_calls_the_method_with_a_torch_class", before=decorator_source(
        "def inner(*a, **k):", "    return fn(nn.Linear, *a[1:], **k)", "return inner"),
        decorator="    @deco\n", after="Net().use_chunks(4)\n"),
    own_forward_held("own_decorator_calls_the_method_when_it_decorates", before=decorator_source(
        "fn(nn.Linear)", "return fn"), decorator="    @deco\n"),
    own_forward_held("own_decorator_rebinds_the_arguments_it_forwards", before=decorator_source(
        "def inner(*a):", "    a = (nn.Linear,) + a[1:]", "    return fn(*a)", "return inner"),
        decorator="    @deco\n", after="Net().use_chunks(4)\n"),
    own_forward_held("own_decorator_drops_its_first_argument", before=decorator_source(
        "def inner(self, *a):", "    return fn(*a)", "return inner"),
        decorator="    @deco\n", after="Net().use_chunks(nn.Linear)\n"),
    own_forward_held("own_decorator_adds_self_to_the_keywords", before=decorator_source(
        "def inner(*a, **k):", "    k.update(self=nn.Linear)", "    return fn(*a, **k)",
        "return inner"), decorator="    @deco\n", after="Net.use_chunks()\n"),
    own_forward_held("own_decorator_passes_self_by_keyword", before=decorator_source(
        "def inner(*a, **k):", "    return fn(*a, self=nn.Linear, **k)", "return inner"),
        decorator="    @deco\n", after="Net.use_chunks()\n"),
    own_forward_held("own_decorator_hands_out_its_wrapper", before="HANDLERS = []\n" +
        decorator_source("def inner(*a, **k):", "    return fn(*a, **k)",
                         "HANDLERS.append(inner)", "return inner"),
        decorator="    @deco\n", after="HANDLERS[0](nn.Linear, 4)\n"),
    own_forward_held("own_decorator_hands_out_the_method", before="HANDLERS = []\n" +
        decorator_source("HANDLERS.append(fn)", "def inner(*a, **k):",
                         "    return fn(*a, **k)", "return inner"),
        decorator="    @deco\n", after="HANDLERS[0](nn.Linear, 4)\n"),
    own_forward_held("own_decorator_hands_its_keywords_to_another_function",
        before=decorator_source("def inner(*a, **k):", "    tweak(k)", "    return fn(*a, **k)",
                                "return inner"),
        decorator="    @deco\n", after="Net.use_chunks()\n"),
    own_forward_held("own_decorator_sets_the_methods_wrapped_itself", before=decorator_source(
        "def inner(*a, **k):", "    return fn(*a, **k)", "functools.update_wrapper(inner, fn)",
        "return inner"), decorator="    @deco\n", after="Net().use_chunks(4)\n"),
    own_forward_held("own_decorator_whose_wrapper_calls_itself", before=decorator_source(
        "def inner(*a, **k):", "    if not a:", "        return inner(nn.Linear)",
        "    return fn(*a, **k)", "return inner"), decorator="    @deco\n",
        after="Net.use_chunks()\n"),
    own_forward_held("own_decorator_whose_wrapper_names_self_otherwise", before=decorator_source(
        "def inner(obj, *a, **k):", "    return fn(obj, *a, **k)", "return inner"),
        decorator="    @deco\n", after="Net.use_chunks(obj=nn.Linear)\n"),
    own_forward_held("own_decorator_whose_wrapper_has_a_default", before=decorator_source(
        "def inner(self=nn.Linear, *a):", "    return fn(self, *a)", "return inner"),
        decorator="    @deco\n", after="Net.use_chunks()\n"),
    own_forward_held("own_decorator_calls_the_method_in_a_lambda", before=decorator_source(
        "def inner(*a, **k):", "    return (lambda *b: fn(*b))(nn.Linear)", "return inner"),
        decorator="    @deco\n", after="Net().use_chunks(4)\n"),
    own_forward_held("own_decorator_binds_the_method_to_a_torch_class", before=decorator_source(
        "fn.__get__(nn.Linear)()", "return fn"), decorator="    @deco\n"),
    own_forward_held("own_decorator_whose_wrapper_is_decorated_again", before=(
        "def evil(w):\n    return lambda *a: w(nn.Linear)\n" + decorator_source(
            "@evil", "def inner(*a, **k):", "    return fn(*a, **k)", "return inner")),
        decorator="    @deco\n", after="Net().use_chunks(4)\n"),
    own_forward_held("own_decorator_with_a_second_parameter", before=(
        "def deco(fn, first=nn.Linear):\n    def inner(*a, **k):\n"
        "        return fn(first, *a, **k)\n    return inner\n"),
        decorator="    @deco\n", after="Net().use_chunks(4)\n"),
    own_forward_held("own_decorator_factory_that_calls_the_method", before=(
        "def deco(level):\n    def outer(fn):\n        fn(nn.Linear)\n        return fn\n"
        "    return outer\n"), decorator="    @deco(1)\n"),
    own_forward_held("own_decorator_named_again", before=LOG_CALL +
                     "log_call = lambda fn: (fn(nn.Linear), fn)[1]\n", decorator="    @log_call\n"),
    own_forward_held("own_decorator_named_again_in_the_class_body", decorator="    @log_call\n",
                     before=LOG_CALL, body="    log_call = lambda fn: (fn(nn.Linear), fn)[1]\n"),
    own_forward_held("imported_decorator", before="from helpers import log_call\n",
                     decorator="    @log_call\n", after="Net().use_chunks(4)\n"),
    # ... and the undecorated method taken out of a decorated one (functools.wraps keeps it)
    own_forward_held("own_decorated_method_unwrapped", before=LOG_CALL, decorator="    @log_call\n",
                     after="import inspect\ninspect.unwrap(Net().use_chunks)(nn.Linear, 4)\n"),
    own_forward_held("own_decorated_method_handed_on", before=LOG_CALL,
                     decorator="    @log_call\n", after="callback = Net().use_chunks\n"
                     "getattr(callback, name)(nn.Linear, 4)\n"),
    own_forward_held("no_grad_method_unwrapped", decorator="    @torch.no_grad()\n",
                     after="import inspect\ninspect.unwrap(Net().use_chunks)(nn.Linear, 4)\n"),
    # functools.partial of a method read from its class, bound to what may be no own object
    own_forward_held("partial_of_a_method_with_a_torch_class",
                     after="functools.partial(Net.use_chunks, nn.Linear)(4)\n"),
    own_forward_held("partial_of_a_method_with_torch_tensor",
                     after="step = functools.partial(Net.use_chunks, torch.Tensor)\nstep(4)\n"),
    own_forward_held("partial_of_a_method_with_what_may_be_a_torch_class",
                     after="net = nn.Linear if flag else Net()\n"
                           "functools.partial(Net.use_chunks, net)(4)\n"),
    own_forward_held("partial_of_a_method_bound_to_nothing",
                     after="step = functools.partial(Net.use_chunks)\nstep(nn.Linear, 4)\n"),
    own_forward_held("partial_of_a_method_bound_by_a_keyword_its_call_replaces",
                     after="net = Net()\nstep = functools.partial(Net.use_chunks, self=net)\n"
                           "step(self=nn.Linear)\n"),
    own_forward_held("partial_whose_method_is_read_back",
                     after="net = Net()\nstep = functools.partial(Net.use_chunks, net)\n"
                           "step.func(nn.Linear, 4)\n"),
    own_forward_held("partial_handed_to_a_function",
                     after="net = Net()\nstep = functools.partial(Net.use_chunks, net)\n"
                           "run(step)\n"),
    own_forward_held("partial_named_again_by_a_function", after=(
        "net = Net()\nstep = functools.partial(Net.use_chunks, net)\ndef later():\n"
        "    global step\n    step = step.func\nlater()\nstep(nn.Linear)\n")),
    own_forward_held("partial_of_a_decorated_method", decorator="    @torch.no_grad()\n",
                     after="net = Net()\nfunctools.partial(Net.use_chunks, net)(4)\n"),
    own_forward_held("partial_of_an_object_named_again",
                     after="net = Net()\nnet = nn.Linear\n"
                           "functools.partial(Net.use_chunks, net)(4)\n"),
    own_forward_held("partial_of_a_parameter", after=(
        "def go(net):\n    functools.partial(Net.use_chunks, net)(4)\ngo(nn.Linear)\n")),
    own_forward_held("partial_of_unpacked_arguments",
                     after="functools.partial(Net.use_chunks, *[nn.Linear])(4)\n"),
    own_forward_held("partial_of_an_object_of_a_class_that_makes_torch_classes",
                     body="    def __new__(cls, *a):\n        return nn.Linear\n",
                     after="net = Net()\nfunctools.partial(Net.use_chunks, net)(4)\n"),
    own_forward_held("method_called_on_its_class_with_what_may_be_a_torch_class",
                     after="net = Net() if flag else nn.Linear\nNet.use_chunks(net, 4)\n"),
    # a copy that may be torch's: not of the method's own `self`, or where a class of the
    # submission (or the copy module's tables) decides what copying makes
    held_at("deepcopy_given_a_memo", model_source(body=(
        "    def chunked_copy(self, n):\n"
        "        clone = copy.deepcopy(self, {id(self): nn.Linear})\n"
        "        clone.forward = fake\n        return clone\n")), "clone.forward"),
    held_at("deepcopy_of_a_parameter_other_than_self", model_source(body=(
        "    def chunked_copy(self, other):\n        clone = copy.deepcopy(other)\n"
        "        clone.forward = fake\n        return clone\n"),
        after="Net().chunked_copy(nn.Linear)\n"), "clone.forward"),
    held_at("deepcopy_of_self_in_a_method_called_with_a_torch_class", model_source(
        body=CHUNKED_COPY, after="Net.chunked_copy(nn.Linear, 4)\n"), "clone.forward"),
    held_at("deepcopy_of_self_of_a_plain_function", MODEL_IMPORTS + (
        "def patch(self):\n    clone = copy.deepcopy(self)\n    clone.forward = fake\n"
        "patch(nn.Linear)\n"), "clone.forward"),
    held_at("deepcopy_named_again", model_source(body=(
        "    def chunked_copy(self, n):\n        clone = copy.deepcopy(self)\n        if n:\n"
        "            clone = nn.Linear\n        clone.forward = fake\n        return clone\n")),
        "clone.forward"),
    held_at("deepcopy_named_again_by_a_nested_function", model_source(body=(
        "    def chunked_copy(self, n):\n        clone = copy.deepcopy(self)\n"
        "        def swap():\n            nonlocal clone\n            clone = nn.Linear\n"
        "        swap()\n        clone.forward = fake\n        return clone\n")), "clone.forward"),
    held_at("deepcopy_named_again_by_a_walrus", model_source(body=(
        "    def chunked_copy(self, n):\n        clone = copy.deepcopy(self)\n"
        "        [clone := nn.Linear for _ in range(1)]\n        clone.forward = fake\n"
        "        return clone\n")), "clone.forward"),
    held_at("deepcopy_of_a_class_defining_deepcopy", model_source(body=(
        "    def __deepcopy__(self, memo):\n        return nn.Linear\n" + CHUNKED_COPY)),
        "clone.forward"),
    held_at("copy_of_a_class_defining_copy", model_source(body=(
        "    def __copy__(self):\n        return nn.Linear\n    def chunked_copy(self, n):\n"
        "        clone = copy.copy(self)\n        clone.forward = fake\n        return clone\n")),
        "clone.forward"),
    held_at("deepcopy_of_a_class_looking_up_what_it_lacks", model_source(body=(
        "    def __getattr__(self, name):\n        return lambda *a: nn.Linear\n" +
        CHUNKED_COPY)), "clone.forward"),
    held_at("deepcopy_of_an_object_given_deepcopy", model_source(body=(
        "    def arm(self):\n        self.__deepcopy__ = lambda memo: nn.Linear\n" +
        CHUNKED_COPY)), "clone.forward"),
    held_at("deepcopy_of_a_module_given_deepcopy_as_a_submodule", model_source(body=(
        "    def arm(self):\n        self.add_module('__deep' + 'copy__', Ret())\n" +
        CHUNKED_COPY)), "clone.forward"),
    held_at("deepcopy_of_a_module_given_a_submodule_named_from_data", model_source(body=(
        "    def arm(self, name):\n        self.add_module(name, Ret())\n" + CHUNKED_COPY)),
        "clone.forward"),
    held_at("deepcopy_of_a_class_registered_with_copyreg", model_source(
        before="import copyreg\n", body=CHUNKED_COPY,
        after="copyreg.pickle(Net, lambda n: (getattr, (nn, 'Linear')))\n"), "clone.forward"),
    held_at("deepcopy_of_a_class_in_the_copy_modules_table", model_source(
        body=CHUNKED_COPY, after="copy._deepcopy_dispatch[Net] = lambda x, memo: nn.Linear\n"),
        "clone.forward"),
    held_at("deepcopy_by_a_copy_of_the_files_own", model_source(
        before="copy = FakeCopy()\n", body=CHUNKED_COPY), "clone.forward"),
    # a class made at run time whose namespace may name a copy hook the scan cannot read
    held_at("deepcopy_of_a_class_made_with_a_name_read_from_data", model_source(
        body=CHUNKED_COPY, after="Made = type('Made', (Net,), {name: hook})\n"),
        "clone.forward"),
    held_at("deepcopy_of_a_class_made_with_a_namespace_handed_whole", model_source(
        body=CHUNKED_COPY, after="Made = type('Made', (Net,), namespace)\n"), "clone.forward"),
    held_at("deepcopy_of_a_class_made_by_types_new_class", model_source(
        before="import types\n", body=CHUNKED_COPY,
        after="Made = types.new_class('Made', (Net,), {}, fill)\n"), "clone.forward"),
    # torch's hook tables: `_global_` and a computed rest
    ("global_hook_table_by_a_computed_name",
     "import torch\nh = getattr(torch.nn.modules.module, '_global_' + kind)\n",
     "torch_internals", 2),
    # a spare layer's output added as a value of zero that passes a gradient (adv46 F1; the
    # ways of writing it: test_cancelling_terms.py)
    ("spare_stage_added_as_zero", "side = spare(x)\nx = x + (side - side.detach())\n",
     "cancelling_term", 2),
]


@pytest.mark.parametrize("source, category, line",
                         [pytest.param(*case[1:], id=case[0]) for case in TAMPERING_CASES])
def test_code_that_could_deceive_the_grader_is_held(tmp_path, source, category, line):
    findings = scan_snippet(tmp_path, source)
    match = [f for f in findings if (f.line, f.category) == (line, category)]
    assert match, (f"expected a '{category}' finding on line {line} of\n{source}\n"
                   f"observed:\n{shown(findings)}")
    finding = match[0]
    assert finding.kind == TAMPERING, f"{category} must hold the points: {finding.describe()}"
    assert finding.code == source.splitlines()[line - 1].strip(), "the code shown is the line"
    text = finding.describe()
    assert text.startswith(f"{DEFAULT_FILE}:{line} {CATEGORIES[category][1]}: "), text


# -- 2. notes: unusual but honest, for the instructor -----------------------------------------
NOTE_CASES = [
    # the node calls the submission's handlers without the frame (checkpoint on SIGTERM)
    ("signal_handler", "import signal\nsignal.signal(signal.SIGUSR1, peek)\n", "exit_hooks", 2),
    ("signal_timer", "import signal as s\ns.setitimer(s.ITIMER_REAL, 0.01)\n", "exit_hooks", 2),
    # DDP code (torchvision's references, DeiT, MAE) prints on rank 0 only this way
    ("builtins_print", "import builtins\nbuiltins.print = quiet\n", "output", 2),
    ("builtins_print_partial", "import builtins, functools\n"
     "builtins.print = functools.partial(builtins.print, flush=True)\n", "output", 2),
    ("environ_printed", "import os\nprint(dict(os.environ))\n", "environment", 2),
    ("environ_iterated", "import os\nfor key in os.environ:\n    print(key)\n", "environment", 2),
    ("environ_computed_key", "import os\nv = os.environ[name]\n", "environment", 2),
    ("getenv_computed", "import os\nv = os.getenv(name)\n", "environment", 2),
    ("environ_items", "import os\npairs = list(os.environ.items())\n", "environment", 2),
    ("getattr_computed_on_torch", "import torch\ndtype = getattr(torch, args.dtype)\n",
     "dynamic_attribute", 2),
    ("getattr_computed_on_nn", "import torch.nn as nn\nact = getattr(nn, args.activation)()\n",
     "dynamic_attribute", 2),
    ("stdout_tee", "import sys\nsys.stdout = Tee('log.txt', sys.stdout)\n", "output", 2),
    ("redirect_stdout", "from contextlib import redirect_stdout\n", "output", 1),
    ("pickle_dump", "import pickle\npickle.dump(step_times, f)\n", "serialization", 1),
    ("torch_serialization_pickle", "import torch\np = torch.serialization.pickle\n",
     "serialization", 2),
    ("subprocess_nvidia_smi", "import subprocess\nsubprocess.run(['nvidia-smi'])\n",
     "processes", 1),
    ("os_system", "import os\nos.system('nvidia-smi')\n", "processes", 2),
    ("os_popen", "import os\nout = os.popen('nvidia-smi').read()\n", "processes", 2),
    ("execv_through_a_list", "import os\n[os][0].execv('/bin/sh', ['sh'])\n", "processes", 2),
    ("multiprocessing", "import multiprocessing as mp\n", "processes", 1),
    ("atexit", "import atexit\natexit.register(save)\n", "exit_hooks", 1),
    ("signal_imported", "import signal\nprint(signal.SIGINT)\n", "exit_hooks", 1),
    ("hashlib", "import hashlib\nh = hashlib.md5(data).hexdigest()\n", "digests", 1),
    ("torch_hub_hashlib", "import torch\nh = torch.hub.hashlib.sha256(b'x')\n", "digests", 2),
    ("numpy_alias_hack", "import matplotlib\nmatplotlib.rcdefaults = None\n", "library_settings",
     2),
    ("dynamo_config", "import torch._dynamo\ntorch._dynamo.config.suppress_errors = True\n",
     "library_settings", 1),
    # torch's private parts that public recipes use (its dispatch machinery is held, above)
    ("torch_memory_snapshot",
     "import torch\ntorch.cuda.memory._record_memory_history(max_entries=100000)\n",
     "torch_private", 2),
    ("torch_memory_snapshot_dump", "import torch\ntorch.cuda.memory._dump_snapshot('m.pickle')\n",
     "torch_private", 2),
    ("dtensor_before_it_was_public", "from torch.distributed._tensor import DeviceMesh, Shard\n",
     "torch_private", 1),
    ("fsdp2_before_it_was_public", "from torch.distributed._composable.fsdp import fully_shard\n",
     "torch_private", 1),
    ("pytree_map", "from torch.utils._pytree import tree_map\n", "torch_private", 1),
    # unittest.mock on the environment and on print: what assigning them is
    ("mock_patch_dict_of_the_environment", "import os\nfrom unittest import mock\n"
     "with mock.patch.dict(os.environ, {'CUDA_VISIBLE_DEVICES': '0'}):\n    pass\n",
     "environment", 3),
    ("mock_patch_of_print", "from unittest import mock\n"
     "with mock.patch('builtins.print'):\n    run()\n", "output", 2),
]


@pytest.mark.parametrize("source, category, line",
                         [pytest.param(*case[1:], id=case[0]) for case in NOTE_CASES])
def test_unusual_but_honest_code_is_a_note_and_never_held(tmp_path, source, category, line):
    findings = scan_snippet(tmp_path, source)
    match = [f for f in findings if (f.line, f.category) == (line, category)]
    assert match, (f"expected a '{category}' note on line {line} of\n{source}\n"
                   f"observed:\n{shown(findings)}")
    assert match[0].kind == NOTE
    held, _notes = split_by_kind(findings)
    assert held == [], f"honest code held for review:\n{shown(held)}"


# -- 3. honest: no finding at all ---------------------------------------------------------------
HONEST = {
    "environ_literal_key": "import os\nrank = int(os.environ['LOCAL_RANK'])\n",
    # metadata of one's own, and a graph printed while learning autograd
    "metadata_of_ones_own": "run_metadata = {'lr': 0.1}\nargs.metadata = run_metadata\n"
                            "print(loss.grad_fn, loss.grad_fn.next_functions)\n",
    # anomaly mode's note on a node (torch.autograd.detect_anomaly): the grader keeps nothing
    # in a node's metadata any more (grader/vgpu/node_marks.py)
    "autograd_node_metadata": "print(loss.grad_fn.metadata.get('traceback_'))\n"
                              "m = loss.grad_fn.next_functions[0][0].metadata\n",
    "environ_get_default": "import os\nworld = int(os.environ.get('WORLD_SIZE', 1))\n",
    "environ_contains": "import os\nif 'RANK' in os.environ:\n    pass\n",
    "environ_set": "import os\nos.environ['MASTER_ADDR'] = 'localhost'\n"
                   "os.environ['MASTER_PORT'] = str(29500)\n",
    "environ_setdefault": "import os\nos.environ.setdefault('X', '1')\n",
    "environ_update_kwargs": "import os\nos.environ.update(MASTER_ADDR='localhost')\n",
    "environ_update_literal_dict": "import os\nos.environ.update({'MASTER_ADDR': 'localhost'})\n",
    "environ_in_fstring": "import os\nprint(f\"rank {os.environ['RANK']}\")\n",
    "environ_loop_over_literal_names":
        "import os\nfor var in ('RANK', 'LOCAL_RANK', 'WORLD_SIZE'):\n"
        "    print(var, os.environ.get(var))\n",
    "from_os_import_environ_literal": "from os import environ\nr = environ['RANK']\n",
    "getenv_literal": "import os\nrank = os.getenv('RANK')\n",
    "backends_settings": "import torch\ntorch.backends.cudnn.benchmark = True\n"
                         "torch.backends.cuda.matmul.allow_tf32 = True\n",
    "argparse_cuda_flag": "import torch\nargs.cuda = not args.no_cuda and torch.cuda.is_available()\n"
                          "args.device = torch.device('cuda' if args.cuda else 'cpu')\n",
    "setattr_getattr_on_self": (
        "import torch.nn as nn\n\nclass M(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        for i in range(3):\n"
        "            setattr(self, f'layer{i}', nn.Linear(4, 4))\n\n"
        "    def forward(self, x):\n        for i in range(3):\n"
        "            x = getattr(self, f'layer{i}')(x)\n        return x\n"),
    "getattr_literal_on_nn": "import torch.nn as nn\nact = getattr(nn, 'ReLU')()\n",
    "hasattr_on_module": "import torch\nok = hasattr(torch, 'compile')\n",
    "getattr_computed_on_object": "layer = getattr(model, name)\n",
    "model_modules_called": "for m in model.modules():\n    print(type(m).__name__)\n",
    "class_name": "print(model.__class__.__name__, type(model).__name__)\n",
    "gc_collect": "import gc\nimport torch\ngc.collect()\ntorch.cuda.empty_cache()\n",
    "mp_spawn": "import torch\ntorch.multiprocessing.spawn(run, args=(2,), nprocs=2)\n",
    "init_process_group": "import torch.distributed as dist\ndist.init_process_group('nccl')\n"
                          "dist.all_reduce(t)\ndist.destroy_process_group()\n",
    "perf_counter_read": "import time\nstart = time.perf_counter()\n",
    "timer_class": "import time\nclass Timer:\n    def __enter__(self):\n"
                   "        self.start = time.perf_counter()\n        return self\n"
                   "    def __exit__(self, *exc):\n"
                   "        self.elapsed = time.perf_counter() - self.start\n",
    "own_object_attributes": "stats.time = 3.0\nresult.device = 'cuda:0'\ndataset.labels = y\n",
    "docstrings_name_grader_things": (
        '"""Sets PDL_VGPU_TRACE? No: the grader writes trace.jsonl and reads /proc."""\n'
        "def f():\n    '''Mentions PDL_SEAL_KEY, probe.jsonl and /proc/self/environ.'''\n"
        "    return 1\n"),
    "comments_name_grader_things": "# import grader; os.environ['PDL_SEAL_KEY']; exec(x)\nx = 1\n",
    # A log of the student's own under a common name (a batch audit: held as the grader's file,
    # whose name it was).
    "own_trace_log": "import json\nwith open('trace.jsonl', 'a') as f:\n    f.write(json.dumps({'step': 1}))\n",
    "module_state_of_objects": (
        "import torch\nimport torch.nn as nn\nm = nn.Linear(2, 2)\n"
        "m.weight = nn.Parameter(m.weight * 2)\nx = torch.randn(2)\nx.data = x.data * 2\n"
        "x.requires_grad = True\np.grad = None\n"),
    "vars_of_args": "import json\ncfg = vars(args)\nprint(json.dumps(args.__dict__))\n",
    "sys_basics": "import sys\nimport os\nsys.path.insert(0, os.path.dirname(__file__))\n"
                  "print(sys.argv, sys.version)\nsys.stdout.flush()\nsys.exit(0)\n",
    "main_guard": "if __name__ == '__main__':\n    main()\n",
    "relative_import": "from .helpers import run\nfrom . import helpers\n",
    "checkpointing": "import torch\ntorch.save(model.state_dict(), 'ckpt.pt')\n"
                     "state = torch.load('ckpt.pt')\n",
    "platform_and_host": "import platform, socket, os\nprint(platform.system(), "
                         "socket.gethostname(), os.getpid(), os.cpu_count())\n",
    "traceback_print": "import traceback\ntry:\n    run()\nexcept Exception:\n"
                       "    traceback.print_exc()\n",
    "warnings_filter": "import warnings\nwarnings.filterwarnings('ignore')\n",
    "deepcopy_model": "import copy\nreplica = copy.deepcopy(model)\n",
    "results_folder": "import os, json\nos.makedirs('results', exist_ok=True)\n"
                      "json.dump(times, open(os.path.join('results', 'times.json'), 'w'))\n",
    "archive_made_at_run_time": "import shutil\nshutil.make_archive('results', 'zip', 'out')\n",
    "re_and_torch_compile": "import re, torch\npattern = re.compile(r'\\d+')\n"
                            "model = torch.compile(model)\n",
    "inspect_free_eval_of_model": "model.eval()\nmodel.train(False)\n",
    "set_printoptions": "import torch\ntorch.set_printoptions(precision=3)\n",
    "sys_excepthook_untouched_print": "print(sys_info)\n",
    "optimizer_from_literal": "import torch\nopt = getattr(torch.optim, 'SGD')(params, lr=0.1)\n",
    "format_strings": "msg = f'step {step}: {loss:.3f} ms'\nprint('%d GPUs' % n)\n",
    "process_group_literal_strings": "backend = 'nccl' if cuda else 'gloo'\n",
    "course_acronym_in_names": "OUT = 'PDL_HW3_results.json'\nprint('=== PDL_HW3 ===')\n"
                               "LABEL = f'PDL_HW3 depth {depth}'\n",
    "object_setattr_in_frozen_dataclass": (
        "import dataclasses\n@dataclasses.dataclass(frozen=True)\nclass Config:\n"
        "    depth: int = 6\n    def __post_init__(self):\n"
        "        object.__setattr__(self, 'depth', max(1, self.depth))\n"),
    "module_setattr_and_getattribute_on_self": (
        "import torch.nn as nn\nclass M(nn.Module):\n    def __setattr__(self, name, value):\n"
        "        nn.Module.__setattr__(self, name, value)\n"
        "class Cfg:\n    def __getattr__(self, name):\n"
        "        return object.__getattribute__(self, '_values')[name]\n"),
    "super_setattr_in_module": (
        "import torch.nn as nn\nclass M(nn.Module):\n    def __setattr__(self, name, value):\n"
        "        super().__setattr__(name, value)\n"),
    # A second audit's (/work/audit/honest_idioms_round2.md): each was held.
    "counter_on_own_class_through_self": (
        "import torch.nn as nn\nclass M(nn.Module):\n    instances = 0\n    def __init__(self):\n"
        "        super().__init__()\n        type(self).instances += 1\n"
        "        self.__class__.forward_calls = 0\n"),
    "yoda_main_guard": "def main():\n    pass\nif '__main__' == __name__:\n    main()\n",
    # Measurements kept in objects the file made itself (own_objects.py): fields named like
    # torch's functions replace nothing there.
    "fields_of_own_plain_objects": (
        "import torch\nfrom types import SimpleNamespace\nfrom dataclasses import dataclass, field\n"
        "@dataclass\nclass GpuStats:\n    memory_allocated: float = 0.0\n"
        "    samples: list = field(default_factory=list)\n"
        "class Progress:\n    def __init__(self):\n        self.listeners = []\n"
        "phase = SimpleNamespace(forward=0.0, backward=0.0)\n"
        "def main():\n    stats = GpuStats()\n"
        "    stats.memory_allocated = torch.cuda.memory_allocated(0)\n"
        "    stats.max_memory_allocated = torch.cuda.max_memory_allocated(0)\n"
        "    phase.forward += 1.0\n    info = SimpleNamespace()\n"
        "    info.device_count = torch.cuda.device_count()\n"
        "    progress = Progress()\n    progress.listeners.append(print)\n"),
    "fields_of_a_dataclass_read_from_its_module": (
        "import dataclasses, torch\n@dataclasses.dataclass\nclass RunInfo:\n    depth: int = 6\n"
        "    notes: list = dataclasses.field(default_factory=list)\n"
        "info = RunInfo(depth=6)\ninfo.device_count = torch.cuda.device_count()\n"
        "info.parameters = 12\n"),
    "own_files_named_like_the_graders": (
        "import json, torch\nDEPTH = 6\nwith open('hw3_trace.jsonl', 'a') as f:\n"
        "    f.write(json.dumps({'step': 1}) + '\\n')\n"
        "torch.save({}, f'hw3-weights-depth{DEPTH}.pt')\n"),
    # A third audit's (/tmp/adv15), each held. Phase timings in a dataclass of one's own handed
    # to a function (every call passes it), and added to on any object (a number added
    # replaces no function).
    "phase_times_passed_to_a_function": (
        "import time, torch\nfrom dataclasses import dataclass\n@dataclass\nclass PhaseTimes:\n"
        "    forward: float = 0.0\n    backward: float = 0.0\n"
        "def train_step(model, x, times, start, end):\n    t0 = time.perf_counter()\n"
        "    t1 = time.perf_counter()\n    times.forward += t1 - t0\n"
        "    times.backward += time.perf_counter() - t1\n"
        "    times.backward = start.elapsed_time(end)\n"
        "    times.device_count = torch.cuda.device_count()\n"
        "def train_epoch(model, batches, times):\n    for x in batches:\n"
        "        train_step(model, x, times, None, None)\ndef main():\n    times = PhaseTimes()\n"
        "    train_epoch(None, [], times)\n"
        "    train_step(None, None, times=times, start=None, end=None)\n"
        "if __name__ == '__main__':\n    main()\n"),
    "phase_times_added_to_on_an_attribute": (
        "import time, torch\nclass Trainer:\n    def __init__(self, times):\n"
        "        self.times = times\n    def step(self):\n"
        "        start = torch.cuda.Event(enable_timing=True)\n"
        "        end = torch.cuda.Event(enable_timing=True)\n        t0 = time.perf_counter()\n"
        "        dt = (time.perf_counter() - t0) * 1000.0\n        self.times.forward += dt\n"
        "        self.times.backward += start.elapsed_time(end)\n"
        "        self.times.synchronize += float(len([1]))\n"),
    "argparse_namespace_of_ones_own": (
        "import argparse, torch\nfrom argparse import ArgumentParser\ndef main():\n"
        "    parser = argparse.ArgumentParser(description='Practical 5')\n"
        "    parser.add_argument('--device-count', type=int, default=None)\n"
        "    args = parser.parse_args()\n    if args.device_count is None:\n"
        "        args.device_count = torch.cuda.device_count()\n    report(args)\n"
        "def report(args):\n    args.synchronize = True\n"
        "p = ArgumentParser()\nknown, rest = p.parse_known_args()\nknown.device_count = 2\n"
        "first = p.parse_known_args()[0]\nfirst.forward = None\nmain()\n"),
    "flags_named_like_builtins": (
        "def main(eval=True, compile=False):\n    if eval:\n        model.eval()\n"
        "    run(compile)\n    return [exec for exec in range(2)]\n"
        "def build(model, compile=False):\n    if compile:\n        return model\n"),
    "phase_names_printed_to_stderr": (
        "import os, sys\nprint('step', 'forward', 'backward', sep='\\t', file=sys.stderr)\n"
        "print(os.path.join(os.curdir, 'parameters'))\n"),
    "isinstance_of_a_class_of_torch_nn_modules": (
        "import torch\nimport torch.nn as nn\n"
        "n = sum(isinstance(m, nn.modules.linear.Linear) for m in model.modules())\n"
        "print(torch.nn.modules.activation.ReLU)\n"),
    "timings_file_named_with_the_gpu_count": (
        "import json, torch\nn_gpus = torch.cuda.device_count()\n"
        "with open(f'PDL_{n_gpus}gpu_timings.json', 'w') as f:\n    json.dump({}, f)\n"
        "table = 'PDL_' + str(n_gpus) + '_steps.csv'\n"),
    # The course's acronym and a computed part, but no setting's family written beside it: a
    # file's name or a label (a setting's name computed wholly from data is the runtime's:
    # the key is never in the environment, grader/records/seal.py).
    # unittest.mock on the script's own functions and objects, mocks made, nothing patched
    "mock_of_its_own_code": (
        "from unittest import mock\nimport concepts\nfake = mock.MagicMock(return_value=1)\n"
        "with mock.patch('concepts.load_data', return_value=[]):\n    pass\n"
        "with mock.patch.object(concepts, 'load_data', fake):\n    pass\n"
        "step = 'train'\nwith mock.patch(f'concepts.{step}_step'):\n    pass\n"
        "config = {'lr': 0.1}\nwith mock.patch.dict(config, {'lr': 0.2}):\n    pass\n"),
    # Containers of torch's classes and of phase names, and helpers that set attributes, all
    # in one script, but never a torch object and a name of the instrumentation's handed to one
    # call (dtypes and values computed by torch's functions are data, a layer made is the
    # script's own: their fields are judged where they are set)
    "containers_of_torch_objects_and_phase_names": (
        "import torch\nimport torch.nn as nn\n"
        "def put(owner, name, value):\n    setattr(owner, name, value)\n"
        "def same(x):\n    return x\n"
        "DTYPES = {'fp16': torch.float16, 'fp32': torch.float32}\n"
        "ACTIVATIONS = [nn.ReLU, nn.GELU]\nphases = ['forward', 'backward']\n"
        "times = {'forward': [], 'backward': []}\nstats = {}\n"
        "def log(*parts):\n    print(*parts)\n"
        "log(DTYPES['fp16'], 'forward')\nlog(phases[0], times['forward'], ACTIVATIONS[0]())\n"
        "layers = [nn.Linear(4, 4)]\nlog(same(layers[0]), 'forward')\n"
        "log('forward', [torch.cuda.memory_allocated(i) for i in range(2)])\n"
        "put(stats, 'steps', 3)\nlog(*[ACTIVATIONS[1], 'relu'])\n"
        "for act in ACTIVATIONS:\n    log(act.__name__)\n"),
    # Methods of the student's own classes that replace their own object's forward, called
    # on their objects (also by a function handed one, with arguments), through super() or the
    # base class with `self`, from a nested function, under torch's and Python's decorators
    "own_methods_replace_their_own_forward": (
        "import functools\nimport torch\nimport torch.nn as nn\n"
        "def timed(fn):\n    return fn\n"
        "class Net(nn.Module):\n    def __init__(self, depth=4):\n        super().__init__()\n"
        "        self.layers = nn.ModuleList(nn.Linear(4, 4) for _ in range(depth))\n"
        "        self.forward = self.plain\n"
        "    def plain(self, x):\n        for layer in self.layers:\n            x = layer(x)\n"
        "        return x\n"
        "    def enable_timing(self):\n        self.forward = timed(self.forward)\n"
        "    def use_pipeline(self, chunks=4):\n        self.chunks = chunks\n"
        "        self.forward = self.plain\n"
        "    @torch.no_grad()\n    def reset(self):\n        self.forward = self.plain\n"
        "        def restore():\n            self.forward = self.plain\n"
        "        self.restore = restore\n"
        "    @functools.cached_property\n    def size(self):\n        return len(self.layers)\n"
        "class Deeper(Net):\n    def __init__(self):\n        Net.__init__(self, depth=8)\n"
        "        self.forward = timed(self.plain)\n"
        "    def use_pipeline(self, chunks=2):\n        super().use_pipeline(chunks)\n"
        "        Net.use_pipeline(self, chunks)\n"
        "def configure(model):\n    model.enable_timing()\n    model.use_pipeline(8)\n"
        "    model.use_pipeline(chunks=2)\n"
        "model = Net()\nmodel.use_pipeline(8)\nconfigure(model)\nconfigure(Deeper())\n"
        "print(type(model).__name__, isinstance(model, Net), Net.__name__)\n"),
    "course_acronym_with_computed_parts": (
        "import torch\nn = torch.cuda.device_count()\nopen(f'PDL{n}gpu.json', 'w')\n"
        "table = 'PDL-' + str(n) + '.csv'\nfolder = f'{n}_SUBMISSION'\n"
        "tag = '_'.join([str(n), 'SEAL'])\ntitle = 'PDL {} GPUs'.format(n)\n"
        "label = 'PDL_HW3 %d GPUs' % n\n"),
    "main_guard_for_spawned_workers": (
        "def main():\n    pass\nif __name__ in ('__main__', '__mp_main__'):\n    main()\n"),
    "own_model_forward_wrapped": (
        "import torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.layer = nn.Linear(4, 4)\n"
        "    def forward(self, x):\n        return self.layer(x)\nclass Deeper(Net):\n    pass\n"
        "def timed(fn):\n    return fn\ndef main():\n    model = Net().to('cuda:0')\n"
        "    model.forward = timed(model.forward)\n    deeper = Deeper()\n"
        "    deeper.forward = timed(deeper.forward)\nmain()\n"),
    'type_of_the_model_printed_and_a_mode_set': (
        "import torch, torch.nn as nn\nimport logging\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.l = nn.Linear(8, 8)\n    def plain(self, x):\n        return self.l(x)\n    def chunked(self, x):\n        return torch.cat([self.l(c) for c in x.chunk(2)])\n    def set_mode(self, mode='plain'):\n        self.forward = self.chunked if mode == 'chunked' else self.plain\nnet = Net()\nprint(f'Using {type(net)} {net.__class__}')\nlogging.getLogger(__name__).info('model %s', type(net))\nfor mode in ('plain', 'chunked'):\n    net.set_mode(mode)\n"),
    'streams_in_a_forward_marked_for_the_profiler': (
        "import torch, torch.nn as nn\nclass PipeNet(nn.Module):\n    def __init__(self, n=2):\n        super().__init__()\n        self.stages = nn.ModuleList(nn.Linear(8, 8) for _ in range(n))\n        self._streams = [torch.cuda.Stream() for _ in range(n)]\n    @torch.cuda.nvtx.range('pipe_forward')\n    def forward(self, x):\n        for stream, stage in zip(self._streams, self.stages):\n            with torch.cuda.stream(stream):\n                x = stage(x)\n        return x\n"),
    'timings_in_a_simple_namespace_printed_with_vars': (
        'import json, time, types\nstats = types.SimpleNamespace()\nstats.forward = time.perf_counter()\nclass Stats:\n    pass\nmore = Stats()\nmore.forward = time.perf_counter() - stats.forward\nprint(vars(more))\njson.dumps(vars(stats))\n'),
    "a_layers_weight_and_setting_replaced_on_the_students_own_objects": (
        "import torch\nimport torch.nn as nn\nclass Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 4)\n"
        "        self.act = nn.ReLU()\n        self.fc.weight = nn.Parameter(torch.eye(4))\n"
        "        self.act.inplace = True\n"),
    "global_step_counter": (
        "state = {'_global_step': 0}\ntrainer._global_step += 1\nlogger._global_rank = 0\n"),
    # the model's method that replaces its own forward under decorators of the file's own
    # that forward what they are given (after a print, a timing), or return it
    "own_decorators_that_forward_their_arguments": model_source(
        before=LOG_CALL + "def timed(fn):\n    def wrapper(self, *args, **kwargs):\n"
        "        start = time.perf_counter()\n        result = fn(self, *args, **kwargs)\n"
        "        self.seconds = time.perf_counter() - start\n        return result\n"
        "    return wrapper\ndef mark(fn):\n    return fn\n",
        decorator="    @mark\n    @timed\n    @log_call\n    @torch.no_grad()\n",
        after="net = Net()\nnet.use_chunks(4)\nNet.use_chunks(net, 2)\n"),
    # ... read from its class and bound to an object of the student's own, by functools.partial
    # or in the call
    "partial_of_a_method_bound_to_an_own_object": model_source(
        before="from functools import partial\n",
        after="net = Net()\nstep = functools.partial(Net.use_chunks, net)\nstep(4)\n"
              "partial(Net.use_chunks, net)(2)\nNet.use_chunks(net, 8)\n"
              "def main():\n    model = Net()\n    partial(Net.use_chunks, model, n=2)()\n"
              "main()\n"),
    # a method that replaces the forward of a copy of its own object
    "forward_replaced_on_a_copy_of_its_own_object": model_source(
        before="from copy import copy as shallow\n", body=(
            "    def chunked_copy(self, n):\n        clone = copy.deepcopy(self)\n"
            "        clone.chunks = n\n        clone.forward = clone._chunked\n"
            "        return clone\n"
            "    def plain_copy(self):\n        other = shallow(self)\n"
            "        other.forward = other.l\n        return other\n"),
        after="net = Net().chunked_copy(4)\nplain = net.plain_copy()\n"),
    # ... where the file also makes classes at run time from a namespace written out
    "forward_replaced_on_a_copy_beside_classes_made_at_run_time": model_source(
        body=CHUNKED_COPY.replace("fake", "clone._chunked"),
        after="Wide = type('Wide', (Net,), {'width': 8})\n"
              "Narrow = type('Narrow', (Net,), dict(width=2))\nnet = Net().chunked_copy(4)\n"),
    # torch handed to functions that only call it or set its harmless flags (as written out
    # at the call: `torch.backends.cudnn.benchmark = True`), also through a setattr helper
    "torch_handed_to_functions_that_call_it_and_set_its_flags": (
        "import argparse\nimport torch\n"
        "def run(T):\n    T.manual_seed(0)\n    if T.cuda.is_available():\n"
        "        T.cuda.synchronize()\n"
        "def setup(T):\n    T.backends.cudnn.benchmark = True\n"
        "    T.backends.cuda.matmul.allow_tf32 = True\n"
        "def set_option(owner, name, value):\n    setattr(owner, name, value)\n"
        "run(torch)\nsetup(torch)\nargs = argparse.Namespace(lr=0.1)\n"
        "set_option(torch.backends.cudnn, 'deterministic', True)\n"
        "set_option(args, 'lr', 0.01)\n"),
    # functions that set attributes on their parameters, handed the student's own objects
    # (a setattr helper too: its calls with torch's objects are read one by one, and never
    # lend their names to a call with the student's own, here in a file whose setattr turns
    # the trust in objects of its own off)
    "setattr_helper_recording_phase_times_on_its_own_object": (
        "import torch\nfrom types import SimpleNamespace\n"
        "def record(stats, phase, ms):\n    setattr(stats, phase, ms)\n"
        "stats = SimpleNamespace()\nfor phase in ('forward', 'backward'):\n"
        "    record(stats, phase, 1.0)\nrecord(torch.backends.cudnn, 'benchmark', True)\n"),
    "functions_setting_attributes_on_their_own_objects": (
        "import torch.nn as nn\n"
        "def init(m):\n    if isinstance(m, nn.Linear):\n"
        "        m.weight.data.normal_(0.0, 0.02)\n"
        "        m.bias.data = m.bias.data * 0\n        m.initialized = True\n"
        "def tag(layer, gpu):\n    layer.gpu = gpu\n    layer.name = f'gpu{gpu}'\n"
        "def head(model):\n    return model[0]\n"
        "model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())\nmodel.apply(init)\n"
        "for i, layer in enumerate(model):\n    tag(layer, i)\n"
        "tag(model[0], 1)\ntag(nn.Linear(2, 2), 0)\nhead(model).frozen = True\n"),
    # loops over the student's own modules and over device names
    "loops_over_own_modules_and_device_names": (
        "import torch\nimport torch.nn as nn\n"
        "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.layers = nn.ModuleList(nn.Linear(4, 4) for _ in range(4))\n"
        "    def place(self, devices):\n"
        "        for i, (m, dev) in enumerate(zip(self.layers, devices)):\n"
        "            m.to(dev)\n            m.device_index = i\n"
        "        for m in self.layers:\n            m.placed = True\n"
        "net = Net()\nnet.place([f'cuda:{i % 2}' for i in range(4)])\n"
        "for name in ('cuda:0', 'cuda:1'):\n    x = torch.zeros(1).to(name)\n"
        "for m in net.modules():\n    m.seen = True\n"),
    # a name that is torch's in one scope (a parameter handed torch, a loop over torch's
    # classes, a default) is not torch's in another scope that names something else so
    "names_that_are_torchs_in_another_scope_only": (
        "import torch\n"
        "def seed(T):\n    T.manual_seed(0)\n"
        "def tag(T):\n    T.gpu = 1\n"
        "seed(torch)\ntag(torch.nn.Linear(2, 2))\n"
        "def count():\n    for cls in (torch.nn.Linear, torch.nn.Conv2d):\n"
        "        print(cls.__name__)\n"
        "def init(cls):\n    cls.initialized = True\n"
        "init(torch.nn.Linear(2, 2))\n"
        "def build(layer=torch.nn.Linear):\n    return layer(2, 2)\n"
        "def mark(layer):\n    layer.marked = True\n"
        "mark(build())\n"),
    # torch's classes and functions as parameters' defaults, used as honest code uses them
    "torch_classes_as_parameters_defaults": (
        "import sys\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
        "def make(layer=nn.Linear, act=nn.ReLU, n=4):\n"
        "    model = nn.Sequential(layer(n, n), act())\n    model.name = 'mlp'\n    return model\n"
        "def run(args, device=torch.device('cpu'), loss_fn=F.cross_entropy, stream=sys.stdout):\n"
        "    args.device = device\n    args.loss = loss_fn\n    stream.write('ok')\n"),
}


@pytest.mark.parametrize("source", list(HONEST.values()), ids=list(HONEST))
def test_honest_idioms_give_no_finding(tmp_path, source):
    findings = scan_snippet(tmp_path, source)
    assert findings == [], f"a finding on honest code\n{source}\n{shown(findings)}"


# -- 4. files ---------------------------------------------------------------------------------
def zip_bytes(members: dict[str, bytes]) -> bytes:
    import io
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


# (id, files, file of the finding, category)
OWN_MODULE_WITH_TORCH = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
FILE_CASES = [
    # torch reached through the student's own module, which imported it
    ("torch_through_an_own_module", {"practical4/helper.py": OWN_MODULE_WITH_TORCH,
                                     "practical4/concepts.py": "import helper\n"
                                     "helper.torch.matmul = lambda a, b: a\n"},
     "practical4/concepts.py", "patching"),
    ("torch_nn_imported_from_an_own_module", {
        "practical4/helper.py": OWN_MODULE_WITH_TORCH,
        "practical4/concepts.py": "from helper import nn\nnn.functional.linear = print\n"},
     "practical4/concepts.py", "patching"),
    ("mock_of_torch_through_an_own_module", {
        "practical4/helper.py": OWN_MODULE_WITH_TORCH,
        "practical4/concepts.py": "from unittest import mock\nimport helper\n"
                                  "mock.patch('helper.F.relu', print).start()\n"},
     "practical4/concepts.py", "patching"),
    ("grader_package_folder", {"grader/__init__.py": "", "grader/vgpu.py": "x = 1\n"},
     "grader", "shadowing"),
    ("torch_name", {"hw3/torch.py": "x = 1\n"}, "hw3/torch.py", "shadowing"),
    ("sitecustomize", {"practical6/sitecustomize.py": ""}, "practical6/sitecustomize.py",
     "shadowing"),
    ("torch_folder_without_init", {"torch/readme.txt": "hi"}, "torch", "shadowing"),
    ("legacy_pyc", {"practical4/helper.pyc": b"\x00\x01compiled"}, "practical4/helper.pyc",
     "compiled"),
    ("shared_object", {"practical4/helper.so": b"\x7fELF"}, "practical4/helper.so", "compiled"),
    ("extension_module", {"hw3/fast.cpython-311-x86_64-linux-gnu.so": b"\x7fELF"},
     "hw3/fast.cpython-311-x86_64-linux-gnu.so", "compiled"),
    ("too_large", {"practical4/big.py": "#" * (MAX_FILE_BYTES + 1)}, "practical4/big.py",
     "unreadable"),
    ("code_in_an_archive", {"practical5/lib.zip": zip_bytes({"hidden.py": b"import gc\n"
                                                            b"gc.get_objects()\n"})},
     "practical5/lib.zip/hidden.py", "introspection"),
    ("compiled_code_in_an_archive", {"hw3/lib.zip": zip_bytes({"x.pyc": b"\x00"})},
     "hw3/lib.zip/x.pyc", "compiled"),
    ("pickle_that_calls_eval", {"hw3/results.pkl": b"cbuiltins\neval\n(Vprint(1)\ntR."},
     "hw3/results.pkl", "dynamic_code"),
    # a helper module that rebinds the model's class: no object is trusted as the file's own
    ("own_class_rebound_from_a_helper_module",
     {"hw3/model_parallel.py": "import torch\nimport helper\nclass Stats:\n    pass\n"
                               "def main():\n    helper.go()\n    s = Stats()\n"
                               "    s.device_count = lambda: 8\n",
      "hw3/helper.py": "import torch\nimport model_parallel\ndef go():\n"
                       "    model_parallel.Stats = lambda: torch.cuda\n"},
     "hw3/model_parallel.py", "patching"),
    # a types.py beside the script is the SimpleNamespace the script imports
    ("own_global_rebound_through_a_module_alias",
     {"hw3/model_parallel.py": "import torch\nimport gpu_setup\nfrom types import SimpleNamespace\n"
                               "stats = SimpleNamespace()\ndef record():\n"
                               "    stats.device_count = lambda: 8\n",
      "hw3/gpu_setup.py": "import torch\nimport model_parallel\ndef setup():\n"
                          "    target = model_parallel\n    target.stats = torch.cuda\n"},
     "hw3/model_parallel.py", "patching"),
    ("own_object_from_a_shadowing_types_module",
     {"hw3/model_parallel.py": "import torch\nfrom types import SimpleNamespace\n"
                               "ns = SimpleNamespace()\nns.device_count = lambda: 8\n",
      "hw3/types.py": "import torch\n\n\ndef SimpleNamespace():\n    return torch.cuda\n"},
     "hw3/model_parallel.py", "patching"),
    ("pickle_that_calls_os_system", {"hw3/state.pt": pickle.dumps(os.system, protocol=2)
                                     .replace(b"posix", b"posix")},
     "hw3/state.pt", "dynamic_code"),
    # a script's function may be called by another file, with values of its own: its
    # parameters are no longer the script's own objects
    ("script_function_called_by_a_helper_with_torch_cuda",
     {"practical5/practical5_dp.py": "import torch\nfrom types import SimpleNamespace\n"
                                     "def tweak(m):\n    m.device_count = lambda: 8\n"
                                     "tweak(SimpleNamespace())\nimport helper\n",
      "practical5/helper.py": "import torch\nimport practical5_dp\n"
                              "practical5_dp.tweak(torch.cuda)\n"},
     "practical5/practical5_dp.py", "patching"),
    ("script_function_imported_by_a_helper",
     {"practical5/practical5_dp.py": "import torch\nfrom types import SimpleNamespace\n"
                                     "def tweak(m):\n    m.device_count = lambda: 8\n"
                                     "tweak(SimpleNamespace())\n",
      "practical5/helper.py": "import torch\nfrom practical5_dp import tweak\ntweak(torch.cuda)\n"},
     "practical5/practical5_dp.py", "patching"),
    ("script_reached_through_a_helpers_attribute",
     {"practical5/practical5_dp.py": "import torch\nfrom types import SimpleNamespace\n"
                                     "def tweak(m):\n    m.device_count = lambda: 8\n"
                                     "tweak(SimpleNamespace())\n",
      "practical5/helper.py": "import practical5_dp\n",
      "practical5/other.py": "import torch, helper\nhelper.practical5_dp.tweak(torch.cuda)\n"},
     "practical5/practical5_dp.py", "patching"),
    # a helper module's function is called from other files: never trusted
    ("helper_function_parameter",
     {"practical5/practical5_dp.py": "import torch, helper\nhelper.tweak(torch.cuda)\n",
      "practical5/helper.py": "from types import SimpleNamespace\ndef tweak(m):\n"
                              "    m.device_count = lambda: 8\ntweak(SimpleNamespace())\n"},
     "practical5/helper.py", "patching"),
    # a method of the script's class called from another file with torch's class as self
    ("method_called_with_a_torch_class_from_another_file",
     {"practical5/practical5_dp.py": "import torch.nn as nn\nclass Timed(nn.Module):\n"
                                     "    def wrap(self):\n        self.forward = self.timed\n",
      "practical5/helper.py": "import torch\nfrom practical5_dp import Timed\n"
                              "Timed.wrap(torch.nn.Linear)\n"},
     "practical5/practical5_dp.py", "patching"),
    # what makes a method's `self` its own object, undone by another file: the file's decorator
    # named again, the partial's method read back, a copy hook in a base class
    ("own_decorator_named_again_by_another_file", {
        "practical4/mine.py": MODEL_IMPORTS + LOG_CALL + "import other\nclass Net(nn.Module):\n"
                              "    @log_call\n    def patch(self):\n        self.forward = fake\n",
        "practical4/other.py": "import mine\n"
                               "mine.log_call = lambda fn: (fn(mine.nn.Linear), fn)[1]\n"},
     "practical4/mine.py", "patching"),
    ("partial_read_back_by_another_file", {
        "practical4/mine.py": MODEL_IMPORTS + "class Net(nn.Module):\n    def patch(self):\n"
                              "        self.forward = fake\nnet = Net()\n"
                              "step = functools.partial(Net.patch, net)\nstep()\n",
        "practical4/other.py": "import mine\nmine.step.func(mine.nn.Linear)\n"},
     "practical4/mine.py", "patching"),
    ("deepcopy_of_a_class_whose_base_in_another_file_defines_deepcopy", {
        "practical4/base.py": "import torch.nn as nn\nclass Base(nn.Module):\n"
                              "    def __deepcopy__(self, memo):\n        return nn.Linear\n",
        "practical4/mine.py": MODEL_IMPORTS + "from base import Base\nclass Net(Base):\n"
                              "    def patch(self):\n        clone = copy.deepcopy(self)\n"
                              "        clone.forward = fake\n        return clone\n"},
     "practical4/mine.py", "patching"),
    # argparse's Namespace replaced in another file: no parse result is trusted
    ("argparse_namespace_replaced_by_another_file",
     {"practical5/practical5_dp.py": "import argparse, torch, helper\n"
                                     "args = argparse.ArgumentParser().parse_args()\n"
                                     "p = argparse.ArgumentParser()\nargs = p.parse_args()\n"
                                     "args.device_count = lambda: 8\n",
      "practical5/helper.py": "import argparse as a, torch\n"
                              "[a][0].Namespace = lambda: torch.cuda\n"},
     "practical5/practical5_dp.py", "patching"),
]


@pytest.mark.parametrize("files, file, category",
                         [pytest.param(*case[1:], id=case[0]) for case in FILE_CASES])
def test_files_that_could_deceive_the_grader_are_held(tmp_path, files, file, category):
    findings = scan_submission(write(tmp_path, files))
    match = [f for f in findings if (f.file, f.category) == (file, category)]
    assert match, f"expected a '{category}' finding for {file}; observed:\n{shown(findings)}"
    assert match[0].kind == TAMPERING


NOTE_FILE_CASES = [
    ("venv_zipped_with_the_project", {".venv/pyvenv.cfg": b"home = /usr/bin\n",
                                      ".venv/lib/site.py": b"import gc\n"},
     ".venv", "kept_out"),
    ("plots_zip", {"hw3/plots.zip": zip_bytes({"step_times.png": b"\x89PNG...",
                                               "table.csv": b"depth,ms\n6,1.0\n"})},
     "hw3/plots.zip", "archive"),
    ("results_tar", {"practical5/results.tar.gz": b"\x1f\x8b not really"},
     "practical5/results.tar.gz", "archive"),
    ("helper_module_shadowing_stdlib", {"hw3/profile.py": "def timer():\n    pass\n"},
     "hw3/profile.py", "helper_module"),
    ("helper_module_of_its_own", {"hw3/utils.py": "def timer():\n    pass\n"},
     "hw3/utils.py", "helper_module"),
    ("stdlib_package_folder", {"practical4/json/__init__.py": ""}, "practical4/json",
     "helper_module"),
    ("syntax_error", {"practical4/broken.py": "def f(:\n"}, "practical4/broken.py", "unparsable"),
    ("nul_byte", {"practical4/nul.py": b"x = 1\x00\n"}, "practical4/nul.py", "unparsable"),
    ("own_tests_with_conftest",
     {"tests/conftest.py": "import pytest\n\n\n@pytest.fixture\ndef dim():\n    return 4\n",
      "tests/test_layout.py": "def test_dim(dim):\n    assert dim == 4\n"},
     "tests/conftest.py", "helper_module"),
]


@pytest.mark.parametrize("files, file, category",
                         [pytest.param(*case[1:], id=case[0]) for case in NOTE_FILE_CASES])
def test_unusual_files_are_notes(tmp_path, files, file, category):
    findings = scan_submission(write(tmp_path, files))
    match = [f for f in findings if (f.file, f.category) == (file, category)]
    assert match, f"expected a '{category}' note for {file}; observed:\n{shown(findings)}"
    assert split_by_kind(findings)[0] == [], shown(findings)


def test_honest_pickles_and_checkpoints_are_no_finding(tmp_path):
    import torch
    torch.save({"weight": torch.ones(2), "steps": [1.0, 2.0]}, tmp_path / "ckpt.pt")
    files = {"hw3/step_times.pkl": pickle.dumps([1.5, 2.5, {"depth": 6}]),
             "hw3/ckpt.pt": (tmp_path / "ckpt.pt").read_bytes()}
    findings = scan_submission(write(tmp_path / "submission", files))
    assert split_by_kind(findings)[0] == [], shown(findings)


def test_a_py_name_linked_to_another_file_of_the_submission_is_read_as_python(tmp_path):
    write(tmp_path, {"hw3/notes.txt": "import gc\nobjects = gc.get_objects()\n"})
    (tmp_path / "hw3" / "helper.py").symlink_to("notes.txt")
    findings = scan_submission(tmp_path)
    assert ("hw3/helper.py", "introspection") in {(f.file, f.category) for f in findings}, \
        shown(findings)


def test_a_too_large_file_is_not_parsed(tmp_path):
    findings = scan_snippet(tmp_path, "import grader\n" + "#" * MAX_FILE_BYTES)
    assert [(f.line, f.category) for f in findings] == [(0, "unreadable")], shown(findings)
    assert "MiB" in findings[0].what and findings[0].kind == TAMPERING


def test_past_the_file_limit_the_rest_is_reported_unread(tmp_path, monkeypatch):
    monkeypatch.setattr(scan, "MAX_FILES", 3)
    write(tmp_path, {f"practical4/m{n}.py": "x = 1\n" for n in range(3)})
    write(tmp_path, {"practical4/m3.py": "import grader\n", "practical4/m4.py": "import gc\n"})
    findings = [f for f in scan_submission(tmp_path) if f.category != "helper_module"]
    assert [(f.file, f.line, f.category) for f in findings] == [
        ("practical4/m3.py", 0, "unreadable")], shown(findings)
    assert "more than 3 files" in findings[0].what


def test_every_category_has_a_case():
    covered = {case[2] for case in TAMPERING_CASES + NOTE_CASES} | {
        case[3] for case in FILE_CASES + NOTE_FILE_CASES}
    assert covered == set(CATEGORIES), f"categories without a case: {set(CATEGORIES) - covered}"


def test_a_syntax_error_is_a_note_and_the_other_files_are_still_read(tmp_path):
    write(tmp_path, {"practical4/broken.py": "import grader\ndef f(:\n",
                     "practical4/ok.py": "import gc\ngc.get_objects()\n"})
    findings = [f for f in scan_submission(tmp_path) if f.category != "helper_module"]
    assert [(f.file, f.category, f.kind) for f in findings] == [
        ("practical4/broken.py", "unparsable", NOTE),
        ("practical4/ok.py", "introspection", TAMPERING)], shown(findings)


def test_findings_are_sorted_by_file_and_line_and_said_once_per_line_and_category(tmp_path):
    write(tmp_path, {
        "practical4/b.py": "import os\nimport gc, inspect\nx = eval(a) + eval(b)\n",
        "practical4/a.py": "x = 1\nexec(y)\n"})
    findings = [f for f in scan_submission(tmp_path) if f.category != "helper_module"]
    assert [(f.file, f.line, f.category) for f in findings] == [
        ("practical4/a.py", 2, "dynamic_code"),
        ("practical4/b.py", 3, "dynamic_code")], shown(findings)


def test_long_lines_are_shortened_in_the_finding(tmp_path):
    source = "import gc\ngc.get_objects('" + "x" * 200 + "')\n"
    (finding,) = scan_snippet(tmp_path, source)
    assert len(finding.code) == 100 and finding.code.endswith("..."), finding.code


def test_non_python_files_are_not_read(tmp_path):
    write(tmp_path, {"practical4/answers.yaml": "note: import grader, PDL_SEAL_KEY\n",
                     "hw3/REPORT.md": "exec('x') /proc/self/environ trace.jsonl\n",
                     "hw3/report.pdf": b"%PDF-1.4 import grader",
                     "practical4/notes.txt": "import os; os.system('ls')\n"})
    assert scan_submission(tmp_path) == []


def test_symlinks_are_not_followed_out_of_the_submission(tmp_path):
    submission = write(tmp_path / "submission", {"practical4/concepts.py": "x = 1\n"})
    outside = write(tmp_path / "outside", {"evil.py": "import grader\n"})
    folder = submission / "practical4"
    (folder / "zero.py").symlink_to("/dev/zero")
    (folder / "loop.py").symlink_to(folder / "loop.py")
    (folder / "up").symlink_to(submission, target_is_directory=True)
    (folder / "elsewhere").symlink_to(outside, target_is_directory=True)
    (folder / "evil.py").symlink_to(outside / "evil.py")
    findings = [f for f in scan_in_thread(submission) if f.category != "helper_module"]
    assert findings == [], shown(findings)


def test_a_fifo_does_not_hang_the_scan(tmp_path):
    write(tmp_path, {"practical4/concepts.py": "x = 1\n"})
    os.mkfifo(tmp_path / "practical4" / "pipe.py")
    assert scan_in_thread(tmp_path) == []


def test_bytecode_caches_beside_their_source_are_no_finding(tmp_path):
    write(tmp_path, {"practical4/concepts.py": "x = 1\n",
                     "practical4/__pycache__/concepts.cpython-311.pyc": b"\x00compiled",
                     "hw3/__pycache__/json.py": "import grader\n"})
    assert scan_submission(tmp_path) == []


# -- 5. the course's own material ---------------------------------------------------------------
@pytest.mark.parametrize("folder", ["reference", "student_template"])
def test_course_material_gives_no_finding(folder):
    findings = scan_submission(ROOT / folder)
    assert findings == [], f"{folder}/ is reported:\n{shown(findings)}"


MATRIX = ([(v.name, hv.build, v) for v in hv.VARIANTS]
          + [(v.name, pv.plant, v) for v in pv.VARIANTS])


@pytest.mark.parametrize("name, build, variant", MATRIX, ids=[m[0] for m in MATRIX])
def test_the_matrices_submissions_give_no_finding(name, build, variant, tmp_path):
    """Every way of writing a solution, and every honest mistake, of the grading matrices:
    nothing that holds the points (a helper module is a note for the instructor)."""
    holds, _ = split_by_kind(scan_submission(build(variant, tmp_path / "submission")))
    assert holds == [], f"[{name}] an honest submission is held:\n{shown(holds)}"


# -- 6. assignment, findings_for, to_dict ----------------------------------------------------
@pytest.mark.parametrize("file, assignment", [
    *[(f"{a}/x.py", a) for a in ASSIGNMENT_FOLDERS],
    ("hw3/sub/deep/x.py", "hw3"),
    ("x.py", None), ("lib/hw3/x.py", None), ("practical7/x.py", None),
    ("Practical4/x.py", None), ("hw3.py", None), ("", None)])
def test_a_findings_assignment_is_its_top_assignment_folder(file, assignment):
    assert Finding(file, 1, "grader", "w", "c").assignment == assignment


def test_findings_for_an_assignment_include_those_outside_every_assignment(tmp_path):
    write(tmp_path, {"hw3/model_parallel.py": "import grader\n",
                     "hw3/sub/helper.py": "import gc\ngc.get_objects()\n",
                     "practical4/concepts.py": "import gc\ngc.get_referrers(x)\n",
                     "practical10/sample.py": "import ctypes\n",
                     "common/util.py": "exec(x)\n",
                     "top.py": "import inspect\ninspect.stack()\n"})
    findings = [f for f in scan_submission(tmp_path) if f.kind == TAMPERING]
    assert len(findings) == 6, shown(findings)
    assert {f.file for f in findings_for(findings, "hw3")} == {
        "hw3/model_parallel.py", "hw3/sub/helper.py", "common/util.py", "top.py"}
    assert {f.file for f in findings_for(findings, "practical6")} == {"common/util.py", "top.py"}
    assert findings_for([], "hw3") == []


def test_to_dict_has_everything_a_report_shows(tmp_path):
    (finding,) = scan_snippet(tmp_path, "x = 1\nimport gc\ngc.get_objects()\n",
                              file="hw3/model_parallel.py")
    data = finding.to_dict()
    assert data == {"file": "hw3/model_parallel.py", "line": 3, "category": "introspection",
                    "what": "reads get_objects", "code": "gc.get_objects()", "kind": TAMPERING,
                    "assignment": "hw3", "text": finding.describe()}
    assert data["text"] == ("hw3/model_parallel.py:3 inspects or rewrites the running "
                            "interpreter: reads get_objects (`gc.get_objects()`)")
    assert Finding.from_dict(data) == finding


def test_split_by_kind():
    held = Finding("x.py", 1, "grader", "w", "c")
    noted = Finding("x.py", 2, "environment", "w", "c")
    assert split_by_kind([held, noted]) == ([held], [noted])


# -- 7. bytecode caches ------------------------------------------------------------------------
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


def test_bytecode_caches_are_not_followed_through_symlinks(tmp_path):
    outside = tmp_path / "outside"
    write(outside, {"pkg/__pycache__/a.pyc": b""})
    submission = write(tmp_path / "submission", {"practical4/concepts.py": ""})
    (submission / "practical4" / "link").symlink_to(outside, target_is_directory=True)
    assert bytecode_caches(submission) == []
    assert bytecode_caches(tmp_path / "missing") == []


def test_setting_a_variable_of_the_submissions_own_module_is_no_finding(tmp_path):
    findings = scan_submission(write(tmp_path, {
        "practical5/helpers.py": "import types\nimport torch\nEPOCHS = 10\n"
                                 "CONFIG = types.SimpleNamespace(lr=0.1)\n",
        "practical5/practical5_dp.py": "import helpers\nhelpers.EPOCHS = 1\n"
                                       "helpers.CONFIG.lr = 0.01\n"}))
    assert split_by_kind(findings)[0] == [], shown(findings)


def test_a_script_calling_its_helpers_keeps_its_own_objects(tmp_path):
    """A helper called with the script's values, and a test of one's own that builds the model
    with constants, leave the script's own objects (and parameters) trusted."""
    findings = scan_submission(write(tmp_path, {
        "practical5/helper.py": "def describe(n):\n    return str(n)\n",
        "practical5/practical5_dp.py":
            "import time, torch, helper\nfrom types import SimpleNamespace\n"
            "def measure(stats):\n    stats.device_count = torch.cuda.device_count()\n"
            "def main():\n    stats = SimpleNamespace()\n    measure(stats)\n"
            "    print(helper.describe(stats))\nmain()\n",
        "tests/test_layout.py": "import practical5_dp\n"
                                "def test_main():\n    practical5_dp.main()\n"}))
    assert split_by_kind(findings)[0] == [], shown(findings)


def test_the_scan_of_a_large_honest_file_is_quick(tmp_path):
    # No rule may grow faster than the file (about 1.7 s of CPU here for 40 copies of the HW3
    # reference). The scan's own CPU time, not the wall clock, which a busy machine stretches.
    import time
    source = (ROOT / "reference" / "hw3" / "model_parallel.py").read_text() * 40
    started = time.process_time()
    scan_snippet(tmp_path, source, file="hw3/model_parallel.py")
    assert time.process_time() - started < 10


def test_the_scan_of_a_file_handing_functions_around_is_quick(tmp_path):
    # Functions handed to functions (partials, threads, map, methods of one name called through
    # a parameter) are read again until nothing more is found: a few rounds, never a walk per
    # pair of calls (about 2 s of CPU here for these 300 of each).
    import time
    parts = ["import functools\nimport threading\nimport torch\n"]
    for i in range(300):
        j, k = (i + 1) % 300, (i + 7) % 300
        parts.append(f"def f{i}(fn, x):\n    fn(x)\n    return fn\n"
                     f"g{i} = functools.partial(f{i}, f{j})\n"
                     f"class C{i}:\n    def __init__(self, a):\n        self.a = a\n"
                     f"    def run(self, fn):\n        return fn(self.a)\n"
                     f"C{i}(g{i}).run(f{i})\n"
                     f"threading.Thread(target=f{i}, args=(f{k}, {i})).start()\n"
                     f"list(map(f{i}, [f{k}], [torch.nn]))\n")
    started = time.process_time()
    findings = scan_snippet(tmp_path, "".join(parts), file="hw3/model_parallel.py")
    assert time.process_time() - started < 10
    assert not [f for f in findings if f.kind == TAMPERING], shown(findings)


# -- the scan runs in the grader's process: constants must not take its memory or its stack -----
BOMBS = {
    "zlib_bomb": "import zlib\nx = zlib.decompress(" + repr(__import__("zlib").compress(b"a" * (64 << 20))) + ")\n",
    "bz2_bomb_through_codecs": "import codecs\nx = codecs.decode(" + repr(
        __import__("bz2").compress(b"a" * (64 << 20))) + ", 'bz2')\n",
    "wide_format": "x = '%999999999d' % 1\ny = '{:>999999999}'.format(1)\n",
    "replacement_growth": "x = ('a' * 60000).replace('a', 'b' * 60000)\n",
}


@pytest.mark.parametrize("source", list(BOMBS.values()), ids=list(BOMBS))
def test_constants_that_would_expand_enormously_are_not_built(tmp_path, source):
    import resource
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    scan_in_thread(write(tmp_path, {DEFAULT_FILE: source}), seconds=20)
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mib < 200, f"the scan grew by {grown_mib:.0f} MiB on {source[:60]!r}"


def test_code_nested_too_deeply_is_held_not_a_crash(tmp_path):
    source = "x = " + " + ".join(["'a'"] * 20000) + "\n"
    findings = scan_in_thread(write(tmp_path, {DEFAULT_FILE: source}), seconds=30)
    assert all(f.category in ("unreadable", "helper_module") for f in findings), shown(findings)


def tar_bytes(members: dict[str, bytes], mode: str = "w:gz") -> bytes:
    import io
    import tarfile
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_code_in_a_compressed_tar_is_read(tmp_path):
    findings = scan_submission(write(tmp_path, {"hw3/lib.tar.gz": tar_bytes(
        {"pkg/hidden.py": b"import gc\ngc.get_objects()\n", "big.bin": b"\0" * 100})}))
    assert ("hw3/lib.tar.gz/pkg/hidden.py", "introspection") in {
        (f.file, f.category) for f in findings}, shown(findings)


def test_a_tar_bomb_is_not_decompressed_to_the_end(tmp_path, monkeypatch):
    import gzip
    import io
    import tarfile
    import time
    monkeypatch.setattr(scan, "MAX_TAR_BYTES", 1 << 20)   # 1 MiB read, of a 64 MiB member
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", compresslevel=1) as packed:
        with tarfile.open(fileobj=packed, mode="w|") as archive:
            info = tarfile.TarInfo("zeros.bin")
            info.size = 64 << 20
            archive.addfile(info, _Zeros(info.size))
            archive.addfile(tarfile.TarInfo("after.py"), io.BytesIO(b""))
    write(tmp_path, {"hw3/bomb.tar.gz": buffer.getvalue()})
    started = time.monotonic()
    findings = scan_in_thread(tmp_path, seconds=60)
    assert time.monotonic() - started < 10, "the scan read through the bomb"
    assert ("hw3/bomb.tar.gz", "archive") in {(f.file, f.category) for f in findings}


class _Zeros:
    def __init__(self, size):
        self.left = size

    def read(self, n=-1):
        n = self.left if n < 0 else min(n, self.left)
        self.left -= n
        return b"\0" * n


def test_constants_folded_past_the_budget_are_held_quickly(tmp_path):
    """A few kilobytes of code can make the folder build gigabytes (a name bound to 60 strings of
    60 KB, used thousands of times): the scan runs in the grader's process, so past a budget it
    stops folding, quickly and in little memory, and holds the file (names built after the
    budget would not be read)."""
    import resource
    import time
    lines = ["a = 'x' * 64", "b = a * 64", "c = b * 15"]
    lines += [f"s = c + '{i:02d}'" for i in range(60)]
    lines += ["t = s + 'y'", "u = s + ''"] * 2000
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # The process's CPU time (the scan's thread and this one waiting), not the wall clock,
    # which a busy machine stretches.
    started = time.process_time()
    findings = scan_in_thread(write(tmp_path, {DEFAULT_FILE: "\n".join(lines) + "\n"}), seconds=60)
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    took = time.process_time() - started
    assert took < 10 and grown_mib < 200, (
        f"the scan took {took:.1f} s of CPU and grew by {grown_mib:.0f} MiB")
    assert (DEFAULT_FILE, "unreadable") in {(f.file, f.category) for f in findings}, \
        shown(findings)


# -- a file's coding line: the scan reads the text the runner runs ----------------------------
# (adv21 C1) `# coding: ascii` (or a codec Python does not know) above a byte that is not
# ASCII: Python refuses the bytes, the runner (grader/common/text.py python_source) runs them
# read as UTF-8; the scan had called the file "unparsable", a note, and read none of it.
_HELD_LINE = "import sys\ntrace = sys.modules['grader.vgpu.trace'].get_trace()\n"
CODING_TRICKS = [
    ("ascii_declared", "# -*- coding: ascii -*-\n# Auteur: René\n".encode("utf-8")),
    ("ascii_declared_second_line", "#!/usr/bin/env python3\n# coding=ascii\n# Ré\n".encode()),
    ("unknown_codec", "# -*- coding: no-such-codec -*-\n# Auteur: René\n".encode("utf-8")),
    ("bad_byte_for_utf8_declared", b"# -*- coding: utf-8 -*-\n# Auteur: Ren\xe9\n"),
]


@pytest.mark.parametrize("header", [pytest.param(c[1], id=c[0]) for c in CODING_TRICKS])
def test_a_coding_line_the_runner_forgives_does_not_hide_the_file(tmp_path, header):
    from grader.common.text import python_source
    data = header + _HELD_LINE.encode()
    assert "get_trace" in python_source(data)   # what the runner runs
    findings = scan_snippet(tmp_path, data)
    held = split_by_kind(findings)[0]
    assert {f.category for f in held} >= {"introspection", "grader"}, shown(findings)
    assert not [f for f in findings if f.category == "unparsable"], shown(findings)
    assert any(f.code.startswith("trace = sys.modules") for f in held), shown(findings)


@pytest.mark.parametrize("header", [pytest.param(c[1], id=c[0]) for c in CODING_TRICKS])
def test_such_a_file_in_a_helper_module_or_an_archive_is_read_too(tmp_path, header):
    data = header + b"def patch(T):\n    T.cpu = lambda self: self\n"
    files = {"hw3/tools.py": data, "hw3/model_parallel.py":
             "import torch\nimport tools\n\ntools.patch(torch.Tensor)\n",
             "hw3/bundle.zip": zip_bytes({"inner.py": header + _HELD_LINE.encode()})}
    held = split_by_kind(scan_submission(write(tmp_path, files)))[0]
    assert {f.file for f in held} >= {"hw3/model_parallel.py", "hw3/bundle.zip/inner.py"}, \
        shown(held)


def test_a_file_that_does_not_parse_once_decoded_is_still_only_a_note(tmp_path):
    data = "# -*- coding: ascii -*-\n# René\ndef f(:\n".encode("utf-8")
    findings = scan_snippet(tmp_path, data)
    assert [(f.category, f.kind, f.line) for f in findings] == [("unparsable", NOTE, 3)], \
        shown(findings)


def test_a_cp1252_file_with_accented_comments_is_read_as_its_coding_line_says(tmp_path):
    data = ("# -*- coding: cp1252 -*-\n# Entraînement: étape ‘un’ — déjà vu\n"
            "import torch\n\nx = torch.zeros(2)  # résultat\n"
            "print('Terminé', x)\nimport gc\ngc.get_objects()\n").encode("cp1252")
    findings = scan_snippet(tmp_path, data)
    assert [(f.line, f.category) for f in findings] == [(8, "introspection")], shown(findings)
    assert findings[0].code == "gc.get_objects()"
