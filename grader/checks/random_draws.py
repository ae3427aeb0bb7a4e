"""Which random generator a script draws its tensors from, read from its source without running it.

`torch.randn(..., device="cuda")` draws on the GPU, from that GPU's generator;
`torch.randn(...).cuda()` (or `.to(device)`) draws on the CPU, from the CPU's generator, and
copies. With the same `torch.manual_seed(SEED)` the two give other numbers, so two scripts that
draw their data the two ways train on different data (a TA's audit 30, D2: Practical 5's
DataParallel script against the single-GPU one).
"""
from __future__ import annotations

import ast
from pathlib import Path

# torch's functions that draw random tensors (the course's scripts draw with randn).
DRAWS = frozenset({"randn", "rand", "randint", "randperm", "normal"})
GPU, CPU = "the GPU's generator", "the CPU's generator"


def _is_draw(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in DRAWS)


def _on_cpu(device: ast.AST) -> bool:
    return isinstance(device, ast.Constant) and isinstance(device.value, str) \
        and device.value.startswith("cpu")


def generators(path: Path, max_bytes: int = 200_000) -> set[str]:
    """GPU and/or CPU: where the script's random draws happen (empty when none is seen, or
    the file cannot be read as Python)."""
    try:
        if not path.is_file() or path.stat().st_size > max_bytes:
            return set()
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return set()
    found, moved = set(), set()
    for node in ast.walk(tree):
        # torch.randn(...).cuda() / .to(...): drawn on the CPU, then copied.
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("cuda", "to") and _is_draw(node.func.value):
            found.add(CPU)
            moved.add(id(node.func.value))
    for node in ast.walk(tree):
        if not _is_draw(node) or id(node) in moved:
            continue
        device = next((k.value for k in node.keywords if k.arg == "device"), None)
        if device is not None and not _on_cpu(device):
            found.add(GPU)
    return found
