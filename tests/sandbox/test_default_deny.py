"""Default deny, seen from inside: a submission that walks the whole filesystem and opens
every file it finds gets nothing but the system's programs and libraries, the Python runtime,
the grader's runtime parts, its own files and its scratch folder. It runs with the policy the
harness builds for every run of student code (grader/harness/execute.py)."""
import json
import os
import secrets
import shutil
import sys
from pathlib import Path

import pytest

from grader.harness.execute import runtime_parts, run_command
from grader.sandbox.bwrap import GRADER_CHECKOUT, IDENTITY_FILES, library_dirs, runtime_roots

pytestmark = [pytest.mark.usefixtures("bwrap"), pytest.mark.slow]

WALKER = r'''
import json, os, sys
readable, unreadable = [], 0
for folder, dirs, files in os.walk("/"):
    if folder in ("/proc", "/sys", "/dev"):      # the kernel's views, not files
        dirs[:] = []
        continue
    for name in files + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
        path = os.path.join(folder, name)
        try:
            with open(path, "rb") as handle:
                handle.read(1)
            readable.append(path)
        except OSError:
            unreadable += 1
with open(sys.argv[1], "w") as out:
    json.dump({"readable": readable, "unreadable": unreadable,
               "top": sorted(os.listdir("/")), "uid": os.getuid()}, out)
'''


@pytest.fixture
def canaries(tmp_path_factory):
    """Files a submission must never see: in home folders, /opt, /etc, /srv, /usr/local, beside
    the uploads; each holds a token that must not come back."""
    token = secrets.token_hex(6)
    places = [Path("/root") / f"pdl-canary-{token}.txt",
              Path("/home") / f"pdl-canary-user-{token}" / "notes.txt",
              Path("/opt") / f"pdl-canary-{token}" / "reference_copy.py",
              Path("/srv") / f"pdl-canary-{token}.txt",
              Path("/etc") / f"pdl-canary-{token}.conf",
              Path("/usr/local/share") / f"pdl-canary-{token}" / "solution.py"]
    made = []
    for path in places:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"CANARY {token}\n")
            made.append(path)
        except OSError:
            pass              # a place this user cannot write is one less to check
    yield token, made
    for path in made:
        path.unlink(missing_ok=True)
        if path.parent.name.startswith("pdl-canary"):
            shutil.rmtree(path.parent, ignore_errors=True)


def test_a_walk_of_everything_finds_only_what_the_run_may_see(canaries, area):
    token, planted = canaries
    uploads = area / "uploads"
    submission, other = uploads / "alice", uploads / "bob"
    for who in (submission, other):
        (who / "hw3").mkdir(parents=True)
        (who / "hw3" / "model_parallel.py").write_text(f"# {who.name}'s code {token}\n")
    (submission / "hw3" / "walk.py").write_text(WALKER)
    scratch = area / "scratch"
    scratch.mkdir()
    result, _, _ = run_command([sys.executable, str(submission / "hw3" / "walk.py"),
                                str(scratch / "found.json")],
                               submission=submission, scratch=scratch, gpus=2, timeout_s=300,
                               force_virtual=True)
    assert result.returncode == 0, result.stdout + result.stderr
    found = json.loads((scratch / "found.json").read_text())

    allowed = [Path("/usr"), *runtime_roots(), *library_dirs(), *runtime_parts(),
               submission.resolve(), scratch.resolve(),
               *(Path("/etc", n) for n in ("ld.so.cache", "ld.so.conf", "ld.so.conf.d",
                                           "localtime", "alternatives")),
               *map(Path, IDENTITY_FILES)]
    # /usr/local only for its library folders and a Python installed there.
    local = tuple(f"{a}/" for a in allowed if str(a).startswith("/usr/local/"))
    granted = tuple(f"{a}/" for a in allowed) + tuple(str(a) for a in allowed)

    def may_see(path: str) -> bool:
        if path.startswith("/usr/local/"):
            return path.startswith(local)
        return path in granted or path.startswith(granted)

    readable = found["readable"]
    assert len(readable) > 1000                   # the walk did walk (Python's own files)
    outside = [p for p in readable if not may_see(p)]
    assert outside == [], f"readable from inside though nothing granted them: {outside[:20]}"
    seen = "\n".join(readable)
    assert token not in seen and "/bob/" not in seen
    for path in planted:
        assert str(path) not in seen
    # The grader's checkout: its runtime parts only (no reference/, rubrics/, tests/, checks).
    for part in ("reference", "rubrics", "tests", "grader/checks", "grader/scoring",
                 "grader/integrity/scan.py", "student_template"):
        assert f"{GRADER_CHECKOUT / part}" not in seen, part
    assert "/etc/shadow" not in found["readable"] and "home" not in found["top"]
    assert found["uid"] == 65534
