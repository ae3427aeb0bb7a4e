"""The scan's rules on one file's Python source (its syntax tree; nothing is run)."""
from __future__ import annotations

import ast
import functools
import re

from grader.common.text import python_source
from grader.integrity.aliases import Aliases, Changes
from grader.integrity.allowance import ReadingTooLarge
from grader.integrity.cancelling import cancelling_findings
from grader.integrity.constants import HOLE, Folder, Unknown, proc_path, skeleton
from grader.integrity.own_objects import own_object_names, template_script
from grader.integrity.scopes import (Containers, Scopes, local_names, numeric_updates,
                                     parameter_defaults)
from grader.integrity.scopes import resolve as resolve_stable
from grader.integrity.scopes import stable_imports
from grader.integrity.findings import Finding
from grader.integrity.names import (
    ALLOWED_ON_SUPER, ALLOWED_SETTINGS, COMPUTED_LOOKUP_TAMPERING, DYNAMIC_CALLS, ENVIRON,
    ENV_METHODS_WITH_KEY, GETENV, GRADER_FILES, GRADER_IDENTIFIERS, GRADER_SETTING_FAMILIES,
    INTERPRETER_ATTRIBUTES, MODULE_CATEGORIES, NOTE_ATTRIBUTES, OS_PROCESS_CALLS, OUTPUT_CALLS,
    OUTPUT_STREAMS, PATCHED_NAMES, PROCESS_CALLS, PROTECTED_ROOTS, RAW_MEMORY_FUNCTIONS,
    RAW_MEMORY_NAMES, SIGNAL_HANDLING, STAR_SENSITIVE, TORCH_DISPATCH_MODULES,
    TORCH_INTERNAL_NAMES, TORCH_INTERNAL_PREFIXES, TORCH_PRIVATE_SETTINGS, UNCALLED_MODULES)
from grader.integrity.pickles import dangerous_globals, pickle_globals
from grader.integrity.selves import Selves, own_selves


# The grader's settings' names: PDL_ and a word of its settings (PDL_SEAL_FD, PDL_VGPU_TRACE).
_SETTING_NAMES = tuple(f"PDL_{family}" for family in GRADER_SETTING_FAMILIES)
# A file's name: a partly computed one that ends in an extension (`f"PDL_{n}gpu_timings.json"`)
# names no setting, unless it is written where the environment is read.
# A file whose reading took the scan past its memory limit (contained.py): held, as unread.
TOO_LARGE_TO_READ = "too large to be read within the integrity scan's memory limit"
_FILE_NAME = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,4}$")
# Attributes whose assignment makes an object something else than the file made: what a class
# makes (`C.__new__`), what argparse's parser returns, what nn.Module.to returns. Objects of the
# student's own (own_objects.py) are trusted because these are held wherever they are set.
_MAKES_OBJECTS = frozenset({"__new__", "parse_args", "parse_known_args", "parse_intermixed_args",
                            "parse_known_intermixed_args", "_parse_known_args",
                            "_parse_known_args2", "_apply"})
# Names the instrumentation relies on that torch, the standard library and the grader keep only
# functions under: adding a number to one fails (numeric_updates), so `x.forward += 0.5` on any
# `x` replaces nothing. (Not the flags and the grader's own fields.)
_NUMERIC_FIELDS = frozenset(name for name in PATCHED_NAMES if not name.startswith("_")
                            and name not in ("is_cuda", "is_cpu", "listeners"))
# Objects of those modules that are data, not code: a call handed one and a name sets nothing
# the instrumentation relies on (`print("forward", file=sys.stderr)`).
_DATA_OWNERS = frozenset({
    "sys.stdout", "sys.stderr", "sys.stdin", "sys.__stdout__", "sys.__stderr__", "sys.__stdin__",
    "sys.argv", "sys.version", "sys.platform", "sys.executable", "sys.maxsize", "sys.byteorder",
    "os.curdir", "os.pardir", "os.sep", "os.altsep", "os.extsep", "os.pathsep", "os.linesep",
    "os.defpath", "os.devnull", "os.name", "os.path.curdir", "os.path.pardir", "os.path.sep",
    "os.path.altsep", "os.path.extsep", "os.path.pathsep", "os.path.defpath", "os.path.devnull",
    "math.pi", "math.e", "math.tau", "math.inf", "math.nan"})


_ATTRIBUTE_BUILTINS = frozenset(f"{module}.{name}" for module in ("builtins", "__builtin__")
                                for name in ("getattr", "setattr", "delattr", "hasattr"))
# unittest.mock's patcher (and the `mock` package's, its backport); `.object`, `.dict`,
# `.multiple` of it too.
_MOCK_PATCHERS = frozenset({"unittest.mock.patch", "mock.patch"})
# torch's dtypes (torch.float16): values, whose attributes cannot be set.
_TORCH_DTYPES = frozenset({
    "float16", "float32", "float64", "bfloat16", "half", "float", "double", "int8", "int16",
    "int32", "int64", "uint8", "bool", "long", "int", "short", "complex64", "complex128",
    "cfloat", "cdouble"})
_DYNAMIC_BUILTINS = frozenset(f"{module}.{name}" for module in ("builtins", "__builtin__")
                              for name in DYNAMIC_CALLS)


def _spells_a_setting(text: str) -> tuple[bool, bool]:
    """Whether a string (HOLE: a part computed at run time, any text) can be a grader setting's
    name, and on what evidence: (the family written out after at least one letter of `PDL`:
    `"P" + x + "SEAL_KEY"`, `sep.join(["PDL", "SEAL"])`; all of `PDL` written out and the rest
    computed or written: `"PDL_" + name`, f"PDL{x}"). A part computed wholly at run time is
    no evidence (`f"{n}_SUBMISSION"`, a file's name of the course's acronym and a number)."""
    if "PDL" not in text and not (HOLE in text and any(c in text for c in "PDL")):
        return False, False
    text = re.sub(HOLE + "+", HOLE, text)   # holes side by side are one
    family_written = pdl_written = False
    for name in _SETTING_NAMES:
        # A reading with a letter of PDL written out starts at most a name's length of written
        # characters and holes before that letter, and spans at most twice the name's length.
        span = 2 * len(name) + 1
        starts = {start for at, char in enumerate(text) if char in "PDL"
                  for start in range(max(0, at - span), at + 1)}
        for start in starts:
            for family, some_pdl, all_pdl in _readings(text[start:start + span], name):
                family_written |= family and some_pdl
                pdl_written |= all_pdl
            if family_written and pdl_written:
                return True, True
    return family_written, pdl_written


@functools.lru_cache(maxsize=4096)
def _readings(text: str, name: str) -> frozenset[tuple[bool, bool, bool]]:
    """The ways `name` (PDL_ and a family) can be read from the start of `text`, where each
    HOLE stands for any text, each as (every letter of the family written out, some letter of
    PDL written out, every letter of PDL written out)."""
    found: set[tuple[bool, bool, bool]] = set()
    # (position in text, characters of the name read so far, the three facts so far)
    pending = [(0, 0, True, False, True)]
    seen: set = set()
    while pending:
        state = pending.pop()
        if state in seen:
            continue
        seen.add(state)
        at, read, family, some_pdl, all_pdl = state
        if read == len(name):
            found.add((family, some_pdl, all_pdl))
        elif at < len(text) and text[at] == HOLE:
            for more in range(len(name) - read + 1):   # the hole gives `more` characters
                given = range(read, read + more)
                after = (family and not any(i >= 4 for i in given), some_pdl,
                         all_pdl and not any(i < 3 for i in given))
                if read + more == len(name):   # the rest of the name inside this hole
                    found.add(after)
                else:
                    pending.append((at + 1, read + more, *after))
        elif at < len(text) and text[at] == name[read]:
            pending.append((at + 1, read + 1, family, some_pdl or read < 3, all_pdl))
    return frozenset(found)


def _torch_internal(name: str) -> bool:
    """torch's private dispatch names; of its `_global_...` names, its hook tables (a name
    of one's own like `_global_step` is none)."""
    return name in TORCH_INTERNAL_NAMES or name.startswith(TORCH_INTERNAL_PREFIXES) and (
        "hook" in name or HOLE in name)


# What a script's module names when it imported torch's parts (`concepts.nn` is torch.nn, as
# the course's scripts import it): reached through the submission's own module, still torch's.
_IMPORTED_AS = {"torch": "torch", "nn": "torch.nn", "F": "torch.nn.functional",
                "functional": "torch.nn.functional", "dist": "torch.distributed",
                "optim": "torch.optim", "np": "numpy"}


def through_own_module(full: str, own_modules) -> str:
    """`concepts.torch.matmul` (or `from concepts import nn; nn.functional.linear`): the name
    of torch's (or another protected module's) that an own module's attribute leads to; `full`
    itself otherwise (`helper.stats = ...` sets the student's own variable)."""
    parts = full.split(".")
    if len(parts) < 3 or parts[0] not in own_modules:
        return full
    head = _IMPORTED_AS.get(parts[1]) or (parts[1] if parts[1] in PROTECTED_ROOTS else None)
    return ".".join([head, *parts[2:]]) if head else full


# inspect's functions that give the name of an object's file: handed the current frame
# straight away, the script's own file (the StackOverflow idiom for the script's folder).
_FILE_OF_FRAME = frozenset({"inspect.getfile", "inspect.getsourcefile", "inspect.getabsfile"})
# What a name of `__main__` may be read for by a script asking whether it is one (a notebook's
# kernel has no __file__): `__main__.__file__`, `hasattr(__main__, "__file__")`,
# `getattr(__main__, "__file__", None)`.
_MAIN_FILE = "__file__"
_OWN_NAME = "__name__"   # the module's own name: sys.modules[__name__] is the module itself
_NOT_ORDINARY = PROTECTED_ROOTS | {"torch", "grader", "__main__", "sitecustomize",
                                   "usercustomize", "site", "ctypes", "numpy"}


def _ordinary_module(name: str) -> bool:
    """A module read out of sys.modules by this name is only what `import name` gives, and
    nothing the runtime relies on (`google.colab`, `ipykernel`, `IPython`, `tqdm`)."""
    root = name.split(".")[0]
    return bool(root) and all(part.isidentifier() for part in name.split(".")) and \
        not root.startswith("_") and root not in _NOT_ORDINARY and \
        not any(name == m or name.startswith(m + ".") for m in MODULE_CATEGORIES)


def _name_bound_or_spelled(tree: ast.AST, name: str, strings: bool = True) -> bool:
    """Whether the file binds `name` anywhere (an assignment, a deletion, a parameter, an
    import, a definition, `global`) or spells it in a string (`globals()["__name__"] = ...`,
    `setattr(module, "__name__", ...)`)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load):
            return True
        if strings and isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                name in node.value:
            return True
        if isinstance(node, (ast.arg, ast.alias, ast.FunctionDef, ast.AsyncFunctionDef,
                             ast.ClassDef, ast.Global, ast.Nonlocal, ast.ExceptHandler,
                             ast.MatchAs, ast.MatchStar)) and name in {
                getattr(node, "arg", None), getattr(node, "name", None),
                getattr(node, "asname", None), *getattr(node, "names", ())}:
            return True
    return False


def _read_only_operands(tree: ast.AST, folder: Folder) -> set[int]:
    """The expressions only a name is read from: the object of `getattr(x, name[, default])`
    (a name the code spells, not a dunder) or `hasattr(x, name)` (the builtins: the file binds
    neither name), the value of a plain attribute read `x.name` (not a dunder)."""
    builtins_kept = not any(_name_bound_or_spelled(tree, name, strings=False)
                            for name in ("getattr", "hasattr"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and builtins_kept and \
                node.func.id in ("getattr", "hasattr") and 2 <= len(node.args) <= 3 and \
                not node.keywords and not any(isinstance(a, ast.Starred) for a in node.args):
            names = folder.strings(node.args[1])
            # `getattr(module, "__dict__")` is the namespace, `__builtins__` the builtins: as
            # in the attribute form, a dunder (or a name the scan cannot read) is no plain read
            if node.func.id == "hasattr" or names and not any(n.startswith("__") for n in names):
                found.add(id(node.args[0]))
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and \
                not node.attr.startswith("__"):
            found.add(id(node.value))
    return found


def own_classes(tree: ast.Module) -> frozenset[str]:
    """Classes the file defines at its top level and binds nothing else to, anywhere in the
    file (no second definition, assignment, import, parameter, loop, `global`, deletion)."""
    top = [node.name for node in tree.body if isinstance(node, ast.ClassDef)]
    if not top:
        return frozenset()
    bound: dict[str, int] = {}

    def bind(name: str) -> None:
        bound[name] = bound.get(name, 0) + 1
    for node in ast.walk(tree):
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            bind(node.name)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bind(node.id)
        elif isinstance(node, ast.arg):
            bind(node.arg)
        elif isinstance(node, ast.alias):
            bind((node.asname or node.name).split(".")[0])
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                bind(name)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bind(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            bind(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bind(node.rest)
    return frozenset(name for name in top if bound.get(name) == 1)


def main_file_reads(tree: ast.AST) -> set[int]:
    """The nodes of `import __main__` (as any name) whose every use in the file is asking for
    its `__file__` (`hasattr(__main__, "__file__")`, `getattr(__main__, "__file__", None)`,
    `__main__.__file__`), and those uses: where the grader's launcher is __main__ (the HW3
    probe, torchrun's) that gives its path, nothing of its objects. Any other use, or the
    name bound anything else anywhere in the file, leaves them all to the rules."""
    imports = [alias for node in ast.walk(tree) if isinstance(node, ast.Import)
               for alias in node.names if alias.name == "__main__"]
    if not imports:
        return set()
    harmless: set[int] = set()
    for bound in {alias.asname or "__main__" for alias in imports}:
        reads: set[int] = set()     # the Name nodes read for __file__
        marks: set[int] = set()
        names = 0
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                    node.value.id == bound and node.attr == _MAIN_FILE and \
                    isinstance(node.ctx, ast.Load):
                reads.add(id(node.value))
                marks.add(id(node))
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                    node.func.id in ("hasattr", "getattr") and 2 <= len(node.args) <= 3 and \
                    not node.keywords and isinstance(node.args[0], ast.Name) and \
                    node.args[0].id == bound and isinstance(node.args[1], ast.Constant) and \
                    node.args[1].value == _MAIN_FILE and \
                    not any(isinstance(a, ast.Starred) for a in node.args):
                reads.add(id(node.args[0]))
                marks.add(id(node))
            if isinstance(node, ast.Name) and node.id == bound:
                names += 1
            elif isinstance(node, (ast.arg, ast.alias, ast.FunctionDef, ast.AsyncFunctionDef,
                                   ast.ClassDef, ast.Global, ast.Nonlocal, ast.ExceptHandler)):
                named = {getattr(node, "arg", None), getattr(node, "name", None),
                         getattr(node, "asname", None), *getattr(node, "names", ())}
                if bound in named and not (isinstance(node, ast.alias) and
                                           node.name == "__main__"):
                    names += 2   # bound to something else: never harmless
        if names == len(reads):
            harmless |= reads | marks | {id(alias) for alias in imports
                                         if (alias.asname or "__main__") == bound}
    return harmless


def parse_python(source: bytes | str, filename: str = "<unknown>") -> ast.Module:
    """A Python file's syntax tree, parsed from the text the runner runs (python_source: its
    coding line honoured; bytes no declared codec decodes read as UTF-8, as the runner reads
    them). Every part of the scan that parses a file of the submission parses it here, so that
    it reads what runs and nothing else."""
    text = python_source(source) if isinstance(source, bytes) else source
    return ast.parse(text, filename=filename)


def scan_text(source: bytes, relative: str, own_modules=frozenset(),
              trust_own_objects: bool = False, selves: Selves | None = None,
              tree: ast.AST | None = None, writes: dict | None = None) -> list[Finding]:
    """`trust_own_objects`: no file of the submission can rebind another's names
    (own_objects.may_rebind_names), so a plain object a file makes is that object. `selves`:
    the reads of `self` that are a method's own object, judged over all the submission's
    files (selves.own_selves); None: over this file alone. `tree`: `source` parsed already.
    `writes`: what the functions of the submission's modules set on their parameters, by
    (module's name, function's name) (parameter_writes): a call of one here handing it torch's
    objects sets that on them."""
    # The text the runner runs (grader/common/text.py python_source: a coding line honoured, a
    # file no declared codec decodes read as UTF-8), never the bytes parsed on their own: a
    # `# coding: ascii` line above a byte that is not ASCII had made the file "unparsable"
    # here, a note, while the runner ran it unread.
    text = python_source(source) if isinstance(source, bytes) else source
    try:
        tree = parse_python(text, relative) if tree is None else tree
    except RecursionError:
        return [Finding(relative, 0, "unreadable", "nested too deeply to be read", "")]
    except MemoryError:
        return [Finding(relative, 0, "unreadable", TOO_LARGE_TO_READ, "")]
    except (SyntaxError, ValueError) as error:
        # The runner compiles this same text: it cannot run either, and says why.
        return [Finding(relative, getattr(error, "lineno", 0) or 0, "unparsable",
                        "Python cannot read it, so it cannot run either", "")]
    lines = text.split("\n")   # rows as the parser counts them (the text's newlines are \n)
    visitor = _Visitor(relative, lines, own_modules)
    visitor.trust_own_objects = trust_own_objects
    visitor.writes = writes or {}
    try:
        visitor.selves = own_selves({relative: tree}, trust_own_objects) \
            if selves is None else selves
        visitor.scan(tree)
    except RecursionError:
        # Nested beyond what any homework writes (thousands of levels): not read, so held.
        return [Finding(relative, 0, "unreadable", "nested too deeply to be read", "")]
    except MemoryError:   # past the scan's memory limit (contained.py): not read, so held
        return [Finding(relative, 0, "unreadable", TOO_LARGE_TO_READ, "")]
    except ReadingTooLarge as spent:
        # Names standing for one another past what the file's size accounts for (allowance.py):
        # the rest is not read, so held; what was found before is kept.
        return visitor.findings + [Finding(
            relative, 0, "unreadable", "too intricate for the scan to read in full: its names "
            "stand for one another more than its size accounts for "
            f"({spent.allowance.spent:,} steps of reading for {spent.allowance.nodes:,} "
            "syntax nodes): it is for a person to read", "")]
    if visitor.folder.exhausted:
        # Past the budget nothing more was folded, so names built later were not read.
        visitor.findings.append(Finding(relative, 0, "unreadable", "builds more text out of "
                                        "constants than the scan reads", ""))
    return visitor.findings



def scan_pickle_bytes(data: bytes, relative: str, line: int = 0, code: str = "") -> list[Finding]:
    names = pickle_globals(data)
    bad = dangerous_globals(names or [])
    if bad:
        return [Finding(relative, line, "dynamic_code", "a pickle that calls "
                        + ", ".join(sorted(set(bad))[:5]) + " when it is loaded", code)]
    return []



def parameter_writes(tree: ast.AST) -> dict[str, list[tuple[str, int | None, str | None]]]:
    """What each function at a module's top level sets on its own parameters, written in its
    body (a nested function's included): function name -> (parameter, its position, None
    where it is keyword-only; the attribute set through it: `T.cpu = f` "cpu",
    `T.backends.cudnn.benchmark = x` "backends.cudnn.benchmark", None for setattr or delattr
    with a name not written out). Another file of the submission that hands the function
    torch's objects sets those on them (Visitor.handed_to_another_file)."""
    found: dict[str, list] = {}
    for function in getattr(tree, "body", []):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        arguments = function.args
        positional = [a.arg for a in arguments.posonlyargs + arguments.args]
        names = set(positional) | {a.arg for a in arguments.kwonlyargs}
        writes = set()
        for node in ast.walk(function):
            targets = list(node.targets) if isinstance(node, (ast.Assign, ast.Delete)) else \
                [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
            while targets:
                part = targets.pop()
                if isinstance(part, (ast.Tuple, ast.List)):   # (unpacking targets too)
                    targets += part.elts
                elif isinstance(part, ast.Starred):
                    targets.append(part.value)
                chain = _dotted(part) if isinstance(part, ast.Attribute) else None
                if chain is not None and chain.split(".")[0] in names:
                    writes.add((chain.split(".")[0], chain.partition(".")[2]))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                    node.func.id in ("setattr", "delattr") and len(node.args) >= 2 and \
                    isinstance(node.args[0], ast.Name) and node.args[0].id in names:
                name = node.args[1]
                writes.add((node.args[0].id, name.value if isinstance(name, ast.Constant) and
                            isinstance(name.value, str) else None))
        if writes:
            found.setdefault(function.name, []).extend(
                (parameter, positional.index(parameter) if parameter in positional else None,
                 chain) for parameter, chain in sorted(writes, key=str))
    return found


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


def _names_dunder_name(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "__name__"


def _is_globals_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
        node.func.id == "globals" and not node.args and not node.keywords


def _own_class_of_self(node: ast.AST) -> bool:
    """`type(self)` or `self.__class__`: in a method, the student's own class."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            node.func.id == "type" and len(node.args) == 1 and not node.keywords:
        node = node.args[0]
    elif isinstance(node, ast.Attribute) and node.attr == "__class__":
        node = node.value
    else:
        return False
    return isinstance(node, ast.Name) and node.id == "self"


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
        # Every change of the alias tables below (aliases.py): owners_of's resolutions hold
        # until the next.
        self.alias_changes = Changes()
        # id(candidate) -> (changes then, its resolution, the candidate: kept, so its id is)
        self._resolved: dict[int, tuple] = {}
        # local name -> module (or module.attribute) it is
        self.modules: dict[str, str] = Aliases(self.alias_changes)
        # ... in a function's or class's own scope (Scopes): id(scope) -> its names so
        self.scoped: dict[int, dict[str, str]] = {}
        self.scopes: Scopes | None = None
        self.called: set[int] = set()       # expressions in the called position of a call
        # ... of a call whose first argument is `self` or `cls`: `object.__setattr__(self, ...)`
        # in a frozen dataclass's __post_init__ works on the student's own object.
        self.called_on_self: set[int] = set()
        self.skip_strings: set[int] = set()  # constants judged where they are used
        self.line_offset = line_offset      # code from exec("..."): its findings on that line
        self.defined: set[str] = set()      # names the file defines itself (def/class)
        self.judged_env: set[int] = set()   # os.environ nodes already judged as keyed uses
        self.trust_own_objects = False      # see scan_text
        self.own_objects: set[int] = set()
        self.local_names: set[int] = set()  # reads of a function's own `eval`, `compile`, ...
        self.numeric_updates: set[int] = set()   # `x.name += <a number>`
        self.stable: dict[str, str] = {}    # names that only ever import one thing
        self.env_keys: set[int] = set()     # the expressions that name environment variables
        self.file_names: set[int] = set()   # partly computed files' names (`f"PDL_{n}.json"`)
        self.worked_on: set[int] = set()    # values sliced or read from (`name[:-5]`, `.stem`)
        # The reads of `self` that are the object a method of the file's class was called on
        # (selves.py); none in code run from a string.
        self.selves = Selves()
        self.containers: Containers | None = None   # (scan) what expressions can stand for
        self.proxies: Containers | None = None
        self.handing = 0                    # setattr calls judged per call of their function
        self.writes: dict = {}              # (module, function) -> parameter_writes' entries
        # Nodes of honest idioms that name what the rules look for (`'google.colab' in
        # sys.modules`, `inspect.getfile(inspect.currentframe())`, `__main__.__file__`): no
        # finding is made at them (harmless_reads).
        self.harmless: set[int] = set()
        self.own_classes: frozenset[str] = frozenset()
        self.own_name_kept = False
        self.read_only_operands: set[int] = set()

    def scan(self, tree: ast.AST) -> None:
        self.tree, self._attribute_owners = tree, None
        self.folder = Folder(tree)
        self.scopes = scopes = Scopes(tree)
        self.learn(tree)
        # Names that can only be a plain object of the student's (own_objects.py): a field
        # of theirs named like one of torch's replaces nothing.
        self.own_objects = own_object_names(
            tree, self.modules, trust_parameters=template_script(self.relative)) \
            if self.trust_own_objects and isinstance(tree, ast.Module) else set()
        self.local_names = local_names(tree, DYNAMIC_CALLS, scopes)
        self.numeric_updates = numeric_updates(tree, module_level=self.trust_own_objects) \
            if isinstance(tree, ast.Module) else set()
        self.stable = stable_imports(tree)
        self.own_classes = own_classes(tree) if isinstance(tree, ast.Module) else frozenset()
        self.harmless |= main_file_reads(tree)
        # Whether `__name__` is the module's own name everywhere in the file (never in code run
        # from a string, whose globals its caller chose).
        self.own_name_kept = isinstance(tree, ast.Module) and self.line_offset is None and \
            not _name_bound_or_spelled(tree, _OWN_NAME)
        self.read_only_operands = _read_only_operands(tree, self.folder)
        self.containers = Containers(tree, scopes)
        # One call's own arguments, each read alone (patching_by_proxy)
        self.proxies = self.containers.without_calls()
        self.visit(tree)
        # A term and the same term detached, with opposite signs (a custom Function or a hook
        # on an autograd node alike): a value of zero that passes a gradient, which the
        # gradient watch would count as a stage's work (cancelling.py).
        for node, what in cancelling_findings(tree):
            self.found(node, "cancelling_term", what)
        if self.writes:   # functions of other files handed on (`map(utils.patch, [...])`)
            for call in self.containers.handed_calls:
                full = self.resolve(call.func)
                if full is not None:
                    self.handed_to_another_file(call, full)

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
            elif isinstance(node, ast.Compare) and _names_dunder_name(node.left):
                self.skip_strings |= {id(c) for c in node.comparators}
                # `__name__ in ("__main__", "__mp_main__")`: the same guard
                self.skip_strings |= {id(e) for c in node.comparators
                                      if isinstance(c, (ast.Tuple, ast.List, ast.Set))
                                      for e in c.elts if isinstance(e, ast.Constant)}
            elif isinstance(node, ast.Compare) and any(map(_names_dunder_name, node.comparators)):
                self.skip_strings.add(id(node.left))   # `if "__main__" == __name__:`

    def own_self(self, node: ast.AST | None) -> bool:
        """`self` (or `cls`) where it is the object a method of the student's own class was
        called on: what the class does to it replaces nothing of torch's."""
        return node is not None and self.line_offset is None and \
            self.selves.own(self.relative, node)

    def not_own_self(self, node: ast.AST | None) -> str:
        """For a `self` that is not one (a plain function's parameter, a method called with
        another first argument): why, to say with the finding; else ""."""
        if node is None or not _is_self(node) or self.own_self(node):
            return ""
        return f" ({node.id} here may be any object: {self.selves.reason(self.relative, node)})"

    # -- recording ----------------------------------------------------------------------------
    def found(self, node: ast.AST, category: str, what: str) -> None:
        line = self.line_offset if self.line_offset is not None else getattr(node, "lineno", 0)
        code = self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""
        if len(code) > 100:
            code = code[:97] + "..."
        if id(node) in self.harmless:
            return
        if (line, category) in self.seen:
            return  # one finding of a kind per line is enough to look at it
        self.seen.add((line, category))
        self.findings.append(Finding(self.relative, line, category, what, code))

    def resolve(self, node: ast.AST) -> str | None:
        """The full dotted name behind an expression, through import aliases (`nn.Linear` ->
        `torch.nn.Linear`) and getattr with a constant name; None when it does not start at an
        imported module."""
        own = self.own_module_name(node)
        if own is not None:
            return self.modules[own] if own in self.modules else None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id == "getattr" and len(node.args) >= 2:
            names = self.folder.strings(node.args[1])
            base = self.resolve(node.args[0])
            return f"{base}.{names[0]}" if base and len(names) == 1 else None
        dotted = _dotted(node)
        if isinstance(node, ast.Attribute) and dotted is None:
            # on a call (`getattr(torch, "nn").Linear`) or a lookup (`globals()["torch"].cuda`)
            base = self.resolve(node.value)
            return f"{base}.{node.attr}" if base else None
        if dotted is None:
            return self.imported_through(node)
        head, _, rest = dotted.partition(".")
        while isinstance(node, ast.Attribute):
            node = node.value
        modules = self.names_in_scope(node)
        if head not in modules:
            return None
        return modules[head] + ("." + rest if rest else "")

    def own_module_name(self, node: ast.AST) -> str | None:
        """The global name X of the script's own module an expression reads: the bare name X to
        every rule (`sys.modules[__name__].torch.Tensor.cpu = f` replaces torch.Tensor.cpu, adv57
        F-D). `sys.modules[__name__]` (or `.get(__name__)`) read as `.X` or
        `getattr(..., "X"[, default])`, and `globals()["X"]` or `globals().get("X")`."""
        if isinstance(node, ast.Attribute) and self.is_own_module(node.value):
            return node.attr
        if not isinstance(node, (ast.Call, ast.Subscript)):
            return None
        if isinstance(node, ast.Subscript):
            owner, key = node.value, node.slice
        elif isinstance(node.func, ast.Name) and node.func.id == "getattr" and \
                len(node.args) in (2, 3) and self.is_own_module(node.args[0]):
            owner, key = None, node.args[1]
        elif isinstance(node.func, ast.Attribute) and node.func.attr == "get" and \
                len(node.args) in (1, 2):
            owner, key = node.func.value, node.args[0]
        else:
            return None
        if owner is not None and not _is_globals_call(owner):
            return None
        names = self.folder.strings(key)
        return names[0] if len(names) == 1 else None

    def is_own_module(self, node: ast.AST) -> bool:
        """`sys.modules[__name__]` or `sys.modules.get(__name__)`: the script's own module."""
        if isinstance(node, ast.Subscript):
            return _names_dunder_name(node.slice) and self.is_sys_modules(node.value)
        return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
            node.func.attr == "get" and len(node.args) in (1, 2) and \
            _names_dunder_name(node.args[0]) and self.is_sys_modules(node.func.value)

    def names_in_scope(self, node: ast.AST) -> dict[str, str]:
        """The aliases (`t = torch`, an import) of the scope a name is a variable of: the
        module's (with every import of the file, wherever it is: learn), or a function's or
        class's own, where a binding elsewhere neither makes nor undoes one."""
        scope = self.scopes.of(node) if self.scopes is not None else self.tree
        if scope is self.tree or scope is None:
            return self.modules
        aliases = self.scoped.get(id(scope))
        if aliases is None:   # (an empty table: no resolution changes)
            aliases = self.scoped[id(scope)] = Aliases(self.alias_changes)
        return aliases

    def imported_through(self, node: ast.AST) -> str | None:
        """What an import's binding (an ast.alias, which the container reading gives for a
        name an import binds in its scope) or an attribute chain on one stands for."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.alias) or self.containers is None or \
                id(node) not in self.containers.imports:
            return None
        return ".".join([self.containers.imports[id(node)], *reversed(parts)])

    # -- imports ------------------------------------------------------------------------------
    def imported(self, node: ast.AST, module: str) -> None:
        for prefix, category in MODULE_CATEGORIES.items():
            if module == prefix or module.startswith(prefix + "."):
                self.found(node, category, f"imports {module}")
                return
        parts = module.split(".")
        if parts[0] == "torch" and any(p.startswith("_") for p in parts[1:]):
            self.torch_private(node, module, "imports")
        if module.startswith(RAW_MEMORY_FUNCTIONS):
            self.found(node, "introspection", f"imports {module} (a view of raw memory)")

    def torch_private(self, node, full: str, verb: str) -> None:
        """A private part of torch: its dispatch machinery is tampering, the rest a note."""
        if full.startswith(TORCH_PRIVATE_SETTINGS):
            self.found(node, "library_settings", f"{verb} torch's private {full}")
        elif full.startswith(TORCH_DISPATCH_MODULES):
            self.found(node, "torch_internals", f"{verb} {full}")
        else:
            self.found(node, "torch_private", f"{verb} {full}")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name == "__main__" and id(alias) in self.harmless:
                # only `hasattr(__main__, "__file__")` and the like: am I a script or a
                # notebook? (main_file_reads)
                self.names_in_scope(alias)[alias.asname or "__main__"] = "__main__"
                continue
            self.imported(node, alias.name)
            if alias.asname:
                self.names_in_scope(alias)[alias.asname] = alias.name
            else:
                head = alias.name.split(".")[0]
                self.names_in_scope(alias)[head] = head
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level:
            self.generic_visit(node)
            return  # the submission's own modules: scanned as files
        if any(alias.name == "*" for alias in node.names):
            for category in STAR_SENSITIVE.get(module, ()):
                self.found(node, category, f"imports every name of {module}")
        self.imported(node, module)
        for alias in node.names:
            full = f"{module}.{alias.name}"
            self.imported(node, full)
            self.attribute_named(node, alias.name, base=None, full=full, load=True)
            self.names_in_scope(alias)[alias.asname or alias.name] = full
        self.generic_visit(node)

    # -- names, attributes, strings ---------------------------------------------------------
    def visit_Name(self, node: ast.Name) -> None:
        if self.is_environ(node) and id(node) not in self.judged_env and \
                isinstance(node.ctx, ast.Load):
            self.found(node, "environment", "uses the environment as a whole")
        if node.id == "__builtins__":
            self.found(node, "introspection", "uses __builtins__")
        elif node.id in RAW_MEMORY_NAMES:
            self.found(node, "introspection", f"defines {node.id} (a view of raw memory)")
        elif node.id in DYNAMIC_CALLS and isinstance(node.ctx, ast.Load) and \
                id(node) not in self.called and node.id not in self.modules and \
                node.id not in self.names_in_scope(node) and \
                node.id not in self.defined and id(node) not in self.local_names:
            self.found(node, "dynamic_code", f"passes {node.id} around")
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self.attribute_named(node, node.attr, base=node.value, full=self.resolve(node),
                             load=isinstance(node.ctx, ast.Load))
        self.worked_on.add(id(node.value))
        self.generic_visit(node)

    def attribute_named(self, node, name: str, *, base, full: str | None, load: bool,
                        called: bool | None = None) -> None:
        """The rules on an attribute `name` read from `base` (None: imported by name), by its
        name alone, then by the module it resolves to (`full`)."""
        if called is None:
            called = id(node) in self.called
        on_self = self.own_self(base)
        if name in INTERPRETER_ATTRIBUTES and not (
                name in ALLOWED_ON_SUPER and base is not None and
                (_is_super_call(base) or on_self or id(node) in self.called_on_self)):
            self.found(node, "introspection", f"reads {name}")
        if name == UNCALLED_MODULES and not called and base is not None and not on_self and \
                resolve_stable(base, self.stable) != "torch.nn":
            # (`nn.modules.linear.Linear` is torch's package; any other object may be sys)
            self.found(node, "introspection", "reads sys.modules (the loaded modules)")
        if _torch_internal(name) and not on_self:
            self.found(node, "torch_internals", f"uses {name}")
        if name in GRADER_IDENTIFIERS and not on_self and \
                not (base is not None and id(base) in self.own_objects):
            self.found(node, "grader", f"uses {name}, a name of the grader's own objects")
        if name in NOTE_ATTRIBUTES and base is not None and not on_self:
            self.found(node, NOTE_ATTRIBUTES[name], f"uses {name}")
        if name == "marshal" and base is not None and not on_self:
            self.found(node, "dynamic_code", "uses marshal")
        if name in ("ctypes", "_ctypes") and base is not None and not on_self:
            self.found(node, "dynamic_code", f"reaches ctypes through {_dotted(base) or 'an object'}")
        if name in RAW_MEMORY_NAMES:
            self.found(node, "introspection", f"uses {name} (a view of raw memory)")
        if base is not None and self.is_environ(node) and id(node) not in self.judged_env:
            self.found(node, "environment", "uses the environment as a whole")
        if name in PROCESS_CALLS and not on_self:
            self.found(node, "processes", f"uses {name}")
        if name in OUTPUT_CALLS:
            self.found(node, "output", f"uses {name}")
        if name == "__dict__" and base is not None and (
                _class_level(base) or (self.resolve(base) or "").split(".")[0]
                in PROTECTED_ROOTS | {"torch"}):
            self.found(node, "introspection", "reads the namespace of a module or class "
                       "(__dict__)")
        if full in _DYNAMIC_BUILTINS and not called:
            # `run(builtins.exec, text)`: the builtin handed to code that calls it
            self.found(node, "dynamic_code", f"passes {name} around")
        if full is not None:
            self.module_attribute(node, full)

    def module_attribute(self, node, full: str) -> None:
        parts = full.split(".")
        root, last = parts[0], parts[-1]
        if root == "sys" and len(parts) > 1 and parts[1] in ("monitoring", "modules"):
            self.found(node, "introspection", f"uses sys.{parts[1]}")
        elif root == "torch" and any(p.startswith("_") and not p.startswith("__")
                                     for p in parts[1:]):
            self.torch_private(node, full, "uses")
        elif full.startswith(RAW_MEMORY_FUNCTIONS):
            self.found(node, "introspection", f"uses {full} (a view of raw memory)")
        elif root in ("os", "posix") and last in OS_PROCESS_CALLS and len(parts) == 2:
            self.found(node, "processes", f"uses {root}.{last}")
        elif root == "signal" and last in SIGNAL_HANDLING and len(parts) == 2:
            # The node installs the submission's handlers wrapped: they are called without the
            # frame they interrupt (grader/vgpu/guard.py, frameless_signals).
            self.found(node, "exit_hooks", f"uses signal.{last}")
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
        values = self.folder.values(node)
        for blob in (values if not isinstance(values, Unknown) else ()):
            if isinstance(blob, bytes) and len(blob) > 4:   # a pickle that calls when loaded
                bad = dangerous_globals(pickle_globals(blob) or [])
                if bad:
                    self.found(node, "dynamic_code", "a pickle that calls "
                               + ", ".join(sorted(set(bad))[:5]) + " when it is loaded")
        texts = self.folder.strings(node)
        partial = skeleton(node)
        if partial is not None:
            texts = texts + [partial]
        for text in texts:
            family_written, pdl_written = _spells_a_setting(text)
            if pdl_written and not family_written and HOLE in text and \
                    _FILE_NAME.search(text) and id(node) not in self.env_keys and \
                    id(node) not in self.worked_on:
                # a file's name (f"PDL_{n}gpu.json"), neither read from the environment nor cut
                # back to a setting's name here (`f"PDL_{x}.json"[:-5]`): its parts neither
                self.file_names |= {id(part) for part in ast.walk(node)}
            elif (family_written or pdl_written) and id(node) not in self.file_names:
                self.found(node, "grader_settings", f"names the grader's setting "
                           f"{text.replace(HOLE, '…')[:40]!r}")
            if ("proc" in text or "/dev/fd/" in text) and proc_path(text):
                self.found(node, "proc_files", f"opens {text.replace(HOLE, '…')[:40]!r}")
            if text in INTERPRETER_ATTRIBUTES:
                self.found(node, "introspection", f"names {text}")
            if text in RAW_MEMORY_NAMES:
                self.found(node, "introspection", f"names {text} (a view of raw memory)")
            if _torch_internal(text) and len(text) > 8:
                self.found(node, "torch_internals", f"names {text}")
            if text == "grader" or text.startswith("grader.") or text in GRADER_IDENTIFIERS \
                    or text == "__main__":
                self.found(node, "grader", f"names the grader's {text[:40]!r}")
            parts = [part.split(HOLE)[-1] for part in re.split(r"[/\\]", text)]
            if any(part == name or part.startswith(name + ".") for part in parts
                   for name in GRADER_FILES):
                # The file itself (a path's part, after any unknown prefix), not a name that
                # holds it ("hw3_trace.jsonl"; a student's own "trace.jsonl" is no name of ours).
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
        if isinstance(node.ctx, ast.Load) and self.is_sys_modules(node.value):
            self.module_taken_out(node, node.value, node.slice)
        if self.is_environ(node.value):
            self.env_key(node, node.value, node.slice)
        self.worked_on.add(id(node.value))
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        left = node.left
        for operator, right in zip(node.ops, node.comparators):
            if isinstance(operator, (ast.In, ast.NotIn)) and self.is_environ(right):
                self.env_key(node, right, left)
            if isinstance(operator, (ast.In, ast.NotIn)) and self.is_sys_modules(right) and \
                    self.folder.strings(left):
                # `'google.colab' in sys.modules`: whether a module is loaded, a bool (a key
                # naming the grader's is held where it is spelled: check_strings)
                self.harmless.add(id(right))
            left = right
        self.generic_visit(node)

    # -- the environment: a key written in the code is plain; anything else is a note ------------
    def is_environ(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Attribute):
            return node.attr in ENVIRON and not _is_self(node.value)
        if isinstance(node, ast.Name):
            return self.resolve(node) in ("os.environ", "os.environb")
        return False

    def is_sys_modules(self, node: ast.AST) -> bool:
        return isinstance(node, (ast.Attribute, ast.Name)) and \
            self.resolve(node) == "sys.modules"

    def module_taken_out(self, node: ast.AST, modules: ast.AST, key: ast.AST) -> bool:
        """`sys.modules.get("google.colab")`, `sys.modules["ipykernel"]`: a module read out by
        a name written in the code is that import, unless it is one whose objects the runtime
        relies on or the scan judges by name (torch, the grader, `__main__`, the standard
        library's protected and private modules): the scan could not follow what is done with
        those through the value read. Any other key (computed) stays a read of sys.modules."""
        if isinstance(key, ast.Name) and key.id == _OWN_NAME and self.own_name_kept and \
                id(node) in self.read_only_operands:
            # `getattr(sys.modules[__name__], MODEL_NAME)`: a name read from the script's own
            # module, as globals() gives it (adv53 F6). A write, a deletion, .pop(), another
            # key, the module kept or handed on (where it could be written through) are never
            # read here, and a file that binds or spells `__name__` is not trusted.
            self.harmless.add(id(modules))
            return True
        names = self.folder.strings(key)
        if not names or not all(_ordinary_module(name) for name in names):
            return False
        self.harmless.add(id(modules))
        for name in names:
            self.imported(node, name)
        return True

    def env_key(self, node: ast.AST, environ: ast.AST | None, key: ast.AST | None) -> None:
        if environ is not None:
            self.judged_env.add(id(environ))
        if key is not None:
            self.env_keys |= {id(part) for part in ast.walk(key)}
        if key is None or not self.folder.strings(key):
            self.found(node, "environment", "reads an environment variable by a computed name")

    # -- calls and assignments --------------------------------------------------------------
    def visit_Call(self, node: ast.Call) -> None:
        function = node.func
        self.called.add(id(function))
        if isinstance(function, ast.Attribute) and function.attr == "get" and \
                self.is_sys_modules(function.value) and node.args and not node.keywords and \
                len(node.args) <= 2:
            if self.module_taken_out(node, function.value, node.args[0]):
                self.harmless.add(id(function))   # `sys.modules.get` itself
        if self.resolve(function) in _FILE_OF_FRAME and len(node.args) == 1 and \
                not node.keywords and isinstance(node.args[0], ast.Call) and \
                not node.args[0].args and not node.args[0].keywords and \
                self.resolve(node.args[0].func) == "inspect.currentframe":
            # `inspect.getfile(inspect.currentframe())`: the script's own file's name (the
            # frame is handed straight to getfile, nothing else sees it)
            self.harmless.add(id(node.args[0].func))
        if node.args and self.own_self(node.args[0]):
            self.called_on_self.add(id(function))
        self.check_strings(node)
        name = function.id if isinstance(function, ast.Name) else None
        full = self.resolve(function)
        if name in DYNAMIC_CALLS and name not in self.modules and \
                name not in self.names_in_scope(function) and name not in self.defined \
                or full in ("builtins.exec", "builtins.eval", "builtins.compile",
                            "builtins.__import__"):
            self.dynamic_call(node, name or full.split(".")[-1])
        if full in ("importlib.import_module", "importlib.__import__"):
            self.dynamic_call(node, "__import__")
        if name in ("getattr", "setattr", "delattr", "hasattr") and name not in self.defined \
                or full in _ATTRIBUTE_BUILTINS:
            self.attribute_call(node, name or full.rpartition(".")[2])
        else:
            self.patching_by_proxy(node)
        if full is not None and self.writes:
            self.handed_to_another_file(node, full)
        if full is not None and (full in _MOCK_PATCHERS or
                                 full.rpartition(".")[0] in _MOCK_PATCHERS):
            self.mock_patch(node, full)
        elif isinstance(function, ast.Attribute) and function.attr in ("setattr", "delattr") \
                and full is None and node.args:
            self.monkeypatch(node, function.attr)
        if isinstance(function, ast.Attribute) and self.is_environ(function.value):
            self.judged_env.add(id(function.value))
            if function.attr in ENV_METHODS_WITH_KEY:
                self.env_key(node, None, node.args[0] if node.args else None)
            elif function.attr == "update" and (not node.args or (
                    len(node.args) == 1 and isinstance(node.args[0], ast.Dict) and all(
                        k is not None and self.folder.strings(k) for k in node.args[0].keys))):
                pass  # os.environ.update(NAME=value) or ({"NAME": value}): names in the code
            else:
                self.found(node, "environment", f"uses the environment as a whole "
                           f"(environ.{function.attr}())")
        if (isinstance(function, ast.Attribute) and function.attr in GETENV and
                not _is_self(function.value)) or (full or "").split(".")[-1] in GETENV and \
                (full or "").startswith("os."):
            self.env_key(node, None, node.args[0] if node.args else None)
        if name in ("vars", "dir") and node.args and name not in self.defined:
            target = (self.resolve(node.args[0]) or "").split(".")[0]
            if target in COMPUTED_LOOKUP_TAMPERING or _class_level(node.args[0]):
                self.found(node, "introspection", f"lists the names of {target or 'a class'} "
                           f"with {name}()")
        if full is not None and full.split(".")[0] in ("pickle", "_pickle", "dill",
                                                       "cloudpickle") and \
                full.endswith(".loads") and node.args:
            blobs = [v for v in self.folder.values(node.args[0]) if isinstance(v, bytes)] \
                if not isinstance(self.folder.values(node.args[0]), Unknown) else []
            for blob in blobs:
                self.findings += scan_pickle_bytes(blob, self.relative, node.lineno,
                                                    self._code(node.lineno))
        self.generic_visit(node)

    def handed_to_another_file(self, node: ast.Call, full: str) -> None:
        """A call of a function of another module of the submission (`utils.patch(x)`, or
        `patch(x)` of a `from utils import patch`) that sets attributes on a parameter
        (parameter_writes): what it sets on the object handed there, judged as that
        assignment here (`utils.patch(torch.Tensor)` of a `def patch(T): T.cpu = f` replaces
        torch.Tensor.cpu; `utils.configure(torch)` of a `T.backends.cudnn.benchmark = True`
        sets the flag, as written out)."""
        module, _, function = full.rpartition(".")
        stem = module.rpartition(".")[2]
        entries = self.writes.get((stem, function)) if stem in self.own_modules else None
        if not entries:
            return
        for parameter, position, chain in entries:
            handed = [k.value for k in node.keywords if k.arg == parameter]
            handed += [value for k in node.keywords if k.arg is None
                       for value in self.containers.elements(k.value)]
            for at, argument in enumerate(node.args):
                if isinstance(argument, ast.Starred):   # any of its elements, from here on
                    if position is not None and at <= position:
                        handed += self.containers.elements(argument.value)
                    break
                if at == position:
                    handed.append(argument)
            for value in handed:
                for owner in dict.fromkeys(self.owners_of(value)):
                    if chain is None:
                        self.found(node, "patching", f"hands {owner} to {full}, which sets "
                                   f"attributes of its {parameter} by a computed name")
                    else:
                        self.assigned_to(node, f"{owner}.{chain}")

    def patching_by_proxy(self, node: ast.Call) -> None:
        """A call handed a module or class of torch (builtins, ...) and the name of a function
        the instrumentation relies on: a helper or decorator that replaces it (`@replace(
        nn.Module, "parameters")`), whatever it calls the two inside."""
        values = []   # what the call is handed, unpacked where it is unpacked from containers
        for argument in node.args:
            values += self.proxies.elements(argument.value) \
                if isinstance(argument, ast.Starred) else [argument]
        for keyword in node.keywords:
            values += self.proxies.elements(keyword.value) if keyword.arg is None \
                else [keyword.value]
        owners = [owner for value in values for owner in self.owners_of(value, self.proxies)]
        if not owners:
            return
        for value in values:
            named = [t for candidate in self.proxies.candidates(value)
                     for t in self.folder.strings(candidate) if t in PATCHED_NAMES and len(t) > 2]
            if named:
                self.found(node, "patching", f"hands {owners[0]} and "
                           f"'{named[0]}' to a function (replacing it by proxy)")
                return

    def owners_of(self, node: ast.AST, containers: Containers | None = None) -> list[str]:
        """The modules and classes of torch (builtins, ...) an expression can be, also taken out
        of a container, a parameter or a loop (Containers): not their data (sys.stdout,
        torch.float32)."""
        found, judged = [], set()
        containers = containers or self.containers
        candidates = containers.candidates(node)
        containers.allowance.spend(len(candidates))
        for candidate in candidates:
            # The same expression reached along two ways resolves to the same name: judged once
            # (a variable that stands for many others lists them many times).
            if id(candidate) in judged:
                continue
            judged.add(id(candidate))
            full = self.resolved(candidate)
            if full is not None and full.split(".")[0] in PROTECTED_ROOTS and \
                    full not in _DATA_OWNERS and not (
                        full.startswith("torch.") and full[6:] in _TORCH_DTYPES):
                found.append(full)
        return found

    def resolved(self, candidate: ast.AST) -> str | None:
        """self.resolve(candidate), remembered until an alias table changes: an attribute
        chain on a name or an import resolves through those tables alone. One on a call
        (`getattr(m, name)`) is resolved each time: it reads constants, whose folding has a
        budget."""
        root = candidate
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Call):
            return self.resolve(candidate)
        changes = self.alias_changes.count
        known = self._resolved.get(id(candidate))
        if known is not None and known[0] == changes:
            return known[1]
        full = self.resolve(candidate)
        self._resolved[id(candidate)] = (changes, full, candidate)
        return full

    def attribute_owner(self, attribute: str) -> str | None:
        """What of torch's (builtins', ...) an attribute of this name can hold, wherever it is
        read: given one by `self.F = torch.nn.functional` or `F = torch.nn.functional` in a
        class body (then `self.F.linear = f`, `Holder.F.relu = f` set torch's)."""
        if self._attribute_owners is None:
            self._attribute_owners = {}
            for node in ast.walk(self.tree):
                if isinstance(node, ast.ClassDef):
                    pairs = [(target.id, statement.value) for statement in node.body
                             if isinstance(statement, ast.Assign) for target in statement.targets
                             if isinstance(target, ast.Name)]
                elif isinstance(node, ast.Assign):
                    pairs = [(target.attr, node.value) for target in node.targets
                             if isinstance(target, ast.Attribute)]
                else:
                    continue
                for name, value in pairs:
                    owners = self.owners_of(value) if isinstance(
                        value, (ast.Name, ast.Attribute)) else []
                    if owners:
                        self._attribute_owners.setdefault(name, owners[0])
        return self._attribute_owners.get(attribute)

    def mock_patch(self, node: ast.Call, full: str) -> None:
        """unittest.mock's patchers replace what they name until undone (a context's end, a
        decorated function's return, stop()), which the runtime's closing check never sees:
        judged as the assignment they make. `patch("a.b.c")`, `patch.dict("sys.modules")` by
        the dotted name; `patch.object(owner, name)` as setattr; `patch.multiple(owner,
        name=...)` as setattr of each name."""
        kind = full.rpartition(".")[2] if full not in _MOCK_PATCHERS else "patch"
        arguments = {"patch": ("target",), "dict": ("in_dict",), "object": ("target",
                                                                              "attribute"),
                     "multiple": ("target",)}.get(kind)
        if arguments is None:
            return   # stopall, TEST_PREFIX, ...
        given = list(node.args[:len(arguments)]) + [
            k.value for k in node.keywords if k.arg in arguments[len(node.args):]]
        if any(isinstance(a, ast.Starred) for a in node.args) or \
                any(k.arg is None for k in node.keywords) or len(given) < len(arguments):
            self.found(node, "patching", f"calls mock.{kind} with unpacked arguments")
            return
        if kind == "patch":
            self.patched_by_name(node, given[0], "mock.patch")
        elif kind == "dict":
            if self.resolve(given[0]) is not None or \
                    isinstance(given[0], (ast.Dict, ast.Attribute, ast.Subscript)):
                return   # an object (os.environ, sys.modules, a dict): judged where it is read
            if set(self.folder.strings(given[0])) & {"os.environ", "os.environb"}:
                # the environment's items replaced: their names are read where they are written
                self.found(node, "environment", "uses the environment as a whole "
                           "(mock.patch.dict)")
            elif self.folder.strings(given[0]) or skeleton(given[0]) is not None:
                self.patched_by_name(node, given[0], "mock.patch.dict")
            # else a dictionary of the script's own (`mock.patch.dict(config, {...})`)
        elif kind == "object":
            self.attribute_call(ast.Call(func=node.func, args=given, keywords=[],
                                         lineno=node.lineno, col_offset=node.col_offset),
                                "setattr")
            if not self.folder.strings(given[1]) and self.resolve(given[0]) is None:
                self.found(node, "patching", "mock.patch.object with a computed name on an "
                           "object the grader cannot tell")
        else:
            owner = given[0]
            # the owner, or the module it names (`patch.multiple("torch", matmul=f)`)
            prefixes = [self.resolve(owner)] if self.resolve(owner) else \
                self.folder.strings(owner) or [None]
            for keyword in node.keywords:
                if keyword.arg in (None, "target", "spec", "create", "spec_set", "autospec",
                                   "new_callable"):
                    continue
                for prefix in prefixes:
                    self.assigned_attribute(node, owner, keyword.arg,
                                            f"{prefix}.{keyword.arg}" if prefix else None)

    def patched_by_name(self, node: ast.Call, target: ast.AST, how: str) -> None:
        """A patcher given `module.attribute` as text (mock.patch, MonkeyPatch.setattr): the
        assignment it makes, where the text can be read; held where it cannot."""
        texts = self.folder.strings(target)
        for text in texts:
            module, _, attribute = text.rpartition(".")
            if module and attribute:
                self.assigned_attribute(node, ast.Constant(value=None), attribute, text)
        if texts:
            return
        partial = skeleton(target)
        root = partial.split(".")[0] if partial is not None and HOLE not in \
            partial.split(".")[0] else None
        if root is not None and "." in partial and (root in self.own_modules or
                                                    root not in PROTECTED_ROOTS):
            if root not in self.own_modules:
                self.found(node, "library_settings", f"{how} of "
                           f"{partial.replace(HOLE, '…')[:40]!r}")
            return
        self.found(node, "patching", f"{how} of a name computed at run time "
                   f"({(partial or '…').replace(HOLE, '…')[:40]!r})")

    def monkeypatch(self, node: ast.Call, name: str) -> None:
        """`x.setattr(owner, name, value)` or `x.setattr("module.name", value)` of an object
        (pytest's MonkeyPatch, anything that sets what it is given): read as setattr."""
        first = node.args[0]
        if self.folder.strings(first) or isinstance(first, (ast.JoinedStr, ast.BinOp)) and \
                skeleton(first) is not None:
            if len(node.args) == 2 or name == "delattr" and len(node.args) == 1:
                self.patched_by_name(node, first, f"{name}()")
            return
        if len(node.args) >= 2:
            self.attribute_call(node, name)

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
        if name in ("setattr", "delattr") and self.judged_per_call(node, name):
            return
        names = self.folder.strings(attribute)
        base_full = self.resolve(target)
        if base_full is None and name in ("setattr", "delattr"):
            owners = self.owners_of(target)   # `setattr([torch][0], "matmul", f)`
            base_full = owners[0] if owners else None
        for text in names:
            full = f"{base_full}.{text}" if base_full else None
            self.attribute_named(node, text, base=target, full=full, load=name != "setattr",
                                 called=False)
            if name in ("setattr", "delattr"):
                self.assigned_attribute(node, target, text, full)
        if not names:
            root = (base_full or "").split(".")[0]
            partial = skeleton(attribute)
            if partial is not None and _torch_internal(partial) and len(partial) > 8:
                # `getattr(module, "_global_" + kind)`: one of torch's hook tables
                self.found(node, "torch_internals", f"{name}() of {partial.replace(HOLE, '…')}")
            elif root in COMPUTED_LOOKUP_TAMPERING or _class_level(target):
                self.found(node, "introspection", f"{name}() with a computed name on "
                           f"{base_full or 'a class'}")
            elif name in ("setattr", "delattr") and base_full is not None and \
                    root not in self.own_modules:
                self.found(node, "patching" if root in PROTECTED_ROOTS else "library_settings",
                           f"{name}() with a computed name on {base_full}")
            elif base_full is not None and root not in self.own_modules:
                self.found(node, "dynamic_attribute", f"{name}() with a computed name on "
                           f"{base_full}")

    MAX_HANDING = 4   # helpers handing the name on to helpers, followed so deep

    def judged_per_call(self, node: ast.Call, name: str) -> bool:
        """`setattr(owner, name, value)` in a function whose parameter names the attribute
        (`def put(m, n, v): setattr(m, n, v)`): judged at each call of the function in the file
        that hands it torch's (builtins', ...) object, as the setattr it makes there
        (`put(torch.backends.cudnn, "benchmark", True)` as `setattr(torch.backends.cudnn,
        "benchmark", True)`; each call's owner with that call's name, never another's). A call
        handing an object of the student's sets what it names on that object (`put(stats,
        "forward", 1.0)`), as before. False (judged as it is written) where the name is no such
        parameter, the function has no call here, or a call hands the name unpacked."""
        target, attribute = node.args[0], node.args[1]
        function = self.containers.parameter_of(attribute)
        calls = self.containers.calls_of(function) if function is not None else []
        if not calls or self.handing >= self.MAX_HANDING:
            return False
        made = []
        for call, shift in calls:
            names = self.containers.handed(call, function, shift, attribute.id)
            owners = self.containers.handed(call, function, shift, target.id) \
                if self.containers.parameter_of(target) is function else [target]
            if names is None:
                return False
            made += [(owner, text) for owner in owners or [target] if self.owners_of(owner)
                     for text in names]
        self.handing += 1
        try:
            for owner, text in made:
                self.attribute_call(ast.Call(func=node.func, args=[owner, text, *node.args[2:]],
                                             keywords=[], lineno=node.lineno,
                                             col_offset=node.col_offset), name)
        finally:
            self.handing -= 1
        return True

    def assigned_attribute(self, node, base: ast.AST, name: str, full: str | None) -> None:
        """`base.name = value` (also augmented, annotated, deleted, setattr)."""
        if _class_level(base):
            # A counter on the student's own class (`type(self).calls += 1`, `... = 0`)
            # replaces nothing; a name the instrumentation relies on, a private one, or any
            # value but a number written out (a method called with a tensor as self makes
            # type(self) torch.Tensor; `+= obj` lets obj's __radd__ choose) still replaces.
            value = getattr(node, "value", None)
            counter = isinstance(node, (ast.AugAssign, ast.Assign, ast.AnnAssign)) and \
                isinstance(value, ast.Constant) and type(value.value) in (int, float)
            if counter and _own_class_of_self(base) and not name.startswith("_") and \
                    name not in PATCHED_NAMES:
                return
            self.found(node, "patching", f"replaces {name} on a class it looked up from an object")
            return
        if name == "__class__":
            self.found(node, "patching", "changes an object's class")
            return
        if name in _MAKES_OBJECTS:
            self.found(node, "patching", f"replaces {name}, which decides what an object is "
                       "made as")
            return
        if name == "forward" and isinstance(base, ast.Name) and base.id in self.own_classes:
            # `MyNet.forward = timed(MyNet.forward)`: the forward of a class the file defines
            # (and binds nothing else to): its own models' forward; torch's hooks still run
            return
        if name in PATCHED_NAMES and not self.own_self(base) and \
                id(base) not in self.own_objects and \
                not (id(node) in self.numeric_updates and name in _NUMERIC_FIELDS):
            self.found(node, "patching", f"replaces {name}, which the grader's instrumentation "
                       f"relies on{self.not_own_self(base)}")
            return
        if full is None:
            # `[torch][0].matmul = f`, `for t in (torch,): t.matmul = f`, `def g(T): T.add = f`
            # called as `g(torch.Tensor)`, `t.nn.functional.linear = f` of a `t = torch`
            owners = self.owners_of(base) if isinstance(base, (ast.Subscript, ast.Name, ast.Call,
                                                               ast.IfExp, ast.BoolOp,
                                                               ast.NamedExpr, ast.Attribute)) \
                else []
            if not owners and isinstance(base, (ast.Attribute, ast.Call, ast.Name)):
                # `self.F.linear = f`; `holder.get().cpu = f` of a `def get(self): return
                # self.T` where `self.T = T` was handed torch.Tensor
                held_in = [self.attribute_owner(candidate.attr)
                           for candidate in self.containers.candidates(base)
                           if isinstance(candidate, ast.Attribute)]
                owners = [owner for owner in held_in if owner]
            for owner in dict.fromkeys(owners):
                self.assigned_to(node, f"{owner}.{name}")
            return
        self.assigned_to(node, full)

    def assigned_to(self, node, full: str) -> None:
        """An assignment (or deletion) of the attribute `full` names, read to its end."""
        full = through_own_module(full, self.own_modules)
        root = full.split(".")[0]
        if root in self.own_modules or full.startswith(ALLOWED_SETTINGS):
            return
        if full in OUTPUT_STREAMS:
            self.found(node, "output", f"replaces {full}")
        elif root in PROTECTED_ROOTS and not full.startswith(TORCH_PRIVATE_SETTINGS):
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

    def _alias(self, target: ast.Name, value: ast.AST | None) -> None:
        # `t = torch`, `L = nn.Linear`: the name stands for what it was given, in its scope
        full = self.resolve(value) if isinstance(value, (ast.Name, ast.Attribute, ast.Call)) \
            else None
        modules = self.names_in_scope(target)
        if full is not None:
            modules[target.id] = full
        elif target.id in modules and value is not None:
            modules.pop(target.id)

    def _alias_defaults(self, function: ast.AST) -> None:
        """`def g(T=torch.Tensor)`: called without it, the parameter is its default, so the
        name stands for that in the function as an assignment's would (`T.add = f` replaces
        torch.Tensor.add)."""
        for name, default in parameter_defaults(function.args):
            full = self.resolve(default) \
                if isinstance(default, (ast.Name, ast.Attribute, ast.Call)) else None
            if full is not None:
                self.scoped.setdefault(id(function), Aliases(self.alias_changes))[name] = full

    def _bind(self, target: ast.AST, value: ast.AST | None) -> None:
        if isinstance(target, ast.Name):
            self._alias(target, value)
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
        elif node.name in RAW_MEMORY_NAMES:
            self.found(node, "introspection", f"defines {node.name} (a view of raw memory)")
        elif node.name in ("__reduce__", "__reduce_ex__"):
            self.found(node, "dynamic_code", f"defines {node.name} (decides what unpickling "
                       "calls)")
        self._alias_defaults(node)
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._alias_defaults(node)
        self.generic_visit(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            full = self.resolve(base) or _dotted(base) or ""
            if full.split(".")[-1] in TORCH_INTERNAL_NAMES:
                self.found(node, "torch_internals", f"subclasses {full}")
        self.generic_visit(node)
