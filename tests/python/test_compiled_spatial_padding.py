"""Compiled reflection and replication padding (1-D, 2-D, 3-D; negative
padding for replication), forward and backward, differentially against the
CPU: dtypes, batched and unbatched, channels_last, strided, zero-size batches,
and the CPU's errors."""
import pytest
import torch
import torch.nn.functional as F

from differential import FLOATING, assert_same, check_with_gradient, compiled_only, make

A = torch.ops.aten
CASES = [
    ((2, 3, 6), (2, 3)), ((3, 6), (1, 0)), ((2, 3, 5, 6), (1, 2, 3, 0)), ((3, 5, 6), (2, 2, 1, 1)),
    ((2, 2, 4, 5, 6), (1, 2, 0, 3, 2, 1)), ((2, 4, 5, 6), (1, 1, 2, 2, 3, 3)),
]
NEGATIVE = [((2, 3, 6), (-1, 2)), ((2, 3, 5, 6), (-1, 2, 1, -2)), ((1, 2, 4, 5, 6), (-1, 1, 2, -2, 0, 1))]


run_both = check_with_gradient


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
@pytest.mark.parametrize("shape,padding", CASES, ids=[f"{len(p) // 2}d-{len(s)}" for s, p in CASES])
@pytest.mark.parametrize("dtype", FLOATING + [torch.int64, torch.int32, torch.uint8])
def test_pad(mode, shape, padding, dtype):
    run_both(lambda t: F.pad(t, padding, mode=mode), make(shape, dtype))


@pytest.mark.parametrize("shape,padding", NEGATIVE, ids=[f"{len(p) // 2}d" for _, p in NEGATIVE])
def test_replicate_negative(shape, padding):
    run_both(lambda t: F.pad(t, padding, mode="replicate"), make(shape, torch.float32))


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
def test_pad_layouts(mode):
    base = make((2, 3, 6, 8), torch.float32)
    for view in [base.contiguous(memory_format=torch.channels_last), base[..., ::2], base.transpose(2, 3),
                 base[:0]]:
        run_both(lambda t: F.pad(t, (2, 1, 1, 3), mode=mode), view)
    volume = make((2, 3, 4, 5, 6), torch.float32).contiguous(memory_format=torch.channels_last_3d)
    run_both(lambda t: F.pad(t, (1, 1, 2, 0, 1, 2), mode=mode), volume)


def test_out_forms():
    base = make((2, 3, 5, 6), torch.float32)
    for op, padding in [(A.reflection_pad2d, [1, 2, 2, 1]), (A.replication_pad2d, [1, 2, 2, 1]),
                        (A.reflection_pad1d, [2, 1])]:
        source = base[0] if len(padding) == 2 else base
        out = torch.empty(0, device="kiln")
        compiled_only(lambda: op.out(source.to("kiln"), padding, out=out))
        assert_same(op(source, padding), out)


def test_errors_match_the_cpu():
    base = make((1, 2, 4, 4), torch.float32)
    cases = [
        lambda t: A.reflection_pad2d(t, [1, 1, 1]), lambda t: A.reflection_pad2d(t, [4, 1, 1, 1]),
        lambda t: A.reflection_pad2d(t, [1, 1, 4, 1]), lambda t: A.reflection_pad2d(t[0, 0], [1, 1, 1, 1]),
        lambda t: A.reflection_pad1d(t[0], [4, 0]), lambda t: A.replication_pad2d(t, [1, 1]),
        lambda t: A.reflection_pad2d_backward(t.new_ones(1, 2, 6, 5), t, [1, 1, 1, 1]),
        lambda t: A.reflection_pad2d_backward(t.new_ones(1, 2, 5, 6), t, [1, 1, 1, 1]),
        lambda t: A.replication_pad2d_backward(t.new_ones(1, 2, 5, 6), t, [1, 1, 1, 1]),
        lambda t: A.replication_pad2d_backward(t.new_ones(1, 2, 6, 6), t, [1, 1, 1]),
        lambda t: A.reflection_pad2d(t.bool(), [1, 1, 1, 1]), lambda t: A.replication_pad3d(t[None].bool(), [1] * 6),
        lambda t: A.reflection_pad1d_backward(t[0].new_ones(2, 4, 6).long(), t[0].long(), [1, 1]),
        lambda t: A.replication_pad2d_backward(t.new_ones(1, 2, 6, 6).long(), t.long(), [1, 1, 1, 1]),
    ]
    for case in cases:
        with pytest.raises((RuntimeError, NotImplementedError)) as cpu_error:
            case(base)
        with pytest.raises(type(cpu_error.value)) as kiln_error:
            case(base.to("kiln"))
        assert str(cpu_error.value).split("\n")[0] == str(kiln_error.value).split("\n")[0]
