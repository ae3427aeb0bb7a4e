"""Hostile submissions graded end to end (`grade()`, the real checks, the real sandbox).

For each attack of attacks.py: (a) the score is no higher than the submission earns without
the attack, (b) grading completes, (c) nothing appears outside the run's scratch and out
folders (every file an attack writes carries a unique token; reference/ is hashed before and
after; no process named with the token survives), (d) the feedback says what happened.
The gradings run two at a time; the whole folder takes about 2 minutes on 2 cores.
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from attacks import ATTACKS, Attack
from grader.common.run_memory import RUN_MEMORY_ENV
from grader.grading import grade_submission
from grader.sandbox import sandbox_available

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "reference"
# Slow: the campaign grades every attack for real (minutes on 2 cores).
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not sandbox_available()[0],
                                 reason=f"bubblewrap not usable here: {sandbox_available()[1]}")]


def tree_digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def write_stamped_pyc(source: Path, compiled_from: Path) -> Path:
    """__pycache__/<source>.pyc holding `compiled_from`'s code but `source`'s size and time:
    what Python checks before it trusts a cached .pyc over the source."""
    import importlib._bootstrap_external as bootstrap
    import importlib.util
    stat = source.stat()
    code = compile(compiled_from.read_text(encoding="utf-8"), str(source), "exec")
    target = Path(importlib.util.cache_from_source(str(source)))
    target.parent.mkdir(exist_ok=True)
    target.write_bytes(bootstrap._code_to_timestamp_pyc(code, stat.st_mtime, stat.st_size))
    return target


class SolutionServer:
    """Serves the reference's concepts.py to whoever connects on 127.0.0.1; counts them."""

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        payload = (REFERENCE / "practical4" / "concepts.py").read_bytes()
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            with conn:
                conn.sendall(payload)


class Campaign:
    def __init__(self, area: Path, mark: str, server: SolutionServer):
        self.area, self.mark, self.server = area, mark, server
        self.other = area / "subs" / "other_student"
        shutil.copytree(REFERENCE, self.other)

    def fill(self, text: str, out: Path) -> str:
        for key, value in {"@MARK@": self.mark, "@OUT@": str(out), "@REF@": str(REFERENCE),
                           "@OTHER@": str(self.other), "@PORT@": str(self.server.port),
                           "@REPO@": str(ROOT)}.items():
            text = text.replace(key, value)
        return text

    def build(self, attack: Attack) -> tuple[Path, Path]:
        submission = self.area / "subs" / attack.name
        out = self.area / "outs" / attack.name
        shutil.copytree(ROOT / attack.base, submission,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        target = submission / attack.file
        text = target.read_text(encoding="utf-8")
        for old, new in attack.edits:
            new = self.fill(new, out)
            if old is None:
                text = new + text
            else:
                assert text.count(old) == 1, f"{attack.name}: anchor drifted in {attack.base}"
                text = text.replace(old, new)
        target.write_text(text, encoding="utf-8")
        for name, content in attack.extra_files.items():
            path = submission / name
            path.parent.mkdir(parents=True, exist_ok=True)
            if not (isinstance(content, tuple) and content[0] == "pyc_of"):
                path.unlink(missing_ok=True)
            if isinstance(content, tuple) and content[0] == "pyc_of":
                write_stamped_pyc(path, Path(self.fill(content[1], out)))
            elif isinstance(content, tuple):       # ("symlink", target)
                path.symlink_to(self.fill(content[1], out))
            else:
                path.write_text(self.fill(content, out), encoding="utf-8")
        return submission, out

    def grade(self, attack: Attack) -> dict:
        submission, out = self.build(attack)
        started = time.monotonic()
        try:
            result = grade_submission(submission, out, [attack.assignment],
                           check_timeout=attack.check_timeout)
            crash = None
        except Exception as error:  # (b): must not happen
            result, crash = None, f"{type(error).__name__}: {error}"
        ended = time.monotonic()
        return {"result": result, "crash": crash, "out": out, "seconds": ended - started,
                "ended": ended}


def find_marked(mark: str, roots) -> list[str]:
    found = []
    for root in roots:
        for folder, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if d not in (".git", "proc")]
            found += [os.path.join(folder, n) for n in files + dirs if mark in n]
    return found


def marked_processes(mark: str) -> list[str]:
    alive = []
    for pid in os.listdir("/proc"):
        try:
            if mark[:15] in Path(f"/proc/{pid}/comm").read_text():
                alive.append(pid)
        except OSError:
            pass
    return alive


@pytest.fixture(scope="module")
def campaign():
    area = Path(tempfile.mkdtemp(prefix="pdl-hostile-", dir="/var/tmp"))
    mark = "HOSTILE" + secrets.token_hex(4)
    server = SolutionServer()
    reference_before = tree_digest(REFERENCE)
    run = Campaign(area, mark, server)
    # Each run may use 1 GiB (`--memory 1G`): the memory bomb reaches it in a sixth of the time
    # the default 6 GiB takes (pages are slow to fault in here), and every honest run fits with
    # room to spare (a fresh interpreter's HW3 or Practical 4 run peaks at about 350 MB; the
    # honest attacks keep their scores with the fork server off too).
    saved_memory = os.environ.get(RUN_MEMORY_ENV)
    os.environ[RUN_MEMORY_ENV] = str(1 * 2**30)
    try:
        # The attacks that wait on a budget first: two workers then finish together.
        longest_first = sorted(ATTACKS, key=lambda a: a.check_timeout)
        with ThreadPoolExecutor(max_workers=2) as pool:
            futures = {a.name: pool.submit(run.grade, a) for a in longest_first}
            graded = {name: future.result() for name, future in futures.items()}
    finally:
        if saved_memory is None:
            os.environ.pop(RUN_MEMORY_ENV, None)
        else:
            os.environ[RUN_MEMORY_ENV] = saved_memory
    # The detached grandchild of escape_writes would write 4 s after its grading, had it lived.
    time.sleep(max(0.0, 5 - (time.monotonic() - graded["escape_writes"]["ended"])))
    outs = area / "outs"
    leaks = [p for p in find_marked(mark, [ROOT, "/tmp", "/var/tmp", "/root", "/dev/shm"])
             if not p.startswith(str(area / "subs"))]  # the submissions' own files carry it
    if os.environ.get("PDL_HOSTILE_SUMMARY"):  # for the record: score, time, first feedback line
        Path(os.environ["PDL_HOSTILE_SUMMARY"]).write_text(json.dumps({
            name: {"score": g["result"] and g["result"]["score"], "crash": g["crash"],
                   "seconds": round(g["seconds"], 1),
                   "said": g["result"] and said(g["result"]).splitlines()[2:3]}
            for name, g in graded.items()} | {"leaks": leaks}, indent=1))
    yield {"graded": graded, "mark": mark, "server": server, "area": area, "outs": outs,
           "leaks": leaks, "survivors": marked_processes(mark),
           "reference_changed": tree_digest(REFERENCE) != reference_before}
    server.sock.close()
    shutil.rmtree(area, ignore_errors=True)


def said(result: dict) -> str:
    parts = list(result.get("errors") or [])
    for assignment in result["assignments"]:
        parts += (assignment.get("integrity") or {}).get("problems") or []
        for item in assignment.get("items", []):
            parts.append(item.get("feedback") or "")
    return "\n".join(parts)


@pytest.mark.parametrize("attack", ATTACKS, ids=[a.name for a in ATTACKS])
def test_attack_gains_nothing_and_is_explained(campaign, attack):
    graded = campaign["graded"][attack.name]
    # (b) grading completed, wrote its own result.json, and did not hang
    assert graded["crash"] is None, graded["crash"]
    result = graded["result"]
    on_disk = json.loads((graded["out"] / "result.json").read_text())
    assert on_disk["score"] == result["score"] and on_disk["schema"].startswith("pdl-autograder")
    assert [a["status"] for a in result["assignments"]] == ["graded"], result.get("errors")
    assert graded["seconds"] < 120
    # (a) no more than the honest score
    if attack.succeeds:
        if result["score"] > attack.max_score:
            pytest.xfail(f"{attack.name}: scored {result['score']} > {attack.max_score}: "
                         f"{attack.succeeds}")
        pytest.fail(f"{attack.name} no longer succeeds (scored {result['score']}): drop `succeeds`")
    assert result["score"] <= attack.max_score, said(result)
    # (d) the feedback says what happened
    feedback = said(result)
    for phrase in attack.says:
        assert phrase in feedback, f"{phrase!r} not in the feedback:\n{feedback[:3000]}"


def test_nothing_escaped_the_sandbox(campaign):
    # (c) across every attack above
    assert campaign["leaks"] == []
    assert campaign["survivors"] == [], "a detached child outlived its run"
    assert not campaign["reference_changed"]
    assert campaign["server"].connections == 0, "a submission reached 127.0.0.1"


def test_grader_owned_results_replace_planted_ones(campaign):
    result = campaign["graded"]["escape_writes"]["result"]
    assert result["score"] == 0
    report = json.loads((campaign["outs"] / "escape_writes" / "checks-practical4.json").read_text())
    # practical4's 13 tests: 7 on the code (the batch of 63 among them, worth no point), 6 comparing the
    # answer sheet with it
    assert len(report["tests"]) == 13 and every_check_failed(report)


def test_plugin_in_submission_never_loads(campaign):
    assert not Path(f"/var/tmp/{campaign['mark']}-plugin-loaded").exists()
    result = campaign["graded"]["conftest_plugin"]["result"]
    report = json.loads((campaign["outs"] / "conftest_plugin" / "checks-practical4.json").read_text())
    assert result["score"] == 0 and every_check_failed(report)


def every_check_failed(report: dict) -> bool:
    """Every test of practical4's checks' report failed; the batch of 63, worth no point, as
    xfailed (grader/pytest_plugin.py: a failed check worth no point fails no session)."""
    return all(t["outcome"] == ("xfailed" if "uneven_batch" in t["nodeid"] else "failed")
               for t in report["tests"])


# -- pdl-grade batch: unsafe archives, links, and a student who reads the others ----------------
STEAL_SIBLING = r'''
import glob as _g, os as _o
_me = _o.environ.get("PDL_SUBMISSION_ROOT", "")
_src = None
for _up in range(1, 5):
    _base = _o.path.join(_me, *[".."] * _up)
    for _p in _g.glob(_base + "/**/practical4/concepts.py", recursive=True):
        if not _p.startswith(_me):
            try:
                _t = open(_p).read()
            except OSError:
                continue
            if "NotImplementedError(" not in _t:
                _src = _t
                print("STOLE", _p)
                break
    if _src:
        break
if _src:
    exec(compile(_src, __file__, "exec"))
    main()
    raise SystemExit(0)
'''


def test_batch_rejects_unsafe_uploads_and_isolates_students(tmp_path):
    mark = "HOSTILE" + secrets.token_hex(4)
    subs, out = tmp_path / "in" / "subs", tmp_path / "in" / "out"
    shutil.copytree(REFERENCE / "practical4", subs / "alice" / "practical4")
    shutil.copytree(ROOT / "student_template" / "practical4", subs / "bob" / "practical4")
    concepts = subs / "bob" / "practical4" / "concepts.py"
    concepts.write_text(STEAL_SIBLING + concepts.read_text())
    with zipfile.ZipFile(subs / "carol.zip", "w") as archive:
        archive.write(REFERENCE / "practical4" / "concepts.py", "practical4/concepts.py")
        archive.writestr(f"../../{mark}-zip-slip.py", "print('escaped')")
    shutil.copytree(ROOT / "student_template" / "practical4", subs / "dave" / "practical4")
    (subs / "dave" / "practical4" / "concepts.py").unlink()
    (subs / "dave" / "practical4" / "concepts.py").symlink_to(REFERENCE / "practical4" / "concepts.py")

    done = subprocess.run([sys.executable, "-m", "grader", "batch", str(subs), "--out", str(out),
                           "--assignment", "practical4", "--workers", "2", "--timeout", "300"],
                          cwd=ROOT, capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {r["Identifier"]: r for r in csv.DictReader(io.StringIO((out / "grades.csv").read_text()))}
    assert rows["alice"]["Total"] == "9.5"   # every automatic point; 2.5 await a person
    # Held for review (its code reaches for a sibling's folder): no points to upload, and none
    # of alice's were gained.
    assert rows["bob"]["Total"] == "" and "held for review: practical4" in rows["bob"]["Status"], \
        rows["bob"]
    carol, dave = rows["carol"], rows["dave"]
    assert carol["Total"] == "0" and carol["Status"].startswith("rejected")
    assert "points outside the archive (../)" in carol["Status"]
    # The link is skipped with a note, never followed: the reference's code earns dave nothing.
    assert dave["Total"] == "0", "dave scored with the reference's code through a link"
    assert find_marked(mark, [tmp_path, ROOT, "/tmp", "/var/tmp"]) == []


def test_nested_hidden_folders_are_masked_once(tmp_path):
    # The batch hides its own folder and the submission's parent inside it: a tmpfs over a
    # tmpfs made bwrap fail ("Can't remount readonly ... Invalid argument") and every run of
    # every batch submission exited 1.
    from grader.sandbox import SandboxPolicy, run_sandboxed
    outer = tmp_path / "batch"
    inner, scratch = outer / "scratch" / "alice", tmp_path / "run"
    inner.mkdir(parents=True)
    scratch.mkdir()
    (inner / "code.txt").write_text("mine")
    (outer / "scratch" / "bob.txt").write_text("not mine")
    result = run_sandboxed(
        [sys.executable, "-c", f"print(open('{inner}/code.txt').read());"
                               f"import os; print(os.listdir('{outer}/scratch'))"],
        SandboxPolicy(hidden=[outer / "scratch", outer], readonly=[inner], writable=[scratch],
                      timeout_s=30))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["mine", "['alice']"]
