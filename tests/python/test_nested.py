"""Strided nested tensors (torch.nested.nested_tensor, the default layout) on
kiln against the CPU's nested results: creation and moves, arithmetic,
unary ops, matmul/bmm, softmax, layer_norm, linear, attention, padding,
unbind and autograd, with no op falling back and the buffer staying on kiln.
"""
import pathlib

import pytest
import torch
import torch.nn.functional as F

import torch_kiln

KILN = "kiln"

pytestmark = pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors is in prototype stage")


def components(*shapes, dtype=torch.float32):
    return [torch.randn(*shape).to(dtype) for shape in shapes]


def nested(parts, device, requires_grad=False):
    return torch.nested.nested_tensor([part.clone() for part in parts], device=device,
                                      requires_grad=requires_grad)


def unbound(result):
    """A result as plain CPU tensors: a nested tensor's components (unbound on
    its own device), a tuple's elements."""
    if isinstance(result, (tuple, list)):
        return [item for element in result for item in unbound(element)]
    if result.is_nested:
        return [component.cpu() for component in result.unbind()]
    return [result.cpu()]


def assert_same(kiln, cpu, tolerance=None):
    kiln_parts, cpu_parts = unbound(kiln), unbound(cpu)
    assert len(kiln_parts) == len(cpu_parts)
    for kiln_part, cpu_part in zip(kiln_parts, cpu_parts):
        assert kiln_part.dtype == cpu_part.dtype and kiln_part.shape == cpu_part.shape
        if tolerance is None:
            torch.testing.assert_close(kiln_part, cpu_part)
        else:
            torch.testing.assert_close(kiln_part, cpu_part, **tolerance)


def run_both(function, *nested_inputs, dense=()):
    """function(nested inputs..., dense inputs...) on the CPU and on kiln;
    returns both results, after checking kiln kept results on kiln and ran
    without a fallback."""
    cpu = function(*[nested(parts, "cpu") for parts in nested_inputs], *dense)
    kiln_inputs = [nested(parts, KILN) for parts in nested_inputs]
    kiln_dense = [tensor.to(KILN) for tensor in dense]
    torch_kiln.clear_op_tracking()
    kiln = function(*kiln_inputs, *kiln_dense)
    assert not torch_kiln.get_fallback_ops(), torch_kiln.get_fallback_ops()
    for result in (kiln if isinstance(kiln, (tuple, list)) else [kiln]):
        assert result.device.type == KILN
    return kiln, cpu


def test_create_move_and_back():
    parts = components((2, 3), (4, 3), (1, 3))
    on_kiln = nested(parts, KILN)
    assert on_kiln.is_nested and on_kiln.device.type == KILN and on_kiln.layout == torch.strided
    moved = torch.nested.nested_tensor(parts).to(KILN)
    assert moved.is_nested and moved.device.type == KILN
    for tensor in (on_kiln, moved):
        back = tensor.to("cpu")
        assert back.is_nested and back.device.type == "cpu"
        for component, part in zip(back.unbind(), parts):
            assert torch.equal(component, part)
    as_nested = torch.nested.as_nested_tensor([part.to(KILN) for part in parts])
    assert as_nested.device.type == KILN
    assert_same(as_nested, torch.nested.as_nested_tensor(parts))
    assert_same(on_kiln.to(torch.float64), nested(parts, "cpu").to(torch.float64))


def test_nested_view_from_buffer_aliases_kiln_memory():
    buffer = torch.arange(10.0, device=KILN)
    sizes, strides, offsets = torch.tensor([[2, 2], [3, 2]]), torch.tensor([[2, 1], [2, 1]]), torch.tensor([0, 4])
    view = torch._nested_view_from_buffer(buffer, sizes, strides, offsets)
    assert view.is_nested and view.device.type == KILN
    assert_same(view, torch._nested_view_from_buffer(buffer.cpu(), sizes, strides, offsets))
    buffer.mul_(2)
    assert torch.equal(view.unbind()[1].cpu(), torch.arange(4.0, 10.0).view(3, 2) * 2)


BINARY = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b, "div": lambda a, b: a / b,
    "add_scalar": lambda a, b: a + 2.5, "sub_scalar": lambda a, b: a - 1, "mul_scalar": lambda a, b: a * 3,
    "div_scalar": lambda a, b: a / 4, "add_alpha": lambda a, b: torch.add(a, b, alpha=2),
    "add_inplace": lambda a, b: a.add_(b), "mul_inplace_scalar": lambda a, b: a.mul_(0.5),
    "greater": lambda a, b: a > 0, "masked_fill": lambda a, b: a.masked_fill(b > 0, 0.0),
}


BINARY_CASES = [(name, torch.float32) for name in sorted(BINARY)] + [
    (name, dtype) for name in ("add", "div", "mul_scalar") for dtype in (torch.float64, torch.bfloat16)]


@pytest.mark.parametrize("name,dtype", BINARY_CASES)
def test_binary(name, dtype):
    a, b = components((2, 5), (3, 5), dtype=dtype), components((2, 5), (3, 5), dtype=dtype)
    kiln, cpu = run_both(BINARY[name], a, b)
    assert_same(kiln, cpu)


UNARY = {
    "relu": torch.relu, "gelu": F.gelu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"), "tanh": torch.tanh,
    "silu": F.silu, "neg": torch.neg, "abs": torch.abs, "sin": torch.sin, "cos": torch.cos,
    "sqrt": lambda x: x.abs().sqrt(), "relu_inplace": lambda x: x.relu_(), "clone": torch.clone,
    "dropout_eval": lambda x: F.dropout(x, 0.5, training=False), "ones_like": torch.ones_like,
    "zeros_like": torch.zeros_like, "transpose_contiguous": lambda x: x.transpose(1, 2).contiguous(),
    "unsqueeze_squeeze": lambda x: x.unsqueeze(-1).squeeze(-1), "reshape": lambda x: x.reshape(2, -1, 4),
    "sum_keepdim": lambda x: x.sum(-1, keepdim=True), "select": lambda x: x[1],
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name):
    kiln, cpu = run_both(UNARY[name], components((3, 4), (5, 4)))
    assert_same(kiln, cpu)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_matmul_and_bmm(dtype):
    left, right = components((2, 3), (4, 3), dtype=dtype), components((3, 5), (3, 2), dtype=dtype)
    tolerance = {"rtol": 1e-5, "atol": 1e-5}
    assert_same(*run_both(torch.matmul, left, right), tolerance)
    assert_same(*run_both(torch.bmm, left, right), tolerance)
    # Four dims (batch, heads, *, head size): the padded path.
    queries, keys = components((2, 3, 4), (2, 5, 4), dtype=dtype), components((2, 4, 3), (2, 4, 5), dtype=dtype)
    assert_same(*run_both(torch.matmul, queries, keys), tolerance)
    # A nested tensor (batch, *, rows, columns) times a dense matrix.
    ragged_batches = components((2, 3, 4), (5, 3, 4), dtype=dtype)
    assert_same(*run_both(torch.matmul, ragged_batches, dense=(torch.randn(4, 6, dtype=dtype),)), tolerance)


def test_softmax_layer_norm_linear():
    parts = components((3, 6), (5, 6))
    for dim in (-1, 1):
        assert_same(*run_both(lambda x: torch.softmax(x, dim), parts))
    weight, bias = torch.randn(6), torch.randn(6)
    assert_same(*run_both(lambda x, w, b: F.layer_norm(x, (6,), w, b, eps=1e-5), parts, dense=(weight, bias)),
                {"rtol": 1e-5, "atol": 1e-5})
    matrix, offset = torch.randn(4, 6), torch.randn(4)
    assert_same(*run_both(F.linear, parts, dense=(matrix, offset)), {"rtol": 1e-5, "atol": 1e-5})
    assert_same(*run_both(lambda x, m: F.linear(x, m), parts, dense=(matrix,)), {"rtol": 1e-5, "atol": 1e-5})


def test_scaled_dot_product_attention():
    query, key, value = (components((2, 3, 4), (2, 5, 4)) for _ in range(3))
    kiln, cpu = run_both(F.scaled_dot_product_attention, query, key, value)
    assert_same(kiln, cpu, {"rtol": 1e-5, "atol": 1e-5})


def test_to_padded_unbind_and_back():
    parts = components((2, 3), (4, 3), (1, 3))
    assert_same(*run_both(lambda x: torch.nested.to_padded_tensor(x, 0.0), parts))
    assert_same(*run_both(lambda x: torch.nested.to_padded_tensor(x, -1.0, (3, 6, 4)), parts))
    kiln, cpu = run_both(lambda x: x.unbind(), parts)
    assert_same(kiln, cpu)
    padded = torch.randn(3, 4, 3)
    sizes = torch.tensor([[2, 3], [4, 3], [1, 3]])
    kiln = torch._nested_from_padded(padded.to(KILN), sizes)
    assert_same(kiln, torch._nested_from_padded(padded, sizes))
    # The buffer holds exactly the elements (a longer one would be read by
    # the next op as another element).
    assert kiln.values().numel() == 2 * 3 + 4 * 3 + 3
    assert_same(kiln * 2, torch._nested_from_padded(padded, sizes) * 2)
    mask = torch.tensor([[True, True, False, False], [True, True, True, True], [True, False, False, False]])
    assert_same(torch._nested_tensor_from_mask(padded.to(KILN), mask.to(KILN)),
                torch._nested_tensor_from_mask(padded, mask))


@pytest.mark.parametrize("shapes", [((3, 4), (5, 4)), ((3, 4), (2, 7), (1, 0)), ((2, 3, 5), (4, 3, 2))])
def test_sum_over_last_dim_and_backward(shapes):
    """ATen's CPU kernel loops over raw pointers; kiln's is kiln ops in stream
    order (checked behind queued work) with the same result and gradient."""
    parts = components(*shapes)
    big = torch.randn(768, 768, device=KILN)
    cpu_input = nested(parts, "cpu", requires_grad=True)
    cpu = (cpu_input * 2).sum(-1, keepdim=True)
    torch.nested.to_padded_tensor(cpu, 0.0).pow(2).sum().backward()
    kiln_input = nested(parts, KILN, requires_grad=True)
    torch.kiln.synchronize()
    torch_kiln.clear_op_tracking()
    torch.mm(big, big)
    kiln = (kiln_input * 2).sum(-1, keepdim=True)
    torch.nested.to_padded_tensor(kiln, 0.0).pow(2).sum().backward()
    assert not torch_kiln.get_fallback_ops()
    assert_same(kiln, cpu, {"rtol": 1e-5, "atol": 1e-5})
    assert_same(kiln_input.grad, cpu_input.grad, {"rtol": 1e-5, "atol": 1e-5})
    with pytest.raises(RuntimeError, match="keepdim=True"):
        kiln_input.sum(-1)


def test_chunk_and_narrow_views():
    parts = components((2, 6), (4, 6))
    for kiln_view, cpu_view in zip(*run_both(lambda x: x.chunk(3, -1), parts)):
        assert_same(kiln_view, cpu_view)
    assert_same(*run_both(lambda x: x.narrow(0, 1, 1), parts))


def test_autograd_matches_cpu():
    parts = components((3, 6), (5, 6))
    dense = [torch.randn(6), torch.randn(6), torch.randn(4, 6), torch.randn(4)]
    other = components((4, 2), (4, 2))

    def forward(device):
        x = nested(parts, device, requires_grad=True)
        weights = [tensor.to(device, copy=True).requires_grad_() for tensor in dense]
        y = F.layer_norm(x, (6,), weights[0], weights[1])
        y = F.gelu(F.linear(y, weights[2], weights[3])) * 2 + 1
        y = torch.softmax(y, -1)
        y = torch.matmul(y, nested(other, device))
        padded = torch.nested.to_padded_tensor(y, 0.0)
        (padded * torch.arange(padded.numel(), device=device).view(padded.shape)).sum().backward()
        return [x.grad] + [weight.grad for weight in weights]

    cpu = forward("cpu")
    torch_kiln.clear_op_tracking()
    kiln = forward(KILN)
    assert not torch_kiln.get_fallback_ops(), torch_kiln.get_fallback_ops()
    assert kiln[0].is_nested and kiln[0].device.type == KILN
    for kiln_grad, cpu_grad in zip(kiln, cpu):
        assert_same(kiln_grad, cpu_grad, {"rtol": 1e-4, "atol": 1e-4})


def test_elementwise_ops_leave_no_copy():
    """Nested arithmetic is buffer arithmetic on kiln: nothing is copied (no
    _copy_from, which every host-device copy goes through) and nothing falls
    back."""
    a, b = nested(components((3, 4), (5, 4)), KILN), nested(components((3, 4), (5, 4)), KILN)
    weight = torch.randn(4, device=KILN)
    torch.kiln.synchronize()
    torch_kiln.clear_op_tracking()
    result = F.layer_norm(torch.relu(a * b + 1) / 2, (4,), weight, weight)
    torch.bmm(result, b.transpose(1, 2))
    executed = torch_kiln.get_executed_ops()
    assert "aten::_copy_from" not in executed and not torch_kiln.get_fallback_ops(), executed


def test_layer_norm_waits_for_queued_work():
    """Kiln's nested layer norm (ATen's calls a LayerNormKernel stub on raw
    pointers) reads its input in stream order: a buffer still being computed
    behind long queued products is read once it is done."""
    big = torch.randn(1024, 1024, device=KILN)
    parts = components((64, 32), (80, 32))
    weight, bias = torch.ones(32), torch.zeros(32)
    expected = F.layer_norm(nested(parts, "cpu") * 3 + 1, (32,), weight, bias)
    source = nested(parts, KILN)
    torch.kiln.synchronize()
    for _ in range(3):
        torch.mm(big, big)  # keeps the stream busy
    result = F.layer_norm(source * 3 + 1, (32,), weight.to(KILN), bias.to(KILN))
    assert_same(result, expected, {"rtol": 1e-5, "atol": 1e-5})


def test_unsupported_op_error_is_clear():
    cpu, kiln = nested(components((2, 3)), "cpu"), nested(components((2, 3)), KILN)
    with pytest.raises(NotImplementedError):
        torch.exp(cpu)
    with pytest.raises(NotImplementedError, match="NestedTensorkiln.*unbind.*layout=torch.jagged"):
        torch.exp(kiln)


def test_every_composite_nested_op_is_registered():
    """Ops with a CompositeImplicitAutograd kernel and their own nested
    kernels need a NestedTensorPrivateUse1 entry (the composite would win over
    kiln's nested fallback): the list in native/nested_tensors.cc against
    PyTorch's native_functions.yaml."""
    import torchgen

    path = pathlib.Path(torchgen.__file__).parent / "packaged" / "ATen" / "native" / "native_functions.yaml"
    # The file's shape: "- func: name(...)", then "  dispatch:" and one
    # "    KeyA, KeyB: kernel" line per entry (read without a YAML parser).
    dispatch_keys, name, in_dispatch = {}, None, False
    for line in path.read_text().splitlines():
        if line.startswith("- func:"):
            name, in_dispatch = line[len("- func:"):].strip().split("(")[0], False
            dispatch_keys[name] = set()
        elif line.strip() == "dispatch:":
            in_dispatch = True
        elif in_dispatch and line.startswith("    ") and ":" in line:
            dispatch_keys[name].update(key.strip() for key in line.split(":")[0].split(","))
        elif not line.startswith("    "):
            in_dispatch = False
    assert len(dispatch_keys) > 2000 and "NestedTensorCPU" in dispatch_keys["matmul"]
    missing = [name for name, keys in dispatch_keys.items()
               if {"CompositeImplicitAutograd", "NestedTensorCPU"} <= keys
               and not torch._C._dispatch_has_kernel_for_dispatch_key("aten::" + name, "NestedTensorPrivateUse1")]
    assert not missing, missing


def test_jagged_layout_still_works():
    parts = components((2, 3), (4, 3))
    jagged = torch.nested.nested_tensor(parts, layout=torch.jagged, device=KILN)
    result = jagged.relu() + 1
    assert result.device.type == KILN and result.layout == torch.jagged
    for component, part in zip(result.unbind(), parts):
        assert torch.equal(component.cpu(), part.relu() + 1)
