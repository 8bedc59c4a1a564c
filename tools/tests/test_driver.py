# SPDX-License-Identifier: MIT
"""The driver end to end, on tiny fake suites written to a temporary tree:
a fast and a slow impl (Python scripts printing a JSON line), one whose tool
is not installed, one that exits non-zero, one that hangs past the timeout."""

import json
import sys
import textwrap

import pytest

from baton_bench import __main__ as cli
from baton_bench.driver import Config, run
from baton_bench.manifest import ManifestError, expand, load_suite

FAKE_IMPL = textwrap.dedent("""
    import argparse, json, random, sys, time
    p = argparse.ArgumentParser()
    p.add_argument("--name"); p.add_argument("--cost", type=float)
    p.add_argument("--size", type=int); p.add_argument("--runs", type=int)
    p.add_argument("--mode", default="ok")
    a = p.parse_args()
    if a.mode == "fail":
        print("boom: the fake benchmark broke", file=sys.stderr)
        sys.exit(3)
    if a.mode == "hang":
        time.sleep(20)
    value = a.cost * a.size * random.uniform(0.98, 1.02)
    print("some chatter that is not JSON")
    print(json.dumps({"suite": "demo", "impl": a.name, "peer": a.name != "fast",
                      "metric": "ns_per_op", "value": value, "unit": "ns",
                      "params": {"size": a.size}, "runs": a.runs, "min": value, "max": value}))
""")


def _impl(name, cost, mode="ok", peer=True, **extra):
    cmd = [sys.executable, "{src}/bench/demo/impl.py", "--name", name, "--cost", str(cost),
           "--size", "{size}", "--mode", mode]
    return {"peer": peer, "cmd": cmd, **extra}


def _write_suite(src, name, manifest):
    folder = src / "bench" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "suite.json").write_text(json.dumps(manifest))


@pytest.fixture
def tree(tmp_path):
    src, build = tmp_path / "src", tmp_path / "build"
    (src / "bench" / "demo").mkdir(parents=True)
    build.mkdir()
    (src / "bench" / "demo" / "impl.py").write_text(FAKE_IMPL)
    _write_suite(src, "demo", {
        "suite": "demo", "metric": "ns_per_op", "better": "lower", "reference": "slow",
        "params": {"quick": [{"size": 2}], "full": [{"size": 100}]},
        "impls": {
            "fast": _impl("fast", 1, peer=False),
            "slow": _impl("slow", 3),
            "absent": _impl("absent", 1, requires=["no-such-tool-for-baton"]),
            "broken": _impl("broken", 1, mode="fail"),
            "hangs": _impl("hangs", 1, mode="hang"),
        },
        "once": [{"impl": "fast", "cmd": [sys.executable, "-c",
                  "import json; print(json.dumps({'impl': 'fast', 'metric': 'rss_bytes', "
                  "'value': 4096, 'unit': 'bytes', 'params': {}}))"]},
                 {"impl": "ghost", "cmd": ["{build}/not-built"]}],
        "seed": {"source": "seeds/001", "unit": "s", "values": {"fast": 0.03, "slow": 0.09}},
    })
    return src, build


def _run(src, build, capsys, **options):
    config = Config(src=src, build=build, out=build / "results.jsonl",
                    report=build / "report", mode="quick", timeout=2.0, **options)
    lines = run(config)
    return lines, capsys.readouterr().out, config


def _kind(lines, kind):
    return [line for line in lines if line.get("kind") == kind]


def test_run_survives_failures_and_decides_the_clear_pair(tree, capsys):
    src, build = tree
    lines, out, config = _run(src, build, capsys)

    on_disk = [json.loads(text) for text in config.out.read_text().splitlines()]
    assert on_disk == lines

    summaries = {line["impl"]: line for line in _kind(lines, "summary")}
    assert summaries["fast"]["status"] == "ok" and summaries["fast"]["runs"] >= 3
    assert summaries["fast"]["min"] <= summaries["fast"]["value"] <= summaries["fast"]["max"]
    assert len(summaries["fast"]["samples"]) == summaries["fast"]["runs"]
    assert summaries["absent"]["status"] == "missing"
    assert "no-such-tool-for-baton not on PATH" in summaries["absent"]["error"]
    assert summaries["broken"]["status"] == "failed"
    assert "boom: the fake benchmark broke" in summaries["broken"]["error"]
    assert summaries["hangs"]["status"] == "failed"
    assert "timed out" in summaries["hangs"]["error"]

    verdicts = {line["b"]: line for line in _kind(lines, "verdict")}
    clear = verdicts["slow"]
    assert clear["verdict"] == "faster" and clear["stopped"] == "csm"
    assert clear["wins"] == clear["n"] and clear["epsilon"] == 1e-3
    assert clear["ratio_lo"] <= clear["ratio"] <= clear["ratio_hi"] < 0.5
    for peer in ("absent", "broken", "hangs"):
        assert verdicts[peer]["verdict"] == "undecided"
        assert verdicts[peer]["status"] in ("missing", "failed")

    raw = _kind(lines, "raw")
    assert raw and all(line["metric"] == "ns_per_op" for line in raw)
    once = _kind(lines, "once")
    assert any(line.get("value") == 4096 and line["suite"] == "demo" for line in once)
    assert any(line.get("status") == "missing" and line.get("impl") == "ghost" for line in once)

    assert "missing (no-such-tool-for-baton not on PATH)" in out
    assert "failed (timed out after 2 s)" in out
    assert "faster" in out and "fast" in out
    assert (config.report / "report.md").exists()


def test_budget_limits_the_pairs_and_a_tiny_budget_is_flagged(tree, capsys):
    src, build = tree
    lines, out, _ = _run(src, build, capsys, budget=3)
    clear = next(line for line in _kind(lines, "verdict") if line["b"] == "slow")
    assert clear["n"] == 3 and clear["verdict"] == "undecided" and clear["stopped"] == "budget"
    assert "no comparison can reach a verdict" in out


def test_a_broken_manifest_fails_its_suite_only(tree, capsys):
    src, build = tree
    (src / "bench" / "bad").mkdir()
    (src / "bench" / "bad" / "suite.json").write_text("{not json")
    lines, out, _ = _run(src, build, capsys)
    failed = [line for line in _kind(lines, "suite") if line.get("status") == "failed"]
    assert [line["suite"] for line in failed] == ["bad"]
    assert any(line.get("suite") == "demo" for line in _kind(lines, "verdict"))
    assert "bad: FAILED" in out


def test_cli_runs_one_suite_and_rejects_an_unknown_one(tree, capsys):
    src, build = tree
    code = cli.main(["run", "--src", str(src), "--build", str(build), "--quick",
                     "--suite", "demo", "--timeout", "2", "--budget", "2"])
    assert code == 0 and (build / "results.jsonl").exists()
    assert cli.main(["run", "--src", str(src), "--build", str(build), "--suite", "nope"]) == 2
    assert "no suite.json for nope" in capsys.readouterr().err


def test_cli_report_regenerates_and_fills_the_readme(tree, capsys, tmp_path):
    src, build = tree
    _run(src, build, capsys, budget=2)
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- results:begin -->\nold\n<!-- results:end -->\nrest\n")
    docs = tmp_path / "results.md"
    code = cli.main(["report", "--results", str(build / "results.jsonl"),
                     "--report", str(tmp_path / "again"), "--readme", str(readme),
                     "--docs", str(docs)])
    assert code == 0 and (tmp_path / "again" / "report.md").exists()
    assert (tmp_path / "again" / "report.html").exists()
    text = readme.read_text()
    # The README gets the short headline (no targets in this suite) and a
    # link to the document with every table.
    assert "old" not in text and "docs/results.md" in text and "make bench QUICK=1" in text
    assert text.startswith("intro\n<!-- results:begin -->") and text.endswith("<!-- results:end -->\nrest\n")
    full = docs.read_text()
    assert full.startswith("# Benchmark results") and "| fast |" in full and "mode `quick`" in full


def test_manifest_checks_and_placeholders(tmp_path):
    assert expand(["{build}/x", "--n={n}", '{"json": 1}'], {"build": "/b", "n": 3}) == \
        ["/b/x", "--n=3", '{"json": 1}']
    with pytest.raises(ManifestError, match="placeholder"):
        expand(["{nope}"], {})
    path = tmp_path / "suite.json"
    path.write_text(json.dumps({"suite": "s", "metric": "m", "impls": {
        "ours": {"cmd": ["a"]}, "p1": {"peer": True, "cmd": ["b"]}}}))
    suite = load_suite(path)
    assert suite.pairs == [["ours", "p1"]] and suite.param_sets("quick") == [{}]
    path.write_text(json.dumps({"suite": "s", "metric": "m", "better": "faster",
                                "impls": {"x": {"cmd": ["a"]}}}))
    with pytest.raises(ManifestError, match="better"):
        load_suite(path)


def test_manifest_pair_params_and_budget():
    from baton_bench.manifest import Suite
    s = Suite(name="x", metric="m", better="lower", impls={}, params={}, pairs=[["a", "b"]],
              once=[], pair_params=[{"k": True}], budget={"quick": 5})
    assert s.pairs_for({"k": True, "d": 3}) == [["a", "b"]]
    assert s.pairs_for({"k": False}) == []
    assert s.budget_for("quick", 20) == 5 and s.budget_for("default", 40) == 40
    assert s.budget_for("quick", 2) == 2
