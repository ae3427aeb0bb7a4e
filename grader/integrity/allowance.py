"""How much reading the scan may do for one Python file: work in proportion to its size.

The container reading (scopes.Containers) follows what a name can stand for through every
binding of it, transitively. Code whose variables all alias one another (a red team's adv34
F3: `v5 = T if c else v4`, thousands of times in one function) makes each variable stand for
all those before it: the reading grew with the square of the file (an 800 KB file took 330 s
and 3.9 GB in the grading process, which no memory limit covers; 2 MiB, the per-file limit,
would have taken about 35 minutes and 25 GB). Each step of that reading, each candidate it
copies out of a variable's remembered reading, each call read for what it hands a parameter
(a method's calls by its name: `m.forward(x)` in every function, for every class's forward)
and each candidate judged is counted here; past
WORK_PER_NODE steps per syntax node of the file (plus WORK_BASE) the reading stops and the file
is held for a person to read (source.scan_text). Homework and large honest files (a pasted
dataset, hundreds of functions) take a few tens of steps per node (benchmarks/scan_size.py).
"""
from __future__ import annotations

WORK_BASE = 1_000_000    # steps any file may take, however small (about a second at most)
WORK_PER_NODE = 50       # steps per syntax node beyond that


class ReadingTooLarge(Exception):
    """The file's readings spent its allowance."""

    def __init__(self, allowance: "Allowance"):
        super().__init__(f"{allowance.spent} steps of reading, past {allowance.limit} for "
                         f"{allowance.nodes} syntax nodes")
        self.allowance = allowance


class Allowance:
    """The steps of reading left to one file, shared by every reading of it."""

    def __init__(self, nodes: int):
        self.nodes = nodes
        self.limit = WORK_BASE + WORK_PER_NODE * nodes
        self.spent = 0

    def spend(self, steps: int = 1) -> None:
        self.spent += steps
        if self.spent > self.limit:
            raise ReadingTooLarge(self)
