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
    # adv48 F1: the same term written as a call, an alias, updates in place, another detach
    "torch_sub": "return x + torch.sub(side, side.detach()).reshape(x.shape)",
    "torch_subtract": "return x + torch.subtract(side, side.detach())",
    "torch_add_alpha_minus_one": "return x + torch.add(side, side.detach(), alpha=-1)",
    "tensor_add_then_sub":
        "return x.add(side.reshape(x.shape)).sub(side.detach().reshape(x.shape))",
    "reversed_subtraction_method": "return x + side.rsub(side.detach())",
    "operator_sub": "import operator; return x + operator.sub(side, side.detach())",
    "builtin_sum_of_a_list": "return sum([x, side, -side.detach()])",
    "stacked_then_summed": "return torch.stack([x, side, -side.detach()]).sum(0)",
    "augmented_assignments": "y = x.clone(); y += side.reshape(x.shape); "
                             "y -= side.detach().reshape(x.shape); return y",
    "in_place_methods": "y = x.clone(); y.add_(side); y.sub_(side.detach()); return y",
    "assigned_then_subtracted": "y = x + side; y -= side.detach(); return y",
    "lambda_helper_of_two_parameters":
        "combine = lambda a, b: a - b; return x + combine(side, side.detach())",
    "tensor_class_detach": "return x + (side - torch.Tensor.detach(side)).reshape(x.shape)",
    "detach_with_empty_keywords": "return x + (side - side.detach(**{}))",
    "cast_then_detached": "return x + (side - side.float().detach())",
    "moved_detached_moved_back": "return x + (side - side.cpu().detach().to(x.device))",
    "detached_then_indexed_whole": "return x + (side - side.detach()[...])",
    "copied_by_new_tensor": "return x + (side - side.new_tensor(side))",
    "torch_clone_of_detached": "return x + (side - torch.clone(side.detach()))",
    "minus_one_factor_on_one_side": "return x + (side + (-1) * side.detach())",
    "unit_factor_on_one_side": "return x + (side - 1 * side.detach())",
    "factors_on_either_side": "return x + (side * 2 - 2 * side.detach())",
    "live_term_aliased": "s2 = side; return x + (side - s2.detach()).reshape(x.shape)",
    "live_term_kept_on_self": "self.s = side; return x + (side - self.s.detach())",
    "detached_copy_on_its_own_line": "d = side.detach(); return x + (side - d).reshape(x.shape)",
    "detached_copy_added_to_the_output": "d = side.detach(); x = x + side - d; return x",
}

# Forms that need lines of their own: (source lines before the template's, the line that
# adds the spare stage). The finding is on that line, moved down by the lines before it.
HELD_WITH_HEADER = {
    "module_level_helper_of_two_parameters":
        ("def combine(a, b):\n    return a - b\n",
         "return x + combine(side, side.detach()).reshape(x.shape)"),
    "helper_with_a_docstring":
        ('def join(first, second):\n    """Joins two stages."""\n    return first - second\n',
         "return x + join(side, side.detach())"),
    "imported_detach": ("from torch import detach\n", "return x + (side - detach(side))"),
    "imported_sub": ("from torch import sub as minus\n",
                     "return x + minus(side, side.detach())"),
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
    # calls that add or subtract, updates in place, aliases: honest ones
    "loss_summed_by_method": "total = total.add(loss.detach())",
    "loss_summed_detached": "running = running + loss.detach()",
    "ema_update_in_place": "ema.mul_(d).add_(p.detach(), alpha=1 - d)",
    "ema_subtracted_in_place": "avg.sub_((avg - p.detach()) * (1 - d))",
    "loss_accumulated": "loss_sum += loss.detach(); count += 1",
    "centred_by_detached_mean_in_place":
        "y = x.clone(); y += side.reshape(x.shape); y -= side.mean().detach(); return y",
    "error_by_torch_sub": "err = torch.sub(pred, target.detach())",
    "difference_by_alpha": "diff = torch.add(a, b.detach(), alpha=-1)",
    "error_by_method": "err = pred.sub(target.detach()).pow(2).mean()",
    "stacked_other_tensors": "z = torch.stack([a, b.detach()]).sum(0)",
    "losses_summed_for_logging": "total = sum([l.detach() for l in losses]) + loss",
    "accumulated_by_operator": "import operator; acc = operator.add(acc, value.detach())",
    "one_minus_by_rsub": "y = x.rsub(1.0)",
    "previous_output_rebound": "prev = x; x = self.stage1(x); delta = x - prev.detach()",
    "stage_output_cached": "self.cache = side.detach(); return x + side.reshape(x.shape)",
    "detached_side_added": "return x + side.detach().reshape(x.shape)",
    "another_tensor_kept": "return x + (side - self.running.detach()).reshape(x.shape)",
    "detached_copy_only_printed": "d = side.detach(); print((side - d).abs().max()); return x",
    "alias_rebound_before_use":
        "s2 = side; side = self.stage1(x); return x + (side - s2.detach())",
    "double_the_detached": "return x + (2 * side - side.detach())",
    "two_detached_copies": "d = side.detach(); e = side.detach(); return x + (d - e)",
    "tensor_hook_clipping": "side.register_hook(lambda g: g.clamp(-1, 1)); return x",
    "grad_fn_printed": "print(side.grad_fn, side.grad_fn.next_functions); return x",
}

# Whole files a student writes: custom Functions, a training loop with a parameter's change
# after a step printed, an EMA of the weights, a helper that subtracts.
HONEST_FILES = {
    "straight_through_rounding": (
        "import torch\n\n\nclass RoundSTE(torch.autograd.Function):\n"
        "    @staticmethod\n    def forward(ctx, x):\n        return torch.round(x)\n\n"
        "    @staticmethod\n    def backward(ctx, grad):\n        return grad\n"),
    "gradient_scaling": (
        "import torch\nfrom torch.autograd import Function\n\n\nclass Scale(Function):\n"
        "    @staticmethod\n    def forward(ctx, x, scale):\n        ctx.scale = scale\n"
        "        return x.view_as(x)\n\n    @staticmethod\n    def backward(ctx, grad):\n"
        "        return grad * ctx.scale, None\n"),
    "custom_linear": (
        "import torch\n\n\nclass Linear(torch.autograd.Function):\n    @staticmethod\n"
        "    def forward(ctx, x, w):\n        ctx.save_for_backward(x, w)\n"
        "        return x @ w.t()\n\n    @staticmethod\n    def backward(ctx, grad):\n"
        "        x, w = ctx.saved_tensors\n        return grad @ w, grad.t() @ x\n"),
    "setup_context_style": (
        "import torch\n\n\nclass Mul(torch.autograd.Function):\n    @staticmethod\n"
        "    def forward(x, y):\n        return x * y\n\n    @staticmethod\n"
        "    def setup_context(ctx, inputs, output):\n        ctx.save_for_backward(*inputs)\n\n"
        "    @staticmethod\n    def backward(ctx, grad):\n        x, y = ctx.saved_tensors\n"
        "        return grad * y, grad * x\n"),
    "training_loop": (
        "import torch\n\n\ndef train(model, opt, batches, ema, decay=0.99):\n"
        "    running = 0.0\n    for x, y in batches:\n"
        "        old = [p.detach().clone() for p in model.parameters()]\n"
        "        first = next(model.parameters())\n        before = first.detach().clone()\n"
        "        loss = torch.nn.functional.mse_loss(model(x), y)\n"
        "        opt.zero_grad()\n        loss.backward()\n        opt.step()\n"
        "        print('change', (first - before).norm().item())\n"
        "        moved = first - before\n"
        "        for e, p in zip(ema, model.parameters()):\n"
        "            e.mul_(decay).add_(p.detach(), alpha=1 - decay)\n"
        "        running = running + loss.detach()\n"
        "        total = loss.detach()\n        total += loss.detach()\n"
        "    return running, old, moved\n"),
    "helper_that_subtracts": (
        "import torch\n\n\ndef gap(a, b):\n    return a - b\n\n\n"
        "def error(pred, target):\n    return gap(pred, target.detach()).pow(2).mean()\n"),
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
    for expected in ("`side`", "`side.detach()`", "the value cancels but a gradient flows",
                     "does not reach the model's output", "straight-through estimator"):
        assert expected in finding.what, f"expected {expected!r} in: {finding.what}"


def test_one_finding_per_sum_spread_over_lines(tmp_path):
    """The outer chain and the inner difference it flattens are one finding, on the chain's
    first line."""
    findings = [f for f in scan_line(tmp_path, "return (x\n                + (side\n"
                                     "                   - side.detach()).reshape(x.shape))")
                if f.category == CATEGORY]
    assert [f.line for f in findings] == [HELD_LINE], \
        f"expected one finding on line {HELD_LINE}; observed:\n{shown(findings)}"


@pytest.mark.parametrize("header, line", list(HELD_WITH_HEADER.values()),
                         ids=list(HELD_WITH_HEADER))
def test_a_term_cancelled_through_a_helper_or_import_is_held(tmp_path, header, line):
    findings = scan_submission(write(tmp_path, {P10: header + SPARE_STAGE.format(line=line)}))
    expected = HELD_LINE + header.count("\n")
    match = [f for f in findings if (f.line, f.category) == (expected, CATEGORY)]
    assert match and match[0].kind == TAMPERING, (
        f"expected a '{CATEGORY}' finding on line {expected} (`{line}`); observed:\n"
        f"{shown(findings)}\nwhere to look: grader/integrity/cancelling.py Reader.expand")


# adv48 F2: a custom Function whose forward ignores the spare stage's output and whose backward
# hands it the gradient (held at backward's return); F3: `side * 0` with a hook on the
# multiplication's autograd node that puts the gradient back (held at the hook).
JOIN = ("import torch\n\n\nclass _Join(torch.autograd.Function):\n"
        "    @staticmethod\n    def forward(ctx, x, side):\n{forward}"
        "    @staticmethod\n    def backward(ctx, grad):\n        return {gradients}\n")
HELD_FILES = {
    "function_ignoring_an_input": (
        JOIN.format(forward="        return x.clone()\n", gradients="grad, grad"), 10),
    "function_only_saving_an_input": (
        JOIN.format(forward="        ctx.save_for_backward(side)\n        ctx.kept = side\n"
                    "        return x.reshape(side.shape)\n", gradients="(grad, grad.clone())"),
        12),
    "function_of_the_setup_context_style": (
        "import torch\nfrom torch.autograd import Function\n\n\nclass Join(Function):\n"
        "    @staticmethod\n    def forward(x, side):\n        return x * 1\n\n"
        "    @staticmethod\n    def setup_context(ctx, inputs, output):\n        pass\n\n"
        "    @staticmethod\n    def backward(ctx, grad):\n        return grad, grad\n", 16),
    "node_hook_restoring_the_gradient": (
        SPARE_STAGE.format(line="z = side * 0; z.grad_fn.register_hook(lambda gi, go: "
                           "(go[0].clone(),) + tuple(gi[1:])); return x + z"), HELD_LINE),
    "node_prehook_through_a_name": (
        "import torch\n\n\ndef join(x, side):\n    z = side * 0\n    node = z.grad_fn\n"
        "    node.register_prehook(lambda go: (torch.ones_like(go[0]),))\n"
        "    return x + z\n", 7),
    "node_class_hook": (
        "import torch\n\n\ndef join(x, side):\n    z = side * 0\n"
        "    torch.autograd.graph.Node.register_hook(z.grad_fn, restore)\n"
        "    return x + z\n", 6),
}


@pytest.mark.parametrize("source, line", list(HELD_FILES.values()), ids=list(HELD_FILES))
def test_a_gradient_handed_where_no_value_flows_is_held(tmp_path, source, line):
    findings = scan_submission(write(tmp_path, {P10: source}))
    match = [f for f in findings if (f.line, f.category) == (line, CATEGORY)]
    assert match and match[0].kind == TAMPERING, (
        f"expected a '{CATEGORY}' finding on line {line} of\n{source}\nobserved:\n"
        f"{shown(findings)}\nwhere to look: grader/integrity/cancelling.py "
        "_functions_without_values, _node_hooks")


def test_the_words_say_what_a_function_or_a_node_hook_does(tmp_path):
    function, hook = (next(f for f in scan_submission(write(tmp_path / name, {P10: source}))
                           if f.category == CATEGORY)
                      for name in ("function_ignoring_an_input",
                                   "node_hook_restoring_the_gradient")
                      for source in [HELD_FILES[name][0]])
    for expected in ("`_Join.forward` never uses its input `side`", "returns a gradient",
                     "the value cancels but a gradient flows", "a person reads it"):
        assert expected in function.what, f"expected {expected!r} in: {function.what}"
    for expected in ("`z.grad_fn.register_hook`", "autograd", "full gradient",
                     "the value cancels but a gradient flows", "a person reads it"):
        assert expected in hook.what, f"expected {expected!r} in: {hook.what}"


@pytest.mark.parametrize("source", list(HONEST_FILES.values()), ids=list(HONEST_FILES))
def test_honest_files_with_detach_and_custom_functions_give_no_finding(tmp_path, source):
    findings = [f for f in scan_submission(write(tmp_path, {P10: source}))
                if f.category == CATEGORY]
    assert findings == [], (f"expected no '{CATEGORY}' finding in honest\n{source}\n"
                            f"observed:\n{shown(findings)}\n"
                            "where to look: grader/integrity/cancelling.py")


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
