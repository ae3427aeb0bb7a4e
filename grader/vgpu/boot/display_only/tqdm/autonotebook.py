"""The display-only stand-in's tqdm, under one more of tqdm's module names."""
from tqdm.std import tqdm, trange

__all__ = ["tqdm", "trange"]
tqdm_notebook, tnrange = tqdm, trange
