"""Compiled 2-D pooling (max with indices, average, adaptive average), forward
and backward, differentially against the CPU."""
import itertools

import pytest
import torch
import torch.nn.functional as F

from differential import FLOATING, assert_same, check, compiled_only, make

A = torch.ops.aten

# (name, shape of the base tensor, view of it with the logical shape N,C,H,W).
LAYOUTS = [
    ("contiguous", (2, 3, 9, 10), lambda t: t),
    ("channels_last", (2, 3, 9, 10), lambda t: t.contiguous(memory_format=torch.channels_last)),
    ("transposed", (2, 3, 10, 9), lambda t: t.transpose(2, 3)),
    ("sliced", (2, 3, 9, 20), lambda t: t[..., ::2]),
    ("batch_one", (1, 4, 8, 7), lambda t: t),
    ("unbatched", (3, 9, 10), lambda t: t),
    ("channels_last_one_channel", (2, 1, 6, 7), lambda t: t.contiguous(memory_format=torch.channels_last)),
]


def same_on_both(shape, dtype, layout=lambda t: t, **make_arguments):
    """(cpu, kiln) leaf tensors with equal values, laid out by `layout` on each device."""
    base = make(shape, dtype, **make_arguments)
    cpu = layout(base).detach()
    kiln = layout(base.to("kiln")).detach()
    assert cpu.stride() == kiln.stride()
    return cpu, kiln


def forward_backward(fn, cpu, kiln, message="", tolerance=None, backward=True, only_compiled=True):
    """fn on both devices; then, for floating inputs, the gradient of every
    floating output against a random incoming gradient."""
    differentiable = backward and cpu.dtype.is_floating_point
    cpu = cpu.detach().requires_grad_(differentiable)
    kiln = kiln.detach().requires_grad_(differentiable)
    expected = fn(cpu)

    def run_kiln():
        actual = fn(kiln)
        if differentiable:
            outputs = actual if isinstance(actual, tuple) else (actual,)
            torch.autograd.backward([outputs[0]], [incoming.to("kiln")])
        return actual

    outputs = expected if isinstance(expected, tuple) else (expected,)
    if differentiable:
        incoming = make(outputs[0].shape, outputs[0].dtype)
        torch.autograd.backward([outputs[0]], [incoming])
    actual = compiled_only(run_kiln) if only_compiled else run_kiln()
    assert_same(expected, actual, message, tolerance)
    if differentiable:
        assert_same(cpu.grad, kiln.grad, f"{message} grad", tolerance)


# --- max pooling ---------------------------------------------------------------

PARAMETERS = list(itertools.product([2, 3], [1, 2], [0, 1], [1, 2], [False, True]))


@pytest.mark.parametrize("kernel,stride,padding,dilation,ceil_mode", PARAMETERS)
def test_max_pool2d_parameters(kernel, stride, padding, dilation, ceil_mode):
    cpu, kiln = same_on_both((2, 3, 9, 10), torch.float32)
    forward_backward(lambda x: F.max_pool2d(x, kernel, stride, padding, dilation, ceil_mode,
                                            return_indices=True),
                     cpu, kiln, f"k{kernel} s{stride} p{padding} d{dilation} ceil{ceil_mode}")


def test_max_pool2d_rectangular_parameters():
    cpu, kiln = same_on_both((2, 3, 11, 13), torch.float32)
    forward_backward(lambda x: F.max_pool2d(x, (3, 2), (2, 1), (1, 0), (1, 2), True,
                                            return_indices=True), cpu, kiln)


@pytest.mark.parametrize("name,shape,layout", LAYOUTS, ids=[layout[0] for layout in LAYOUTS])
@pytest.mark.parametrize("dtype", FLOATING)
def test_max_pool2d_layouts(dtype, name, shape, layout):
    cpu, kiln = same_on_both(shape, dtype, layout)
    forward_backward(lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True), cpu, kiln, name)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8])
def test_max_pool2d_integers(dtype):
    cpu, kiln = same_on_both((2, 3, 8, 9), dtype, low=-100 if dtype != torch.uint8 else 0, high=100)
    forward_backward(lambda x: F.max_pool2d(x, 2, 1, 1, return_indices=True), cpu, kiln, str(dtype))
    # The extreme values: an all-lowest window reports its first element.
    lowest = torch.iinfo(dtype).min
    full = torch.full((1, 2, 5, 5), lowest, dtype=dtype)
    check(lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True), full)


def test_max_pool2d_bool_is_not_implemented():
    check(lambda x: F.max_pool2d(x, 2), make((1, 2, 4, 4), torch.bool))
    check(lambda x: A.max_pool2d_with_indices(x, [2, 2]), make((1, 2, 4, 4), torch.bool))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.float64])
def test_max_pool2d_nan_and_infinity(dtype):
    x = make((1, 2, 6, 6), dtype)
    x[0, 0, 1, 1] = float("nan")
    x[0, 0, 1, 2] = float("nan")  # two NaNs in one window: the last wins
    x[0, 1, 0:3, 0:3] = float("-inf")  # windows of -inf report their first element
    x[0, 1, 4, 4] = float("inf")
    cpu, kiln = x, x.to("kiln")
    forward_backward(lambda t: F.max_pool2d(t, 3, 1, 1, return_indices=True), cpu, kiln)
    forward_backward(lambda t: F.max_pool2d(t, 2, 2, return_indices=True), cpu, kiln)


def test_max_pool2d_without_indices_and_module():
    cpu, kiln = same_on_both((2, 4, 12, 12), torch.float32)
    forward_backward(torch.nn.MaxPool2d(3, 2, 1), cpu, kiln, "nn.MaxPool2d")
    forward_backward(torch.nn.MaxPool2d(2, ceil_mode=True), cpu, kiln, "ceil_mode")
    forward_backward(lambda x: F.max_pool1d(x[:, 0], 3, 2), cpu, kiln, "max_pool1d")
    with torch.no_grad():
        compiled_only(lambda: check(torch.nn.MaxPool2d(2), cpu))


def test_max_pool2d_large_windows():
    # More taps than one launch unrolls: the scan continues across launches.
    cpu, kiln = same_on_both((2, 3, 20, 90), torch.float32)
    forward_backward(lambda x: F.max_pool2d(x, 9, 3, 4, return_indices=True), cpu, kiln, "9x9")
    forward_backward(lambda x: F.max_pool2d(x, (2, 70), 5, (1, 3), return_indices=True), cpu, kiln,
                     "2x70")
    forward_backward(lambda x: F.max_pool2d(x, (9, 9), 2, 2, 2, return_indices=True), cpu, kiln,
                     "dilated 9x9")


def test_max_pool2d_out_and_backward_out():
    x = make((2, 3, 8, 8), torch.float32)

    def out_forms(t):
        values = torch.empty(0, dtype=t.dtype, device=t.device)
        indices = torch.empty(0, dtype=torch.long, device=t.device)
        A.max_pool2d_with_indices.out(t, [3, 3], [2, 2], [1, 1], [1, 1], False, out=values,
                                      indices=indices)
        grad = torch.ones_like(values)
        grad_input = torch.full((2, 3, 8, 8), 7.0, dtype=t.dtype, device=t.device)
        A.max_pool2d_with_indices_backward.grad_input(grad, t, [3, 3], [2, 2], [1, 1], [1, 1],
                                                      False, indices, grad_input=grad_input)
        return values, indices, grad_input

    compiled_only(lambda: check(out_forms, x))


def test_max_pool2d_backward_ignores_indices_outside_the_plane():
    x = make((1, 1, 4, 4), torch.float32)
    grad = torch.ones(1, 1, 2, 2)
    indices = torch.tensor([[[[0, 5], [-1, 16]]]])
    expected = torch.zeros(1, 1, 4, 4)
    expected.view(-1)[0] = 1
    expected.view(-1)[5] = 1
    actual = A.max_pool2d_with_indices_backward(grad.to("kiln"), x.to("kiln"), [2, 2], [2, 2],
                                                [0, 0], [1, 1], False, indices.to("kiln"))
    assert torch.equal(actual.cpu(), expected)


def test_max_pool2d_errors():
    x = make((2, 3, 6, 6), torch.float32)
    check(lambda t: F.max_pool2d(t, 2, padding=2), x, message="pad above half the kernel")
    check(lambda t: F.max_pool2d(t, 0), x, message="zero kernel")
    check(lambda t: F.max_pool2d(t, 2, stride=0), x, message="zero stride")
    check(lambda t: F.max_pool2d(t, 2, dilation=0), x, message="zero dilation")
    check(lambda t: F.max_pool2d(t, 7), x, message="output too small")
    check(lambda t: F.max_pool2d(t, 2), make((6, 6), torch.float32), message="2-D input")
    check(lambda t: F.max_pool2d(t, 2), make((2, 0, 6, 6), torch.float32), message="zero channels")
    check(lambda t: A.max_pool2d_with_indices(t, [2, 2, 2]), x, message="three kernel sizes")
    forward_backward(lambda t: F.max_pool2d(t, 2, return_indices=True),
                     *same_on_both((0, 3, 6, 6), torch.float32), message="zero batch")


# --- average pooling -----------------------------------------------------------

AVERAGE_PARAMETERS = list(itertools.product([2, 3], [1, 2], [0, 1], [False, True], [False, True],
                                            [None, 3]))


@pytest.mark.parametrize("kernel,stride,padding,ceil_mode,count_include_pad,divisor",
                         AVERAGE_PARAMETERS)
def test_avg_pool2d_parameters(kernel, stride, padding, ceil_mode, count_include_pad, divisor):
    cpu, kiln = same_on_both((2, 3, 9, 10), torch.float32)
    forward_backward(lambda x: F.avg_pool2d(x, kernel, stride, padding, ceil_mode,
                                            count_include_pad, divisor),
                     cpu, kiln,
                     f"k{kernel} s{stride} p{padding} ceil{ceil_mode} pad{count_include_pad} d{divisor}")


@pytest.mark.parametrize("name,shape,layout", LAYOUTS, ids=[layout[0] for layout in LAYOUTS])
@pytest.mark.parametrize("dtype", FLOATING)
def test_avg_pool2d_layouts(dtype, name, shape, layout):
    cpu, kiln = same_on_both(shape, dtype, layout)
    forward_backward(lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False), cpu, kiln, name)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_avg_pool2d_half_types_round_as_the_cpu(dtype):
    # Forward sums in float32; backward rounds each share and sum to the dtype.
    cpu, kiln = same_on_both((2, 5, 11, 12), dtype)
    forward_backward(lambda x: F.avg_pool2d(x, 3, 1, 1), cpu, kiln, tolerance=(0, 0))
    forward_backward(lambda x: F.avg_pool2d(x, 5, 2, 2, count_include_pad=False), cpu, kiln,
                     tolerance=(0, 0))


def test_avg_pool2d_int64():
    x = make((2, 3, 7, 8), torch.int64, low=-50, high=50)
    check(lambda t: F.avg_pool2d(t, 3, 2, 1), x)
    check(lambda t: F.avg_pool2d(t, 2, 1, 1, count_include_pad=False), x)
    check(lambda t: F.avg_pool2d(t, 3, 2, 1, divisor_override=2), x)
    grad = make((2, 3, 4, 4), torch.int64, low=-50, high=50)
    check(lambda g, t: A.avg_pool2d_backward(g, t, [3, 3], [2, 2], [1, 1], False, True, None), grad, x)
    check(lambda t: F.avg_pool2d(t, 2), make((1, 2, 4, 4), torch.int32), message="int32 raises")
    check(lambda t: F.avg_pool2d(t, 2), make((1, 2, 4, 4), torch.bool), message="bool raises")


def test_avg_pool2d_large_windows():
    cpu, kiln = same_on_both((2, 3, 20, 90), torch.float32)
    forward_backward(lambda x: F.avg_pool2d(x, 9, 1, 4), cpu, kiln, "9x9 stride 1")
    forward_backward(lambda x: F.avg_pool2d(x, (2, 70), 5, (1, 3), count_include_pad=False), cpu,
                     kiln, "2x70")
    forward_backward(lambda x: F.avg_pool2d(x, (3, 70), 1, 1), cpu, kiln, "3x70 stride 1")


def test_avg_pool2d_module_and_out_forms():
    cpu, kiln = same_on_both((2, 4, 12, 12), torch.float32)
    forward_backward(torch.nn.AvgPool2d(3, 2, 1), cpu, kiln, "nn.AvgPool2d")
    forward_backward(lambda x: F.avg_pool1d(x[:, 0], 3, 2), cpu, kiln, "avg_pool1d")
    x = make((2, 3, 8, 8), torch.float32)

    def out_forms(t):
        out = torch.empty(0, dtype=t.dtype, device=t.device)
        A.avg_pool2d.out(t, [3, 3], [2, 2], [1, 1], False, True, None, out=out)
        grad_input = torch.full((5,), 7.0, dtype=t.dtype, device=t.device)
        A.avg_pool2d_backward.grad_input(torch.ones_like(out), t, [3, 3], [2, 2], [1, 1], False,
                                         True, None, grad_input=grad_input)
        return out, grad_input

    compiled_only(lambda: check(out_forms, x))


def test_avg_pool2d_errors():
    x = make((2, 3, 6, 6), torch.float32)
    check(lambda t: F.avg_pool2d(t, 2, padding=2), x, message="pad above half the kernel")
    check(lambda t: F.avg_pool2d(t, 2, divisor_override=0), x, message="zero divisor")
    check(lambda t: F.avg_pool2d(t, 7), x, message="output too small")
    check(lambda t: F.avg_pool2d(t, 2), make((6, 6), torch.float32), message="2-D input")
    check(lambda g, t: A.avg_pool2d_backward(g, t, [2, 2], [2, 2], [0, 0], False, True, None),
          make((2, 3, 4, 3), torch.float32), x, message="grad_output of the wrong size")
    forward_backward(lambda t: F.avg_pool2d(t, 2), *same_on_both((0, 3, 6, 6), torch.float32),
                     message="zero batch")


# --- adaptive average pooling -----------------------------------------------------

@pytest.mark.parametrize("output_size", [(1, 1), (2, 3), (4, 5), (9, 10), (13, 7), (5, 1)])
def test_adaptive_avg_pool2d_sizes(output_size):
    cpu, kiln = same_on_both((2, 3, 9, 10), torch.float32)
    forward_backward(lambda x: F.adaptive_avg_pool2d(x, output_size), cpu, kiln, str(output_size))
    forward_backward(lambda x: A._adaptive_avg_pool2d(x, list(output_size)), cpu, kiln,
                     f"_adaptive {output_size}")


@pytest.mark.parametrize("name,shape,layout", LAYOUTS, ids=[layout[0] for layout in LAYOUTS])
@pytest.mark.parametrize("dtype", FLOATING)
def test_adaptive_avg_pool2d_layouts(dtype, name, shape, layout):
    cpu, kiln = same_on_both(shape, dtype, layout)
    forward_backward(lambda x: F.adaptive_avg_pool2d(x, (4, 3)), cpu, kiln, name)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_adaptive_avg_pool2d_rounds_as_the_cpu(dtype):
    cpu, kiln = same_on_both((2, 5, 10, 9), dtype)
    forward_backward(lambda x: F.adaptive_avg_pool2d(x, (4, 5)), cpu, kiln, tolerance=(0, 0))
    forward_backward(lambda x: F.adaptive_avg_pool2d(x, (13, 11)), cpu, kiln, tolerance=(0, 0))


def test_adaptive_avg_pool2d_large_windows():
    cpu, kiln = same_on_both((2, 3, 40, 41), torch.float32)
    forward_backward(lambda x: A._adaptive_avg_pool2d(x, [3, 2]), cpu, kiln, "14x21 windows")
    forward_backward(lambda x: A._adaptive_avg_pool2d(x, [1, 1]), cpu, kiln, "one window")
    small_cpu, small_kiln = same_on_both((2, 3, 1, 2), torch.float32)
    forward_backward(lambda x: A._adaptive_avg_pool2d(x, [9, 17]), small_cpu, small_kiln,
                     "each input covered by many outputs")


def test_adaptive_avg_pool2d_out_and_errors():
    x = make((2, 3, 7, 8), torch.float32)

    def out_form(t):
        out = torch.empty(5, dtype=t.dtype, device=t.device)
        return A.adaptive_avg_pool2d.out(t, [3, 3], out=out)

    compiled_only(lambda: check(out_form, x))
    check(lambda t: A.adaptive_avg_pool2d.out(t, [3, 3], out=torch.empty(0, dtype=torch.float64,
                                                                           device=t.device)),
          x, message="out of another dtype")
    check(lambda t: A._adaptive_avg_pool2d(t, [2, 2, 2]), x, message="three output sizes")
    check(lambda t: A._adaptive_avg_pool2d(t, [2, 2]), make((7, 8), torch.float32), message="2-D")
    check(lambda t: A._adaptive_avg_pool2d(t, [2, 2]), make((2, 3, 0, 8), torch.float32),
          message="empty height")
    check(lambda t: A._adaptive_avg_pool2d(t, [2, 2]), make((2, 3, 4, 4), torch.int64),
          message="int64 is not implemented")
    forward_backward(lambda t: A._adaptive_avg_pool2d(t, [2, 2]),
                     *same_on_both((0, 3, 6, 6), torch.float32), message="zero batch")
    check(lambda t: A._adaptive_avg_pool2d(t, [0, 2]), x, message="zero output size")
    check(lambda g, t: A._adaptive_avg_pool2d_backward(g, t), make((2, 3, 0, 2), torch.float32), x,
          message="empty grad_output")
    check(lambda g, t: A._adaptive_avg_pool2d_backward(g, t), make((3, 2, 2), torch.float32), x,
          message="rank mismatch")
    check(lambda g, t: A._adaptive_avg_pool2d_backward(g, t), make((2, 3, 2, 2), torch.float64), x,
          message="dtype mismatch")


# --- modules, nothing on the CPU ----------------------------------------------------

@pytest.mark.parametrize("module", [torch.nn.MaxPool2d(3, 2, 1), torch.nn.AvgPool2d(2),
                                    torch.nn.AdaptiveAvgPool2d((3, 3)),
                                    torch.nn.AdaptiveAvgPool2d(1)],
                         ids=["MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d", "AdaptiveAvgPool2d_1"])
@pytest.mark.parametrize("channels_last", [False, True])
def test_modules_run_compiled(module, channels_last):
    layout = (lambda t: t.contiguous(memory_format=torch.channels_last)) if channels_last else (lambda t: t)
    cpu, kiln = same_on_both((2, 4, 10, 10), torch.float32, layout)
    forward_backward(module, cpu, kiln, str(module))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_multi_launch_windows_round_as_the_cpu(dtype):
    # 17x17 windows take several launches; the divisor 289 is not a bfloat16.
    cpu, kiln = same_on_both((2, 3, 24, 25), dtype)
    forward_backward(lambda x: F.avg_pool2d(x, 17, 1, 8), cpu, kiln, "avg 17x17", tolerance=(0, 0))
    forward_backward(lambda x: F.avg_pool2d(x, 5, 1, 2, divisor_override=300), cpu, kiln,
                     "divisor 300", tolerance=(0, 0))
    forward_backward(lambda x: F.max_pool2d(x, 17, 2, 8, return_indices=True), cpu, kiln,
                     "max 17x17", tolerance=(0, 0))
    forward_backward(lambda x: F.adaptive_avg_pool2d(x, (2, 3)), cpu, kiln, "adaptive", tolerance=(0, 0))
    small_cpu, small_kiln = same_on_both((2, 3, 1, 2), dtype)
    forward_backward(lambda x: F.adaptive_avg_pool2d(x, (9, 300)), small_cpu, small_kiln,
                     "adaptive upsampling", tolerance=(0, 0))


@pytest.mark.parametrize("pool", [lambda x: F.max_pool2d(x, 3, 2, 1), lambda x: F.avg_pool2d(x, 3, 1, 1),
                                  lambda x: F.adaptive_avg_pool2d(x, (4, 3))],
                         ids=["max", "avg", "adaptive"])
def test_backward_of_a_sum_reads_an_expanded_gradient(pool):
    # sum().backward() hands the pooling backward a grad_output of stride 0.
    cpu, kiln = same_on_both((2, 3, 9, 10), torch.float32)
    cpu.requires_grad_()
    kiln.requires_grad_()
    pool(cpu).sum().backward()
    compiled_only(lambda: pool(kiln).sum().backward())
    assert_same(cpu.grad, kiln.grad)


@pytest.mark.parametrize("memory_format", [torch.contiguous_format, torch.channels_last],
                         ids=["planar", "channels_last"])
def test_max_pool2d_backward_runs_planes_in_parallel(memory_format):
    # Large enough to be split over threads by plane (by batch entry when
    # channels are innermost); overlapping windows make one input element
    # collect several gradients, which must all arrive.
    x = make((8, 16, 40, 40), torch.float32).round()  # ties: the first max wins
    x = x.contiguous(memory_format=memory_format)
    grad = make((8, 16, 38, 38), torch.float32)

    def backward(a, g):
        a = a.clone().requires_grad_()
        torch.nn.functional.max_pool2d(a, 3, stride=1).backward(g)
        return a.grad

    compiled_only(lambda: check(backward, x, grad))
