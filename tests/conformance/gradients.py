"""The OpInfo sweep's autograd check: the gradients of an op's sample inputs,
computed on kiln and on the CPU, must match.

For each sample made on kiln with requires_grad=True, the same sample is copied
to the CPU (leaves that require grad stay leaves that require grad). Both run
forward; every floating output is paired with one cotangent (random, drawn on
the CPU and copied to kiln, so both sides get the same numbers); and
torch.autograd.grad gives the gradients of all differentiable inputs, which
are compared like forward results (comparison.py)."""
import torch
import torch.utils._pytree as pytree

import torch_kiln
from comparison import (
    check_on_kiln, compare, no_less_accurate, processed, to_cpu, upcast_to_double,
    wider_tolerances)


def _cpu_copy(sample):
    def copy(value):
        if isinstance(value, torch.Tensor) and value.device.type == "kiln":
            return value.detach().cpu().requires_grad_(value.requires_grad)
        return value
    return sample.transform(copy)


def _grad_leaves(sample):
    leaves = pytree.tree_leaves((sample.input, sample.args, sample.kwargs))
    return [leaf for leaf in leaves if isinstance(leaf, torch.Tensor) and leaf.requires_grad]


def _differentiable_outputs(result):
    return [value for value in pytree.tree_leaves(result)
            if isinstance(value, torch.Tensor) and value.requires_grad
            and (value.is_floating_point() or value.is_complex())]


def _gradients(op, sample, cotangents_on):
    """The gradients of `sample`'s leaves, and the cotangents used (CPU)."""
    result = processed(sample, op(sample.input, *sample.args, **sample.kwargs))
    outputs = _differentiable_outputs(result)
    leaves = _grad_leaves(sample)
    if not outputs or not leaves:
        return None, None
    if cotangents_on is None:
        generator = torch.Generator().manual_seed(0)
        cotangents_on = [torch.randn(output.shape, dtype=output.dtype, generator=generator)
                         for output in outputs]
    device = outputs[0].device
    grads = torch.autograd.grad(outputs, leaves, [c.to(device) for c in cotangents_on],
                                allow_unused=True)
    return [grad if grad is not None else torch.zeros_like(leaf)
            for grad, leaf in zip(grads, leaves)], cotangents_on


def run_gradient_sample(op, sample, dtype):
    """(outcome, detail, executed ops, tolerance) for the gradients of one
    sample; outcomes as forward (opinfo_sweep.run_sample), plus "no_grad"
    when the sample has nothing to differentiate."""
    try:
        reference = _cpu_copy(sample)
        expected, cotangents = _gradients(op, reference, None)
    except Exception as error:  # noqa: BLE001 - the CPU rejects the sample
        return "cpu_raised", repr(error)[:200], {}, None
    if expected is None:
        return "no_grad", "", {}, None
    torch_kiln.clear_op_tracking()
    try:
        actual, _ = _gradients(op, sample, cotangents)
        torch.kiln.synchronize()
    except Exception as error:  # noqa: BLE001 - recorded as the op's failure
        return "kiln_raised", f"{type(error).__name__}: {str(error)[:300]}", {}, None
    executed = torch_kiln.get_executed_ops()
    def as_accurate_as_cpu():
        """kiln's gradients no further from the float64 ones than twice the CPU's error."""
        try:
            exact = reference.transform(
                lambda value: upcast_to_double(value).requires_grad_(value.requires_grad)
                if isinstance(value, torch.Tensor) else value)
            exact_grads, _ = _gradients(op, exact, [c.double() for c in cotangents])
        except Exception:  # noqa: BLE001 - no float64 form of this op or sample
            return False
        return no_less_accurate(to_cpu(actual), expected, exact_grads)

    try:
        check_on_kiln(actual)
        tolerance = compare(to_cpu(actual), expected,
                            wider_tolerances(op, dtype, for_gradients=True), as_accurate_as_cpu)
    except Exception as error:  # noqa: BLE001 - assert_close raises several types
        return "mismatch", f"{type(error).__name__}: {str(error)[:300]}", executed, None
    return "match", "", executed, tolerance
