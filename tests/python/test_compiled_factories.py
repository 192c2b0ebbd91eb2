"""Compiled factories, fills, casts and copies on the device, differentially
against the CPU."""
import pytest
import torch

from differential import ALL, FLOATING, INTEGRAL, assert_same, check, compiled_only, make, variants

DTYPES = ALL + [torch.uint8, torch.int8, torch.int16]


def on_both(factory, message=""):
    """factory(device) on the CPU and on kiln, compared; errors must match."""
    try:
        expected = factory("cpu")
    except Exception as error:  # noqa: BLE001
        with pytest.raises(type(error)):
            factory("kiln")
        return
    actual = compiled_only(lambda: factory("kiln"))
    assert_same(expected, actual, message)


@pytest.mark.parametrize("dtype", FLOATING + INTEGRAL + [torch.int8, torch.uint8, torch.bool])
def test_arange(dtype):
    for arguments in [(10,), (2, 17), (-3, 40, 3), (5, -7, -2), (0, 1, 0.1), (-1.5, 2.25, 0.25),
                      (0,), (3, 3)]:
        on_both(lambda device: torch.arange(*arguments, dtype=dtype, device=device),
                message=f"{dtype} {arguments}")


def test_arange_errors_and_out():
    on_both(lambda device: torch.arange(0, 10, 0, device=device), message="zero step")
    on_both(lambda device: torch.arange(10, 0, 1, device=device), message="wrong sign")
    on_both(lambda device: torch.arange(0, float("inf"), device=device), message="infinite")
    on_both(lambda device: torch.arange(0, 300, 7, dtype=torch.int8, device=device), message="overflow raises")

    def into_strided(device):
        out = torch.zeros(20, device=device)[::2]
        return torch.arange(0, 10, out=out), out

    on_both(into_strided, message="strided out")

    def into_matrix(device):
        out = torch.zeros(2, 5, device=device)
        return torch.arange(10, out=out)

    on_both(into_matrix, message="out with the right number of elements keeps its shape")


@pytest.mark.parametrize("dtype", FLOATING + INTEGRAL + [torch.int8, torch.bool])
def test_linspace(dtype):
    for start, end, steps in [(0, 1, 7), (-3, 5, 2), (2, -2, 9), (0, 100, 5), (1, 1, 4), (3, 8, 1),
                              (0, 1, 0), (-10, 10, 6)]:
        on_both(lambda device: torch.linspace(start, end, steps, dtype=dtype, device=device),
                message=f"{dtype} {start} {end} {steps}")
    on_both(lambda device: torch.linspace(0, 1, -1, device=device), message="negative steps")


@pytest.mark.parametrize("dtype", FLOATING + INTEGRAL + [torch.int8])
def test_logspace(dtype):
    for start, end, steps, base in [(0, 1, 7, 10.0), (-3, 5, 2, 2.0), (2, -2, 9, 2.5), (0, 6, 5, 3.0),
                                    (1, 1, 4, 10.0), (3, 8, 1, 2.0), (0, 1, 0, 10.0),
                                    (-2, 2, 6, 0.5)]:
        on_both(lambda device: torch.logspace(start, end, steps, base, dtype=dtype, device=device),
                message=f"{dtype} {start} {end} {steps} {base}")
    on_both(lambda device: torch.logspace(0, 1, -1, device=device), message="negative steps")
    compiled_only(lambda: on_both(lambda device: torch.logspace(
        -1, 2, 10, dtype=dtype, device=device), message="compiled"))

    def into_strided(device):
        out = torch.zeros(30, dtype=dtype, device=device)[::3]
        return torch.logspace(0, 2, 10, 2.0, out=out), out

    on_both(into_strided, message="strided out")


def test_linspace_long_and_strided():
    # Long enough for the CPU's vectorized loop (whose chunks start from a
    # rounded base): the tolerance absorbs the last-bit differences.
    for dtype in FLOATING:
        on_both(lambda device: torch.linspace(-7, 13, 1001, dtype=dtype, device=device), message=str(dtype))

    def into_strided(device):
        out = torch.zeros(30, device=device)[::3]
        return torch.linspace(0, 1, 10, out=out), out

    on_both(into_strided, message="strided out")


@pytest.mark.parametrize("dtype", DTYPES)
def test_eye(dtype):
    for shape in [(3,), (2, 5), (5, 2), (0,), (1, 1), (4, 0)]:
        on_both(lambda device: torch.eye(*shape, dtype=dtype, device=device), message=f"{dtype} {shape}")
    on_both(lambda device: torch.eye(-1, device=device), message="negative n")

    def into_transposed(device):
        out = torch.full((4, 3), 7, dtype=dtype, device=device).t()
        return torch.eye(3, 4, out=out), out

    on_both(into_transposed, message="strided out")


@pytest.mark.parametrize("dtype", DTYPES)
def test_tril_triu(dtype):
    for layout, x in variants((5, 7), dtype):
        for diagonal in [0, 1, -2, 9, -9]:
            if x.dim() < 2:
                check(torch.tril, x, diagonal, message=f"{layout} raises")
                continue
            compiled_only(lambda: check(torch.tril, x, diagonal, message=f"tril {dtype} {layout} {diagonal}"))
            compiled_only(lambda: check(torch.triu, x, diagonal, message=f"triu {dtype} {layout} {diagonal}"))


def test_tril_triu_batches_and_forms():
    x = make((2, 3, 4, 5), torch.float32)
    check(torch.tril, x, message="batched")
    check(torch.triu, x.transpose(0, 2), 1, message="batched, permuted")
    check(torch.tril, make((3, 1, 4, 4), torch.float32).expand(3, 2, 4, 4), message="expanded batch")
    check(lambda a: a.clone().tril_(-1), x, message="tril_")
    check(lambda a: a.clone().triu_(1), x, message="triu_")
    check(lambda a: a.t().clone().t().tril_(), make((4, 6), torch.float32), message="tril_ strided")
    check(lambda a: torch.triu(a, 1, out=torch.empty(0, device=a.device)), x, message="out")
    check(lambda a: torch.tril(a, out=torch.empty(0, dtype=torch.int64, device=a.device)), x,
          message="out dtype raises")
    check(lambda a: torch.tril(a.sum()), x, message="0-dim raises")
    check(torch.tril, make((9, 2, 1, 2, 1, 2, 1, 2, 3, 4), torch.float32),
          message="ten dims (batch dims merge)")
    check(torch.triu, make((2, 3, 2, 3, 2, 3, 2, 3, 3, 4), torch.float32).transpose(1, 6),
          message="ten dims, partly mergeable")


def test_tril_backward():
    x = make((4, 4), torch.float32).requires_grad_()
    kiln_x = x.detach().to("kiln").requires_grad_()
    (torch.tril(x) * 3).sum().backward()
    compiled_only(lambda: (torch.tril(kiln_x) * 3).sum().backward())
    torch.testing.assert_close(kiln_x.grad.cpu(), x.grad)


@pytest.mark.parametrize("dtype", DTYPES)
def test_fill_strided(dtype):
    for value in [0, 1, -3, 2.5, True]:
        def fill(device):
            x = torch.zeros(6, 8, dtype=dtype, device=device)
            x.t()[::2].fill_(value)
            x[:, 1].fill_(value)
            return x

        on_both(fill, message=f"{dtype} {value}")
    on_both(lambda device: torch.zeros(4, 4, dtype=dtype, device=device)[::2].fill_(1e10),
            message="overflow raises (floats saturate to inf only in float16)")
    on_both(lambda device: torch.full((3, 2), 4, dtype=dtype, device=device).t().zero_(), message="zero_")


@pytest.mark.parametrize("source_dtype", DTYPES)
def test_casts(source_dtype):
    x = make((6, 5), source_dtype, low=-200, high=200)
    if source_dtype.is_floating_point:
        x = torch.cat([x.flatten(), torch.tensor([0.5, -0.5, 1.5, -1.7, 2.5, 0.0, -0.0, 65519.0,
                                                  1e-8]).to(source_dtype)])
    for target in DTYPES:
        source = x
        if source_dtype.is_floating_point and not target.is_floating_point and target != torch.bool:
            # Out-of-range float -> integer conversions are undefined in C++.
            info = torch.iinfo(target)
            source = x.double().clamp(info.min, info.max).to(source_dtype)
        compiled_only(lambda: check(lambda a: a.to(target), source,
                                    message=f"{source_dtype} -> {target}"))


def test_cast_rounding():
    check(lambda a: a.to(torch.float16), torch.tensor([1.0 + 2 ** -11, 1.0 + 3 * 2 ** -11, 65520.0, 1e-8,
                                                       float("nan"), float("inf")], dtype=torch.float64))
    check(lambda a: a.to(torch.bfloat16), torch.tensor([1.0 + 2 ** -8, 1.0 + 3 * 2 ** -8, 3.4e38,
                                                        float("nan")], dtype=torch.float32))
    check(lambda a: a.to(torch.bfloat16), torch.tensor([2 ** 60 + 1, -(2 ** 40) - 3], dtype=torch.int64))
    check(lambda a: a.to(torch.bool), torch.tensor([0.0, -0.0, 0.1, float("nan"), float("inf")]))
    check(lambda a: a.to(torch.int32), torch.tensor([-1.9, -0.5, 0.5, 1.9, 2.5]))
    check(lambda a: a.to(torch.uint8), torch.tensor([-1, 256, 257, -255], dtype=torch.int64))


def test_copy_between_layouts_and_dtypes():
    for layout, x in variants((5, 7), torch.float32):
        def into_transposed(a):
            out = torch.empty(tuple(reversed(a.shape)), dtype=torch.float16, device=a.device).transpose(0, -1) \
                if a.dim() >= 2 else torch.empty(a.shape, dtype=torch.float16, device=a.device)
            out.copy_(a)
            return out

        compiled_only(lambda: check(into_transposed, x, message=layout))
        compiled_only(lambda: check(lambda a: a.contiguous(), x, message=f"contiguous {layout}"))
        compiled_only(lambda: check(lambda a: a.clone(), x, message=f"clone {layout}"))
    check(lambda a, b: torch.empty(4, 3, device=a.device).copy_(a), make((3,), torch.int64),
          message="broadcast source")
    check(lambda a: a[1:].copy_(a[:-1]), make((5,), torch.float32), message="partial overlap raises")
    check(lambda a: a.expand(3, 4).copy_(torch.ones(3, 4, device=a.device)), make((4,), torch.float32),
          message="internal overlap raises")


def test_to_copy_and_autograd():
    x = make((3, 4), torch.float32).requires_grad_()
    kiln_x = x.detach().to("kiln").requires_grad_()
    (x.to(torch.float64) * 2).sum().backward()
    compiled_only(lambda: (kiln_x.to(torch.float64) * 2).sum().backward())
    torch.testing.assert_close(kiln_x.grad.cpu(), x.grad)
    check(lambda a: torch.ops.aten._to_copy(a, dtype=torch.bfloat16), make((4, 2), torch.float32).t())


def test_large_tensors_split_over_threads():
    # Over the launch's grain size, so the kernels run in pieces on the thread
    # pool: coordinates and linear indices must hold across the splits.
    x = make((600, 700), torch.float32)
    check(torch.tril, x, 3)
    check(torch.triu, x.t(), -2)
    check(lambda a: a.t().to(torch.bfloat16), x)
    check(lambda a: a.t()[::2].clone().fill_(3), x)
    on_both(lambda device: torch.arange(0, 300000, 1.5, device=device))
    on_both(lambda device: torch.linspace(-5, 5, 300001, device=device))
    on_both(lambda device: torch.eye(700, 650, device=device))
