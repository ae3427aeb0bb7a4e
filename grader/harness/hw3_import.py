"""HW3 probe: the student's module imported as a run of the script on the configuration's node
would see it.

The probe needs only the module's class, but importing runs everything at the module's top
level: a script that calls `main()` there (no `if __name__ == "__main__":` guard, or a Jupyter
notebook exported with its training cells) trains at every import, at the file's DIM=1024 and
all its steps. Imported once per node size, that had spent the probe's whole time budget
(adv37 F1: 2 to 8.5 of 15 points, reported as "an endless loop"). So the import is made with
the constants rewritten as the grader's own runs of the script set them (STEPS=3, more past a
warm-up: short_run; DIM and DEPTH at the configuration's: grader/vgpu/run_on_node.py), where
the file assigns them.

A layout built from module constants derived from DEPTH at import (`LAYERS_PER_GPU = DEPTH //
NUM_GPUS` at the top) follows DEPTH only when the import sees the configuration's DEPTH, as the
student's own run of the script with that DEPTH does (adv37 F4): such a module is imported
again per (node size, DIM, DEPTH); any other once per node size (a module-level
`torch.cuda.device_count()` sees its node), as before.
"""
from __future__ import annotations

import ast
import importlib.util
import os
import sys
import time

from grader.common.constant_values import whole_number_assigned
from grader.common.loop_bound import constant_fewest
from grader.common.text import python_source
from grader.vgpu.run_on_node import rewrite_where_assigned
from grader.vgpu.script_folder import standard_names_in

# The steps the grader's runs of the script take to keep them short (grader/checks/test_hw3.py:
# task5_script_specs), where the file assigns STEPS: short_run.
SHORT_STEPS = 3
# The constants a configuration gives; construct() also sets them on the module after import.
CONFIGURED = ("DIM", "DEPTH")
# An import with work at its top level that took longer than this trains whatever was rewritten
# (a loop of its own steps): it is not run again for the next configuration, which reuses it.
SLOW_IMPORT_S = 5.0


def short_run(source: str) -> dict:
    """{"STEPS": the steps of the grader's short runs of the script}: 3, or where the file holds
    more (a whole number: constant_values.py) and a loop of STEPS does something only past a
    warm-up of its counter (`if step >= 5:` timing), that warm-up plus 3, never more than the
    file's (loop_bound.constant_fewest). At 3 such a loop timed no step, and its
    `statistics.median(times)` stopped the run the student's own 20 steps finish ("did not run
    to its end", flagged for a penalty). 3 where the comparison cannot be read, as before."""
    written = whole_number_assigned(source, "STEPS")
    if written is None or written <= SHORT_STEPS:
        return {"STEPS": SHORT_STEPS}
    return {"STEPS": constant_fewest(source, "STEPS", written, SHORT_STEPS,
                                     unread=SHORT_STEPS)}


class TrainsWhenImported(Exception):
    """The import ran past the configuration's time limit: what the student should change."""


def import_student_module(model_file: str, code=None):
    """Import the student's script as running it does (or `code`, its source compiled with
    other constants): its folder first on sys.path, so the helper modules beside it are
    found, even one named like a standard module that the grader imported already
    (hw3/profile.py: set aside while the script imports). Afterwards nothing of the
    student's may stand in for what the grader or PyTorch imports later: the folder moves to
    the end of sys.path, and the standard modules come back into sys.modules (the student's
    code keeps its references). Everything the probe itself needs is imported before."""
    folder = os.path.dirname(os.path.abspath(model_file))
    shadowed = standard_names_in(folder)
    set_aside = {name: sys.modules.pop(name) for name in list(sys.modules)
                 if name.split(".")[0] in shadowed}
    sys.path.insert(0, folder)
    try:
        spec = importlib.util.spec_from_file_location("model_parallel", model_file)
        module = importlib.util.module_from_spec(spec)
        sys.modules["model_parallel"] = module
        if code is None:
            spec.loader.exec_module(module)
        else:
            exec(code, module.__dict__)
    finally:
        sys.path[:] = [entry for entry in sys.path if entry != folder] + [folder]
        for name in [n for n in sys.modules if n.split(".")[0] in shadowed]:
            del sys.modules[name]
        sys.modules.update(set_aside)
    return module


# -- what the module's top level does with DIM and DEPTH -----------------------------------------
def _stored(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _loaded(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _function_reads(function) -> set[str]:
    """The module names a function's body reads: what it loads that is neither a parameter
    nor assigned in it (unless declared global)."""
    arguments = function.args
    own = {a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                           arguments.vararg, arguments.kwarg) if a is not None}
    declared = {name for n in ast.walk(function) if isinstance(n, ast.Global) for name in n.names}
    body = ast.Module(body=list(function.body), type_ignores=[])
    return _loaded(body) - ((own | _stored(body)) - declared)


def _definition_reads(node) -> set[str]:
    """What a def or class reads from the module: its decorators and defaults at import, its
    body when it is called (a class body at import, its methods when called)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        outside = [*node.decorator_list, *node.args.defaults,
                   *[d for d in node.args.kw_defaults if d is not None]]
        return set().union(*map(_loaded, outside)) | _function_reads(node)
    reads = set().union(*map(_loaded, [*node.decorator_list, *node.bases]))
    for statement in node.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            reads |= _definition_reads(statement)
        else:
            reads |= _loaded(statement)
    return reads


def imports_configuration(source: str) -> bool:
    """Whether the module's class can depend on DIM or DEPTH through what its top level works
    out from them at import (`LAYERS_PER_GPU = DEPTH // NUM_GPUS`, read in `__init__`; a class
    attribute `PER_GPU = DEPTH // 2`). Reading DIM and DEPTH themselves is not: the probe sets
    them on the module before it builds the model."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    definitions = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    derived, from_configuration = set(), set(CONFIGURED)
    for statement in tree.body:
        if not isinstance(statement, definitions) and _loaded(statement) & from_configuration:
            derived |= _stored(statement) - set(CONFIGURED)
            from_configuration |= derived
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and any(
                _loaded(s) & set(CONFIGURED) for s in node.body if not isinstance(s, definitions)):
            return True    # a class attribute worked out from DIM or DEPTH
        if isinstance(node, definitions) and _definition_reads(node) & derived:
            return True
    return False


def top_level_work(source: str) -> list[str]:
    """The top-level statements that run the script's work at import (`113: main()`, a training
    loop), for the feedback: calls and loops outside any def, class or `if __name__` guard."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    lines = source.splitlines()
    found = []
    for statement in tree.body:
        working = isinstance(statement, (ast.For, ast.While, ast.With)) or (
            isinstance(statement, (ast.Expr, ast.Assign)) and isinstance(statement.value, ast.Call)
            and not isinstance(statement.value.func, ast.Attribute))
        if working and 0 < statement.lineno <= len(lines):
            found.append(f"{statement.lineno}: {lines[statement.lineno - 1].strip()}")
    return found


# -- the imports, one per configuration where they differ --------------------------------------
class StudentImports:
    """The student's module for a configuration: imported anew when what the import would see
    changes (the node's size; DIM and DEPTH where imports_configuration), else the last one."""

    def __init__(self, model_file: str, stop: type):
        self.model_file = model_file
        self.stop = stop   # the probe's time limit, raised into the import by its alarm
        try:
            with open(model_file, "rb") as handle:
                self.source = python_source(handle.read())
        except OSError:
            self.source = None   # the import raises the student's error as it always did
        self.per_configuration = self.source is not None and imports_configuration(self.source)
        self.module, self.key = None, None
        self.slow = False
        self.stopped: BaseException | None = None

    def get(self, node_size, dim: int, depth: int):
        if self.stopped is not None:
            raise self.stopped   # it would run as long again: said once more, not re-run
        key = (node_size, dim, depth) if self.per_configuration else (node_size,)
        if self.module is not None and (key == self.key or self.slow):
            return self.module
        self.module, self.key = None, None
        started = time.monotonic()
        try:
            self.module = self._import(dim, depth)
        except BaseException as error:
            if isinstance(error, KeyboardInterrupt):
                raise
            if isinstance(error, self.stop):
                self.stopped = self._explained(error, time.monotonic() - started)
                if self.stopped is not error:
                    raise self.stopped from error
            raise
        # A first import of a library of its own can be slow too: that alone is no reason.
        self.slow = (time.monotonic() - started > SLOW_IMPORT_S
                     and bool(top_level_work(self.source or "")))
        self.key = key
        return self.module

    def _import(self, dim: int, depth: int):
        code = self._rewritten(dim, depth)
        if code is None:
            return import_student_module(self.model_file)
        try:
            return import_student_module(self.model_file, code)
        except self.stop:
            raise
        except Exception:
            # What the rewrite changed may be what failed (a check of its own on STEPS): the
            # module as handed in, as before, whose error is the student's own.
            return import_student_module(self.model_file)

    def _rewritten(self, dim: int, depth: int):
        if self.source is None:
            return None
        # DIM small makes a top-level main() cheap; DEPTH only where the class follows it
        # through the import, as few other names as may be.
        values = dict(short_run(self.source), DIM=dim,
                      **({"DEPTH": depth} if self.per_configuration else {}))
        try:
            tree, _missing = rewrite_where_assigned(self.source, self.model_file, values)
            return compile(tree, self.model_file, "exec", dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None

    def _explained(self, error: BaseException, seconds: float) -> BaseException:
        """The time limit's error, said as what the student should change where the module
        works at its top level."""
        work = top_level_work(self.source or "")
        if not work:
            return error
        name = os.path.basename(os.path.dirname(self.model_file)) + "/" + os.path.basename(
            self.model_file)
        return TrainsWhenImported(
            f"importing {name} ran for {seconds:.0f} s and was stopped ({error}): it runs code at "
            f"its top level ({'; '.join(work[:3])}), so the grader's import of your module, "
            "which needs only your model's class, runs it too: put that code in a "
            "function called under `if __name__ == \"__main__\":`")
