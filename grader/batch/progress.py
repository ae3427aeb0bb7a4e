"""A batch's progress on stderr, and the summary of what did not go normally at the end.

On a terminal: a live display drawn by rich (redrawn twice a second, so the clocks move):
what is done (graded, failed, rejected, skipped), the elapsed time and an ETA, every
submission being graded with how long it has been running, and the last scores; notes and
warnings scroll above it. Off a terminal (CI, `2> log`, a test's StringIO): plain lines, one per
finished submission with its score.
"""
from __future__ import annotations

import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TextIO

from grader.batch.printable import middle_shortened, printable

MAX_SUMMARY_WARNINGS = 30
LAST_SHOWN = 6           # finished submissions in the live display
RUNNING_SHOWN = 8        # running ones listed by name (the rest are counted)


# An upload left for a person by an earlier batch and unchanged since: settled without a
# grading, as a skipped one is, but not done with.
STILL_FOR_PERSON = "still_for_person"
# An upload an earlier batch rejected (a 0) and unchanged since: settled without a grading, but
# said with its reason, here and in the summary (adv45 F4: a resumed batch had said only
# "skipped", and the run that finished the class never named the 0).
STILL_REJECTED = "still_rejected"
# How a finished upload is said on its line, where its status is not said as it is.
WORDS = {"regraded": "re-graded", STILL_FOR_PERSON: "still for a person (unchanged)",
         STILL_REJECTED: "still rejected (unchanged)"}


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


@dataclass
class Failure:
    key: str
    status: str       # timed_out, error, rejected or needs_person
    message: str


@dataclass
class Progress:
    total: int
    workers: int = 1
    stream: TextIO = field(default_factory=lambda: sys.stderr)
    live: bool | None = None                   # None: live only when stream is a terminal
    graded: int = 0
    failed: int = 0                            # timed out or errored (retried next batch)
    rejected: int = 0                          # unusable upload (graded zero, or for a person)
    skipped: int = 0                           # unchanged since the last batch
    # Unchanged since the last batch and still needing a person (not among `skipped`: not done)
    still_for_person: int = 0
    # Unchanged since the last batch, which rejected it (not among `skipped`: said as a 0)
    still_rejected: int = 0
    rescored: int = 0                          # of the graded: scores redone, no code run
    regraded: int = 0                          # of the graded: graded before, run again (why said)
    needs_person: int = 0                      # of the rejected: nothing to grade found
    failures: list[Failure] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)   # repeated in the summary
    _durations: list[float] = field(default_factory=list)
    _started: float = field(default_factory=time.monotonic)
    _running: dict[str, float] = field(default_factory=dict)
    _last: deque = field(default_factory=lambda: deque(maxlen=LAST_SHOWN))
    _display: object = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self):
        if self.live is None:
            self.live = bool(getattr(self.stream, "isatty", lambda: False)())
        if self.live:
            from rich.console import Console
            from rich.live import Live
            console = Console(file=self.stream, force_terminal=True, highlight=False,
                              soft_wrap=False)
            self._display = Live(self, console=console, refresh_per_second=2, transient=True,
                                 redirect_stdout=False, redirect_stderr=False)
            self._display.start()

    @property
    def done(self) -> int:
        return (self.graded + self.failed + self.rejected + self.skipped + self.still_for_person
                + self.still_rejected)

    def eta_s(self) -> float | None:
        """Remaining submissions x mean grading time / workers (skips count as free)."""
        if not self._durations:
            return None
        mean = sum(self._durations) / len(self._durations)
        return (self.total - self.done) * mean / max(1, self.workers)

    def note(self, text: str) -> None:
        # Names from uploads are escaped where they enter messages (grader/batch/inputs.py);
        # nothing printed here drives the terminal whatever its source (its own lines kept).
        text = "\n".join(printable(line) for line in str(text).split("\n"))
        if self._display is not None:
            self._display.console.print(text, markup=False, highlight=False)
        else:
            print(text, file=self.stream, flush=True)

    def warn(self, text: str) -> None:
        """Shown now and again in the summary: something the instructor must see."""
        self.warnings.append(text)
        self.note(f"warning: {text}")

    def started(self, key: str) -> None:
        """A submission is handed to a worker (or a cluster job) now."""
        with self._lock:
            self._running[key] = time.monotonic()
        if self._display is not None:
            self._display.refresh()

    def finished(self, key: str, status: str, detail: str = "", duration_s: float | None = None,
                 score: str | None = None) -> None:
        """`score`: "17/20" for a graded submission, shown with it."""
        with self._lock:
            self._running.pop(key, None)
            shown = status
            if status == "rescored":
                self.rescored += 1
                status = "graded"
            elif status == "regraded":
                self.regraded += 1
                status = "graded"
            if status == "graded":
                self.graded += 1
            elif status == "skipped":
                self.skipped += 1
            elif status == STILL_FOR_PERSON:
                self.still_for_person += 1
            elif status == STILL_REJECTED:
                self.still_rejected += 1
            elif status in ("rejected", "needs_person"):
                self.rejected += 1
                self.needs_person += status == "needs_person"
            else:
                self.failed += 1
            if status in ("timed_out", "error", "rejected", "needs_person"):
                self.failures.append(Failure(key, status, detail))
            if status in (STILL_FOR_PERSON, STILL_REJECTED):
                self.failures.append(Failure(
                    key, "needs_person" if status == STILL_FOR_PERSON else "rejected",
                    "unchanged since the last batch" + (f": {detail}" if detail else "")))
            unchanged = ("skipped", STILL_FOR_PERSON, STILL_REJECTED)
            if duration_s is not None and status not in unchanged:
                self._durations.append(duration_s)
            if status not in unchanged:
                self._last.append((key, shown.replace("_", " "), score))
        if self._display is not None:
            self._display.refresh()
        else:
            took = f" ({duration_s:.1f} s)" if duration_s is not None else ""
            first_line = printable(detail.splitlines()[0]) if detail else ""
            word = WORDS.get(shown, status.replace('_', ' '))
            print(f"[{self.done}/{self.total}] {word} {key}{took}"
                  + (f": {score}" if score else "")
                  + (f" ({first_line})" if first_line and shown == "regraded" else "")
                  + (f": {first_line}" if first_line and status != "graded" else ""),
                  file=self.stream, flush=True)

    def line(self) -> str:
        eta = self.eta_s()
        again = [f"{count} {word}" for count, word in ((self.rescored, "re-scored"),
                                                      (self.regraded, "re-graded")) if count]
        rescored = f" ({', '.join(again)})" if again else ""
        # In the class page's words: an upload for a person is no rejection (no 0 is given).
        return (f"{self.done}/{self.total} done: {self.graded} graded{rescored}, {self.failed} failed, "
                f"{self._rejected()}, {self._for_a_person()}, "
                f"{self.skipped} skipped"
                f" | elapsed {_clock(time.monotonic() - self._started)}"
                + (f" | ETA {_clock(eta)}" if eta is not None and self.done < self.total else ""))

    def _rejected(self) -> str:
        """The uploads rejected (a 0), those rejected by an earlier batch and unchanged since
        among them."""
        new, still = self.rejected - self.needs_person, self.still_rejected
        if not still:
            return f"{new} rejected"
        if not new:
            return f"{still} rejected (unchanged)"
        return f"{new + still} rejected ({still} unchanged)"

    def _for_a_person(self) -> str:
        """The uploads that need a person, those left unchanged since the last batch among them:
        a skipped upload for a person still needs one (users28: "0 for a person, 1 skipped"
        while grades.csv and the class page still listed it)."""
        new, still = self.needs_person, self.still_for_person
        if not still:
            return f"{new} for a person"
        if not new:
            return f"{still} still for a person (unchanged)"
        return f"{new + still} for a person ({still} unchanged)"

    def __rich__(self):
        """The live display (rich calls this at every redraw)."""
        from rich.console import Group
        from rich.text import Text
        now = time.monotonic()
        with self._lock:
            running = sorted(self._running.items(), key=lambda item: item[1])
            last = list(self._last)
            header = self.line()
        parts = [Text(header, style="bold")]
        if running:
            shown = ", ".join(f"{key} {_clock(now - since)}" for key, since in running[:RUNNING_SHOWN])
            more = f" and {len(running) - RUNNING_SHOWN} more" if len(running) > RUNNING_SHOWN else ""
            parts.append(Text(f"running: {shown}{more}"))
        if last:
            parts.append(Text("last: " + ", ".join(
                f"{key} {score}" if score else f"{key} {status}" for key, status, score in last)))
        return Group(*parts)

    def summary(self) -> str:
        lines = [self.line()]
        if self.failures:
            lines.append("Not graded normally:")
            for failure in sorted(self.failures, key=lambda f: (f.status, f.key)):
                message = printable(" ".join(failure.message.split()))
                lines.append(f"  {failure.key}: {failure.status.replace('_', ' ')}"
                             + (f" - {middle_shortened(message, 300)}" if message else ""))
            if any(f.status in ("timed_out", "error") for f in self.failures):
                lines.append("Timed-out and errored submissions have no grade in grades.csv, "
                             "and the next batch tries them again, unless a grade of the same "
                             "files stays current (said with each).")
            if self.needs_person or self.still_for_person:
                lines.append("Uploads for a person (nothing the assignments expect was found, or "
                             "several versions) have no grade in grades.csv; index.html lists "
                             "them.")
        if self.warnings:
            lines.append("Warnings:")
            shown = self.warnings[:MAX_SUMMARY_WARNINGS]
            lines += [f"  {printable(' '.join(w.split()))}" for w in shown]
            if len(self.warnings) > len(shown):
                lines.append(f"  ... and {len(self.warnings) - len(shown)} more (above)")
        return "\n".join(lines)

    def stop(self) -> None:
        """End the live display (also when the batch stops on an error)."""
        if self._display is not None:
            self._display.stop()
            self._display = None

    def close(self) -> None:
        self.stop()
        print(self.summary(), file=self.stream, flush=True)
