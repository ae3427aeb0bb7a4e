"""Run one script as `__main__` on the node, optionally with its top-level constants changed.

    python run_on_node.py [--set NAME=VALUE ...] [--edit OLD NEW ...] SCRIPT [ARGS ...]

The course's scripts keep their constants (`BATCH_SIZE`, `MICRO_BATCHES`, `DEPTH`, ...) as
literal assignments at the top; `--set` rewrites those assignments in the parsed source, so
the script runs exactly as if the student had typed the other value. `--edit` makes a change
a handout asks for by hand (Practical 10, Part 5: replace `cuda:{local_rank + 2}` by
`cuda:{local_rank}`): the text OLD must occur exactly once in the script, and the script runs
as if the student had typed NEW there; the file itself is never touched.
"""
from __future__ import annotations

import ast
import os
import sys
import traceback
import types


class ConstantNotFound(Exception):
    pass


def parse_assignment(text: str) -> tuple[str, object]:
    name, sep, value = text.partition("=")
    if not sep or not name.isidentifier():
        raise ValueError(f"--set expects NAME=VALUE, got {text!r}")
    try:
        return name, ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return name, value  # a bare word: a string


def rewrite_constants(source: str, filename: str, values: dict[str, object]) -> ast.Module:
    tree, missing = rewrite_where_assigned(source, filename, values)
    if missing:
        names = ", ".join(sorted(missing))
        raise ConstantNotFound(
            f"{os.path.basename(filename)}: the constant(s) {names} must be assigned at the top "
            f"level of the script (e.g. `{sorted(missing)[0]} = ...`), as in the course template; "
            "the grader sets them to other values to test your code")
    return tree


def rewrite_where_assigned(source: str, filename: str,
                           values: dict[str, object]) -> tuple[ast.Module, set]:
    """The parsed script with its top-level assignments of the names in `values` given those
    values, in whichever form the student wrote them (`A = 4`, `A: int = 4`, `A, B = 4, 8`,
    `A = B = 4`, `A, B = f()`), and the names of `values` it does not assign at its top level
    (left as they are)."""
    # Imported here: run as a file, this module finds the package only once main() set the path.
    from grader.common.constant_targets import assignment_targets, paired_values, replace_values
    tree = ast.parse(source, filename)
    missing, body = set(values), []
    for statement in tree.body:
        body.append(statement)
        if (isinstance(statement, ast.AnnAssign) and statement.value is None
                and isinstance(statement.target, ast.Name) and statement.target.id in values):
            statement.value = ast.copy_location(ast.Constant(values[statement.target.id]), statement)
            missing.discard(statement.target.id)
            continue
        targets = assignment_targets(statement)
        bound = {name for target in targets for name, _ in paired_values(target, None)} & set(values)
        if not bound:
            continue
        done = set()
        if len(targets) == 1:   # the value written in place, as if the student had typed it
            statement.value, done = replace_values(targets[0], statement.value, values)
        for name in sorted(bound - done):
            # Chained (`A = B = 4`: B keeps 4) or unpacked from a call: set right after it.
            body.append(ast.copy_location(ast.Assign(targets=[ast.Name(name, ast.Store())],
                                                     value=ast.Constant(values[name])), statement))
        missing -= bound
    tree.body = body
    return ast.fix_missing_locations(tree), missing


def run_script(path: str, args: list[str], values: dict[str, object],
               edits: list[tuple[str, str]] = ()) -> None:
    from grader.vgpu.script_edits import apply_edits
    from grader.vgpu.script_folder import forget_modules_shadowed_by
    from grader.common.text import python_source
    with open(path, "rb") as handle:
        source = apply_edits(python_source(handle.read()), path, list(edits))
    code = compile(rewrite_constants(source, path, values), path, "exec")
    module = types.ModuleType("__main__")
    module.__file__ = path
    module.__builtins__ = __builtins__
    sys.modules["__main__"] = module
    sys.argv = [path, *args]
    sys.path[0] = os.path.dirname(os.path.abspath(path))
    forget_modules_shadowed_by(sys.path[0])
    exec(code, module.__dict__)


def main(argv: list[str]) -> int:
    values, edits = {}, []
    while argv and argv[0] in ("--set", "--edit"):
        if argv[0] == "--set" and len(argv) >= 2:
            name, value = parse_assignment(argv[1])
            values[name] = value
            argv = argv[2:]
        elif argv[0] == "--edit" and len(argv) >= 3:
            edits.append((argv[1], argv[2]))
            argv = argv[3:]
        else:
            argv = []
    if not argv:
        print("usage: run_on_node.py [--set NAME=VALUE ...] [--edit OLD NEW ...] SCRIPT "
              "[ARGS ...]", file=sys.stderr)
        return 2
    script, args = argv[0], argv[1:]

    from grader.vgpu import activate_from_environment, step_report
    from grader.vgpu.trace import trust_no_more_code
    steps = step_report.watch(activate_from_environment())
    trust_no_more_code()      # the script is `__main__` next; this runner writes its end
    rank = os.environ.get("RANK", "0") if int(os.environ.get("WORLD_SIZE", "1") or 1) > 1 else ""
    try:
        return _run(script, args, values, edits)
    finally:
        step_report.say(steps, rank)


def _run(script: str, args: list[str], values: dict, edits: list) -> int:
    from grader.vgpu.script_edits import EditNotFound
    from grader.vgpu.trace import get_trace
    try:
        run_script(script, args, values, edits)
    except SystemExit:
        raise
    except ConstantNotFound as error:
        print(f"pdl-autograder: {error}", file=sys.stderr)
        get_trace().emit("error", kind="constant_not_found", message=str(error))
        return 3
    except EditNotFound as error:
        print(f"pdl-autograder: {error}", file=sys.stderr)
        get_trace().emit("error", kind="edit_not_found", message=str(error))
        return 3
    except BaseException as error:
        # The traceback starts in the student's script: this runner's frames are no lead.
        tb = error.__traceback__
        while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) == os.path.abspath(__file__):
            tb = tb.tb_next
        traceback.print_exception(type(error), error, tb or error.__traceback__)
        frames = [f for f in traceback.extract_tb(error.__traceback__)
                  if os.path.abspath(f.filename) == os.path.abspath(script)]
        where = f"{os.path.basename(script)}:{frames[-1].lineno}" if frames else None
        get_trace().emit("exception", type=type(error).__name__, message=str(error)[:2000],
                         site=where)
        _placements_at_error(error.__traceback__, script)
        return 1
    return 0


def _placements_at_error(traceback_, script: str) -> None:
    """The script's modules where it stopped (grader/vgpu/observe.py): what its frames, and
    those of its own modules beside it, held. Never the run's problem if it fails."""
    folder = os.path.dirname(os.path.abspath(script))
    try:
        from grader.vgpu.observe import placements_at_error
        placements_at_error(traceback_, lambda name: os.path.abspath(name).startswith(
            folder + os.sep))
    except Exception as problem:
        print(f"pdl-autograder: the modules at the error were not recorded ({problem!r})",
              file=sys.stderr)


if __name__ == "__main__":
    # Running as a file puts grader/vgpu on sys.path[0]; the package must come from its root.
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from grader.vgpu.clean_exit import exit_process
    try:
        status = main(sys.argv[1:])
    except SystemExit as request:
        status = request.code
    exit_process(status)
