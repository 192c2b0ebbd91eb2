"""Small mm and bmm in compiled inference graphs run as generated reductions
(torch_kiln/compile/passes/small_products.py); other products, and every product of
training graphs, stay MKL calls. Results are compared with the CPU."""
import pytest
import torch

import torch_kiln
from torch_kiln.compile.passes.small_products import SMALL_PRODUCT_DEPTH, SMALL_PRODUCT_MULTIPLY_ADDS


def products_called():
    return sum(sum(paths.values()) for name, paths in torch_kiln.get_executed_ops().items()
               if name.split(".")[0] in ("aten::mm", "aten::bmm"))


def run_compiled(function, *inputs, grad=False):
    torch._dynamo.reset()
    compiled = torch.compile(function, backend="kiln")
    kiln_inputs = [x.to("kiln").requires_grad_(grad) for x in inputs]
    torch_kiln.clear_op_tracking()
    with torch.set_grad_enabled(grad):
        result = compiled(*kiln_inputs)
    return result, kiln_inputs


def attention_scores(query, key, value):
    scores = torch.softmax(torch.bmm(query, key) * 0.25, dim=-1)
    return torch.bmm(scores, value) + 1


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_small_batched_products_of_inference_run_generated(dtype, fresh_compile_state):
    generator = torch.Generator().manual_seed(0)
    query, key, value = (torch.randn(shape, generator=generator, dtype=dtype)
                         for shape in [(6, 16, 8), (6, 8, 16), (6, 16, 8)])
    result, _ = run_compiled(attention_scores, query, key, value)
    torch.testing.assert_close(result.cpu(), attention_scores(query, key, value))
    assert products_called() == 0
    assert torch_kiln.compile_stats()["kernels"] >= 2


@pytest.mark.parametrize("case", ["transposed second operand", "columns not whole vectors", "too deep",
                                  "too large", "half precision"])
def test_other_products_stay_library_calls(case, fresh_compile_state):
    generator = torch.Generator().manual_seed(1)
    depth = SMALL_PRODUCT_DEPTH + 8 if case == "too deep" else 16
    rows = SMALL_PRODUCT_MULTIPLY_ADDS // (16 * 16) + 8 if case == "too large" else 8
    columns = 12 if case == "columns not whole vectors" else 16
    dtype = torch.bfloat16 if case == "half precision" else torch.float32
    first = torch.randn(rows, depth, generator=generator, dtype=dtype)
    second = torch.randn(columns, depth, generator=generator, dtype=dtype)
    if case == "transposed second operand":
        function = lambda a, b: torch.mm(a, b.t()) * 2  # a linear layer's weight
    else:
        second = second.t().contiguous()
        function = lambda a, b: torch.mm(a, b) * 2
    result, _ = run_compiled(function, first, second)
    tolerance = {"rtol": 2e-2, "atol": 2e-2} if dtype == torch.bfloat16 else {}
    torch.testing.assert_close(result.cpu(), function(first, second), **tolerance)
    assert products_called() == 1


def test_products_of_training_graphs_stay_library_calls(fresh_compile_state):
    generator = torch.Generator().manual_seed(2)
    query, key, value = (torch.randn(shape, generator=generator)
                         for shape in [(4, 16, 8), (4, 8, 16), (4, 16, 8)])
    result, kiln_inputs = run_compiled(attention_scores, query, key, value, grad=True)
    assert products_called() == 2
    result.sum().backward()
    cpu_inputs = [x.clone().requires_grad_() for x in (query, key, value)]
    attention_scores(*cpu_inputs).sum().backward()
    for kiln_input, cpu_input in zip(kiln_inputs, cpu_inputs):
        torch.testing.assert_close(kiln_input.grad.cpu(), cpu_input.grad)


def test_a_thread_split_mid_row_still_adds_every_column(fresh_compile_state):
    # 64 products of 64x8 by 8x64: large enough to split over threads, where a
    # thread's range may start or end inside a block of outputs.
    generator = torch.Generator().manual_seed(3)
    first, second = torch.randn(64, 64, 8, generator=generator), torch.randn(64, 8, 64, generator=generator)
    function = lambda a, b: torch.relu(torch.bmm(a, b))
    result, _ = run_compiled(function, first, second)
    torch.testing.assert_close(result.cpu(), function(first, second))
    assert products_called() == 0
