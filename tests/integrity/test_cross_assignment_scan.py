"""Each assignment's files are judged with what that assignment's own files (and the shared ones
at the submission's root) define and import: no finding on one assignment's file depends on
another assignment's code (grader/integrity/assignment_groups.py).

A student hands in every assignment in one folder, as reference/ is laid out. Honest code in
practical5 (a caught error's `type(e)` handed to traceback) had taken the trust from an honest
method of hw3's own model that replaces its own forward, and held hw3 for review. Forgeries stay
held whatever the other assignments hold, and an assignment that names another's folder (or
imports a module only that one has) is judged with it: that code may run in its runs.
"""
from __future__ import annotations

import functools
from pathlib import Path

import pytest

from forgeries import FORGERIES, HW3, Forgery
from grader.integrity.scan import TAMPERING, findings_for, scan_submission
from honest_idioms import ASSIGNMENT_OF, IDIOMS, Idiom
from test_corpus import plant, shown, write_extra

BY_NAME = {idiom.name: idiom for idiom in IDIOMS}
HW3_SIDE = [BY_NAME["inspect_signature"], BY_NAME["model_method_replacing_its_own_forward"]]
P5_SIDE = [BY_NAME["traceback_of_a_caught_error"]]
P5 = "practical5/practical5_dp.py"


def held(findings, assignment: str) -> list:
    return [f for f in findings_for(findings, assignment) if f.kind == TAMPERING]


def test_honest_code_in_practical5_no_longer_holds_hw3(tmp_path):
    for name, planted in (("hw3_alone", HW3_SIDE), ("p5_alone", P5_SIDE),
                          ("both", HW3_SIDE + P5_SIDE)):
        submission = plant(tmp_path / name, "reference", planted, {"hw3", "practical5"})
        findings = scan_submission(submission)
        for assignment in ("hw3", "practical5"):
            assert held(findings, assignment) == [], (
                f"expected: no hold for {assignment} with {[i.name for i in planted]} planted "
                f"(each side alone holds nothing); observed:\n"
                f"{shown(held(findings, assignment))}\nwhere to look: "
                "grader/integrity/assignment_groups.py (which files are judged together)")


# hw3's code that reaches practical5/p5_switch.py, p5_switch.py's code that reaches hw3's class,
# and links: each route names no more of the other assignment than it needs.
NAMED = "import torch\nimport model_parallel\n\n"
COMPUTED = ("import importlib\nimport torch\n\n"
            "model_parallel = importlib.import_module('model_' + 'parallel')\n")
REACHES = {
    "named_on_sys_path": ("import os as _os9\nsys.path.insert(0, _os9.path.join(_os9.path.dirname("
                          "__file__), '..', 'practical5'))\nimport p5_switch  # noqa\n",
                          NAMED, {}),
    "through_a_linked_folder": ("import lib.p5_switch  # noqa\n", COMPUTED,
                                {"hw3/lib": ("symlink", "../practical5")}),
}


@pytest.mark.parametrize("route", list(REACHES))
def test_practical5_code_that_hw3_reaches_is_judged_with_hw3(tmp_path, route):
    """hw3 reaches a module of practical5's that calls hw3's forward-replacing method with
    torch's nn.Linear: in hw3's runs that replaces torch's forward, so hw3's method keeps no
    trust."""
    code, header, links = REACHES[route]
    caller = header + "model_parallel._Switchable.use_timed(torch.nn.Linear)\n"
    hostile = [BY_NAME["model_method_replacing_its_own_forward"], Idiom(route, HW3, code)]
    submission = plant(tmp_path / "reached", "reference", hostile, {"hw3", "practical5"})
    write_extra(submission, {"practical5/p5_switch.py": caller, **links})
    findings = held(scan_submission(submission), "hw3")
    assert any(f.file == HW3 and "forward" in f.what for f in findings), (
        "expected: hw3's `self.forward = ...` held, since practical5/p5_switch.py (which hw3 "
        f"reaches {route}) calls the method with torch.nn.Linear; observed:\n{shown(findings)}")


HW3_FORGERIES = [f for f in FORGERIES if f.scan and f.file == HW3]


@pytest.mark.parametrize("forgery", HW3_FORGERIES, ids=[f.name for f in HW3_FORGERIES])
def test_a_forgery_in_hw3_is_held_whatever_practical5_holds(tmp_path, forgery: Forgery):
    other = Idiom("practical5_side", P5, "\n".join(i.code for i in P5_SIDE + [
        BY_NAME["containers_of_torch_classes_and_a_setattr_helper"]]))
    submission = plant(tmp_path, "student_template", [forgery, other], {"hw3", "practical5"})
    assert held(scan_submission(submission), "hw3"), (
        f"expected: '{forgery.name}' ({forgery.route}) held in hw3 beside honest practical5 "
        "code; observed: no hold. Where to look: grader/integrity/assignment_groups.py")


# -- pairs of honest idioms in two assignments ----------------------------------------------------
def _pairs(step: int) -> list[tuple[Idiom, Idiom]]:
    """Every idiom with a partner of another assignment, chosen by a fixed stride through the
    corpus (deterministic); pairs of idioms that ship files outside the assignments' folders
    left out (those files run beside both, and are judged with both)."""
    idioms = [i for i in IDIOMS if all(name.split("/")[0] in ASSIGNMENT_OF.values()
                                       for name in i.extra_files)]
    pairs, seen = [], set()
    for index, idiom in enumerate(idioms):
        for offset in range(1, len(idioms)):
            partner = idioms[(index * step + offset * 7) % len(idioms)]
            if ASSIGNMENT_OF[partner.file] != ASSIGNMENT_OF[idiom.file]:
                break
        key = frozenset((idiom.name, partner.name))
        if key not in seen:
            seen.add(key)
            pairs.append((idiom, partner))
    return pairs


PAIRS = _pairs(step=13)
# The fast tier: every fourth pair (25 scans of two assignments, and each idiom's alone).
FAST = set(range(0, len(PAIRS), 4))


@functools.cache
def _alone(name: str, area: Path) -> frozenset:
    """The findings on the idiom's assignment's files with it planted alone."""
    idiom = BY_NAME[name]
    assignment = ASSIGNMENT_OF[idiom.file]
    submission = plant(area / name, "reference", [idiom], {assignment})
    return frozenset(f for f in scan_submission(submission) if f.assignment == assignment)


@pytest.fixture(scope="module")
def alone_area(tmp_path_factory):
    return tmp_path_factory.mktemp("alone")


@pytest.mark.parametrize("index", [pytest.param(i, marks=() if i in FAST else pytest.mark.slow,
                                                id=f"{a.name}+{b.name}")
                                   for i, (a, b) in enumerate(PAIRS)])
def test_two_honest_idioms_in_two_assignments_are_judged_as_each_alone(tmp_path, alone_area,
                                                                       index):
    first, second = PAIRS[index]
    together = scan_submission(plant(tmp_path, "reference", [first, second],
                                     {ASSIGNMENT_OF[first.file], ASSIGNMENT_OF[second.file]}))
    for idiom in (first, second):
        assignment = ASSIGNMENT_OF[idiom.file]
        alone = _alone(idiom.name, alone_area)
        mine = frozenset(f for f in together if f.assignment == assignment)
        assert mine == alone, (
            f"expected: {assignment}'s findings with '{idiom.name}' the same beside "
            f"'{(second if idiom is first else first).name}' of another assignment as alone; "
            f"observed beside it only:\n{shown(sorted(mine - alone, key=str))}\nalone only:\n"
            f"{shown(sorted(alone - mine, key=str))}\nwhere to look: "
            "grader/integrity/assignment_groups.py")
        assert not held(together, assignment), shown(held(together, assignment))


def test_the_pairs_cover_every_assignment_pair_and_most_idioms():
    kinds = {frozenset((ASSIGNMENT_OF[a.file], ASSIGNMENT_OF[b.file])) for a, b in PAIRS}
    assert len(kinds) >= 5, kinds
    covered = {i.name for pair in PAIRS for i in pair}
    assert len(covered) >= 0.9 * len(IDIOMS), sorted(set(BY_NAME) - covered)
