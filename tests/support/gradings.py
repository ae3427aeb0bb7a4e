"""Real gradings for the matrices, graded once each and two at a time.

A grading is mostly one process at a time (the HW3 probe, a script and its ranks), so the
matrices grade the submissions their selected tests will ask for next while a test looks at
the current one, each grading with its share of the cores, as a batch with two workers would
(grader/common/cpu_share.py).
"""
from __future__ import annotations

import os
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable

from grader.common.cpu_share import CPU_SHARE_ENV, machine_cpus

AT_ONCE = 2


def names_in_order(request, parameter: str = "name") -> list[str]:
    """The submissions the selected tests of the requesting module ask for, in test order."""
    names: list[str] = []
    for item in request.session.items:
        if item.module is not request.module or not hasattr(item, "callspec"):
            continue
        value = item.callspec.params.get(parameter)
        value = getattr(value, "name", value)
        if isinstance(value, str) and value not in names:
            names.append(value)
    return names


class Gradings:
    """name -> grade_one(name), each once; asking for one starts the next ones in `order`."""

    def __init__(self, grade_one: Callable[[str], dict], order: list[str], at_once: int = AT_ONCE):
        self._grade_one = grade_one
        self._order = list(order)
        self._at_once = at_once
        self._pool = ThreadPoolExecutor(max_workers=at_once)
        self._futures: dict[str, Future] = {}
        self._saved_share = os.environ.get(CPU_SHARE_ENV)
        os.environ[CPU_SHARE_ENV] = f"{max(1.0, machine_cpus() / at_once):g}"

    def _start(self, name: str) -> Future:
        if name not in self._futures:
            self._futures[name] = self._pool.submit(self._grade_one, name)
        return self._futures[name]

    def get(self, name: str) -> dict:
        future = self._start(name)
        if name in self._order:
            upcoming = self._order[self._order.index(name) + 1:]
            for following in upcoming[:self._at_once - 1]:
                self._start(following)
        return future.result()

    def close(self) -> None:
        for future in self._futures.values():
            future.cancel()
        self._pool.shutdown(wait=True)
        if self._saved_share is None:
            os.environ.pop(CPU_SHARE_ENV, None)
        else:
            os.environ[CPU_SHARE_ENV] = self._saved_share
