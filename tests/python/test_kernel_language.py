"""Kiln's kernel language (torch_kiln.kernels.kernel): bodies of pointwise ops
and reductions compiled into fused kernels, against the same bodies run as
PyTorch ops on the CPU; autograd through the vector-Jacobian product;
torch.compile inlining; and the errors for ops outside the language."""
import sys

import pytest
import torch

import torch_kiln
from torch_kiln.kernels import KernelLanguageError, kernel


@kernel
def rms_norm(x, weight, eps: float = 1e-6):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


@kernel(name="test::gelu_and_sum")
def gelu_and_sum(x, bias):
    y = 0.5 * (x + bias) * (1.0 + torch.tanh(0.7978845608028654 * ((x + bias) + 0.044715 * (x + bias) ** 3)))
    return y, y.sum(0)


def inputs(*shape, dtype=torch.float32, seed=0, transpose=False):
    generator = torch.Generator().manual_seed(seed)
    if transpose:
        return torch.randn(*shape[::-1], generator=generator, dtype=dtype).t()
    return torch.randn(*shape, generator=generator, dtype=dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("shape,transpose", [((64, 48), False), ((5, 3, 33), False), ((40, 24), True),
                                             ((0, 16), False), ((1, 1), False)])
def test_a_kernel_matches_its_body_on_the_cpu_forward_and_backward(dtype, shape, transpose):
    x_cpu = inputs(*shape, dtype=dtype, transpose=transpose).requires_grad_()
    weight_cpu = inputs(shape[-1], dtype=dtype, seed=1).requires_grad_()
    grad = inputs(*shape, dtype=dtype, seed=2)
    expected = rms_norm(x_cpu, weight_cpu, 1e-5)  # CPU tensors: the body as PyTorch ops
    expected.backward(grad)
    x = x_cpu.detach().to("kiln").requires_grad_()
    weight = weight_cpu.detach().to("kiln").requires_grad_()
    result = rms_norm(x, weight, 1e-5)
    result.backward(grad.to("kiln"))
    tolerance = {torch.float32: 1e-5, torch.float64: 1e-12, torch.bfloat16: 2e-2}[dtype]
    torch.testing.assert_close(result.cpu(), expected.detach(), rtol=tolerance, atol=tolerance)
    torch.testing.assert_close(x.grad.cpu(), x_cpu.grad, rtol=tolerance * 10, atol=tolerance * 10)
    torch.testing.assert_close(weight.grad.cpu(), weight_cpu.grad, rtol=tolerance * 10, atol=tolerance * 10)


def test_rms_norm_is_one_fused_kernel_and_a_signature_compiles_once():
    x, weight = inputs(32, 64).to("kiln"), inputs(64).to("kiln")
    statistics = rms_norm.compiled(x, weight, 1e-6).statistics
    assert statistics["kernels"] == 1 and statistics["extern_calls"] == 0
    before = rms_norm.signatures_compiled
    for _ in range(3):
        rms_norm(x, weight, 1e-6)
    assert rms_norm.signatures_compiled == before
    rms_norm(inputs(8, 64).to("kiln"), weight, 1e-6)  # a new shape: a new program
    assert rms_norm.signatures_compiled == before + 1
    # Defaults and keywords bind as in a call of the body.
    assert torch.equal(rms_norm(x, weight).cpu(), rms_norm(x, weight=weight, eps=1e-6).cpu())
    assert rms_norm.signatures_compiled == before + 1


def test_several_outputs_broadcasting_and_op_tracking():
    torch_kiln.clear_op_tracking()
    x, bias = inputs(16, 40), inputs(40, seed=3)
    y, total = gelu_and_sum(x.to("kiln"), bias.to("kiln"))
    expected_y, expected_total = gelu_and_sum(x, bias)
    torch.testing.assert_close(y.cpu(), expected_y)
    torch.testing.assert_close(total.cpu(), expected_total, rtol=1e-5, atol=1e-5)
    assert torch_kiln.get_executed_ops()["test::gelu_and_sum"] == {"custom": 1}
    assert torch_kiln.get_fallback_ops() == {}


def test_ops_outside_the_language_are_refused_with_the_kernel_and_the_line():
    @kernel(name="test::with_a_product")
    def with_a_product(x, y):
        return torch.mm(x, y).relu()

    line = with_a_product.body.__code__.co_firstlineno + 2  # the decorator line, the def, the body
    with pytest.raises(KernelLanguageError) as raised:
        with_a_product(torch.ones(64, 64, device="kiln"), torch.ones(64, 64, device="kiln"))
    message = str(raised.value)
    assert "kernel 'test::with_a_product'" in message and "aten.mm" in message
    assert f"{__file__}:{line}" in message

    @kernel
    def noisy(x):
        return x + torch.rand_like(x)

    with pytest.raises(KernelLanguageError, match="draws random numbers"):
        noisy(torch.ones(4, device="kiln"))
    with pytest.raises(TypeError, match="not str"):
        rms_norm(torch.ones(4, 4, device="kiln"), torch.ones(4, device="kiln"), "eps")


def test_inside_torch_compile_the_body_fuses_with_its_neighbours():
    def model(x, weight):
        return rms_norm(torch.relu(x) * 2, weight, 1e-6).sum(-1)

    x, weight = inputs(8, 32), inputs(32, seed=4)
    torch_kiln.reset_compile_stats()
    compiled = torch.compile(model, backend="kiln", fullgraph=True)
    result = compiled(x.to("kiln"), weight.to("kiln"))
    torch.testing.assert_close(result.cpu(), model(x, weight), rtol=1e-5, atol=1e-5)
    stats = torch_kiln.compile_stats()
    assert stats["extern_calls"] == 0 and stats["kernels"] == 1, stats


def test_the_kernel_language_is_importable_without_the_compiled_path_loaded():
    # torch_kiln.kernels loads torch_kiln.compile only when a kernel compiles.
    code = ("import sys, torch, torch_kiln.kernels; "
            "print('torch_kiln.compile' in sys.modules, 'torch._dynamo' in sys.modules)")
    import subprocess
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[0] == "False"


@kernel(name="test::rms_norm_op")
def annotated_rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


RMS_NORM_OP = annotated_rms_norm.as_custom_op("kiln_test::rms_norm")


def test_as_a_custom_op_it_passes_opcheck_and_runs_eagerly_and_compiled():
    x, weight = inputs(4, 3, 40), inputs(40, seed=5)
    # PyTorch 2.14's autograd-registration check takes CPU, CUDA and XPU tensors only: on kiln the
    # other checks, on the CPU (where the op runs its body) all of them.
    torch.library.opcheck(RMS_NORM_OP, (x.to("kiln").requires_grad_(), weight.to("kiln").requires_grad_(), 1e-6),
                          test_utils=("test_schema", "test_faketensor", "test_aot_dispatch_dynamic"))
    torch.library.opcheck(RMS_NORM_OP, (x.clone().requires_grad_(), weight.clone().requires_grad_(), 1e-6))
    assert str(torch.ops.kiln_test.rms_norm.default._schema) == \
        "kiln_test::rms_norm(Tensor x, Tensor weight, float eps=9.9999999999999995e-07) -> Tensor"
    on_kiln = [x.to("kiln").requires_grad_(), weight.to("kiln").requires_grad_()]
    on_cpu = [x.clone().requires_grad_(), weight.clone().requires_grad_()]
    RMS_NORM_OP(*on_kiln).square().sum().backward()
    RMS_NORM_OP(*on_cpu).square().sum().backward()
    for kiln_tensor, cpu_tensor in zip(on_kiln, on_cpu):
        torch.testing.assert_close(kiln_tensor.grad.cpu(), cpu_tensor.grad, rtol=1e-4, atol=1e-4)
    torch_kiln.reset_compile_stats()
    compiled = torch.compile(lambda a, b: RMS_NORM_OP(torch.relu(a), b).sum(), backend="kiln", fullgraph=True)
    torch.testing.assert_close(compiled(x.to("kiln"), weight.to("kiln")).cpu(),
                               RMS_NORM_OP(torch.relu(x), weight).sum(), rtol=1e-5, atol=1e-5)
    assert torch_kiln.compile_stats()["extern_calls"] == 1  # the op stays whole in the graph
