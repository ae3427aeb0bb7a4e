"""Read a submission's files (never run them) for what could deceive the grader, and for what is
merely unusual.

Two kinds of findings (`CATEGORIES` gives each category its kind):
- *tampering* withholds the assignment's automatic points until a person looks
  (grader/scoring/score.py): reaching the grader's objects, settings or records (its modules,
  `PDL_*` settings, the trace and probe files, `__main__`), walking the interpreter (frames,
  closures, `__globals__`/`__code__`, `__subclasses__`/`__mro__`, `gc.get_objects`,
  `sys.modules`, tracing hooks), PyTorch's private dispatch machinery and hook tables,
  replacing functions or classes of torch, builtins or the standard library, code the grader
  cannot read (exec of computed text, ctypes, marshal, compiled files, pickles that call
  functions when loaded), `/proc`;
- *notes* go to the instructor only, never held: reading environment variables, starting
  programs (nvidia-smi), pickling results, `getattr` with a computed name on torch,
  redirecting stdout, exit and signal handlers, digests, archives, helper modules, a file
  that is not valid Python (it cannot run either).

Rules are name-based wherever they can be, so they do not depend on following aliases: an
attribute named `f_back` or `__globals__` is reported on whatever object it is read from, and
so is a string that spells such a name (or a `PDL_` setting, a `/proc` path, the grader's
modules), also when it is built from constants (`"f_" + "back"`, f-strings, `"".join([...])`,
`chr(...)`, `bytes([...]).decode()`, base64/hex/rot13 of a constant, a name bound only to
constants, a loop over constants). Module-qualified rules (an assignment replacing
`torch.cuda.device_count`) follow import aliases. What no static reading can promise (names
computed from data at run time) is covered at run time by the runtime's identity checks
(grader/vgpu/guard.py); README's "Known limits" says what remains.
"""
from __future__ import annotations

import ast
import base64
import binascii
import bz2
import codecs
import io
import lzma
import os
import pickletools
import sys
import tarfile
import zipfile
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path

TAMPERING, NOTE = "tampering", "note"

# category -> (kind, how a finding of it reads)
CATEGORIES = {
    "grader": (TAMPERING, "reaches into the grader"),
    "grader_settings": (TAMPERING, "names the grader's settings"),
    "introspection": (TAMPERING, "inspects or rewrites the running interpreter"),
    "torch_internals": (TAMPERING, "uses PyTorch's private dispatch machinery"),
    "patching": (TAMPERING, "replaces a function or class of torch, builtins or the standard "
                            "library"),
    "dynamic_code": (TAMPERING, "runs code the grader cannot read"),
    "proc_files": (TAMPERING, "reads the process's /proc files"),
    "compiled": (TAMPERING, "contains compiled code without its source"),
    "shadowing": (TAMPERING, "replaces a module the grader's runtime uses"),
    "unreadable": (TAMPERING, "could not be checked"),
    "environment": (NOTE, "reads environment variables"),
    "processes": (NOTE, "starts other programs or processes"),
    "serialization": (NOTE, "pickles data"),
    "dynamic_attribute": (NOTE, "looks an attribute up by a computed name"),
    "output": (NOTE, "redirects its output"),
    "exit_hooks": (NOTE, "registers exit or signal handlers"),
    "digests": (NOTE, "computes digests"),
    "library_settings": (NOTE, "changes a library's attribute"),
    "archive": (NOTE, "ships an archive"),
    "helper_module": (NOTE, "ships a module of its own"),
    "unparsable": (NOTE, "is not valid Python"),
}

MAX_FILES = 5000  # as many as a batch unpacks (batch.inputs.UnpackLimits)
MAX_FILE_BYTES = 2 * 2**20
MAX_ARCHIVE_MEMBERS = 2000
MAX_MEMBER_BYTES = 8 * 2**20
MAX_FOLDED = 1 << 16          # longest constant the folder builds (a decoded blob)
ASSIGNMENT_FOLDERS = ("practical4", "practical5", "practical6", "practical10", "hw3")

# -- names ------------------------------------------------------------------------------------
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
_ALLOWED_ON_SUPER = frozenset({"__setattr__", "__delattr__", "__getattribute__"})
# sys.modules is reached as an attribute named `modules` that is not called (model.modules()
# is a method call).
_UNCALLED_MODULES = "modules"
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
    "_call_impl", "_wrapped_call_impl", "_C", "_DisableTorchDispatch"})
_TORCH_INTERNAL_PREFIXES = ("_global_",)
# torch's private modules students meet in error messages and torch.compile recipes.
_TORCH_PRIVATE_SETTINGS = ("torch._dynamo", "torch._inductor", "torch._logging")
# The grader's own objects, as attributes or as strings.
GRADER_IDENTIFIERS = frozenset({
    "get_trace", "set_trace_object", "get_node", "set_node", "sealer_for", "_seal",
    "_streams", "_sealer", "label_of", "listeners", "take_key", "hand_over", "make_check",
    "hook_callers", "trace_emit_code", "TorchReadings", "keep_for_recompute",
    "activate_from_environment", "merge_rank_files", "verify_lines", "sealer_factory"})
GRADER_FILES = ("trace.jsonl", "probe.jsonl", "hw3-weights", "hw3_probe", "hw3_launch",
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
    "forward", "listeners", "_file", "_seal", "_streams"})
# Modules whose attributes, replaced, change what the grader's runtime does or sees.
PROTECTED_ROOTS = frozenset({
    "torch", "builtins", "__builtin__", "sys", "os", "posix", "time", "json", "threading",
    "_thread", "gc", "inspect", "atexit", "signal", "importlib", "types", "functools",
    "operator", "io", "hmac", "hashlib", "pickle", "copy", "copyreg", "traceback", "grader",
    "__main__", "math", "contextlib", "weakref", "abc", "statistics", "numpy"})
# Honest settings on those modules.
_ALLOWED_SETTINGS = ("torch.backends.", "sys.argv", "sys.path", "sys.tracebacklimit",
                     "sys.dont_write_bytecode", "sys.excepthook", "numpy.set_printoptions")
_OUTPUT_STREAMS = ("sys.stdout", "sys.stderr", "sys.stdin", "sys.__stdout__", "sys.__stderr__")

_MODULE_CATEGORIES = {
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
}
_STAR_SENSITIVE = {"os": ("environment", "processes"), "posix": ("introspection",),
                   "nt": ("introspection",), "sys": ("introspection",),
                   "builtins": ("introspection",), "gc": ("introspection",),
                   "inspect": ("introspection",), "threading": ("introspection",),
                   "subprocess": ("processes",), "pickle": ("serialization",)}
_DYNAMIC_CALLS = frozenset({"exec", "eval", "compile", "__import__"})
# Modules whose attributes looked up by a computed name could be anything private.
_COMPUTED_LOOKUP_TAMPERING = frozenset({"sys", "builtins", "gc", "inspect", "grader",
                                        "__main__", "posix", "ctypes"})
_PROCESS_CALLS = frozenset({
    "fork", "forkpty", "execv", "execve", "execl", "execle", "execlp", "execlpe", "execvp",
    "execvpe", "spawnl", "spawnle", "spawnlp", "spawnlpe", "spawnv", "spawnve", "spawnvp",
    "spawnvpe", "posix_spawn", "posix_spawnp", "create_subprocess_shell",
    "create_subprocess_exec"})
_OS_PROCESS_CALLS = frozenset({"system", "popen"})
_ENVIRON = frozenset({"environ", "environb"})
_GETENV = frozenset({"getenv", "getenvb", "putenv", "unsetenv"})
_ENV_METHODS_WITH_KEY = frozenset({"get", "setdefault", "pop", "__getitem__", "__contains__",
                                   "__setitem__", "__delitem__"})
# Other names that say what a line does (notes): digests and pickles reached as attributes
# (`torch.hub.hashlib`, `torch.serialization.pickle`).
_NOTE_ATTRIBUTES = {"hashlib": "digests", "hmac": "digests", "pickle": "serialization",
                    "_pickle": "serialization"}
_OUTPUT_CALLS = frozenset({"redirect_stdout", "redirect_stderr", "dup2"})
_SHADOW_TAMPERING = frozenset({"grader", "torch", "sitecustomize", "usercustomize", "pytest",
                               "_pytest", "conftest"})
_SHADOW_HARMLESS = frozenset({"test", "this", "antigravity", "turtle", "turtledemo", "idlelib",
                              "tkinter", "curses", "lib2to3", "xdrlib", "nntplib", "telnetlib"})
_COMPILED_SUFFIXES = (".pyc", ".pyo", ".so", ".pyd", ".dylib")
_ZIP_SUFFIXES = (".zip", ".egg", ".whl", ".pyz", ".jar")
_TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
_OTHER_ARCHIVES = (".7z", ".rar", ".gz", ".bz2", ".xz")
_PICKLE_SUFFIXES = (".pkl", ".pickle", ".pt", ".pth", ".ckpt", ".bin", ".joblib", ".npy")
# What a pickle may name and still only rebuild data when loaded (torch checkpoints, numpy).
_PICKLE_SAFE_MODULES = ("torch", "collections", "numpy", "_codecs", "copyreg", "datetime",
                        "__main__", "decimal", "fractions", "pathlib")
_PICKLE_SAFE_BUILTINS = frozenset({"set", "frozenset", "slice", "complex", "bytearray",
                                   "range", "list", "dict", "tuple", "float", "int", "bool",
                                   "str", "bytes", "object"})


@dataclass(frozen=True)
class Finding:
    file: str          # relative to the submission
    line: int
    category: str
    what: str          # what the code does, for the student and the instructor
    code: str          # the line of source, shortened

    @property
    def kind(self) -> str:
        """TAMPERING (held for review) or NOTE (for the instructor only)."""
        return CATEGORIES[self.category][0]

    @property
    def assignment(self) -> str | None:
        """The assignment whose folder holds the file; None: a file outside them all."""
        top = Path(self.file).parts[0] if Path(self.file).parts else ""
        return top if top in ASSIGNMENT_FOLDERS else None

    def describe(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        code = f" (`{self.code}`)" if self.code else ""
        return f"{where} {CATEGORIES[self.category][1]}: {self.what}{code}"

    def to_dict(self) -> dict:
        return {**asdict(self), "kind": self.kind, "assignment": self.assignment,
                "text": self.describe()}

    @classmethod
    def from_dict(cls, data: dict) -> "Finding":
        """Back from to_dict (the derived `kind`, `assignment` and `text` are made again)."""
        if data.get("category") not in CATEGORIES:
            raise ValueError(f"unknown finding category {data.get('category')!r}")
        return cls(str(data["file"]), int(data["line"]), str(data["category"]),
                   str(data["what"]), str(data["code"]))


def scan_submission(submission: Path) -> list[Finding]:
    """Every finding in the submission's files, in file and line order."""
    submission = Path(submission)
    findings: list[Finding] = []
    files = list(_files(submission, findings))
    # The submission's own modules: setting their variables is not patching a library.
    own = {p.stem for p in files if p.suffix == ".py"} | {
        p.parent.name for p in files if p.name == "__init__.py"}
    for path in files:
        relative = path.relative_to(submission).as_posix()
        if path.suffix == ".py":
            source = _linked_source(path, submission)
            if source is not None:
                findings += scan_source(source, relative, own)
        elif path.is_symlink():
            continue
        elif path.name.lower().endswith(_ZIP_SUFFIXES + _TAR_SUFFIXES):
            findings += _scan_archive(path, relative, own)
        elif path.suffix.lower() in _PICKLE_SUFFIXES:
            findings += _scan_pickle_file(path, relative)
    return sorted(set(findings), key=lambda f: (f.file, f.line, f.category, f.what))


def findings_for(findings: list[Finding], assignment: str) -> list[Finding]:
    """The findings that concern `assignment`: in its folder, or outside every assignment's."""
    return [f for f in findings if f.assignment in (assignment, None)]


def split_by_kind(findings: list[Finding]) -> tuple[list[Finding], list[Finding]]:
    """(tampering, notes)."""
    return ([f for f in findings if f.kind == TAMPERING], [f for f in findings if f.kind == NOTE])


def bytecode_caches(submission: Path) -> list[Path]:
    """The submission's __pycache__ folders (never followed through symlinks)."""
    found = []
    for root, dirs, _files_here in os.walk(submission, followlinks=False):
        if "__pycache__" in dirs:
            found.append(Path(root) / "__pycache__")
            dirs.remove("__pycache__")
        if len(found) > MAX_FILES:
            break
    return found


# -- files ------------------------------------------------------------------------------------
def _template_modules() -> frozenset[str]:
    """The .py files the course's template has (not helper modules of a student's own)."""
    template = Path(__file__).resolve().parents[2] / "student_template"
    return frozenset(p.relative_to(template).as_posix() for p in template.rglob("*.py")) \
        if template.is_dir() else frozenset()


def _files(submission: Path, findings: list[Finding]):
    """The submission's files (symlinks included, never followed), with findings about their
    names."""
    count = 0
    expected = _template_modules()
    for root, dirs, names in os.walk(submission, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in dirs:
            path = Path(root) / name
            findings += _check_file_name(path, path.relative_to(submission).as_posix(),
                                         expected, package=True)
        for name in sorted(names):
            path = Path(root) / name
            relative = path.relative_to(submission).as_posix()
            if not path.is_symlink() and not path.is_file():
                continue  # a FIFO or a device: nothing to read, nothing Python imports
            findings += _check_file_name(path, relative, expected)
            count += 1
            if count > MAX_FILES:
                findings.append(Finding(relative, 0, "unreadable",
                                        f"more than {MAX_FILES} files: the rest were not read", ""))
                return
            yield path


def _check_file_name(path: Path, relative: str, expected=frozenset(),
                     package: bool = False) -> list[Finding]:
    name, lower = path.stem, path.name.lower()
    if not package and lower.endswith(_COMPILED_SUFFIXES):
        return [Finding(relative, 0, "compiled", f"a {path.suffix} file is run as it is, and "
                        "the grader can read only source: submit the .py file instead", "")]
    if not package and lower.endswith(_ZIP_SUFFIXES + _TAR_SUFFIXES + _OTHER_ARCHIVES):
        return [Finding(relative, 0, "archive", "an archive in the submission (its Python "
                        "files, if any, are read like the others)", "")]
    if not (package or path.suffix == ".py"):
        return []
    name = path.name if package else name
    if name in _SHADOW_TAMPERING:
        return [Finding(relative, 0, "shadowing", f"a module named '{name}' replaces the "
                        f"real '{name}' for every import beside it: rename it", "")]
    if name in sys.stdlib_module_names and name not in _SHADOW_HARMLESS:
        return [Finding(relative, 0, "helper_module", f"a module named '{name}' shadows the "
                        f"standard library's '{name}' for the code beside it", "")]
    if not package and expected and relative not in expected and path.name != "__init__.py":
        return [Finding(relative, 0, "helper_module", "a module the template does not have", "")]
    return []


def _linked_source(path: Path, submission: Path) -> Path | None:
    """The file a .py name stands for: itself, or what its symlink points to inside the
    submission (`helper.py -> notes.txt` runs notes.txt); None for links elsewhere (the
    sandbox shows nothing outside the submission to them)."""
    if not path.is_symlink():
        return path
    try:
        target = path.resolve(strict=True)
        target.relative_to(submission.resolve())
    except (OSError, ValueError, RuntimeError):
        return None
    return target if target.is_file() else None


def scan_source(path: Path, relative: str, own_modules: set[str] = frozenset()) -> list[Finding]:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return [Finding(relative, 0, "unreadable",
                            f"larger than {MAX_FILE_BYTES // 2**20} MiB of Python", "")]
        source = path.read_bytes()
    except OSError as error:
        return [Finding(relative, 0, "unreadable", f"cannot be read ({error.strerror})", "")]
    return scan_text(source, relative, own_modules)


def scan_text(source: bytes, relative: str, own_modules=frozenset()) -> list[Finding]:
    try:
        tree = ast.parse(source, filename=relative)
    except (SyntaxError, ValueError) as error:
        # It cannot run either: the run itself reports the error.
        return [Finding(relative, getattr(error, "lineno", 0) or 0, "unparsable",
                        "Python cannot read it, so it cannot run either", "")]
    lines = source.decode("utf-8", errors="replace").splitlines()
    visitor = _Visitor(relative, lines, own_modules)
    visitor.scan(tree)
    return visitor.findings


def _scan_archive(path: Path, relative: str, own) -> list[Finding]:
    """The Python, compiled and pickled members of a zip or tar archive, read like files."""
    findings = []
    try:
        members = list(_archive_members(path))
    except (OSError, zipfile.BadZipFile, tarfile.TarError, EOFError, ValueError):
        return findings  # not an archive after all: nothing Python could import from it
    for name, read in members[:MAX_ARCHIVE_MEMBERS]:
        inner = f"{relative}/{name}"
        lower = name.lower()
        if lower.endswith(_COMPILED_SUFFIXES):
            findings.append(Finding(inner, 0, "compiled", "compiled code inside an archive, "
                                    "which the grader cannot read", ""))
        elif lower.endswith(".py"):
            data = read()
            if data is None:
                findings.append(Finding(inner, 0, "unreadable", "a Python file too large to "
                                        "read inside an archive", ""))
            else:
                findings += scan_text(data, inner, own)
        elif lower.endswith(_PICKLE_SUFFIXES) or lower.endswith("data.pkl"):
            data = read()
            if data is not None:
                findings += _scan_pickle_bytes(data, inner)
    if len(members) > MAX_ARCHIVE_MEMBERS:
        findings.append(Finding(relative, 0, "unreadable", f"more than {MAX_ARCHIVE_MEMBERS} "
                                "files in one archive: the rest were not read", ""))
    return findings


def _archive_members(path: Path):
    def limited(open_member, size):
        def read():
            if size > MAX_MEMBER_BYTES:
                return None
            with open_member() as handle:
                return handle.read(MAX_MEMBER_BYTES + 1)[:MAX_MEMBER_BYTES]
        return read
    if zipfile.is_zipfile(path):
        archive = zipfile.ZipFile(path)
        for info in archive.infolist():
            if not info.is_dir():
                yield info.filename, limited(lambda i=info: archive.open(i), info.file_size)
    elif tarfile.is_tarfile(path):
        archive = tarfile.open(path)
        for info in archive.getmembers():
            if info.isfile():
                yield info.name, limited(lambda i=info: archive.extractfile(i), info.size)


def _scan_pickle_file(path: Path, relative: str) -> list[Finding]:
    try:
        if path.stat().st_size > MAX_MEMBER_BYTES:
            return []
        data = path.read_bytes()
    except OSError:
        return []
    if zipfile.is_zipfile(path):   # a torch checkpoint: its data.pkl is the pickle
        return _scan_archive(path, relative, frozenset())
    return _scan_pickle_bytes(data, relative)


def _pickle_globals(data: bytes) -> list[str] | None:
    """The `module.name`s a pickle calls or builds when loaded; None if it is no pickle."""
    found, strings = [], []
    try:
        for opcode, argument, _position in pickletools.genops(io.BytesIO(data)):
            if opcode.name in ("GLOBAL", "INST"):
                found.append(str(argument).replace(" ", "."))
            elif opcode.name == "STACK_GLOBAL":
                found.append(".".join(strings[-2:]) if len(strings) >= 2 else "?")
            if isinstance(argument, str):
                strings.append(argument)
    except Exception:
        return None if not found else found
    return found


def _dangerous_globals(names: list[str]) -> list[str]:
    bad = []
    for name in names:
        module, _, attribute = name.rpartition(".")
        if module in ("builtins", "__builtin__") and attribute in _PICKLE_SAFE_BUILTINS:
            continue
        if any(module == safe or module.startswith(safe + ".") for safe in _PICKLE_SAFE_MODULES):
            continue
        bad.append(name)
    return bad


def _scan_pickle_bytes(data: bytes, relative: str, line: int = 0, code: str = "") -> list[Finding]:
    names = _pickle_globals(data)
    bad = _dangerous_globals(names or [])
    if bad:
        return [Finding(relative, line, "dynamic_code", "a pickle that calls "
                        + ", ".join(sorted(set(bad))[:5]) + " when it is loaded", code)]
    return []


# -- constants --------------------------------------------------------------------------------
class _Unknown:
    pass


UNKNOWN = _Unknown()
_HOLE = "\x00"   # an unknown part of a partly constant string


def _decoders():
    def rot13(text):
        return codecs.decode(text, "rot13") if isinstance(text, str) else UNKNOWN
    return {
        "b64decode": base64.b64decode, "urlsafe_b64decode": base64.urlsafe_b64decode,
        "b32decode": base64.b32decode, "b16decode": base64.b16decode,
        "a85decode": base64.a85decode, "b85decode": base64.b85decode,
        "unhexlify": binascii.unhexlify, "a2b_hex": binascii.a2b_hex,
        "a2b_base64": binascii.a2b_base64, "fromhex": bytes.fromhex,
        "decompress": lambda data: _bounded_decompress(data), "rot13": rot13,
    }


def _bounded_decompress(data):
    if not isinstance(data, bytes):
        return UNKNOWN
    for module in (zlib, bz2, lzma):
        try:
            if module is zlib:
                d = zlib.decompressobj(47)
                out = d.decompress(data, MAX_FOLDED)
            else:
                out = module.decompress(data)[:MAX_FOLDED]
            return out
        except Exception:
            continue
    return UNKNOWN


_DECODERS = _decoders()
_STR_METHODS = frozenset({"lower", "upper", "strip", "lstrip", "rstrip", "replace", "format",
                          "decode", "encode", "join", "title", "capitalize", "swapcase",
                          "removeprefix", "removesuffix", "casefold", "zfill", "center"})


class _Folder:
    """Values of expressions made only of constants, as a set of the values they can take
    (a name bound several times, a loop over a tuple), or UNKNOWN."""

    LIMIT = 64

    def __init__(self, tree: ast.AST):
        self.bindings: dict[str, list[ast.AST]] = {}
        self.loops: dict[str, list[ast.AST]] = {}
        self.unfoldable: set[str] = set()
        self.memo: dict[int, object] = {}
        self.active: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    self._bind(target, node.value)
            elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                self._bind(node.target, node.value)
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                self._bind_loop(node.target, node.iter)
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                self.unfoldable.add(node.target.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                args = node.args
                for arg in args.posonlyargs + args.args + args.kwonlyargs + \
                        [a for a in (args.vararg, args.kwarg) if a]:
                    self.unfoldable.add(arg.arg)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    self.unfoldable.add((alias.asname or alias.name).split(".")[0])
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                for item in node.items:
                    if item.optional_vars is not None:
                        self._unfoldable_targets(item.optional_vars)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                self.unfoldable.add(node.name)

    def _unfoldable_targets(self, target):
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                self.unfoldable.add(node.id)

    def _bind(self, target, value):
        if isinstance(target, ast.Name):
            self.bindings.setdefault(target.id, []).append(value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
                for t, v in zip(target.elts, value.elts):
                    self._bind(t, v)
            else:
                self._unfoldable_targets(target)

    def _bind_loop(self, target, iterable):
        if isinstance(target, ast.Name):
            self.loops.setdefault(target.id, []).append(iterable)
        else:
            self._unfoldable_targets(target)

    # -- evaluation -------------------------------------------------------------------------
    def values(self, node) -> frozenset | _Unknown:
        key = id(node)
        if key in self.memo:
            return self.memo[key]
        if key in self.active:
            return UNKNOWN
        self.active.add(key)
        try:
            result = self._values(node)
        except Exception:
            result = UNKNOWN
        finally:
            self.active.discard(key)
        if isinstance(result, frozenset) and (len(result) > self.LIMIT or any(
                isinstance(v, (str, bytes)) and len(v) > MAX_FOLDED for v in result)):
            result = UNKNOWN
        self.memo[key] = result
        return result

    def strings(self, node) -> list[str]:
        """The text values the node can take (bytes as latin-1), known ones only."""
        found = self.values(node)
        if isinstance(found, _Unknown):
            return []
        return [v if isinstance(v, str) else v.decode("latin-1") for v in found
                if isinstance(v, (str, bytes))]

    def _one(self, node):
        found = self.values(node)
        if isinstance(found, frozenset) and len(found) == 1:
            return next(iter(found))
        return UNKNOWN

    def _values(self, node):
        if isinstance(node, ast.Constant):
            return frozenset({node.value}) if isinstance(node.value, (str, bytes, int, float)) \
                and not isinstance(node.value, bool) else UNKNOWN
        if isinstance(node, ast.Name):
            return self._name(node.id)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd, ast.Invert)):
            operand = self.values(node.operand)
            if isinstance(operand, _Unknown) or not all(isinstance(v, int) for v in operand):
                return UNKNOWN
            apply = {ast.USub: lambda v: -v, ast.UAdd: lambda v: v, ast.Invert: lambda v: ~v}
            return frozenset(apply[type(node.op)](v) for v in operand)
        if isinstance(node, (ast.Tuple, ast.List)):
            items = [self._one(e) for e in node.elts]
            if any(i is UNKNOWN for i in items):
                return UNKNOWN
            return frozenset({tuple(items)})
        if isinstance(node, ast.JoinedStr):
            return self._joined(node)
        if isinstance(node, ast.BinOp):
            return self._binop(node)
        if isinstance(node, ast.Subscript):
            return self._subscript(node)
        if isinstance(node, ast.Call):
            return self._call(node)
        return UNKNOWN

    def _name(self, name):
        if name in self.unfoldable:
            return UNKNOWN
        found: set = set()
        for value in self.bindings.get(name, []):
            values = self.values(value)
            if isinstance(values, _Unknown):
                return UNKNOWN
            found |= values
        for iterable in self.loops.get(name, []):
            values = self.values(iterable)
            if isinstance(values, _Unknown):
                return UNKNOWN
            for value in values:
                if isinstance(value, tuple):
                    found |= set(value)
                elif isinstance(value, str):
                    found |= set(value)
                else:
                    return UNKNOWN
        return frozenset(found) if found else UNKNOWN

    def _joined(self, node: ast.JoinedStr):
        results = {""}
        for part in node.values:
            if isinstance(part, ast.Constant):
                options = {str(part.value)}
            elif isinstance(part, ast.FormattedValue) and part.format_spec is None:
                values = self.values(part.value)
                if isinstance(values, _Unknown):
                    return UNKNOWN
                options = {str(v) if part.conversion in (-1, 115) else repr(v) for v in values}
            else:
                return UNKNOWN
            results = {r + o for r in results for o in options}
            if len(results) > self.LIMIT:
                return UNKNOWN
        return frozenset(results)

    def _binop(self, node: ast.BinOp):
        left, right = self.values(node.left), self.values(node.right)
        if isinstance(left, _Unknown) or isinstance(right, _Unknown):
            return UNKNOWN
        out = set()
        for a in left:
            for b in right:
                if isinstance(node.op, ast.Add) and type(a) is type(b) and isinstance(a, (str, bytes, int, float)):
                    out.add(a + b)
                elif isinstance(node.op, ast.Mult) and isinstance(a, (str, bytes)) and isinstance(b, int) and 0 <= b <= 64:
                    out.add(a * b)
                elif isinstance(node.op, ast.Mult) and isinstance(b, (str, bytes)) and isinstance(a, int) and 0 <= a <= 64:
                    out.add(b * a)
                elif isinstance(node.op, ast.Mod) and isinstance(a, str):
                    out.add(a % (b if isinstance(b, tuple) else (b,)))
                elif isinstance(node.op, ast.Div) and isinstance(a, str) and isinstance(b, str):
                    out.add(a.rstrip("/") + "/" + b)   # pathlib's Path / name
                elif isinstance(a, int) and isinstance(b, int) and isinstance(
                        node.op, (ast.Sub, ast.BitXor, ast.BitOr, ast.BitAnd, ast.LShift, ast.RShift, ast.FloorDiv)) \
                        and abs(a) < 2**32 and abs(b) < 64:
                    out.add({ast.Sub: a - b, ast.BitXor: a ^ b, ast.BitOr: a | b,
                             ast.BitAnd: a & b, ast.LShift: a << b, ast.RShift: a >> b,
                             ast.FloorDiv: a // b if b else 0}[type(node.op)])
                else:
                    return UNKNOWN
        return frozenset(out)

    def _subscript(self, node: ast.Subscript):
        base = self.values(node.value)
        if isinstance(base, _Unknown):
            return UNKNOWN
        index = node.slice
        out = set()
        for value in base:
            if not isinstance(value, (str, bytes, tuple)):
                return UNKNOWN
            if isinstance(index, ast.Slice):
                parts = [None if p is None else self._one(p) for p in (index.lower, index.upper, index.step)]
                if any(p is UNKNOWN for p in parts):
                    return UNKNOWN
                out.add(value[slice(*parts)])
            else:
                position = self._one(index)
                if not isinstance(position, int):
                    return UNKNOWN
                out.add(value[position])
        return frozenset(out)

    def _call(self, node: ast.Call):
        function = node.func
        args = [self.values(a) for a in node.args]
        if any(isinstance(a, ast.Starred) for a in node.args) or any(isinstance(a, _Unknown) for a in args):
            return UNKNOWN
        name = function.id if isinstance(function, ast.Name) else \
            function.attr if isinstance(function, ast.Attribute) else None
        singles = [next(iter(a)) if len(a) == 1 else UNKNOWN for a in args]
        if name in ("chr",) and singles and isinstance(singles[0], int) and 0 <= singles[0] < 0x110000:
            return frozenset({chr(singles[0])})
        if name in ("str",) and singles and singles[0] is not UNKNOWN:
            return frozenset({str(singles[0])})
        if name in ("bytes", "bytearray") and singles and isinstance(singles[0], tuple) and \
                all(isinstance(i, int) and 0 <= i < 256 for i in singles[0]):
            return frozenset({bytes(singles[0])})
        if name in ("join",) and isinstance(function, ast.Attribute) and len(singles) == 1:
            separators = self.values(function.value)
            items = self._iterable(node.args[0])
            if isinstance(separators, _Unknown) or items is None:
                return UNKNOWN
            return frozenset(s.join(items) for s in separators if isinstance(s, str)
                             and all(isinstance(i, str) for i in items))
        if name in ("join",) and isinstance(function, ast.Attribute) and \
                isinstance(function.value, ast.Attribute) and function.value.attr == "path":
            if all(isinstance(s, str) for s in singles):
                return frozenset({os.path.join(*singles)})   # os.path.join of constants
            return UNKNOWN
        if name in ("Path", "PurePath", "PosixPath") and all(isinstance(s, str) for s in singles):
            return frozenset({os.path.join(*singles)}) if singles else UNKNOWN
        if name in _DECODERS and singles and singles[0] is not UNKNOWN and \
                not (name == "decode" and isinstance(function, ast.Attribute)):
            decoded = _DECODERS[name](singles[0])
            return UNKNOWN if decoded is UNKNOWN else frozenset({decoded})
        if name == "decode" and isinstance(function, ast.Attribute) and node.args and \
                singles and isinstance(singles[0], str) and "rot" in singles[0].replace("_", ""):
            base = self._one(function.value)   # codecs.decode(x, "rot13") is handled below
            if isinstance(base, (str, bytes)):
                return UNKNOWN
        if name == "decode" and isinstance(function, ast.Attribute) and \
                isinstance(function.value, ast.Name) and function.value.id == "codecs" and \
                len(singles) == 2 and isinstance(singles[1], str):
            encoding = singles[1].lower().replace("-", "_")
            if encoding in ("rot13", "rot_13") and isinstance(singles[0], str):
                return frozenset({codecs.decode(singles[0], "rot13")})
            if encoding in ("hex", "base64", "hex_codec", "base64_codec", "zlib", "bz2") and \
                    isinstance(singles[0], bytes):
                return frozenset({codecs.decode(singles[0], encoding)})
            return UNKNOWN
        if isinstance(function, ast.Attribute) and name in _STR_METHODS:
            bases = self.values(function.value)
            if isinstance(bases, _Unknown):
                return UNKNOWN
            out = set()
            for base in bases:
                if not isinstance(base, (str, bytes)):
                    return UNKNOWN
                method = getattr(base, name, None)
                if method is None or any(s is UNKNOWN for s in singles):
                    return UNKNOWN
                out.add(method(*singles))
            return frozenset(out)
        return UNKNOWN

    def _iterable(self, node):
        if isinstance(node, (ast.List, ast.Tuple)):
            items = [self._one(e) for e in node.elts]
            return None if any(i is UNKNOWN for i in items) else items
        if isinstance(node, (ast.GeneratorExp, ast.ListComp)) and len(node.generators) == 1:
            return None
        value = self._one(node)
        if isinstance(value, tuple):
            return list(value)
        if isinstance(value, str):
            return list(value)
        return None


def _skeleton(node) -> str | None:
    """A partly constant string with its unknown parts as holes (f"/proc/{pid}/environ")."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(p.value if isinstance(p, ast.Constant) else _HOLE for p in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod, ast.Div)):
        left = _skeleton(node.left)
        right = _skeleton(node.right) if not isinstance(node.op, ast.Mod) else _HOLE
        if left is None and right is None:
            return None
        separator = "/" if isinstance(node.op, ast.Div) else ""
        return (left if left is not None else _HOLE) + separator + (
            right if right is not None else _HOLE)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
            node.func.attr == "format":
        return _skeleton(node.func.value)
    if isinstance(node, ast.Call) and (
            (isinstance(node.func, ast.Attribute) and node.func.attr == "join" and
             isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "path") or
            (isinstance(node.func, ast.Name) and node.func.id in ("Path", "PurePath"))):
        parts = [_skeleton(a) for a in node.args]
        if all(p is None for p in parts):
            return None
        return "/".join(p if p is not None else _HOLE for p in parts)
    return None


def _proc_path(text: str) -> bool:
    normal = text.replace("\\", "/")
    while "//" in normal:
        normal = normal.replace("//", "/")
    normal = normal.replace("/./", "/")
    return normal.startswith(("/proc/", "proc/self", "proc/" + _HOLE)) or normal == "/proc" \
        or "/proc/self" in normal or "/proc/" + _HOLE in normal or normal.startswith("/proc" + _HOLE)


# -- the visitor ------------------------------------------------------------------------------
def _dotted(node: ast.AST) -> str | None:
    """`a.b.c` for an attribute chain on a name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _is_self(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id in ("self", "cls")


def _is_super_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
        node.func.id == "super"


def _class_level(node: ast.AST) -> bool:
    """An expression that stands for a class of an object (`type(x)`, `x.__class__`,
    `T.__mro__[0]`, `T.__bases__[0]`): assigning its attributes patches the class."""
    while isinstance(node, (ast.Subscript, ast.Attribute, ast.Call)):
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name) and node.func.id == "type" and len(node.args) == 1:
                return True
            node = node.func
        elif isinstance(node, ast.Attribute):
            if node.attr in ("__class__", "__mro__", "__bases__", "__base__"):
                return True
            node = node.value
        else:
            node = node.value
    return False


class _Visitor(ast.NodeVisitor):
    def __init__(self, relative: str, lines: list[str], own_modules=frozenset(),
                 line_offset: int | None = None):
        self.relative = relative
        self.lines = lines
        self.own_modules = set(own_modules)
        self.findings: list[Finding] = []
        self.seen: set[tuple[int, str]] = set()
        self.modules: dict[str, str] = {}   # local name -> module (or module.attribute) it is
        self.called: set[int] = set()       # expressions in the called position of a call
        self.skip_strings: set[int] = set()  # constants judged where they are used
        self.line_offset = line_offset      # code from exec("..."): its findings on that line
        self.defined: set[str] = set()      # names the file defines itself (def/class)
        self.judged_env: set[int] = set()   # os.environ nodes already judged as keyed uses

    def scan(self, tree: ast.AST) -> None:
        self.folder = _Folder(tree)
        self.learn(tree)
        self.visit(tree)

    def learn(self, tree: ast.AST) -> None:
        """Every import and definition of the file, wherever it is: a function may be written
        above the import it uses."""
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    head = alias.name.split(".")[0]
                    self.modules[alias.asname or head] = alias.name if alias.asname else head
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                for alias in node.names:
                    if alias.name != "*":
                        self.modules[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.defined.add(node.name)
            elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and \
                    node.left.id == "__name__":
                self.skip_strings |= {id(c) for c in node.comparators}

    # -- recording ----------------------------------------------------------------------------
    def found(self, node: ast.AST, category: str, what: str) -> None:
        line = self.line_offset if self.line_offset is not None else getattr(node, "lineno", 0)
        code = self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""
        if len(code) > 100:
            code = code[:97] + "..."
        if (line, category) in self.seen:
            return  # one finding of a kind per line is enough to look at it
        self.seen.add((line, category))
        self.findings.append(Finding(self.relative, line, category, what, code))

    def resolve(self, node: ast.AST) -> str | None:
        """The full dotted name behind an expression, through import aliases (`nn.Linear` ->
        `torch.nn.Linear`) and getattr with a constant name; None when it does not start at an
        imported module."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id == "getattr" and len(node.args) >= 2:
            names = self.folder.strings(node.args[1])
            base = self.resolve(node.args[0])
            return f"{base}.{names[0]}" if base and len(names) == 1 else None
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Call):
            base = self.resolve(node.value)
            return f"{base}.{node.attr}" if base else None
        dotted = _dotted(node)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        if head not in self.modules:
            return None
        return self.modules[head] + ("." + rest if rest else "")

    # -- imports ------------------------------------------------------------------------------
    def imported(self, node: ast.AST, module: str) -> None:
        for prefix, category in _MODULE_CATEGORIES.items():
            if module == prefix or module.startswith(prefix + "."):
                self.found(node, category, f"imports {module}")
                return
        parts = module.split(".")
        if parts[0] == "torch" and any(p.startswith("_") for p in parts[1:]):
            if module.startswith(_TORCH_PRIVATE_SETTINGS):
                self.found(node, "library_settings", f"imports torch's private {module}")
            else:
                self.found(node, "torch_internals", f"imports {module}")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.imported(node, alias.name)
            if alias.asname:
                self.modules[alias.asname] = alias.name
            else:
                head = alias.name.split(".")[0]
                self.modules[head] = head
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level:
            self.generic_visit(node)
            return  # the submission's own modules: scanned as files
        if any(alias.name == "*" for alias in node.names):
            for category in _STAR_SENSITIVE.get(module, ()):
                self.found(node, category, f"imports every name of {module}")
        self.imported(node, module)
        for alias in node.names:
            full = f"{module}.{alias.name}"
            self.imported(node, full)
            self.attribute_named(node, alias.name, base=None, full=full, load=True)
            self.modules[alias.asname or alias.name] = full
        self.generic_visit(node)

    # -- names, attributes, strings ---------------------------------------------------------
    def visit_Name(self, node: ast.Name) -> None:
        if self.is_environ(node) and id(node) not in self.judged_env and \
                isinstance(node.ctx, ast.Load):
            self.found(node, "environment", "uses the environment as a whole")
        if node.id == "__builtins__":
            self.found(node, "introspection", "uses __builtins__")
        elif node.id in _DYNAMIC_CALLS and isinstance(node.ctx, ast.Load) and \
                id(node) not in self.called and node.id not in self.modules and \
                node.id not in self.defined:
            self.found(node, "dynamic_code", f"passes {node.id} around")
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self.attribute_named(node, node.attr, base=node.value, full=self.resolve(node),
                             load=isinstance(node.ctx, ast.Load))
        self.generic_visit(node)

    def attribute_named(self, node, name: str, *, base, full: str | None, load: bool,
                        called: bool | None = None) -> None:
        """The rules on an attribute `name` read from `base` (None: imported by name), by its
        name alone, then by the module it resolves to (`full`)."""
        if called is None:
            called = id(node) in self.called
        on_self = base is not None and _is_self(base)
        if name in INTERPRETER_ATTRIBUTES and not (
                name in _ALLOWED_ON_SUPER and base is not None and
                (_is_super_call(base) or on_self)):
            self.found(node, "introspection", f"reads {name}")
        if name == _UNCALLED_MODULES and not called and base is not None and not on_self:
            self.found(node, "introspection", "reads sys.modules (the loaded modules)")
        if (name in TORCH_INTERNAL_NAMES or name.startswith(_TORCH_INTERNAL_PREFIXES)) and \
                not on_self:
            self.found(node, "torch_internals", f"uses {name}")
        if name in GRADER_IDENTIFIERS and not on_self:
            self.found(node, "grader", f"uses {name}, a name of the grader's own objects")
        if name in _NOTE_ATTRIBUTES and base is not None and not on_self:
            self.found(node, _NOTE_ATTRIBUTES[name], f"uses {name}")
        if name == "marshal" and base is not None and not on_self:
            self.found(node, "dynamic_code", "uses marshal")
        if base is not None and self.is_environ(node) and id(node) not in self.judged_env:
            self.found(node, "environment", "uses the environment as a whole")
        if name in _PROCESS_CALLS and not on_self:
            self.found(node, "processes", f"uses {name}")
        if name in _OUTPUT_CALLS:
            self.found(node, "output", f"uses {name}")
        if name == "__dict__" and base is not None and (
                _class_level(base) or (self.resolve(base) or "").split(".")[0]
                in PROTECTED_ROOTS | {"torch"}):
            self.found(node, "introspection", "reads the namespace of a module or class "
                       "(__dict__)")
        if full is not None:
            self.module_attribute(node, full)

    def module_attribute(self, node, full: str) -> None:
        parts = full.split(".")
        root, last = parts[0], parts[-1]
        if root == "sys" and len(parts) > 1 and parts[1] in ("monitoring", "modules"):
            self.found(node, "introspection", f"uses sys.{parts[1]}")
        elif root == "torch" and any(p.startswith("_") and not p.startswith("__")
                                     for p in parts[1:]):
            if full.startswith(_TORCH_PRIVATE_SETTINGS):
                self.found(node, "library_settings", f"uses torch's private {full}")
            else:
                self.found(node, "torch_internals", f"uses {full}")
        elif root in ("os", "posix") and last in _OS_PROCESS_CALLS and len(parts) == 2:
            self.found(node, "processes", f"uses {root}.{last}")
        elif root == "inspect" and last in ("stack", "trace") and len(parts) == 2:
            self.found(node, "introspection", f"uses inspect.{last} (the frames of the stack)")
        elif root == "types" and last in ("CodeType", "FunctionType", "CellType"):
            self.found(node, "dynamic_code", f"builds code with types.{last}")
        elif root == "grader" or root == "__main__":
            self.found(node, "grader", f"uses {full}")

    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant):
            return  # a docstring or a bare string: it does nothing (reading __doc__ is computed)
        self.generic_visit(node)

    def check_strings(self, node: ast.AST) -> None:
        """What a (folded) string spells: a grader setting, name or file, a /proc path, a name
        that walks the interpreter."""
        if id(node) in self.skip_strings:
            return
        texts = self.folder.strings(node)
        skeleton = _skeleton(node)
        if skeleton is not None:
            texts = texts + [skeleton]
        for text in texts:
            if "PDL_" in text:
                self.found(node, "grader_settings", f"names the grader's setting "
                           f"{text.replace(_HOLE, '…')[:40]!r}")
            if text.startswith(("/", "proc")) and _proc_path(text):
                self.found(node, "proc_files", f"opens {text.replace(_HOLE, '…')[:40]!r}")
            if text in INTERPRETER_ATTRIBUTES:
                self.found(node, "introspection", f"names {text}")
            if text in TORCH_INTERNAL_NAMES or text.startswith(_TORCH_INTERNAL_PREFIXES) and \
                    len(text) > 8:
                self.found(node, "torch_internals", f"names {text}")
            if text == "grader" or text.startswith("grader.") or text in GRADER_IDENTIFIERS \
                    or text == "__main__":
                self.found(node, "grader", f"names the grader's {text[:40]!r}")
            if any(name in text for name in GRADER_FILES):
                self.found(node, "grader", f"names the grader's file {text[:40]!r}")

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, (str, bytes)):
            self.check_strings(node)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        self.check_strings(node)
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        self.check_strings(node)
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        self.check_strings(node)
        if self.is_environ(node.value):
            self.env_key(node, node.value, node.slice)
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        for operator, right in zip(node.ops, node.comparators):
            if isinstance(operator, (ast.In, ast.NotIn)) and self.is_environ(right):
                self.env_key(node, right, node.left)
        self.generic_visit(node)

    # -- the environment: a key written in the code is plain; anything else is a note ------------
    def is_environ(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Attribute):
            return node.attr in _ENVIRON and not _is_self(node.value)
        if isinstance(node, ast.Name):
            return self.modules.get(node.id) in ("os.environ", "os.environb")
        return False

    def env_key(self, node: ast.AST, environ: ast.AST | None, key: ast.AST | None) -> None:
        if environ is not None:
            self.judged_env.add(id(environ))
        if key is None or not self.folder.strings(key):
            self.found(node, "environment", "reads an environment variable by a computed name")

    # -- calls and assignments --------------------------------------------------------------
    def visit_Call(self, node: ast.Call) -> None:
        function = node.func
        self.called.add(id(function))
        self.check_strings(node)
        name = function.id if isinstance(function, ast.Name) else None
        full = self.resolve(function)
        if name in _DYNAMIC_CALLS and name not in self.modules and name not in self.defined \
                or full in ("builtins.exec", "builtins.eval", "builtins.compile",
                            "builtins.__import__"):
            self.dynamic_call(node, name or full.split(".")[-1])
        if full in ("importlib.import_module", "importlib.__import__"):
            self.dynamic_call(node, "__import__")
        if name in ("getattr", "setattr", "delattr", "hasattr") and name not in self.defined:
            self.attribute_call(node, name)
        if isinstance(function, ast.Attribute) and self.is_environ(function.value):
            self.judged_env.add(id(function.value))
            if function.attr in _ENV_METHODS_WITH_KEY:
                self.env_key(node, None, node.args[0] if node.args else None)
            elif function.attr == "update" and (not node.args or (
                    len(node.args) == 1 and isinstance(node.args[0], ast.Dict) and all(
                        k is not None and self.folder.strings(k) for k in node.args[0].keys))):
                pass  # os.environ.update(NAME=value) or ({"NAME": value}): names in the code
            else:
                self.found(node, "environment", f"uses the environment as a whole "
                           f"(environ.{function.attr}())")
        if (isinstance(function, ast.Attribute) and function.attr in _GETENV and
                not _is_self(function.value)) or (full or "").split(".")[-1] in _GETENV and \
                (full or "").startswith("os."):
            self.env_key(node, None, node.args[0] if node.args else None)
        if name in ("vars", "dir") and node.args and name not in self.defined:
            target = (self.resolve(node.args[0]) or "").split(".")[0]
            if target in _COMPUTED_LOOKUP_TAMPERING or _class_level(node.args[0]):
                self.found(node, "introspection", f"lists the names of {target or 'a class'} "
                           f"with {name}()")
        if full is not None and full.split(".")[0] in ("pickle", "_pickle", "dill",
                                                       "cloudpickle") and \
                full.endswith(".loads") and node.args:
            blobs = [v for v in self.folder.values(node.args[0]) if isinstance(v, bytes)] \
                if not isinstance(self.folder.values(node.args[0]), _Unknown) else []
            for blob in blobs:
                self.findings += _scan_pickle_bytes(blob, self.relative, node.lineno,
                                                    self._code(node.lineno))
        self.generic_visit(node)

    def _code(self, line: int) -> str:
        code = self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""
        return code[:97] + "..." if len(code) > 100 else code

    def dynamic_call(self, node: ast.Call, name: str) -> None:
        argument = node.args[0] if node.args else None
        texts = self.folder.strings(argument) if argument is not None else []
        if name == "__import__":
            if texts:
                for text in texts:
                    self.imported(node, text)
            else:
                self.found(node, "dynamic_code", f"imports a module by a computed name "
                           f"({name})")
            return
        if not texts:
            self.found(node, "dynamic_code", f"calls {name}() on text the grader cannot read")
            return
        for text in texts:   # code in a constant: read it as the code it is
            try:
                tree = ast.parse(text, mode="exec" if name != "eval" else "eval")
            except (SyntaxError, ValueError):
                continue
            inner = _Visitor(self.relative, self.lines, self.own_modules,
                             line_offset=self.line_offset or node.lineno)
            inner.scan(tree)
            for finding in inner.findings:
                if (finding.line, finding.category) not in self.seen:
                    self.seen.add((finding.line, finding.category))
                    self.findings.append(finding)

    def attribute_call(self, node: ast.Call, name: str) -> None:
        if any(isinstance(a, ast.Starred) for a in node.args) or len(node.args) < 2:
            if name != "hasattr":
                self.found(node, "introspection" if name == "getattr" else "patching",
                           f"calls {name}() with unpacked arguments")
            return
        target, attribute = node.args[0], node.args[1]
        self.skip_strings.add(id(attribute))
        names = self.folder.strings(attribute)
        base_full = self.resolve(target)
        for text in names:
            full = f"{base_full}.{text}" if base_full else None
            self.attribute_named(node, text, base=target, full=full, load=name != "setattr",
                                 called=False)
            if name in ("setattr", "delattr"):
                self.assigned_attribute(node, target, text, full)
        if not names:
            root = (base_full or "").split(".")[0]
            if root in _COMPUTED_LOOKUP_TAMPERING or _class_level(target):
                self.found(node, "introspection", f"{name}() with a computed name on "
                           f"{base_full or 'a class'}")
            elif name in ("setattr", "delattr") and base_full is not None and \
                    root not in self.own_modules:
                self.found(node, "patching" if root in PROTECTED_ROOTS else "library_settings",
                           f"{name}() with a computed name on {base_full}")
            elif base_full is not None and root not in self.own_modules:
                self.found(node, "dynamic_attribute", f"{name}() with a computed name on "
                           f"{base_full}")

    def assigned_attribute(self, node, base: ast.AST, name: str, full: str | None) -> None:
        """`base.name = value` (also augmented, annotated, deleted, setattr)."""
        if _class_level(base):
            self.found(node, "patching", f"replaces {name} on a class it looked up from an object")
            return
        if name == "__class__":
            self.found(node, "patching", "changes an object's class")
            return
        if name in PATCHED_NAMES and not _is_self(base):
            self.found(node, "patching", f"replaces {name}, which the grader's instrumentation "
                       "relies on")
            return
        if full is None:
            return
        root = full.split(".")[0]
        if root in self.own_modules or full.startswith(_ALLOWED_SETTINGS):
            return
        if full in _OUTPUT_STREAMS:
            self.found(node, "output", f"replaces {full}")
        elif root in PROTECTED_ROOTS and not full.startswith(_TORCH_PRIVATE_SETTINGS):
            self.found(node, "patching", f"replaces {full}")
        else:
            self.found(node, "library_settings", f"sets {full}")

    def _assigned(self, target: ast.AST, node: ast.AST) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._assigned(element, node)
            return
        if isinstance(target, ast.Starred):
            self._assigned(target.value, node)
            return
        if isinstance(target, ast.Attribute):
            self.assigned_attribute(node, target.value, target.attr, self.resolve(target))

    def _alias(self, name: str, value: ast.AST | None) -> None:
        # `t = torch`, `L = nn.Linear`: the name stands for what it was given
        full = self.resolve(value) if isinstance(value, (ast.Name, ast.Attribute, ast.Call)) \
            else None
        if full is not None:
            self.modules[name] = full
        elif name in self.modules and value is not None:
            self.modules.pop(name)

    def _bind(self, target: ast.AST, value: ast.AST | None) -> None:
        if isinstance(target, ast.Name):
            self._alias(target.id, value)
        elif isinstance(target, (ast.Tuple, ast.List)) and \
                isinstance(value, (ast.Tuple, ast.List)) and len(target.elts) == len(value.elts):
            for element, given in zip(target.elts, value.elts):
                self._bind(element, given)

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._assigned(target, node)
            self._bind(target, node.value)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._assigned(node.target, node)
        self._bind(node.target, node.value)
        self.generic_visit(node)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self._bind(node.target, node.value)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._assigned(node.target, node)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self._assigned(target, node)
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if node.name in ("__torch_function__", "__torch_dispatch__"):
            self.found(node, "torch_internals", f"defines {node.name}")
        elif node.name == "__init_subclass__":
            self.found(node, "patching", "defines __init_subclass__ (runs code whenever a class "
                       "derives from it)")
        elif node.name in ("__reduce__", "__reduce_ex__"):
            self.found(node, "dynamic_code", f"defines {node.name} (decides what unpickling "
                       "calls)")
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            full = self.resolve(base) or _dotted(base) or ""
            if full.split(".")[-1] in TORCH_INTERNAL_NAMES:
                self.found(node, "torch_internals", f"subclasses {full}")
        self.generic_visit(node)
