"""A run's writable folders from the outside: what they hold, and removing them afterwards
whatever the run did to them (folders made unwritable, thousands of files, planted links,
folders nested deeper than Python's recursion limit or than PATH_MAX).

Neither follows a link. `usage` walks without recursion and counts a path too long to open
as over the limit (only a hostile run nests that deep); `remove_tree` falls back to
coreutils' `rm`, which removes any depth.
"""
from __future__ import annotations

import errno
import os
import shutil
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

# A run that makes more entries than this in its scratch is stopped like one that writes too
# many bytes: walking them is work on the trusted side.
MAX_ENTRIES = 100_000


@dataclass
class Usage:
    bytes: int = 0
    entries: int = 0

    def over(self, limit_bytes: int) -> bool:
        return self.bytes > limit_bytes or self.entries > MAX_ENTRIES


def usage(folders: Iterable[Path], stop_at: int | None = None) -> Usage:
    """Bytes on disk (allocated blocks) and entries under `folders`; stops counting once the
    bytes pass `stop_at` or the entries pass MAX_ENTRIES (the caller only needs "over")."""
    found = Usage()
    stack = [str(f) for f in folders]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as scan:
                for entry in scan:
                    found.entries += 1
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    found.bytes += max(info.st_blocks * 512, 0)
                    if stat.S_ISDIR(info.st_mode):
                        stack.append(entry.path)
                    if (stop_at is not None and found.bytes > stop_at) or found.entries > MAX_ENTRIES:
                        return found
        except OSError as error:
            if error.errno == errno.ENAMETOOLONG:
                found.entries = MAX_ENTRIES + 1
                return found
            continue
    return found


def remove_tree(path: Path) -> None:
    """Remove `path` and everything in it; folders the run made unwritable or unreadable are
    opened up first (needed where the grader is not root). Never follows a link."""
    path = Path(path)
    if not os.path.lexists(path):
        return
    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
        return

    def open_up_and_retry(function, failed, _info):
        for target in (os.path.dirname(failed), failed):
            try:
                if not os.path.islink(target):
                    os.chmod(target, 0o700)
            except OSError:
                pass
        try:
            function(failed)
        except OSError:
            pass

    try:
        os.chmod(path, 0o700)
        shutil.rmtree(path, onerror=open_up_and_retry)
    except (OSError, RecursionError):
        pass
    if os.path.lexists(path):   # deeper than Python walks: coreutils walks any depth
        subprocess.run(["chmod", "-R", "u+rwX", str(path)], capture_output=True)
        subprocess.run(["rm", "-rf", "--one-file-system", "--", str(path)], capture_output=True)
