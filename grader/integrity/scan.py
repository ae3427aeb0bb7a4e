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
import bz2
import dataclasses
import functools
import gzip
import importlib.util
import io
import json
import lzma
import os
import shutil
import sys
import tarfile
import tempfile
import zipfile
import zlib
from pathlib import Path

# ASSIGNMENT_FOLDERS, CATEGORIES, NOTE and TAMPERING are part of this module's interface too.
from grader.integrity.assignment_groups import (assignment_groups, linked_assignments,
                                                trees_of)
from grader.integrity.findings import (ASSIGNMENT_FOLDERS, CATEGORIES, NOTE,  # noqa: F401
                                       TAMPERING, Finding)
from grader.integrity.own_objects import may_rebind_names, template_modules
from grader.integrity.pickles import (NPY_MAGIC, PICKLE_SUFFIXES, ZIP_MAGICS, Context,
                                      TooLarge, dangerous_globals, npy_pickle_offset,
                                      read_stream, torchscript_as_python, torchscript_root)
from grader.integrity.selves import Selves, own_selves
from grader.integrity.source import parameter_writes, parse_python, scan_text
from grader.integrity.unrun import (environments_own_parts, unimported_test_files,
                                    virtual_environments)

MAX_FILES = 5000  # as many as a batch unpacks (batch.inputs.UnpackLimits)
MAX_FILE_BYTES = 2 * 2**20
# Of all the submission's Python files together: homework is a few hundred KiB, and reading
# costs about 10 s a MiB (a red team's 12 generated modules of 2 MB took 5 minutes, and a
# hundred would have outlasted the batch's time limit in every batch). Past it, the files
# left are held unread.
MAX_TOTAL_SOURCE_BYTES = 4 * 2**20
MAX_ARCHIVE_MEMBERS = 2000     # members read (Python, compiled, pickled) of one archive
MAX_ARCHIVE_ENTRIES = 100000   # entries listed (a dataset's files are only listed)
MAX_MEMBER_BYTES = 8 * 2**20
MAX_NESTED_ARCHIVES = 3        # a checkpoint (a zip) in a zip in a zip, read at most
MAX_DECOMPRESSED_BYTES = 256 * 2**20   # of one compressed file (joblib's, a .pkl.gz)

_COMPILED_SUFFIXES = (".pyc", ".pyo", ".so", ".pyd", ".dylib")
_ZIP_SUFFIXES = (".zip", ".egg", ".whl", ".pyz", ".jar")
_TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
_OTHER_ARCHIVES = (".7z", ".rar", ".gz", ".bz2", ".xz")
# Names that shadow what the grader's runtime imports (held), and stdlib names nobody imports
# (no note).
_SHADOW_TAMPERING = frozenset({"grader", "torch", "sitecustomize", "usercustomize"})
# pytest's names: a student's own tests (tests/conftest.py with fixtures). The grader's checks run
# from the grader's folder with the submission outside every path pytest looks at, so nothing
# of the submission's is ever loaded by them (tests/hostile: conftest_plugin).
_PYTEST_NAMES = frozenset({"conftest", "pytest", "_pytest"})
_SHADOW_HARMLESS = frozenset({"test", "this", "antigravity", "turtle", "turtledemo", "idlelib",
                              "tkinter", "curses", "lib2to3", "xdrlib", "nntplib", "telnetlib"})


def scan_submission(submission: Path) -> list[Finding]:
    """Every finding in the submission's files, in file and line order."""
    return scan_and_group(submission)[0]


def scan_and_group(submission: Path) -> tuple[list[Finding], list[frozenset[str]]]:
    """(scan_submission's findings, the assignments whose files run together: the groups the
    findings were judged in, which also decide what each assignment's runs see:
    assignment_groups.folders_apart)."""
    submission = Path(submission)
    environments = virtual_environments(submission)
    findings: list[Finding] = [
        Finding(path.relative_to(submission).as_posix(), 0, "kept_out",
                "a Python environment (pyvenv.cfg or conda-meta/): its own folders (bin/, "
                "lib/, ...) not read, and hidden from the runs, which use the grader's", "")
        for path in environments]
    environments = environments_own_parts(environments)
    files = list(_files(submission, findings, environments))
    files, unread = _within_source_budget(files, submission)
    findings += [Finding(relative, 0, "unreadable", "not read: the submission's Python files "
                         f"add up to more than {MAX_TOTAL_SOURCE_BYTES // 2**20} MiB, which the "
                         "scan reads at most (homework is a few hundred KiB)", "")
                 for relative in unread]
    trees = _python_trees(files, submission)   # each Python file parsed once
    # Each assignment's files judged with those that can run beside them, never with another
    # assignment's (assignment_groups.py): a shared helper's, in each assignment's group.
    linked = linked_assignments(files, submission, trees)
    for group in assignment_groups(files, submission, trees, linked):
        findings += _scan_group(group, submission, trees)
    findings = _as_notes_where_nothing_runs(findings, submission, environments)
    # Named for people only now: the real paths decided which files run and which are masked.
    return sorted({f.shown() for f in findings},
                  key=lambda f: (f.file, f.line, f.category, f.what)), linked


def _scan_group(files: list[Path], submission: Path,
                all_trees: dict[str, ast.AST]) -> list[Finding]:
    """The findings in `files`, judged with what these files define and import only."""
    findings: list[Finding] = []
    # The submission's own modules: setting their variables is not patching a library.
    own = {p.stem for p in files if p.suffix == ".py"} | {
        p.parent.name for p in files if p.name == "__init__.py"}
    trees = trees_of(files, submission, all_trees)
    trusted = _objects_can_be_trusted(files, submission, own, trees)
    # What a pickle of the submission's own objects may name (read once, when a file needs it).
    context = functools.cache(lambda: Context(own_names=_own_names(files, submission)))
    # A method's `self` is its own object only where no file calls it with another one.
    try:
        selves = own_selves(trees, objects_trusted=trusted)
    except (RecursionError, MemoryError):
        selves = Selves()   # none trusted: such a file is held unread anyway (scan_text)
    writes = _parameter_writes(trees)
    for path in files:
        relative = path.relative_to(submission).as_posix()
        if path.suffix == ".py":
            source = _linked_source(path, submission)
            if source is not None:
                findings += scan_source(source, relative, own, trusted, selves,
                                        trees.get(relative), writes)
        elif path.name.lower().endswith(_ZIP_SUFFIXES + _TAR_SUFFIXES) and not \
                path.is_symlink():
            findings += _scan_archive(path, relative, own, context, selves=selves)
        else:
            findings += _scan_data_file(path, relative, submission, own, context)
    return findings


def _as_notes_where_nothing_runs(findings: list[Finding], submission: Path,
                                 environments: list[Path]) -> list[Finding]:
    """Tampering found in a test module nothing imports is a note: the runs never see that
    file (a student's own mock of torch.cuda.device_count had held an honest upload)."""
    unrun = {p.relative_to(submission).as_posix()
             for p in unimported_test_files(submission, environments)}
    return [Finding(f.file, f.line, "kept_out", f"a test module nothing imports, hidden from "
                    f"the runs, which {CATEGORIES[f.category][1]}: {f.what}", f.code)
            if f.file in unrun and f.kind == TAMPERING else f for f in findings]


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
def _files(submission: Path, findings: list[Finding], skipped: list[Path] = ()):
    """The submission's files (symlinks included, never followed), with findings about their
    names; the `skipped` paths (Python environments' own parts, hidden from the runs) left out."""
    count = 0
    expected = template_modules()   # not helper modules of a student's own
    for root, dirs, names in os.walk(submission, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and Path(root, d) not in skipped)
        for name in dirs:
            path = Path(root) / name
            findings += _check_file_name(path, path.relative_to(submission).as_posix(),
                                         expected, package=True)
        for name in sorted(names):
            path = Path(root) / name
            if path in skipped:
                continue
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
    if name in _PYTEST_NAMES:
        return [Finding(relative, 0, "helper_module", f"a module named '{name}' of the "
                        "submission's own tests (the grader's checks never load it)", "")]
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


def _objects_can_be_trusted(files: list[Path], submission: Path, own: set[str],
                            trees: dict[str, ast.AST]) -> bool:
    """Whether no file can rebind another module's names (grader/integrity/own_objects.py):
    every Python file read and none able to, no archive (its modules can be imported), and no
    module named like one of Python's own (a types.py beside the script is what `from types
    import SimpleNamespace` there imports). `trees`: the files' syntax trees (_python_trees:
    a file missing there could not be read)."""
    if own & sys.stdlib_module_names:
        return False
    for path in files:
        if path.name.lower().endswith(_ZIP_SUFFIXES + _TAR_SUFFIXES):
            return False
        if path.suffix != ".py":
            continue
        tree = trees.get(path.relative_to(submission).as_posix())
        try:
            if tree is None or may_rebind_names(tree, own):
                return False
        except (RecursionError, MemoryError):
            return False
    return True


def _within_source_budget(files: list[Path], submission: Path) -> tuple[list[Path], list[str]]:
    """(the files the scan reads, the Python files past MAX_TOTAL_SOURCE_BYTES it leaves
    unread), smallest first, so the budget goes as far as it can."""
    sizes = {}
    for path in files:
        if path.suffix == ".py":
            source = _linked_source(path, submission)
            try:
                sizes[path] = source.stat().st_size if source is not None else 0
            except OSError:
                sizes[path] = 0
    total, unread = 0, set()
    for path in sorted(sizes, key=lambda p: (sizes[p], p)):
        if sizes[path] > MAX_FILE_BYTES:
            continue   # held unread by scan_source, never read
        total += sizes[path]
        if total > MAX_TOTAL_SOURCE_BYTES:
            unread.add(path)
    return ([p for p in files if p not in unread],
            sorted(p.relative_to(submission).as_posix() for p in unread))


def _python_trees(files: list[Path], submission: Path) -> dict[str, ast.AST]:
    """The syntax trees of the submission's Python files and of the Python files in its
    archives (at the top: an archive on sys.path is imported from), by the name the scan
    gives their findings."""
    trees: dict[str, ast.AST] = {}
    for path in files:
        relative = path.relative_to(submission).as_posix()
        sources = []
        if path.suffix == ".py":
            source = _linked_source(path, submission)
            try:
                if source is not None and source.stat().st_size <= MAX_FILE_BYTES:
                    sources.append((relative, source.read_bytes()))
            except OSError:
                pass
        elif path.name.lower().endswith(_ZIP_SUFFIXES + _TAR_SUFFIXES) and \
                not path.is_symlink() and _is_archive(path):
            try:
                members = list(_archive_members(path))
            except (OSError, zipfile.BadZipFile, tarfile.TarError, EOFError, ValueError):
                members = []
            for name, read, _open in members[:MAX_ARCHIVE_MEMBERS]:
                if name.lower().endswith(".py"):
                    data = read()
                    if data is not None:
                        sources.append((f"{relative}/{name}", data))
        for name, data in sources:
            try:
                trees[name] = parse_python(data)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                continue
    return trees


def _parameter_writes(trees: dict[str, ast.AST]) -> dict[tuple[str, str], list]:
    """What the functions of each module of the submission set on their parameters (source.
    parameter_writes), by (the module's name, the function's): a module is imported by its
    file's name (a package's __init__.py by its folder's); files of one name in different
    folders are read as one (either may be the one imported)."""
    writes: dict[tuple[str, str], list] = {}
    for name, tree in trees.items():
        path = Path(name)
        module = path.parent.name if path.name == "__init__.py" else path.stem
        try:
            found = parameter_writes(tree)
        except RecursionError:
            continue   # held unread by scan_text
        for function, entries in found.items():
            writes.setdefault((module, function), []).extend(entries)
    return writes


def scan_source(path: Path, relative: str, own_modules: set[str] = frozenset(),
                trust_own_objects: bool = False, selves: Selves | None = None,
                tree: ast.AST | None = None, writes: dict | None = None) -> list[Finding]:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return [Finding(relative, 0, "unreadable",
                            f"larger than {MAX_FILE_BYTES // 2**20} MiB of Python", "")]
        source = path.read_bytes()
    except OSError as error:
        return [Finding(relative, 0, "unreadable", f"cannot be read ({error.strerror})", "")]
    return scan_text(source, relative, own_modules, trust_own_objects, selves, tree, writes)


def _scan_archive(source, relative: str, own, context=Context, depth: int = 1,
                  sniffed: bool = False, selves: Selves | None = None) -> list[Finding]:
    """The Python, compiled and pickled members of a zip or tar archive (a path, or a zip's
    open file), read like files. A TorchScript archive's (torch.jit.save) code/ files are
    TorchScript, compiled by torch.jit on load: read as Python with TorchScript's
    `__torch__.a.b.C` class names as names (pickles.torchscript_as_python), and its pickles
    may build those classes."""
    findings = []
    if depth > MAX_NESTED_ARCHIVES:
        return [Finding(relative, 0, "unreadable", "archives nested deeper than the scan "
                        "reads", "")]
    if isinstance(source, Path) and not _is_archive(source):
        # A pickle named .tar (checkpoint.pth.tar of torch.save's legacy format): torch.load
        # and pickle.load read it as a pickle.
        return _scan_data_file(source, relative, source.parent, own, context)
    try:
        members = list(_archive_members(source))
    except (OSError, zipfile.BadZipFile, tarfile.TarError, EOFError, ValueError):
        return findings  # not an archive after all, or one larger than the scan reads (noted)
    root = torchscript_root([name for name, _read, _open in members])
    # Only what Python could load counts against the limit: a dataset of 2100 images in a zip
    # had been "could not be checked" and held an honest upload.
    readable = [member for member in members if member[0].lower().endswith(_READ_SUFFIXES)]
    for name, read, open_member in readable[:MAX_ARCHIVE_MEMBERS]:
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
                if root is not None and name.startswith(f"{root}/code/"):
                    data = torchscript_as_python(data)
                findings += scan_text(data, inner, own, selves=selves if depth == 1 and
                                      root is None else None)
        else:
            handle = open_member()
            if handle is not None:
                if sniffed and lower.endswith(".bin") and not _looks_like_data(handle):
                    handle.close()    # an office file's printer settings, not a pickle
                    continue
                with handle:
                    member_context = dataclasses.replace(context(),
                                                         torchscript=root is not None)
                    findings += _scan_data(handle, inner, own, lambda c=member_context: c,
                                           depth)
    if len(readable) > MAX_ARCHIVE_MEMBERS or len(members) > MAX_ARCHIVE_ENTRIES:
        findings.append(Finding(relative, 0, "unreadable", f"more than {MAX_ARCHIVE_MEMBERS} "
                                "Python, compiled or pickled files (or "
                                f"{MAX_ARCHIVE_ENTRIES} files) in one archive: the rest were "
                                "not read", ""))
    return findings


def _is_archive(path: Path) -> bool:
    try:
        return zipfile.is_zipfile(path) or tarfile.is_tarfile(path)
    except (OSError, tarfile.TarError, EOFError, ValueError):
        return False


_READ_SUFFIXES = (".py", *_COMPILED_SUFFIXES, *PICKLE_SUFFIXES)
MAX_TAR_BYTES = 256 * 2**20   # what is decompressed of one tar archive, at most


class _Capped(io.RawIOBase):
    """A file read through to at most `limit` bytes (a compressed tar may be a bomb)."""

    def __init__(self, handle, limit: int):
        self.handle, self.left = handle, limit

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self.left <= 0:
            raise ValueError("archive larger than the scan reads")
        data = self.handle.read(min(len(buffer), self.left))
        buffer[:len(data)] = data
        self.left -= len(data)
        return len(data)


def _archive_members(path):
    """(name, read, open) of an archive's files (a path, or a zip's open file); `read()` gives
    the bytes of a member worth reading (Python, compiled, pickled), or None when too large;
    `open()` the member as a seekable file (a zip's, whatever its size), or None."""
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
                opener = (lambda i=info: archive.open(i))
                yield info.filename, limited(opener, info.file_size), opener
    elif isinstance(path, Path) and tarfile.is_tarfile(path):
        # Streamed once, members read as they come, decompressed bytes capped.
        with open(path, "rb") as raw, tarfile.open(
                fileobj=io.BufferedReader(_Capped(_decompressed(raw), MAX_TAR_BYTES)),
                mode="r|") as archive:
            for count, info in enumerate(archive):
                if count > MAX_ARCHIVE_ENTRIES:
                    return
                if not info.isfile():
                    continue
                data = None
                if info.name.lower().endswith(_READ_SUFFIXES) and info.size <= MAX_MEMBER_BYTES:
                    data = archive.extractfile(info).read()
                yield info.name, (lambda d=data: d), \
                    (lambda d=data: None if d is None else io.BytesIO(d))


def _decompressed(raw):
    """The tar stream inside a .tar, .tar.gz, .tar.bz2 or .tar.xz file."""
    magic = raw.read(6)
    raw.seek(0)
    if magic.startswith(b"\x1f\x8b"):
        return gzip.GzipFile(fileobj=raw)
    if magic.startswith(b"BZh"):
        return bz2.BZ2File(raw)
    if magic.startswith(b"\xfd7zXZ"):
        return lzma.LZMAFile(raw)
    return raw


# -- data files: pickles, .npy, checkpoints ------------------------------------------------
def _scan_data_file(path: Path, relative: str, submission: Path, own, context) -> list[Finding]:
    """A file pickle.load, torch.load or np.load may read: one named like one (a symlink: the
    file of the submission it points to), or any other whose first bytes are a pickle's
    (protocol 2 to 5), a .npy's or a zip's (torch.load reads any name)."""
    named = path.suffix.lower() in PICKLE_SUFFIXES
    target = _linked_source(path, submission) if named else \
        (None if path.is_symlink() else path)
    if target is None:
        return []
    try:
        with open(target, "rb") as handle:
            if not named and not _looks_like_data(handle):
                return []
            return _scan_data(handle, relative, own, context, sniffed=not named)
    except OSError:
        return []


def _looks_like_data(handle, depth: int = 0) -> bool:
    """Whether a file (read from its start, left there) begins like a pickle of protocol 2 to
    5, a .npy or a zip, or is one of those compressed (zlib, gzip, bz2, xz, lzma: joblib's
    compressors, and what `pickle.load(gzip.open(...))` reads)."""
    head = handle.read(8)
    handle.seek(0)
    if head.startswith(NPY_MAGIC) or head[:4] in ZIP_MAGICS or (
            head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05")):
        return True
    inflated = _decompressing(handle) if depth < MAX_NESTED_ARCHIVES else None
    if inflated is None:
        return False
    try:
        return _looks_like_data(inflated, depth + 1)
    except (OSError, EOFError, ValueError, zlib.error, lzma.LZMAError):
        return False
    finally:
        handle.seek(0)


class _Decompressed(io.RawIOBase):
    """A compressed file read as the data it compresses, at most MAX_DECOMPRESSED_BYTES of it
    (past them: TooLarge), seekable (back: by decompressing again from the start). Several
    gzip, bz2 or xz streams one after another are read as one, as Python's gzip, bz2 and lzma
    files read them; a zlib stream alone."""

    CHUNK = 1 << 16

    def __init__(self, raw, kind: str):
        self.raw, self.kind, self.start = raw, kind, raw.tell()
        self._restart()

    def _restart(self) -> None:
        self.raw.seek(self.start)
        self.decompressor = self._new()
        self.position, self.pending, self.finished = 0, b"", False

    def _new(self):
        return {"zlib": zlib.decompressobj, "gzip": lambda: zlib.decompressobj(31),
                "bz2": bz2.BZ2Decompressor, "xz": lzma.LZMADecompressor,
                "lzma": lzma.LZMADecompressor}[self.kind]()

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position

    def _more(self) -> bytes:
        """The next decompressed bytes (b"" at the end)."""
        while not self.finished:
            decompressor = self.decompressor
            if decompressor.eof:
                rest = decompressor.unused_data or self.raw.read(self.CHUNK)
                if not rest or self.kind == "zlib":
                    self.finished = True
                    break
                self.decompressor = decompressor = self._new()
                data = rest
            elif self.kind in ("zlib", "gzip"):
                data = decompressor.unconsumed_tail or self.raw.read(self.CHUNK)
            else:
                data = self.raw.read(self.CHUNK) if decompressor.needs_input else b""
            if not data and (self.kind in ("zlib", "gzip") or decompressor.needs_input):
                self.finished = True   # cut short: the loader stops here too
                break
            try:
                out = decompressor.decompress(data, self.CHUNK)
            except (zlib.error, OSError, EOFError, lzma.LZMAError, ValueError):
                self.finished = True   # garbage after the streams: the loader stops there
                break
            if out:
                return out
        return b""

    def readinto(self, buffer) -> int:
        if not self.pending:
            self.pending = self._more()
        count = min(len(buffer), len(self.pending))
        if self.position + count > MAX_DECOMPRESSED_BYTES:
            raise TooLarge("compressed data larger than the scan reads")
        buffer[:count] = self.pending[:count]
        self.pending = self.pending[count:]
        self.position += count
        return count

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_CUR:
            offset += self.position
        elif whence == io.SEEK_END:
            while self.readinto(bytearray(self.CHUNK)):
                pass
            offset += self.position
        if offset < self.position:
            self._restart()
        skip = bytearray(self.CHUNK)
        while self.position < offset:
            if not self.readinto(memoryview(skip)[:min(self.CHUNK, offset - self.position)]):
                break
        return self.position


def _compression(head: bytes) -> str | None:
    """The compressor whose stream begins with these bytes (joblib's, and Python's)."""
    if head.startswith(b"\x1f\x8b"):
        return "gzip"
    if head.startswith(b"BZh"):
        return "bz2"
    if head.startswith(b"\xfd7zXZ\x00"):
        return "xz"
    if head.startswith(b"\x5d\x00\x00"):
        return "lzma"
    if len(head) >= 2 and head[0] & 0x0F == 8 and head[0] >> 4 <= 7 and \
            (head[0] * 256 + head[1]) % 31 == 0:
        return "zlib"
    return None


def _decompressing(handle):
    """The data a compressed file (read from its start) holds, as a seekable file; None where
    it is not compressed, or where its first bytes do not decompress."""
    head = handle.read(8)
    handle.seek(0)
    kind = _compression(head)
    if kind is None:
        return None
    inflated = io.BufferedReader(_Decompressed(handle, kind), buffer_size=1 << 16)
    try:
        inflated.peek(1)
        if inflated.raw.finished and not inflated.peek(1):
            raise ValueError("nothing decompressed")
    except (OSError, EOFError, ValueError, zlib.error, lzma.LZMAError):
        handle.seek(0)
        return None
    return inflated


def _scan_data(handle, relative: str, own, context, depth: int = 0,
               sniffed: bool = False) -> list[Finding]:
    """The pickles a data file (an open, seekable file) holds: a .npy's after its header where
    its dtype holds Python objects (none else: np.load reads raw numbers), a zip's members
    (torch.save, np.savez, a zip of those), or the pickles the file is."""
    head = handle.read(8)
    handle.seek(0)
    if head.startswith(NPY_MAGIC):
        offset = npy_pickle_offset(handle)
        if offset is None:
            return []
        handle.seek(offset)
        return _pickle_findings(handle, relative, context(), joblib=False)
    if head[:4] in ZIP_MAGICS:
        return _scan_archive(handle, relative, own, context, depth + 1, sniffed)
    inflated = _decompressing(handle) if _compression(head) else None
    findings = [] if inflated is None else \
        _scan_compressed(inflated, relative, own, context, depth)
    handle.seek(0)   # (and as the pickle it may be as well: compressed data is none)
    findings += _pickle_findings(handle, relative, context())
    handle.seek(0)
    try:
        appended = zipfile.is_zipfile(handle)   # a zip after the pickle: zip readers find it
    except (OSError, ValueError):
        appended = False
    if appended:
        handle.seek(0)
        findings += _scan_archive(handle, relative, own, context, depth + 1)
    return findings


def _scan_compressed(inflated, relative: str, own, context, depth: int) -> list[Finding]:
    """A compressed file's data, read as any file is: a pickle (joblib.dump(compress=...),
    `pickle.dump` to gzip.open), a .npy, a zip (copied out first: a zip is read from its end),
    and no deeper than archives are."""
    if depth >= MAX_NESTED_ARCHIVES:
        return [Finding(relative, 0, "unreadable", "compressed data nested deeper than the "
                        "scan reads", "")]
    try:
        if inflated.peek(4)[:4] in ZIP_MAGICS:
            with tempfile.SpooledTemporaryFile(max_size=MAX_MEMBER_BYTES) as copy:
                shutil.copyfileobj(inflated, copy)
                copy.seek(0)
                return _scan_data(copy, relative, own, context, depth + 1)
        return _scan_data(inflated, relative, own, context, depth + 1)
    except TooLarge:
        return [Finding(relative, 0, "unreadable", "compressed data larger than the scan "
                        f"reads ({MAX_DECOMPRESSED_BYTES // 2**20} MiB): the rest was not read",
                        "")]
    except (OSError, EOFError, ValueError, zlib.error, lzma.LZMAError):
        return []   # broken where the loader breaks too


def _pickle_findings(handle, relative: str, context: Context,
                     joblib: bool = True) -> list[Finding]:
    """The pickles a file is, read as pickle.load and torch.load read them, and as joblib.load
    does (`joblib`: each array's bytes skipped, pickles.read_pickle): where the two differ,
    both readings' names."""
    start = handle.tell()
    reading = read_stream(handle, joblib=joblib)
    if reading is not None and reading.skipped:
        handle.seek(start)
        plain = read_stream(handle)
        if plain is not None:
            reading.names += plain.names
            reading.truncated |= plain.truncated
    if reading is None:
        return []
    findings = []
    bad = dangerous_globals(reading.names, context)
    if bad:
        findings.append(Finding(relative, 0, "dynamic_code", "a pickle that calls "
                                + ", ".join(sorted(set(bad))[:5]) + " when it is loaded", ""))
    if reading.truncated:
        findings.append(Finding(relative, 0, "unreadable", "a pickle longer than the scan "
                                "reads: the rest was not read", ""))
    return findings


def _own_names(files: list[Path], submission: Path) -> dict[str, frozenset[str]]:
    """The classes the submission's modules define (at their top level), by
    every dotted name a module may be imported as (`model`, `hw3.model`), and under
    `__main__` those of all its files: what a pickle of its own objects names (a whole model
    saved with torch.save). A name Python or an installed package has is none of these (the
    loader may import that one instead)."""
    by_module: dict[str, set[str]] = {"__main__": set()}
    for path in files:
        if path.suffix == ".ipynb":   # a notebook's classes are its kernel's __main__'s
            by_module["__main__"] |= _notebook_names(path, submission)
            continue
        source = _linked_source(path, submission) if path.suffix == ".py" else None
        try:
            if source is None or source.stat().st_size > MAX_FILE_BYTES:
                continue
            tree = parse_python(source.read_bytes())
        except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        defined = _defined_names(tree.body)
        by_module["__main__"] |= defined
        parts = path.relative_to(submission).with_suffix("").parts
        if parts and parts[-1] == "__init__":
            parts = parts[:-1]
        if not all(part.isidentifier() for part in parts):
            continue
        for first in range(len(parts)):
            if _may_be_own_module(parts[first], submission):
                by_module.setdefault(".".join(parts[first:]), set()).update(defined)
    # Where the grader's own launcher is the process's __main__ (HW3's probe, the fork server,
    # torchrun's launcher), `__main__.X` is the launcher's X, whatever the student's X is.
    by_module["__main__"] -= _grader_main_names()
    return {module: frozenset(names) for module, names in by_module.items()}


@functools.cache
def _grader_main_names() -> frozenset[str]:
    """Every name the grader's modules that run as a process's __main__ bind at their top."""
    names: set[str] = set()
    for module in GRADER_MAIN_MODULES:
        path = Path(__file__).resolve().parents[1] / (module.replace(".", "/") + ".py")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names |= {(a.asname or a.name).split(".")[0] for a in node.names}
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return frozenset(names)


# grader/<these>.py run as `python -m ...` in a student's process: their names are __main__'s.
GRADER_MAIN_MODULES = ("harness.hw3_launch", "harness.hw3_recompute", "vgpu.fork_server",
                       "vgpu.run_on_node", "vgpu.torchrun_launcher", "vgpu.ranks")


def _notebook_names(path: Path, submission: Path) -> set[str]:
    """The classes a notebook's code cells define (IPython's `%` and `!` lines
    left out)."""
    source = _linked_source(path, submission)
    names: set[str] = set()
    try:
        if source is None or source.stat().st_size > 4 * MAX_FILE_BYTES:
            return names
        cells = json.loads(source.read_bytes()).get("cells", [])
    except (OSError, ValueError, AttributeError, RecursionError):
        return names
    for cell in cells if isinstance(cells, list) else []:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        text = cell.get("source", "")
        text = "".join(text) if isinstance(text, list) else str(text)
        lines = [line for line in text.splitlines() if not line.lstrip().startswith(("%", "!"))]
        try:
            names |= _defined_names(ast.parse("\n".join(lines)).body)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
    return names


def _defined_names(body: list[ast.stmt], depth: int = 0) -> set[str]:
    """The classes a module defines: what a pickle of a whole model names. Never its functions:
    a pickle that calls one hands it what the pickle chooses (a red team's `tweak(m)`, whose
    `m.forward = ...` the scan trusts on the script's own objects, called with torch.nn.Linear),
    and a model holding a function of the student's own is rare enough to be a person's look."""
    names = set()
    for node in body:
        if isinstance(node, ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign) and _makes_a_tuple_class(node.value):
            # Timing = namedtuple("Timing", "name seconds"): a class, whose call builds a tuple
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif depth < 8 and isinstance(node, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
            for block in ("body", "orelse", "finalbody"):
                names |= _defined_names(getattr(node, block, []), depth + 1)
            for handler in getattr(node, "handlers", []):
                names |= _defined_names(handler.body, depth + 1)
    return names


def _makes_a_tuple_class(value: ast.AST) -> bool:
    """namedtuple(...) or NamedTuple(...), however imported (collections., typing.)."""
    if not isinstance(value, ast.Call):
        return False
    function = value.func
    name = function.attr if isinstance(function, ast.Attribute) else \
        function.id if isinstance(function, ast.Name) else ""
    return name in ("namedtuple", "NamedTuple")


def _may_be_own_module(name: str, submission: Path) -> bool:
    """Whether `import name` can only be the submission's module: no module of Python's, none
    installed (found outside the submission)."""
    if name in sys.stdlib_module_names or name in sys.builtin_module_names or \
            name in ("__main__", "__mp_main__", "__torch__", "grader", "torch", "numpy"):
        return False
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError, AttributeError):
        return False
    if spec is None:
        return True
    places = [spec.origin] if spec.origin else list(spec.submodule_search_locations or [])
    try:
        inside = submission.resolve()
        return bool(places) and all(Path(p).resolve().is_relative_to(inside) for p in places)
    except (OSError, ValueError, RuntimeError):
        return False
