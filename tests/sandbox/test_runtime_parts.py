"""The sandbox binds only the grader's runtime parts (grader/harness/execute.py RUNTIME_PARTS):
every grader module that code inside a run imports must be among them, or the run fails with
"No module named ..." for every student (as the HW3 probe's launcher once did)."""
import ast
from pathlib import Path

from grader.harness.execute import RUNTIME_PARTS, runtime_parts

PACKAGE = Path(__file__).resolve().parents[2] / "grader"
# Imports in runtime files that run on the grader's side only, never inside a run.
HOST_SIDE = {("harness/hw3_recompute.py", "grader.sandbox"),
             # the bytecode cache is prepared by the grader, before any run
             ("common/bytecode.py", "grader.edition"), ("common/bytecode.py", "grader.sandbox")}


def module_file(name: str) -> Path | None:
    parts = name.split(".")[1:]
    if not parts:
        return PACKAGE / "__init__.py"
    relative = Path(*parts)
    for candidate in (PACKAGE / relative.with_suffix(".py"), PACKAGE / relative / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def imported_grader_modules(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                and node.module.split(".")[0] == "grader":
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names
                      if module_file(f"{node.module}.{a.name}")}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "grader"}
    return found


def test_every_grader_module_a_run_imports_is_bound():
    bound = runtime_parts()
    files = [p for part in bound for p in ([part] if part.is_file() else part.rglob("*.py"))]
    missing = []
    for path in files:
        where = path.relative_to(PACKAGE).as_posix()
        for name in imported_grader_modules(path):
            target = module_file(name)
            if target is None or (where, name) in HOST_SIDE:
                continue
            if not any(target == part or part in target.parents for part in bound):
                missing.append(f"{where} imports {name} ({target.relative_to(PACKAGE)})")
    assert not missing, ("grader modules imported inside a run but not in RUNTIME_PARTS "
                         "(grader/harness/execute.py):\n" + "\n".join(sorted(set(missing))))


def test_every_runtime_part_exists():
    assert [PACKAGE / part for part in RUNTIME_PARTS] == runtime_parts()
