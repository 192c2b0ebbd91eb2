"""Pointwise ATen ops of core ATen graphs as element expressions.

Each lowering gets a PointwiseContext for one FX node and returns the
fragment value of the node's result; the context then converts it to the
node's dtype. The arithmetic follows ATen's CPU kernels: operands are brought
to the op's common dtype (float32 for the half types, rounding each tensor
operand as the CPU does and taking Python scalars as they are), and the result
is rounded once to the output dtype.
"""
import math
import torch

from .fragments import Fragment, compute_dtype, ir_dtype

aten = torch.ops.aten


class PointwiseContext:
    def __init__(self, node, arguments):
        self.node = node
        self.arguments = arguments  # schema name -> value, defaults filled in
        self.output_dtype = node.meta["val"].dtype
        self.inputs = []            # FX nodes loaded, in load order
        self.fragment = Fragment()

    def __getitem__(self, name):
        return self.arguments[name]

    def value(self, argument, dtype):
        """`argument` (a tensor node or a Python number) in `dtype`'s compute dtype.
        A tensor made by a constant fill (scalar_tensor, full) is read as its
        constant, rounded to its dtype: nothing is loaded, and the fill's own
        node becomes dead code."""
        fragment = self.fragment
        filled = constant_fill(argument)
        if filled is not None:
            value, filled_dtype = filled
            return fragment.cast(fragment.constant(value, filled_dtype), dtype)
        if isinstance(argument, torch.fx.Node):
            if argument not in self.inputs:
                self.inputs.append(argument)
                fragment.input_dtypes.append(argument.meta["val"].dtype)
            source = argument.meta["val"].dtype
            return fragment.cast(fragment.load(self.inputs.index(argument)), dtype, source_dtype=source)
        return fragment.constant(argument, dtype)

    def common_dtype(self, *arguments):
        return common_dtype(*arguments)

    def constant(self, value, dtype=None):
        return self.fragment.constant(value, dtype or self.output_dtype)

    def op(self, name, *operands):
        return self.fragment.op(name, *operands)

    def select(self, condition, if_true, if_false):
        return self.fragment.select(condition, if_true, if_false)


_FILLS = {aten.full.default: "fill_value", aten.scalar_tensor.default: "s", aten.full_like.default: "fill_value"}


def constant_fill(argument):
    """(value, dtype) when `argument` is a node that fills a tensor with one
    Python number of a dtype Kiln computes in; else None."""
    if not isinstance(argument, torch.fx.Node) or argument.op != "call_function" or argument.target not in _FILLS:
        return None
    meta = argument.meta.get("val")
    schema = argument.target._schema
    names = [a.name for a in schema.arguments]
    name = _FILLS[argument.target]
    index = names.index(name)
    value = argument.args[index] if index < len(argument.args) else argument.kwargs.get(name)
    if not isinstance(meta, torch.Tensor) or ir_dtype(meta.dtype) is None or isinstance(value, (complex, torch.fx.Node)):
        return None
    if not isinstance(value, (bool, int, float)):
        return None
    return value, meta.dtype


def _category_sample(argument):
    """A stand-in with `argument`'s dtype and its rank class (a Python number,
    a 0-dim tensor, a tensor with dims), which is all result_type looks at."""
    if isinstance(argument, torch.fx.Node):
        value = argument.meta["val"]
        return torch.empty((1,) * min(value.dim(), 1), dtype=value.dtype)
    return argument


def common_dtype(*arguments):
    """ATen's result type of `arguments` (tensor nodes and Python numbers)."""
    samples = [_category_sample(argument) for argument in arguments if argument is not None]
    result = samples[0]
    for other in samples[1:]:
        dtype = torch.result_type(result, other)
        tensors = [sample for sample in (result, other) if isinstance(sample, torch.Tensor)]
        if not tensors:
            result = {torch.bool: True, torch.int64: 1}.get(dtype, 1.0)
        else:
            result = torch.empty((1,) * max(sample.dim() for sample in tensors), dtype=dtype)
    return result.dtype if isinstance(result, torch.Tensor) else torch.result_type(result, result)


LOWERINGS = {}


def lowering(*ops):
    def register(function):
        for op in ops:
            LOWERINGS[op] = function
        return function
    return register


def _arithmetic(context, name, first, second, alpha=1):
    dtype = context.output_dtype
    a = context.value(first, dtype)
    b = context.value(second, dtype)
    if alpha != 1:
        b = context.op("multiply", b, context.constant(alpha, dtype))
    return context.op(name, a, b)


@lowering(aten.add.Tensor, aten.add.Scalar)
def _add(context):
    if context.output_dtype == torch.bool:
        a, b = context.value(context["self"], torch.bool), context.value(context["other"], torch.bool)
        return context.op("logical_or", a, b)
    return _arithmetic(context, "add", context["self"], context["other"], context["alpha"])


@lowering(aten.sub.Tensor, aten.sub.Scalar)
def _sub(context):
    return _arithmetic(context, "subtract", context["self"], context["other"], context["alpha"])


@lowering(aten.rsub.Scalar, aten.rsub.Tensor)
def _rsub(context):
    return _arithmetic(context, "subtract", context["other"], context["self"], context["alpha"])


@lowering(aten.mul.Tensor, aten.mul.Scalar)
def _mul(context):
    if context.output_dtype == torch.bool:
        a, b = context.value(context["self"], torch.bool), context.value(context["other"], torch.bool)
        return context.op("logical_and", a, b)
    return _arithmetic(context, "multiply", context["self"], context["other"])


@lowering(aten.div.Tensor, aten.div.Scalar)
def _div(context):
    return _arithmetic(context, "divide", context["self"], context["other"])


@lowering(aten.div.Tensor_mode, aten.div.Scalar_mode)
def _div_mode(context):
    mode = context["rounding_mode"]
    dtype = context.output_dtype
    if mode is None:
        return _arithmetic(context, "divide", context["self"], context["other"])
    if mode == "floor":
        return _arithmetic(context, "floor_divide", context["self"], context["other"])
    quotient = _arithmetic(context, "divide", context["self"], context["other"])
    return context.op("trunc", quotient) if dtype.is_floating_point else quotient


def _unary(name, integer_identity=False):
    def lower(context):
        x = context["self"]
        if integer_identity and not context.output_dtype.is_floating_point:
            return context.value(x, context.output_dtype)
        return context.op(name, context.value(x, context.output_dtype))
    return lower


_FLOATING_UNARY = {
    aten.exp.default: "exp", aten.exp2.default: "exp2", aten.expm1.default: "expm1",
    aten.log.default: "log", aten.log2.default: "log2", aten.log10.default: "log10",
    aten.log1p.default: "log1p", aten.sqrt.default: "sqrt", aten.rsqrt.default: "rsqrt",
    aten.reciprocal.default: "reciprocal", aten.sin.default: "sin", aten.cos.default: "cos",
    aten.tan.default: "tan", aten.asin.default: "asin", aten.acos.default: "acos",
    aten.atan.default: "atan", aten.sinh.default: "sinh", aten.cosh.default: "cosh",
    aten.tanh.default: "tanh", aten.asinh.default: "asinh", aten.acosh.default: "acosh",
    aten.atanh.default: "atanh", aten.erf.default: "erf", aten.erfc.default: "erfc",
    aten.sigmoid.default: "sigmoid", aten.lgamma.default: "lgamma", aten.digamma.default: "digamma",
    aten.erfinv.default: "erfinv",
}
for _op, _name in _FLOATING_UNARY.items():
    LOWERINGS[_op] = _unary(_name)
for _op, _name in {aten.floor.default: "floor", aten.ceil.default: "ceil", aten.trunc.default: "trunc",
                   aten.frac.default: "frac", aten.round.default: "round"}.items():
    LOWERINGS[_op] = _unary(_name, integer_identity=True)
LOWERINGS[aten.neg.default] = _unary("negate")
LOWERINGS[aten.abs.default] = _unary("abs")
LOWERINGS[aten.sign.default] = _unary("sign")


@lowering(aten.relu.default)
def _relu(context):
    x = context.value(context["self"], context.output_dtype)
    return context.op("maximum", x, context.constant(0))


@lowering(aten.gelu.default)
def _gelu(context):
    dtype = context.output_dtype
    x = context.value(context["self"], dtype)
    half = context.op("multiply", x, context.constant(0.5))
    if context["approximate"] == "tanh":
        cube = context.op("multiply", context.op("multiply", x, x), x)
        inner = context.op("add", x, context.op("multiply", cube, context.constant(0.044715)))
        scaled = context.op("multiply", inner, context.constant(math.sqrt(2.0 / math.pi)))
        return context.op("multiply", half, context.op("add", context.constant(1.0), context.op("tanh", scaled)))
    erf = context.op("erf", context.op("multiply", x, context.constant(math.sqrt(0.5))))
    return context.op("multiply", half, context.op("add", context.constant(1.0), erf))


@lowering(aten.leaky_relu.default)
def _leaky_relu(context):
    dtype = context.output_dtype
    x = context.value(context["self"], dtype)
    positive = context.op("greater", x, context.constant(0))
    return context.select(positive, x, context.op("multiply", x, context.constant(context["negative_slope"])))


def _clamp_bounds(context, x, low, high):
    dtype = context.output_dtype
    if low is not None:
        x = context.op("maximum", x, context.value(low, dtype))
    if high is not None:
        x = context.op("minimum", x, context.value(high, dtype))
    return x


@lowering(aten.clamp.default, aten.clamp.Tensor)
def _clamp(context):
    return _clamp_bounds(context, context.value(context["self"], context.output_dtype),
                         context["min"], context["max"])


@lowering(aten.clamp_min.default, aten.clamp_min.Tensor)
def _clamp_min(context):
    return _clamp_bounds(context, context.value(context["self"], context.output_dtype), context["min"], None)


@lowering(aten.clamp_max.default, aten.clamp_max.Tensor)
def _clamp_max(context):
    return _clamp_bounds(context, context.value(context["self"], context.output_dtype), None, context["max"])


@lowering(aten.hardtanh.default)
def _hardtanh(context):
    return _clamp_bounds(context, context.value(context["self"], context.output_dtype),
                         context["min_val"], context["max_val"])


@lowering(aten.maximum.default, aten.minimum.default)
def _maximum(context):
    name = "maximum" if context.node.target is aten.maximum.default else "minimum"
    return _arithmetic(context, name, context["self"], context["other"])


_COMPARISONS = {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal", "gt": "greater",
                "ge": "greater_equal"}
for _short, _name in _COMPARISONS.items():
    for _overload in ("Tensor", "Scalar"):
        def _compare(context, _name=_name):
            first, second = context["self"], context["other"]
            dtype = context.common_dtype(first, second)
            return context.op(_name, context.value(first, dtype), context.value(second, dtype))
        LOWERINGS[getattr(getattr(aten, _short), _overload)] = _compare


@lowering(aten.where.self)
def _where(context):
    dtype = context.output_dtype
    condition = context.value(context["condition"], torch.bool)
    return context.select(condition, context.value(context["self"], dtype),
                                   context.value(context["other"], dtype))


@lowering(aten.masked_fill.Scalar, aten.masked_fill.Tensor)
def _masked_fill(context):
    dtype = context.output_dtype
    mask = context.value(context["mask"], torch.bool)
    return context.select(mask, context.value(context["value"], dtype),
                                   context.value(context["self"], dtype))


@lowering(aten.logical_not.default)
def _logical_not(context):
    return context.op("logical_not", context.value(context["self"], torch.bool))


for _op, _name in {aten.logical_and.default: "logical_and", aten.logical_or.default: "logical_or",
                   aten.logical_xor.default: "logical_xor"}.items():
    def _logical(context, _name=_name):
        return context.op(_name, context.value(context["self"], torch.bool),
                          context.value(context["other"], torch.bool))
    LOWERINGS[_op] = _logical


for _short, _name in {"bitwise_and": "bitwise_and", "bitwise_or": "bitwise_or",
                      "bitwise_xor": "bitwise_xor"}.items():
    for _overload in ("Tensor", "Scalar"):
        def _bitwise(context, _name=_name):
            dtype = context.output_dtype
            if dtype == torch.bool:
                logical = {"bitwise_and": "logical_and", "bitwise_or": "logical_or",
                           "bitwise_xor": "logical_xor"}[_name]
                return context.op(logical, context.value(context["self"], dtype),
                                  context.value(context["other"], dtype))
            return _arithmetic(context, _name, context["self"], context["other"])
        LOWERINGS[getattr(getattr(aten, _short), _overload)] = _bitwise


@lowering(aten.bitwise_not.default)
def _bitwise_not(context):
    dtype = context.output_dtype
    x = context.value(context["self"], dtype)
    return context.op("logical_not", x) if dtype == torch.bool else context.op("bitwise_not", x)


@lowering(aten.pow.Tensor_Scalar)
def _pow_scalar(context):
    """As ATen's CPU kernel: exponents 0 and 1 are exact for every dtype;
    float32, float64 and bfloat16 (whose exponent is compared after rounding
    to bfloat16) take sqrt, rsqrt, reciprocal and products for 0.5, -0.5, -1,
    2, 3 and -2, bfloat16 rounding the square inside a cube or inverse square;
    float16 and the integers use pow."""
    dtype = context.output_dtype
    exponent = context["exponent"]
    x = context.value(context["self"], dtype)
    if not dtype.is_floating_point and (isinstance(exponent, float) or exponent < 0):
        return None
    if exponent == 0:
        return context.constant(1)
    if exponent == 1:
        return x
    if dtype in (torch.float32, torch.float64, torch.bfloat16):
        compared = float(torch.tensor(exponent, dtype=dtype)) if dtype == torch.bfloat16 else exponent

        def rounded_square():
            square = context.op("multiply", x, x)
            return context.fragment.cast(square, dtype) if dtype == torch.bfloat16 else square
        if exponent == 0.5:
            return context.op("sqrt", x)
        if exponent == -0.5:
            return context.op("rsqrt", x)
        if exponent == -1:
            return context.op("reciprocal", x)
        if compared == 2:
            return context.op("multiply", x, x)
        if compared == 3:
            return context.op("multiply", rounded_square(), x)
        if compared == -2:
            return context.op("reciprocal", rounded_square())
        return context.op("power", x, context.constant(compared))
    return context.op("power", x, context.constant(exponent))


@lowering(aten.pow.Tensor_Tensor)
def _pow_tensor(context):
    if not context.output_dtype.is_floating_point:
        return None
    return _arithmetic(context, "power", context["self"], context["exponent"])


@lowering(aten.pow.Scalar)
def _pow_scalar_base(context):
    """pow(Scalar base, Tensor exponent), as ATen: ones for a base of 1,
    else the base rounded to the result's dtype, raised as pow.Tensor_Tensor
    does (Adam's bias corrections, beta ** step)."""
    if not context.output_dtype.is_floating_point or isinstance(context["self"], complex):
        return None
    if context["self"] == 1:
        return context.constant(1)
    return _arithmetic(context, "power", context["self"], context["exponent"])


@lowering(aten._to_copy.default)
def _to_copy(context):
    node_value = context.node.meta["val"]
    source = context["self"].meta["val"]
    if node_value.device != source.device or context["layout"] not in (None, torch.strided):
        return None
    return context.value(context["self"], context.output_dtype)


@lowering(aten.copy.default)
def _copy(context):
    """copy(self, src), what functionalization makes of `self.copy_(src)`:
    src converted to self's dtype and broadcast to its shape, as copy_
    converts; self's values are not read."""
    source = context["src"]
    if not isinstance(source, torch.fx.Node) or source.meta["val"].is_complex():
        return None
    return context.value(source, context.output_dtype)


@lowering(aten.clone.default)
def _clone(context):
    return context.value(context["self"], context.output_dtype)


@lowering(aten.full.default, aten.scalar_tensor.default)
def _full(context):
    value = context.arguments.get("fill_value", context.arguments.get("s"))
    return context.constant(value)


@lowering(aten.full_like.default)
def _full_like(context):
    return context.constant(context["fill_value"])


@lowering(aten.sigmoid_backward.default)
def _sigmoid_backward(context):
    dtype = context.output_dtype
    grad, y = context.value(context["grad_output"], dtype), context.value(context["output"], dtype)
    return context.op("multiply", grad, context.op("multiply", context.op("subtract", context.constant(1), y), y))


@lowering(aten.tanh_backward.default)
def _tanh_backward(context):
    dtype = context.output_dtype
    grad, y = context.value(context["grad_output"], dtype), context.value(context["output"], dtype)
    return context.op("multiply", grad, context.op("subtract", context.constant(1), context.op("multiply", y, y)))


@lowering(aten.threshold_backward.default)
def _threshold_backward(context):
    dtype = context.output_dtype
    grad = context.value(context["grad_output"], dtype)
    x = context.value(context["self"], dtype)
    at_most = context.op("less_equal", x, context.value(context["threshold"], dtype))
    return context.select(at_most, context.constant(0), grad)


def lower_pointwise(node, arguments):
    """The fragment and input nodes of pointwise `node`, or None when the op
    (or a dtype it uses) has no lowering here."""
    function = LOWERINGS.get(node.target)
    value = node.meta.get("val")
    if function is None or not isinstance(value, torch.Tensor) or ir_dtype(value.dtype) is None:
        return None
    for argument in arguments.values():
        for item in argument if isinstance(argument, (list, tuple)) else (argument,):
            if isinstance(item, torch.fx.Node):
                item_value = item.meta.get("val")
                if not isinstance(item_value, torch.Tensor) or ir_dtype(item_value.dtype) is None:
                    return None
                if item_value.device != value.device and not _cpu_scalar(item_value):
                    return None
            elif isinstance(item, complex):
                return None
    context = PointwiseContext(node, arguments)
    result = function(context)
    if result is None:
        return None
    result = context.fragment.cast(result, value.dtype)
    if result != len(context.fragment.entries) - 1:
        # The value is an earlier entry: a cast that changes nothing makes it the last.
        context.fragment.entries.append(("cast", result, ir_dtype(value.dtype)))
        context.fragment.dtypes.append(compute_dtype(value.dtype))
    return context.fragment.entries, context.inputs


def _cpu_scalar(value):
    """A 0-dim CPU tensor, which PyTorch lets any device's op read (an
    optimizer's step counter). The program runs it as a kiln copy, as it
    does every input on another device (aten/program/program.h)."""
    return value.dim() == 0 and value.device.type == "cpu"


def _floating_binary(name):
    def lower(context):
        if not context.output_dtype.is_floating_point:
            return None
        return _arithmetic(context, name, context["self"], context["other"])
    return lower


for _op in (aten.copysign.Tensor, aten.copysign.Scalar):
    LOWERINGS[_op] = _floating_binary("copysign")
LOWERINGS[aten.atan2.default] = _floating_binary("atan2")
LOWERINGS[aten.hypot.default] = _floating_binary("hypot")
for _op in (aten.fmod.Tensor, aten.fmod.Scalar):
    LOWERINGS[_op] = lambda context: _arithmetic(context, "fmod", context["self"], context["other"])
for _op in (aten.remainder.Tensor, aten.remainder.Scalar):
    LOWERINGS[_op] = lambda context: _arithmetic(context, "remainder", context["self"], context["other"])


@lowering(aten.isnan.default, aten.isinf.default)
def _is_special(context):
    name = "is_nan" if context.node.target is aten.isnan.default else "is_inf"
    x = context["self"]
    return context.op(name, context.value(x, x.meta["val"].dtype))
