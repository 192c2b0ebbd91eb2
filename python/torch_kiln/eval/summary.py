"""The terminal summary of a kiln-eval report."""
from .report_format import format_bytes, format_duration, format_range

MODE_TITLES = {"cpu_eager": "CPU eager", "kiln_eager": "kiln eager",
               "kiln_compiled": "kiln compiled"}


def render_summary(report):
    model = report["model"]
    steps = f"training with {model['optimizer']}" if model["has_loss"] else \
        "forward, and backward from the outputs' sum"
    lines = [f"kiln-eval: {model['name']} ({model['source']}), {model['parameters']:,} "
             f"parameters, {steps}",
             "",
             f"{'mode':<14} {'status':<8} {'first step':>11} {'median':>10} {'min-max':>19} "
             f"{'vs CPU':>7} {'kernels':>8} {'graphs':>7} {'peak memory':>12}"]
    for mode, run in report["modes"].items():
        spread = format_range(run["min_step_seconds"], run["max_step_seconds"])
        speed = "-" if run["speedup_vs_cpu"] is None else f"{run['speedup_vs_cpu']:.2f}x"
        lines.append(f"{MODE_TITLES[mode]:<14} {run['status']:<8} "
                     f"{format_duration(run['first_step_seconds']):>11} "
                     f"{format_duration(run['median_step_seconds']):>10} {spread:>19} {speed:>7} "
                     f"{run['kernels_compiled']:>8} {run['graphs_compiled']:>7} "
                     f"{format_bytes(run['peak_memory_bytes']):>12}")
    ops = report["ops"]
    by_path = ops["by_path"]
    lines += ["", f"ops on kiln (eager): {ops['total_calls']} calls, "
                  f"{ops['native_share']:.1%} on the device "
                  f"(native {by_path['native']}, compiled {by_path['compiled']}, "
                  f"library {by_path['library']}, custom {by_path.get('custom', 0)}, fallback {by_path['fallback']})"]
    for entry in ops["fallback"]:
        where = "; ".join(entry["sources"][:3]) or "source unknown"
        lines.append(f"  fell back to the CPU: {entry['op']} x{entry['count']} ({where})")
    numerics = report["numerics"]
    failed = [check for check in numerics["checks"] if not check["passed"]]
    compared = len(numerics["checks"]) - sum(check["kind"] == "op" for check in numerics["checks"])
    verdict = "PASS" if numerics["passed"] else "FAIL" if failed else "NOT CHECKED"
    lines += ["", f"numerics: {verdict} "
                  f"({compared} outputs, losses and gradients against the CPU; "
                  f"{numerics.get('ops_compared', 0)} ops compared one by one)"]
    for check in failed[:8]:
        lines.append(f"  {check['mode']} {check['kind']} {check['name']}: max abs "
                     f"{check['max_abs_error']:.2e}, max rel {check['max_rel_error']:.2e} "
                     f"(rtol {check['rtol']:g})" + (f" - {check['note']}" if check["note"] else ""))
    shapes = report.get("shapes")
    if shapes:
        if shapes["error"]:
            lines += ["", f"shape sweep over {shapes['argument']}: failed: {shapes['error']}"]
        else:
            lines += ["", f"shape sweep over {shapes['argument']} ({len(shapes['values'])} sizes): "
                          f"{shapes['recompiles']} recompiles, {shapes['programs']} programs; "
                          f"bucketed to {shapes['buckets']}: {shapes['bucketed_recompiles']} "
                          f"recompiles, {shapes['bucketed_programs']} programs "
                          f"(suggested buckets {shapes['suggested_buckets']})"]
    verdict = report["verdict"]
    lines += ["", f"exit status {verdict['exit_status']}"]
    for message in verdict["messages"]:
        if not message.startswith(("numerics:", "fallback:")):
            lines.append(f"  {message}")
    return "\n".join(lines)
