"""The practicals graded as students write them: every item's exact points, per variant.

Variants (tests/fixtures/practical_variants.py) are the reference with text edits: other
correct styles (torch.split or slicing; a DistributedSampler; the rank from dist.get_rank()
or from --local-rank; .cuda() instead of .to(); torch.chunk micro-batches; the handout's print
in the training loop) must keep every point, and each classic bug (full batch or the same
data on every rank, all ranks on cuda:0, no DDP wrap, no no_sync, no loss scaling, dropped
rows, reversed concatenation, no DataParallel, a crash in a later part) costs exactly the
item that is about it. Controls: the reference gets every automatic point, the untouched
template none, and each of its failing code checks names the TODO.

The fast tests check the fixtures; the gradings are slow (python API of `pdl-grade grade`,
virtual GPUs, on 2 cores: P4 about 15 s, P5 40 s, P6 60 s, P10 90 s per variant). The
variants whose checks the default suite shows elsewhere (pv.GRADED_ON_REQUEST, each naming
where, and pv.NON_SOLUTIONS) are graded only with PDL_EXTENDED_MATRIX=1. Variants of different
practicals share one submission, graded for all of them at once (pv.sharing_submissions); each
variant's tests read its own practical's part of that grading.
"""
from __future__ import annotations

import ast

import pytest
import yaml

from grader.grading import grade_submission as grade
from grader.integrity.scan import scan_submission
from grader.scoring import default_rubrics_dir, load_rubric
from tests.fixtures import practical_variants as pv
from tests.fixtures.planted_bugs import extended_matrix
from tests.support.gradings import Gradings, names_in_order

REFERENCE, TEMPLATE = "reference", "student_template"
NAMES = [variant.name for variant in pv.GRADED]
# Every variant's fixture is checked in the fast tier, those graded only on request too.
EVERY = pv.VARIANTS + [v for v in pv.NON_SOLUTIONS if v not in pv.VARIANTS]


def rubric(assignment: str):
    return load_rubric(default_rubrics_dir() / f"{assignment}.yaml")


def auto_items(assignment: str) -> dict:
    return {item.id: item for item in rubric(assignment).items if item.kind == "auto"}


# -- the fixtures themselves (fast) -------------------------------------------------------------


@pytest.mark.parametrize("variant", EVERY, ids=[v.name for v in EVERY])
def test_variant_applies_to_the_reference_and_stays_valid_python(variant, tmp_path):
    planted = pv.plant(variant, tmp_path / "submission")
    for rel in variant.edits:
        patched = (planted / rel).read_text(encoding="utf-8")
        assert patched != (pv.REFERENCE / rel).read_text(encoding="utf-8"), variant.name
        ast.parse(patched, filename=f"{variant.name}:{rel}")
        assert rel.startswith(variant.assignment + "/"), (variant.name, rel)


@pytest.mark.parametrize("variant", EVERY, ids=[v.name for v in EVERY])
def test_expectations_follow_the_rubric(variant):
    items = auto_items(variant.assignment)
    checks = {rule.check: item.id for item in items.values() for rule in item.checks}
    assert set(variant.expected) <= set(items), sorted(set(variant.expected) - set(items))
    assert set(variant.failing) <= set(checks), sorted(set(variant.failing) - set(checks))
    for item_id, score in variant.expected.items():
        assert 0 <= score < items[item_id].points, (variant.name, item_id, score)
    # An item that loses points has a failing check, and a failing check costs its item points
    # (but one worth no point, which only tells).
    free = {rule.check for item in items.values() for rule in item.checks if rule.points == 0}
    costly = set(variant.failing) - free
    assert {checks[c] for c in costly} == set(variant.expected), variant.name
    if variant.kind == "correct":
        assert not variant.expected and not costly, variant.name
    else:
        # A crash after everything the rubric asks for costs nothing.
        assert variant.expected or variant.name in ("p4_crash_after_part3",
                                                    "p5_crash_after_training"), variant.name


@pytest.mark.parametrize("group", list(pv.GRADED_TOGETHER))
def test_a_group_of_correct_styles_holds_every_members_edit_and_answer(group, tmp_path):
    together = pv.graded_together(group)
    planted = pv.plant(together, tmp_path / "submission")
    for name in pv.GRADED_TOGETHER[group]:
        member = pv.BY_NAME[name]
        for rel, edits in member.edits.items():
            text = (planted / rel).read_text(encoding="utf-8")
            ast.parse(text, filename=f"{group}:{rel}")
            missing = [new[:60] for _, new in edits if new not in text]
            assert not missing, f"{group}: {name}'s edits of {rel} are lost: {missing}"
        for rel in member.left_out:
            assert not (planted / rel).exists(), (group, name, rel)
        sheet = yaml.safe_load((planted / member.assignment / "answers.yaml").read_text(
            encoding="utf-8"))["answers"]
        for qid, value in member.sheet.items():
            entry = sheet[qid]
            assert entry["rows" if entry.get("type") == "table" else "value"] == value, (
                f"{group}: {name}'s answer {qid} is lost")
    assert set(pv.GROUP_OF) <= {v.name for v in pv.VARIANTS if v.kind == "correct"}


def test_gradings_share_a_submission_only_where_no_check_reads_anothers_folder(tmp_path):
    """Every variant (those graded on request too) packed as the matrix packs them: one of
    each practical at most per submission, Practical 6 never beside a Practical 5 variant
    (its comparison runs practical5_dp.py), and each member planted as it is alone."""
    alone = [pv.graded_together(pv.GROUP_OF[v.name]) if v.name in pv.GROUP_OF else v
             for v in EVERY]
    gradings = list({v.name: v for v in alone}.values())
    shared = pv.sharing_submissions(gradings)
    assert sorted(v.name for members in shared for v in members) == \
        sorted(v.name for v in gradings)
    assert len(shared) < len(gradings) / 2
    for members in shared:
        assignments = [m.assignment for m in members]
        assert len(set(assignments)) == len(assignments), assignments
        assert not {"practical5", "practical6"} <= set(assignments), assignments
        if any(m.left_out for m in members):
            assert not {f for m in members for f in m.left_out} & set(assignments)
    members = next(m for m in shared if len(m) >= 3)
    planted = pv.plant_sharing(members, tmp_path / "shared")
    for member in members:
        by_itself = pv.plant(member, tmp_path / member.name)
        for rel in {*member.edits, f"{member.assignment}/answers.yaml"}:
            assert (planted / rel).read_bytes() == (by_itself / rel).read_bytes(), \
                (member.name, rel)
    # The same files, and the same integrity findings on them: the scan judges each
    # assignment's files with its own (an honest hw3 had been held for practical5's code).
    shared_findings = scan_submission(planted)
    for member in members:
        alone = scan_submission(tmp_path / member.name)
        expected = sorted(f.describe() for f in alone if f.assignment == member.assignment)
        observed = sorted(f.describe() for f in shared_findings
                          if f.assignment == member.assignment)
        assert observed == expected, (
            f"{member.name}: expected the scan's findings on {member.assignment} as when it "
            f"is graded alone:\n{expected}\nobserved in the shared submission:\n{observed}\n"
            "where to look: grader/integrity/assignment_groups.py")


def test_variants_graded_on_request_are_graded_alone_and_say_where_they_are_shown():
    """The matrix grades them only with PDL_EXTENDED_MATRIX=1: each is a variant of its own
    (never a member of a group graded by default), and names what shows its checks in the
    default suite."""
    assert set(pv.GRADED_ON_REQUEST) <= {v.name for v in EVERY}
    assert not set(pv.GRADED_ON_REQUEST) & set(pv.GROUP_OF)
    assert all(len(where) > 40 for where in pv.GRADED_ON_REQUEST.values())
    on_request = set() if extended_matrix() else set(pv.GRADED_ON_REQUEST)
    assert NAMES == [v.name for v in pv.VARIANTS if v.name not in on_request]


def test_the_matrix_covers_the_styles_and_bugs_of_issue_17():
    # Every variant of the matrix, those graded only with PDL_EXTENDED_MATRIX=1 included.
    text = " ".join(f"{v.name} {v.description}" for v in EVERY).lower()
    for needle in ("distributedsampler", "dist.get_rank()", "--local-rank", ".cuda()",
                   "torch.split", "slices", "torch.chunk", "full_batch_on_every_rank",
                   "same_data_on_every_rank", "all_ranks_on_gpu0", "no_ddp_wrap",
                   "no_no_sync", "no_loss_scaling", "reversed_concatenation",
                   "no_data_parallel", "drops_the_remainder"):
        assert needle in text, needle


# -- the gradings (slow) ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def graded(request, tmp_path_factory):
    """name -> result dict; each submission is made and graded once per module (the next ones
    the selected tests need are graded meanwhile: tests/support/gradings.py). A variant's
    result holds its own practical only: the gradings of different practicals share one
    submission, graded for all of them at once (pv.sharing_submissions)."""
    # A variant graded together with others (pv.GRADED_TOGETHER) reads its group's grading.
    order = list(dict.fromkeys(pv.graded_as(name).name for name in names_in_order(request)))
    shared = pv.sharing_submissions([pv.graded_as(name) for name in order])
    members_of = {"+".join(v.name for v in members): members for members in shared}
    submission_of = {v.name: key for key, members in members_of.items() for v in members}

    def grade_one(key: str) -> dict:
        if key in (REFERENCE, TEMPLATE):
            base = tmp_path_factory.mktemp(f"graded-{key}")
            source = pv.REFERENCE if key == REFERENCE else pv.TEMPLATE
            return grade(pv.copy_tree(source, base / "submission"), base / "out", pv.ASSIGNMENTS)
        members = members_of[key]
        base = tmp_path_factory.mktemp(f"graded-{members[0].name}-and-{len(members) - 1}")
        assignments = [member.assignment for member in members]
        result = grade(pv.plant_sharing(members, base / "submission"), base / "out", assignments)
        assert [a["id"] for a in result["assignments"]] == assignments, (key, result["errors"])
        return result

    def graded_alone(name: str) -> dict:
        if name in (REFERENCE, TEMPLATE):
            return gradings.get(name)
        variant = pv.graded_as(name)
        result = gradings.get(submission_of[variant.name])
        return dict(result, assignments=[a for a in result["assignments"]
                                         if a["id"] == variant.assignment])

    # The whole reference and template come first (their tests do), then the variants.
    selected = {item.originalname for item in request.session.items
                if item.module is request.module}
    whole = [name for test, name in (
        ("test_reference_gets_every_automatic_point", REFERENCE),
        ("test_template_gets_no_automatic_point_and_points_at_the_todos", TEMPLATE))
        if test in selected]
    gradings = Gradings(grade_one, whole + list(dict.fromkeys(submission_of[n] for n in order)))
    yield graded_alone
    gradings.close()


def graded_auto_items(result: dict):
    for assignment in result["assignments"]:
        assert assignment["status"] == "graded" and not assignment["errors"], (
            assignment["id"], assignment["status"], assignment["errors"])
        for item in assignment["items"]:
            if item["kind"] == "auto":
                yield item


def mismatches(name: str, result: dict, expected: dict[str, float]) -> list[str]:
    wrong = []
    for item in graded_auto_items(result):
        want = expected.get(item["id"], item["points"])
        if item["score"] != pytest.approx(want, abs=0.005):
            wrong.append(f"[{name}] {item['id']}: expected {want:g}, observed {item['score']:g} "
                         f"of {item['max_score']:g} ({item['status']})\n--- feedback ---\n"
                         f"{item['feedback']}")
    return wrong


@pytest.mark.slow
def test_reference_gets_every_automatic_point(graded):
    result = graded(REFERENCE)
    assert [a["id"] for a in result["assignments"]] == pv.ASSIGNMENTS
    wrong = mismatches(REFERENCE, result, {})
    assert not wrong, "\n\n".join(wrong)
    # The course's grading (PDL_HIDE_ANSWERS unset, "0" to grader/grading/run.py) shows what
    # each script measured; `pdl-grade check` keeps it back (test_answers_hidden.py).
    unshown = [a["id"] for a in result["assignments"]
               if not a.get("measurements") or a.get("measurements_hidden")]
    assert not unshown, f"the course's grading kept back the measurements of {unshown}"


@pytest.mark.slow
def test_template_gets_no_automatic_point_and_points_at_the_todos(graded):
    result = graded(TEMPLATE)
    items = list(graded_auto_items(result))
    wrong = mismatches(TEMPLATE, result, {item["id"]: 0.0 for item in items})
    assert not wrong, "\n\n".join(wrong)
    # Every failing check of the code names the open TODO; the answer checks say the answer is
    # missing (the template's sheet is empty).
    silent = [f"{item['id']} / {check['id']}:\n{check['feedback']}"
              for item in items for check in item["checks"]
              if check["status"] != "passed" and "TODO" not in check["feedback"]
              and "no answer found" not in check["feedback"]]
    assert not silent, "\n\n".join(silent)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_variant_earns_exactly_its_points(graded, name):
    variant = pv.graded_as(name)
    result = graded(name)
    assert [a["id"] for a in result["assignments"]] == [variant.assignment]
    wrong = mismatches(variant.name, result, variant.expected)
    assert not wrong, f"[{name}] graded as {variant.name}: {variant.description}\n\n" \
        + "\n\n".join(wrong)


@pytest.mark.slow
@pytest.mark.parametrize("name", [v.name for v in pv.GRADED if v.failing])
def test_variant_fails_its_own_checks_and_says_why(graded, name):
    variant = pv.graded_as(name)   # a group's failing checks are its members'
    checks = {check["id"]: check for item in graded_auto_items(graded(name))
              for check in item["checks"]}
    # A check worth no point that fails still tells the student something: it counts here.
    losing = {cid for cid, check in checks.items() if check["score"] < check["max_score"]
              or check["status"] in ("failed", "error")}
    assert losing == set(variant.failing), (
        f"[{name}] checks that lost points: {sorted(losing)}; expected {sorted(variant.failing)}"
        + "".join(f"\n--- {cid} ---\n{checks[cid]['feedback']}"
                  for cid in sorted(losing ^ set(variant.failing)) if cid in checks))
    for cid, phrases in variant.failing.items():
        missing = [p for p in phrases if p not in checks[cid]["feedback"]]
        assert not missing, (f"[{name}] {cid}: the feedback lacks {missing}\n--- feedback ---\n"
                             f"{checks[cid]['feedback']}")
