"""What a Python environment zipped with a project is, for the batch's unpacking and the
integrity scan alike.

A folder holding `pyvenv.cfg` (venv, virtualenv) or `conda-meta/` (conda) is an environment;
its own parts are the folders and files those tools make. Anything else in such a folder is
the student's: `python -m venv .` in the course folder puts bin/ and lib/ beside practical4/,
and the whole folder taken as the environment had hidden the student's code from the runs and
left it out of an upload over the limits (a red team, adv20).
"""
from __future__ import annotations

import os
from pathlib import Path

ENVIRONMENT_MARKS = ("pyvenv.cfg", "conda-meta")
# venv, virtualenv and conda, on Linux, macOS and Windows.
ENVIRONMENT_PARTS = frozenset({
    "pyvenv.cfg", "conda-meta", "bin", "Scripts", "lib", "lib64", "Lib", "include", "Include",
    "share", "etc", "libexec", "pkgs", "man", "ssl", "compiler_compat", "DLLs", "Library",
    "Tools", "libs", "condabin", "x86_64-conda-linux-gnu", "x86_64-conda_cos6-linux-gnu",
    "python.exe", "pythonw.exe", "python3.dll", "vcruntime140.dll", "LICENSE_PYTHON.txt"})


def is_environment(folder: Path) -> bool:
    return any(os.path.lexists(folder / mark) for mark in ENVIRONMENT_MARKS)


def environment_parts(folder: Path) -> list[Path]:
    """The environment's own parts in `folder`, in name order."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    return [folder / name for name in names if name in ENVIRONMENT_PARTS]
