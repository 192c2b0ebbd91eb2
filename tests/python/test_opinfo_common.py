"""TestCommon-style OpInfo checks on kiln, through PyTorch's own device-test
machinery (instantiate_device_type_tests, @ops): the generated class is
TestKilnCommonPRIVATEUSE1 and every test gets the `kiln` device string.

PyTorch's TestCommon lives in its source tree's test/test_ops.py, which the
wheel does not ship; these are the same kinds of checks written for kiln:
- out=: a correctly sized out tensor receives the functional result and is
  returned; an empty one is resized; one on another device is refused;
- noncontiguous samples give the contiguous samples' results;
- an op's in-place variant gives its functional result;
- the reference samples match the CPU at TestCommon.test_compare_cpu's
  tolerance (atol = rtol = 1e-3; float16 and bfloat16 as the OpInfo sweep
  compares them, tests/conformance/comparison.py).

CI runs the fixed FAST_OPS subset; KILN_OPINFO_ALL=1 runs every OpInfo (slow).
"""
import os
import sys

import torch
import torch.utils._pytree as pytree
from torch.testing._internal.common_device_type import (
    OpDTypes, instantiate_device_type_tests, ops)
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.common_utils import TestCase, run_tests

import torch_kiln  # noqa: F401 - registers the device before the tests are instantiated

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "conformance"))
import comparison  # noqa: E402

# One or two ops of each family kiln lowers: pointwise, reductions, scans,
# indexing, shape ops, nn and the library path.
FAST_OPS = {
    "add", "sub", "mul", "div", "pow", "maximum", "where", "clamp", "exp", "sin", "abs",
    "sigmoid", "sum", "mean", "amax", "argmax", "var", "cumsum", "softmax", "log_softmax",
    "cat", "index_select", "gather", "scatter_add", "masked_fill", "flip", "nn.functional.relu",
    "nn.functional.gelu", "nn.functional.layer_norm", "mm", "addmm", "bmm",
}
FULL = os.environ.get("KILN_OPINFO_ALL") == "1"
SELECTED = op_db if FULL else [
    op for op in op_db if op.name in FAST_OPS and not op.variant_test_name]
DTYPES = ((torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64, torch.bool)
          if FULL else (torch.float32, torch.bfloat16, torch.int64, torch.bool))


def tensors(value):
    return [leaf for leaf in pytree.tree_leaves(value) if isinstance(leaf, torch.Tensor)]


class TestKilnCommon(TestCase):
    @ops([op for op in SELECTED if op.supports_out], dtypes=OpDTypes.supported,
         allowed_dtypes=DTYPES)
    def test_out(self, device, dtype, op):
        sample = next(iter(op.sample_inputs(device, dtype)))
        expected = op(sample.input, *sample.args, **sample.kwargs)
        if not isinstance(expected, torch.Tensor):
            self.skipTest("out= of a tuple result")
        out = torch.empty_like(expected)
        returned = op(sample.input, *sample.args, **sample.kwargs, out=out)
        self.assertIs(returned, out)
        self.assertEqual(out, expected)

        resized = torch.empty(0, dtype=expected.dtype, device=device)
        op(sample.input, *sample.args, **sample.kwargs, out=resized)
        self.assertEqual(resized, expected)

        on_cpu = torch.empty_like(expected, device="cpu")
        with self.assertRaisesRegex(RuntimeError, "device"):
            op(sample.input, *sample.args, **sample.kwargs, out=on_cpu)

    @ops(SELECTED, dtypes=OpDTypes.supported, allowed_dtypes=DTYPES)
    def test_noncontiguous_samples(self, device, dtype, op):
        for sample in op.sample_inputs(device, dtype):
            expected = op(sample.input, *sample.args, **sample.kwargs)
            strided = sample.noncontiguous()
            self.assertFalse(isinstance(strided.input, torch.Tensor)
                             and strided.input.numel() > 1 and strided.input.is_contiguous())
            actual = op(strided.input, *strided.args, **strided.kwargs)
            self.assertEqual(actual, expected)

    @ops([op for op in SELECTED if op.inplace_variant is not None], dtypes=OpDTypes.supported,
         allowed_dtypes=DTYPES)
    def test_inplace_variant_matches_functional(self, device, dtype, op):
        for sample in op.sample_inputs(device, dtype):
            expected = op(sample.input, *sample.args, **sample.kwargs)
            if (not isinstance(sample.input, torch.Tensor) or expected.dtype != dtype
                    or expected.shape != sample.input.shape):
                continue  # the in-place form cannot hold this result (promotion, broadcast)
            target = sample.input.clone()
            returned = op.inplace_variant(target, *sample.args, **sample.kwargs)
            self.assertIs(returned, target)
            self.assertEqual(target, expected)

    @ops(SELECTED, dtypes=OpDTypes.supported, allowed_dtypes=DTYPES)
    def test_compare_cpu(self, device, dtype, op):
        for sample in op.reference_inputs(device, dtype):
            reference = sample.transform(
                lambda value: value.cpu() if isinstance(value, torch.Tensor) else value)
            expected = reference.output_process_fn_grad(
                op(reference.input, *reference.args, **reference.kwargs))
            if any(tensor.is_complex() for tensor in tensors(expected)):
                # kiln's kernels have no complex dtypes: it must say so (where(cond, 2j, x))
                with self.assertRaisesRegex((TypeError, NotImplementedError), "kiln"):
                    op(sample.input, *sample.args, **sample.kwargs)
                continue
            actual = sample.output_process_fn_grad(
                op(sample.input, *sample.args, **sample.kwargs))
            if any(tensor.device.type == "kiln" for tensor in tensors(
                    (sample.input, sample.args, sample.kwargs))):  # not for Python scalars
                self.assertEqual({tensor.device.type for tensor in tensors(actual)}, {"kiln"})
            if dtype in comparison.HALF_PRECISION:
                # PyTorch's flat 1e-3 is narrower than one bfloat16 ulp: a half result
                # may instead be as accurate as the CPU's (comparison.py).
                comparison.compare(comparison.to_cpu(actual), expected, comparison.wider_tolerances(
                    op, dtype), lambda: comparison.as_accurate_as_cpu(
                        op, reference, comparison.to_cpu(actual), expected))
            else:
                self.assertEqual(actual, expected, atol=1e-3, rtol=1e-3, exact_device=False)

instantiate_device_type_tests(TestKilnCommon, globals(), only_for="kiln")

if __name__ == "__main__":
    run_tests()
