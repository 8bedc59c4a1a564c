# SPDX-License-Identifier: MIT
"""What a results file says about where it was measured: the machine (CPU
model, cores, kernel, frequency governor), the compilers and peers'
versions, and the commit.  One ``"kind": "machine"`` line at the top of
every results file, so that two runs can be compared knowingly
(``python -m baton_bench compare``)."""

import datetime
import os
import platform
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any, Optional

# Tools whose version a reader of the results wants: (name, argv). The
# first line of their output (stdout or stderr) is kept.
VERSIONS = (
    ("cc", ["cc", "--version"]),
    ("c++", ["c++", "--version"]),
    ("clang", ["clang", "--version"]),
    ("rustc", ["rustc", "--version"]),
    ("go", ["go", "version"]),
    ("python3", ["python3", "--version"]),
    ("lua5.4", ["lua5.4", "-v"]),
    ("luajit", ["luajit", "-v"]),
    ("csc", ["csc", "-version"]),
    ("guile", ["guile", "--version"]),
    ("nginx", ["nginx", "-v"]),
    ("h2o", ["h2o", "--version"]),
    ("wrk", ["wrk", "--version"]),
)


def _first_line(argv: list[str]) -> Optional[str]:
    path = shutil.which(argv[0]) or next(
        (p for d in ("/usr/sbin", "/sbin") if os.access(p := os.path.join(d, argv[0]), os.X_OK)),
        None)
    if path is None:
        return None
    try:
        done = subprocess.run([path, *argv[1:]], capture_output=True, text=True, timeout=10,
                              errors="replace")
    except (OSError, subprocess.SubprocessError):
        return None
    for text in (done.stdout, done.stderr):
        for line in text.splitlines():
            if line.strip():
                return line.strip()[:160]
    return None


def _cpu_model() -> Optional[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or None
    m = re.search(r"^(?:model name|Model|CPU part)\s*:\s*(.+)$", text, re.M)
    return m.group(1).strip() if m else None


def _governor() -> Optional[str]:
    try:
        return Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor").read_text().strip()
    except OSError:
        return None  # no cpufreq (a VM, usually)


def _commit(src: Path) -> Optional[str]:
    try:
        done = subprocess.run(["git", "-C", str(src), "describe", "--always", "--dirty"],
                              capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None


def describe_machine(src: Path) -> dict[str, Any]:
    """The ``"kind": "machine"`` line of a results file."""
    return {
        "kind": "machine",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "cpu_model": _cpu_model(),
        "cores": os.cpu_count(),
        "kernel": platform.release(),
        "governor": _governor(),
        "commit": _commit(src),
        "versions": {name: _first_line(argv) for name, argv in VERSIONS},
    }


def machine_of(lines: list[dict[str, Any]]) -> Optional[dict[str, Any]]:
    """The machine line of a results file, or None (files from before it)."""
    return next((line for line in lines if line.get("kind") == "machine"), None)


def machine_differences(a: Optional[dict[str, Any]], b: Optional[dict[str, Any]]) -> list[str]:
    """What differs between two machine lines that bears on the figures."""
    if a is None or b is None:
        return ["a results file has no machine line"]
    out = [f"{key}: {a.get(key)!r} -> {b.get(key)!r}"
           for key in ("cpu_model", "cores", "kernel", "governor") if a.get(key) != b.get(key)]
    va, vb = a.get("versions") or {}, b.get("versions") or {}
    out += [f"{name}: {va.get(name)!r} -> {vb.get(name)!r}"
            for name in sorted(set(va) | set(vb)) if va.get(name) != vb.get(name)]
    return out
