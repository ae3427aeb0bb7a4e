"""The command-line value that bounds a script's training loop, where the script has no STEPS
constant: `parser.add_argument("--steps", type=int, default=300)` read as `for step in
range(args.steps)` (also `--iters`, `--num-steps`, `while step < args.steps`, an
`itertools.count()` loop or a data loader's `enumerate` that breaks at it, `if step + 1 ==
args.steps: break`, `steps = args.steps` first, the value handed to a function of the file
called once: `train(args.steps)` for `def train(steps)`), `int(sys.argv[1]) if len(sys.argv) >
1 else 300`, and click's `@click.option("--steps", default=300)`; or a step count of the
student's own module: `from config import STEPS`, `import config` read as `config.STEPS`.

The graded runs start the script with no arguments (constant_values.py), so the default is the
steps the run takes. Lowering that default, in its own text and nothing else (the run's
`--edit`), lowers the run and can never raise it, because:
- the default is a whole number written as such (`300`, or `"300"` with `type=int`);
- the value is read nowhere but as the bound of loops that train (a backward or an optimizer
  step in the loop, or in a function of the file the loop calls) counting up from 0, and in
  prints: no other loop (a model's layers), no arithmetic on it;
- where the run does not take the default (an argument it is given, `args.steps = 1`), the edit
  changes nothing; what would make the default wrong for the student's own run (set_defaults,
  subparsers, a sys.argv the script writes, vars/getattr, exec, a star import) is not read.
A step count of the student's own module (config.py's `STEPS = 300`, a whole number worked out
as constant_values.py does) is lowered in the script's text only, as `min` of it: `; STEPS =
min(STEPS, 3)` after `from config import STEPS`, `min(config.STEPS, 3)` for the one read of
`config.STEPS` that bounds the loop; the module, and what anything else reads of it, stays as
written, and a value the run reads otherwise than worked out can only be lowered by a `min`.
The same rules hold: every read of it in the script is a loop's bound, printed, or handed to
one. A product (`args.epochs * steps_per_epoch`), two values bounding loops, a value that also
sizes the model or the data, or anything else is None: the script runs as written. A loop
that does something only past a warm-up of its counter (`if step >= 20:` timing) keeps the
template's steps past it (LoopDefault.fewest, loop_thresholds.py); constant_fewest does the
same for a STEPS constant.
"""
from __future__ import annotations

import ast
import operator
from dataclasses import dataclass, replace

from grader.common.ast_parents import ast_parents
from grader.common.constant_values import whole_number_assigned
from grader.common.loop_thresholds import (counter_comparisons, literal_names, loop_needs,
                                           MOST_READ, Needs, needs_of, Unreadable, value_of)
from grader.common.script_writes import script_writes

# Calls that hand a range on without lengthening it: `for i, step in enumerate(range(n))`.
_WRAPPERS = {"enumerate", "tqdm", "tqdm.tqdm", "tqdm.auto.tqdm"}
_TRANGES = {"tqdm.trange", "tqdm.auto.trange"}
_COUNTS = {"itertools.count"}
# Ways the argument's default may not be what the run reads, or the value may be read unseen.
_UNREAD_ATTRIBUTES = {"set_defaults", "add_subparsers", "__dict__", "_get_kwargs",
                      "parse_intermixed_args", "add_mutually_exclusive_group"}
_UNREAD_CALLS = {"vars", "getattr", "setattr", "exec", "eval"}
_ARGPARSE_OPTIONS = {"type", "default", "help", "metavar", "dest"}
_CLICK_OPTIONS = {"type", "default", "help", "show_default"}
_COMPARE = {ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Lt: operator.lt,
            ast.LtE: operator.le, ast.Eq: operator.eq, ast.NotEq: operator.ne}


@dataclass(frozen=True)
class LoopDefault:
    """The default that bounds the training loop: `written` steps, held by the text `holder`
    (which occurs once in the script) at [start, end)."""
    written: int
    holder: str
    start: int
    end: int
    needs: Needs | None = Needs()   # None: a comparison of the loop's counter not read
    # What the lowered steps are written between: quotes for a string default; for a value the
    # script imports from its own module, `min(...)` of it, so the run can only get shorter.
    before: str = ""
    after: str = ""

    def fewest(self, most: int) -> int:
        """The steps the default may be lowered to for a run of the template's `most`: more
        past a warm-up the loop skips (loop_thresholds.py), never more than written (the
        written steps where a comparison of its counter is not read: run as written)."""
        if self.needs is None:
            return self.written
        return min(self.written, self.needs.fewest(most))

    def lowered_to(self, steps: int) -> tuple[str, str]:
        """The run's edit (old text, new text) that makes the default `steps`."""
        value = f"{self.before}{steps}{self.after}"
        return self.holder, self.holder[:self.start] + value + self.holder[self.end:]


class _Unread(Exception):
    pass


def loop_default(source: str, modules=None) -> LoopDefault | None:
    """The default of the one command-line value that bounds the script's training loops, or
    None (see the module's docstring). `modules(name)`: the text of the student's own module
    `name`, whose writes of sys.argv at import count (script_writes.py)."""
    try:
        tree = ast.parse(source)
        writes = script_writes(tree, modules)
        return _Script(source, tree, writes, modules).loop_default()
    except (_Unread, SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    except Exception:   # a form not foreseen: run as written, never a grading error
        return None


def constant_fewest(source: str, name: str, written: int, most: int, modules=None,
                    unread: int | None = None) -> int:
    """The fewest steps the constant `name` (STEPS, `written` in the file) may be set to for a
    run of the template's `most`: more where a loop it bounds (`range(STEPS)`, `while step <
    STEPS`, `range(WARMUP + STEPS)`) compares its counter with a warm-up the student's run
    passes (loop_thresholds.py); `unread` where such a comparison or such a loop's length
    cannot be read (default `written`: run as written)."""
    unread = written if unread is None else unread
    try:
        tree = ast.parse(source)
        script = _Script(source, tree, script_writes(tree, modules))
        literals = literal_names(tree)
        bounded = []
        for loop, counters, bound, stop in script._loops():
            if name not in {n.id for n in ast.walk(bound) if isinstance(n, ast.Name)}:
                continue
            # A comparison with STEPS itself (`step == STEPS - 1`) moves with it: no warm-up.
            found = [(comparison, binders) for comparison, binders in counter_comparisons(
                tree, script.parents, loop, counters, [stop] if stop is not None else [])
                if name not in {n.id for n in ast.walk(comparison) if isinstance(n, ast.Name)}]
            if not found:
                continue   # nothing past a warm-up: its length need not be read
            length = _length(bound, name, literals)
            needs = needs_of(found, length(written), literals)
            if needs != Needs():
                bounded.append((length, needs.fewest(most)))
        for steps in range(most, min(written, MOST_READ)):
            if all(length(steps) >= fewest for length, fewest in bounded):
                return steps
    except (Unreadable, SyntaxError, ValueError, RecursionError, MemoryError):
        return unread
    except Exception:   # a form not foreseen: run as written, never a grading error
        return unread
    return written


def _length(bound, name: str, literals):
    """The steps of a loop bounded by `bound` with `name` at a value (Unreadable where it is
    not a whole number of literals)."""
    def steps(value: int) -> int:
        length = value_of(bound, {name: value}, literals)
        if type(length) is not int:
            raise Unreadable
        return length
    return steps


class _Script:
    def __init__(self, source: str, tree: ast.Module, writes, modules=None):
        self.source, self.tree, self.writes, self.modules = source, tree, writes, modules
        self.parents = ast_parents(tree)
        self.handed = set()   # ids of the call arguments a loop's bound is handed in by
        self.functions = {node.name: node for node in tree.body
                          if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}

    def loop_default(self) -> LoopDefault | None:
        if self.writes.opaque or self.writes.argv or self._read_unseen():
            return None
        self.loops = {}
        self.bounds = {id(bound): bound for bound in self._training_bounds()}
        for _ in range(2):   # again once every `train(args.steps)` is known (_handed_in)
            sources, bounded = {}, []
            for bound in self.bounds.values():
                try:
                    source = self._source(bound)
                except _Unread:
                    continue   # a loop of a constant, of len(loader): the edit does not reach it
                sources[id(source)] = source
                bounded.append(self.loops[id(bound)])
        if len(sources) != 1:
            return None   # no loop bound by an argument, or two values (epochs and steps)
        default = self._default(next(iter(sources.values())))
        return replace(default, needs=self._needs(bounded, default.written))

    def _needs(self, loops, steps: int) -> Needs | None:
        """What lowering `loops` must keep (loop_thresholds.py); None where a comparison of
        their counters cannot be read."""
        needs = []
        try:
            for loop, counters, stop in loops:
                needs.append(loop_needs(self.tree, self.parents, loop, counters, steps,
                                        [stop] if stop is not None else []))
        except Unreadable:
            return None
        return Needs(max((n.past for n in needs if n.past is not None), default=None),
                     max((n.seen for n in needs), default=0))

    def _read_unseen(self) -> bool:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Attribute) and node.attr in _UNREAD_ATTRIBUTES:
                return True
            if isinstance(node, ast.Call) and self.writes.canonical(node.func) in _UNREAD_CALLS:
                return True
        return False

    # The loops.

    def _training_bounds(self):
        """The expressions that bound loops which train, counting up from 0."""
        for loop, counters, bound, stop in self._loops():
            if self._trains(loop.body):
                self.loops[id(bound)] = (loop, counters, stop)
                yield bound

    def _loops(self):
        """(loop, its counters, the expression bounding it, the comparison that is its bound
        or None) of every loop counting up from 0 to a bound."""
        for loop in ast.walk(self.tree):
            if isinstance(loop, ast.For):
                bound = self._range_bound(loop.iter)
                counters = _target_names(loop.target)
                counter = self._counted(loop) if bound is None else None
                if bound is not None:
                    yield loop, counters, bound, None
                elif counter is not None:
                    for stop, bound in self._breaks_at(loop, counter):
                        yield loop, {counter}, bound, stop
            elif isinstance(loop, ast.While):
                counter, bound = self._compared(loop.test, (ast.Lt,))
                if counter is not None and self._counter(loop, counter):
                    yield loop, {counter}, bound, loop.test
                elif isinstance(loop.test, ast.Constant) and loop.test.value is True:
                    for counter in self._break_counters(loop):
                        if self._counter(loop, counter):
                            for stop, bound in self._breaks_at(loop, counter):
                                yield loop, {counter}, bound, stop

    def _range_bound(self, node):
        if not isinstance(node, ast.Call) or node.keywords:
            return None
        function = self.writes.canonical(node.func)
        if function in _WRAPPERS and node.args:
            return self._range_bound(node.args[0])
        if function == "range" or function in _TRANGES:
            if len(node.args) == 1:
                return node.args[0]
            if len(node.args) == 2 and _is_int(node.args[0], 0):
                return node.args[1]
        return None

    def _counted(self, loop: ast.For) -> str | None:
        """The name counting the steps of a loop that runs until a break, from 0 by 1:
        `for step in itertools.count()`, `for step, (x, y) in enumerate(loader)`, where the
        loop's body never binds it again; None otherwise."""
        node, target = loop.iter, loop.target
        if not isinstance(node, ast.Call) or node.keywords:
            return None
        function = self.writes.canonical(node.func)
        if function in _COUNTS and isinstance(target, ast.Name) \
                and (not node.args or len(node.args) == 1 and _is_int(node.args[0], 0)):
            counter = target.id
        elif function == "enumerate" and isinstance(target, ast.Tuple) \
                and len(target.elts) == 2 and isinstance(target.elts[0], ast.Name) \
                and (len(node.args) == 1 or len(node.args) == 2 and _is_int(node.args[1], 0)):
            counter = target.elts[0].id
        else:
            return None
        rebound = any(isinstance(n, ast.Name) and n.id == counter
                      and not isinstance(n.ctx, ast.Load)
                      or isinstance(n, ast.arg) and n.arg == counter
                      for statement in loop.body for n in ast.walk(statement))
        return None if rebound else counter

    def _compared(self, test, ops, plus_one=False):
        """(counter, bound) of `counter OP bound` (or `bound OP' counter`; `counter + 1 OP
        bound` where `plus_one`: a break on it comes at most a step sooner), else (None,
        None)."""
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
            return None, None
        left, right, op = test.left, test.comparators[0], type(test.ops[0])
        if plus_one and isinstance(left, ast.BinOp) and isinstance(left.op, ast.Add) \
                and _is_int(left.right, 1):
            left = left.left
        flipped = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.GtE: ast.LtE, ast.LtE: ast.GtE,
                   ast.Eq: ast.Eq}.get(op)
        if isinstance(left, ast.Name) and op in ops:
            return left.id, right
        if isinstance(right, ast.Name) and flipped in ops:
            return right.id, left
        return None, None

    def _stops(self, loop):
        """The `if ...: break` statements of the loop's own body (not of an inner loop)."""
        pending = list(loop.body)
        while pending:
            node = pending.pop()
            if isinstance(node, ast.If):
                if any(isinstance(s, ast.Break) for s in node.body):
                    yield node
                pending.extend(node.body + node.orelse)
            elif isinstance(node, (ast.With, ast.Try)):
                pending.extend(node.body)

    def _break_counters(self, loop):
        counters = {self._compared(stop.test, (ast.Eq, ast.GtE), True)[0]
                    for stop in self._stops(loop)}
        return counters - {None}

    def _breaks_at(self, loop, counter: str):
        for stop in self._stops(loop):
            name, bound = self._compared(stop.test, (ast.Eq, ast.GtE), True)
            if name == counter:
                yield stop.test, bound

    def _counter(self, loop, name: str) -> bool:
        """`name` starts at 0 and only grows by 1: every binding of it in the file is `name =
        0` before the loop or `name += 1`."""
        starts = 0
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Name) and node.id == name \
                    and not isinstance(node.ctx, ast.Load):
                parent = self.parents.get(node)
                if isinstance(parent, ast.AugAssign) and isinstance(parent.op, ast.Add) \
                        and _is_int(parent.value, 1):
                    continue
                if isinstance(parent, ast.Assign) and parent.targets == [node] \
                        and _is_int(parent.value, 0) and parent.lineno < loop.lineno:
                    starts += 1
                    continue
                return False
            if isinstance(node, ast.arg) and node.arg == name:
                return False
        return starts == 1

    def _trains(self, body, seen=()) -> bool:
        """A backward or an optimizer step in `body`, or in a function of the file it calls."""
        for statement in body:
            for node in ast.walk(statement):
                if not isinstance(node, ast.Call):
                    continue
                if isinstance(node.func, ast.Attribute) and node.func.attr in ("backward", "step"):
                    return True
                called = node.func.id if isinstance(node.func, ast.Name) else None
                if called in self.functions and called not in seen \
                        and self._trains(self.functions[called].body, (*seen, called)):
                    return True
        return False

    # Where the bound's value comes from.

    def _source(self, bound):
        """The node that gives `bound` its value: an add_argument call, a click.option call,
        the sys.argv expression, or a value of the student's own module (_Imported);
        _Unread where it is anything else."""
        imported = self._imported(bound)
        if imported is not None:
            return imported
        if isinstance(bound, ast.Attribute) and isinstance(bound.ctx, ast.Load):
            return self._argument(bound.attr)
        if isinstance(bound, ast.IfExp):
            return self._argv_default(bound)
        if isinstance(bound, ast.Name):
            option = self._click_option(bound)
            if option is not None:
                return option
            handed = self._handed_in(bound)
            if handed is not None:
                return self._source(handed)
            value = self._bound_once(bound.id)
            if isinstance(value, (ast.Attribute, ast.IfExp)):
                return self._source(value)
        raise _Unread

    def _bound_once(self, name: str):
        """The value of the file's one binding of `name` (`steps = args.steps`), where its
        every read is a loop's bound or printed; _Unread otherwise."""
        assigned = [node for node in ast.walk(self.tree)
                    if isinstance(node, ast.Name) and node.id == name
                    and not isinstance(node.ctx, ast.Load)]
        parent = self.parents.get(assigned[0]) if len(assigned) == 1 else None
        if not (isinstance(parent, ast.Assign) and parent.targets == assigned) \
                or name in self.writes.global_names \
                or any(isinstance(n, ast.arg) and n.arg == name for n in ast.walk(self.tree)):
            raise _Unread
        self._only_bounds_or_printed(n for n in ast.walk(self.tree)
                                     if isinstance(n, ast.Name) and n.id == name
                                     and isinstance(n.ctx, ast.Load))
        return parent.value

    def _only_bounds_or_printed(self, reads) -> None:
        for read in reads:
            if id(read) not in self.bounds and id(read) not in self.handed \
                    and not self._printed(read):
                raise _Unread

    def _handed_in(self, bound: ast.Name):
        """The argument that the file's one call of a top-level function hands to its
        parameter `bound` (`train(args.steps)` for `def train(steps)`), where the function is
        named nowhere else and the parameter is not bound again and only bounds loops or is
        printed; None where `bound` is no parameter of a top-level function."""
        function = self._function_of(bound)
        if function is None or function not in self.tree.body or function.decorator_list:
            return None
        parameters = [a.arg for a in function.args.args]
        if bound.id not in parameters:
            return None
        named = [n for n in ast.walk(self.tree) if isinstance(n, ast.Name)
                 and n.id == function.name]
        call = self.parents.get(named[0]) if len(named) == 1 else None
        if not (isinstance(call, ast.Call) and call.func is named[0]) \
                or self.writes.bindings[function.name] != 1 \
                or any(isinstance(a, ast.Starred) for a in call.args) \
                or any(k.arg is None for k in call.keywords):
            raise _Unread   # called twice, handed on, or its arguments not read
        position = parameters.index(bound.id)
        given = [k.value for k in call.keywords if k.arg == bound.id]
        given += call.args[position:position + 1]
        if len(given) != 1 or any(
                isinstance(n, ast.Name) and n.id == bound.id and not isinstance(n.ctx, ast.Load)
                or isinstance(n, ast.arg) and n.arg == bound.id and n is not
                function.args.args[position] for n in ast.walk(function)):
            raise _Unread
        self._only_bounds_or_printed(n for n in ast.walk(function) if isinstance(n, ast.Name)
                                     and n.id == bound.id and isinstance(n.ctx, ast.Load))
        self.handed.add(id(given[0]))
        return given[0]

    def _function_of(self, node):
        while node is not None and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                         ast.Lambda)):
            node = self.parents.get(node)
        return node

    def _imported(self, bound):
        """`STEPS` of `from config import STEPS`, or `config.STEPS` of `import config`, where
        config is the student's own module, whose top level gives STEPS a whole number
        (constant_values.py), the name or attribute is never bound again, and its every read is
        a loop's bound, printed, or handed to one; None where `bound` is no such import."""
        if self.modules is None or not isinstance(bound, (ast.Name, ast.Attribute)):
            return None
        held = self.writes.canonical(bound)
        module, _, name = (held or "").rpartition(".")
        text = self.modules(module) if module and not module.startswith(".") \
            and _head(bound) in self.writes.imports else None
        if text is None:
            return None
        written = whole_number_assigned(text, name, self.modules)
        statement = next((s for s in self.tree.body if isinstance(s, (ast.Import, ast.ImportFrom))
                          and any((a.asname or a.name).split(".")[0] == _head(bound)
                                  for a in s.names)), None)
        if written is None or statement is None:
            raise _Unread
        reads = [n for n in ast.walk(self.tree) if isinstance(n, type(bound))
                 and self.writes.canonical(n) == held]
        head = _head(bound)
        if any(not isinstance(n.ctx, ast.Load) for n in reads) or any(
                isinstance(n, ast.arg) and n.arg == head or isinstance(n, ast.Name)
                and n.id == head and not isinstance(n.ctx, ast.Load)
                for n in ast.walk(self.tree)) or head in self.writes.global_names:
            raise _Unread   # bound again somewhere (a function's own `config`, a parameter)
        self._only_bounds_or_printed(reads)
        if isinstance(bound, ast.Name):   # the name, lowered right after its import
            return _Imported(written, statement, bound.id)
        if sum(id(n) in self.bounds or id(n) in self.handed for n in reads) != 1:
            raise _Unread   # each read its own edit: lowered where one read bounds the loop
        return _Imported(written, bound, None)

    def _printed(self, node) -> bool:
        while node in self.parents:
            node = self.parents[node]
            if isinstance(node, ast.JoinedStr) or isinstance(node, ast.Call) \
                    and self.writes.canonical(node.func) == "print":
                return True
            if isinstance(node, ast.stmt):
                return False
        return False

    def _argument(self, dest: str):
        """The file's one add_argument call whose value is `dest`, where every `.dest` of the
        file is a loop's bound, printed, or assigned once to a name that is."""
        calls = [node for node in ast.walk(self.tree) if isinstance(node, ast.Call)
                 and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument"]
        found = [call for call in calls if _argument_dest(call) == dest]
        if len(found) != 1:
            raise _Unread   # none, or two (which one the run reads is not read)
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Attribute) and node.attr == dest:
                if not isinstance(node.ctx, ast.Load):
                    raise _Unread   # `args.steps = 10`: what the student's run took is unknown
                parent = self.parents.get(node)
                if isinstance(parent, ast.Assign) and parent.value is node \
                        and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name):
                    self._bound_once(parent.targets[0].id)
                else:
                    self._only_bounds_or_printed([node])
        return found[0]

    def _argv_default(self, node: ast.IfExp):
        """`int(sys.argv[1]) if len(sys.argv) > 1 else 300` (or its mirror): the branch a run
        with no arguments takes, where that is a whole number."""
        test = node.test
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1
                and type(test.ops[0]) in _COMPARE and isinstance(test.left, ast.Call)
                and self.writes.canonical(test.left.func) == "len"
                and len(test.left.args) == 1 and not test.left.keywords
                and self.writes.canonical(test.left.args[0]) == "sys.argv"
                and _whole(test.comparators[0]) is not None):
            raise _Unread
        taken = node.body if _COMPARE[type(test.ops[0])](1, test.comparators[0].value) \
            else node.orelse
        if _whole(taken) is None:
            raise _Unread
        return taken

    def _click_option(self, bound: ast.Name):
        """The `@click.option(...)` of the function whose parameter `bound` is, where that
        parameter is not bound again and every read of it is a loop's bound or printed."""
        function = self.parents.get(bound)
        while function is not None and not isinstance(function, ast.FunctionDef):
            function = self.parents.get(function)
        if function is None or bound.id not in [a.arg for a in function.args.args] \
                or not function.decorator_list:
            return None   # a plain function's parameter: what its caller hands in (_handed_in)
        options = [d for d in function.decorator_list if isinstance(d, ast.Call)
                   and self.writes.canonical(d.func) == "click.option"
                   and _click_name(d) == bound.id]
        if len(options) != 1 or any(
                isinstance(n, ast.Name) and n.id == bound.id and not isinstance(n.ctx, ast.Load)
                for n in ast.walk(function)):
            raise _Unread
        self._only_bounds_or_printed(n for n in ast.walk(function) if isinstance(n, ast.Name)
                                     and n.id == bound.id and isinstance(n.ctx, ast.Load))
        return options[0]

    # The default.

    def _default(self, source) -> LoopDefault:
        if isinstance(source, _Imported):
            return self._imported_default(source)
        if isinstance(source, ast.Constant):   # sys.argv's default: held by the whole expression
            holder = next(n for n in ast.walk(self.tree)
                          if isinstance(n, ast.IfExp) and source in (n.body, n.orelse))
            value = source
            written = _whole(value)
        else:
            holder, options = source, {k.arg: k.value for k in source.keywords}
            allowed = _CLICK_OPTIONS if self.writes.canonical(source.func) == "click.option" \
                else _ARGPARSE_OPTIONS
            if not set(options) <= allowed or "default" not in options \
                    or "type" in options and self.writes.canonical(options["type"]) != "int":
                raise _Unread   # an action, nargs, choices, a required or custom-typed value
            value = options["default"]
            written = _whole(value)
            if written is None and "type" in options and isinstance(value, ast.Constant) \
                    and isinstance(value.value, str) and value.value.strip().isdigit():
                written = int(value.value)   # argparse converts a string default by its type
        if written is None:
            raise _Unread
        text = ast.get_source_segment(self.source, holder)
        if not text or self.source.count(text) != 1:
            raise _Unread
        begin = _offset(self.source, value.lineno, value.col_offset) \
            - _offset(self.source, holder.lineno, holder.col_offset)
        end = _offset(self.source, value.end_lineno, value.end_col_offset) \
            - _offset(self.source, holder.lineno, holder.col_offset)
        if text[begin:end] != ast.get_source_segment(self.source, value):
            raise _Unread   # the positions do not point at the default: change nothing
        quote = '"' if isinstance(value.value, str) else ""
        return LoopDefault(written, text, begin, end, before=quote, after=quote)

    def _imported_default(self, source: _Imported) -> LoopDefault:
        """The run's edit of a value of the student's own module: `; STEPS = min(STEPS, 3)`
        after `from config import STEPS`, `min(config.STEPS, 3)` for the read that bounds the
        loop; the module itself, and what other modules read of it, stay as written."""
        node = source.node
        if source.name is not None:   # a statement of its own, after the import's
            text = ast.get_source_segment(self.source, node) or ""
            start = end = len(text)
            before, after = f"; {source.name} = min({source.name}, ", ")"
        else:   # the read, within its lines
            text = "\n".join(self.source.split("\n")[node.lineno - 1:node.end_lineno])
            line = _offset(self.source, node.lineno, 0)
            start = _offset(self.source, node.lineno, node.col_offset) - line
            end = _offset(self.source, node.end_lineno, node.end_col_offset) - line
            read = ast.get_source_segment(self.source, node)
            if text[start:end] != read:
                raise _Unread   # the positions do not point at the read: change nothing
            before, after = f"min({read}, ", ")"
        if not text or self.source.count(text) != 1:
            raise _Unread   # the text to change occurs twice: change nothing
        return LoopDefault(source.written, text, start, end, before=before, after=after)


@dataclass(frozen=True)
class _Imported:
    """A value of the student's own module: `written` steps, read through `node` (the import
    statement, binding `name`; or the attribute read `config.STEPS` itself, name None)."""
    written: int
    node: ast.AST
    name: str | None


def _head(node) -> str:
    """The name an import binds that `node` is read through (`config` of `config.STEPS`)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else ""


def _argument_dest(call: ast.Call) -> str | None:
    """What argparse names the argument (`--num-steps`: num_steps); None where not read."""
    flags = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    if len(flags) != len(call.args) or not flags:
        return "?"   # a flag the grader cannot read may be any dest
    for keyword in call.keywords:
        if keyword.arg == "dest":
            return keyword.value.value if isinstance(keyword.value, ast.Constant) else "?"
        if keyword.arg is None:
            return "?"
    if not flags[0].startswith("-"):
        return flags[0]
    return next((f for f in flags if f.startswith("--")), flags[0]).lstrip("-").replace("-", "_")


def _click_name(call: ast.Call) -> str | None:
    names = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    if len(names) != len(call.args):
        return None
    # click's rule: a name without dashes, else the first with two, else the first with one.
    plain = [n for n in names if n.isidentifier()]
    if plain:
        return plain[0]
    flag = next((n for n in names if n.startswith("--")), names[0] if names else None)
    return flag.lstrip("-").replace("-", "_").lower() if flag else None


def _target_names(target) -> set:
    """The names a `for` target binds the step's count to: `step`, or both of `for i, step in
    enumerate(range(n))` (each the count)."""
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts):
        return {e.id for e in target.elts}
    return set()


def _whole(node) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def _is_int(node, value: int) -> bool:
    return _whole(node) == value


def _offset(source: str, lineno: int, col_offset: int) -> int:
    """The character offset of an ast position (its column counts UTF-8 bytes; its lines end
    at "\n" only, as the text the runner edits does)."""
    lines = source.split("\n")
    before = sum(len(line) + 1 for line in lines[:lineno - 1])
    return before + len(lines[lineno - 1].encode("utf-8")[:col_offset].decode("utf-8", "replace"))
