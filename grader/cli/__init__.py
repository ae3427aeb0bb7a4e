"""`pdl-grade`: run course scripts on real or virtual GPUs, and grade submissions.

Each subcommand is a module here that only parses its arguments and calls the stage it
stands for (grader/grading, grader/batch, grader/reports, grader/vgpu).
"""
from __future__ import annotations

import argparse
import sys

from grader.cli import batch, check, grade, node, report
from grader.edition import STUDENT_KIT


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pdl-grade", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for command in (node, check, grade, report, *(() if STUDENT_KIT else (batch,))):
        command.add_parsers(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    options = build_parser().parse_args(argv)
    return options.handler(options)


if __name__ == "__main__":
    sys.exit(main())
