"""The two objects pytest hands the grader's plugin hooks for one check's call, faked: the test
item (its node id and its `check` marker) and its call outcome (the error the check raised)."""
from __future__ import annotations

import pytest


def check_item(check_id: str, nodeid: str, config=None):
    """A test item marked `@pytest.mark.check(check_id)`."""
    class Marker:
        args = (check_id,)

    class Item:
        def get_closest_marker(self, name):
            return Marker() if name == "check" else None

    item = Item()
    item.nodeid, item.config = nodeid, config
    return item


def check_call(error: BaseException):
    """The call phase of a check that raised `error`, with its traceback as a check raises it."""
    class Call:
        when = "call"

    call = Call()
    try:
        raise error
    except BaseException as raised:   # noqa: B036 (any error a check raises)
        call.excinfo = pytest.ExceptionInfo.from_exception(raised)
    return call
