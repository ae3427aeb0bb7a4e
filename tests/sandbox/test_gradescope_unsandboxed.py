"""Where bubblewrap cannot start, gradescope/run_autograder runs student code as `nobody`
(PDL_UNSANDBOXED_AS) with the grader's files locked (gradescope/lock_down.py): a hostile
upload can neither rewrite the grader nor read the rubrics' staff guidance, and the output
says it ran without the sandbox. Needs root (as the grader runs on Gradescope)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import grader.sandbox.confined_run as runner
from grader.sandbox import SandboxPolicy, SandboxSetupError, run_sandboxed

REPO = Path(__file__).resolve().parents[2]
SYSTEM_PYTHON = "/usr/bin/python3"     # one `nobody` may run (not under /root)
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="drops privileges: needs root")


@pytest.fixture
def area():
    """A folder `nobody` may enter (pytest's own temporary folders are root's, mode 0700)."""
    folder = Path(tempfile.mkdtemp(prefix="pdl-gs-unsandboxed-", dir="/var/tmp"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def no_bwrap(monkeypatch):
    monkeypatch.setattr(runner, "sandbox_available", lambda: (False, "simulated: no userns"))


@needs_root
@pytest.mark.usefixtures("no_bwrap")
def test_the_fallback_drops_root_when_asked(area, monkeypatch):
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.skip(f"needs {SYSTEM_PYTHON}")
    grader_file, secret = area / "grader.py", area / "rubric.yaml"
    grader_file.write_text("GRADER = 1\n")
    secret.write_text("guidance: the model answer\n")
    secret.chmod(0o600)
    scratch = area / "scratch"
    scratch.mkdir(mode=0o700)
    monkeypatch.setenv(runner.UNSANDBOXED_AS_ENV, "nobody")
    code = (f"import os\nprint(os.getuid(), os.getgid(), os.getgroups())\n"
            f"for path, mode in (({str(grader_file)!r}, 'a'), ({str(secret)!r}, 'r')):\n"
            f"    try:\n        open(path, mode); print(path, 'opened')\n"
            f"    except PermissionError:\n        print(path, 'refused')\n"
            f"open('mine.txt', 'w').write('scratch is writable')\n")
    result = run_sandboxed([SYSTEM_PYTHON, "-c", code],
                           SandboxPolicy(writable=[scratch], timeout_s=30))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "65534 65534 []"
    assert lines[1:] == [f"{grader_file} refused", f"{secret} refused"]
    assert (scratch / "mine.txt").read_text() == "scratch is writable"
    assert grader_file.read_text() == "GRADER = 1\n"
    assert any(w.startswith("NOT SANDBOXED (simulated: no userns): ran as nobody (uid 65534)")
               for w in result.warnings)


@needs_root
@pytest.mark.usefixtures("no_bwrap")
def test_an_unknown_user_is_refused_not_root(area, monkeypatch):
    monkeypatch.setenv(runner.UNSANDBOXED_AS_ENV, "no-such-user-here")
    with pytest.raises(SandboxSetupError, match="no such user"):
        run_sandboxed(["/bin/true"], SandboxPolicy(writable=[area], timeout_s=30))


# ---------------------------------------------------------------------------------------------
# run_autograder end to end, as on an image whose container refuses bwrap's namespaces.

HOSTILE = '''
import os
_seen = []
try:
    with open({grader!r}, "a") as f:
        f.write("\\nimport json; json.dumps = lambda *a, **k: '{{\\"score\\": 15.0}}'\\n")
    _seen.append("append:DONE")
except OSError as e:
    _seen.append("append:" + type(e).__name__)
try:
    _seen.append("rubric:" + open({rubric!r}).read().replace("\\n", " ")[:300])
except OSError as e:
    _seen.append("rubric:" + type(e).__name__)
raise SystemExit("HOSTILE " + " ".join(_seen))
'''

# A private mount namespace where `nobody` may reach this interpreter: it lives under /root
# (mode 0700 here; Gradescope's is /autograder/venv), so /root becomes a tmpfs holding only it.
NAMESPACE = r'''
set -e
python_root=$1; shift
if [[ "$python_root" == /root/* ]]; then
  keep=$(mktemp -d); mount --bind "/root/${python_root#/root/}" "$keep"
  mount -t tmpfs -o mode=755 tmpfs /root; mkdir -p "$python_root"
  mount --bind "$keep" "$python_root"; umount -l "$keep"; rmdir "$keep"
fi
exec "$@"
'''


def _python_root() -> str:
    path = Path(sys.base_prefix).resolve()
    return str(path)


@needs_root
@pytest.mark.slow
def test_a_hostile_upload_is_held_where_bwrap_cannot_start(area):
    if shutil.which("unshare") is None or shutil.which("setpriv") is None:
        pytest.skip("needs util-linux's unshare and setpriv")
    source = area / "source"     # as unzipped by Gradescope: no .git, owned by root
    for name in ("grader", "rubrics", "student_template", "gradescope"):
        shutil.copytree(REPO / name, source / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    fake = area / "bin"
    fake.mkdir()
    (fake / "bwrap").write_text("#!/bin/sh\necho 'bwrap: Creating new namespace failed: "
                                "Operation not permitted' >&2\nexit 1\n")
    (fake / "bwrap").chmod(0o755)
    grader_file, rubric = source / "grader" / "__init__.py", source / "rubrics" / "practical4.yaml"
    before = grader_file.read_bytes()
    root = area / "autograder"
    (root / "submission").mkdir(parents=True)
    (root / "results").mkdir()
    for path in (REPO / "reference" / "practical4").iterdir():
        if path.suffix in (".py", ".yaml"):
            (root / "submission" / path.name).write_text(path.read_text())
    concepts = root / "submission" / "concepts.py"
    concepts.write_text(HOSTILE.format(grader=str(grader_file), rubric=str(rubric))
                        + concepts.read_text())
    (root / "submission_metadata.json").write_text(json.dumps(
        {"created_at": "2026-05-01T10:00:00.000000-07:00", "users": [{"name": "A"}]}))
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "PDL_GRADER_DIR": str(source),
           "PDL_PYTHON": sys.executable, "PDL_ASSIGNMENTS": "practical4",
           "PATH": f"{fake}{os.pathsep}{os.environ['PATH']}"}
    for name in ("PDL_GRADE", "PDL_UNSANDBOXED_AS", "PDL_LOCK_DOWN"):
        env.pop(name, None)
    done = subprocess.run(["unshare", "-m", "--propagation", "private", "bash", "-c", NAMESPACE,
                           "namespace", _python_root(), str(source / "gradescope" / "run_autograder")],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((root / "results" / "results.json").read_text())
    everything = json.dumps(results) + done.stdout
    assert grader_file.read_bytes() == before
    assert "guidance" not in everything and "append:DONE" not in everything
    # It did run, as nobody, and was refused.
    assert "append:PermissionError" in everything, everything[-3000:]
    assert "rubric:PermissionError" in everything
    assert results["score"] <= 9.5 and "15.0" not in str(results["score"])
    line = "NOT SANDBOXED: student code ran without bubblewrap's sandbox"
    assert results["output"].startswith(f"**{line}")       # the student's and the staff's view
    assert "as nobody" in results["extra_data"]["not_sandboxed"]
    assert line in done.stdout                               # Gradescope's stdout (staff)
    assert (root / "results").stat().st_mode & 0o077 == 0
    assert oct(rubric.parent.stat().st_mode & 0o777) == "0o700"
