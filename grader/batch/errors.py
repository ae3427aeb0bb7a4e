"""The batch's own error, shared by the modules that prepare a batch."""
from __future__ import annotations


class BatchError(Exception):
    """The batch cannot start (bad arguments, another batch holds DIR); nothing was graded."""
