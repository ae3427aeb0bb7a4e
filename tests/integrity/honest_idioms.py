"""Honest idioms real students write: each must be graded for real, never held.

An idiom is a few lines put into a copy of the reference solution, right after the file's
imports (so it runs when the script runs and when the HW3 probe imports the model), plus
extra files. Idioms that share a file share one submission and one grading (gradings take tens
of seconds each). `notes` are the note categories the instructor should see for it (none of
them holds anything). The first seven are the ones issue 11 found held.
"""
from __future__ import annotations

from dataclasses import dataclass, field

P4 = "practical4/concepts.py"
P5 = "practical5/practical5_dp.py"
P6 = "practical6/practical6_ddp.py"
HW3 = "hw3/model_parallel.py"


@dataclass(frozen=True)
class Idiom:
    name: str
    file: str
    code: str
    notes: tuple = ()
    extra_files: dict = field(default_factory=dict)
    # Items the idiom's code really loses, as it would on the student's own machine: {item id:
    # points}. Graded for real means that too.
    loses: dict = field(default_factory=dict)
    # Idioms of a group are graded in a submission of their own (SUBMISSIONS).
    group: str = ""
    # The file's first lines (a coding line and what it declares), and the encoding the
    # whole file is written in (planted last, above everything else).
    header: str = ""
    encoding: str = "utf-8"


def _zip(members: dict[str, bytes]) -> bytes:
    import io
    import zipfile
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _pickled(value) -> bytes:
    import pickle
    return pickle.dumps(value)


def _data_files() -> dict[str, bytes]:
    """What np.save, pickle of numpy arrays, torch.jit.save and torch.save of a checkpoint with
    its argparse.Namespace write (each had held an honest upload), one of them at the top."""
    import argparse
    import io
    import pickle

    import numpy as np
    import torch
    from torch import nn

    def written(save, *args) -> bytes:
        buffer = io.BytesIO()
        save(*args, buffer) if save in (torch.save, torch.jit.save) else save(buffer, *args)
        return buffer.getvalue()

    mlp = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    return {"practical5/step_times_dp.npy": written(np.save, np.array([12.1, 12.4])),
            "practical5/results.pkl": pickle.dumps({"t": np.array([1.0, 2.0])}),
            "practical5/mlp_scripted.pt": written(torch.jit.save, torch.jit.script(mlp)),
            "practical5/checkpoint.pt": written(torch.save, {
                "model": mlp.state_dict(), "args": argparse.Namespace(lr=0.1)}),
            "timings.npy": written(np.save, np.arange(3.0))}


PROFILE_HELPER = '''"""Timing helpers for my HW3 runs (named profile.py, like the standard library's)."""
import time


class Stopwatch:
    def __init__(self):
        self.start = time.perf_counter()

    def elapsed_ms(self):
        return (time.perf_counter() - self.start) * 1000.0
'''

UTILS_HELPER = '''"""Small helpers shared by my practical 5 scripts."""


def describe(n_gpus):
    return f"running on {n_gpus} GPU(s)"
'''

OWN_CONFTEST = '''"""Fixtures for my own tests of the HW3 layout (pytest tests/)."""
import pytest


@pytest.fixture
def depths():
    return [6, 12, 24]
'''

OWN_TEST = '''import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "hw3"))


def test_depths_are_increasing(depths):
    assert depths == sorted(depths)
'''

IDIOMS = [
    # -- the seven of issue 11 --------------------------------------------------------------
    Idiom("env_loop_rank_local_rank", P4,
          'import os as _os\nfor _var in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR"):\n'
          '    print(f"{_var}={_os.environ.get(_var)}")\n'),
    Idiom("getattr_torch_dtype", HW3,
          "import argparse as _argparse\n_p = _argparse.ArgumentParser(add_help=False)\n"
          '_p.add_argument("--dtype", default="float32")\n_args, _ = _p.parse_known_args()\n'
          "DTYPE = getattr(torch, _args.dtype)\n", notes=("dynamic_attribute",)),
    Idiom("stdout_tee", P4,
          "import sys as _sys\n\nclass Tee:\n    def __init__(self, path, stream):\n"
          '        self.file = open(path, "a")\n        self.stream = stream\n\n'
          "    def write(self, text):\n        self.file.write(text)\n"
          "        return self.stream.write(text)\n\n    def flush(self):\n"
          "        self.file.flush()\n        self.stream.flush()\n\n"
          '_sys.stdout = Tee("log.txt", _sys.stdout)\n', notes=("output",)),
    Idiom("pickle_step_times", HW3,
          'import pickle\nwith open("step_times.pkl", "wb") as _f:\n'
          "    pickle.dump([12.1, 12.4, 12.0], _f)\n", notes=("serialization",)),
    Idiom("subprocess_nvidia_smi", P4,
          "import subprocess\n_smi = subprocess.run([\"nvidia-smi\", \"--query-gpu=index,name\","
          ' "--format=csv"], capture_output=True, text=True)\nprint(_smi.stdout)\n',
          notes=("processes",)),
    Idiom("plots_zip", HW3, "", notes=("archive",),
          extra_files={"hw3/plots.zip": _zip({"step_time_vs_depth.png": b"\x89PNG\r\n fake",
                                              "table.csv": b"depth,ms\n6,12.1\n12,23.5\n"})}),
    # The probe imports it (the model's helpers come first for the model's imports); run as a
    # script it breaks at the first optimizer step, as it does at home with this torch
    # (torch._dynamo imports cProfile, which imports `profile`: the student's), after printing
    # Task 5's counts, which count (a part that ran keeps its points when a later one stops).
    Idiom("helper_module_named_profile", HW3,
          "from profile import Stopwatch\n_watch = Stopwatch()\n", notes=("helper_module",),
          extra_files={"hw3/profile.py": PROFILE_HELPER}),
    # -- everyday debugging, logging and bookkeeping ------------------------------------------
    Idiom("os_system_nvidia_smi", P4, 'import os as _os2\n_os2.system("nvidia-smi")\n',
          notes=("processes",)),
    Idiom("gc_collect_and_empty_cache", P4, "import gc\ngc.collect()\ntorch.cuda.empty_cache()\n"),
    Idiom("print_cuda_environment", P4,
          "import os as _os3\nprint({k: v for k, v in _os3.environ.items() if k.startswith('CUDA')})\n",
          notes=("environment",)),
    Idiom("getenv_slurm_job", P4, 'import os as _os4\nJOB = _os4.getenv("SLURM_JOB_ID", "local")\n'),
    Idiom("logging_basic_config", P4,
          'import logging\nlogging.basicConfig(level=logging.INFO, format="%(message)s")\n'
          'logging.getLogger(__name__).info("starting")\n'),
    Idiom("warnings_filtered", P4, 'import warnings\nwarnings.filterwarnings("ignore")\n'
                                   'warnings.warn("ignored")\n'),
    Idiom("timer_context_manager", P4,
          "import time as _time\n\nclass Timer:\n    def __enter__(self):\n"
          "        self.start = _time.perf_counter()\n        return self\n\n"
          "    def __exit__(self, *exc):\n        self.ms = (_time.perf_counter() - self.start) * 1e3\n\n"
          "with Timer() as _t:\n    sum(range(1000))\n"),
    Idiom("results_json_in_a_folder", P4,
          'import json, os as _os5\n_os5.makedirs("results", exist_ok=True)\n'
          'json.dump({"run": 1}, open(_os5.path.join("results", "run.json"), "w"))\n'),
    Idiom("csv_writer", P4,
          'import csv\nwith open("times.csv", "w", newline="") as _f:\n'
          '    csv.writer(_f).writerow(["depth", "ms"])\n'),
    Idiom("cudnn_benchmark", P4, "torch.backends.cudnn.benchmark = True\n"),
    Idiom("seeds_everywhere", P4,
          "import random\nimport numpy as np\nrandom.seed(0)\nnp.random.seed(0)\n"),
    Idiom("platform_and_host", HW3,
          "import platform, socket, os as _os6\n"
          "print(platform.system(), socket.gethostname(), _os6.getpid(), _os6.cpu_count())\n"),
    Idiom("device_name", HW3,
          "if torch.cuda.is_available():\n    print(torch.cuda.get_device_name(0))\n"),
    Idiom("redirect_stdout_capture", HW3,
          "import contextlib, io\n_buffer = io.StringIO()\n"
          "with contextlib.redirect_stdout(_buffer):\n    print('captured')\n",
          notes=("output",)),
    Idiom("atexit_summary", HW3, "import atexit\natexit.register(lambda: print('bye'))\n",
          notes=("exit_hooks",)),
    Idiom("hashlib_of_config", HW3,
          "import hashlib\nRUN_ID = hashlib.md5(b'depth=12').hexdigest()[:8]\n",
          notes=("digests",)),
    Idiom("deepcopy_layer", HW3,
          "import copy\n_layer = copy.deepcopy(nn.Linear(4, 4))\n"),
    Idiom("dataclass_config", HW3,
          "import dataclasses\n\n@dataclasses.dataclass\nclass RunConfig:\n"
          "    depth: int = 12\n    dim: int = 1024\n\nCONFIG = RunConfig()\n"),
    Idiom("namedtuple_result", HW3,
          "import collections\nResult = collections.namedtuple('Result', 'depth ms')\n"
          "_r = Result(6, 1.0)\n"),
    Idiom("enum_mode", HW3, "import enum\n\nclass Mode(enum.Enum):\n    TRAIN = 1\n    EVAL = 2\n"),
    Idiom("lru_cache_helper", HW3,
          "import functools\n\n@functools.lru_cache(maxsize=None)\ndef _layers_for(n):\n"
          "    return n * 2\n\n_layers_for(3)\n"),
    Idiom("inspect_signature", HW3,
          "import inspect\nprint(inspect.signature(nn.Linear.__init__))\n"),
    Idiom("argparse_namespace_as_config", HW3,
          "import argparse as _ap, json as _json\n_ns = _ap.Namespace(lr=0.1)\n"
          "setattr(_ns, 'depth', 12)\nprint(_json.dumps(vars(_ns)))\n"),
    Idiom("class_names_printed", HW3,
          "_m = nn.Linear(2, 2)\nprint(type(_m).__name__, _m.__class__.__name__)\n"),
    Idiom("getattr_nn_literal", HW3, "_act = getattr(nn, 'ReLU')()\n"),
    Idiom("getattr_optimizer_from_config", HW3,
          "_CONFIG = {'optimizer': 'SGD'}\n_opt_class = getattr(torch.optim, _CONFIG['optimizer'])\n",
          notes=("dynamic_attribute",)),
    Idiom("sys_path_insert", HW3,
          "import os as _os7\nsys.path.insert(0, _os7.path.dirname(_os7.path.abspath(__file__)))\n"),
    Idiom("shipped_pickle_of_results", HW3, "", extra_files={
        "hw3/step_times.pkl": _pickled({"depth": [6, 12, 24], "ms": [12.0, 23.9, 47.5]})}),
    Idiom("shipped_notes", HW3, "", extra_files={"hw3/NOTES.md": "# my notes\nran on 2 GPUs\n"}),
    # -- found attacking the scheme as a student would (issue 11's adversary) -------------------
    Idiom("own_tests_folder_with_conftest", HW3, "", notes=("helper_module",), extra_files={
        "tests/conftest.py": OWN_CONFTEST, "tests/test_layout.py": OWN_TEST}),
    Idiom("pytree_moves_a_nested_batch", HW3,
          "from torch.utils._pytree import tree_map as _tree_map\n"
          "_BATCH = _tree_map(lambda t: t * 1, {'x': torch.zeros(2), 'y': [torch.ones(2)]})\n",
          notes=("torch_private",)),
    Idiom("course_acronym_in_names", P4,
          'RESULTS_FILE = "PDL_P4_results.json"\nRUN_TAG = "PDL_" + "P4"\n'),
    # -- practical 5 and 6: processes, files, threads, helper modules -------------------------
    Idiom("multiprocessing_cpu_count", P5,
          "import multiprocessing\nprint('cores', multiprocessing.cpu_count())\n",
          notes=("processes",)),
    Idiom("checkpoint_save_and_load", P5,
          "_ckpt = nn.Linear(2, 2)\ntorch.save(_ckpt.state_dict(), 'ckpt.pt')\n"
          "_ckpt.load_state_dict(torch.load('ckpt.pt'))\n"),
    Idiom("archive_results_at_run_time", P5,
          "import os as _o, shutil\n_o.makedirs('out', exist_ok=True)\n"
          "open(_o.path.join('out', 'a.txt'), 'w').write('x')\n"
          "shutil.make_archive('results', 'zip', 'out')\n"),
    Idiom("tempfile_folder", P5,
          "import tempfile\nwith tempfile.TemporaryDirectory() as _d:\n    pass\n"),
    Idiom("set_printoptions", P5, "torch.set_printoptions(precision=4)\n"),
    Idiom("memory_summary", P5,
          "if torch.cuda.is_available():\n    print(torch.cuda.memory_summary())\n"),
    Idiom("shipped_data_files", P5, "", extra_files=_data_files()),
    Idiom("helper_module_utils", P5, "from utils import describe\nprint(describe(1))\n",
          notes=("helper_module",), extra_files={"practical5/utils.py": UTILS_HELPER}),
    Idiom("background_thread", P5,
          "import threading\n_box = []\n_t = threading.Thread(target=lambda: _box.append(1))\n"
          "_t.start()\n_t.join()\n"),
    Idiom("print_flush_and_reconfigure", P5,
          "import sys as _sys5\n_sys5.stdout.reconfigure(line_buffering=True)\n"
          "print('flushed', flush=True)\n"),
    Idiom("read_own_source", P5, "_lines = len(open(__file__).read().splitlines())\n"),
    Idiom("traceback_of_a_caught_error", P5,
          "import traceback\ntry:\n    int('x')\nexcept ValueError as _e:\n"
          "    traceback.print_exception(type(_e), _e, _e.__traceback__)\n"),
    Idiom("env_loop_in_ddp", P6,
          'for _var in ("RANK", "LOCAL_RANK", "WORLD_SIZE"):\n'
          '    print(_var, os.environ.get(_var), flush=True)\n'),
    Idiom("master_addr_setdefault", P6,
          'os.environ.setdefault("MASTER_ADDR", "localhost")\n'
          'os.environ.setdefault("MASTER_PORT", "29500")\n'),
    Idiom("memory_snapshot_helpers", P5,
          "def start_memory_recording():\n"
          "    torch.cuda.memory._record_memory_history(max_entries=100000)\n\n\n"
          "def save_memory_snapshot(path='memory.pickle'):\n"
          "    torch.cuda.memory._dump_snapshot(path)\n", notes=("torch_private",)),
    Idiom("fsdp2_import_tried_after_ddp", P6,
          "from torch.distributed._composable.fsdp import fully_shard as _fully_shard  # FSDP2\n",
          notes=("torch_private",)),
    Idiom("dataloader_with_workers", P6,
          "from torch.utils.data import DataLoader, TensorDataset\n"
          "_loader = DataLoader(TensorDataset(torch.arange(8.0)), batch_size=4, num_workers=2)\n"
          "_n = sum(len(b[0]) for b in _loader)\n"),
    # torchvision's references, DeiT, MAE: print replaced so that only rank 0 prints (here
    # every rank stays a "master", so the script's output is unchanged)
    Idiom("print_replaced_as_ddp_references_do", P6,
          "import builtins as _builtins\n\n\ndef setup_for_distributed(is_master):\n"
          "    builtin_print = _builtins.print\n\n"
          "    def print(*args, **kwargs):\n        force = kwargs.pop('force', False)\n"
          "        if is_master or force:\n            builtin_print(*args, **kwargs)\n\n"
          "    _builtins.print = print\n\n\nsetup_for_distributed(True)\n",
          notes=("output",)),
    # PyTorch's DDP tutorial: `model.to(rank)` with the GPU's index
    Idiom("module_to_gpu_index", P6,
          "_layer = torch.nn.Linear(2, 2).to(int(os.environ.get('LOCAL_RANK', 0)))\n"),
    # checkpoint on preemption (SLURM sends SIGTERM): the node calls it without a frame
    Idiom("checkpoint_on_sigterm", P5,
          "import signal as _sig\n_stop = []\n\n\ndef _on_sigterm(signum, frame):\n"
          "    _stop.append(signum)\n\n\n_sig.signal(_sig.SIGTERM, _on_sigterm)\n",
          notes=("exit_hooks",)),
    Idiom("frozen_dataclass_post_init", P5,
          "import dataclasses as _dc\n\n\n@_dc.dataclass(frozen=True)\nclass _Config:\n"
          "    depth: int = 6\n\n    def __post_init__(self):\n"
          "        object.__setattr__(self, 'depth', max(1, self.depth))\n\n\n"
          "_config = _Config(0)\n"),
]

# A second audit's honest idioms (/work/audit/honest_idioms_round2.md), each graded for real.
OWN_OBJECTS = "own_objects"
ROUND_TWO = [
    # argparse at module level, as many tutorials write it: the probe imports the model with
    # the command line `python hw3/model_parallel.py` has, no arguments (it had the probe's)
    Idiom("argparse_parse_args_at_module_level", HW3,
          "import argparse as _argparse\n_parser = _argparse.ArgumentParser()\n"
          "_parser.add_argument('--depth', type=int, default=None)\n"
          "ARGS = _parser.parse_args()\n"),
    Idiom("sys_argv_depth_override", HW3,
          "_depth_from_command_line = int(sys.argv[1]) if len(sys.argv) > 1 else None\n"),
    # measurements kept in objects of the student's own, fields named like torch's functions
    Idiom("timings_in_a_namespace", HW3,
          "from types import SimpleNamespace as _NS\n_phase = _NS(forward=0.0, backward=0.0)\n"
          "_phase.forward += 0.5\n_phase.backward += 1.0\n", group=OWN_OBJECTS),
    Idiom("gpu_stats_dataclass", HW3,
          "from dataclasses import dataclass\n\n\n"
          "@dataclass\nclass _GpuStats:\n    device_count: int = 0\n"
          "    max_memory_allocated: float = 0.0\n\n\n"
          "def _measure():\n    stats = _GpuStats()\n"
          "    stats.device_count = torch.cuda.device_count()\n"
          "    stats.max_memory_allocated = torch.cuda.max_memory_allocated(0)\n"
          "    return stats\n\n\n_stats = _measure()\n", group=OWN_OBJECTS),
    Idiom("progress_listeners_of_its_own", HW3,
          "class _Progress:\n    def __init__(self):\n        self.listeners = []\n\n\n"
          "_progress = _Progress()\n_progress.listeners.append(print)\n", group=OWN_OBJECTS),
    Idiom("counter_on_its_own_class", HW3,
          "class _Run:\n    started = 0\n\n    def __init__(self):\n"
          "        type(self).started += 1\n\n\n_run = _Run()\n"),
    Idiom("yoda_main_guard", HW3,
          "if '__main__' == __name__:\n    pass\n"),
    Idiom("own_log_named_like_a_trace", HW3,
          "_log_name = 'hw3_trace.jsonl'\n_weights_name = f'hw3-weights-depth{6}.pt'\n"),
    # a job on a GPU node reads the GPUs it was given (SLURM's --gres sets the variable)
    Idiom("cuda_visible_devices_read", P6,
          "_visible = os.environ['CUDA_VISIBLE_DEVICES'].split(',')\n"),
]
IDIOMS += ROUND_TWO

# A third audit's honest idioms (/tmp/adv15, reproducers r01-r11), each held.
ROUND_THREE = [
    # phase timings kept in a dataclass handed to a step function, added to there
    Idiom("phase_times_added_in_a_step_function", P5,
          "import dataclasses as _dc5\n\n\n@_dc5.dataclass\nclass _PhaseTimes:\n"
          "    forward: float = 0.0\n    backward: float = 0.0\n\n\n"
          "def _timed_step(times):\n    t0 = time.perf_counter()\n    t1 = time.perf_counter()\n"
          "    times.forward += t1 - t0\n    times.backward += time.perf_counter() - t1\n\n\n"
          "_phase_times = _PhaseTimes()\n_timed_step(_phase_times)\n"),
    Idiom("flags_named_like_builtins", P5,
          "def _finish(model, eval=True, compile=False):\n    if eval:\n        model.eval()\n"
          "    if compile:\n        return model\n    return model\n\n\n_finish(nn.Linear(2, 2))\n"),
    Idiom("phase_table_on_stderr", P5,
          "import os as _os9\nprint('step', 'forward', 'backward', sep='\\t', file=sys.stderr)\n"
          "print(_os9.path.join(_os9.curdir, 'parameters'), file=sys.stderr)\n"),
    Idiom("isinstance_of_a_torch_nn_modules_class", P5,
          "_n_linear = sum(isinstance(_m, nn.modules.linear.Linear)\n"
          "                for _m in nn.Sequential(nn.Linear(2, 2)).modules())\n"),
    Idiom("timings_file_named_with_the_gpu_count", P5,
          "import json as _json5\n_n_gpus = torch.cuda.device_count()\n"
          "with open(f'PDL_{_n_gpus}gpu_timings.json', 'w') as _fh:\n"
          "    _json5.dump({'gpus': _n_gpus}, _fh)\n"),
    Idiom("main_guard_for_spawned_workers", P5,
          "if __name__ in ('__main__', '__mp_main__'):\n    pass\n"),
    Idiom("global_step_counter", P5, "_trainer_state = {'_global_step': 0}\n"),
    # objects of the student's own where the scan trusts them: an argparse Namespace, an object
    # handed to a function of the script, an instance of the student's nn.Module class
    Idiom("gpu_count_in_an_argparse_namespace", HW3,
          "import argparse as _argparse3\n_parser3 = _argparse3.ArgumentParser(add_help=False)\n"
          "_parser3.add_argument('--device-count', type=int, default=None)\n"
          "_ARGS3, _rest3 = _parser3.parse_known_args()\n"
          "if _ARGS3.device_count is None:\n    _ARGS3.device_count = torch.cuda.device_count()\n",
          group=OWN_OBJECTS),
    Idiom("stats_handed_to_a_measuring_function", HW3,
          "from types import SimpleNamespace as _NS3\n\n\n"
          "def _measure_into(stats):\n    stats.device_count = torch.cuda.device_count()\n"
          "    stats.forward = 0.0\n\n\n_measured = _NS3()\n_measure_into(_measured)\n",
          group=OWN_OBJECTS),
    Idiom("own_model_forward_wrapped", HW3,
          "class _Tiny(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
          "        self.layer = nn.Linear(4, 4)\n\n    def forward(self, x):\n"
          "        return self.layer(x)\n\n\n"
          "def _timed(fn):\n    def wrapper(*args, **kwargs):\n        return fn(*args, **kwargs)\n"
          "    return wrapper\n\n\n_tiny = _Tiny()\n_tiny.forward = _timed(_tiny.forward)\n",
          group=OWN_OBJECTS),
]
IDIOMS += ROUND_THREE

# The honest counterparts of a red team's routes around the scan (a method called with torch's
# class as `self`, an owner handed over in a container, mock.patch and a setting's name built
# around a computed part, joblib files), each graded for real.
def _joblib_files() -> dict[str, bytes]:
    """Results saved with joblib.dump (joblib itself is not installed where the grader runs;
    the bytes are joblib's: tests/support/joblib_files.py)."""
    import numpy as np

    from tests.support.joblib_files import joblib_dumped
    results = {"step_times_ms": np.array([12.1, 12.4, 12.0]), "depths": [6, 12, 24],
               "memory": np.zeros((2, 3), dtype=np.int64), "gpus": 2}
    return {"practical5/results.joblib": joblib_dumped(results),
            "practical5/results_compressed.joblib": joblib_dumped(results, compress="zlib")}


ROUND_FOUR = [
    Idiom("model_method_replacing_its_own_forward", HW3,
          "class _Switchable(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
          "        self.layer = nn.Linear(4, 4)\n        self.forward = self._plain\n\n"
          "    def _plain(self, x):\n        return self.layer(x)\n\n"
          "    def use_timed(self, timed=True):\n"
          "        self.forward = (lambda x: self._plain(x)) if timed else self._plain\n\n\n"
          "_switch = _Switchable()\n_switch.use_timed(True)\n_switch.use_timed(timed=False)\n"),
    Idiom("containers_of_torch_classes_and_a_setattr_helper", P5,
          "def _put(owner, name, value):\n    setattr(owner, name, value)\n\n\n"
          "_ACTIVATIONS = [nn.ReLU, nn.GELU]\n_DTYPES = {'fp32': torch.float32}\n"
          "_config = {}\n_act = _ACTIVATIONS[0]()\n_phase_names = ['forward', 'backward']\n"
          "from types import SimpleNamespace as _NS4\n"
          "_record = _NS4()\n_put(_record, 'forward_ms', 1.0)\n"
          "print(_DTYPES['fp32'], _phase_names[0])\n"),
    Idiom("mock_of_its_own_function", P5,
          "from unittest import mock as _mock\n\n\ndef _load_rows():\n    return [1, 2]\n\n\n"
          "_defaults = {'lr': 0.1}\nwith _mock.patch.dict(_defaults, {'lr': 0.2}):\n"
          "    _rows = _load_rows()\n"),
    Idiom("course_acronym_with_computed_parts", P4,
          "_n = torch.cuda.device_count()\n_csv = 'PDL-' + str(_n) + '-gpus.csv'\n"
          "_title = 'PDL {} GPUs'.format(_n)\n_folder = f'{_n}_SUBMISSION'\n"),
    Idiom("joblib_results_shipped", P5, "", extra_files=_joblib_files()),
]
IDIOMS += ROUND_FOUR

# The known limits' audit: a model's method replacing its own forward under a decorator of the
# file's own, bound to the model by functools.partial, or on a copy of the model. Trusted where
# no file can rebind another's names, as objects of the student's own are: graded with those.
ROUND_FIVE = [
    Idiom("method_replacing_its_own_forward_under_its_own_logging_decorator", HW3,
          "import functools as _ft5\n\n\ndef _log_call(fn):\n    @_ft5.wraps(fn)\n"
          "    def inner(*args, **kwargs):\n        print('calling', fn.__name__)\n"
          "        return fn(*args, **kwargs)\n    return inner\n\n\n"
          "class _Logged(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
          "        self.layer = nn.Linear(4, 4)\n\n    def _chunked(self, x):\n"
          "        return torch.cat([self.layer(c) for c in x.chunk(2)])\n\n"
          "    @_log_call\n    def use_logged_chunks(self, chunks):\n"
          "        self.chunks = chunks\n        self.forward = self._chunked\n\n\n"
          "_logged = _Logged()\n_logged.use_logged_chunks(2)\n",
          group=OWN_OBJECTS),
    Idiom("method_replacing_its_own_forward_bound_by_partial", HW3,
          "import functools as _ft6\n\n\nclass _Chunky(nn.Module):\n    def __init__(self):\n"
          "        super().__init__()\n        self.layer = nn.Linear(4, 4)\n\n"
          "    def _chunked(self, x):\n        return self.layer(x)\n\n"
          "    def use_chunks(self, chunks):\n        self.chunks = chunks\n"
          "        self.forward = self._chunked\n\n\n_chunky = _Chunky()\n"
          "_use_two = _ft6.partial(_Chunky.use_chunks, _chunky)\n_use_two(2)\n",
          group=OWN_OBJECTS),
    Idiom("forward_replaced_on_a_deepcopy_of_its_own_model", HW3,
          "import copy as _copy7\n\n\nclass _Cloned(nn.Module):\n    def __init__(self):\n"
          "        super().__init__()\n        self.layer = nn.Linear(4, 4)\n\n"
          "    def _chunked(self, x):\n        return self.layer(x)\n\n"
          "    def chunked_copy(self, chunks):\n        clone = _copy7.deepcopy(self)\n"
          "        clone.chunks = chunks\n        clone.forward = clone._chunked\n"
          "        return clone\n\n\n_clone = _Cloned().chunked_copy(2)\n",
          group=OWN_OBJECTS),
]
IDIOMS += ROUND_FIVE

# The scan reads torch handed to a function as what that call hands it: these honest forms hand
# torch to functions that only call it or set a harmless flag (as `torch.backends.cudnn...`
# written out), and the student's own layers to functions that set their fields.
ROUND_SIX = [
    Idiom("torch_and_own_layers_handed_to_helpers", P5,
          "def _seed_all6(T):\n    T.manual_seed(0)\n\n\n"
          "def _keep_flags6(T):\n    T.backends.cudnn.benchmark = False\n\n\n"
          "def _set_option6(owner, name, value):\n    setattr(owner, name, value)\n\n\n"
          "def _tag6(layer, index):\n    layer.stage = index\n\n\n"
          "_seed_all6(torch)\n_keep_flags6(torch)\n"
          "_set_option6(torch.backends.cudnn, 'deterministic', False)\n"
          "_stack6 = nn.Sequential(nn.Linear(2, 2), nn.ReLU())\n"
          "for _i6, _m6 in enumerate(_stack6):\n    _tag6(_m6, _i6)\n"
          "for _device6 in ('cuda:0', 'cuda:1'):\n"
          "    _set_option6(_stack6, 'last_device', _device6)\n"),
]
IDIOMS += ROUND_SIX

# Functions handed on (to nn.Module.apply, map, a thread, an executor, functools.partial), a
# class's __init__ and what functions and methods return are read as what they are handed: the
# honest forms hand them the student's own models, layers and data, and set fields on those.
ROUND_SEVEN = [
    Idiom("weights_initialised_through_model_apply", P5,
          "class _Init7(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
          "        self.fc = nn.Linear(4, 4)\n        self.apply(self._init_weights)\n\n"
          "    def _init_weights(self, module):\n        if isinstance(module, nn.Linear):\n"
          "            module.weight.data.normal_(mean=0.0, std=0.02)\n"
          "            module.bias.data = torch.zeros_like(module.bias)\n\n\n"
          "def _init_weights7(m):\n    if isinstance(m, nn.Linear):\n"
          "        nn.init.xavier_uniform_(m.weight)\n        m.bias.data.fill_(0.01)\n"
          "        m.initialised = True\n\n\n"
          "_net7 = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))\n"
          "_net7.apply(_init_weights7)\n_Init7().apply(_init_weights7)\n"),
    Idiom("workers_in_threads_and_an_executor", P5,
          # (no forward pass or optimizer step at import: the practical's checks count the
          # forward passes of threads as DataParallel's replicas, and its steps)
          "import concurrent.futures as _cf7\nimport threading as _th7\n\n\n"
          "class _Out7:\n    pass\n\n\n"
          "def _worker7(model, data, out):\n    model.eval()\n"
          "    out.rows = len(data)\n    model.last_batch = len(data)\n\n\n"
          "def _evaluate7(model, batch):\n    model.evaluated = True\n"
          "    return tuple(batch.shape)\n\n\n"
          "def _tag7(layer):\n    layer.tagged = True\n    return layer\n\n\n"
          "_model7, _out7 = nn.Linear(4, 4), _Out7()\n"
          "_thread7 = _th7.Thread(target=_worker7, args=(_model7, torch.zeros(2, 4), _out7))\n"
          "_thread7.start()\n_thread7.join()\n"
          "with _cf7.ThreadPoolExecutor(max_workers=2) as _pool7:\n"
          "    _first7 = _pool7.submit(_evaluate7, _model7, torch.zeros(2, 4)).result()\n"
          "    _all7 = list(_pool7.map(_evaluate7, [_model7], [torch.zeros(2, 4)]))\n"
          "_tagged7 = list(map(_tag7, nn.Sequential(nn.Linear(2, 2), nn.ReLU()).children()))\n"),
    Idiom("training_step_bound_by_partial", P5,
          "import functools as _ft7\n\n\n"
          "def _train7(model, epochs, device=torch.device('cpu')):\n    model.train()\n"
          "    model.epochs_done = epochs\n    return model.to(device)\n\n\n"
          "_step7 = _ft7.partial(_train7, nn.Linear(4, 4))\n_step7(2)\n"
          "_ft7.partial(_train7, epochs=1)(nn.Linear(2, 2))\n"),
    Idiom("trainer_keeping_its_model_optimizer_and_loss", P5,
          "class _Trainer7:\n"
          "    def __init__(self, model, optim_cls=torch.optim.SGD, loss_fn=nn.functional.mse_loss,"
          " lr=0.1):\n        self.model = model\n        self.optim_cls = optim_cls\n"
          "        self.optimizer = optim_cls(model.parameters(), lr=lr)\n"
          "        self.loss_fn = loss_fn\n        self.device = torch.device('cpu')\n\n"
          "    def step(self, x, y):\n        self.model.train()\n"
          "        self.optimizer.zero_grad()\n"
          "        loss = self.loss_fn(self.model(x), y)\n        loss.backward()\n"
          "        self.optimizer.step()\n        self.model.weight.requires_grad = True\n"
          "        self.last_loss = loss.item()\n        return loss\n\n"
          "    def get_model(self):\n        return self.model\n\n\n"
          "_trainer7 = _Trainer7(nn.Linear(4, 4), torch.optim.Adam, nn.functional.l1_loss)\n"
          "_trainer7.get_model().bias.data = torch.zeros(4)\n"
          "_kept7 = _trainer7.get_model()\n_kept7.weight.data = torch.eye(4)\n"),
    Idiom("helpers_returning_models_layers_and_devices", P5,
          "import train_utils7 as _tu7\nfrom train_utils7 import get_device as _get_device7\n\n\n"
          "def _make_layer7(n, cls=nn.Linear):\n    layer = cls(n, n)\n"
          "    layer.weight.data = torch.eye(n)\n    return layer\n\n\n"
          "class _Builder7:\n    def head(self):\n        return nn.Linear(4, 2)\n\n"
          "    def kind(self):\n        return nn.Linear\n\n\n"
          "_layer7 = _make_layer7(4)\n_layer7.bias.data = torch.zeros(4)\n"
          "_head7 = _Builder7().head()\n_head7.bias.data = torch.zeros(2)\n"
          "_Builder7().head().weight.data = torch.zeros(2, 4)\n"
          "_fresh7 = _Builder7().kind()(2, 2)\n_fresh7.bias.data = torch.zeros(2)\n"
          "_helper_model7 = _tu7.build_model()\n_helper_model7.fc.bias.data = torch.zeros(2)\n"
          "_device7 = _get_device7()\n_tensor7 = _tu7.make_batch().to(_device7)\n",
          notes=("helper_module",),
          extra_files={"practical5/train_utils7.py":
                       "import torch\nimport torch.nn as nn\n\n\n"
                       "class SmallNet(nn.Module):\n    def __init__(self):\n"
                       "        super().__init__()\n        self.fc = nn.Linear(4, 2)\n\n"
                       "    def forward(self, x):\n        return self.fc(x)\n\n\n"
                       "def build_model():\n    model = SmallNet()\n"
                       "    model.fc.weight.data = torch.zeros(2, 4)\n    return model\n\n\n"
                       "def get_device():\n    return torch.device('cpu')\n\n\n"
                       "def make_batch():\n    return torch.zeros(2, 4)\n"}),
    Idiom("torch_handed_on_to_functions_that_only_read_it", P5,
          "import functools as _ft8\nimport threading as _th8\n\n\n"
          "def _seed8(T):\n    T.manual_seed(0)\n\n\n"
          "def _flags8(T):\n    T.backends.cudnn.benchmark = False\n\n\n"
          "def _count8(cuda):\n    return cuda.device_count()\n\n\n"
          "class _Ops8:\n    def __init__(self, F):\n        self.F = F\n\n"
          "    def act(self, x):\n        return self.F.relu(x)\n\n\n"
          "_seeding8 = _th8.Thread(target=_seed8, args=(torch,))\n_seeding8.start()\n"
          "_seeding8.join()\n_counts8 = list(map(_count8, [torch.cuda]))\n"
          "_ft8.partial(_flags8, torch)()\n_Ops8(nn.functional).act(torch.zeros(2))\n"),
]
IDIOMS += ROUND_SEVEN

# A helper module's functions that set fields on what they are handed, called by the script
# with its own model and layers (and with torch for a flag written out in the helper).
ROUND_EIGHT = [
    Idiom("helper_module_setting_fields_on_the_scripts_layers", P5,
          "import init_utils8 as _iu8\nfrom init_utils8 import tag as _tag8\n\n"
          "_net8 = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))\n"
          "_net8.apply(_iu8.init_weights)\n_iu8.init_weights(_net8[0])\n"
          "_tag8(_net8[2], name='head')\n_iu8.configure(torch)\n"
          "_iu8.put(_net8, 'stage', 1)\n",
          notes=("helper_module",),
          extra_files={"practical5/init_utils8.py":
                       "import torch\nimport torch.nn as nn\n\n\n"
                       "def init_weights(m):\n    if isinstance(m, nn.Linear):\n"
                       "        nn.init.xavier_uniform_(m.weight)\n"
                       "        m.bias.data = torch.full_like(m.bias, 0.01)\n"
                       "        m.initialised = True\n\n\n"
                       "def tag(layer, name):\n    layer.name = name\n\n\n"
                       "def configure(T):\n    T.backends.cudnn.benchmark = False\n\n\n"
                       "def put(owner, name, value):\n    setattr(owner, name, value)\n"}),
]
IDIOMS += ROUND_EIGHT

# A red team's honest idioms that were held (adv21 A2): whether the script runs in Colab or a
# notebook, the script's folder through the frame handed to inspect.getfile, an excepthook for
# threads, a timer wrapped around the forward of a class of the student's own; and a file whose
# coding line declares Windows' code page, with accented comments (adv21 C1: the scan reads
# every file as the runner decodes it).
ROUND_NINE = [
    Idiom("colab_and_notebook_detected_through_sys_modules", P5,
          "import sys as _sys9\n\n"
          "IN_COLAB = 'google.colab' in _sys9.modules\n"
          "_IN_NOTEBOOK9 = 'ipykernel' in _sys9.modules or "
          "_sys9.modules.get('IPython') is not None\n"
          "if IN_COLAB:\n    print('Running on Google Colab: one GPU at most')\n"),
    Idiom("script_folder_through_inspect_currentframe", P5,
          "import inspect as _inspect9\nimport os as _os9\n\n"
          "_HERE9 = _os9.path.dirname(_os9.path.abspath("
          "_inspect9.getfile(_inspect9.currentframe())))\n\n\n"
          "def _results_path9(name):\n"
          "    here = _os9.path.dirname(_inspect9.getfile(_inspect9.currentframe()))\n"
          "    return _os9.path.join(here, name)\n\n\n"
          "_RESULTS9 = _results_path9('results.txt')\n"),
    Idiom("interactive_mode_detected_through___main__", P6,
          "import __main__\n\n"
          "_INTERACTIVE9 = not hasattr(__main__, '__file__')\n"
          "_SCRIPT9 = getattr(__main__, '__file__', 'interactive')\n"),
    Idiom("thread_excepthook_of_its_own", P5,
          "import threading as _threading9\n\n\n"
          "def _thread_failed9(args):\n"
          "    print('a worker thread failed:', args.exc_type.__name__, args.exc_value)\n\n\n"
          "_threading9.excepthook = _thread_failed9\n"),
    Idiom("forward_of_its_own_class_wrapped_with_a_timer", P5,
          "import functools as _functools9\n\n\n"
          "def _timed9(fn):\n    @_functools9.wraps(fn)\n"
          "    def inner(*args, **kwargs):\n        start = time.perf_counter()\n"
          "        out = fn(*args, **kwargs)\n"
          "        inner.seconds = time.perf_counter() - start\n        return out\n"
          "    return inner\n\n\n"
          "class TimedBlock(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
          "        self.fc = nn.Linear(4, 4)\n\n    def forward(self, x):\n"
          "        return self.fc(x)\n\n\n"
          "TimedBlock.forward = _timed9(TimedBlock.forward)\n"),
    Idiom("cp1252_coding_line_and_accented_comments", P4,
          "# Étape 1: réglages « par défaut » — vérifiés à la main\n"
          "_AUTEUR9 = 'Zoë Müller'  # accentué\n",
          header="# -*- coding: cp1252 -*-\n"
                 "# Practical 4 — parallélisme de modèle, commentaires en français: déjà vu\n",
          encoding="cp1252"),
]
IDIOMS += ROUND_NINE

ASSIGNMENT_OF = {P4: "practical4", P5: "practical5", P6: "practical6", HW3: "hw3"}
# Idioms that share an assignment are graded together; these submissions cover them all:
# label -> (the files its idioms are in, their group). Objects of the student's own are
# trusted only where no file can rebind another's names (grader/integrity/own_objects.py),
# which other idioms do (an archive, setattr): they are graded alone.
SUBMISSIONS = {"with_practical4_and_hw3": ((P4, HW3), ""), "with_practical5_and_6": ((P5, P6), ""),
               "with_hw3_objects_of_its_own": ((HW3,), OWN_OBJECTS)}


def idioms_of(label: str) -> list[Idiom]:
    files, group = SUBMISSIONS[label]
    return [idiom for idiom in IDIOMS if idiom.file in files and idiom.group == group]
