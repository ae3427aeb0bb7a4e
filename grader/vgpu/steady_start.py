"""Practical 10's invariance runs start from the same weights, wherever the script seeds.

The invariance check compares the first step's gradient of a run of MICRO_BATCHES micro-batches
with a full-batch run's. Each run is a fresh process, and a fresh process seeds torch's host
generator (and Python's, and numpy's) from the OS: a model built before any torch.manual_seed,
or after a torch.seed(), starts from other weights in each run, so the two gradients share no
direction and the check could compare only norms, which cannot see wrong targets (adv54 F2).
In the check's own runs (a steady seal key, grader/records/seal.py) those generators start from
STEADY_SEED instead, and every seed the script sets is STEADY_SEED whatever its argument:
torch.seed(), torch.manual_seed (torch.random's, the same function), torch.cuda's manual_seed,
manual_seed_all, seed and seed_all, random.seed and numpy.random.seed. A seed the script draws
itself each run (`manual_seed(int.from_bytes(os.urandom(4), "little"))`, the time, the process
id) had started the runs apart, and the check, left with norms, kept the item for wrong targets
(adv57 F-G). A fixed seed of the script's own (manual_seed(SEED)) loses nothing: the runs start
alike either way, and the item asks about the loop, not the weights it starts from. A start that
still differs (a torch.Generator of the script's own seeded per run, weights read from a file)
is held for a person (grader/checks/test_practical10.py noisy_gradient, "start").
"""
from __future__ import annotations

import random

import torch

STEADY_SEED = 20261207


def steady_seed() -> int:
    """torch.seed() in a steady run: seeds every generator, as torch.seed does, with a seed
    that is the same in every run."""
    torch.manual_seed(STEADY_SEED)
    return STEADY_SEED


def held_to_steady(seeding):
    """`seeding` (a function that seeds a generator with its one argument) seeding with
    STEADY_SEED, whatever the script passes it."""
    def seed_steadily(*_args, **_kwargs):
        return seeding(STEADY_SEED)
    seed_steadily.__name__ = getattr(seeding, "__name__", "manual_seed")
    seed_steadily.__doc__ = getattr(seeding, "__doc__", None)
    return seed_steadily


def _numpy_random():
    """numpy.random, or None where numpy is not installed."""
    try:
        import numpy.random
    except ImportError:
        return None
    return numpy.random


def install(patcher, trace) -> None:
    """In a steady run: seed the host's generators alike, and hold every seed the script
    sets to it."""
    if not getattr(trace, "steady", False):
        return
    torch.default_generator.manual_seed(STEADY_SEED)
    random.seed(STEADY_SEED)
    patcher.set(torch, "seed", steady_seed)
    patcher.set(torch.random, "seed", steady_seed)
    manual_seed = held_to_steady(torch.manual_seed)
    patcher.set(torch, "manual_seed", manual_seed)
    patcher.set(torch.random, "manual_seed", manual_seed)
    # torch.cuda's as they are now: the virtual GPUs' (cuda_facade.py) or the real ones'.
    seed_all = held_to_steady(torch.cuda.manual_seed_all)
    patcher.set(torch.cuda, "manual_seed", held_to_steady(torch.cuda.manual_seed))
    patcher.set(torch.cuda, "manual_seed_all", seed_all)
    patcher.set(torch.cuda, "seed", seed_all)
    patcher.set(torch.cuda, "seed_all", seed_all)
    patcher.set(random, "seed", held_to_steady(random.seed))
    numpy_random = _numpy_random()
    if numpy_random is not None:
        numpy_random.seed(STEADY_SEED)
        patcher.set(numpy_random, "seed", held_to_steady(numpy_random.seed))
