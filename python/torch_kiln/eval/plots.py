"""Inline SVG plots of a kiln-eval report (standard library only). Each function returns one
``<svg>`` element as a string, or "" when the report holds nothing to plot."""
import itertools
import math
from html import escape

from .report_format import format_duration, report_modes

MODE_COLOURS = {"cpu_eager": "#4e79a7", "kiln_eager": "#f28e2b", "kiln_compiled": "#59a14f"}
EXTRA_COLOURS = ["#b07aa1", "#76b7b2", "#edc948", "#9c755f"]
FAIL_COLOUR = "#d62728"
UNBUCKETED_COLOUR = "#e15759"
INK, GRID, MUTED = "#222222", "#e3e3e3", "#666666"
MAX_CHECKS = 40            # parameter_errors_svg draws at most this many checks
ERROR_FLOOR = 1e-12        # errors below this (zeros too) are drawn at this value
MAX_MARKERS = 60           # step_times_svg marks each step while a series has no more


def mode_colour(mode, modes):
    """The colour of `mode`, the same in every plot of a report."""
    if mode in MODE_COLOURS:
        return MODE_COLOURS[mode]
    extras = [name for name in modes if name not in MODE_COLOURS]
    return EXTRA_COLOURS[extras.index(mode) % len(EXTRA_COLOURS)] if mode in extras else MUTED


def nice_step(span, count):
    """A tick step of 1, 2 or 5 times a power of ten giving about `count` ticks over `span`."""
    raw = span / max(count, 1) if span > 0 else 1.0
    power = 10 ** math.floor(math.log10(raw))
    return next(factor * power for factor in (1, 2, 5, 10) if factor * power >= raw)


def ticks(high, count=5, integer=False):
    """Ticks from 0 up to the first tick at or above `high`."""
    step = nice_step(high, count)
    if integer:
        step = max(1, round(step))
    top = step * max(1, math.ceil(high / step - 1e-9))
    return [step * index for index in range(round(top / step) + 1)]


def tick_label(value):
    return f"{value:g}"


def text(x, y, content, anchor="start", size=11, colour=INK, extra=""):
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}" '
            f'fill="{colour}"{extra}>{escape(str(content))}</text>')


def line(x1, y1, x2, y2, colour=GRID, width=1):
    return (f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" '
            f'stroke="{colour}" stroke-width="{width}"/>')


def document(width, height, title, parts):
    """The <svg> element: a scalable image with an accessible title."""
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
            f'width="{width}" height="{height}" role="img" '
            f'font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif">'
            f'<title>{escape(title)}</title>'
            f'<rect width="{width}" height="{height}" fill="#ffffff"/>'
            + "".join(parts) + "</svg>")


def legend(x, y, entries):
    """Legend rows of (colour, label) from (x, y) downwards."""
    parts = []
    for index, (colour, label) in enumerate(entries):
        row = y + 18 * index
        parts.append(f'<rect x="{x}" y="{row - 9}" width="12" height="10" fill="{colour}"/>')
        parts.append(text(x + 18, row, label))
    return parts


def axes(left, top, width, height, x_label, y_label, y_ticks, y_scale):
    """Horizontal grid lines with y tick labels, the axis lines and both axis labels."""
    parts = []
    for value in y_ticks:
        y = y_scale(value)
        parts.append(line(left, y, left + width, y))
        parts.append(text(left - 6, y + 4, tick_label(value), anchor="end"))
    parts.append(line(left, top, left, top + height, INK))
    parts.append(line(left, top + height, left + width, top + height, INK))
    parts.append(text(left + width / 2, top + height + 36, x_label, anchor="middle"))
    parts.append(text(14, top + height / 2, y_label, anchor="middle",
                      extra=f' transform="rotate(-90 14 {top + height / 2:.1f})"'))
    return parts


def step_times_svg(report):
    """Steady-state step time (ms) against step index, one series per mode that ran; the
    first step (with its compiles) is given in the legend."""
    modes = report_modes(report)
    ran = [mode for mode in modes if report["modes"].get(mode, {}).get("status") == "ok"]
    if not ran:
        return ""
    series = {mode: [seconds * 1000 for seconds in report["modes"][mode]["step_seconds"]]
              for mode in ran}
    steps = max((len(values) for values in series.values()), default=0)
    highest = max((value for values in series.values() for value in values), default=0)
    left, top, width, height, legend_width = 60, 28, 420, 220, 330
    y_ticks = ticks(highest or 1.0)
    x_step = max(1, steps - 1)

    def x_scale(index):
        return left + width * (index / x_step if steps > 1 else 0.5)

    def y_scale(value):
        return top + height * (1 - value / y_ticks[-1])

    parts = axes(left, top, width, height, "steady-state step", "step time (ms)", y_ticks, y_scale)
    for index in ticks(steps - 1, count=8, integer=True) if steps > 1 else [0]:
        if index < steps:
            parts.append(text(x_scale(index), top + height + 16, index + 1, anchor="middle"))
    entries = []
    for mode in ran:
        colour, values = mode_colour(mode, modes), series[mode]
        points = " ".join(f"{x_scale(index):.1f},{y_scale(value):.1f}"
                          for index, value in enumerate(values))
        if len(values) > 1:
            parts.append(f'<polyline points="{points}" fill="none" stroke="{colour}" '
                         f'stroke-width="2"/>')
        if len(values) <= MAX_MARKERS:
            parts += [f'<circle cx="{x_scale(index):.1f}" cy="{y_scale(value):.1f}" r="2.5" '
                      f'fill="{colour}"/>' for index, value in enumerate(values)]
        first = report["modes"][mode]["first_step_seconds"]
        entries.append((colour, f"{mode}: first step {format_duration(first)}"
                                + ("" if values else ", no steady steps")))
    parts += legend(left + width + 24, top + 8, entries)
    title = "Step time per mode (steady-state steps after warmup)"
    return document(left + width + legend_width, top + height + 48, title, parts)


def worst_checks(checks, limit=MAX_CHECKS):
    """The `limit` checks furthest out of (or closest to) tolerance, in their report order."""
    def badness(check):
        error = check["max_rel_error"]
        error = error if math.isfinite(error) else math.inf
        return (check["passed"], -error / max(check["rtol"], ERROR_FLOOR))
    chosen = sorted(range(len(checks)), key=lambda index: badness(checks[index]))[:limit]
    return [checks[index] for index in sorted(chosen)]


def parameter_errors_svg(report):
    """max_rel_error per check as horizontal bars on a log scale, grouped by mode, with rtol
    marked on each row; failed checks in red, NaN and infinite errors as full-length bars."""
    checks = report["numerics"]["checks"]
    if not checks:
        return ""
    shown = worst_checks(checks)
    modes = report_modes(report)
    groups = [(mode, [check for check in shown if check["mode"] == mode])
              for mode in modes + sorted({check["mode"] for check in shown} - set(modes))]
    groups = [(mode, rows) for mode, rows in groups if rows]
    values = [max(value, ERROR_FLOOR) for check in shown
              for value in (check["max_rel_error"], check["rtol"]) if math.isfinite(value)]
    low = math.floor(math.log10(min(values))) - 1
    high = max(math.ceil(math.log10(max(values))), low + 2)
    left, top, width, row_height, header_height = 230, 24, 400, 16, 22
    height = len(shown) * row_height + len(groups) * header_height
    total_width = left + width + 90

    def x_of_power(power):
        return left + width * (power - low) / (high - low)

    def x_scale(value):
        if not math.isfinite(value):
            return left + width
        return x_of_power(math.log10(max(value, ERROR_FLOOR)))

    decade_step = max(1, math.ceil((high - low) / 8))
    parts = []
    for power in range(low, high + 1, decade_step):
        x = x_of_power(power)
        parts.append(line(x, top, x, top + height))
        parts.append(text(x, top + height + 16, f"1e{power}", anchor="middle"))
    y = top
    for mode, rows in groups:
        colour = mode_colour(mode, modes)
        parts.append(text(8, y + 15, mode, colour=colour, extra=' font-weight="bold"'))
        y += header_height
        for check in rows:
            fill = colour if check["passed"] else FAIL_COLOUR
            name = check["name"] if len(check["name"]) <= 34 else "…" + check["name"][-33:]
            end = x_scale(check["max_rel_error"])
            parts.append(text(left - 6, y + 12, name, anchor="end",
                              colour=INK if check["passed"] else FAIL_COLOUR))
            parts.append(f'<rect x="{left}" y="{y + 3}" width="{max(end - left, 1):.1f}" '
                         f'height="{row_height - 5}" fill="{fill}"/>')
            tick = x_scale(check["rtol"])
            parts.append(line(tick, y + 1, tick, y + row_height - 1, INK, 2))
            parts.append(text(end + 4, y + 11, f"{check['max_rel_error']:.1e}", size=9,
                              colour=MUTED))
            y += row_height
    parts.append(line(left, top, left, top + height, INK))
    parts.append(line(left, top + height, left + width, top + height, INK))
    caption = "max relative error (log scale); black tick: rtol"
    if len(shown) < len(checks):
        caption += f"; the {len(shown)} worst of {len(checks)} checks"
    parts.append(text(left + width / 2, top + height + 36, caption, anchor="middle"))
    title = "Maximum relative error per checked tensor, against rtol"
    return document(total_width, top + height + 48, title, parts)


def recompilations_svg(report):
    """Cumulative recompiles along the shape sweep, without and with bucketing ("" when the
    report has no sweep)."""
    shapes = report.get("shapes")
    if not shapes or not shapes["per_value"]:
        return ""
    per_value = shapes["per_value"]
    lines = [("without bucketing", UNBUCKETED_COLOUR, "recompiled"),
             ("with bucketing", MODE_COLOURS["kiln_compiled"], "bucketed_recompiled")]
    cumulative = {key: list(itertools.accumulate(int(entry[key]) for entry in per_value))
                  for _, _, key in lines}
    highest = max(max(counts) for counts in cumulative.values())
    left, top, width, height, legend_width = 60, 28, 420, 200, 250
    y_ticks = ticks(max(highest, 1), integer=True)
    count = len(per_value)

    def x_scale(index):
        return left + width * (index + 0.5) / count

    def y_scale(value):
        return top + height * (1 - value / y_ticks[-1])

    parts = axes(left, top, width, height, f"{shapes['argument']} (in sweep order)",
                 "cumulative recompiles", y_ticks, y_scale)
    label_every = max(1, math.ceil(count / 16))
    for index, entry in enumerate(per_value):
        if index % label_every == 0:
            parts.append(text(x_scale(index), top + height + 16, entry["value"], anchor="middle",
                              size=10))
    entries = []
    for label, colour, key in lines:
        counts = cumulative[key]
        path = f"M{left:.1f},{y_scale(0):.1f} H{x_scale(0):.1f} V{y_scale(counts[0]):.1f}"
        for index in range(1, count):
            path += f" H{x_scale(index):.1f} V{y_scale(counts[index]):.1f}"
        path += f" H{left + width:.1f}"
        parts.append(f'<path d="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        entries.append((colour, f"{label}: {counts[-1]} recompiles"))
    parts += legend(left + width + 24, top + 8, entries)
    title = (f"Cumulative recompiles over the {shapes['argument']} sweep, "
             "without and with bucketing")
    return document(left + width + legend_width, top + height + 48, title, parts)
