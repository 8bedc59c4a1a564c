# SPDX-License-Identifier: MIT
"""The packages built by make deb, unpacked into a scratch root: what each
holds, that lintian finds no error, that the consumer examples build against
them, and that the packaged baton-httpd starts with its unit's command line,
serves, reloads on SIGHUP (ExecReload) and stops on SIGTERM."""
import os
import re
import shlex
import signal
import socket
import subprocess
import time

import pytest

from conftest import TOP, need

CONSUMER = os.path.join(TOP, "tests", "consumer")


def version():
    text = open(os.path.join(TOP, "include", "baton", "common.h")).read()
    return [re.search(rf"#define BATON_VERSION_{k} (\d+)", text).group(1)
            for k in ("MAJOR", "MINOR", "PATCH")]


def run(cmd, timeout=180, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    assert p.returncode == 0, f"{cmd} exited {p.returncode}:\n{p.stdout}\n{p.stderr}"
    return p.stdout


def test_every_package_is_built(debs):
    major = version()[0]
    want = {f"libbaton{major}", "libbaton-dev", "libbaton-lua-dev",
            "libbaton-chicken-dev", "baton-httpd"}
    assert want <= set(debs), f"missing: {want - set(debs)}"


def test_lintian_reports_no_error(debs):
    need("lintian")
    p = subprocess.run(["lintian", "--fail-on", "error", *debs.values()],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert not re.search(r"^E: ", p.stdout, re.M), p.stdout


def test_shared_library_soname_and_exports(libdir):
    major, minor, patch = version()
    lib = libdir / f"libbaton.so.{major}.{minor}.{patch}"
    assert lib.is_file()
    dyn = run(["readelf", "-d", str(lib)])
    assert f"Library soname: [libbaton.so.{major}]" in dyn
    assert (libdir / f"libbaton.so.{major}").resolve() == lib.resolve()
    # Only the public API is exported: every defined dynamic symbol is
    # baton_*, but for the thread-local record the inline read side of
    # baton/smr.h reads (declared there, part of the ABI by necessity).
    syms = run(["nm", "-D", "--defined-only", str(lib)]).split()
    names = syms[2::3]
    inline_abi = {"baton__smr_tls"}
    assert names and all(n.startswith("baton_") and
                         (not n.startswith("baton__") or n in inline_abi)
                         for n in names), [n for n in names if not n.startswith("baton_")]
    # ...and it is the list of debian/libbaton0.symbols, the ABI check.
    listed = set(re.findall(r"^ (baton_\w+)@Base", open(
        os.path.join(TOP, "debian", f"libbaton{major}.symbols")).read(), re.M))
    assert listed <= set(names), f"listed but not exported: {listed - set(names)}"


def test_dev_package_contents(root, libdir):
    assert (root / "usr/include/baton/common.h").is_file()
    assert (libdir / "libbaton.a").is_file()
    assert os.readlink(libdir / "libbaton.so").startswith("libbaton.so.")
    assert (libdir / "pkgconfig/baton.pc").is_file()
    assert (libdir / "cmake/baton/batonConfig.cmake").is_file()
    assert (libdir / "libbaton_lua.a").is_file()
    assert (libdir / "libbaton_chicken.a").is_file()
    assert (root / "usr/share/baton/chicken/baton-chicken.scm").is_file()


def test_dev_package_man_pages(root):
    """libbaton-dev ships a section-3 page for every public function and
    type (the tree's test manpages checks the set), and man finds a
    function's page through its link to the header's page."""
    need("man")
    man3 = root / "usr/share/man/man3"
    for name in ("baton_chan_send", "baton_chan_t", "baton_coro_attr",
                 "baton_strerror", "baton_chan.h"):
        assert (man3 / f"{name}.3.gz").is_file(), name
    env = dict(os.environ, MANPATH=str(root / "usr/share/man"), MANWIDTH="80")
    page = run(["man", "3", "baton_chan_send"], env=env)
    assert "baton_chan_send" in page and "BATON_ECLOSED" in page
    assert "Rules a caller must keep" in page


def cmake_consumer(tmp_path, root, src, name, env):
    b = tmp_path / f"cmake-{name}"
    run(["cmake", "-S", src, "-B", str(b), f"-DCMAKE_PREFIX_PATH={root}/usr"], env=env)
    run(["cmake", "--build", str(b)], env=env)
    return run([str(b / name)], env=env, timeout=60)


def test_consumers_build_against_the_packages(root, libdir, tmp_path):
    """tests/consumer, the same programs as the install test, against the
    unpacked packages: CMake's find_package(baton [COMPONENTS ...]) and
    pkg-config, the latter linking libbaton.so.0 from the packages."""
    env = dict(os.environ, PKG_CONFIG_PATH=str(libdir / "pkgconfig"),
               LD_LIBRARY_PATH=str(libdir))
    env.pop("PKG_CONFIG_LIBDIR", None)
    cmake_consumer(tmp_path, root, CONSUMER, "consumer", env)
    cmake_consumer(tmp_path, root, os.path.join(CONSUMER, "lua"), "consumer_lua", env)
    out = cmake_consumer(tmp_path, root, os.path.join(CONSUMER, "chicken"),
                         "consumer_chicken", env)
    assert "consumer chicken ok" in out

    flags = run(["pkg-config", "--cflags", "--libs", "baton"], env=env).split()
    # The relocatable .pc points into the scratch root, not at /usr.
    incs = [os.path.normpath(f[2:]) for f in flags if f.startswith("-I")]
    assert f"{root}/usr/include" in incs, flags
    exe = tmp_path / "consumer-pc"
    run(["cc", "-o", str(exe), os.path.join(CONSUMER, "consumer.c"), *flags], env=env)
    # Linked against the shared library, found in the scratch root.
    ldd = run(["ldd", str(exe)], env=env)
    m = re.search(r"libbaton\.so\.\d+ => (\S+)", ldd)
    assert m and os.path.realpath(m.group(1)).startswith(str(root)), ldd
    run([str(exe)], env=env, timeout=60)


def unit_command(root):
    """ExecStart of the packaged unit as systemd would run it: the
    EnvironmentFile's variables expanded, the paths moved into root."""
    unit = (root / "lib/systemd/system/baton-httpd.service").read_text()
    keys = dict(re.findall(r"^(\w+)=(.*)$", unit, re.M))
    assert keys["ExecReload"] == "/bin/kill -HUP $MAINPID"  # the server's reload
    assert keys["Type"] in ("exec", "simple")
    envfile = keys["EnvironmentFile"].lstrip("-")
    env = {}
    for line in (root / envfile.lstrip("/")).read_text().splitlines():
        m = re.match(r'^(\w+)="?(.*?)"?$', line)
        if m and not line.startswith("#"):
            env[m.group(1)] = m.group(2)
    words = []
    for w in shlex.split(keys["ExecStart"]):
        if w.startswith("$"):
            words += env.get(w[1:], "").split()
        else:
            words.append(w)
    words[0] = str(root / words[0].lstrip("/"))
    return words, env


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(port, raw):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(raw)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return data


def test_httpd_service_command_line_serves_and_stops(root, tmp_path):
    cmd, env = unit_command(root)
    assert cmd[1:3] == ["--address", "127.0.0.1"], cmd  # shipped: loopback only
    port = free_port()
    cmd[cmd.index("--port") + 1] = str(port)
    log = open(tmp_path / "stderr", "w+")
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert p.poll() is None, f"exited {p.returncode}: {open(log.name).read()}"
                assert time.monotonic() < deadline, "not listening after 20 s"
                time.sleep(0.05)
        ok = http(port, b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert ok.startswith(b"HTTP/1.1 200"), ok[:200]
        bad = http(port, b"GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n")
        assert bad.startswith(b"HTTP/1.1 400"), bad[:200]
        again = http(port, b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert again.startswith(b"HTTP/1.1 200")
        # systemctl reload: ExecReload's SIGHUP reloads and keeps serving.
        p.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 20
        while "reloaded" not in open(log.name).read():
            assert p.poll() is None and time.monotonic() < deadline, open(log.name).read()
            time.sleep(0.05)
        after = http(port, b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert after.startswith(b"HTTP/1.1 200")
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=40) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert "SIGTERM" in open(log.name).read()


def help_options(httpd):
    out = run([httpd, "--help"])
    return sorted(set(re.findall(r"^  (--[a-z0-9-]+)", out, re.M)))


def test_conf_and_man_page_list_every_option(root):
    opts = help_options(str(root / "usr/sbin/baton-httpd"))
    assert len(opts) > 10
    conf = (root / "etc/baton-httpd/baton-httpd.conf").read_text()
    listed = set(re.findall(r"^#   (--[a-z0-9-]+)", conf, re.M))
    assert set(opts) == listed, set(opts) ^ listed
    man = run(["sh", "-c", f"zcat {root}/usr/share/man/man8/baton-httpd.8.gz"])
    assert man.startswith(".\\\"") or ".TH BATON-HTTPD \"8\"" in man
    text = man.replace("\\-", "-")
    for o in opts:
        assert o in text, f"{o} not in baton-httpd(8)"
    assert "SIGHUP" in text and "systemctl reload" in text


def test_symbols_check_fails_on_a_dropped_symbol(debs, tmp_path):
    """The ABI check of the package build: dpkg-gensymbols, as debian/rules
    runs it (-c1), against the built libbaton0 tree of make deb, fails once
    the symbols file lists a symbol the library no longer exports."""
    import glob
    srcs = glob.glob(os.path.join(os.path.dirname(next(iter(debs.values()))),
                                  "src", "baton-*"))
    assert srcs, "make deb's build tree (build/deb/src) is missing"
    src = srcs[0]
    major = version()[0]
    pkg = f"libbaton{major}"
    symbols = open(os.path.join(TOP, "debian", f"{pkg}.symbols")).read()
    def gensymbols(text):
        f = tmp_path / "symbols"
        f.write_text(text)
        return subprocess.run(["dpkg-gensymbols", f"-p{pkg}", f"-Pdebian/{pkg}", "-c1",
                               f"-I{f}", f"-O{tmp_path / 'out'}"], cwd=src,
                              capture_output=True, text=True, timeout=60)
    assert gensymbols(symbols).returncode == 0
    # A symbol of an earlier release (dpkg-gensymbols forgives the loss of
    # one added in the version being built; debian/rules checks those
    # names itself, as test_shared_library_soname_and_exports does).
    dropped = gensymbols(symbols + " baton_gone_from_the_library@Base 0.0.1\n")
    assert dropped.returncode != 0, dropped.stdout + dropped.stderr
    assert "baton_gone_from_the_library" in dropped.stdout + dropped.stderr
