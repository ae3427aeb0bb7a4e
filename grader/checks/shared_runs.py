"""Runs shared between the assignments of one grading that see the same view of a submission.

Each assignment's checks run in a pytest process of their own (grader/grading/run.py), so a
run two assignments both make was made twice: Practical 6's Part 6 runs practical5_dp.py on 2
GPUs exactly as Practical 5's checks run it (test_practical6.dp_run), in the same view (the two
are always graded together: assignment_groups.GRADED_WITH) and from the same fork server. The
grading names a folder per view (SHARED_RUNS_ENV); the first assignment's run of a
configuration is kept there, and a later assignment's run of the same configuration reads it.

A kept run is the Observation as the run returned it, before any check read or changed it,
pickled and sealed with a key only the grading and its checks' processes hold
(SHARED_RUNS_KEY_ENV: never in a run's environment, grader/harness/execute.run_environment): a
file the seal does not match is ignored, and the run is made again. Runs that did not finish
(timed out, or not started after others hung) are not kept: a later assignment runs them
itself, as it did before.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import pickle
from pathlib import Path

from grader.harness.observation import Observation

SHARED_RUNS_ENV = "PDL_SHARED_RUNS"
SHARED_RUNS_KEY_ENV = "PDL_SHARED_RUNS_KEY"
_SEAL_BYTES = hashlib.sha256().digest_size


class SharedRuns:
    """The kept runs of one view (`folder`), sealed with `key`."""

    def __init__(self, folder: Path, key: bytes):
        self.folder = Path(folder)
        self.key = key

    @classmethod
    def from_environment(cls, environ=os.environ) -> "SharedRuns | None":
        """The grading's shared runs, or None where the checks run outside a grading (the
        repo's tests, `pdl-grade check`): every run is then made."""
        folder, key = environ.get(SHARED_RUNS_ENV), environ.get(SHARED_RUNS_KEY_ENV)
        if not folder or not key or not Path(folder).is_dir():
            return None
        return cls(Path(folder), key.encode())

    def _path(self, key: tuple) -> Path:
        return self.folder / (hashlib.sha256(repr(key).encode()).hexdigest() + ".run")

    def _seal(self, data: bytes) -> bytes:
        return hmac.new(self.key, data, hashlib.sha256).digest()

    def load(self, key: tuple) -> Observation | None:
        """The run kept under `key` (ScriptRuns' run key), or None."""
        try:
            held = self._path(key).read_bytes()
        except OSError:
            return None
        seal, data = held[:_SEAL_BYTES], held[_SEAL_BYTES:]
        if not hmac.compare_digest(seal, self._seal(data)):
            return None
        observation = pickle.loads(data)
        return observation if isinstance(observation, Observation) else None

    def keep(self, key: tuple, observation: Observation) -> None:
        """Keep `observation`, just made, for a later assignment's run of `key`."""
        if observation.timed_out or observation.not_run is not None:
            return
        data = pickle.dumps(observation)
        path = self._path(key)
        partial = path.with_suffix(".partial")
        try:
            partial.write_bytes(self._seal(data) + data)
            partial.replace(path)
        except OSError:   # a full disk costs a later assignment a run, nothing more
            partial.unlink(missing_ok=True)
