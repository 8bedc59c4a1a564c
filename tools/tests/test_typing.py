# SPDX-License-Identifier: MIT
"""baton_bench is fully annotated: mypy, with the ``[tool.mypy]`` settings of
tools/pyproject.toml (strict), finds no error in it."""

import os
from pathlib import Path

from mypy import api

TOOLS = Path(__file__).resolve().parent.parent


def test_mypy_strict_passes():
    # No cache: nothing is written to the source tree (a cold run takes a
    # few seconds).
    stdout, stderr, status = api.run([
        "--config-file", str(TOOLS / "pyproject.toml"),
        "--cache-dir", os.devnull,
        str(TOOLS / "baton_bench"),
    ])
    assert status == 0, f"mypy exit status {status}:\n{stdout}{stderr}"
