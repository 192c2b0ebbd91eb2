"""The CPU fallback and op tracking: every op that reaches the device is
counted by path, fallbacks warn once per op, and KILN_FALLBACK=error turns
them into a NotImplementedError naming the op without touching the inputs."""
import pytest
import torch

import torch_kiln
from conftest import run_python


def test_fallback_result_matches_cpu_and_is_tracked():
    torch_kiln.clear_op_tracking()
    # Ops picked because Kiln does not lower them (histogram: see docs/reference/operators.md).
    a = torch.rand(5, 3)
    hist, edges = torch.histogram(a.to("kiln"), bins=4)
    assert hist.device.type == "kiln" and edges.device.type == "kiln"
    expected = torch.histogram(a, bins=4)
    assert torch.equal(hist.cpu(), expected.hist) and torch.equal(edges.cpu(), expected.bin_edges)
    fallback = torch_kiln.get_fallback_ops()
    assert any(name.startswith("aten::histogram") for name in fallback)
    executed = torch_kiln.get_executed_ops()
    assert executed["aten::_copy_from"]["native"] >= 3
    assert all(set(paths) <= {"native", "compiled", "library", "fallback"}
               for paths in executed.values())
    torch_kiln.clear_op_tracking()
    assert torch_kiln.get_executed_ops() == {}


def test_fallback_warns_once_per_op():
    # In a fresh process: the warning is once per op per process, and other
    # tests of the suite may have run the op already.
    result = run_python("""
        import warnings, torch
        x = torch.randn(4, device="kiln")
        lengths = torch.tensor([1, 3], device="kiln")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.segment_reduce(x, "sum", lengths=lengths)
            torch.segment_reduce(x, "sum", lengths=lengths)
        messages = [str(w.message) for w in caught if "ran on the CPU" in str(w.message)]
        print(len(messages), "aten::segment_reduce" in messages[0])
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "1 True"


def test_fallback_mode_error_names_the_op_and_leaves_inputs_untouched():
    x = torch.arange(4.0, device="kiln")
    hist, edges = torch.zeros(3, device="kiln"), torch.zeros(4, device="kiln")
    torch_kiln.set_fallback_mode("error")
    try:
        with pytest.raises(NotImplementedError, match=r"aten::histogram.*KILN_FALLBACK=error"):
            torch.histogram(x, bins=3, out=(hist, edges))
    finally:
        torch_kiln.set_fallback_mode("warn")
    assert torch.equal(x.cpu(), torch.arange(4.0))
    assert torch.equal(hist.cpu(), torch.zeros(3)) and torch.equal(edges.cpu(), torch.zeros(4))


def test_fallback_mode_from_environment():
    result = run_python("""
        import torch, torch_kiln
        assert torch_kiln.get_fallback_mode() == "error"
        try:
            torch.histogram(torch.ones(2, device="kiln"), bins=2)
        except NotImplementedError as error:
            print(str(error).splitlines()[0])
    """, KILN_FALLBACK="error")
    assert result.returncode == 0, result.stderr
    assert "aten::histogram" in result.stdout and "not lowered for the kiln device" in result.stdout


def test_silent_mode_has_no_warning():
    result = run_python("""
        import warnings, torch
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.histogram(torch.ones(2, device="kiln"), bins=2)
        print(len([w for w in caught if "ran on the CPU" in str(w.message)]))
    """, KILN_FALLBACK="silent")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "0"


def test_unknown_fallback_mode_is_a_value_error():
    with pytest.raises(ValueError, match="fallback mode must be warn, silent or error"):
        torch_kiln.set_fallback_mode("sometimes")


def test_failed_fallback_op_leaves_inputs_untouched():
    x = torch.arange(6.0, device="kiln")
    with pytest.raises(RuntimeError):
        x.view(2, 3).mm(torch.ones(2, 2, device="kiln"))   # shape mismatch inside the CPU op
    assert torch.equal(x.cpu(), torch.arange(6.0))


def test_inplace_and_out_ops_through_the_fallback():
    x = torch.arange(4.0, device="kiln")
    x.mul_(3)
    out = torch.empty(0, device="kiln")
    torch.add(x, 1, out=out)
    assert torch.equal(x.cpu(), torch.arange(4.0) * 3)
    assert torch.equal(out.cpu(), torch.arange(4.0) * 3 + 1)


def test_kiln_generator_controls_random_ops_that_fall_back():
    torch.kiln.manual_seed(1234)
    first = torch.randn(64, device="kiln").cpu()
    dropout_first = torch.nn.functional.dropout(torch.ones(64, device="kiln"), 0.5).cpu()
    torch.kiln.manual_seed(1234)
    second = torch.randn(64, device="kiln").cpu()
    dropout_second = torch.nn.functional.dropout(torch.ones(64, device="kiln"), 0.5).cpu()
    assert torch.equal(first, second)
    assert torch.equal(dropout_first, dropout_second)
    third = torch.randn(64, device="kiln").cpu()
    assert not torch.equal(second, third)     # the stream advances
    torch.manual_seed(0)                       # the CPU generator plays no part
    torch.kiln.manual_seed(1234)
    assert torch.equal(torch.randn(64, device="kiln").cpu(), first)


def test_rng_state_round_trip():
    state = torch.kiln.get_rng_state()
    assert state.dtype == torch.uint8 and state.device.type == "cpu"
    first = torch.rand(8, device="kiln").cpu()
    torch.kiln.set_rng_state(state)
    assert torch.equal(torch.rand(8, device="kiln").cpu(), first)
    torch.kiln.manual_seed(7)
    assert torch.kiln.initial_seed() == 7
    states = torch.kiln.get_rng_state_all()
    assert len(states) == torch.kiln.device_count()


def test_explicit_kiln_generator():
    generator = torch.Generator(device="kiln").manual_seed(3)
    first = torch.randn(16, device="kiln", generator=generator).cpu()
    generator.manual_seed(3)
    assert torch.equal(torch.randn(16, device="kiln", generator=generator).cpu(), first)


def test_conjugated_views_copy_without_recursing():
    # A conj() view copied to or from kiln: ATen's generic handling of the
    # Conjugate key recursed through _copy_from until the stack overflowed
    # (torch.fft.hfft crashed the process); kiln resolves the view on the host.
    c = torch.randn(3, 4, dtype=torch.complex64)
    k = c.to("kiln")
    assert torch.equal(k.conj().cpu().resolve_conj(), c.conj().resolve_conj())
    assert torch.equal(c.conj().to("kiln").cpu(), c.conj().resolve_conj())
    assert torch.equal(k._neg_view().cpu().resolve_neg(), -c)
    x = torch.randn(5, 6, 7)
    result = torch.fft.hfft(x.to("kiln"), n=10, dim=1, norm="ortho")  # the library path
    assert result.device.type == "kiln"
    torch.testing.assert_close(result.cpu(), torch.fft.hfft(x, n=10, dim=1, norm="ortho"))
