"""What every name of the matplotlib stand-in is: an object that accepts any call, attribute,
index or `with`, and draws, computes and writes nothing."""


class Nothing:
    __slots__ = ()

    def __call__(self, *args, **kwargs):
        return Nothing()

    def __getattr__(self, name):
        if name.startswith("__"):   # copy, pickle and numpy probe dunders: none here
            raise AttributeError(name)
        if name == "plot":   # `line, = ax.plot(x, y)`: a list of one line, as matplotlib's
            return lambda *args, **kwargs: [Nothing()]
        return Nothing()

    def __setattr__(self, name, value):
        pass

    def __getitem__(self, key):
        return Nothing()

    def __setitem__(self, key, value):
        pass

    def __iter__(self):
        return iter(())

    def __len__(self):
        return 0

    def __bool__(self):
        return True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __repr__(self):
        return "<matplotlib display-only stand-in>"


def module_attribute(name):
    """A stand-in module's `__getattr__` (PEP 562): any name a script asks for."""
    if name.startswith("__"):
        raise AttributeError(name)
    return Nothing()
