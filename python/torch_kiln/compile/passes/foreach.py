"""Decompositions of ATen's foreach ops into one op per tensor of the list.

A compiled optimizer step (torch.compile(optimizer.step, backend="kiln"))
is a graph of foreach ops: Adam's is seventeen of them over every parameter.
Kept whole, each is one call of Kiln's foreach kernel, and every intermediate
list of tensors goes through memory. Split into per-tensor ops, each
parameter's chain of pointwise ops (its moments, its bias corrections, its
update) fuses into one kernel, as Inductor's per-tensor lowering of foreach
ops lets it fuse them.

Each decomposition follows the schema of the foreach overload: a Tensor[]
argument is taken element by element, a Scalar[] too, a Scalar or a single
Tensor is given to every element. A foreach op whose lists differ in length,
or one not listed here, is left whole, and ATen's kernel (and its error)
runs. Not listed: the `.Tensor` overloads of addcmul and addcdiv (Dynamo
cannot trace them in torch 2.14: their meta function wants the values on the
CPU and sees a fake tensor), _foreach_max, _foreach_mm and _foreach_powsum.
"""
import torch

aten = torch.ops.aten

_UNARY = ("abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1", "floor",
          "frac", "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal", "round", "rsqrt",
          "sigmoid", "sign", "sin", "sinh", "sqrt", "tan", "tanh", "trunc")


def _lengths_match(*lists):
    return len({len(values) for values in lists}) == 1


def _unary(function):
    def decomposition(self):
        return [function(tensor) for tensor in self]
    return decomposition


def _binary(function, scalar_function):
    """{overload name: decomposition} of a binary foreach op. Scalar and
    ScalarList overloads use `scalar_function`; List and Tensor overloads
    pass `alpha` on where their schema has it (add, sub)."""
    def scalar(self, other):
        return [scalar_function(tensor, other) for tensor in self]

    def scalar_list(self, scalars):
        if not _lengths_match(self, scalars):
            return NotImplemented
        return [scalar_function(tensor, other) for tensor, other in zip(self, scalars)]

    def each(self, others, **alpha):
        if not _lengths_match(self, others):
            return NotImplemented
        return [function(tensor, other, **alpha) for tensor, other in zip(self, others)]

    def one_tensor(self, other, **alpha):
        return [function(tensor, other, **alpha) for tensor in self]
    return {"Scalar": scalar, "ScalarList": scalar_list, "List": each, "Tensor": one_tensor}


def _pointwise_with_value(function):
    """addcmul and addcdiv: self + value * (tensor1 op tensor2)."""
    def scalar(self, tensor1, tensor2, value=1):
        if not _lengths_match(self, tensor1, tensor2):
            return NotImplemented
        return [function(a, b, c, value=value) for a, b, c in zip(self, tensor1, tensor2)]

    def scalar_list(self, tensor1, tensor2, scalars):
        if not _lengths_match(self, tensor1, tensor2, scalars):
            return NotImplemented
        return [function(a, b, c, value=value) for a, b, c, value in zip(self, tensor1, tensor2, scalars)]
    return scalar, scalar_list


def _lerp_scalar(self, tensors1, weight):
    if not _lengths_match(self, tensors1):
        return NotImplemented
    return [torch.lerp(start, end, weight) for start, end in zip(self, tensors1)]


def _lerp_each(self, tensors1, weights):
    if not _lengths_match(self, tensors1, weights):
        return NotImplemented
    return [torch.lerp(start, end, weight) for start, end, weight in zip(self, tensors1, weights)]


def _pow_scalar_and_tensor(self, exponent):
    return [torch.pow(self, tensor) for tensor in exponent]


def _norm(self, ord=2, dtype=None):
    return [torch.linalg.vector_norm(tensor, ord, dtype=dtype) for tensor in self]


def _clone(self, *, memory_format=None):
    return [torch.clone(tensor, memory_format=memory_format) for tensor in self]


def _table():
    table = {}
    for name in _UNARY:
        table[getattr(aten, "_foreach_" + name).default] = _unary(getattr(torch, name))
    # ATen's foreach maximum and minimum with a scalar are clamps.
    binaries = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
                "clamp_max": torch.clamp_max, "clamp_min": torch.clamp_min, "maximum": torch.maximum,
                "minimum": torch.minimum, "pow": torch.pow}
    scalar_forms = {"maximum": torch.clamp_min, "minimum": torch.clamp_max}
    for name, function in binaries.items():
        packet = getattr(aten, "_foreach_" + name)
        decompositions = _binary(function, scalar_forms.get(name, function))
        for overload in packet.overloads():
            if overload in decompositions:
                table[getattr(packet, overload)] = decompositions[overload]
    for name, function in (("addcmul", torch.addcmul), ("addcdiv", torch.addcdiv)):
        packet = getattr(aten, "_foreach_" + name)
        scalar, scalar_list = _pointwise_with_value(function)
        table[packet.Scalar] = scalar
        table[packet.ScalarList] = scalar_list
    table[aten._foreach_lerp.Scalar] = _lerp_scalar
    table[aten._foreach_lerp.List] = _lerp_each
    table[aten._foreach_lerp.ScalarList] = _lerp_each
    table[aten._foreach_pow.ScalarAndTensor] = _pow_scalar_and_tensor
    table[aten._foreach_norm.Scalar] = _norm
    table[aten._foreach_clone.default] = _clone
    return table


def foreach_decompositions():
    """{foreach overload: decomposition} for aot_autograd's table."""
    return _table()
