"""The batch says when torch's bytecode is missing or stale (grader/common/bytecode.py): every
sandboxed run reads torch from a read-only view and can write no .pyc of its own, so without
them each run compiles torch again (2.4x the CPU of its import on the 2-core machine)."""
from __future__ import annotations

import compileall
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from grader.common.bytecode import PROBES, torch_bytecode_warning


@pytest.fixture
def fake_torch(tmp_path) -> Path:
    folder = tmp_path / "torch"
    for name in PROBES:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("x = 1\n")
    return folder


def test_a_folder_without_bytecode_is_named_with_the_remedy(fake_torch):
    message = torch_bytecode_warning(fake_torch)
    assert message and str(fake_torch) in message and "compileall" in message, message
    assert all(name in message for name in PROBES), message


def test_compiled_bytecode_is_no_warning(fake_torch):
    assert compileall.compile_dir(str(fake_torch), quiet=1)
    assert torch_bytecode_warning(fake_torch) is None


def test_bytecode_of_an_edited_file_or_another_python_is_stale(fake_torch):
    compileall.compile_dir(str(fake_torch), quiet=1)
    edited = fake_torch / "_tensor.py"
    edited.write_text("x = 2  # edited after the install\n")
    os.utime(edited, (1_700_000_000, 1_700_000_000))
    other = Path(importlib.util.cache_from_source(str(fake_torch / "__init__.py")))
    other.write_bytes(b"\x00\x00\r\n" + other.read_bytes()[4:])       # another magic number
    message = torch_bytecode_warning(fake_torch)
    assert message and "_tensor.py" in message and "__init__.py" in message, message
    assert "module.py" not in message, message


def test_the_installed_torch_is_compiled():
    """pip compiles what it installs: the environment the suite runs in has no warning."""
    assert torch_bytecode_warning() is None


def test_the_batch_prints_the_warning_once(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    fake = tmp_path / "fake" / "torch"
    for name in PROBES:
        (fake / name).parent.mkdir(parents=True, exist_ok=True)
        (fake / name).write_text("x = 1\n")
    code = ("import sys; from pathlib import Path; import grader.common.bytecode as b; "
            f"real = b.torch_bytecode_warning; "
            f"b.torch_bytecode_warning = lambda folder=None: real(Path({str(fake)!r})); "
            "from grader.cli import main; sys.exit(main())")
    done = subprocess.run([sys.executable, "-c", code, "batch", str(subs), "--out", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("compiled bytecode is missing") == 1, done.stderr
