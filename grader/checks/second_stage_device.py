"""Where a Practical 10 script gives its second stage's device as the rank plus an offset, read
from its syntax tree, for Part 5's line change and for setting that change back.

Part 5 says "Replace device1 = torch.device(f"cuda:{local_rank + 2}") with device1 =
torch.device(f"cuda:{local_rank}")". The grader makes that change on the script's text and runs
it (the runner's `--edit OLD NEW`), so the edit is text, cut at the parser's positions: the one
sum `rank + offset` that names the second stage's CUDA device loses its offset and keeps the
rank. The handout's line comes first: a sum in what a `device1 = ...` assignment gives device1
(`self.device1`, `device0, device1 = ..., ...`, `device1: torch.device = ...`). Where there is
none, the sum wherever the code names a device with it (adv37 F7: `TwoStageModel(local_rank)`
picking its own devices lost 0.75): an argument of torch.device() or .to(), an f-string that is
`cuda:{...}` alone, `"cuda:" + str(...)`, `"cuda:{}".format(...)`, a dict or list of devices;
and only where the code names none so, a sum assigned as it is (`gpus = (local_rank, local_rank
+ 2)`). Several such sums, or none, are no single change: None.

The parser settles what text patterns had to guard against: a comment or a printed message is
never code (`# was local_rank + 2`, `print(f"stage 1 on cuda:{local_rank + 2}")`), and operator
precedence is the tree's (`local_rank + 2 * s` is the rank plus `2 * s`: adv40 H2's honest P10
had lost 0.75 to a pattern that made it `local_rank * s`).
"""
from __future__ import annotations

import ast
import re
from typing import NamedTuple

from grader.checks.switch_argument import flag_switch
from grader.checks.switch_constants import dotted, settable_constants
from grader.common.ast_parents import ast_parents

# Calls whose arguments name a device: torch.device(...), torch.cuda.device(...), .to(...),
# .cuda(...).
_DEVICE_CALLS = {"device", "to", "cuda"}
_CUDA = "cuda:"
SECOND, FIRST = "device1", "device0"
# A value is the rank where its code reads it (os.environ["LOCAL_RANK"], dist.get_rank(),
# local_rank) and adds nothing to it (`second = local_rank + 2` is the second stage's GPU).
_READS_THE_RANK = re.compile(r"LOCAL_RANK|\bRANK\b|get_rank|local_rank")
# What Part 5's change set back adds to the rank: the handout's offset.
_HANDOUT_OFFSET = " + 2"


class _Script:
    """A script's text and syntax tree, with each node's parent and the names of the rank.
    `shift`: lines the parsed text has before the script's own (a fragment indented as a
    function's body, parsed inside an `if` of one line)."""

    def __init__(self, source: str, tree: ast.Module, shift: int = 0):
        self.source, self.tree, self.shift = source, tree, shift
        self.parents = ast_parents(tree)
        self.ranks = {dotted(target) for node in ast.walk(tree)
                      for target, value in _assignments(node)
                      if dotted(target) and _reads_the_rank(value)}

    def names_the_rank(self, node) -> bool:
        """`local_rank`, `self.local_rank`, or a name the script assigns from the rank."""
        name = dotted(node)
        return name is not None and (name.rsplit(".", 1)[-1] == "local_rank"
                                     or name in self.ranks)

    def within(self, node, ancestor) -> bool:
        while node is not None and node is not ancestor:
            node = self.parents.get(node)
        return node is ancestor

    def assigned_to(self, node, name: str) -> bool:
        """Whether `node` is in what an assignment gives `name` (a name or an attribute:
        `device1`, `self.device1`), its own part of a tuple assigned to several."""
        statement = node
        while statement is not None and not isinstance(statement, ast.stmt):
            statement = self.parents.get(statement)
        return any(_last_name(target) == name and self.within(node, value)
                   for target, value in _assignments(statement))

    def segment(self, node) -> str | None:
        """The node's code, where it sits on one line."""
        if node.lineno != node.end_lineno:
            return None
        line = self.source.splitlines(keepends=True)[node.lineno - 1 - self.shift]
        return line.encode("utf-8")[node.col_offset:node.end_col_offset].decode("utf-8",
                                                                                "replace")


_INDENTED = "if True:\n"


def _parsed(source: str) -> _Script | None:
    for prefix in ("", _INDENTED):
        try:
            return _Script(source, ast.parse(prefix + source), shift=prefix.count("\n"))
        except IndentationError:
            continue
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
    return None


def part5_edit(source: str) -> tuple[str, str] | None:
    """(old text, new text) that drops the offset from the one sum `rank + offset` naming the
    second stage's device (see the module's docstring); None where there is no such sum, or
    more than one, or where the script holds Part 5's change already (part5_undone_edit)."""
    script = _parsed(source)
    if script is None:
        return None
    sums = [(node, kept) for node in ast.walk(script.tree)
            if (kept := _rank_kept(node, script)) is not None]
    found = [s for s in sums if script.assigned_to(s[0], SECOND)]
    if not found:
        if _undone_edit(script) is not None:
            return None   # Part 5's change is in: the other sums are no second stage's
        found = [s for s in sums if _names_a_device(s[0], script.parents)] or \
            [s for s in sums if _assigned_as_is(s[0], script.parents)]
    if len(found) != 1:
        return None
    node, kept = found[0]
    kept_code = script.segment(kept)
    return _line_edit(script, node, kept_code) if kept_code else None


def part5_undone_edit(source: str) -> tuple[str, str] | None:
    """(old text, new text) that sets Part 5's change back in a script handed in with it, so
    the other parts run the course's layout: the rank alone as device1's device becomes the rank
    + 2 (`cuda:{local_rank}`, `torch.device("cuda", gpu)`, `"cuda:" + str(local_rank)`, ...),
    and `device1 = device0` the first stage's device, the rank + 2. None unless the script has
    exactly one such place and no sum `rank + offset` given to device1. The old text starts at
    its line's start ("\\n" before it) where it can: the handout's line also sits in comments
    (`#     device1 = torch.device(f"cuda:{local_rank}")`)."""
    script = _parsed(source)
    return _undone_edit(script) if script is not None else None


def _undone_edit(script: _Script) -> tuple[str, str] | None:
    nodes = list(ast.walk(script.tree))
    if any(_rank_kept(n, script) is not None and script.assigned_to(n, SECOND) for n in nodes):
        return None   # the course's layout is there
    alone = [n for n in nodes if script.assigned_to(n, SECOND) and _rank_alone(n, script)]
    first = [n for n in nodes if script.assigned_to(n, FIRST) and _rank_alone(n, script)]
    same = [n for n in nodes if _last_name(n) == FIRST and isinstance(n.ctx, ast.Load)
            and _whole_value_of(n, SECOND, script)]
    if len(same) == 1 and len(first) == 1 and not alone:
        # `device1 = device0`: the first stage's device, one GPU further.
        device0 = _assigned_value(first[0], FIRST, script)
        device0_code = _code_with(script, device0, first[0], _HANDOUT_OFFSET)
        return _line_edit(script, same[0], device0_code, at_line_start=True) \
            if device0_code else None
    if len(alone) != 1:
        return None
    rank_code = script.segment(alone[0])
    return _line_edit(script, alone[0], rank_code + _HANDOUT_OFFSET, at_line_start=True) \
        if rank_code else None



class LayoutSwitch(NamedTuple):
    """What chooses the second stage's device in a script handed in either way: a top-level
    constant that is a boolean switch between the course's line and Part 5's (`if BREAK_MP:
    device1 = ...{local_rank}... else: device1 = ...{local_rank + 2}...`), or the offset the one
    sum given to device1 adds to the rank (`cuda:{local_rank + STAGE1_OFFSET}`), or the default
    of a command-line flag switching between them (`if args.break_mp:`, the graded runs passing
    no arguments: switch_argument.py), each also imported from the student's own module
    (`config.BREAK_MP`: switch_constants.py). The grader's runs set it, to `course` for Parts 1
    to 4 and to `broken` for Part 5's: a constant of the script's through the runner's --set,
    an own module's through an edit assigning it after its import, a flag's default through an
    edit of its add_argument call's text (`edit`); `written` is its value as handed in, on
    line `line` (of `place`). `also_read`: the lines where the script reads it besides the
    layout's choice (a print, a sum of its own), which take the value set too. `always_set`:
    set in every run, also at the value written (assigned more than once or as an
    expression)."""
    name: str
    course: object
    broken: object
    written: object
    line: int
    also_read: tuple = ()
    always_set: bool = False
    edit: object = None   # value -> (old, new) text of the run's edit; None: the runner's --set
    place: str = ""       # where `line` is: "" for the script, " of config.py"

    def change(self, value) -> tuple[dict, tuple]:
        """(sets, edits) of a run with the switch at `value`."""
        if value == self.written and not self.always_set:
            return {}, ()
        return ({}, (self.edit(value),)) if self.edit else ({self.name: value}, ())


def layout_switch(source: str, modules=None) -> LayoutSwitch | None:
    """The constant choosing between the course's layout and Part 5's (see LayoutSwitch), where
    the script has one sum `rank + offset` given to device1 and it sits in a branch of an `if`
    on a top-level boolean (or a flag's default: `BREAK_MP`, `not KEEP_MP`, `BREAK_MP is True`,
    `args.break_mp == False`) whose other branch gives device1 the rank alone or device0, or
    adds a top-level whole number other than the handout's 2 (set to 2, and to 0 for Part 5);
    None otherwise (an offset already 2 needs nothing set: Part 5's change is part5_edit's).
    Found where the change set back had given up: any sum given to device1, even in the branch
    not taken or adding 0, had been taken for the course's layout (adv41 F1: 2.75 of 12 lost).
    A constant counts where each of its bindings is a top-level assignment (what the runner's
    --set rewrites), of a literal or, for the offset, of a whole number the grader works out
    (`OFFSET = NUM_GPUS // 2`: grader/common/constant_values.py; `modules(name)`: the student's
    own module `name`, as there)."""
    script = _parsed(source)
    if script is None or script.shift:
        return None
    sums = [(node, kept) for node in ast.walk(script.tree)
            if (kept := _rank_kept(node, script)) is not None and script.assigned_to(node, SECOND)]
    if len(sums) != 1:
        return None
    constants = settable_constants(script.tree, source, modules)
    node, kept = sums[0]
    found = _switch_of(node, script, constants) or _offset_of(node, kept, constants)
    if found is None:
        return None
    switch, read, is_switch = found
    also = sorted({n.lineno for n in ast.walk(script.tree)
                   if is_switch(n) and not script.within(n, read)})
    return switch._replace(also_read=tuple(also))


def _reads_key(key: str):
    """Whether a node reads the constant keyed `key` (switch_constants.py): `NAME`, or
    `config.NAME`."""
    return lambda node: isinstance(node, (ast.Name, ast.Attribute)) and \
        isinstance(node.ctx, ast.Load) and dotted(node) == key


def _switch(key: str, course, broken, constant) -> LayoutSwitch:
    return LayoutSwitch(key, course, broken, constant.value, constant.line,
                        always_set=constant.always_set, edit=constant.edit, place=constant.place)


def _switch_of(node, script: _Script, constants):
    """(the LayoutSwitch, the test, what reads the switch) of an `if` (statement or
    expression) whose test takes the sum's branch for one value of the switch and, for the
    other, a branch giving device1 Part 5's device."""
    child, parent = node, script.parents.get(node)
    while parent is not None:
        if isinstance(parent, (ast.If, ast.IfExp)) and child is not parent.test:
            branches = (parent.body, parent.orelse)
            taken = child in branches[0] if isinstance(parent, ast.If) else child is branches[0]
            other = branches[1] if taken else branches[0]
            found = _switched_by(parent.test, script, constants) \
                if other and _gives_part5_layout(other, script) else None
            if found is not None:
                switch, is_switch = found
                if not taken:
                    switch = switch._replace(course=switch.broken, broken=switch.course)
                return switch, parent.test, is_switch
        child, parent = parent, script.parents.get(parent)
    return None


def _switched_by(test, script: _Script, constants):
    """(the switch `test` reads, with `course` the value making it true, what reads it): a
    top-level boolean (`BREAK_MP`, `not KEEP_MP`, `BREAK_MP is True`, `BREAK_MP == False`,
    `config.BREAK_MP`), or a command-line flag's default read the same ways (`args.break_mp`:
    switch_argument.py)."""
    keys = {dotted(n) for n in ast.walk(test) if isinstance(n, (ast.Name, ast.Attribute))}
    keys = [k for k in keys if k in constants and type(constants[k].value) is bool]
    if len(keys) == 1:
        true_for = _made_true_by(test, _reads_key(keys[0]))
        if true_for is None:
            return None
        return _switch(keys[0], true_for, not true_for, constants[keys[0]]), _reads_key(keys[0])
    flag = flag_switch(script.source, script.tree, test)
    true_for = None if flag is None else _made_true_by(test, flag.reads)
    if true_for is None:
        return None
    return LayoutSwitch(flag.name, true_for, not true_for, flag.written, flag.line,
                        edit=flag.edit), flag.reads


def _made_true_by(test, is_switch) -> bool | None:
    """The value of the switch (the nodes `is_switch` says read it) that makes `test` true,
    where the test is the switch, `not`, or a comparison `is`, `is not`, `==`, `!=` with True
    or False; None where it reads anything else or is the same for both values."""
    outcomes = {value: _truth(test, is_switch, value) for value in (True, False)}
    if None in outcomes.values() or outcomes[True] == outcomes[False]:
        return None
    return outcomes[True]


def _truth(node, is_switch, value: bool) -> bool | None:
    if is_switch(node):
        return value
    if isinstance(node, ast.Constant) and type(node.value) is bool:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = _truth(node.operand, is_switch, value)
        return None if inner is None else not inner
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and \
            isinstance(node.ops[0], (ast.Is, ast.IsNot, ast.Eq, ast.NotEq)):
        left = _truth(node.left, is_switch, value)
        right = _truth(node.comparators[0], is_switch, value)
        if left is None or right is None:
            return None
        return (left == right) == isinstance(node.ops[0], (ast.Is, ast.Eq))
    return None


def _gives_part5_layout(branch, script: _Script) -> bool:
    """Whether a branch gives device1 the rank alone as its device, or device0 itself."""
    roots = branch if isinstance(branch, list) else [branch]
    return any(script.assigned_to(n, SECOND) and (
        _rank_alone(n, script) or (_last_name(n) == FIRST and isinstance(n.ctx, ast.Load)
                                   and _whole_value_of(n, SECOND, script)))
        for root in roots for n in ast.walk(root))


def _offset_of(node, kept, constants):
    """(the LayoutSwitch, the offset, what reads it) of the top-level whole number the sum
    adds to the rank, where it is not the handout's 2."""
    offset = node.right if kept is node.left else node.left
    key = dotted(offset)
    if key not in constants or type(constants[key].value) is not int or \
            constants[key].value == 2:
        return None
    return _switch(key, 2, 0, constants[key]), offset, _reads_key(key)

# -- the sum and its parts ------------------------------------------------------------------------


def _rank_kept(node, script: _Script) -> ast.expr | None:
    """The operand a sum `rank + offset` keeps when the offset is dropped: the rank beside the
    handout's literal 2 (any name, as the handout's line has it, or code reading the rank:
    `2 + int(os.environ["LOCAL_RANK"])`), or the operand that is the rank beside another
    spelling of the offset (`world_size`, `torch.cuda.device_count() // 2`, `2 * s`); None for
    any other node."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add)):
        return None
    pairs = [(node.left, node.right), (node.right, node.left)]
    for rank, offset in pairs:
        if _is_two(offset) and (isinstance(rank, (ast.Name, ast.Attribute)) or (
                isinstance(rank, (ast.Call, ast.Subscript)) and _reads_the_rank(rank))):
            return rank
    for rank, offset in pairs:
        if _is_offset(offset) and (isinstance(offset, ast.Constant) or not _numbers_only(offset)) \
                and script.names_the_rank(rank):
            return rank
    return None


def _is_two(node) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int and node.value == 2


def _is_offset(node) -> bool:
    """A number, a name, an attribute, a call without arguments, or their products and floor
    quotients: the shapes the handout's 2 takes in other spellings."""
    if isinstance(node, ast.Constant):
        return type(node.value) is int
    if isinstance(node, (ast.Name, ast.Attribute)):
        return True
    if isinstance(node, ast.Call):
        return not node.args and not node.keywords and isinstance(node.func,
                                                                  (ast.Name, ast.Attribute))
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.FloorDiv, ast.Mult)):
        return _is_offset(node.left) and _is_offset(node.right)
    return False


def _numbers_only(node) -> bool:
    """Arithmetic of numbers alone (`2 * 2`): a student meaning the handout's 2 writes it as
    the number, and cuda:{rank + 4} is no GPU of the practical's four."""
    if isinstance(node, ast.BinOp):
        return _numbers_only(node.left) and _numbers_only(node.right)
    return isinstance(node, ast.Constant)


def _rank_alone(node, script: _Script) -> bool:
    """The rank named by itself as a device (not an operand of arithmetic: `2 + local_rank`
    is the course's layout written the other way round)."""
    return script.names_the_rank(node) and isinstance(node.ctx, ast.Load) and \
        not isinstance(script.parents.get(node), (ast.BinOp, ast.Attribute)) and \
        _names_a_device(node, script.parents)


def _reads_the_rank(value) -> bool:
    if value is None or any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Add)
                            for n in ast.walk(value)):
        return False
    for node in ast.walk(value):
        word = node.id if isinstance(node, ast.Name) else node.attr \
            if isinstance(node, ast.Attribute) else _text(node)
        if word and _READS_THE_RANK.search(word):
            return True
    return False


# -- where a sum sits -----------------------------------------------------------------------------


def _names_a_device(node, parents) -> bool:
    """Whether the node sits in a device's place, looking outwards to its statement."""
    child, parent = node, parents.get(node)
    while parent is not None and not isinstance(parent, ast.stmt):
        if isinstance(parent, ast.Call) and child is not parent.func and \
                _called(parent) in _DEVICE_CALLS:
            return True
        if isinstance(parent, ast.keyword) and parent.arg == "device":
            return True
        if isinstance(parent, ast.JoinedStr) and _cuda_alone(parent, child):
            return True
        if isinstance(parent, ast.BinOp) and child is parent.right and \
                isinstance(parent.op, ast.Add) and _text(parent.left) == _CUDA:
            return True
        if isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Mod) and \
                child is parent.right and (_text(parent.left) or "").startswith(_CUDA):
            return True
        if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Attribute) and \
                parent.func.attr == "format" and child is not parent.func and \
                (_text(parent.func.value) or "").startswith(_CUDA):
            return True
        child, parent = parent, parents.get(parent)
    return False


def _called(call: ast.Call) -> str | None:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else \
        func.id if isinstance(func, ast.Name) else None


def _cuda_alone(fstring: ast.JoinedStr, value) -> bool:
    """An f-string that is `cuda:{...}` and nothing more: a device's name, not a message that
    mentions one (`f"stage 1 on cuda:{local_rank + 2}"`)."""
    parts = fstring.values
    return len(parts) == 2 and _text(parts[0]) == _CUDA and parts[1] is value


def _text(node) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _assigned_as_is(node, parents) -> bool:
    """A sum that is an assignment's value, or an entry of a tuple, list or dict that is."""
    parent = parents.get(node)
    if isinstance(parent, (ast.Tuple, ast.List)) or (isinstance(parent, ast.Dict)
                                                     and node in parent.values):
        node, parent = parent, parents.get(parent)
    return isinstance(parent, (ast.Assign, ast.AnnAssign)) and parent.value is node


# -- assignments ----------------------------------------------------------------------------------


def _assignments(statement) -> list[tuple[ast.expr, ast.expr]]:
    """(target, the value it gets) of an assignment statement: a name's or attribute's own part
    of a tuple assigned to several (`device0, device1 = a, b`), else the whole value."""
    if isinstance(statement, ast.Assign):
        targets, value = statement.targets, statement.value
    elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
        targets, value = [statement.target], statement.value
    else:
        return []
    return [pair for target in targets for pair in _paired(target, value)]


def _paired(target, value) -> list[tuple[ast.expr, ast.expr]]:
    if isinstance(target, (ast.Tuple, ast.List)):
        whole = not (isinstance(value, (ast.Tuple, ast.List))
                     and len(value.elts) == len(target.elts))
        return [pair for i, part in enumerate(target.elts)
                for pair in _paired(part, value if whole else value.elts[i])]
    return [(target, value)]


def _assigned_value(node, name: str, script: _Script) -> ast.expr | None:
    """The value (or its part) assigned to `name` that holds `node`."""
    statement = node
    while statement is not None and not isinstance(statement, ast.stmt):
        statement = script.parents.get(statement)
    return next((value for target, value in _assignments(statement)
                 if _last_name(target) == name and script.within(node, value)), None)


def _whole_value_of(node, name: str, script: _Script) -> bool:
    value = _assigned_value(node, name, script)
    return value is node


def _last_name(node) -> str | None:
    return node.id if isinstance(node, ast.Name) else \
        node.attr if isinstance(node, ast.Attribute) else None


# -- the edit as text -----------------------------------------------------------------------------


def _line_edit(script: _Script, node, code: str, at_line_start: bool = False
               ) -> tuple[str, str] | None:
    """(old, new): the node's line with the node's code replaced by `code`, as text that
    occurs once in the script: the line, or the line from its start ("\\n" before it:
    `at_line_start` tries that first), or with the lines before it where the line recurs. None
    where the parser's positions do not give back the node's code (a node split over lines)."""
    node_code = script.segment(node)
    if node_code is None or not _same_code(node_code, node):
        return None
    source, at = script.source, node.lineno - 1 - script.shift
    lines = source.splitlines(keepends=True)
    line = lines[at].encode("utf-8")   # the parser's columns count bytes
    changed = (line[:node.col_offset].decode("utf-8") + code
               + line[node.end_col_offset:].decode("utf-8"))
    for first in range(at, -1, -1):
        before = "".join(lines[first:at])
        old, new = (before + lines[at]).rstrip("\n"), (before + changed).rstrip("\n")
        tries = [("\n" + old, "\n" + new), (old, new)] if at_line_start else \
            [(old, new), ("\n" + old, "\n" + new)]
        for edit in tries:
            if source.count(edit[0]) == 1:
                return edit
    return None


def _code_with(script: _Script, value, node, added: str) -> str | None:
    """`value`'s code with `added` written right after `node`, a part of it on its line."""
    code = script.segment(value)
    if code is None or node.lineno != value.lineno:
        return None
    inside, at = code.encode("utf-8"), node.end_col_offset - value.col_offset
    return (inside[:at] + added.encode("utf-8") + inside[at:]).decode("utf-8")


def _same_code(code: str, node) -> bool:
    try:
        parsed = ast.parse(code.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return ast.dump(parsed) == ast.dump(node)
