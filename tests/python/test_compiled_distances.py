"""Distances and statistics: dot (library path), equal (compiled, in
binary_extra_ops.cc; what cov and corrcoef use),
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
        check(torch.dot, x, y, tolerance=half_tolerance(dtype), message=layout)
    x = make((12,), torch.float32)
    check(torch.dot, x[::3], x[1::3], message="strided")
    check(lambda a, b: torch.dot(a, b, out=torch.empty(0, device=a.device)), x, x, message="out=")
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


NORMS = [0.0, 1.0, 0.5, 1.5, 2.0, 3.0, float("inf")]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("p", NORMS)
def test_cdist_forward_and_backward(dtype, p):
    # Rows at or below 25: the direct kernel (compute_mode 0 and p = 2 takes
    # the matrix-product formula above that).
    x1 = make((2, 5, 7), dtype)
    x2 = make((1, 6, 7), dtype)
    grad = make((2, 5, 6), dtype)

    def forward_backward(a, b, g):
        a = a.clone().requires_grad_()
        b = b.clone().requires_grad_()
        distances = torch.cdist(a, b, p=p)
        distances.backward(g)
        return distances, a.grad, b.grad

    compiled_only(lambda: check(forward_backward, x1, x2, grad, tolerance=(1e-4, 1e-5)))
    compiled_only(lambda: check(torch.cdist, x1.transpose(1, 2).contiguous().transpose(1, 2), x2,
                                p=p, message="non-contiguous"))
    # A repeated row makes a zero distance: the gradients' 0 / 0 case.
    repeated = torch.cat([x1[:1, :2], x1[:1, :2]], dim=1)
    compiled_only(lambda: check(forward_backward, repeated, repeated, make((1, 4, 4), dtype),
                                tolerance=(1e-4, 1e-5), message="zero distances"))


@pytest.mark.parametrize("mode", ["use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                                  "donot_use_mm_for_euclid_dist"])
def test_cdist_compute_modes_and_edges(mode):
    x1, x2 = make((30, 4), torch.float32), make((27, 4), torch.float32)
    compiled_only(lambda: check(torch.cdist, x1, x2, compute_mode=mode, tolerance=(1e-4, 1e-4)))
    for shape1, shape2 in [((0, 3), (4, 3)), ((3, 0), (4, 0)), ((2, 0, 3), (4, 3))]:
        compiled_only(lambda: check(torch.cdist, make(shape1, torch.float32),
                                    make(shape2, torch.float32), compute_mode=mode,
                                    message=f"{shape1} {shape2}"))


def test_cdist_errors():
    x = make((3, 4), torch.float32)
    check(torch.cdist, x.half(), x.half(), message="half")
    check(torch.cdist, x, x.double(), message="mixed dtypes")
    check(torch.cdist, x.long(), x.long(), message="integers")
    check(torch.cdist, x, x[:, :3], message="columns differ")
    check(torch.cdist, x, x, p=-1.0, message="negative p")
    check(torch.cdist, x[0], x, message="1-D")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("p", NORMS)
def test_pdist_forward_and_backward(dtype, p):
    x = make((6, 5), dtype)
    x[3] = x[1]  # a zero distance
    grad = make((15,), dtype)

    def forward_backward(a, g):
        a = a.clone().requires_grad_()
        distances = torch.nn.functional.pdist(a, p=p)
        distances.backward(g)
        return distances, a.grad

    compiled_only(lambda: check(forward_backward, x, grad, tolerance=(1e-4, 1e-5)))
    compiled_only(lambda: check(torch.nn.functional.pdist, x.t().contiguous().t(), p=p,
                                message="non-contiguous"))


def test_pdist_edges_and_errors():
    for shape in [(1, 3), (0, 3), (4, 0)]:
        compiled_only(lambda: check(torch.nn.functional.pdist, make(shape, torch.float32),
                                    message=str(shape)))
    x = make((4, 3), torch.float32)
    check(torch.nn.functional.pdist, x.half(), message="half")
    check(torch.nn.functional.pdist, x, p=-1.0, message="negative p")
    check(torch.ops.aten._pdist_forward, x.t(), 2.0, message="non-contiguous")
    check(torch.nn.functional.pdist, x[0], message="1-D")


@pytest.mark.parametrize("dtype", ALL + [torch.uint8, torch.int8])
def test_hash_tensor(dtype):
    for layout, x in variants((5, 7), dtype):
        if x.numel() == 0:
            check(torch.hash_tensor, x, message=layout + " needs a dim")
            check(torch.hash_tensor, x, dim=1, message=layout)
            continue
        compiled_only(lambda: check(torch.hash_tensor, x, message=layout))
        for dims in ([0], [-1], [0, 1]):
            if x.dim() == 2:
                compiled_only(lambda: check(torch.hash_tensor, x, dim=dims, keepdim=True,
                                            message=f"{layout} {dims}"))
                compiled_only(lambda: check(torch.hash_tensor, x, dim=dims, message=f"{layout} {dims}"))
    x = make((3, 5, 2), dtype)
    compiled_only(lambda: check(torch.hash_tensor, x, dim=[0, 2], message="outer dims"))
    compiled_only(lambda: check(lambda t: torch.hash_tensor(t, dim=1, out=torch.empty(0, dtype=torch.uint64, device=t.device)),
                                x, message="out="))
    check(torch.hash_tensor, x, mode=1, message="unknown mode")
