"""The closing check (grader/vgpu/guard.py) and torch's optimizers: what torch itself does to
an optimizer class is no replacement, what a submission does to one still is.

torch wraps an optimizer class's `step` in its profile-hook wrapper the first time the class is
built (`Optimizer._patch_step_function`); the wrapper runs the optimizer step hooks through
which the instrumentation observes every step. A class that inherits its `step` (AdamW from
Adam in torch 2.13) gets that wrapper as a name of its own: the guard had read the added name
as tampering, and an honest Practical 10 submission with AdamW was held at 0 of 12 (its checks
gave 10). The fast tests undo in this process whatever wrapping earlier tests left, so each
starts as a fresh grading process does, with no optimizer built yet.
"""
from __future__ import annotations

import functools

import pytest
import torch
from torch.optim.optimizer import register_optimizer_step_post_hook

from grader.vgpu import guard


def _optimizer_classes() -> list[type]:
    return [value for value in vars(torch.optim).values()
            if isinstance(value, type) and issubclass(value, torch.optim.Optimizer)
            and value is not torch.optim.Optimizer]


@pytest.fixture
def unbuilt_optimizers(monkeypatch):
    """Every torch.optim class as it is before it is first built: torch's profile-hook wrapper
    taken off `step` (a name of its own again deleted), undone after the test."""
    for cls in _optimizer_classes():
        step = vars(cls).get("step")
        if not getattr(step, "hooked", False):
            continue
        inner = step.__wrapped__
        inherited = any(vars(base).get("step") is inner for base in cls.__mro__[1:])
        if inherited:
            monkeypatch.delattr(cls, "step")
        else:
            monkeypatch.setattr(cls, "step", inner)
    yield
    monkeypatch.undo()


def _dense(cls):
    model = torch.nn.Linear(4, 3)
    optimizer = cls(model.parameters(), lr=0.01)

    def closure():
        optimizer.zero_grad()
        loss = model(torch.randn(8, 4)).pow(2).mean()
        loss.backward()
        return loss
    return optimizer, closure


def _sparse(cls):
    model = torch.nn.Embedding(10, 3, sparse=True)
    optimizer = cls(model.parameters(), lr=0.01)

    def closure():
        optimizer.zero_grad()
        loss = model(torch.tensor([1, 2, 5])).pow(2).mean()
        loss.backward()
        return loss
    return optimizer, closure


def _build_and_step(cls, steps: int = 2) -> int:
    """Build an optimizer of `cls` and step it as training code does; how many steps the
    optimizer step hooks (the instrumentation's way of seeing steps) saw."""
    seen = []
    handle = register_optimizer_step_post_hook(lambda optimizer, args, kwargs: seen.append(1))
    try:
        optimizer, closure = (_sparse if cls is torch.optim.SparseAdam else _dense)(cls)
        for _ in range(steps):
            if cls is torch.optim.LBFGS:
                optimizer.step(closure)
            else:
                closure()
                optimizer.step()
    finally:
        handle.remove()
    return len(seen)


BUILT_IN = [cls for cls in _optimizer_classes() if cls.__name__ != "Muon"]   # 2-D only


@pytest.mark.parametrize("cls", BUILT_IN, ids=lambda cls: cls.__name__)
def test_every_built_in_optimizer_built_and_stepped_is_no_replacement(unbuilt_optimizers, cls):
    check = guard.make_check()
    assert _build_and_step(cls) == 2, f"{cls.__name__}: torch's step hooks ran for each step"
    found = check()
    assert found == [], (f"{cls.__name__} built and stepped: expected no replacement, observed "
                         f"{found} (grader/vgpu/guard.py, torch_added / _torch_rewrap_test)")


def test_adamw_built_before_adam_and_after_it(unbuilt_optimizers):
    """AdamW first gets a `step` of its own (torch's wrapper of Adam's); Adam built later gets
    its own wrapper too, and an AdamW built after that keeps what it has."""
    check = guard.make_check()
    _build_and_step(torch.optim.AdamW)
    assert "step" in vars(torch.optim.AdamW), "the case of the bug: the name was added"
    _build_and_step(torch.optim.Adam)
    assert _build_and_step(torch.optim.AdamW) == 2
    assert check() == []


class OwnAdam(torch.optim.Adam):
    """A student's optimizer class: Adam with a learning-rate floor."""

    def step(self, closure=None):
        for group in self.param_groups:
            group["lr"] = max(group["lr"], 1e-4)
        return super().step(closure)


class OwnAdamW(torch.optim.AdamW):
    """A student's subclass that inherits everything."""


@pytest.mark.parametrize("cls", [OwnAdam, OwnAdamW], ids=lambda cls: cls.__name__)
def test_a_students_own_optimizer_subclass_is_no_replacement(unbuilt_optimizers, cls):
    """torch wraps the subclass's `step` (its own or the one it inherits) on the subclass, a
    class of the submission's own that is not watched; torch's classes are left as they were."""
    check = guard.make_check()
    assert _build_and_step(cls) == 2, f"{cls.__name__}: torch's step hooks ran for each step"
    found = check()
    assert found == [], f"{cls.__name__}: expected no replacement, observed {found}"


def test_what_torch_compile_does_to_optimizers_is_no_replacement(unbuilt_optimizers,
                                                                  monkeypatch):
    """The first torch.compile runs torch._dynamo's TorchPatcher.patch: LBFGS's and SparseAdam's
    `step` and every class's `_init_group` wrapped in `disable` (AdamW's inherited one, so an
    added name). Built later, LBFGS's step gets torch's profile-hook wrapper around that."""
    from torch._dynamo.decorators import disable
    check = guard.make_check()
    for cls in (torch.optim.LBFGS, torch.optim.SparseAdam):
        monkeypatch.setattr(cls, "step", disable(cls.step, reason="not supported"))
    for cls in (torch.optim.AdamW, torch.optim.SGD):
        monkeypatch.setattr(cls, "_init_group", disable(cls._init_group, reason="x"),
                            raising=False)
    for cls in (torch.optim.LBFGS, torch.optim.SparseAdam, torch.optim.AdamW, torch.optim.SGD):
        assert _build_and_step(cls) == 2, cls.__name__
    found = check()
    assert found == [], f"torch.compile's own patches: expected none, observed {found}"


def _own_step(self, closure=None):
    return None


def _students_wrapper():
    adam_step = torch.optim.Adam.step

    @functools.wraps(adam_step)
    def step(self, closure=None):          # looks like Adam's, written in the student's file
        return adam_step(self, closure)
    return step


def _torch_wrapper_of_own_step():
    # torch's profile-hook wrapper, but around the student's function
    return torch.optim.Optimizer.profile_hook_step(_own_step)


def _torch_wrapper_claiming_adams_step():
    # torch's profile-hook wrapper around the student's function, `__wrapped__` set to what
    # the guard expects: what the wrapper calls (its closure) is still the student's
    step = torch.optim.Optimizer.profile_hook_step(_own_step)
    step.__wrapped__ = torch.optim.Adam.step
    return step


def _without_step_hooks(step):
    # One of torch's wrappers that is not the profile-hook wrapper (torch._dynamo's `disable`,
    # as torch.compile puts around LBFGS's step), marked as hooked so that torch never wraps
    # it: the optimizer's steps would run without the step hooks, unseen. (`disable`, not
    # torch._disable_dynamo: that one caches its inner wrapper on the function it wraps, which
    # functools.wraps then copies onto a profile-hook wrapper made later in this process.)
    from torch._dynamo.decorators import disable
    wrapped = disable(step, reason="a forgery")
    wrapped.hooked = True
    return wrapped


def _step_hooks_bypassed():
    return _without_step_hooks(torch.optim.Adam.step)


FORGED_STEPS = {
    "a lambda": lambda: (lambda self, closure=None: None),
    "a wrapper of the student's own": _students_wrapper,
    "torch's wrapper of the student's step": _torch_wrapper_of_own_step,
    "torch's wrapper claiming Adam's step": _torch_wrapper_claiming_adams_step,
    "Adam's step without the step hooks": _step_hooks_bypassed,
}


@pytest.mark.parametrize("forgery", list(FORGED_STEPS))
def test_a_students_replacement_of_adamws_step_is_named(unbuilt_optimizers, monkeypatch,
                                                        forgery):
    check = guard.make_check()
    monkeypatch.setattr(torch.optim.AdamW, "step", FORGED_STEPS[forgery](), raising=False)
    _build_and_step(torch.optim.AdamW)
    found = check()
    monkeypatch.undo()
    assert found == ["torch.optim.AdamW.step"], (
        f"{forgery}: expected torch.optim.AdamW.step named, observed {found}")


@pytest.mark.parametrize("built_first", [False, True], ids=["unbuilt", "built first"])
def test_an_own_step_rewrapped_without_the_step_hooks_is_named(unbuilt_optimizers,
                                                               monkeypatch, built_first):
    """SGD has a `step` of its own: one of torch's wrappers that does not run the step hooks
    put in its place is named, whether or not SGD had been built; one around torch's
    profile-hook wrapper (SGD built first) still runs them and is no replacement."""
    if built_first:
        _build_and_step(torch.optim.SGD)
    check = guard.make_check()
    monkeypatch.setattr(torch.optim.SGD, "step", _without_step_hooks(torch.optim.SGD.step))
    seen = _build_and_step(torch.optim.SGD)
    found = check()
    monkeypatch.undo()
    if built_first:
        assert (seen, found) == (2, []), (seen, found)
    else:
        assert (seen, found) == (0, ["torch.optim.SGD.step"]), (
            f"expected the steps unseen and SGD.step named, observed {seen} steps, {found}")
