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


def scanned(tmp_path, text: str, monkeypatch) -> tuple[list, int]:
    """(the findings, the number of resolutions the scan made) for hw3/model_parallel.py."""
    folder = tmp_path / "hw3"
    folder.mkdir(exist_ok=True)
    (folder / "model_parallel.py").write_text(text)
    calls = [0]
    resolve = source._Visitor.resolve

    def counted(self, node):
        calls[0] += 1
        return resolve(self, node)

    monkeypatch.setattr(source._Visitor, "resolve", counted)
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
        "a person should read it" in held[0].what and "too intricate" in held[0].what, (
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
