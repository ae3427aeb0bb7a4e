"""Put on PYTHONPATH by `pdl-grade run/torchrun`: every Python process of the run (torchrun's
workers, `mp.spawn` children) gets the same node as soon as it imports torch.

Activation waits for `import torch` so that processes that never use torch pay nothing.
"""
import os
import sys

# What a fresh interpreter has imported before its script starts: no module of the script's
# folder can shadow these (grader/vgpu/script_folder.py).
STARTUP_MODULES = frozenset(sys.modules)


def _no_memory_readers_from_the_start():
    """In a graded run, at once: no other process of the same user may read this one's memory
    or descriptors (PR_SET_DUMPABLE=0), well before the run's seal key is read when torch is
    imported. A red team: where bubblewrap cannot start (Gradescope's default container) every
    run is the same user, and another could have read the key through /proc/<pid>/fd during
    the second torch takes to import. (grader/records/seal.py sets it again as it reads the key.)"""
    if os.environ.get("PDL_SEAL_FD", "taken") == "taken":
        return
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)   # PR_SET_DUMPABLE, 0
    except (OSError, AttributeError):
        pass


def _activate_when_torch_is_imported():
    if not os.environ.get("PDL_VGPU_GPUS"):
        return
    try:
        from grader.vgpu.post_import import when_imported
    except ImportError:
        sys.stderr.write("pdl-autograder: the grader package is not importable; "
                         "virtual GPUs are off in this process\n")
        return

    def activate(_torch):
        # torchrun's own agent process only starts the workers: it gets no node.
        if _is_torchrun_agent():
            return
        from grader.vgpu import activate_from_environment
        activate_from_environment()

    when_imported("torch", activate)


def _is_torchrun_agent() -> bool:
    # `python -m torch.distributed.run` imports torch while finding the module, when
    # sys.argv[0] is still "-m": only the interpreter's own argv names the module then.
    argv = list(getattr(sys, "orig_argv", []))
    if "-m" in argv and argv[argv.index("-m") + 1:argv.index("-m") + 2] in (
            ["torch.distributed.run"], ["grader.vgpu.torchrun_launcher"],   # pdl-grade torchrun's
            ["grader.vgpu.ranks"]):   # the grader's, which may import torch to fork its ranks
        return True
    launcher = sys.argv[0] if sys.argv else ""
    return launcher.endswith((os.path.join("distributed", "run.py"), "torchrun"))


def _display_only_stand_ins_last():
    """tqdm and matplotlib draw and compute nothing a check reads, yet a script importing one
    that is not installed stopped at its import (adv37: a tqdm progress bar 0.25/12, a
    matplotlib plot of Task 2 2/15). Their stand-ins (display_only/) are found last: after
    site-packages (a real install wins) and after the script's folder (a student's own tqdm.py
    stays theirs). Nothing that computes (numpy, pandas, scipy) has one."""
    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "display_only")
    if folder not in sys.path:
        sys.path.append(folder)


def _chain_to_the_next_sitecustomize():
    # Ours shadows any sitecustomize of the Python installation: run that one too.
    here = os.path.dirname(os.path.abspath(__file__))
    import importlib.util
    for entry in sys.path:
        if os.path.abspath(entry or ".") == here:
            continue
        candidate = os.path.join(entry, "sitecustomize.py")
        if os.path.isfile(candidate):
            spec = importlib.util.spec_from_file_location("_pdl_chained_sitecustomize", candidate)
            module = importlib.util.module_from_spec(spec)
            try:
                spec.loader.exec_module(module)
            except Exception:
                pass
            return


_no_memory_readers_from_the_start()
_activate_when_torch_is_imported()
_display_only_stand_ins_last()
_chain_to_the_next_sitecustomize()
