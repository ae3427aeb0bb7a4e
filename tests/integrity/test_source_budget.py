"""The scan reads at most MAX_TOTAL_SOURCE_BYTES of a submission's Python: a red team's twelve
generated modules of 2 MB took five minutes to read, and a hundred would have outlasted the
batch's time limit in every batch. The files past it are held unread, the rest read as ever."""
from __future__ import annotations

import time

from grader.integrity import scan as scan_module
from grader.integrity.scan import scan_submission


def test_python_past_the_budget_is_held_unread_and_the_rest_is_read(tmp_path, monkeypatch):
    monkeypatch.setattr(scan_module, "MAX_TOTAL_SOURCE_BYTES", 60_000)
    folder = tmp_path / "hw3"
    folder.mkdir()
    (folder / "model_parallel.py").write_text("import torch\ntorch.matmul = lambda a, b: a\n")
    filler = "x = [" + ", ".join(["1"] * 4000) + "]\n"     # about 12 KB of ordinary code
    for i in range(8):
        (folder / f"helper_{i}.py").write_text(filler)
    started = time.process_time()
    findings = scan_submission(tmp_path)
    unread = sorted(f.file for f in findings if f.category == "unreadable")
    assert len(unread) == 4 and all("helper_" in f for f in unread), unread
    assert all("add up to more than" in f.what for f in findings if f.category == "unreadable")
    assert any(f.file == "hw3/model_parallel.py" and f.category == "patching" for f in findings), (
        "the small files, the script among them, are still read: its patching is found")
    assert time.process_time() - started < 30


def test_homework_sized_code_is_read_whole(tmp_path):
    folder = tmp_path / "practical5"
    folder.mkdir()
    (folder / "practical5_dp.py").write_text("import torch\nx = torch.ones(2)\n" * 2000)
    assert not [f for f in scan_submission(tmp_path) if f.category == "unreadable"]
