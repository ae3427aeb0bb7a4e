"""Where a command's CPU goes: every process it starts, with the CPU-seconds it used.

    python benchmarks/process_cpu.py [--interval 0.02] -- COMMAND...

Samples /proc every INTERVAL seconds while COMMAND runs and keeps each process's last reading
of user + system time (the sandboxed runs live in their own pid namespaces, but /proc here
shows them under their global pids). A process that ends between two samples loses at most
one interval. Prints the processes grouped by what they ran, the largest first, and the
total beside the command's own rusage (which misses runs reaped inside a pid namespace).
"""
from __future__ import annotations

import argparse
import collections
import os
import resource
import subprocess
import time

TICK = os.sysconf("SC_CLK_TCK")


def snapshot() -> dict[int, tuple[str, float]]:
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                command = handle.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        found[int(name)] = (command, (int(fields[11]) + int(fields[12])) / TICK)
    return found


def label(command: str) -> str:
    """A short name for what a process ran."""
    words = command.split()
    if not words:
        return "(no command line)"
    for marker in ("-m", "-c"):
        if marker in words[:3]:
            i = words.index(marker)
            return " ".join(words[: i + 3])[:90]
    return " ".join(words[:3])[:90]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--interval", type=float, default=0.02)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    options = parser.parse_args()
    command = options.command[1:] if options.command[:1] == ["--"] else options.command
    before = set(snapshot())
    latest: dict[int, tuple[str, float]] = {}
    started = time.perf_counter()
    proc = subprocess.Popen(command)
    while proc.poll() is None:
        for pid, (cmd, cpu) in snapshot().items():
            if pid not in before and (pid not in latest or cpu >= latest[pid][1]):
                latest[pid] = (cmd or latest.get(pid, ("", 0))[0], cpu)
        time.sleep(options.interval)
    wall = time.perf_counter() - started
    own = resource.getrusage(resource.RUSAGE_CHILDREN)
    groups: dict[str, list[float]] = collections.defaultdict(list)
    for cmd, cpu in latest.values():
        groups[label(cmd)].append(cpu)
    print(f"\n{'CPU s':>7} {'procs':>5}  what ran")
    for name, cpus in sorted(groups.items(), key=lambda kv: -sum(kv[1])):
        print(f"{sum(cpus):7.2f} {len(cpus):5d}  {name}")
    total = sum(cpu for _, cpu in latest.values())
    print(f"{total:7.2f} {len(latest):5d}  in all (sampled); the command's rusage: "
          f"{own.ru_utime + own.ru_stime:.2f} CPU s; wall {wall:.1f} s; rc {proc.returncode}")


if __name__ == "__main__":
    main()
