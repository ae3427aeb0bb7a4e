"""Each virtual GPU's own random numbers, as each real GPU has its own generator.

On a real node `torch.randn(n, device="cuda:0")` draws from GPU 0's generator (Philox), not
from the host's (mt19937): after `torch.manual_seed(0)` the host and a GPU give different
numbers, and every GPU seeded alike gives the same ones. Scripts show the difference: data drawn
on the host in one script (`torch.randn(B, D).to(device)`) and on the GPU in another
(`torch.randn(B, D, device=device)`) trains on different data, on the course's GPUs and here
(a TA's Practical 5, where virtual GPUs had drawn both from the host and called an honest "the
losses differ" wrong).

Each virtual GPU keeps a host generator's state of its own, started from the seed the script
gives (`torch.manual_seed`, `torch.cuda.manual_seed[_all]`, PyTorch's default seed otherwise)
through a fixed mix, so that the same seed gives the GPUs other numbers than the host, and
every GPU the same. A random op on a virtual GPU (a factory with `device="cuda:k"`, dropout or
`normal_` on a tensor there) runs with the host's default generator holding that GPU's state.
The numbers are not a real GPU's (Philox is not simulated): only which draws are alike is.
"""
from __future__ import annotations

import contextlib
import random

import torch

# PyTorch's default seed, the host's and every GPU's until the script seeds them.
DEFAULT_SEED = 67280421310721
_MASK = (1 << 64) - 1
# Ops that draw random numbers: factories with a device, and ops on a tensor's device.
RANDOM_OPS = frozenset({
    "randn", "rand", "randint", "randperm", "normal", "bernoulli", "multinomial", "poisson",
    "binomial", "rand_like", "randn_like", "randint_like", "normal_", "uniform_",
    "bernoulli_", "random_", "exponential_", "geometric_", "cauchy_", "log_normal_",
    "dropout", "dropout_", "dropout1d", "dropout2d", "dropout3d", "feature_dropout",
    "feature_dropout_", "alpha_dropout", "alpha_dropout_", "feature_alpha_dropout",
    "feature_alpha_dropout_", "native_dropout", "rrelu", "rrelu_", "rrelu_with_noise",
    "gumbel_softmax", "_standard_gamma", "_sample_dirichlet", "trunc_normal_",
})


def _mixed(seed: int) -> int:
    """The seed a GPU's stream starts from for the script's `seed`: another stream than the
    host's for the same seed (a fixed odd multiplier and offset, so distinct seeds stay
    distinct)."""
    return (seed * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019) & _MASK


class DeviceGenerators:
    """The virtual GPUs' generators, by GPU index: a seed, and the state once drawn from."""

    def __init__(self):
        self._every = DEFAULT_SEED          # the seed of a GPU not seeded on its own
        self._seeds: dict[int, int] = {}
        self._states: dict[int, torch.Tensor] = {}

    def manual_seed(self, index: int, seed: int) -> None:
        self._seeds[index] = int(seed) & _MASK
        self._states.pop(index, None)

    def manual_seed_all(self, seed: int) -> None:
        self._every = int(seed) & _MASK
        self._seeds.clear()
        self._states.clear()

    def seed(self, index: int) -> int:
        """A non-deterministic seed for the GPU, as torch.cuda.seed() picks one."""
        seed = random.SystemRandom().getrandbits(64)
        self.manual_seed(index, seed)
        return seed

    def initial_seed(self, index: int) -> int:
        return self._seeds.get(index, self._every)

    def get_state(self, index: int) -> torch.Tensor:
        if index in self._states:
            return self._states[index].clone()
        fresh = torch.Generator()
        fresh.manual_seed(_mixed(self.initial_seed(index)))
        return fresh.get_state()

    def set_state(self, index: int, state: torch.Tensor) -> None:
        if not isinstance(state, torch.Tensor) or state.dtype != torch.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        self._states[index] = state.detach().clone()

    @contextlib.contextmanager
    def drawing_on(self, index: int):
        """The host's default generator holds GPU `index`'s state for the op inside."""
        host = torch.default_generator
        saved = host.get_state()
        host.set_state(self.get_state(index))
        try:
            yield
        finally:
            self._states[index] = host.get_state()
            host.set_state(saved)


class _HostOrVirtual(type(torch._C.Generator)):
    """`isinstance(g, torch.Generator)` stays true of the host's generators while
    torch.Generator is the stand-in below."""

    def __instancecheck__(cls, instance) -> bool:
        return isinstance(instance, torch._C.Generator)

    def __subclasscheck__(cls, subclass) -> bool:
        return issubclass(subclass, torch._C.Generator)


def generator_type(node, parse):
    """torch.Generator for a virtual node: `torch.Generator(device="cuda:k")` is a generator of
    GPU k's kind (seeded through the same mix as the GPU's own, so it draws as the GPU would);
    any other device is PyTorch's own generator. `parse` reads a device argument as the node
    does (an index, None for the host)."""

    class Generator(torch._C.Generator, metaclass=_HostOrVirtual):
        __module__ = "torch"

        def __new__(cls, device="cpu"):
            index = parse(node, device) if device is not None else None
            if not isinstance(index, int):
                return torch._C.Generator(device if device is not None else "cpu")
            generator = super().__new__(cls, "cpu")
            generator._index = index
            generator.manual_seed(DEFAULT_SEED)
            return generator

        def __init__(self, device="cpu"):
            pass   # made in __new__

        @property
        def device(self):
            return torch.device("cuda", self._index)

        def manual_seed(self, seed):
            self._seed = int(seed) & _MASK
            super().manual_seed(_mixed(self._seed))
            return self

        def initial_seed(self) -> int:
            return self._seed

        def seed(self) -> int:
            seed = random.SystemRandom().getrandbits(64)
            self.manual_seed(seed)
            return seed

    return Generator


def is_virtual(generator) -> bool:
    """A generator of a virtual GPU's kind (torch.Generator(device="cuda"))."""
    return hasattr(generator, "_index") and isinstance(generator, torch._C.Generator)
