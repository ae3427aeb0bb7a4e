"""Layer layouts: what an even contiguous split is, and how to describe one to a student."""
from __future__ import annotations


def gpu_index(device) -> int | None:
    if isinstance(device, str) and device.startswith("cuda:"):
        return int(device.split(":")[1])
    return None


def even_contiguous_layout(depth: int, gpus: int) -> list[str]:
    """The handout's layout: contiguous blocks, the first `depth % gpus` GPUs one layer more."""
    base, extra = divmod(depth, gpus)
    layout = []
    for g in range(gpus):
        layout += [f"cuda:{g}"] * (base + (1 if g < extra else 0))
    return layout


def counts_per_gpu(devices: list, gpus: int) -> list[int]:
    counts = [0] * gpus
    for device in devices:
        index = gpu_index(device)
        if index is not None and index < gpus:
            counts[index] += 1
    return counts


def contiguous_blocks(devices: list, gpus: int) -> bool:
    """Layers of each GPU form one block, and the blocks follow the GPUs' order."""
    indices = [gpu_index(d) for d in devices]
    if any(i is None for i in indices):
        return False
    return all(a <= b for a, b in zip(indices, indices[1:]))


def device_changes(devices: list) -> int:
    return sum(1 for a, b in zip(devices, devices[1:]) if a != b)


def describe_layout(devices: list) -> str:
    """'layers 0-2 on cuda:0, layers 3-5 on cuda:1'."""
    if not devices:
        return "no layers"
    parts, start = [], 0
    for i in range(1, len(devices) + 1):
        if i == len(devices) or devices[i] != devices[start]:
            span = f"layer {start}" if i - 1 == start else f"layers {start}-{i - 1}"
            parts.append(f"{span} on {devices[start]}")
            start = i
    return ", ".join(parts)


def layers_per_gpu(devices: list, gpus: int) -> str:
    """'on 2 of the 5 GPUs (10 layers on cuda:0, 10 on cuda:1; none on cuda:2, cuda:3,
    cuda:4)': how many of the node's GPUs hold layers, naming each GPU with its count."""
    counts = counts_per_gpu(devices, gpus)
    held = [(g, c) for g, c in enumerate(counts) if c]
    said = [f"{c} {'layer' if c == 1 else 'layers'} on cuda:{g}" if not i else f"{c} on cuda:{g}"
            for i, (g, c) in enumerate(held)]
    idle = [f"cuda:{g}" for g, c in enumerate(counts) if not c]
    parts = [", ".join(said)] * bool(said) + [f"none on {', '.join(idle)}"] * bool(idle)
    return f"on {len(held)} of the {gpus} GPUs ({'; '.join(parts)})"


def first_misplaced(devices: list, expected: list) -> tuple[int, str, str]:
    for i, (seen, wanted) in enumerate(zip(devices, expected)):
        if seen != wanted:
            return i, str(seen), wanted
    return len(expected), "-", "-"


def spearman(xs: list[float], ys: list[float]) -> float:
    """Rank correlation with average ranks for ties (scipy is not a dependency)."""
    def ranks(values):
        order = sorted(range(len(values)), key=lambda i: values[i])
        result = [0.0] * len(values)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
                j += 1
            for k in range(i, j + 1):
                result[order[k]] = (i + j) / 2
            i = j + 1
        return result

    rx, ry = ranks(xs), ranks(ys)
    n = len(xs)
    if n < 2:
        return 0.0
    mx, my = sum(rx) / n, sum(ry) / n
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    vx = sum((a - mx) ** 2 for a in rx) ** 0.5
    vy = sum((b - my) ** 2 for b in ry) ** 0.5
    return cov / (vx * vy) if vx and vy else 0.0


def layers_around_move(log: list[dict], src: str, dst: str) -> list[int]:
    """[a, b]: the layers that run just before and just after the first copy of the
    activation from `src` to `dst` in a forward pass's log (the probe's: "layer" entries
    and .to() calls in order); [] when it never moves that way."""
    arrival = next((i for i, e in enumerate(log) if e["kind"] != "layer" and e.get("copied")
                    and e.get("src") == src and e.get("dst") == dst), None)
    if arrival is None:
        return []
    before = [e["index"] for e in log[:arrival] if e["kind"] == "layer"]
    after = next((e["index"] for e in log[arrival:] if e["kind"] == "layer"), None)
    return [before[-1] if before else -1, after if after is not None else -1]


def layers_not_run_once_in_order(log: list[dict], depth: int) -> str | None:
    """What a forward pass's log (the probe's "layer" entries) shows wrong with the layers it
    ran: one never run, one run twice, or out of order; None when each of the `depth` layers ran
    once in order, or when the log shows no layer (a forward calling F.linear on the weights
    runs no module: nothing to tell)."""
    ran = [entry["index"] for entry in log if entry.get("kind") == "layer"]
    if not ran or ran == list(range(depth)):
        return None
    never = [i for i in range(depth) if i not in ran]
    twice = sorted({i for i in ran if ran.count(i) > 1})
    parts = []
    if never:
        parts.append(f"layer{'s' if len(never) > 1 else ''} "
                     f"{', '.join(map(str, never))} never ran in the forward pass")
    if twice:
        parts.append(f"layer{'s' if len(twice) > 1 else ''} "
                     f"{', '.join(map(str, twice))} ran more than once")
    if not parts:
        shown = ", ".join(map(str, ran[:12])) + (", ..." if len(ran) > 12 else "")
        parts.append(f"the layers ran in the order {shown}")
    return "; ".join(parts)
