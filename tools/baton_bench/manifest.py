# SPDX-License-Identifier: MIT
"""Suite manifests (``bench/<suite>/suite.json``): loading, checking, expanding.

The format is specified in ``docs/bench-format.md``.  A broken manifest must
not stop the other suites, so every problem is raised as ``ManifestError``
with the file and the field at fault, and the driver reports it as a failed
suite.
"""

import json
import os
import re
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, TypeVar

from .targets import check_targets

#: Plot layout used when a manifest has no ``plot`` entry (see report.py).
DEFAULT_PLOTS: dict[str, dict[str, Any]] = {
    "ring": {"x": "nr", "group": "n", "logx": True, "xlabel": "number of coroutines (nr)"}}

_PLACEHOLDER = re.compile(r"\{(\w+)\}")

_T = TypeVar("_T")


class ManifestError(Exception):
    """A suite.json that cannot be used; the message names file and field."""


@dataclass
class Impl:
    """One implementation of a suite: how to run it and what it needs."""

    name: str
    cmd: list[str]
    peer: bool = False
    requires: list[str] = field(default_factory=list)
    #: Factors applied to numeric parameters for this impl alone: a smaller
    #: workload for a peer that is orders of magnitude slower (the metric is
    #: a rate, so the workload size does not change its meaning).
    scale: dict[str, float] = field(default_factory=dict)

    def params_for(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """``params`` with this impl's factors applied (rounded, at least 1)."""
        out = dict(params)
        for key, factor in self.scale.items():
            if isinstance(out.get(key), int) and not isinstance(out[key], bool):
                out[key] = max(1, round(out[key] * factor))
        return out


#: Where each mode looks for its parameter sets and budgets, in order: a
#: manifest written before the three modes has only "quick" and "full".
MODE_KEYS = {"quick": ("quick", "default", "full"), "default": ("default", "full"),
             "full": ("full", "default")}


def _for_mode(table: Optional[Mapping[str, Any]], mode: str) -> Any:
    """The first entry of ``table`` that ``mode`` looks at, or None."""
    if mode not in MODE_KEYS:
        raise ValueError(f"unknown mode {mode!r} (known: {', '.join(MODE_KEYS)})")
    for key in MODE_KEYS[mode]:
        value = (table or {}).get(key)
        if value:
            return value
    return None


@dataclass
class Suite:
    """A parsed manifest.  ``path`` is the suite.json it came from."""

    name: str
    metric: str
    better: str
    impls: dict[str, Impl]
    params: dict[str, Any]
    pairs: list[list[str]]
    once: list[dict[str, Any]]
    reference: Optional[str] = None
    seed: list[Any] = field(default_factory=list)
    plot: Optional[dict[str, Any]] = None
    unit: Optional[str] = None
    path: Optional[Path] = None
    #: Optional: pairs are compared only on the parameter sets that contain
    #: one of these subsets (the others get medians only).
    pair_params: Optional[list[dict[str, Any]] | dict[str, list[dict[str, Any]]]] = None
    #: Optional: at most this many pairs per comparison, per mode
    #: ({"quick": n, "default": m, "full": k}).
    budget: Optional[dict[str, Any]] = None
    #: Optional: magnitude targets, decided from the comparisons (targets.py).
    targets: list[dict[str, Any]] = field(default_factory=list)
    #: Optional: the suite's share of a run's time, relative to the others'.
    weight: float = 1.0
    #: Optional: at most this many runs per median, per mode.
    median_runs: Optional[dict[str, Any]] = None
    #: Optional: other metrics of the same runs each pair is also judged on,
    #: ``[{"metric": ..., "better": "lower"|"higher"}]`` (no runs of their
    #: own, no targets: the verdict lines only).
    pair_metrics: list[dict[str, str]] = field(default_factory=list)

    def pairs_for(self, params: Mapping[str, Any], mode: str = "default") -> list[list[str]]:
        """The pairs to compare on this parameter set.  ``pair_params`` is a
        list of subsets, or such lists per mode ({"quick": [...]}, looked up
        as parameter sets are; a mode without one compares everywhere)."""
        subsets = self.pair_params
        if isinstance(subsets, dict):
            subsets = _for_mode(subsets, mode)
        if not subsets:
            return self.pairs
        for subset in subsets:
            if all(params.get(k) == v for k, v in subset.items()):
                return self.pairs
        return []

    def budget_for(self, mode: str, default: int) -> int:
        """The pair budget: the run's, lowered by the manifest's for this mode."""
        own = _for_mode(self.budget, mode)
        return min(default, own) if isinstance(own, int) and own > 0 else default

    def median_runs_for(self, mode: str, default: int) -> int:
        """Runs per median: the run's, lowered by the manifest's for this mode
        (a suite whose runs take seconds may settle for fewer)."""
        own = _for_mode(self.median_runs, mode)
        return min(default, own) if isinstance(own, int) and own > 0 else default

    def param_sets(self, mode: str) -> list[dict[str, Any]]:
        """The workload parameter sets of a ``quick``, ``default`` or ``full`` run."""
        sets = _for_mode(self.params, mode)
        return [dict(p) for p in sets] if sets else [{}]

    def once_for(self, mode: str) -> list[dict[str, Any]]:
        """The ``once`` commands of this mode (an entry without ``modes``
        runs in every mode)."""
        _for_mode(None, mode)  # checks the mode
        return [e for e in self.once if mode in (e.get("modes") or MODE_KEYS)]

    def meta(self) -> dict[str, Any]:
        """The manifest facts the report needs, as one JSON-able dict (the
        driver writes it as the suite's ``"kind": "suite"`` line)."""
        return {"suite": self.name, "kind": "suite", "metric": self.metric,
                "better": self.better, "unit": self.unit, "reference": self.reference,
                "impls": {n: {"peer": i.peer} for n, i in self.impls.items()},
                "pairs": self.pairs, "seed": self.seed, "plot": self.plot,
                "pair_metrics": self.pair_metrics}


def find_manifests(src: str | Path, names: Optional[Sequence[str]] = None) -> list[Path]:
    """``SRC/bench/*/suite.json`` paths, sorted; only ``names`` if given.
    Raises ManifestError for a requested suite that has no manifest."""
    bench = Path(src) / "bench"
    found = {p.parent.name: p for p in sorted(bench.glob("*/suite.json"))}
    if not names:
        return list(found.values())
    unknown = [n for n in names if n not in found]
    if unknown:
        known = ", ".join(found) or "none"
        raise ManifestError(f"no suite.json for {', '.join(unknown)} under {bench} "
                            f"(found: {known})")
    return [found[n] for n in names]


def load_suite(path: str | Path) -> Suite:
    """Parse and check one manifest; raises ManifestError."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise ManifestError(f"{path}: cannot read JSON: {err}") from err
    if not isinstance(data, dict):
        raise ManifestError(f"{path}: top level must be an object")
    name = _require(data, "suite", str, path)
    better = data.get("better", "lower")
    if better not in ("lower", "higher"):
        raise ManifestError(f"{path}: better must be \"lower\" or \"higher\", got {better!r}")
    impls = _parse_impls(_require(data, "impls", dict, path), path)
    reference = data.get("reference")
    if reference is not None and reference not in impls:
        raise ManifestError(f"{path}: reference {reference!r} is not an impl")
    seed = data.get("seed") or []
    bad = check_targets(data.get("targets"), list(impls))
    if bad:
        raise ManifestError(f"{path}: {bad}")
    once = list(data.get("once") or [])
    for entry in once:
        need = entry.get("memory_gib") if isinstance(entry, dict) else None
        if need is not None and (isinstance(need, bool) or not isinstance(need, (int, float))
                                 or need <= 0):
            raise ManifestError(f"{path}: once: memory_gib must be a positive number, "
                                f"got {need!r}")
        limit = entry.get("timeout") if isinstance(entry, dict) else None
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, (int, float))
                                  or limit <= 0):
            raise ManifestError(f"{path}: once: timeout must be a positive number of "
                                f"seconds, got {limit!r}")
    return Suite(
        name=name, metric=_require(data, "metric", str, path), better=better,
        impls=impls, params=data.get("params") or {},
        pairs=_parse_pairs(data.get("pairs"), impls, path),
        once=once, reference=reference,
        seed=seed if isinstance(seed, list) else [seed],
        plot=data.get("plot", DEFAULT_PLOTS.get(name)), unit=data.get("unit"),
        path=path, pair_params=data.get("pair_params"), budget=data.get("budget"),
        targets=list(data.get("targets") or []), weight=_weight(data, path),
        median_runs=data.get("median_runs"),
        pair_metrics=_pair_metrics(data, path))


def _pair_metrics(data: Mapping[str, Any], path: Path) -> list[dict[str, str]]:
    """``pair_metrics``: each a metric other than the suite's, with its
    ``better``."""
    raw = data.get("pair_metrics") or []
    out = []
    for entry in raw if isinstance(raw, list) else [raw]:
        metric = entry.get("metric") if isinstance(entry, dict) else None
        better = entry.get("better") if isinstance(entry, dict) else None
        if not isinstance(metric, str) or better not in ("lower", "higher"):
            raise ManifestError(f"{path}: pair_metrics: each entry needs a \"metric\" and "
                                f"\"better\": \"lower\" or \"higher\", got {entry!r}")
        if metric == data.get("metric"):
            raise ManifestError(f"{path}: pair_metrics: {metric} is the suite's own metric")
        out.append({"metric": metric, "better": better})
    return out


def _weight(data: Mapping[str, Any], path: Path) -> float:
    """The suite's ``weight``: a positive number, 1 when absent."""
    weight = data.get("weight", 1.0)
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight <= 0:
        raise ManifestError(f"{path}: weight must be a positive number, got {weight!r}")
    return float(weight)


def _require(data: Mapping[str, Any], key: str, kind: type[_T], path: Path) -> _T:
    """``data[key]``, which must exist and be of type ``kind``."""
    value = data.get(key)
    if not isinstance(value, kind):
        raise ManifestError(f"{path}: field {key!r} is missing or not a {kind.__name__}")
    return value


def _parse_impls(raw: Mapping[str, Any], path: Path) -> dict[str, Impl]:
    """``impls`` entries: each needs a non-empty ``cmd`` list of strings."""
    impls: dict[str, Impl] = {}
    for name, spec in raw.items():
        cmd = spec.get("cmd") if isinstance(spec, dict) else None
        if not cmd or not all(isinstance(part, str) for part in cmd):
            raise ManifestError(f"{path}: impl {name!r} needs \"cmd\": a list of strings")
        scale = spec.get("scale") or {}
        if not isinstance(scale, dict) or not all(
                isinstance(f, (int, float)) and not isinstance(f, bool) and f > 0
                for f in scale.values()):
            raise ManifestError(f"{path}: impl {name!r}: \"scale\" must map parameters "
                                f"to positive factors")
        impls[name] = Impl(name, list(cmd), bool(spec.get("peer", False)),
                           list(spec.get("requires") or []), dict(scale))
    if not impls:
        raise ManifestError(f"{path}: no impls")
    return impls


def _parse_pairs(raw: Optional[Iterable[Sequence[str]]], impls: Mapping[str, Impl],
                 path: Path) -> list[list[str]]:
    """Explicit ``pairs``, or every baton impl against every peer."""
    if raw is None:
        ours = [n for n, i in impls.items() if not i.peer]
        peers = [n for n, i in impls.items() if i.peer]
        return [[a, b] for a in ours for b in peers]
    for pair in raw:
        if len(pair) != 2 or any(name not in impls for name in pair):
            raise ManifestError(f"{path}: pair {pair!r} must name two impls")
    return [list(pair) for pair in raw]


def expand(cmd: Sequence[str], values: Mapping[str, object]) -> list[str]:
    """Replace every ``{name}`` in the words of ``cmd`` by ``values[name]``.

    Unlike ``str.format`` this leaves other braces alone (JSON arguments).
    Raises ManifestError for a placeholder with no value."""
    def substitute(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in values:
            raise ManifestError(f"no value for placeholder {{{key}}} in {cmd}")
        return str(values[key])
    return [_PLACEHOLDER.sub(substitute, word) for word in cmd]


def missing_reason(cmd: Sequence[str], requires: Iterable[str] = ()) -> Optional[str]:
    """Why ``cmd`` cannot run here (a required tool not on PATH, or the
    program itself absent), or None if it looks runnable."""
    absent = [tool for tool in requires if shutil.which(tool) is None]
    if absent:
        return f"{', '.join(absent)} not on PATH"
    program = cmd[0]
    if os.sep in program:
        if not os.path.isfile(program):
            return f"{program} not built"
        if not os.access(program, os.X_OK):
            return f"{program} is not executable"
    elif shutil.which(program) is None:
        return f"{program} not on PATH"
    return None


def memory_gib(meminfo: str | Path = "/proc/meminfo") -> Optional[float]:
    """This machine's physical memory (MemTotal), in GiB; None if unknown."""
    try:
        for line in Path(meminfo).read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / (1024 * 1024)
    except (OSError, ValueError, IndexError):
        pass
    return None


def memory_reason(needed: Optional[float],
                  meminfo: str | Path = "/proc/meminfo") -> Optional[str]:
    """Why a ``once`` command that needs ``needed`` GiB of memory (its
    ``memory_gib``, checked by ``load_suite``) cannot run here, or None.  A
    run past the machine's memory is not a measurement: the OOM killer ends
    it, or another process."""
    if needed is None:
        return None
    have = memory_gib(meminfo)
    if have is not None and have < needed:
        return f"needs {needed:g} GiB of memory, this machine has {have:.1f} GiB"
    return None
