"""The performance page's sections on adaptive eager (render_performance.py):
hand-written chains (bench_adaptive_eager.py) and the model suites with
adaptive eager on and off (bench_suite.py --modes kiln_eager_unfused,kiln_eager).
Standard library only, as render_performance.py."""
from render_common import geometric_mean, number, ratio_of, ratio_text, table


def chains_table(results):
    chains = results.get("chains", [])
    modes = ["cpu", "kiln-unfused", "kiln-adaptive", "kiln-compiled"]
    rows = []
    for entry in chains:
        us = entry["us"]
        stats = entry.get("adaptive_stats") or {}
        rows.append([entry["chain"]] + [number(us.get(mode)) for mode in modes] +
                    [ratio_text(ratio_of(us.get("kiln-unfused"), us.get("kiln-adaptive"))),
                     ratio_text(ratio_of(us.get("kiln-compiled"), us.get("kiln-adaptive"))),
                     ratio_text(ratio_of(us.get("cpu"), us.get("kiln-adaptive"))),
                     number(stats.get("region_keys"))])
    rows.append(["geomean", "", "", "", ""] +
                [ratio_text(geometric_mean([ratio_of(e["us"].get(a), e["us"].get("kiln-adaptive")) for e in chains]))
                 for a in ("kiln-unfused", "kiln-compiled", "cpu")] + [""])
    shape = results.get("shape", [])
    lines = [f"float32 {' x '.join(str(size) for size in shape)}; {number(results.get('iterations'))} calls in a "
             f"row, us per call, median of {number(results.get('rounds'))} rounds (one process per mode and round):",
             ""]
    lines += table(["chain"] + [f"{mode} us" for mode in modes] +
                   ["unfused / adaptive", "compiled / adaptive", "cpu / adaptive", "region kernels"], rows)
    return lines


def suite_table(results, data):
    """bench_suite.py --modes kiln_eager_unfused,kiln_eager: adaptive eager on real models."""
    summary = data.get("summary", {})
    rows = []
    for name, entry in summary.items():
        def geomean(key):
            return (entry.get(key) or {}).get("geomean")
        rows.append([name, number(entry.get("models")), ratio_text(geomean("kiln_eager_unfused_over_cpu_eager")),
                     ratio_text(geomean("kiln_eager_over_cpu_eager")),
                     ratio_text(geomean("kiln_eager_over_kiln_eager_unfused"))])
    lines = table(["suite, task", "models", "unfused / CPU eager", "adaptive / CPU eager", "adaptive / unfused"],
                  rows)
    first_steps, late_keys, worst, per_model, settled, unsettled = [], [], None, [], [], []
    for model, entry in results.items():
        for task, records in entry.get("tasks", {}).items():
            on, off = records.get("kiln_eager", {}), records.get("kiln_eager_unfused", {})
            if on.get("step_s") and off.get("step_s"):
                per_model.append((off["step_s"] / on["step_s"], f"{model} {task}"))
            if on.get("first_step_s") and off.get("first_step_s"):
                first_steps.append(on["first_step_s"] / off["first_step_s"])
                if worst is None or first_steps[-1] > worst[0]:
                    worst = (first_steps[-1], f"{model} {task}")
            adaptive = on.get("adaptive_eager") or {}
            if adaptive.get("compiles_settled_s") is not None:
                settled.append((adaptive["compiles_settled_s"], adaptive.get("compiles_settled_step"),
                                f"{model} {task}"))
            elif on.get("step_s") and "compiles_settled_s" in adaptive:
                unsettled.append(f"{model} {task}")
            keys = adaptive.get("region_keys_by_step") or []
            if keys and len(keys) > 5 and keys[-1] != keys[4]:
                late_keys.append(f"{model} {task} ({keys})")
    if first_steps:
        lines += ["", f"First step, adaptive / unfused (the adaptive process of each model runs first): geomean "
                      f"{ratio_text(geometric_mean(first_steps))}, worst {ratio_text(worst[0])} ({worst[1]})."]
    if per_model:
        per_model.sort()
        below = [(value, name) for value, name in per_model if round(value, 2) < 0.9]
        lowest = ", ".join(f"{name} {ratio_text(value)}" for value, name in below[:5])
        lines += ["", f"Adaptive / unfused per model: highest {ratio_text(per_model[-1][0])} ({per_model[-1][1]}); "
                      f"{len(below)} of {len(per_model)} below 0.90x" + (f", the lowest {lowest}." if below else ".")]
    lines += ["", "Region keys still new after step 5: " + (", ".join(late_keys) if late_keys else "none.")]
    if settled:
        settled.sort()
        seconds, step, name = settled[-1]
        lines += ["", f"Background compiles of fused kernels done (steps are timed after): median "
                      f"{number(settled[len(settled) // 2][0])} s into the first process of each model, the latest "
                      f"{number(seconds)} s ({name}, after step {step})"
                      + (f"; still compiling after a minute: {', '.join(unsettled)}." if unsettled else ".")]
    return lines
