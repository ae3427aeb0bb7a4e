"""Where a Practical 5 script prints the batch each replica gets (Part 4's "Inside model on
device {x.device}, shape: {x.shape}"), in words for the feedback. The template prints it inside
MLP.forward; a student's script may have no MLP class (an nn.Sequential with a forward
pre-hook that prints: a red team's adv41 F6 was told "printed inside MLP.forward" of it).
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

from grader.common.ast_parents import ast_parents

# A print of a tensor's device and size: the lines that show the split.
_DEVICE = re.compile(r"device", re.I)
_SIZE = re.compile(r"shape|size\(|len\(", re.I)
_HOOKS = {"register_forward_pre_hook": "a forward pre-hook", "register_forward_hook": "a forward hook"}


def split_print_site(path: Path) -> str | None:
    """"inside MLP.forward", "inside show_split, a forward pre-hook on model[0]", ...: the
    function the script prints a tensor's device and shape from; None where no function does
    (only the training loop prints it, or the script cannot be read)."""
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return None
    parents = ast_parents(tree)
    sites = [_function_of(node, parents) for node in ast.walk(tree) if _prints_a_split(node)]
    functions = sorted((f for f in sites if f is not None), key=lambda f: f.lineno)
    # The model's own forward or a hook on it first: the print the question means.
    hooks = _hooks(tree)
    chosen = next((f for f in functions if f.name == "forward" or f.name in hooks),
                  functions[0] if functions else None)
    if chosen is None:
        return None
    owner = parents.get(chosen)
    name = f"{owner.name}.{chosen.name}" if isinstance(owner, ast.ClassDef) else chosen.name
    return f"inside {name}" + (f", {hooks[chosen.name]}" if chosen.name in hooks else "")


def _prints_a_split(node: ast.AST) -> bool:
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "print"):
        return False
    said = " ".join(ast.unparse(argument) for argument in node.args)
    return bool(_DEVICE.search(said) and _SIZE.search(said))


def _function_of(node: ast.AST, parents: dict) -> ast.FunctionDef | None:
    while node in parents:
        node = parents[node]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return node
    return None


def _hooks(tree: ast.AST) -> dict[str, str]:
    """{function name: "a forward pre-hook on model[0]"} for each function the script
    registers as a hook of a module."""
    found = {}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in _HOOKS and node.args and isinstance(node.args[0], ast.Name)):
            found.setdefault(node.args[0].id, f"{_HOOKS[node.func.attr]} on "
                                              f"{ast.unparse(node.func.value)}")
    return found
