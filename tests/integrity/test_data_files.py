"""Data files a submission ships (grader/integrity/pickles.py, read by scan.py): what np.save,
pickle, torch.save and torch.jit.save write for honest data is never held; a pickle that runs
code when loaded is, however it is hidden (inside a .npy, a .npz, a TorchScript-looking zip, a
checkpoint, behind memoized strings, a dotted name, a getattr, a second pickle in the file).

The honest files are made here with the installed numpy and torch, the hostile ones from real
pickles of an object whose __reduce__ calls os.system, or assembled opcode by opcode where
pickle itself never writes them. Nothing is ever unpickled.
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import datetime
import io
import os
import pathlib
import pickle
import struct
import sys
import types
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from grader.integrity.findings import ASSIGNMENT_FOLDERS, TAMPERING
from grader.integrity.pickles import (Context, dangerous_globals, npy_pickle, pickle_globals,
                                      torchscript_as_python)
from grader.integrity.scan import findings_for, scan_submission
from tests.support.files import write
from tests.support.joblib_files import joblib_dumped


# -- helpers ----------------------------------------------------------------------------------
def shown(findings) -> str:
    return "\n".join(f"[{f.kind}] {f.describe()}" for f in findings) or "(no finding)"


def held(submission: Path) -> list:
    return [f for f in scan_submission(submission) if f.kind == TAMPERING]


def saved(save, *args, **kwargs) -> bytes:
    """What np.savez, np.savez_compressed (buffer first) or torch.save (buffer second) write."""
    buffer = io.BytesIO()
    if save is torch.save:
        save(*args, buffer, **kwargs)
    else:
        save(buffer, *args, **kwargs)
    return buffer.getvalue()


@contextlib.contextmanager
def defined_in(cls, module: str):
    """`cls` pickled as `module.cls` (as when the script defining it ran as __main__, or it
    is in a helper module)."""
    owner = sys.modules.get(module)
    created = owner is None
    if created:
        owner = sys.modules[module] = types.ModuleType(module)
    old_module, old_value = cls.__module__, getattr(owner, cls.__name__, None)
    cls.__module__ = module
    setattr(owner, cls.__name__, cls)
    try:
        yield
    finally:
        cls.__module__ = old_module
        if created:
            del sys.modules[module]
        elif old_value is None:
            delattr(owner, cls.__name__)
        else:
            setattr(owner, cls.__name__, old_value)


def npy(array, version=None, allow_pickle=False) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array, version=version, allow_pickle=allow_pickle)
    return buffer.getvalue()


class RunsCode:
    """Pickles as os.system('true'): what a pickle that runs code when loaded looks like."""

    def __reduce__(self):
        return os.system, ("true",)


# Opcodes, to assemble what pickle never writes for data (pickle.py's names).
def U(text: str) -> bytes:                      # SHORT_BINUNICODE
    data = text.encode()
    return b"\x8c" + bytes([len(data)]) + data


PROTO4, MEMOIZE, STACK_GLOBAL, TUPLE1, TUPLE2, REDUCE, STOP = (b"\x80\x04", b"\x94", b"\x93",
                                                              b"\x85", b"\x86", b"R", b".")
POP, BUILD, EMPTY_DICT, SETITEM, EMPTY_TUPLE = b"0", b"b", b"}", b"s", b")"


def BINGET(index: int) -> bytes:
    return b"h" + bytes([index])


def call(module: str, name: str, argument: str = "true") -> bytes:
    return PROTO4 + U(module) + U(name) + STACK_GLOBAL + U(argument) + TUPLE1 + REDUCE + STOP


MEMO_REUSE = (PROTO4 + U("os") + MEMOIZE + U("system") + MEMOIZE + POP + POP
              # a harmless global read last, so "the last two strings seen" are numpy's
              + U("numpy") + MEMOIZE + U("ndarray") + MEMOIZE + STACK_GLOBAL + POP
              + BINGET(0) + BINGET(1) + STACK_GLOBAL + U("true") + TUPLE1 + REDUCE + STOP)


# -- honest files, made with the installed numpy and torch -----------------------------------
NPY_ARRAYS = {
    "floats": np.array([12.1, 12.4, 12.0]), "ints": np.arange(6).reshape(2, 3),
    "bools": np.array([True, False]), "complex": np.array([1j]),
    "fortran": np.asfortranarray(np.ones((3, 2), dtype=np.float32)),
    "records": np.zeros(2, dtype=[("Offset", "<f8"), ("Order", "<i4", (2,))]),
    "text": np.array(["forward", "backward"]), "dates": np.array(["2025-01-01"], dtype="M8[D]"),
    "durations": np.array([3], dtype="m8[ms]"), "half": np.ones(4, dtype=np.float16),
}


@pytest.mark.parametrize("version", [None, (1, 0), (2, 0), (3, 0)])
@pytest.mark.parametrize("name", list(NPY_ARRAYS))
def test_np_save_files_are_no_pickle(tmp_path, name, version):
    data = npy(NPY_ARRAYS[name], version=version)
    assert npy_pickle(data) is None
    assert pickle_globals(data) is None
    findings = scan_submission(write(tmp_path, {f"practical5/{name}.npy": data}))
    assert findings == [], shown(findings)


def test_npz_archives_of_arrays_are_no_pickle(tmp_path):
    files = {"practical5/times.npz": saved(np.savez, NPY_ARRAYS["floats"]),
             "practical5/all.npz": saved(np.savez_compressed, **NPY_ARRAYS),
             "practical5/pair.npz": saved(np.savez, NPY_ARRAYS["ints"], t=NPY_ARRAYS["text"])}
    findings = scan_submission(write(tmp_path, files))
    assert findings == [], shown(findings)


HONEST_PICKLED = {
    "arrays": {"t": np.array([1.5, 2.5]), "i": np.arange(3), "grid": np.ones((2, 2))[::2]},
    "scalars": {"mean": np.float64(2.0), "steps": np.int64(3), "ok": np.bool_(True),
                "half": np.float16(1)},
    "objects_array": np.array([{"depth": 6}, None], dtype=object),
    "records": np.zeros(2, dtype=[("a", "f4"), ("b", "O")]),
    "masked": np.ma.masked_array([1, 2], [0, 1]),
    "dtypes": [np.dtype("f4"), np.float32],
    "rngs": [np.random.default_rng(0), np.random.RandomState(0), np.random.get_state()],
    "builtins": [{1, 2}, frozenset({3}), range(3), slice(1, 2), 1j, b"x", bytearray(b"x"),
                 Ellipsis, (1, "a"), [1.0], {"a": None}],
    "stdlib": [argparse.Namespace(lr=0.1, out=pathlib.Path("out")),
               types.SimpleNamespace(a=1), datetime.datetime(2025, 1, 1),
               datetime.timedelta(seconds=3), datetime.date(2025, 1, 1),
               collections.OrderedDict(a=1), collections.defaultdict(list),
               collections.Counter("ab"), collections.deque([1]), pathlib.PurePosixPath("x")],
    # what a results file records beside the times (an auditor's honest uploads)
    "environment": [__import__("time").localtime(0), __import__("platform").uname(),
                    torch.__version__],
    "benchmark": __import__("torch.utils.benchmark", fromlist=["Measurement"]).Measurement(
        1, [0.001], __import__("torch.utils.benchmark", fromlist=["TaskSpec"]).TaskSpec(
            stmt="model(x)", setup="")),
    "tensors": {"w": torch.ones(2, 3), "p": nn.Parameter(torch.zeros(2)),
                "h": torch.ones(2, dtype=torch.bfloat16), "size": torch.Size([2]),
                "dtype": torch.float16, "device": torch.device("cpu")},
}


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
@pytest.mark.parametrize("name", list(HONEST_PICKLED))
def test_pickles_of_numpy_torch_and_stdlib_data_give_no_finding(tmp_path, name, protocol):
    data = pickle.dumps(HONEST_PICKLED[name], protocol=protocol)
    assert dangerous_globals(pickle_globals(data) or []) == []
    findings = scan_submission(write(tmp_path, {"practical5/results.pkl": data}))
    assert findings == [], shown(findings)


def test_object_arrays_saved_with_np_save_give_no_finding(tmp_path):
    files = {"practical5/runs.npy": npy(np.array([{"ms": 1.0}, None], dtype=object),
                                       allow_pickle=True),
             "practical5/mixed.npy": npy(np.zeros(2, dtype=[("a", "O"), ("b", "f4")]),
                                         allow_pickle=True)}
    findings = scan_submission(write(tmp_path, files))
    assert findings == [], shown(findings)


class TinyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.1),
                                  nn.LayerNorm(8), nn.Linear(8, 2))
        self.act, self.squash, self.gate = nn.functional.gelu, torch.tanh, nn.functional.relu
        self.register_buffer("steps", torch.zeros(1, dtype=torch.long))

    def forward(self, x):
        return self.squash(self.body(x))


def checkpoints() -> dict[str, bytes]:
    net = TinyNet()
    optimizer = torch.optim.AdamW(net.parameters(), lr=1e-3)
    net(torch.randn(2, 4)).sum().backward()
    optimizer.step()
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1)
    args = argparse.Namespace(lr=1e-3, epochs=3, out=pathlib.Path("runs"))
    state = {"model": net.state_dict(), "optimizer": optimizer.state_dict(),
             "scheduler": scheduler.state_dict(), "args": args, "epoch": 3,
             "config": types.SimpleNamespace(depth=6), "when": datetime.datetime(2025, 1, 1),
             "rng": torch.get_rng_state(), "generator": torch.Generator().manual_seed(0),
             "timings": np.array([1.0, 2.0])}
    with defined_in(TinyNet, "__main__"):
        return {"checkpoint.pt": saved(torch.save, state),
                "legacy.pt": saved(torch.save, state, _use_new_zipfile_serialization=False),
                "whole_model.pt": saved(torch.save, net),
                "whole_optimizer.pt": saved(torch.save, {"opt": optimizer, "sched": scheduler}),
                "pickled_tensors.pkl": pickle.dumps(state),
                "pickled_tensors_p2.pkl": pickle.dumps(state, protocol=2),
                "checkpoint.pth.tar": saved(torch.save, state)}


def test_checkpoints_with_namespace_and_whole_models_give_no_finding(tmp_path):
    files = {f"practical5/{name}": data for name, data in checkpoints().items()}
    files["practical5/train.py"] = "class TinyNet:\n    pass\n"   # where __main__.TinyNet is
    findings = held(write(tmp_path, files))
    assert findings == [], shown(findings)


def test_a_whole_model_whose_class_is_in_a_helper_module_gives_no_finding(tmp_path):
    # torch.save(model) names the class by its module: models_p5x.TinyNet
    with defined_in(TinyNet, "models_p5x"):
        data = saved(torch.save, TinyNet())
    files = {"practical5/model.pt": data,
             "practical5/models_p5x.py": "from torch import nn\n\n\nclass TinyNet(nn.Module):\n"
                                         "    pass\n"}
    assert held(write(tmp_path / "own", files)) == []
    # the same pickle where no file of the submission defines it: held
    findings = held(write(tmp_path / "alone", {"practical5/model.pt": data}))
    assert [f.file for f in findings] == ["practical5/model.pt/archive/data.pkl"], \
        shown(findings)


@pytest.fixture(scope="module")
def torchscript_archives() -> dict[str, bytes]:
    mlp = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv, self.bn = nn.Conv2d(3, 3, 3, padding=1), nn.BatchNorm2d(3)
            self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])
            self.names: list[str] = ["a", "b"]

        def forward(self, x, y):
            for layer in self.layers:
                y = layer(y)
            stats: dict[str, int] = {}
            for name in self.names:
                stats[name] = len(name)
            return torch.relu(self.bn(self.conv(x))).flatten(1).sum() + y.sum() + len(stats)

    archives = {}
    # torch 2.x deprecates TorchScript and warns; students' archives are made all the same.
    warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"torch\.jit")
    warnings.filterwarnings("ignore", message="The TorchScript type system")
    for name, module in (("mlp_scripted.pt", torch.jit.script(mlp)),
                         ("mlp_traced.pt", torch.jit.trace(mlp, torch.randn(2, 4))),
                         ("block_scripted.pt", torch.jit.script(Block())),
                         ("mlp_frozen.pt", torch.jit.freeze(torch.jit.script(mlp.eval())))):
        buffer = io.BytesIO()
        torch.jit.save(module, buffer)
        archives[name] = buffer.getvalue()
    return archives


def test_torchscript_archives_give_no_finding(tmp_path, torchscript_archives):
    files = {f"practical5/{name}": data for name, data in torchscript_archives.items()}
    findings = scan_submission(write(tmp_path, files))
    assert findings == [], shown(findings)


def test_a_stray_honest_data_file_at_the_top_holds_no_assignment(tmp_path, torchscript_archives):
    files = {"timings.npy": npy(NPY_ARRAYS["floats"]),
             "results.pkl": pickle.dumps({"ms": np.array([1.0, 2.0])}),
             "model_scripted.pt": torchscript_archives["mlp_scripted.pt"],
             "checkpoint.pt": checkpoints()["checkpoint.pt"]}
    findings = scan_submission(write(tmp_path, files))
    for assignment in ASSIGNMENT_FOLDERS:
        assert [f for f in findings_for(findings, assignment) if f.kind == TAMPERING] == [], \
            shown(findings)
    # a dangerous one there still concerns every assignment
    write(tmp_path, {"results.pkl": pickle.dumps({"ms": RunsCode()})})
    findings = scan_submission(tmp_path)
    for assignment in ASSIGNMENT_FOLDERS:
        assert [f.file for f in findings_for(findings, assignment)
                if f.kind == TAMPERING] == ["results.pkl"]


# -- what must stay held ----------------------------------------------------------------------
def assert_held(submission: Path, file: str) -> None:
    findings = scan_submission(submission)
    match = [f for f in findings if f.file == file and f.kind == TAMPERING]
    assert match, f"expected {file} held; observed:\n{shown(findings)}"


@pytest.mark.parametrize("version", [(1, 0), (2, 0), (3, 0)])
def test_an_object_npy_whose_pickle_runs_code_is_held(tmp_path, version):
    data = npy(np.array([RunsCode()], dtype=object), version=version, allow_pickle=True)
    assert "posix.system" in (pickle_globals(data) or [])
    assert_held(write(tmp_path, {"practical5/t.npy": data}), "practical5/t.npy")


@pytest.mark.parametrize("descr", ["'|O'", "[('ms', '<f8'), ('run', '|O')]", "('O', (2,))",
                                   "'object'", "[('a', [('b', '|O')])]", "'<f8' 'broken"])
def test_a_npy_header_of_objects_or_unreadable_means_its_pickle_is_read(tmp_path, descr):
    header = ("{'descr': " + descr + ", 'fortran_order': False, 'shape': (1,), }").encode()
    data = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header + \
        pickle.dumps(RunsCode(), protocol=2)
    assert_held(write(tmp_path, {"practical5/t.npy": data}), "practical5/t.npy")


def test_an_npz_member_whose_pickle_runs_code_is_held(tmp_path):
    data = saved(np.savez, np.array([RunsCode()], dtype=object),
                 times=NPY_ARRAYS["floats"])
    assert_held(write(tmp_path, {"practical5/t.npz": data}), "practical5/t.npz/arr_0.npy")


def test_a_npy_without_numpys_header_is_read_as_a_pickle(tmp_path):
    # np.load(allow_pickle=True) unpickles a file that has no .npy header
    data = pickle.dumps([RunsCode()])
    assert_held(write(tmp_path, {"practical5/t.npy": data}), "practical5/t.npy")


def test_names_fetched_back_from_the_memo_are_read(tmp_path):
    assert "os.system" in pickle_globals(MEMO_REUSE)
    assert_held(write(tmp_path, {"hw3/r.pkl": MEMO_REUSE}), "hw3/r.pkl")


DANGEROUS_NAMES = {
    # protocol 4 resolves a dotted name through attributes: pathlib's os, then its system
    "dotted_through_pathlib": call("pathlib", "os.system"),
    "dotted_through_torch": call("torch", "os.system"),
    "dotted_numpy_runstring": call("numpy", "testing._private.utils.runstring"),
    "dotted_through_argparse": call("argparse", "os.system"),
    "dotted_own_class": call("__main__", "Outer.os"),
    # loads a pickle the scan never read, or runs text as code
    "torch_load": call("torch", "load", "other_file.txt"),
    "torch_serialization_load": call("torch.serialization", "load"),
    "torch_hub_load": call("torch.hub", "load"), "numpy_load": call("numpy", "load"),
    "numpy_runstring": call("numpy.testing._private.utils", "runstring"),
    "fx_forward_from_src": call("torch.fx.graph_module", "_forward_from_src"),
    "torch_library_impl": call("torch.library", "impl"),
    "copyreg_add_extension": call("copyreg", "add_extension"),
    "collections_abc_module": call("collections", "abc"),
    "builtins_getattr": call("builtins", "getattr"),
    "types_function_type": call("types", "FunctionType"),
    # a module's attributes set when loaded: torch.cuda.device_count replaced
    "build_on_torch_cuda": PROTO4 + U("torch") + U("cuda") + STACK_GLOBAL + EMPTY_DICT
    + U("device_count") + U("collections") + U("OrderedDict") + STACK_GLOBAL + SETITEM + BUILD
    + STOP,
    # a class's attributes set (BUILD with slot state: setattr): argparse.Namespace.__eq__
    "build_on_an_allowed_class": PROTO4 + U("argparse") + U("Namespace") + STACK_GLOBAL + b"N"
    + EMPTY_DICT + U("__eq__") + U("collections") + U("Counter") + STACK_GLOBAL + SETITEM
    + TUPLE2 + BUILD + STOP,
    # a name computed when loaded: str(b'os', 'ascii')
    "computed_module_name": PROTO4 + U("builtins") + U("str") + STACK_GLOBAL + b"C\x02os"
    + U("ascii") + TUPLE2 + REDUCE + U("system") + STACK_GLOBAL + EMPTY_TUPLE + REDUCE + STOP,
    # getattr(pathlib.Path, 'write_text'): a method, called with what the pickle gives it
    "getattr_of_a_method": PROTO4 + U("builtins") + U("getattr") + STACK_GLOBAL + U("pathlib")
    + U("Path") + STACK_GLOBAL + U("write_text") + TUPLE2 + REDUCE + STOP,
    # an extension code (copyreg's registry): the name is not in the pickle
    "extension_code": PROTO4 + b"\x82\x01" + EMPTY_TUPLE + REDUCE + STOP,
}


@pytest.mark.parametrize("data", list(DANGEROUS_NAMES.values()), ids=list(DANGEROUS_NAMES))
def test_dangerous_names_however_spelt_are_held(tmp_path, data):
    assert dangerous_globals(pickle_globals(data) or ["?"]), pickle_globals(data)
    assert_held(write(tmp_path, {"hw3/r.pkl": data}), "hw3/r.pkl")


def test_a_torch_stream_inside_a_pickle_is_read(tmp_path):
    # torch.storage._load_from_bytes(b) is torch.load(b): the pickles in b run too
    inner = pickle.dumps(1, protocol=2) + pickle.dumps([RunsCode()], protocol=2)
    data = (PROTO4 + U("torch.storage") + U("_load_from_bytes") + STACK_GLOBAL
            + b"C" + bytes([len(inner)]) + inner + TUPLE1 + REDUCE + STOP)
    assert "posix.system" in pickle_globals(data)
    assert_held(write(tmp_path, {"hw3/r.pkl": data}), "hw3/r.pkl")


def test_every_pickle_of_a_file_is_read(tmp_path):
    # pickle.load in a loop; torch.save's legacy format (five pickles, then raw bytes)
    files = {"hw3/two.pkl": pickle.dumps([1.0]) + pickle.dumps(RunsCode()),
             "hw3/legacy.pt": saved(torch.save, {"w": torch.ones(1), "x": RunsCode()},
                                    _use_new_zipfile_serialization=False)}
    write(tmp_path, files)
    assert_held(tmp_path, "hw3/two.pkl")
    assert_held(tmp_path, "hw3/legacy.pt")


def test_pickles_under_other_names_or_links_are_read(tmp_path):
    bad = pickle.dumps({"w": RunsCode()})
    write(tmp_path, {"hw3/weights.dat": bad, "hw3/checkpoint.pth.tar": bad,
                     "hw3/notes.txt": bad, "hw3/big.pkl": bad + b"\x00" * (9 * 2**20)})
    (tmp_path / "hw3/link.pkl").symlink_to("notes.txt")
    for file in ("hw3/weights.dat", "hw3/checkpoint.pth.tar", "hw3/notes.txt", "hw3/big.pkl",
                 "hw3/link.pkl"):
        assert_held(tmp_path, file)


def test_a_checkpoint_with_a_large_data_pkl_is_read(tmp_path):
    state = {"pad": "x" * (9 * 2**20), "x": RunsCode()}
    assert_held(write(tmp_path, {"hw3/ckpt.pt": saved(torch.save, state)}),
                "hw3/ckpt.pt/archive/data.pkl")


def test_a_zip_after_a_pickle_is_read_too(tmp_path):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("archive/data.pkl", pickle.dumps(RunsCode()))
    data = pickle.dumps([1.0]) + buffer.getvalue()
    assert_held(write(tmp_path, {"hw3/r.pkl": data}), "hw3/r.pkl/archive/data.pkl")


def test_a_whole_model_defined_in_a_notebook_gives_no_finding(tmp_path):
    import json
    with defined_in(TinyNet, "__main__"):
        data = saved(torch.save, TinyNet())
    notebook = {"cells": [{"cell_type": "code", "source": ["%matplotlib inline\n",
                                                            "from torch import nn\n"]},
                          {"cell_type": "code", "source": "class TinyNet(nn.Module):\n    pass\n"},
                          {"cell_type": "markdown", "source": "# class Other"}]}
    files = {"practical5/model.pt": data, "practical5/train.ipynb": json.dumps(notebook)}
    findings = held(write(tmp_path, files))
    assert findings == [], shown(findings)


def test_office_files_and_other_zips_are_read_for_what_torch_load_reads(tmp_path):
    def zipped(members):
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            for name, data in members.items():
                archive.writestr(name, data)
        return buffer.getvalue()
    # a document's printer settings and embedded objects are no pickles
    report = zipped({"[Content_Types].xml": "<Types/>", "word/document.xml": "<w/>",
                     "word/embeddings/oleObject1.bin": b"cgarbage\nname\n)R.",
                     "xl/printerSettings/printerSettings1.bin": b"M\x00i\x00c\x00"})
    assert held(write(tmp_path / "honest", {"report.docx": report, "results.xlsx": report})) \
        == []
    # torch.load reads a zip of any name: its data.pkl
    weights = zipped({"archive/data.pkl": pickle.dumps(RunsCode()), "archive/version": "3\n"})
    assert_held(write(tmp_path / "forged", {"hw3/weights.docx": weights}),
                "hw3/weights.docx/archive/data.pkl")


def test_own_names_are_only_what_the_submission_defines(tmp_path):
    # __main__.system exists where a script did `from os import system`: not the student's own
    data = call("__main__", "system")
    write(tmp_path, {"hw3/r.pkl": data, "hw3/model_parallel.py": "from os import system\n"})
    assert_held(tmp_path, "hw3/r.pkl")
    # a helper module named like Python's own: the loader may import Python's
    data = call("subprocess", "run")
    write(tmp_path, {"hw3/s.pkl": data, "hw3/subprocess.py": "def run(x):\n    pass\n"})
    assert_held(tmp_path, "hw3/s.pkl")



def test_a_pickle_calling_a_function_of_the_script_with_a_torch_class_is_held(tmp_path):
    """A red team's forgery: `__main__.tweak(torch.nn.Linear)` from a pickle the script loads.
    The scan trusts `m.forward = ...` in tweak (every call in the source hands it the script's
    own object); the pickle hands it torch's class, and every nn.Linear ran the student's
    forward. A pickle's own names are the submission's classes, never its functions."""
    forged = (b"\x80\x02c__main__\ntweak\nctorch.nn.modules.linear\nLinear\n\x85R.")
    script = ("import torch\nfrom torch import nn\n\n\nclass _Probe(nn.Module):\n    pass\n\n\n"
              "def _loud(self, x):\n    return x\n\n\ndef tweak(m):\n    m.forward = _loud\n\n\n"
              "tweak(_Probe())\ntorch.load('practical4/state.pt', weights_only=False)\n")
    write(tmp_path, {"practical4/concepts.py": script, "practical4/state.pt": forged})
    assert_held(tmp_path, "practical4/state.pt")


def test_the_same_pickle_written_into_the_source_is_held(tmp_path):
    forged = "b'\\x80\\x02c__main__\\ntweak\\nctorch.nn.modules.linear\\nLinear\\n\\x85R.'"
    script = ("import pickle\nfrom torch import nn\n\n\nclass _Probe(nn.Module):\n    pass\n\n\n"
              "def tweak(m):\n    m.forward = None\n\n\ntweak(_Probe())\n"
              f"pickle.loads({forged})\n")
    write(tmp_path, {"practical4/concepts.py": script})
    assert_held(tmp_path, "practical4/concepts.py")


def test_a_class_of_the_graders_own_main_module_is_none_of_the_students(tmp_path):
    """HW3's probe runs as the process's __main__: `__main__.main` is the grader's launcher,
    whatever `main` the student's script defines."""
    write(tmp_path, {"hw3/r.pkl": call("__main__", "main"),
                     "hw3/model_parallel.py": "class main:\n    pass\n"})
    assert_held(tmp_path, "hw3/r.pkl")

# -- TorchScript-looking archives -------------------------------------------------------------
def replaced(archive: bytes, members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(archive)) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            if info.filename not in members:
                target.writestr(info, source.read(info))
        for name, data in members.items():
            target.writestr(name, data)
    return out.getvalue()


@pytest.mark.parametrize("member, data, flagged", [
    pytest.param("mlp_scripted/data.pkl", call("builtins", "exec", "import os"), "data.pkl",
                 id="data_pkl_calls_exec"),
    pytest.param("mlp_scripted/data.pkl", call("posix", "system"), "data.pkl",
                 id="data_pkl_calls_posix_system"),
    pytest.param("mlp_scripted/constants.pkl", call("os", "system"), "constants.pkl",
                 id="constants_pkl_calls_os_system"),
    pytest.param("mlp_scripted/data.pkl", call("__torch__", "x.os.system"), "data.pkl",
                 id="dotted_torchscript_name"),
    pytest.param("mlp_scripted/code/__torch__/evil.py", b"import gc\ngc.get_objects()\n",
                 "evil.py", id="python_in_code_folder"),
    pytest.param("mlp_scripted/code/__torch__/evil.py",
                 b"import gc as __torch__\n__torch__.get_objects()\n", "evil.py",
                 id="code_binding_torchscript_name"),
    pytest.param("mlp_scripted/code/__torch__/torch/nn/modules/container.py",
                 b"from helper import *\nx = __torch__.modules\n", "container.py",
                 id="code_with_star_import"),
])
def test_a_torchscript_looking_archive_that_runs_code_is_held(tmp_path, torchscript_archives,
                                                              member, data, flagged):
    original = torchscript_archives["mlp_scripted.pt"]
    root = zipfile.ZipFile(io.BytesIO(original)).namelist()[0].split("/")[0]
    archive = replaced(original, {member.replace("mlp_scripted/", f"{root}/"): data})
    findings = held(write(tmp_path, {"practical5/mlp_scripted.pt": archive}))
    assert any(f.file.endswith(flagged) for f in findings), shown(findings)


def test_torchscript_names_are_allowed_only_in_a_torchscript_archive(tmp_path):
    data = call("__torch__.torch.nn.modules.linear", "Linear")
    assert dangerous_globals(pickle_globals(data), Context(torchscript=True)) == []
    assert_held(write(tmp_path, {"hw3/r.pkl": data}), "hw3/r.pkl")
    # a torch.save archive is no TorchScript archive
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("archive/data.pkl", data)
        archive.writestr("archive/version", "3\n")
    assert_held(write(tmp_path, {"hw3/c.pt": buffer.getvalue()}), "hw3/c.pt/archive/data.pkl")


def test_torchscript_source_reads_its_class_names_as_names():
    source = (b"class Sequential(Module):\n  __annotations__['0'] = "
              b"__torch__.torch.nn.modules.linear.Linear\n"
              b"  def forward(self: __torch__.torch.nn.modules.container.Sequential) -> str:\n"
              b"    return '__torch__.torch.nn.modules'  # __torch__.a.b\n")
    rewritten = torchscript_as_python(source)
    assert b"__torch___torch_nn_modules_linear_Linear" in rewritten
    assert b"'__torch__.torch.nn.modules'" in rewritten and b"# __torch__.a.b" in rewritten
    assert len(rewritten) == len(source)
    for binding in (b"import gc as __torch__\n", b"__torch__ = 1\n", b"from m import *\n",
                    b"def f(__torch__):\n    pass\n", b"class __torch__:\n    pass\n"):
        assert torchscript_as_python(binding + source) == binding + source



# -- joblib: a pickle with arrays' raw bytes between its opcodes, maybe compressed -------------
def _matrix():
    """numpy's matrix, an array subclass honest code still pickles (numpy warns it is old)."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        return np.matrix([[1.0, 2.0]])


JOBLIB_VALUES = {
    "arrays_and_floats": {"step_times": np.array([12.1, 12.4, 12.0]), "depths": [6, 12, 24],
                          "ms": [1.5, 2.5], "ok": True, "name": "dp"},
    "every_kind_of_array": [NPY_ARRAYS[name] for name in NPY_ARRAYS] + [
        np.float64(1.5), np.array(3.0), np.zeros((0, 4)), _matrix(),
        np.arange(100000, dtype=np.int64)],
    "objects_and_a_checkpoint": {"runs": np.array([{"ms": 1.0}, None], dtype=object),
                                 "args": argparse.Namespace(lr=0.1),
                                 "weights": torch.ones(3)},
    "a_plain_list": [1.0, 2.0, 3.0],
}


@pytest.mark.parametrize("compress", ["", "zlib", "gzip", "bz2", "xz", "lzma"])
@pytest.mark.parametrize("name", list(JOBLIB_VALUES))
def test_joblib_dumps_of_arrays_and_results_give_no_finding(tmp_path, name, compress):
    value = JOBLIB_VALUES[name]
    files = {"practical5/results.joblib": joblib_dumped(value, compress=compress),
             "practical5/results_p2.pkl": joblib_dumped(value, protocol=2, compress=compress),
             "practical5/old_joblib.joblib": joblib_dumped(value, compress=compress,
                                                           aligned=False)}
    if compress:   # joblib picks the compressor from the name: results.pkl.gz, .z, .xz, ...
        files[f"practical5/results.pkl.{compress}"] = joblib_dumped(value, protocol=5,
                                                                    compress=compress)
    findings = scan_submission(write(tmp_path, files))
    # (a .gz, .bz2 or .xz file is noted as an archive, whatever it holds)
    assert [f for f in findings if f.category != "archive"] == [], shown(findings)


@pytest.mark.parametrize("compress", ["", "zlib", "gzip", "xz"])
def test_a_joblib_file_whose_pickle_runs_code_is_held(tmp_path, compress):
    after_an_array = {"times": np.arange(10.0), "x": RunsCode()}
    in_an_object_array = [np.ones(3), np.array([RunsCode()], dtype=object)]
    # (read to the end past arrays of every kind: each one's length is measured right)
    after_every_kind = [*JOBLIB_VALUES["every_kind_of_array"], RunsCode()]
    write(tmp_path, {"hw3/after.joblib": joblib_dumped(after_an_array, compress=compress),
                     "hw3/inside.joblib": joblib_dumped(in_an_object_array, compress=compress),
                     "hw3/every.joblib": joblib_dumped(after_every_kind, compress=compress),
                     "hw3/unaligned.joblib": joblib_dumped(after_every_kind, compress=compress,
                                                           aligned=False),
                     "hw3/results.pkl.gz": joblib_dumped(after_an_array, compress="gzip")})
    findings = scan_submission(tmp_path)
    for file in ("hw3/after.joblib", "hw3/inside.joblib", "hw3/every.joblib",
                 "hw3/unaligned.joblib", "hw3/results.pkl.gz"):
        assert [f for f in findings if f.file == file and f.kind == TAMPERING and
                "system" in f.what], f"{file} not held for os.system:\n{shown(findings)}"


def test_a_joblib_array_the_scan_cannot_measure_is_held(tmp_path):
    """The loader reads past each wrapper as many bytes as its state says: one whose state
    the scan cannot read (or a wrapper called, or built otherwise) leaves the rest unread."""
    wrapper = U("joblib.numpy_pickle") + U("NumpyArrayWrapper") + STACK_GLOBAL
    called = PROTO4 + wrapper + U("x") + TUPLE1 + REDUCE + STOP
    unreadable_state = PROTO4 + wrapper + EMPTY_TUPLE + b"\x81" + EMPTY_DICT + U("shape") + \
        U("everything") + SETITEM + BUILD + STOP
    class_patched = PROTO4 + wrapper + EMPTY_DICT + U("read") + U("os") + U("system") + \
        STACK_GLOBAL + SETITEM + BUILD + STOP
    write(tmp_path, {"hw3/called.joblib": called, "hw3/state.joblib": unreadable_state,
                     "hw3/patched.joblib": class_patched})
    for file in ("hw3/called.joblib", "hw3/state.joblib", "hw3/patched.joblib"):
        assert_held(tmp_path, file)


def test_a_joblib_file_is_read_as_pickle_load_reads_it_too(tmp_path):
    """Where joblib can be imported (or a module of the submission's named so), pickle.load
    builds the wrapper as any object and reads the array's bytes that follow as opcodes."""
    opcodes = b"cos\nsystem\n(S'true'\ntR."
    hidden = [np.frombuffer(opcodes, dtype=np.uint8)]
    write(tmp_path, {"hw3/r.joblib": joblib_dumped(hidden, aligned=False),
                     "hw3/honest.joblib": joblib_dumped([np.frombuffer(b"c" * 25, np.uint8)])})
    assert_held(tmp_path, "hw3/r.joblib")
    assert not [f for f in scan_submission(tmp_path) if f.file == "hw3/honest.joblib"]


def test_compressed_pickles_are_read_and_other_compressed_data_is_not(tmp_path):
    """pickle.load(gzip.open(...)) reads a compressed pickle as well as joblib.load does."""
    import gzip
    import lzma
    write(tmp_path, {"hw3/bad.pkl.gz": gzip.compress(pickle.dumps(RunsCode())),
                     "hw3/bad.xz": lzma.compress(pickle.dumps([RunsCode()])),
                     "hw3/times.pkl.gz": gzip.compress(pickle.dumps([1.0, 2.0])),
                     "hw3/data.csv.gz": gzip.compress(b"depth,ms\n6,1.0\n"),
                     "hw3/arrays.npy.gz": gzip.compress(npy(np.arange(3.0)))})
    findings = scan_submission(tmp_path)
    assert {f.file for f in findings if f.kind == TAMPERING} == {"hw3/bad.pkl.gz", "hw3/bad.xz"}, \
        shown(findings)


def test_the_joblib_bytes_made_here_are_joblibs(tmp_path):
    """Where joblib is installed (it is not in the grading environment), what joblib_dumped
    writes is what joblib.dump writes."""
    joblib = pytest.importorskip("joblib")
    value = JOBLIB_VALUES["every_kind_of_array"]
    for compress, level in (("", 0), ("zlib", 3)):
        path = tmp_path / f"x{compress}.joblib"
        joblib.dump(value, path, compress=(compress or "zlib", level))
        ours = joblib_dumped(value, compress=compress)
        if not compress:
            assert path.read_bytes() == ours
        else:
            import zlib
            assert zlib.decompress(path.read_bytes()) == zlib.decompress(ours)


Timing = collections.namedtuple("Timing", "name seconds")


def test_a_namedtuple_of_the_students_script_is_its_own_class(tmp_path):
    # `Timing = namedtuple(...)` in the script that pickled its rows (as __main__): a class of
    # the student's own, whose call only builds a tuple
    with defined_in(Timing, "__main__"):
        data = pickle.dumps([Timing("forward", 0.12), Timing("backward", 0.2)])
    script = "import collections, pickle\nTiming = collections.namedtuple('Timing', 'name seconds')\n"
    assert held(write(tmp_path, {"practical5/practical5_dp.py": script,
                                 "practical5/times.pkl": data})) == []
