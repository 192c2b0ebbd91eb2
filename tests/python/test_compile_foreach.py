"""Compiled foreach ops and optimizer steps (compile/passes/foreach.py).

Every foreach overload kiln decomposes is compiled with backend="kiln" and
compared with the same op eager on the CPU, over lists that mix shapes,
a non-contiguous tensor, a 0-dim and a zero-size one; the compiled call must
run no foreach op of its own. Optimizer steps compiled with
torch.compile(optimizer.step, backend="kiln") must match the CPU's steps,
update the parameters and the state in place, and settle in the C++ runtime."""
import pytest
import torch

import torch_kiln

pytestmark = pytest.mark.usefixtures("fresh_compile_state")

DTYPES = [torch.float32, torch.float64]


def tensors(dtype, low=-1.0, high=1.0, seed=0):
    """A CPU list: two contiguous tensors, a transposed one, a 0-dim one and a zero-size one."""
    generator = torch.Generator().manual_seed(seed)

    def draw(*shape):
        return (torch.rand(shape, generator=generator, dtype=torch.float64) * (high - low) + low).to(dtype)
    return [draw(3, 4), draw(5), draw(4, 3).t(), draw(), draw(0, 3)]


def kiln_copies(values):
    return [value.to("kiln") if isinstance(value, torch.Tensor) else value for value in values]


def foreach_events(function, *arguments):
    """Names of the aten::_foreach_* ops a call of `function` ran."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
        function(*arguments)
        torch.kiln.synchronize()
    return sorted({event.name for event in profile.events() if event.name.startswith("aten::_foreach")})


def check(function, dtype, *lists, tolerance=None):
    """`function` of CPU lists and of kiln copies, compiled, agree; the
    compiled call runs no foreach op."""
    torch_kiln.clear_op_tracking()
    expected = function(*lists)
    kiln_lists = [kiln_copies(values) if isinstance(values, list) else
                  (values.to("kiln") if isinstance(values, torch.Tensor) else values) for values in lists]
    compiled = torch.compile(function, backend="kiln", dynamic=False)
    actual = compiled(*kiln_lists)
    tolerance = tolerance or (1e-5 if dtype == torch.float32 else 1e-12)
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected):
        assert got.device.type == "kiln"
        torch.testing.assert_close(got.cpu(), want, rtol=tolerance, atol=tolerance, equal_nan=True)
    assert foreach_events(compiled, *kiln_lists) == []
    assert torch_kiln.get_fallback_ops() == {}


UNARY = ["abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1", "floor", "frac",
         "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal", "round", "rsqrt", "sigmoid", "sign",
         "sin", "sinh", "sqrt", "tan", "tanh", "trunc"]


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("name", UNARY)
def test_unary(name, dtype):
    # Inside (0.1, 0.9): every op's domain, away from its poles.
    operation = getattr(torch, "_foreach_" + name)
    check(lambda values: operation(values), dtype, tensors(dtype, 0.1, 0.9))


BINARY = {
    "add_scalar": lambda a, b, s: torch._foreach_add(a, 0.5),
    "add_list_alpha": lambda a, b, s: torch._foreach_add(a, b, alpha=-2.0),
    "add_scalar_list": lambda a, b, s: torch._foreach_add(a, [0.5, -1.0, 2.0, 3.0, 4.0]),
    "add_tensor_alpha": lambda a, b, s: torch._foreach_add(a, s, alpha=0.25),
    "sub_list_alpha": lambda a, b, s: torch._foreach_sub(a, b, alpha=3.0),
    "sub_scalar_list": lambda a, b, s: torch._foreach_sub(a, [1.0, 2.0, 3.0, 4.0, 5.0]),
    "mul_scalar": lambda a, b, s: torch._foreach_mul(a, 0.999),
    "mul_list": lambda a, b, s: torch._foreach_mul(a, b),
    "mul_tensor": lambda a, b, s: torch._foreach_mul(a, s),
    "div_scalar": lambda a, b, s: torch._foreach_div(a, 3.0),
    "div_list": lambda a, b, s: torch._foreach_div(a, b),
    "div_scalar_list": lambda a, b, s: torch._foreach_div(a, [2.0, 3.0, 4.0, 5.0, 6.0]),
    "div_tensor": lambda a, b, s: torch._foreach_div(a, s),
    "clamp_max_scalar": lambda a, b, s: torch._foreach_clamp_max(a, 0.25),
    "clamp_min_list": lambda a, b, s: torch._foreach_clamp_min(a, b),
    "clamp_min_scalar_list": lambda a, b, s: torch._foreach_clamp_min(a, [0.0, 0.1, -0.1, 0.2, 0.3]),
    "maximum_scalar": lambda a, b, s: torch._foreach_maximum(a, 0.0),
    "maximum_list": lambda a, b, s: torch._foreach_maximum(a, b),
    "minimum_scalar_list": lambda a, b, s: torch._foreach_minimum(a, [0.0, 0.1, -0.1, 0.2, 0.3]),
    "pow_scalar": lambda a, b, s: torch._foreach_pow(torch._foreach_abs(a), 1.5),
    "pow_list": lambda a, b, s: torch._foreach_pow(torch._foreach_abs(a), b),
    "pow_scalar_list": lambda a, b, s: torch._foreach_pow(a, [2.0, 3.0, 2.0, 1.0, 0.5]),
    "pow_scalar_and_tensor": lambda a, b, s: torch._foreach_pow(0.9, b),
    "addcmul_scalar": lambda a, b, s: torch._foreach_addcmul(a, b, a, value=0.001),
    "addcmul_scalar_list": lambda a, b, s: torch._foreach_addcmul(a, b, b, [1.0, 2.0, -1.0, 0.5, 3.0]),
    "addcdiv_scalar": lambda a, b, s: torch._foreach_addcdiv(a, a, torch._foreach_add(b, 2.0), value=-0.5),
    "lerp_scalar": lambda a, b, s: torch._foreach_lerp(a, b, 0.1),
    "lerp_scalar_high": lambda a, b, s: torch._foreach_lerp(a, b, 0.75),
    "lerp_list": lambda a, b, s: torch._foreach_lerp(a, b, torch._foreach_abs(b)),
    "lerp_scalar_list": lambda a, b, s: torch._foreach_lerp(a, b, [0.1, 0.9, 0.5, 0.3, 0.7]),
    # (the infinity norm of an empty tensor is an error, on the CPU too)
    "norm": lambda a, b, s: torch._foreach_norm(a) + torch._foreach_norm(b, 1) + torch._foreach_norm(a[:4], float("inf")),
    "clone": lambda a, b, s: torch._foreach_clone(a),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("name", BINARY)
def test_binary_and_ternary(name, dtype):
    scale = torch.tensor(-1.5, dtype=dtype)
    check(BINARY[name], dtype, tensors(dtype, seed=1), tensors(dtype, 0.5, 2.0, seed=2), scale)


def test_in_place_foreach_ops_write_their_inputs():
    """An in-place foreach op in a compiled graph updates the caller's tensors
    (the program writes them back) and moves their version counters."""
    def update(values, deltas):
        torch._foreach_mul_(values, 0.5)
        torch._foreach_add_(values, deltas, alpha=2.0)

    cpu, deltas = tensors(torch.float32), tensors(torch.float32, seed=3)
    kiln, kiln_deltas = kiln_copies(cpu), kiln_copies(deltas)
    versions = [value._version for value in kiln]
    compiled = torch.compile(update, backend="kiln", dynamic=False)
    for _ in range(3):
        update(cpu, deltas)
        compiled(kiln, kiln_deltas)
    for got, want in zip(kiln, cpu):
        torch.testing.assert_close(got.cpu(), want, rtol=1e-6, atol=1e-6)
    assert all(value._version > version for value, version in zip(kiln, versions))


def test_lists_of_different_lengths_raise_as_eager():
    values, others = kiln_copies(tensors(torch.float32)), kiln_copies(tensors(torch.float32))[:2]
    with pytest.raises(Exception, match="same|length|size"):
        torch.compile(lambda a, b: torch._foreach_mul(a, b), backend="kiln", dynamic=False)(values, others)


def test_a_cpu_scalar_tensor_fuses_into_a_kiln_kernel():
    """A 0-dim CPU tensor (an optimizer's step counter) read by kiln
    arithmetic is lowered as PyTorch lets any device read it, into fused
    kernels (the scalar part computed once, in its own), not run as calls."""
    def scaled(x, step):
        return x * (1 - 0.9 ** step) + step

    x, step = torch.randn(8, 16), torch.tensor(3.0)
    actual = torch.compile(scaled, backend="kiln", dynamic=False)(x.to("kiln"), step)
    torch.testing.assert_close(actual.cpu(), scaled(x, step))
    stats = torch_kiln.compile_stats()
    assert stats["extern_calls"] == 0 and stats["kernels"] <= 2, stats


OPTIMIZERS = {
    "adam": lambda parameters: torch.optim.Adam(parameters, lr=1e-2),
    "adam_amsgrad_maximize": lambda parameters: torch.optim.Adam(parameters, lr=1e-2, amsgrad=True, maximize=True),
    "adamw": lambda parameters: torch.optim.AdamW(parameters, lr=1e-2, weight_decay=0.1),
    "sgd_momentum_nesterov": lambda parameters: torch.optim.SGD(parameters, lr=0.1, momentum=0.9, nesterov=True,
                                                                weight_decay=1e-3),
    "rmsprop": lambda parameters: torch.optim.RMSprop(parameters, lr=1e-2, momentum=0.5),
    "adagrad": lambda parameters: torch.optim.Adagrad(parameters, lr=0.1),
}


def model_and_optimizer(name, device):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)).to(device)
    return model, OPTIMIZERS[name](model.parameters())


def gradients(model, step):
    generator = torch.Generator().manual_seed(step)
    for parameter in model.parameters():
        parameter.grad = torch.randn(parameter.shape, generator=generator).to(parameter.device)


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_compiled_optimizer_steps_match_the_cpu(name):
    torch_kiln.clear_op_tracking()
    cpu_model, cpu_optimizer = model_and_optimizer(name, "cpu")
    model, optimizer = model_and_optimizer(name, "kiln")
    parameters = list(model.parameters())
    step = torch.compile(optimizer.step, backend="kiln")
    for number in range(4):
        gradients(cpu_model, number)
        gradients(model, number)
        cpu_optimizer.step()
        step()
    assert list(model.parameters()) == parameters  # updated in place, not replaced
    for got, want in zip(model.parameters(), cpu_model.parameters()):
        torch.testing.assert_close(got.detach().cpu(), want.detach(), rtol=1e-5, atol=1e-5)
    for got, want in zip(optimizer.state.values(), cpu_optimizer.state.values()):
        for key in want:
            torch.testing.assert_close(torch.as_tensor(got[key]).cpu().to(torch.as_tensor(want[key]).dtype),
                                       torch.as_tensor(want[key]), rtol=1e-5, atol=1e-5)
    stats = torch_kiln.compile_stats()
    assert stats["cpp_runtime_graphs"] >= 1 and stats["python_runtime_graphs"] == 0, stats
    assert foreach_events(step) == []
    assert torch_kiln.get_fallback_ops() == {}


def test_a_graph_writing_back_its_inputs():
    """Functionalization turns `input.copy_(value)` into the value in the
    input's dtype and shape (a fused kernel: the conversion and the
    broadcast) and one copy_ into the input at the end, which the program
    calls without the dispatcher. The caller's tensors are written and their
    version counters moved."""
    def write_back(same, converted, broadcast, source):
        same.copy_(source * 2)
        converted.copy_(source + 1)
        broadcast.copy_(source[0])

    source = torch.randn(3, 4)
    targets = [torch.zeros(3, 4), torch.zeros(3, 4, dtype=torch.float64), torch.zeros(3, 4)]
    kiln_targets, kiln_source = kiln_copies(targets), source.to("kiln")
    versions = [target._version for target in kiln_targets]
    compiled = torch.compile(write_back, backend="kiln", dynamic=False)
    compiled(*kiln_targets, kiln_source)
    write_back(*targets, source)
    for got, want, version in zip(kiln_targets, targets, versions):
        assert got.dtype == want.dtype
        torch.testing.assert_close(got.cpu(), want)
        assert got._version > version
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
        compiled(*kiln_targets, kiln_source)
    names = {event.name for event in profile.events()}
    assert "kiln::compiled_program" in names and "aten::copy_" not in names, sorted(names)


def test_a_compiled_sgd_step_stores_into_the_parameters_themselves():
    """The kernels of a compiled SGD step store the new parameters and
    momentum buffers into the optimizer's own tensors: the step runs its
    fused kernels and nothing else (no copy back)."""
    model, optimizer = model_and_optimizer("sgd_momentum_nesterov", "kiln")
    cpu_model, cpu_optimizer = model_and_optimizer("sgd_momentum_nesterov", "cpu")
    step = torch.compile(optimizer.step, backend="kiln")
    for number in range(3):
        gradients(model, number)
        gradients(cpu_model, number)
        step()
        cpu_optimizer.step()
    torch.kiln.synchronize()
    torch_kiln.clear_op_tracking()
    step()
    cpu_optimizer.step()
    torch.kiln.synchronize()
    assert set(torch_kiln.get_executed_ops()) == {"kiln::fused_pointwise"}, torch_kiln.get_executed_ops()
    for got, want in zip(model.parameters(), cpu_model.parameters()):
        torch.testing.assert_close(got.detach().cpu(), want.detach(), rtol=1e-5, atol=1e-5)


def test_an_input_read_after_its_update_is_computed_keeps_its_old_value():
    """An input the graph updates in place but reads again, through a view,
    in a step that also needs the update (so it runs after the update's
    kernel): the kernel must not store into the input early."""
    def update_then_read(a, b):
        updated = a * 2 + b
        total = torch.mm(a.t(), updated)  # the old a, through a view, and the update
        a.copy_(updated)
        return total

    a, b = torch.randn(16, 8), torch.randn(16, 8)
    kiln_a = a.to("kiln")
    total = torch.compile(update_then_read, backend="kiln", dynamic=False)(kiln_a, b.to("kiln"))
    expected = update_then_read(a, b)
    torch.testing.assert_close(total.cpu(), expected)
    torch.testing.assert_close(kiln_a.cpu(), a)
