"""A term added with the same term detached (grader/integrity/cancelling.py): held for a person.

A red team (adv46 F1) put a spare nn.Linear on cuda:r+2 beside a one-stage Practical 10 replica
and added its output as `x + (side - side.detach()).reshape(x.shape)`: the value never depends
on it, a gradient reaches it, and the gradient watch counted cuda:r+2 as a stage (7.25 -> 10 of
12). HELD lists the ways of writing that term; each must give a `cancelling_term` finding
(tampering) on its line. HONEST lists what students write with `.detach()` every day: no
finding at all. Snippets are only read, never run.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.files import write

from grader.integrity.scan import CATEGORIES, TAMPERING, findings_for, scan_submission

P10 = "practical10/sample.py"
CATEGORY = "cancelling_term"

# adv46's forward pass (/tmp/adv46/p10_spare_tok), the line that adds the spare stage last
SPARE_STAGE = (
    "import torch\nimport torch.nn as nn\n\n\n"
    "class Replica(nn.Module):\n"
    "    def forward(self, x):\n"
    "        x = self.stage0(x.to(self.device0))\n"
    "        side = self.stage1(x.reshape(x.shape[0] * 8, -1).to(self.device1))\n"
    "        x = x.to(self.device1)\n"
    "        {line}\n")
HELD_LINE = 10

HELD = {
    "adv46_tokens_reshaped": "return x + (side - side.detach()).reshape(x.shape)",
    "chain_without_parentheses": "return x + side - side.detach()",
    "parenthesised_difference": "return x + (side - side.detach())",
    "detached_term_first": "return -side.detach() + side + x",
    "viewed_difference": "return x + (side - side.detach()).view(x.shape)",
    "data_attribute": "return x + (side - side.data).reshape(x.shape)",
    "detach_then_clone":
        "return x + side.reshape(x.shape) - side.reshape(x.shape).detach().clone()",
    "torch_detach_function": "return x + (side - torch.detach(side)).reshape(x.shape)",
    "detach_in_place": "return x - side.detach_().reshape(x.shape) + side.reshape(x.shape)",
    "spare_layer_called_twice": "return x + (self.stage1(x) - self.stage1(x).detach())",
    "scaled_difference": "return x + 0.5 * (side - side.detach()).reshape(x.shape)",
    "reversed_signs": "return x - (side.detach() - side).reshape(x.shape)",
    "augmented_assignment": "x += (side - side.detach()).reshape(x.shape); return x",
    "both_terms_scaled":
        "return x + 0.5 * side.reshape(x.shape) - 0.5 * side.detach().reshape(x.shape)",
    "both_terms_divided": "return x + (side / 2 - side.detach() / 2).reshape(x.shape)",
}

HONEST = {
    "loss_for_logging": "total = total + loss.detach()",
    "to_numpy": "rows = out.detach().cpu().numpy()",
    "rebound_detached": "x = x.detach()",
    "centred_by_detached_mean": "y = y - y.mean().detach()",
    "another_tensor_detached": "diff = a - b.detach()",
    "item_logged": "running_loss += loss.item()",
    "doubled_not_cancelled": "z = x + x.detach()",
    "manual_sgd_step": "p.data = p.data - lr * p.grad.data",
    "stable_softmax": "z = logits - logits.detach().max(dim=1, keepdim=True)[0]",
    "error_against_target": "err = (out - target.detach()).pow(2).mean()",
    "ema_of_weights": "ema = 0.9 * ema + 0.1 * w.detach()",
    "two_outputs_compared": "gap = (out.detach() - ref.detach()).abs().max()",
    "scaled_by_another_factor": "step = lr * g - momentum * g.detach()",
    "scaled_another_tensor": "z = 0.5 * a - 0.5 * b.detach()",
}


def scan_line(tmp_path: Path, line: str) -> list:
    return scan_submission(write(tmp_path, {P10: SPARE_STAGE.format(line=line)}))


def shown(findings: list) -> str:
    return "\n".join(f"[{f.kind}] {f.describe()}" for f in findings) or "(no finding)"


@pytest.mark.parametrize("line", list(HELD.values()), ids=list(HELD))
def test_a_term_cancelled_by_itself_detached_is_held(tmp_path, line):
    findings = scan_line(tmp_path, line)
    match = [f for f in findings if (f.line, f.category) == (HELD_LINE, CATEGORY)]
    assert match, (f"expected a '{CATEGORY}' finding on line {HELD_LINE} (`{line}`); observed:\n"
                   f"{shown(findings)}\nwhere to look: grader/integrity/cancelling.py")
    finding = match[0]
    assert finding.kind == TAMPERING, f"must hold the points: {finding.describe()}"
    assert findings_for([finding], "practical10") == [finding], "it concerns practical10"
    assert finding.code == line.strip(), f"the code shown is the line: {finding.code!r}"
    assert finding.describe().startswith(f"{P10}:{HELD_LINE} {CATEGORIES[CATEGORY][1]}: "), \
        finding.describe()


def test_the_finding_names_the_term_and_lets_a_person_release_an_estimator(tmp_path):
    """The words say which term cancels, and that a straight-through estimator (the same
    shape) is for a person to release."""
    finding = next(f for f in scan_line(tmp_path, HELD["adv46_tokens_reshaped"])
                   if f.category == CATEGORY)
    for expected in ("`side`", "`side.detach()`", "gradient", "straight-through estimator"):
        assert expected in finding.what, f"expected {expected!r} in: {finding.what}"


def test_one_finding_per_sum_spread_over_lines(tmp_path):
    """The outer chain and the inner difference it flattens are one finding, on the chain's
    first line."""
    findings = [f for f in scan_line(tmp_path, "return (x\n                + (side\n"
                                     "                   - side.detach()).reshape(x.shape))")
                if f.category == CATEGORY]
    assert [f.line for f in findings] == [HELD_LINE], \
        f"expected one finding on line {HELD_LINE}; observed:\n{shown(findings)}"


@pytest.mark.parametrize("line", list(HONEST.values()), ids=list(HONEST))
def test_honest_detach_gives_no_finding(tmp_path, line):
    findings = scan_line(tmp_path, line)
    assert findings == [], (f"expected no finding for honest `{line}`; observed:\n"
                            f"{shown(findings)}\nwhere to look: grader/integrity/cancelling.py")


def test_a_term_scaled_by_a_small_factor_is_not_read_statically(tmp_path):
    """adv46's p10_spare_eps (`x + 1e-6 * side`) changes the output's value: not this
    category's (a known limit, left to the run-time checks)."""
    assert scan_line(tmp_path, "return x + 1e-6 * side.reshape(x.shape)") == []


def test_a_long_chain_is_read_whole(tmp_path):
    """The pair is found however far apart its terms are in the chain."""
    terms = " + ".join(f"t{i}" for i in range(150))
    findings = scan_submission(write(tmp_path, {P10: f"s = {terms} - t17.detach()\n"}))
    assert [(f.line, f.category) for f in findings] == [(1, CATEGORY)], shown(findings)
