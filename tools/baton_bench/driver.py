# SPDX-License-Identifier: MIT
"""The benchmark driver: run every suite, decide every pair, record everything.

A run has a mode (``quick``, ``default``, ``full``; ``budget.py`` says how
its time is shared).  For each suite manifest it

1. runs the suite's ``once`` commands;
2. runs every impl once at every parameter set (a probe: it says what a
   run costs, and its value is a sample like any other), then tops up the
   impls that are in no pair to ``median_runs`` runs;
3. runs each "baton vs peer" pair alternately (one invocation per run)
   until the CSM decides the win rate is above or below 1/2, the pair
   budget or the comparison's share of time is spent, or a verdict is out
   of reach (``compare.compare``, ``budget.PairBudget``);
4. tops up every impl to ``median_runs`` runs, reusing the pair runs, and
   emits a summary line per impl and a verdict line per pair at each
   parameter set, and a target line per magnitude target.

Every JSON line goes to the results file as soon as it exists, progress goes
to the terminal, and nothing a single benchmark does can stop the run:
failures become ``missing``/``failed`` lines with a reason.
"""

import json
import random
import statistics
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, TextIO, cast

from .budget import DEFAULT, FULL, MODE_MINUTES, MODES, QUICK, PairBudget, Planner, Timings
from .compare import Comparison, compare, compare_pairs
from .csm import min_decisive_count
from .machine import describe_machine
from .progress import Progress
from .targets import applies, judge
from .manifest import (ManifestError, Suite, expand, find_manifests, load_suite, memory_reason,
                       missing_reason)
from .report import write_report
from .runner import FAILED, MISSING, OK, RunOutcome, measurement, run_command
from .tables import (
    fmt, group_by_suite, impl_tables, param_label, ratio_cell, render_text, status_cell,
    verdict_table,
)

#: Default pair budgets (most pairs per comparison) and runs per median, by
#: mode.  20 pairs is a little above the 15 a unanimous comparison needs at
#: epsilon = 1e-3 (``min_decisive_count``); fewer could never give a verdict.
PAIR_BUDGET = {QUICK: 20, DEFAULT: 40, FULL: 60}
MEDIAN_RUNS = {QUICK: 3, DEFAULT: 5, FULL: 5}



_Run = Callable[[], RunOutcome]


@dataclass
class Config:
    """Everything a run needs.  ``None`` budget, median_runs and minutes
    mean the mode's default (``minutes`` 0 or below: no time budget)."""

    src: Path
    build: Path
    out: Path
    report: Path
    mode: str = DEFAULT
    suites: list[str] = field(default_factory=list)
    budget: Optional[int] = None
    epsilon: float = 1e-3
    timeout: float = 120.0
    median_runs: Optional[int] = None
    seed: int = 0
    minutes: Optional[float] = None
    timings: Optional[Path] = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"unknown mode {self.mode!r} (known: {', '.join(MODES)})")
        if self.budget is None:
            self.budget = PAIR_BUDGET[self.mode]
        if self.median_runs is None:
            self.median_runs = MEDIAN_RUNS[self.mode]
        if self.minutes is None:
            self.minutes = MODE_MINUTES[self.mode]
        elif self.minutes <= 0:
            self.minutes = None
        if self.timings is None:
            self.timings = Path(self.build) / "bench-timings.json"


class Sink:
    """Collects the run's JSON lines and writes each to the results file at
    once, so an interrupted run still leaves what it measured."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.file = self.path.open("w")
        self.lines: list[dict[str, Any]] = []

    def emit(self, line: dict[str, Any]) -> None:
        self.lines.append(line)
        self.file.write(json.dumps(line, sort_keys=False) + "\n")
        self.file.flush()

    def close(self) -> None:
        self.file.close()


def run(config: Config, out: Optional[TextIO] = None) -> list[dict[str, Any]]:
    """Run the configured suites; write results and report; return the lines.
    Progress goes to ``out`` (default: the current ``sys.stdout``).
    Raises ManifestError only when a suite named on the command line does
    not exist (a usage error); everything else is recorded and survived."""
    out = out or sys.stdout
    manifests = find_manifests(config.src, config.suites)
    if not manifests:
        raise ManifestError(f"no suite.json under {Path(config.src) / 'bench'}")
    _warn_if_budget_too_small(config, out)
    suites = _load_all(manifests)
    # Light suites first: what they leave of their share goes to the heavy
    # ones after them (a manifest that does not load goes first, and fails).
    manifests.sort(key=lambda path: suites[path].weight if path in suites else 0.0)
    assert config.timings is not None  # set by Config.__post_init__
    timings = Timings(config.timings)
    print(describe_plan(config, suites, timings), file=out, flush=True)
    planner = Planner(config.minutes, {s.name: s.weight for s in suites.values()})
    sink = Sink(config.out)
    sink.emit(describe_machine(Path(config.src)))
    progress = Progress(count_work(manifests, config.mode))
    try:
        for path in manifests:
            _run_manifest(path, config, sink, out, progress, planner, timings)
        sink.emit({"kind": "run", "mode": config.mode, "minutes": config.minutes,
                   "epsilon": config.epsilon, "budget": config.budget,
                   "median_runs": config.median_runs, "elapsed_s": round(planner.elapsed(), 1)})
    finally:
        progress.close()
        sink.close()
        timings.save()
    report = write_report(sink.lines, config.report, source=config.out)
    print(f"\nresults: {config.out}\nreport:  {report}\n"
          f"time:    {planner.elapsed() / 60:.1f} min", file=out, flush=True)
    return sink.lines


def _load_all(manifests: list[Path]) -> dict[Path, Suite]:
    """The suites that load (the others fail later, in their turn)."""
    suites = {}
    for path in manifests:
        try:
            suites[path] = load_suite(path)
        except ManifestError:
            continue
    return suites


def describe_plan(config: Config, suites: dict[Path, Suite], timings: Timings) -> str:
    """What the run will do and how long it should take: the time budget
    and, for a full run or one without a budget, an estimate from this
    machine's earlier timings of what the work would take unbounded."""
    head = (f"mode {config.mode}: {len(suites)} suite(s), pair budget {config.budget}, "
            f"epsilon {config.epsilon:g}, {config.median_runs} runs per median")
    if config.minutes is not None and config.mode != FULL:
        return f"{head}; time budget {config.minutes:g} min"
    least, most, unknown = estimate(config, list(suites.values()), timings)
    span = (f"{least / 60:.0f}-{most / 60:.0f} min (every comparison decided at the "
            f"fewest pairs - none decided before its budget)")
    if config.minutes is None:
        text = f"{head}; no time budget.\nexpected duration: {span}"
    else:
        text = (f"{head}; time budget {config.minutes:g} min.\nexpected duration: "
                f"{min(config.minutes, least / 60):.0f}-{config.minutes:g} min; without "
                f"the budget (--minutes 0) the work would take {span}")
    if unknown:
        text += (f"; {unknown} invocation(s) have no timing from an earlier run on "
                 f"this machine and are not counted")
    return text


def estimate(config: Config, suites: list[Suite], timings: Timings) -> tuple[float, float, int]:
    """Seconds the run would take if every comparison stopped at the fewest
    pairs that can decide, and if none stopped before its budget, from the
    per-invocation ``timings``; plus how many invocations have none."""
    assert config.budget is not None and config.median_runs is not None
    fewest = min_decisive_count(config.epsilon)
    least = most = 0.0
    unknown = 0

    def cost(suite: Suite, what: str, params: dict[str, Any], runs: int) -> float:
        nonlocal unknown
        seconds = timings.get(suite.name, what, params)
        if seconds is None:
            unknown += 1
            return 0.0
        return seconds * runs

    for suite in suites:
        cap = suite.budget_for(config.mode, config.budget)
        for params in suite.param_sets(config.mode):
            pairs = suite.pairs_for(params, config.mode)
            paired = {name for pair in pairs for name in pair}
            for name in suite.impls:
                runs = suite.median_runs_for(config.mode, config.median_runs)
                fixed = cost(suite, name, params, 1 if name in paired else runs)
                least += fixed
                most += fixed
            for a, b in pairs:
                both = cost(suite, a, params, 1) + cost(suite, b, params, 1)
                least += both * min(cap, fewest)
                most += both * cap
        for entry in suite.once_for(config.mode):
            once = cost(suite, _once_key(entry), entry.get("params") or {}, 1)
            least += once
            most += once
    return least, most, unknown


def once_timeout(entry: dict[str, Any], timeout: float) -> float:
    """The seconds a ``once`` command may run: ``--timeout``, or the entry's
    own ``timeout`` when that is longer (a command that alternates several
    servers in one process needs more than one run's worth)."""
    own = entry.get("timeout")
    return max(timeout, float(own)) if isinstance(own, (int, float)) else timeout


def _once_key(entry: dict[str, Any]) -> str:
    """A ``once`` command's name in the timings."""
    return "once " + " ".join(str(word) for word in entry.get("cmd") or [])


def _warn_if_budget_too_small(config: Config, out: TextIO) -> None:
    """Say so up front when no pair could ever be decided."""
    needed = min_decisive_count(config.epsilon)
    assert config.budget is not None  # set by Config.__post_init__
    if config.budget < needed:
        print(f"note: budget {config.budget} < {needed} pairs: at epsilon "
              f"{config.epsilon:g} no comparison can reach a verdict", file=out)


def count_work(manifests: list[Path], mode: str) -> int:
    """The units the progress bar counts: every comparison (a pair at a
    parameter set) and every ``once`` command of the suites that load."""
    total = 0
    for suite in _load_all(manifests).values():
        total += sum(len(suite.pairs_for(p, mode)) for p in suite.param_sets(mode))
        total += len(suite.once_for(mode))
    return total


def _run_manifest(path: Path, config: Config, sink: Sink, out: TextIO,
                  progress: Optional[Progress] = None, planner: Optional[Planner] = None,
                  timings: Optional[Timings] = None) -> None:
    """Load and run one suite; any failure is recorded as a failed suite."""
    name = Path(path).parent.name
    try:
        suite = load_suite(path)
        name = suite.name
        SuiteRunner(suite, config, sink, out, progress, planner, timings).run()
    except ManifestError as err:
        _suite_failed(sink, out, name, str(err))
    except Exception as err:  # the run must survive anything one suite does
        detail = traceback.format_exception_only(type(err), err)[-1].strip()
        _suite_failed(sink, out, name, f"driver error: {detail}")


def _suite_failed(sink: Sink, out: TextIO, name: str, error: str) -> None:
    sink.emit({"suite": name, "kind": "suite", "status": FAILED, "error": error})
    print(f"== {name}: FAILED: {error}", file=out, flush=True)


class SuiteRunner:
    """Runs one suite; see the module docstring for the steps."""

    def __init__(self, suite: Suite, config: Config, sink: Sink, out: TextIO,
                 progress: Optional[Progress] = None, planner: Optional[Planner] = None,
                 timings: Optional[Timings] = None) -> None:
        self.suite = suite
        self.config = config
        self.sink = sink
        self.out = out
        self.progress = progress or Progress(0, enabled=False)
        self.planner = planner or Planner(config.minutes, {suite.name: suite.weight})
        self.timings = timings or Timings(Path(config.build) / "bench-timings.json")
        self.rng = random.Random(f"{config.seed}:{suite.name}")
        self.deadline: Optional[float] = None

    def say(self, text: str) -> None:
        self.progress.write(text, self.out)

    def run(self) -> None:
        suite, config = self.suite, self.config
        # Config.__post_init__ set both.
        assert config.budget is not None and config.median_runs is not None
        self.deadline = self.planner.suite_deadline(suite.name)
        self.sink.emit(suite.meta())
        share = ("" if self.deadline is None else
                 f", {max(0.0, self.deadline - self.planner.clock()):.0f} s")
        self.say(f"\n== {suite.name}: {suite.metric}, {suite.better} is better; "
                 f"{len(suite.pairs)} pair(s), budget {suite.budget_for(config.mode, config.budget)}"
                 f" pairs, epsilon {config.epsilon:g}{share}")
        self._run_once()
        median_runs = suite.median_runs_for(config.mode, config.median_runs)
        states = [ParamRun(self, params) for params in suite.param_sets(config.mode)]
        for state in states:
            state.probe()
            for name in state.unpaired():
                state.top_up(name, median_runs)
        work = [(state, a, b) for state in states
                for a, b in suite.pairs_for(state.params, config.mode)]
        # The comparisons a target is decided from first: when time is short,
        # the suite's claims get it.
        work.sort(key=lambda item: not self._targeted(item[0].params, item[1], item[2]))
        comparisons: dict[int, list[Comparison]] = {id(state): [] for state in states}
        others: dict[int, list[tuple[dict[str, str], Comparison]]] = {
            id(state): [] for state in states}
        for index, (state, a, b) in enumerate(work):
            if index == 0 or work[index - 1][0] is not state:
                self.say(f"-- {param_label(state.params)}")
            result, more = self._compare(state, a, b, len(work) - index)
            comparisons[id(state)].append(result)
            others[id(state)] += more
        for state in states:
            for name in suite.impls:
                state.top_up(name, median_runs)
            self._emit(state, comparisons[id(state)], others[id(state)])
        self._print_tables()

    def _compare(self, state: "ParamRun", a: str, b: str,
                 left: int) -> tuple[Comparison, list[tuple[dict[str, str], Comparison]]]:
        """One pair at one parameter set, within its share of the time; and
        the same pairs judged on each of the suite's ``pair_metrics``."""
        assert self.config.budget is not None
        cap = self.suite.budget_for(self.config.mode, self.config.budget)
        pair_cost = sum(self.timings.get(self.suite.name, name, state.params) or 0.0
                        for name in (a, b))
        need = min_decisive_count(self.config.epsilon) * pair_cost
        pair_budget = PairBudget(cap, self.planner.comparison_deadline(self.deadline, left, need),
                                 self.config.epsilon, self.planner.clock)
        # Each run's values of the pair metrics, per impl, in run order.
        extras: dict[str, list[dict[str, Optional[float]]]] = {a: [], b: []}

        def run(name: str) -> RunOutcome:
            outcome = state.run_impl(name)
            if outcome[0] == OK:
                extras[name].append(state.last_extras.get(name, {}))
            return outcome

        result = state.unrunnable(a, b) or compare(
            # cast: mypy cannot infer a lambda with a default argument
            # against Callable[[], RunOutcome].
            a, b, cast(_Run, lambda a=a: run(a)), cast(_Run, lambda b=b: run(b)),
            better=self.suite.better, epsilon=self.config.epsilon,
            budget=cap, rng=self.rng, stop_reason=pair_budget.stop_reason)
        self.say(f"   {a} vs {b}: {_describe(result)}")
        more: list[tuple[dict[str, str], Comparison]] = []
        # A failed pair's good run is past the pairs: cut at their count.
        runs = list(zip(extras[a], extras[b]))[:len(result.pairs)]
        for spec in self.suite.pair_metrics:
            metric = spec["metric"]
            pairs = [(x_value, y_value) for x, y in runs
                     if (x_value := x.get(metric)) is not None
                     and (y_value := y.get(metric)) is not None]
            other = compare_pairs(a, b, pairs, better=spec["better"],
                                  epsilon=self.config.epsilon, rng=self.rng,
                                  stopped=result.stopped, status=result.status,
                                  error=result.error)
            more.append((spec, other))
            self.say(f"   {a} vs {b} on {metric} ({spec['better']} is better): "
                     f"{_describe(other)}")
        self.progress.step(f"{self.suite.name}: {a} vs {b}")
        return result, more

    def _targeted(self, params: dict[str, Any], a: str, b: str) -> bool:
        """Whether a target of the suite is decided from this comparison."""
        return any(applies(t, params) and {t.get("a"), t.get("b")} == {a, b}
                   for t in self.suite.targets)

    def _emit(self, state: "ParamRun", comparisons: list[Comparison],
              others: Optional[list[tuple[dict[str, str], Comparison]]] = None) -> None:
        """Summary, verdict and target lines of one parameter set (verdicts
        on the pair metrics after the suite metric's; targets from the
        suite metric's alone)."""
        suite, params = self.suite, state.params
        assert self.config.budget is not None
        budget = suite.budget_for(self.config.mode, self.config.budget)
        self.say(f"-- {param_label(params)}: medians")
        for name in suite.impls:
            line = state.summary(name)
            self.sink.emit(line)
            self.say(f"   {name}: {_describe_summary(line)}")
        for result in comparisons:
            self.sink.emit({"suite": suite.name, "kind": "verdict", "params": params,
                            "metric": suite.metric, "better": suite.better,
                            "epsilon": self.config.epsilon, "budget": budget,
                            **result.fields()})
        for spec, result in others or []:
            self.sink.emit({"suite": suite.name, "kind": "verdict", "params": params,
                            "metric": spec["metric"], "better": spec["better"],
                            "epsilon": self.config.epsilon, "budget": budget,
                            **result.fields()})
        # A set the manifest keeps to medians (pair_params) decides no target.
        paired = bool(suite.pairs_for(params, self.config.mode))
        for target in suite.targets:
            if not paired or not applies(target, params):
                continue
            judged = judge(target, comparisons, suite.better)
            self.sink.emit({"suite": suite.name, "kind": "target", "params": params,
                            **judged.fields()})
            interval = ("" if judged.speed is None else
                        f" (speed {fmt(judged.speed)} [{fmt(judged.speed_lo)}, "
                        f"{fmt(judged.speed_hi)}])")
            self.say(f"   target {judged.a} >= {judged.at_least:g}x {judged.b}: "
                     f"{judged.verdict}{interval}")

    def _run_once(self) -> None:
        """Each ``once`` command of the mode runs a single time; its lines
        are recorded."""
        base = {"src": str(self.config.src), "build": str(self.config.build)}
        for entry in self.suite.once_for(self.config.mode):
            self._once(entry, base)
            self.progress.step(f"{self.suite.name}: once")

    def _once(self, entry: dict[str, Any], base: dict[str, str]) -> None:
        impl = entry.get("impl")
        params = entry.get("params") or {}
        try:
            argv = expand(entry["cmd"], {**base, **params})
        except (ManifestError, KeyError, TypeError) as err:
            self._once_failed(entry.get("cmd"), impl, FAILED, f"bad once entry: {err}")
            return
        reason = (missing_reason(argv, entry.get("requires") or [])
                  or memory_reason(entry.get("memory_gib")))
        if reason:
            self._once_failed(argv, impl, MISSING, reason)
            self.say(f"   once {' '.join(argv)}: {MISSING} ({reason})")
            return
        started = time.monotonic()
        result = run_command(argv, once_timeout(entry, self.config.timeout))
        self.timings.record(self.suite.name, _once_key(entry), params,
                            time.monotonic() - started)
        for line in result.lines:
            self.sink.emit({"suite": self.suite.name, **line, "kind": "once"})
        if not result.ok:
            self._once_failed(argv, impl, result.status, result.error)
        self.say(f"   once {' '.join(argv)}: {result.status}"
                 + (f" ({result.error})" if result.error else ""))
        for line in result.lines:
            if line.get("metric") and line.get("value") is not None:
                self.say(f"     {line.get('impl', '-')} {param_label(line.get('params') or {})}: "
                         f"{line['metric']} {fmt(line['value'], 4)} {line.get('unit', '')}".rstrip())

    def _once_failed(self, argv: Optional[list[str]], impl: Optional[str], status: str,
                     error: Optional[str]) -> None:
        self.sink.emit({"suite": self.suite.name, "kind": "once", "impl": impl, "cmd": argv,
                        "value": None, "status": status, "error": error})

    def _print_tables(self) -> None:
        data = group_by_suite(self.sink.lines).get(self.suite.name)
        if data is None:
            return
        for caption, headers, rows in impl_tables(data) if data.summaries else []:
            self.say(f"\n{caption or data.name}:\n" + render_text(headers, rows))
        if data.verdicts:
            self.say("\n" + render_text(*verdict_table(data)))


class ParamRun:
    """The runs of one suite at one parameter set: samples per impl, and the
    first failure of each impl (a failed impl is not run again here)."""

    def __init__(self, runner: SuiteRunner, params: dict[str, Any]) -> None:
        self.runner = runner
        self.params = params
        self.values: dict[str, Any] = {"src": str(runner.config.src),
                                       "build": str(runner.config.build), **params}
        self.samples: dict[str, list[float]] = {name: [] for name in runner.suite.impls}
        self.units: dict[str, Optional[str]] = {}
        #: impl -> (status, error) of its first failure.
        self.failures: dict[str, tuple[str, Optional[str]]] = {}
        #: impl -> its last good run's value of each pair metric (None: absent).
        self.last_extras: dict[str, dict[str, Optional[float]]] = {}
        for name in runner.suite.impls:
            self._check(name)

    def _argv(self, name: str) -> list[str]:
        """The impl's command line for one run at these parameters (scaled
        for this impl)."""
        impl = self.runner.suite.impls[name]
        return expand(impl.cmd, impl.params_for(self.values)) + ["--runs", "1"]

    def _check(self, name: str) -> None:
        """Record impls that cannot run here (missing tool, not built, bad
        placeholder) before any pair wastes a run on their partner."""
        try:
            reason = missing_reason(self._argv(name), self.runner.suite.impls[name].requires)
        except ManifestError as err:
            self._fail(name, FAILED, str(err))
            return
        if reason:
            self._fail(name, MISSING, reason)

    def probe(self) -> None:
        """One run of every impl: what a run costs, and a first sample."""
        for name in self.runner.suite.impls:
            self.top_up(name, 1)

    def unpaired(self) -> list[str]:
        """The impls that are in no pair at these parameters."""
        paired = {n for pair in self.runner.suite.pairs_for(
            self.params, self.runner.config.mode) for n in pair}
        return [name for name in self.runner.suite.impls if name not in paired]

    def unrunnable(self, a: str, b: str) -> Optional[Comparison]:
        """A not-run Comparison if ``a`` or ``b`` is known not to run, else None."""
        for name in (a, b):
            if name in self.failures:
                status, error = self.failures[name]
                return Comparison(a, b, stopped="not run", status=status,
                                  error=f"{name}: {error}")
        return None

    def run_impl(self, name: str) -> RunOutcome:
        """One invocation of impl ``name``: ``(status, value, error)``."""
        if name in self.failures:
            status, error = self.failures[name]
            return status, None, error
        suite = self.runner.suite
        started = time.monotonic()
        result = run_command(self._argv(name), self.runner.config.timeout)
        self.runner.timings.record(suite.name, name, self.params, time.monotonic() - started)
        for line in result.lines:
            self.runner.sink.emit({"suite": suite.name, **line, "kind": "raw"})
        status, value, error = measurement(result, suite.metric)
        if status != OK:
            return self._fail(name, status, error)
        assert value is not None  # measurement() has a value with OK
        self.samples[name].append(value)
        self.units.setdefault(name, _unit_of(result.lines, suite.metric))
        self.last_extras[name] = {spec["metric"]: measurement(result, spec["metric"])[1]
                                  for spec in suite.pair_metrics}
        return OK, value, None

    def _fail(self, name: str, status: str, error: Optional[str]) -> RunOutcome:
        self.failures[name] = (status, error)
        return status, None, error

    def top_up(self, name: str, runs: int) -> None:
        """Run ``name`` until it has ``runs`` samples (or fails)."""
        while len(self.samples[name]) < runs and name not in self.failures:
            self.run_impl(name)

    def summary(self, name: str) -> dict[str, Any]:
        """The impl's summary line (format of docs/bench-format.md)."""
        suite = self.runner.suite
        samples = self.samples[name]
        status, error = self.failures.get(name, (OK, None))
        scaled = suite.impls[name].params_for(self.params)
        line: dict[str, Any] = {
            "suite": suite.name, "kind": "summary", "impl": name,
            "peer": suite.impls[name].peer, "metric": suite.metric,
            "value": statistics.median(samples) if samples else None,
            "unit": self.units.get(name) or suite.unit, "params": self.params,
            "runs": len(samples), "min": min(samples, default=None),
            "max": max(samples, default=None), "samples": samples, "status": status}
        if scaled != self.params:
            line["run_params"] = scaled
        if error:
            line["error"] = error
        return line


def _unit_of(lines: list[dict[str, Any]], metric: str) -> Optional[str]:
    """The ``unit`` a program reported for ``metric``, if any."""
    return next((line.get("unit") for line in lines if line.get("metric") == metric), None)


def _describe(result: Comparison) -> str:
    """One progress line for a comparison."""
    text = f"{result.verdict}, A/B {ratio_cell(result.fields())}, " \
           f"{result.wins}/{result.n} wins ({result.stopped})"
    if result.status != OK:
        text += f"; {result.status}: {result.error}"
    return text


def _describe_summary(line: dict[str, Any]) -> str:
    """One progress line for an impl's summary."""
    if line["status"] != OK:
        return status_cell(line)
    unit = f" {line['unit']}" if line.get("unit") else ""
    return (f"{fmt(line['value'], 4)}{unit} (median of {line['runs']}, "
            f"min {fmt(line['min'], 4)}, max {fmt(line['max'], 4)})")
