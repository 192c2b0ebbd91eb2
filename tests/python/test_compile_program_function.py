"""Training graphs called through kiln's C++ autograd function
(compile/runtime/program_function.py): after a graph's first forward and backward
through AOTAutograd's runtime, later calls skip it. Each test runs the
compiled function a few times, so the calls after the first take the C++
path, and compares with eager, or with the same graph kept on AOTAutograd's
runtime."""
import pytest
import torch

import torch_kiln
from torch_kiln.compile.runtime import program_function
from torch_kiln.models import MODELS, Training

pytestmark = pytest.mark.usefixtures("fresh_compile_state")


def on_kiln(*tensors, requires_grad=True):
    return [tensor.to("kiln").requires_grad_(requires_grad) for tensor in tensors]


def gradients_of(function, inputs, backward):
    """Runs function on fresh leaf copies of inputs, calls backward on its
    outputs, returns (outputs on the CPU, input gradients on the CPU)."""
    leaves = [tensor.detach().clone().requires_grad_(tensor.requires_grad) for tensor in inputs]
    outputs = function(*leaves)
    backward(outputs)
    as_tuple = outputs if isinstance(outputs, tuple) else (outputs,)
    return ([output.detach().cpu() for output in as_tuple],
            [None if leaf.grad is None else leaf.grad.cpu() for leaf in leaves])


def check_against_eager(function, inputs, backward, calls=3):
    compiled = torch.compile(function, backend="kiln", dynamic=False)
    expected = gradients_of(function, inputs, backward)
    for _ in range(calls):
        actual = gradients_of(compiled, inputs, backward)
        for got, want in zip(actual[0] + actual[1], expected[0] + expected[1]):
            if want is None:
                assert got is None
            else:
                torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    return compiled


def test_simple_graph_moves_to_the_cpp_function_after_its_first_step():
    x, w = on_kiln(torch.randn(8, 5), torch.randn(5, 3))
    check_against_eager(lambda x, w: torch.tanh(x @ w).sum(), [x, w], lambda out: out.backward())
    stats = torch_kiln.compile_stats()
    assert stats["cpp_runtime_graphs"] == 1 and stats["python_runtime_graphs"] == 0, stats


def test_the_first_call_alone_does_not_settle_the_runtime():
    compiled = torch.compile(lambda x: (x * x).sum(), backend="kiln", dynamic=False)
    (x,) = on_kiln(torch.randn(4))
    compiled(x)  # forward only: the backward program does not exist yet
    compiled(x)
    assert torch_kiln.compile_stats()["cpp_runtime_graphs"] == 0
    compiled(x).backward()
    compiled(x).backward()
    assert torch_kiln.compile_stats()["cpp_runtime_graphs"] == 1


def test_an_output_without_gradient_gets_zeros_and_an_integer_output_none():
    def function(x, w):
        y = x @ w
        return torch.sin(y), torch.cos(y), y.argmax(dim=1)

    def backward(outputs):
        first, _, indices = outputs
        assert not indices.requires_grad and indices.dtype == torch.int64
        first.sum().backward()  # no gradient reaches the second output

    x, w = on_kiln(torch.randn(6, 4), torch.randn(4, 5))
    check_against_eager(function, [x, w], backward)
    assert torch_kiln.compile_stats()["cpp_runtime_graphs"] == 1


def test_gradients_in_other_layouts_give_eager_results():
    # An expanded or transposed gradient reaches the backward program; it is
    # copied to the traced layout first only when the traced one differs, as
    # AOTAutograd does (kiln's programs read any strides, but a traced view of
    # a tangent would not).
    def function(x, w):
        return torch.relu(x @ w) * 2

    transposed = torch.randn(5, 6).to("kiln").t()  # a 6 x 5 gradient, not contiguous
    backwards = [lambda out: out.sum().backward(),                          # an expanded gradient
                 lambda out: out.backward(transposed),
                 lambda out: out.backward(torch.ones(1, 5, device="kiln").expand(6, 5))]
    x, w = on_kiln(torch.randn(6, 4), torch.randn(4, 5))
    for backward in backwards:
        torch._dynamo.reset()
        torch_kiln.reset_compile_stats()
        check_against_eager(function, [x, w], backward)
        assert torch_kiln.compile_stats()["cpp_runtime_graphs"] == 1


def test_inputs_without_gradient_get_none():
    x, = on_kiln(torch.randn(7, 3), requires_grad=False)
    w, = on_kiln(torch.randn(3, 2))
    check_against_eager(lambda x, w: torch.exp(x @ w).mean(), [x, w], lambda out: out.backward())
    assert torch_kiln.compile_stats()["cpp_runtime_graphs"] == 1


def test_retain_graph_runs_backward_twice():
    def backward(out):
        out.backward(retain_graph=True)
        out.backward()

    x, w = on_kiln(torch.randn(4, 4), torch.randn(4, 4))
    check_against_eager(lambda x, w: (torch.sigmoid(x @ w) * x).sum(), [x, w], backward)
    assert torch_kiln.compile_stats()["cpp_runtime_graphs"] == 1


def test_saved_input_changed_in_place_is_refused_at_backward():
    compiled = torch.compile(lambda x, w: (x * w).sum(), backend="kiln", dynamic=False)
    x, w = on_kiln(torch.randn(5), torch.randn(5))
    for _ in range(2):
        compiled(x, w).backward()
    assert torch_kiln.compile_stats()["cpp_runtime_graphs"] == 1
    loss = compiled(x, w)
    with torch.no_grad():
        w.add_(1)  # w is saved for x's gradient
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_second_backward_through_gradients_is_refused():
    compiled = torch.compile(lambda x: torch.sin(x).sum(), backend="kiln", dynamic=False)
    (x,) = on_kiln(torch.randn(6))
    for _ in range(2):
        compiled(x).backward()
    (gradient,) = torch.autograd.grad(compiled(x), x, create_graph=True)
    torch.testing.assert_close(gradient.cpu(), torch.cos(x.detach().cpu()))
    assert gradient.requires_grad
    with pytest.raises(RuntimeError, match="double backward"):
        gradient.sum().backward()


def test_deterministic_algorithms_switched_on_before_backward_are_refused():
    compiled = torch.compile(lambda x: (x * x).sum(), backend="kiln", dynamic=False)
    (x,) = on_kiln(torch.randn(3))
    for _ in range(2):
        compiled(x).backward()
    loss = compiled(x)
    torch.use_deterministic_algorithms(True)
    try:
        with pytest.raises(RuntimeError, match="use_deterministic_algorithms"):
            loss.backward()
    finally:
        torch.use_deterministic_algorithms(False)


def test_saved_tensor_hooks_see_the_saved_tensors():
    packed = []

    def pack(tensor):
        packed.append(tuple(tensor.shape))
        return tensor

    compiled = torch.compile(lambda x, w: torch.tanh(x @ w).sum(), backend="kiln", dynamic=False)
    x, w = on_kiln(torch.randn(4, 3), torch.randn(3, 2))
    for _ in range(2):
        compiled(x, w).backward()
    assert torch_kiln.compile_stats()["cpp_runtime_graphs"] == 1
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        loss = compiled(x, w)
    assert packed  # the C++ function saved through the hooks
    x.grad = w.grad = None
    loss.backward()
    expected_x, expected_w = (tensor.detach().cpu().requires_grad_() for tensor in (x, w))
    torch.tanh(expected_x @ expected_w).sum().backward()
    torch.testing.assert_close(x.grad.cpu(), expected_x.grad, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(w.grad.cpu(), expected_w.grad, rtol=1e-5, atol=1e-6)


def test_output_aliasing_an_input_keeps_the_python_runtime():
    def function(x):
        return x.view(-1), torch.sin(x)

    (x,) = on_kiln(torch.randn(3, 2))
    check_against_eager(function, [x], lambda outputs: (outputs[0].sum() + outputs[1].sum()).backward())
    stats = torch_kiln.compile_stats()
    assert stats["cpp_runtime_graphs"] == 0 and stats["python_runtime_graphs"] == 1, stats


def kept_on_aot_runtime(monkeypatch):
    monkeypatch.setattr(program_function.CompiledGraph, "_describe", lambda self: None)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_models_train_identically_on_either_runtime(name, monkeypatch):
    """Same programs, same arithmetic: the runtimes must agree bit for bit,
    batch norm's running statistics included."""
    spec = MODELS[name]
    results = {}
    for runtime in ("cpp", "python"):
        torch._dynamo.reset()
        torch_kiln.reset_compile_stats()
        if runtime == "python":
            kept_on_aot_runtime(monkeypatch)
        training = Training(spec, "kiln")
        training.model = torch.compile(training.model, backend="kiln", dynamic=False)
        losses = [training.step().item() for _ in range(4)]
        state = {key: value.detach().cpu() for key, value in training.model.state_dict().items()}
        results[runtime] = losses, state
        assert torch_kiln.compile_stats()[f"{runtime}_runtime_graphs"] == 1
    assert results["cpp"][0] == results["python"][0]
    for key, value in results["cpp"][1].items():
        assert torch.equal(value, results["python"][1][key]), key


def test_inference_graph_moves_to_the_cpp_function_after_its_first_call():
    compiled = torch.compile(lambda x, w: torch.relu(x @ w) + 1, backend="kiln", dynamic=False)
    x, w = on_kiln(torch.randn(6, 4), torch.randn(4, 3), requires_grad=False)
    expected = torch.relu(x.cpu() @ w.cpu()) + 1
    with torch.no_grad():
        for _ in range(3):
            torch.testing.assert_close(compiled(x, w).cpu(), expected)
    assert torch_kiln.compile_stats()["cpp_runtime_graphs"] == 1


def test_inference_graph_under_grad_mode_gives_outputs_without_history():
    # Grad mode is on but no input needs a gradient: AOTAutograd compiles an
    # inference graph, and its outputs must not require grad.
    compiled = torch.compile(lambda x: torch.sin(x) * 2, backend="kiln", dynamic=False)
    (x,) = on_kiln(torch.randn(5), requires_grad=False)
    for _ in range(3):
        output = compiled(x)
        assert not output.requires_grad and output.grad_fn is None
        torch.testing.assert_close(output.cpu(), torch.sin(x.cpu()) * 2)
    assert torch_kiln.compile_stats()["cpp_runtime_graphs"] == 1


def test_inference_batch_norm_updates_running_statistics_in_place():
    torch.manual_seed(0)
    eager = torch.nn.BatchNorm1d(4).to("kiln")  # train mode: each call updates its statistics
    compiled_module = torch.nn.BatchNorm1d(4).to("kiln")
    compiled = torch.compile(compiled_module, backend="kiln", dynamic=False)
    with torch.no_grad():
        for step in range(4):
            x = torch.randn(8, 4, generator=torch.Generator().manual_seed(step)).to("kiln")
            version = compiled_module.running_mean._version
            torch.testing.assert_close(compiled(x).cpu(), eager(x).cpu(), rtol=1e-5, atol=1e-5)
            assert compiled_module.running_mean._version > version
    torch.testing.assert_close(compiled_module.running_mean.cpu(), eager.running_mean.cpu())
    torch.testing.assert_close(compiled_module.running_var.cpu(), eager.running_var.cpu())
    assert torch_kiln.compile_stats()["cpp_runtime_graphs"] == 1


def test_compiled_autograd_gets_aot_autograds_backward():
    from torch._dynamo import compiled_autograd
    compiled = torch.compile(lambda x, w: torch.tanh(x @ w).sum(), backend="kiln", dynamic=False)
    x, w = on_kiln(torch.randn(4, 3), torch.randn(3, 2))
    for _ in range(2):
        compiled(x, w).backward()
    assert torch_kiln.compile_stats()["cpp_runtime_graphs"] == 1
    x.grad = w.grad = None
    with compiled_autograd._enable(torch.compile(backend="eager")):
        compiled(x, w).backward()
    expected_x, expected_w = (tensor.detach().cpu().requires_grad_() for tensor in (x, w))
    torch.tanh(expected_x @ expected_w).sum().backward()
    torch.testing.assert_close(x.grad.cpu(), expected_x.grad, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(w.grad.cpu(), expected_w.grad, rtol=1e-5, atol=1e-6)
