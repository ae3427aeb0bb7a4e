"""The names the scan's rules look for: what walks the interpreter, PyTorch's private machinery,
the grader's own objects, what the runtime relies on. Name-based on purpose: a rule that looks
at an attribute's or a string's name holds wherever the object came from."""
from __future__ import annotations

# Attributes that walk the interpreter: reading any of them, on anything, is tampering.
INTERPRETER_ATTRIBUTES = frozenset({
    "__closure__", "__globals__", "__code__", "__defaults__", "__kwdefaults__",
    "__subclasses__", "__mro__", "__bases__", "__base__", "__builtins__", "__self__",
    "__func__", "__wrapped__", "__getattribute__", "__setattr__", "__delattr__",
    "__loader__", "__spec__", "__import__", "cell_contents", "f_back", "f_globals",
    "f_locals", "f_builtins", "f_code", "f_trace", "tb_frame", "tb_next", "gi_frame",
    "gi_code", "cr_frame", "ag_frame", "co_consts", "_getframe", "_current_frames",
    "settrace", "setprofile", "gettrace", "meta_path", "path_hooks", "path_importer_cache",
    "addaudithook", "_getframemodulename", "call_tracing", "get_objects", "get_referrers",
    "get_referents", "currentframe", "getouterframes", "getinnerframes", "getframeinfo",
    "getclosurevars", "getmembers", "getmembers_static", "walk_stack", "walk_tb",
    "settrace_all_threads", "setprofile_all_threads", "_bootstrap_inner"})
# `x.__setattr__(...)` on super() is how a class of one's own sets its attributes.
ALLOWED_ON_SUPER = frozenset({"__setattr__", "__delattr__", "__getattribute__"})
# sys.modules is reached as an attribute named `modules` that is not called (model.modules()
# is a method call).
UNCALLED_MODULES = "modules"
# PyTorch's private machinery: its function modes, dispatch, and hook tables.
TORCH_INTERNAL_NAMES = frozenset({
    "__torch_function__", "__torch_dispatch__", "as_subclass", "_make_subclass",
    "_make_wrapper_subclass", "TorchFunctionMode", "TorchDispatchMode", "DisableTorchFunction",
    "DisableTorchFunctionSubclass", "_disable_torch_function_subclass", "_pop_mode",
    "_push_mode", "_get_current_function_mode", "_get_current_dispatch_mode",
    "_pop_torch_function_stack", "_push_on_torch_function_stack",
    "_get_current_function_mode_stack", "_get_function_stack_at", "_len_torch_function_stack",
    "_forward_pre_hooks", "_forward_hooks", "_backward_hooks", "_backward_pre_hooks",
    "_forward_hooks_with_kwargs", "_forward_pre_hooks_with_kwargs", "hooks_dict_ref",
    "_call_impl", "_wrapped_call_impl", "_C", "_DisableTorchDispatch",
    # autograd's engine called directly: a backward the instrumentation never sees begin (a
    # red team's whole-batch loss sent through Variable._execution_engine.run_backward, adv30)
    "_execution_engine", "_engine_run_backward"})
TORCH_INTERNAL_PREFIXES = ("_global_",)
# torch's private modules students meet in error messages and torch.compile recipes.
TORCH_PRIVATE_SETTINGS = ("torch._dynamo", "torch._inductor", "torch._logging")
# The private parts of torch that are its dispatch machinery (function and dispatch modes, the
# C bindings, operator registries, fake and wrapper tensors): code using them sees or rewrites
# every operation the instrumentation observes. torch's other private parts are what public
# recipes use (the CUDA memory snapshot, DTensor and FSDP2 before they were public, pytree):
# a note.
TORCH_DISPATCH_MODULES = (
    "torch._C", "torch.overrides", "torch.utils._python_dispatch", "torch.utils._device",
    "torch._subclasses", "torch._ops", "torch._dispatch", "torch._prims", "torch._prims_common",
    "torch._decomp", "torch._refs", "torch._higher_order_ops", "torch._library",
    "torch._functorch", "torch._guards", "torch._tensor", "torch._jit_internal",
    "torch._utils_internal", "torch.nn.modules.module._")
# Views of raw memory: numpy's array interfaces over an address (and ctypes reached through
# numpy). Honest homework never builds one; with one, code reads or writes any byte of its own
# process, the instrumentation's state included.
RAW_MEMORY_NAMES = frozenset({"__array_interface__", "__array_struct__",
                              "__cuda_array_interface__"})
RAW_MEMORY_FUNCTIONS = ("numpy.lib.stride_tricks.as_strided", "numpy.ctypeslib",
                        "numpy.lib._stride_tricks_impl.as_strided")
# The grader's own objects, as attributes or as strings.
GRADER_IDENTIFIERS = frozenset({
    "get_trace", "set_trace_object", "get_node", "set_node", "sealer_for", "_seal",
    "_streams", "_sealer", "label_of", "listeners", "take_key", "hand_over", "make_check",
    "hook_callers", "trace_emit_code", "TorchReadings", "keep_for_recompute",
    "activate_from_environment", "merge_rank_files", "verify_lines", "sealer_factory",
    "_fastpath", "FastPath", "c_module"})
# The grader's settings are PDL_ and one of these words (PDL_SEAL_FD, PDL_VGPU_TRACE, ...);
# "PDL" alone is the course's name (PDL_HW3_results.json), no setting.
GRADER_SETTING_FAMILIES = ("SANDBOX", "SEAL", "SUBMISSION", "VGPU")
# The files the grader writes in a run's working folder, named so that no file of a student's
# own is one of them (a student's own trace.jsonl log had been held as the grader's file, and
# its lines counted as forged).
# (The HW3 probe names its weights folder after its records' file, importing nothing of ours.)
TRACE_FILE, PROBE_FILE, WEIGHTS_FOLDER = ".pdl-trace.jsonl", ".pdl-probe.jsonl", ".pdl-probe-weights"
GRADER_FILES = (TRACE_FILE, PROBE_FILE, WEIGHTS_FOLDER, "hw3_probe", "hw3_launch",
                "pdl-hw3-probe")
# Functions the instrumentation replaces or relies on: assigning one, on anything but
# `self`/`cls`, replaces it. (`cuda`/`cpu`/`device` are left out: `args.cuda = ...` is the
# argparse idiom of PyTorch's own examples.)
PATCHED_NAMES = frozenset({
    "to", "copy_", "backward", "device_count", "is_available", "current_device", "set_device",
    "synchronize", "memory_allocated", "max_memory_allocated", "memory_reserved",
    "max_memory_reserved", "reset_peak_memory_stats", "perf_counter", "perf_counter_ns",
    "monotonic", "process_time", "register_forward_pre_hook", "register_forward_hook",
    "register_module_forward_pre_hook", "register_module_forward_hook",
    "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook", "__call__",
    "allclose", "_exit", "get_device", "is_cuda", "is_cpu", "__class__", "__init_subclass__",
    "forward", "parameters", "named_parameters", "state_dict", "listeners", "_file", "_seal",
    "_streams", "memory_stats", "mem_get_info", "empty_cache", "set_stream", "current_stream",
    "default_stream", "get_device_properties", "get_device_name", "elapsed_time"})
# Modules whose attributes, replaced, change what the grader's runtime does or sees.
PROTECTED_ROOTS = frozenset({
    "torch", "builtins", "__builtin__", "sys", "os", "posix", "time", "json", "threading",
    "_thread", "gc", "inspect", "atexit", "signal", "importlib", "types", "functools",
    "operator", "io", "hmac", "hashlib", "pickle", "copy", "copyreg", "traceback", "grader",
    "__main__", "math", "contextlib", "weakref", "abc", "statistics", "numpy"})
# Honest settings on those modules.
# (threading.excepthook is sys.excepthook's for threads: nothing of the runtime calls or relies
# on either; a traceback's frames are seen at run time, `tb_frame` being audited.)
ALLOWED_SETTINGS = ("torch.backends.", "sys.argv", "sys.path", "sys.tracebacklimit",
                     "sys.dont_write_bytecode", "sys.excepthook", "threading.excepthook",
                     "numpy.set_printoptions")
# (builtins.print too: DDP code replaces it so that only rank 0 prints; the runtime prints only
# messages for people, never a record.)
OUTPUT_STREAMS = ("sys.stdout", "sys.stderr", "sys.stdin", "sys.__stdout__", "sys.__stderr__",
                  "builtins.print", "__builtin__.print")

MODULE_CATEGORIES = {
    "grader": "grader", "__main__": "grader",
    "ctypes": "dynamic_code", "_ctypes": "dynamic_code", "cffi": "dynamic_code",
    "marshal": "dynamic_code", "runpy": "dynamic_code", "imp": "dynamic_code",
    "importlib.util": "dynamic_code", "importlib.machinery": "dynamic_code",
    "importlib.abc": "dynamic_code", "importlib._bootstrap": "dynamic_code",
    "importlib._bootstrap_external": "dynamic_code", "zipimport": "dynamic_code",
    "code": "dynamic_code", "codeop": "dynamic_code", "pkgutil": "dynamic_code",
    "posix": "introspection", "nt": "introspection", "_posixsubprocess": "introspection",
    "sys.monitoring": "introspection", "_testcapi": "introspection", "_xxsubinterpreters":
    "introspection", "torch.overrides": "torch_internals",
    "subprocess": "processes", "pty": "processes", "multiprocessing": "processes",
    "concurrent.futures.process": "processes", "asyncio.subprocess": "processes",
    "pickle": "serialization", "_pickle": "serialization", "cPickle": "serialization",
    "dill": "serialization", "cloudpickle": "serialization", "shelve": "serialization",
    "joblib": "serialization",
    "hmac": "digests", "hashlib": "digests", "_hashlib": "digests", "_sha2": "digests",
    "_sha256": "digests", "_md5": "digests",
    "atexit": "exit_hooks", "signal": "exit_hooks",
    # signal's C module: a handler installed through it is given the frame it interrupts
    "_signal": "introspection",
}
STAR_SENSITIVE = {"os": ("environment", "processes"), "posix": ("introspection",),
                   "nt": ("introspection",), "sys": ("introspection",),
                   "builtins": ("introspection",), "gc": ("introspection",),
                   "inspect": ("introspection",), "threading": ("introspection",),
                   "subprocess": ("processes",), "pickle": ("serialization",)}
DYNAMIC_CALLS = frozenset({"exec", "eval", "compile", "__import__"})
# Modules whose attributes looked up by a computed name could be anything private.
COMPUTED_LOOKUP_TAMPERING = frozenset({"sys", "builtins", "gc", "inspect", "grader",
                                        "__main__", "posix", "ctypes"})
PROCESS_CALLS = frozenset({
    "fork", "forkpty", "execv", "execve", "execl", "execle", "execlp", "execlpe", "execvp",
    "execvpe", "spawnl", "spawnle", "spawnlp", "spawnlpe", "spawnv", "spawnve", "spawnvp",
    "spawnvpe", "posix_spawn", "posix_spawnp", "create_subprocess_shell",
    "create_subprocess_exec"})
OS_PROCESS_CALLS = frozenset({"system", "popen"})
ENVIRON = frozenset({"environ", "environb"})
GETENV = frozenset({"getenv", "getenvb", "putenv", "unsetenv"})
ENV_METHODS_WITH_KEY = frozenset({"get", "setdefault", "pop", "__getitem__", "__contains__",
                                   "__setitem__", "__delitem__"})
# Other names that say what a line does (notes): digests and pickles reached as attributes
# (`torch.hub.hashlib`, `torch.serialization.pickle`).
NOTE_ATTRIBUTES = {"hashlib": "digests", "hmac": "digests", "pickle": "serialization",
                    "_pickle": "serialization"}
OUTPUT_CALLS = frozenset({"redirect_stdout", "redirect_stderr", "dup2"})
# signal's ways to install a handler or deliver a signal: a handler is called with the frame
# it interrupts (the instrumentation's, as likely as not).
SIGNAL_HANDLING = frozenset({"signal", "setitimer", "alarm", "raise_signal", "pthread_kill",
                             "set_wakeup_fd", "sigwait"})
# Methods that only show or serialise what they are handed (`log.info("%s", type(net))`,
# `json.dump(vars(args), f)`): what is handed to them is read, never kept or written.
TELLING_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "critical",
                             "exception", "log", "write", "format", "dump", "dumps", "pprint"})
