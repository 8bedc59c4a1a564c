# SPDX-License-Identifier: MIT
"""Plots for the report, with matplotlib's Agg backend (no display needed).

matplotlib is optional: ``load_pyplot()`` returns None when it is missing
and the report then says so instead of showing images.  Every figure is
saved twice, as PNG (for quick viewing) and SVG (for documents).

Two shapes:

* a suite whose manifest has ``"plot": {"x": P, "group": G, "logx": bool,
  "xlabel": text}`` (the ``ring`` suite by default) gets line plots of the
  median against parameter ``P``, one line per impl, one figure per value
  of ``G``;
* every other suite gets one figure of bar charts, one panel per parameter
  set, each bar an impl's median with min-max error bars.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Optional

from .tables import SuiteData, param_label
from .runner import OK

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def load_pyplot() -> Optional[ModuleType]:
    """``matplotlib.pyplot`` set to the Agg backend, or None if unavailable."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as pyplot
    except ImportError:
        return None
    return pyplot


def plot_suite(pyplot: ModuleType, suite: SuiteData, outdir: Path) -> list[tuple[str, str]]:
    """Draw the suite's figures into ``outdir``; returns ``[(title, stem)]``
    where ``stem`` + ``.png``/``.svg`` are the files written."""
    layout = suite.meta.get("plot")
    if layout and _has_param(suite, layout.get("x")):
        return _line_plots(pyplot, suite, layout, outdir)
    return _bar_plots(pyplot, suite, outdir)


def _has_param(suite: SuiteData, name: Optional[str]) -> bool:
    return bool(name) and any(name in (p or {}) for p in suite.param_sets())


def _ok_points(suite: SuiteData, impl: str) -> list[tuple[dict[str, Any], float, float, float]]:
    """``(params, median, min, max)`` of every ok summary of ``impl``."""
    points: list[tuple[dict[str, Any], float, float, float]] = []
    for line in suite.summaries:
        if line.get("impl") == impl and line.get("status", OK) == OK \
                and line.get("value") is not None:
            points.append((line.get("params") or {}, line["value"],
                           line.get("min", line["value"]), line.get("max", line["value"])))
    return points


def _axis_label(suite: SuiteData) -> str:
    """``metric (unit)`` plus which way is better."""
    unit = suite.meta.get("unit") or next(
        (s.get("unit") for s in suite.summaries if s.get("unit")), "")
    metric = suite.meta.get("metric", "value")
    better = suite.meta.get("better", "lower")
    return f"{metric} ({unit}), {better} is better" if unit else f"{metric}, {better} is better"


def _note_absent(figure: Figure, suite: SuiteData) -> None:
    """Name the impls that have no point at all, at the foot of the figure."""
    absent = [impl for impl in suite.impls() if not _ok_points(suite, impl)]
    if absent:
        figure.text(0.01, 0.01, "no data: " + ", ".join(absent), fontsize="x-small")


def _save(pyplot: ModuleType, figure: Figure, outdir: Path, stem: str) -> None:
    """Write ``stem.png`` and ``stem.svg`` and release the figure."""
    figure.tight_layout(rect=(0, 0.03, 1, 1))
    for ext in ("png", "svg"):
        figure.savefig(outdir / f"{stem}.{ext}", dpi=120)
    pyplot.close(figure)


def _line_plots(pyplot: ModuleType, suite: SuiteData, layout: dict[str, Any],
                outdir: Path) -> list[tuple[str, str]]:
    """One figure per value of the ``group`` parameter: median against the
    ``x`` parameter, a line (with min-max error bars) per impl."""
    group_name: Any  # a parameter name, or None: no groups (``p.get(None)`` is None)
    x_name, group_name = layout["x"], layout.get("group")
    groups = sorted({p.get(group_name) for p in suite.param_sets()}, key=str)
    written: list[tuple[str, str]] = []
    for group in groups:
        figure, axes = pyplot.subplots(figsize=(7, 4.5))
        for impl in suite.impls():
            points = sorted((p[x_name], v, lo, hi) for p, v, lo, hi in _ok_points(suite, impl)
                            if x_name in p and p.get(group_name) == group)
            if not points:
                continue
            xs, ys, los, his = zip(*points)
            axes.errorbar(xs, ys, yerr=[[y - lo for y, lo in zip(ys, los)],
                                        [hi - y for y, hi in zip(ys, his)]],
                          marker="o", capsize=3, label=impl)
        if layout.get("logx", True):
            axes.set_xscale("log")
        axes.set_xlabel(layout.get("xlabel", x_name))
        axes.set_ylabel(_axis_label(suite))
        title = f"{suite.name}: {group_name}={group}" if group_name else suite.name
        axes.set_title(title)
        axes.grid(True, which="both", alpha=0.3)
        axes.legend(fontsize="small")
        stem = f"{suite.name}-{group_name}{group}" if group_name else suite.name
        _note_absent(figure, suite)
        _save(pyplot, figure, outdir, _safe(stem))
        written.append((title, _safe(stem)))
    return written


def _bar_plots(pyplot: ModuleType, suite: SuiteData, outdir: Path) -> list[tuple[str, str]]:
    """One figure with a bar-chart panel per parameter set."""
    param_sets = suite.param_sets()
    if not param_sets:
        return []
    figure, panels = pyplot.subplots(1, len(param_sets), squeeze=False,
                                     figsize=(max(5, 4 * len(param_sets)), 4.5))
    for panel, params in zip(panels[0], param_sets):
        bars = [(impl, v, lo, hi) for impl in suite.impls()
                for p, v, lo, hi in _ok_points(suite, impl) if p == params]
        if bars:
            names, values, los, his = zip(*bars)
            panel.bar(range(len(names)), values, yerr=[[v - lo for v, lo in zip(values, los)],
                                                       [hi - v for v, hi in zip(values, his)]],
                      capsize=3, color="tab:blue")
            panel.set_xticks(range(len(names)), names, rotation=45, ha="right")
            if min(values) > 0 and max(values) / min(values) > 100:
                panel.set_yscale("log")
        panel.set_title(param_label(params), fontsize="small")
        panel.set_ylabel(_axis_label(suite))
    figure.suptitle(f"{suite.name}: median, min-max")
    _note_absent(figure, suite)
    stem = _safe(suite.name)
    _save(pyplot, figure, outdir, stem)
    return [(f"{suite.name}: median, min-max", stem)]


def _safe(stem: str) -> str:
    """A file-name-safe version of ``stem``."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in str(stem))
