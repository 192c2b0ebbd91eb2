"""The torch.compile section of docs/performance.md (bench/bench_compile.py's
JSON): steady-state steps, first steps, compiled optimizer steps and the
pointwise chain, per model and mode. Standard library only."""
from render_common import geometric_mean, median_iqr, median_of, number, ratio_of, ratio_text, table


def compile_modes(results, section, kind=None):
    """The modes of one bench_compile section, in the order the JSON has them."""
    modes = []
    for model, entry in results.items():
        if not isinstance(entry, dict) or section not in entry:
            continue
        table_ = entry[section] if kind is None else entry[section].get(kind, {})
        if section == "optimizer_step":
            table_ = table_.get("modes", {})
        for mode in table_:
            if mode not in modes and mode != "graphs_compiled_while_timed":
                modes.append(mode)
    return modes


def compile_models(results):
    return [name for name, entry in results.items()
            if isinstance(entry, dict) and any(key in entry for key in ("steady", "first_step", "optimizer_step"))]


def render_compile(results, args):
    lines, notes = [], []
    models = compile_models(results)
    for mode, reason in results.get("unavailable", {}).items():
        notes.append(f"{mode}: not run, {reason}")

    def collect_errors(where, entries):
        for mode, entry in entries.items():
            if isinstance(entry, dict) and "error" in entry:
                notes.append(f"{where} {mode}: {entry['error']}")

    # Steady state: every mode's median ±IQR, train and inference.
    modes = [mode for mode in compile_modes(results, "steady", "inference")]
    for mode in compile_modes(results, "steady", "train"):
        if mode not in modes:
            modes.append(mode)
    if modes:
        rows = []
        for model in models:
            steady = results[model].get("steady")
            if not steady:
                continue
            for kind in ("train", "inference"):
                rows.append([model, kind] + [median_iqr(steady.get(kind, {}).get(mode), 1e3) for mode in modes])
                collect_errors(f"{model} {kind}", steady.get(kind, {}))
            if steady.get("graphs_compiled_while_timed"):
                notes.append(f"{model}: {steady['graphs_compiled_while_timed']} graph(s) compiled while timed")
        lines += ["Steady state, ms per step, median ±IQR (train: a training step; inference: the forward under "
                  "`torch.no_grad()`):", ""]
        lines += table(["model", "step"] + modes, rows) + [""]

        comparisons = [("cpu-eager", "kiln-compiled", ""), ("cpu-inductor", "kiln-compiled", ">= 1.0"),
                       ("kiln-eager", "kiln-compiled", "> 1"), ("cpu-eager", "kiln-eager", ""),
                       ("cpu-inductor", "kiln-eager", "")]
        comparisons = [c for c in comparisons if c[0] in modes and c[1] in modes]
        if comparisons:
            rows, means = [], {c: {"train": [], "inference": []} for c in comparisons}
            for model in models:
                steady = results[model].get("steady")
                if not steady:
                    continue
                row = [model]
                for comparison in comparisons:
                    parts = []
                    for kind in ("train", "inference"):
                        entries = steady.get(kind, {})
                        value = ratio_of(median_of(entries.get(comparison[0])), median_of(entries.get(comparison[1])))
                        means[comparison][kind].append(value)
                        parts.append(ratio_text(value))
                    row.append(" / ".join(parts))
                rows.append(row)
            rows.append(["geomean"] + [" / ".join(ratio_text(geometric_mean(means[c][kind]))
                                                  for kind in ("train", "inference")) for c in comparisons])
            heading = ["model"] + [f"{a} / {b}" + (f" (target {t})" if t else "") for a, b, t in comparisons]
            lines += ["Ratios of the steady-state medians, train / inference:", ""] + table(heading, rows) + [""]

    # First step in a fresh process.
    modes = compile_modes(results, "first_step")
    if modes:
        rows, cold_ratios, warm_ratios = [], [], []
        for model in models:
            first = results[model].get("first_step")
            if not first:
                continue
            row = [model]
            for mode in modes:
                entry = first.get(mode, {})
                cells = []
                for which in ("cold", "warm"):
                    run = entry.get(which)
                    cells.append("-" if run is None else "error" if "error" in run else number(run.get("seconds")))
                    if run is not None and "error" in run:
                        notes.append(f"{model} {mode} first step ({which}): {run['error']}")
                row.append(" / ".join(cells))
            kiln_cold = first.get("kiln-compiled", {}).get("cold", {})
            row.append(number(kiln_cold.get("kernels_compiled")) if "error" not in kiln_cold else "error")
            ratios = []
            for which, collected in (("cold", cold_ratios), ("warm", warm_ratios)):
                value = ratio_of(first.get("cpu-inductor", {}).get(which, {}).get("seconds"),
                                 first.get("kiln-compiled", {}).get(which, {}).get("seconds"))
                collected.append(value)
                ratios.append(ratio_text(value))
            row.append(" / ".join(ratios))
            rows.append(row)
        rows.append(["geomean"] + [""] * len(modes) + ["", f"{ratio_text(geometric_mean(cold_ratios))} / "
                                                           f"{ratio_text(geometric_mean(warm_ratios))}"])
        lines += ["First training step in a fresh process, s, cold (empty kernel and Inductor caches) / warm "
                  "(a second process on the same caches):", ""]
        lines += table(["model"] + modes + ["kiln-compiled kernels compiled (cold)",
                                            "cpu-inductor / kiln-compiled, cold / warm (target >= 1.0)"], rows) + [""]

    # Optimizer steps.
    modes = compile_modes(results, "optimizer_step")
    if modes:
        rows, first_ratios, second_ratios = [], [], []
        for model in models:
            step = results[model].get("optimizer_step")
            if not step:
                continue
            entries = step.get("modes", {})
            collect_errors(f"{model} optimizer step", entries)
            first = ratio_of(median_of(entries.get("cpu-inductor")), median_of(entries.get("kiln-compiled")))
            second = ratio_of(median_of(entries.get("kiln-eager")), median_of(entries.get("kiln-compiled")))
            first_ratios.append(first)
            second_ratios.append(second)
            rows.append([model] + [median_iqr(entries.get(mode), 1e6) for mode in modes]
                        + [ratio_text(first), ratio_text(second)])
        rows.append(["geomean"] + [""] * len(modes) + [ratio_text(geometric_mean(first_ratios)),
                                                       ratio_text(geometric_mean(second_ratios))])
        lines += ["Optimizer step (each model's optimizer over fixed gradients; compiled modes compile "
                  "`optimizer.step`), us, median ±IQR:", ""]
        lines += table(["model"] + modes + ["cpu-inductor / kiln-compiled", "kiln-eager / kiln-compiled"], rows)
        lines += [""]

    # The pointwise chain.
    chain = results.get("chain", {}).get("modes", {})
    if chain:
        collect_errors("chain", chain)
        rows = []
        for mode, entry in chain.items():
            difference = entry.get("max_abs_difference") if isinstance(entry, dict) else None
            rows.append([mode, median_iqr(entry, 1e3),
                         "-" if difference is None else "0" if difference == 0 else f"{difference:.2e}",
                         ratio_text(ratio_of(median_of(entry), median_of(chain.get("kiln-compiled"))))])
        lines += ["Pointwise chain (16 ops on 4M float32 elements), ms per call, median ±IQR:", ""]
        lines += table(["mode", "ms", "max abs difference from cpu-eager", "mode / kiln-compiled (target for "
                                                                              "kiln-eager >= 4)"], rows) + [""]
    if notes:
        lines += ["Not measured or failed:", ""] + [f"- {note}" for note in notes] + [""]
    return lines[:-1] if lines and lines[-1] == "" else lines
