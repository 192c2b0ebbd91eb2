"""Differential testing of compiled ops against PyTorch's CPU results.

check(fn, *inputs) runs `fn` on CPU tensors and on their kiln copies and
compares every output (values, dtype, shape) with the tolerances PyTorch's own
tests use for the dtype. variants(shape) yields the input layouts every lowered
op is tested over: contiguous, non-contiguous (transposed and sliced), zero-size
and 0-dim. Each op test also covers broadcasting, in-place and out= forms.
"""
import torch

import torch_kiln

# (rtol, atol) as torch.testing.assert_close uses by default.
TOLERANCES = {
    torch.float16: (1e-3, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-5),
    torch.float32: (1.3e-6, 1e-5),
    torch.float64: (1e-7, 1e-7),
    # Complex results are compared with their part dtype's tolerances, as
    # assert_close does.
    torch.complex32: (1e-3, 1e-5),
    torch.complex64: (1.3e-6, 1e-5),
    torch.complex128: (1e-7, 1e-7),
}

FLOATING = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
INTEGRAL = [torch.int64, torch.int32]
ALL = FLOATING + INTEGRAL + [torch.bool]


def make(shape, dtype, low=-3.0, high=3.0, generator=None):
    """A CPU tensor of `shape` and `dtype` with values in [low, high)."""
    if dtype == torch.bool:
        return torch.rand(shape, generator=generator) > 0.5
    values = torch.rand(shape, generator=generator, dtype=torch.float64) * (high - low) + low
    if dtype.is_complex:
        # Both parts random: a real-valued complex tensor would hide mixups
        # of the real and imaginary parts.
        imaginary = torch.rand(shape, generator=generator, dtype=torch.float64) * (high - low) + low
        return torch.complex(values, imaginary).to(dtype)
    if not dtype.is_floating_point:
        values = values.round()
    return values.to(dtype)


def variants(shape, dtype, **make_arguments):
    """(name, tensor) pairs of CPU tensors with the logical `shape` laid out in
    different ways, plus a zero-size and a 0-dim tensor."""
    base = make(shape, dtype, **make_arguments)
    yield "contiguous", base
    if len(shape) >= 2:
        transposed = make(tuple(reversed(shape)), dtype, **make_arguments).transpose(0, -1)
        yield "transposed", transposed
    wide = make(shape[:-1] + (shape[-1] * 2,), dtype, **make_arguments) if shape else None
    if wide is not None:
        yield "sliced", wide[..., ::2]
    yield "zero_size", make((0,) + tuple(shape[1:]), dtype, **make_arguments)
    yield "zero_dim", make((), dtype, **make_arguments)


def to_kiln(value):
    if isinstance(value, torch.Tensor):
        return value.to("kiln")
    if isinstance(value, (list, tuple)):
        return type(value)(to_kiln(item) for item in value)
    if isinstance(value, dict):
        return {key: to_kiln(item) for key, item in value.items()}
    return value


def assert_same(expected, actual, message="", tolerance=None):
    """Compares a CPU result with a kiln result (tensors, or tuples of them).
    `tolerance` (rtol, atol) overrides the dtype's default, for results whose
    rounding depends on summation order (large reductions)."""
    if isinstance(expected, (list, tuple)):
        assert isinstance(actual, (list, tuple)) and len(actual) == len(expected), message
        for index, (first, second) in enumerate(zip(expected, actual)):
            assert_same(first, second, f"{message} [output {index}]", tolerance)
        return
    if not isinstance(expected, torch.Tensor):
        assert expected == actual, message
        return
    assert actual.device.type == "kiln", f"{message}: result on {actual.device}"
    actual = actual.cpu()
    assert actual.dtype == expected.dtype, f"{message}: dtype {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{message}: shape {actual.shape} != {expected.shape}"
    rtol, atol = tolerance or TOLERANCES.get(expected.dtype, (0, 0))
    torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=True,
                               msg=lambda text: f"{message}: {text}")


def check(fn, *inputs, message="", tolerance=None, **keywords):
    """Runs fn(*inputs, **keywords) on the CPU and on kiln copies and compares.
    If the CPU raises, kiln must raise the same exception type."""
    try:
        expected = fn(*inputs, **keywords)
    except Exception as error:  # noqa: BLE001 - any CPU error must be matched
        try:
            fn(*to_kiln(inputs), **to_kiln(keywords))
        except type(error):
            return
        raise AssertionError(f"{message}: the CPU raised {error!r}, kiln did not")
    actual = fn(*to_kiln(inputs), **to_kiln(keywords))
    assert_same(expected, actual, message, tolerance)


def compiled_only(fn):
    """Runs fn() and asserts no op took the CPU fallback while it ran."""
    torch_kiln.clear_op_tracking()
    result = fn()
    fallbacks = torch_kiln.get_fallback_ops()
    assert not fallbacks, f"ops fell back to the CPU: {fallbacks}"
    return result


def kernels_launched(fn):
    """The number of kernels fn() launches on kiln (kernel cache lookups),
    after a warm-up call that compiles them."""
    fn()
    torch.kiln.synchronize()
    torch_kiln._C._reset_compiler_stats()
    fn()
    torch.kiln.synchronize()
    return torch_kiln._C._compiler_stats()["memory_hits"]


def check_with_gradient(fn, base, backward=True, only_compiled=True):
    """fn(base) on the CPU and on a kiln copy, compared; with `backward` (and a
    floating base) the gradients of base for one random cotangent too. With
    `only_compiled`, no op may fall back on kiln."""
    differentiable = backward and base.dtype.is_floating_point
    cpu = base.detach().clone().requires_grad_(differentiable)
    kiln = base.detach().to("kiln").requires_grad_(differentiable)
    expected = fn(cpu)
    incoming = make(expected.shape, expected.dtype) if differentiable else None

    def on_kiln():
        actual = fn(kiln)
        if differentiable:
            actual.backward(incoming.to("kiln"))
        return actual

    actual = compiled_only(on_kiln) if only_compiled else on_kiln()
    assert_same(expected, actual)
    if differentiable:
        expected.backward(incoming)
        assert_same(cpu.grad, kiln.grad, "grad")
