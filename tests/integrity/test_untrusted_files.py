"""What a run leaves in its scratch folder is read back by the grader with the grader's rights:
symlinks, FIFOs and huge files there must neither redirect, block nor flood it."""
from __future__ import annotations

import json
import os
import threading

import pytest

from grader.records import untrusted_files
from grader.records.seal import new_key, sealer
from grader.vgpu.trace import merge_rank_files
from test_seal import run_source

KEY = new_key()


def finishes(fn, seconds=5.0):
    """fn() in a thread; its result, or a failure if it blocks (a FIFO read would hang)."""
    box = {}

    def call():
        try:
            box["value"] = fn()
        except BaseException as error:   # handed to the test's thread below
            box["error"] = error
    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"blocked for more than {seconds} s"
    if "error" in box:
        raise box["error"]
    return box.get("value")


def test_regular_files_are_read_up_to_the_limit(tmp_path):
    path = tmp_path / "f"
    path.write_text("a\nb\n" * 10)
    assert untrusted_files.read_text(path) == ("a\nb\n" * 10, False)
    assert untrusted_files.read_text(path, limit=5) == ("a\nb\na", True)
    assert untrusted_files.read_lines(path, limit=5) == ["a", "b", "a"]
    assert untrusted_files.read_lines(tmp_path / "missing") is None


@pytest.mark.parametrize("make", ["symlink_to_file", "symlink_to_dev_zero", "fifo", "folder"])
def test_anything_but_a_regular_file_is_refused_without_blocking(tmp_path, make):
    path, outside = tmp_path / "trace.jsonl", tmp_path / "outside"
    outside.write_text("secret\n")
    if make == "symlink_to_file":
        path.symlink_to(outside)
    elif make == "symlink_to_dev_zero":
        path.symlink_to("/dev/zero")
    elif make == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
    assert finishes(lambda: untrusted_files.read_lines(path)) is None
    with pytest.raises(untrusted_files.NotARegularFile):
        finishes(lambda: untrusted_files.read_text(path))


def test_replace_never_writes_through_a_symlink(tmp_path):
    outside = tmp_path / "outside"
    outside.write_text("keep me\n")
    path = tmp_path / "trace.jsonl"
    path.symlink_to(outside)
    untrusted_files.replace(path, "new\n")
    assert outside.read_text() == "keep me\n"
    assert not path.is_symlink() and path.read_text() == "new\n"


def test_merge_counts_planted_names_and_leaves_their_targets_alone(tmp_path):
    outside = tmp_path / "grader_file.py"
    outside.write_text("print('the grader')\n")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    trace = scratch / "trace.jsonl"
    trace.symlink_to(outside)                                      # would be overwritten
    (scratch / "trace.jsonl.rank0.66").symlink_to("/dev/zero")     # would be read forever
    os.mkfifo(scratch / "trace.jsonl.rank0.67")                    # would block the read
    seal = sealer(KEY, "trace.jsonl.rank0.68")
    (scratch / "trace.jsonl.rank0.68").write_text(seal({"event": "start", "rank": 0}) + "\n")
    merged = finishes(lambda: merge_rank_files(str(trace), KEY))
    assert merged.unsealed == 3 and [r["event"] for r in merged.records] == ["start"]
    assert outside.read_text() == "print('the grader')\n"
    assert not trace.is_symlink()
    assert [json.loads(line)["event"] for line in trace.read_text().splitlines()] == ["start"]


PLANTING = """
import os, torch
torch.ones(2, device="cuda:0")
os.symlink({victim!r}, ".pdl-trace.jsonl")
os.symlink("/dev/zero", ".pdl-trace.jsonl.rank0.1")
print("planted")
"""


@pytest.mark.slow
def test_a_run_that_plants_symlinks_changes_nothing_outside_and_is_reported(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("the grader's own file\n")
    observation = finishes(lambda: run_source(tmp_path, PLANTING.format(victim=str(victim))), 120)
    assert observation.ok, observation.stderr
    assert victim.read_text() == "the grader's own file\n"
    assert [e["event"] for e in observation.events][:2] == ["nvml", "start"]
    assert observation.integrity == [
        "the trace of practical4/concepts.py (2 GPU(s)): 2 line(s) were not written by the "
        "grader's instrumentation (no valid seal)"]
