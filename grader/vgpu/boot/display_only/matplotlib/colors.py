"""One more of matplotlib's modules in the display-only stand-in: any name is accepted."""
from matplotlib._nothing import module_attribute


def __getattr__(name):
    return module_attribute(name)
