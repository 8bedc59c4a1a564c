# SPDX-License-Identifier: MIT
"""Grouping result lines by suite, and the tables both the terminal and the
report show: medians per impl (with ratios to the reference and to the
seed's figures), verdicts, and ``once`` measurements.

Everything here works from the JSON lines alone (``results.jsonl``), so a
report can be regenerated without the manifests or the build.
"""

import json
import statistics
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

from .runner import OK
from .targets import NOT_MEASURED

#: A table's rows: one sequence of cells (printed with ``str``) per row.
Rows = Sequence[Sequence[object]]


@dataclass
class SuiteData:
    """All lines of one suite, sorted by kind."""

    name: str
    meta: dict[str, Any] = field(default_factory=dict)
    summaries: list[dict[str, Any]] = field(default_factory=list)
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    targets: list[dict[str, Any]] = field(default_factory=list)
    once: list[dict[str, Any]] = field(default_factory=list)
    raw: list[dict[str, Any]] = field(default_factory=list)

    def param_sets(self) -> list[dict[str, Any]]:
        """Parameter sets in the order they were first measured."""
        seen: list[dict[str, Any]] = []
        for line in self.summaries + self.verdicts:
            params = line.get("params") or {}
            if params not in seen:
                seen.append(params)
        return seen

    def impls(self) -> list[str]:
        """Impl names in first-seen order."""
        names: list[str] = []
        for line in self.summaries:
            if line["impl"] not in names:
                names.append(line["impl"])
        return names

    def summary(self, impl: Optional[str],
                params: Mapping[str, Any]) -> Optional[dict[str, Any]]:
        """The summary line of ``impl`` at ``params``, or None."""
        for line in self.summaries:
            if line.get("impl") == impl and (line.get("params") or {}) == params:
                return line
        return None


def group_by_suite(lines: Iterable[dict[str, Any]]) -> dict[str, SuiteData]:
    """``{suite name: SuiteData}`` in first-seen order; raw lines are only
    evidence and are not needed for tables."""
    suites: dict[str, SuiteData] = {}
    for line in lines:
        name = line.get("suite")
        if not name:
            continue
        data = suites.setdefault(name, SuiteData(name))
        kind = line.get("kind")
        if kind == "suite":
            data.meta = line
        elif kind == "summary":
            data.summaries.append(line)
        elif kind == "verdict":
            data.verdicts.append(line)
        elif kind == "target":
            data.targets.append(line)
        elif kind == "once":
            data.once.append(line)
        elif kind == "raw":
            data.raw.append(line)
    return suites


def param_label(params: Mapping[str, object]) -> str:
    """``counters=100 resumes=60000``; ``-`` for an empty set."""
    return " ".join(f"{k}={v}" for k, v in params.items()) or "-"


def fmt(value: object, digits: int = 3) -> str:
    """A number for a table cell: 3 significant digits, k/M/G for large ones."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    magnitude = abs(value)
    # From 10,000 up, in thousands (k), millions (M) or billions (G).
    for limit, scale, suffix in ((1e9, 1e9, "G"), (1e6, 1e6, "M"), (1e4, 1e3, "k")):
        if magnitude >= limit:
            return f"{value / scale:.{digits}g}{suffix}"
    return f"{value:.{digits}g}"


def status_cell(line: Mapping[str, Any]) -> str:
    """``missing (reason)`` or ``failed (reason)`` for a non-ok line."""
    reason = line.get("error")
    return f"{line.get('status')} ({reason})" if reason else str(line.get("status"))


def _seed_places(suite: SuiteData) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """``[(params, entry)]``: each seed entry with the parameter set it
    belongs to, the one matching its ``params``, else the last (largest)."""
    param_sets = suite.param_sets()
    placed: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for entry in suite.meta.get("seed") or []:
        wanted = entry.get("params") or {}
        matches = [p for p in param_sets if all(p.get(k) == v for k, v in wanted.items())]
        if matches:
            placed.append((matches[0] if wanted else matches[-1], entry))
    return placed


def _seed_ratio(entry: Mapping[str, Any], impl: str, reference: str) -> Optional[float]:
    """The seed's own ratio impl / reference, or None."""
    values: dict[str, float] = entry.get("values") or {}
    if impl in values and reference in values and values[reference]:
        return values[impl] / values[reference]
    return None


def impl_tables(suite: SuiteData) -> list[tuple[Optional[str], list[str], Rows]]:
    """``[(caption, headers, rows)]``: the suite's median table, split into
    one table per value of the plot's ``group`` parameter when it has one
    (as the seed's ring tables are, one per N)."""
    param_sets = suite.param_sets()
    group = (suite.meta.get("plot") or {}).get("group")
    if not group or not param_sets or not all(group in p for p in param_sets):
        return [(None, *impl_table(suite, param_sets))]
    values = list(dict.fromkeys(p[group] for p in param_sets))
    return [(f"{group}={value}",
             *impl_table(suite, [p for p in param_sets if p[group] == value], hide=group))
            for value in values]


def impl_table(suite: SuiteData, param_sets: Sequence[dict[str, Any]],
               hide: Optional[str] = None) -> tuple[list[str], Rows]:
    """Median per impl and param set, followed in parentheses by its ratio to
    the reference impl; after a param set the seed has figures for, the
    seed's own ratio (seeds ran on other machines: compare ratios, not
    values).  ``hide`` names a parameter left out of the column labels.
    Returns ``(headers, rows)``."""
    reference = suite.meta.get("reference")
    unit = suite.meta.get("unit") or _first_unit(suite)
    seeds = _seed_places(suite)
    headers: list[str] = ["impl"]
    # Each column maps an impl name to a cell.  ``...``: mypy cannot infer a
    # lambda with default arguments against ``Callable[[str], str]``.
    columns: list[Callable[..., str]] = []
    for params in param_sets:
        label = param_label({k: v for k, v in params.items() if k != hide})
        headers.append(f"{label} ({unit})" if unit else label)
        columns.append(lambda impl, params=params: _impl_cell(suite, impl, params, reference))
        for where, entry in seeds:
            if where == params and reference:
                headers.append(f"seed ratio ({entry.get('source', '?')})")
                columns.append(lambda impl, entry=entry: fmt(_seed_ratio(entry, impl, reference)))
    rows = [[impl] + [column(impl) for column in columns] for impl in suite.impls()]
    return headers, rows


def _impl_cell(suite: SuiteData, impl: str, params: Mapping[str, Any],
               reference: Optional[str]) -> str:
    """``75M (0.333)``: the median and its ratio to the reference median."""
    line = suite.summary(impl, params)
    if line is None:
        return "-"
    if line.get("status", OK) != OK or line.get("value") is None:
        return status_cell(line)
    cell = fmt(line["value"])
    ref = suite.summary(reference, params) if reference else None
    if ref and ref.get("status", OK) == OK and ref.get("value"):
        cell += f" ({fmt(line['value'] / ref['value'])})"
    return cell


def _first_unit(suite: SuiteData) -> Optional[str]:
    """The unit the programs reported, if the manifest did not set one."""
    for line in suite.summaries:
        if line.get("unit"):
            unit: str = line["unit"]
            return unit
    return None


def ratio_cell(line: Mapping[str, Any]) -> str:
    """``0.123 [0.1, 0.15]`` with ``..`` for an unbounded end."""
    if line.get("ratio") is None:
        return "-"
    lo = fmt(line.get("ratio_lo")) if line.get("ratio_lo") is not None else ".."
    hi = fmt(line.get("ratio_hi")) if line.get("ratio_hi") is not None else ".."
    return f"{fmt(line['ratio'])} [{lo}, {hi}]"


def verdict_table(suite: SuiteData) -> tuple[list[str], Rows]:
    """One row per comparison: params, A, B, ratio A/B with its interval,
    wins / pairs, verdict; and the metric with its direction when the suite
    judged its pairs on more than one (``pair_metrics``), each metric's row
    after the suite metric's.  Returns ``(headers, rows)``."""
    headers = ["params", "A", "B", "A/B [interval]", "wins/n", "verdict"]
    several = len({line.get("metric") for line in suite.verdicts}) > 1
    if several:
        headers.insert(3, "metric")
    rows: list[list[object]] = []
    for line in suite.verdicts:
        verdict = line.get("verdict", "-")
        if line.get("status", OK) != OK:
            verdict = f"{verdict}; {status_cell(line)}"
        row: list[object] = [param_label(line.get("params") or {}), line.get("a"), line.get("b"),
                             ratio_cell(line), f"{line.get('wins', 0)}/{line.get('n', 0)}",
                             verdict]
        if several:
            row.insert(3, f"{line.get('metric')} ({line.get('better', 'lower')} is better)")
        rows.append(row)
    if several:
        # Each comparison's rows together, in the order they were run.
        order = {(row[0], row[1], row[2]): i for i, row in reversed(list(enumerate(rows)))}
        rows.sort(key=lambda row: order[(row[0], row[1], row[2])])
    return headers, rows


def _params_key(line: Mapping[str, Any]) -> str:
    """A line's parameter set as a hashable, order-free key."""
    return json.dumps(line.get("params") or {}, sort_keys=True)


def target_table(suite: SuiteData) -> tuple[list[str], Rows]:
    """One row per magnitude target: params, the claim, the speed with its
    interval, and met / missed / undecided / not measured."""
    headers = ["params", "target", "speed [interval]", "verdict"]
    rows: list[list[object]] = []
    # Results of drivers that judged targets on medians-only sets too: such a
    # "not measured" row says nothing, since no pair runs there by design.
    paired = {_params_key(v) for v in suite.verdicts}
    for line in suite.targets:
        if line.get("verdict") == NOT_MEASURED and _params_key(line) not in paired:
            continue
        speed = line.get("speed")
        cell = "-" if speed is None else (
            f"{fmt(speed)} [{fmt(line.get('speed_lo')) if line.get('speed_lo') is not None else '..'}, "
            f"{fmt(line.get('speed_hi')) if line.get('speed_hi') is not None else '..'}]")
        rows.append([param_label(line.get("params") or {}),
                     f"{line.get('a')} >= {line.get('at_least')}x {line.get('b')}", cell,
                     line.get("verdict", "-")])
    return headers, rows


def once_table(suite: SuiteData) -> tuple[list[str], Rows]:
    """Lines recorded from the suite's ``once`` commands."""
    headers = ["impl", "metric", "value", "unit", "params"]
    rows: list[list[object]] = []
    for line in suite.once:
        value = fmt(line.get("value")) if line.get("status", OK) == OK else status_cell(line)
        rows.append([line.get("impl") or " ".join(line.get("cmd") or []) or "-",
                     line.get("metric", "-"), value, line.get("unit", ""),
                     json.dumps(line.get("params") or {}, sort_keys=True)])
    return headers, rows


def other_metrics_table(suite: SuiteData) -> tuple[list[str], Rows]:
    """Metrics the runs printed besides the suite's own (latency
    percentiles, memory per coroutine...): per impl, metric and parameter
    set, the median over every run's value."""
    main = suite.meta.get("metric")
    # (impl, metric, params as JSON) -> run values, and -> unit.
    values: dict[tuple[Optional[str], str, str], list[float]] = {}
    units: dict[tuple[Optional[str], str, str], str] = {}
    order: list[tuple[Optional[str], str, str]] = []
    for line in suite.raw:
        metric = line.get("metric")
        if metric in (None, main) or line.get("value") is None:
            continue
        if line.get("status", OK) != OK:
            continue
        key = (line.get("impl"), metric, _params_key(line))
        if key not in values:
            values[key] = []
            order.append(key)
        samples = line.get("samples")
        values[key].extend(samples if isinstance(samples, list) and samples else [line["value"]])
        units[key] = line.get("unit", "")
    headers = ["impl", "metric", "median", "unit", "runs", "params"]
    rows = [[impl, metric, fmt(statistics.median(values[(impl, metric, params)])),
             units[(impl, metric, params)], len(values[(impl, metric, params)]), params]
            for impl, metric, params in order]
    return headers, rows


def render_markdown(headers: Sequence[object], rows: Rows) -> str:
    """A GitHub-flavoured markdown table (``|`` in cells escaped)."""
    def cells(values: Iterable[object]) -> str:
        return "| " + " | ".join(str(v).replace("|", "\\|") for v in values) + " |"
    lines = [cells(headers), "|" + "|".join("---" for _ in headers) + "|"]
    lines += [cells(row) for row in rows]
    return "\n".join(lines)


def render_text(headers: Sequence[object], rows: Rows) -> str:
    """A plain table with aligned columns, for a terminal."""
    widths = [max(len(str(v)) for v in column) for column in zip(headers, *rows)]
    def line(values: Iterable[object]) -> str:
        return "  ".join(str(v).ljust(w) for v, w in zip(values, widths)).rstrip()
    out = [line(headers), line("-" * w for w in widths)]
    out += [line(row) for row in rows]
    return "\n".join(out)
