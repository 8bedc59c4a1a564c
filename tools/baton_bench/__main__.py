# SPDX-License-Identifier: MIT
"""Command line: ``python -m baton_bench {run,report}`` (PYTHONPATH=tools).

    python -m baton_bench run --src . --build build [--quick | --full] [--suite NAME ...]
        [--minutes M] [--budget N] [--epsilon E] [--timeout S] [--median-runs K] [--seed N]
        [--out build/results.jsonl] [--report build/report]
    python -m baton_bench report --results build/results.jsonl
        [--report build/report] [--readme README.md] [--docs docs/results.md]
    python -m baton_bench compare OLD.jsonl NEW.jsonl [--alpha A]

Exit status: 0 when the run completed (missing or failed benchmarks are
results, not errors), 2 on a usage error (bad option, unknown suite, no
manifests, unreadable results file); compare exits 1 when something got
slower (decided), so that it can gate a change.
"""

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Optional

from .budget import DEFAULT, FULL, MODE_MINUTES, QUICK
from .driver import MEDIAN_RUNS, PAIR_BUDGET, Config, run
from .manifest import ManifestError
from .report import headline, load_results, replace_readme_section, results_document, write_report
from .runs import SLOWER, compare_runs, render_runs


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _probability(text: str) -> float:
    value = float(text)
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must be in (0, 1), got {value}")
    return value


def _seconds(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m baton_bench",
        description="Run baton's benchmark suites against their peers and decide, "
                    "with the Confidence Sequence Method, which is faster.")
    commands = parser.add_subparsers(dest="command", required=True)

    run_cmd = commands.add_parser(
        "run", help="run suites, write results.jsonl and the report",
        description="Run every SRC/bench/*/suite.json (or those named by --suite). "
                    "See docs/bench-format.md and docs/reading-verdicts.md.")
    run_cmd.add_argument("--src", type=Path, required=True,
                         help="repository root ({src} in manifests)")
    run_cmd.add_argument("--build", type=Path, required=True,
                         help="CMake build directory ({build} in manifests)")
    mode = run_cmd.add_mutually_exclusive_group()
    mode.add_argument("--quick", dest="mode", action="store_const", const=QUICK,
                      help=f"the quick parameter sets, in {MODE_MINUTES[QUICK]:g} min")
    mode.add_argument("--full", dest="mode", action="store_const", const=FULL,
                      help=f"every parameter set (the sweeps), in {MODE_MINUTES[FULL]:g} min; "
                           "the expected duration is printed first")
    run_cmd.set_defaults(mode=DEFAULT)
    run_cmd.add_argument("--minutes", type=float, metavar="M",
                         help=f"time budget of the run (default {MODE_MINUTES[DEFAULT]:g}, "
                              f"{MODE_MINUTES[QUICK]:g} with --quick, {MODE_MINUTES[FULL]:g} with --full; "
                              f"0: none)")
    run_cmd.add_argument("--suite", action="append", default=[], metavar="NAME",
                         help="run only this suite (repeatable; default: all)")
    run_cmd.add_argument("--budget", type=_positive_int, metavar="N",
                         help=f"most pairs of runs per comparison (default "
                              f"{PAIR_BUDGET[DEFAULT]}, {PAIR_BUDGET[QUICK]} with --quick, "
                              f"{PAIR_BUDGET[FULL]} with --full)")
    run_cmd.add_argument("--epsilon", type=_probability, default=1e-3, metavar="E",
                         help="total error probability of each comparison (default 1e-3)")
    run_cmd.add_argument("--timeout", type=_seconds, default=120.0, metavar="S",
                         help="seconds before one invocation counts as failed (default 120)")
    run_cmd.add_argument("--median-runs", type=_positive_int, metavar="K",
                         help=f"runs per impl for its median, pair runs included (default "
                              f"{MEDIAN_RUNS[DEFAULT]}, {MEDIAN_RUNS[QUICK]} with --quick)")
    run_cmd.add_argument("--seed", type=int, default=0,
                         help="seed of the run-order and tie-break coin flips (default 0)")
    run_cmd.add_argument("--out", type=Path, metavar="FILE",
                         help="results file, rewritten (default BUILD/results.jsonl)")
    run_cmd.add_argument("--report", type=Path, metavar="DIR",
                         help="report directory (default BUILD/report)")

    report_cmd = commands.add_parser(
        "report", help="regenerate the report from a results file",
        description="Rebuild report.md, report.html and the plots from "
                    "results.jsonl; optionally write every table to a Markdown "
                    "document and the targets (a short headline table) into a README.")
    report_cmd.add_argument("--results", type=Path, required=True, metavar="FILE",
                            help="results.jsonl written by 'run'")
    report_cmd.add_argument("--report", type=Path, metavar="DIR",
                            help="report directory (default: beside FILE, 'report')")
    report_cmd.add_argument("--readme", type=Path, metavar="FILE",
                            help="also replace this file's text between "
                                 "<!-- results:begin --> and <!-- results:end --> "
                                 "with the headline table (every suite's targets)")
    report_cmd.add_argument("--docs", type=Path, metavar="FILE",
                            help="also write every table of the run to FILE "
                                 "(e.g. docs/results.md)")
    compare_cmd = commands.add_parser(
        "compare", help="what got faster or slower between two results files",
        description="Compare the summary samples of two runs, quantity by quantity, "
                    "with an exact permutation test; exit status 1 if anything got "
                    "slower.")
    compare_cmd.add_argument("old", type=Path, help="the earlier results.jsonl")
    compare_cmd.add_argument("new", type=Path, help="the later results.jsonl")
    compare_cmd.add_argument("--alpha", type=_probability, default=1e-3, metavar="A",
                             help="error probability of each row's verdict (default 1e-3)")
    return parser


def _compare(args: argparse.Namespace) -> int:
    old, new = load_results(args.old), load_results(args.new)
    rows = compare_runs(old, new, args.alpha)
    print(render_runs(old, new, rows))
    return 1 if any(r.verdict == SLOWER for r in rows) else 0


def _run(args: argparse.Namespace) -> int:
    config = Config(src=args.src.resolve(), build=args.build.resolve(),
                    out=args.out or args.build / "results.jsonl",
                    report=args.report or args.build / "report", mode=args.mode,
                    suites=args.suite, budget=args.budget, epsilon=args.epsilon,
                    timeout=args.timeout, median_runs=args.median_runs, seed=args.seed,
                    minutes=args.minutes)
    run(config)
    return 0


def _report(args: argparse.Namespace) -> int:
    lines = load_results(args.results)
    report_dir = args.report or args.results.parent / "report"
    path = write_report(lines, report_dir, source=args.results)
    print(f"report: {path}")
    if args.docs:
        args.docs.write_text(results_document(lines))
        print(f"written: {args.docs}")
    if args.readme:
        replace_readme_section(args.readme, headline(lines))
        print(f"updated: {args.readme}")
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "run":
            return _run(args)
        return _compare(args) if args.command == "compare" else _report(args)
    except (ManifestError, OSError, ValueError) as err:
        print(f"baton_bench: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
