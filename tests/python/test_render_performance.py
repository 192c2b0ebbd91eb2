"""bench/render_performance.py: docs/performance.md is rendered from the
benchmarks' JSON, and every section carries the stamp of the run that measured
it (command, commit, date, machine) beside its figures."""
import importlib.util
import json
import os
import sys

import pytest

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "bench")


def load(name):
    if BENCH not in sys.path:
        sys.path.insert(0, BENCH)  # the renderers import their shared modules, as when run from bench/
    spec = importlib.util.spec_from_file_location(f"bench_{name}", os.path.join(BENCH, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def renderer():
    return load("render_performance")


# A header as bench/run_info.py writes it, with values no real run would have.
HEADER = [
    "command : /venv/bin/python bench/bench_copies.py --sizes 64KiB --json out.json",
    "commit  : f00dcafe-dirty",
    "date    : 2031-02-03T04:05:06+00:00",
    "torch   : 9.9.9   python: 3.99.0",
    "device  : Kiln host device (testarch, 3 cores)",
    "kiln    : /x/_C.so (built 2031-02-03T04:00:00+00:00)",
    "host    : testarch, os.cpu_count()=3, torch.get_num_threads()=3",
    "load    : 0.11 0.22 0.33 at start (other processes share these cores)",
]


def copy_row(case, gb_per_s, ratio):
    return {"size_bytes": 65536, "case": case, "median_s": 1e-5, "min_s": 1e-5, "max_s": 1e-5,
            "gb_per_s": gb_per_s, "ratio_vs_torch_memcpy": ratio, "ratio_vs_numpy_memcpy": ratio,
            "batch": 10, "samples": 3}


def write(folder, name, data):
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps(data))


def test_page_carries_stamp_and_figures(renderer, tmp_path):
    results = tmp_path / "results"
    write(results, "copies", {"header": HEADER, "args": {}, "results": [
        copy_row("memcpy (torch)", 11.25, 1.0), copy_row("memcpy (numpy)", 12.5, 1.0),
        copy_row("H2D pageable", 13.75, 1.0625)]})
    output = tmp_path / "performance.md"
    renderer.main(["--results", str(results), "--output", str(output)])
    page = output.read_text()
    assert "/venv/bin/python bench/bench_copies.py --sizes 64KiB --json out.json" in page  # command
    assert "f00dcafe-dirty" in page                                                      # commit
    assert "2031-02-03T04:05:06+00:00" in page                                           # date
    assert "testarch, os.cpu_count()=3" in page and "Kiln host device (testarch, 3 cores)" in page  # machine
    assert "13.75 (1.06x)" in page                                                       # a figure and its ratio
    assert "12.50" in page                                                               # the baseline's
    # The benchmarks without JSON are named as not measured, not silently dropped.
    assert "Not measured" in page and "bench_compile.py" in page and "bench_ddp.py" in page


def test_update_reruns_are_stamped(renderer, tmp_path):
    """bench_suite.py --update appends a line per re-run to the header: the
    section lists each, and the summary table names the latest's date and commit."""
    results = tmp_path / "results"
    updates = ["update  : bench/bench_copies.py --sizes 1KiB at 2031-03-04T05:06:07+0000 on commit abad1dea",
               "update  : bench/bench_copies.py --sizes 2KiB at 2031-04-05T06:07:08+0000 on commit beefcafe"]
    write(results, "copies", {"header": HEADER + updates, "args": {}, "results": [
        copy_row("memcpy (torch)", 11.25, 1.0), copy_row("memcpy (numpy)", 12.5, 1.0)]})
    output = tmp_path / "performance.md"
    renderer.main(["--results", str(results), "--output", str(output)])
    page = output.read_text()
    assert "`bench/bench_copies.py --sizes 1KiB` at 2031-03-04T05:06:07+0000 on commit abad1dea" in page
    assert "`bench/bench_copies.py --sizes 2KiB` at 2031-04-05T06:07:08+0000 on commit beefcafe" in page
    assert "2031-02-03T04:05:06+00:00, updated 2031-04-05T06:07:08+0000 | `f00dcafe-dirty`, `beefcafe`" in page


def test_ratios_and_geometric_means_come_from_the_json(renderer, tmp_path):
    results = tmp_path / "results"
    write(results, "training", {"header": HEADER, "args": {}, "results": {
        "mlp": {"kiln_step_s": 0.001, "cpu_step_s": 0.002, "fallback_ops": 0},
        "cnn": {"kiln_step_s": 0.004, "cpu_step_s": 0.002, "fallback_ops": 1}}})
    page, missing = renderer.render(str(results))
    assert "| mlp | 1.00 | 2.00 | 2.00x | 0 |" in page
    assert "| cnn | 4.00 | 2.00 | 0.50x | 1 |" in page
    geomean = next(line for line in page.splitlines() if line.startswith("| geomean |"))
    assert "| 1.00x |" in geomean  # sqrt(2 * 0.5)
    assert "copies" in missing and "training" not in missing


def test_import_benchmark(renderer, tmp_path):
    results = tmp_path / "results"
    write(results, "import", {"header": HEADER, "args": {}, "results": {
        "autoload_on_median_s": 1.375, "autoload_on_min_s": 1.25, "autoload_on_process_median_s": 1.5,
        "autoload_off_median_s": 1.125, "autoload_off_min_s": 1.0, "autoload_off_process_median_s": 1.25,
        "autoload_cost_median_s": 0.25, "autoload_cost_min_s": 0.25, "target_autoload_cost_s": 0.15}})
    page, _ = renderer.render(str(results))
    assert "| `import torch`, autoload on | 1.38 | 1.25 | 1.50 |" in page
    assert "| autoload's cost (on - off) | 0.250 | 0.250 |" in page


def test_unknown_or_changed_json_is_still_rendered(renderer, tmp_path):
    results = tmp_path / "results"
    write(results, "something_new", {"header": HEADER, "args": {}, "results": {"a": {"b": [1, 2]}, "c": 3.5}})
    write(results, "ddp", {"header": HEADER, "args": {}, "results": [{"model": "mlp", "seconds": 0.125}]})
    page, _ = renderer.render(str(results))
    assert "## something_new" in page and "`a.b`" in page and "3.50" in page
    assert "Rendered as a plain table" in page and "| mlp | 0.125 |" in page
    assert page.count("f00dcafe-dirty") >= 2  # both stamped


def test_real_header_is_parsed(renderer):
    """The stamp reads the lines bench/run_info.py really writes."""
    sys.path.insert(0, BENCH)
    try:
        run_info = load("run_info")
    finally:
        sys.path.remove(BENCH)
    lines = run_info.header(["bench/bench_example.py", "--json", "x.json"])
    fields = renderer.parse_header(lines)
    for key in ("command", "commit", "date", "host", "device", "torch", "kiln", "load"):
        assert fields.get(key), key
    assert fields["command"].endswith("bench/bench_example.py --json x.json")
    stamp = "\n".join(renderer.stamp("example", fields))
    assert fields["commit"] in stamp and fields["date"] in stamp and fields["host"] in stamp


def test_library_and_models_benchmarks(renderer, tmp_path):
    results = tmp_path / "results"
    write(results, "library", {"header": HEADER, "args": {}, "results": {"2": {
        "cases": {"mm 64x64x64 float32": {"kind": "mm", "dtype": "float32", "cpu_s": 0.002, "kiln_s": 0.001},
                  "conv forward x": {"kind": "conv_forward", "dtype": "float32", "cpu_s": 0.001,
                                     "kiln_s": 0.002}},
        "geometric_mean": 1.0, "lowest": 0.5, "fallback_ops": ["aten::foo"]}}})
    write(results, "models", {"header": HEADER, "args": {}, "results": {"models": {
        "resnet18": {"model": "torchvision resnet18", "cpu_step_s": 0.3, "kiln_step_s": 0.2, "cpu_first_loss": 2.5,
                     "kiln_first_loss": 2.5, "fallback_ops": []}}, "geometric_mean": 1.5}})
    page, missing = renderer.render(str(results))
    assert "| mm float32 | 1 | 2.00x (2.00x) |" in page             # per op family: geomean (lowest)
    assert "| conv forward float32 | 1 | 0.50x (0.50x) |" in page
    assert "| all | 2 | 1.00x (0.50x) |" in page and "aten::foo" in page
    assert "| conv forward x | 2 | 1.00 | 2.00 | 0.50x |" in page      # the case below the target, listed
    assert "| mm 64x64x64 float32 | 2 |" not in page                   # one above it is not
    assert "| resnet18 | torchvision resnet18 | 300.0 | 200.0 | 1.50x | 2.50 | 2.50 | none |" in page
    assert "library" not in missing and "models" not in missing


def long_run_drift(change, slope, value_range=None, passed=True):
    return {"from_step": 200, "to_step": 2000, "first": 0, "last": change, "change": change,
            "range": abs(change) if value_range is None else value_range, "slope_per_1000_steps": slope,
            "tolerance": "-", "passed": passed}


def test_long_run_benchmark(renderer, tmp_path):
    results = tmp_path / "results"
    mib = 1024 * 1024
    flat = {"device_allocated": long_run_drift(0, 0.0), "device_reserved": long_run_drift(0, 0.0),
            "rss": long_run_drift(-mib // 4, 0.5 * mib, value_range=3 * mib), "live_objects": long_run_drift(0, 0.0)}
    leaking = dict(flat, device_allocated=long_run_drift(1536, 768.0, passed=False),
                   live_objects=long_run_drift(37, 20.5, passed=False))
    write(results, "long_run", {"header": HEADER, "args": {}, "results": {
        "model": "resnet18", "steps": 2000, "every": 50, "warmup": 200, "rss_tolerance_mib": 8.0,
        "object_tolerance": 20, "modes": {
            "kiln_eager": {"status": "ran", "passed": True, "drift": flat, "step_s": 0.0625},
            "kiln_compiled": {"status": "ran", "passed": False, "drift": leaking, "step_s": 0.125},
            "kiln_other": {"status": "failed", "error": "timed out after 5 s", "passed": False}}}})
    page, missing = renderer.render(str(results))
    assert "| kiln_eager | pass | flat | flat | -0.25 MiB (+0.50) | 3.00 MiB | +0 (+0.0) | 62.50 |" in page
    assert "| kiln_compiled | FAIL | +1536 B (range 1536 B) | flat |" in page
    assert "| +37 (+20.5) | 125.0 |" in page
    assert "| kiln_other | FAIL: timed out after 5 s |" in page
    assert "`resnet18`, 2000 steps, a sample every 50 steps" in page and "from step 200 to step 2000" in page
    assert "long_run" not in missing
