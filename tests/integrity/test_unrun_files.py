"""Files no run can execute: a Python environment zipped with the project, the student's own
tests that nothing imports. They are masked in every run, and what they hold is a note for the
instructor, never a hold (a batch audit: honest uploads held for pip's code in `.venv/` and for a
test mocking torch.cuda.device_count; a dataset zip of 2100 images "could not be checked")."""
from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from grader.harness.execute import _hidden_paths
from grader.integrity.scan import TAMPERING, scan_submission

TEST_WITH_MOCK = """\
from unittest import mock

import torch

import concepts


def test_one_gpu_message(capsys):
    with mock.patch.object(torch.cuda, "device_count", return_value=1):
        concepts.main()
    assert "requires at least 2 GPUs" in capsys.readouterr().out
"""
HONEST = "import torch\n\nx = torch.ones(2)\n"
FORGER_IN_VENV = "import sys\nsys.modules['grader'] = None\nimport torch\ntorch.cuda.device_count = lambda: 8\n"


def _submission(tmp_path: Path, files: dict[str, str | bytes]) -> Path:
    root = tmp_path / "sub"
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return root


def _held(findings):
    return [f.describe() for f in findings if f.kind == TAMPERING]


def test_a_virtual_environment_is_hidden_from_the_runs_and_only_noted(tmp_path):
    root = _submission(tmp_path, {
        "practical4/concepts.py": HONEST, ".venv/pyvenv.cfg": "home = /usr/bin\n",
        ".venv/lib/python3.11/site-packages/pip/_internal/patch.py": FORGER_IN_VENV})
    findings = scan_submission(root)
    assert _held(findings) == []
    assert [(f.file, f.category) for f in findings] == [(".venv", "kept_out")]
    assert root / ".venv" / "lib" in _hidden_paths(root)


def test_a_test_module_nothing_imports_is_hidden_and_its_mock_only_noted(tmp_path):
    root = _submission(tmp_path, {"practical4/concepts.py": HONEST,
                                  "practical4/test_concepts.py": TEST_WITH_MOCK})
    findings = scan_submission(root)
    assert _held(findings) == [], _held(findings)
    noted = [f for f in findings if f.category == "kept_out"]
    assert noted and "a test module nothing imports" in noted[0].describe()
    assert root / "practical4" / "test_concepts.py" in _hidden_paths(root)


def test_a_test_module_that_is_imported_runs_and_is_scanned_as_any(tmp_path):
    root = _submission(tmp_path, {"practical4/concepts.py": "import test_concepts\n" + HONEST,
                                  "practical4/test_concepts.py": TEST_WITH_MOCK})
    assert any("patching" in f.category for f in scan_submission(root) if f.kind == TAMPERING)
    assert root / "practical4" / "test_concepts.py" not in _hidden_paths(root)


def _zip(names: list[str], content: bytes = b"x") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in names:
            archive.writestr(name, content)
    return buffer.getvalue()


def test_a_dataset_archive_of_many_files_is_no_hold_but_many_modules_are(tmp_path):
    images = _zip([f"images/{i}.png" for i in range(2100)])
    root = _submission(tmp_path, {"practical4/concepts.py": HONEST, "practical4/data.zip": images})
    assert _held(scan_submission(root)) == []
    modules = _zip([f"m{i}.py" for i in range(2100)], b"x = 1\n")
    root = _submission(tmp_path / "b", {"practical4/concepts.py": HONEST, "practical4/m.zip": modules})
    assert any("more than 2000 Python" in text for text in _held(scan_submission(root)))


def test_a_file_changed_between_runs_is_read_again(tmp_path):
    """Each file's imports are parsed once per version of it (every run of a grading asks)."""
    sub = _submission(tmp_path, {"practical4/concepts.py": HONEST,
                                 "practical4/test_concepts.py": TEST_WITH_MOCK})
    assert sub / "practical4" / "test_concepts.py" in _hidden_paths(sub)
    (sub / "practical4" / "concepts.py").write_text(HONEST + "import test_concepts\n")
    assert sub / "practical4" / "test_concepts.py" not in _hidden_paths(sub), \
        "concepts.py now imports the test module: it runs, and is no longer kept out"


@pytest.mark.parametrize("course", ["", "hw3/"])
def test_a_folder_made_a_venv_hides_the_environments_parts_only(tmp_path, course):
    """`python -m venv .` in the course folder (or in hw3/): bin/ and lib/ beside the student's
    code. The whole folder had been the environment: the code unread and hidden from the runs
    (a red team, adv20); a forgery in it is read and held like any."""
    root = _submission(tmp_path, {
        f"{course}pyvenv.cfg": "home = /usr/bin\n",
        f"{course}lib/python3.11/site-packages/pip/_internal/patch.py": FORGER_IN_VENV,
        "practical4/concepts.py": HONEST, "hw3/model_parallel.py": FORGER_IN_VENV})
    findings = scan_submission(root)
    assert {f.file for f in findings if f.kind == TAMPERING} == {"hw3/model_parallel.py"}, \
        [f.describe() for f in findings]
    hidden = _hidden_paths(root)
    assert root / course / "lib" in hidden and root / course / "pyvenv.cfg" in hidden
    assert root / "hw3" not in hidden and root / "hw3" / "model_parallel.py" not in hidden
