"""The bwrap command line and the cgroup v2 path, checked without running them."""
import sys
from pathlib import Path

import pytest

import grader.sandbox.bwrap as bwrap
from grader.sandbox import SandboxPolicy
from grader.sandbox.bwrap import GRADER_CHECKOUT, SANDBOX_UID, build_bwrap_argv
from grader.sandbox.limits import create_run_cgroup


def binds(argv: list[str], option: str = "--ro-bind") -> list[str]:
    """The destinations of every `option SRC DEST` in argv."""
    return [argv[i + 2] for i, a in enumerate(argv) if a == option]


@pytest.mark.parametrize("as_root", [True, False])
def test_isolation_flags_and_the_user(tmp_path, as_root):
    argv = build_bwrap_argv(["python", "x.py"], SandboxPolicy(writable=[tmp_path]), tmp_path,
                            as_root=as_root)
    for flag in ("--unshare-pid", "--unshare-net", "--unshare-ipc", "--die-with-parent",
                 "--new-session"):
        assert flag in argv
    assert argv[-2:] == ["python", "x.py"]
    if as_root:
        # No user namespace (it would map the sandbox's user back to root): setpriv drops to
        # an unprivileged uid on the host, with every capability gone, before the command.
        assert "--unshare-user" not in argv
        setpriv = argv.index("--") + 1
        assert argv[setpriv].endswith("setpriv")
        assert argv[setpriv + 1:setpriv + 7] == [
            f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_UID}", "--clear-groups",
            "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"]
    else:
        assert {"--unshare-user", "--disable-userns"} <= set(argv)
        assert argv[argv.index("--uid") + 1] == str(SANDBOX_UID)
        assert argv[argv.index("--cap-drop") + 1] == "ALL" and "--cap-add" not in argv


def test_the_environment_never_goes_on_the_command_line(tmp_path):
    # /proc/1/cmdline (bwrap's argv) is readable inside: a secret in --setenv would be too.
    argv = build_bwrap_argv(["true"], SandboxPolicy(writable=[tmp_path], env={"TOKEN": "s3cret"}),
                            tmp_path)
    assert "--setenv" not in argv and "s3cret" not in " ".join(argv)


def test_default_deny_mounts_only_the_system_the_runtime_and_the_policy(tmp_path):
    submission, scratch = tmp_path / "submission", tmp_path / "scratch"
    submission.mkdir()
    scratch.mkdir()
    argv = build_bwrap_argv(["true"], SandboxPolicy(readonly=[submission], writable=[scratch]),
                            scratch, {"/etc/passwd": 7})
    assert "/" not in binds(argv)                       # no host root: an empty tmpfs
    assert argv[argv.index("--remount-ro", argv.index("--chdir") - 4):].count("/") >= 1
    mounted = set(binds(argv)) | set(binds(argv, "--bind"))
    assert {"/usr", str(submission), str(Path(sys.base_prefix).resolve())} <= mounted
    assert binds(argv, "--bind") == [str(scratch)]
    assert argv[argv.index("--tmpfs", argv.index("/usr")) + 1] == "/usr/local"
    # Nothing of the home folders, /etc (but the loader's files), /opt, /srv, /var, /work.
    for place in ("/home", "/root", "/etc", "/etc/shadow", "/opt", "/srv", "/var", "/mnt"):
        assert place not in mounted
    assert all(not m.startswith("/etc/") or m.split("/")[2] in bwrap._ETC_FILES
               for m in mounted)
    # The grader's checkout is never bound as a whole (reference/, rubrics/, tests/).
    assert all(not GRADER_CHECKOUT.is_relative_to(m) for m in mounted if m != "/")
    # /etc/passwd comes from memory, readable by the unprivileged user.
    at = argv.index("--ro-bind-data")
    assert argv[at - 2:at + 3] == ["--perms", "0644", "--ro-bind-data", "7", "/etc/passwd"]


def test_folders_leading_to_a_bind_are_made_passable(tmp_path):
    # bwrap copies the mode of the host's folders (/root is 0700): the unprivileged user
    # could not reach a Python under /root without --perms 0755 --dir on each one.
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    argv = build_bwrap_argv(["true"], SandboxPolicy(readonly=[deep]), Path("/"))
    bound = argv.index(str(deep))
    for folder in [*reversed(deep.parents)][1:]:
        made = [i for i in range(len(argv) - 1) if argv[i] == "--dir" and argv[i + 1] == str(folder)]
        assert made and made[0] < bound and argv[made[0] - 2:made[0]] == ["--perms", "0755"]


def test_hidden_paths_inside_a_bind_are_masked_after_it(tmp_path):
    submission = tmp_path / "submission"
    cache = submission / "hw3" / "__pycache__"
    cache.mkdir(parents=True)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    argv = build_bwrap_argv(["true"], SandboxPolicy(readonly=[submission], hidden=[cache, outside]),
                            Path("/"))
    bound = argv.index(str(submission))
    masked = argv.index(str(cache))
    assert argv[masked - 1] == "--tmpfs" and masked > bound
    assert argv.index("--remount-ro", masked) > masked     # and made read-only last
    assert str(outside) not in argv                       # not bound: nothing to mask


def test_a_runtime_folder_holding_the_checkout_gets_it_masked(tmp_path, monkeypatch):
    # E.g. a Python installed in a folder that also holds the grader's checkout.
    monkeypatch.setattr(bwrap, "runtime_roots", lambda: (GRADER_CHECKOUT.parent,))
    part = GRADER_CHECKOUT / "grader" / "vgpu"
    argv = build_bwrap_argv(["true"], SandboxPolicy(readonly=[part]), Path("/"))
    holder = argv.index(str(GRADER_CHECKOUT.parent))
    mask = [i for i, a in enumerate(argv) if a == str(GRADER_CHECKOUT) and argv[i - 1] == "--tmpfs"]
    assert mask and mask[0] > holder
    assert argv.index(str(part)) > mask[0]                 # the runtime part comes back on top


def test_gpu_policy_binds_devices_sys_and_cuda_libraries(tmp_path, monkeypatch):
    # No GPU here: the device list is faked; the argv is what a GPU machine gets.
    devices = ["/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia-caps", "/dev/nvidiactl",
               "/dev/nvidia-uvm"]
    real_glob = bwrap.glob.glob
    monkeypatch.setattr(bwrap.glob, "glob", lambda pattern: devices if pattern == "/dev/nvidia*"
                        else real_glob(pattern))
    with_gpu = build_bwrap_argv(["true"], SandboxPolicy(gpu=True), Path("/"))
    without = build_bwrap_argv(["true"], SandboxPolicy(gpu=False), Path("/"))
    assert binds(with_gpu, "--dev-bind") == sorted(devices)
    assert "/sys" in binds(with_gpu) and "/sys" not in binds(without)
    assert binds(without, "--dev-bind") == []
    for cuda in map(str, sorted(Path("/usr/local").glob("cuda*"))):
        assert str(Path(cuda).resolve()) in binds(with_gpu)


def _fake_v2(tmp_path: Path) -> tuple[Path, Path]:
    """A directory that looks like a cgroup v2 mount, with us in /grader."""
    root = tmp_path / "cgroup"
    (root / "grader").mkdir(parents=True)
    (root / "cgroup.controllers").write_text("cpu memory pids\n")
    (root / "grader" / "cgroup.subtree_control").write_text("\n")
    self_cgroup = tmp_path / "self_cgroup"
    self_cgroup.write_text("0::/grader\n")
    return root, self_cgroup


def test_cgroup_v2_limits_and_events(tmp_path, monkeypatch):
    root, self_cgroup = _fake_v2(tmp_path)
    # A real cgroupfs creates the control files on mkdir; fake that.
    real_mkdir = Path.mkdir

    def mkdir_with_controls(self, *a, **k):
        real_mkdir(self, *a, **k)
        for name in ("memory.max", "memory.swap.max", "pids.max", "cgroup.procs"):
            (self / name).write_text("max\n")
    monkeypatch.setattr(Path, "mkdir", mkdir_with_controls)

    cgroup, warnings = create_run_cgroup(256 * 2**20, 64, root=root, self_cgroup=self_cgroup)
    assert warnings == []
    d = cgroup.dirs["unified"]
    assert d.parent == root / "grader"
    assert (root / "grader" / "cgroup.subtree_control").read_text() == "+memory +pids"
    assert (d / "memory.max").read_text() == str(256 * 2**20)
    assert (d / "memory.swap.max").read_text() == "0"
    assert (d / "pids.max").read_text() == "64"
    assert cgroup.procs_files == [d / "cgroup.procs"]

    assert (cgroup.memory_exceeded(), cgroup.pids_exceeded()) == (False, False)
    (d / "memory.events").write_text("low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\n")
    (d / "pids.events").write_text("max 1937\n")
    assert (cgroup.memory_exceeded(), cgroup.pids_exceeded()) == (True, True)
    (d / "cgroup.threads").write_text("12\n13\n")
    assert cgroup.threads() == [12, 13]


def test_cgroup_v2_without_delegation_warns(tmp_path):
    root, self_cgroup = _fake_v2(tmp_path)
    (root / "grader" / "cgroup.subtree_control").unlink()
    (root / "grader" / "cgroup.subtree_control").mkdir()  # unwritable, like EBUSY
    cgroup, warnings = create_run_cgroup(2**30, 64, root=root, self_cgroup=self_cgroup)
    assert any("PDL_SANDBOX_CGROUP_PARENT" in w for w in warnings)
    assert any("memory limit not enforced" in w for w in warnings)


def test_the_layer_a_path_is_in_is_the_latest_mounted_on_it_or_above(tmp_path):
    """Layers are looked up by the path's own folders (a red team's 2,000 masked environments
    had cost minutes of scans per run): the same answer as a scan of every layer."""
    def scanned(layers, path):
        for index in range(len(layers) - 1, -1, -1):
            where, kind = layers[index]
            if path == where or path.is_relative_to(where):
                return index, kind, where
        return 0, "tmpfs", Path("/")
    mounts = bwrap._Mounts([])
    for where, kind in [("/sub", "bind"), ("/sub/a", "tmpfs"), ("/sub/a/b", "bind"),
                        ("/sub", "tmpfs"), ("/other", "bind"), ("/sub/a", "bind")]:
        mounts._add_layer(Path(where), kind)
    for path in ["/", "/sub", "/sub/a", "/sub/a/b/c", "/sub/x", "/other/y", "/elsewhere/z",
                 "/sub/a/b"]:
        assert mounts._layer_of(Path(path)) == scanned(mounts.layers, Path(path)), path


def test_thousands_of_hidden_environments_are_each_masked_once(tmp_path):
    submission = tmp_path / "submission"
    hidden = []
    for i in range(2000):
        environment = submission / "e" / f"v{i}"
        environment.mkdir(parents=True)
        hidden.append(environment)
    argv = build_bwrap_argv(["true"], SandboxPolicy(readonly=[submission], hidden=hidden),
                            Path("/"))
    masked = [argv[i + 1] for i, a in enumerate(argv) if a == "--tmpfs"]
    assert sorted(set(masked) & {str(h) for h in hidden}) == sorted(str(h) for h in hidden)
    assert all(masked.count(str(h)) == 1 for h in hidden[:50])
