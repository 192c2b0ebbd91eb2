"""Element expressions in Kiln IR's fragment dialect (csrc/kiln/ir/graph.h).

A fragment is a list of tuples, each naming an IR opcode and the indices of
earlier entries it reads: ("load", k) reads the node's k-th tensor input in
its compute dtype, ("constant", value, dtype), ("cast", x, dtype) converts
(rounding for float16/bfloat16), ("accumulator",) reads a reduction's result,
and (opcode, operands...) computes. The last entry is the node's value.
"""
import torch

IR_DTYPES = {
    torch.bool: "bool", torch.uint8: "u8", torch.int8: "i8", torch.int16: "i16",
    torch.int32: "i32", torch.int64: "i64", torch.float16: "f16", torch.bfloat16: "bf16",
    torch.float32: "f32", torch.float64: "f64",
}


def ir_dtype(dtype):
    """The IR name of `dtype`, or None when Kiln IR cannot compute in it."""
    return IR_DTYPES.get(dtype)


def compute_dtype(dtype):
    """The dtype arithmetic on `dtype` happens in: float32 for the half types."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


class Fragment:
    """Builds one fragment. `input_dtypes` are the storage dtypes of the
    node's tensor inputs; every value's dtype is tracked, so casts are only
    added where they change something."""

    def __init__(self, input_dtypes=()):
        self.entries = []
        self.dtypes = []  # the compute dtype of each entry
        self.input_dtypes = list(input_dtypes)

    def _add(self, entry, dtype):
        self.entries.append(entry)
        self.dtypes.append(dtype)
        return len(self.entries) - 1

    def load(self, index):
        return self._add(("load", index), compute_dtype(self.input_dtypes[index]))

    def accumulator(self, dtype):
        return self._add(("accumulator",), compute_dtype(dtype))

    def constant(self, value, dtype):
        dtype = compute_dtype(dtype)
        if dtype.is_floating_point:
            value = float(value)
        elif dtype == torch.bool:
            value = float(bool(value))
        else:
            value = int(value)
        return self._add(("constant", value, IR_DTYPES[dtype]), dtype)

    def cast(self, value, dtype, source_dtype=None):
        """`value` as `dtype` (rounded to it for the half types). A value read
        from a tensor of `source_dtype` equal to `dtype` needs nothing."""
        if source_dtype == dtype or (self.dtypes[value] == dtype and dtype == compute_dtype(dtype)):
            return value
        return self._add(("cast", value, IR_DTYPES[dtype]), compute_dtype(dtype))

    def op(self, name, *operands):
        dtype = self.dtypes[operands[-1]]
        if name in _BOOL_RESULTS:
            dtype = torch.bool
        return self._add((name, *operands), dtype)

    def select(self, condition, if_true, if_false):
        return self._add(("select", condition, if_true, if_false), self.dtypes[if_true])

    def dtype_of(self, value):
        return self.dtypes[value]


_BOOL_RESULTS = {
    "logical_not", "is_nan", "is_inf", "equal", "not_equal", "less", "less_equal", "greater",
    "greater_equal", "logical_and", "logical_or", "logical_xor",
}
