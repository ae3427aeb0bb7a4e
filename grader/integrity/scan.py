"""Read a submission's Python source (never run it) for code that could deceive the grader.

The grader observes a run from inside the student's processes, so code that reaches the
grader's instrumentation, its environment, PyTorch's dispatch machinery or the interpreter's
own workings could forge or hide what is observed. No practical or homework of the course needs
any of that, so finding it is reason enough for a person to look (grader/scoring/score.py
withholds the assignment's automatic points until then). Each finding names the file, the line,
the code and why it matters.

What is looked for (`CATEGORIES`): imports of the grader; the grader's `PDL_*` settings or the
whole environment; exec/eval/compile, dynamic imports, pickle, ctypes; gc, frames, sys.modules,
tracing hooks; PyTorch's private modules and function/dispatch modes; assignments that replace a
module's functions (monkeypatching); starting other programs; /proc; compiled files without
source; files named like a module the grader's own code imports; hmac/hashlib (what forging
the grader's seals would need).
"""
from __future__ import annotations

import ast
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

CATEGORIES = {
    "grader": "reaches into the grader",
    "grader_settings": "reads the grader's settings",
    "environment": "reads the whole environment",
    "dynamic_code": "runs code the grader cannot read",
    "introspection": "inspects or rewrites the running interpreter",
    "torch_internals": "uses PyTorch's private dispatch machinery",
    "patching": "replaces a module's functions at run time",
    "processes": "starts other programs",
    "proc_files": "reads the process's /proc files",
    "digests": "computes keyed digests like the grader's seals",
    "compiled": "contains compiled code without its source",
    "shadowing": "replaces a module the grader uses",
    "unreadable": "could not be checked",
}

MAX_FILES = 5000  # as many as a batch unpacks (batch.inputs.UnpackLimits)
MAX_FILE_BYTES = 2 * 2**20
ASSIGNMENT_FOLDERS = ("practical4", "practical5", "practical6", "practical10", "hw3")

_MODULE_CATEGORIES = {
    "grader": "grader",
    "gc": "introspection", "inspect": "introspection", "builtins": "introspection",
    "__builtin__": "introspection", "sys.monitoring": "introspection",
    "ctypes": "dynamic_code", "cffi": "dynamic_code", "marshal": "dynamic_code",
    "pickle": "dynamic_code", "_pickle": "dynamic_code", "dill": "dynamic_code",
    "cloudpickle": "dynamic_code", "shelve": "dynamic_code", "runpy": "dynamic_code",
    "imp": "dynamic_code", "importlib": "dynamic_code", "zipimport": "dynamic_code",
    "code": "dynamic_code", "codeop": "dynamic_code",
    "posix": "environment", "nt": "environment",
    "subprocess": "processes", "_posixsubprocess": "processes", "pty": "processes",
    "torch.overrides": "torch_internals",
    # The grader seals its records with HMAC-SHA256: a homework has no use for digests.
    "hmac": "digests", "hashlib": "digests", "_hashlib": "digests", "_sha2": "digests",
    "_sha256": "digests",
}
_DYNAMIC_CALLS = {"exec", "eval", "compile", "__import__"}
_INTROSPECTION_CALLS = {"vars"}
_INTROSPECTION_ATTRIBUTES = {
    "__closure__", "__globals__", "__code__", "__subclasses__", "__builtins__", "__defaults__",
    "__kwdefaults__", "f_back", "f_globals", "f_locals", "f_builtins", "tb_frame", "gi_frame",
    "cr_frame", "ag_frame", "__loader__", "__spec__"}
_SYS_INTROSPECTION = {
    "_getframe", "_current_frames", "modules", "settrace", "setprofile", "meta_path",
    "path_hooks", "path_importer_cache", "addaudithook", "_getframemodulename", "monitoring",
    "setrecursionlimit", "call_tracing"}
_THREADING_INTROSPECTION = {"settrace", "setprofile", "settrace_all_threads",
                            "setprofile_all_threads"}
_TORCH_INTERNAL_NAMES = {
    "__torch_function__", "__torch_dispatch__", "as_subclass", "_make_subclass",
    "_make_wrapper_subclass", "TorchFunctionMode", "TorchDispatchMode", "DisableTorchFunction",
    "DisableTorchFunctionSubclass", "_disable_torch_function_subclass", "_pop_mode",
    "_push_mode", "_get_current_function_mode", "_get_current_dispatch_mode",
    "_pop_torch_function_stack", "_push_on_torch_function_stack"}
_PROCESS_CALLS = {"system", "popen", "fork", "forkpty", "execv", "execve", "execl", "execle",
                  "execlp", "execlpe", "execvp", "execvpe", "spawnl", "spawnle", "spawnlp",
                  "spawnlpe", "spawnv", "spawnve", "spawnvp", "spawnvpe", "posix_spawn",
                  "posix_spawnp"}
# `from X import *` brings names the scanner cannot follow (environ, system, _getframe).
_STAR_SENSITIVE = {"os": ("environment", "processes"), "posix": ("environment", "processes"),
                   "nt": ("environment", "processes"), "sys": ("introspection",),
                   "builtins": ("introspection",), "threading": ("introspection",),
                   "asyncio": ("processes",)}
# Modules whose attributes looked up by a computed name could be anything private.
_SENSITIVE_ROOTS = {"torch", "sys", "os", "builtins", "gc", "threading", "importlib"}
_ENV_METHODS_WITH_KEY = {"get", "setdefault", "pop", "__getitem__", "__contains__"}
# Settings students legitimately change on PyTorch modules.
_ALLOWED_TORCH_SETTINGS = ("torch.backends.",)
# Files named like these would replace them for the grader's own code in the same process.
_SHADOW_EXTRA = {"grader", "torch", "numpy", "sitecustomize", "usercustomize", "pytest",
                 "_pytest", "yaml", "pynvml"}
_SHADOW_HARMLESS = {"test", "this", "antigravity", "turtle", "turtledemo", "idlelib",
                    "tkinter", "curses", "lib2to3", "xdrlib", "nntplib", "telnetlib"}
_ARCHIVES = (".zip", ".egg", ".whl", ".pyz")
# Names of the files a run's observations are written to.
_OBSERVATION_FILES = ("trace.jsonl", "probe.jsonl")


@dataclass(frozen=True)
class Finding:
    file: str          # relative to the submission
    line: int
    category: str
    what: str          # what the code does, for the student and the instructor
    code: str          # the line of source, shortened

    @property
    def assignment(self) -> str | None:
        """The assignment whose folder holds the file; None: a file outside them all."""
        top = Path(self.file).parts[0] if Path(self.file).parts else ""
        return top if top in ASSIGNMENT_FOLDERS else None

    def describe(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        code = f" (`{self.code}`)" if self.code else ""
        return f"{where} {CATEGORIES[self.category]}: {self.what}{code}"

    def to_dict(self) -> dict:
        return {**asdict(self), "assignment": self.assignment, "text": self.describe()}

    @classmethod
    def from_dict(cls, data: dict) -> "Finding":
        """Back from to_dict (the derived `assignment` and `text` are made again)."""
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
        if path.suffix == ".py" and not path.is_symlink():
            findings += scan_source(path, path.relative_to(submission).as_posix(), own)
    return sorted(findings, key=lambda f: (f.file, f.line, f.category))


def findings_for(findings: list[Finding], assignment: str) -> list[Finding]:
    """The findings that concern `assignment`: in its folder, or outside every assignment's."""
    return [f for f in findings if f.assignment in (assignment, None)]


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


def _files(submission: Path, findings: list[Finding]):
    """The submission's files (symlinks included, never followed), with findings about their
    names: a folder or file named like a module shadows it wherever it is on sys.path (a
    script's own folder comes first)."""
    count = 0
    for root, dirs, names in os.walk(submission, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in dirs:
            path = Path(root) / name
            findings += _check_file_name(path, path.relative_to(submission).as_posix(),
                                         package=True)
        for name in sorted(names):
            path = Path(root) / name
            relative = path.relative_to(submission).as_posix()
            findings += _check_file_name(path, relative)
            if not path.is_symlink() and not path.is_file():
                continue  # a FIFO or a device: nothing to read
            count += 1
            if count > MAX_FILES:
                findings.append(Finding(relative, 0, "unreadable",
                                        f"more than {MAX_FILES} files: the rest were not read", ""))
                return
            yield path


def _check_file_name(path: Path, relative: str, package: bool = False) -> list[Finding]:
    name, suffix = path.stem, path.suffix
    if not package and suffix in (".pyc", ".pyo", ".so", ".pyd", ".dylib"):
        return [Finding(relative, 0, "compiled", f"a {suffix} file is run as it is, and the "
                        "grader can read only source: submit the .py file instead", "")]
    if not package and suffix in _ARCHIVES:
        return [Finding(relative, 0, "compiled", f"Python can import code from a {suffix} "
                        "file, which the grader does not read: submit the .py files instead", "")]
    if package or suffix == ".py":
        name = path.name if package else name
        if name in _SHADOW_EXTRA or (name in sys.stdlib_module_names
                                     and name not in _SHADOW_HARMLESS):
            return [Finding(relative, 0, "shadowing", f"a module named '{name}' replaces the "
                            f"real '{name}' for every import beside it: rename it", "")]
    return []


def scan_source(path: Path, relative: str, own_modules: set[str] = frozenset()) -> list[Finding]:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return [Finding(relative, 0, "unreadable",
                            f"larger than {MAX_FILE_BYTES // 2**20} MiB of Python", "")]
        source = path.read_bytes()
    except OSError as error:
        return [Finding(relative, 0, "unreadable", f"cannot be read ({error.strerror})", "")]
    try:
        tree = ast.parse(source, filename=relative)
    except (SyntaxError, ValueError):
        return []  # it cannot run either: the run itself reports the syntax error
    lines = source.decode("utf-8", errors="replace").splitlines()
    visitor = _Visitor(relative, lines, own_modules)
    visitor.learn_imports(tree)
    visitor.visit(tree)
    return visitor.findings


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


def _literal_str(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


class _Visitor(ast.NodeVisitor):
    def __init__(self, relative: str, lines: list[str], own_modules=frozenset()):
        self.relative = relative
        self.lines = lines
        self.own_modules = set(own_modules)
        self.findings: list[Finding] = []
        self.seen: set[tuple[int, str]] = set()
        self.modules: dict[str, str] = {}   # local name -> module (or module.attribute) it is
        self.checked_env: set[int] = set()  # os.environ nodes already judged as keyed uses
        self.called: set[int] = set()       # expressions in the called position of a call

    def learn_imports(self, tree: ast.AST) -> None:
        """Every import of the file, wherever it is: a function may be written above the
        import it uses."""
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    head = alias.name.split(".")[0]
                    self.modules[alias.asname or head] = alias.name if alias.asname else head
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                for alias in node.names:
                    if alias.name != "*":
                        self.modules[alias.asname or alias.name] = f"{node.module}.{alias.name}"

    # -- recording ----------------------------------------------------------------------------
    def found(self, node: ast.AST, category: str, what: str) -> None:
        line = getattr(node, "lineno", 0)
        code = self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""
        if len(code) > 100:
            code = code[:97] + "..."
        if (line, category) in self.seen:
            return  # one finding of a kind per line is enough to look at it
        self.seen.add((line, category))
        self.findings.append(Finding(self.relative, line, category, what, code))

    def resolve(self, node: ast.AST) -> str | None:
        """The full dotted name behind an expression, through import aliases (`nn.Linear` ->
        `torch.nn.Linear`) and getattr with a written name; None when it does not start at an
        imported module."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id == "getattr" and len(node.args) >= 2 and \
                _literal_str(node.args[1]) is not None:
            base = self.resolve(node.args[0])
            return f"{base}.{_literal_str(node.args[1])}" if base else None
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
    def _module_used(self, node: ast.AST, module: str) -> bool:
        for prefix, category in _MODULE_CATEGORIES.items():
            if module == prefix or module.startswith(prefix + "."):
                self.found(node, category, f"imports {module}")
                return True
        if module.split(".")[0] == "torch" and any(part.startswith("_")
                                                   for part in module.split(".")[1:]):
            self.found(node, "torch_internals", f"imports {module}")
            return True
        return False

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._module_used(node, alias.name)
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
        reported = self._module_used(node, module)
        for alias in node.names:
            full = f"{module}.{alias.name}"
            if not reported:
                self._module_used(node, full)
                self._attribute_used(node, full)
            self.modules[alias.asname or alias.name] = full
        self.generic_visit(node)

    # -- names, attributes, strings ---------------------------------------------------------
    def visit_Name(self, node: ast.Name) -> None:
        if node.id == "__builtins__":
            self.found(node, "introspection", "uses __builtins__")
        elif node.id in self.modules:
            pass  # an import of the same name
        elif node.id in _DYNAMIC_CALLS and isinstance(node.ctx, ast.Load) \
                and id(node) not in self.called:
            self.found(node, "dynamic_code", f"passes {node.id} around")
        elif node.id in ("setattr", "delattr") and isinstance(node.ctx, ast.Load) \
                and id(node) not in self.called:
            self.found(node, "patching", f"passes {node.id} around")
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if self._is_environ(node.value) and node.attr not in _ENV_METHODS_WITH_KEY | {"update"}:
            self.found(node, "environment", f"uses os.environ.{node.attr}")
        if node.attr in ("__setattr__", "__delattr__"):
            self.found(node, "patching", f"uses {node.attr}")
        if node.attr in _INTROSPECTION_ATTRIBUTES:
            self.found(node, "introspection", f"reads {node.attr}")
        if node.attr in _TORCH_INTERNAL_NAMES:
            self.found(node, "torch_internals", f"uses {node.attr}")
        full = self.resolve(node)
        if full is not None:
            self._attribute_used(node, full)
        self.generic_visit(node)

    def _attribute_used(self, node: ast.AST, full: str) -> None:
        parts = full.split(".")
        root, last = parts[0], parts[-1]
        if root == "sys" and len(parts) > 1 and parts[1] in _SYS_INTROSPECTION:
            self.found(node, "introspection", f"uses sys.{parts[1]}")
        elif root == "threading" and last in _THREADING_INTROSPECTION:
            self.found(node, "introspection", f"uses threading.{last}")
        elif root == "torch" and any(p.startswith("_") and not p.startswith("__")
                                     for p in parts[1:]):
            self.found(node, "torch_internals", f"uses {full}")
        elif root == "torch" and last in _TORCH_INTERNAL_NAMES:
            self.found(node, "torch_internals", f"uses {full}")
        elif root == "os" and last in _PROCESS_CALLS and len(parts) == 2:
            self.found(node, "processes", f"uses os.{last}")
        elif root == "os" and last in ("environb", "getenvb"):
            self.found(node, "environment", f"uses os.{last}")
        elif root == "asyncio" and last in ("create_subprocess_shell", "create_subprocess_exec"):
            self.found(node, "processes", f"uses asyncio.{last}")
        elif root == "types" and last in ("CodeType", "FunctionType"):
            self.found(node, "dynamic_code", f"builds code with types.{last}")
        elif len(parts) > 1 and last == "__dict__":
            self.found(node, "introspection", f"reads {full}")

    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant):
            return  # a docstring or a bare string: it does nothing (reading __doc__ is computed)
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, (str, bytes)):
            text = node.value if isinstance(node.value, str) else node.value.decode("latin-1")
            if text.startswith("PDL_") or "PDL_SEAL" in text or "PDL_VGPU" in text:
                self.found(node, "grader_settings", f"names the grader's setting {text[:40]!r}")
            if text.startswith("/") and \
                    (os.path.normpath("/" + text.lstrip("/")) + "/").startswith("/proc/"):
                self.found(node, "proc_files", f"opens {text[:40]!r}")
            if text in _INTROSPECTION_ATTRIBUTES or text in ("__setattr__", "__delattr__"):
                self.found(node, "introspection", f"names {text}")
            if any(name in text for name in _OBSERVATION_FILES):
                self.found(node, "grader", f"names the grader's observation file {text[:40]!r}")
        self.generic_visit(node)

    # -- calls and assignments --------------------------------------------------------------
    def visit_Call(self, node: ast.Call) -> None:
        function = node.func
        self.called.add(id(function))
        name = function.id if isinstance(function, ast.Name) else None
        if name in _DYNAMIC_CALLS and name not in self.modules:
            self.found(node, "dynamic_code", f"calls {name}()")
        if name in ("getattr", "setattr", "delattr") and any(
                isinstance(a, ast.Starred) for a in node.args):
            self.found(node, "introspection" if name == "getattr" else "patching",
                       f"calls {name}() with unpacked arguments")
        if name in _INTROSPECTION_CALLS and node.args and self.resolve(node.args[0]):
            self.found(node, "introspection", f"lists the names of a module with {name}()")
        if name in ("getattr", "setattr", "delattr", "hasattr") and len(node.args) >= 2:
            self._dynamic_attribute(node, name)
        full = self.resolve(function)
        if full in ("importlib.import_module", "builtins.__import__"):
            self.found(node, "dynamic_code", f"imports a module by name with {full}()")
        if full in ("os.getenv", "os.putenv", "os.unsetenv", "os.getenvb"):
            self._env_key(node, node.args[0] if node.args else None, full)
        if isinstance(function, ast.Attribute) and self._is_environ(function.value):
            self.checked_env.add(id(function.value))
            if function.attr in _ENV_METHODS_WITH_KEY:
                self._env_key(node, node.args[0] if node.args else None, "os.environ")
            elif function.attr == "update" and (not node.args or (
                    len(node.args) == 1 and isinstance(node.args[0], ast.Dict) and all(
                        _literal_str(k) is not None for k in node.args[0].keys))):
                pass  # os.environ.update(NAME=value) or ({"NAME": value}): names in the code
            else:
                self.found(node, "environment", f"uses os.environ.{function.attr}()")
        self.generic_visit(node)

    def _dynamic_attribute(self, node: ast.Call, name: str) -> None:
        target, attribute = node.args[0], _literal_str(node.args[1])
        full = self.resolve(target)
        if attribute is not None:
            synthetic = ast.Attribute(value=target, attr=attribute, ctx=ast.Load(),
                                      lineno=node.lineno, col_offset=node.col_offset)
            self.visit_Attribute(synthetic)
        if name in ("setattr", "delattr") and full is not None and \
                not full.startswith(_ALLOWED_TORCH_SETTINGS):
            self.found(node, "patching", f"{name}() on {full}")
        elif attribute is None and full in _SENSITIVE_ROOTS:
            self.found(node, "introspection", f"{name}() with a computed name on {full}")

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if self._is_environ(node.value):
            self.checked_env.add(id(node.value))
            self._env_key(node, node.slice, "os.environ")
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        for operator, right in zip(node.ops, node.comparators):
            if isinstance(operator, (ast.In, ast.NotIn)) and self._is_environ(right):
                self.checked_env.add(id(right))
                self._env_key(node, node.left, "os.environ")
        self.generic_visit(node)

    def _env_key(self, node: ast.AST, key: ast.AST | None, where: str) -> None:
        text = _literal_str(key)
        if text is None:
            self.found(node, "environment", f"reads {where} with a computed name")
        # A literal key is fine; a PDL_ one is reported by visit_Constant.

    def _assigned(self, target: ast.AST, node: ast.AST) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._assigned(element, node)
            return
        if not isinstance(target, ast.Attribute):
            return
        full = self.resolve(target)
        if full is not None and not full.startswith(_ALLOWED_TORCH_SETTINGS) and \
                full.split(".")[0] not in self.own_modules:
            self.found(node, "patching", f"replaces {full}")

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
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            full = self.resolve(base) or _dotted(base) or ""
            if full.split(".")[-1] in _TORCH_INTERNAL_NAMES:
                self.found(node, "torch_internals", f"subclasses {full}")
        self.generic_visit(node)

    # -- helpers ------------------------------------------------------------------------------
    def _is_environ(self, node: ast.AST) -> bool:
        return self.resolve(node) in ("os.environ",)

    def generic_visit(self, node: ast.AST) -> None:
        super().generic_visit(node)
        # os.environ used in any way not judged above (passed along, iterated, copied):
        if isinstance(node, ast.Module):
            return
        for child in ast.iter_child_nodes(node):
            if self._is_environ(child) and id(child) not in self.checked_env and not (
                    isinstance(node, ast.Attribute)):
                self.checked_env.add(id(child))
                self.found(child, "environment", "uses os.environ as a whole")
