"""Compiled embedding_bag (_embedding_bag, _embedding_bag_forward_only and
the backwards autograd reaches), differentially against the CPU: every output
the CPU returns (offset2bag, bag_size, max_indices too), modes sum/mean/max,
offsets and 2-D input, include_last_offset, per_sample_weights, padding_idx,
empty bags, int32 indices, non-contiguous weights, and the CPU's errors."""
import pytest
import torch
import torch.nn.functional as F

from differential import FLOATING, assert_same, check, compiled_only, make

A = torch.ops.aten
WEIGHT = (7, 5)
INDICES = torch.tensor([1, 2, 2, 0, 6, 3, 5, 2, 4])
OFFSETS = torch.tensor([0, 3, 3, 7])  # bag 1 is empty


def raw_outputs(forward_only, weight, indices, offsets, mode, weights=None, last=False, padding=-1):
    op = A._embedding_bag_forward_only if forward_only else A._embedding_bag
    return op(weight, indices, offsets, False, mode, False, weights, last, padding)


@pytest.mark.parametrize("dtype", FLOATING)
@pytest.mark.parametrize("mode", [0, 1, 2])
def test_every_output_matches(dtype, mode):
    weight = make(WEIGHT, dtype)
    for forward_only in (False, True):
        for padding in (-1, 2):
            for last in (False, True):
                offsets = torch.cat([OFFSETS, torch.tensor([9])]) if last else OFFSETS
                expected = raw_outputs(forward_only, weight, INDICES, offsets, mode, None, last, padding)
                actual = compiled_only(lambda: raw_outputs(
                    forward_only, weight.to("kiln"), INDICES.to("kiln"), offsets.to("kiln"), mode,
                    None, last, padding))
                assert_same(expected, actual, f"forward_only={forward_only} padding={padding} last={last}")


def test_int32_indices_and_per_sample_weights():
    weight = make(WEIGHT, torch.float32)
    weights = make((9,), torch.float32)
    for indices, offsets in ((INDICES.int(), OFFSETS.int()), (INDICES.int(), OFFSETS)):
        check(lambda w, i, o, p: raw_outputs(False, w, i, o, 0, p), weight, indices, offsets, weights)
        check(lambda w, i, o, p: raw_outputs(True, w, i, o, 0, p, False, 3), weight, indices, offsets, weights)


def run_functional(dtype, backward=True, **options):
    weight = make(WEIGHT, dtype)
    use_weights = options.pop("per_sample_weights", False)
    indices = options.pop("input", INDICES)
    samples = make(tuple(indices.shape), dtype) if use_weights else None
    incoming = None
    cpu = weight.clone().requires_grad_(backward)
    cpu_samples = samples.clone().requires_grad_(backward) if use_weights else None
    expected = F.embedding_bag(indices, cpu, per_sample_weights=cpu_samples, **to_device(options, "cpu"))
    kiln = weight.to("kiln").requires_grad_(backward)
    kiln_samples = samples.to("kiln").requires_grad_(backward) if use_weights else None
    incoming = make(tuple(expected.shape), dtype)

    def on_kiln():
        result = F.embedding_bag(indices.to("kiln"), kiln, per_sample_weights=kiln_samples,
                                 **to_device(options, "kiln"))
        if backward:
            result.backward(incoming.to("kiln"))
        return result

    actual = compiled_only(on_kiln)
    assert_same(expected, actual, str(options))
    if backward:
        expected.backward(incoming)
        assert_same(cpu.grad, kiln.grad, f"{options} weight grad")
        if use_weights:
            assert_same(cpu_samples.grad, kiln_samples.grad, f"{options} per_sample_weights grad")


def to_device(options, device):
    return {key: value.to(device) if isinstance(value, torch.Tensor) else value
            for key, value in options.items()}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_functional_forward_and_backward(dtype, mode):
    run_functional(dtype, mode=mode, offsets=OFFSETS)
    run_functional(dtype, mode=mode, offsets=OFFSETS, padding_idx=2)
    run_functional(dtype, mode=mode, input=INDICES[:8].view(2, 4))
    run_functional(dtype, mode=mode, offsets=torch.cat([OFFSETS, torch.tensor([9])]),
                   include_last_offset=True)
    run_functional(dtype, mode=mode, offsets=OFFSETS, scale_grad_by_freq=mode != "max")
    if mode == "sum":
        run_functional(dtype, mode=mode, offsets=OFFSETS, per_sample_weights=True)
        run_functional(dtype, mode=mode, offsets=OFFSETS, per_sample_weights=True, padding_idx=5)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_types_forward(dtype):
    for mode in ("sum", "mean", "max"):
        run_functional(dtype, backward=False, mode=mode, offsets=OFFSETS)


def test_layouts_and_empty():
    weight = make((5, 7), torch.float32).t()  # non-contiguous rows
    check(lambda w, i, o: raw_outputs(False, w, i, o, 1), weight, INDICES % 7, OFFSETS)
    check(lambda w, i, o: raw_outputs(False, w, i, o, 2), weight, INDICES % 7, OFFSETS)
    empty = torch.tensor([], dtype=torch.long)
    for mode in (0, 1, 2):
        check(lambda w, i, o: raw_outputs(False, w, i, o, mode), weight, empty, torch.tensor([0, 0]))
        check(lambda w, i, o: raw_outputs(True, w, i, o, mode), weight, empty, empty)


def test_errors_match_the_cpu():
    weight = make(WEIGHT, torch.float32)
    bad = [
        (weight, INDICES, torch.tensor([1, 3])),            # offsets[0] != 0
        (weight, INDICES, torch.tensor([0, 10])),           # past the end
        (weight, torch.tensor([9, 1]), torch.tensor([0])),  # index out of range
        (weight.int(), INDICES, OFFSETS),                   # integer weight
        (weight, INDICES.float(), OFFSETS),                 # float indices
        (weight[0], INDICES, OFFSETS),                      # 1-D weight
    ]
    for arguments in bad:
        check(lambda w, i, o: raw_outputs(False, w, i, o, 0), *arguments)
    check(lambda w, i, o, p: raw_outputs(False, w, i, o, 1, p), weight, INDICES, OFFSETS,
          make((9,), torch.float32))
    check(lambda w, i, o, p: raw_outputs(False, w, i, o, 0, p), weight, INDICES, OFFSETS,
          make((9,), torch.float64))
    # A failed op leaves its inputs untouched.
    kiln_weight = weight.to("kiln")
    with pytest.raises(RuntimeError):
        raw_outputs(False, kiln_weight, torch.tensor([9, 1]).to("kiln"), torch.tensor([0]).to("kiln"), 0)
    assert_same(weight, kiln_weight)
