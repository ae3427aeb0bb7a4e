"""Is what the runtime installed still what runs? The closing check of every process.

The instrumentation lives in the student's process, so code there could replace what it
relies on: a patched torch function, a method of the trace, `builtins.getattr`, the JSON
encoder the seals are computed over. Replacing is found by identity, whatever route the code
took to do it (an alias passed through a function, `type(x).to = ...`, a decorator, a class
attribute, `setattr` with a computed name): right after the node is installed the guard
notes, for the objects below, which function, class or descriptor each name holds; when the
process ends it compares, and writes one sealed `closing_check` record naming what changed.
The trusted side reads a replaced name as tampering, and a process that exited normally
without this record as one that was ended around the instrumentation (grader/records/seal.py,
grader/vgpu/trace.py). `os._exit` runs the check too, so ending that way is no finding.

Watched: the runtime's own modules and classes (and their functions' code), every function the
node patched, `builtins`, `time`, `json`, torch's top-level functions, `torch.Tensor`,
`torch.nn.Module` and every class of `torch.nn` and `torch.optim`, `torch.cuda`,
`torch.autograd`, `torch.nn.functional`, torch's function-mode entry points; plus the node's
torch-function mode still on the mode stack and its module hooks still registered.
"""
from __future__ import annotations

import _signal
import atexit
import builtins
import functools
import os
import sys
import threading
import types

_MISSING = object()
_BEHAVIOUR = (types.FunctionType, types.BuiltinFunctionType, types.MethodType,
              types.MethodDescriptorType, types.WrapperDescriptorType,
              types.GetSetDescriptorType, types.MemberDescriptorType,
              types.ClassMethodDescriptorType, types.MethodWrapperType, types.ModuleType,
              property, classmethod, staticmethod, type)


def _behaviour(value) -> bool:
    # What decides how code runs (functions, classes, descriptors, modules), not the data
    # that changes as it runs (counters, caches, flags such as cudnn.benchmark).
    return isinstance(value, _BEHAVIOUR) or (callable(value) and not isinstance(value, (
        dict, list, set, tuple)))


def _watched() -> list[tuple[str, object]]:
    import importlib
    import json
    import json.decoder
    import json.encoder
    import time

    import torch
    module_of = importlib.import_module   # torch.optim deletes its `optimizer` attribute
    owners: list[tuple[str, object]] = [
        ("builtins", builtins), ("time", time), ("json", json), ("json.encoder", json.encoder),
        ("json.decoder", json.decoder), ("json.encoder.JSONEncoder", json.encoder.JSONEncoder),
        ("json.decoder.JSONDecoder", json.decoder.JSONDecoder),
        ("threading.Thread", threading.Thread), ("atexit", atexit), ("_signal", _signal),
        ("torch", torch), ("torch.Tensor", torch.Tensor),
        ("torch._C.TensorBase", torch._C.TensorBase), ("torch.cuda", torch.cuda),
        ("torch.autograd", torch.autograd),
        ("torch.nn.functional", module_of("torch.nn.functional")),
        ("torch.nn.modules.module", module_of("torch.nn.modules.module")),
        ("torch.optim.optimizer", module_of("torch.optim.optimizer")),
        ("torch.overrides", module_of("torch.overrides")),
        ("torch.autograd.Function", torch.autograd.Function),
    ]
    if hasattr(torch, "accelerator"):
        owners.append(("torch.accelerator", torch.accelerator))
    for package, prefix in ((torch.nn, "torch.nn"), (torch.optim, "torch.optim")):
        for name in dir(package):
            value = getattr(package, name, None)
            if isinstance(value, type):
                owners.append((f"{prefix}.{name}", value))
    for name, module in list(sys.modules.items()):
        if (name == "grader" or name.startswith("grader.")) and isinstance(module,
                                                                         types.ModuleType):
            owners.append((name, module))
            for attribute, value in list(vars(module).items()):
                if isinstance(value, type) and getattr(value, "__module__", None) == name:
                    owners.append((f"{name}.{attribute}", value))
    return owners


def _library_function(handler, libraries: tuple[str, ...]) -> bool:
    """Whether a signal handler is a function of torch's, the grader's or another library's."""
    function = getattr(handler, "func", handler)              # a functools.partial's
    code = getattr(getattr(function, "__func__", function), "__code__", None)
    return code is not None and code.co_filename.startswith(libraries)


def _signal_handlers(libraries: tuple[str, ...]) -> dict:
    """The handlers the submission installed past the node's signal.signal (through the C
    module `_signal`), per signal: a handler is called with the frame it interrupted, a way into
    whatever runs. (Handlers installed through signal.signal are the node's frameless wrappers:
    `frameless_signals`; torch's own, such as the DataLoader's SIGCHLD handler, and the grader's
    are not the submission's.)"""
    found = {}
    for number in range(1, _signal.NSIG):
        try:
            handler = _signal.getsignal(number)
        except (ValueError, OSError):
            continue
        if callable(handler) and not _library_function(handler, libraries):
            found[number] = handler
    return found


def frameless_signals(libraries: tuple[str, ...], real_signal, real_getsignal):
    """signal.signal and signal.getsignal as the submission gets them. A handler of its own
    (a function, a partial, a callable object) is installed wrapped, so that it is called with
    frame=None instead of the frame it interrupted, which could be the instrumentation's: the
    checkpoint-on-SIGTERM handler of honest training code works as before and sees nothing.
    getsignal, and signal's return value, give back the submission's own handler, so saving and
    restoring one works as before."""
    own_handler = {}              # the installed wrapper -> the submission's handler

    def signal(signalnum, handler):
        if callable(handler) and not _library_function(handler, libraries):
            students = handler

            def frameless(number, frame):
                return students(number, None)
            own_handler[frameless] = students
            handler = frameless
        previous = real_signal(signalnum, handler)
        return own_handler.get(previous, previous)

    def getsignal(signalnum):
        current = real_getsignal(signalnum)
        return own_handler.get(current, current)
    return signal, getsignal


def _torch_rewrap_test():
    """`rewrap(old, new, hooked_step)`: whether `new` is torch wrapping `old` later, as
    torch._dynamo does to `torch.manual_seed` when it is first imported, or an optimizer class
    to its `step` when it is first built: wrappers written in torch's own files, each holding
    the next (its `__wrapped__`, and what its closure calls) down to `old`. For an optimizer's
    `step` (`hooked_step`) one of them must be torch's profile-hook wrapper
    (`Optimizer.profile_hook_step`): it runs the optimizer step hooks the instrumentation
    observes steps through, which torch's other wrappers (`torch._disable_dynamo`) do not."""
    import torch
    from torch.optim.optimizer import Optimizer
    folder = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
    absolute = os.path.abspath
    profile_wrapper = Optimizer.profile_hook_step(len).__code__

    def wraps(outer, inner) -> bool:
        # the name it gives (`__wrapped__`, functools.wraps's) and what it calls (its closure)
        if getattr(outer, "__wrapped__", None) is not inner:
            return False
        code = getattr(outer, "__code__", None)
        if code is None or not absolute(code.co_filename).startswith(folder):
            return False
        for cell in getattr(outer, "__closure__", None) or ():
            try:
                if cell.cell_contents is inner:
                    return True
            except ValueError:        # an empty cell
                continue
        return False

    def torch_wrappers(function) -> list:
        """`function` and the functions it wraps, as long as each is torch's wrapper."""
        chain = [function]
        while len(chain) < 8 and wraps(chain[-1], getattr(chain[-1], "__wrapped__", None)):
            chain.append(chain[-1].__wrapped__)
        return chain

    def rewrap(old, new, hooked_step=False) -> bool:
        chain = torch_wrappers(new)
        if not any(function is old for function in chain[1:]):
            return False
        return not hooked_step or any(getattr(function, "__code__", None) is profile_wrapper
                                      for function in chain + torch_wrappers(old)[1:])
    return rewrap


def _optimizer_class(owner) -> bool:
    import torch
    return isinstance(owner, type) and issubclass(owner, torch.optim.Optimizer)


def _namespace(owner) -> dict:
    # A module's or class's namespace, or a module's globals() given as they are.
    return owner if type(owner) is dict else vars(owner)


# Watched names an honest submission replaces and the runtime never relies on: DDP code
# (torchvision's references, DeiT, MAE) replaces builtins.print so that only rank 0 prints; the
# runtime prints only messages for people, never a record.
_FREE_TO_REPLACE = frozenset({("builtins", "print")})


def _entries(owners) -> dict[tuple[int, str], tuple[str, object, object, object]]:
    """(id(owner), name) -> (label, owner, value, the code of a grader function)."""
    noted = {}
    for label, owner in owners:
        try:
            namespace = _namespace(owner)
        except TypeError:
            continue
        grader_owned = label == "grader" or label.startswith("grader.")
        for name, value in list(namespace.items()):
            if not _behaviour(value) or (label, name) in _FREE_TO_REPLACE:
                continue
            code = getattr(value, "__code__", None) if grader_owned else None
            noted[id(owner), name] = (f"{label}.{name}", owner, value, code)
    return noted


def make_check(patcher=None, extra_owners=()):
    """A function that lists what was replaced since it was made: names of the watched objects
    that hold another function, class or descriptor, or grader functions whose code changed.
    Patches the node installs later (heavy modules patched when first imported) are its own.
    Made before any student code runs; it keeps what it noted only in its closure."""
    owners = _watched() + list(extra_owners)
    noted = _entries(owners)
    # A class's own names: one added later hides what it inherited (`torch.Tensor.to = f`
    # puts a `to` in torch.Tensor's own namespace, in front of torch._C.TensorBase's), and the
    # classes it inherits from, as they were (where an added name's inherited one was noted).
    classes = [(label, owner, frozenset(_namespace(owner)), owner.__mro__[1:])
               for label, owner in owners if isinstance(owner, type)]
    # optimizer classes' `step`s: torch may wrap them only in its profile-hook wrapper
    steps = {(id(owner), "step") for _label, owner, _names, _bases in classes
             if _optimizer_class(owner)}
    ident = id
    namespace_of = _namespace
    torch_rewrap = _torch_rewrap_test()
    behaviour = _behaviour
    libraries, _stdlib = _folders()
    handlers = _signal_handlers(libraries)

    def replaced() -> list[str]:
        own = {}
        if patcher is not None:
            for owner, name, value in patcher.installed():
                own[ident(owner), name] = value
        found = []
        for key, (label, owner, value, code) in noted.items():
            now = namespace_of(owner).get(key[1], _MISSING)   # a dict or a mappingproxy
            expected = own.get(key, value)
            if now is not expected and not torch_rewrap(expected, now, key in steps):
                found.append(label)
            elif code is not None and getattr(now, "__code__", None) is not code:
                found.append(label + ".__code__")
        found += [f"the handler of signal {number} (the submission's)" for number, handler
                  in _signal_handlers(libraries).items() if handlers.get(number) is not handler]
        for label, owner, names, bases in classes:
            namespace = namespace_of(owner)
            for name in namespace.keys() - names:
                # (data such as copyreg's cached __slotnames__ is no behaviour)
                if (ident(owner), name) in own or not behaviour(namespace.get(name)):
                    continue
                if not torch_added(owner, name, namespace.get(name), bases, own):
                    found.append(f"{label}.{name}")
        return found

    def torch_added(owner, name, value, bases, own) -> bool:
        """Whether a name added to a watched class is torch wrapping what the class inherited
        (as noted): an optimizer class that inherits its `step` (AdamW from Adam) gets one of
        its own, torch's profile-hook wrapper, the first time it is built."""
        for base in bases:
            key = (ident(base), name)
            if key in noted:
                inherited = own.get(key, noted[key][2])
                return torch_rewrap(inherited, value, (ident(owner), name) in steps)
        return False
    return replaced


def _mode_entries(handle) -> list:
    """(mode, the method torch calls on it) for each of the node's modes, as armed: where the C
    path was built the mode's `__torch_function__` is its own attribute (grader/vgpu/mode.py)."""
    return [(mode, vars(mode).get("__torch_function__")) for mode in handle.modes]


def _mode_and_hooks_in_place(handle, entries=()) -> list[str]:
    found = []
    for mode, method in entries:
        if vars(mode).get("__torch_function__") is not method:
            found.append("the node's torch-function mode (its __torch_function__ replaced)")
            break
    try:
        from torch.overrides import _get_current_function_mode_stack
        stack = _get_current_function_mode_stack()
        for mode in handle.modes:
            if threading.current_thread() is threading.main_thread() and \
                    not any(m is mode for m in stack):
                found.append("the node's torch-function mode (popped off the mode stack)")
    except Exception:
        pass
    observer = getattr(handle, "observer", None)
    try:
        from torch.nn.modules import module as module_hooks
        for hook_handle in getattr(observer, "_handles", [])[:2]:
            if hook_handle.id not in module_hooks._global_forward_pre_hooks and \
                    hook_handle.id not in module_hooks._global_forward_hooks:
                found.append("the node's module hooks (removed)")
                break
    except Exception:
        pass
    if sys.gettrace() is not None or not _harmless_profiler(sys.getprofile()):
        found.append("sys.settrace/sys.setprofile (a tracing function was installed)")
    return found


def _harmless_profiler(profiler) -> bool:
    """None, or cProfile's profiler: C code that counts calls and hands no frame to Python."""
    if profiler is None:
        return True
    try:
        import _lsprof
    except ImportError:
        return False
    return isinstance(profiler, _lsprof.Profiler)


# Audit events (PEP 578) that walk or rewrite the interpreter. An audit hook cannot be removed
# once added, and it sees the operation whatever name the code reached it by.
_WALK_EVENTS = frozenset({
    "sys._getframe", "sys._current_frames", "sys._getframemodulename", "gc.get_objects",
    "gc.get_referrers", "gc.get_referents", "sys.settrace", "sys.setprofile",
    "sys.addaudithook", "marshal.loads", "marshal.load", "code.__new__", "function.__new__",
    "object.__getattr__", "object.__setattr__", "object.__delattr__",
    "cpython.PyInterpreterState_New", "cpython._PySys_ClearAuditHooks"})
# stdlib functions that walk frames on their caller's behalf: the caller is who walks.
_WALKERS = frozenset({"currentframe", "stack", "trace", "getouterframes", "getinnerframes",
                      "walk_stack", "getframeinfo"})
# stdlib modules that read frames or code objects for their own work (logging's caller,
# warnings' location, namedtuple's module, a traceback's lines). Any other stdlib module doing
# it runs a function the submission handed it (contextlib's callbacks, a Thread's target).
_STDLIB_FRAME_USERS = frozenset({
    "logging", "warnings", "collections", "typing", "enum", "traceback", "inspect",
    "linecache", "dis", "dataclasses", "abc", "pdb", "bdb", "pydoc", "doctest", "unittest",
    "tokenize", "ast", "site", "importlib"})
_PROC_PER_PROCESS = ("/proc/self", "/proc/thread-self")
# A class's labels (what a class factory or functools.wraps sets), and the modules whose
# classes no submission renames.
_CLASS_LABELS = frozenset({"__name__", "__qualname__", "__doc__"})
_LIBRARY_MODULES = ("torch", "grader")
# The one stdlib module that makes ctypes objects for its own work (multiprocessing.Value and
# Array over shared memory) and calls nothing the submission handed it while doing so.
_STDLIB_CTYPES_USERS = frozenset({f"multiprocessing{os.sep}sharedctypes.py"})


@functools.lru_cache(maxsize=1)   # asked three times as a run starts; the same each time
def _folders():
    """(library folders: site-packages and the grader; the standard library's folders)."""
    import site
    import sysconfig
    paths = sysconfig.get_paths()
    libraries = {paths.get("purelib"), paths.get("platlib"), *site.getsitepackages(),
                 os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}
    stdlib = {paths.get("stdlib"), paths.get("platstdlib")}
    norm = lambda found: tuple(sorted(os.path.abspath(p) + os.sep for p in found if p))  # noqa: E731
    return norm(libraries), norm(stdlib)


def _own_folder() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


_TORCH_FOLDER = os.sep + "torch" + os.sep


def _torch_frame(frame) -> bool:
    # torch.compile's bytecode rewriting makes code objects under the names of the files it
    # rewrites, the grader's patched functions included.
    return _TORCH_FOLDER in frame.f_code.co_filename


@functools.lru_cache(maxsize=256)
def _file_bytes(filename: str) -> bytes | None:
    try:
        with open(filename, "rb") as handle:
            return handle.read()
    except (OSError, ValueError):
        return None


def _is_its_file(source, filename: str) -> bool:
    """Whether `source` is the text of the file `filename` names: the import system compiling
    a module that has no cached bytecode."""
    if not isinstance(source, (str, bytes, bytearray, memoryview)):
        return False          # an AST: made or changed by code
    data = _file_bytes(filename)
    if data is None:
        return False
    if isinstance(source, str):
        return data.decode("utf-8", "surrogateescape") == source
    return data == bytes(source)


def _per_process_proc(path) -> bool:
    """Whether opening `path` opens /proc itself or a process's files under it, as the kernel
    resolves it: through symlinks (`/dev/fd/../mem` is /proc/<pid>/mem, and so is a link of
    the submission's own to it), `//`, `..`. (A path relative to a directory descriptor is
    resolved against the working folder: see README, Known limits.)"""
    if isinstance(path, int):
        return False
    if isinstance(path, bytes):
        path = path.decode("utf-8", "replace")
    try:
        path = os.path.realpath(str(path))
    except (OSError, ValueError):
        path = os.path.normpath(os.path.join(os.getcwd(), str(path)))
    path = "/" + path.lstrip("/")
    if path == "/proc":
        return True
    if not path.startswith("/proc/"):
        return False
    parts = path.split("/")
    if len(parts) == 5 and parts[3] == "fd" and not parts[4].isdigit():
        # What realpath leaves of a descriptor that is no file (`/dev/stdout` when stdout is a
        # pipe: /proc/<pid>/fd/pipe:[N]): no such name exists under fd/, nothing is read.
        return False
    head = parts[2]
    return head in ("self", "thread-self") or head.isdigit()


def watch_interpreter(trace):
    """Add the run's audit hook: what the student's own code does to walk or rewrite the
    interpreter (frames, gc's object lists, code objects, ctypes, tracing, audit hooks of its
    own) is written to the trace as a `tampering` record, whatever name it used; opening
    another process's or its own /proc files is refused as well (a process's memory holds the
    seal key). Only the code that calls is looked at: torch, the grader and the standard
    library use these on their own behalf all the time. Returns `profile_guard`, which makes
    the sys.setprofile the submission gets (see there)."""
    libraries, stdlib = _folders()
    own_folder = _own_folder()
    getframe = sys._getframe
    write = trace.emit
    busy = threading.local()
    reported: set = set()

    def whose_file(name: str) -> str:
        """'student', 'library' or 'stdlib' for a file of code."""
        if name.startswith(libraries):
            return "library"
        if name.startswith(stdlib) or name.startswith("<frozen "):
            return "stdlib"
        return "student"

    def whose(frame):
        return whose_file(frame.f_code.co_filename)

    def stdlib_path(frame) -> str:
        """A stdlib frame's file relative to the standard library's folder."""
        name = frame.f_code.co_filename
        for folder in stdlib:
            if name.startswith(folder):
                return name[len(folder):]
        return name.strip("<>").split()[-1]                  # <frozen importlib._bootstrap>

    def stdlib_module(frame) -> str:
        return stdlib_path(frame).split(os.sep)[0].split(".")[0]

    def ctypes_caller(frame):
        """Who asked ctypes' own Python code (CDLL's constructor, a function looked up by
        name) for what raised the event: the first frame outside the ctypes package."""
        while frame is not None and whose(frame) == "stdlib" and stdlib_module(frame) == "ctypes":
            frame = frame.f_back
        return frame

    def submission_frame(frame):
        """The innermost frame of the submission's code at or above `frame` (where what a
        library did for it was asked for); `frame` itself where there is none."""
        caller = frame
        while caller is not None and whose(caller) != "student":
            caller = caller.f_back
        return caller or frame

    def _parses_only(frame) -> bool:
        return frame.f_code.co_name == "parse" and whose(frame) == "stdlib" and \
            stdlib_path(frame) == "ast.py"

    def site_of(frame) -> str:
        return f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"

    def own_function(target) -> bool:
        """Whether `target` is a function of the grader's own code."""
        code = getattr(target, "__code__", None)
        return isinstance(getattr(code, "co_filename", None), str) and \
            code.co_filename.startswith(own_folder)

    def harmless_attribute(event, args) -> bool:
        """Attribute events of honest code: a class of the submission's own renamed or
        documented (a class factory, functools.wraps on a class), or the defaults of a function
        of its own read. (Code objects, frames, __bases__ and anything of torch's or the
        grader's stay findings.)"""
        if len(args) < 2:
            return False
        target, name = args[0], args[1]
        if event == "object.__setattr__" and isinstance(target, type):
            if str(getattr(target, "__module__", "")).startswith(_LIBRARY_MODULES):
                return False
            return name in _CLASS_LABELS or (
                name == "__module__" and len(args) > 2 and isinstance(args[2], str)
                and not args[2].startswith(_LIBRARY_MODULES))
        if event == "object.__getattr__" and name in ("__defaults__", "__kwdefaults__"):
            code = getattr(target, "__code__", None)
            return code is not None and not whose_file(code.co_filename) == "library"
        return False

    def record(what: str, frame) -> None:
        key = (what, frame.f_code.co_filename, frame.f_lineno)
        if key in reported:
            return
        reported.add(key)
        write("tampering", what=what, site=site_of(frame))

    def hook(event, args):
        if getattr(busy, "on", False):
            return
        if event != "open" and event != "compile" and event not in _WALK_EVENTS and \
                not event.startswith("ctypes."):
            return
        if event == "sys.setprofile":
            # Judged by the runtime's sys.setprofile (`profile_guard`), which sees what is
            # installed: this event is also cProfile's C profiler starting, which hands no
            # frame to Python code (the Python function sys.setprofile would install does).
            return
        busy.on = True
        try:
            frame = getframe(1)
            if event == "open":
                if args and _per_process_proc(args[0]):
                    caller = frame
                    while caller is not None and whose(caller) == "stdlib":
                        caller = caller.f_back
                    if caller is not None and whose(caller) == "student":
                        record(f"opened {str(args[0])[:60]}", caller)
                        raise PermissionError(f"{args[0]}: the grader does not let a "
                                              "submission read its process's /proc files")
                return
            if event == "compile" or event == "code.__new__":
                # Code made under the name of a library's file passes for the library's own
                # (its walks unreported), and under a grader file's name it asks the grader's
                # writers to seal: made by whatever frame, a template engine's included, which
                # compiles the source and the file name it is handed. Honest code makes such
                # code through the import system compiling the file itself, ast.parse (an AST
                # runs nothing) and torch.compile rewriting what it compiles.
                filename = str(args[1]) if len(args) > 1 else ""
                if event == "compile":
                    honest = not filename.startswith(libraries) or \
                        _is_its_file(args[0], filename) or _parses_only(frame)
                else:
                    honest = not filename.startswith(own_folder) or _torch_frame(frame)
                if not honest:
                    what = "compiled code" if event == "compile" else "made a code object"
                    record(f"{what} under the name of {os.path.basename(filename)}",
                           submission_frame(frame))
                if event == "compile":
                    return
            if event == "object.__getattr__" and len(args) > 1 and \
                    args[1] in ("__defaults__", "__kwdefaults__") and own_function(args[0]):
                # The grader's functions keep what they check with (the digest's key and its
                # checks, the writer-call judge's cache) in their defaults. inspect.signature
                # reads them for whoever asks, and the stdlib's read was no finding: a red team
                # sealed a made-up transfer with the run's key that way. Refused for the
                # submission, asking itself or through the stdlib; torch's and the grader's own
                # reads go on.
                asker = frame
                while asker is not None and whose(asker) == "stdlib":
                    asker = asker.f_back
                if asker is not None and whose(asker) == "student":
                    record(f"read the defaults of the grader's {getattr(args[0], '__name__', '')}",
                           asker)
                    raise PermissionError("the grader does not let a submission read its "
                                          "functions' defaults")
            if event.startswith("object.") and harmless_attribute(event, args):
                return
            if event.startswith("ctypes."):
                # A library's ctypes is its own business: pynvml and torch load NVML through
                # it on a real GPU. The submission's own use, or one laundered through a
                # stdlib module that runs what it is handed (a Thread's target), is reported
                # where the submission's code (or that module) asked for it.
                caller = ctypes_caller(frame)
                if caller is not None and (whose(caller) == "library" or (
                        whose(caller) == "stdlib" and stdlib_path(caller) in _STDLIB_CTYPES_USERS)):
                    return
                record(event, caller or frame)
                return
            if whose(frame) == "stdlib":
                # Walkers call walkers (inspect.stack -> getouterframes -> getframeinfo): the
                # first caller that is not one is who walks.
                if frame.f_code.co_name in _WALKERS:
                    own_frame = frame.f_code.co_name == "currentframe"
                    while frame.f_back is not None and whose(frame) == "stdlib" and \
                            frame.f_code.co_name in _WALKERS:
                        frame = frame.f_back
                    if own_frame and event == "sys._getframe" and args and \
                            args[0] is frame and whose(frame) == "student":
                        # inspect.currentframe() handing the submission's code its own frame
                        # (`inspect.getfile(inspect.currentframe())`, the script's folder):
                        # walking on from it (`f_back`, `f_globals`) is what the scan holds,
                        # as it holds currentframe() anywhere but handed to getfile.
                        return
                elif stdlib_module(frame) in _STDLIB_FRAME_USERS:
                    return
            if whose(frame) == "library":
                return
            detail = f" {args[1]}" if event.startswith("object.") and len(args) > 1 else ""
            record(f"{event}{detail}", frame)
            if event == "sys.addaudithook":
                raise RuntimeError("the grader does not let a submission add audit hooks")
        finally:
            busy.on = False

    sys.addaudithook(hook)

    def profile_guard(real_setprofile):
        """sys.setprofile as the submission gets it: a profile function of Python code is
        handed every frame of the process (the instrumentation's too), so installing one from
        anywhere but a library is reported; cProfile's profiler does not come through here."""
        def setprofile(function):
            frame = getframe(1)
            if function is not None and not _harmless_profiler(function) and \
                    whose(frame) != "library":
                record("sys.setprofile", frame)
            return real_setprofile(function)
        return setprofile
    return profile_guard


def start(trace):
    """Register the closing check at exit before anything else of the runtime (atexit runs
    last what was registered first), so it is the process's last record. Returns `arm`, to be
    called once the node is installed: it notes what is in place."""
    from grader.records.seal import in_sealed_run
    profile_guard = None
    if in_sealed_run():   # never in a process of the grader's own (tests, the CLI)
        profile_guard = watch_interpreter(trace)
    state = {"check": None, "handle": None, "closed_in": None, "modes": ()}
    write = trace.emit
    close = trace.close
    getpid = os.getpid

    def closing() -> None:
        if state["check"] is None or state["closed_in"] == getpid():
            return
        state["closed_in"] = getpid()
        try:
            replaced = state["check"]() + _mode_and_hooks_in_place(state["handle"],
                                                                    state["modes"])
        except Exception as error:   # the check itself broken: that is a finding too
            replaced = [f"the closing check failed ({type(error).__name__})"]
        write("closing_check", replaced=replaced, pid=getpid())
        close()

    atexit.register(closing)

    def arm(handle) -> None:
        state["handle"] = handle
        state["check"] = make_check(handle.patcher)
        state["modes"] = _mode_entries(handle)
        real_exit = os._exit

        def _exit(status):
            # Ending the process here skips atexit: close the trace as a normal exit would.
            closing()
            real_exit(status)
        handle.patcher.set(os, "_exit", _exit)
        # os._exit is watched from now on as the node's own patch.
        if profile_guard is not None:   # a sealed run: the submission's own process
            handle.patcher.set(sys, "setprofile", profile_guard(sys.setprofile))
            import signal
            libraries, _stdlib = _folders()
            frameless, getsignal = frameless_signals(libraries, signal.signal, signal.getsignal)
            handle.patcher.set(signal, "signal", frameless)
            handle.patcher.set(signal, "getsignal", getsignal)
    return arm
