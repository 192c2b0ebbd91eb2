"""Compiled layer, batch and group normalization, forward and backward,
differentially against the CPU."""
import pytest
import torch
import torch.nn.functional as F

import torch_kiln
from differential import FLOATING, assert_same, check, compiled_only, kernels_launched, make, to_kiln


def tolerance_for(dtype):
    return {torch.float16: (2e-3, 2e-3), torch.bfloat16: (2e-2, 2e-2), torch.float32: (1e-5, 1e-5),
            torch.float64: (1e-10, 1e-10)}[dtype]


def forward_and_grads(fn, inputs, grad_dtype=None):
    """fn(*inputs) and the gradients of every floating input that is not None.
    The output's gradient is drawn in `grad_dtype` (default: the output's)."""
    leaves = [x.detach().clone().requires_grad_() if isinstance(x, torch.Tensor) and x.is_floating_point()
              else x for x in inputs]
    output = fn(*leaves)
    grad = make(tuple(output.shape), grad_dtype or output.dtype, generator=torch.Generator().manual_seed(1))
    output.backward(grad.to(output.device, output.dtype))
    return [output.detach()] + [leaf.grad for leaf in leaves if isinstance(leaf, torch.Tensor) and leaf.requires_grad]


def to_double(inputs):
    return [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs]


def compare(fn, inputs, tolerance, message=""):
    expected = forward_and_grads(fn, inputs)
    actual = compiled_only(lambda: forward_and_grads(fn, to_kiln(inputs)))
    dtype = expected[0].dtype
    if dtype in (torch.float32, torch.float64):
        assert_same(expected, actual, message, tolerance)
        return
    # Half types: the CPU rounds partial sums (weight and bias gradients) to
    # the half type; kiln sums in float32. Both are compared with the exact
    # result, and kiln must be as close as the CPU.
    exact = forward_and_grads(fn, to_double(inputs), grad_dtype=dtype)
    assert len(actual) == len(expected) == len(exact), message
    for index, (cpu, kiln, truth) in enumerate(zip(expected, actual, exact)):
        if cpu is None:
            assert kiln is None and truth is None, message
            continue
        assert kiln.device.type == "kiln" and kiln.dtype == cpu.dtype and kiln.shape == cpu.shape, message
        cpu_error = (cpu.double() - truth).abs().max().item() if cpu.numel() else 0.0
        kiln_error = (kiln.cpu().double() - truth).abs().max().item() if kiln.numel() else 0.0
        assert kiln_error <= 1.25 * cpu_error + tolerance[1], (message, index, cpu_error, kiln_error)


@pytest.mark.parametrize("dtype", FLOATING)
def test_layer_norm(dtype):
    x = make((4, 6, 33), dtype)
    for shape in [(33,), (6, 33), (4, 6, 33)]:
        weight, bias = make(shape, dtype), make(shape, dtype)
        for w, b in [(None, None), (weight, None), (None, bias), (weight, bias)]:
            compare(lambda a, w_, b_: F.layer_norm(a, shape, w_, b_, eps=1e-5), [x, w, b], tolerance_for(dtype),
                    f"{shape} weight {w is not None} bias {b is not None}")
    # Non-contiguous input.
    compare(lambda a, w_, b_: F.layer_norm(a, (4,), w_, b_), [make((4, 9), dtype).t(), make((4,), dtype),
                                                              make((4,), dtype)], tolerance_for(dtype), "transposed")


def test_layer_norm_statistics_and_mixed_dtypes():
    x = make((5, 16), torch.float32)
    compiled_only(lambda: check(torch.native_layer_norm, x, [16], None, None, 1e-5))
    compiled_only(lambda: check(torch.native_layer_norm, x.half(), [16], None, None, 1e-5, tolerance=(2e-3, 2e-3)))
    compiled_only(lambda: check(torch.native_layer_norm, x.bfloat16(), [16], make((16,), torch.float32), None, 1e-5,
                                tolerance=(2e-2, 2e-2), message="mixed: float32 statistics"))
    check(torch.native_layer_norm, x, [16], make((16,), torch.float64), None, 1e-5, message="double weight")
    check(torch.native_layer_norm, x, [8], None, None, 1e-5, message="shape mismatch")
    check(torch.native_layer_norm, make((0, 16), torch.float32), [16], None, None, 1e-5, message="empty")
    check(torch.native_layer_norm, make((3, 0), torch.float32), [0], None, None, 1e-5, message="empty rows")
    check(torch.native_layer_norm, x.long(), [16], None, None, 1e-5, message="integer input")


def test_layer_norm_module_and_large_rows():
    module = torch.nn.LayerNorm(1024)
    with torch.no_grad():
        module.weight.copy_(make((1024,), torch.float32))
        module.bias.copy_(make((1024,), torch.float32))
    kiln_module = torch.nn.LayerNorm(1024).to("kiln")
    kiln_module.load_state_dict(module.state_dict())
    x = make((64, 1024), torch.float32)
    expected = forward_and_grads(module, [x]) + [module.weight.grad, module.bias.grad]
    actual = compiled_only(lambda: forward_and_grads(kiln_module, [x.to("kiln")]))
    actual += [kiln_module.weight.grad, kiln_module.bias.grad]
    assert_same(expected, actual, tolerance=(1e-4, 1e-4))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_rows_of_neighbours_run_as_one_kernel(dtype):
    # (shape, normalized dims, transposed, kernels forward, kernels for
    # grad_input alone): contiguous rows, many or few elements in all, are the
    # stages of one row kernel each way; few long rows and strided rows take
    # the mean, rstd and normalization kernels (backward: two sums and the
    # gradient).
    cases = [((64, 40), 1, False, 1, 1), ((3, 4, 5), 2, False, 1, 1), ((2, 40000), 1, False, 3, 3),
             ((9, 40), 1, True, 3, 3)]
    for shape, dims, transposed, forward, backward in cases:
        x = make(shape[::-1], dtype).t() if transposed else make(shape, dtype)
        normalized = shape[-dims:]
        weight, bias = make(normalized, dtype), make(normalized, dtype)
        message = f"{shape} over {normalized} transposed {transposed}"
        x_kiln, weight_kiln, bias_kiln = to_kiln([x, weight, bias])
        assert kernels_launched(lambda: torch.native_layer_norm(x_kiln, normalized, weight_kiln, bias_kiln, 1e-5)) \
            == forward, message
        _, mean, rstd = torch.native_layer_norm(x_kiln, normalized, weight_kiln, bias_kiln, 1e-5)
        grad = to_kiln(make(shape, dtype))
        assert kernels_launched(lambda: torch.ops.aten.native_layer_norm_backward(
            grad, x_kiln, normalized, mean, rstd, weight_kiln, bias_kiln, [True, False, False])) == backward, message
        compare(lambda a, w_, b_: F.layer_norm(a, normalized, w_, b_, eps=1e-5), [x, weight, bias],
                tolerance_for(dtype), message)
        compiled_only(lambda: check(torch.native_layer_norm, x, normalized, weight, bias, 1e-5, message=message,
                                    tolerance=tolerance_for(dtype)))


def test_group_norm_rows_of_neighbours_run_as_one_kernel():
    # Each (sample, group) row of D x H x W contiguous elements: many rows or
    # few elements in all take one row kernel; two rows of 80000 take the
    # mean, rstd and normalization kernels.
    for shape, groups, kernels in (((2, 6, 5, 5), 3, 1), ((16, 8, 4, 4), 4, 1), ((1, 4, 200, 200), 2, 3)):
        x = make(shape, torch.float32)
        weight, bias = make(shape[1:2], torch.float32), make(shape[1:2], torch.float32)
        x_kiln, weight_kiln, bias_kiln = to_kiln([x, weight, bias])
        assert kernels_launched(lambda: F.group_norm(x_kiln, groups, weight_kiln, bias_kiln)) == kernels, shape
        for w, b in ((None, None), (weight, bias)):
            compiled_only(lambda: check(torch.native_group_norm, x, w, b, shape[0], shape[1],
                                        shape[2] * shape[3], groups, 1e-5, message=f"{shape} affine {w is not None}",
                                        tolerance=(1e-4, 1e-4)))


def test_parameters_on_another_device_are_refused():
    x = make((4, 8), torch.float32).to("kiln")
    with pytest.raises(RuntimeError, match="same device"):
        F.layer_norm(x, (8,), torch.ones(8))
    with pytest.raises(RuntimeError, match="same device"):
        F.batch_norm(x, torch.zeros(8), torch.ones(8))


@pytest.mark.parametrize("dtype", FLOATING)
@pytest.mark.parametrize("shape", [(8, 3), (4, 3, 5), (2, 3, 4, 5)], ids=["1d", "2d", "3d"])
def test_batch_norm_training_updates_running_stats(dtype, shape):
    x = make(shape, dtype)
    weight, bias = make((3,), dtype), make((3,), dtype)
    for w, b in [(None, None), (weight, bias)]:
        running = [make((3,), dtype), make((3,), dtype, low=0.5, high=2.0)]
        cpu_stats = [t.clone() for t in running]
        kiln_stats = [t.to("kiln") for t in running]
        expected = forward_and_grads(
            lambda a, w_, b_: F.batch_norm(a, cpu_stats[0], cpu_stats[1], w_, b_, training=True, momentum=0.3),
            [x, w, b])
        actual = compiled_only(lambda: forward_and_grads(
            lambda a, w_, b_: F.batch_norm(a, kiln_stats[0], kiln_stats[1], w_, b_, training=True, momentum=0.3),
            to_kiln([x, w, b])))
        assert_same(expected, actual, f"affine {w is not None}", tolerance_for(dtype))
        assert_same(cpu_stats, kiln_stats, "running stats", tolerance_for(dtype))


@pytest.mark.parametrize("dtype", FLOATING)
def test_batch_norm_evaluation(dtype):
    x = make((4, 3, 5, 2), dtype)
    mean, var = make((3,), dtype), make((3,), dtype, low=0.5, high=2.0)
    weight, bias = make((3,), dtype), make((3,), dtype)
    compare(lambda a, m, v, w_, b_: F.batch_norm(a, m.detach(), v.detach(), w_, b_, training=False),
            [x, mean, var, weight, bias], tolerance_for(dtype))
    compare(lambda a, m, v: F.batch_norm(a, m.detach(), v.detach(), training=False), [x, mean, var],
            tolerance_for(dtype), "no affine")


def test_batch_norm_modules_layouts_and_no_running_stats():
    x = make((4, 3, 6, 5), torch.float32)
    for module in [torch.nn.BatchNorm2d(3), torch.nn.BatchNorm2d(3, affine=False),
                   torch.nn.BatchNorm2d(3, track_running_stats=False), torch.nn.BatchNorm2d(3, momentum=None)]:
        kiln_module = type(module)(3, affine=module.affine, track_running_stats=module.track_running_stats,
                                   momentum=module.momentum).to("kiln")
        for step in range(2):
            for source in (x, x.contiguous(memory_format=torch.channels_last), x[:, :, ::2]):
                expected = forward_and_grads(module, [source])
                actual = compiled_only(lambda: forward_and_grads(kiln_module, to_kiln([source])))
                assert_same(expected, actual, f"{module} step {step}", (1e-5, 1e-5))
        for name, buffer in module.named_buffers():
            assert_same(buffer, dict(kiln_module.named_buffers())[name], name, (1e-5, 1e-5))
        module.eval()
        kiln_module.eval()
        assert_same(forward_and_grads(module, [x]), compiled_only(lambda: forward_and_grads(kiln_module, [x.to("kiln")])),
                    f"{module} eval", (1e-5, 1e-5))


def test_batch_norm_direct_overloads():
    x = make((4, 3, 5), torch.float32)
    w, b = make((3,), torch.float32), make((3,), torch.float32)

    check(lambda a, w_, b_: torch.native_batch_norm(a, w_, b_, None, None, True, 0.1, 1e-5), x, w, b)
    check(lambda a, w_, b_: torch.ops.aten._native_batch_norm_legit.no_stats(a, w_, b_, True, 0.1, 1e-5), x, w, b)
    for op, args in [(torch.ops.aten._native_batch_norm_legit, (True, 0.1, 1e-5)),
                     (torch.ops.aten._native_batch_norm_legit, (False, 0.1, 1e-5)),
                     (torch.ops.aten._batch_norm_with_update, (0.1, 1e-5))]:
        stats = [make((3,), torch.float32), make((3,), torch.float32, low=0.5, high=2.0)]
        expected = op(x, w, b, *[s.clone() for s in stats], *args)
        kiln_stats = [s.to("kiln") for s in stats]
        actual = compiled_only(lambda: op(*to_kiln([x, w, b]), *kiln_stats, *args))
        assert_same(tuple(expected[:3]), tuple(actual[:3]), f"{op}", (1e-5, 1e-5))
    # Mixed dtypes: float16 input, float32 parameters and statistics.
    compiled_only(lambda: check(torch.native_batch_norm, x.half(), w, b, make((3,), torch.float32),
                                make((3,), torch.float32, low=0.5, high=2.0), True, 0.1, 1e-5, tolerance=(2e-3, 2e-3)))
    check(torch.native_batch_norm, x, w.double(), b, None, None, True, 0.1, 1e-5, message="double weight")
    check(torch.native_batch_norm, x.long(), None, None, None, None, True, 0.1, 1e-5, message="integer input")


@pytest.mark.parametrize("dtype", FLOATING)
def test_group_norm(dtype):
    x = make((3, 6, 4, 5), dtype)
    weight, bias = make((6,), dtype), make((6,), dtype)
    for groups in (1, 2, 6):
        compare(lambda a, w_, b_: F.group_norm(a, groups, w_, b_), [x, weight, bias], tolerance_for(dtype),
                f"{groups} groups")
    compare(lambda a: F.group_norm(a, 3), [x], tolerance_for(dtype), "no affine")
    compare(lambda a: F.group_norm(a, 2), [make((4, 6), dtype)], tolerance_for(dtype), "no spatial dims")
    cl = x.contiguous(memory_format=torch.channels_last)
    compare(lambda a, w_, b_: F.group_norm(a, 2, w_, b_), [cl, weight, bias], tolerance_for(dtype), "channels_last")
    check(F.group_norm, x, 4, message="groups must divide channels")
