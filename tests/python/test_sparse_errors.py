"""Sparse layouts are not supported on kiln: every way of making a sparse
kiln tensor raises NotImplementedError naming the layout and saying what to
do instead, and leaves its inputs as they were."""
import pytest
import torch

import torch_kiln

KILN = "kiln"
ADVICE = r"Keep sparse tensors on the CPU.*\.to_dense\(\)"

INDICES = torch.tensor([[0, 1], [1, 0]])
VALUES = torch.tensor([1.0, 2.0])
COMPRESSED, PLAIN = torch.tensor([0, 1, 2]), torch.tensor([1, 0])
BLOCKS = torch.ones(2, 1, 1)

CASES = {
    "coo_constructor": ("torch.sparse_coo", lambda: torch.sparse_coo_tensor(INDICES, VALUES, (2, 2), device=KILN)),
    "coo_constructor_kiln_members": (
        "torch.sparse_coo", lambda: torch.sparse_coo_tensor(INDICES.to(KILN), VALUES.to(KILN), (2, 2))),
    "csr_constructor": ("torch.sparse_csr",
                        lambda: torch.sparse_csr_tensor(COMPRESSED, PLAIN, VALUES, (2, 2), device=KILN)),
    "csr_constructor_no_size": ("torch.sparse_csr",
                                lambda: torch.sparse_csr_tensor(COMPRESSED, PLAIN, VALUES, device=KILN)),
    "csc_constructor": ("torch.sparse_csc",
                        lambda: torch.sparse_csc_tensor(COMPRESSED, PLAIN, VALUES, (2, 2), device=KILN)),
    "bsr_constructor": ("torch.sparse_bsr",
                        lambda: torch.sparse_bsr_tensor(COMPRESSED, PLAIN, BLOCKS, (2, 2), device=KILN)),
    "bsc_constructor": ("torch.sparse_bsc",
                        lambda: torch.sparse_bsc_tensor(COMPRESSED, PLAIN, BLOCKS, (2, 2), device=KILN)),
    "compressed_constructor": ("torch.sparse_csc", lambda: torch.sparse_compressed_tensor(
        COMPRESSED, PLAIN, VALUES, (2, 2), layout=torch.sparse_csc, device=KILN)),
    "empty_coo": ("torch.sparse_coo", lambda: torch.empty(2, 2, layout=torch.sparse_coo, device=KILN)),
    "zeros_coo": ("torch.sparse_coo", lambda: torch.zeros(2, 2, layout=torch.sparse_coo, device=KILN)),
    "empty_csr": ("torch.sparse_csr", lambda: torch.empty(2, 2, layout=torch.sparse_csr, device=KILN)),
}

DENSE_CONVERSIONS = {
    "to_sparse": ("torch.sparse_coo", lambda t: t.to_sparse()),
    "to_sparse_sparse_dim": ("torch.sparse_coo", lambda t: t.to_sparse(1)),
    "to_sparse_layout": ("torch.sparse_csc", lambda t: t.to_sparse(layout=torch.sparse_csc)),
    "to_sparse_csr": ("torch.sparse_csr", lambda t: t.to_sparse_csr()),
    "to_sparse_csc": ("torch.sparse_csc", lambda t: t.to_sparse_csc()),
    "to_sparse_bsr": ("torch.sparse_bsr", lambda t: t.to_sparse_bsr((2, 2))),
    "to_sparse_bsc": ("torch.sparse_bsc", lambda t: t.to_sparse_bsc((2, 2))),
}

MOVES = {
    "coo": ("torch.sparse_coo", lambda t: t.to_sparse()),
    "csr": ("torch.sparse_csr", lambda t: t.to_sparse_csr()),
    "csc": ("torch.sparse_csc", lambda t: t.to_sparse_csc()),
    "bsr": ("torch.sparse_bsr", lambda t: t.to_sparse_bsr((2, 2))),
    "bsc": ("torch.sparse_bsc", lambda t: t.to_sparse_bsc((2, 2))),
}


def assert_refused(layout, function, *arguments):
    torch_kiln.clear_op_tracking()
    with pytest.raises(NotImplementedError, match=rf"does not support sparse tensors \(layout {layout}\).*{ADVICE}"):
        function(*arguments)
    assert not torch_kiln.get_fallback_ops(), torch_kiln.get_fallback_ops()


@pytest.mark.parametrize("name", sorted(CASES))
def test_sparse_constructors_refused(name):
    layout, function = CASES[name]
    before = (INDICES.clone(), VALUES.clone(), COMPRESSED.clone(), PLAIN.clone())
    assert_refused(layout, function)
    for tensor, saved in zip((INDICES, VALUES, COMPRESSED, PLAIN), before):
        assert torch.equal(tensor, saved)


@pytest.mark.parametrize("name", sorted(DENSE_CONVERSIONS))
def test_dense_kiln_to_sparse_refused(name):
    layout, convert = DENSE_CONVERSIONS[name]
    dense = torch.arange(16.0).view(4, 4)
    on_kiln = dense.to(KILN)
    assert_refused(layout, convert, on_kiln)
    assert torch.equal(on_kiln.cpu(), dense)
    # What the message advises works: convert on the CPU.
    assert convert(on_kiln.cpu()).layout != torch.strided


@pytest.mark.parametrize("name", sorted(MOVES))
@pytest.mark.parametrize("move", ["to", "to_with_dtype", "non_blocking"])
def test_moving_sparse_cpu_tensor_to_kiln_refused(name, move):
    layout, make = MOVES[name]
    sparse = make(torch.arange(16.0).view(4, 4))
    function = {"to": lambda t: t.to(KILN), "to_with_dtype": lambda t: t.to(KILN, torch.float64),
                "non_blocking": lambda t: t.to(KILN, non_blocking=True)}[move]
    assert_refused(layout, function, sparse)
    # The advised route: densify, then move.
    assert torch.equal(sparse.to_dense().to(KILN).cpu(), torch.arange(16.0).view(4, 4))
