"""kiln-eval's Markdown and HTML reports, rendered from the sample report: well-formed,
self-contained, escaped, and holding every section, plot and fallback op."""
import re
import xml.etree.ElementTree as ElementTree
from html.parser import HTMLParser

import pytest

from eval_sample_report import COMPILE_ERROR, sample_report
from torch_kiln.eval import plots, report_html, report_markdown

VOID_TAGS = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
             "source", "track", "wbr"}
SECTIONS = ["Verdict", "Time", "Ops", "Numerics", "Shapes", "Environment"]


class TagChecker(HTMLParser):
    """Counts start tags and checks that each non-void tag is closed, innermost first."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.counts, self.open, self.errors, self.links = {}, [], [], []

    def handle_starttag(self, tag, attributes):
        self.counts[tag] = self.counts.get(tag, 0) + 1
        self.links += [value for name, value in attributes if name in ("src", "href")]
        if tag not in VOID_TAGS:
            self.open.append(tag)

    def handle_startendtag(self, tag, attributes):  # <circle .../> inside SVG
        self.counts[tag] = self.counts.get(tag, 0) + 1
        self.links += [value for name, value in attributes if name in ("src", "href")]

    def handle_endtag(self, tag):
        if not self.open or self.open[-1] != tag:
            self.errors.append(f"</{tag}> while {self.open[-3:]} open")
        else:
            self.open.pop()


def parsed(document):
    checker = TagChecker()
    checker.feed(document)
    checker.close()
    assert checker.errors == [] and checker.open == []
    return checker


def svg_elements(document):
    return re.findall(r"<svg\b.*?</svg>", document, flags=re.DOTALL)


@pytest.mark.parametrize("shapes, failing", [(True, False), (False, False), (True, True)])
def test_html_is_well_formed_self_contained_and_holds_the_plots(shapes, failing):
    document = report_html.render_html(sample_report(shapes=shapes, failing=failing))
    assert document.startswith("<!DOCTYPE html>")
    checker = parsed(document)
    expected_plots = 3 if shapes else 2
    assert checker.counts["svg"] == checker.counts["figure"] == expected_plots
    assert checker.counts["figcaption"] == expected_plots
    assert checker.counts["html"] == checker.counts["style"] == 1
    assert not any(tag in checker.counts for tag in ("script", "link", "img", "iframe"))
    assert all(link.startswith("#") for link in checker.links), checker.links
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", document)
    for svg in svg_elements(document):
        root = ElementTree.fromstring(svg)
        assert root.find("{http://www.w3.org/2000/svg}title").text
    headings = re.findall(r"<h2>(.*?)</h2>", document)
    assert headings == [name for name in SECTIONS if shapes or name != "Shapes"]


def test_html_escapes_user_text():
    report = sample_report(failing=True)
    report["model"]["name"] = "net<b>&"
    report["ops"]["fallback"][0]["op"] = "aten::<odd>"
    report["ops"]["fallback"][0]["sources"] = ["model.py:3 in <lambda>"]
    document = report_html.render_html(report)
    parsed(document)
    assert "<2, 33>" in COMPILE_ERROR
    assert "&lt;2, 33&gt; &amp; &lt;2, 1&gt;" in document
    assert "<2, 33>" not in document
    for raw in ("net<b>&", "<odd>", "<lambda>"):
        assert raw not in document
    assert "net&lt;b&gt;&amp;" in document and "in &lt;lambda&gt;" in document


def test_html_marks_failures():
    document = report_html.render_html(sample_report(failing=True))
    assert '<p class="verdict failed">Failed (exit status 1): a numerics check' in document
    assert re.search(r'<span class="fail">FAIL: 412 of 12288 elements', document)
    assert '<span class="status-failed">failed</span>' in document
    passing = report_html.render_html(sample_report())
    assert 'class="verdict passed"' in passing and 'class="fail"' not in passing


@pytest.mark.parametrize("shapes", [True, False])
def test_plots_are_valid_svg_with_a_title(shapes):
    report = sample_report(shapes=shapes, failing=True)
    drawings = [plots.step_times_svg(report), plots.parameter_errors_svg(report)]
    if shapes:
        drawings.append(plots.recompilations_svg(report))
    else:
        assert plots.recompilations_svg(report) == ""
    for svg in drawings:
        root = ElementTree.fromstring(svg)
        assert root.tag == "{http://www.w3.org/2000/svg}svg"
        assert root.find("{http://www.w3.org/2000/svg}title").text.strip()


def test_step_times_draws_one_series_per_mode_that_ran():
    report = sample_report(failing=True)
    report["modes"]["kiln_eager"]["step_seconds"] = []  # ran, but no steady-state steps
    svg = plots.step_times_svg(report)
    root = ElementTree.fromstring(svg)
    assert len(root.findall("{http://www.w3.org/2000/svg}polyline")) == 1  # cpu_eager only
    assert "kiln_eager: first step 1.87 s, no steady steps" in svg
    assert "kiln_compiled" not in svg  # failed: not drawn
    assert plots.MODE_COLOURS["cpu_eager"] in svg and plots.MODE_COLOURS["kiln_eager"] in svg


def test_parameter_errors_draws_failures_red_and_limits_the_count():
    report = sample_report(failing=True)
    svg = plots.parameter_errors_svg(report)
    assert svg.count(f'fill="{plots.FAIL_COLOUR}"/>') == 1  # the one failed bar
    report["numerics"]["checks"] *= 6  # 54 checks
    svg = plots.parameter_errors_svg(report)
    assert svg.count("<rect") - 1 == plots.MAX_CHECKS  # less the background
    assert f"the {plots.MAX_CHECKS} worst of 54 checks" in svg
    assert f'fill="{plots.FAIL_COLOUR}"/>' in svg  # the worst are kept


def test_recompilations_ends_at_the_report_counts():
    report = sample_report()
    svg = plots.recompilations_svg(report)
    shapes = report["shapes"]
    assert f"without bucketing: {shapes['recompiles']} recompiles" in svg
    assert f"with bucketing: {shapes['bucketed_recompiles']} recompiles" in svg
    assert all(f">{value}</text>" in svg for value in shapes["values"])


def test_markdown_has_every_section_and_fallback_op():
    report = sample_report()
    document = report_markdown.render_markdown(report)
    assert document.startswith("# Kiln evaluation: tiny_transformer\n")
    assert "examples/tiny_transformer.py:build" in document
    headings = re.findall(r"^## (.+)$", document, flags=re.MULTILINE)
    assert headings == SECTIONS
    for entry in report["ops"]["fallback"]:
        row = next(line for line in document.splitlines() if f"`{entry['op']}`" in line)
        assert f"| {entry['count']} |" in row
        assert all(source in row for source in entry["sources"])
    assert "| `aten::mm` | 960 |" in document
    assert "99.7%" in document  # native share
    assert "| `kiln_eager` | ok | 1.87 s | 9.28 ms | 9.12 – 9.87 ms | 1.96× |" in document
    assert "18.0 MiB" in document
    without_shapes = report_markdown.render_markdown(sample_report(shapes=False))
    assert "## Shapes" not in without_shapes and "## Environment" in without_shapes


def test_markdown_lists_failures_first_and_errors_verbatim():
    document = report_markdown.render_markdown(sample_report(failing=True))
    assert "**FAILED** (exit status 1): a numerics check is out of tolerance" in document
    rows = [line for line in document.split("## Numerics")[1].splitlines()
            if line.startswith("| `kiln")]
    assert len(rows) == 9
    assert "`layers.1.attention.in_proj.weight`" in rows[0] and "**FAIL**" in rows[0]
    assert "2.70e-02" in rows[0] and "1.00e-05 / 1.30e-06" in rows[0]
    assert all(row.endswith("| pass |") for row in rows[1:])
    assert f"```text\n{COMPILE_ERROR}\n```" in document


def test_markdown_notes_when_no_op_fell_back():
    report = sample_report()
    report["ops"]["fallback"] = []
    document = report_markdown.render_markdown(report)
    fallback_section = document.split("### Fallback ops")[1].split("###")[0]
    assert fallback_section.strip() == "No op fell back to the CPU."


def test_reports_render_when_nothing_was_measured():
    report = sample_report(shapes=False, failing=True)
    for mode in report["modes"].values():
        mode.update(status="skipped", error="kiln device unavailable", steps_run=0,
                    step_seconds=[], first_step_seconds=None, median_step_seconds=None,
                    min_step_seconds=None, max_step_seconds=None, speedup_vs_cpu=None)
    report["numerics"]["checks"] = []
    report["ops"].update(total_calls=0, fallback=[], library=[], all=[], native_share=0.0,
                         by_path={"native": 0, "compiled": 0, "library": 0, "custom": 0, "fallback": 0})
    assert plots.step_times_svg(report) == plots.parameter_errors_svg(report) == ""
    document = report_html.render_html(report)
    assert parsed(document).counts.get("svg", 0) == 0
    markdown = report_markdown.render_markdown(report)
    assert "No numerics check ran." in markdown
    assert "No op ran through a vendor library." in markdown
    assert markdown.count("skipped after 0 steps") == 3


def test_parameter_errors_draws_nan_as_a_full_bar():
    report = sample_report(failing=True)
    report["numerics"]["checks"][0].update(max_rel_error=float("nan"), passed=False,
                                           note="NaN on kiln")
    root = ElementTree.fromstring(plots.parameter_errors_svg(report))
    bars = [bar for bar in root.iter("{http://www.w3.org/2000/svg}rect")
            if bar.get("fill") == plots.FAIL_COLOUR]
    assert len(bars) == 2 and max(float(bar.get("width")) for bar in bars) == 400
    markdown = report_markdown.render_markdown(report)
    assert "| nan | 1.00e-05 / 1.30e-06 | **FAIL**: NaN on kiln |" in markdown
