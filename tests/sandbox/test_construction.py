"""The bwrap command line and the cgroup v2 path, checked without running them."""
import sys
from pathlib import Path

from grader.sandbox import SandboxPolicy
from grader.sandbox.bwrap import build_bwrap_argv
from grader.sandbox.limits import create_run_cgroup


def test_environment_is_cleared_before_it_is_set(tmp_path):
    argv = build_bwrap_argv(["python", "x.py"], SandboxPolicy(writable=[tmp_path]),
                            {"HOME": str(tmp_path)}, tmp_path)
    # bwrap applies options in order: --setenv before --clearenv would be wiped.
    assert argv.index("--clearenv") < argv.index("--setenv")
    assert argv[-3:] == ["--", "python", "x.py"]
    for flag in ("--unshare-all", "--die-with-parent", "--new-session", "--disable-userns"):
        assert flag in argv
    assert "--share-net" not in argv


def test_hidden_folders_are_masked_before_readonly_paths_are_rebound(tmp_path):
    hidden, inner = tmp_path / "home", tmp_path / "home" / "python"
    inner.mkdir(parents=True)
    argv = build_bwrap_argv(["true"], SandboxPolicy(hidden=[hidden], readonly=[inner]), {}, Path("/"))
    masked = argv.index("--tmpfs", argv.index("/dev/shm"))
    assert argv[masked + 1] == str(hidden)
    rebound = [i for i, a in enumerate(argv) if a == "--ro-bind" and argv[i + 1] == str(inner)]
    assert rebound and rebound[0] > masked
    # The mask becomes read-only last, so a student cannot plant files in it.
    assert argv.index("--remount-ro") > rebound[0]
    # The interpreter stays reachable even under a hidden folder.
    assert str(Path(sys.base_prefix).resolve()) in argv


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


def test_cgroup_v2_without_delegation_warns(tmp_path):
    root, self_cgroup = _fake_v2(tmp_path)
    (root / "grader" / "cgroup.subtree_control").unlink()
    (root / "grader" / "cgroup.subtree_control").mkdir()  # unwritable, like EBUSY
    cgroup, warnings = create_run_cgroup(2**30, 64, root=root, self_cgroup=self_cgroup)
    assert any("PDL_SANDBOX_CGROUP_PARENT" in w for w in warnings)
    assert any("memory limit not enforced" in w for w in warnings)
