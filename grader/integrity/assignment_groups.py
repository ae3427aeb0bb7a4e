"""Which of a submission's files the scan judges together: each assignment's own.

A student hands in every assignment in one folder (as reference/ is laid out), and each
assignment is graded by running its own scripts. What the scan trusts in a file (the
student's own modules, objects and methods: own_objects.py, selves.py) rests on what the other
files that can run beside it may do, so a file is judged with the files that can run beside
it: those of its assignment's folder and those outside every assignment's folder (shared
helpers at the submission's root, its own tests). Another assignment's files join them only
where this assignment's files (or the shared ones) name that assignment's folder or import a
module only that assignment has (`sys.path.insert(0, "../practical5")`, `import p5_helper`):
then its code may run in this assignment's runs, and is judged with it. Otherwise honest code
in practical5 (a `type(e)` handed to traceback) took the trust from an honest method of hw3's
own and held hw3 for review.

A folder name computed from data (`"practical" + str(5)`) is not seen here, and so it reaches
nothing at run time either: each assignment's runs see its own folder, the shared files and the
folders of its group only (folders_apart: the other assignments' folders are hidden from its
sandbox, grader/grading/run.py), so what the scan judges together is all a run can read.
"""
from __future__ import annotations

import ast
import os
from pathlib import Path

from grader.integrity.findings import ASSIGNMENT_FOLDERS


def assignment_groups(files: list[Path], submission: Path, trees: dict[str, ast.AST],
                      linked: list[frozenset[str]] | None = None) -> list[list[Path]]:
    """The files judged together, one list per assignment present (a file outside every
    assignment's folder in each list); all files in one list where no file is in an assignment's
    folder. `trees`: the Python files' syntax trees by relative path (scan._python_trees);
    `linked`: linked_assignments of the same files, where already known."""
    by_assignment, shared = _by_assignment(files, submission)
    if not by_assignment:
        return [shared]
    if linked is None:
        linked = linked_assignments(files, submission, trees)
    return [[p for name in sorted(group) for p in by_assignment[name]] + shared
            for group in linked]


# Assignments whose grading runs another's script, whatever the student's source says:
# Practical 6's Part 6 compares DDP with "your Practical 5 code" (grader/checks/
# test_practical6.py DP_SCRIPT runs practical5/practical5_dp.py), so practical5's code runs in
# practical6's runs, is judged with it, and stays in its view (hidden, Part 6 had told every
# student "your Practical 5 did not train" and taken any answer about DataParallel: adv44 F3).
GRADED_WITH = {"practical6": ("practical5",)}


def linked_assignments(files: list[Path], submission: Path,
                       trees: dict[str, ast.AST]) -> list[frozenset[str]]:
    """The assignments whose files run together (assignment_groups), by folder name, sorted."""
    by_assignment, shared = _by_assignment(files, submission)
    modules = {name: _module_names(paths, submission) for name, paths in by_assignment.items()}
    shared_modules = _module_names(shared, submission)
    shared_reach = _reach(shared, submission, trees)
    shared_links = _linked_folders(submission, submission, skip=set(by_assignment))
    linked = {name: set() for name in by_assignment}
    for name, paths in by_assignment.items():
        names, imported = _reach(paths, submission, trees)
        names |= shared_reach[0] | shared_links | _linked_folders(submission / name, submission)
        imported |= shared_reach[1]
        for other in by_assignment:
            only_there = modules[other] - modules[name] - shared_modules
            if other != name and (other in names or imported & only_there
                                  or other in GRADED_WITH.get(name, ())):
                linked[name].add(other)
                linked[other].add(name)
    joined = {frozenset(_closure(name, linked)) for name in by_assignment}
    return sorted(joined, key=sorted)


def folders_apart(submission: Path, assignment: str,
                  groups: list[frozenset[str]] | None) -> list[Path]:
    """The assignment folders of `submission` hidden from `assignment`'s runs: every one but its
    own and those of its group (`groups`: linked_assignments). None hidden where `groups` is None:
    the scan did not finish, so its points are held for a person, who reads all of it. A link
    named like an assignment's folder stays: hiding it would hide the folder it points to, and
    the groups already join the folder it points to with every assignment."""
    if groups is None:
        return []
    seen = next((group for group in groups if assignment in group), frozenset())
    return [submission / name for name in ASSIGNMENT_FOLDERS
            if name != assignment and name not in seen
            and (submission / name).is_dir() and not (submission / name).is_symlink()]


def _by_assignment(files: list[Path], submission: Path
                   ) -> tuple[dict[str, list[Path]], list[Path]]:
    """({assignment: its files}, the shared files: those outside every assignment's folder)."""
    by_assignment: dict[str | None, list[Path]] = {}
    for path in files:
        by_assignment.setdefault(_assignment_of(path, submission), []).append(path)
    shared = by_assignment.pop(None, [])
    return by_assignment, shared


def _assignment_of(path: Path, submission: Path) -> str | None:
    parts = path.relative_to(submission).parts
    return parts[0] if len(parts) > 1 and parts[0] in ASSIGNMENT_FOLDERS else None


def _module_names(paths: list[Path], submission: Path) -> set[str]:
    """The names the files may be imported by at the top of sys.path: each module's stem and
    each package folder's name."""
    names = set()
    for path in paths:
        if path.suffix == ".py":
            names.add(path.stem)
            names |= set(path.relative_to(submission).parts[1:-1])
    return names


def _reach(paths: list[Path], submission: Path,
           trees: dict[str, ast.AST]) -> tuple[set[str], set[str]]:
    """(the assignment folders the files name anywhere in their text, the top-level modules
    they import), an archive's modules' included. A file with no tree cannot run (not valid
    Python), or is held unread."""
    named, imported = set(), set()
    for tree in trees_of(paths, submission, trees).values():
        # its names and its strings, not its comments or docstrings (a bare string runs nothing)
        words = []
        remarks = {id(node.value) for node in ast.walk(tree)
                   if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}
        for node in ast.walk(tree):
            if id(node) in remarks:
                continue
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                imported.add(node.module.split(".")[0])
                imported |= {alias.name for alias in node.names}
            words += [str(value) for value in _words(node)]
        text = "\n".join(words)
        named |= {folder for folder in ASSIGNMENT_FOLDERS if folder in text}
    return named, imported


def _words(node: ast.AST) -> list:
    """What of a node may spell a folder's name: a string, a name, an attribute, an import."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
        return [node.value]
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, ast.ImportFrom):
        return [node.module or ""] + [alias.name for alias in node.names]
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    return []


def trees_of(paths: list[Path], submission: Path,
             trees: dict[str, ast.AST]) -> dict[str, ast.AST]:
    """The syntax trees of these files, and of the modules of these archives (named under the
    archive's path: "hw3/lib.zip/helper.py")."""
    names = {p.relative_to(submission).as_posix() for p in paths}
    return {name: tree for name, tree in trees.items()
            if any("/".join(name.split("/")[:end]) in names
                   for end in range(1, name.count("/") + 2))}


def _linked_folders(folder: Path, submission: Path, skip: set[str] = frozenset()) -> set[str]:
    """The assignment folders that symlinks in `folder` point into (`hw3/lib -> ../practical5`
    makes practical5's modules importable as hw3's `lib`; the scan never follows the link), the
    folders named in `skip` (of the submission's top) not searched."""
    found = set()
    for root, dirs, names in os.walk(folder, followlinks=False):
        if Path(root) == submission:
            dirs[:] = [d for d in dirs if d not in skip]
        for name in dirs + names:
            path = Path(root) / name
            if not path.is_symlink():
                continue
            try:
                parts = path.resolve().relative_to(submission.resolve()).parts
            except (OSError, ValueError, RuntimeError):
                continue   # outside the submission: the sandbox shows nothing there
            # (a link to the submission itself reaches every assignment's folder)
            found |= set(ASSIGNMENT_FOLDERS) if not parts else {parts[0]}
    return found & set(ASSIGNMENT_FOLDERS)


def _closure(start: str, linked: dict[str, set[str]]) -> set[str]:
    seen, stack = {start}, [start]
    while stack:
        for other in linked[stack.pop()] - seen:
            seen.add(other)
            stack.append(other)
    return seen
