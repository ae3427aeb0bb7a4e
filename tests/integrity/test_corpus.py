"""The corpus of issue 11: honest idioms are graded for real and never held; forging attempts
are held or gain nothing.

Fast: every idiom is scanned in a copy of its assignment (no tampering; the notes it should
give), every forgery the scan must catch is caught. Slow: the idioms are graded end to end in
two submissions (the reference with every idiom planted: full points, no hold, the notes in the
result), and every forgery marked `run` is run against the grader's runtime (the HW3 probe, or
the practical-4 script) from the untouched template: whatever it forged never counts.
"""
from __future__ import annotations

import ast
import io
import json
import shutil
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from forgeries import FORGERIES, HW3, P4, Forgery
from grader.integrity.scan import NOTE, TAMPERING, scan_submission
from grader.sandbox import sandbox_available
from honest_idioms import ASSIGNMENT_OF, IDIOMS, SUBMISSIONS, Idiom, idioms_of

ROOT = Path(__file__).resolve().parents[2]
ISSUE_SEVEN = {"env_loop_rank_local_rank", "getattr_torch_dtype", "stdout_tee",
               "pickle_step_times", "subprocess_nvidia_smi", "plots_zip",
               "helper_module_named_profile"}
needs_sandbox = pytest.mark.skipif(not sandbox_available()[0],
                                   reason=f"bubblewrap not usable here: {sandbox_available()[1]}")


# -- building submissions ---------------------------------------------------------------------
def insert_after_imports(source: str, code: str) -> str:
    """`code` right after the file's last top-level import (where a student puts setup code)."""
    if not code:
        return source
    tree = ast.parse(source)
    last = max((node.end_lineno for node in tree.body
                if isinstance(node, (ast.Import, ast.ImportFrom))), default=0)
    lines = source.splitlines(keepends=True)
    return "".join(lines[:last]) + "\n" + code + "\n" + "".join(lines[last:])


def write_extra(folder: Path, files: dict) -> None:
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)
        if isinstance(content, tuple) and content[0] == "symlink":
            path.symlink_to(content[1])
        elif isinstance(content, tuple) and content[0] == "zip":
            buffer = io.BytesIO()
            with zipfile.ZipFile(buffer, "w") as archive:
                for member, text in content[1].items():
                    archive.writestr(member, text)
            path.write_bytes(buffer.getvalue())
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def plant(folder: Path, base: str, planted: list, assignments: set[str]) -> Path:
    """A copy of `base` (reference or student_template) with the idioms or forgeries planted:
    only the folders of `assignments`."""
    for assignment in assignments:
        shutil.copytree(ROOT / base / assignment, folder / assignment,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    headers: dict[Path, tuple[str, str]] = {}
    for entry in planted:
        target = folder / entry.file
        target.write_text(insert_after_imports(target.read_text(encoding="utf-8"), entry.code),
                          encoding="utf-8")
        write_extra(folder, entry.extra_files)
        if entry.header:
            text, encoding = headers.get(target, ("", "utf-8"))
            headers[target] = (text + entry.header,
                               entry.encoding if entry.encoding != "utf-8" else encoding)
    # A file's first lines (a coding line), written in the encoding they declare: last, once
    # every entry's code is in.
    for target, (header, encoding) in headers.items():
        target.write_bytes((header + target.read_text(encoding="utf-8")).encode(encoding))
    return folder


def shown(findings) -> str:
    return "\n".join(f"[{f.kind}] {f.describe()}" for f in findings) or "(no finding)"


# -- the corpus itself --------------------------------------------------------------------------
def test_the_corpus_has_what_issue_11_asks():
    names = {idiom.name for idiom in IDIOMS}
    assert len(IDIOMS) >= 40 and len(names) == len(IDIOMS)
    assert ISSUE_SEVEN <= names, f"missing: {ISSUE_SEVEN - names}"
    assert len(FORGERIES) >= 25 and len({f.name for f in FORGERIES}) == len(FORGERIES)
    assert set(FRESH) <= {f.name for f in FORGERIES if f.run}, "FRESH names a forgery not run"
    graded = [i.name for label in SUBMISSIONS for i in idioms_of(label)]
    assert sorted(graded) == sorted(names), "every idiom in exactly one graded submission"


@pytest.mark.parametrize("idiom", IDIOMS, ids=[i.name for i in IDIOMS])
def test_an_honest_idiom_is_never_tampering(tmp_path, idiom: Idiom):
    submission = plant(tmp_path, "reference", [idiom], {ASSIGNMENT_OF[idiom.file]})
    findings = scan_submission(submission)
    held = [f for f in findings if f.kind == TAMPERING]
    assert held == [], (f"the honest idiom '{idiom.name}' would be held for review:\n"
                        f"{idiom.code}\n{shown(held)}")
    noted = {f.category for f in findings if f.kind == NOTE}
    assert set(idiom.notes) <= noted, (f"'{idiom.name}' should be noted for the instructor as "
                                       f"{set(idiom.notes)}; noted: {noted or 'nothing'}")


@pytest.mark.parametrize("forgery", [f for f in FORGERIES if f.scan],
                         ids=[f.name for f in FORGERIES if f.scan])
def test_the_scan_holds_a_forgery_it_can_read(tmp_path, forgery: Forgery):
    submission = plant(tmp_path, "student_template", [forgery], {forgery.file.split("/")[0]})
    held = [f for f in scan_submission(submission) if f.kind == TAMPERING]
    assert held, f"'{forgery.name}' ({forgery.route}) is not held by the scan"


@pytest.mark.parametrize("label", [label for label in SUBMISSIONS
                                   if len(SUBMISSIONS[label][0]) > 1])
def test_a_graded_submission_scans_each_assignment_as_alone(tmp_path, label):
    """The end-to-end gradings below share one submission between two assignments' idioms: a
    finding on one assignment's file that came from the other's idioms would be graded there,
    and never shown by the fast test of each idiom alone (an honest hw3 had been held because
    of practical5's code: tests/integrity/test_cross_assignment_scan.py)."""
    files, _ = SUBMISSIONS[label]
    idioms = idioms_of(label)
    together = scan_submission(plant(tmp_path / "together", "reference", idioms,
                                     {ASSIGNMENT_OF[f] for f in files}))
    for file in files:
        assignment = ASSIGNMENT_OF[file]
        mine = [i for i in idioms if ASSIGNMENT_OF[i.file] == assignment]
        alone = scan_submission(plant(tmp_path / assignment, "reference", mine, {assignment}))
        expected = sorted(f.describe() for f in alone if f.assignment == assignment)
        observed = sorted(f.describe() for f in together if f.assignment == assignment)
        assert observed == expected, (
            f"{label}: {assignment}'s findings differ beside the other assignment's idioms. "
            f"Expected (its idioms alone):\n" + "\n".join(sorted(set(expected) - set(observed)))
            + "\nobserved only together:\n" + "\n".join(sorted(set(observed) - set(expected)))
            + "\nwhere to look: grader/integrity/assignment_groups.py")


# -- end to end: the honest idioms graded for real -----------------------------------------------
@pytest.fixture(scope="module")
def honest_gradings(tmp_path_factory):
    from grader.grading import grade_submission as grade
    area = tmp_path_factory.mktemp("honest")

    def run(label):
        files, _ = SUBMISSIONS[label]
        idioms = idioms_of(label)
        assignments = [ASSIGNMENT_OF[f] for f in files]
        submission = plant(area / label / "submission", "reference", idioms, set(assignments))
        return grade(submission, area / label / "out", assignments)

    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {label: pool.submit(run, label) for label in SUBMISSIONS}
        return {label: future.result() for label, future in futures.items()}


@pytest.mark.slow
@needs_sandbox
@pytest.mark.parametrize("label", list(SUBMISSIONS))
def test_honest_idioms_are_graded_for_real_and_never_held(honest_gradings, label):
    result = honest_gradings[label]
    for assignment in result["assignments"]:
        mine = [i for i in idioms_of(label) if ASSIGNMENT_OF[i.file] == assignment["id"]]
        planted = [i.name for i in mine]
        integrity = assignment.get("integrity") or {}
        assert not integrity.get("problems") and not integrity.get("withheld"), (
            f"{assignment['id']} with the honest idioms {planted} was held for review:\n"
            + "\n".join(integrity.get("problems") or []))
        expected_losses = {item: points for i in mine for item, points in i.loses.items()}
        lost = {i["id"]: round(i["max_score"] - i["score"], 2) for i in assignment["items"]
                if i.get("kind") == "auto" and i["score"] < i["max_score"]}
        assert lost == expected_losses, (
            f"{assignment['id']} with the honest idioms {planted} earned {assignment['score']} "
            f"of {assignment['max_score']}; the reference earns all, less what the idioms' "
            f"code really loses ({expected_losses or 'nothing'}). Lost:\n" + "\n".join(
                f"{i['id']}: {i.get('feedback', '')[:400]}" for i in assignment["items"]
                if i["id"] in lost))
        notes = "\n".join(integrity.get("notes") or [])
        for idiom in mine:
            if idiom.notes:
                marker = idiom.file if idiom.code else next(iter(idiom.extra_files))
                assert marker.split("/")[0] in notes, (
                    f"'{idiom.name}' should be a note in {assignment['id']}'s instructor "
                    f"view; the notes are:\n{notes}")


# -- end to end: forgeries against the runtime ---------------------------------------------------
def template_split(depth) -> list[str]:
    """Where the untouched template (the course's base code) puts `depth` layers."""
    depth = depth if isinstance(depth, int) else 0
    return ["cuda:0"] * (depth // 2) + ["cuda:1"] * (depth - depth // 2)


def earned(records: list[dict]) -> list[str]:
    """What of a probe's records says something the untouched template's code does not do: a
    layout or transfer log with its layers anywhere but the base code's two-GPU split, a timing
    of another split (the template builds and trains only that split, which earns no Task 3
    point; anything else in the records is forged)."""
    found = []
    for record in records:
        if record.get("kind") in ("layout", "transfers") and record.get("devices") \
                and not record.get("error") \
                and record["devices"] != template_split(record.get("depth")):
            found.append(f"{record['kind']} {record.get('gpus')}x{record.get('depth')}")
        if record.get("kind") in ("trend", "task4"):
            for key, run in (record.get("results") or {}).items():
                split = template_split(run.get("depth"))
                gpus = run.get("gpus") if isinstance(run.get("gpus"), int) else 0
                if run.get("layers_per_gpu") != [split.count(f"cuda:{i}") for i in range(gpus)]:
                    found.append(f"{record['kind']} {key}")
    return found


def forgery_plan() -> list[dict]:
    """The probe's plan (grader/checks/test_hw3.py) with its first and last configurations of
    each part: every part still runs, in its order (the base code's record first, before the
    student's module is imported), and the runtime's defences act on each record alike,
    whatever its configuration. The whole plan (36 configurations) made these 18 runs take
    66.7 s alone against 52.5, for no route the smaller one leaves open: a forgery writes the
    records of every configuration, planned or not, and `earned` counts them all."""
    from grader.checks.test_hw3 import PLAN
    plan = json.loads(json.dumps(PLAN))
    for part in plan:
        for key in ("gpus", "depths", "configs"):
            if isinstance(part.get(key), list) and len(part[key]) > 2:
                part[key] = [part[key][0], part[key][-1]]
    return plan


# Forked from one fork server, as every graded run is: torch imported once, not in a fresh
# interpreter per forgery (about 3 CPU-s each; the 26 runs took 133 CPU-s, 66 forked). Every
# forgery passes on either path; these few keep the fresh one, a run's fallback (a server that
# is stopped or cannot start), so that it stays shown: one of each script, and the two that
# read the key from the process's memory, which is the server's copy when forked (their forked
# route is the graded one and shown by the other memory forgeries).
FRESH = ("key_from_the_process_memory", "process_memory_through_dev_fd",
         "practical4_trace_written_through_the_trace_object",
         "practical4_helper_module_posing_as_a_grader_module")


def planted_forgery(area: Path, forgery: Forgery) -> Path:
    return plant(area / forgery.name / "submission", "student_template", [forgery],
                 {forgery.file.split("/")[0]})


def run_forgery(area: Path, forgery: Forgery, forks):
    from grader.harness.execute import run_hw3_probe, run_script
    submission = area / forgery.name / "submission"
    scratch = area / forgery.name / "scratch"
    scratch.mkdir()
    if forgery.file == HW3:
        return run_hw3_probe(submission, forgery_plan(), gpus=8, timeout_s=240,
                             scratch_root=scratch, forks=forks)
    return [], run_script(submission, P4, gpus=2, timeout_s=120, scratch_root=scratch,
                          forks=forks)


@pytest.fixture(scope="module")
def forged_runs(tmp_path_factory):
    """name -> (records, observation) of each forgery marked `run`. One fork server serves
    the forgeries not in FRESH: its sandbox shows every forgery's submission (each run still
    gets its own scratch folder, cgroup, key and trace), which a grading never does (one
    server per submission): what a forgery gains is read from its own run's sealed records."""
    from grader.harness.execute import start_fork_server
    # A folder of submissions as a grader's is: pytest makes its own folders for their owner
    # alone (0700), and the runs, which drop root, would find none of their scripts there.
    area = tmp_path_factory.mktemp("forged") / "submissions"
    area.mkdir()
    area.chmod(0o755)
    running = [f for f in FORGERIES if f.run]
    for forgery in running:
        planted_forgery(area, forgery)
    forks = start_fork_server(area)
    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            futures = {f.name: pool.submit(run_forgery, area, f,
                                           None if f.name in FRESH else forks)
                       for f in running}
            runs = {name: future.result() for name, future in futures.items()}
        # The forked path was the one taken (a run that stops the server sends the next
        # ones to the fresh path, silently).
        assert forks is None or not forks.why_unusable, (
            f"the forgeries' fork server stopped serving: {forks.why_unusable}; expected "
            "every forgery outside FRESH forked from it")
        return runs
    finally:
        if forks is not None:
            forks.close()


def _at_run_time(forgery: Forgery):
    """A forgery's case; one of a known limit is a strict xfail (closing it must be noticed)."""
    marks = [pytest.mark.xfail(strict=True, reason=forgery.known_limit)] \
        if forgery.known_limit else []
    return pytest.param(forgery, id=forgery.name, marks=marks)


@pytest.mark.slow
@needs_sandbox
@pytest.mark.parametrize("forgery", [_at_run_time(f) for f in FORGERIES if f.run])
def test_a_forgery_gains_nothing_at_run_time(forged_runs, forgery: Forgery):
    records, observation = forged_runs[forgery.name]
    if forgery.file == P4:
        moves = [e for e in observation.events if e.get("event") == "to"
                 and e.get("dst") == "cuda:1"]
        assert moves == [], f"'{forgery.name}': a move that never happened was recorded"
        assert forgery.silent or observation.integrity, \
            f"'{forgery.name}' tried and nothing says so"
        return
    gained = earned(records)
    assert gained == [], (f"'{forgery.name}' ({forgery.route}) got forged measurements "
                          f"accepted: {gained[:5]}\nintegrity: {observation.integrity}")
    if not forgery.scan:   # the scan cannot read it: the runtime must say what happened
        assert observation.integrity, f"'{forgery.name}' tried and nothing says so"
