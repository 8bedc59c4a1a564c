# SPDX-License-Identifier: MIT
"""The soak's short form (tests/http/soak.py): 60 s of mixed load against
baton-httpd with two workers, 20 s per handler kind (C, Lua, Scheme), then
its checks: no crash, every well-formed request answered, descriptors back
to where they were, RSS bounded, SIGTERM drains. The long form is
`make soak MINUTES=N`."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import soak  # noqa: E402


def test_soak_short(httpd, capsys):
    status = soak.main(["--httpd", httpd, "--seconds", "60"])
    out = capsys.readouterr().out
    results = json.loads(out)
    problems = {r["handler"]: r["problems"] for r in results}
    assert status == 0, json.dumps(problems, indent=1)
    for r in results:
        assert r["requests_sent"] > 1000 and r["requests_sent"] == r["requests_answered"], r
        assert r["errors_by_kind"].get("malformed_answered_400", 0) > 0, r
        assert r["errors_by_kind"].get("resets_sent", 0) > 0, r
