"""Which frames run the grader's own code, judged by what the frame runs in, not by its name.

A code object's file name is whatever its compiler was told: a red team had a template engine
compile its code under a file name in the grader's folder, and that code passed for the
grader's own with the sealers, which then sealed the reference's records for an untouched
template. A frame is the grader's here only where its globals are the namespace of one of the
grader's modules, as imported (a module object in `sys.modules` whose file is in the grader's
folder), and its code names that module's file. Code of the submission, however it was
compiled, runs in a namespace of its own; running it in a grader module's namespace needs the
module's functions' `__code__` or a code object made under a grader file name, what the
runtime's audit hook reports (grader/vgpu/guard.py).
"""
from __future__ import annotations

import dis
import functools
import os
import sys
import threading
from types import CodeType, MethodType, ModuleType
from typing import Callable


_CALLS = frozenset({"CALL", "CALL_FUNCTION_EX"})
_NO_CALLEE = frozenset({"KW_NAMES", "PRECALL", "PUSH_NULL", "CACHE"})
_WRITER_ATTRIBUTES = frozenset({"emit", "_emit"})        # trace.emit, the probe's self._emit
_WRITER_NAMES = frozenset({"emit", "_emit", "write"})    # ... or a writer held in a name
# Every function here takes what it uses as keyword-only defaults or a bound tuple, never from
# the module's globals at call time: code of the submission that reached this module could
# rebind them (and rebind them back before the run's closing check looks).


def writes_records(code, *, _attributes=_WRITER_ATTRIBUTES, _names=_WRITER_NAMES) -> bool:
    """Whether a code object names a writer at all (`trace.emit`, `self._emit`, an `emit` or
    `write` it holds): what is left to ask where no source positions say which call is which."""
    return not _attributes.isdisjoint(code.co_names) or not _names.isdisjoint(
        code.co_varnames + code.co_freevars)


def _callee(call, loads):
    """The instruction that loads what `call` calls: of those before it whose source span
    starts where the call's does and ends before it, the one spanning most (`trace.emit` of
    `trace.emit(...)`, not `trace`)."""
    where = call.positions
    if where is None or where.col_offset is None:
        return None
    best, best_key = None, None
    for load in loads:
        at = load.positions
        if load.offset >= call.offset or at is None or at.col_offset is None or \
                (at.lineno, at.col_offset) != (where.lineno, where.col_offset):
            continue
        key = (at.end_lineno, at.end_col_offset, load.offset)
        if key[:2] >= (where.end_lineno, where.end_col_offset):
            continue
        if best_key is None or key > best_key:
            best, best_key = load, key
    return best


def _writer_call_sites(code, instructions, *, _callee=_callee, _calls=_CALLS,
                       _no_callee=_NO_CALLEE, _names=_WRITER_NAMES
                       ) -> list[tuple[int, int]] | None:
    """(first, past last) offsets of each call in `code` whose callee is a writer named as
    such (CACHE entries included: a calling frame's f_lasti is the call's last one); None
    where the code has no source positions."""
    listed = list(instructions(code, show_caches=True))
    loads = [i for i in listed if i.opname not in _no_callee]
    if not loads or all(i.positions is None or i.positions.col_offset is None for i in loads):
        return None
    sites = []
    for at, instruction in enumerate(listed):
        if instruction.opname not in _calls:
            continue
        end = next((later.offset for later in listed[at + 1:] if later.opname != "CACHE"),
                   listed[-1].offset + 2)
        callee = _callee(instruction, loads)
        if callee is not None and callee.opname.startswith("LOAD_") and \
                callee.argval in _names:
            sites.append((instruction.offset, end))
    return sites


def _writer_calls_of(ident: int, *, _asked=threading.local(), _find=_writer_call_sites,
                     _instructions=dis.get_instructions):
    """(code, its writer call sites) for the code object `ident` is the id of, which
    writing_call puts in `_asked` first. Cached by id (below), where nothing but this function
    makes an entry: one for a code object other than the one asked about raises (and an
    exception is not cached). A keyword passed by a caller is part of the cache's key, so
    what it finds is never the answer writing_call reads."""
    code = getattr(_asked, "code", None)
    if id(code) != ident:
        raise LookupError("writer calls are found only for the code object asked about")
    return code, _find(code, _instructions)


# The cache lives inside functools' C wrapper: it cannot be read or written from Python (no
# dict of it to reach through a default, a closure cell or inspect.signature), only filled by
# calling the function. It keeps each code object alive, so an id names one code object.
_writer_calls_by_id = functools.lru_cache(maxsize=None)(_writer_calls_of)


def _writing_call(known, frame) -> bool:
    sites_of, asked, names_a_writer, find, instructions = known
    code = frame.f_code
    asked.code = code
    entry = sites_of(id(code))
    sites = entry[1] if entry[0] is code else find(code, instructions)
    if sites is None:
        return names_a_writer(code)
    lasti = frame.f_lasti
    for start, end in sites:
        if start <= lasti < end:
            return True
    return False


# writing_call(frame): whether `frame` is, at this moment, calling the writer by its name: the
# call it is in (its current instruction) is written `trace.emit(...)`, `self._emit(...)`,
# `write(...)` in its source. A red team had the grader's own code call a writer it did not
# name: a pass-through closure handed the trace's emit, and a patched function whose stored
# original (an instance attribute, a closure cell: set without an audit event) was swapped for
# it, writing the records the submission chose. Where the interpreter keeps no source positions
# (python -X no_debug_ranges) the code is asked only whether it names a writer at all.
# A method bound to a tuple: what it uses can be neither passed by its caller nor rebound. It
# had kept its cache in a keyword-only default and taken its finder as a keyword: a submission
# that reached it (the trace module's globals, through any of the grader's functions' own)
# passed a finder that found a writer call everywhere in the grader's pass-through closure, or
# wrote that into the cache it read through inspect.signature (no audit event of its own),
# and the pass-through then wrote a transfer that never happened, accepted as the grader's.
writing_call = MethodType(_writing_call, (_writer_calls_by_id, _writer_calls_of.__kwdefaults__[
    "_asked"], writes_records, _writer_call_sites, dis.get_instructions))


class _AtEntry:
    """A frame's two fields writing_call reads, for a code object not yet running."""

    def __init__(self, code):
        self.f_code, self.f_lasti = code, -1


def learn_writer_calls(modules, *, _judge=writing_call, _names_a_writer=writes_records,
                       _code=CodeType) -> int:
    """Where runs are forked from one process that imported `modules` (grader/vgpu/
    fork_server.py): the writer calls of their code that names a writer, found now, once, for
    every process forked after it. writing_call keeps what it found per code object; each
    rank of every run had disassembled the same dozen functions again, about 13 ms a rank.
    The answers are the ones writing_call would give later (code objects do not change).
    Returns how many code objects were read."""
    pending, seen = [], set()
    for module in modules:
        for value in list(vars(module).values()):
            if getattr(value, "__module__", None) != module.__name__:
                continue
            members = list(vars(value).values()) if isinstance(value, type) else [value]
            for member in members:
                member = getattr(member, "__func__", member)           # static/class methods
                parts = [getattr(member, name, None) for name in ("fget", "fset", "fdel")] \
                    if isinstance(member, property) else [member]
                pending += [getattr(part, "__code__", None) for part in parts]
    learnt = 0
    while pending:
        code = pending.pop()
        if type(code) is not _code or id(code) in seen:
            continue
        seen.add(id(code))
        pending += [const for const in code.co_consts if type(const) is _code]
        if _names_a_writer(code):
            _judge(_AtEntry(code))
            learnt += 1
    return learnt


def frame_judge(folder: str, modules: tuple[str, ...]
                ) -> tuple[Callable[[object], bool], Callable[[ModuleType], None],
                           Callable[[object], None]]:
    """(genuine, admit_unlisted, close).

    genuine(frame): whether `frame` runs code of one of `modules` (names of modules of
    `folder`, ending in os.sep), in that module's own namespace, as imported. Those not imported
    yet are looked up in `sys.modules` under their own names when first needed, until close():
    a red team's helper module of its own had set its `__file__` to a grader file's, run that
    file's text in its own namespace and been taken for the grader.

    admit_unlisted(module): one module of the folder kept out of `sys.modules` on purpose (the
    HW3 probe, which student code must not find by name), admitted by its launcher before any
    student code runs; once only, and only before close().

    close(frame): the runner's own frame (its module may be `__main__` only until the student's
    script takes that name) is trusted, and nothing more is learnt: called once the runtime is
    in place, just before student code starts. The state is keyword-only defaults, never closure
    cells: a function's `__kwdefaults__` raises the audit event the runtime's hook reports, its
    `__closure__` (or a cell's contents rewritten) none."""
    namespaces: dict[int, tuple[dict, str]] = {}    # id(namespace) -> (namespace, file)
    closed: list[bool] = []

    def learn(*, _namespaces=namespaces, _modules=sys.modules, _names=modules, _folder=folder,
              _abspath=os.path.abspath, _closed=closed) -> None:
        if _closed:
            return
        for name in _names:
            module = _modules.get(name)
            if type(module) is not ModuleType:
                continue
            file = module.__dict__.get("__file__")
            if isinstance(file, str) and _abspath(file).startswith(_folder):
                namespace = module.__dict__
                _namespaces[id(namespace)] = (namespace, _abspath(file))

    def genuine(frame, *, _namespaces=namespaces, _learn=learn, _folder=folder) -> bool:
        filename = frame.f_code.co_filename
        if not filename.startswith(_folder):
            return False
        namespace = frame.f_globals
        entry = _namespaces.get(id(namespace))
        if entry is None:
            _learn()
            entry = _namespaces.get(id(namespace))
        return entry is not None and entry[0] is namespace and entry[1] == filename

    def admit(namespace: dict, file: str, *, _namespaces=namespaces, _folder=folder,
              _abspath=os.path.abspath, _closed=closed) -> None:
        # The one check that holds: admit itself is reached only through its callers'
        # `__kwdefaults__` (audited), while their own one-shot flags, keyword-only defaults,
        # can be overridden by whoever calls them (a red team's route to the sealer).
        if _closed:
            raise PermissionError("the grader's own code was already settled")
        file = _abspath(file)
        if not file.startswith(_folder):
            raise ValueError(f"{file}: not a module of {_folder}")
        _namespaces[id(namespace)] = (namespace, file)

    def admit_unlisted(module: ModuleType, *, _admit=admit, _admitted=[], _closed=closed) -> None:
        if _admitted or _closed:
            raise PermissionError("a module kept out of sys.modules is admitted once, before "
                                  "student code runs")
        _admitted.append(True)
        if type(module) is not ModuleType:
            raise ValueError("not a module")
        _admit(module.__dict__, module.__file__)

    def close(frame, *, _admit=admit, _learn=learn, _closed=closed) -> None:
        if _closed:
            raise PermissionError("the grader's own code was already settled")
        _learn()
        _admit(frame.f_globals, frame.f_code.co_filename)
        _closed.append(True)

    learn()
    return genuine, admit_unlisted, close
