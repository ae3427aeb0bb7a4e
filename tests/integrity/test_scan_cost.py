"""The source scan's cost grows with a file's size, not its square (a red team's adv34 F3): a
file whose variables all alias one another is held for a person once its reading outgrows the
file's allowance (grader/integrity/allowance.py), and honest large files are read whole.

The bounds count the scan's resolutions of expressions (Visitor.resolve, the quadratic part's
inner step) rather than its time, which a loaded machine stretches."""
from __future__ import annotations

import pytest

from grader.integrity import allowance, source
from grader.integrity.scan import scan_submission


def aliases(count: int) -> str:
    """adv34 F3's file: each variable can be the parameter (torch) or the variable before it,
    and each is put through a loop that sets an attribute on it."""
    lines = ["import torch", "def g(T):", "    v0 = T"]
    for i in range(1, count):
        lines.append(f"    v{i} = T if {i} % 2 else v{i-1}")
        lines.append(f"    for k{i} in (v{i}, torch.Tensor):\n        k{i}.tag = {i}")
    return "\n".join(lines + ["g(torch)"]) + "\n"


def pasted_dataset(rows: int) -> str:
    body = ",\n".join(f"    [{i % 7}.5, {i % 11}.25, {i % 13}.125, {i}]" for i in range(rows))
    return f"import torch\nDATA = [\n{body}\n]\nX = torch.tensor(DATA)\n"


def helpers(count: int) -> str:
    """Homework-like functions under new names, each aliasing torch's modules a little."""
    return "import torch\nimport torch.nn as nn\n" + "".join(
        f"def step_{i}(model, x, lr=0.1):\n    opt = torch.optim.SGD(model.parameters(), lr=lr)\n"
        f"    layer = nn.Linear(4, 4)\n    y = layer(x) if x is not None else model(x)\n"
        f"    loss = y.sum()\n    loss.backward()\n    opt.step()\n    return loss.item()\n\n"
        for i in range(count))


def counting(monkeypatch, owner, name: str) -> list[int]:
    """[how many times owner.name is called from now on]."""
    calls = [0]
    original = getattr(owner, name)

    def counted(self, *arguments, **keywords):
        calls[0] += 1
        return original(self, *arguments, **keywords)

    monkeypatch.setattr(owner, name, counted)
    return calls


def scanned(tmp_path, text: str, monkeypatch) -> tuple[list, int]:
    """(the findings, the number of resolutions the scan made) for hw3/model_parallel.py."""
    folder = tmp_path / "hw3"
    folder.mkdir(exist_ok=True)
    (folder / "model_parallel.py").write_text(text)
    calls = counting(monkeypatch, source._Visitor, "resolve")
    return scan_submission(tmp_path), calls[0]


def test_aliasing_chain_costs_in_proportion_to_its_size(tmp_path, monkeypatch):
    (tmp_path / "small").mkdir()
    (tmp_path / "large").mkdir()
    _small, small_calls = scanned(tmp_path / "small", aliases(200), monkeypatch)
    large, large_calls = scanned(tmp_path / "large", aliases(800), monkeypatch)
    assert large_calls <= 6 * small_calls, (
        f"expected the resolutions to grow about 4x for a 4x longer file (linear), observed "
        f"{small_calls} -> {large_calls} ({large_calls / small_calls:.1f}x; 16x is quadratic): "
        "see source.Visitor.owners_of / resolved and scopes.Containers._of_variable")
    assert any(f.category == "patching" and "torch.tag" in f.what for f in large), \
        "the patching read before the reading stops is still said"


def test_aliasing_chain_past_its_allowance_is_held_for_a_person(tmp_path, monkeypatch):
    findings, calls = scanned(tmp_path, aliases(1000), monkeypatch)
    held = [f for f in findings if f.category == "unreadable"]
    assert [f.file for f in held] == ["hw3/model_parallel.py"] and \
        "it is for a person to read" in held[0].what and "too intricate" in held[0].what, (
            f"expected hw3/model_parallel.py held as too intricate to read, observed {held}")
    assert held[0].kind == "tampering", "held: withheld for review, not only noted"


def test_allowance_stops_a_reading_at_its_limit(tmp_path, monkeypatch):
    """The mechanism alone: a file the allowance cannot cover is held, whatever its shape."""
    monkeypatch.setattr(allowance, "WORK_BASE", 1)
    monkeypatch.setattr(allowance, "WORK_PER_NODE", 0)
    findings, _calls = scanned(tmp_path, "import torch\nfor t in (torch,):\n    t.add = 1\n",
                               monkeypatch)
    assert [f.category for f in findings if f.file == "hw3/model_parallel.py"] == \
        ["unreadable"], findings


@pytest.mark.parametrize("text", [pasted_dataset(6000), helpers(450)],
                         ids=["pasted_dataset", "helpers"])
def test_large_honest_files_are_read_whole_well_within_their_allowance(tmp_path, monkeypatch,
                                                                       text):
    spent = []
    made = allowance.Allowance.__init__

    def kept(self, nodes):
        made(self, nodes)
        spent.append(self)

    monkeypatch.setattr(allowance.Allowance, "__init__", kept)
    findings, _calls = scanned(tmp_path, text, monkeypatch)
    assert len(text) > 100_000
    assert not [f for f in findings if f.category == "unreadable"], findings
    worst = max(a.spent / a.limit for a in spent)
    assert worst < 0.1, (f"expected an honest file to use under a tenth of its allowance, "
                         f"observed {worst:.0%}: see grader/integrity/allowance.py")


def classes(count: int) -> str:
    """Homework-like models under new names (benchmarks/scan_size.py's `ordinary` shape): each
    `super().__init__()` can run every class's `__init__` (the scan matches a method call by the
    method's name), and each `__init__` reads its parameters."""
    return "import torch\nimport torch.nn as nn\n" + "".join(
        f"class Net{i}(nn.Module):\n    def __init__(self, width={i % 7 + 8}):\n"
        f"        super().__init__()\n        self.layer = nn.Linear(width, 2)\n\n"
        f"    def forward(self, x):\n        return self.layer(x).softmax(dim=-1)\n\n\n"
        for i in range(count))


def trainers(count: int) -> str:
    """Training loops under new names, each with its own `losses = []` (a name the constant
    folding reads through every binding of it in the file, whatever the function)."""
    return "import torch\n" + "".join(
        f"def train_{i}(model, x):\n    losses = []\n    for step in range(3):\n"
        f"        losses.append(model(x).item())\n"
        f"    print(f'loss {{sum(losses) / len(losses):.4f}}')\n    return losses\n\n\n"
        for i in range(count))


def call_pairings(monkeypatch) -> callable:
    """The (call, function it can run) pairs a scan keeps and reads: the entries of
    Containers.calls_to and the calls Containers._given reads for a parameter."""
    from grader.integrity import scopes
    made = []
    init = scopes.Containers.__init__

    def kept(self, *arguments, **keywords):
        init(self, *arguments, **keywords)
        made.append(self)

    monkeypatch.setattr(scopes.Containers, "__init__", kept)
    read = counting(monkeypatch, scopes.Containers, "_given")
    return lambda: read[0] + sum(len(pairs) for c in made for pairs in c.calls_to.values())


def foldings(monkeypatch) -> callable:
    """How many times a scan's constant folding (constants.Folder.values) is asked."""
    from grader.integrity import constants
    asked = counting(monkeypatch, constants.Folder, "values")
    return lambda: asked[0]


@pytest.mark.parametrize("make, counter, where", [
    (classes, call_pairings, "scopes.Containers.calls_of / by_method_name"),
    (trainers, foldings, "constants.Folder._name")], ids=["method_calls_by_name", "folded_names"])
def test_homework_like_code_costs_in_proportion_to_its_size(tmp_path, monkeypatch, make,
                                                             counter, where):
    """N classes each calling `super().__init__()` (every class's __init__ by that name) and N
    functions each binding `losses = []` were read N * N times: 2 MiB of such code took over
    300 s (benchmarks/scan_size.py, `ordinary`)."""
    count = counter(monkeypatch)
    work = []
    for size in (40, 160):
        (tmp_path / str(size)).mkdir()
        before = count()
        findings, _calls = scanned(tmp_path / str(size), make(size), monkeypatch)
        assert not findings, findings
        work.append(count() - before)
    small, large = work
    assert large <= 6 * max(small, 40), (
        f"expected the work to grow about 4x for 4x the file (linear), observed {small} -> "
        f"{large} ({large / max(small, 1):.1f}x; 16x is quadratic): see {where}")


def test_a_method_called_by_name_among_many_classes_still_hands_its_arguments(tmp_path,
                                                                           monkeypatch):
    """Calls by a method's name kept once per name (not per method) still hand each method of
    that name what they pass, its `self` included where called through its class."""
    text = classes(30) + (
        "class Patcher:\n    def patch(self, value=None):\n        self.flag = value\n\n"
        "    def hand(self, module, value=None):\n        module.other = value\n\n\n"
        "Patcher.patch(torch.cuda, 2)\nPatcher().hand(torch.nn, 1)\n")
    findings, _calls = scanned(tmp_path, text, monkeypatch)
    said = sorted(f.what for f in findings if f.category == "patching")
    assert said == ["replaces torch.cuda.flag", "replaces torch.nn.other"], (
        f"expected the patching through Patcher.patch's self and hand's module, observed {said}:"
        " see scopes.Containers.calls_of")
