"""Progress on stderr: one live line on a terminal, plain log lines otherwise (CI, `2> log`),
and the summary of failures at the end."""
from __future__ import annotations

import shutil
import sys
import time
from dataclasses import dataclass, field
from typing import TextIO

MAX_SUMMARY_WARNINGS = 30


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


@dataclass
class Failure:
    key: str
    status: str       # timed_out, error or rejected
    message: str


@dataclass
class Progress:
    total: int
    workers: int = 1
    stream: TextIO = field(default_factory=lambda: sys.stderr)
    live: bool | None = None                   # None: live only when stream is a terminal
    graded: int = 0
    failed: int = 0                            # timed out or errored (retried next batch)
    rejected: int = 0                          # unusable upload, graded zero
    skipped: int = 0                           # unchanged since the last batch
    rescored: int = 0                          # of the graded: scores redone, no code run
    failures: list[Failure] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)   # repeated in the summary
    _durations: list[float] = field(default_factory=list)
    _started: float = field(default_factory=time.monotonic)

    def __post_init__(self):
        if self.live is None:
            self.live = bool(getattr(self.stream, "isatty", lambda: False)())

    @property
    def done(self) -> int:
        return self.graded + self.failed + self.rejected + self.skipped

    def eta_s(self) -> float | None:
        """Remaining submissions x mean grading time / workers (skips count as free)."""
        if not self._durations:
            return None
        mean = sum(self._durations) / len(self._durations)
        return (self.total - self.done) * mean / max(1, self.workers)

    def note(self, text: str) -> None:
        self._clear()
        print(text, file=self.stream, flush=True)
        self._draw()

    def warn(self, text: str) -> None:
        """Shown now and again in the summary: something the instructor must see."""
        self.warnings.append(text)
        self.note(f"warning: {text}")

    def finished(self, key: str, status: str, detail: str = "", duration_s: float | None = None) -> None:
        if status == "rescored":
            self.rescored += 1
            status = "graded"
        if status == "graded":
            self.graded += 1
        elif status == "skipped":
            self.skipped += 1
        elif status == "rejected":
            self.rejected += 1
        else:
            self.failed += 1
        if status in ("timed_out", "error", "rejected"):
            self.failures.append(Failure(key, status, detail))
        if duration_s is not None and status != "skipped":
            self._durations.append(duration_s)
        if self.live:
            self._draw()
        else:
            took = f" ({duration_s:.1f} s)" if duration_s is not None else ""
            first_line = detail.splitlines()[0] if detail else ""
            print(f"[{self.done}/{self.total}] {status} {key}{took}"
                  + (f": {first_line}" if first_line else ""), file=self.stream, flush=True)

    def line(self) -> str:
        eta = self.eta_s()
        rescored = f" ({self.rescored} re-scored)" if self.rescored else ""
        return (f"{self.done}/{self.total} done: {self.graded} graded{rescored}, {self.failed} failed, "
                f"{self.rejected} rejected, {self.skipped} skipped"
                f" | elapsed {_clock(time.monotonic() - self._started)}"
                + (f" | ETA {_clock(eta)}" if eta is not None and self.done < self.total else ""))

    def _draw(self) -> None:
        if self.live:
            width = shutil.get_terminal_size((100, 20)).columns - 1
            self.stream.write("\r\x1b[K" + self.line()[:width])
            self.stream.flush()

    def _clear(self) -> None:
        if self.live:
            self.stream.write("\r\x1b[K")

    def summary(self) -> str:
        lines = [self.line()]
        if self.failures:
            lines.append("Not graded normally:")
            for failure in sorted(self.failures, key=lambda f: (f.status, f.key)):
                message = " ".join(failure.message.split())
                lines.append(f"  {failure.key}: {failure.status.replace('_', ' ')}"
                             + (f" - {message[:300]}" if message else ""))
            if any(f.status in ("timed_out", "error") for f in self.failures):
                lines.append("Timed-out and errored submissions have no grade in grades.csv; "
                             "the next batch tries them again.")
        if self.warnings:
            lines.append("Warnings:")
            shown = self.warnings[:MAX_SUMMARY_WARNINGS]
            lines += [f"  {' '.join(w.split())}" for w in shown]
            if len(self.warnings) > len(shown):
                lines.append(f"  ... and {len(self.warnings) - len(shown)} more (above)")
        return "\n".join(lines)

    def close(self) -> None:
        self._clear()
        print(self.summary(), file=self.stream, flush=True)
