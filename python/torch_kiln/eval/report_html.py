"""The kiln-eval report as one self-contained HTML5 document (inline style and SVG plots)."""
from html import escape

from . import plots
from . import report_format as fmt

STYLE = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif;
       color: #222; margin: 0; background: #fafafa; }
main { max-width: 1100px; margin: 0 auto; padding: 24px 32px 48px; background: #fff; }
h1 { font-size: 24px; margin-bottom: 4px; } h2 { margin-top: 36px; border-bottom: 1px solid #ddd; }
h3 { margin-top: 24px; } .subtitle { color: #555; margin-top: 0; }
nav a { margin-right: 14px; color: #4e79a7; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } td.number { text-align: right; font-variant-numeric: tabular-nums; }
code, pre { font: 12px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
pre { background: #f6f6f6; border-left: 4px solid #d62728; padding: 10px; white-space: pre-wrap; }
.verdict { padding: 10px 14px; border-radius: 4px; font-weight: bold; }
.verdict.passed { background: #e7f4e4; } .verdict.failed { background: #fbe3e3; }
.fail, .status-failed { color: #d62728; font-weight: bold; } .status-skipped { color: #888; }
figure, .scroll { margin: 16px 0; overflow-x: auto; } figcaption { color: #555; font-size: 13px; }
svg { max-width: 100%; height: auto; }
"""
SECTIONS = [("verdict", "Verdict"), ("time", "Time"), ("ops", "Ops"), ("numerics", "Numerics"),
            ("shapes", "Shapes"), ("environment", "Environment")]


class Html(str):
    """Text that is already HTML: table cells and paragraphs insert it unescaped."""


def html(value):
    return value if isinstance(value, Html) else escape(str(value))


def code(value):
    return Html(f"<code>{escape(str(value))}</code>")


def table(headers, rows, numeric=()):
    """A table; the columns numbered in `numeric` are right-aligned."""
    head = "".join(f"<th>{html(header)}</th>" for header in headers)
    body = "".join(
        "<tr>" + "".join(f'<td class="number">{html(cell)}</td>' if index in numeric
                         else f"<td>{html(cell)}</td>" for index, cell in enumerate(row)) + "</tr>"
        for row in rows)
    return (f'<div class="scroll"><table><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")


def figure(svg, caption):
    return f"<figure>{svg}<figcaption>{html(caption)}</figcaption></figure>" if svg else ""


def verdict_section(report):
    verdict = report["verdict"]
    status = verdict["exit_status"]
    outcome = "passed" if status == 0 else "failed"
    items = [f"Numerics: {'passed' if verdict['numerics_passed'] else 'failed'}",
             f"Ops that fell back to the CPU: {verdict['fallback_ops']}"] + verdict["messages"]
    return (f'<p class="verdict {outcome}">{outcome.capitalize()} (exit status {status}): '
            f"{escape(fmt.exit_status_meaning(status))}.</p>"
            "<ul>" + "".join(f"<li>{escape(item)}</li>" for item in items) + "</ul>")


def time_section(report):
    modes = report["modes"]
    names = [name for name in fmt.report_modes(report) if name in modes]
    rows = []
    for name in names:
        row = fmt.time_row(code(name), modes[name])
        row[1] = Html(f'<span class="status-{escape(row[1])}">{escape(row[1])}</span>')
        rows.append(row)
    parts = ["<p>Step times are the steady-state steps after warmup; the first step includes "
             "every kernel and graph compile.</p>", table(fmt.TIME_HEADERS, rows, range(2, 13)),
             figure(plots.step_times_svg(report), "Steady-state step time per mode that ran; "
                    "the legend gives each mode's first step.")]
    for name in names:
        mode = modes[name]
        if mode["status"] != "ok" and mode["error"]:
            parts.append(f"<h3>{escape(name)} {escape(mode['status'])} after "
                         f"{mode['steps_run']} steps</h3><pre>{escape(mode['error'])}</pre>")
        for note in mode.get("notes", []):
            parts.append(f"<p>Note on <code>{escape(name)}</code>: {escape(note)}</p>")
    return "".join(parts)


def ops_section(report):
    ops = report["ops"]
    parts = [f"<p>Kiln eager, all steps: {fmt.format_count(ops['total_calls'])} op calls, "
             f"{fmt.format_percent(ops['native_share'])} on the device "
             "(native, compiled, library or custom).</p>",
             table(["Path", "Calls", "Share"], fmt.path_rows(ops), (1, 2)),
             "<h3>Fallback ops</h3>"]
    if ops["fallback"]:
        rows = [[code(entry["op"]), fmt.format_count(entry["count"]),
                 Html("<br>".join(code(source) for source in entry["sources"]) or fmt.MISSING)]
                for entry in ops["fallback"]]
        parts.append(table(["Op", "Calls", "Sources"], rows, (1,)))
    else:
        parts.append("<p>No op fell back to the CPU.</p>")
    parts.append("<h3>Library ops</h3>")
    if ops["library"]:
        rows = [[code(entry["op"]), fmt.format_count(entry["count"])] for entry in ops["library"]]
        parts.append(table(["Op", "Calls"], rows, (1,)))
    else:
        parts.append("<p>No op ran through a vendor library.</p>")
    parts.append("<h3>Custom kernels</h3>")
    if ops.get("custom"):
        rows = [[code(entry["op"]), fmt.format_count(entry["count"])] for entry in ops["custom"]]
        parts.append(table(["Kernel", "Launches"], rows, (1,)))
    else:
        parts.append("<p>No custom kernel ran (torch_kiln.kernels).</p>")
    return "".join(parts)


def numerics_section(report):
    checks = report["numerics"]["checks"]
    if not checks:
        return "<p>No numerics check ran.</p>"
    failed = sum(not check["passed"] for check in checks)
    summary = (f'<span class="fail">{failed} of {len(checks)} checks FAILED</span>' if failed
               else f"All {len(checks)} checks within tolerance")
    rows = []
    for check in fmt.failures_first(checks):
        row = fmt.numerics_row(check)
        row[0], row[2] = code(row[0]), code(row[2])
        if not check["passed"]:
            row[-1] = Html(f'<span class="fail">{escape(row[-1])}</span>')
        rows.append(row)
    caption = "Maximum relative error per checked tensor (log scale); the black tick marks rtol."
    if len(checks) > plots.MAX_CHECKS:
        caption += f" Only the {plots.MAX_CHECKS} worst of {len(checks)} checks are drawn."
    audited = fmt.ops_compared_sentence(report)
    return (f"<p>{summary} (against the CPU; failures first). {escape(audited)}</p>"
            + table(fmt.NUMERICS_HEADERS, rows, (5, 6, 7))
            + figure(plots.parameter_errors_svg(report), caption))


def shapes_section(report):
    shapes = report["shapes"]
    parts = [f"<p>Swept <code>{escape(shapes['argument'])}</code> over "
             f"{len(shapes['values'])} values: {escape(fmt.join_values(shapes['values']))}.</p>",
             table(fmt.SHAPE_SUMMARY_HEADERS, fmt.shape_summary_rows(shapes), (1, 2)),
             f"<ul><li>Buckets: {escape(fmt.join_values(shapes['buckets']))}</li>"
             f"<li>Suggested buckets: {escape(fmt.join_values(shapes['suggested_buckets']))}"
             "</li></ul>"]
    if shapes["error"]:
        parts.append("<p>The sweep stopped with an error:</p>"
                     f"<pre>{escape(shapes['error'])}</pre>")
    parts.append(figure(plots.recompilations_svg(report),
                        "Cumulative recompiles along the sweep, without and with bucketing."))
    if shapes["per_value"]:
        parts.append(table(fmt.PER_VALUE_HEADERS, fmt.per_value_rows(shapes), (0, 1, 3)))
    return "".join(parts)


def environment_section(report):
    return table(fmt.ENVIRONMENT_HEADERS, fmt.environment_rows(report))


def render_html(report):
    """The whole report as one HTML5 document with no external resources."""
    model = report["model"]
    renderers = {"verdict": verdict_section, "time": time_section, "ops": ops_section,
                 "numerics": numerics_section, "shapes": shapes_section,
                 "environment": environment_section}
    sections = [(anchor, title) for anchor, title in SECTIONS
                if anchor != "shapes" or report["shapes"] is not None]
    navigation = "".join(f'<a href="#{anchor}">{title}</a>' for anchor, title in sections)
    body = "".join(f'<section id="{anchor}"><h2>{title}</h2>{renderers[anchor](report)}</section>'
                   for anchor, title in sections)
    title = f"Kiln evaluation: {model['name']}"
    return ("<!DOCTYPE html>\n"
            f'<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{escape(title)}</title><style>{STYLE}</style></head>"
            f"<body><main><h1>{escape(title)}</h1>"
            f'<p class="subtitle"><code>{escape(model["source"])}</code>: '
            f"{escape(fmt.model_summary(report))}.</p><nav>{navigation}</nav>{body}</main>"
            "</body></html>\n")
