"""Random number generation state of torch.kiln, as in torch.cuda.

Each device has a counter-based (Philox) default generator whose state is its
seed and offset. Dynamo does not trace these functions (torch.cuda's live in
torch, which it skips): a compiled function that calls one breaks its graph
there and calls it, so that it may save and restore the generator state, as
torch.testing's freeze_rng_state does around every random OpInfo sample."""
import functools
import sys

import torch

from .. import _C
from ._device import _lazy_init, _resolved_index


def _not_traced(function):
    """`function`, which Dynamo calls instead of tracing. torch._dynamo is
    imported only when compiling: an eager program does not pay for it."""
    disabled = []  # Dynamo's wrapper, made once Dynamo is loaded

    @functools.wraps(function)
    def call(*args, **kwargs):
        if not disabled:
            dynamo = sys.modules.get("torch._dynamo")
            if dynamo is None:  # nothing can be compiling
                return function(*args, **kwargs)
            disabled.append(dynamo.disable(function))
        return disabled[0](*args, **kwargs)
    return call


def _generator(device=None):
    _lazy_init()
    return _C._get_default_generator(_resolved_index(device))


@_not_traced
def manual_seed(seed):
    """Seeds the current device's generator."""
    _generator().manual_seed(int(seed))


@_not_traced
def manual_seed_all(seed):
    for index in range(_C._device_count()):
        _generator(index).manual_seed(int(seed))


@_not_traced
def seed():
    """Seeds the current device's generator with a random number."""
    _generator().seed()


@_not_traced
def seed_all():
    random_seed = _generator().seed()
    for index in range(_C._device_count()):
        _generator(index).manual_seed(random_seed)


@_not_traced
def initial_seed():
    return _generator().initial_seed()


@_not_traced
def get_rng_state(device="kiln"):
    """The generator state of ``device`` as a torch.uint8 CPU tensor."""
    return _generator(device).get_state()


@_not_traced
def set_rng_state(new_state, device="kiln"):
    _generator(device).set_state(new_state.to("cpu", torch.uint8))


@_not_traced
def get_rng_state_all():
    return [get_rng_state(index) for index in range(_C._device_count())]


@_not_traced
def set_rng_state_all(new_states):
    for index, state in enumerate(new_states):
        set_rng_state(state, index)
