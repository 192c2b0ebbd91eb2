"""Comparing kiln tensors with the CPU reference under dtype-aware tolerances.

A tensor passes when max|kiln - cpu| <= atol + rtol * max|cpu|: the error is
measured against the tensor's scale, not element by element, so that
gradients with entries near zero (where a different summation order moves the
last bits) do not fail a correct backend. The reports give both the absolute
and this relative error.
"""
import torch

# (rtol, atol) per dtype: a few units in the last place of the dtype, scaled
# for the reordered sums of matmuls and reductions over a whole model.
TOLERANCES = {
    torch.float64: (1e-9, 1e-12),
    torch.float32: (1e-4, 1e-6),
    torch.complex64: (1e-4, 1e-6),
    torch.complex128: (1e-9, 1e-12),
    torch.float16: (4e-3, 1e-4),
    torch.bfloat16: (3e-2, 1e-3),
}


def tolerance(dtype):
    """(rtol, atol) for `dtype`; integers and bool compare exactly."""
    return TOLERANCES.get(dtype, (0.0, 0.0))


def _shape(tensor):
    return [int(size) for size in tensor.shape]


def compare(name, kind, mode, actual, expected):
    """One check dict (docs/reference/evaluation_report_schema.md) for a kiln tensor
    against its CPU reference."""
    expected = expected.detach()
    actual = actual.detach().cpu()
    rtol, atol = tolerance(expected.dtype)
    check = {"mode": mode, "kind": kind, "name": name, "dtype": str(expected.dtype).replace(
        "torch.", ""), "shape": _shape(expected), "max_abs_error": 0.0, "max_rel_error": 0.0,
        "atol": atol, "rtol": rtol, "passed": True, "note": None}
    if actual.shape != expected.shape or actual.dtype != expected.dtype:
        check.update(passed=False, max_abs_error=float("inf"), max_rel_error=float("inf"),
                     note=f"kiln gave {str(actual.dtype).replace('torch.', '')} "
                          f"{_shape(actual)} against the CPU's {check['dtype']} "
                          f"{check['shape']}")
        return check
    if expected.numel() == 0:
        return check
    wide = torch.complex128 if expected.is_complex() else torch.float64
    actual, expected = actual.to(wide), expected.to(wide)
    finite = torch.isfinite(expected)
    if not torch.equal(torch.isfinite(actual), finite) or \
            not torch.equal(actual[~finite].nan_to_num(), expected[~finite].nan_to_num()):
        check.update(passed=False, note="NaN or infinity where the CPU has none, or the reverse")
    difference = (actual[finite] - expected[finite]).abs()
    scale = expected[finite].abs().max().item() if finite.any() else 0.0
    error = difference.max().item() if difference.numel() else 0.0
    check["max_abs_error"] = error
    check["max_rel_error"] = error / scale if scale > 0 else (0.0 if error == 0 else float("inf"))
    if error > atol + rtol * scale:
        check["passed"] = False
    return check


def flatten_outputs(outputs, name="output"):
    """[(name, tensor)] for a model output: a tensor, or nested tuples, lists
    and dicts of tensors (other values are skipped)."""
    if isinstance(outputs, torch.Tensor):
        return [(name, outputs)]
    if isinstance(outputs, (tuple, list)):
        return [item for index, value in enumerate(outputs)
                for item in flatten_outputs(value, f"{name}[{index}]")]
    if isinstance(outputs, dict):
        return [item for key, value in outputs.items()
                for item in flatten_outputs(value, f"{name}[{key!r}]")]
    return []
