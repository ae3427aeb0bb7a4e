"""`python -m grader.vgpu.torchrun_launcher SCRIPT -- TORCHRUN_ARGS ...`: torchrun's agent (the
process that starts the ranks), for `pdl-grade torchrun`, whose failure names the script.

torchrun's own failure summary is a traceback through its code ending in a box titled with its
entry point, which under `pdl-grade torchrun` is grader/vgpu/run_on_node.py, not the student's
script. The ranks' tracebacks are printed above it already, so a failure ends here with one
short paragraph: the script, and each rank that failed with its exit code or signal.
"""
from __future__ import annotations

import signal
import sys


def failure_summary(script: str, failures: dict) -> str:
    """`failures`: torchrun's ChildFailedError.failures, global rank -> ProcessFailure."""
    lines = [f"pdl-grade torchrun: {script} failed:"]
    for rank, failure in sorted(failures.items()):
        lines.append(f"  rank {rank} (local rank {failure.local_rank}): "
                     f"{_ended(failure.exitcode)}")
    lines.append("The traceback of each failed rank is printed above.")
    return "\n".join(lines)


def _ended(code: int) -> str:
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def main(argv: list[str]) -> int:
    script, torchrun_args = argv[0], argv[argv.index("--") + 1:]
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.run import main as torchrun
    try:
        torchrun(torchrun_args)
    except ChildFailedError as failed:
        print(failure_summary(script, failed.failures), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
