"""torch.nn.functional.grouped_mm (aten._grouped_mm), what mixture-of-experts
layers call for their experts' products, on kiln against the CPU: Kiln's own
queued kernel (library/grouped_mm.cc) in every form PyTorch accepts (2-d by
3-d, 3-d by 2-d, 2-d by 2-d, 3-d by 3-d), float32, bfloat16 and float16,
offsets with empty groups and rows past the last offset, zero-size and
transposed operands, a call large enough to be split over the threads,
backward, PyTorch's errors for bad calls, offsets out of range (an error
from the device, inputs untouched), and inside torch.compile(backend="kiln")."""
import os

import pytest
import torch
import torch.nn.functional as F

import torch_kiln

OFFSETS = {
    "even": [8, 16, 24, 32],
    "uneven, rows past the end": [3, 17, 18, 30],
    "empty first and middle": [0, 12, 12, 32],
    "empty last, rows past the end": [10, 20, 28, 28],
}
TOLERANCE = {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.bfloat16: dict(rtol=2e-2, atol=2e-2),
             torch.float16: dict(rtol=2e-3, atol=2e-3)}


def random(*shape, dtype, seed):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


def transposed(*shape, dtype, seed):
    """A tensor of `shape` whose last two dims are swapped in memory (unit stride down the rows)."""
    return random(*shape[:-2], shape[-1], shape[-2], dtype=dtype, seed=seed).transpose(-2, -1)


def to_kiln(tensor):
    """A kiln copy with the same strides (a transposed operand stays transposed)."""
    return torch.empty_strided(tensor.shape, tensor.stride(), dtype=tensor.dtype, device="kiln").copy_(tensor)


def both(fn, *tensors, grad=True):
    """fn on CPU tensors and on kiln copies: (cpu result, kiln result, cpu grads, kiln grads)."""
    cpu = [tensor.clone().requires_grad_(grad and tensor.is_floating_point()) for tensor in tensors]
    kiln = [to_kiln(tensor).requires_grad_(grad and tensor.is_floating_point()) for tensor in tensors]
    cotangent = random(*fn(*cpu).shape, dtype=cpu[0].dtype, seed=9)
    expected = fn(*cpu)
    torch_kiln.clear_op_tracking()  # op tracking then covers the kiln forward and backward
    result = fn(*kiln)
    if grad:
        expected.backward(cotangent)
        result.backward(cotangent.to("kiln"))
    assert torch_kiln.get_fallback_ops() == {}
    if not grad:
        return expected, result, [], []
    return expected, result, [t.grad for t in cpu if t.requires_grad], [t.grad for t in kiln if t.requires_grad]


def assert_same(expected, result, expected_grads, grads, dtype):
    torch.testing.assert_close(result.cpu(), expected.detach(), **TOLERANCE[dtype])
    for wanted, got in zip(expected_grads, grads):
        torch.testing.assert_close(got.cpu(), wanted, **TOLERANCE[dtype])


def assert_ran_natively(calls):
    """Every _grouped_mm ran Kiln's kernel, with no product of the composite's loop."""
    executed = torch_kiln.get_executed_ops()
    assert executed["aten::_grouped_mm"] == {"library": calls}, executed
    assert not {"aten::mm.out", "aten::bmm.out", "aten::_local_scalar_dense"} & set(executed), executed


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("offsets", list(OFFSETS))
def test_tokens_times_expert_weights(dtype, offsets):
    x, weight = random(32, 24, dtype=dtype, seed=0), random(4, 24, 40, dtype=dtype, seed=1)
    offs = torch.tensor(OFFSETS[offsets], dtype=torch.int32)

    def product(x, weight):
        return F.grouped_mm(x, weight, offs=offs.to(x.device))
    expected, result, expected_grads, grads = both(product, x, weight)
    assert_ran_natively(3)  # forward, and the backward's two: the same op on transposed operands
    end = OFFSETS[offsets][-1]  # the CPU leaves rows past the last offset as they are, here and in
    # x's gradient (kiln writes zeros: test_rows_and_columns_past_the_last_offset_are_zero)
    assert_same(expected[:end], result[:end], [expected_grads[0][:end], expected_grads[1]],
                [grads[0][:end], grads[1]], dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("form", ["rows", "columns"])
def test_rows_and_columns_past_the_last_offset_are_zero(dtype, form):
    """PyTorch leaves them unwritten; kiln writes zeros, which is also x's
    true gradient there (those rows take part in no product)."""
    offs = torch.tensor(OFFSETS["uneven, rows past the end"], dtype=torch.int32, device="kiln")  # ends at 30
    if form == "rows":
        a, b = random(32, 24, dtype=dtype, seed=0), random(4, 24, 40, dtype=dtype, seed=1)
    else:
        a, b = random(4, 16, 24, dtype=dtype, seed=2), random(24, 32, dtype=dtype, seed=3)
    a, b = a.to("kiln"), b.to("kiln")
    shape = (32, 40) if form == "rows" else (16, 32)
    torch.full(shape, float("nan"), dtype=dtype, device="kiln")  # freed: memory the output reuses
    result = F.grouped_mm(a, b, offs=offs).cpu()
    past = result[30:] if form == "rows" else result[:, 30:]
    assert past.numel() > 0 and torch.equal(past, torch.zeros_like(past))


def whole(tensor):
    return tensor


def first_rows(tensor):  # rows past the last offset are left as they are
    return tensor[:30]


def first_columns(tensor):  # so are columns past it
    return tensor[:, :30]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_every_form_against_the_cpu(dtype, layout):
    make = random if layout == "contiguous" else transposed
    offs = torch.tensor(OFFSETS["uneven, rows past the end"], dtype=torch.int32)  # ends at 30
    depth_offs = torch.tensor(OFFSETS["empty first and middle"], dtype=torch.int32)
    # (a, b, offsets, the parts of the result, a's and b's gradients to compare)
    forms = {
        # 2-d by 3-d: groups of rows (the experts' forward)
        "rows": (make(32, 24, dtype=dtype, seed=0), make(4, 24, 40, dtype=dtype, seed=1), offs,
                 (first_rows, first_rows, whole)),
        # 3-d by 2-d: groups of columns (x's gradient when x was column-major)
        "columns": (make(4, 16, 24, dtype=dtype, seed=2), make(24, 32, dtype=dtype, seed=3), offs,
                    (first_columns, whole, first_columns)),
        # 2-d by 2-d: groups of the shared dim, one output matrix each (the weights' gradient)
        "depth": (make(24, 32, dtype=dtype, seed=4), make(32, 40, dtype=dtype, seed=5), depth_offs,
                  (whole, whole, whole)),
        # 3-d by 3-d: one product per group, no offsets
        "batched": (make(4, 8, 24, dtype=dtype, seed=6), make(4, 24, 16, dtype=dtype, seed=7), None,
                    (whole, whole, whole)),
    }
    for form, (a, b, offsets, (keep, keep_a, keep_b)) in forms.items():
        def product(a, b):
            return F.grouped_mm(a, b, offs=None if offsets is None else offsets.to(a.device))
        expected, result, expected_grads, grads = both(product, a, b)
        assert_ran_natively(3)  # the forward, and the backward's two
        if form == "depth":
            assert result.shape == (4, 24, 40)
        assert result.stride() == expected.stride(), form
        assert_same(keep(expected), keep(result), [keep_a(g) for g in expected_grads[:1]] +
                    [keep_b(g) for g in expected_grads[1:]], [keep_a(g) for g in grads[:1]] +
                    [keep_b(g) for g in grads[1:]], dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_zero_size(dtype):
    cases = [
        (random(0, 8, dtype=dtype, seed=0), random(4, 8, 16, dtype=dtype, seed=1), [0, 0, 0, 0]),  # no rows
        (random(8, 8, dtype=dtype, seed=0), random(0, 8, 16, dtype=dtype, seed=1), []),  # no groups
        # k == 0, zeros (rows 8 apart: PyTorch wants strides of whole 16 bytes)
        (torch.empty_strided((8, 0), (8, 1), dtype=dtype), random(2, 0, 16, dtype=dtype, seed=1), [4, 8]),
        (random(8, 8, dtype=dtype, seed=0), torch.empty_strided((2, 8, 0), (64, 8, 1), dtype=dtype), [4, 8]),  # n == 0
        (random(8, 16, dtype=dtype, seed=0), random(16, 8, dtype=dtype, seed=1), [0, 0, 16]),  # empty k groups
    ]
    for a, b, offsets in cases:
        offs = torch.tensor(offsets, dtype=torch.int32)
        torch_kiln.clear_op_tracking()
        result = F.grouped_mm(to_kiln(a), to_kiln(b), offs=offs.to("kiln"))
        expected = F.grouped_mm(a, b, offs=offs)
        assert result.shape == expected.shape and result.stride() == expected.stride()
        rows_form = a.dim() == 2 and b.dim() == 3  # rows past the last offset (all, with no groups) are left
        end = (offsets[-1] if offsets else 0) if rows_form else None
        torch.testing.assert_close(result.cpu()[:end], expected[:end], **TOLERANCE[dtype])
        assert torch_kiln.get_fallback_ops() == {}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_a_large_call_split_over_the_threads(dtype):
    # 2 x 256 x 128 x 256: above the small-call bound, so the worker cuts the groups into
    # blocks over Kiln's pool (one group much larger than the others, one empty).
    x, weight = random(256, 128, dtype=dtype, seed=10), random(4, 128, 256, dtype=dtype, seed=11)
    offs = torch.tensor([20, 20, 200, 250], dtype=torch.int32)
    expected, result, expected_grads, grads = both(lambda x, w: F.grouped_mm(x, w, offs=offs.to(x.device)),
                                                   x, weight)
    assert_same(expected[:250], result[:250], [expected_grads[0][:250], expected_grads[1]],
                [grads[0][:250], grads[1]], dtype)
    # The other forms, each group's output cut into blocks (depth) or the groups shared out (batched).
    depth_offs = torch.tensor([0, 100, 256], dtype=torch.int32)
    a, b = random(128, 256, dtype=dtype, seed=12), random(256, 128, dtype=dtype, seed=13)
    expected, result, _, _ = both(lambda a, b: F.grouped_mm(a, b, offs=depth_offs.to(a.device)), a, b, grad=False)
    assert_same(expected, result, [], [], dtype)
    a, b = random(3, 128, 128, dtype=dtype, seed=14), random(3, 128, 96, dtype=dtype, seed=15)
    assert_same(*both(lambda a, b: F.grouped_mm(a, b), a, b, grad=False), dtype)


BAD_CALLS = {
    "a of rank 1": lambda d: (torch.zeros(8, device=d), torch.zeros(4, 8, 8, device=d), [8] * 4),
    "an integer a": lambda d: (torch.zeros(8, 8, dtype=torch.int32, device=d), torch.zeros(4, 8, 8, device=d), [8] * 4),
    "float64": lambda d: (torch.zeros(8, 8, dtype=torch.float64, device=d),
                          torch.zeros(4, 8, 8, dtype=torch.float64, device=d), [8] * 4),
    "two dtypes": lambda d: (torch.zeros(8, 8, device=d), torch.zeros(4, 8, 8, dtype=torch.bfloat16, device=d), [8] * 4),
    "int64 offsets": lambda d: (torch.zeros(8, 8, device=d), torch.zeros(4, 8, 8, device=d),
                                torch.full((4,), 8, device=d)),
    "2-d offsets": lambda d: (torch.zeros(8, 8, device=d), torch.zeros(4, 8, 8, device=d), [[8] * 4]),
    "strided offsets": lambda d: (torch.zeros(8, 8, device=d), torch.zeros(4, 8, 8, device=d),
                                  torch.full((8,), 8, dtype=torch.int32, device=d)[::2]),
    "offsets not one per group": lambda d: (torch.zeros(8, 8, device=d), torch.zeros(4, 8, 8, device=d), [8] * 3),
    "contraction mismatch": lambda d: (torch.zeros(8, 12, device=d), torch.zeros(4, 8, 8, device=d), [8] * 4),
    "no offsets for a 2-d operand": lambda d: (torch.zeros(8, 8, device=d), torch.zeros(4, 8, 8, device=d), None),
    "offsets for 3-d by 3-d": lambda d: (torch.zeros(4, 8, 8, device=d), torch.zeros(4, 8, 8, device=d), [8] * 4),
    "batch mismatch": lambda d: (torch.zeros(4, 8, 8, device=d), torch.zeros(3, 8, 8, device=d), None),
    "no unit stride": lambda d: (torch.zeros(8, 16, device=d)[:, ::2], torch.zeros(4, 8, 8, device=d), [8] * 4),
    "rows not 16-byte aligned": lambda d: (torch.zeros(8, 6, device=d), torch.zeros(4, 6, 8, device=d), [8] * 4),
}


@pytest.mark.parametrize("call", list(BAD_CALLS))
def test_bad_calls_raise_the_cpus_error(call):
    def run(device):
        a, b, offsets = BAD_CALLS[call](device)
        if isinstance(offsets, list):
            offsets = torch.tensor(offsets, dtype=torch.int32, device=device)
        with pytest.raises(RuntimeError) as error:
            torch._grouped_mm(a, b, offs=offsets)
        return str(error.value).splitlines()[0]
    assert run("kiln") == run("cpu")
    for keyword, value in [("bias", torch.zeros(8)), ("out_dtype", torch.bfloat16)]:
        def run_with(device):
            argument = value.to(device) if isinstance(value, torch.Tensor) else value
            with pytest.raises(RuntimeError) as error:
                torch._grouped_mm(torch.zeros(8, 8, device=device), torch.zeros(4, 8, 8, device=device),
                                  offs=torch.full((4,), 8, dtype=torch.int32, device=device), **{keyword: argument})
            return str(error.value)
        assert run_with("kiln") == run_with("cpu")


def test_operands_on_two_devices_are_refused():
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        F.grouped_mm(torch.zeros(8, 8, device="kiln"), torch.zeros(4, 8, 8, device="kiln"),
                     offs=torch.full((4,), 8, dtype=torch.int32))


def test_a_misaligned_operand_is_refused_as_on_other_devices():
    # PyTorch checks the 16-byte alignment of the operands on every device but the CPU.
    with pytest.raises(RuntimeError, match="expected data_ptr to be aligned to 16 bytes"):
        F.grouped_mm(torch.zeros(65, device="kiln")[1:].view(8, 8), torch.zeros(4, 8, 8, device="kiln"),
                     offs=torch.full((4,), 8, dtype=torch.int32, device="kiln"))


@pytest.mark.parametrize("offsets, bad", [([3, 40, 40, 40], "offs\\[1\\] = 40"), ([-1, 8, 16, 32], "offs\\[0\\] = -1"),
                                          ([8, 20, 10, 32], "offs\\[2\\] = 10")])
def test_offsets_out_of_range_raise_and_touch_nothing(offsets, bad):
    x, weight = random(32, 16, dtype=torch.float32, seed=0), random(4, 16, 16, dtype=torch.float32, seed=1)
    kiln_x, kiln_weight = x.to("kiln"), weight.to("kiln")
    offs = torch.tensor(offsets, dtype=torch.int32, device="kiln")
    # Raised at the call when it ran at once on an idle stream, else at the next sync, as CUDA
    # reports a device-side assert.
    with pytest.raises(RuntimeError, match=bad + " is out of range: the offsets must not decrease and must lie "
                       "in \\[0, 32\\], the size of mat_a's dim 0"):
        F.grouped_mm(kiln_x, kiln_weight, offs=offs)
        torch.kiln.synchronize()
    assert torch.equal(kiln_x.cpu(), x) and torch.equal(kiln_weight.cpu(), weight)
    assert offs.cpu().tolist() == offsets
    # The stream stays usable.
    good = torch.tensor([8, 16, 24, 32], dtype=torch.int32)
    torch.testing.assert_close(F.grouped_mm(kiln_x, kiln_weight, offs=good.to("kiln")).cpu(),
                               F.grouped_mm(x, weight, offs=good), **TOLERANCE[torch.float32])


@pytest.mark.skipif(os.environ.get("KILN_LAUNCH_BLOCKING") == "1", reason="blocking launches report at the op itself")
def test_offsets_out_of_range_behind_queued_work_raise_at_the_next_sync():
    big = torch.ones(2048, 2048, device="kiln")
    a, b = torch.ones(24, 32, device="kiln"), torch.ones(32, 8, device="kiln")  # the weights' gradient form
    offs = torch.tensor([0, 40, 40], dtype=torch.int32, device="kiln")  # beyond the shared dim, 32
    for _ in range(3):
        big = big + 1  # keeps the stream busy
    result = F.grouped_mm(a, b, offs=offs)  # returns: the offsets are read on the device
    assert result.shape == (3, 24, 8)
    with pytest.raises(RuntimeError, match="offs\\[1\\] = 40 is out of range.*the shared dim"):
        torch.kiln.synchronize()
    assert torch.equal(a.cpu(), torch.ones(24, 32)) and torch.equal(b.cpu(), torch.ones(32, 8))


def test_inside_a_compiled_graph_forward_and_backward():
    # bfloat16: PyTorch 2.14's meta function of _grouped_mm (which torch.compile traces with) takes
    # bfloat16 and float16 only, on every device, so a float32 grouped_mm cannot be compiled.
    x, weight = random(32, 24, dtype=torch.bfloat16, seed=6), random(4, 24, 40, dtype=torch.bfloat16, seed=7)
    offs = torch.tensor(OFFSETS["uneven, rows past the end"], dtype=torch.int32)

    def layer(x, weight, offs):
        return F.grouped_mm(torch.relu(x), weight, offs=offs).square().sum()
    expected_x, expected_weight = x.clone().requires_grad_(), weight.clone().requires_grad_()
    layer(expected_x, expected_weight, offs).backward()
    kiln_x, kiln_weight = x.to("kiln").requires_grad_(), weight.to("kiln").requires_grad_()
    torch_kiln.clear_op_tracking()
    torch.compile(layer, backend="kiln")(kiln_x, kiln_weight, offs.to("kiln")).backward()
    assert torch_kiln.get_fallback_ops() == {}
    assert_ran_natively(3)  # extern calls of the graphs, into Kiln's kernel
    end = OFFSETS["uneven, rows past the end"][-1]
    torch.testing.assert_close(kiln_x.grad.cpu()[:end], expected_x.grad[:end], **TOLERANCE[torch.bfloat16])
    torch.testing.assert_close(kiln_weight.grad.cpu(), expected_weight.grad, **TOLERANCE[torch.bfloat16])
