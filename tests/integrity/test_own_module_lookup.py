"""The scan lets a script read a name from its own module through sys.modules, nothing more.

adv53 F6: `getattr(sys.modules[__name__], MODEL_NAME)(DIM, DEPTH)` (the model class picked by
a constant's name, a form tutorials show) withheld a whole HW3 grade (10.5 of 15 shown as 0):
"inspects or rewrites the running interpreter: reads sys.modules". The script's own module read
for a name is what `globals()[MODEL_NAME]` gives, which the scan never held. Every other use
of sys.modules stays held: a write or deletion, .pop(), another module (torch's, the
grader's, `__main__`), a computed key, the module kept in a name or handed on (written
through), iteration, and any file that binds or spells `__name__` itself.

adv57 F-D: the allowance left what was read through the module unjudged:
`sys.modules[__name__].torch.Tensor.cpu = f` and `getattr(sys.modules[__name__],
"torch").matmul = f` (as `globals()["torch"].Tensor.item = f` before it) passed the scan where
`torch.Tensor.cpu = f` is held. A name read from the script's own module is that name to every
rule, and getattr of a dunder (`__dict__`, the namespace) is no plain read, as `.__dict__` is
not. The run-time guard (grader/vgpu/guard.py) holds such a patch too (adv57's
`getattr(sys.modules[__name__], 'torch').Tensor.item = ...` on HW3's reference: 0 of 15 shown,
"the grader's instrumentation was replaced"); the scan names it before anything runs.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.files import write

from grader.integrity.scan import TAMPERING, scan_submission

SCRIPT = "hw3/model_parallel.py"
HEAD = ("import sys\nimport torch\nimport torch.nn as nn\n\nMODEL_NAME = 'LargeLinearModelMP'\n"
        "DIM, DEPTH = 16, 4\n\n\nclass LargeLinearModelMP(nn.Module):\n"
        "    def __init__(self, dim=DIM, depth=DEPTH):\n        super().__init__()\n"
        "        self.layers = nn.ModuleList([nn.Linear(dim, dim) for _ in range(depth)])\n\n\n")

HONEST = {
    "getattr_of_the_subscript": "def main():\n"
                                "    model = getattr(sys.modules[__name__], MODEL_NAME)(DIM, DEPTH)\n",
    "getattr_of_get": "def main():\n"
                      "    cls = getattr(sys.modules.get(__name__), MODEL_NAME, None)\n"
                      "    return cls(DIM, DEPTH)\n",
    "hasattr_check": "def main():\n    assert hasattr(sys.modules[__name__], MODEL_NAME)\n",
    "attribute_read": "def main():\n    return sys.modules[__name__].LargeLinearModelMP()\n",
    "globals_lookup": "def main():\n    return globals()[MODEL_NAME](DIM, DEPTH)\n",
    # torch used, not replaced, through the module's names
    "torch_called_through_it": "def main():\n"
                               "    return sys.modules[__name__].torch.zeros(3).cpu().item()\n",
    "torch_read_by_getattr": "def main():\n"
                             "    matmul = getattr(sys.modules[__name__], 'torch').matmul\n"
                             "    return matmul(torch.ones(2, 2), torch.ones(2, 2))\n",
    "torch_called_through_globals": "def main():\n"
                                    "    return globals()['torch'].ones(2).sum().item()\n",
    "layer_built_through_globals": "def main():\n    return globals().get('nn').Linear(DIM, DIM)\n",
}

HOSTILE = {
    "own_module_replaced": "sys.modules[__name__] = None\n",
    "own_module_deleted": "del sys.modules[__name__]\n",
    "own_module_popped": "sys.modules.pop(__name__)\n",
    "torch_read_out": "_t = sys.modules['torch']\n_t.Tensor.cpu = lambda self: self\n",
    "grader_read_by_a_computed_key": "_k = 'grader.vgpu.' + 'trace'\n_t = sys.modules[_k]\n",
    "iterated": "_loaded = [m for m in sys.modules if m.startswith('grader')]\n",
    "main_module": "_m = sys.modules['__main__']\n",
    "own_name_rebound": "__name__ = 'torch'\n_t = getattr(sys.modules[__name__], 'cuda')\n",
    "own_name_set_through_globals": "globals()['__name__'] = 'torch'\n"
                                    "_t = getattr(sys.modules[__name__], 'cuda')\n",
    "parameter_named___name__": "def pick(__name__):\n"
                                "    return getattr(sys.modules[__name__], 'cuda')\n",
    "attribute_written_through_it": "sys.modules[__name__].torch = None\n",
    "setattr_through_it": "setattr(sys.modules[__name__], 'torch', None)\n",
    "kept_in_a_name": "THIS = sys.modules[__name__]\nTHIS.nn = None\n",
    "vars_written_through_it": "vars(sys.modules[__name__])['nn'] = None\n",
    "namespace_read_whole": "_ns = sys.modules[__name__].__dict__\n",
    "getattr_of_its_own": "def getattr(m, name):\n    m.torch = None\n\n\n"
                          "getattr(sys.modules[__name__], 'x')\n",
    # adv57 F-D: getattr of a dunder is the namespace or the builtins, as `.__dict__` is
    "namespace_by_getattr": "getattr(sys.modules[__name__], '__dict__')['nn'] = None\n",
    "namespace_updated_by_getattr": "getattr(sys.modules[__name__], '__dict__').update(torch=None)\n",
    "builtins_by_getattr": "_b = getattr(sys.modules[__name__], '__builtins__')\n",
    "dunder_by_a_constant": "_D = '__dict__'\n_ns = getattr(sys.modules[__name__], _D)\n",
}

# adv57 F-D: torch replaced through the module's own names; each is held when spelled bare
# (`torch.Tensor.cpu = f`), and must be through the lookup as well.
PATCHES = {
    "tensor_cpu_by_attribute": "sys.modules[__name__].torch.Tensor.cpu = lambda self: self\n",
    "tensor_item_by_attribute": "sys.modules[__name__].torch.Tensor.item = lambda self: 0.0\n",
    "adam_step_by_attribute": "sys.modules[__name__].torch.optim.Adam.step = "
                              "lambda self, *a, **k: None\n",
    "tensor_cpu_by_getattr": "getattr(sys.modules[__name__], 'torch').Tensor.cpu = "
                             "lambda self: self\n",
    "tensor_item_by_getattr": "getattr(sys.modules[__name__], 'torch').Tensor.item = "
                              "lambda self: 0.0\n",
    "matmul_by_getattr": "getattr(sys.modules[__name__], 'torch').matmul = lambda a, b: a\n",
    "tensor_by_nested_getattr": "getattr(getattr(sys.modules[__name__], 'torch'), 'Tensor')"
                                ".item = lambda self: 0.0\n",
    "tensor_cpu_by_get": "sys.modules.get(__name__).torch.Tensor.cpu = lambda self: self\n",
    "setattr_after_hasattr": "hasattr(sys.modules[__name__], 'x') or "
                             "setattr(getattr(sys.modules[__name__], 'torch'), 'cuda', None)\n",
    "setattr_on_getattr": "setattr(getattr(sys.modules[__name__], 'torch').Tensor, 'cpu', "
                          "lambda self: self)\n",
    "tensor_cpu_by_globals": "globals()['torch'].Tensor.cpu = lambda self: self\n",
    "tensor_item_by_globals": "globals()['torch'].Tensor.item = lambda self: 0.0\n",
    "setattr_on_globals": "setattr(globals()['torch'].Tensor, 'cpu', lambda self: self)\n",
    "matmul_by_globals_get": "globals().get('torch').matmul = lambda a, b: a\n",
    "tensor_item_by_a_named_key": "_T = 'torch'\nglobals()[_T].Tensor.item = lambda self: 0.0\n",
}


def findings(tmp_path: Path, body: str) -> list:
    return scan_submission(write(tmp_path, {SCRIPT: HEAD + body}))


@pytest.mark.parametrize("name", sorted(HONEST))
def test_a_name_read_from_the_scripts_own_module_is_no_finding(tmp_path, name):
    found = findings(tmp_path, HONEST[name])
    assert not found, (
        f"expected no finding for {name} (a name read from the script's own module); observed "
        f"{[f.describe() for f in found]}; where to look: module_taken_out and "
        "_read_only_operands in grader/integrity/source.py")


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_every_other_use_of_sys_modules_stays_held(tmp_path, name):
    found = [f for f in findings(tmp_path, HOSTILE[name]) if f.kind == TAMPERING]
    assert found, (
        f"expected {name} held (tampering: it writes sys.modules, reads another module, or "
        f"cannot be told to read its own); observed no tampering finding; where to look: "
        "module_taken_out in grader/integrity/source.py")


@pytest.mark.parametrize("name", sorted(PATCHES))
def test_torch_replaced_through_the_scripts_own_module_is_held(tmp_path, name):
    found = [f for f in findings(tmp_path, PATCHES[name]) if f.category == "patching"]
    assert found, (
        f"expected {name} held as replacing a function or class of torch (the name read from "
        "the script's own module is the bare name); observed no patching finding; where to "
        "look: own_module_name and resolve in grader/integrity/source.py")
