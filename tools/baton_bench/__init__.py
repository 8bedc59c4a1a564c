# SPDX-License-Identifier: MIT
"""baton's benchmark tooling: run suites, decide comparisons with the
Confidence Sequence Method (``baton_bench.csm``), and write reports.

Entry point: ``python -m baton_bench`` (see ``__main__``).  Formats:
docs/bench-format.md; how to read the verdicts: docs/reading-verdicts.md.
"""
