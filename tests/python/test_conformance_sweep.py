"""The OpInfo conformance runner (tests/conformance/opinfo_sweep.py) on a small
fixed subset: it must classify ops correctly, so the full sweep (run by hand,
behind its own command) can be trusted."""
import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "conformance"))
import opinfo_sweep  # noqa: E402


def test_core_ops_pass_natively_over_their_dtypes():
    ops = opinfo_sweep.selected_ops(["add", "mul", "sum", "softmax", "where"])
    assert {opinfo_sweep.op_label(op) for op in ops} >= {"add", "mul", "sum", "softmax", "where"}
    results = opinfo_sweep.sweep(ops, [torch.float32, torch.int64, torch.bool], max_samples=4)
    for name, record in results.items():
        for dtype, entry in record.items():
            assert entry["status"] == "pass", (name, dtype, entry)


def test_a_fallback_and_a_random_op_are_reported_as_such():
    # segment_reduce has no kiln kernel (sort, the example before, now has one).
    results = opinfo_sweep.sweep(opinfo_sweep.selected_ops(["_segment_reduce.lengths", "bernoulli"]),
                                 [torch.float32], max_samples=2)
    assert results["_segment_reduce.lengths"]["float32"]["status"] == "fallback"
    assert "aten::segment_reduce" in results["_segment_reduce.lengths"]["float32"]["fallback_ops"]
    assert results["bernoulli"]["float32"]["status"] == "skip"


def test_a_wrong_answer_is_a_failure(monkeypatch):
    op = opinfo_sweep.selected_ops(["neg"])[0]
    real_on_cpu = opinfo_sweep.on_cpu

    def corrupt(sample):  # the CPU reference sees different data: the answers must differ
        reference = real_on_cpu(sample)
        reference.input.add_(1)
        return reference

    monkeypatch.setattr(opinfo_sweep, "on_cpu", corrupt)
    entry = opinfo_sweep.sweep_dtype(op, torch.float32, max_samples=2)
    assert entry["status"] == "fail" and "sample 0" in entry["detail"]


def test_markdown_states_the_summary_and_every_op():
    results = {"add": {"float32": {"status": "pass", "samples": 3}},
               "sort": {"float32": {"status": "fallback", "fallback_ops": ["aten::sort"]}},
               "neg": {"float32": {"status": "fail", "detail": "sample 0: mismatch"}}}
    text = opinfo_sweep.markdown(results, "python tests/conformance/opinfo_sweep.py")
    assert "float32: 1 of 3 op-dtype pairs pass natively (33.3 %)" in text
    assert "| `sort` | fallback |" in text and "**FAIL**" in text and "sample 0: mismatch" in text


def test_gradients_are_compared_and_a_wrong_gradient_is_a_failure(monkeypatch):
    op = opinfo_sweep.selected_ops(["mul"])[0]
    entry = opinfo_sweep.sweep_gradients(op, max_samples=2)
    assert entry["status"] == "pass" and entry["samples"] > 0, entry
    import gradients
    real_cpu_copy = gradients._cpu_copy

    def corrupt(sample):  # the CPU's inputs differ: its gradients must differ
        reference = real_cpu_copy(sample)
        with torch.no_grad():
            reference.input.mul_(3)
        return reference

    monkeypatch.setattr(gradients, "_cpu_copy", corrupt)
    entry = opinfo_sweep.sweep_gradients(op, max_samples=2)
    assert entry["status"] == "fail", entry


def test_wider_tolerances_are_for_half_precision_or_declared_by_the_opinfo():
    import comparison
    op = opinfo_sweep.selected_ops(["add"])[0]
    assert [name for name, *_ in comparison.wider_tolerances(op, torch.float32)] == []
    assert [name for name, *_ in comparison.wider_tolerances(op, torch.bfloat16)] == ["compare_cpu"]
    expected = torch.tensor([1.0, 0.01], dtype=torch.float16)
    close = expected + torch.tensor([0.0, 1e-4], dtype=torch.float16)
    assert comparison.compare(expected, expected, []) == "default"
    assert comparison.compare(close, expected, comparison.wider_tolerances(
        op, torch.float16)) == "compare_cpu"
    with pytest.raises(AssertionError):
        comparison.compare(close.float(), expected.float(), [])


def test_the_report_names_paths_and_the_gradient_share():
    results = {"mm": {"float32": {"status": "pass", "samples": 2, "paths": ["library", "native"]},
                      "grad": {"status": "fallback", "fallback_ops": ["aten::x"]}},
               "exp": {"float32": {"status": "pass", "samples": 2, "paths": ["compiled"],
                                   "tolerance": ["opinfo"]},
                       "grad": {"status": "pass", "samples": 2}}}
    import report
    text = report.markdown(results, "cmd")
    assert "| `mm` | fallback | pass | fallback |" in text
    assert "| `exp` | compiled | pass\\* | pass |" in text
    assert "float32 gradients: 2 of 2 OpInfos match the CPU (100.0 %)" in text


def test_as_accurate_as_the_cpu_is_judged_against_the_float64_answer():
    import comparison
    exact = torch.tensor([1.0, 2.0], dtype=torch.float64)
    cpu = torch.tensor([1.0 + 2e-7, 2.0])
    assert comparison.no_less_accurate(torch.tensor([1.0 - 2e-7, 2.0]), cpu, exact)
    assert not comparison.no_less_accurate(torch.tensor([1.0, 2.001]), cpu, exact)


def test_compiled_samples_go_through_the_kiln_backend(monkeypatch):
    # scatter's compiled graph holds scatter.value/src (the composite ops of
    # test_compile_composite_ops.py), slice_scatter a view write.
    import torch_kiln
    ops = opinfo_sweep.selected_ops(["add", "softmax", "scatter", "slice_scatter"])
    torch_kiln.reset_compile_stats()
    results = opinfo_sweep.sweep(ops, [], max_samples=2, compile_samples=True)
    for name, record in results.items():
        assert record["compiled"]["status"] == "pass", (name, record)
    assert torch_kiln.compile_stats()["graphs"] >= 4

    # An op the graph lowering refuses is a compiled failure, named (the
    # program cache, which would skip the lowering, is bypassed).
    from torch_kiln.compile.lowering import graph_lowering, program_cache
    monkeypatch.setattr(program_cache, "load", lambda key: None)
    monkeypatch.setattr(program_cache, "store", lambda key, lowered: None)
    monkeypatch.setattr(graph_lowering, "has_kiln_kernel", lambda op: "scatter" not in str(op))
    scatter = opinfo_sweep.selected_ops(["scatter"])[0]
    entry = opinfo_sweep.sweep_dtype(scatter, torch.float32, 1, opinfo_sweep.compiled(scatter))
    assert entry["status"] == "fail" and "aten.scatter" in entry["detail"], entry


def test_markdown_has_a_compiled_column_and_counts_ops_behind_eager():
    results = {"add": {"float32": {"status": "pass"}, "compiled": {"status": "pass"}},
               "neg": {"float32": {"status": "pass"}, "compiled": {"status": "fail", "detail": "sample 0: x"}}}
    text = opinfo_sweep.markdown(results, "python tests/conformance/opinfo_sweep.py --compiled")
    assert "| op | path | float32 | compiled |" in text
    assert "1 pass in eager float32 but not compiled (target: 0)" in text
