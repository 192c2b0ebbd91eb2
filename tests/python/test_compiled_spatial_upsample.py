"""Compiled upsampling (nearest, nearest-exact, linear, bilinear, trilinear,
bicubic), forward and backward, differentially against the CPU: sizes and
scale factors (up, down, equal, recomputed), align_corners, channels_last,
strided and zero-size batches, every floating dtype, uint8 nearest, and the
CPU's errors."""
import pytest
import torch
import torch.nn.functional as F

from differential import FLOATING, assert_same, check_with_gradient, make

MODES = [
    ("nearest", (2, 3, 5)), ("nearest", (2, 3, 5, 6)), ("nearest", (2, 2, 3, 4, 5)),
    ("nearest-exact", (2, 3, 5)), ("nearest-exact", (2, 3, 5, 6)), ("nearest-exact", (1, 2, 3, 4, 5)),
    ("linear", (2, 3, 5)), ("bilinear", (2, 3, 5, 6)), ("trilinear", (2, 2, 3, 4, 5)),
    ("bicubic", (2, 3, 5, 6)),
]
RESIZES = [dict(scale_factor=2), dict(scale_factor=1.7), dict(scale_factor=0.6), dict(size=7),
           dict(scale_factor=2.3, recompute_scale_factor=True), dict(size=5)]


run_both = check_with_gradient


@pytest.mark.parametrize("mode,shape", MODES, ids=[f"{m}{len(s) - 2}d" for m, s in MODES])
@pytest.mark.parametrize("resize", RESIZES, ids=lambda r: "-".join(f"{k}{v}" for k, v in r.items()))
def test_interpolate_float32(mode, shape, resize):
    aligns = [None] if "nearest" in mode else [False, True]
    for align in aligns:
        keywords = dict(resize, mode=mode)
        if align is not None:
            keywords["align_corners"] = align
        run_both(lambda t: F.interpolate(t, **keywords), make(shape, torch.float32))


@pytest.mark.parametrize("dtype", FLOATING)
@pytest.mark.parametrize("mode,shape", MODES, ids=[f"{m}{len(s) - 2}d" for m, s in MODES])
def test_interpolate_dtypes(dtype, mode, shape):
    keywords = dict(scale_factor=1.7, mode=mode)
    if "nearest" not in mode:
        keywords["align_corners"] = False
    # Half-type bicubic stays with the CPU (upsample_ops.cc).
    compiled = not (mode == "bicubic" and dtype in (torch.float16, torch.bfloat16))
    run_both(lambda t: F.interpolate(t, **keywords), make(shape, dtype), only_compiled=compiled)


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "bilinear", "bicubic"])
def test_interpolate_layouts(mode):
    base = make((2, 3, 6, 10), torch.float32)
    layouts = [base.contiguous(memory_format=torch.channels_last), base[..., ::2],
               base.transpose(2, 3), base[:0]]
    for view in layouts:
        run_both(lambda t: F.interpolate(t, size=(4, 9), mode=mode), view)
        cpu = F.interpolate(view, size=(4, 9), mode=mode)
        kiln = F.interpolate(view.to("kiln"), size=(4, 9), mode=mode)
        assert cpu.stride() == kiln.stride()


def test_nearest_uint8():
    base = (torch.rand(2, 3, 5, 6) * 255).to(torch.uint8)
    run_both(lambda t: F.interpolate(t, scale_factor=1.5), base)
    run_both(lambda t: F.interpolate(t, scale_factor=1.5, mode="nearest-exact"), base)


def test_nonfinite_values_stay_put():
    base = make((1, 2, 4, 5), torch.float32)
    base[0, 0, 1, 2] = float("inf")
    base[0, 1, 3, 4] = float("nan")
    for mode in ["bilinear", "bicubic", "nearest"]:
        run_both(lambda t: F.interpolate(t, size=(4, 5), mode=mode), base, backward=False)
        run_both(lambda t: F.interpolate(t, size=(7, 9), mode=mode), base, backward=False)


def test_out_and_errors():
    A = torch.ops.aten
    base = make((2, 3, 5, 6), torch.float32)
    out = torch.empty(0, device="kiln")
    A.upsample_bilinear2d.out(base.to("kiln"), [7, 8], False, None, None, out=out)
    assert_same(A.upsample_bilinear2d(base, [7, 8], False), out)
    for dtype in [torch.int64, torch.bool]:
        for fn in [lambda t: A.upsample_nearest1d(t[0], [8]), lambda t: A.upsample_bilinear2d(t, [8, 8], False),
                   lambda t: A.upsample_trilinear3d(t[None], [2, 8, 8], False)]:
            with pytest.raises(NotImplementedError) as cpu_error:
                fn(base.to(dtype))
            with pytest.raises(NotImplementedError) as kiln_error:
                fn(base.to(dtype).to("kiln"))
            assert str(cpu_error.value) == str(kiln_error.value)
    for fn in [lambda t: A.upsample_nearest2d(t, [0, 4]), lambda t: A.upsample_bilinear2d(t[0], [4, 4], False)]:
        with pytest.raises(RuntimeError) as cpu_error:
            fn(base)
        with pytest.raises(RuntimeError) as kiln_error:
            fn(base.to("kiln"))
        assert str(cpu_error.value).split("\n")[0] == str(kiln_error.value).split("\n")[0]
