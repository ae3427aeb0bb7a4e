"""`pdl-grade run` / `pdl-grade torchrun`: a script on a node of N GPUs (virtual ones where the
machine has fewer real ones)."""
from __future__ import annotations

import argparse
import sys


def _node_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gpus", type=int, default=2,
                        help="GPUs of the node (real ones are used when the machine has them)")
    parser.add_argument("--trace", metavar="FILE",
                        help="write the observations as JSON lines (docs/trace-format.md)")
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="NAME=VALUE",
                        help="run with a top-level constant of the script changed")
    parser.add_argument("--virtual", action="store_true",
                        help="use virtual GPUs even where real ones are present")
    parser.add_argument("--timeout", type=float, default=None, help="seconds before the run is killed")
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)


def add_parsers(sub) -> None:
    run = sub.add_parser("run", help="run a script as if on a node of N GPUs")
    _node_options(run)
    run.set_defaults(handler=run_on_node)
    torchrun = sub.add_parser("torchrun", help="torchrun a script on a node of N GPUs")
    torchrun.add_argument("--nproc-per-node", "--nproc_per_node", type=int, default=1)
    _node_options(torchrun)
    torchrun.set_defaults(handler=run_on_node)


def run_on_node(options) -> int:
    from grader.vgpu import launch
    if options.command == "torchrun":
        command = launch.torchrun_command(options.script, options.args, options.sets,
                                          options.nproc_per_node)
    else:
        command = launch.python_command(options.script, options.args, options.sets)
    env = launch.node_environment(options.gpus, options.trace, force_virtual=options.virtual)
    result = launch.run(command, env, trace=options.trace, timeout=options.timeout)
    if result.timed_out:
        print(f"pdl-grade: {options.script} did not finish in {options.timeout:g} s and was "
              "stopped", file=sys.stderr)
        return 124
    return result.returncode
