"""A display-only stand-in for tqdm, used in graded runs where tqdm is not installed.

A progress bar changes nothing a run computes: the iterable is passed through as it is, and
the bar's methods do nothing. Its first bar says so on stderr (the report's note): not its
import, which torch.hub does for every run."""
from tqdm.std import TqdmWarning, tqdm, trange

__all__ = ["tqdm", "trange", "tqdm_notebook", "tnrange", "TqdmWarning"]
__version__ = "0+display-only"
tqdm_notebook, tnrange = tqdm, trange
