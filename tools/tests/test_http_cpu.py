# SPDX-License-Identifier: MIT
"""The server's CPU per request and the load generator's CPU share in the
http suite (tools/baton_bench/httpbench.py), and the driver's verdicts on a
suite's ``pair_metrics`` (the same pairs judged on a second metric, lower
or higher being better)."""

import argparse
import json
import os
import random
import sys
import textwrap
import time

import pytest

from baton_bench import httpbench
from baton_bench.compare import FASTER, SLOWER, compare_pairs
from baton_bench.csm import min_decisive_count
from baton_bench.driver import Config, run
from baton_bench.manifest import ManifestError, load_suite
from baton_bench.tables import group_by_suite, verdict_table

WRK = textwrap.dedent("""\
    Running 2s test @ http://127.0.0.1:18480/
      1 threads and 100 connections
      Latency Distribution
         50%  800.00us
         75%    1.00ms
         90%    1.20ms
         99%    2.50ms
      100000 requests in 2.00s, 12.00MB read
    Requests/sec:  50000.00
    Transfer/sec:      6.00MB
""")

AB = textwrap.dedent("""\
    Complete requests:      30000
    Failed requests:        0
    Requests per second:    15000.00 [#/sec] (mean)
    Percentage of the requests served within a certain time (ms)
      50%      6
      99%     12
""")


def test_the_request_count_is_read_from_wrk_and_from_ab():
    assert httpbench.parse_requests(WRK) == 100000
    assert httpbench.parse_requests(AB) == 30000
    with pytest.raises(httpbench.Failed):
        httpbench.parse_requests("wrk: connection refused\n")


def test_a_stat_line_gives_the_group_and_user_plus_system_seconds():
    tck = httpbench.CLK_TCK
    # A command with a space and a parenthesis, as /proc shows it.
    fields = ["S", "1", "4242", "4242"] + ["0"] * 7 + [str(3 * tck), str(tck)] + ["0"] * 30
    group, seconds = httpbench.proc_cpu(f"4243 (nginx: w) x) {' '.join(fields)}\n")
    assert group == 4242 and seconds == pytest.approx(4.0)


def test_the_group_sum_counts_its_processes_only(tmp_path):
    tck = httpbench.CLK_TCK

    def stat(pid, group, ticks):
        folder = tmp_path / str(pid)
        folder.mkdir()
        fields = ["S", "1", str(group), str(group)] + ["0"] * 7 + [str(ticks), "0"]
        (folder / "stat").write_text(f"{pid} (srv) {' '.join(fields)}\n")

    stat(10, 10, tck)           # the master
    stat(11, 10, 2 * tck)       # a worker
    stat(12, 10, 100 * tck)     # the guard: excluded
    stat(13, 99, 50 * tck)      # another group
    (tmp_path / "self").mkdir()  # not a process number
    (tmp_path / "14").mkdir()   # ended: no stat file
    seconds = httpbench.group_cpu_seconds(10, exclude=(12,), proc=str(tmp_path))
    assert seconds == pytest.approx(3.0)


def test_the_live_group_sum_sees_cpu_spent():
    group = os.getpgrp()
    before = httpbench.group_cpu_seconds(group)
    end = time.process_time() + 0.1
    while time.process_time() < end:
        pass
    assert httpbench.group_cpu_seconds(group) - before >= 0.05


def test_cpu_per_request_and_client_share():
    got = httpbench.sample((50000.0, 0.8, 2.5), 100000, server_cpu_s=1.25,
                           client_cpu_s=1.8, wall_s=2.0)
    assert got.req_per_s == 50000.0 and got.p99_ms == 2.5
    assert got.cpu_us_per_req == pytest.approx(12.5)
    assert got.client_cpu_share == pytest.approx(0.9)
    with pytest.raises(httpbench.Failed):
        httpbench.sample((0.0, 0.0, 0.0), 0, 1.0, 1.0, 2.0)


def test_a_measured_load_takes_the_client_cpu_from_its_rusage(tmp_path):
    # A fake load generator that burns about 0.2 s of CPU and prints wrk.
    fake = tmp_path / "wrk.py"
    fake.write_text("import time\nend = time.process_time() + 0.2\n"
                    "while time.process_time() < end: pass\n"
                    f"print({WRK!r})\n")
    readings = iter([5.0, 6.5])     # the server's CPU seconds before, after
    got = httpbench.run_measured_load([sys.executable, str(fake)], httpbench.parse_wrk, 2,
                                      lambda: next(readings))
    assert got.req_per_s == 50000.0 and got.p50_ms == pytest.approx(0.8)
    assert got.cpu_us_per_req == pytest.approx(15.0)
    assert 0.05 < got.client_cpu_share <= 1.05


def test_the_runner_prints_five_metrics_and_the_backend():
    args = argparse.Namespace(impl="baton-c-epoll", keepalive=True, cores=1, backend="epoll")
    samples = [httpbench.Sample(1.0, 2.0, 3.0, 10.0, 0.9),
               httpbench.Sample(3.0, 2.0, 3.0, 14.0, 0.95)]
    out = httpbench.lines(args, samples)
    assert [(x["metric"], x["unit"]) for x in out] == [
        ("req_per_s", "req/s"), ("p50_ms", "ms"), ("p99_ms", "ms"),
        ("cpu_us_per_req", "us"), ("client_cpu_share", "fraction")]
    cpu = out[3]
    assert cpu["value"] == 12.0 and cpu["samples"] == [10.0, 14.0]
    assert all(x["backend"] == "epoll" and not x["peer"] for x in out)
    missing = httpbench.lines(argparse.Namespace(impl="nginx", keepalive=False, cores=1),
                              status="missing", error="nginx not installed")
    assert len(missing) == 5 and all(x["value"] is None and "backend" not in x
                                     for x in missing)


def test_the_epoll_impl_asks_baton_httpd_for_epoll_both_ways(tmp_path):
    httpd = tmp_path / "baton-httpd"
    httpd.write_text("#!/bin/sh\n")
    httpd.chmod(0o755)
    args = argparse.Namespace(impl="baton-c-epoll", cores=1, port=18480, build=str(tmp_path),
                              src=str(tmp_path), httpd=None)
    argv, env = httpbench.server_command(args, str(tmp_path))
    assert argv[-2:] == ["--io", "epoll"] and env["BATON_IO_BACKEND"] == "epoll"
    args.impl = "baton-c"
    argv, env = httpbench.server_command(args, str(tmp_path))
    assert "--io" not in argv and env is None


def test_the_http_suite_judges_every_pair_on_cpu_per_request_too():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    suite = load_suite(os.path.join(root, "bench", "http", "suite.json"))
    assert suite.pair_metrics == [{"metric": "cpu_us_per_req", "better": "lower"}]
    assert ["baton-c", "nginx"] in suite.pairs and ["baton-c-epoll", "nginx"] in suite.pairs


def test_compare_pairs_follows_the_direction_and_stops_at_the_csm():
    pairs = [(10.0, 12.0)] * 40      # a uses less CPU in every pair
    lower = compare_pairs("a", "b", pairs, better="lower", epsilon=1e-3,
                          rng=random.Random(1))
    assert lower.verdict == FASTER and lower.stopped == "csm"
    assert lower.n == lower.wins == min_decisive_count(1e-3)
    assert lower.ratio == pytest.approx(10 / 12)
    higher = compare_pairs("a", "b", pairs, better="higher", epsilon=1e-3,
                           rng=random.Random(1), stopped="time")
    assert higher.verdict == SLOWER and higher.wins == 0
    few = compare_pairs("a", "b", pairs[:3], better="lower", epsilon=1e-3,
                        rng=random.Random(1), stopped="time")
    assert few.verdict == "undecided" and few.stopped == "time" and few.n == 3


@pytest.mark.parametrize("bad", [{"metric": "m2"}, {"metric": "m2", "better": "faster"},
                                 {"metric": "m", "better": "lower"}, "m2"])
def test_a_bad_pair_metric_is_refused(tmp_path, bad):
    path = tmp_path / "suite.json"
    path.write_text(json.dumps({"suite": "s", "metric": "m", "impls": {"a": {"cmd": ["x"]}},
                                "pair_metrics": [bad]}))
    with pytest.raises(ManifestError):
        load_suite(path)


TWO_METRICS = textwrap.dedent("""
    import argparse, json, random
    p = argparse.ArgumentParser()
    p.add_argument("--name"); p.add_argument("--rate", type=float)
    p.add_argument("--cpu", type=float); p.add_argument("--runs", type=int)
    a = p.parse_args()
    for metric, value in (("req_per_s", a.rate), ("cpu_us_per_req", a.cpu)):
        value *= random.uniform(0.98, 1.02)
        print(json.dumps({"impl": a.name, "metric": metric, "value": value, "params": {}}))
""")


def test_the_driver_gives_a_verdict_per_pair_metric_and_targets_from_its_own(tmp_path, capsys):
    src, build = tmp_path / "src", tmp_path / "build"
    (src / "bench" / "h").mkdir(parents=True)
    build.mkdir()
    (src / "bench" / "h" / "impl.py").write_text(TWO_METRICS)

    def impl(name, rate, cpu, peer):
        return {"peer": peer, "cmd": [sys.executable, "{src}/bench/h/impl.py", "--name", name,
                                      "--rate", str(rate), "--cpu", str(cpu)]}
    # "ours" answers more requests per second but spends more CPU on each.
    (src / "bench" / "h" / "suite.json").write_text(json.dumps({
        "suite": "h", "metric": "req_per_s", "better": "higher", "reference": "peer",
        "pair_metrics": [{"metric": "cpu_us_per_req", "better": "lower"}],
        "impls": {"ours": impl("ours", 300, 20, False), "peer": impl("peer", 100, 10, True)},
        "targets": [{"a": "ours", "b": "peer", "at_least": 2.0}]}))
    config = Config(src=src, build=build, out=build / "results.jsonl", report=build / "report",
                    mode="quick", timeout=10.0, minutes=0)
    lines = run(config)
    out = capsys.readouterr().out
    verdicts = [line for line in lines if line.get("kind") == "verdict"]
    assert [(v["metric"], v["better"], v["verdict"]) for v in verdicts] == [
        ("req_per_s", "higher", "faster"), ("cpu_us_per_req", "lower", "slower")]
    rate, cpu = verdicts
    assert cpu["stopped"] == "csm" and cpu["n"] <= rate["n"]
    assert 1.9 < cpu["ratio"] < 2.1 and 2.9 < rate["ratio"] < 3.1
    targets = [line for line in lines if line.get("kind") == "target"]
    assert [t["verdict"] for t in targets] == ["met"]
    assert "ours vs peer on cpu_us_per_req (lower is better): slower" in out
    headers, rows = verdict_table(group_by_suite(lines)["h"])
    assert headers[3] == "metric"
    assert [row[3] for row in rows] == ["req_per_s (higher is better)",
                                        "cpu_us_per_req (lower is better)"]
