"""Each assignment's runs see its own folder, the upload's shared files and the folders of the
assignments it is judged with, and no other assignment's folder (grader/grading/views.py).

An upload holds every assignment's folder. hw3's runs could read practical5's files by a name
computed at run time (`"practical" + str(5)`), which the integrity scan never links, so the scan
judged practical5's code apart from hw3's while hw3's runs could load it. Now such a read finds
no file, in a fresh sandbox and in a run forked from the grading's fork server alike; an
assignment that names another's folder in its source (`from practical5 import helper`) still
reads it, as the scan judges them together.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from grader.grading.views import views_of
from grader.harness import execute
from grader.integrity.scan import scan_and_group
from grader.sandbox import forked_runs, run_sandboxed

sandboxed = pytest.mark.usefixtures("cgroups")
REFERENCE = Path(__file__).resolve().parents[2] / "reference"

# Reads practical5's files by names the source never spells, a shared helper and its own file.
READS = """
import importlib, os, sys
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
other = "practical" + str(5)
for name in (other + "/x.py", "common.py", "{own}/notes.txt"):
    try:
        with open(os.path.join(root, name)) as handle:
            print(name, "read", handle.read().strip())
    except OSError as error:
        print(name, "not read:", error.strerror)
sys.path.insert(0, os.path.join(root, other))
try:
    print("p5_helper imported", importlib.import_module("p5_" + "helper").VALUE)
except ImportError as error:
    print("p5_helper not imported:", type(error).__name__)
"""
# Practical 6 names practical5 in its source: judged with it, and so it sees it.
STATIC = """
import os, sys
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from practical5 import p5_helper
print("practical5 imported statically", p5_helper.VALUE)
""" + READS.format(own="practical6")

FILES = {
    "hw3/model_parallel.py": READS.format(own="hw3"),
    "hw3/notes.txt": "hw3's own notes",
    "practical5/x.py": "print('practical5 ran')",
    "practical5/p5_helper.py": "VALUE = 5\n",
    "practical6/practical6_ddp.py": STATIC,
    "practical6/notes.txt": "practical6's own notes",
    "common.py": "SHARED = True\n",
}


@pytest.fixture(scope="module")
def upload():
    """The upload, where the sandbox's unprivileged user may read it (not under /tmp, which is
    private inside)."""
    root = Path(tempfile.mkdtemp(prefix="pdl-views-", dir="/var/tmp"))
    submission = root / "upload"
    for name, text in FILES.items():
        (submission / name).parent.mkdir(parents=True, exist_ok=True)
        (submission / name).write_text(text)
    for path in [root, *submission.rglob("*"), submission]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    yield submission
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def views(upload):
    return views_of(upload, ["hw3", "practical6"], scan_and_group(upload)[1])


def test_the_views_hide_only_what_the_source_never_links(upload, views):
    assert sorted(p.name for p in views["hw3"]) == ["practical5", "practical6"], (
        f"expected: hw3's runs hide practical5 (reached only by a computed name) and practical6; "
        f"observed hidden: {sorted(map(str, views['hw3']))}. Where to look: "
        "grader/integrity/assignment_groups.py folders_apart")
    assert sorted(p.name for p in views["practical6"]) == ["hw3"], (
        "expected: practical6's runs see practical5, which its source imports "
        f"(`from practical5 import p5_helper`); observed hidden: {sorted(map(str, views['practical6']))}")


def _fresh_run(upload: Path, script: str, apart, monkeypatch) -> str:
    """The run's output, in the sandbox a checks process gives its runs (run_checks sets
    HIDE_ENV to the folders `apart`)."""
    monkeypatch.setenv(execute.HIDE_ENV, os.pathsep.join(map(str, apart)))
    scratch = Path(tempfile.mkdtemp(prefix="run-", dir=upload.parent))
    try:
        policy = execute.run_policy(upload, scratch, {"PYTHONDONTWRITEBYTECODE": "1"},
                                    timeout_s=60)
        result = run_sandboxed([sys.executable, str(upload / script)], policy)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


HW3_SEES = ("practical5/x.py not read: No such file or directory\n"
            "common.py read SHARED = True\n"
            "hw3/notes.txt read hw3's own notes\n"
            "p5_helper not imported: ModuleNotFoundError\n")


@sandboxed
def test_a_computed_name_finds_no_file_of_another_assignment(upload, views, monkeypatch):
    observed = _fresh_run(upload, "hw3/model_parallel.py", views["hw3"], monkeypatch)
    assert observed == HW3_SEES, (
        f"expected hw3's run to find no practical5/x.py and read its own and the shared "
        f"files:\n{HW3_SEES}observed:\n{observed}where to look: grader/grading/run.py run_checks "
        "(HIDE_ENV), grader/harness/execute.py _hidden_paths")


@sandboxed
def test_a_static_import_of_another_assignment_still_works(upload, views, monkeypatch):
    observed = _fresh_run(upload, "practical6/practical6_ddp.py", views["practical6"],
                          monkeypatch)
    expected = ("practical5 imported statically 5\n"
                "practical5/x.py read print('practical5 ran')\n"
                "common.py read SHARED = True\n"
                "practical6/notes.txt read practical6's own notes\n"
                "p5_helper imported 5\n")
    assert observed == expected, (
        f"expected practical6 (which imports practical5 by name) to read it:\n{expected}"
        f"observed:\n{observed}where to look: grader/integrity/assignment_groups.py")


@sandboxed
def test_a_run_forked_from_the_views_server_finds_no_file_either(upload, views, monkeypatch):
    """The fork server's sandbox is its runs': started for hw3's view, it hides practical5."""
    if not execute.forks_usable():
        pytest.skip("runs are never forked on real GPUs")
    monkeypatch.setenv(forked_runs.SWITCH_ENV, "require")     # no silent fresh run
    monkeypatch.delenv(execute.HIDE_ENV, raising=False)       # the server's view alone
    forks = execute.start_fork_server(upload, upload.parent, training=False,
                                      apart=views["hw3"])
    try:
        argv = [sys.executable, str(upload / "hw3/model_parallel.py")]
        result, _, _ = execute.run_command(argv, submission=upload,
                                           scratch=forks.new_scratch("run-"), gpus=1,
                                           timeout_s=120, force_virtual=True, forks=forks)
    finally:
        forks.close()
    assert result.stdout == HW3_SEES, (
        f"expected the forked run to see what a fresh one does:\n{HW3_SEES}observed:\n"
        f"{result.stdout}{result.stderr[-2000:]}where to look: grader/harness/execute.py "
        "start_fork_server (apart)")


class _Server:
    def __init__(self, number: int):
        self.number, self.closed = number, False

    def close(self):
        self.closed = True


def test_each_assignment_is_graded_in_its_view_and_a_group_shares_one_server(monkeypatch,
                                                                               tmp_path):
    """run_submission hands each assignment's checks the folders its runs hide, and the fork
    server of that view: one server for hw3 and practical5 where the scan links them."""
    from grader.grading import run as grading_run
    from grader.scoring import load_rubrics
    servers, checked = [], []

    def start(submission, training, apart):
        servers.append(_Server(len(servers) + 1))
        return servers[-1]

    def run_checks(assignment, *args, forks, apart, **kwargs):
        checked.append((assignment, forks.number, sorted(p.name for p in apart)))
        return None, "not run"
    monkeypatch.setattr(grading_run, "start_fork_server_quietly", start)
    monkeypatch.setattr(grading_run, "scan_source_and_groups", lambda submission, out: (
        [], [frozenset({"hw3", "practical5"}), frozenset({"practical4"})]))
    monkeypatch.setattr(grading_run, "run_checks", run_checks)
    grading_run.run_submission(REFERENCE, tmp_path, load_rubrics(),
                               ["practical4", "hw3", "practical5"])
    assert checked == [
        ("practical4", 1, ["hw3", "practical10", "practical5", "practical6"]),
        ("hw3", 2, ["practical10", "practical4", "practical6"]),
        ("practical5", 2, ["practical10", "practical4", "practical6"])], (
        "expected each assignment's checks given its view (what its runs hide) and that view's "
        f"server; observed (assignment, server, hidden): {checked}. Where to look: "
        "grader/grading/run.py run_submission, grader/grading/views.py")
    assert len(servers) == 2 and all(server.closed for server in servers), (
        f"expected 2 servers (practical4's; hw3's and practical5's), all closed; observed "
        f"{len(servers)}, closed: {[server.closed for server in servers]}")


def _linked_upload(root: Path, files: dict, links: dict) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    for name, target in links.items():
        (root / name).symlink_to(target)
    return root


@pytest.mark.parametrize("route", ["linked_folder", "named_on_sys_path", "scan_unfinished"])
def test_what_links_another_assignment_keeps_it_in_view(tmp_path, route):
    """A link into practical5 (`hw3/lib -> ../practical5`) or its name in hw3's source keeps it
    in hw3's view; where the scan did not finish (no groups) nothing is hidden: its points are
    held for a person, who reads all of it."""
    files = {"hw3/model_parallel.py": "import lib.p5_helper\n",
             "practical5/p5_helper.py": "VALUE = 5\n", "practical4/concepts.py": "X = 1\n"}
    links = {"hw3/lib": "../practical5"}
    if route == "named_on_sys_path":
        files["hw3/model_parallel.py"] = "import sys\nsys.path.insert(0, '../practical5')\n"
        links = {}
    upload = _linked_upload(tmp_path / "upload", files, links)
    groups = None if route == "scan_unfinished" else scan_and_group(upload)[1]
    hidden = sorted(p.name for p in views_of(upload, ["hw3"], groups)["hw3"])
    expected = [] if route == "scan_unfinished" else ["practical4"]
    assert hidden == expected, (
        f"expected hw3's runs to hide {expected} ({route}); observed {hidden}. Where to look: "
        "grader/integrity/assignment_groups.py linked_assignments, folders_apart")


def test_practical6_sees_practical5_which_its_grading_runs(tmp_path):
    """Practical 6's Part 6 runs the student's practical5/practical5_dp.py for DataParallel's
    side of the comparison: its runs see practical5 even where its source never names it (hidden,
    every student was told "your Practical 5 did not train", adv44 F3), and the scan judges the
    two together; hw3 still sees neither."""
    files = {"practical5/practical5_dp.py": "import torch\n",
             "practical6/practical6_ddp.py": "import torch.distributed as dist\n",
             "hw3/model_parallel.py": "import torch\n"}
    upload = _linked_upload(tmp_path / "upload", files, {})
    groups = scan_and_group(upload)[1]
    views = views_of(upload, ["practical6", "practical5", "hw3"], groups)
    observed = {name: sorted(p.name for p in view) for name, view in views.items()}
    assert observed == {"practical6": ["hw3"], "practical5": ["hw3"],
                        "hw3": ["practical5", "practical6"]}, (
        f"expected practical6's runs to see practical5 (grader/checks/test_practical6.py runs "
        f"its DP_SCRIPT), hw3's neither; observed hidden: {observed}. Where to look: "
        "grader/integrity/assignment_groups.py GRADED_WITH")


# -- one grading ------------------------------------------------------------------------------
# The reference, with hw3's model stopping where it can read practical5's file (a name computed
# at run time), and practical6 importing a helper of practical5's by name.
HW3_READS = '''
import os
_OTHER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "practical" + str(5),
                      "x.py")
try:
    with open(_OTHER) as _handle:
        _handle.read()
except OSError as _error:
    print("hw3: no", _OTHER, _error.strerror, file=sys.stderr)
else:
    raise RuntimeError("hw3 read the other folder's file")
'''
P6_IMPORTS = '''
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from practical5 import p5_helper  # noqa: E402  the student's own helper
assert p5_helper.VALUE == 5
'''


def _insert_after(path: Path, line: str, code: str) -> None:
    text = path.read_text()
    assert line in text, f"{path} no longer has {line!r}: rewrite the test's upload"
    path.write_text(text.replace(line, line + code, 1))


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    from grader.grading import grade_submission
    root = tmp_path_factory.mktemp("graded")
    submission = root / "upload"
    shutil.copytree(REFERENCE, submission)
    _insert_after(submission / "hw3/model_parallel.py", "import torch.nn as nn\n", HW3_READS)
    _insert_after(submission / "practical6/practical6_ddp.py",
                  "from torch.nn.parallel import DistributedDataParallel as DDP\n", P6_IMPORTS)
    (submission / "practical5/x.py").write_text("import torch\ntorch.cuda.device_count = lambda: 8\n")
    (submission / "practical5/p5_helper.py").write_text("VALUE = 5\n")
    result = grade_submission(submission, root / "out", ["hw3", "practical6"])
    return {a["id"]: a for a in result["assignments"]}, result


@sandboxed
@pytest.mark.slow
@pytest.mark.parametrize("assignment, points", [("hw3", 10.5), ("practical6", 9.75)])
def test_an_upload_graded_in_views_keeps_the_reference_s_points(graded, assignment, points):
    """hw3 does not find practical5's file, and is graded as without that code (the reference's
    10.5; it had stopped at import and scored 2); practical6, which imports practical5's helper
    by name, keeps the reference's 9.75."""
    by_id, result = graded
    observed = by_id[assignment]
    withheld = (observed.get("integrity") or {}).get("withheld", False)
    assert (observed["score"], withheld) == (points, False), (
        f"expected {assignment} {points} (the reference's), not held; observed "
        f"{observed['score']} (errors: {result.get('errors')}, integrity: "
        f"{observed.get('integrity')}). Where to look: grader/grading/run.py, views.py")
