"""A display-only stand-in for matplotlib, used in graded runs where matplotlib is not
installed: every call is accepted and draws, computes and writes nothing (savefig writes no
file). Importing it says so on stderr (the report's note)."""
import sys

from matplotlib._nothing import module_attribute


def __getattr__(name):
    return module_attribute(name)


__version__ = "0+display-only"
rcParams = {}


def use(*args, **kwargs):
    pass


def get_backend():
    return "agg"


def rc(*args, **kwargs):
    pass


def interactive(*args, **kwargs):
    pass


def is_interactive():
    return False


sys.stderr.write("pdl-autograder: matplotlib is not in the grading environment: a "
                 "display-only stand-in was used; your plots were not drawn\n")
