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

CHUNK = 65536
# After the child exits, how long pipes may stay open (held by an escaped grandchild,
# only possible in the unsandboxed fallback) before we stop reading them.
EXIT_GRACE_S = 0.5
POLL_S = 0.2


@dataclass
class CappedBuffer:
    limit: int
    data: bytearray = field(default_factory=bytearray)
    truncated: bool = False

    def add(self, chunk: bytes) -> None:
        room = self.limit - len(self.data)
        if room > 0:
            self.data += chunk[:room]
        if len(chunk) > room:
            self.truncated = True

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


@dataclass
class Captured:
    stdout: CappedBuffer
    stderr: CappedBuffer
    timed_out: bool


def capture(proc: subprocess.Popen, timeout_s: float, limit: int,
            kill: Callable[[], None]) -> Captured:
    """Drain both pipes until the child exits; call kill() once at the deadline."""
    out, err = CappedBuffer(limit), CappedBuffer(limit)
    deadline = time.monotonic() + timeout_s
    timed_out = False
    exited_at: float | None = None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ, out)
        sel.register(proc.stderr, selectors.EVENT_READ, err)
        while sel.get_map():
            now = time.monotonic()
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            if exited_at is None and now >= deadline:
                timed_out = True
                kill()
                proc.wait()
                exited_at = now = time.monotonic()
            if exited_at is not None and now - exited_at > EXIT_GRACE_S:
                break
            wait = EXIT_GRACE_S if exited_at is not None else min(POLL_S, deadline - now)
            for key, _ in sel.select(wait):
                chunk = os.read(key.fd, CHUNK)
                if chunk:
                    key.data.add(chunk)
                else:
                    sel.unregister(key.fileobj)
    if exited_at is None:
        # Both pipes closed while the child lives on: just wait for it.
        try:
            proc.wait(timeout=max(deadline - time.monotonic(), 0))
        except subprocess.TimeoutExpired:
            timed_out = True
            kill()
            proc.wait()
    proc.stdout.close()
    proc.stderr.close()
    return Captured(out, err, timed_out)
