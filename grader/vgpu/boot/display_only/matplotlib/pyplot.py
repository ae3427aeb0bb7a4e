"""The stand-in's pyplot: figures and axes that accept everything; show and savefig do
nothing."""
import matplotlib
from matplotlib._nothing import Nothing, module_attribute

rcParams, use, get_backend = matplotlib.rcParams, matplotlib.use, matplotlib.get_backend


def __getattr__(name):
    return module_attribute(name)


def subplots(nrows=1, ncols=1, *args, squeeze=True, **kwargs):
    """(figure, axes) shaped as matplotlib's: one Axes, or an array of them."""
    return Nothing(), _axes(nrows, ncols, squeeze)


def _axes(nrows, ncols, squeeze):
    if squeeze and nrows == ncols == 1:
        return Nothing()
    try:
        import numpy
    except ImportError:
        grid = [[Nothing() for _ in range(ncols)] for _ in range(nrows)]
        return [row for line in grid for row in line] if squeeze and 1 in (nrows, ncols) \
            else grid
    grid = numpy.empty((nrows, ncols), dtype=object)
    for index in numpy.ndindex(grid.shape):
        grid[index] = Nothing()
    return grid.squeeze() if squeeze else grid


def plot(*args, **kwargs):
    return [Nothing()]


def show(*args, **kwargs):
    pass


def savefig(*args, **kwargs):
    pass


def figure(*args, **kwargs):
    return Nothing()


def gca(*args, **kwargs):
    return Nothing()


def gcf(*args, **kwargs):
    return Nothing()


def close(*args, **kwargs):
    pass


def pause(*args, **kwargs):
    pass
