# SPDX-License-Identifier: MIT
"""Where a benchmark run spends its time.

A run has a mode - ``quick``, ``default`` or ``full`` - and a wall-clock
budget (``MODE_MINUTES``; none with ``--minutes 0``).  The time is handed out
as the run goes, so that what one part does not use goes to the next:

* each suite gets ``remaining time * weight / weights of the suites left``
  (a manifest may give itself a ``weight``; 1 by default);
* inside a suite, the fixed work comes first - the ``once`` commands, one
  probe run of every impl at every parameter set, and the runs that impls
  outside any pair need for their median - and what is left is split
  evenly between the suite's comparisons, again recomputed before each one,
  except that a comparison may take what its fewest decisive pairs cost
  when the even share is less (those named by a target go first);
* a comparison stops as soon as the CSM decides (``compare.compare``), when
  its share of time is spent, or when it is *out of reach*: the power of
  what is left of it - the probability that the CSM decides within the
  pairs it can still afford, averaged over what the pairs so far say of
  the win rate (``csm.reach_probability``) - has fallen below
  ``GIVE_UP_BELOW``.  Its time then goes to the comparisons after it.

Stopping on the data this way is safe: the CSM's error bound holds at any
stopping time, so a comparison cut short is only "undecided", never wrong.

Without a time budget each comparison may use its whole pair budget (still
stopping when decided or out of reach).  Before a ``full`` run, or one
without a budget, the driver prints the expected duration, from the timings
an earlier run on this machine left in ``bench-timings.json`` (``Timings``).
"""

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from .csm import reach_probability

QUICK, DEFAULT, FULL = "quick", "default", "full"
MODES = (QUICK, DEFAULT, FULL)

#: The time budget of each mode, in minutes (None: no budget).  A little
#: under the figures the README promises (5, 20 and 60), for the report and
#: the last suite's overrun.  A full run without a budget would spend hours
#: on the ring's largest sets, most of it on pairs that cannot be decided.
MODE_MINUTES: dict[str, Optional[float]] = {QUICK: 4.5, DEFAULT: 18.0, FULL: 55.0}

#: Pairs every comparison gets whatever its share of time, so that each has
#: a ratio and a few samples for the medians.
MIN_PAIRS = 3

#: Pairs after which a comparison may be declared out of reach; before
#: that the win rate is too rough to judge the power by.
JUDGE_AFTER = 5

#: A comparison whose chance of a verdict within its remaining pairs falls
#: below this stops and leaves its time to the others.
GIVE_UP_BELOW = 0.1

#: Why a comparison stopped, besides the CSM deciding ("csm"), its pair
#: budget running out ("budget") or a failed run ("failure").
STOP_TIME = "time"
STOP_OUT_OF_REACH = "out of reach"


class Planner:
    """The run's clock: suite shares and comparison deadlines."""

    def __init__(self, minutes: Optional[float], weights: dict[str, float],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.start = clock()
        self.deadline = None if minutes is None else self.start + 60.0 * minutes
        self.weights = dict(weights)

    def elapsed(self) -> float:
        return self.clock() - self.start

    def suite_deadline(self, suite: str) -> Optional[float]:
        """The suite's share of the time left, as a deadline; call once,
        when the suite starts (it then stops counting among those left)."""
        weight = self.weights.pop(suite, 1.0)
        if self.deadline is None:
            return None
        left = max(0.0, self.deadline - self.clock())
        total = weight + sum(self.weights.values())
        return self.clock() + left * weight / total if total > 0 else self.deadline

    def comparison_deadline(self, suite_deadline: Optional[float], comparisons_left: int,
                            need: float = 0.0) -> Optional[float]:
        """This comparison's share of what the suite has left: an even
        share, or ``need`` seconds (what its fewest decisive pairs cost) if
        that is more and the suite has it.  An even share too small for any
        verdict would only make every comparison stop undecided and hand its
        time to the last one; this way the first ones can decide."""
        if suite_deadline is None:
            return None
        left = max(0.0, suite_deadline - self.clock())
        return self.clock() + max(left / max(1, comparisons_left), min(need, left))


@dataclass
class PairBudget:
    """Decides, before each pair of a comparison, whether to run it.
    ``cap`` is the comparison's pair budget, ``deadline`` its share of time
    (None: none), ``epsilon`` the comparison's error budget."""

    cap: int
    deadline: Optional[float]
    epsilon: float
    clock: Callable[[], float] = time.monotonic

    def __post_init__(self) -> None:
        self.started = self.clock()

    def affordable(self, n: int) -> int:
        """Pairs this comparison can run in all, at the pace so far."""
        if self.deadline is None or n == 0:
            return self.cap
        pace = (self.clock() - self.started) / n
        left = self.deadline - self.clock()
        more = math.floor(left / pace) if pace > 0 else self.cap
        return max(n, min(self.cap, n + more))

    def stop_reason(self, n: int, wins: int) -> Optional[str]:
        """None to run pair ``n + 1``; else why the comparison stops here."""
        if n < MIN_PAIRS:
            return None
        if self.deadline is not None and self.clock() >= self.deadline:
            return STOP_TIME
        if n >= JUDGE_AFTER:
            reach = self.affordable(n)
            # The win rate is unknown: the predictive probability averages
            # the power over its posterior given the pairs so far.
            if reach <= n or reach_probability(None, n, wins, reach,
                                               self.epsilon) < GIVE_UP_BELOW:
                return STOP_TIME if reach < self.cap else STOP_OUT_OF_REACH
        return None


class Timings:
    """Seconds per invocation measured on this machine, kept between runs
    (``BUILD/bench-timings.json``) so that a full run can say how long it
    will take before it starts.  Keys are the suite, what ran (an impl or a
    ``once`` command) and the parameter set."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seconds: dict[str, float] = {}
        try:
            data = json.loads(path.read_text())
            if isinstance(data, dict):
                self.seconds = {k: float(v) for k, v in data.items()
                                if isinstance(v, (int, float))}
        except (OSError, ValueError):
            pass

    @staticmethod
    def key(suite: str, what: str, params: dict[str, Any]) -> str:
        return f"{suite}|{what}|{json.dumps(params, sort_keys=True)}"

    def get(self, suite: str, what: str, params: dict[str, Any]) -> Optional[float]:
        return self.seconds.get(self.key(suite, what, params))

    def record(self, suite: str, what: str, params: dict[str, Any], seconds: float) -> None:
        """Keep the latest figure (a moving machine is better described by
        its last run than by an average over months)."""
        self.seconds[self.key(suite, what, params)] = round(seconds, 4)

    def save(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(json.dumps(self.seconds, indent=0, sort_keys=True) + "\n")
        except OSError:
            pass  # a cache: losing it costs only the next full run's estimate
