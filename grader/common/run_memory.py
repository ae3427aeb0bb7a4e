"""How much memory one run of a student's code may use (`--memory` of `pdl-grade grade/batch`).

Every sandboxed run (and every run forked from a fork server) gets a memory cgroup of this size;
past it the kernel stops the run and its checks say it "used more memory than allowed". The
default suits the course's scripts on virtual GPUs with room to spare; an instructor grading on
a small machine lowers it so that workers x runs side by side x the limit fits in its memory.
The command line writes it into PDL_SANDBOX_MEMORY, which every process of the grading inherits
(the checks, the batch's workers, SLURM jobs with --export=ALL).
"""
from __future__ import annotations

import os
import re

RUN_MEMORY_ENV = "PDL_SANDBOX_MEMORY"
DEFAULT_RUN_MEMORY_BYTES = 6 * 2**30
# Below this not even `import torch` fits: a limit that low would fail every honest run.
LEAST_RUN_MEMORY_BYTES = 512 * 2**20
_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?\s*", re.IGNORECASE)


def parse_size(text: str) -> int:
    """Bytes of "6G", "512M", "1.5GiB", "4096MB" or "1073741824" (binary units, as `free -h`
    and SLURM's --mem read them). ValueError, saying what is accepted, for anything else or
    for a size too small for a run that imports torch."""
    found = _SIZE.fullmatch(str(text))
    if not found:
        raise ValueError(f"--memory {text!r}: expected a size such as 6G, 512M or 1.5GiB")
    size = int(float(found.group(1)) * _UNITS[found.group(2).upper()])
    if size < LEAST_RUN_MEMORY_BYTES:
        raise ValueError(f"--memory {text!r}: a run needs at least "
                         f"{LEAST_RUN_MEMORY_BYTES // 2**20}M (importing torch alone takes "
                         "several hundred MB)")
    return size


def run_memory_bytes(environ=os.environ) -> int:
    """The limit of this grading's runs: PDL_SANDBOX_MEMORY if set (by `--memory`), else the
    default. A value that does not parse is refused where it is set, so here it means the
    default."""
    text = environ.get(RUN_MEMORY_ENV)
    if not text:
        return DEFAULT_RUN_MEMORY_BYTES
    try:
        return parse_size(text)
    except ValueError:
        return DEFAULT_RUN_MEMORY_BYTES


def set_run_memory(text: str | None, environ=os.environ) -> None:
    """`--memory TEXT` of the command line: checked, then handed to every process of the
    grading. None leaves whatever the environment says."""
    if text is not None:
        environ[RUN_MEMORY_ENV] = str(parse_size(text))
