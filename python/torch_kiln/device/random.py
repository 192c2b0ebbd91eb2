"""Random number generation state of torch.kiln, as in torch.cuda.

Each device has a counter-based (Philox) default generator whose state is its
seed and offset."""
import torch

from .. import _C
from ._device import _lazy_init, _resolved_index


def _generator(device=None):
    _lazy_init()
    return _C._get_default_generator(_resolved_index(device))


def manual_seed(seed):
    """Seeds the current device's generator."""
    _generator().manual_seed(int(seed))


def manual_seed_all(seed):
    for index in range(_C._device_count()):
        _generator(index).manual_seed(int(seed))


def seed():
    """Seeds the current device's generator with a random number."""
    _generator().seed()


def seed_all():
    random_seed = _generator().seed()
    for index in range(_C._device_count()):
        _generator(index).manual_seed(random_seed)


def initial_seed():
    return _generator().initial_seed()


def get_rng_state(device="kiln"):
    """The generator state of ``device`` as a torch.uint8 CPU tensor."""
    return _generator(device).get_state()


def set_rng_state(new_state, device="kiln"):
    _generator(device).set_state(new_state.to("cpu", torch.uint8))


def get_rng_state_all():
    return [get_rng_state(index) for index in range(_C._device_count())]


def set_rng_state_all(new_states):
    for index, state in enumerate(new_states):
        set_rng_state(state, index)
