"""Custom kernels (torch_kiln.kernels.CKernel) against the CPU: launches over
strides, broadcasting, dtypes and zero sizes; errors that name the kernel and
the line; the kernel cache; and the fused RMSNorm of examples/custom_rms_norm.py
as a torch.library.custom_op: eager, autograd, opcheck, torch.compile and
kiln-eval."""
import os
import subprocess
import sys
import textwrap

import pytest
import torch

import torch_kiln
from torch_kiln.kernels import CKernel, KernelCompileError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "examples"))
import custom_rms_norm  # noqa: E402  (registers the kiln_examples:: ops)

# out = x * KILN_REAL(0) + y, through every operand's strides (2-d launches).
AXPY = CKernel(r"""
KILN_KERNEL(axpy_2d) {
  const int64_t columns = KILN_SIZE(0);
  for (int64_t row = begin; row < end; ++row)
    for (int64_t column = 0; column < columns; ++column) {
      scalar_t x = KILN_DATA(0, const scalar_t)[row * KILN_STRIDE(0, 1) + column * KILN_STRIDE(0, 0)];
      scalar_t y = KILN_DATA(1, const scalar_t)[row * KILN_STRIDE(1, 1) + column * KILN_STRIDE(1, 0)];
      KILN_DATA(2, scalar_t)[row * KILN_STRIDE(2, 1) + column * KILN_STRIDE(2, 0)] =
          x * (scalar_t)KILN_REAL(0) + y;
    }
}
""", name="test::axpy_2d")
AXPY_KERNELS = {
    torch.float32: AXPY.variant(scalar_t="float", dtypes=[torch.float32] * 3),
    torch.float64: AXPY.variant(scalar_t="double", dtypes=[torch.float64] * 3),
}

# out = x + KILN_INT(0), elementwise over contiguous int64 tensors.
ADD_INT = CKernel(r"""
KILN_KERNEL(add_int) {
  for (int64_t i = begin; i < end; ++i)
    KILN_DATA(1, int64_t)[i] = KILN_DATA(0, const int64_t)[i] + KILN_INT(0);
}
""", name="test::add_int", dtypes=[torch.int64, torch.int64])


def axpy(x, y, alpha):
    out = torch.empty(torch.broadcast_shapes(x.shape, y.shape), dtype=x.dtype, device="kiln")
    AXPY_KERNELS[x.dtype](inputs=[x, y], outputs=[out], scalars=[alpha])
    return out


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("case", ["contiguous", "transposed", "broadcast_row", "broadcast_column",
                                  "sliced", "zero_rows", "large"])
def test_a_c_kernel_matches_the_cpu_over_strides_and_broadcasting(dtype, case):
    generator = torch.Generator().manual_seed(0)
    make = lambda *shape: torch.randn(*shape, generator=generator, dtype=dtype)  # noqa: E731
    x, y = {
        "contiguous": (make(5, 7), make(5, 7)),
        "transposed": (make(7, 5).t(), make(5, 7)),
        "broadcast_row": (make(5, 7), make(7)),
        "broadcast_column": (make(5, 7), make(5, 1)),
        "sliced": (make(10, 14)[::2, 1::2], make(5, 7)),
        "zero_rows": (make(0, 7), make(0, 7)),
        "large": (make(700, 300), make(300)),  # split over threads
    }[case]
    result = axpy(x.to("kiln"), y.to("kiln"), 2.5)
    assert torch.equal(result.cpu(), x * 2.5 + y)


def test_integer_scalars_reach_the_kernel():
    x = torch.arange(-5, 1000, dtype=torch.int64)
    out = torch.empty_like(x, device="kiln")
    ADD_INT(inputs=[x.to("kiln")], outputs=[out], scalars=[2 ** 40], positions="elements")
    assert torch.equal(out.cpu(), x + 2 ** 40)


def test_launches_are_counted_under_the_custom_path():
    torch_kiln.clear_op_tracking()
    x = torch.ones(3, 4, device="kiln")
    axpy(x, x, 1.0)
    axpy(x, x, 1.0)
    assert torch_kiln.get_executed_ops()["test::axpy_2d"] == {"custom": 2}


def test_a_compile_error_names_the_kernel_and_the_line_it_was_written_on():
    first_line = sys._getframe().f_lineno + 2
    kernel = CKernel(r"""
KILN_KERNEL(broken) {
  float* out = KILN_DATA(0, float);
  out[begin] = not_declared_anywhere;
}
""", name="test::broken")
    out = torch.empty(4, device="kiln")
    with pytest.raises(KernelCompileError) as raised:
        kernel(outputs=[out], positions="elements")
    message = str(raised.value)
    assert "custom kernel 'test::broken'" in message
    assert f"{__file__}:{first_line + 2}:" in message and "not_declared_anywhere" in message
    # A fixed source then compiles: nothing of the failure was kept.
    fixed = CKernel(kernel.source.replace("not_declared_anywhere", "1.0f"), name="test::broken")
    fixed(outputs=[out], positions="elements")
    assert out.cpu()[0] == 1.0


def test_a_kernel_in_a_c_file_names_that_file(tmp_path):
    path = tmp_path / "kernel.c"
    path.write_text("KILN_KERNEL(from_file) {\n  int x = ;\n}\n")
    kernel = CKernel.from_file(str(path))
    with pytest.raises(KernelCompileError, match=rf"{path}:2:"):
        kernel.compile()


def test_a_source_defines_exactly_one_kernel():
    with pytest.raises(ValueError, match="exactly one function with KILN_KERNEL"):
        CKernel("static int helper(void) { return 0; }")
    with pytest.raises(ValueError, match=r"found 2: \['a', 'b'\]"):
        CKernel("KILN_KERNEL(a) {}\nKILN_KERNEL(b) {}")


def test_bad_launches_raise_before_anything_runs_and_name_the_kernel_and_the_launch():
    x = torch.randn(5, 7, device="kiln")
    before = x.cpu()
    launch_line = sys._getframe().f_lineno + 2
    with pytest.raises(RuntimeError, match="test::axpy_2d.*output 0 has shape \\[5, 8\\].*launch shape") as raised:
        AXPY_KERNELS[torch.float32](inputs=[x, x], outputs=[torch.empty(5, 8, device="kiln")], shape=[5, 7])
    assert f"launched at {__file__}:{launch_line}" in str(raised.value)
    with pytest.raises(RuntimeError, match="input 1 has shape \\[3\\], which does not broadcast"):
        AXPY_KERNELS[torch.float32](inputs=[x, torch.ones(3, device="kiln")], outputs=[torch.empty_like(x)])
    with pytest.raises(RuntimeError, match="input 0 is on cpu, but custom kernels run on the kiln device"):
        AXPY_KERNELS[torch.float32](inputs=[x.cpu(), x], outputs=[torch.empty_like(x)])
    with pytest.raises(TypeError, match="input 1 is torch.float64, but the kernel reads torch.float32"):
        AXPY_KERNELS[torch.float32](inputs=[x, x.double()], outputs=[torch.empty_like(x)])
    with pytest.raises(ValueError, match="takes 3 tensors"):
        AXPY_KERNELS[torch.float32](inputs=[x], outputs=[torch.empty_like(x)])
    with pytest.raises(RuntimeError, match="at most 16"):
        AXPY.variant(scalar_t="float")(inputs=[x] * 16, outputs=[torch.empty_like(x)])
    with pytest.raises(ValueError, match="positions must be"):
        AXPY_KERNELS[torch.float32](inputs=[x, x], outputs=[torch.empty_like(x)], positions="columns")
    assert torch.equal(x.cpu(), before)


def test_a_source_compiles_once_and_later_processes_load_it_from_the_disk_cache(tmp_path):
    script = textwrap.dedent("""
        import torch, torch_kiln
        from torch_kiln.kernels import CKernel
        kernel = CKernel("KILN_KERNEL(twice) { for (int64_t i = begin; i < end; ++i) "
                         "KILN_DATA(1, float)[i] = 2 * KILN_DATA(0, const float)[i]; }")
        again = CKernel(kernel.source)
        x = torch.arange(6.0, device="kiln")
        out = torch.empty_like(x)
        torch_kiln.reset_compiler_stats()
        kernel(inputs=[x], outputs=[out], positions="elements")
        again(inputs=[x], outputs=[out], positions="elements")
        stats = torch_kiln.compiler_stats()
        print(stats["kernels_compiled"], stats["disk_hits"], out.cpu().tolist())
    """)
    environment = {**os.environ, "KILN_CACHE_DIR": str(tmp_path)}

    def run():
        done = subprocess.run([sys.executable, "-c", script], env=environment, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stdout.split(maxsplit=2)

    assert run() == ["1", "0", "[0.0, 2.0, 4.0, 6.0, 8.0, 10.0]\n"]
    assert run() == ["0", "1", "[0.0, 2.0, 4.0, 6.0, 8.0, 10.0]\n"]


# The fused RMSNorm of examples/custom_rms_norm.py.

def rms_norm_inputs(shape, dtype, layout="contiguous"):
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(*shape, generator=generator, dtype=dtype)
    if layout == "transposed":  # the last dim strided: the op makes rows contiguous itself
        x = torch.randn(*shape[:-2], shape[-1], shape[-2], generator=generator, dtype=dtype).transpose(-1, -2)
    weight = torch.randn(shape[-1], generator=generator, dtype=dtype)
    return x, weight


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape,layout", [((4, 64), "contiguous"), ((2, 3, 100), "contiguous"),
                                          ((3, 37, 21), "transposed"), ((0, 16), "contiguous"),
                                          ((1, 1), "contiguous"), ((512, 1000), "contiguous")])
def test_the_custom_rms_norm_matches_the_composite_on_the_cpu(dtype, shape, layout):
    x_cpu, weight_cpu = rms_norm_inputs(shape, dtype, layout)
    x_cpu.requires_grad_()
    weight_cpu.requires_grad_()
    grad = torch.randn(shape, generator=torch.Generator().manual_seed(2), dtype=dtype)
    expected = custom_rms_norm.rms_norm_composite(x_cpu, weight_cpu)
    expected.backward(grad)
    x = x_cpu.detach().to("kiln").requires_grad_()
    weight = weight_cpu.detach().to("kiln").requires_grad_()
    result = custom_rms_norm.rms_norm(x, weight)
    result.backward(grad.to("kiln"))
    tolerance = {"rtol": 1e-5, "atol": 1e-5} if dtype == torch.float32 else {"rtol": 1e-12, "atol": 1e-12}
    torch.testing.assert_close(result.cpu(), expected.detach(), **tolerance)
    torch.testing.assert_close(x.grad.cpu(), x_cpu.grad, **tolerance)
    weight_tolerance = tolerance if dtype == torch.float64 else {"rtol": 1e-4, "atol": 1e-4}
    torch.testing.assert_close(weight.grad.cpu(), weight_cpu.grad, **weight_tolerance)


def test_the_custom_rms_norm_refuses_what_its_kernels_do_not_take():
    x = torch.randn(4, 8, device="kiln", dtype=torch.bfloat16)
    with pytest.raises(RuntimeError, match="takes float32 and float64, not torch.bfloat16"):
        custom_rms_norm.rms_norm(x, torch.ones(8, device="kiln", dtype=torch.bfloat16))
    with pytest.raises(RuntimeError, match="weight of shape \\[7\\] does not match"):
        custom_rms_norm.rms_norm(torch.randn(4, 8, device="kiln"), torch.ones(7, device="kiln"))


def test_opcheck_passes_on_kiln_and_on_the_cpu():
    x, weight = rms_norm_inputs((4, 3, 40), torch.float32)
    rstd = torch.rand(4, 3, 1) + 0.5
    grad = torch.randn(4, 3, 40)
    # PyTorch 2.14's autograd-registration check refuses devices other than
    # CPU, CUDA and XPU; the registration it checks is the same for every
    # device, so it runs on the CPU kernels below.
    on_kiln = ("test_schema", "test_faketensor", "test_aot_dispatch_dynamic")
    kiln = lambda tensor: tensor.to("kiln")  # noqa: E731
    torch.library.opcheck(custom_rms_norm.rms_norm_forward,
                          (kiln(x).requires_grad_(), kiln(weight).requires_grad_(), 1e-6), test_utils=on_kiln)
    torch.library.opcheck(custom_rms_norm.rms_norm_backward, (kiln(grad), kiln(x), kiln(weight), kiln(rstd)),
                          test_utils=on_kiln)
    torch.library.opcheck(custom_rms_norm.rms_norm_forward,
                          (x.clone().requires_grad_(), weight.clone().requires_grad_(), 1e-6))


class RMSNormBlock(torch.nn.Module):
    def __init__(self, width=48, norm=custom_rms_norm.rms_norm):
        super().__init__()
        self.linear = torch.nn.Linear(width, width)
        self.weight = torch.nn.Parameter(torch.linspace(0.5, 1.5, width))
        self.norm = norm

    def forward(self, x):
        return self.norm(torch.relu(self.linear(x)), self.weight)


def test_the_custom_op_runs_inside_compiled_graphs_forward_and_backward():
    torch.manual_seed(0)
    reference = RMSNormBlock(norm=custom_rms_norm.rms_norm_composite)
    model = RMSNormBlock().to("kiln")
    model.load_state_dict(reference.state_dict())
    x = torch.randn(6, 5, 48)
    compiled = torch.compile(model, backend="kiln", fullgraph=True)
    torch_kiln.clear_op_tracking()
    loss = compiled(x.to("kiln")).square().mean()
    loss.backward()
    expected = reference(x).square().mean()
    expected.backward()
    torch.testing.assert_close(loss.cpu(), expected.detach(), rtol=1e-5, atol=1e-6)
    for name, parameter in model.named_parameters():
        torch.testing.assert_close(parameter.grad.cpu(), dict(reference.named_parameters())[name].grad,
                                   rtol=1e-4, atol=1e-5)
    executed = torch_kiln.get_executed_ops()
    assert torch_kiln.get_fallback_ops() == {}
    for kernel in ("rms_norm_forward", "rms_norm_backward_input", "rms_norm_backward_weight"):
        assert executed[f"kiln_examples::{kernel}"] == {"custom": 1}


def test_kiln_eval_counts_custom_kernels_as_their_own_path():
    from torch_kiln.eval import evaluate

    torch.manual_seed(0)
    report = evaluate(RMSNormBlock(), lambda: (torch.randn(4, 48), torch.randn(4, 48)),
                      loss=torch.nn.functional.mse_loss, steps=1, warmup=0,
                      modes=("cpu_eager", "kiln_eager"))
    ops = report["ops"]
    custom = {entry["op"]: entry["count"] for entry in ops["custom"]}
    assert set(custom) == {"kiln_examples::rms_norm_forward", "kiln_examples::rms_norm_backward_input",
                           "kiln_examples::rms_norm_backward_weight"}
    assert ops["by_path"]["custom"] == sum(custom.values()) > 0 and ops["fallback"] == []


def test_a_launch_sees_the_results_of_pointwise_ops_adaptive_eager_held():
    # Large ops on a busy stream are held for fusion (docs/design/adaptive_eager.md);
    # a custom launch reading their result must come after them.
    torch_kiln.set_adaptive_eager(True)
    x = torch.randn(1024, 1024)
    on_kiln = x.to("kiln")
    busy = on_kiln @ on_kiln  # queued work: the next pointwise ops may be held
    held = (on_kiln * 3 + 1).abs()
    out = torch.empty_like(held)
    AXPY_KERNELS[torch.float32](inputs=[held, on_kiln], outputs=[out], scalars=[0.5])
    torch.testing.assert_close(out.cpu(), (x * 3 + 1).abs() * 0.5 + x, rtol=0, atol=0)
    del busy
