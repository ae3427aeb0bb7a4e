"""Sealed observations: what the instrumentation writes verifies; anything else is counted,
never used. The last tests run real scripts in the sandbox with a per-run key."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from grader.harness.execute import run_script
from grader.records.seal import new_key, sealer, verify_lines
from grader.vgpu.trace import merge_rank_files

KEY = new_key()
RECORDS = [{"event": "start", "rank": 0, "t": 0.0}, {"event": "to", "src": "cuda:0",
                                                     "dst": "cuda:1", "shape": [64, 2000]},
           {"event": "forward_out", "module": "Linear", "sum": 1.5, "device": object()}]


def sealed(stream="trace.jsonl.rank0.7", key=KEY) -> list[str]:
    seal = sealer(key, stream)
    return [seal(record) for record in RECORDS]


def test_what_the_instrumentation_writes_verifies_as_written():
    verified = verify_lines(sealed(), KEY, "trace.jsonl.rank0.7")
    assert verified.problems == []
    assert [r["event"] for r in verified.records] == ["start", "to", "forward_out"]
    assert all("seal" not in r and "seq" not in r for r in verified.records)
    assert isinstance(verified.records[2]["device"], str), "values are kept as JSON gave them"


def test_appended_and_altered_lines_are_not_used_and_are_counted():
    lines = sealed()
    forged = json.dumps({"event": "to", "src": "cuda:0", "dst": "cuda:1"})
    altered = json.loads(lines[1])
    altered["dst"] = "cuda:0"       # a real record, changed after sealing
    verified = verify_lines([lines[0], json.dumps(altered), lines[2], forged], KEY,
                            "trace.jsonl.rank0.7")
    assert [r["event"] for r in verified.records] == ["start", "forward_out"]
    assert verified.unsealed == 2
    assert "2 line(s) were not written by the grader's instrumentation" in verified.problems[0]


def test_a_record_cut_out_is_a_gap_and_the_rest_still_verify():
    lines = sealed()
    verified = verify_lines([lines[0], lines[2]], KEY, "trace.jsonl.rank0.7")
    assert [r["event"] for r in verified.records] == ["start", "forward_out"]
    assert verified.missing == 1 and verified.unsealed == 0
    assert "1 record(s) written by the grader's instrumentation were removed" in verified.problems


def test_replayed_or_reordered_records_do_not_count_twice():
    lines = sealed()
    verified = verify_lines([lines[0], lines[1], lines[1], lines[2]], KEY, "trace.jsonl.rank0.7")
    assert [r["event"] for r in verified.records] == ["start", "to", "forward_out"]
    assert verified.unsealed == 1
    backwards = verify_lines([lines[2], lines[0], lines[1]], KEY, "trace.jsonl.rank0.7")
    assert backwards.unsealed == 2 and len(backwards.records) == 1


def test_records_copied_into_another_file_or_sealed_with_another_key_fail():
    assert verify_lines(sealed(), KEY, "trace.jsonl.rank1.8").unsealed == 3
    other_key = new_key()
    assert verify_lines(sealed(key=other_key), KEY, "trace.jsonl.rank0.7").unsealed == 3


def test_a_torn_last_line_is_a_killed_writer_not_a_forgery():
    lines = sealed()
    verified = verify_lines(lines[:2] + [lines[2][:25]], KEY, "trace.jsonl.rank0.7")
    assert verified.torn and verified.problems == [] and len(verified.records) == 2
    torn_inside = verify_lines([lines[0], lines[1][:20], lines[2]], KEY, "trace.jsonl.rank0.7")
    assert torn_inside.unsealed == 1


def test_without_a_key_records_are_plain_json_and_read_as_they_are():
    plain = sealer(None, "x")({"event": "start"})
    assert json.loads(plain) == {"event": "start"}
    assert verify_lines([plain, "not json", plain], None, "x").records == [{"event": "start"}] * 2


def test_merge_keeps_only_verified_records_and_counts_what_was_there_before(tmp_path):
    trace = tmp_path / "trace.jsonl"
    trace.write_text('{"event": "forward_out", "sum": 1}\n')        # planted before the merge
    for rank, pid in ((0, 11), (1, 12)):
        seal = sealer(KEY, f"trace.jsonl.rank{rank}.{pid}")
        lines = [seal({"event": "start", "rank": rank}),
                 seal({"event": "to", "rank": rank})]
        if rank == 1:
            lines.append(json.dumps({"event": "to", "rank": 1}))  # appended by the script
        (tmp_path / f"trace.jsonl.rank{rank}.{pid}").write_text("\n".join(lines) + "\n")
    merged = merge_rank_files(str(trace), KEY)
    assert merged.unsealed == 2
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    assert [(e["rank"], e["event"]) for e in events] == [(0, "start"), (0, "to"),
                                                         (1, "start"), (1, "to")]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trace.jsonl"]


def test_merge_without_a_key_adds_to_an_earlier_trace(tmp_path):
    trace = tmp_path / "trace.jsonl"
    trace.write_text('{"event": "start", "rank": 0}\n')
    (tmp_path / "trace.jsonl.rank0.5").write_text('{"event": "exit", "rank": 0}\n')
    merge_rank_files(str(trace))
    assert [json.loads(line)["event"] for line in trace.read_text().splitlines()] == [
        "start", "exit"]


# -- real runs: the key is drawn per run and never leaves the grader's side -------------------

def run_source(tmp_path: Path, source: str, gpus: int = 2):
    submission = tmp_path / "submission"
    (submission / "practical4").mkdir(parents=True)
    (submission / "practical4" / "concepts.py").write_text(source)
    return run_script(submission, "practical4/concepts.py", gpus=gpus, timeout_s=120,
                      scratch_root=tmp_path)


FORKING = """
import os, torch
x = torch.ones(4, 3, device="cuda:0")
pid = os.fork()
if pid == 0:                       # a forked child (a DataLoader worker, say) moves a tensor
    x.to("cuda:1")
    os._exit(0)
os.waitpid(pid, 0)
x.to("cuda:1")
print("done")
"""


def test_a_forked_child_writes_its_own_sealed_file(tmp_path):
    observation = run_source(tmp_path, FORKING)
    assert observation.ok, observation.stderr
    assert observation.integrity == []
    moves = [e for e in observation.events if e["event"] == "to" and e.get("dst") == "cuda:1"]
    pids = {e["pid"] for e in observation.events if e["event"] == "start"}
    assert len(moves) == 2, "the parent's and the child's move are both observed"
    assert len(pids) == 1, "the child continues its parent's trace, it does not start another"


APPENDING = """
import os, torch
torch.ones(2, device="cuda:0")
for name in os.listdir("."):
    if "trace" in name:
        with open(name, "a") as handle:
            handle.write('{"event": "to", "rank": 0, "src": "cuda:0", "dst": "cuda:1"}\\n')
"""


def test_lines_a_script_adds_to_its_trace_are_reported_and_dropped(tmp_path):
    observation = run_source(tmp_path, APPENDING)
    assert observation.ok, observation.stderr
    assert not [e for e in observation.events if e["event"] == "to" and e.get("dst") == "cuda:1"]
    assert observation.integrity == [
        "the trace of practical4/concepts.py (2 GPU(s)): 1 line(s) were not written by the "
        "grader's instrumentation (no valid seal)"]


@pytest.mark.parametrize("name", ["PDL_SEAL_KEY", "PDL_VGPU_TRACE"])
def test_the_key_is_in_the_run_only(tmp_path, name):
    # The scan reports any code naming these; here: they reach the run, and differ per run.
    source = f"import os\nprint(os.environ.get({name!r}, 'absent'))\n"
    first, second = run_source(tmp_path / "a", source), run_source(tmp_path / "b", source)
    assert first.stdout.strip() != "absent"
    assert first.stdout != second.stdout
