"""Run untrusted student code in a bubblewrap sandbox with cgroup limits.

    from grader.sandbox import SandboxPolicy, run_sandboxed
    result = run_sandboxed([sys.executable, "solution.py"],
                           SandboxPolicy(writable=[scratch], hidden=[reference_dir]))
    if not result.sandboxed: warn loudly (see result.warnings)
"""
from .bwrap import sandbox_available
from .policy import SandboxPolicy, SandboxResult
from .confined_run import SandboxSetupError, run_sandboxed

__all__ = ["SandboxPolicy", "SandboxResult", "SandboxSetupError", "run_sandboxed",
           "sandbox_available"]
