# SPDX-License-Identifier: MIT
"""The benchmark report: ``report.md`` (+ PNG/SVG plots) and a single
self-contained ``report.html`` (plots inlined), from result lines.

It is built from the JSON lines alone, so ``python -m baton_bench report``
can regenerate it from any ``results.jsonl``.  The same tables, without the
plots, make ``docs/results.md`` (``results_document``); the targets of every
suite make the README's short headline table (``headline``), which replaces
the part of a README between ``<!-- results:begin -->`` and
``<!-- results:end -->``.
"""

import base64
import html
import json
import re
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
                     "(`pip install './tools[bench]'`)._")
    for suite in group_by_suite(lines).values():
        parts.append(suite_tables(suite, level=2))
        if pyplot is not None:
            parts.append(_suite_images(pyplot, suite, report_dir))
    path = report_dir / "report.md"
    text = "\n\n".join(p for p in parts if p) + "\n"
    path.write_text(text)
    (report_dir / "report.html").write_text(to_html(text, report_dir))
    return path


def to_html(markdown_text: str, image_dir: Path) -> str:
    """One HTML page for ``markdown_text``: tables rendered, and every PNG
    it links to (from ``image_dir``) inlined as a data URI, so that the
    file can be mailed or attached on its own.  Without the ``markdown``
    package the text is kept as preformatted text."""
    try:
        import markdown
    except ImportError:
        body = f"<pre>{html.escape(markdown_text)}</pre>"
    else:
        body = markdown.markdown(markdown_text, extensions=["tables"])
    body = _IMG_SRC.sub(lambda m: _inline_png(m, image_dir), body)
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
            f"<title>baton benchmark report</title><style>{_CSS}</style></head>"
            f"<body>\n{body}\n</body></html>\n")


_IMG_SRC = re.compile(r'src="([^"/]+\.png)"')
_CSS = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}"
        "table{border-collapse:collapse;margin:1em 0;font-size:90%}"
        "td,th{border:1px solid #bbb;padding:2px 6px;text-align:left}"
        "th{background:#eee}img{max-width:100%}code{background:#f4f4f4}")


def _inline_png(match: re.Match[str], image_dir: Path) -> str:
    """``src="x.png"`` as a data URI (left as is if the file is absent)."""
    try:
        data = (image_dir / match.group(1)).read_bytes()
    except OSError:
        return match.group(0)
    return f'src="data:image/png;base64,{base64.b64encode(data).decode("ascii")}"'


def headline(lines: Iterable[dict[str, Any]]) -> str:
    """The README's short table: every suite's magnitude targets with the
    measured speed and the verdict, and where the full tables are."""
    lines = list(lines)
    rows: list[list[object]] = []
    headers: list[str] = []
    for suite in group_by_suite(lines).values():
        if not suite.targets:
            continue
        headers, suite_rows = target_table(suite)
        rows += [[suite.name, *row] for row in suite_rows]
    run = next((line for line in lines if line.get("kind") == "run"), {})
    where = (f"From a `make bench{_MODE_FLAG.get(run.get('mode', ''), '')}` run "
             f"({_run_facts(lines)}); every table is in [docs/results.md](docs/results.md).")
    if not rows:
        return where + "\n\n_No targets measured._"
    return where + "\n\n" + render_markdown(["suite", *headers], rows)


_MODE_FLAG = {"quick": " QUICK=1", "full": " FULL=1", "default": ""}


def _run_facts(lines: Iterable[dict[str, Any]]) -> str:
    """"date, CPU, N cores, commit, M min" from the machine and run lines."""
    lines = list(lines)
    machine = next((line for line in lines if line.get("kind") == "machine"), {})
    run = next((line for line in lines if line.get("kind") == "run"), {})
    facts = [str(machine["date"])[:10]] if machine.get("date") else []
    if machine.get("cpu_model"):
        facts.append(str(machine["cpu_model"]))
    if machine.get("cores"):
        facts.append(f"{machine['cores']} cores")
    if machine.get("commit"):
        commit = str(machine["commit"])
        dirty = commit.endswith("-dirty")
        commit = commit.removesuffix("-dirty")[:10]
        facts.append(f"commit {commit}" + (" with uncommitted changes" if dirty else ""))
    if run.get("elapsed_s") is not None:
        facts.append(f"{float(run['elapsed_s']) / 60:.1f} min")
    return ", ".join(facts) or "no machine line"


def results_document(lines: Iterable[dict[str, Any]]) -> str:
    """``docs/results.md``: every suite's tables from one run, with the run's
    facts on top (no plots: those live in the report, not in the repository)."""
    lines = list(lines)
    run = next((line for line in lines if line.get("kind") == "run"), {})
    mode = run.get("mode", "?")
    return (f"# Benchmark results\n\nGenerated by `python -m baton_bench report` from one "
            f"`make bench{_MODE_FLAG.get(mode, '')}` run ({_run_facts(lines)}); mode "
            f"`{mode}`. Regenerate with `make bench` and then `make results`. {_HOW_TO_READ}"
            f"\n\n{all_tables(lines)}\n")


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
