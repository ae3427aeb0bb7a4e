"""How fast a run trained, as the grader measured it, for the questions that ask "did it get
faster?" (Practical 5: DataParallel against one GPU; Practical 6: DDP against DataParallel).

On virtual GPUs the times come from the node's simulated clock (grader/vgpu/clock.py): every
configuration gets the time real GPUs of the nominal kind would take by the documented model,
the same on any machine under any load. On real GPUs they come from the wall clock. Every
value says which (`clock`), so reports can tell the student what their answer was compared
with. The students' own printed times stay theirs: they are not used here.
"""
from __future__ import annotations

import statistics


def step_timing(run, rank: int = 0) -> dict | None:
    """{"step_time_ms": median step, "total_time_s": all steps (simulated clock only),
    "steps": n, "clock": "simulated" | "real"} of a run; None when it timed no step."""
    times, clock = run.step_times_ms(rank)
    if not times:
        return None
    return {"step_time_ms": round(statistics.median(times), 6),
            "total_time_s": round(sum(times) / 1000, 9) if clock == "simulated" else None,
            "steps": len(run.of("step", rank)), "clock": clock}


def faster(timings: dict[str, dict | None]) -> dict | None:
    """Which of the timed methods has the shortest median step: {"method": name, "ratio":
    the slowest's step over the fastest's (>= 1), "clock": ...}; None unless at least two were
    timed on the same clock (a real and a simulated time cannot be compared)."""
    timed = {name: t for name, t in timings.items() if t and t.get("step_time_ms")}
    clocks = {t["clock"] for t in timed.values()}
    if len(timed) < 2 or len(clocks) != 1:
        return None
    fastest = min(timed, key=lambda name: timed[name]["step_time_ms"])
    slowest = max(t["step_time_ms"] for t in timed.values())
    return {"method": fastest, "ratio": round(slowest / timed[fastest]["step_time_ms"], 4),
            "clock": clocks.pop()}
