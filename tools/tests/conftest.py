# SPDX-License-Identifier: MIT
"""Make ``baton_bench`` importable when pytest runs from anywhere."""

import sys
from pathlib import Path

TOOLS = Path(__file__).resolve().parent.parent
if str(TOOLS) not in sys.path:
    sys.path.insert(0, str(TOOLS))
