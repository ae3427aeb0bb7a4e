"""The rows each optimizer step of a rank trains on, at every step, not the first only.

Rows are recorded as the passes run before the first step, and after it as a backward first
reaches a pass (the trace's `step_rows`: grader/vgpu/rows.py). A step's rows are those of the
passes that train it (step_batches: after the last reset of the step, a pass on the very memory
of an earlier one counted once); where any of them is not known (the records spent, a pass that
ran on more rows than its argument), the step's rows are not known, never other rows.
"""
from __future__ import annotations

from typing import NamedTuple

from grader.checks.practical_measures import (first_step_rows, first_step_rows_dropped,
                                              recorded_rows, same_row, step_batches)
from grader.checks.support import close


def later_rows(run, rank: int) -> dict:
    """{pass number: its input's rows, or None where not recorded} of the rank's passes
    reached by a backward after its first step."""
    known = recorded_rows(run, rank)
    known.update({e["rows_id"]: e["rows"] for e in run.events
                  if e.get("event") == "step_rows" and e.get("rank", 0) == rank
                  and isinstance(e.get("rows_id"), str) and e.get("rows")})
    found = {}
    for event in run.events:
        if event.get("event") != "step_rows" or event.get("rank", 0) != rank:
            continue
        rows = event.get("rows")
        if rows is None and isinstance(event.get("rows_as"), str):
            rows = known.get(event["rows_as"])
        found[event.get("n")] = rows
    return found


def rows_per_step(run, rank: int) -> dict[int, list | None]:
    """{step: the rows it trains on, or None where they are not all known} for each of the
    rank's steps (the first from the passes' own records: first_step_rows)."""
    recorded = later_rows(run, rank)
    steps = {}
    for step, passes in sorted(step_batches(run, rank).items()):
        if step == 0:
            steps[0] = None if first_step_rows_dropped(run, rank) else first_step_rows(run, rank)
            continue
        rows = []
        for forward in passes:
            own = recorded.get(forward["n"])
            if not own or len(own) != forward["rows"]:
                rows = None   # not recorded, or it ran on other rows than its argument's
                break
            rows += own
        steps[step] = rows
    return steps


def shared_rows(rows: dict[int, list]) -> list[tuple[int, int, int, int]]:
    """(rank a, rank b, how many of b's rows a trains on too, b's rows) for each pair of
    ranks a < b that share rows."""
    shared = []
    for a in sorted(rows):
        for b in sorted(rows):
            if a < b:
                common = sum(1 for row in rows[b] if any(same_row(row, o) for o in rows[a]))
                if common:
                    shared.append((a, b, common, len(rows[b])))
    return shared


def output_sums_per_step(run, rank: int) -> dict[int, list[float]]:
    """{step: the output sums of the passes that train it} (recorded whatever the budget of
    rows): DDP's replicas hold the same weights at every step, so the same rows give the same
    outputs on two ranks."""
    return {step: [float(p["sum_out"]) for p in passes
                   if isinstance(p["sum_out"], (int, float)) and not isinstance(p["sum_out"], bool)]
            for step, passes in step_batches(run, rank).items()}


class SharedAtStep(NamedTuple):
    """Two ranks' shared rows at a step after the first: rank b trains on `common` of its
    `size` rows that rank a also trains on; both None where their rows were not recorded and
    their training passes gave the same outputs."""
    step: int
    a: int
    b: int
    common: int | None
    size: int | None


def later_steps_shared(run, processes: int, padding: int) -> SharedAtStep | None:
    """The first step after the first at which the ranks share more rows than `padding` (a
    DistributedSampler's repeats), or, where some rank's rows of that step were not recorded,
    at which two ranks' training passes gave the same outputs (the same weights on the same
    rows; a partial overlap goes unseen then); None where there is none."""
    per_rank = {r: rows_per_step(run, r) for r in range(processes)}
    steps = sorted(set.intersection(*(set(s) for s in per_rank.values()))) if per_rank else []
    sums = None
    for step in steps:
        if step == 0:
            continue
        rows = {r: per_rank[r][step] for r in range(processes)}
        if all(rows.values()):
            shared = shared_rows(rows)
            if sum(common for *_, common, _ in shared) > padding:
                return SharedAtStep(step, *shared[0])
            continue
        sums = sums or {r: output_sums_per_step(run, r) for r in range(processes)}
        for a in range(processes):
            for b in range(a + 1, processes):
                if _same_outputs(sums[a].get(step), sums[b].get(step)):
                    return SharedAtStep(step, a, b, None, None)
    return None


def _same_outputs(first, second) -> bool:
    return bool(first) and bool(second) and len(first) == len(second) \
        and all(close(x, y) for x, y in zip(first, second))
