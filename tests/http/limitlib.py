# SPDX-License-Identifier: MIT
"""Helpers of the handler-limit tests (test_lua_limits.py,
test_scheme_limits.py): one request on a fresh connection with its status
and time, and what the server process has spent (CPU, RSS) read from /proc.
Every socket has a timeout."""
import os
import socket
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")


def get(port, path, timeout=20.0):
    """(status, seconds, raw response) of one GET on a fresh connection."""
    t0 = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    took = time.monotonic() - t0
    try:
        status = int(data.split(b" ", 2)[1])
    except (IndexError, ValueError):
        status = 0
    return status, took, data


def cpu_seconds(pid):
    """User + system CPU time the process has used, in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def idle_after(pid, seconds=1.0):
    """CPU seconds the process spends over the next `seconds`."""
    c0 = cpu_seconds(pid)
    time.sleep(seconds)
    return cpu_seconds(pid) - c0


def sanitized(binary):
    """True for an AddressSanitizer build, whose quarantine holds freed
    memory (up to 256 MiB): RSS says nothing there; LeakSanitizer at exit
    does."""
    with open(binary, "rb") as f:
        return b"__asan_init" in f.read()
