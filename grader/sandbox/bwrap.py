"""The bubblewrap command line for a SandboxPolicy, and whether bwrap works here.

Default deny: the sandbox's root is an empty read-only tmpfs, and only these are mounted in it:
- the system's programs and libraries: /usr (without /usr/local), the /bin, /lib... links, the
  library folders of the loader's configuration (/etc/ld.so.conf), a few loader and time-zone
  files of /etc, and an /etc/passwd, /etc/group and /etc/hosts written here;
- the Python runtime: the interpreter's prefixes and the folders it imports from (never the
  grader's checkout, nor a folder holding it);
- what the policy names: read-only paths (the submission, the grader's runtime parts) and
  writable ones (the run's scratch folder);
- a fresh /proc (the run's own pid namespace), a minimal /dev, private size-limited /tmp and
  /dev/shm; with `gpu=True` also /dev/nvidia*, /sys (read-only) and the CUDA library folders.
Home folders, other users' files, other uploads, the grader's reference/, rubrics/ and tests/,
/etc/shadow and everything else on the host are simply not there.

The run's user is unprivileged on the host, not only inside: where the grader runs as root,
bwrap runs without a user namespace (which would map the sandbox's user back to root, the
owner of root-only files) and `setpriv` drops to uid/gid SANDBOX_UID with no capabilities, no
supplementary groups and no_new_privs before the student's command starts; elsewhere bwrap's
user namespace maps the sandbox's user to the grader's own, unprivileged, user.

The run's environment reaches it through bwrap's own environment, never its command line:
/proc/1/cmdline is readable inside the sandbox, and the environment may carry a secret.
"""
from __future__ import annotations

import functools
import glob
import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

from .policy import SandboxPolicy

# Seen from inside (and, as root, also from outside) the student's code runs as "nobody".
SANDBOX_UID = 65534
SANDBOX_USER = "student"
GRADER_CHECKOUT = Path(__file__).resolve().parents[2]   # the folder holding grader/

_NAMESPACES = [
    "--die-with-parent",   # if the grader dies, the sandbox dies
    "--new-session",       # no TIOCSTI into the grader's terminal (CVE-2017-5226)
    "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
    "--hostname", "sandbox",
]
# Not root: a user namespace, every capability dropped, no further user namespaces (the route
# to regain mount rights).
_AS_USER = ["--unshare-user", "--disable-userns", "--cap-drop", "ALL",
            "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
# Root: no user namespace; keep only what setpriv needs to drop to SANDBOX_UID and clear the
# bounding set, and the right to enter the scratch folder (SANDBOX_UID's, mode 0700) for
# bwrap's --chdir; setpriv then drops them all.
_AS_ROOT = ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID",
            "--cap-add", "CAP_SETPCAP", "--cap-add", "CAP_DAC_READ_SEARCH"]
_DROP_TO_SANDBOX_USER = [f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_UID}", "--clear-groups",
                         "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]

# /bin, /lib... are links into /usr on merged-/usr systems, folders elsewhere.
_TOP_LEVEL = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
_ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "alternatives")
IDENTITY_FILES = {
    "/etc/passwd": f"root:x:0:0:root:/root:/usr/sbin/nologin\n"
                   f"{SANDBOX_USER}:x:{SANDBOX_UID}:{SANDBOX_UID}:sandboxed run:/tmp:/bin/sh\n",
    "/etc/group": f"root:x:0:\n{SANDBOX_USER}:x:{SANDBOX_UID}:\n",
    # gloo (torch.distributed) looks its own host name up.
    "/etc/hosts": "127.0.0.1 localhost sandbox\n::1 localhost ip6-localhost ip6-loopback\n",
}


def runs_as_root() -> bool:
    return os.geteuid() == 0


def setpriv_path() -> str | None:
    for candidate in ("/usr/bin/setpriv", "/bin/setpriv"):
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def _is_or_holds(path: Path, other: Path) -> bool:
    """`path` is `other` or one of its ancestors."""
    return path == other or other.is_relative_to(path)


def _library_folder(entry: str, prefixes: set[str]) -> bool:
    """An import folder of the installation (under a prefix, or a site-/dist-packages folder
    a .pth file or a module system added), not the grader's own script folder, working folder
    or PYTHONPATH: those may be anything (a results folder, /tmp itself, which bound read-only
    would hide the run's private /tmp)."""
    path = Path(entry).resolve()
    if any(path.is_relative_to(Path(prefix).resolve()) for prefix in prefixes):
        return True
    return any(part in ("site-packages", "dist-packages") for part in path.parts)


@functools.lru_cache(maxsize=1)
def runtime_roots() -> tuple[Path, ...]:
    """The Python installation and the folders it imports from, without the grader's checkout
    (reference/, rubrics/, tests/ live there) or a folder that holds it."""
    prefixes = {sys.base_prefix, sys.prefix, sys.exec_prefix, sys.base_exec_prefix}
    paths = set(site.getsitepackages() if hasattr(site, "getsitepackages") else [])
    if site.ENABLE_USER_SITE and site.getusersitepackages():
        paths.add(site.getusersitepackages())
    paths.update(p for p in sys.path if p and _library_folder(p, prefixes))
    found: list[Path] = []
    for raw in [*sorted(prefixes), *sorted(paths)]:
        path = Path(raw).resolve()
        if not path.is_dir() or path == Path("/"):
            continue
        if raw not in prefixes and (_is_or_holds(path, GRADER_CHECKOUT)
                                    or path.is_relative_to(GRADER_CHECKOUT)):
            continue
        found.append(path)
    found = sorted(set(found), key=lambda p: (len(p.parts), str(p)))
    return tuple(p for p in found if not any(p != q and p.is_relative_to(q) for q in found))


@functools.lru_cache(maxsize=1)
def library_dirs() -> tuple[Path, ...]:
    """The folders the dynamic loader searches (/etc/ld.so.conf and its includes)."""
    found: list[Path] = []
    seen: set[Path] = set()

    def read(conf: Path) -> None:
        if conf in seen:
            return
        seen.add(conf)
        try:
            lines = conf.read_text().splitlines()
        except OSError:
            return
        for line in lines:
            line = line.split("#", 1)[0].strip()
            if line.startswith("include "):
                for pattern in line.split()[1:]:
                    for match in sorted(glob.glob(pattern if pattern.startswith("/")
                                                  else str(conf.parent / pattern))):
                        read(Path(match))
            elif line.startswith("/"):
                path = Path(line).resolve()
                if path.is_dir() and path not in found:
                    found.append(path)
    read(Path("/etc/ld.so.conf"))
    return tuple(found)


class _Mounts:
    """bwrap's mount operations in order, with the folders they need created (0755, so the
    unprivileged user can pass through them) and hidden paths masked after every bind that
    would show them."""

    def __init__(self, hidden: list[Path]):
        self.args: list[str] = []
        self.hidden = hidden
        self.masks: list[Path] = []
        self.layers: list[tuple[Path, str]] = []   # later ones on top
        self._top: dict[Path, int] = {}           # a mount point -> its latest layer
        self._add_layer(Path("/"), "tmpfs")
        self.created: set[tuple[Path, int]] = set()

    def _add_layer(self, where: Path, kind: str) -> None:
        self._top[where] = len(self.layers)
        self.layers.append((where, kind))

    def _layer_of(self, path: Path) -> tuple[int, str, Path]:
        # The latest layer mounted on the path or a folder above it, looked up by each of those
        # folders: a scan of every layer per folder made thousands of masked environments (a
        # red team's 2,000 `pyvenv.cfg` folders) cost minutes per run.
        index = max((self._top.get(where, -1) for where in (path, *path.parents)), default=-1)
        if index < 0:
            return 0, "tmpfs", Path("/")
        where, kind = self.layers[index]
        return index, kind, where

    def _parents(self, dest: Path) -> None:
        for parent in reversed(dest.parents):
            index, kind, where = self._layer_of(parent)
            # Inside a bind the folder is there (binds mirror host paths); a mount point is too.
            if kind != "tmpfs" or parent == where or (parent, index) in self.created:
                continue
            self.created.add((parent, index))
            self.args += ["--perms", "0755", "--dir", str(parent)]

    def covered(self, path: Path) -> bool:
        return self._layer_of(path)[1] == "bind"

    def bind(self, source: Path, dest: Path | None = None, *, option: str = "--ro-bind") -> None:
        dest = dest or source
        self._parents(dest)
        self.args += [option, str(source), str(dest)]
        self._add_layer(dest, "bind")
        for path in self.hidden:
            if path != dest and path.is_relative_to(dest) and os.path.lexists(path):
                self.mask(path)

    def mask(self, path: Path) -> None:
        if path.is_dir():
            self._parents(path)
            self.args += ["--tmpfs", str(path)]
            self._add_layer(path, "tmpfs")
            self.masks.append(path)
        else:
            self.args += ["--ro-bind", "/dev/null", str(path)]

    def symlink(self, target: str, dest: Path) -> None:
        self._parents(dest)
        self.args += ["--symlink", target, str(dest)]

    def data(self, fd: int, dest: str) -> None:
        self._parents(Path(dest))
        self.args += ["--perms", "0644", "--ro-bind-data", str(fd), dest]


def _system(mounts: _Mounts, gpu: bool) -> None:
    for name in _TOP_LEVEL:
        path = Path("/", name)
        if path.is_symlink():
            mounts.symlink(os.readlink(path), path)
        elif path.is_dir():
            mounts.bind(path)
    mounts.bind(Path("/usr"))
    # /usr/local is the machine's own: software, sources, a course's files. Only its library
    # folders (below) and a Python installed there (runtime_roots) come back.
    if Path("/usr/local").is_dir():
        mounts.mask(Path("/usr/local"))
    extra = list(library_dirs())
    if gpu:
        extra += [Path(p).resolve() for p in sorted(glob.glob("/usr/local/cuda*"))]
    for path in [*extra, *runtime_roots()]:
        if path.is_dir() and not mounts.covered(path):
            mounts.bind(path)
    for name in _ETC_FILES:
        path = Path("/etc", name)
        if path.exists():
            mounts.bind(path.resolve() if path.is_symlink() else path, path)


def build_bwrap_argv(argv: list[str], policy: SandboxPolicy, cwd: Path,
                     data_fds: dict[str, int] | None = None, *, as_root: bool | None = None) -> list[str]:
    """`data_fds`: {path inside: an open fd to copy from} (IDENTITY_FILES, see confined_run)."""
    as_root = runs_as_root() if as_root is None else as_root
    setpriv = setpriv_path() if as_root else None
    bwrap = shutil.which("bwrap") or "bwrap"
    cmd = [bwrap, *_NAMESPACES, *(_AS_ROOT if setpriv else _AS_USER)]
    if policy.network:
        cmd.remove("--unshare-net")
    tmp_size = str(policy.tmpfs_bytes)
    cmd += ["--proc", "/proc", "--dev", "/dev",
            "--perms", "1777", "--size", tmp_size, "--tmpfs", "/tmp",
            "--perms", "1777", "--size", tmp_size, "--tmpfs", "/dev/shm"]
    if policy.gpu:
        for device in sorted(glob.glob("/dev/nvidia*")):
            cmd += ["--dev-bind", device, device]

    hidden = _resolved(policy.hidden)
    bound = _resolved([*policy.readonly, *policy.writable])
    if any(_is_or_holds(path, GRADER_CHECKOUT) for path in [*runtime_roots(), *bound]):
        hidden.append(GRADER_CHECKOUT)   # a runtime folder holds the checkout: mask it
    mounts = _Mounts(hidden)
    _system(mounts, policy.gpu)
    if policy.gpu and Path("/sys").is_dir():
        mounts.bind(Path("/sys"))
    for path in _resolved(policy.readonly):
        if path.exists():
            mounts.bind(path)
    for path in _resolved(policy.writable):
        mounts.bind(path, option="--bind")
    for dest, fd in sorted((data_fds or {}).items()):
        mounts.data(fd, dest)
    cmd += mounts.args
    # Last: bwrap could still create mount points inside them until now; not recursive, so
    # the binds inside keep their own mode.
    for path in [*mounts.masks, Path("/")]:
        cmd += ["--remount-ro", str(path)]
    cmd += ["--chdir", str(cwd), "--"]
    if setpriv:
        cmd += [setpriv, *_DROP_TO_SANDBOX_USER]
    return [*cmd, *argv]


def _resolved(paths) -> list[Path]:
    # Resolve outside, so a symlink cannot redirect a bind; keep order, drop repeats.
    return list(dict.fromkeys(Path(p).resolve() for p in paths))


@functools.lru_cache(maxsize=1)
def sandbox_available() -> tuple[bool, str]:
    """(True, version) when bwrap can build our sandbox here, else (False, why not)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return False, "bwrap not found (install the bubblewrap package)"
    probe = build_bwrap_argv(["true"], SandboxPolicy(), Path("/"))
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=20)
        version = subprocess.run([bwrap, "--version"], capture_output=True, text=True,
                                 timeout=20).stdout.strip()
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, f"bwrap could not be run: {e}"
    if done.returncode != 0:
        # Typical: user namespaces disabled (kernel.unprivileged_userns_clone=0,
        # AppArmor's restrict_unprivileged_userns) or a bwrap older than 0.8.
        return False, f"bwrap failed ({done.returncode}): {done.stderr.strip()}"
    if runs_as_root() and setpriv_path() is None:
        version += " (no setpriv: as root, the sandbox's user maps to root outside)"
    return True, version
