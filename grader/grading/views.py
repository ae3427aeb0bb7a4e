"""What each assignment's runs see of a submission, and the fork servers that show it.

An upload holds every assignment's folder (as reference/ is laid out), and each assignment is
graded by running its own scripts. Its runs see its own folder, the files outside every
assignment's folder (shared helpers at the upload's root) and the folders of the assignments it
is judged with (grader/integrity/assignment_groups.py: linked by name or import in the source);
every other assignment's folder is an empty folder in their sandbox. A name computed at run time
(`"../practical" + str(5)`) reached practical5 from hw3's runs, while the scan judged practical5's
code apart from hw3's.

A fork server's sandbox is its runs' (grader/sandbox/forked_runs.py), so each view has its own
server: one per assignment where none links another. Each costs one import of torch (about 3.5 s
of CPU): the next assignment's server starts while the current one's checks run, and the first
assignment's starts with the scan, on the view of an upload whose assignments link none (the
usual one; a guess the scan corrects).
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

from grader.integrity.assignment_groups import folders_apart

View = frozenset   # of the folders hidden from a run: folders_apart's


def unlinked_view(submission: Path, assignment: str) -> View:
    """The view of `assignment` where no assignment links another."""
    return View(folders_apart(submission, assignment, []))


def views_of(submission: Path, assignments: Sequence[str],
             groups: list[frozenset[str]] | None) -> dict[str, View]:
    """{assignment: its view} (`groups`: the scan's, None where it did not finish)."""
    return {a: View(folders_apart(submission, a, groups)) for a in assignments}


class ViewServers:
    """The fork servers of one submission's gradings, one per view; `start(view, training)`
    returns a ForkServer or None (runs then start fresh). Call from the grading's main thread:
    a server's sandbox ends with the thread that started it."""

    def __init__(self, start: Callable[[View, bool], object]):
        self._start = start
        self._servers: dict[View, object] = {}

    def serve(self, view: View, training: bool):
        """The server of `view`, started now where it is not yet."""
        if view not in self._servers:
            self._servers[view] = self._start(view, training)
        return self._servers[view]

    def keep_only(self, views) -> None:
        """Close the servers of every other view."""
        for view in [v for v in self._servers if v not in set(views)]:
            server = self._servers.pop(view)
            if server is not None:
                server.close()

    def close(self) -> None:
        self.keep_only(())
