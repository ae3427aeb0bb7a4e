"""Read a child's stdout and stderr up to a cap, while enforcing the wall timeout.

One selector loop instead of reader threads: nothing is ever buffered past the cap
(the rest is read and dropped so the child never blocks on a full pipe), and the
loop can give up on pipes that a stray process keeps open after the child exited.
"""
from __future__ import annotations

import os
import selectors
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .clock import RunClock

CHUNK = 65536
# After the child exits, how long pipes may stay open (held by an escaped grandchild,
# only possible in the unsandboxed fallback) before we stop reading them.
EXIT_GRACE_S = 0.5
POLL_S = 0.1


@dataclass
class CappedBuffer:
    """The first half of `limit` bytes and the last half: what a script prints when it ends (a
    count, a final time) survives a flood before it. A TA's Gradescope trial: 10 MB printed
    first, and the Task 5 line printed last had been dropped and called never printed."""
    limit: int
    data: bytearray = field(default_factory=bytearray)
    truncated: bool = False
    tail: bytearray = field(default_factory=bytearray)
    dropped: int = 0

    def add(self, chunk: bytes) -> None:
        head = self.limit - self.limit // 2
        room = head - len(self.data)
        if room > 0:
            self.data += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self.truncated = True
        self.tail += chunk
        over = len(self.tail) - self.limit // 2
        if over > 0:
            del self.tail[:over]
            self.dropped += over

    def text(self) -> str:
        if not self.truncated:
            return self.data.decode("utf-8", errors="replace")
        cut = (f"\n[pdl-autograder: {self.dropped} bytes of output left out here: a run keeps "
               f"the first {len(self.data)} and the last {len(self.tail)} bytes]\n"
               if self.dropped else "")
        return (self.data.decode("utf-8", errors="replace") + cut
                + self.tail.decode("utf-8", errors="replace"))


@dataclass
class Captured:
    stdout: CappedBuffer
    stderr: CappedBuffer
    timed_out: bool
    stopped: bool = False        # killed because `watch` said so


def capture(proc: subprocess.Popen, timeout_s: float, limit: int,
            kill: Callable[[], None], watch: Callable[[], bool] | None = None,
            clock: RunClock | None = None) -> Captured:
    """Drain both pipes until the child exits; call kill() once `clock` (default: real time)
    reaches `timeout_s`, or as soon as `watch()` (asked about every POLL_S while the child
    runs) returns True."""
    out, err = CappedBuffer(limit), CappedBuffer(limit)
    clock = clock or RunClock()
    timed_out = stopped = False
    exited_at: float | None = None
    watched_at = time.monotonic()
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ, out)
        sel.register(proc.stderr, selectors.EVENT_READ, err)
        while sel.get_map():
            now = time.monotonic()
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            if exited_at is None and watch is not None and now - watched_at >= POLL_S:
                watched_at = now
                if watch():
                    stopped = True
                    kill()
                    proc.wait()
                    exited_at = now = time.monotonic()
            if exited_at is None and clock.tick() >= timeout_s:
                timed_out = True
                kill()
                proc.wait()
                exited_at = now = time.monotonic()
            if exited_at is not None and now - exited_at > EXIT_GRACE_S:
                break
            wait = EXIT_GRACE_S if exited_at is not None else min(POLL_S, max(0.0, timeout_s - clock.used))
            for key, _ in sel.select(wait):
                chunk = os.read(key.fd, CHUNK)
                if chunk:
                    key.data.add(chunk)
                else:
                    sel.unregister(key.fileobj)
    while exited_at is None:
        # Both pipes closed while the child lives on: wait for it, still watching.
        try:
            proc.wait(timeout=max(min(POLL_S, timeout_s - clock.used), 0))
            exited_at = time.monotonic()
        except subprocess.TimeoutExpired:
            if clock.tick() >= timeout_s or (watch is not None and watch()):
                timed_out = clock.used >= timeout_s
                stopped = not timed_out
                kill()
                proc.wait()
                exited_at = time.monotonic()
    proc.stdout.close()
    proc.stderr.close()
    return Captured(out, err, timed_out, stopped)
