"""Values of expressions made only of constants, without running anything: what a string
built from pieces spells (`"f_" + "back"`, f-strings, joins, `chr`, `bytes([...]).decode()`,
base64, hex, rot13 and zlib of a constant, a name bound only to constants, a loop over
constants), so that the scan's name rules see through concatenation."""
from __future__ import annotations

import ast
import base64
import binascii
import bz2
import codecs
import lzma
import os
import re
import zlib

MAX_FOLDED = 1 << 16          # longest constant the folder builds (a decoded blob)
# All the text one file's values may hold together: a few thousand uses of a name bound to 64
# long strings would otherwise take the grader gigabytes and hours (the scan runs in its
# process). Honest code folds some kilobytes.
FOLDING_BUDGET = 32 << 20


class Unknown:
    pass


UNKNOWN = Unknown()
HOLE = "\x00"   # an unknown part of a partly constant string


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
    """At most MAX_FOLDED bytes of a zlib, gzip, bz2 or xz constant: a small constant that
    expands to gigabytes must not take the grader's memory (the scan runs in its process)."""
    if not isinstance(data, bytes):
        return UNKNOWN
    for make in (lambda: zlib.decompressobj(47), bz2.BZ2Decompressor, lzma.LZMADecompressor):
        try:
            return make().decompress(data, MAX_FOLDED)
        except Exception:
            continue
    return UNKNOWN


def _small_result(method: str, base, arguments) -> bool:
    """Whether a string method on constants gives a result small enough to build (a format
    width or a replacement can turn a short constant into gigabytes)."""
    if method == "replace" and len(arguments) >= 2:
        growth = max(1, len(arguments[1]) if isinstance(arguments[1], (str, bytes)) else 1)
        return len(base) * growth <= MAX_FOLDED
    if method == "format":
        return not re.search(r"[0-9]{4,}", base if isinstance(base, str) else "")
    return True


_DECODERS = _decoders()
_STR_METHODS = frozenset({"lower", "upper", "strip", "lstrip", "rstrip", "replace", "format",
                          "decode", "encode", "title", "capitalize", "swapcase", "removeprefix",
                          "removesuffix", "casefold"})


class Folder:
    """Values of expressions made only of constants, as a set of the values they can take
    (a name bound several times, a loop over a tuple), or UNKNOWN."""

    LIMIT = 64

    def __init__(self, tree: ast.AST):
        self.bindings: dict[str, list[ast.AST]] = {}
        self.loops: dict[str, list[ast.AST]] = {}
        self.unfoldable: set[str] = set()
        self.memo: dict[int, object] = {}
        self.active: set[int] = set()
        self.spent = 0
        self.exhausted = False     # past FOLDING_BUDGET: nothing more is folded
        # What each name folds to, read once: a name bound in every function (`losses = []`)
        # had all its bindings read again at each of its reads, N * N for N functions. Kept only
        # where every answer it was made of is remembered (self.memo), so a later read would
        # find the same: not where a cycle or the spent budget answered UNKNOWN unremembered.
        self.names: dict[str, object] = {}
        self.unremembered = 0      # answers of values() not kept in self.memo
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
    def values(self, node) -> frozenset | Unknown:
        key = id(node)
        if key in self.memo:
            return self.memo[key]
        if key in self.active or self.exhausted:
            self.unremembered += 1
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
        if isinstance(result, frozenset):
            self.spent += sum(len(v) for v in result if isinstance(v, (str, bytes, tuple)))
            if self.spent > FOLDING_BUDGET:
                self.exhausted, result = True, UNKNOWN
        self.memo[key] = result
        return result

    def strings(self, node) -> list[str]:
        """The text values the node can take (bytes as latin-1), known ones only."""
        found = self.values(node)
        if isinstance(found, Unknown):
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
            if isinstance(operand, Unknown) or not all(isinstance(v, int) for v in operand):
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
        known = self.names.get(name)
        if known is not None:
            return known
        unremembered = self.unremembered
        result = self._name_values(name)
        if self.unremembered == unremembered:
            self.names[name] = result
        return result

    def _name_values(self, name):
        if name in self.unfoldable:
            return UNKNOWN
        found: set = set()
        for value in self.bindings.get(name, []):
            values = self.values(value)
            if isinstance(values, Unknown):
                return UNKNOWN
            found |= values
        for iterable in self.loops.get(name, []):
            values = self.values(iterable)
            if isinstance(values, Unknown):
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
                if isinstance(values, Unknown):
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
        if isinstance(left, Unknown) or isinstance(right, Unknown):
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
                elif isinstance(node.op, ast.Mod) and isinstance(a, str) and \
                        not re.search(r"%[-+ #0]*[0-9]{4,}", a):   # no gigabyte-wide fields
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
        if isinstance(base, Unknown):
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
        if isinstance(function, ast.Attribute) and function.attr == "join" and \
                len(node.args) == 1 and not isinstance(function.value, ast.Attribute):
            separators = self.values(function.value)   # "".join(<constants>)
            items = self._iterable(node.args[0])
            if isinstance(separators, Unknown) or items is None:
                return UNKNOWN
            return frozenset(sep.join(items) for sep in separators if isinstance(sep, str)
                             and all(isinstance(i, str) for i in items))
        args = [self.values(a) for a in node.args]
        if any(isinstance(a, ast.Starred) for a in node.args) or any(isinstance(a, Unknown) for a in args):
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
        if name == "decode" and isinstance(function, ast.Attribute) and \
                len(singles) == 2 and isinstance(singles[1], str) and \
                isinstance(function.value, (ast.Name, ast.Attribute)):   # codecs.decode(x, enc)
            encoding = singles[1].lower().replace("-", "_")
            if encoding in ("rot13", "rot_13") and isinstance(singles[0], str):
                return frozenset({codecs.decode(singles[0], "rot13")})
            if encoding in ("hex", "base64", "hex_codec", "base64_codec") and \
                    isinstance(singles[0], bytes):
                return frozenset({codecs.decode(singles[0], encoding)})
            if encoding in ("zlib", "zlib_codec", "bz2", "bz2_codec"):
                decoded = _bounded_decompress(singles[0])
                return UNKNOWN if decoded is UNKNOWN else frozenset({decoded})
            return UNKNOWN
        if isinstance(function, ast.Attribute) and name in _STR_METHODS:
            bases = self.values(function.value)
            if isinstance(bases, Unknown):
                return UNKNOWN
            out = set()
            for base in bases:
                if not isinstance(base, (str, bytes)) or any(s is UNKNOWN for s in singles) \
                        or not _small_result(name, base, singles):
                    return UNKNOWN
                out.add(getattr(base, name)(*singles))
            return frozenset(out)
        return UNKNOWN

    def _iterable(self, node):
        if isinstance(node, (ast.List, ast.Tuple)):
            items = [self._one(e) for e in node.elts]
            return None if any(i is UNKNOWN for i in items) else items
        if isinstance(node, (ast.GeneratorExp, ast.ListComp)) and len(node.generators) == 1:
            return None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in ("reversed", "list", "tuple") and len(node.args) == 1:
            items = self._iterable(node.args[0])
            if items is None:
                return None
            return list(reversed(items)) if node.func.id == "reversed" else items
        value = self._one(node)
        if isinstance(value, tuple):
            return list(value)
        if isinstance(value, str):
            return list(value)
        return None


# A %-conversion (`%s`, `%-8.3f`, `%(name)s`) or a str.format field (`{}`, `{0!r:>8}`): where a
# formatted string's computed parts go.
_PERCENT_FIELD = re.compile(r"%(\([^)]*\))?[-+ #0]*(\*|[0-9]+)?(\.(\*|[0-9]+))?[a-zA-Z]")
_FORMAT_FIELD = re.compile(r"\{[^{}]*\}")
# str methods that change a string's letters only: a hole stays a hole.
_CASE_METHODS = frozenset({"upper", "lower", "casefold", "swapcase"})
_MAX_SKELETON_DEPTH = 400    # parts of one expression followed (Python's own stack is ~1000)


def skeleton(node, depth: int = 0) -> str | None:
    """A partly constant string with its unknown parts as holes (f"/proc/{pid}/environ",
    `sep.join(["PDL", "SEAL"])`, `"PDL%s" % x`, `"PDL{}".format(x)`)."""
    if depth > _MAX_SKELETON_DEPTH:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Constant) and isinstance(node.value, bytes):
        return node.value.decode("latin-1")
    if isinstance(node, ast.JoinedStr):
        return "".join(p.value if isinstance(p, ast.Constant) else HOLE for p in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        left = skeleton(node.left, depth + 1)
        if left is None:
            return None
        return _PERCENT_FIELD.sub(HOLE, left.replace("%%", "\x01")).replace("\x01", "%")
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Div)):
        left, right = skeleton(node.left, depth + 1), skeleton(node.right, depth + 1)
        if left is None and right is None:
            return None
        separator = "/" if isinstance(node.op, ast.Div) else ""
        return (left if left is not None else HOLE) + separator + (
            right if right is not None else HOLE)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
            node.func.attr == "format":
        template = skeleton(node.func.value, depth + 1)
        return None if template is None else _FORMAT_FIELD.sub(HOLE, template)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
            node.func.attr in _CASE_METHODS and not node.args:
        text = skeleton(node.func.value, depth + 1)
        return None if text is None else getattr(text, node.func.attr)()
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
            node.func.attr == "join" and len(node.args) == 1 and not (
                isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "path"):
        # str.join: the items it is given in a list or tuple, the separator or a hole between
        items = node.args[0]
        separator = skeleton(node.func.value, depth + 1)
        if not isinstance(items, (ast.List, ast.Tuple)) or \
                any(isinstance(e, ast.Starred) for e in items.elts):
            return None
        parts = [skeleton(e, depth + 1) for e in items.elts]
        if all(p is None for p in parts):
            return None
        return (HOLE if separator is None else separator).join(
            HOLE if p is None else p for p in parts)
    if isinstance(node, ast.Call) and (
            (isinstance(node.func, ast.Attribute) and node.func.attr == "join" and
             isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "path") or
            (isinstance(node.func, ast.Name) and node.func.id in ("Path", "PurePath"))):
        parts = [skeleton(a) for a in node.args]
        if all(p is None for p in parts):
            return None
        return "/".join(p if p is not None else HOLE for p in parts)
    return None


# Files under /proc that say nothing about a process (cores, memory of the machine, uptime).
_SYSTEM_PROC_FILES = ("cpuinfo", "meminfo", "loadavg", "uptime", "version", "stat", "devices")
_PER_PROCESS = re.compile(r"/proc/(self|thread-self|[0-9]+|%|\{|\$|" + HOLE + r")")


def proc_path(text: str) -> bool:
    """Whether a string names /proc or a process's files under it (anywhere in it: a command
    line `cat /proc/$PPID/maps` counts too); /proc/cpuinfo and its like do not."""
    normal = text.replace("\\", "/")
    while "//" in normal:
        normal = normal.replace("//", "/")
    normal = normal.replace("/./", "/")
    if normal.startswith("proc/"):
        normal = "/" + normal
    # /dev/fd is a link to /proc/self/fd: `/dev/fd/../mem` opens /proc/self/mem.
    normal = normal.replace("/dev/fd/", "/proc/self/fd/")
    if _PER_PROCESS.search(normal):
        return True
    if normal == "/proc" or normal.startswith("/proc" + HOLE):
        return True
    return normal.startswith("/proc/") and normal[6:].split("/")[0] not in _SYSTEM_PROC_FILES
