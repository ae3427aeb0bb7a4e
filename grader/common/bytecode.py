"""Compiled bytecode for the sandboxed runs' imports, where the installation has none.

Every run imports torch from a read-only view of the installation, so it can never write a
`.pyc` of its own: where the installation has none (installed with `pip --no-compile`, an
image that strips `__pycache__` or sets PYTHONDONTWRITEBYTECODE, files touched after install),
every run compiles torch's Python files again, about 2.4 times the CPU of an import that reads
them (3.3 against 1.4 CPU-seconds on the 2-core machine; with dynamo 6.7 against 2.7; on the
lent 16-core node, whose image has no torch bytecode, 9.6 CPU-seconds for torch and dynamo).

Then the grader compiles them once itself, into a cache of its own (`shared_bytecode()`): one
trusted interpreter, no student code in it, imports what a run imports before the script
starts with `-X pycache_prefix=CACHE`, and compiles the grader's runtime there too. Sandboxed
runs get the cache read-only with PYTHONPYCACHEPREFIX (grader/sandbox/confined_run.py), so a
run reads torch's bytecode and can write none. Python checks each cached file against its
source's size and time, so an updated torch or grader is never run from stale bytecode (the
next grading compiles what changed). The checks' pytest and HW3's recomputation read it too.
Where runs are not sandboxed there is no cache: code running as the grader's user outside a
sandbox could write bytecode that later runs and the checks' pytest would load.

PDL_SHARED_BYTECODE: `auto` (the default: only where the installation's bytecode is missing
or stale), `on` (always, e.g. to measure it) or `off`. PDL_BYTECODE_CACHE: the cache's folder
(default: $XDG_CACHE_HOME or ~/.cache, then pdl-autograder/bytecode).
"""
from __future__ import annotations

import contextlib
import fcntl
import functools
import importlib.util
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from grader.common.locations import GRADER_PACKAGE, installed_torch_folder
from grader.edition import STAFF_ONLY
from grader.vgpu.fork_server import BASELINE, LAZY

SWITCH_ENV = "PDL_SHARED_BYTECODE"
CACHE_ENV = "PDL_BYTECODE_CACHE"
PREFIX_ENV = "PYTHONPYCACHEPREFIX"

# Modules every run imports: torch's top, the tensor, nn's Module, and dynamo (optimizers).
PROBES = ("__init__.py", "_tensor.py", os.path.join("nn", "modules", "module.py"),
          os.path.join("_dynamo", "__init__.py"))
# What a run has imported before the student's script starts, and what it imports lazily at
# its first DDP model or optimizer step: the fork server's preloads.
WARM_MODULES = (*BASELINE, *LAZY)
# What the grader's own processes import (the checks' pytest, the reports): compiled where
# they import, skipped where one is not installed.
GRADER_MODULES = ("pytest", "pytest_jsonreport.plugin", "yaml", "jinja2", "pdfplumber")
# The grader's own code, parts of which run in the sandbox: compiled but for the staff's parts.
RUNTIME_PROBE = GRADER_PACKAGE / "vgpu" / "node.py"
WARM_TIMEOUT_S = 600
MARKER = ".pdl-bytecode-cache"


def cached_path(source: Path, prefix: Path | None = None) -> Path:
    """Where Python looks for `source`'s bytecode: its __pycache__, or under `prefix` as an
    interpreter started with `-X pycache_prefix=PREFIX` would (importlib's rule: the source's
    absolute folder below the prefix). Never through sys.pycache_prefix, which every thread's
    imports read."""
    name = Path(importlib.util.cache_from_source(str(source))).name
    folder = os.path.dirname(os.path.abspath(source))
    if prefix is None:
        return Path(folder) / "__pycache__" / name
    return Path(prefix) / folder.lstrip(os.sep) / name


def stale_or_missing(source: Path, prefix: Path | None = None) -> bool:
    """Whether importing `source` would have to compile it: no cached bytecode, or bytecode
    of another Python or of another version of the file."""
    try:
        header = cached_path(source, prefix).read_bytes()[:16]
        stat = source.stat()
    except (OSError, ValueError, NotImplementedError):
        return True
    if len(header) < 16 or header[:4] != importlib.util.MAGIC_NUMBER:
        return True
    flags = int.from_bytes(header[4:8], "little")
    if flags & 1:              # hash-based: checked against the source's hash (or trusted)
        return False
    mtime = int.from_bytes(header[8:12], "little")
    size = int.from_bytes(header[12:16], "little")
    return mtime != (int(stat.st_mtime) & 0xFFFFFFFF) or size != (stat.st_size & 0xFFFFFFFF)


def missing_bytecode(folder: Path, prefix: Path | None = None) -> list[str]:
    """The probe files of torch's `folder` whose bytecode an import would not find."""
    return [name for name in PROBES
            if (folder / name).exists() and stale_or_missing(folder / name, prefix)]


def torch_bytecode_warning(folder: Path | None = None) -> str | None:
    """A message for the instructor when torch's bytecode is missing or stale, else None."""
    folder = installed_torch_folder() if folder is None else folder
    if folder is None:
        return None
    missing = missing_bytecode(folder)
    if not missing:
        return None
    return (f"torch's compiled bytecode is missing or out of date in {folder} ("
            f"{', '.join(missing)}): every sandboxed run compiles torch's Python files again, "
            "about twice the CPU per run. Once, as the user who installed torch: "
            f"python3 -m compileall -q {folder}")


def cache_folder() -> Path:
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser().resolve()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base).resolve() / "pdl-autograder" / "bytecode"


def cache_is_warm(cache: Path, torch_folder: Path | None) -> bool:
    """Whether `cache` holds current bytecode for torch, the grader and the grader's own
    imports (one file of each: a cache warmed before one was installed, or before the list
    grew, is warmed again)."""
    probes = [RUNTIME_PROBE]
    if torch_folder is not None:
        probes += [torch_folder / name for name in PROBES if (torch_folder / name).exists()]
    for name in GRADER_MODULES:
        try:
            origin = importlib.util.find_spec(name.split(".")[0]).origin
        except (ImportError, AttributeError, ValueError):
            continue
        if origin and origin.endswith(".py"):
            probes.append(Path(origin))
    return not any(stale_or_missing(probe, cache) for probe in probes)


def warm_cache(cache: Path, modules=WARM_MODULES, folders=None, optional=GRADER_MODULES,
               timeout_s: float = WARM_TIMEOUT_S) -> str | None:
    """Compile into `cache` what `modules` (and those of `optional` that import) import and
    the `folders`' Python files, in a fresh interpreter of this installation (no student code
    runs there). Returns None, or why not."""
    if folders is None:      # the grader, less what is the staff's alone (the runs can read it)
        folders = [GRADER_PACKAGE]
        skip = "^(" + "|".join(re.escape(str(GRADER_PACKAGE / part)) for part in STAFF_ONLY) + ")"
    else:
        skip = "^$"
    cache.mkdir(parents=True, exist_ok=True)
    code = ("import compileall, importlib, re, sys\n"
            f"for name in {list(modules)!r}: importlib.import_module(name)\n"
            f"for name in {list(optional)!r}:\n"
            "    try: importlib.import_module(name)\n"
            "    except Exception: pass\n"
            f"for folder in {[str(f) for f in folders]!r}: "
            f"compileall.compile_dir(folder, quiet=2, rx=re.compile({skip!r}))\n")
    env = {name: value for name, value in os.environ.items()
           if name not in ("PYTHONDONTWRITEBYTECODE", PREFIX_ENV)}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(GRADER_PACKAGE.parent),
                                                      env.get("PYTHONPATH")]))
    env["CUDA_VISIBLE_DEVICES"] = ""     # importing must not touch (or wait for) a GPU
    try:
        done = subprocess.run([sys.executable, "-X", f"pycache_prefix={cache}", "-c", code],
                              env=env, capture_output=True, text=True, timeout=timeout_s,
                              cwd=cache)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"could not compile into {cache}: {error}"
    _readable_by_all(cache)
    if done.returncode != 0:
        tail = " ".join(done.stderr.strip().splitlines()[-2:])[:300]
        return f"compiling into {cache} failed (exit {done.returncode}): {tail}"
    return None


def _claim(cache: Path) -> str | None:
    """The cache's folder is the grader's alone (warming makes everything in it world-readable):
    a new or empty folder is marked as the cache, and a folder with other things in it and no
    mark (PDL_BYTECODE_CACHE set to a home or /tmp by mistake) is refused."""
    marker = cache / MARKER
    if marker.exists():
        return None
    cache.mkdir(parents=True, exist_ok=True)
    # Another grader process may be claiming it at the same moment: its mark and lock are not
    # someone else's things.
    if any(entry.name not in (MARKER, ".lock") for entry in cache.iterdir()):
        return (f"{cache} is not empty and is not the grader's bytecode cache: "
                f"{CACHE_ENV} must name a folder of its own")
    marker.write_text("pdl-autograder's bytecode for the sandboxed runs "
                      "(grader/common/bytecode.py); safe to delete\n", encoding="utf-8")
    return None


@contextlib.contextmanager
def _exclusive(lock: Path):
    """One compiler at a time: a batch's workers (or SLURM jobs) may all ask at once, and the
    later ones find the cache warm."""
    with open(lock, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _readable_by_all(cache: Path) -> None:
    # The runs read it as the sandbox's unprivileged user, whatever the grader's umask.
    cache.chmod(0o755)
    for root, dirs, files in os.walk(cache):
        for name in dirs:
            os.chmod(os.path.join(root, name), 0o755)
        for name in files:
            os.chmod(os.path.join(root, name), 0o644)


@functools.lru_cache(maxsize=1)
def shared_bytecode() -> Path | None:
    """The bytecode cache for sandboxed runs, warmed if needed, or None where the
    installation's own bytecode serves, where runs are not sandboxed, or where the cache could
    not be made (said on stderr)."""
    mode = os.environ.get(SWITCH_ENV, "auto").strip().lower()
    torch_folder = installed_torch_folder()
    if mode == "off" or (mode != "on" and (torch_folder is None
                                           or not missing_bytecode(torch_folder))):
        return None
    from grader.sandbox import sandbox_available
    if not sandbox_available()[0]:
        # Unsandboxed runs could write into it, and the checks' pytest would load what they
        # wrote: without a sandbox, every process compiles for itself.
        return None
    cache = cache_folder()
    if cache_is_warm(cache, torch_folder):
        return cache
    started = time.monotonic()
    try:
        problem = _claim(cache)
        if problem is None:
            with _exclusive(cache / ".lock"):
                # Another process (a batch's worker) may have warmed it while this one waited.
                problem = None if cache_is_warm(cache, torch_folder) else warm_cache(cache)
    except OSError as error:
        problem = f"could not prepare {cache}: {error}"
    if problem is None and not cache_is_warm(cache, torch_folder):
        problem = f"{cache} still lacks torch's bytecode after compiling"
    if problem:
        print(f"pdl-grade: warning: {problem}; every sandboxed run compiles torch again",
              file=sys.stderr)
        return None
    why = f"{SWITCH_ENV}=on" if mode == "on" else "the installation has none"
    print(f"pdl-grade: compiled torch's bytecode once into {cache} for the sandboxed runs "
          f"({why}; {time.monotonic() - started:.0f} s)", file=sys.stderr)
    return cache
