"""What the student's code can see and touch inside the bubblewrap sandbox."""
import json
import os
import secrets
import socket
import sys
from pathlib import Path

import pytest

import grader
from grader.sandbox.bwrap import SANDBOX_UID

pytestmark = pytest.mark.usefixtures("bwrap")


def test_python_runs_and_output_comes_back(run_python, scratch):
    r = run_python("import os, sys; print('hello', os.getcwd()); print('oops', file=sys.stderr)")
    assert (r.returncode, r.sandboxed, r.backend) == (0, True, "bwrap")
    assert r.stdout == f"hello {scratch.resolve()}\n"
    assert r.stderr == "oops\n"
    assert not (r.timed_out or r.memory_exceeded or r.output_truncated)


def test_outer_environment_is_not_inherited(run_python, monkeypatch, scratch):
    monkeypatch.setenv("GRADER_SECRET_TOKEN", "s3cret")
    r = run_python("import os; print(sorted(os.environ))", env={"PYTHONPATH": "/x"})
    assert "GRADER_SECRET_TOKEN" not in r.stdout
    assert "'PYTHONPATH'" in r.stdout and "'HOME'" in r.stdout


@pytest.fixture
def listening_port():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    yield server.getsockname()[1]
    server.close()


CONNECT = """
import socket
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=3)
    print("connected")
except OSError as e:
    print("blocked", type(e).__name__)
"""


def test_network_is_unreachable(run_python, listening_port):
    r = run_python(CONNECT.format(port=listening_port))
    assert r.stdout.startswith("blocked"), r.stdout + r.stderr


def test_network_when_the_policy_allows_it(run_python, listening_port):
    # Shows the previous test is not passing because the probe itself is broken.
    r = run_python(CONNECT.format(port=listening_port), network=True)
    assert r.stdout == "connected\n", r.stdout + r.stderr


def test_a_folder_the_policy_does_not_name_is_absent(run_python, area):
    reference = area / "reference"
    reference.mkdir()
    (reference / "solution.py").write_text("ANSWER = 42\n")
    r = run_python(f"""
import os
for path in {[str(reference), str(reference / 'solution.py')]!r}:
    print(os.path.exists(path))
print(os.listdir({str(area)!r}))     # only the way to the scratch folder
try:
    open({str(reference / 'planted.py')!r}, "w"); print("wrote")
except OSError as e:
    print(type(e).__name__)
""")
    assert r.stdout == "False\nFalse\n['scratch']\nFileNotFoundError\n", r.stdout + r.stderr
    assert sorted(os.listdir(reference)) == ["solution.py"]


def test_hidden_folder_inside_a_bound_one_is_empty(run_python, area):
    submission = area / "submission"
    cache = submission / "__pycache__"
    cache.mkdir(parents=True)
    (cache / "model.cpython-311.pyc").write_bytes(b"smuggled")
    (submission / "model.py").write_text("A = 1\n")
    r = run_python(f"""
import os
print(sorted(os.listdir({str(submission)!r})), os.listdir({str(cache)!r}))
try:
    open({str(cache / 'planted.pyc')!r}, "w"); print("wrote")
except OSError as e:
    print(type(e).__name__)
""", readonly=[submission], hidden=[cache])
    assert r.stdout == "['__pycache__', 'model.py'] []\nOSError\n", r.stdout + r.stderr


def test_hidden_file_inside_a_bound_folder_cannot_be_read(run_python, area):
    folder = area / "submission"
    folder.mkdir()
    secret = folder / "token.txt"
    secret.write_text("hunter2")
    r = run_python(f"print(repr(open({str(secret)!r}).read()))", readonly=[folder], hidden=[secret])
    # /dev/null is bound over it on a nodev mount: opening it is refused.
    assert "hunter2" not in r.stdout + r.stderr
    assert "PermissionError" in r.stderr


def test_grader_package_cannot_be_written(run_python):
    target = Path(grader.__file__).parent / f"planted_{secrets.token_hex(4)}.py"
    r = run_python(f"""
try:
    open({str(target)!r}, "w").write("x"); print("wrote")
except OSError as e:
    print(e.strerror)
""", readonly=[Path(grader.__file__).parent])
    try:
        assert r.stdout == "Read-only file system\n", r.stdout + r.stderr
        assert not target.exists()
    finally:
        target.unlink(missing_ok=True)


def test_writes_outside_scratch_fail(run_python, area, scratch):
    # (Only /tmp, /dev and /dev/shm are writable besides: private tmpfs, gone after the run.)
    site_packages = Path(pytest.__file__).parents[1]
    outside = [area / "next_to_scratch.txt", Path("/etc/planted.txt"),
               Path.cwd() / "planted.txt", site_packages / "planted.pth"]
    r = run_python(f"""
for path in {[str(p) for p in outside]!r} + [{str(scratch / 'ok.txt')!r}]:
    try:
        open(path, "w").write("x"); print("wrote", path)
    except OSError as e:
        print("refused", path)
""")
    # A path under /tmp (a clone checked out there) lands in the sandbox's private /tmp: the
    # write "works" inside and vanishes with the run; everything else must be refused.
    on_host = [p for p in outside if not p.is_relative_to("/tmp")]
    assert all(f"refused {p}" in r.stdout for p in on_host), r.stdout + r.stderr
    assert f"wrote {scratch / 'ok.txt'}" in r.stdout
    assert (scratch / "ok.txt").read_text() == "x"
    assert not any(p.exists() for p in outside)


def test_results_file_cannot_be_planted(run_python, area):
    # Known attack: write (or pre-create) the results file, then crash so the grader
    # never overwrites it. The results folder is hidden and its tmpfs is read-only.
    results = area / "results"
    results.mkdir()
    results_json = results / "results.json"
    code = f"""
import json, os
try:
    os.makedirs({str(results)!r}, exist_ok=True)
    with open({str(results_json)!r}, "w") as f:
        json.dump({{"score": 100}}, f)
    print("planted", flush=True)
except OSError as e:
    print("refused", e.strerror, flush=True)
os._exit(1)
"""
    hidden = run_python(code, hidden=[results])
    merely_outside = run_python(code)  # not hidden, but not writable either
    assert hidden.stdout.startswith("refused"), hidden.stdout + hidden.stderr
    assert merely_outside.stdout.startswith("refused"), merely_outside.stdout
    assert not results_json.exists()


def test_symlink_in_scratch_cannot_reach_a_hidden_file(run_python, area, scratch):
    reference = area / "reference"
    reference.mkdir()
    (reference / "expected.pt").write_text("EXPECTED")
    (scratch / "planted_link").symlink_to(reference / "expected.pt")  # e.g. left by a previous run
    r = run_python(f"""
import os
for link in ["planted_link", "own_link"]:
    if link == "own_link":
        os.symlink({str(reference / 'expected.pt')!r}, link)
    try:
        print(link, open(link).read())
    except OSError as e:
        print(link, type(e).__name__)
""", hidden=[reference])
    assert r.stdout == "planted_link FileNotFoundError\nown_link FileNotFoundError\n", r.stdout + r.stderr


def test_symlink_in_scratch_cannot_write_outside(run_python, area, scratch):
    victim = area / "victim.txt"
    victim.write_text("original")
    (scratch / "link").symlink_to(victim)
    r = run_python("""
try:
    open("link", "w").write("overwritten"); print("wrote")
except OSError as e:
    print(e.strerror)
""")
    assert r.stdout == "Read-only file system\n"
    assert victim.read_text() == "original"


@pytest.mark.parametrize("code, expected", [
    ("import sys; sys.exit(3)", 3),
    ("import os; os._exit(0)", 0),
    ("import os; os._exit(7)", 7),
    ("raise SystemExit('bye')", 1),
    ("raise ValueError", 1),
    ("import os, signal; os.kill(os.getpid(), signal.SIGTERM)", 128 + 15),
])
def test_exit_codes_are_faithful(run_python, code, expected):
    r = run_python(code)
    assert r.returncode == expected
    assert not r.timed_out


def test_gpu_policy_binds_nvidia_devices_when_present(run_python):
    r = run_python("import glob; print(sorted(glob.glob('/dev/nvidia*')))", gpu=True)
    assert r.returncode == 0
    assert r.stdout == f"{sorted(str(p) for p in Path('/dev').glob('nvidia*'))}\n"


def test_host_tmp_is_not_visible(run_python, tmp_path):
    (tmp_path / "other_submission.py").write_text("x = 1")
    r = run_python(f"import os, json; print(json.dumps([os.path.exists({str(tmp_path)!r}), "
                   "sorted(os.listdir('/tmp'))]))")
    # Only mount points of what is bound back read-only (the grader itself, when this checkout
    # lives under /tmp) may appear in the private /tmp.
    grader_package = Path(__file__).resolve().parents[2] / "grader"
    allowed = {p.relative_to("/tmp").parts[0] for p in (grader_package, Path(sys.prefix))
               if p.is_relative_to("/tmp")}
    exists, listed = json.loads(r.stdout)
    assert not exists and set(listed) <= allowed, (
        f"expected no host folder in the private /tmp beyond {sorted(allowed)}; observed {listed}")


def test_cgroup_limits_cannot_be_raised_from_inside(run_python):
    # Without GPUs /sys is not there at all; with them it is bound read-only.
    absent = run_python("import os; print(os.path.exists('/sys/fs/cgroup'))")
    assert absent.stdout == "False\n", absent.stdout + absent.stderr
    r = run_python("""
import glob
names = ("pids.max", "memory.limit_in_bytes", "memory.max", "cgroup.procs")
files = [f for n in names for f in glob.glob(f"/sys/fs/cgroup/**/{n}", recursive=True)]
written = []
for f in files:
    try:
        open(f, "w").write("max"); written.append(f)
    except OSError:
        pass
print(len(files) > 0, written)
""", gpu=True)
    assert r.stdout == "True []\n", r.stdout + r.stderr


def test_the_run_is_an_unprivileged_user(run_python, area, scratch):
    # The uid inside, and, where the grader is root, on the host too: the files it writes are
    # SANDBOX_UID's, and a root-only file inside a folder it may read stays closed to it.
    folder = area / "submission"
    folder.mkdir()
    private = folder / "root_only.txt"
    private.write_text("for root's eyes")
    os.chmod(private, 0o600)
    r = run_python(f"""
import os
print(os.getuid(), os.getgid())
status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines())
print(status["CapEff"].strip(), status["CapBnd"].strip(), status["NoNewPrivs"].strip())
open("written.txt", "w").write("x")
try:
    print(open({str(private)!r}).read())
except OSError as e:
    print(type(e).__name__)
""", readonly=[folder])
    uid, caps, read = r.stdout.splitlines()
    assert uid == f"{SANDBOX_UID} {SANDBOX_UID}", r.stdout + r.stderr
    assert caps.split()[0] == "0" * 16 and caps.split()[2] == "1", caps
    if os.geteuid() == 0:
        assert (scratch / "written.txt").stat().st_uid == SANDBOX_UID
        assert read == "PermissionError", f"a root-only file was read from inside: {read}"
        assert caps.split()[1] == "0" * 16     # no capability can ever come back


def test_a_secret_in_the_environment_is_in_no_command_line(run_python):
    r = run_python("""
import glob, os
needle = b"s3cret" + b"-value"    # not spelled out: this code is itself a command line
found = [p for p in glob.glob("/proc/[0-9]*/cmdline") if needle in open(p, "rb").read()]
print(found, os.environ["TOKEN"])
""", env={"TOKEN": "s3cret-value"})
    assert r.stdout == "[] s3cret-value\n", r.stdout + r.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="the scratch folder is handed over only by root")
def test_a_scratch_folder_that_cannot_be_handed_over_is_opened_instead(run_python, scratch,
                                                                       monkeypatch):
    # Root squashed on NFS refuses chown: the run must still be able to write its scratch.
    import grader.sandbox.confined_run as confined_run

    def refuse(*args):
        raise PermissionError(1, "Operation not permitted")
    monkeypatch.setattr(confined_run.os, "chown", refuse)
    r = run_python("open('out.txt', 'w').write('ok'); print('wrote')")
    assert r.stdout == "wrote\n", r.stdout + r.stderr
    assert any("opened it to everyone instead" in w for w in r.warnings)


def test_private_tmp_is_writable_whatever_the_graders_import_path(run_python, tmp_path,
                                                                 monkeypatch):
    # A grader started from a folder under /tmp (a results folder, a pytest temporary folder)
    # has it on sys.path; bound read-only as part of "the Python runtime", it hid the run's
    # private /tmp: every student's tempfile or torch cache failed with a read-only /tmp, and
    # the host folder was shown to the run.
    from grader.sandbox import bwrap
    (tmp_path / "results.csv").write_text("student,points\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path), "/tmp", *sys.path])
    bwrap.runtime_roots.cache_clear()
    try:
        r = run_python("import os, tempfile\n"
                       "with tempfile.NamedTemporaryFile(dir='/tmp') as f: f.write(b'x')\n"
                       f"print(os.access('/tmp', os.W_OK), os.path.exists({str(tmp_path)!r}))")
    finally:
        bwrap.runtime_roots.cache_clear()
    assert r.stdout == "True False\n", (
        "expected a writable private /tmp and no host folder from the grader's sys.path inside "
        f"the sandbox; got stdout {r.stdout!r}, stderr {r.stderr[-500:]!r}")
