# SPDX-License-Identifier: MIT
"""The report: tables, seed ratios, plots (PNG and SVG) or a note without
matplotlib, and the README section."""

import pytest

from baton_bench import plots, report

SUITE = {"suite": "ring", "kind": "suite", "metric": "msgs_per_s", "better": "higher",
         "unit": "msgs/s", "reference": "baton",
         "seed": [{"source": "seeds/000", "values": {"baton": 170.0, "go": 50.0},
                   "params": {"n": 2}}],
         "plot": {"x": "nr", "group": "n", "logx": True}}


def _summary(impl, n, nr, value, status="ok", error=None):
    line = {"suite": "ring", "kind": "summary", "impl": impl, "metric": "msgs_per_s",
            "params": {"n": n, "nr": nr}, "value": value, "runs": 3, "unit": "msgs/s",
            "min": value and value * 0.9, "max": value and value * 1.1, "status": status}
    if error:
        line["error"] = error
    return line


def _lines():
    lines = [SUITE]
    for n in (2, 8):
        for nr in (16, 1024, 65536):
            lines.append(_summary("baton", n, nr, 1.5e8 / n))
            lines.append(_summary("go", n, nr, 5e7 / n))
            lines.append(_summary("usched", n, nr, None, "missing", "usched not built"))
    lines.append({"suite": "ring", "kind": "verdict", "params": {"n": 2, "nr": 16},
                  "a": "baton", "b": "go", "ratio": 3.0, "ratio_lo": 2.5, "ratio_hi": None,
                  "wins": 15, "n": 15, "verdict": "faster", "status": "ok"})
    lines.append({"suite": "counters", "kind": "summary", "impl": "lua", "metric": "ns_per_op",
                  "params": {"counters": 100}, "value": 40.0, "min": 39.0, "max": 42.0,
                  "runs": 5, "status": "ok"})
    return lines


def test_report_has_tables_seed_ratios_and_missing_impls(tmp_path, monkeypatch):
    monkeypatch.setattr(plots, "load_pyplot", lambda: None)
    path = report.write_report(_lines(), tmp_path)
    text = path.read_text()
    assert "## ring" in text and "## counters" in text
    assert "missing (usched not built)" in text
    assert "seed ratio (seeds/000)" in text and "| 0.294 |" in text  # 50/170
    assert "3 [2.5, ..]" in text and "faster" in text
    assert "matplotlib is not installed" in text
    assert not list(tmp_path.glob("*.png"))


def test_report_plots_png_and_svg(tmp_path):
    pytest.importorskip("matplotlib")
    text = report.write_report(_lines(), tmp_path).read_text()
    for stem in ("ring-n2", "ring-n8", "counters"):
        assert (tmp_path / f"{stem}.png").stat().st_size > 0
        assert (tmp_path / f"{stem}.svg").stat().st_size > 0
        assert f"({stem}.png)" in text


def test_readme_section_needs_both_markers(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("no markers here\n")
    with pytest.raises(ValueError, match="results:begin"):
        report.replace_readme_section(readme, "tables")


def test_fmt_thousands_scale():
    from baton_bench.tables import fmt
    assert fmt(216034.5) == "216k"
    assert fmt(12345) == "12.3k"
    assert fmt(9999) == "1e+04"  # below the k range: plain 3 digits
    assert fmt(2.5e6) == "2.5M"


def test_other_metrics_table_medians_raw_lines():
    from baton_bench.tables import group_by_suite, other_metrics_table
    lines = [{"suite": "h", "kind": "suite", "metric": "req_per_s"},
             {"suite": "h", "kind": "raw", "impl": "a", "metric": "req_per_s", "value": 5},
             {"suite": "h", "kind": "raw", "impl": "a", "metric": "p99_ms", "value": 3,
              "unit": "ms", "params": {"k": 1}, "samples": [1, 3, 9]},
             {"suite": "h", "kind": "raw", "impl": "a", "metric": "p99_ms", "value": 4,
              "unit": "ms", "params": {"k": 1}},
             {"suite": "h", "kind": "raw", "impl": "b", "metric": "p99_ms", "value": None,
              "status": "failed"}]
    headers, rows = other_metrics_table(group_by_suite(lines)["h"])
    assert rows == [["a", "p99_ms", "3.5", "ms", 4, '{"k": 1}']]


def test_html_report_is_one_self_contained_file(tmp_path):
    pytest.importorskip("matplotlib")
    pytest.importorskip("markdown")
    report.write_report(_lines(), tmp_path)
    page = (tmp_path / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "<table>" in page
    # Every plot is inlined: the page names no file beside it.
    assert 'src="data:image/png;base64,' in page
    assert ".png\"" not in page and 'src="ring' not in page


def test_html_report_without_markdown_keeps_the_text(tmp_path, monkeypatch):
    import builtins
    real_import = builtins.__import__

    def no_markdown(name, *args, **kwargs):
        if name == "markdown":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_markdown)
    page = report.to_html("# T\n\n| a | <b> |\n", tmp_path)
    assert "<pre># T" in page and "&lt;b&gt;" in page


def test_headline_lists_every_target_and_the_run(tmp_path):
    lines = _lines() + [
        {"kind": "machine", "date": "2026-11-25T18:00:00+00:00", "cpu_model": "EPYC",
         "cores": 2, "commit": "0123456789abcdef"},
        {"suite": "ring", "kind": "target", "params": {"n": 2, "nr": 16}, "a": "baton",
         "b": "go", "at_least": 5.0, "speed": 3.0, "speed_lo": 2.5, "speed_hi": 3.5,
         "verdict": "missed"},
        {"kind": "run", "mode": "default", "elapsed_s": 1000.0}]
    text = report.headline(lines)
    assert "`make bench` run (2026-11-25, EPYC, 2 cores, commit 0123456789, 16.7 min)" in text
    assert "| ring |" in text and "baton >= 5.0x go" in text and "missed" in text
    assert "docs/results.md" in text
    assert "_No targets measured._" in report.headline([SUITE])
    # A dirty tree's commit keeps its ten hex digits and says it was dirty.
    dirty = [dict(line, commit="ef6fae6-dirty") if line.get("kind") == "machine" else line
             for line in lines]
    assert "commit ef6fae6 with uncommitted changes" in report.headline(dirty)
    doc = report.results_document(lines)
    assert doc.startswith("# Benchmark results") and "\n### ring\n" in doc
