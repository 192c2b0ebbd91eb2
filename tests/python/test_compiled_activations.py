"""Compiled activations and their backward kernels, differentially against the
CPU, and autograd through them."""
import pytest
import torch
import torch.nn.functional as F

from differential import ALL, FLOATING, INTEGRAL, check, compiled_only, make, variants

aten = torch.ops.aten

# name -> (forward, in-place forward or None)
ACTIVATIONS = {
    "relu": (torch.relu, torch.relu_),
    "threshold": (lambda x: F.threshold(x, 0.5, -2.0), lambda x: F.threshold_(x, 0.5, -2.0)),
    "gelu": (F.gelu, None),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), None),
    "silu": (F.silu, lambda x: F.silu(x, inplace=True)),
    "mish": (F.mish, lambda x: F.mish(x, inplace=True)),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.1), lambda x: F.leaky_relu_(x, 0.1)),
    "hardtanh": (lambda x: F.hardtanh(x, -0.5, 2.0), lambda x: F.hardtanh_(x, -0.5, 2.0)),
    "relu6": (F.relu6, None),
    "elu": (lambda x: F.elu(x, 0.7), lambda x: F.elu_(x, 0.7)),
    "selu": (F.selu, None),
    "celu": (lambda x: F.celu(x, 1.3), None),
    "softplus": (lambda x: F.softplus(x, 2.0, 3.0), None),
    "hardsigmoid": (F.hardsigmoid, lambda x: F.hardsigmoid(x, inplace=True)),
    "hardswish": (F.hardswish, lambda x: F.hardswish(x, inplace=True)),
}

BACKWARDS = {
    "threshold_backward": lambda g, x: aten.threshold_backward(g, x, 0.25),
    "gelu_backward": lambda g, x: aten.gelu_backward(g, x),
    "gelu_backward_tanh": lambda g, x: aten.gelu_backward(g, x, approximate="tanh"),
    "silu_backward": aten.silu_backward,
    "sigmoid_backward": aten.sigmoid_backward,
    "tanh_backward": aten.tanh_backward,
    "leaky_relu_backward": lambda g, x: aten.leaky_relu_backward(g, x, 0.2, False),
    "hardtanh_backward": lambda g, x: aten.hardtanh_backward(g, x, -0.5, 1.0),
    "elu_backward": lambda g, x: aten.elu_backward(g, 1.5, 1.1, 0.9, False, x),
    "elu_backward_result": lambda g, x: aten.elu_backward(g, 1.5, 1.1, 0.9, True, x),
    "softplus_backward": lambda g, x: aten.softplus_backward(g, x, 2.0, 3.0),
    "hardsigmoid_backward": aten.hardsigmoid_backward,
    "hardswish_backward": aten.hardswish_backward,
}


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation_over_dtypes(name):
    forward, _ = ACTIVATIONS[name]
    for dtype in ALL + [torch.int8, torch.uint8]:
        x = make((40,), dtype, low=-5, high=5)
        compiled_only(lambda: check(forward, x, message=f"{name} {dtype}"))


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation_layouts_and_in_place(name):
    forward, in_place = ACTIVATIONS[name]
    for layout, x in variants((5, 7), torch.float32, low=-5, high=5):
        check(forward, x, message=f"{name} {layout}")
        if in_place is not None:
            check(lambda a: in_place(a.clone()), x, message=f"{name} in-place {layout}")


def test_activation_out_forms():
    x = make((4, 6), torch.float32, low=-4, high=4)
    for op, arguments in [(aten.gelu, {}), (aten.silu, {}), (aten.mish, {}),
                          (aten.hardsigmoid, {}), (aten.hardswish, {}),
                          (aten.threshold, {"threshold": 0.1, "value": 2.0}),
                          (aten.leaky_relu, {"negative_slope": 0.3}),
                          (aten.hardtanh, {"min_val": -1.0, "max_val": 1.0}),
                          (aten.elu, {"alpha": 1.2}), (aten.softplus, {"beta": 1.5})]:
        check(lambda a: op.out(a, **arguments, out=torch.empty(0, device=a.device)), x,
              message=str(op))


def test_activation_special_values():
    x = torch.tensor([float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 30.0, -30.0, 3.0, -3.0])
    for dtype in FLOATING:
        for name, (forward, _) in ACTIVATIONS.items():
            # One element at a time on the CPU: its vectorized kernels depend on
            # the machine's ISA (AVX-512's gelu gives NaN for +inf, its scalar
            # loop gives inf); the scalar loop is the formula.
            expected = torch.cat([forward(value.reshape(1)) for value in x.to(dtype)])
            actual = forward(x.to(dtype).to("kiln")).cpu()
            torch.testing.assert_close(actual, expected, equal_nan=True,
                                       msg=lambda text: f"{name} {dtype}: {text}")


@pytest.mark.parametrize("name", list(BACKWARDS))
@pytest.mark.parametrize("dtype", FLOATING + INTEGRAL)
def test_backward_kernels(name, dtype):
    backward = BACKWARDS[name]
    gradient = make((5, 8), dtype)
    x = make((5, 8), dtype, low=-4, high=4)
    if name.endswith("_result") or name in ("sigmoid_backward",):
        x = make((5, 8), dtype, low=-0.9, high=0.9) if dtype.is_floating_point else x
    compiled_only(lambda: check(backward, gradient, x, message=f"{name} {dtype}"))


@pytest.mark.parametrize("name", list(BACKWARDS))
def test_backward_kernel_layouts_and_out(name):
    backward = BACKWARDS[name]
    for layout, x in variants((4, 6), torch.float32, low=-4, high=4):
        gradient = make(x.shape, torch.float32)
        check(backward, gradient, x, message=f"{name} {layout}")
    if not name.startswith("gelu"):  # the CPU's oneDNN gelu_backward fails on a broadcast
        x = make((4, 6), torch.float32, low=-4, high=4)
        check(backward, make((6,), torch.float32), x, message=f"{name} broadcast gradient")


def test_backward_kernel_out_forms():
    gradient = make((3, 4), torch.float32)
    x = make((3, 4), torch.float32, low=-4, high=4)
    out = lambda a: torch.empty(0, device=a.device)  # noqa: E731
    check(lambda g, a: aten.threshold_backward.grad_input(g, a, 0.0, grad_input=out(a)), gradient, x)
    check(lambda g, a: aten.gelu_backward.grad_input(g, a, grad_input=out(a)), gradient, x)
    check(lambda g, a: aten.silu_backward.grad_input(g, a, grad_input=out(a)), gradient, x)
    check(lambda g, a: aten.tanh_backward.grad_input(g, a, grad_input=out(a)), gradient, x)
    check(lambda g, a: aten.hardswish_backward.out(g, a, out=out(a)), gradient, x)


def test_piece_boundaries():
    x = torch.tensor([-3.5, -3.0, -2.5, -0.0, 0.0, 2.5, 3.0, 3.5, 20.0, 21.0])
    gradient = torch.linspace(0.5, 2.0, 10)
    for dtype in FLOATING:
        for name in ["hardswish_backward", "hardsigmoid_backward", "hardtanh_backward",
                     "threshold_backward", "leaky_relu_backward", "elu_backward"]:
            check(BACKWARDS[name], gradient.to(dtype), x.to(dtype), message=f"{name} {dtype}")
        check(lambda g, a: aten.softplus_backward(g, a, 1.0, 20.0), gradient.to(dtype), x.to(dtype))
        for forward, _ in ACTIVATIONS.values():
            check(forward, x.to(dtype), message=f"{dtype}")


def test_argument_checks_match_cpu():
    x = make((5,), torch.float32)
    check(lambda a: F.gelu(a, approximate="cubic"), x, message="bad approximate")
    check(lambda a: aten.leaky_relu_backward(a, a, -0.1, True), x, message="negative slope on result")
    check(lambda a: aten.elu_backward(a, -1.0, 1.0, 1.0, True, a), x, message="negative alpha on result")
    check(F.hardtanh, make((3,), torch.uint8), -1.0, 1.0, message="unsigned negative bound")
    check(lambda a: F.threshold(a, 1000, 0), make((3,), torch.int8), message="threshold overflow")


@pytest.mark.parametrize("name,function", [
    ("relu", torch.relu), ("gelu", F.gelu), ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh")),
    ("silu", F.silu), ("tanh", torch.tanh), ("sigmoid", torch.sigmoid), ("mish", F.mish),
    ("leaky_relu", F.leaky_relu), ("elu", F.elu), ("elu_inplace", lambda x: F.elu(x * 1, inplace=True)),
    ("softplus", F.softplus), ("hardtanh", F.hardtanh), ("relu6", F.relu6),
    ("hardsigmoid", F.hardsigmoid), ("hardswish", F.hardswish), ("threshold", lambda x: F.threshold(x, 0.2, 0.0)),
])
def test_autograd(name, function):
    x = make((6, 7), torch.float32, low=-4, high=4).requires_grad_()
    kiln_x = x.detach().to("kiln").requires_grad_()
    weights = make((6, 7), torch.float32)
    (function(x) * weights).sum().backward()
    compiled_only(lambda: (function(kiln_x) * weights.to("kiln")).sum().backward())
    torch.testing.assert_close(kiln_x.grad.cpu(), x.grad, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", ALL)
def test_logsigmoid_forward_backward_and_buffer(dtype):
    # Large magnitudes too: log1p(exp(-|x|)) must not overflow either way.
    for layout, x in variants((5, 7), dtype, low=-30.0, high=30.0):
        compiled_only(lambda: check(F.logsigmoid, x, message=layout))
        compiled_only(lambda: check(torch.ops.aten.log_sigmoid_forward, x,
                                    message=f"{layout}: result and buffer"))
        if dtype.is_floating_point:
            def gradient(a):
                a = a.clone().requires_grad_()
                F.logsigmoid(a).sum().backward()
                return a.grad
            compiled_only(lambda: check(gradient, x, message=f"{layout} backward"))
    special = torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0, -0.0])
    if dtype.is_floating_point:
        compiled_only(lambda: check(F.logsigmoid, special.to(dtype), message="special values"))


def test_logsigmoid_out_forms():
    x = make((4, 6), torch.float32)
    compiled_only(lambda: check(
        lambda a: torch.ops.aten.log_sigmoid_forward.output(
            a, output=torch.empty(6, 4, device=a.device).t(), buffer=torch.empty(0, device=a.device)),
        x, message="non-contiguous output, empty buffer"))
    compiled_only(lambda: check(
        lambda a: torch.ops.aten.log_sigmoid_backward.grad_input(
            torch.ones_like(a), a, torch.exp(-a.abs()), grad_input=torch.empty(0, device=a.device)),
        x, message="backward out="))


@pytest.mark.parametrize("dtype", FLOATING)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_binary_cross_entropy_with_logits_trains_on_device(dtype, reduction):
    logits = make((8, 5), dtype)
    targets = (make((8, 5), torch.float32) > 0).to(dtype)
    pos_weight = make((5,), dtype, low=0.5, high=2.0)

    def loss_and_gradient(a, t, w):
        a = a.clone().requires_grad_()
        loss = F.binary_cross_entropy_with_logits(a, t, pos_weight=w, reduction=reduction)
        loss.sum().backward()
        return loss.detach(), a.grad

    tolerance = {torch.float16: (5e-3, 5e-3), torch.bfloat16: (3e-2, 3e-2)}.get(dtype)
    compiled_only(lambda: check(loss_and_gradient, logits, targets, pos_weight, tolerance=tolerance))
