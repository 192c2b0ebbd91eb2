"""The kiln-eval report as Markdown (GitHub flavour), rendered from the report dict."""
import re

from . import report_format as fmt


def text(value):
    """Plain text made safe for Markdown: no inline HTML, emphasis or code spans."""
    return re.sub(r"([\\`*<])", r"\\\1", str(value))


def code(value):
    """`value` as a code span, fenced with more backticks than it holds."""
    value = str(value)
    ticks = "`" * (max((len(run) for run in re.findall(r"`+", value)), default=0) + 1)
    padding = " " if value.startswith("`") or value.endswith("`") else ""
    return f"{ticks}{padding}{value}{padding}{ticks}"


def fenced(value):
    """`value` verbatim in a fenced block."""
    fence = "`" * max(3, max((len(run) for run in re.findall(r"`+", value)), default=0) + 1)
    return f"{fence}text\n{value}\n{fence}"


def table(headers, rows, align=""):
    """A table; `align` holds 'l' or 'r' per column (left by default)."""
    def cells(values):
        return "| " + " | ".join(str(value).replace("|", "\\|").replace("\n", " ")
                                 for value in values) + " |"
    rule = ["---:" if align[index:index + 1] == "r" else "---" for index in range(len(headers))]
    return "\n".join([cells(headers), "|" + "|".join(rule) + "|"] + [cells(row) for row in rows])


def verdict_section(report):
    verdict = report["verdict"]
    status = verdict["exit_status"]
    headline = "Passed" if status == 0 else "FAILED"
    lines = ["## Verdict", "",
             f"**{headline}** (exit status {status}): {fmt.exit_status_meaning(status)}.", "",
             f"- Numerics: {'passed' if verdict['numerics_passed'] else '**failed**'}",
             f"- Ops that fell back to the CPU: {verdict['fallback_ops']}"]
    lines += [f"- {text(message)}" for message in verdict["messages"]]
    return lines


def time_section(report):
    modes = report["modes"]
    rows = [fmt.time_row(code(name), modes[name])
            for name in fmt.report_modes(report) if name in modes]
    lines = ["## Time", "", "Step times are the steady-state steps after warmup; the first step "
             "includes every kernel and graph compile.", "",
             table(fmt.TIME_HEADERS, rows, "ll" + "r" * 11)]
    for name in fmt.report_modes(report):
        mode = modes.get(name)
        if mode and mode["status"] != "ok" and mode["error"]:
            lines += ["", f"### {name} {mode['status']} after {mode['steps_run']} steps", "",
                      fenced(mode["error"])]
        for note in (mode or {}).get("notes", []):
            lines += ["", f"Note on {code(name)}: {text(note)}"]
    return lines


def ops_section(report):
    ops = report["ops"]
    lines = ["## Ops", "",
             f"Kiln eager, all steps: {fmt.format_count(ops['total_calls'])} op calls, "
             f"{fmt.format_percent(ops['native_share'])} on the device "
             "(native, compiled, library or custom).", "",
             table(["Path", "Calls", "Share"], fmt.path_rows(ops), "lrr"), "",
             "### Fallback ops", ""]
    if ops["fallback"]:
        rows = [[code(entry["op"]), fmt.format_count(entry["count"]),
                 "; ".join(code(source) for source in entry["sources"]) or fmt.MISSING]
                for entry in ops["fallback"]]
        lines.append(table(["Op", "Calls", "Sources"], rows, "lrl"))
    else:
        lines.append("No op fell back to the CPU.")
    lines += ["", "### Library ops", ""]
    if ops["library"]:
        rows = [[code(entry["op"]), fmt.format_count(entry["count"])] for entry in ops["library"]]
        lines.append(table(["Op", "Calls"], rows, "lr"))
    else:
        lines.append("No op ran through a vendor library.")
    lines += ["", "### Custom kernels", ""]
    if ops.get("custom"):
        rows = [[code(entry["op"]), fmt.format_count(entry["count"])] for entry in ops["custom"]]
        lines.append(table(["Kernel", "Launches"], rows, "lr"))
    else:
        lines.append("No custom kernel ran (torch_kiln.kernels).")
    return lines


def numerics_section(report):
    checks = report["numerics"]["checks"]
    failed = sum(not check["passed"] for check in checks)
    lines = ["## Numerics", ""]
    if not checks:
        return lines + ["No numerics check ran."]
    summary = (f"**{failed} of {len(checks)} checks FAILED**" if failed
               else f"All {len(checks)} checks within tolerance")
    rows = []
    for check in fmt.failures_first(checks):
        row = fmt.numerics_row(check)
        row[0], row[2], row[-1] = code(row[0]), code(row[2]), text(row[-1])
        if not check["passed"]:
            row[-1] = "**" + row[-1].replace("FAIL", "FAIL**", 1)
        rows.append(row)
    audited = fmt.ops_compared_sentence(report)
    return lines + [summary + " (against the CPU; failures first)." +
                    (" " + audited if audited else ""), "",
                    table(fmt.NUMERICS_HEADERS, rows, "lllllrrrl")]


def shapes_section(report):
    shapes = report["shapes"]
    if shapes is None:
        return []
    lines = ["## Shapes", "",
             f"Swept {code(shapes['argument'])} over {len(shapes['values'])} values: "
             f"{fmt.join_values(shapes['values'])}.", "",
             table(fmt.SHAPE_SUMMARY_HEADERS, fmt.shape_summary_rows(shapes), "lrr"), "",
             f"- Buckets: {fmt.join_values(shapes['buckets'])}",
             f"- Suggested buckets: {fmt.join_values(shapes['suggested_buckets'])}"]
    if shapes["error"]:
        lines += ["", "The sweep stopped with an error:", "", fenced(shapes["error"])]
    if shapes["per_value"]:
        lines += ["", table(fmt.PER_VALUE_HEADERS, fmt.per_value_rows(shapes), "rrlrl")]
    return lines


def environment_section(report):
    rows = [[name, text(value)] for name, value in fmt.environment_rows(report)]
    return ["## Environment", "", table(fmt.ENVIRONMENT_HEADERS, rows)]


def render_markdown(report):
    """The whole report as one Markdown document."""
    model = report["model"]
    lines = [f"# Kiln evaluation: {text(model['name'])}", "",
             f"{code(model['source'])}: {text(fmt.model_summary(report))}.", ""]
    for section in (verdict_section, time_section, ops_section, numerics_section,
                    shapes_section, environment_section):
        part = section(report)
        if part:
            lines += part + [""]
    return "\n".join(lines)
