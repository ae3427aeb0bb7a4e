"""What a pickle does when it is loaded, read without loading it (pickletools): the functions
and classes it names. A pickle of numbers, lists or tensors names none or only torch's and
numpy's rebuilders; one that names `builtins.eval` or `os.system` runs code when loaded.

The names are read the way the loader reads them: a small simulation of the unpickler's stack
and memo (a name given by STACK_GLOBAL is the two strings on the stack, often fetched back from
the memo; one computed at load time is unknown, and held), and what the loader looks up is
`module` (imported) then `name` in it, resolved through attributes from protocol 4 on
(`pathlib` + `os.system` is os.system): only plain names are allowed. What is allowed is what
torch.save, pickle and numpy write for data (the rebuilders of tensors, arrays and storages,
dtypes, containers, argparse and SimpleNamespace, datetime, paths), the classes of torch.nn,
torch.optim, ... (a whole model saved), and the submission's own classes (never its functions:
a pickle calling one hands it what it chooses).
A pickle that sets attributes or items of a global object itself (BUILD or SETITEM on
`torch.cuda`) patches it when loaded, whatever it is, and is held.

A .npy file (np.save) is no pickle: its header says the array's dtype, and only an array of
Python objects ('O' in the descr, np.load(allow_pickle=True)) is followed by a pickle.

A joblib file (joblib.dump, maybe compressed: scan.py decompresses it) is a pickle with each
array's raw bytes right after the object that stands for it (joblib.numpy_pickle's
NumpyArrayWrapper, built from a dict of its shape and dtype); joblib's loader reads them, then
goes on with the pickle. So does the scan: it skips as many bytes as the wrapper's state says
(an array of objects: reads the pickle joblib writes there instead), and holds a wrapper whose
state it cannot measure, or one made otherwise. Where joblib can be imported (or a module of
the submission's named so), pickle.load builds the wrapper as any object and reads the array's
bytes as opcodes: such a file is read that way too (scan.py), and both readings' names count.
"""
from __future__ import annotations

import _compat_pickle
import ast
import io
import pickletools
import re
import struct
import tokenize
import zipfile
from dataclasses import dataclass, field

# Files that hold pickles (a torch checkpoint is a zip with a data.pkl inside, .npz a zip of
# .npy files).
PICKLE_SUFFIXES = (".pkl", ".pickle", ".pt", ".pth", ".ckpt", ".bin", ".joblib", ".npy", ".npz")
NPY_MAGIC = b"\x93NUMPY"
ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")

_PICKLE_SAFE_BUILTINS = frozenset({"set", "frozenset", "slice", "complex", "bytearray",
                                   "range", "list", "dict", "tuple", "float", "int", "bool",
                                   "str", "bytes", "object", "Ellipsis", "NotImplemented"})
# (module, name) a data pickle calls or builds that only construct data when loaded.
_SAFE = {
    "collections": {"OrderedDict", "defaultdict", "Counter", "deque", "ChainMap"},
    "_codecs": {"encode"},                       # bytes in protocol 2
    "copyreg": {"_reconstructor", "__newobj__", "__newobj_ex__"},
    "copy_reg": {"_reconstructor", "__newobj__", "__newobj_ex__"},   # the same, protocol < 3
    "datetime": {"datetime", "date", "time", "timedelta", "timezone"},
    "decimal": {"Decimal"},
    # what honest scripts record beside their timings: a tuple, a str, dataclasses of numbers
    "time": {"struct_time"},
    "platform": {"uname_result"},
    "torch.torch_version": {"TorchVersion"},
    "torch.utils.benchmark.utils.common": {"Measurement", "TaskSpec"},
    "fractions": {"Fraction"},
    "uuid": {"UUID"},
    # Namespace(**kw) and SimpleNamespace(**kw) only set the attributes they are given.
    "argparse": {"Namespace"},
    "types": {"SimpleNamespace"},
    # a path object is only a name (its methods would need a getattr, held)
    "pathlib": {"Path", "PosixPath", "WindowsPath", "PurePath", "PurePosixPath",
                "PureWindowsPath"},
    "pathlib._local": {"Path", "PosixPath", "WindowsPath"},
    # numpy's arrays, scalars, dtypes (numpy 1 and 2), masked arrays, random generators
    "numpy": {"ndarray", "dtype", "matrix", "recarray", "record"},   # not memmap: writes files
    "numpy.core.multiarray": {"_reconstruct", "scalar"},
    "numpy._core.multiarray": {"_reconstruct", "scalar"},
    "numpy.core.numeric": {"_frombuffer"},
    "numpy._core.numeric": {"_frombuffer"},
    "numpy.core.records": {"recarray", "record"},
    "numpy._core.records": {"recarray", "record"},
    "numpy.ma": {"MaskedArray", "masked_array"},
    "numpy.ma.core": {"MaskedArray", "_mareconstruct", "MaskedConstant", "mvoid"},
    "numpy.random._pickle": {"__generator_ctor", "__bit_generator_ctor", "__randomstate_ctor"},
    "numpy.random.bit_generator": {"SeedSequence", "__pyx_unpickle_SeedSequence"},
    "numpy.random._mt19937": {"MT19937"},
    "numpy.random._pcg64": {"PCG64", "PCG64DXSM"},
    "numpy.random._philox": {"Philox"},
    "numpy.random._sfc64": {"SFC64"},
    "numpy.random.mtrand": {"RandomState"},
    "numpy.random._generator": {"Generator"},
    # torch.save and pickle of tensors, storages, parameters (torch's own weights_only list)
    "torch._tensor": {"_rebuild_from_type", "_rebuild_from_type_v2"},
    "torch.storage": {"TypedStorage", "UntypedStorage", "_load_from_bytes"},
    "torch.serialization": {"_get_layout"},
    # torch.Generator (pickled with its state); the class of torch.tanh, torch.relu, ...
    "torch._C": {"Generator", "_VariableFunctionsClass"},
    "torch.nn.parameter": {"Parameter", "Buffer", "UninitializedParameter",
                           "UninitializedBuffer"},
    "torch.utils.hooks": {"RemovableHandle"},
    # what TorchScript's own pickles call (identity functions of torch/jit/_pickle.py)
    "torch.jit._pickle": {"build_intlist", "build_tensorlist", "build_doublelist",
                          "build_boollist", "build_tensor_from_id", "restore_type_tag"},
    # joblib.dump's stand-in for an array: its __init__ and state only keep what they are given
    # (how joblib's loader reads the array after it: read_pickle)
    "joblib.numpy_pickle": {"NumpyArrayWrapper"},
}
_NUMPY_SCALARS = frozenset(
    "bool_ bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 intc uintc int_ uint intp "
    "uintp long ulong longlong ulonglong byte ubyte short ushort float16 float32 float64 half "
    "single double longdouble float_ complex64 complex128 complex_ csingle cdouble clongdouble "
    "str_ unicode_ bytes_ string_ void object_ datetime64 timedelta64 generic number integer "
    "signedinteger unsignedinteger inexact floating complexfloating flexible character".split())
_TORCH_DTYPES = frozenset(
    "float32 float float64 double float16 half bfloat16 complex32 chalf complex64 cfloat "
    "complex128 cdouble uint8 uint16 uint32 uint64 int8 int16 short int32 int int64 long bool "
    "qint8 quint8 qint32 quint4x2 quint2x4 bits1x8 bits2x4 bits4x2 bits8 bits16 "
    "float8_e4m3fn float8_e4m3fnuz float8_e5m2 float8_e5m2fnuz float8_e8m0fnu "
    "float4_e2m1fn_x2 int1 int2 int3 int4 int5 int6 int7 uint1 uint2 uint3 uint4 uint5 uint6 "
    "uint7".split())
_TORCH_TOP = _TORCH_DTYPES | frozenset(
    "Size Tensor device Generator strided sparse_coo sparse_csr sparse_csc sparse_bsr "
    "sparse_bsc jagged contiguous_format channels_last channels_last_3d preserve_format "
    "per_tensor_affine per_channel_affine per_tensor_symmetric per_channel_symmetric "
    "per_channel_affine_float_qparams".split())
# torch's math functions a saved model may hold as an attribute (self.act = torch.tanh)
_TORCH_MATH = frozenset(
    "relu relu_ tanh sigmoid exp exp2 expm1 log log1p log2 log10 sin cos tan sinh cosh atan "
    "asin acos abs neg sqrt rsqrt square erf erfc sign clamp clip floor ceil round trunc "
    "reciprocal softmax log_softmax logsumexp selu celu rrelu prelu hardshrink threshold "
    "logit flatten add sub mul div matmul mm bmm einsum dot outer sum mean max min maximum "
    "minimum pow cat stack transpose t permute reshape squeeze unsqueeze cumsum cumprod "
    "dropout layer_norm group_norm batch_norm conv1d conv2d conv3d where zeros_like "
    "ones_like".split())
_STORAGE_OR_TENSOR = re.compile(r"[A-Z][A-Za-z0-9]*(Storage|Tensor)\Z")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# torch's operators (aten), as pickle writes torch.tanh: getattr of _VariableFunctionsClass
_TORCH_OP = re.compile(r"_VariableFunctionsClass\.[A-Za-z][A-Za-z0-9_]*\Z")
# Packages whose classes a whole model, optimizer or scheduler saved with torch.save holds
# (creating one only builds an object; BUILD then calls its __setstate__).
_TORCH_CLASS_PACKAGES = ("torch.nn", "torch.optim", "torch.distributions", "torch.ao.nn",
                         "torch.ao.quantization", "torch.amp", "torch.cuda.amp",
                         "torch.cpu.amp", "torch.utils.data")
# ... but not those that compile or load code when built (a GraphModule execs its source;
# quantization's fx modules are GraphModules)
_TORCH_CODE_PACKAGES = frozenset({"fx", "jit", "export", "package", "compiler", "onnx", "hub",
                                  "cpp_extension", "benchmark", "library", "distributed"})
_TORCH_FUNCTIONAL_MODULES = frozenset({"torch", "math", "warnings", "importlib", "dataclasses",
                                       "np", "grad"})
MAX_INNER_DEPTH = 3    # pickles inside pickles (torch.storage._load_from_bytes) read, at most
MAX_OPCODES = 5_000_000          # read of one file's pickles, at most (then: not read)
MAX_PICKLES_IN_A_FILE = 1000     # pickles one after another in one file, at most
MAX_ARRAY_BYTES = 1 << 40        # a joblib array longer than this is no array a file holds
# torch.save(..., _use_new_zipfile_serialization=False) begins with this number, pickled
TORCH_LEGACY_MAGIC = b"\x8a\x0a" + (0x1950a86a20f9469cfc6c).to_bytes(10, "little")


class PickleName(str):
    """`module.name` of what a pickle loads, with the `module` the loader imports and the
    `name` it looks up there, and `how`: "call" (looked up: called, built or passed on),
    "patch" (the pickle sets the global's own attributes or items: BUILD, SETITEM, APPEND on
    it), "unknown" (a name computed at load time or an extension code: not readable)."""
    module: str | None
    name: str | None
    how: str

    def __new__(cls, module: str | None, name: str | None, how: str = "call"):
        if how == "unknown":
            text = "?" if module is None else module
        else:
            text = f"{module}.{name}" + (" (its attributes set)" if how == "patch" else "")
        self = super().__new__(cls, text)
        self.module, self.name, self.how = module, name, how
        return self


@dataclass
class PickleReading:
    names: list[PickleName] = field(default_factory=list)
    inner: list[bytes] = field(default_factory=list)   # torch streams it loads (_load_from_bytes)
    opcodes: int = 0
    truncated: bool = False      # stopped at the budget of opcodes: the rest was not read
    complete: bool = False       # read to its STOP (else the loader stops where the scan did)
    skipped: bool = False        # a joblib array's bytes skipped (read_pickle, joblib=True)


class _Budget:
    """Opcodes left to read, over a file's pickles and those inside them."""

    def __init__(self, opcodes: int):
        self.left = opcodes


# -- reading a pickle ------------------------------------------------------------------------
_MARK = object()


class _Str(str):
    pass


class _Bytes(bytes):
    pass


class _Tuple(tuple):
    pass


class _Int(int):
    pass


class _Dict(dict):
    pass


_NONE = object()   # pickle's None (the stack's None is a value the scan does not know)


class _Global:
    __slots__ = ("name", "getattr", "wrapper")

    def __init__(self, name: PickleName, joblib: bool = False):
        self.name = name
        # builtins.getattr: said where it is used, unless to look a name up in a global
        # (pickle writes torch.tanh as getattr(torch._C._VariableFunctionsClass, 'tanh'))
        self.getattr = name.how == "call" and \
            _py3_name(name.module, name.name) == ("builtins", "getattr")
        # joblib's array wrapper, in a file joblib loads: said where it is used, unless made
        # as joblib makes it (NEWOBJ, then BUILD with the array's shape and dtype)
        self.wrapper = joblib and (name.module, name.name) == JOBLIB_WRAPPER

    @property
    def deferred(self) -> bool:
        return self.getattr or self.wrapper


class _Wrapper:
    """A joblib NumpyArrayWrapper made (NEWOBJ of the class, no arguments), not yet built."""


class _Dtype:
    """numpy.dtype(descr, align, copy) made while loading, with the state BUILD gives it."""

    def __init__(self, descr: str):
        self.descr, self.state = descr, None

    def _field(self, index: int):
        state = self.state
        if isinstance(state, _Tuple) and len(state) >= 8 and type(state[index]) is _Int:
            return int(state[index])
        return None

    def has_objects(self) -> bool:
        """numpy's object dtype, or a record with an object field (its flags say so)."""
        match, flags = _DESCR.match(self.descr), self._field(7)
        return match is not None and match.group(1) == "O" or flags is not None and \
            bool(flags & 1)

    def itemsize(self) -> int | None:
        """Bytes per element, as numpy computes it; None where the scan cannot tell."""
        elsize = self._field(5)
        if elsize is not None and elsize > 0:
            return elsize
        match = _DESCR.match(self.descr)
        if match is None:
            return None
        kind, digits = match.groups()
        if kind == "?":
            return 1
        if not digits:
            return None
        return int(digits) * (4 if kind == "U" else 1)


JOBLIB_WRAPPER = ("joblib.numpy_pickle", "NumpyArrayWrapper")
_DESCR = re.compile(r"[<>|=]?([biufcmMOSUV?])([0-9]*)\Z")


_STRING_OPS = frozenset({"STRING", "BINSTRING", "SHORT_BINSTRING", "UNICODE", "BINUNICODE",
                         "SHORT_BINUNICODE", "BINUNICODE8"})
_BYTES_OPS = frozenset({"BINBYTES", "SHORT_BINBYTES", "BINBYTES8"})
_MUTATING_OPS = {"BUILD": 1, "SETITEM": 2, "APPEND": 1}          # items popped above the target
_MUTATING_MARK_OPS = frozenset({"SETITEMS", "APPENDS", "ADDITEMS"})


class TooLarge(ValueError):
    """Data longer than the scan reads (a compressed file's, scan.py): what comes after is
    not read."""


class _Unmeasured(Exception):
    """A joblib array whose length the scan cannot tell: the rest of the file is not read."""


def read_pickle(data, budget: _Budget | None = None,
                joblib: bool = False) -> PickleReading | None:
    """The globals one pickle (bytes, or a binary file from its position) loads; None when it
    is no pickle (no opcode read). `joblib`: read as joblib.load reads it (each array's bytes
    after its wrapper skipped)."""
    stream = io.BytesIO(data) if isinstance(data, (bytes, bytearray)) else data
    budget = budget or _Budget(MAX_OPCODES)
    reading = PickleReading()
    stack: list = []
    memo: dict = {}
    push = stack.append

    def used(item):
        if type(item) is _Global and item.getattr:
            reading.names.append(item.name)
        elif type(item) is _Global and item.wrapper:
            reading.names.append(PickleName(".".join(JOBLIB_WRAPPER) + " made otherwise than "
                                            "joblib makes it", None, "unknown"))
        return item

    def pop():
        return used(stack.pop()) if stack else None

    def pop_mark() -> list:
        try:
            at = len(stack) - 1 - stack[::-1].index(_MARK)
        except ValueError:
            at = -1     # no mark: the loader fails here
        items = stack[at + 1:]
        del stack[max(at, 0):]
        for item in items:
            used(item)
        return items

    def top():
        return stack[-1] if stack else None

    try:
        for opcode, argument, _position in pickletools.genops(stream):
            reading.opcodes += 1
            budget.left -= 1
            if budget.left < 0:
                reading.truncated = True
                break
            kind = _KIND.get(opcode)
            if kind is None:                        # any other: pops, then pushes unknowns
                takes_mark, pops, pushes = _EFFECT[opcode]
                if takes_mark:
                    pop_mark()
                for _ in range(pops):
                    pop()
                for _ in range(pushes):
                    push(None)
            elif kind == "string":
                push(_Str(argument) if isinstance(argument, str) else None)
            elif kind == "bytes":
                push(_Bytes(argument))
            elif kind == "mark":
                push(_MARK)
            elif kind == "memoize":
                memo[len(memo)] = top()
            elif kind == "put":
                memo[argument] = top()
            elif kind == "get":
                push(memo.get(argument))
            elif kind in ("global", "inst"):
                module, _, attribute = str(argument).partition(" ")
                found = _Global(PickleName(module, attribute), joblib)
                if kind == "inst":
                    reading.names.append(found.name)
                    pop_mark()
                    push(None)
                else:
                    if not found.deferred:
                        reading.names.append(found.name)
                    push(found)
            elif kind == "stack_global":
                attribute, module = pop(), pop()
                found = _Global(PickleName(str(module), str(attribute))
                                if type(module) is _Str and type(attribute) is _Str
                                else PickleName(None, None, "unknown"), joblib)
                if not found.deferred:
                    reading.names.append(found.name)
                push(found)
            elif kind == "int":
                push(_Int(argument) if isinstance(argument, int) else None)
            elif kind == "none":
                push(_NONE)
            elif kind == "dict":
                items = pop_mark()
                push(_Dict(zip(items[::2], items[1::2])))
            elif kind == "empty_dict":
                push(_Dict())
            elif kind == "newobj":
                keywords = pop() if opcode.name == "NEWOBJ_EX" else _Dict()
                arguments = pop()
                made = stack.pop() if stack else None
                if type(made) is _Global and made.wrapper and arguments == () and \
                        keywords == {}:
                    push(_Wrapper())
                else:
                    used(made)
                    push(None)
            elif kind == "ext":
                found = PickleName(f"extension code {argument}", None, "unknown")
                reading.names.append(found)
                push(_Global(found))
            elif kind == "dup":
                push(top())
            elif kind == "pop":
                pop()
            elif kind == "pop_mark":
                pop_mark()
            elif kind == "tuple":
                push(_Tuple(pop_mark()))
            elif kind == "tuple_n":
                items = [pop() for _ in range(_TUPLE_SIZES[opcode.name])][::-1]
                push(_Tuple(items))
            elif kind == "reduce":
                arguments = pop()
                function = stack.pop() if stack else None
                if type(function) is _Global and function.getattr:
                    push(_looked_up(function, arguments, reading))
                else:
                    push(_reduced(used(function), arguments, reading))
            elif kind == "mutate":                  # BUILD, SETITEM, APPEND: on what is below
                items = [pop() for _ in range(_MUTATING_OPS[opcode.name])][::-1]
                target = top()
                if opcode.name == "SETITEM" and type(target) is _Dict:
                    target[items[0]] = items[1]
                elif opcode.name == "BUILD" and type(target) is _Wrapper:
                    _skip_array(stream, items[0], reading, budget)
                    reading.skipped = True
                    stack[-1] = None                # the array joblib read
                elif opcode.name == "BUILD" and type(target) is _Dtype:
                    target.state = items[0]
                else:
                    _patched(target, reading)
            elif kind == "mutate_mark":             # SETITEMS, APPENDS, ADDITEMS
                items = pop_mark()
                target = top()
                if opcode.name == "SETITEMS" and type(target) is _Dict:
                    target.update(zip(items[::2], items[1::2]))
                else:
                    _patched(target, reading)
        else:
            reading.complete = reading.opcodes > 0
    except _Unmeasured:
        reading.names.append(PickleName(".".join(JOBLIB_WRAPPER) + " of an array the scan "
                                        "cannot measure", None, "unknown"))
    except TooLarge:
        reading.truncated = True
    except Exception:
        # Not a pickle, or one the loader stops reading here (what came before has run).
        if reading.opcodes == 0:
            return None
    return reading


def _skip_array(stream, state, reading: PickleReading, budget: _Budget) -> None:
    """What joblib's NumpyUnpickler.load_build reads after a wrapper is built: the array's raw
    bytes (after a padding byte and that many bytes of padding, since joblib 1.2: where the
    state names its alignment), or, for an array of objects, one pickle (read here too)."""
    if not isinstance(state, _Dict):
        raise _Unmeasured
    shape, dtype = state.get("shape"), state.get("dtype")
    if not (isinstance(shape, _Tuple) and all(type(n) is _Int and n >= 0 for n in shape) and
            isinstance(dtype, _Dtype)):
        raise _Unmeasured
    if dtype.has_objects():
        inner = read_pickle(stream, budget)
        if inner is None:
            raise _Unmeasured
        reading.names += inner.names
        reading.inner += inner.inner
        reading.truncated |= inner.truncated
        if not inner.complete:
            raise _Unmeasured
        return
    size = dtype.itemsize()
    count = 1
    for n in shape:
        count *= int(n)
    if size is None or count * size > MAX_ARRAY_BYTES:
        raise _Unmeasured
    if type(state.get("numpy_array_alignment_bytes")) is _Int:
        padding = stream.read(1)
        if padding:
            stream.seek(padding[0], io.SEEK_CUR)
    stream.seek(count * size, io.SEEK_CUR)


def _kinds() -> tuple[dict, dict]:
    """Each opcode's handling in read_pickle, and what any other takes and leaves: (takes the
    items above a mark, other items it pops, items it pushes)."""
    named = {"INT": "int", "BININT": "int", "BININT1": "int", "BININT2": "int", "LONG": "int",
             "LONG1": "int", "LONG4": "int", "NEWTRUE": "int", "NEWFALSE": "int",
             "NONE": "none", "DICT": "dict", "EMPTY_DICT": "empty_dict", "NEWOBJ": "newobj",
             "NEWOBJ_EX": "newobj",
             "MARK": "mark", "MEMOIZE": "memoize", "GLOBAL": "global", "INST": "inst",
             "STACK_GLOBAL": "stack_global", "DUP": "dup", "POP": "pop", "POP_MARK": "pop_mark",
             "TUPLE": "tuple", "REDUCE": "reduce", "EXT1": "ext", "EXT2": "ext", "EXT4": "ext",
             "PUT": "put", "BINPUT": "put", "LONG_BINPUT": "put",
             "GET": "get", "BINGET": "get", "LONG_BINGET": "get",
             **{n: "string" for n in _STRING_OPS}, **{n: "bytes" for n in _BYTES_OPS},
             **{n: "tuple_n" for n in _TUPLE_SIZES}, **{n: "mutate" for n in _MUTATING_OPS},
             **{n: "mutate_mark" for n in _MUTATING_MARK_OPS}}
    kinds, effects = {}, {}
    for opcode in pickletools.opcodes:
        if opcode.name in named:
            kinds[opcode] = named[opcode.name]
            continue
        before = opcode.stack_before
        if pickletools.markobject in before:
            effects[opcode] = (True, before.index(pickletools.markobject),
                               len(opcode.stack_after))
        else:
            effects[opcode] = (False, len(before), len(opcode.stack_after))
    return kinds, effects


_TUPLE_SIZES = {"EMPTY_TUPLE": 0, "TUPLE1": 1, "TUPLE2": 2, "TUPLE3": 3}
_KIND, _EFFECT = _kinds()


def _reduced(function, arguments, reading: PickleReading):
    """What REDUCE leaves: bytes where the scan can tell (protocol 2 writes bytes as
    _codecs.encode(text, 'latin1')), else unknown; the torch streams a storage is rebuilt from
    (torch.storage._load_from_bytes: a torch.load of those bytes) are kept to be read too."""
    if not isinstance(function, _Global):
        return None
    called = function.name
    if (called.module, called.name) in (("numpy", "dtype"), ("numpy.core.multiarray", "dtype"),
                                        ("numpy._core.multiarray", "dtype")) and \
            isinstance(arguments, _Tuple) and arguments and isinstance(arguments[0], _Str):
        return _Dtype(str(arguments[0]))
    if (called.module, called.name) == ("_codecs", "encode") and isinstance(arguments, _Tuple) \
            and len(arguments) == 2 and isinstance(arguments[0], _Str) and \
            isinstance(arguments[1], _Str) and arguments[1].lower() in ("latin1", "latin-1"):
        return _Bytes(arguments[0].encode("latin-1"))
    if (called.module, called.name) == ("torch.storage", "_load_from_bytes"):
        if isinstance(arguments, _Tuple) and len(arguments) == 1 and \
                isinstance(arguments[0], _Bytes):
            reading.inner.append(bytes(arguments[0]))
        else:
            reading.names.append(PickleName("torch.storage._load_from_bytes of bytes the scan "
                                            "cannot read", None, "unknown"))
    return None


def _looked_up(getattr_global: _Global, arguments, reading: PickleReading):
    """getattr(a global, 'name'): the global `module.name.attribute` (checked as a dotted name),
    else getattr itself (held)."""
    if isinstance(arguments, _Tuple) and len(arguments) == 2 and \
            isinstance(arguments[0], _Global) and arguments[0].name.how == "call" and \
            not arguments[0].getattr and isinstance(arguments[1], _Str):
        owner = arguments[0].name
        found = PickleName(owner.module, f"{owner.name}.{arguments[1]}")
        reading.names.append(found)
        return _Global(found)
    reading.names.append(getattr_global.name)
    return None


def _patched(target, reading: PickleReading) -> None:
    if isinstance(target, _Global) and target.name.how != "unknown":
        reading.names.append(PickleName(target.name.module, target.name.name, "patch"))


def pickle_globals(data: bytes) -> list[PickleName] | None:
    """The `module.name`s a pickle calls or builds when loaded (PickleName: a str), those of
    the pickles after it in the same bytes and of the torch streams it loads included; None if
    it is no pickle."""
    if data.startswith(NPY_MAGIC):   # no pickle (its first byte, STACK_GLOBAL, fails): np.save's
        data = npy_pickle(data)
        if data is None:
            return None
    reading = read_stream(io.BytesIO(data))
    return None if reading is None else reading.names


def read_stream(stream, budget: _Budget | None = None, depth: int = 0,
                joblib: bool = False) -> PickleReading | None:
    """Every pickle of a file one after another (pickle.load called in a loop reads them all;
    torch.save's legacy format is five pickles, then the storages' raw bytes), with the
    globals of the torch streams they load (torch.storage._load_from_bytes); None if the file
    is no pickle. `joblib`: read as joblib.load reads them too (read_pickle)."""
    budget = budget or _Budget(MAX_OPCODES)
    start = stream.tell()
    head = stream.read(len(TORCH_LEGACY_MAGIC) + 4)
    stream.seek(start)
    count = 5 if TORCH_LEGACY_MAGIC in head else MAX_PICKLES_IN_A_FILE
    total = None
    for _ in range(count):
        position = stream.tell()
        reading = read_pickle(stream, budget, joblib)
        if reading is None:
            break
        if total is None:
            total = reading
        else:
            total.names += reading.names
            total.inner += reading.inner
            total.opcodes += reading.opcodes
            total.truncated |= reading.truncated
            total.skipped |= reading.skipped
        if not reading.complete or stream.tell() == position or not stream.read(1):
            break
        stream.seek(-1, io.SEEK_CUR)
    if total is not None:
        for blob in total.inner:
            total.names += torch_stream_globals(blob, budget, depth + 1)
            total.truncated |= budget.left < 0
        total.inner = []
    return total


def torch_stream_globals(blob: bytes, budget: _Budget | None = None,
                         depth: int = 1) -> list[PickleName]:
    """What torch.load of `blob` loads: a zip's pickles, or the legacy format's pickles."""
    budget = budget or _Budget(MAX_OPCODES)
    if depth > MAX_INNER_DEPTH:
        return [PickleName("pickles nested deeper than the scan reads", None, "unknown")]
    names: list[PickleName] = []
    if blob[:4] in ZIP_MAGICS:
        try:
            with zipfile.ZipFile(io.BytesIO(blob)) as archive:
                for info in archive.infolist()[:MAX_PICKLES_IN_A_FILE]:
                    if info.filename.endswith(".pkl"):
                        with archive.open(info) as member:
                            reading = read_stream(member, budget, depth)
                        names += reading.names if reading else []
        except (zipfile.BadZipFile, OSError, ValueError, EOFError, RuntimeError):
            names.append(PickleName("a zip the scan cannot read", None, "unknown"))
        return names
    reading = read_stream(io.BytesIO(blob), budget, depth)
    return reading.names if reading else []


# -- what is safe -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Context:
    """Where a pickle is: `torchscript` (a TorchScript archive's, whose `__torch__.*` classes
    are TorchScript's own), `own_names` (module -> the names of classes the
    submission defines in it: `__main__` is any of its files; None: not known, and no name of
    `__main__` is allowed)."""
    torchscript: bool = False
    own_names: dict[str, frozenset[str]] | None = None


def _py3_name(module: str | None, name: str | None) -> tuple[str | None, str | None]:
    """What Python 3's unpickler loads for a Python 2 name (protocol < 3: `__builtin__.xrange`
    is range, `copy_reg` copyreg)."""
    if (module, name) in _compat_pickle.NAME_MAPPING:
        return _compat_pickle.NAME_MAPPING[(module, name)]
    return _compat_pickle.IMPORT_MAPPING.get(module, module), name


def is_safe(found: str, context: Context = Context()) -> bool:
    module, name, how = getattr(found, "module", None), getattr(found, "name", None), \
        getattr(found, "how", "call")
    if module is None and how != "unknown":
        module, _, name = str(found).rpartition(".")
    module, name = _py3_name(module, name)
    if how != "call" or not module or not name:
        return False  # patches a global, or computed
    if module == "torch._C" and _TORCH_OP.match(name):
        return True   # getattr(torch._C._VariableFunctionsClass, 'tanh'): torch.tanh
    if not _IDENTIFIER.match(name):
        return False  # a dotted path through attributes (pathlib + os.system)
    if module in ("builtins", "__builtin__"):
        return name in _PICKLE_SAFE_BUILTINS
    if name in _SAFE.get(module, ()):
        return True
    if module == "__torch__" or module.startswith("__torch__."):
        return context.torchscript
    if module in ("__main__", "__mp_main__"):
        # Without the submission's classes known (a pickle written into the source), none:
        # `pickle.loads(b"...__main__ tweak...")` would call the script's own function.
        return context.own_names is not None and name in context.own_names.get("__main__", ())
    if module.split(".")[0] in ("torch", "numpy"):
        return _library_safe(module, name)
    if context.own_names is not None:
        return name in context.own_names.get(module, ())
    return False


def _library_safe(module: str, name: str) -> bool:
    if module == "torch":
        return name in _TORCH_TOP or name in _TORCH_MATH or bool(_STORAGE_OR_TENSOR.match(name))
    if module in ("torch.cuda", "torch.sparse", "torch.cuda.sparse"):
        return bool(_STORAGE_OR_TENSOR.match(name))
    if module == "torch._utils":
        return name.startswith("_rebuild_")
    if module == "torch.nn.functional":
        return not name.startswith("_") and name not in _TORCH_FUNCTIONAL_MODULES and \
            name[0].islower()
    if module == "torch._C._nn":
        return not name.startswith("_")
    if module == "torch.return_types":
        return not name.startswith("_")
    if module == "numpy":
        return name in _NUMPY_SCALARS
    if module == "numpy.dtypes":
        return name.endswith("DType")
    parts = module.split(".")
    public = not any(part.startswith("_") or part in _TORCH_CODE_PACKAGES for part in parts)
    return public and name[0].isupper() and any(
        module == p or module.startswith(p + ".") for p in _TORCH_CLASS_PACKAGES)


def dangerous_globals(names: list[str], context: Context = Context()) -> list[str]:
    return [name for name in names if not is_safe(name, context)]


# -- .npy -------------------------------------------------------------------------------------
def npy_pickle_offset(stream) -> int | None:
    """Where the pickle of a .npy file (np.save) begins, read from the start of `stream`: after
    its header where its dtype holds Python objects (np.load reads them with pickle,
    allow_pickle=True); None where it holds numbers, text or records of those (np.load reads
    raw bytes and runs nothing) or np.load refuses it. A header the scan cannot read counts as
    one of objects."""
    start = stream.tell()
    prefix = stream.read(12)
    if not prefix.startswith(NPY_MAGIC) or len(prefix) < 10:
        return None
    major, minor = prefix[6], prefix[7]
    if minor != 0:
        return None   # np.load refuses versions other than 1.0, 2.0, 3.0: nothing is loaded
    if major == 1:
        (length,), begin, encoding = struct.unpack("<H", prefix[8:10]), 10, "latin1"
    elif major in (2, 3) and len(prefix) >= 12:
        (length,), begin = struct.unpack("<I", prefix[8:12]), 12
        encoding = "utf8" if major == 3 else "latin1"
    else:
        return None
    stream.seek(start + begin)
    header = stream.read(length)
    payload = start + begin + length
    try:
        descr = ast.literal_eval(header.decode(encoding))["descr"]
    except (ValueError, SyntaxError, TypeError, KeyError, UnicodeDecodeError, MemoryError,
            RecursionError):
        return payload
    return payload if _holds_objects(descr) else None


def npy_pickle(data: bytes) -> bytes | None:
    """The pickle a .npy file's bytes hold (npy_pickle_offset), or None."""
    offset = npy_pickle_offset(io.BytesIO(data))
    return None if offset is None else data[offset:]


def _holds_objects(descr, depth: int = 0) -> bool:
    """Whether a .npy header's descr is (or has a field of) numpy's object dtype."""
    if depth > 32:
        return True
    if isinstance(descr, str):
        return "O" in descr or "object" in descr.lower()
    if isinstance(descr, tuple) and len(descr) == 2 and not isinstance(descr[0], (tuple, list)):
        return _holds_objects(descr[0], depth + 1)      # a subarray: (descr, shape)
    if isinstance(descr, list):
        for item in descr:
            if not isinstance(item, (tuple, list)) or len(item) not in (2, 3):
                return True
            if _holds_objects(item[1], depth + 1):
                return True
        return False
    return True


# -- TorchScript archives ---------------------------------------------------------------------
def torchscript_root(names: list[str]) -> str | None:
    """The folder a TorchScript archive (torch.jit.save) keeps its files in (`model/` with
    model/data.pkl, model/constants.pkl and TorchScript source under model/code/), or None."""
    roots = {n.split("/", 1)[0] for n in names if "/" in n}
    if len(roots) != 1 or any("/" not in n for n in names):
        return None
    root = roots.pop()
    present = set(names)
    if f"{root}/constants.pkl" in present and f"{root}/data.pkl" in present and \
            any(n.startswith(f"{root}/code/") for n in names):
        return root
    return None


_BINDS = (ast.Import, ast.ImportFrom)


def torchscript_as_python(source: bytes) -> bytes:
    """TorchScript source (an archive's code/ file) read as Python: each `__torch__.a.b.C`
    (TorchScript's name of a class, never bound in Python: NameError if ever run) becomes one
    name of the same length, so that `torch.nn.modules` in it is not read as sys.modules.
    Unchanged where the file binds `__torch__` itself (then the chain is an attribute path),
    or is no Python."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return source
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == "__torch__" and \
                not isinstance(node.ctx, ast.Load):
            return source
        if isinstance(node, _BINDS) and any(
                a.name == "*" or (a.asname or a.name).split(".")[0] == "__torch__"
                for a in node.names):
            return source
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and \
                node.name == "__torch__":
            return source
        if isinstance(node, ast.arg) and node.arg == "__torch__":
            return source
        if isinstance(node, (ast.Global, ast.Nonlocal)) and "__torch__" in node.names:
            return source
        if isinstance(node, ast.ExceptHandler) and node.name == "__torch__":
            return source
        if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name == "__torch__":
            return source
        if isinstance(node, ast.MatchMapping) and node.rest == "__torch__":
            return source
    return _without_torchscript_names(source)


def _without_torchscript_names(source: bytes) -> bytes:
    """`__torch__.a.b.C` chains of names (outside strings and comments, not an attribute
    `x.__torch__`, on one line without spaces) each made one name: dots become underscores."""
    try:
        tokens = list(tokenize.tokenize(io.BytesIO(source).readline))
    except (tokenize.TokenError, SyntaxError, ValueError, UnicodeDecodeError):
        return source
    encoding = tokens[0].string if tokens and tokens[0].type == tokenize.ENCODING else "utf-8"
    try:
        lines = source.decode(encoding).split("\n")   # rows as tokenize counts them
    except (UnicodeDecodeError, LookupError):
        return source
    spans = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        previous = tokens[index - 1] if index else None
        if token.type == tokenize.NAME and token.string == "__torch__" and not (
                previous is not None and previous.type == tokenize.OP and
                previous.string == "."):
            end, last = index, token
            while end + 2 < len(tokens) and tokens[end + 1].string == "." and \
                    tokens[end + 2].type == tokenize.NAME and \
                    tokens[end + 1].start == last.end and tokens[end + 2].start == \
                    tokens[end + 1].end:
                end += 2
                last = tokens[end]
            if end > index:
                spans.append((token.start, last.end,
                              "".join(t.string for t in tokens[index:end + 1])))
            index = end + 1
            continue
        index += 1
    for (row, start), (_row, stop), chain in spans:
        line = lines[row - 1] if row <= len(lines) else ""
        if line[start:stop] != chain:
            return source    # rows counted otherwise (a lone \r): leave it all as it is
        lines[row - 1] = line[:start] + chain.replace(".", "_") + line[stop:]
    return "\n".join(lines).encode(encoding)
