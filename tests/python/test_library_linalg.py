"""The library path for linear algebra (library/library_call.h): LAPACK and BLAS
run on aliases of kiln memory. Differential against the CPU over dtypes,
transposed, batched (broadcast) and zero-size inputs, 0-dim inputs (which the
CPU refuses), backward, out= forms, data-dependent errors raised at the call,
and queued calls ordered on the stream."""
import pytest
import torch

import torch_kiln
from differential import check, compiled_only, to_kiln

DTYPES = [torch.float32, torch.float64]
REFUSED_DTYPES = [torch.float16, torch.bfloat16, torch.int64, torch.bool]
TOLERANCE = (1e-4, 1e-4)  # the same LAPACK call on differently aligned memory


def general(*shape, dtype=torch.float32, seed=0):
    """Well-conditioned square matrices: random plus a dominant diagonal."""
    generator = torch.Generator().manual_seed(seed)
    matrix = torch.randn(shape, generator=generator, dtype=torch.float64)
    if len(shape) >= 2 and shape[-1] == shape[-2] and shape[-1] > 0:
        matrix = matrix + shape[-1] * torch.eye(shape[-1], dtype=torch.float64)
    return matrix.to(dtype)


def positive_definite(*shape, dtype=torch.float32, seed=0):
    matrix = general(*shape, dtype=torch.float64, seed=seed)
    return (matrix @ matrix.mT + torch.eye(shape[-1], dtype=torch.float64)).to(dtype)


def layouts(*shape, dtype=torch.float32, maker=general):
    """(name, matrix) pairs: contiguous, transposed, batched, zero-size batch, 0x0."""
    yield "contiguous", maker(*shape, dtype=dtype)
    yield "transposed", maker(*shape, dtype=dtype).mT.contiguous().mT
    yield "batched", maker(2, 3, *shape, dtype=dtype)
    yield "zero_batch", maker(0, *shape, dtype=dtype)
    yield "empty", maker(0, 0, dtype=dtype)


def rhs(*shape, dtype=torch.float32):
    return general(*shape, dtype=dtype, seed=7)


def sign_fixed(fn):
    """Eigen/singular vectors are defined up to sign: compare |v|."""
    return lambda *a: tuple(t.abs() for t in fn(*a))


SQUARE_OPS = {
    "inv": torch.linalg.inv,
    "inv_ex": lambda a: torch.linalg.inv_ex(a)[0],
    "det": torch.linalg.det,
    "logdet": lambda a: torch.logdet(a @ a.mT),
    "slogdet": torch.linalg.slogdet,
    "lu_factor": torch.linalg.lu_factor,
    "lu": torch.linalg.lu,
    "qr": torch.linalg.qr,
    "qr_r": lambda a: torch.linalg.qr(a, mode="r")[1],
    "svdvals": torch.linalg.svdvals,
    "svd": sign_fixed(lambda a: torch.linalg.svd(a)),
    "pinv": torch.linalg.pinv,
    "matrix_rank": torch.linalg.matrix_rank,
    "matrix_exp": torch.linalg.matrix_exp,
    "matrix_power": lambda a: torch.linalg.matrix_power(a, -2),
    "cond": torch.linalg.cond,
    "nuclear_norm": lambda a: torch.linalg.matrix_norm(a, "nuc"),
    "geqrf": torch.geqrf,
    "householder_product": lambda a: torch.linalg.householder_product(*torch.geqrf(a)),
    "ormqr": lambda a: torch.ormqr(*torch.geqrf(a), a),
    "eigvals": torch.linalg.eigvals,
    "solve": lambda a: torch.linalg.solve(a, a.sum(-1)),
    "solve_triangular": lambda a: torch.linalg.solve_triangular(a.triu(), a, upper=True),
    "triangular_solve": lambda a: torch.triangular_solve(a, a.tril(), upper=False),
    "lu_solve": lambda a: torch.linalg.lu_solve(*torch.linalg.lu_factor(a), a),
    "lu_unpack": lambda a: torch.lu_unpack(*torch.linalg.lu_factor(a)),
    "lstsq": lambda a: torch.linalg.lstsq(a, a.sum(-1, keepdim=True)).solution,
}

SYMMETRIC_OPS = {
    "cholesky": torch.linalg.cholesky,
    "cholesky_ex": lambda a: torch.linalg.cholesky_ex(a)[0],
    "eigh": sign_fixed(torch.linalg.eigh),
    "eigvalsh": torch.linalg.eigvalsh,
    "cholesky_solve": lambda a: torch.cholesky_solve(a, torch.linalg.cholesky(a)),
    "cholesky_inverse": lambda a: torch.cholesky_inverse(torch.linalg.cholesky(a)),
    "ldl": lambda a: torch.linalg.ldl_solve(*torch.linalg.ldl_factor(a), a),
    "pinv_hermitian": lambda a: torch.linalg.pinv(a, hermitian=True),
}


def library_only(fn):
    """Runs fn() and asserts no op fell back and a library kernel ran."""
    result = compiled_only(fn)
    executed = torch_kiln.get_executed_ops()
    assert any(paths.get("library") for paths in executed.values()), executed
    return result


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(SQUARE_OPS))
def test_square_matrix_ops(name, dtype):
    fn = SQUARE_OPS[name]
    for layout, matrix in layouts(4, 4, dtype=dtype):
        check(fn, matrix, message=f"{name} {layout}", tolerance=TOLERANCE)
    library_only(lambda: fn(to_kiln(general(4, 4, dtype=dtype))))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(SYMMETRIC_OPS))
def test_symmetric_matrix_ops(name, dtype):
    fn = SYMMETRIC_OPS[name]
    for layout, matrix in layouts(4, 4, dtype=dtype, maker=positive_definite):
        check(fn, matrix, message=f"{name} {layout}", tolerance=TOLERANCE)
    library_only(lambda: fn(to_kiln(positive_definite(4, 4, dtype=dtype))))


@pytest.mark.parametrize("name", ["inv", "det", "qr", "svdvals", "lu_factor", "eigvals",
                                  "solve_triangular", "matrix_exp"])
@pytest.mark.parametrize("dtype", REFUSED_DTYPES)
def test_dtypes_the_cpu_refuses_are_refused_at_the_call(name, dtype):
    check(SQUARE_OPS[name], general(3, 3).to(dtype), message=f"{name} {dtype}")


@pytest.mark.parametrize("name", ["inv", "det", "qr", "cholesky", "eigvalsh", "svdvals"])
def test_zero_dim_and_non_square_inputs_raise_as_on_the_cpu(name):
    fn = SQUARE_OPS.get(name) or SYMMETRIC_OPS[name]
    check(fn, torch.tensor(2.0), message=f"{name} 0-dim")
    if name not in ("qr", "svdvals"):
        check(fn, general(3, 4), message=f"{name} 3x4")


def test_rectangular_and_broadcast_solves():
    a, b = general(2, 1, 4, 4), rhs(3, 4, 2)          # batch dimensions broadcast
    check(torch.linalg.solve, a, b, tolerance=TOLERANCE)
    check(lambda x, y: torch.linalg.lstsq(x, y).solution, general(6, 3), rhs(6, 2),
          tolerance=TOLERANCE)
    check(torch.linalg.pinv, general(5, 3), tolerance=TOLERANCE)
    check(lambda x: torch.linalg.qr(x, mode="complete"), general(5, 3), tolerance=TOLERANCE)
    check(lambda x: torch.linalg.svd(x, full_matrices=False)[1], general(3, 5),
          tolerance=TOLERANCE)


def test_singular_matrices_raise_at_the_call():
    singular = torch.zeros(3, 3, device="kiln")
    for fn in (torch.linalg.inv, torch.linalg.cholesky,
               lambda a: torch.linalg.solve(a, a[:, 0])):
        with pytest.raises(torch.linalg.LinAlgError):
            fn(singular)
    assert torch.equal(singular.cpu(), torch.zeros(3, 3))
    # The _ex forms report instead of raising, as on the CPU.
    inverse, info = torch.linalg.inv_ex(singular)
    assert info.item() == torch.linalg.inv_ex(torch.zeros(3, 3))[1].item() != 0
    factor, info = torch.linalg.cholesky_ex(-torch.eye(2, device="kiln"))
    assert info.item() == 1


def test_bad_calls_raise_at_once_and_leave_outputs_untouched():
    out = torch.full((3, 3), 7.0, device="kiln")
    with pytest.raises(RuntimeError, match="square"):
        torch.linalg.inv(general(3, 4).to("kiln"), out=out)
    with pytest.raises(RuntimeError, match="same device"):
        torch.dot(rhs(3).to("kiln"), rhs(3))
    torch.kiln.synchronize()
    assert torch.equal(out.cpu(), torch.full((3, 3), 7.0))


def test_out_forms_write_and_resize_their_outputs():
    a = general(4, 4)
    out = torch.empty(0, device="kiln")
    torch.linalg.inv(a.to("kiln"), out=out)
    torch.testing.assert_close(out.cpu(), torch.linalg.inv(a), rtol=1e-4, atol=1e-4)
    q, r = torch.empty(4, 4, device="kiln"), torch.empty(4, 4, device="kiln")
    torch.linalg.qr(a.to("kiln"), out=(q, r))
    expected_q, expected_r = torch.linalg.qr(a)
    torch.testing.assert_close((q.cpu(), r.cpu()), (expected_q, expected_r), rtol=1e-4,
                               atol=1e-4)
    eigenvalues = torch.empty(0, device="kiln")
    torch.linalg.eigvalsh(positive_definite(3, 3).to("kiln"), out=eigenvalues)
    torch.testing.assert_close(eigenvalues.cpu(), torch.linalg.eigvalsh(positive_definite(3, 3)))


def test_queued_factorization_is_ordered_on_the_stream():
    a = general(96, 96)
    device_a = a.to("kiln")
    lu, pivots = torch.linalg.lu_factor(device_a)    # queued
    device_a.zero_()                                  # ordered after the factorization
    expected_lu, expected_pivots = torch.linalg.lu_factor(a)
    torch.testing.assert_close(lu.cpu(), expected_lu, rtol=1e-4, atol=1e-4)
    assert torch.equal(pivots.cpu(), expected_pivots)


GRADIENT_OPS = {
    "inv": (torch.linalg.inv, general),
    "det": (torch.linalg.det, general),
    "slogdet": (lambda a: torch.linalg.slogdet(a)[1], general),
    "solve": (lambda a: torch.linalg.solve(a, a[..., 0]), general),
    "qr": (lambda a: torch.linalg.qr(a)[1], general),
    "lu": (lambda a: torch.linalg.lu(a)[2], general),
    "svdvals": (torch.linalg.svdvals, general),
    "pinv": (torch.linalg.pinv, general),
    "matrix_exp": (torch.linalg.matrix_exp, general),
    "lstsq": (lambda a: torch.linalg.lstsq(a, a[..., :1]).solution, general),
    "solve_triangular": (lambda a: torch.linalg.solve_triangular(a.triu(), a, upper=True),
                         general),
    "cholesky": (torch.linalg.cholesky, positive_definite),
    "eigvalsh": (torch.linalg.eigvalsh, positive_definite),
    "cholesky_inverse": (lambda a: torch.cholesky_inverse(torch.linalg.cholesky(a)),
                         positive_definite),
}


@pytest.mark.parametrize("name", sorted(GRADIENT_OPS))
def test_backward(name):
    fn, maker = GRADIENT_OPS[name]
    matrix = maker(2, 4, 4)
    cpu = matrix.clone().requires_grad_()
    device = matrix.to("kiln").requires_grad_()
    expected = fn(cpu)
    weights = torch.randn(expected.shape, generator=torch.Generator().manual_seed(3))
    (expected * weights).sum().backward()
    compiled_only(lambda: (fn(device) * weights.to("kiln")).sum().backward())
    torch.testing.assert_close(device.grad.cpu(), cpu.grad, rtol=1e-3, atol=1e-3)


MATMUL_LEFTOVERS = {
    "dot": (torch.dot, [(5,), (5,)]),
    "vdot": (torch.vdot, [(5,), (5,)]),
    "mv": (torch.mv, [(3, 5), (5,)]),
    "addmv": (lambda b, m, v: torch.addmv(b, m, v, beta=0.5, alpha=2), [(1,), (3, 5), (5,)]),
    "inner": (torch.inner, [(2, 5), (3, 5)]),
    "matmul_vector": (torch.matmul, [(2, 3, 5), (5,)]),
    "tensordot": (lambda a, b: torch.tensordot(a, b, dims=2), [(2, 3, 4), (3, 4, 5)]),
    "trace": (torch.trace, [(4, 3)]),
    "addbmm": (torch.addbmm, [(3, 5), (2, 3, 4), (2, 4, 5)]),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.float16,
                                   torch.bfloat16])
@pytest.mark.parametrize("name", sorted(MATMUL_LEFTOVERS))
def test_matmul_leftovers(name, dtype):
    fn, shapes = MATMUL_LEFTOVERS[name]
    inputs = [general(*shape, seed=index).mul(2).round().to(dtype)
              for index, shape in enumerate(shapes)]
    check(fn, *inputs, message=name, tolerance=(1e-2, 1e-2))
    zero_size = [general(*((0,) * len(shape))).to(dtype) for shape in shapes]
    if name in ("dot", "vdot", "trace", "inner"):
        check(fn, *zero_size, message=f"{name} zero-size")
    if dtype == torch.float32:
        compiled_only(lambda: fn(*to_kiln(inputs)))
        transposed = [t.mT.contiguous().mT if t.dim() >= 2 else t[::1] for t in inputs]
        check(fn, *transposed, message=f"{name} transposed", tolerance=(1e-4, 1e-4))


def test_trace_and_dot_backward():
    for fn, shapes in (MATMUL_LEFTOVERS["trace"], MATMUL_LEFTOVERS["dot"],
                       MATMUL_LEFTOVERS["mv"]):
        inputs = [general(*shape, seed=i) for i, shape in enumerate(shapes)]
        cpu = [t.clone().requires_grad_() for t in inputs]
        device = [t.to("kiln").requires_grad_() for t in inputs]
        fn(*cpu).sum().backward()
        compiled_only(lambda: fn(*device).sum().backward())
        for expected, actual in zip(cpu, device):
            torch.testing.assert_close(actual.grad.cpu(), expected.grad, rtol=1e-4, atol=1e-4)


def test_complex_and_lazily_conjugated_inputs():
    a = torch.randn(3, 4, 4, dtype=torch.complex64, generator=torch.Generator().manual_seed(5))
    a = a + 4 * torch.eye(4)
    for fn in (torch.linalg.inv, torch.linalg.det, torch.linalg.svdvals, torch.linalg.eigvals,
               lambda x: torch.linalg.qr(x)[1]):
        check(fn, a, tolerance=TOLERANCE)
        # A conj() view is resolved by the CPU kernel reading the alias.
        check(lambda x: fn(x.conj()), a, message="conj view", tolerance=TOLERANCE)
    check(lambda x: torch.vdot(x[0, 0].conj(), x[0, 1]), a, tolerance=TOLERANCE)


def test_out_argument_with_other_strides():
    a = general(4, 4)
    q = torch.empty(4, 4, device="kiln").mT            # column-major out
    r = torch.empty(4, 4, device="kiln")
    torch.linalg.qr(a.to("kiln"), out=(q, r))
    torch.testing.assert_close((q.cpu(), r.cpu()), torch.linalg.qr(a), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_in_place_and_out_forms_of_the_matmul_leftovers(dtype):
    bias, left, right = (general(*shape, seed=i).round().to(dtype)
                         for i, shape in enumerate([(3, 5), (2, 3, 4), (2, 4, 5)]))
    check(lambda b, x, y: b.clone().addbmm_(x, y, beta=2, alpha=3), bias, left, right)
    check(lambda b, x, y: torch.addbmm(b, x, y, out=torch.empty(0, dtype=b.dtype,
                                                                device=b.device)),
          bias, left, right)
    check(lambda m, v: m[0].clone()[:, 0].addmv_(m[0], v[0, :, 0]), left, right)


def test_queued_matmul_reads_the_layouts_of_the_call():
    # The work runs later: a transpose in place right after the call must
    # change neither what it reads nor where it writes.
    a, b = general(300, 200), general(200, 300, seed=1)
    product = torch.mm(a.to("kiln"), b.to("kiln"))
    product.t_()
    device_a = a.to("kiln")
    second = torch.mm(device_a, b.to("kiln"))
    device_a.t_()
    torch.testing.assert_close(product.cpu(), (a @ b).t(), rtol=1e-4, atol=1e-3)
    torch.testing.assert_close(second.cpu(), a @ b, rtol=1e-4, atol=1e-3)
