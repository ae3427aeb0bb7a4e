"""`pdl-grade run`: constants rewritten at the top of a script, errors reported plainly."""
import subprocess
import sys

import pytest

from grader.vgpu.run_on_node import ConstantNotFound, parse_assignment, rewrite_constants


def test_top_level_constants_are_rewritten_and_nothing_else():
    source = "BATCH_SIZE = 64\nMICRO_BATCHES: int = 4\ndef f():\n    BATCH_SIZE = 1\n    return BATCH_SIZE\n"
    namespace = {}
    exec(compile(rewrite_constants(source, "s.py", {"BATCH_SIZE": 128, "MICRO_BATCHES": 8}),
                 "s.py", "exec"), namespace)
    assert namespace["BATCH_SIZE"] == 128 and namespace["MICRO_BATCHES"] == 8
    assert namespace["f"]() == 1, "assignments inside functions are the student's own"


def test_missing_constant_is_named():
    with pytest.raises(ConstantNotFound, match="MICRO_BATCHES must be assigned at the top level"):
        rewrite_constants("def main():\n    MICRO_BATCHES = 4\n", "sample.py", {"MICRO_BATCHES": 2})


@pytest.mark.parametrize("text,expected", [("DEPTH=20", ("DEPTH", 20)), ("BROKEN_MP=True", ("BROKEN_MP", True)),
                                           ("NAME=abc", ("NAME", "abc"))])
def test_assignments_parse_as_python_literals(text, expected):
    assert parse_assignment(text) == expected


def test_cli_runs_a_script_with_a_changed_constant(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("import torch\nN = 1\nprint(N, torch.cuda.device_count(), "
                      "torch.ones(1, device=f'cuda:{N}').device)\n")
    done = subprocess.run([sys.executable, "-m", "grader", "run", "--gpus", "3", "--virtual",
                           "--set", "N=2", str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "2 3 cuda:2"


def test_cli_reports_a_crash_with_the_scripts_line(tmp_path):
    script = tmp_path / "s.py"
    trace = tmp_path / "t.jsonl"
    script.write_text("import torch\nx = torch.ones(2, device='cuda:0')\ny = x + torch.ones(2, device='cuda:1')\n")
    done = subprocess.run([sys.executable, "-m", "grader", "run", "--gpus", "2", "--virtual",
                           "--trace", str(trace), str(script)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 1
    assert "Expected all tensors to be on the same device" in done.stderr
    assert '"site": "s.py:3"' in trace.read_text()


@pytest.mark.parametrize("head, text", [
    (b"\xef\xbb\xbf", "N = 1\nprint('bom', N)\n"),                        # Notepad's UTF-8 with BOM
    (b"# -*- coding: cp1252 -*-\n", "# M\xfcller's run\nN = 1\nprint('cp1252', N)\n"),
])
def test_a_script_python_reads_is_read_the_same_way(tmp_path, head, text):
    """A BOM or a coding line: `python` runs the file; the grader had failed every check of it
    (SyntaxError U+FEFF, UnicodeDecodeError) and given 0."""
    script = tmp_path / "s.py"
    script.write_bytes(head + text.encode("cp1252" if b"cp1252" in head else "utf-8"))
    done = subprocess.run([sys.executable, "-m", "grader", "run", "--gpus", "1", "--virtual",
                           "--set", "N=2", str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == "2", done.stdout


def test_a_crash_records_where_the_scripts_layers_were(tmp_path):
    """A layer placed but never run (Practical 4's layer2, the script stopped by layer1's
    input left on the CPU) had been "on no device seen" (a TA's audit): where an exception
    stops the script, the modules its own frames held are recorded, by name."""
    import json
    script = tmp_path / "s.py"
    trace = tmp_path / "t.jsonl"
    script.write_text(
        "import torch\nimport torch.nn as nn\n\n"
        "def main():\n"
        "    layer1 = nn.Linear(4, 8).to('cuda:0')\n"
        "    layer2 = nn.Linear(8, 4).to('cuda:1')\n"
        "    x = torch.randn(2, 4)\n"
        "    out = layer2(layer1(x).to('cuda:1'))\n\n"
        "main()\n")
    done = subprocess.run([sys.executable, "-m", "grader", "run", "--gpus", "2", "--virtual",
                           "--trace", str(trace), str(script)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 1 and "same device" in done.stderr, done.stderr
    events = [json.loads(line) for line in trace.read_text().splitlines() if line.strip()]
    stopped = {e["name"]: [layer["device"] for layer in e["layers"]]
               for e in events if e.get("event") == "placement_at_error"}
    assert stopped == {"layer1": ["cuda:0"], "layer2": ["cuda:1"]}, stopped
    # The forward passes' own placements are as before: layer1's only (layer2 never ran).
    assert [e["layers"][0]["params"] for e in events if e.get("event") == "placement"] == [40]
