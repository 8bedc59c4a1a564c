"""The benchmark driver: run every suite, decide every pair, record everything.

For each suite manifest and each parameter set it

1. runs each "baton vs peer" pair alternately (one invocation per run) until
   the CSM decides the win rate is above or below 1/2, or the budget of
   pairs is spent (``compare.compare``);
2. tops up every impl to ``median_runs`` runs, reusing the pair runs;
3. emits a summary line per impl and a verdict line per pair,

then runs the suite's ``once`` commands.  Every JSON line goes to the
results file as soon as it exists, progress goes to the terminal, and
nothing a single benchmark does can stop the run: failures become
``missing``/``failed`` lines with a reason.
"""

import json
import random
import statistics
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, TextIO, cast

from .compare import Comparison, compare
from .csm import min_decisive_count
from .machine import describe_machine
from .progress import Progress
from .targets import applies, judge
from .manifest import ManifestError, Suite, expand, find_manifests, load_suite, missing_reason
from .report import write_report
from .runner import FAILED, MISSING, OK, RunOutcome, measurement, run_command
from .tables import (
    fmt, group_by_suite, impl_tables, param_label, ratio_cell, render_text, status_cell,
    verdict_table,
)

#: Default budgets (most pairs of runs per comparison) and runs per median.
#: 20 pairs is a little above the 15 a unanimous comparison needs at
#: epsilon = 1e-3 (``min_decisive_count``); fewer could never give a verdict.
QUICK_BUDGET, FULL_BUDGET = 20, 40
QUICK_MEDIAN_RUNS, FULL_MEDIAN_RUNS = 3, 5

_Run = Callable[[], RunOutcome]


@dataclass
class Config:
    """Everything a run needs; ``None`` budget/median_runs mean the quick
    or full default."""

    src: Path
    build: Path
    out: Path
    report: Path
    quick: bool = False
    suites: list[str] = field(default_factory=list)
    budget: Optional[int] = None
    epsilon: float = 1e-3
    timeout: float = 120.0
    median_runs: Optional[int] = None
    seed: int = 0

    def __post_init__(self) -> None:
        if self.budget is None:
            self.budget = QUICK_BUDGET if self.quick else FULL_BUDGET
        if self.median_runs is None:
            self.median_runs = QUICK_MEDIAN_RUNS if self.quick else FULL_MEDIAN_RUNS


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
    sink = Sink(config.out)
    sink.emit(describe_machine(Path(config.src)))
    progress = Progress(count_work(manifests, config.quick))
    try:
        for path in manifests:
            _run_manifest(path, config, sink, out, progress)
    finally:
        progress.close()
        sink.close()
    report = write_report(sink.lines, config.report, source=config.out)
    print(f"\nresults: {config.out}\nreport:  {report}", file=out, flush=True)
    return sink.lines


def _warn_if_budget_too_small(config: Config, out: TextIO) -> None:
    """Say so up front when no pair could ever be decided."""
    needed = min_decisive_count(config.epsilon)
    assert config.budget is not None  # set by Config.__post_init__
    if config.budget < needed:
        print(f"note: budget {config.budget} < {needed} pairs: at epsilon "
              f"{config.epsilon:g} no comparison can reach a verdict", file=out)


def count_work(manifests: list[Path], quick: bool) -> int:
    """The units the progress bar counts: every comparison (a pair at a
    parameter set) and every ``once`` command of the suites that load."""
    total = 0
    for path in manifests:
        try:
            suite = load_suite(path)
        except ManifestError:
            continue
        total += sum(len(suite.pairs_for(p)) for p in suite.param_sets(quick))
        total += len(suite.once)
    return total


def _run_manifest(path: Path, config: Config, sink: Sink, out: TextIO,
                  progress: Optional[Progress] = None) -> None:
    """Load and run one suite; any failure is recorded as a failed suite."""
    name = Path(path).parent.name
    try:
        suite = load_suite(path)
        name = suite.name
        SuiteRunner(suite, config, sink, out, progress).run()
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
                 progress: Optional[Progress] = None) -> None:
        self.suite = suite
        self.config = config
        self.sink = sink
        self.out = out
        self.progress = progress or Progress(0, enabled=False)
        self.rng = random.Random(f"{config.seed}:{suite.name}")

    def say(self, text: str) -> None:
        self.progress.write(text, self.out)

    def run(self) -> None:
        suite, config = self.suite, self.config
        self.sink.emit(suite.meta())
        self.say(f"\n== {suite.name}: {suite.metric}, {suite.better} is better; "
                 f"{len(suite.pairs)} pair(s), budget {config.budget} pairs, "
                 f"epsilon {config.epsilon:g}")
        for params in suite.param_sets(config.quick):
            self._run_params(params)
        self._run_once()
        self._print_tables()

    def _run_params(self, params: dict[str, Any]) -> None:
        """Pairs first, then top-ups, then summary and verdict lines."""
        self.say(f"-- {param_label(params)}")
        state = ParamRun(self, params)
        comparisons: list[Comparison] = []
        # Config.__post_init__ set both.
        assert self.config.budget is not None and self.config.median_runs is not None
        budget = self.suite.budget_for(self.config.quick, self.config.budget)
        for a, b in self.suite.pairs_for(params):
            result = state.unrunnable(a, b) or compare(
                # cast: mypy cannot infer a lambda with a default argument
                # against Callable[[], RunOutcome].
                a, b, cast(_Run, lambda a=a: state.run_impl(a)),
                cast(_Run, lambda b=b: state.run_impl(b)),
                better=self.suite.better, epsilon=self.config.epsilon,
                budget=budget, rng=self.rng)
            comparisons.append(result)
            self.say(f"   {a} vs {b}: {_describe(result)}")
            self.progress.step(f"{self.suite.name}: {a} vs {b}")
        for name in self.suite.impls:
            state.top_up(name, self.config.median_runs)
        for name in self.suite.impls:
            line = state.summary(name)
            self.sink.emit(line)
            self.say(f"   {name}: {_describe_summary(line)}")
        for result in comparisons:
            self.sink.emit({"suite": self.suite.name, "kind": "verdict", "params": params,
                            "metric": self.suite.metric, "better": self.suite.better,
                            "epsilon": self.config.epsilon, "budget": budget,
                            **result.fields()})
        for target in self.suite.targets:
            if not applies(target, params):
                continue
            judged = judge(target, comparisons, self.suite.better)
            self.sink.emit({"suite": self.suite.name, "kind": "target", "params": params,
                            **judged.fields()})
            interval = ("" if judged.speed is None else
                        f" (speed {fmt(judged.speed)} [{fmt(judged.speed_lo)}, "
                        f"{fmt(judged.speed_hi)}])")
            self.say(f"   target {judged.a} >= {judged.at_least:g}x {judged.b}: "
                     f"{judged.verdict}{interval}")

    def _run_once(self) -> None:
        """Each ``once`` command runs a single time; its lines are recorded."""
        base = {"src": str(self.config.src), "build": str(self.config.build)}
        for entry in self.suite.once:
            impl = entry.get("impl")
            try:
                argv = expand(entry["cmd"], {**base, **(entry.get("params") or {})})
            except (ManifestError, KeyError, TypeError) as err:
                self._once_failed(entry.get("cmd"), impl, FAILED, f"bad once entry: {err}")
                self.progress.step(f"{self.suite.name}: once")
                continue
            reason = missing_reason(argv, entry.get("requires") or [])
            if reason:
                self._once_failed(argv, impl, MISSING, reason)
                self.progress.step(f"{self.suite.name}: once")
                continue
            result = run_command(argv, self.config.timeout)
            for line in result.lines:
                self.sink.emit({"suite": self.suite.name, **line, "kind": "once"})
            if not result.ok:
                self._once_failed(argv, impl, result.status, result.error)
            self.say(f"   once {' '.join(argv)}: {result.status}"
                     + (f" ({result.error})" if result.error else ""))
            self.progress.step(f"{self.suite.name}: once")

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
        for name in runner.suite.impls:
            self._check(name)

    def _argv(self, name: str) -> list[str]:
        """The impl's command line for one run at these parameters."""
        return expand(self.runner.suite.impls[name].cmd, self.values) + ["--runs", "1"]

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
        result = run_command(self._argv(name), self.runner.config.timeout)
        for line in result.lines:
            self.runner.sink.emit({"suite": suite.name, **line, "kind": "raw"})
        status, value, error = measurement(result, suite.metric)
        if status != OK:
            return self._fail(name, status, error)
        assert value is not None  # measurement() has a value with OK
        self.samples[name].append(value)
        self.units.setdefault(name, _unit_of(result.lines, suite.metric))
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
        line: dict[str, Any] = {
            "suite": suite.name, "kind": "summary", "impl": name,
            "peer": suite.impls[name].peer, "metric": suite.metric,
            "value": statistics.median(samples) if samples else None,
            "unit": self.units.get(name) or suite.unit, "params": self.params,
            "runs": len(samples), "min": min(samples, default=None),
            "max": max(samples, default=None), "samples": samples, "status": status}
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
