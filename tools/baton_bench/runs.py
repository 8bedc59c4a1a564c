# SPDX-License-Identifier: MIT
"""Comparing two results files: what got faster or slower between two runs
(``python -m baton_bench compare OLD.jsonl NEW.jsonl``), the check a
contributor runs before a change lands.

For every (suite, impl, metric, parameters) measured in both files, the
samples of its summary line in each are compared with the exact
permutation test of ``csm.resampling_test`` on the difference of medians:
"faster" or "slower" when the two sets of samples differ with error
probability at most ``alpha`` (per row), "no difference shown" when the
test is confident its p-value is above ``alpha`` (which is not proof of
equality: with noisy samples a real difference may stay hidden), and
"undecided" otherwise (one sample, or the test could not settle).  The ratio
is NEW's median over OLD's.  Runs on different machines are compared all
the same, with the differences listed first.
"""

import statistics
from dataclasses import dataclass
from collections.abc import Sequence
from typing import Any, Optional

from .csm import resampling_test
from .machine import machine_differences, machine_of

FASTER, SLOWER, SAME, UNDECIDED, ONLY_OLD, ONLY_NEW = (
    "faster", "slower", "no difference shown", "undecided", "only in old", "only in new")


@dataclass
class RunRow:
    """One measured quantity in two runs."""

    suite: str
    impl: str
    metric: str
    params: str
    old: Optional[float]
    new: Optional[float]
    ratio: Optional[float]
    verdict: str


def _key(line: dict[str, Any]) -> tuple[str, str, str, str]:
    params = ", ".join(f"{k}={v}" for k, v in sorted((line.get("params") or {}).items()))
    return (str(line.get("suite")), str(line.get("impl")), str(line.get("metric")), params)


def _summaries(lines: list[dict[str, Any]]) -> dict[tuple[str, str, str, str], list[float]]:
    out: dict[tuple[str, str, str, str], list[float]] = {}
    for line in lines:
        if line.get("kind") == "summary" and line.get("samples"):
            out[_key(line)] = [float(v) for v in line["samples"]]
    return out


def _better(lines: list[dict[str, Any]]) -> dict[str, str]:
    """suite -> "lower" or "higher", from the suite lines."""
    return {str(line.get("suite")): str(line.get("better", "lower"))
            for line in lines if line.get("kind") == "suite"}


def _median_difference(x: Sequence[float], y: Sequence[float]) -> float:
    return float(statistics.median(x) - statistics.median(y))


def compare_runs(old: list[dict[str, Any]], new: list[dict[str, Any]],
                 alpha: float = 1e-3) -> list[RunRow]:
    """A row per quantity measured in either run, sorted by suite."""
    a, b = _summaries(old), _summaries(new)
    better = {**_better(old), **_better(new)}
    rows = []
    for key in sorted(set(a) | set(b)):
        suite, impl, metric, params = key
        sa, sb = a.get(key), b.get(key)
        if sa is None or sb is None:
            only = sb if sa is None else sa
            assert only is not None  # the key came from one of the two
            value = statistics.median(only)
            rows.append(RunRow(suite, impl, metric, params,
                               None if sa is None else value, None if sb is None else value,
                               None, ONLY_NEW if sa is None else ONLY_OLD))
            continue
        mo, mn = statistics.median(sa), statistics.median(sb)
        ratio = mn / mo if mo else None
        verdict = UNDECIDED
        if len(sa) >= 2 and len(sb) >= 2:
            test = resampling_test(sb, sa, statistic=_median_difference, alpha=alpha)
            if test.decision == "different":
                up = mn > mo
                lower_better = better.get(suite, "lower") == "lower"
                verdict = SLOWER if up == lower_better else FASTER
            elif test.decision == "not different":
                verdict = SAME
        rows.append(RunRow(suite, impl, metric, params, mo, mn, ratio, verdict))
    return rows


def _fmt(v: Optional[float]) -> str:
    if v is None:
        return "-"
    return f"{v:.4g}"


def render_runs(old: list[dict[str, Any]], new: list[dict[str, Any]], rows: list[RunRow]) -> str:
    """The comparison as text: machine differences, then one line per row."""
    out = []
    diffs = machine_differences(machine_of(old), machine_of(new))
    if diffs:
        out.append("machines differ (figures may not be comparable):")
        out += [f"  {d}" for d in diffs]
        out.append("")
    header = ("suite", "impl", "metric", "params", "old", "new", "new/old", "verdict")
    table = [header] + [(r.suite, r.impl, r.metric, r.params, _fmt(r.old), _fmt(r.new),
                         _fmt(r.ratio), r.verdict) for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        out.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    counts = {v: sum(r.verdict == v for r in rows) for v in (FASTER, SLOWER, SAME, UNDECIDED)}
    out.append("")
    out.append(", ".join(f"{n} {v}" for v, n in counts.items()))
    return "\n".join(out)
