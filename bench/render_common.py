"""Formatting and stamps shared by the performance and models pages
(render_performance.py, render_adaptive_eager.py, render_models.py): numbers,
ratios, geometric means, Markdown tables, and the header a benchmark recorded
(bench/run_info.py). Standard library only."""
import math


# ---------------------------------------------------------------- formatting

def number(value):
    """A figure with as many decimals as its size needs; "n/a" for None."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    decimals = decimals_for(value)
    return f"{value:.{decimals}f}" if decimals is not None else f"{value:.2e}"


def decimals_for(value):
    """Decimals that show `value` to about three significant digits (two
    below 1000, none above); None for a value too small for fixed notation."""
    magnitude = abs(value)
    if magnitude >= 1000:
        return 0
    if magnitude >= 100:
        return 1
    if magnitude >= 1 or magnitude == 0:
        return 2
    if magnitude < 1e-4:
        return None
    return 2 - math.floor(math.log10(magnitude))


def spread(value, reference):
    """`value` (an IQR) with as many decimals as `reference` (its median) has on the page."""
    decimals = decimals_for(reference)
    return number(value) if decimals is None else f"{value:.{decimals}f}"


def scaled(value, scale):
    return None if value is None else value * scale


def ratio_of(numerator, denominator):
    """numerator / denominator, or None when either is missing or zero."""
    if numerator is None or denominator is None or denominator == 0:
        return None
    return numerator / denominator


def ratio_text(value):
    return "n/a" if value is None else f"{value:.2f}x"


def geometric_mean(values):
    values = [value for value in values if value is not None and value > 0]
    if not values:
        return None
    return math.exp(sum(math.log(value) for value in values) / len(values))


def table(heading, rows):
    """A markdown table; `heading` is a list of column titles, each row a list
    of cells (already text). A last "geomean" row over a single row repeats it: left out."""
    if len(rows) == 2 and str(rows[-1][0]).startswith("geomean"):
        rows = rows[:1]
    lines = ["| " + " | ".join(heading) + " |", "|" + "|".join("---" for _ in heading) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return lines


def size_text(nbytes):
    mib, kib = 1024 * 1024, 1024
    if nbytes >= mib and nbytes % mib == 0:
        return f"{nbytes // mib} MiB"
    if nbytes >= kib and nbytes % kib == 0:
        return f"{nbytes // kib} KiB"
    return f"{nbytes} B"


def median_iqr(entry, scale):
    """"median ±IQR" of a bench_compile entry, scaled; "error" for a failed mode."""
    if entry is None:
        return "-"
    if "error" in entry:
        return "error"
    median = entry["median_s"] * scale
    return f"{number(median)} ±{spread(entry['iqr_s'] * scale, median)}"


def median_of(entry):
    if not isinstance(entry, dict) or "error" in entry:
        return None
    return entry.get("median_s")


# ---------------------------------------------------------------- the stamp

def parse_header(lines):
    """{"command": ..., "commit": ..., ...} from run_info's "key : value" lines."""
    fields = {}
    for line in lines or []:
        key, separator, value = line.partition(":")
        if not separator:
            continue
        if key.strip() == "update":  # bench_suite.py --update: one line per re-run, all kept
            fields.setdefault("updates", []).append(" ".join(value.split()))
        else:
            fields[key.strip()] = " ".join(value.split())
    return fields


def parse_update(text):
    """(command, date, commit) of one bench_suite.py --update line's value:
    "<command> at <date> on commit <commit>"."""
    command, _, when = text.rpartition(" at ") if " at " in text else (text, "", "")
    date, _, commit = when.partition(" on commit ")
    return command, date, commit


def last_update(fields):
    """(date, commit) of the latest --update re-run in a header, or None."""
    return parse_update(fields["updates"][-1])[1:] if fields.get("updates") else None


def stamp(name, fields):
    """The lines that say which run measured a section's figures."""
    if not fields:
        return [f"*Run: not recorded (`{name}.json` has no header; it predates bench/run_info.py's "
                "header in the JSON). Re-run the benchmark to stamp it.*"]
    missing = "not recorded"
    machine = fields.get("host", missing)
    if "device" in fields:
        machine += f"; device {fields['device']}"
    return [
        f"- command: `{fields.get('command', missing)}`",
        f"- commit: `{fields.get('commit', missing)}`; date: {fields.get('date', missing)}",
        f"- machine: {machine}; load {fields.get('load', missing)}",
        f"- software: torch {fields.get('torch', missing)}; kiln build {fields.get('kiln', missing)}",
    ] + [f"- updated (the models and tasks it names were re-run; the others keep the run above): `{command}`"
         f"{f' at {date} on commit {commit}' if date else ''}"
         for command, date, commit in map(parse_update, fields.get("updates", []))]
