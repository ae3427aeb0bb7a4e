"""HW3: Task 3 written in a script of its own, hw3/model_parallel.py left as the base code.

The handout's submission rules ask for "all modified scripts used in the homework" and never
name the file, but the course runs hw3/model_parallel.py, which is what the grader grades
(adv51 F2). A student who kept model_parallel.py as provided for Tasks 1-2 and wrote Tasks 3-5
in, say, hw3/model_parallel_task3.py had lost 3.5 points silently: the report never named that
script. The grader still does not run it (the handout does not say it is the one to run); the
failures of Tasks 3-5 wait for a person, who reads that script, and the student is told why.

The text only names the candidates: a class with Linear layers that asks
torch.cuda.device_count() (even a stub that never uses the count). Before anything is held, the
grader builds that script's model in the sandbox, as the probe builds hw3/model_parallel.py's,
on a node of SPREAD_GPUS GPUs (adv54: a stub beside the base code had turned Tasks 3-5's
automatic zero into work for the staff): only a model whose layers it puts on every GPU holds
the failures; otherwise the failure stands and says why the script was not taken for Task 3.

Nothing of the student's is imported here: the build runs in the probe's sandboxed process.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

from grader.harness.hw3_script_call import SCRIPT, classes_asking_for_gpus, classes_with_layers

# The checks whose failures wait for a person where such a script is there: Tasks 3-5's.
HELD_CHECKS = ("hw3.task3", "hw3.task4", "hw3.task5")
GRADED_BY_HAND = "hw3.task3_in_another_script"
# The node and model the other script's class is built for before its failures are held: more
# GPUs than the base code's two, and more layers than GPUs.
SPREAD_GPUS, SPREAD_DEPTH = 5, 10
SPREAD_PLAN = [{"part": "layouts", "gpus": [SPREAD_GPUS], "depths": [SPREAD_DEPTH], "dim": 16,
                "batch": 4}]


def spread_models_elsewhere(submission: Path) -> dict[str, list[str]]:
    """{file, as the student names it: [its classes with Linear layers that ask torch for the
    GPU count]} for each script in hw3/ beside SCRIPT that the script does not import (a
    helper module the script imports is graded through it), where SCRIPT itself never asks
    for the GPU count (the base code's fixed two-GPU split)."""
    script = submission / SCRIPT
    own = _text(script)
    if own is None or _spread_models(own):
        return {}
    imported = _imported_names(own)
    found = {}
    for path in sorted(script.parent.glob("*.py")):
        if path.name == script.name or path.stem in imported:
            continue
        classes = _spread_models(_text(path) or "")
        if classes:
            found[f"hw3/{path.name}"] = classes
    return found


def not_spread(records: list[dict], problem: str | None = None) -> str | None:
    """Why the probe's build of another script's model (SPREAD_PLAN's records) is not Task 3's
    spread model, None where it put a layer on every GPU; `problem`: why the probe's run
    stopped, where it did."""
    found = next((r for r in records if r.get("kind") == "layout"
                  and r.get("gpus") == SPREAD_GPUS and not r.get("skipped")), None)
    built = f"built by the grader with DEPTH={SPREAD_DEPTH} on {SPREAD_GPUS} GPUs"
    if found is None:
        failed = next((r.get("error") for r in records if isinstance(r.get("error"), dict)), None)
        why = (f"{failed.get('type')}: {failed.get('message')}" if failed
               else problem or "the grader's run of it stopped before building it")
        return f"its model could not be {built} ({why})"
    for key in ("error", "forward_error"):
        failed = found.get(key)
        if isinstance(failed, dict):
            return (f"its model, {built}, failed: {failed.get('type')}: "
                    f"{str(failed.get('message'))[:200]}")
    devices = [d for d in found.get("devices") or () if isinstance(d, str)]
    used = sorted({d for d in devices if d.startswith("cuda:")})
    if len(used) < min(SPREAD_GPUS, len(devices) or SPREAD_DEPTH):
        return (f"its model, {built}, put its layers on {', '.join(used) or 'no GPU'} only, "
                f"not on all {SPREAD_GPUS}")
    return None


def not_held_note(reasons: dict[str, str]) -> str:
    """What a Task 3-5 failure adds where another script looked like Task 3's but its model
    does not spread: why it was not held for a person."""
    return "".join(f"\nNot held for a person: {path} asks torch.cuda.device_count() in a model "
                   f"class, but {why}, so it is not taken for your Task 3 model."
                   for path, why in reasons.items())


def held_message(scripts: dict[str, list[str]]) -> str:
    """What the student (and the staff) read on a Task 3-5 check held for that reason."""
    named = "; ".join(f"{path} ({', '.join(classes)})" for path, classes in scripts.items())
    return (f"Held for the course staff: your Task 3 model is in another script, {named}, which "
            f"builds it over all GPUs, while {SCRIPT} (the script the course runs and the "
            "grader grades) keeps the base code's two-GPU split. The grader does not run other "
            "scripts; a person will grade Tasks 3-5 from that one. Next time, make the changes "
            f"in {SCRIPT} itself.")


def is_held(check: str | None) -> bool:
    return bool(check) and check.startswith(HELD_CHECKS)


def _spread_models(source: str) -> list[str]:
    """The classes a script defines that make Linear layers and ask torch for the GPU count."""
    return sorted(classes_with_layers(source) & classes_asking_for_gpus(source))


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _imported_names(source: str) -> set[str]:
    """The modules the script imports, by their last name (`from mp_utils import ...`)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set(re.findall(r"^\s*(?:from|import)\s+([\w.]+)", source, re.M))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[-1] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[-1])
    return names
