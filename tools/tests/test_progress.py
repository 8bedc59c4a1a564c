# SPDX-License-Identifier: MIT
"""The progress bar: it counts every comparison and once command, shows
only on a terminal, and leaves the driver's lines as they were."""
import io
import json
import sys

from baton_bench.driver import count_work
from baton_bench.progress import Progress


def write_suite(root, name, impls, pairs, quick_params, once=()):
    d = root / "bench" / name
    d.mkdir(parents=True)
    manifest = {
        "suite": name, "metric": "ns", "unit": "ns", "better": "lower",
        "params": {"quick": quick_params, "full": quick_params},
        "impls": {i: {"cmd": ["true"]} for i in impls},
        "pairs": pairs, "once": list(once),
    }
    (d / "suite.json").write_text(json.dumps(manifest))
    return d / "suite.json"


def test_count_work(tmp_path):
    a = write_suite(tmp_path, "a", ["x", "y", "z"], [["x", "y"], ["x", "z"]],
                    [{"n": 1}, {"n": 2}, {"n": 3}], once=[{"cmd": ["true"]}])
    b = write_suite(tmp_path, "b", ["p", "q"], [["p", "q"]], [{"n": 1}])
    broken = tmp_path / "bench" / "c"
    broken.mkdir()
    (broken / "suite.json").write_text("{not json")
    # a: 2 pairs x 3 parameter sets + 1 once; b: 1; the broken one: 0.
    assert count_work([a, b, broken / "suite.json"], "quick") == 8


def test_quiet_off_a_terminal(capsys):
    p = Progress(5)  # pytest's stderr is not a terminal
    assert p.bar is None
    out = io.StringIO()
    p.write("a line", out)
    p.step("next")
    p.close()
    assert out.getvalue() == "a line\n"
    assert capsys.readouterr().err == ""
    assert p.done == 1


def test_bar_when_asked(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    p = Progress(3, enabled=True)
    assert p.bar is not None
    for i in range(3):
        p.step(f"pair {i}")
    p.write("between", sys.stderr)
    p.close()
    text = err.getvalue()
    assert "3/3" in text and "left" in text and "between" in text
