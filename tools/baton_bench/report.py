"""The benchmark report: ``report.md`` (+ PNG/SVG plots) from result lines.

It is built from the JSON lines alone, so ``python -m baton_bench report``
can regenerate it from any ``results.jsonl``.  The same tables can replace
the part of a README between ``<!-- results:begin -->`` and
``<!-- results:end -->``.
"""

import json
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

from . import plots
from .tables import (
    SuiteData, group_by_suite, impl_tables, once_table, other_metrics_table, render_markdown,
    target_table, verdict_table,
)

README_BEGIN = "<!-- results:begin -->"
README_END = "<!-- results:end -->"

_HOW_TO_READ = (
    "Values are medians over single-run invocations, each followed by its ratio "
    "to the suite's reference impl on this machine; `seed` columns give the same "
    "ratio from the seed's published figures (other machines: compare ratios, "
    "not values). Verdicts compare A and B run alternately; see "
    "docs/reading-verdicts.md.")


def load_results(path: str | Path) -> list[dict[str, Any]]:
    """The JSON objects of a results.jsonl file (bad lines are skipped)."""
    lines: list[dict[str, Any]] = []
    for text in Path(path).read_text().splitlines():
        text = text.strip()
        if not text:
            continue
        try:
            value = json.loads(text)
        except ValueError:
            continue
        if isinstance(value, dict):
            lines.append(value)
    return lines


def suite_tables(suite: SuiteData, level: int = 3) -> str:
    """Markdown for one suite under a heading of ``level``: medians,
    verdicts, once lines (no images)."""
    meta = suite.meta
    parts = [f"{'#' * level} {suite.name}"]
    if meta.get("metric"):
        parts.append(f"Metric `{meta.get('metric')}`, {meta.get('better', 'lower')} is "
                     f"better; reference `{meta.get('reference') or '-'}`.")
    if meta.get("status") not in (None, "ok"):
        parts.append(f"**Suite {meta['status']}:** {meta.get('error', '')}")
    if suite.summaries:
        if meta.get("reference"):
            parts.append(f"Medians; in parentheses, the ratio to `{meta['reference']}`; "
                         "`seed` columns give the seed's own ratio for comparison.")
        for caption, headers, rows in impl_tables(suite):
            parts.append((f"{caption}:\n\n" if caption else "") + render_markdown(headers, rows))
    if suite.verdicts:
        parts.append("Verdicts (A vs B):\n\n" + render_markdown(*verdict_table(suite)))
    if suite.targets:
        parts.append("Targets (speed: A's over B's, higher or lower values as the metric "
                     "prefers; met only when the whole interval clears the target):\n\n"
                     + render_markdown(*target_table(suite)))
    headers, rows = other_metrics_table(suite)
    if rows:
        parts.append("Other metrics the runs printed (median over all runs):\n\n"
                     + render_markdown(headers, rows))
    if suite.once:
        parts.append("Single-run measurements:\n\n" + render_markdown(*once_table(suite)))
    return "\n\n".join(parts)


def all_tables(lines: Iterable[dict[str, Any]]) -> str:
    """Markdown tables of every suite in ``lines``."""
    suites = group_by_suite(lines).values()
    if not suites:
        return "_No results._"
    return "\n\n".join(suite_tables(s) for s in suites)


def write_report(lines: Iterable[dict[str, Any]], report_dir: str | Path,
                 source: str | Path | None = None) -> Path:
    """Write ``report_dir/report.md`` and the plots; returns the report path.

    Plots need matplotlib; without it the report says so and has no images.
    A plot that fails to draw is noted in the report, never fatal."""
    report_dir = Path(report_dir)
    report_dir.mkdir(parents=True, exist_ok=True)
    pyplot = plots.load_pyplot()
    parts = ["# Benchmark report"]
    if source:
        parts.append(f"Generated from `{source}`.")
    parts.append(_HOW_TO_READ)
    if pyplot is None:
        parts.append("_matplotlib is not installed: no plots "
                     "(`pip install -r tools/requirements.txt`)._")
    for suite in group_by_suite(lines).values():
        parts.append(suite_tables(suite, level=2))
        if pyplot is not None:
            parts.append(_suite_images(pyplot, suite, report_dir))
    path = report_dir / "report.md"
    path.write_text("\n\n".join(p for p in parts if p) + "\n")
    return path


def _suite_images(pyplot: ModuleType, suite: SuiteData, report_dir: Path) -> str:
    """Markdown image links for the suite's plots (or why there are none)."""
    try:
        figures = plots.plot_suite(pyplot, suite, report_dir)
    except Exception as err:  # a bad plot must not cost the whole report
        return f"_Plot failed: {type(err).__name__}: {err}_"
    return "\n\n".join(f"![{title}]({stem}.png) ([svg]({stem}.svg))"
                       for title, stem in figures)


def replace_readme_section(readme: str | Path, markdown: str) -> None:
    """Replace the text between the results markers of ``readme`` with
    ``markdown``.  Raises ValueError if the markers are absent or out of
    order (we never guess where to write in someone's README)."""
    path = Path(readme)
    text = path.read_text()
    begin, end = text.find(README_BEGIN), text.find(README_END)
    if begin < 0 or end < begin:
        raise ValueError(f"{path}: needs {README_BEGIN} then {README_END}")
    head = text[:begin + len(README_BEGIN)]
    path.write_text(f"{head}\n{markdown}\n{text[end:]}")
