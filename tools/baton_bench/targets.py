# SPDX-License-Identifier: MIT
"""Magnitude targets: "A is at least X times as fast as B", decided from a
comparison's interval rather than read off a median.

A manifest may list ``"targets": [{"a": ..., "b": ..., "at_least": X,
"params": {...}}]`` (``params`` a subset the parameter set must contain;
absent: every set).  Speed is A's over B's: the value ratio A/B when
higher is better, B/A when lower is better; a pair listed the other way
round is inverted.  The comparison's distribution-free interval of the
median ratio (``ratio_lo``, ``ratio_hi``, at the run's epsilon) decides:

  met        the whole interval is at or above X
  missed     the whole interval is below X
  undecided  it straddles X (or is unbounded on the side that matters)
  not measured  no comparison of these two impls at this parameter set

A parameter set the manifest keeps to medians (``pair_params``) is not
judged at all: the driver skips it rather than report "not measured".
"""

from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

from .compare import Comparison

MET, MISSED, UNDECIDED, NOT_MEASURED = "met", "missed", "undecided", "not measured"


@dataclass
class TargetResult:
    a: str
    b: str
    at_least: float
    speed: Optional[float]
    speed_lo: Optional[float]
    speed_hi: Optional[float]
    verdict: str

    def fields(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "at_least": self.at_least, "speed": self.speed,
                "speed_lo": self.speed_lo, "speed_hi": self.speed_hi,
                "verdict": self.verdict}


def check_targets(raw: Any, impls: Sequence[str]) -> Optional[str]:
    """Why a manifest's ``targets`` is malformed, or None."""
    if raw is None:
        return None
    if not isinstance(raw, list):
        return "targets must be a list"
    for t in raw:
        if not isinstance(t, dict) or t.get("a") not in impls or t.get("b") not in impls:
            return f"target {t!r} must name two impls as \"a\" and \"b\""
        x = t.get("at_least")
        if not isinstance(x, (int, float)) or isinstance(x, bool) or x <= 0:
            return f"target {t!r} needs \"at_least\" > 0"
        if "params" in t and not isinstance(t["params"], dict):
            return f"target {t!r}: \"params\" must be an object"
    return None


def _inv(x: Optional[float]) -> Optional[float]:
    return None if x is None or x == 0 else 1.0 / x


def judge(target: Mapping[str, Any], comparisons: Sequence[Comparison],
          better: str) -> TargetResult:
    """The verdict of one target from the comparisons of a parameter set."""
    a, b, x = str(target["a"]), str(target["b"]), float(target["at_least"])
    for c in comparisons:
        if {c.a, c.b} != {a, b} or c.ratio is None:
            continue
        # Value ratio of the target's A over B, and its interval.
        ratio, lo, hi = c.ratio, c.ratio_lo, c.ratio_hi
        if c.a != a:
            ratio, lo, hi = 1.0 / ratio, _inv(hi), _inv(lo)
        # Speed: higher is better as it is, lower is better inverted.
        if better == "lower":
            speed, s_lo, s_hi = 1.0 / ratio, _inv(hi), _inv(lo)
        else:
            speed, s_lo, s_hi = ratio, lo, hi
        if s_lo is not None and s_lo >= x:
            verdict = MET
        elif s_hi is not None and s_hi < x:
            verdict = MISSED
        else:
            verdict = UNDECIDED
        return TargetResult(a, b, x, speed, s_lo, s_hi, verdict)
    return TargetResult(a, b, x, None, None, None, NOT_MEASURED)


def applies(target: Mapping[str, Any], params: Mapping[str, Any]) -> bool:
    subset = target.get("params") or {}
    return all(params.get(k) == v for k, v in subset.items())
