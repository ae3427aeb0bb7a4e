"""The checks process of each assignment reads traces and records; it runs no model. Importing
torch cost it about 2 CPU-seconds of every grading (Practical 10's checks process: 4 CPU-s
with torch, 1.9 without; HW3's likewise): it came in with a constant, a record's kind or event
name, read from a module of the runtime that imports torch for the run (issue 15)."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ASSIGNMENTS = ("hw3", "practical4", "practical5", "practical6", "practical10")

IMPORTS = """
import sys
import grader.checks.conftest
import grader.checks.test_{assignment}
print(sorted(name for name in sys.modules if name == "torch" or name.startswith("torch.")))
"""


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_checks_of_an_assignment_import_no_torch(assignment):
    done = subprocess.run([sys.executable, "-c", IMPORTS.format(assignment=assignment)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    imported = done.stdout.strip()
    assert imported == "[]", (
        f"expected the checks of {assignment} (grader/checks/test_{assignment}.py and what it "
        f"imports) to import no torch; observed {imported[:300]}. Look for a module of "
        "grader/vgpu that the checks import for a constant and that imports torch at its top: "
        "keep the constant in a module without torch (grader/vgpu/perturb_kinds.py) or import "
        "torch inside the functions the run calls (grader/vgpu/constructor_calls.py)")
