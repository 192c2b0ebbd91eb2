"""The op families of the differential fuzzer (op_fuzz.py): each draws one
Case of kiln's native ops, with its inputs (op_fuzz_inputs.py), scalars and
form (functional, in-place, out=). FAMILIES names them."""
import math
import operator

import torch
from hypothesis import strategies as st

from differential import TOLERANCES  # (rtol, atol) as torch.testing.assert_close uses by default
from op_fuzz_inputs import (ALL_DTYPES, FLOATING, INTEGRAL, Case, Input, broadcast_shapes, draw_complex, draw_dim,
                            draw_input, draw_output, draw_scalar, draw_shape, result_shape, specials)


# ---------------------------------------------------------------------------
# Op families: each draws one Case.

UNARY = ["abs", "neg", "sign", "sgn", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt",
         "rsqrt", "reciprocal", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh",
         "acosh", "atanh", "erf", "erfc", "erfinv", "lgamma", "digamma", "i0", "sigmoid", "floor", "ceil",
         "round", "trunc", "frac", "sinc", "logit", "nan_to_num", "bitwise_not", "logical_not", "relu"]
# No out= overload (the call would only raise TypeError on both sides).
UNARY_PREDICATES = ["isnan", "isinf", "isposinf", "isneginf", "signbit"]
ACTIVATIONS = ["gelu", "silu", "mish", "hardsigmoid", "hardswish", "elu", "leaky_relu", "hardtanh", "softplus",
               "hardshrink", "softshrink", "logsigmoid", "relu6"]


def unary_family(draw):
    shape = draw_shape(draw)
    dtype = draw(st.sampled_from(ALL_DTYPES))
    kind = draw(st.sampled_from(["math", "predicate", "activation"]))
    if kind == "predicate":
        name = draw(st.sampled_from(UNARY_PREDICATES))
        return Case(f"torch.{name}", getattr(torch, name), [draw_input(draw, shape, dtype)])
    if kind == "activation":
        name = draw(st.sampled_from(ACTIVATIONS))
        function = getattr(torch.nn.functional, name)
        if draw(st.booleans()) and name in ("silu", "mish", "hardsigmoid", "hardswish", "elu", "leaky_relu",
                                            "hardtanh", "relu6"):
            return Case(f"F.{name}(inplace=True)", lambda x: function(x, inplace=True),
                        [draw_input(draw, shape, dtype, written=True)])
        return Case(f"F.{name}", function, [draw_input(draw, shape, dtype)])
    name = draw(st.sampled_from(UNARY + ["round_decimals"]))
    function = getattr(torch, name, None)
    keywords = {}
    if name == "round_decimals":
        function, keywords = torch.round, {"decimals": draw(st.sampled_from([1, -1, 3]))}
    elif name == "logit" and draw(st.booleans()):
        keywords = {"eps": draw(st.sampled_from([1e-6, 0.25]))}
    form = draw(st.sampled_from(["functional", "inplace", "out"]))
    method = function.__name__ + "_"
    if form == "inplace":
        return Case(f"Tensor.{method}{keywords}", lambda x: getattr(x, method)(**keywords),
                    [draw_input(draw, shape, dtype, written=True)])
    if form == "out" and name != "relu":
        out = draw_output(draw, shape, ALL_DTYPES)
        # An integral input computes in the default dtype, float32, even into
        # a float64 out=: the result carries float32's rounding (libm's and
        # Sleef's last bits differ), so float32's tolerance applies.
        tolerance = TOLERANCES[torch.float32] if not dtype.is_floating_point else None
        return Case(f"torch.{name}{keywords}(out=)", lambda x, o: function(x, out=o, **keywords),
                    [draw_input(draw, shape, dtype), out], tolerance=tolerance)
    return Case(f"torch.{name}{keywords}", lambda x: function(x, **keywords), [draw_input(draw, shape, dtype)])


BINARY = ["add", "sub", "mul", "div", "div_trunc", "div_floor", "remainder", "fmod", "floor_divide", "pow",
          "atan2", "copysign", "hypot", "maximum", "minimum", "fmax", "fmin", "bitwise_and", "bitwise_or",
          "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift", "eq", "ne", "lt", "le", "gt", "ge",
          "logical_and", "logical_or", "logical_xor", "heaviside", "logaddexp", "logaddexp2", "nextafter",
          "xlogy"]
INTEGER_DIVISIONS = {"div_trunc", "div_floor", "remainder", "fmod", "floor_divide"}
REFLECTED = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv,
             "floor_divide": operator.floordiv, "remainder": operator.mod, "pow": operator.pow,
             "bitwise_and": operator.and_, "bitwise_or": operator.or_, "bitwise_xor": operator.xor,
             "bitwise_left_shift": operator.lshift, "bitwise_right_shift": operator.rshift,
             "eq": operator.eq, "lt": operator.lt, "ge": operator.ge}


def binary_function(name):
    """(torch function, its in-place method's name, extra keywords) of `name`."""
    if name in ("div_trunc", "div_floor"):
        return torch.div, "div_", {"rounding_mode": name[4:]}
    return getattr(torch, name), name + "_", {}


def binary_family(draw):
    case = binary_case(draw)
    if any(case.name.startswith(prefix) for prefix in ("div", "Tensor.div", "remainder", "Tensor.remainder", "fmod",
                                                       "Tensor.fmod", "floor_divide", "Tensor.floor_divide")) \
            or " floordiv " in case.name or " mod " in case.name:
        # Integer division by zero: the CPU raises ZeroDivisionError, kiln's
        # kernels return 0 (a kernel cannot raise mid-loop; see
        # csrc/kiln/compiler/codegen/prelude.cc), as CUDA returns an
        # unspecified value: PyTorch leaves the result to the device.
        case.unspecified_errors = ("ZeroDivisionError",)
    return case


def binary_case(draw):
    name = draw(st.sampled_from(BINARY))
    function, method, keywords = binary_function(name)
    if name in ("add", "sub") and draw(st.booleans()):
        keywords = {"alpha": draw(st.sampled_from([2, -1, 0, 0.5, True]))}
    first_dtype = draw(st.sampled_from(ALL_DTYPES))
    # Integer division of the most negative int32 or int64 by -1 overflows:
    # the CPU kernel dies of SIGFPE (x86 idiv traps), so such a case cannot
    # run. The dividend never holds that value (a smaller type's minimum is
    # harmless: C computes it in int).
    dividend_avoid = [torch.iinfo(first_dtype).min] if (
        name in INTEGER_DIVISIONS and first_dtype in (torch.int32, torch.int64)) else []
    first_shape, second_shape = broadcast_shapes(draw, draw_shape(draw))
    second_kind = draw(st.sampled_from(["tensor", "tensor", "scalar", "zero_dim", "reflected"]))
    form = draw(st.sampled_from(["functional", "inplace", "out"]))
    first = draw_input(draw, first_shape, first_dtype, written=form == "inplace", avoid=dividend_avoid)
    if second_kind == "reflected" and name in REFLECTED:
        scalar = draw_scalar(draw, first_dtype)
        if name in INTEGER_DIVISIONS and scalar in (-2**31, -2**63):
            scalar = -7  # the dividend again (see above)
        reflected = REFLECTED[name]
        first.written = False
        return Case(f"{scalar!r} {reflected.__name__} tensor", lambda x: reflected(scalar, x), [first])
    if second_kind in ("scalar", "reflected"):
        scalar = draw_scalar(draw, first_dtype)
        label, shape, inputs = f"{name}(tensor, {scalar!r}, {keywords})", first_shape, [first]
        if form == "inplace":
            return Case("Tensor." + method + label[len(name):], lambda x: getattr(x, method)(scalar, **keywords),
                        inputs)
        call = lambda x, *rest: function(x, scalar, *rest, **keywords)  # noqa: E731
    else:
        second_dtype = draw(st.sampled_from(ALL_DTYPES + [first_dtype] * 4))
        second_shape = () if second_kind == "zero_dim" else second_shape
        if second_shape == () and name == "div_trunc" and first_dtype in (torch.float16, torch.bfloat16):
            # ATen's div_trunc takes any 0-dim CPU tensor divisor of a half
            # tensor as a CPU scalar (truncating the float quotient); a 0-dim
            # kiln tensor is a device operand, as a CUDA one is there (the
            # quotient rounded to half first): one element instead.
            second_shape = (1,)
        inputs = [first, draw_input(draw, second_shape, second_dtype)]
        label, shape = f"{name}(tensor, tensor, {keywords})", result_shape(first_shape, second_shape)
        if form == "inplace":
            return Case("Tensor." + method + label[len(name):], lambda x, y: getattr(x, method)(y, **keywords),
                        inputs)
        call = lambda x, y, *rest: function(x, y, *rest, **keywords)  # noqa: E731
    if form == "out":
        out = draw_output(draw, shape, ALL_DTYPES)
        return Case(label + " out=", lambda *tensors: call(*tensors[:-1], out=tensors[-1]), inputs + [out])
    return Case(label, call, inputs)


def ternary_family(draw):
    name = draw(st.sampled_from(["where", "clamp", "clamp_min", "clamp_max", "lerp", "addcmul", "addcdiv",
                                 "threshold", "masked_fill"]))
    dtype = draw(st.sampled_from(ALL_DTYPES))
    shape = draw_shape(draw)
    first_shape, second_shape = broadcast_shapes(draw, shape)
    form = draw(st.sampled_from(["functional", "inplace", "out"]))

    def operand(operand_shape, operand_dtype=None, scalar_allowed=True):
        if scalar_allowed and draw(st.integers(0, 2)) == 0:
            return draw_scalar(draw, dtype)
        return draw_input(draw, operand_shape, operand_dtype or draw(st.sampled_from(ALL_DTYPES + [dtype] * 4)))

    if name == "where":
        condition = draw_input(draw, first_shape, torch.bool)
        x, y = operand(second_shape), operand(shape)
        tensors = [item for item in (x, y) if isinstance(item, Input)]
        # Scalars are bound by position; tensors come after the condition.
        def where(c, *rest):
            values = iter(rest)
            left = next(values) if isinstance(x, Input) else x
            right = next(values) if isinstance(y, Input) else y
            out = next(values, None)
            return torch.where(c, left, right, **({"out": out} if out is not None else {}))
        inputs = [condition] + tensors
        if form == "out" and len(tensors) == 2:
            return Case("torch.where(out=)", where, inputs + [draw_output(draw, shape, ALL_DTYPES)])
        return Case(f"torch.where(x={x if not isinstance(x, Input) else 'tensor'}, "
                    f"y={y if not isinstance(y, Input) else 'tensor'})", where, inputs)
    if name == "masked_fill":
        value = draw_scalar(draw, dtype)
        mask = draw_input(draw, second_shape, torch.bool)
        if form == "inplace":
            return Case(f"Tensor.masked_fill_({value!r})", lambda x, m: x.masked_fill_(m, value),
                        [draw_input(draw, shape, dtype, written=True), mask])
        return Case(f"masked_fill({value!r})", lambda x, m: x.masked_fill(m, value),
                    [draw_input(draw, first_shape, dtype), mask])
    if name == "threshold":
        threshold, value = draw_scalar(draw, dtype), draw_scalar(draw, dtype)
        inplace = form == "inplace"
        return Case(f"F.threshold({threshold!r}, {value!r}, inplace={inplace})",
                    lambda x: torch.nn.functional.threshold(x, threshold, value, inplace=inplace),
                    [draw_input(draw, shape, dtype, written=inplace)])
    if name.startswith("clamp"):
        bounds = {"clamp": ["min", "max"], "clamp_min": ["min"], "clamp_max": ["max"]}[name]
        limits = {}
        for bound in bounds:
            choice = draw(st.sampled_from(["none", "scalar", "tensor"]) if name == "clamp"
                          else st.sampled_from(["scalar", "tensor"]))
            if choice == "scalar":
                limits[bound] = draw_scalar(draw, dtype)
            elif choice == "tensor":
                limits[bound] = draw_input(draw, second_shape, draw(st.sampled_from(ALL_DTYPES + [dtype] * 4)))
            else:
                limits[bound] = None
        tensor_bounds = [bound for bound in bounds if isinstance(limits[bound], Input)]
        def clamp(x, *rest):
            values = iter(rest)
            arguments = [next(values) if isinstance(limits[bound], Input) else limits[bound] for bound in bounds]
            out = next(values, None)
            if form == "inplace":
                return getattr(x, name + "_")(*arguments)
            return getattr(torch, name)(x, *arguments, **({"out": out} if out is not None else {}))
        described = {bound: ("tensor" if isinstance(value, Input) else value) for bound, value in limits.items()}
        inputs = [draw_input(draw, shape if form == "inplace" else first_shape, dtype, written=form == "inplace")]
        inputs += [limits[bound] for bound in tensor_bounds]
        if form == "out":
            inputs.append(draw_output(draw, shape, ALL_DTYPES))
        return Case(f"{name}{described} {form}", clamp, inputs)
    # lerp, addcmul, addcdiv: self, two tensors, and a scalar (weight or value).
    scalar = draw_scalar(draw, dtype)
    if name == "lerp":
        weight_is_tensor = draw(st.booleans())
        operands = [draw_input(draw, second_shape, dtype)] + (
            [draw_input(draw, first_shape, dtype)] if weight_is_tensor else [])
    else:
        weight_is_tensor = False
        operands = [draw_input(draw, second_shape, draw(st.sampled_from(ALL_DTYPES + [dtype] * 4))),
                    draw_input(draw, first_shape, draw(st.sampled_from(ALL_DTYPES + [dtype] * 4)))]

    def blend(x, *rest):
        arguments = list(rest[:2]) if (name != "lerp" or weight_is_tensor) else [rest[0], scalar]
        out = rest[len(operands)] if len(rest) > len(operands) else None
        keywords = {} if name == "lerp" else {"value": scalar}
        if form == "inplace":
            return getattr(x, name + "_")(*arguments, **keywords)
        if out is not None:
            keywords["out"] = out
        return getattr(torch, name)(x, *arguments, **keywords)
    inputs = [draw_input(draw, shape if form == "inplace" else first_shape, dtype, written=form == "inplace")]
    inputs += operands
    if form == "out":
        inputs.append(draw_output(draw, shape, ALL_DTYPES))
    return Case(f"{name}(scalar={scalar!r}, tensor weight={weight_is_tensor}) {form}", blend, inputs)


REDUCTIONS = ["sum", "mean", "prod", "nansum", "amax", "amin", "any", "all", "max", "min", "argmax", "argmin",
              "aminmax", "var", "std", "var_mean", "std_mean", "logsumexp", "vector_norm", "count_nonzero"]


def reduced_shape(shape, dims, keepdim):
    if dims is None:
        dims = range(len(shape))
    dims = {dim % max(len(shape), 1) for dim in ([dims] if isinstance(dims, int) else dims)}
    if keepdim:
        return tuple(1 if index in dims else size for index, size in enumerate(shape))
    return tuple(size for index, size in enumerate(shape) if index not in dims)


def reduction_family(draw):
    name = draw(st.sampled_from(REDUCTIONS))
    shape = draw_shape(draw)
    dtype = draw(st.sampled_from(ALL_DTYPES))
    keepdim = draw(st.booleans())
    ndim = len(shape)
    single_dim_ops = ("prod", "max", "min", "argmax", "argmin", "any", "all", "aminmax")
    if name in single_dim_ops:
        dim = draw_dim(draw, ndim, allow_none=name not in ("max", "min") or draw(st.booleans()))
    else:
        dim = draw(st.one_of(st.none(), st.lists(st.integers(-max(ndim, 1), max(ndim, 1) - 1), max_size=3,
                                                 unique=True), st.integers(-max(ndim, 1), max(ndim, 1) - 1)))
    keywords = {}
    if name in ("sum", "mean", "prod", "nansum") and draw(st.integers(0, 2)) == 0:
        # A float dtype= of an integral or float input; an integral one only of
        # an integral input (converting a float input to an integer is
        # undefined for values out of range).
        candidates = FLOATING + (INTEGRAL if not dtype.is_floating_point else [])
        keywords["dtype"] = draw(st.sampled_from(candidates))
    if name in ("var", "std", "var_mean", "std_mean"):
        keywords["correction"] = draw(st.sampled_from([0, 1, 2]))
    if name == "vector_norm":
        keywords["ord"] = draw(st.sampled_from([2, 1, math.inf, -math.inf, 0, 3, 0.5]))
        if ndim == 0 and dim is not None:
            # ATen's linalg_vector_norm reads sizes()[dim] of a 0-dim tensor
            # out of bounds to decide whether it reduces over one element:
            # its result depends on that memory.
            dim = None
    # var_mean's and std_mean's mean of a tensor holding an infinity: ATen's
    # Welford update gives NaN or the infinity depending on where it stands
    # and how the CPU splits the rows (inf + (x - inf) / n); kiln gives the
    # mean, as torch.mean does. Neither is documented; the variance is NaN
    # on both.
    avoid = [math.inf, -math.inf] if name in ("var_mean", "std_mean") else []
    if name == "prod" and dtype.is_floating_point:
        # A product that overflows on the way meets a zero or an infinity at
        # a point that depends on the order of the multiplications (NaN on one
        # side, 0 on the other), which PyTorch does not specify: no zeros,
        # infinities or extremes among prod's specials.
        info = torch.finfo(dtype)
        avoid = [0.0, -0.0, math.inf, -math.inf, info.max, -info.max, info.tiny, info.tiny / 4]
    # An integral input summed in a float dtype: int64's extremes lose their
    # low bits in the conversion and their sum then depends on the order of
    # the additions (the CPU's vectorized lanes give -18 where the exact sum
    # is -17 and kiln's -16): only small integers are drawn there.
    converted = not dtype.is_floating_point and keywords.get("dtype", dtype).is_floating_point
    source = draw_input(draw, shape, dtype, avoid=avoid, small_integers=converted)
    function = torch.linalg.vector_norm if name == "vector_norm" else getattr(torch, name)
    label = f"torch.{name}(dim={dim}, keepdim={keepdim}, {keywords})"

    def reduce(x, *out):
        arguments = {} if out == () else {"out": out[0] if len(out) == 1 else tuple(out)}
        if name == "count_nonzero":
            return function(x, dim=dim)
        if dim is None:
            # The overloads without a dim: keepdim only where they take it.
            if name in ("argmax", "argmin", "aminmax"):
                return function(x, keepdim=keepdim)
            return function(x, **keywords)
        return function(x, dim=dim, keepdim=keepdim, **keywords, **arguments)
    exact = None
    if keywords.get("dtype") is not None and keywords["dtype"].is_floating_point:
        # The op converts its input to dtype= first: so does the answer.
        exact_keywords = dict(keywords, dtype=torch.float64)
        requested = keywords["dtype"]
        exact = lambda x, *out: (function(x.to(requested).double(), **exact_keywords) if dim is None  # noqa: E731
                                 else function(x.to(requested).double(), dim=dim, keepdim=keepdim,
                                               **exact_keywords))
    inputs = [source]
    if draw(st.integers(0, 3)) == 0 and name not in ("var_mean", "std_mean", "count_nonzero") and dim is not None:
        out_shape = reduced_shape(shape, dim, keepdim)
        out_dtypes = ALL_DTYPES
        if name in ("var", "std") and dtype in (torch.float16, torch.bfloat16):
            # The CPU's path for a full reduction into another dtype's out=
            # handles float and double inputs only ("std_var_all: Unsupported
            # dtype Half"), a limit of that path alone (CUDA computes it): a
            # half input's out= keeps its dtype.
            out_dtypes = [dtype]
        inputs.append(draw_output(draw, out_shape, out_dtypes))
        if name in ("max", "min"):
            inputs.append(draw_output(draw, out_shape, [torch.int64, torch.int32]))
        elif name == "aminmax":
            inputs.append(draw_output(draw, out_shape, ALL_DTYPES))
        label += " out="
    return Case(label, reduce, inputs, exact_function=exact)


def cast_family(draw):
    shape = draw_shape(draw)
    source_dtype = draw(st.sampled_from(ALL_DTYPES))
    target = draw(st.sampled_from(ALL_DTYPES))
    kind = draw(st.sampled_from(["to", "copy_", "clone", "contiguous", "fill_", "zero_"]))
    avoid = []
    if source_dtype.is_floating_point and not target.is_floating_point and target != torch.bool:
        # Converting a float that is NaN, infinite or out of the integer
        # type's range is undefined behaviour in C++, and PyTorch documents
        # the result as unspecified: only in-range values are drawn.
        avoid = [value for value in specials(source_dtype) if not math.isfinite(value) or abs(value) > 100]
    if kind == "to":
        return Case(f"to({target})", lambda x: x.to(target), [clamped_input(draw, shape, source_dtype, avoid,
                                                                             target)])
    if kind == "copy_":
        source_shape, _ = broadcast_shapes(draw, shape)
        source = clamped_input(draw, source_shape, source_dtype, avoid, target)
        return Case(f"copy_ {source_dtype} into {target}", lambda d, s: d.copy_(s),
                    [draw_input(draw, shape, target, written=True), source])
    if kind == "fill_":
        value = draw_scalar(draw, target)
        return Case(f"fill_({value!r})", lambda x: x.fill_(value), [draw_input(draw, shape, target, written=True)])
    if kind == "zero_":
        return Case("zero_", lambda x: x.zero_(), [draw_input(draw, shape, target, written=True)])
    return Case(kind, lambda x: getattr(x, kind)(), [draw_input(draw, shape, source_dtype)])


def clamped_input(draw, shape, dtype, avoid, target):
    """An Input whose random values also fit `target` when they must (see
    cast_family)."""
    item = draw_input(draw, shape, dtype, avoid=avoid)
    if avoid:
        limit = 100 if target == torch.int8 else 200
        low = 0 if target == torch.uint8 else -limit
        item.base = item.base.nan_to_num(0.0, 0.0, 0.0).clamp(low, limit).trunc()
    return item


def view_family(draw):
    shape = draw_shape(draw, min_dims=1)
    dtype = draw(st.sampled_from(ALL_DTYPES))
    ndim = len(shape)
    kind = draw(st.sampled_from(["transpose", "permute", "narrow", "select", "step", "unsqueeze", "squeeze",
                                 "reshape", "view", "flatten", "diagonal", "movedim", "unfold", "expand",
                                 "unbind", "split", "flip", "roll", "cat", "stack"]))
    a, b = draw_dim(draw, ndim), draw_dim(draw, ndim)
    size = shape[a]
    start = draw(st.integers(0, size)) if size else 0
    length = draw(st.integers(0, size - start)) if size else 0
    permutation = draw(st.permutations(range(ndim)))
    views = {
        "transpose": lambda x: x.transpose(a, b),
        "permute": lambda x: x.permute(*permutation),
        "narrow": lambda x: x.narrow(a, start, length),
        "select": lambda x: x.select(a, start - (size if start % 2 else 0)),
        "step": lambda x: x[(slice(None),) * (a % ndim) + (slice(start, None, draw_step),)],
        "unsqueeze": lambda x: x.unsqueeze(a),
        "squeeze": lambda x: x.squeeze(a),
        "reshape": lambda x: x.reshape(-1, *shape[1:][::-1]),
        "view": lambda x: x.view(-1),
        "flatten": lambda x: x.flatten(min(a % ndim, b % ndim), max(a % ndim, b % ndim)),
        "diagonal": lambda x: x.diagonal(draw_offset, a, b),
        "movedim": lambda x: x.movedim(a, b),
        "unfold": lambda x: x.unfold(a, max(length, 1), draw_step),
        "expand": lambda x: x.unsqueeze(0).expand(2, *shape),
    }
    draw_step = draw(st.sampled_from([1, 2, 3]))
    draw_offset = draw(st.sampled_from([0, 1, -1, 2]))
    written = kind in views and kind not in ("unfold", "expand") and draw(st.booleans())
    source = draw_input(draw, shape, dtype, written=written)
    if kind in views:
        view = views[kind]
        if not written:
            return Case(f"{kind} then clone", lambda x: view(x).clone(), [source])
        action = draw(st.sampled_from(["add_", "mul_", "fill_", "copy_", "zero_", "neg_"]))
        if action in ("add_", "mul_", "fill_"):
            value = draw_scalar(draw, dtype)
            return Case(f"{kind} then {action}({value!r})", lambda x: getattr(view(x), action)(value), [source])
        if action == "copy_":
            other = draw_input(draw, (1,), draw(st.sampled_from(ALL_DTYPES)),
                               avoid=[math.nan, math.inf, -math.inf])
            if other.base.is_floating_point():
                other.base = other.base.clamp(-100, 100)
            return Case(f"{kind} then copy_ of a broadcast value", lambda x, y: view(x).copy_(y.squeeze()),
                        [source, other])
        return Case(f"{kind} then {action}", lambda x: getattr(view(x), action)(), [source])
    if kind == "unbind":
        return Case(f"unbind({a})", lambda x: x.unbind(a), [source])
    if kind == "split":
        return Case(f"split({draw_step}, {a})", lambda x: x.split(draw_step, a), [source])
    if kind == "flip":
        dims = sorted({a % ndim, b % ndim})
        return Case(f"flip({dims})", lambda x: x.flip(dims), [source])
    if kind == "roll":
        shifts = draw(st.sampled_from([1, -2, 5, 0]))
        return Case(f"roll({shifts}, {a})", lambda x: x.roll(shifts, a), [source])
    # cat and stack of two or three tensors, along `a`.
    count = draw(st.integers(1, 3))
    others = []
    for _ in range(count - 1):
        other_shape = list(shape)
        if kind == "cat":
            other_shape[a] = draw(st.sampled_from([0, 1, 2, 3]))
        others.append(draw_input(draw, tuple(other_shape), draw(st.sampled_from(ALL_DTYPES + [dtype] * 4))))
    function = torch.cat if kind == "cat" else torch.stack
    if draw(st.booleans()):
        result_dtype = draw(st.sampled_from(ALL_DTYPES))
        out = draw_output(draw, (0,), [result_dtype])
        return Case(f"{kind}({count} tensors, {a}) out=", lambda *tensors: function(tensors[:-1], a,
                                                                                     out=tensors[-1]),
                    [source] + others + [out])
    return Case(f"{kind}({count} tensors, {a})", lambda *tensors: function(tensors, a), [source] + others)


def matmul_family(draw):
    case = matmul_case(draw)
    # A dot product's error is relative to the sum of its terms' magnitudes,
    # not to a result that cancelled: the same op over |inputs| gives them.
    case.magnitude_function = case.function
    return case


def matmul_case(draw):
    name = draw(st.sampled_from(["mm", "addmm", "bmm", "baddbmm", "matmul", "linear"]))
    dtype = draw(st.sampled_from(FLOATING * 3 + [torch.int64]))
    other_dtype = dtype if draw(st.integers(0, 7)) else draw(st.sampled_from(ALL_DTYPES))
    sizes = [draw(st.sampled_from([1, 2, 3, 5, 8, 0])) for _ in range(4)]
    batch, rows, inner, columns = sizes
    mismatch = draw(st.integers(0, 9)) == 0
    inner_other = inner + 1 if mismatch else inner
    if 0 in sizes:
        # The CPU's bmm and baddbmm (which matmul and linear reach for some
        # layouts) return before they compare batch1's and batch2's dtypes
        # when the result or the contraction is empty (and give batch2's
        # dtype): an accident of ATen's early returns that kiln, which checks
        # first as mm does, does not copy.
        other_dtype = dtype
    scalars = {"beta": draw(st.sampled_from([1, 0, 0.5, -2])), "alpha": draw(st.sampled_from([1, 2, 0.5]))}
    if not dtype.is_floating_point:
        scalars = {key: int(value) for key, value in scalars.items()}
    if name in ("mm", "addmm"):
        shapes = [(rows, inner), (inner_other, columns)]
    elif name in ("bmm", "baddbmm"):
        shapes = [(batch, rows, inner), (batch, inner_other, columns)]
    elif name == "linear":
        shapes = [(batch, rows, inner)[draw(st.integers(0, 2)):], (columns, inner_other)]
    else:
        shapes = [draw(st.sampled_from([(inner,), (rows, inner), (batch, rows, inner), (2, 1, rows, inner)])),
                  draw(st.sampled_from([(inner_other,), (inner_other, columns), (batch, inner_other, columns)]))]
    inputs = [draw_input(draw, shapes[0], dtype), draw_input(draw, shapes[1], other_dtype)]
    # A dot product's rounding depends on its summation order (BLAS blocks
    # and vector lanes), and the float64 check can still fail when the CPU's
    # order happens to cancel better: float32 gets 1e-5, as PyTorch's own
    # matmul OpInfos widen float32's default.
    tolerance = (1e-5, 1e-5) if dtype == torch.float32 else None
    if name in ("addmm", "baddbmm"):
        result = (rows, columns) if name == "addmm" else (batch, rows, columns)
        bias_shape, _ = broadcast_shapes(draw, result)
        inplace = draw(st.integers(0, 3)) == 0
        inputs.insert(0, draw_input(draw, result if inplace else bias_shape, dtype, written=inplace))
        if inplace:
            return Case(f"Tensor.{name}_({scalars})", lambda c, x, y: getattr(c, name + "_")(x, y, **scalars),
                        inputs, tolerance=tolerance)
        return Case(f"torch.{name}({scalars})", lambda c, x, y: getattr(torch, name)(c, x, y, **scalars), inputs,
                    tolerance=tolerance)
    if name == "linear":
        if draw(st.booleans()):
            inputs.append(draw_input(draw, (columns,), dtype))
        return Case("F.linear", torch.nn.functional.linear, inputs, tolerance=tolerance)
    if name in ("mm", "bmm") and draw(st.integers(0, 3)) == 0:
        out_shape = (rows, columns) if name == "mm" else (batch, rows, columns)
        inputs.append(draw_output(draw, out_shape, [dtype, dtype, torch.float64]))
        return Case(f"torch.{name}(out=)", lambda x, y, o: getattr(torch, name)(x, y, out=o), inputs,
                    tolerance=tolerance)
    return Case(f"torch.{name}", getattr(torch, name), inputs, tolerance=tolerance)


def softmax_scan_family(draw):
    name = draw(st.sampled_from(["softmax", "log_softmax", "cumsum", "cumprod", "cummax", "cummin",
                                 "logcumsumexp"]))
    shape = draw_shape(draw)
    dtype = draw(st.sampled_from(ALL_DTYPES if name.startswith("cum") else FLOATING * 3 + ALL_DTYPES))
    dim = draw_dim(draw, len(shape))
    keywords = {}
    if name in ("softmax", "log_softmax", "cumsum", "cumprod") and draw(st.integers(0, 2)) == 0:
        keywords["dtype"] = draw(st.sampled_from(FLOATING + (INTEGRAL if name.startswith("cum") and
                                                             not dtype.is_floating_point else [])))
    form = draw(st.sampled_from(["functional", "inplace", "out"]))
    if form == "inplace" and name in ("cumsum", "cumprod"):
        return Case(f"Tensor.{name}_({dim}, {keywords})", lambda x: getattr(x, name + "_")(dim, **keywords),
                    [draw_input(draw, shape, dtype, written=True)])
    # Integers scanned in a float dtype: as for reductions (reduction_family),
    # only small ones, whose float sums do not depend on the order.
    converted = not dtype.is_floating_point and keywords.get("dtype", dtype).is_floating_point
    source = draw_input(draw, shape, dtype, small_integers=converted)
    if form == "out" and name in ("cumsum", "cumprod", "logcumsumexp", "log_softmax", "softmax"):
        out = draw_output(draw, shape, ALL_DTYPES)
        return Case(f"torch.{name}({dim}, {keywords}, out=)",
                    lambda x, o: getattr(torch, name)(x, dim, out=o, **keywords), [source, out])
    if form == "out" and name in ("cummax", "cummin"):
        values = draw_output(draw, shape, ALL_DTYPES)
        indices = draw_output(draw, shape, [torch.int64, torch.int64, torch.int32])
        return Case(f"torch.{name}({dim}, out=)",
                    lambda x, v, i: getattr(torch, name)(x, dim, out=(v, i)), [source, values, indices])
    exact = None
    if keywords.get("dtype") is not None and keywords["dtype"].is_floating_point:
        requested = keywords["dtype"]  # the input is converted to it first
        exact = lambda x: getattr(torch, name)(x.to(requested).double(), dim, dtype=torch.float64)  # noqa: E731
    return Case(f"torch.{name}({dim}, {keywords})", lambda x: getattr(torch, name)(x, dim, **keywords), [source],
                exact_function=exact)


def index_tensor(draw, shape, bound, unique_along=None, full_size=None):
    """An int64 Input of `shape` with values in [0, bound): mostly in range,
    sometimes negative or out of range. With `unique_along` (a dim), values
    are distinct along that dim (`full_size` of them to choose from), for
    ops whose result with duplicate indices PyTorch leaves undefined."""
    generator = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    if unique_along is not None:
        wide = list(shape)
        wide[unique_along] = full_size
        values = torch.rand(wide, generator=generator).argsort(unique_along).narrow(
            unique_along, 0, shape[unique_along]).contiguous()
    else:
        values = torch.randint(0, max(bound, 1), shape, generator=generator)
    if math.prod(shape) and draw(st.integers(0, 5)) == 0:
        values.view(-1)[draw(st.integers(0, math.prod(shape) - 1))] = draw(st.sampled_from([-1, bound, -bound - 1]))
    layout = "contiguous"
    return Input(values, lambda tensor: tensor, layout)


def indexing_family(draw):
    name = draw(st.sampled_from(["gather", "index_select", "take", "masked_select", "nonzero", "scatter",
                                 "scatter_value", "scatter_add", "scatter_reduce", "index_add", "index_copy",
                                 "index_put", "index_fill", "put_"]))
    shape = draw_shape(draw, min_dims=1, max_dims=3)
    dtype = draw(st.sampled_from(ALL_DTYPES))
    ndim = len(shape)
    dim = draw_dim(draw, ndim)
    size = shape[dim]
    inplace = draw(st.booleans())
    if name == "nonzero":
        return Case("nonzero", torch.nonzero, [draw_input(draw, shape, dtype)])
    if name == "masked_select":
        mask_shape, _ = broadcast_shapes(draw, shape)
        return Case("masked_select", torch.masked_select,
                    [draw_input(draw, shape, dtype), draw_input(draw, mask_shape, torch.bool)])
    if name == "take":
        index_shape = draw_shape(draw, max_dims=2)
        return Case("take", torch.take, [draw_input(draw, shape, dtype),
                                         index_tensor(draw, index_shape, math.prod(shape))])
    if name == "index_select":
        count = draw(st.integers(0, 5))
        out = draw(st.integers(0, 3)) == 0
        inputs = [draw_input(draw, shape, dtype), index_tensor(draw, (count,), size)]
        if out:
            result = shape[:dim % ndim] + (count,) + shape[dim % ndim + 1:]
            return Case(f"index_select({dim}) out=", lambda x, i, o: torch.index_select(x, dim, i, out=o),
                        inputs + [draw_output(draw, result, [dtype, dtype, torch.float32])])
        return Case(f"index_select({dim})", lambda x, i: torch.index_select(x, dim, i), inputs)
    index_shape = tuple(draw(st.integers(0, extent)) for extent in shape)
    if name == "gather":
        return Case(f"gather({dim})", lambda x, i: torch.gather(x, dim, i),
                    [draw_input(draw, shape, dtype), index_tensor(draw, index_shape, size)])
    if name.startswith("scatter"):
        target = draw_input(draw, shape, dtype, written=inplace)
        unique = name in ("scatter", "scatter_value")
        index = index_tensor(draw, index_shape, size, unique_along=dim % ndim if unique else None,
                             full_size=size)
        reduce = None
        if name == "scatter_reduce":
            reduce = draw(st.sampled_from(["sum", "prod", "mean", "amax", "amin"]))
            include_self = draw(st.booleans())
        if name == "scatter_value":
            value = draw_scalar(draw, dtype)
            function = (lambda x, i: x.scatter_(dim, i, value)) if inplace else (
                lambda x, i: torch.scatter(x, dim, i, value))
            return Case(f"scatter({dim}, value={value!r}) inplace={inplace}", function, [target, index])
        source = draw_input(draw, index_shape, draw(st.sampled_from(ALL_DTYPES + [dtype] * 4)))
        method = {"scatter": "scatter", "scatter_add": "scatter_add", "scatter_reduce": "scatter_reduce"}[name]

        def scatter(x, i, s):
            arguments = (dim, i, s) + ((reduce,) if reduce else ())
            keywords = {"include_self": include_self} if reduce else {}
            return getattr(x, method + "_")(*arguments, **keywords) if inplace else getattr(torch, method)(
                x, *arguments, **keywords)
        return Case(f"{method}({dim}, reduce={reduce}) inplace={inplace}", scatter, [target, index, source])
    count = draw(st.integers(0, 4))
    # index_add of float16/bfloat16 with a repeated index: the CPU rounds each
    # partial sum to the half type in its own order, which PyTorch leaves
    # unspecified; such cases draw distinct indices.
    unique = name in ("index_copy", "index_put", "put_") or (
        name == "index_add" and dtype in (torch.float16, torch.bfloat16))
    target = draw_input(draw, shape, dtype, written=inplace or name == "put_")
    if name in ("index_add", "index_copy", "index_fill"):
        index = index_tensor(draw, (min(count, size) if unique else count,), size,
                             unique_along=0 if unique else None, full_size=size)
        source_shape = shape[:dim % ndim] + (index.base.shape[0],) + shape[dim % ndim + 1:]
        if name == "index_fill":
            value = draw_scalar(draw, dtype)
            function = (lambda x, i: x.index_fill_(dim, i, value)) if inplace else (
                lambda x, i: x.index_fill(dim, i, value))
            return Case(f"index_fill({dim}, {value!r}) inplace={inplace}", function, [target, index])
        source = draw_input(draw, source_shape, draw(st.sampled_from(ALL_DTYPES + [dtype] * 4)))
        alpha = {"alpha": draw(st.sampled_from([1, 2, -1]))} if name == "index_add" else {}
        function = (lambda x, i, s: getattr(x, name + "_")(dim, i, s, **alpha)) if inplace else (
            lambda x, i, s: getattr(torch, name)(x, dim, i, s, **alpha))
        return Case(f"{name}({dim}, {alpha}) inplace={inplace}", function, [target, index, source])
    accumulate = draw(st.booleans())
    if name == "put_":
        total = math.prod(shape)
        index = index_tensor(draw, (min(count, total) if not accumulate else count,), total,
                             unique_along=None if accumulate else 0, full_size=total)
        source = draw_input(draw, tuple(index.base.shape), dtype)
        return Case(f"put_(accumulate={accumulate})", lambda x, i, s: x.put_(i, s, accumulate=accumulate),
                    [target, index, source])
    # index_put with one index tensor on the first dim.
    index = index_tensor(draw, (min(count, shape[0]) if not accumulate else count,), shape[0],
                         unique_along=None if accumulate else 0, full_size=shape[0])
    values_shape, _ = broadcast_shapes(draw, tuple(index.base.shape) + shape[1:])
    values = draw_input(draw, values_shape, dtype)
    function = (lambda x, i, v: x.index_put_((i,), v, accumulate=accumulate)) if inplace else (
        lambda x, i, v: x.index_put((i,), v, accumulate=accumulate))
    return Case(f"index_put(accumulate={accumulate}) inplace={inplace}", function, [target, index, values])


COMPLEX_UNARY = ["neg", "abs", "sgn", "reciprocal", "conj_physical"]
COMPLEX_BINARY = ["add", "sub", "mul", "div", "eq", "ne"]


def complex_family(draw):
    """Complex arithmetic, the part of complex64 kiln lowers (other complex
    ops are refused on kiln by design: docs/reference/operators.md)."""
    shape = draw_shape(draw, max_dims=3)
    form = draw(st.sampled_from(["functional", "inplace", "out"]))
    if draw(st.booleans()):
        name = draw(st.sampled_from(COMPLEX_UNARY))
        function = getattr(torch, name)
        if form == "inplace" and name != "abs":
            return Case(f"Tensor.{name}_ complex", lambda x: getattr(x, name + "_")(),
                        [draw_complex(draw, shape, written=True)])
        if form == "out":
            return Case(f"torch.{name} complex out=", lambda x, o: function(x, out=o),
                        [draw_complex(draw, shape), draw_output(draw, shape, [torch.complex64, torch.float32])])
        return Case(f"torch.{name} complex", function, [draw_complex(draw, shape)])
    name = draw(st.sampled_from(COMPLEX_BINARY))
    function = getattr(torch, name)
    first_shape, second_shape = broadcast_shapes(draw, shape)
    kind = draw(st.sampled_from(["complex", "real", "scalar"]))
    # ATen's complex add and sub compute a + alpha * b with alpha a complex 1:
    # an infinite part of b meets alpha's zero part (0 * inf) and the other
    # part of the sum becomes NaN, where kiln adds the parts. Neither is
    # documented; infinities are not drawn for them.
    avoid = [math.inf, -math.inf] if name in ("add", "sub") else []
    if kind == "scalar":
        scalars = [2, 0.5, complex(1, -2), complex(0, 0), -1.5] + ([] if avoid else [complex(math.inf, 1)])
        scalar = draw(st.sampled_from(scalars))
        first = draw_complex(draw, shape, written=form == "inplace", avoid=avoid)
        if form == "inplace":
            return Case(f"Tensor.{name}_(complex, {scalar!r})", lambda x: getattr(x, name + "_")(scalar), [first])
        return Case(f"{name}(complex, {scalar!r})", lambda x: function(x, scalar), [first])
    if kind == "real":
        other = draw_input(draw, second_shape, draw(st.sampled_from([torch.float32, torch.int64, torch.bool])),
                           avoid=avoid)
    else:
        other = draw_complex(draw, second_shape, avoid=avoid)
    if form == "inplace":
        return Case(f"Tensor.{name}_(complex, {kind})", lambda x, y: getattr(x, name + "_")(y),
                    [draw_complex(draw, shape, written=True, avoid=avoid), other])
    inputs = [draw_complex(draw, first_shape, avoid=avoid), other]
    if draw(st.booleans()):
        inputs = inputs[::-1]
    if form == "out":
        out = draw_output(draw, result_shape(first_shape, second_shape), [torch.complex64, torch.bool])
        return Case(f"{name}({kind} operands) out=", lambda x, y, o: function(x, y, out=o), inputs + [out])
    return Case(f"{name}({kind} operands)", function, inputs)


FAMILIES = {
    "unary": unary_family,
    "binary": binary_family,
    "ternary": ternary_family,
    "reduction": reduction_family,
    "cast": cast_family,
    "view": view_family,
    "matmul": matmul_family,
    "softmax_scan": softmax_scan_family,
    "indexing": indexing_family,
    "complex": complex_family,
}
