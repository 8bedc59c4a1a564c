# SPDX-License-Identifier: MIT
"""The parsing and arithmetic of tools/hop_cache.py (valgrind is not run)."""

import json
from pathlib import Path

import pytest

import hop_cache

CACHEGRIND = """desc: I1 cache:         32768 B, 64 B, 8-way associative
desc: D1 cache:         32768 B, 64 B, 8-way associative
desc: LL cache:         1048576 B, 64 B, 8-way associative
cmd: ring-baton --impl 1t-stackful
events: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw
fl=ring.c
fn=main
10 5 0 0 1 0 0 0 0 0
summary: 14220256 2622 2532 3515497 130797 91326 2615670 102597 99538
"""

# callgrind: other event order, a summary: line in the header and the
# totals: line at the end.
CALLGRIND = """events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw
summary: 123653244 28985171 22991822 2256 1256360 1031259 2209 873095 1022474
fn=(1) main
0 3 1
totals: 123653244 28985171 22991822 2256 1256360 1031259 2209 873095 1022474
"""


def test_parse_counts_names_the_numbers_by_the_events_line():
    counts = hop_cache.parse_counts(CACHEGRIND)
    assert counts["Ir"] == 14220256
    assert counts["D1mr"] == 130797 and counts["D1mw"] == 102597
    assert counts["DLmr"] == 91326 and counts["DLmw"] == 99538
    counts = hop_cache.parse_counts(CALLGRIND)
    assert counts["Dr"] == 28985171 and counts["D1mw"] == 1031259 and counts["DLmw"] == 1022474


def test_parse_counts_fills_left_out_trailing_events_and_rejects_garbage():
    assert hop_cache.parse_counts("events: Ir D1mr DLmr\nsummary: 7\n") == {
        "Ir": 7, "D1mr": 0, "DLmr": 0}
    with pytest.raises(ValueError):
        hop_cache.parse_counts("no counters here\n")
    with pytest.raises(ValueError):
        hop_cache.parse_counts("events: Ir\nsummary: 1 2\n")


def test_per_hop_differences_two_runs():
    first = {"Ir": 1000, "D1mr": 10, "D1mw": 5, "DLmr": 2, "DLmw": 1}
    second = {"Ir": 5000, "D1mr": 410, "D1mw": 205, "DLmr": 202, "DLmw": 101}
    assert hop_cache.per_hop(first, second, 100) == {
        "d1_misses_per_hop": 6.0, "l2_misses_per_hop": 3.0, "instructions_per_hop": 40.0}
    with pytest.raises(ValueError):
        hop_cache.per_hop(first, second, 0)


def _cache(root: Path, name: str, level: str, kind: str, size: str, ways: int) -> None:
    d = root / name
    d.mkdir()
    for field, value in (("level", level), ("type", kind), ("size", size),
                         ("ways_of_associativity", ways), ("coherency_line_size", 64)):
        (d / field).write_text(f"{value}\n")


def test_cache_geometry_reads_d1_and_the_per_core_l2(tmp_path):
    _cache(tmp_path, "index0", "1", "Data", "48K", 12)
    _cache(tmp_path, "index1", "1", "Instruction", "32K", 8)
    _cache(tmp_path, "index2", "2", "Unified", "2048K", 16)
    _cache(tmp_path, "index3", "3", "Unified", "32768K", 16)
    assert hop_cache.cache_geometry(str(tmp_path)) == {
        "I1": (32768, 8, 64), "D1": (49152, 12, 64), "LL": (2097152, 16, 64)}
    assert hop_cache.cache_geometry(str(tmp_path / "absent")) == hop_cache.DEFAULT_GEOMETRY


def test_every_cache_entry_of_the_ring_suite_names_one_of_its_impls():
    suite = json.loads((Path(hop_cache.SRC) / "bench" / "ring" / "suite.json").read_text())
    entries = [e for e in suite["once"] if "tools/hop_cache.py" in " ".join(e["cmd"])]
    assert entries
    for entry in entries:
        assert entry["cmd"][entry["cmd"].index("--impl") + 1] in suite["impls"]
        assert entry["modes"] == ["full"]
