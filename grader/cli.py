"""`pdl-grade`: run course scripts on real or virtual GPUs, and grade submissions."""
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pdl-grade", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a script as if on a node of N GPUs")
    _node_options(run)
    torchrun = sub.add_parser("torchrun", help="torchrun a script on a node of N GPUs")
    torchrun.add_argument("--nproc-per-node", "--nproc_per_node", type=int, default=1)
    _node_options(torchrun)
    from grader import grade_command
    from grader.batch import command as batch_command
    from grader.reports import command as report_command
    grade_command.add_parsers(sub)
    report_command.add_parsers(sub)
    batch_command.add_parsers(sub)
    return parser


def _run_on_node(options) -> int:
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


def main(argv: list[str] | None = None) -> int:
    options = build_parser().parse_args(argv)
    if options.command in ("run", "torchrun"):
        return _run_on_node(options)
    return options.handler(options)


if __name__ == "__main__":
    sys.exit(main())
