"""`--record-file-costs PATH` (tests/conftest.py): each test file's seconds in this run, the
xdist worker that ran it and when it started and ended, kept up to date in PATH (JSON) as the
run goes.

`-n 2` hands out whole test files (loadfile), so the suite's wall time is the busier worker's
sum of files: this is what shows which files cost most, which worker each landed on, and
whether one worker sat idle while the other finished a long file. `--durations` gives tests,
not files, and only at the end: a run stopped by its timeout leaves nothing, where PATH keeps
the files done so far (written every WRITE_EVERY_S seconds and at the end).
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from grader.common.files import write_atomically

WRITE_EVERY_S = 10.0


class FileCosts:
    """A pytest plugin, registered where the reports arrive: the xdist controller, or the one
    process of a run without -n."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.began = time.time()
        self.files: dict[str, dict] = {}
        self.written_at = 0.0

    def pytest_runtest_logreport(self, report):
        name = report.nodeid.split("::", 1)[0]
        entry = self.files.setdefault(name, {"seconds": 0.0, "tests": 0, "worker": None,
                                             "started_s": None, "ended_s": None})
        entry["seconds"] = round(entry["seconds"] + report.duration, 2)
        if report.when == "call" or (report.when == "setup" and not report.passed):
            entry["tests"] += 1
        worker = getattr(getattr(report, "node", None), "gateway", None)   # xdist's controller
        if worker is not None:
            entry["worker"] = worker.id
        start, stop = getattr(report, "start", None), getattr(report, "stop", None)
        if start is not None and stop is not None:
            started, ended = round(start - self.began, 1), round(stop - self.began, 1)
            entry["started_s"] = started if entry["started_s"] is None \
                else min(entry["started_s"], started)
            entry["ended_s"] = max(entry["ended_s"] or 0.0, ended)
        if time.monotonic() - self.written_at >= WRITE_EVERY_S:
            self.write()

    def pytest_sessionfinish(self):
        self.write()

    def write(self) -> None:
        self.written_at = time.monotonic()
        ordered = sorted(self.files.items(), key=lambda pair: -pair[1]["seconds"])
        write_atomically(self.path, json.dumps(dict(ordered), indent=1) + "\n")
