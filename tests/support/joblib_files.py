"""What joblib.dump writes, made without joblib (it is not installed where the grader runs,
nor among the test tools): for the scan's tests of joblib files (tests/integrity)."""
from __future__ import annotations

import bz2
import contextlib
import gzip
import io
import lzma
import pickle
import sys
import types
import zlib

import numpy as np


@contextlib.contextmanager
def joblib_wrapper_class():
    """joblib's NumpyArrayWrapper, defined here under joblib's module name (joblib is not
    installed where the grader runs): what joblib.dump pickles in each array's place."""
    class NumpyArrayWrapper:
        def __init__(self, subclass, shape, order, dtype, allow_mmap=False,
                     numpy_array_alignment_bytes=16):
            self.subclass, self.shape, self.order, self.dtype = subclass, shape, order, dtype
            self.allow_mmap = allow_mmap
            self.numpy_array_alignment_bytes = numpy_array_alignment_bytes

    NumpyArrayWrapper.__qualname__ = "NumpyArrayWrapper"
    created = [name for name in ("joblib", "joblib.numpy_pickle") if name not in sys.modules]
    for name in created:
        sys.modules[name] = types.ModuleType(name)
    module = sys.modules["joblib.numpy_pickle"]
    real = getattr(module, "NumpyArrayWrapper", None)   # where joblib is installed after all
    module.NumpyArrayWrapper = NumpyArrayWrapper
    NumpyArrayWrapper.__module__ = "joblib.numpy_pickle"
    try:
        yield NumpyArrayWrapper
    finally:
        if real is not None:
            module.NumpyArrayWrapper = real
        for name in created:
            del sys.modules[name]


def joblib_dumped(value, protocol: int = pickle.DEFAULT_PROTOCOL, compress: str = "",
                  aligned: bool = True) -> bytes:
    """The bytes joblib.dump(value, ..., compress=...) writes (joblib/numpy_pickle.py): its
    pickler (Python's own, pickle._Pickler) saves a NumpyArrayWrapper in each array's place,
    then writes the array after it: a padding byte and padding to 16 bytes, and the raw data
    (an array of objects: a protocol-2 pickle of it instead). `aligned`: joblib >= 1.2 (older
    ones wrote no padding). Compressed, the whole file goes through zlib, gzip, bz2 or xz."""
    with joblib_wrapper_class() as Wrapper:
        class NumpyPickler(pickle._Pickler):
            def save(self, obj, save_persistent_id=True):
                if type(obj) not in (np.ndarray, np.matrix):
                    return super().save(obj, save_persistent_id)
                order = "F" if obj.flags.f_contiguous and not obj.flags.c_contiguous else "C"
                wrapper = Wrapper(type(obj), obj.shape, order, obj.dtype,
                                  allow_mmap=not obj.dtype.hasobject)
                if not aligned:
                    del wrapper.numpy_array_alignment_bytes
                super().save(wrapper)
                if self.proto >= 4:
                    self.framer.commit_frame(force=True)
                if obj.dtype.hasobject:
                    pickle.dump(obj, buffer, protocol=2)
                    return
                if aligned:
                    padding = 16 - (buffer.tell() + 1) % 16
                    buffer.write(bytes([padding]) + b"\xff" * padding)
                buffer.write(obj.tobytes(order=order))

        buffer = io.BytesIO()
        NumpyPickler(buffer, protocol=protocol).dump(value)
    data = buffer.getvalue()
    return {"": lambda d: d, "zlib": zlib.compress, "gzip": gzip.compress, "bz2": bz2.compress,
            "xz": lzma.compress,
            "lzma": lambda d: lzma.compress(d, format=lzma.FORMAT_ALONE)}[compress](data)
