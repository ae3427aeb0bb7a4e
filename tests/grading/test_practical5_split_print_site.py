"""Where Practical 5's feedback on the split says the script prints each replica's batch.

A red team's adv41 F6 (p5_liis): an nn.Sequential with a forward pre-hook that prints "Inside
model on device ..." was told the lines were "printed inside MLP.forward", a class it does not
have. The place is read from the script: the template's MLP.forward, a hook (named as one), a
method of the student's own class; none where only the training loop prints it.
"""
from __future__ import annotations

import pytest

from grader.checks.split_print_site import split_print_site

TEMPLATE = '''
class MLP(nn.Module):
    def forward(self, x):
        print(f"Inside model on device {x.device}, shape: {x.shape}\\n", end="")
        return self.net(x)
'''
PRE_HOOK = '''
model = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 512))
def show_split(module, inp):
    t = inp[0]
    print(f"Inside model on device {t.device}, shape: {t.shape}")
model[0].register_forward_pre_hook(show_split)
'''
FORWARD_HOOK = '''
def report(module, inputs, output):
    print("replica", output.device, tuple(output.size()))
net.register_forward_hook(report)
'''
OWN_CLASS = '''
class Net(nn.Module):
    def forward(self, x):
        return self.body(self.show(x))
    def show(self, x):
        print("Inside model on device", x.device, "shape:", x.shape)
        return x
'''
TRAINING_LOOP_ONLY = '''
for step in range(10):
    print(f"Inside model on device {x.device}, shape: {x.shape}")
    out = model(x)
'''


@pytest.mark.parametrize("source, said", [
    (TEMPLATE, "inside MLP.forward"),
    (PRE_HOOK, "inside show_split, a forward pre-hook on model[0]"),
    (FORWARD_HOOK, "inside report, a forward hook on net"),
    (OWN_CLASS, "inside Net.show"),
    (TRAINING_LOOP_ONLY, None),
    ("def broken(:\n", None),
], ids=["template", "pre-hook", "forward-hook", "own-class", "training-loop", "unparsable"])
def test_the_place_is_the_scripts_own(tmp_path, source, said):
    script = tmp_path / "practical5_dp.py"
    script.write_text(source, encoding="utf-8")
    assert split_print_site(script) == said, (
        f"expected {said!r} for the script\n{source}\nobserved {split_print_site(script)!r}")


def test_a_missing_script_has_no_place(tmp_path):
    assert split_print_site(tmp_path / "practical5_dp.py") is None
