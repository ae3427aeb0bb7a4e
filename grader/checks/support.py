"""Wording of the checks' feedback: what was expected, what was observed, where to look."""
from __future__ import annotations


def explain(expected: str, observed: str, look: str | None = None) -> str:
    text = f"Expected: {expected}\nObserved: {observed}"
    if look:
        text += f"\nWhere to look: {look}"
    return text


def require_run(observation) -> None:
    """A check on a run that crashed, hung or is missing fails with that reason, and only that."""
    if not observation.ok:
        raise AssertionError(observation.problem())


def chunk_sizes(batch: int, parts: int) -> list[int]:
    """`torch.chunk`'s rule, which DataParallel's scatter uses: chunks of ceil(B/N) rows."""
    size = -(-batch // parts)
    return [min(size, batch - start) for start in range(0, batch, size)]


def close(a: float, b: float, rel: float = 1e-4, abs_: float = 1e-6) -> bool:
    return abs(a - b) <= max(abs_, rel * max(abs(a), abs(b)))
