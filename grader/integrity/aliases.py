"""The scan's aliases (name -> the module or attribute it stands for: `t = torch`, an import),
one table per scope, each change counted in a counter they share.

What an expression resolves to depends only on these tables (and the file's scopes, fixed), so
Visitor.owners_of remembers each candidate's resolution until a change: a variable that stands
for thousands of others (a red team's adv34 F3) had each of them resolved again for every read
of every variable, millions of times.
"""
from __future__ import annotations


class Changes:
    """How many times any table of one scan has changed."""

    def __init__(self):
        self.count = 0


class Aliases(dict):
    """A dict that counts its changes in `changes`."""

    def __init__(self, changes: Changes):
        super().__init__()
        self.changes = changes

    def __setitem__(self, key, value):
        self.changes.count += 1
        super().__setitem__(key, value)

    def __delitem__(self, key):
        self.changes.count += 1
        super().__delitem__(key)

    def pop(self, *arguments):
        self.changes.count += 1
        return super().pop(*arguments)

    def popitem(self):
        self.changes.count += 1
        return super().popitem()

    def setdefault(self, key, default=None):
        self.changes.count += 1
        return super().setdefault(key, default)

    def update(self, *arguments, **keywords):
        self.changes.count += 1
        super().update(*arguments, **keywords)

    def __ior__(self, other):
        self.changes.count += 1
        return super().__ior__(other)

    def clear(self):
        self.changes.count += 1
        super().clear()
