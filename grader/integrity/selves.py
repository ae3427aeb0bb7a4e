"""Where `self` (or `cls`) can only be the object a method of the submission's own class was
called on.

The scan leaves alone what a class does to its own objects: `self.forward = self.timed` in a
model's `__init__`, `object.__setattr__(self, ...)` in a frozen dataclass, `self._forward_hooks`
of a module of one's own. That holds only where `self` is such an object. A function is
handed whatever its caller chooses as its first argument where it is
- no method of a class (`def patch(self)` at module level, a lambda, a staticmethod), or one
  under a decorator that may call it itself, or one that binds `self` again;
- a method read from its class (or from `type(x)`, `x.__class__`, a classmethod's `cls`, or
  from an object that can be the class: one handed around) and called with another first
  argument (`Net.patch(torch.nn.Linear)`), handed around (`map(Net.patch, ...)`), or looked
  up by name on its class (`getattr(Net, "patch")`, `vars(Net)["patch"]`);
- a decorated method read other than to call it: a decorator that wraps it keeps the
  undecorated function (`__wrapped__`, `inspect.unwrap(net.patch)`).
A decorator the file defines calls the method with no argument of its choosing where its
wrapper only forwards what it is given (`fn(*args, **kwargs)` after a print or a timing). A
method read from its class keeps its `self` where it is called with an object of the student's
own as its first argument (`Net.patch(net)` of a `net = Net()`: own_objects.py), or bound to one
by a `functools.partial` that is only ever called. A name a method binds once to
`copy.copy(self)` or `copy.deepcopy(self)` is an object of the student's own as `self` is,
unless the submission decides what copying makes (a copy hook, copyreg). These three hold only
where no file can rebind another's names (`objects_trusted`), as objects of the student's own
do.
Calls and reads of a method's name are judged wherever the submission makes them, in any of its
files, by name (a call of `layer.forward(x)` counts against every method named `forward`): a
method keeps its `self` only where none of them can call it with another first argument. A
call through the base class with the caller's own `self` (`Net.__init__(self, depth)`,
`nn.Module.__setattr__(self, name, value)`) hands over an object of the student's own, as long
as that method's `self` is one too.

What this cannot see is a name computed at run time (`getattr(k, data)` on a class handed
around, a copy hook given a name read from data): the runtime's closing check
(grader/vgpu/guard.py) sees torch's classes replaced.
"""
from __future__ import annotations

import ast
from collections import Counter
from dataclasses import dataclass, field

from grader.integrity.constants import HOLE, Folder, skeleton
from grader.integrity.names import (ALLOWED_ON_SUPER, GRADER_IDENTIFIERS, NOTE_ATTRIBUTES,
                                    PATCHED_NAMES, PROCESS_CALLS, TELLING_METHODS,
                                    TORCH_INTERNAL_NAMES, TORCH_INTERNAL_PREFIXES,
                                    UNCALLED_MODULES)
from grader.integrity.own_objects import own_object_names, template_script
from grader.integrity.scopes import _bound_by, _outer_parts, _parameters, _scope_names, resolve
from grader.integrity.scopes import local_names, stable_imports, unbound_names

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp,
           ast.SetComp, ast.DictComp, ast.GeneratorExp)
SELF_NAMES = ("self", "cls")
# Decorators that never call the method themselves with an argument of their choosing. These
# wrap it: the wrapper passes on what it is called with, and keeps the method itself in its
# `__wrapped__`.
_WRAPPING_DECORATORS = frozenset({
    "torch.no_grad", "torch.inference_mode", "torch.enable_grad", "torch.compile",
    "torch.autocast", "torch.amp.autocast", "torch.cuda.amp.autocast", "functools.cache",
    "functools.lru_cache", "contextlib.contextmanager", "torch.cuda.nvtx.range",
    "torch.profiler.record_function", "torch.autograd.profiler.record_function"})
# These give the method back as it is, or a descriptor whose read on an object is no method.
_PLAIN_DECORATORS = frozenset({
    "torch.jit.ignore", "torch.jit.unused", "torch.jit.export", "functools.cached_property",
    "abc.abstractmethod", "typing.override", "typing.final"})
_PLAIN_BUILTIN_DECORATORS = frozenset({"property", "classmethod"})
# What a decorator of the file's own may read of the method it wraps besides calling it.
_DESCRIBING = frozenset({"__name__", "__qualname__", "__doc__", "__module__"})
# What copies an object as an object of its class, unless its class says otherwise: the
# copy hooks copy.copy and copy.deepcopy look up on the object (its class's `__getattr__`
# included), what makes the object again (`__new__`), and copyreg's and the copy module's
# tables of classes.
_COPIES = frozenset({"copy.copy", "copy.deepcopy"})
_COPY_HOOKS = frozenset({"__copy__", "__deepcopy__", "__reduce__", "__reduce_ex__", "__new__",
                         "__getattr__", "__getattribute__"})
_COPY_TABLES = frozenset({"copyreg", "dispatch_table", "_deepcopy_dispatch", "_copy_dispatch"})
# Calls that look an attribute up by name (`getattr(Net, "patch")`).
_LOOKUPS = frozenset({"getattr", "attrgetter", "getattr_static", "__getattribute__",
                      "__getattr__", "methodcaller"})
# Where a class's name read does not hand the class itself on: called (`Net(...)`), an
# attribute read from it (judged as a reference when it is a method's), compared, or asked
# about (`isinstance(x, Net)`).
_ASKING = frozenset({"isinstance", "issubclass", "super", "print", "repr", "str", "id", "hash",
                     "callable", "type"})

_DYNAMIC = frozenset({"exec", "eval", "compile", "__import__", "globals", "locals"})
MAX_EXEC_DEPTH = 3
ANY_CLASS = "*"    # what is handed on can be any class (type(x), x.__class__, exec)
_IMPLICIT_CLASS = frozenset({"__init_subclass__", "__class_getitem__"})
# The attributes of `self` whose rules (grader/integrity/source.py) a method's own object is
# exempt from, and the calls handed `self` that are: where a submission has none, no `self`
# needs judging (a walk of each file instead of the whole analysis).
_EXEMPT_ATTRIBUTES = PATCHED_NAMES | ALLOWED_ON_SUPER | GRADER_IDENTIFIERS | PROCESS_CALLS | \
    frozenset(NOTE_ATTRIBUTES) | TORCH_INTERNAL_NAMES | {UNCALLED_MODULES, "marshal", "ctypes",
                                                         "_ctypes"}
_EXEMPT_CALLS = ALLOWED_ON_SUPER | {"setattr", "delattr", "getattr", "hasattr"}


@dataclass
class _Method:
    file: str
    name: str
    node: ast.FunctionDef
    cls: ast.ClassDef
    first: str                       # the first parameter's name
    kind: str                        # "instance", "class" (classmethod), "new" (__new__)
    after: list[str]                 # positional parameters after the first
    required_after: int              # ... of them without a default
    vararg: bool
    self_is_class: bool = False      # a method of a metaclass: its `self` is a class
    why_not: str = ""                # why its `self` may be something else ("": it may not)
    reads: list[ast.Name] = field(default_factory=list)   # its `self`'s reads
    wrapped: bool = False            # a decorator keeps the method itself (`__wrapped__`)
    copies: list[ast.Name] = field(default_factory=list)  # reads of copies of its `self`


@dataclass
class Selves:
    """Per file: the positions (line, column) of the reads of `self`/`cls` that are the object a
    method of the student's own class was called on (and of the copies such a method makes of
    it: `clone = copy.deepcopy(self)`); and, for the other reads of a method's `self`, why
    not."""
    trusted: dict[str, set[tuple[int, int]]] = field(default_factory=dict)
    why_not: dict[str, dict[tuple[int, int], str]] = field(default_factory=dict)

    def own(self, file: str, node: ast.AST) -> bool:
        return isinstance(node, ast.Name) and \
            (node.lineno, node.col_offset) in self.trusted.get(file, ())

    def reason(self, file: str, node: ast.AST) -> str:
        if not isinstance(node, ast.Name) or node.id not in SELF_NAMES:
            return ""
        return self.why_not.get(file, {}).get(
            (node.lineno, node.col_offset),
            "it is no parameter of a method of the submission's own class")


def own_selves(trees: dict[str, ast.AST], objects_trusted: bool = False) -> Selves:
    """The reads of `self` that are a method's own object, over a submission's files (relative
    path -> syntax tree): a method called with another first argument in any file loses its.
    `objects_trusted`: no file can rebind another's names (own_objects.may_rebind_names), so a
    decorator the file defines, an object it makes and a copy of `self` are what they read."""
    files = {name: _File(name, tree, objects_trusted=objects_trusted)
             for name, tree in trees.items()}
    if not any(file.exempted for file in files.values()):
        return Selves()   # no rule relies on a `self` being a method's own object
    for file in list(files.values()):
        for index, (extra, line) in enumerate(file.executed()):
            files[f"{file.name}#exec{index}"] = _File(f"{file.name}#exec{index}", extra,
                                                       at_line=line)
    class_names = {c.name for f in files.values() for c in f.classes}
    metaclasses = _metaclasses(files.values())
    methods = [m for f in files.values() for m in f.methods(metaclasses)]
    handed_on = {name for f in files.values() for name in f.classes_handed_on(class_names)}
    # A method is read unbound from a class handed on as well as from one derived from it.
    derived = _derived(files.values())
    escaped = {id(m) for m in methods
               if ANY_CLASS in handed_on or derived[m.cls.name] & handed_on}
    references: dict[str, list] = {}
    for file in files.values():
        for name, reference in file.references({m.name for m in methods}, class_names):
            references.setdefault(name, []).append(reference)
    judge = _Judge(trusted={id(m) for m in methods if not m.why_not},
                   by_self={id(read): m for m in methods for read in m.reads},
                   by_function={id(m.node): m for m in methods}, class_names=class_names,
                   escaped=escaped, files=list(files.values()))
    changed = True
    while changed:   # the largest set of methods none of whose reads can call them otherwise
        changed = False
        for method in methods:
            if id(method) not in judge.trusted:
                continue
            for reference in references.get(method.name, []):
                why = reference.unsafe(method, judge)
                if why:
                    method.why_not = why
                    judge.trusted.discard(id(method))
                    changed = True
                    break
    copying_decided = any(m.copies for m in methods) and _copying_decided(files.values())
    selves = Selves()
    for method in methods:
        if method.file not in trees:
            continue   # code executed from a string: its file's own reads are not trusted
        places = {(r.lineno, r.col_offset) for r in method.reads}
        if id(method) in judge.trusted:
            if not copying_decided:   # a copy of the method's own object is one too
                places |= {(r.lineno, r.col_offset) for r in method.copies}
            selves.trusted.setdefault(method.file, set()).update(places)
        else:
            selves.why_not.setdefault(method.file, {}).update(
                dict.fromkeys(places, method.why_not))
    return selves


def _metaclasses(files) -> set[str]:
    """Names of the submission's classes whose objects are classes (derived from `type` or a
    metaclass): their `self` is a class, whose methods read from it are not bound."""
    found: set[str] = set()
    classes = [c for f in files for c in f.classes]
    changed = True
    while changed:
        changed = False
        for node in classes:
            if node.name in found:
                continue
            for base in node.bases:
                last = base.attr if isinstance(base, ast.Attribute) else \
                    base.id if isinstance(base, ast.Name) else None
                if last is None or last in found or last == "type" or \
                        last.lower().endswith(("meta", "metaclass", "type")):
                    found.add(node.name)
                    changed = True
                    break
    return found


class _File:
    def __init__(self, name: str, tree: ast.AST, at_line: int = 0,
                 objects_trusted: bool = False):
        """`at_line`: code run from a string (exec) on that line of the file.
        `objects_trusted`: see own_selves (never for code run from a string)."""
        self.name, self.tree, self.at_line = name, tree, at_line
        self.objects_trusted = objects_trusted and not at_line
        # One walk of the tree (a submission's every file is read so, before the scan).
        self.nodes, self.parents, self.annotations = [], {}, set()
        self.exempted = False   # whether any rule may exempt a `self` here (_EXEMPT_...)
        pending = [tree]
        while pending:
            node = pending.pop()
            self.nodes.append(node)
            self.exempted = self.exempted or _exempted(node)
            children = list(ast.iter_child_nodes(node))
            for child in children:
                self.parents[id(child)] = node
            pending += children
            for annotation in _annotations(node):
                self.annotations |= {id(part) for part in ast.walk(annotation)}
        self.classes = [n for n in self.nodes if isinstance(n, ast.ClassDef)]
        self._folder = self._imports = self._bound = self._own_objects = self._bindings = None
        self.class_selves: set[int] = set()   # reads of class-valued `self`/`cls` (methods())

    @property
    def imports(self) -> dict[str, str]:
        if self._imports is None:
            self._imports = stable_imports(self.tree)
        return self._imports

    @property
    def bound(self):
        """Every name the file binds (None after a star import): is `property` Python's?"""
        if self._bound is None:
            self._bound = (unbound_names(self.tree),)
        return self._bound[0]

    @property
    def folder(self) -> Folder:
        if self._folder is None:
            self._folder = Folder(self.tree)
        return self._folder

    def own_object(self, node: ast.AST) -> bool:
        """A name that can only be a plain object the file made (`net = Net()` of the
        student's nn.Module class: own_objects.py), where no file can rebind another's names."""
        if not self.objects_trusted or not isinstance(node, ast.Name):
            return False
        if self._own_objects is None:
            self._own_objects = own_object_names(self.tree, self.imports,
                                                 trust_parameters=template_script(self.name))
        return id(node) in self._own_objects

    def bindings_of(self, name: str) -> int:
        """How many times the file binds `name`, in any scope (an import included)."""
        if self._bindings is None:
            self._bindings = Counter()
            for node in self.nodes:
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    self._bindings.update((a.asname or a.name).split(".")[0] for a in node.names)
                else:
                    self._bindings.update(_bound_by(node))
        return self._bindings[name]

    def executed(self, depth: int = 0) -> list[tuple[ast.AST, int]]:
        """The code this file runs from strings it spells (exec("Net.patch(x)")), parsed, with
        the line of the exec."""
        found = []
        if depth >= MAX_EXEC_DEPTH:
            return found
        for node in self.nodes:
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                    node.func.id in ("exec", "eval", "compile") and node.args:
                for text in self.folder.strings(node.args[0]):
                    try:
                        tree = ast.parse(text)
                    except (SyntaxError, ValueError, RecursionError, MemoryError):
                        continue
                    line = self.at_line or node.lineno
                    found.append((tree, line))
                    found += _File(self.name, tree, line).executed(depth + 1)
        return found

    # -- methods ---------------------------------------------------------------------------
    def methods(self, metaclasses: set[str]) -> list[_Method]:
        found = []
        for cls in self.classes:
            for node in _class_body_functions(cls.body):
                arguments = node.args
                positional = arguments.posonlyargs + arguments.args
                first = positional[0].arg if positional else ""
                decorators = [self._decorator(d, first) for d in node.decorator_list]
                if "staticmethod" in decorators or not positional:
                    continue   # its first parameter is any argument's
                if first not in SELF_NAMES:
                    continue   # the scan's rules never trusted it
                after = [a.arg for a in positional[1:]]
                with_default = len(arguments.defaults)
                method = _Method(
                    self.name, node.name, node, cls, positional[0].arg,
                    "class" if "classmethod" in decorators or node.name in _IMPLICIT_CLASS else
                    "new" if node.name == "__new__" else "instance",
                    after, max(0, len(after) - with_default), arguments.vararg is not None)
                method.reads, rebound = _reads_of(node, method.first)
                method.wrapped = "wrapping" in decorators
                defaulted = len(arguments.defaults) >= len(positional)
                strange = [d for d in decorators if d not in ("plain", "wrapping", "classmethod")]
                if self.at_line:
                    method.why_not = "its method is code run from a string"
                elif strange:
                    method.why_not = (f"{node.name} is decorated with {strange[0]}, which may "
                                      "call it with any first argument")
                elif rebound:
                    method.why_not = f"{node.name} binds {method.first} to something else"
                elif defaulted:   # `def patch(self=nn.Linear)`, called as Net.patch()
                    method.why_not = (f"{node.name} gives {method.first} a default value, which "
                                      "a call through its class takes")
                method.self_is_class = method.kind != "instance" or cls.name in metaclasses
                if method.self_is_class:
                    self.class_selves |= {id(read) for read in method.reads}
                elif self.objects_trusted:
                    method.copies = _copies_of_self(node, method, self.imports)
                found.append(method)
        return found

    def _decorator(self, node: ast.AST, first: str) -> str:
        """"plain" (it gives the method back), "wrapping" (its wrapper passes on what it is
        called with), "classmethod", "staticmethod", or the decorator's name (one that may call
        the method itself). `first`: the name of the method's first parameter."""
        target = node.func if isinstance(node, ast.Call) else node
        if isinstance(target, ast.Name) and target.id in _PLAIN_BUILTIN_DECORATORS | {
                "staticmethod"} and self.bound is not None and target.id not in self.bound:
            return "plain" if target.id == "property" else target.id
        if isinstance(target, ast.Attribute) and target.attr in ("setter", "getter", "deleter") \
                and isinstance(target.value, ast.Name):
            return "plain"   # @size.setter of a property of the class
        full = resolve(target, self.imports)
        if full in _PLAIN_DECORATORS:
            return "plain"
        if full in _WRAPPING_DECORATORS or (node is target and self._forwarding(target, first)):
            return "wrapping"
        return full or ast.unparse(target)[:40]

    def _forwarding(self, decorator: ast.AST, first: str) -> bool:
        """`@log_call` of a `def log_call(fn)` the file defines once, at its top, whose wrapper
        hands `fn` the first argument it is given (_forwards_first_argument): where no file can
        rebind another's names, the name is that function when the class is made."""
        if not self.objects_trusted or not isinstance(decorator, ast.Name):
            return False
        defined = [node for node in self.tree.body
                   if isinstance(node, _FUNCTIONS) and node.name == decorator.id]
        return len(defined) == 1 and self.bindings_of(decorator.id) == 1 and \
            _forwards_first_argument(defined[0], first, self.imports, self.parents)

    # -- reads of a method's name ----------------------------------------------------------
    def references(self, names: set[str], class_names: set[str]):
        """(method name, _Reference) for every read of an attribute named like a method (also
        by getattr with a name the folder reads), and every read of a class's namespace or of
        a name computed at run time on a class (`vars(Net)`, `getattr(type(x), name)`)."""
        for node in self.nodes:
            if isinstance(node, ast.Attribute) and node.attr in names and \
                    isinstance(node.ctx, ast.Load):
                yield node.attr, _Reference(self, node, node.value)
            elif isinstance(node, ast.Name) and node.id in names and \
                    isinstance(node.ctx, ast.Load) and self._in_class_body(node):
                # `patch(nn.Linear, f)`, `alias = patch`, `{"p": patch}` in the class's own body:
                # the plain function, before any object exists
                yield node.id, _Reference(self, node, node, by_name=True)
            elif isinstance(node, ast.Call):
                function = node.func
                called = function.id if isinstance(function, ast.Name) else \
                    function.attr if isinstance(function, ast.Attribute) else None
                if called in _LOOKUPS and node.args:
                    # getattr(x, "m"); x.__getattribute__("m"); attrgetter("m")(x) and
                    # methodcaller("m", a)(x), applied to what the scan cannot see
                    base = None if called in ("attrgetter", "methodcaller") else \
                        node.args[0] if len(node.args) > 1 else \
                        function.value if isinstance(function, ast.Attribute) else None
                    named = node.args if base is None or len(node.args) == 1 else node.args[1:]
                    texts = {t for a in named for t in self.folder.strings(a)}
                    if called == "methodcaller" and len(node.args) == 1 and not node.keywords:
                        texts = set()   # x.m() bound: no first argument of its choosing
                    for text in texts & names:
                        yield text, _Reference(self, node, base)
                    if not texts and base is not None and self.class_like(base, class_names):
                        for name in names:   # getattr(Net, computed): any of its methods
                            yield name, _Reference(self, node, node.args[0], by_name=True)
                elif called == "vars" and node.args and \
                        self.class_like(node.args[0], class_names):
                    for name in names:
                        yield name, _Reference(self, node, node.args[0], by_name=True)
            elif isinstance(node, ast.Attribute) and node.attr == "__dict__" and \
                    self.class_like(node.value, class_names):
                for name in names:
                    yield name, _Reference(self, node, node.value, by_name=True)

    def _in_class_body(self, node: ast.AST) -> bool:
        """Whether the nearest scope around `node` is a class body (a decorator or a default
        of a method included: they run in the class body too)."""
        child, scope = node, self.parents.get(id(node))
        while scope is not None and not isinstance(scope, _SCOPES):
            child, scope = scope, self.parents.get(id(scope))
        if isinstance(scope, _FUNCTIONS + (ast.Lambda,)) and (
                child in getattr(scope, "decorator_list", ()) or child is scope.args):
            return self._in_class_body(scope)
        return isinstance(scope, ast.ClassDef)

    def class_like(self, node: ast.AST, class_names: set[str]) -> bool:
        """An expression that is a class, as written: a class's name, `type(x)`, `x.__class__`,
        a classmethod's `cls` (or a metaclass's `self`)."""
        if isinstance(node, ast.Name):
            return node.id in class_names or node.id in SELF_NAMES and \
                id(node) in self.class_selves
        if isinstance(node, ast.Attribute):
            return node.attr in class_names or node.attr == "__class__"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            return node.func.id == "type" and len(node.args) == 1
        return False

    def classes_handed_on(self, class_names: set[str]) -> set[str]:
        """The submission's classes that can reach a name the scan cannot follow: a class's
        name read other than to call it, read an attribute from it, compare it or ask about it
        (`isinstance(x, Net)`); ANY_CLASS where `type(x)`, `x.__class__` or a classmethod's
        `cls` is, or where code the scan cannot read runs."""
        found: set[str] = set()
        class_selves = self.class_selves
        variables = local_names(self.tree, _DYNAMIC) if any(
            isinstance(n, ast.Name) and n.id in _DYNAMIC for n in self.nodes) else set()
        for node in self.nodes:   # (a variable named like one: `def main(eval=True)`, a flag)
            if isinstance(node, ast.Name) and node.id in _DYNAMIC and \
                    isinstance(node.ctx, ast.Load) and id(node) not in variables:
                found.add(ANY_CLASS)
            elif isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                    (a.name if isinstance(node, ast.Import) else node.module or "")
                    .split(".")[0] == "importlib" for a in node.names):
                found.add(ANY_CLASS)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and \
                    (node.id in class_names or id(node) in class_selves):
                if not self._kept(node):
                    found.add(node.id if id(node) not in class_selves else ANY_CLASS)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and \
                    (node.attr in class_names or node.attr == "__class__"):
                if not self._kept(node):
                    found.add(node.attr if node.attr != "__class__" else ANY_CLASS)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                if node.func.id == "type" and len(node.args) == 1 and not self._kept(node):
                    found.add(ANY_CLASS)
                elif node.func.id in _LOOKUPS:   # getattr(module, "Net")
                    found |= {t for a in node.args for t in self.folder.strings(a)} & \
                        class_names
        return found

    def _kept(self, node: ast.AST) -> bool:
        """Whether a read of a class hands the class to nothing the scan cannot follow."""
        if id(node) in self.annotations:
            return True   # `model: Net`, `-> Optional[Net]`
        parent = self.parents.get(id(node))
        if isinstance(parent, ast.Call) and parent.func is node:
            return True
        if isinstance(parent, ast.Attribute) and parent.value is node:
            return True
        if isinstance(parent, ast.Compare):
            return True
        if isinstance(parent, ast.ClassDef):
            return True   # a base
        if isinstance(parent, (ast.ExceptHandler, ast.Raise)):
            return True
        if isinstance(parent, ast.Tuple):   # isinstance(x, (A, B)), except (A, B)
            grand = self.parents.get(id(parent))
            return isinstance(grand, (ast.ExceptHandler, ast.Compare)) or \
                isinstance(grand, ast.Call) and isinstance(grand.func, ast.Name) and \
                grand.func.id in ("isinstance", "issubclass")
        if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and \
                parent.func.id in _ASKING:
            return True
        if isinstance(parent, ast.FormattedValue):
            return True   # f"Using {type(net)}": only its text
        if isinstance(parent, ast.Call) and parent.func is not node and \
                isinstance(parent.func, ast.Attribute) and parent.func.attr in TELLING_METHODS:
            return True
        if isinstance(node, ast.Name) and isinstance(parent, (ast.FunctionDef, ast.ClassDef)):
            return True
        return False


@dataclass
class _Judge:
    """What judging a reference needs: the methods trusted so far, each `self` read's method,
    each method's function, the submission's class names, whether any class is handed on, the
    submission's files."""
    trusted: set[int]
    by_self: dict
    by_function: dict
    class_names: set[str]
    escaped: set[int]      # the methods whose class (or a class derived from it) is handed on
    files: list = field(default_factory=list)
    _read_uncalled: set[str] | None = None

    def only_called(self, file: _File, call: ast.Call) -> bool:
        """Whether what `call` makes (a functools.partial) is only ever called: at once, or
        bound to a name its file binds once and no file reads but to call it (by name or as
        an attribute of a module: `helper.step(4)`); `step.func` is the method itself."""
        parent = file.parents.get(id(call))
        if isinstance(parent, ast.Call) and parent.func is call:
            return True
        if not (isinstance(parent, ast.Assign) and len(parent.targets) == 1 and
                isinstance(parent.targets[0], ast.Name)):
            return False
        if self._read_uncalled is None:
            self._read_uncalled = set()
            for other in self.files:
                for node in other.nodes:
                    if isinstance(node, (ast.Name, ast.Attribute)) and \
                            isinstance(node.ctx, ast.Load):
                        caller = other.parents.get(id(node))
                        if not (isinstance(caller, ast.Call) and caller.func is node):
                            self._read_uncalled.add(
                                node.id if isinstance(node, ast.Name) else node.attr)
        name = parent.targets[0].id
        return file.bindings_of(name) == 1 and name not in self._read_uncalled

    def own_instance(self, node) -> bool:
        """A read of a trusted instance method's `self`: an object of the student's own."""
        method = self.by_self.get(id(node))
        return method is not None and not method.self_is_class and id(method) in self.trusted

    def own(self, node) -> bool:
        method = self.by_self.get(id(node))
        return method is not None and id(method) in self.trusted


@dataclass
class _Reference:
    file: _File
    node: ast.AST          # the attribute read, or the lookup's call
    base: ast.AST | None   # what it is read from
    by_name: bool = False  # a namespace read, or a name computed at run time: any method

    def unsafe(self, method: _Method, judge: _Judge) -> str:
        """Why this read may call `method` with another first argument ("": it cannot)."""
        context = self.file.parents.get(id(self.node))
        context = context if isinstance(context, ast.Call) else self.node
        where = f"{ast.unparse(context)[:60]} ({self.file.name.split('#')[0]}:" \
                f"{self.file.at_line or getattr(self.node, 'lineno', 0)})"
        base = self.base
        parent = self.file.parents.get(id(self.node))
        if self.by_name:
            return f"{where} may read {method.name} from its class"
        if method.wrapped and not (base is not None and isinstance(parent, ast.Call) and
                                   parent.func is self.node):
            return (f"{where} reads {method.name} other than to call it: its decorator keeps the "
                    "undecorated method (__wrapped__), to be called with any first argument")
        if base is None:   # attrgetter("m"), methodcaller("m", x): applied to anything
            return f"{where} hands {method.name} on, to be called with any first argument" \
                if id(method) in judge.escaped else ""
        if method.kind == "class":
            return ""   # bound to the class, or to the class of the object it is read from
        if method.kind == "instance" and (self._super(base, judge) or judge.own_instance(base)):
            return ""   # bound to an object of the student's own
        class_like = self.file.class_like(base, judge.class_names) or method.kind == "new" or \
            _is_super(base)
        if isinstance(parent, ast.Call) and parent.func is self.node:
            if not _may_be_unbound(parent, method):
                return ""
            first = _first_argument(parent, method)
            if first is not None and (judge.own(first) or self.file.own_object(first)):
                return ""   # `Net.__init__(self, ...)`, `Net.use_chunks(net)`: an own object
            if _plain_value(first):
                return ""   # `model.use_pipeline(8)` read unbound: an int is no object of torch's
            if class_like or id(method) in judge.escaped:
                return f"{where} may call {method.name} with another first argument"
            return ""
        if self._partial_of_an_own_object(parent, method, judge):
            return ""
        if class_like or id(method) in judge.escaped:
            return f"{where} hands {method.name} on, to be called with any first argument"
        return ""

    def _partial_of_an_own_object(self, parent, method: _Method, judge: _Judge) -> bool:
        """`functools.partial(Net.use_chunks, net)`: the method bound, by position, to an
        object of the student's own (or the caller's own `self`, or a plain value), as a call
        of it with that first argument would be; where the partial is only ever called."""
        if not (isinstance(parent, ast.Call) and parent.args and parent.args[0] is self.node and
                resolve(parent.func, self.file.imports) == "functools.partial"):
            return False
        if len(parent.args) < 2 or isinstance(parent.args[1], ast.Starred) or \
                any(k.arg is None or k.arg == method.first for k in parent.keywords):
            return False   # bound to nothing yet, or by a keyword its call may replace
        first = parent.args[1]
        return (judge.own(first) or self.file.own_object(first) or _plain_value(first)) and \
            judge.only_called(self.file, parent)

    def _super(self, node, judge: _Judge) -> bool:
        """`super()` written in a trusted instance method's own body, or `super(C, self)` of
        such a `self`: bound to the student's own object."""
        if not _is_super(node):
            return False
        if len(node.args) == 2:
            return judge.own_instance(node.args[1])
        if node.args or node.keywords:
            return False
        scope = self.file.parents.get(id(node))
        while scope is not None and not isinstance(scope, _SCOPES):
            scope = self.file.parents.get(id(scope))
        method = judge.by_function.get(id(scope))
        return method is not None and not method.self_is_class and id(method) in judge.trusted


def _plain_value(node) -> bool:
    """A value written out (a number, a string, a list or dict display): no object whose
    attributes could be set."""
    if isinstance(node, (ast.Constant, ast.JoinedStr, ast.List, ast.Tuple, ast.Dict, ast.Set,
                         ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        return True
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.operand, ast.Constant)
    return isinstance(node, ast.BinOp) and isinstance(node.left, ast.Constant) and \
        isinstance(node.right, ast.Constant)


def _derived(files) -> dict[str, set[str]]:
    """Each class name of the submission -> itself and the names of the classes derived from
    it (by the names of their bases, in any file)."""
    bases = {c.name: {b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", None)
                      for b in c.bases} for f in files for c in f.classes}
    derived = {name: {name} for name in bases}
    changed = True
    while changed:
        changed = False
        for name, of in bases.items():
            for base in of:
                if base in derived and not derived[name] <= derived[base]:
                    derived[base] |= derived[name]
                    changed = True
    return derived


def _exempted(node: ast.AST) -> bool:
    """`self.forward = ...`, `self._forward_hooks`, `setattr(self, ...)`,
    `object.__setattr__(self, ...)`: a place where a rule spares a method's own object; the
    copy module, whose copies of `self` are spared as `self` is; or code run from a string
    (which may hold one)."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
            node.value.id in SELF_NAMES:
        return node.attr in _EXEMPT_ATTRIBUTES or node.attr.startswith(TORCH_INTERNAL_PREFIXES)
    if isinstance(node, ast.Import) and any(a.name == "copy" for a in node.names) or \
            isinstance(node, ast.ImportFrom) and node.module == "copy":
        return True
    if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Name) and \
            node.args[0].id in SELF_NAMES:
        function = node.func
        return (function.id if isinstance(function, ast.Name) else function.attr
                if isinstance(function, ast.Attribute) else "") in _EXEMPT_CALLS
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
        node.func.id in ("exec", "eval", "compile")


def _annotations(node: ast.AST) -> list:
    """The annotations a node carries (never run as values that reach a name)."""
    if isinstance(node, ast.arg):
        return [node.annotation] if node.annotation is not None else []
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return [node.returns] if node.returns is not None else []
    if isinstance(node, ast.AnnAssign):
        return [node.annotation]
    return []


def _is_super(node) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
        node.func.id == "super"


def _may_be_unbound(call: ast.Call, method: _Method) -> bool:
    """Whether `call` can bind its first positional argument (or a keyword of the first
    parameter's name) to the method's `self`: the rest fits the other parameters."""
    if any(isinstance(a, ast.Starred) for a in call.args) or \
            any(k.arg is None or k.arg == method.first for k in call.keywords):
        return True
    if not call.args:
        return False
    given = len(call.args) - 1
    if given > len(method.after) and not method.vararg:
        return False
    keywords = {k.arg for k in call.keywords}
    missing = [name for name in method.after[given:method.required_after]
               if name not in keywords]
    return not missing


def _first_argument(call: ast.Call, method: _Method) -> ast.AST | None:
    if call.args and not isinstance(call.args[0], ast.Starred):
        return call.args[0]
    return next((k.value for k in call.keywords if k.arg == method.first), None)


def _class_body_functions(body: list, depth: int = 0):
    """The functions a class body defines: at its top, or under if/try/with of it."""
    for node in body:
        if isinstance(node, _FUNCTIONS):
            yield node
        elif depth < 8 and isinstance(node, (ast.If, ast.Try, ast.With)):
            for block in ("body", "orelse", "finalbody"):
                yield from _class_body_functions(getattr(node, block, []), depth + 1)
            for handler in getattr(node, "handlers", []):
                yield from _class_body_functions(handler.body, depth + 1)


def _reads_of(function: ast.FunctionDef, name: str) -> tuple[list[ast.Name], bool]:
    """(the reads of the function's parameter `name` in its body and the functions, lambdas,
    comprehensions and classes inside it that do not bind that name themselves, whether any of
    them binds it again)."""
    bound, declared_global = _scope_names(function.body)
    if name in bound or name in declared_global:
        return [], True
    return _reads_in(function.body, name)


def _reads_in(body: list, name: str) -> tuple[list[ast.Name], bool]:
    """(the reads of `name` in these statements and in the functions, lambdas, comprehensions
    and classes inside them that do not bind that name themselves, whether any of those binds
    it again in the scope of these statements: `nonlocal`)."""
    reads: list[ast.Name] = []

    def visit(node: ast.AST) -> bool:
        """Collects the reads under `node`; True where a nested scope rebinds the name."""
        if isinstance(node, ast.Name) and node.id == name:
            if isinstance(node.ctx, ast.Load):
                reads.append(node)
            return False
        if isinstance(node, (*_FUNCTIONS, ast.Lambda)):
            rebound = any([visit(part) for part in _outer_parts(node)])
            body = node.body if isinstance(node.body, list) else [node.body]
            inner, inner_global = _scope_names(body)
            if any(isinstance(n, ast.Nonlocal) and name in n.names for n in ast.walk(node)):
                return True
            if name in _parameters(node.args) or name in inner or name in inner_global:
                return rebound   # its own `name`
            return any([visit(statement) for statement in body]) or rebound
        if isinstance(node, ast.ClassDef):
            # its body reads the function's names unless it binds them; its methods skip it
            rebound = any([visit(part) for part in _outer_parts(node)])
            inner, _global = _scope_names(node.body)
            return any([visit(statement) for statement in node.body
                        if isinstance(statement, _FUNCTIONS) or name not in inner]) or rebound
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            targets = {n.id for g in node.generators for n in ast.walk(g.target)
                       if isinstance(n, ast.Name)}
            if name in targets:
                return visit(node.generators[0].iter)
        return any([visit(child) for child in ast.iter_child_nodes(node)])

    rebound = any([visit(statement) for statement in body])
    return reads, rebound


def _own_scope(body: list):
    """Every node of these statements in their own scope: nested functions, lambdas and classes
    are yielded with what of them runs here (decorators, defaults), not their bodies;
    comprehensions are walked (a `:=` in one binds here)."""
    pending = list(body)
    while pending:
        node = pending.pop()
        yield node
        if isinstance(node, (*_FUNCTIONS, ast.Lambda, ast.ClassDef)):
            pending += _outer_parts(node)
        else:
            pending += list(ast.iter_child_nodes(node))


def _bindings_in_scope(body: list, name: str) -> int:
    return sum(name in _bound_by(node) for node in _own_scope(body))


def _forwards_first_argument(decorator: ast.FunctionDef, first: str, imports: dict,
                             parents: dict) -> bool:
    """Whether `def deco(fn)` can only ever call `fn` with the first argument its wrapper was
    called with: it returns `fn` or a wrapper it defines once; each wrapper, undecorated but
    for `functools.wraps(fn)`, takes `*args` (or a first parameter named as the method's own,
    `first`, with no default: a keyword of that name is judged as the method's), binds none of
    its parameters again, and calls `fn` only with them as it got them (`fn(*args, **kwargs)`,
    `fn(self, *args)`: `kwargs` read nowhere else, no keyword added); and nothing else reads
    `fn` (but its `__name__`) or a wrapper (which would call `fn` with what it is given)."""
    arguments = decorator.args
    if decorator.decorator_list or arguments.posonlyargs or len(arguments.args) != 1 or \
            arguments.vararg or arguments.kwarg or arguments.kwonlyargs:
        return False
    fn = arguments.args[0].arg
    fn_reads, rebound = _reads_of(decorator, fn)
    if rebound:
        return False
    returned = [node.value for node in _own_scope(decorator.body) if isinstance(node, ast.Return)]
    wrappers = [node for node in decorator.body if isinstance(node, _FUNCTIONS)]
    names = {wrapper.name for wrapper in wrappers}
    if not returned or not all(isinstance(value, ast.Name) and value.id in names | {fn}
                               for value in returned):
        return False
    allowed = {id(value) for value in returned}   # the reads of `fn` and of wrappers it may have
    for wrapper in wrappers:
        if _bindings_in_scope(decorator.body, wrapper.name) != 1:
            return False
        reads, rebound = _reads_in(decorator.body, wrapper.name)
        if rebound or any(id(read) not in allowed for read in reads):
            return False   # the wrapper handed out or called: with any first argument
        forwarded = _forwarding_calls(wrapper, fn, first, parents)
        if forwarded is None:
            return False
        allowed |= forwarded
        for decoration in wrapper.decorator_list:
            if not (isinstance(decoration, ast.Call) and not decoration.keywords and
                    resolve(decoration.func, imports) == "functools.wraps" and
                    len(decoration.args) == 1 and isinstance(decoration.args[0], ast.Name) and
                    decoration.args[0].id == fn):
                return False
            allowed.add(id(decoration.args[0]))
    for read in fn_reads:
        parent = parents.get(id(read))
        if id(read) not in allowed and not (isinstance(parent, ast.Attribute) and
                                            parent.attr in _DESCRIBING):
            return False
    return True


def _forwarding_calls(wrapper: ast.FunctionDef, fn: str, first: str,
                      parents: dict) -> set[int] | None:
    """The reads of `fn` that a wrapper calls with its own first argument and the rest as it got
    them (ids), or None where the wrapper may hand `fn` another first argument."""
    arguments = wrapper.args
    positional = arguments.posonlyargs + arguments.args
    if arguments.defaults or (positional and positional[0].arg != first) or \
            not positional and arguments.vararg is None:
        return None
    reads = {}
    for parameter in [*positional, arguments.vararg, arguments.kwarg]:
        if parameter is not None:
            found, rebound = _reads_of(wrapper, parameter.arg)
            if rebound:
                return None
            reads[parameter.arg] = {id(read) for read in found}
    head = positional[0].arg if positional else arguments.vararg.arg
    kwargs = reads.get(arguments.kwarg.arg, set()) if arguments.kwarg else set()
    if any(not (isinstance(parents.get(read), ast.keyword) and parents[read].arg is None)
           for read in kwargs):
        return None   # `kwargs` changed or handed on: its `self=` would be the first argument
    calls = set()
    for node in ast.walk(wrapper):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and
                node.func.id == fn and node.args):
            continue
        given = node.args[0]
        if isinstance(given, ast.Starred) != (not positional):
            continue   # `fn(*args)` of a wrapper that took `self`; `fn(args)`
        given = given.value if isinstance(given, ast.Starred) else given
        if id(given) in reads[head] and all(k.arg is None and id(k.value) in kwargs
                                            for k in node.keywords):
            calls.add(id(node.func))
    return calls


def _copies_of_self(function: ast.FunctionDef, method: _Method, imports: dict) -> list[ast.Name]:
    """The reads of each name the method binds once, in its own scope, to `copy.copy(self)` or
    `copy.deepcopy(self)` (no memo) of its own `self`: an object of the same class (unless the
    submission decides what copying makes: _copying_decided)."""
    own_reads = {id(read) for read in method.reads}
    found: list[ast.Name] = []
    for node in _own_scope(function.body):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and
                isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Call)):
            continue
        name, copied = node.targets[0].id, node.value
        if resolve(copied.func, imports) not in _COPIES or len(copied.args) != 1 or \
                copied.keywords or id(copied.args[0]) not in own_reads:
            continue
        if name in _parameters(function.args) or _bindings_in_scope(function.body, name) != 1:
            continue
        reads, rebound = _reads_in(function.body, name)
        if not rebound:
            found += reads
    return found


def _copying_decided(files) -> bool:
    """Whether the submission may decide what copying an object of its classes makes: a copy
    hook defined, set or named in a string (`def __deepcopy__`, `self.__deepcopy__ = ...`,
    `add_module("__deepcopy__", m)`), copyreg or the copy module's tables, or a submodule
    registered under a name the scan cannot read (nn.Module looks a hook it lacks up among its
    submodules)."""
    names = _COPY_HOOKS | _COPY_TABLES
    for file in files:
        for node in file.nodes:
            if isinstance(node, _FUNCTIONS) and node.name in names or \
                    isinstance(node, ast.Name) and node.id in names or \
                    isinstance(node, ast.Attribute) and node.attr in names | {"_modules"}:
                return True
            if isinstance(node, (ast.Import, ast.ImportFrom)) and _imported_names(node) & names:
                return True
            if isinstance(node, (ast.Constant, ast.JoinedStr, ast.BinOp, ast.Call)) and \
                    set(file.folder.strings(node)) & names:
                return True
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr in ("add_module", "register_module") and node.args and \
                    not _plainly_named(file, node.args[0]):
                return True
            if isinstance(node, ast.Call) and _class_named_from_data(file, node):
                return True
    return False


def _class_named_from_data(file: _File, node: ast.Call) -> bool:
    """A class made at run time whose namespace's names the scan cannot read, one of which
    may be a copy hook: `type("C", (Net,), {name: hook})`, a namespace handed over whole
    (`type("C", (Net,), ns)`), or `types.new_class`, whose namespace a function fills. One
    written out (`{"width": 8}`, `dict(width=8)`) is read as its names."""
    function = node.func
    if isinstance(function, (ast.Name, ast.Attribute)) and \
            getattr(function, "id", getattr(function, "attr", None)) == "new_class":
        return True
    if not (isinstance(function, ast.Name) and function.id == "type" and len(node.args) == 3):
        return False
    namespace = node.args[2]
    if isinstance(namespace, ast.Dict):
        return any(key is None or not file.folder.strings(key) for key in namespace.keys)
    if isinstance(namespace, ast.Call) and isinstance(namespace.func, ast.Name) and \
            namespace.func.id == "dict" and not namespace.args:
        return any(k.arg is None or k.arg in _COPY_HOOKS for k in namespace.keywords)
    return True


def _imported_names(node: ast.Import | ast.ImportFrom) -> set[str]:
    """Every module and name an import names (`from copy import _deepcopy_dispatch`)."""
    parts = set((node.module or "").split(".")) if isinstance(node, ast.ImportFrom) else set()
    return parts | {part for alias in node.names for part in alias.name.split(".")}


def _plainly_named(file: _File, node: ast.AST) -> bool:
    """A name the scan reads (`"fc"`, `f"layer{i}"`) that is no dunder name."""
    partial = skeleton(node)
    texts = file.folder.strings(node) or ([partial] if partial is not None else [])
    return bool(texts) and all(text[:1] not in ("_", HOLE) for text in texts)
