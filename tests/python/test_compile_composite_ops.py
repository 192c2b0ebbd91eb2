"""Ops that AOTAutograd's functionalized graphs contain and eager code rarely
calls: lift_fresh_copy (torch.tensor([]) inside a model), scatter.value (the
backward of a loss with ignored labels), slice_scatter, select_scatter and
as_strided_scatter (in-place writes into views), bernoulli.p (dropout-like
noise made with bernoulli_). Their kernels are CompositeExplicitAutograd-
NonFunctional: the graph lowering must take them as extern calls when the
ops they are written in run on kiln, and refuse the structured ones whose
out= kernel Kiln lacks (graph_lowering.has_kiln_kernel)."""
import pytest
import torch
from torch.nn import functional

import torch_kiln
from torch_kiln.compile.lowering.graph_lowering import UnsupportedOperatorError, has_kiln_kernel

aten = torch.ops.aten

pytestmark = pytest.mark.usefixtures("fresh_compile_state")


@pytest.mark.parametrize("op", [aten.lift_fresh_copy.default, aten.scatter.value, aten.scatter_.value,
                                aten.slice_scatter.default, aten.select_scatter.default,
                                aten.as_strided_scatter.default, aten.diagonal_scatter.default,
                                aten.bernoulli.p, aten.index_add.default, aten.narrow_copy.default])
def test_composites_of_kiln_ops_are_lowered(op):
    assert has_kiln_kernel(op)


@pytest.mark.parametrize("op", [aten.gcd.default, aten.gcd_.default])
def test_structured_ops_without_a_kiln_out_kernel_are_not(op):
    # Their composite calls an out= kernel that only the CPU has: on kiln it
    # would run through the CPU fallback.
    assert not has_kiln_kernel(op)


def test_a_structured_op_without_a_kiln_kernel_names_itself_in_the_error():
    compiled = torch.compile(lambda a, b: torch.gcd(a, b) + 1, backend="kiln")
    a, b = torch.tensor([12, 18]).to("kiln"), torch.tensor([8, 27]).to("kiln")
    with pytest.raises(Exception, match="aten.gcd.default") as raised:
        compiled(a, b)
    assert isinstance(raised.value, UnsupportedOperatorError) or "UnsupportedOperatorError" in str(raised.value)


def run_both(function, *inputs, grad=False):
    """function on CPU copies of `inputs` and compiled on kiln copies: the
    results, and with `grad` the inputs' gradients of the results' sum."""
    results = {}
    torch_kiln.clear_op_tracking()
    for device, runner in (("cpu", function), ("kiln", torch.compile(function, backend="kiln"))):
        copies = [x.detach().to(device).requires_grad_(grad and x.is_floating_point()) for x in inputs]
        result = runner(*copies)
        gradients = []
        if grad:
            result.sum().backward()
            gradients = [x.grad.cpu() for x in copies if x.requires_grad]
        results[device] = [result.detach().cpu()] + gradients
    assert not torch_kiln.get_fallback_ops(), torch_kiln.get_fallback_ops()
    assert torch_kiln.compile_stats()["eager_nodes"] == 0
    return results["cpu"], results["kiln"]


def assert_all_close(expected, actual):
    assert len(expected) == len(actual)
    for want, got in zip(expected, actual):
        torch.testing.assert_close(got, want)


def test_tensor_made_inside_the_graph_lift_fresh_copy():
    # transformers' KV cache starts from torch.tensor([]); here it is concatenated onto.
    def function(x):
        empty = torch.tensor([], dtype=x.dtype, device=x.device)
        start = torch.tensor([1.5, -2.0], dtype=x.dtype, device=x.device)
        return torch.cat([empty, x.flatten(), start]) * 2

    assert_all_close(*run_both(function, torch.randn(3, 4)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_loss_with_ignored_labels_backward_is_scatter_value(dtype):
    labels = torch.tensor([3, -100, 0, 7, -100, 2])

    def function(logits, target):
        return functional.cross_entropy(logits, target, ignore_index=-100)

    logits = torch.randn(6, 9, dtype=dtype)
    expected, actual = run_both(function, logits, labels, grad=True)
    assert_all_close(expected, actual)


def test_scatter_value_forward():
    index = torch.tensor([[0, 2], [1, 0]])
    assert_all_close(*run_both(lambda x, i: torch.scatter(x, 1, i, -3.25), torch.randn(2, 5), index))


def test_in_place_write_into_a_slice_is_slice_scatter():
    # BART's shift_tokens_right: shifted[:, 1:] = input_ids[:, :-1].clone()
    def function(ids):
        shifted = ids.new_zeros(ids.shape)
        shifted[:, 1:] = ids[:, :-1].clone()
        shifted[:, 0] = 2
        return shifted

    assert_all_close(*run_both(function, torch.randint(0, 50, (3, 8))))


def test_slice_and_select_scatter_with_gradients():
    def function(x, source):
        y = x * 1
        y[1:, ::2] = source * 3
        y[0] = y[0] * 2
        return y

    assert_all_close(*run_both(function, torch.randn(4, 6), torch.randn(3, 3), grad=True))


def test_as_strided_scatter():
    def function(x, source):
        return torch.as_strided_scatter(x, source, (2, 3), (1, 4), 1)

    assert_all_close(*run_both(function, torch.randn(12), torch.randn(2, 3), grad=True))
    base = torch.randn(3, 4).t()  # non-contiguous input
    assert_all_close(*run_both(lambda x, s: torch.as_strided_scatter(x, s, (2, 2), (2, 1)), base,
                               torch.randn(2, 2)))


def test_bernoulli_p_in_a_compiled_training_graph():
    # torchvision's stochastic depth: noise = x.new_empty(shape).bernoulli_(p), scaled by 1/p.
    def function(x):
        noise = torch.empty(x.shape[0], 1, device=x.device, dtype=x.dtype).bernoulli_(0.75)
        return x * noise / 0.75

    x = torch.randn(4096, 3, device="kiln", requires_grad=True)
    torch_kiln.clear_op_tracking()
    result = torch.compile(function, backend="kiln")(x)
    result.sum().backward()
    assert not torch_kiln.get_fallback_ops()
    rows = (result.detach() != 0).any(dim=1).cpu()
    kept = rows.float().mean().item()
    assert 0.7 < kept < 0.8, kept  # 4096 draws of p = 0.75
    scale = torch.where(rows, torch.tensor(1 / 0.75), torch.tensor(0.0))
    torch.testing.assert_close(result.detach().cpu(), x.detach().cpu() * scale[:, None])
    torch.testing.assert_close(x.grad.cpu(), scale[:, None].expand(4096, 3).contiguous())


def test_narrow_copy_is_a_narrow_and_a_clone():
    x = torch.arange(24.0).reshape(4, 6)
    compiled = torch.compile(lambda t: torch.narrow_copy(t, 1, 2, 3) * 2, backend="kiln", dynamic=False)
    torch_kiln.clear_op_tracking()
    torch.testing.assert_close(compiled(x.to("kiln")).cpu(), torch.narrow_copy(x, 1, 2, 3) * 2)
    assert not torch_kiln.get_fallback_ops()


def test_linalg_error_checks_run_in_the_graph_and_raise_as_on_the_cpu():
    # linalg.inv's check of its info result is an effectful op: AOTAutograd
    # wraps it in with_effects and threads a token through the graph
    # (compile/passes/effects.py).
    def inverse_twice(a):
        return torch.linalg.inv(a) * 2

    compiled = torch.compile(inverse_twice, backend="kiln", dynamic=False)
    a = torch.randn(4, 4, generator=torch.Generator().manual_seed(0)) + 4 * torch.eye(4)
    torch.testing.assert_close(compiled(a.to("kiln")).cpu(), inverse_twice(a))
    with pytest.raises(torch.linalg.LinAlgError, match="singular"):
        compiled(torch.zeros(4, 4, device="kiln"))
