"""A pytest plugin for benchmarks/run_budgets.py: logs every sandboxed run the checks make
(script, configuration, wall seconds, seconds of its time budget used, timed out) as JSON
lines to $PDL_RUN_LOG."""
from __future__ import annotations

import json
import os


def pytest_configure(config):
    import grader.harness.execute as execute
    real = execute.run_command

    def logged(argv, **options):
        result, verified, key = real(argv, **options)
        with open(os.environ["PDL_RUN_LOG"], "a") as log:
            log.write(json.dumps({"argv": [str(a) for a in argv][-8:],
                                  "probe": any("hw3_probe" in str(a) for a in argv),
                                  "seconds": round(result.duration_s, 2),
                                  "budget_used_s": result.budget_used_s,
                                  "timed_out": result.timed_out,
                                  "budget_s": options.get("timeout_s")}) + "\n")
        return result, verified, key
    execute.run_command = logged
