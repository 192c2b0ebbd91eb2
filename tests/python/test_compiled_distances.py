"""Compiled distances and statistics: dot, equal (what cov and corrcoef use),
cdist and pdist (forward and backward), differentially against the CPU."""
import pytest
import torch

from differential import ALL, FLOATING, check, compiled_only, make, variants


def half_tolerance(dtype):
    # Sums of products: the CPU and kiln add in different orders.
    return {torch.float16: (5e-3, 5e-3), torch.bfloat16: (3e-2, 3e-2)}.get(dtype)


@pytest.mark.parametrize("dtype", ALL)
def test_dot_over_dtypes_and_layouts(dtype):
    for layout, x in variants((37,), dtype, low=-2.0, high=2.0):
        if x.dim() != 1:
            check(torch.dot, x, x, message=layout)
            continue
        y = make(tuple(x.shape), dtype, low=-2.0, high=2.0)
        compiled_only(lambda: check(torch.dot, x, y, tolerance=half_tolerance(dtype), message=layout))
    x = make((12,), torch.float32)
    compiled_only(lambda: check(torch.dot, x[::3], x[1::3], message="strided"))
    compiled_only(lambda: check(lambda a, b: torch.dot(a, b, out=torch.empty(0, device=a.device)),
                                x, x, message="out="))
    check(torch.dot, x, x.double(), message="mixed dtypes")
    check(torch.dot, x, x[:5], message="sizes differ")
    check(torch.dot, x.reshape(3, 4), x.reshape(3, 4), message="2-D")


@pytest.mark.parametrize("dtype", ALL)
def test_equal(dtype):
    x = make((4, 5), dtype)
    y = x.clone()
    compiled_only(lambda: check(torch.equal, x, y, message="equal"))
    z = y.clone()
    z[2, 3] = (not bool(z[2, 3])) if dtype == torch.bool else z[2, 3] + 1
    compiled_only(lambda: check(torch.equal, x, z, message="one element differs"))
    compiled_only(lambda: check(torch.equal, x, x.t().contiguous().t(), message="layouts"))
    compiled_only(lambda: check(torch.equal, x, x[:3], message="sizes differ"))
    compiled_only(lambda: check(torch.equal, x[:0], x[:0], message="empty"))
    compiled_only(lambda: check(torch.equal, x.double(), x, message="mixed dtypes"))
    if dtype.is_floating_point:
        nan = torch.full((3,), float("nan"), dtype=dtype)
        compiled_only(lambda: check(torch.equal, nan, nan.clone(), message="NaN"))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
def test_cov_and_corrcoef_stay_on_device(dtype):
    x = make((3, 7), dtype)
    weights = torch.randint(1, 4, (7,))
    aweights = make((7,), torch.float32, low=0.1, high=1.0)
    compiled_only(lambda: check(torch.cov, x))
    compiled_only(lambda: check(torch.cov, x, correction=0, fweights=weights, aweights=aweights))
    compiled_only(lambda: check(torch.corrcoef, x))
