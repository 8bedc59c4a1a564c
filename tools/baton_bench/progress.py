# SPDX-License-Identifier: MIT
"""A progress bar for ``make bench`` on a terminal: the comparisons and
``once`` commands done out of all, the elapsed time and tqdm's estimate of
what remains.  Quiet when standard error is not a terminal (CI, a pipe,
the tests) or when tqdm is not installed; the per-pair lines the driver
prints are unchanged either way (written through the bar when it shows,
so they do not tear it)."""

import sys
from typing import Any, Optional, TextIO


class Progress:
    """Counts units of work; shows a bar only where one can be seen."""

    def __init__(self, total: int, enabled: Optional[bool] = None) -> None:
        self.total = total
        self.done = 0
        self.bar: Any = None
        if enabled is None:
            enabled = sys.stderr.isatty()
        if enabled and total > 0:
            try:
                from tqdm import tqdm
            except ImportError:
                return
            self.bar = tqdm(total=total, unit="cmp", file=sys.stderr, dynamic_ncols=True,
                            bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} "
                                       "[{elapsed} elapsed, ~{remaining} left]")

    def step(self, what: str) -> None:
        """One unit finished; `what` names the next thing on the bar."""
        self.done += 1
        if self.bar is not None:
            self.bar.set_description_str(what[:40])
            self.bar.update(1)

    def write(self, text: str, file: TextIO) -> None:
        """Print a line of the driver's log without tearing the bar."""
        if self.bar is not None and file in (sys.stdout, sys.stderr):
            self.bar.write(text, file=file)
        else:
            print(text, file=file, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
