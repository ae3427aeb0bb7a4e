"""Keep the grader's files out of reach of student code that runs without the sandbox.

Where bubblewrap cannot start (a container without user namespaces or CAP_SYS_ADMIN),
run_autograder runs student code as `nobody` (PDL_UNSANDBOXED_AS); then only file
permissions stand between it and the grader. This makes, for every user but the owner (root):
- the grader's source and virtual environment unwritable (no group/other write bit anywhere);
- rubrics/ (the staff's `guidance:` answers) and every part of grader/ that student code
  does not import (the checks, the integrity rules, scoring...) unreadable: the same parts
  the sandbox leaves out (grader/harness/execute.py RUNTIME_PARTS).

    python gradescope/lock_down.py SOURCE [VENV ...]

setup.sh runs it once on the image and run_autograder again on each submission (as root). It
leaves a git checkout (a developer's tree) as it is, unless --force.
"""
from __future__ import annotations

import ast
import os
import stat
import sys
from pathlib import Path

PRIVATE = ("rubrics",)     # folders of SOURCE no one but the owner reads


def runtime_parts(source: Path) -> tuple[str, ...]:
    """RUNTIME_PARTS, read (not imported: no grader import may fail or run here)."""
    tree = ast.parse((source / "grader" / "harness" / "execute.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "RUNTIME_PARTS"
                                                for t in node.targets):
            return tuple(ast.literal_eval(node.value))
    raise SystemExit("lock_down: RUNTIME_PARTS not found in grader/harness/execute.py")


def no_write_for_others(root: Path) -> int:
    changed = 0
    for folder, dirs, files in os.walk(root):
        for name in [".", *dirs, *files]:
            path = os.path.join(folder, name)
            mode = os.lstat(path).st_mode
            if not stat.S_ISLNK(mode) and mode & 0o022:
                os.chmod(path, stat.S_IMODE(mode) & ~0o022)
                changed += 1
    return changed


def private(path: Path) -> None:
    """Owner only, all the way down."""
    for folder, dirs, files in os.walk(path):
        os.chmod(folder, 0o700)
        for name in files:
            file = os.path.join(folder, name)
            if not os.path.islink(file):
                os.chmod(file, 0o600)
    if path.is_file():
        os.chmod(path, 0o600)


def lock_down(source: Path, venvs: list[Path]) -> list[str]:
    notes = []
    for root in [source, *venvs]:
        if root.is_dir():
            notes.append(f"{root}: {no_write_for_others(root)} entries made unwritable by others")
    for name in PRIVATE:
        if (source / name).exists():
            private(source / name)
            notes.append(f"{source / name}: owner only")
    keep = runtime_parts(source)
    package = source / "grader"
    hidden = []
    for path in sorted(package.rglob("*")):
        if path.is_symlink() or path.name == "__pycache__":
            continue
        if path.parent.name == "__pycache__":   # a module's bytecode goes with its source
            path_of = path.parent.parent / (path.name.split(".")[0] + ".py")
        else:
            path_of = path
        relative = path_of.relative_to(package).as_posix()
        # Kept: a runtime part, what is inside one, and the folders that lead to one.
        if any(relative == part or relative.startswith(part + "/") or part.startswith(relative + "/")
               for part in keep):
            continue
        if not any(path.is_relative_to(package / h) for h in hidden):
            hidden.append(relative)
            private(path)
    notes.append(f"{package}: owner only but {', '.join(keep)} ({len(hidden)} entries)")
    return notes


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--force"]
    if not args:
        sys.exit(__doc__)
    source = Path(args[0]).resolve()
    if (source / ".git").exists() and "--force" not in sys.argv:
        print(f"lock_down: {source} is a git checkout: its permissions left as they are (--force)")
        sys.exit(0)
    for line in lock_down(source, [Path(a) for a in args[1:]]):
        print(f"lock_down: {line}")
