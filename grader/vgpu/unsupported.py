"""Features the virtual node cannot emulate faithfully: stop with a clear message, never guess."""
from __future__ import annotations

import importlib.abc
import sys


class VirtualGPUUnsupported(RuntimeError):
    pass


def message(feature: str) -> str:
    return (f"{feature} is not supported on virtual GPUs (pdl-autograder). "
            "Run this part on a machine with real GPUs; the course material does not need it.")


def unsupported(feature: str, kind: str = "function"):
    """A stand-in for a function, class or module that raises as soon as it is used."""
    def refuse(*args, **kwargs):
        raise VirtualGPUUnsupported(message(feature))

    if kind == "function":
        return refuse
    if kind == "class":
        return type("Unsupported", (), {"__new__": lambda cls, *a, **k: refuse(),
                                        "__doc__": message(feature)})

    class UnsupportedModule:
        def __getattr__(self, name):
            if name.startswith("__"):
                raise AttributeError(name)
            refuse()

    return UnsupportedModule()


class RefuseImports(importlib.abc.MetaPathFinder):
    """`import triton` (GPU kernels) fails with our message instead of a bare ImportError."""

    NAMES = {"triton": "Triton kernels"}

    def find_spec(self, fullname, path=None, target=None):
        feature = self.NAMES.get(fullname.partition(".")[0])
        if feature:
            raise ImportError(message(feature), name=fullname)
        return None


def compile_noop(model=None, *args, **kwargs):
    """`torch.compile`: compilation changes speed, not behaviour: run the eager model."""
    if model is None:
        return lambda fn: fn
    return model


def refusing_gpu_default_device(original):
    """`torch.set_default_device`, refusing a GPU: torch puts the device in at the bottom of its
    mode stack, below the node, so every tensor made afterwards would reach a CUDA kernel a CPU
    build does not have ("Could not run 'aten::empty.memory_format' ... 'CUDA' backend")."""
    def guarded(device):
        import torch
        if device is not None and torch.device(device).type == "cuda":
            raise VirtualGPUUnsupported(
                message(f"torch.set_default_device({device!r})")
                + " Make tensors on a GPU with device=... or .to(...) instead.")
        return original(device)
    guarded.__name__ = getattr(original, "__name__", "set_default_device")
    return guarded


def install(patcher) -> None:
    import torch

    patcher.set(torch, "compile", compile_noop)
    patcher.set(torch, "set_default_device", refusing_gpu_default_device(torch.set_default_device))
    if not any(isinstance(f, RefuseImports) for f in sys.meta_path):
        sys.meta_path.insert(0, RefuseImports())
    from grader.vgpu.post_import import when_imported
    when_imported("torch.distributed.fsdp", lambda module: _refuse_fsdp(patcher, module))
    when_imported("torch.utils.cpp_extension",
                  lambda module: _refuse_cuda_extensions(patcher, module))


def _refuse_fsdp(patcher, fsdp) -> None:
    patcher.set(fsdp.FullyShardedDataParallel, "__init__",
                unsupported("FullyShardedDataParallel (FSDP)"))
    if hasattr(fsdp, "fully_shard"):
        patcher.set(fsdp, "fully_shard", unsupported("FSDP2 fully_shard"))


def builds_cuda_code(args, kwargs) -> bool:
    """Whether a call of cpp_extension's `load`/`load_inline` compiles CUDA sources."""
    sources = list(kwargs.get("sources") or (args[1] if len(args) > 1 else []))
    return bool(kwargs.get("cuda_sources") or kwargs.get("with_cuda") or any(
        str(s).endswith((".cu", ".cuh")) for s in sources))


def refusing_cuda_code(original):
    """`original` (load or load_inline), refusing to build CUDA code."""
    def guarded(*args, **kwargs):
        if builds_cuda_code(args, kwargs):
            raise VirtualGPUUnsupported(message("A custom CUDA extension"))
        return original(*args, **kwargs)
    guarded.__name__ = getattr(original, "__name__", "guarded")
    return guarded


def _refuse_cuda_extensions(patcher, ext) -> None:
    for name in ("load", "load_inline"):
        patcher.set(ext, name, refusing_cuda_code(getattr(ext, name)))
    patcher.set(ext, "CUDAExtension", unsupported("A custom CUDA extension"))
