# SPDX-License-Identifier: MIT
"""Running one benchmark command, with a timeout, and reading its JSON lines.

Nothing a benchmark does may break the driver: a program that is absent,
crashes, hangs or prints garbage comes back as a ``RunResult`` whose
``status`` is ``"missing"`` or ``"failed"`` and whose ``error`` is a one-line
reason fit for a table.
"""

import json
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

OK = "ok"
MISSING = "missing"
FAILED = "failed"

#: One run of one impl, as ``(status, value, error)``: the value is a float
#: when the status is ``OK``, else None with a one-line error.
RunOutcome = tuple[str, Optional[float], Optional[str]]


@dataclass
class RunResult:
    """One invocation: its JSON lines (dicts) and how it ended."""

    status: str
    lines: list[dict[str, Any]] = field(default_factory=list)
    error: Optional[str] = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == OK


def run_command(argv: Sequence[str], timeout: float,
                cwd: str | Path | None = None) -> RunResult:
    """Run ``argv`` and collect the JSON objects it prints, one per line.

    The child gets its own process group so that a timeout kills everything
    it started (a shell wrapper's children too), and its pipes are drained
    until they close.  Non-JSON stdout lines are ignored; stderr is kept
    only to explain a failure (its last non-empty line)."""
    start = time.monotonic()
    try:
        proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, errors="replace", start_new_session=True)
    except FileNotFoundError:
        return RunResult(MISSING, error=f"{argv[0]} not found")
    except OSError as error:
        return RunResult(FAILED, error=f"cannot start {argv[0]}: {error.strerror or error}")
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        _reap(proc)
        return RunResult(FAILED, error=f"timed out after {timeout:g} s",
                         seconds=time.monotonic() - start)
    seconds = time.monotonic() - start
    lines = parse_json_lines(out)
    if proc.returncode != 0:
        reason = _last_line(err) or f"exit status {proc.returncode}"
        return RunResult(FAILED, lines, f"exit {proc.returncode}: {reason}", seconds)
    if not lines:
        return RunResult(FAILED, error="printed no JSON line", seconds=seconds)
    return RunResult(OK, lines, seconds=seconds)


def _kill_group(proc: subprocess.Popen[str]) -> None:
    """SIGKILL the child's whole process group (it may be gone already)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def _reap(proc: subprocess.Popen[str]) -> None:
    """Wait for a killed child; a grandchild that escaped the group may keep
    the pipes open, so do not wait for them forever."""
    try:
        proc.communicate(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()


def _last_line(text: Optional[str]) -> str:
    """Last non-empty line of ``text``, shortened for a table cell."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    if not lines:
        return ""
    line = lines[-1]
    return line if len(line) <= 200 else line[:197] + "..."


def parse_json_lines(text: str) -> list[dict[str, Any]]:
    """The JSON objects among the lines of ``text`` (other lines skipped)."""
    objects: list[dict[str, Any]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            objects.append(value)
    return objects


def measurement(result: RunResult, metric: str) -> RunOutcome:
    """The value of ``metric`` in a run's lines, as ``(status, value, error)``.

    A line with that metric may itself say ``"status": "missing"`` (e.g. a
    program built without an optional peer); that status is passed on."""
    if not result.ok:
        return result.status, None, result.error
    for line in result.lines:
        if line.get("metric") != metric:
            continue
        status = line.get("status", OK)
        if status != OK:
            return status, None, line.get("error") or f"reported {status}"
        value = line.get("value")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return OK, float(value), None
        return FAILED, None, f"{metric} value is not a number: {value!r}"
    return FAILED, None, f"no JSON line with metric {metric}"
