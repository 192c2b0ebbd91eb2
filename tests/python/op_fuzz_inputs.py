"""What a case of the differential fuzzer (op_fuzz.py) is, and how its inputs,
scalars, shapes and dims are drawn. The op families that use these are in
op_fuzz_families.py."""
import math

import torch
from hypothesis import strategies as st

FLOATING = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTEGRAL = [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8]
ALL_DTYPES = FLOATING + INTEGRAL + [torch.bool]

# Exact in every float dtype, then values no float16/bfloat16 holds exactly
# (how a kernel rounds the scalar shows), then the extremes.
FLOAT_SCALARS = [0.5, 2.0, -1.5, 0.0, -0.0, 1.0, -3.0, 0.1, 1 / 3, -1.1, 1e5, math.inf, -math.inf, math.nan,
                 5e-324, 1e-310, 1e-45, 1e-40, 3.4e38, 65504.0, 1e20, 1.7976931348623157e308]
INT_SCALARS = [2, -3, 0, 1, -1, 7, 127, -128, 255, 1000, 2**31 - 1, -2**31, 2**63 - 1, -2**63]


class Input:
    """A tensor argument: a contiguous CPU `base` and the `view` of it the op
    gets (the layout). The op may write it only when `written`."""

    def __init__(self, base, view, layout, written=False):
        self.base, self.view, self.layout, self.written = base, view, layout, written

    def describe(self):
        view = self.view(self.base)
        values = view.tolist() if view.numel() <= 64 else f"{view.numel()} elements, base {self.base}"
        return (f"{self.layout} {tuple(view.shape)} stride {view.stride()} {view.dtype}"
                f"{' (written)' if self.written else ''}: {values}")


class Case:
    """`function(*views)` of `inputs`, named for the report."""

    def __init__(self, name, function, inputs, unspecified_errors=(), exact_function=None, tolerance=None,
                 magnitude_function=None):
        self.name, self.function, self.inputs = name, function, inputs
        # For sums of products: run on the inputs' float64 absolute values, it
        # gives the scale a result's rounding error is relative to (|A| @ |B|
        # for a matmul), where the result itself may have cancelled.
        self.magnitude_function = magnitude_function
        # (rtol, atol) where the dtype's default does not apply (see its use).
        self.tolerance = tolerance
        # What gives the float64 answer from float64 inputs, where `function`
        # would not (a dtype= argument would round it to that dtype).
        self.exact_function = exact_function
        # Messages of CPU errors where PyTorch leaves kiln's behaviour open:
        # such a case is not compared (Hypothesis draws another).
        self.unspecified_errors = unspecified_errors

    def describe(self):
        return "\n".join([self.name] + [f"  input {index}: {item.describe()}"
                                         for index, item in enumerate(self.inputs)])


# ---------------------------------------------------------------------------
# Drawing inputs


def specials(dtype):
    """The values of `dtype` most likely to break a kernel."""
    if dtype == torch.bool:
        return [True, False]
    if dtype.is_floating_point:
        info = torch.finfo(dtype)
        return [math.inf, -math.inf, math.nan, -0.0, 0.0, info.tiny / 4, info.tiny, info.max, -info.max,
                info.eps, 1.0, -1.0, 0.5]
    info = torch.iinfo(dtype)
    return [info.max, info.min, 0, 1, info.max - 1] + ([-1] if info.min < 0 else [])


def same_value(first, second):
    return first == second or (first != first and second != second)  # NaN is NaN


def draw_shape(draw, min_dims=0, max_dims=4):
    dims = draw(st.integers(min_dims, max_dims))
    shape = [draw(st.sampled_from([1, 2, 3, 4, 5, 7])) for _ in range(dims)]
    if dims and draw(st.integers(0, 9)) == 0:
        shape[draw(st.integers(0, dims - 1))] = 0
    return tuple(shape)


def draw_values(draw, shape, dtype, avoid=(), small_integers=False):
    """A contiguous CPU tensor: seeded random values of a drawn scale, with a
    few of the dtype's special values (but none of `avoid`) at drawn places.
    With `small_integers`, integers stay within [-9, 9] (specials too)."""
    generator = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    count = math.prod(shape)
    if dtype == torch.bool:
        values = torch.rand(shape, generator=generator) > 0.5
    elif dtype.is_floating_point:
        scale = draw(st.sampled_from([3.0, 1.0, 100.0, 1e-3, 1e4]))
        values = (torch.randn(shape, generator=generator, dtype=torch.float64) * scale).to(dtype)
    else:
        info = torch.iinfo(dtype)
        low, high = draw(st.sampled_from([(-9, 10), (0, 4)] + ([] if small_integers else [(info.min, info.max)])))
        low = max(low, info.min)
        values = torch.randint(low, high, shape, generator=generator, dtype=torch.int64).to(dtype)
    if count:
        candidates = [value for value in specials(dtype) if not any(same_value(value, other) for other in avoid)
                      and not (small_integers and not dtype.is_floating_point and abs(value) > 9)]
        placed = draw(st.lists(st.tuples(st.integers(0, count - 1), st.sampled_from(candidates)), max_size=3))
        flat = values.view(-1)
        for index, value in placed:
            flat[index] = value
    return values


def draw_input(draw, shape, dtype, written=False, avoid=(), small_integers=False):
    """An Input of logical `shape`, laid out as drawn. Written inputs are never
    expanded (their elements must not overlap)."""
    values = lambda values_shape: draw_values(draw, values_shape, dtype, avoid, small_integers)  # noqa: E731
    layouts = ["contiguous", "transposed", "sliced"] + ([] if written else ["expanded"])
    layout = draw(st.sampled_from(layouts))
    if layout == "transposed" and len(shape) >= 2:
        base = values(tuple(reversed(shape)))
        return Input(base, lambda tensor: tensor.permute(*reversed(range(tensor.dim()))), layout, written)
    if layout == "sliced" and len(shape) >= 1:
        base = values(shape[:-1] + (2 * shape[-1] + 1,))
        return Input(base, lambda tensor: tensor[..., 1::2], layout, written)
    if layout == "expanded" and len(shape) >= 1:
        collapsed = tuple(1 if draw(st.booleans()) else size for size in shape)
        base = values(collapsed)
        return Input(base, lambda tensor: tensor.expand(shape), layout, written)
    return Input(values(shape), lambda tensor: tensor, "contiguous", written)


def draw_output(draw, shape, dtypes):
    """An out= argument: of the result's shape in a drawn layout and dtype, or
    empty (resized by the op)."""
    dtype = draw(st.sampled_from(dtypes))
    if draw(st.integers(0, 4)) == 0:
        return Input(torch.empty(0, dtype=dtype), lambda tensor: tensor, "empty", True)
    if dtype.is_complex:
        return draw_complex(draw, shape, written=True)
    return draw_input(draw, shape, dtype, written=True)


def draw_scalar(draw, dtype=None):
    """A Python scalar: of `dtype`'s kind mostly, any kind sometimes."""
    kind = "float" if dtype is not None and dtype.is_floating_point else "int"
    if dtype == torch.bool or draw(st.integers(0, 4)) == 0:
        kind = draw(st.sampled_from(["float", "int", "bool"]))
    if kind == "bool":
        return draw(st.booleans())
    return draw(st.sampled_from(FLOAT_SCALARS if kind == "float" else INT_SCALARS))


def draw_dim(draw, dims, allow_none=False):
    choices = list(range(-max(dims, 1), max(dims, 1)))
    if allow_none:
        choices = [None] + choices
    return draw(st.sampled_from(choices))


def broadcast_shapes(draw, shape):
    """Two shapes that broadcast against each other: `shape` with some sizes
    set to 1, and the same again with leading dims dropped."""
    first = tuple(1 if draw(st.integers(0, 5)) == 0 else size for size in shape)
    second = tuple(1 if draw(st.integers(0, 3)) == 0 else size for size in shape)
    second = second[draw(st.integers(0, len(second))) if draw(st.integers(0, 3)) == 0 else 0:]
    return (second, first) if draw(st.booleans()) else (first, second)


def result_shape(*shapes):
    return tuple(torch.broadcast_shapes(*shapes))


def draw_complex(draw, shape, written=False, avoid=()):
    """A complex64 Input laid out as draw_input lays out a real one: real and
    imaginary parts drawn as float32 values (special values included)."""
    item = draw_input(draw, shape, torch.float32, written=written, avoid=avoid)
    imaginary = draw_values(draw, tuple(item.base.shape), torch.float32, avoid)
    return Input(torch.complex(item.base, imaginary), item.view, item.layout, written)
