"""Where a Practical 10 script gives its second stage's device as the rank plus an offset, found
in its code wherever it is written, for Part 5's line change.

Part 5 says "Replace device1 = torch.device(f"cuda:{local_rank + 2}") with device1 =
torch.device(f"cuda:{local_rank}")". practical_measures.broken_layout_edit finds the handout's
line by its text (`device1 = ...`); a student who moved the choice elsewhere keeps the same sum
in another place: an attribute of the model (`self.devices["stage1"] = ...`), a dict or list of
devices, `.to(f"cuda:{local_rank + 2}")` on the stage itself, `torch.device("cuda",
local_rank + 2)` in a class (adv37 F7: `TwoStageModel(local_rank)` picking its own devices lost
0.75). This reads the code (never a comment or a printed message) for the one sum of the rank
and an offset that names a CUDA device, and drops the offset there, keeping the rank: the
handout's change, wherever it sits. Several such sums, or none, are no single change: None.
"""
from __future__ import annotations

import ast
from typing import Callable

# Calls whose arguments name a device: torch.device(...), torch.cuda.device(...), .to(...),
# .cuda(...).
_DEVICE_CALLS = {"device", "to", "cuda"}
_CUDA = "cuda:"


def offset_device_edit(source: str, names_the_rank: Callable[[str], bool]
                       ) -> tuple[str, str] | None:
    """(old text, new text) that drops the offset from the one sum `rank + offset` that names
    a CUDA device in the script's code; None where there is no such sum, or more than one.
    A sum in a device's place (an argument of torch.device() or .to(), `device=`, an f-string
    that is `cuda:{...}` alone, `"cuda:" + str(...)`, `"cuda:{}".format(...)`) comes first;
    only where there is none, a sum assigned as it is (`self.gpu1 = local_rank + 2`, an entry
    of a dict or tuple assigned) is the second stage's GPU number. `names_the_rank(text)`: the
    operand's code is the rank (`local_rank`, `self.local_rank`, a name assigned from it)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    placed, assigned = [], []
    for node in ast.walk(tree):
        kept = _rank_kept(node, source, names_the_rank)
        if kept is None:
            continue
        if _names_a_device(node, parents):
            placed.append((node, kept))
        elif _assigned_as_is(node, parents):
            assigned.append((node, kept))
    found = placed or assigned
    if len(found) != 1:
        return None
    return _line_edit(source, *found[0])


def _rank_kept(node, source: str, names_the_rank) -> ast.expr | None:
    """The operand a sum `rank + offset` keeps when the offset is dropped: the rank beside the
    handout's literal 2 (any name, as the handout's line has it), or the operand that is the
    rank beside another spelling of the offset (`world_size`, `torch.cuda.device_count() //
    2`); None for any other node."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add)):
        return None
    pairs = [(node.left, node.right), (node.right, node.left)]
    for rank, offset in pairs:
        if _is_two(offset) and isinstance(rank, (ast.Name, ast.Attribute)):
            return rank
    for rank, offset in pairs:
        if isinstance(rank, (ast.Name, ast.Attribute)) and _is_offset(offset) \
                and names_the_rank(ast.get_source_segment(source, rank) or ""):
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


def _names_a_device(node, parents) -> bool:
    """Whether the sum sits in a device's place, looking outwards to its statement."""
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


def _line_edit(source: str, node, kept) -> tuple[str, str] | None:
    """(old, new): the sum's line(s) with the sum replaced by the operand kept, as text that
    occurs once in the script (lines before it added where the line itself recurs, as the
    handout's line may in a comment). None where the parser's positions do not give back the
    sum's code (a sum split over lines)."""
    if node.lineno != node.end_lineno:
        return None
    lines = source.splitlines(keepends=True)
    line = lines[node.lineno - 1].encode("utf-8")   # the parser's columns count bytes
    sum_code = line[node.col_offset:node.end_col_offset].decode("utf-8", "replace")
    kept_code = ast.get_source_segment(source, kept)
    if not kept_code or not _same_code(sum_code, node):
        return None
    changed = (line[:node.col_offset].decode("utf-8") + kept_code
               + line[node.end_col_offset:].decode("utf-8"))
    first = node.lineno - 1
    while first >= 0:
        old = "".join(lines[first:node.lineno]).rstrip("\n")
        if source.count(old) == 1:
            before = "".join(lines[first:node.lineno - 1])
            return old, (before + changed).rstrip("\n")
        first -= 1
    return None


def _same_code(code: str, node) -> bool:
    try:
        parsed = ast.parse(code.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return ast.dump(parsed) == ast.dump(node)
