"""torch._foreach_* ops on kiln (compiled/foreach_ops.h): one captured launch
replayed over every tensor, differentially against the CPU, and the
group-by-group path for lists that cannot replay."""
import pytest
import torch

import torch_kiln
from differential import assert_same, make

# Contiguous tensors of different shapes, one 0-dim, one of one element and
# one empty: every group but the empty one replays the captured launch.
SHAPES = [(4, 5), (7,), (), (0, 3), (3, 1, 2), (1,), (40, 33)]


def tensors(dtype, shapes=SHAPES, low=-3.0, high=3.0, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return [make(shape, dtype, low=low, high=high, generator=generator) for shape in shapes]


def on_both(function, *lists, expect_replay=True, name=None, cpu_tensors=False, tolerance=None, **keywords):
    """function(*lists, **keywords) on the CPU and on kiln copies; compares
    the results and every list afterwards (in-place ops change them). A
    tensor argument goes to kiln too, unless `cpu_tensors`. With
    `expect_replay`, the foreach op `name` must have run as one replayed call
    (op tracking counts it as compiled) and nothing may fall back."""
    def to_kiln(value):
        if is_tensor_list(value):
            return [tensor.to("kiln") for tensor in value]
        if isinstance(value, torch.Tensor) and not cpu_tensors:
            return value.to("kiln")
        return value
    kiln_lists = [to_kiln(value) for value in lists]
    kiln_keywords = {key: to_kiln(value) for key, value in keywords.items()}
    try:
        expected = function(*lists, **keywords)
    except Exception as error:  # noqa: BLE001 - kiln must raise the same type
        before = [[tensor.cpu() for tensor in tensors] for tensors in kiln_lists if is_tensor_list(tensors)]
        with pytest.raises(type(error)):
            function(*kiln_lists, **kiln_keywords)
        after = [[tensor.cpu() for tensor in tensors] for tensors in kiln_lists if is_tensor_list(tensors)]
        for old, new in zip(before, after):
            assert_same_list(old, new, "a failed call changed its inputs")
        return
    torch_kiln.clear_op_tracking()
    actual = function(*kiln_lists, **kiln_keywords)
    executed = torch_kiln.get_executed_ops()
    assert not torch_kiln.get_fallback_ops()
    if expect_replay:
        assert executed.get(name, {}).get("compiled") == 1, f"{name} did not replay: {executed}"
    if expected is not None:
        assert_same(list(expected), list(actual), f"{name} results", tolerance)
    for cpu_list, kiln_list in zip(lists, kiln_lists):
        if is_tensor_list(cpu_list):
            assert_same(cpu_list, kiln_list, f"{name} inputs afterwards")


def is_tensor_list(value):
    return isinstance(value, list) and value and isinstance(value[0], torch.Tensor)


def assert_same_list(expected, actual, message):
    for first, second in zip(expected, actual):
        torch.testing.assert_close(first, second, equal_nan=True, msg=message)


BINARY = ["add", "sub", "mul", "div", "clamp_min", "clamp_max"]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("op", BINARY)
@pytest.mark.parametrize("in_place", [True, False])
def test_binary_overloads(op, dtype, in_place):
    function = getattr(torch, f"_foreach_{op}_" if in_place else f"_foreach_{op}")
    name = f"aten::_foreach_{op}{'_' if in_place else ''}"
    on_both(function, tensors(dtype), 0.75, name=f"{name}.Scalar")
    scalars = [0.5, -2.0, 3.0, 0.5, 1.25, -2.0, 7.0]  # repeats share a capture
    on_both(function, tensors(dtype), scalars, name=f"{name}.ScalarList")
    on_both(function, tensors(dtype), tensors(dtype, low=0.5, seed=1), name=f"{name}.List")
    if op in ("add", "sub"):
        # alpha * other is exact in every dtype: the CPU rounds an inexact
        # product of half-precision operands differently in its vectorised
        # and scalar loops.
        on_both(function, tensors(dtype), tensors(dtype, seed=1), alpha=-2.0, name=f"{name}.List")


@pytest.mark.parametrize("op", ["mul", "div"])
@pytest.mark.parametrize("in_place", [True, False])
def test_shared_zero_dim_tensor(op, in_place):
    function = getattr(torch, f"_foreach_{op}_" if in_place else f"_foreach_{op}")
    name = f"aten::_foreach_{op}{'_' if in_place else ''}.Tensor"
    # A device tensor (clip_grad_norm_'s clip coefficient) replays as a
    # broadcast operand; a CPU one becomes a scalar argument.
    on_both(function, tensors(torch.float32), torch.tensor(0.3), name=name)
    on_both(function, tensors(torch.float32), torch.tensor(0.3), name=name, cpu_tensors=True)
    on_both(function, tensors(torch.float32), torch.tensor([0.3, 0.4]), name=name)  # raises: not 0-dim


@pytest.mark.parametrize("in_place", [True, False])
@pytest.mark.parametrize("op", ["addcmul", "addcdiv"])
def test_scaled_products(op, in_place):
    function = getattr(torch, f"_foreach_{op}_" if in_place else f"_foreach_{op}")
    name = f"aten::_foreach_{op}{'_' if in_place else ''}"
    first, second = tensors(torch.float32, seed=1), tensors(torch.float32, low=0.5, seed=2)
    on_both(function, tensors(torch.float32), first, second, 0.1, name=f"{name}.Scalar")
    on_both(function, tensors(torch.bfloat16), tensors(torch.bfloat16, seed=1),
            tensors(torch.bfloat16, low=0.5, seed=2), [0.1 * k for k in range(len(SHAPES))],
            name=f"{name}.ScalarList")
    # The same list twice (Adam's exp_avg_sq.addcmul_(grad, grad)).
    on_both(lambda s, g: function(s, g, g, value=0.5), tensors(torch.float32), first, name=f"{name}.Scalar")


@pytest.mark.parametrize("in_place", [True, False])
def test_lerp(in_place):
    function = torch._foreach_lerp_ if in_place else torch._foreach_lerp
    name = f"aten::_foreach_lerp{'_' if in_place else ''}"
    ends = tensors(torch.float32, seed=1)
    on_both(function, tensors(torch.float32), ends, 0.1, name=f"{name}.Scalar")
    # Weights on both sides of 0.5, where lerp switches formulas.
    on_both(function, tensors(torch.float32), ends, [0.1, 0.9, 0.5, 0.3, 0.7, 0.1, 0.6], name=f"{name}.ScalarList")
    on_both(function, tensors(torch.float32), ends, tensors(torch.float32, low=0, high=1, seed=3),
            name=f"{name}.List")


@pytest.mark.parametrize("op", ["sqrt", "exp", "log", "neg", "abs", "reciprocal", "sign"])
@pytest.mark.parametrize("in_place", [True, False])
def test_unary(op, in_place):
    function = getattr(torch, f"_foreach_{op}_" if in_place else f"_foreach_{op}")
    name = f"aten::_foreach_{op}{'_' if in_place else ''}"
    on_both(function, tensors(torch.float32, low=0.1), name=name)
    on_both(function, tensors(torch.float64, low=-2), name=name)


@pytest.mark.parametrize("in_place", [True, False])
def test_pow(in_place):
    function = torch._foreach_pow_ if in_place else torch._foreach_pow
    name = f"aten::_foreach_pow{'_' if in_place else ''}"
    on_both(function, tensors(torch.float32, low=0.1), 2.0, name=f"{name}.Scalar")
    # 2 takes a kernel of its own (pow_square): each exponent is captured.
    on_both(function, tensors(torch.float32, low=0.1), [3.0, 2.0, 0.5, 2.0, -1.0, 2.0, 3.0],
            name=f"{name}.ScalarList")
    on_both(function, tensors(torch.float32, low=0.1), tensors(torch.float32, low=-1, high=2, seed=1),
            name=f"{name}.List")


def test_integer_lists_and_promotion():
    on_both(torch._foreach_add_, tensors(torch.int64), 2, name="aten::_foreach_add_.Scalar")
    on_both(torch._foreach_mul, tensors(torch.int64), 0.5, name="aten::_foreach_mul.Scalar")  # float results
    on_both(torch._foreach_mul_, tensors(torch.int64), 0.5, name="aten::_foreach_mul_.Scalar")  # raises
    on_both(torch._foreach_add_, tensors(torch.float32), tensors(torch.float64), name="aten::_foreach_add_.List")


def test_lists_that_run_group_by_group():
    wide = [tensor for tensor in tensors(torch.float32, shapes=[(4, 10), (6, 8)])]
    strided = [wide[0][:, ::2], wide[1].t()]
    on_both(torch._foreach_mul_, strided, 3.0, expect_replay=False)
    mixed_dtypes = [make((3,), torch.float32), make((3,), torch.float64)]
    on_both(torch._foreach_add, mixed_dtypes, 1.5, expect_replay=False)
    broadcast = ([make((3, 4), torch.float32)], [make((4,), torch.float32)])
    on_both(torch._foreach_add_, *broadcast, expect_replay=False)
    on_both(torch._foreach_add, tensors(torch.float32), [1, 2.5, 3, 4, 5, 6, 7], expect_replay=False)
    on_both(torch._foreach_mul, [make((3,), torch.complex64), make((2, 2), torch.complex64)], 2.0,
            expect_replay=False)


def test_malformed_calls_raise_as_on_the_cpu():
    on_both(torch._foreach_add_, tensors(torch.float32), tensors(torch.float32)[:3])
    on_both(torch._foreach_add_, tensors(torch.float32), [1.0, 2.0])
    on_both(torch._foreach_add_, [], 1.0)


def test_queued_behind_other_work_and_split_over_threads():
    big = [make((300, 400), torch.float32), make((70000,), torch.float32), make((5,), torch.float32)]
    kiln_big = [tensor.to("kiln") for tensor in big]
    blocker = torch.randn(600, 600, device="kiln")
    for _ in range(3):
        blocker = blocker @ blocker / 600  # the stream is busy: the foreach call is queued
    torch._foreach_addcmul_(kiln_big, kiln_big, kiln_big, value=0.25)
    torch._foreach_addcmul_(big, big, big, value=0.25)
    assert_same(big, kiln_big, "queued foreach")


def test_functional_foreach_backward():
    leaves = tensors(torch.float32, shapes=[(3, 4), (5,)])
    kiln_leaves = [tensor.to("kiln").requires_grad_() for tensor in leaves]
    for tensor in leaves:
        tensor.requires_grad_()
    for group, device_group in ((leaves, False), (kiln_leaves, True)):
        products = torch._foreach_mul(group, 3.0)
        sum(product.square().sum() for product in torch._foreach_add(products, group)).backward()
    assert_same([tensor.grad for tensor in leaves], [tensor.grad for tensor in kiln_leaves], "gradients")


@pytest.mark.parametrize("make_optimizer", [
    lambda parameters: torch.optim.AdamW(parameters, lr=1e-2, weight_decay=0.1, foreach=True),
    lambda parameters: torch.optim.Adam(parameters, lr=1e-2, amsgrad=True, foreach=True),
    lambda parameters: torch.optim.SGD(parameters, lr=1e-2, momentum=0.9, nesterov=True, foreach=True),
], ids=["adamw", "adam_amsgrad", "sgd_nesterov"])
def test_optimizers_match_the_cpu(make_optimizer):
    parameters = tensors(torch.float32, shapes=[(8, 4), (4,), (), (3, 3)])
    kiln_parameters = [tensor.to("kiln") for tensor in parameters]
    cpu_optimizer = make_optimizer([torch.nn.Parameter(tensor) for tensor in parameters])
    kiln_optimizer = make_optimizer([torch.nn.Parameter(tensor) for tensor in kiln_parameters])
    for step in range(4):
        gradients = tensors(torch.float32, shapes=[(8, 4), (4,), (), (3, 3)], seed=10 + step)
        for optimizer, device in ((cpu_optimizer, "cpu"), (kiln_optimizer, "kiln")):
            for parameter, gradient in zip(optimizer.param_groups[0]["params"], gradients):
                parameter.grad = gradient.to(device, copy=True)  # clipping scales it in place
            if device == "kiln":
                torch.nn.utils.clip_grad_norm_(optimizer.param_groups[0]["params"], 1.0, foreach=True)
            else:
                torch.nn.utils.clip_grad_norm_(optimizer.param_groups[0]["params"], 1.0, foreach=False)
            optimizer.step()
    assert_same(cpu_optimizer.param_groups[0]["params"], kiln_optimizer.param_groups[0]["params"],
                "parameters after four steps", tolerance=(1e-5, 1e-6))


NONEMPTY = [shape for shape in SHAPES if 0 not in shape]


@pytest.mark.parametrize("ord", [2, 1, float("inf"), 3.0, 0])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_norm(ord, dtype):
    """A whole-tensor reduction per group: replayed with each group's size."""
    on_both(torch._foreach_norm, tensors(dtype, shapes=NONEMPTY), ord, name="aten::_foreach_norm.Scalar")
    on_both(lambda lists: torch._foreach_norm(lists, ord, dtype=torch.float64), tensors(dtype, shapes=NONEMPTY),
            name="aten::_foreach_norm.Scalar")
    # An empty tensor: its norm is 0, or an error for the infinity norm, as the
    # op itself decides group by group.
    on_both(torch._foreach_norm, tensors(dtype), ord, expect_replay=False)


def test_norm_of_a_large_tensor_keeps_the_two_stage_reduction():
    # 2^19 elements: the op reduces in two stages (all threads); a replay would
    # reduce it in one, so the call runs group by group.
    on_both(torch._foreach_norm, [make((1 << 19,), torch.float32), make((3,), torch.float32)], 2,
            expect_replay=False, tolerance=(1e-5, 1e-5))  # summed in another order than the CPU


def test_norms_share_one_buffer_but_are_separate_tensors():
    kiln_lists = [tensor.to("kiln") for tensor in tensors(torch.float32, shapes=NONEMPTY)]
    norms = torch._foreach_norm(kiln_lists)
    expected = [torch.linalg.vector_norm(tensor.cpu()) for tensor in kiln_lists]
    norms[0].add_(100.0)
    assert_same([expected[0] + 100.0] + expected[1:], list(norms), "one norm changed in place")
    assert all(norm.dim() == 0 for norm in norms)


def test_norm_backward():
    leaves = tensors(torch.float32, shapes=NONEMPTY)
    kiln_leaves = [tensor.to("kiln").requires_grad_() for tensor in leaves]
    for tensor in leaves:
        tensor.requires_grad_()
    for group in (leaves, kiln_leaves):
        sum(norm * (index + 1) for index, norm in enumerate(torch._foreach_norm(group))).backward()
    assert_same([tensor.grad for tensor in leaves], [tensor.grad for tensor in kiln_leaves], "gradients")


def test_a_cpu_tensor_in_a_kiln_list_is_refused_before_anything_changes():
    kiln_lists = [tensor.to("kiln") for tensor in tensors(torch.float32, shapes=[(3,), (4,)])]
    before = [tensor.cpu() for tensor in kiln_lists]
    with pytest.raises(RuntimeError, match="device"):
        torch._foreach_add_(kiln_lists, [torch.ones(3, device="kiln"), torch.ones(4)])
    assert_same_list(before[:1], [kiln_lists[0].cpu()], "the first tensor changed")
