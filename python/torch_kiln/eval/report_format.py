"""Number and text formatting shared by the Markdown and HTML reports and the plots."""
import math

MISSING = "—"
EXIT_STATUS_MEANINGS = {
    0: "every mode ran and the numerics are within tolerance",
    1: "a numerics check is out of tolerance or a mode failed",
    2: "a usage error",
    3: "strict mode, and an op fell back to the CPU",
}
PATHS = ["native", "compiled", "library", "custom", "fallback"]
TIME_HEADERS = ["Mode", "Status", "First step", "Median", "Min – max", "Speedup vs CPU",
                "Kernels compiled", "Kernel cache hits", "Graphs", "Graph cache hits",
                "Recompiles", "Compile time", "Peak memory"]
NUMERICS_HEADERS = ["Mode", "Kind", "Name", "Dtype", "Shape", "Max abs", "Max rel",
                    "Tolerance (atol / rtol)", "Result"]
SHAPE_SUMMARY_HEADERS = ["Sweep", "Recompiles", "Programs"]
PER_VALUE_HEADERS = ["Position", "Value", "Recompiled", "Bucket", "Recompiled (bucketed)"]
ENVIRONMENT_HEADERS = ["Setting", "Value"]


def report_modes(report):
    """Mode names in the order asked for, then any others the report holds."""
    asked = list(report["settings"]["modes"])
    return asked + [mode for mode in report["modes"] if mode not in asked]


def significant(value, digits=3):
    """`value` rounded to `digits` significant figures, without an exponent."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    decimals = max(digits - 1 - math.floor(math.log10(abs(value))), 0)
    return f"{value:.{decimals}f}"


def format_duration(seconds):
    """'12.3 ms' below a second, '4.56 s' from there."""
    if seconds is None:
        return MISSING
    return f"{significant(seconds * 1000)} ms" if seconds < 1 else f"{significant(seconds)} s"


def format_bytes(count):
    if count is None:
        return MISSING
    for unit, size in (("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if count >= size:
            return f"{count / size:.1f} {unit}"
    return f"{count} B"


def format_error(value):
    return MISSING if value is None else f"{value:.2e}"


def format_count(value):
    return MISSING if value is None else f"{value:,}"


def format_percent(share):
    return MISSING if share is None else f"{share * 100:.1f}%"


def format_speedup(value):
    return MISSING if value is None else f"{significant(value)}×"


def format_shape(shape):
    return "[" + ", ".join(str(size) for size in shape) + "]"


def format_range(low, high):
    """'9.12 – 9.87 ms', the unit written once when both ends share it."""
    if low is None:
        return MISSING
    low_text, high_text = format_duration(low), format_duration(high)
    low_number, low_unit = low_text.split(" ")
    if high_text.endswith(" " + low_unit):
        return f"{low_number} – {high_text}"
    return f"{low_text} – {high_text}"


def join_values(values):
    return ", ".join(str(value) for value in values) or MISSING


def exit_status_meaning(status):
    return EXIT_STATUS_MEANINGS.get(status, "unknown exit status")


# Table contents, as text: the renderers escape them and mark some cells up. ----------------


def model_summary(report):
    """One line: parameters, what a step runs, steps and seed."""
    model, settings = report["model"], report["settings"]
    work = (f"forward, backward and {model['optimizer'] or 'optimizer'} step" if model["has_loss"]
            else "forward only")
    return (f"{format_count(model['parameters'])} parameters "
            f"({format_bytes(model['parameter_bytes'])}); each step runs {work}; "
            f"{settings['steps']} steps after {settings['warmup']} warmup, "
            f"seed {settings['seed']}")


def time_row(name, mode):
    """The Time table's cells for one mode, as text."""
    return [name, mode["status"], format_duration(mode["first_step_seconds"]),
            format_duration(mode["median_step_seconds"]),
            format_range(mode["min_step_seconds"], mode["max_step_seconds"]),
            format_speedup(mode["speedup_vs_cpu"]), format_count(mode["kernels_compiled"]),
            format_count(mode["kernel_cache_hits"]), format_count(mode["graphs_compiled"]),
            format_count(mode["graph_cache_hits"]), format_count(mode["recompiles"]),
            format_duration(mode["compile_seconds"]), format_bytes(mode["peak_memory_bytes"])]


def numerics_row(check):
    """The Numerics table's cells for one check, as text (the result cell last)."""
    result = "pass" if check["passed"] else "FAIL"
    if check["note"]:
        result += f": {check['note']}"
    return [check["mode"], check["kind"], check["name"], check["dtype"],
            format_shape(check["shape"]), format_error(check["max_abs_error"]),
            format_error(check["max_rel_error"]),
            f"{format_error(check['atol'])} / {format_error(check['rtol'])}", result]


def failures_first(checks):
    return sorted(checks, key=lambda check: check["passed"])


def path_rows(ops):
    """(path, calls, share of all calls) for each op path."""
    total = ops["total_calls"]
    return [[path, format_count(ops["by_path"].get(path, 0)),
             format_percent(ops["by_path"].get(path, 0) / total if total else None)]
            for path in PATHS]


def shape_summary_rows(shapes):
    return [["without bucketing", format_count(shapes["recompiles"]),
             format_count(shapes["programs"])],
            ["with bucketing", format_count(shapes["bucketed_recompiles"]),
             format_count(shapes["bucketed_programs"])]]


def per_value_rows(shapes):
    return [[str(position + 1), str(entry["value"]), "yes" if entry["recompiled"] else "no",
             str(entry["bucket"]), "yes" if entry["bucketed_recompiled"] else "no"]
            for position, entry in enumerate(shapes["per_value"])]


def environment_rows(report):
    environment, settings = report["environment"], report["settings"]
    return [["torch", environment["torch"]], ["torch_kiln", environment["torch_kiln"]],
            ["Python", environment["python"]], ["Machine", environment["machine"]],
            ["CPU threads", str(environment["cpu_threads"])],
            ["Modes", ", ".join(settings["modes"])],
            ["Steps / warmup / seed", f"{settings['steps']} / {settings['warmup']} / "
                                      f"{settings['seed']}"],
            ["Strict", "yes" if settings["strict"] else "no"], ["Schema", report["schema"]]]



def ops_compared_sentence(report):
    """What the audited step compared op by op, or "" when it did not run."""
    compared = report["numerics"].get("ops_compared", 0)
    if not compared:
        return ""
    return (f"On one audited kiln eager step, {compared} op calls were also run on CPU copies of "
            "their inputs; an op whose output differs is listed with kind \"op\" and its "
            "caller's line.")
