# SPDX-License-Identifier: MIT
"""Static files (--static DIR) stay in their root, through a real server
with the hello handler behind them (a path that is no file there gets
"Hello, World!"):

- traversal through "..", raw or percent-encoded (%2e%2e, %2f), is a 400;
- symbolic links under each --static-symlinks policy: off (the default)
  refuses every link on every component, on follows links that stay inside
  the root, owner also wants the link's owner to own what it leads to; a
  link out of the root (www/etc -> /etc, www/link.txt -> ../secret.txt) is
  a 403 under every policy;
- the same without openat2 (a kernel before Linux 5.6, made here with a
  seccomp filter that answers ENOSYS to it): off walks the path one
  component at a time with O_NOFOLLOW and refuses the same; on and owner
  are refused at start-up;
- a root replaced while serving: the tree opened at start-up is served
  (the directory descriptor keeps it), as documented in docs/httpd.md;
- a FIFO does not block the worker; a missing root stops the start-up.

Every socket has a timeout; each server is stopped with SIGTERM and must
exit 0 without a sanitizer report.
"""
import os
import shutil
import subprocess

import pytest

from test_httpd import TIMEOUT, Server, read_response

HELLO = b"Hello, World!\n"
# "off-old-kernel": off, with openat2 failing as on kernels before 5.6
POLICIES = ["off", "on", "owner", "off-old-kernel"]

# Runs a program with openat2 answering ENOSYS, as a kernel without it.
NO_OPENAT2_C = r"""
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <unistd.h>
#define NR_OPENAT2 437 /* the same number on every architecture */
int main(int argc, char **argv)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NR_OPENAT2, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };
	if (argc < 2 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return 127;
	execv(argv[1], argv + 1);
	return 127;
}
"""


@pytest.fixture(scope="module")
def old_kernel(httpd, tmp_path_factory):
    """A script that runs baton-httpd without openat2."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler for the seccomp launcher")
    d = tmp_path_factory.mktemp("old-kernel")
    src, exe, script = d / "no_openat2.c", d / "no_openat2", d / "httpd"
    src.write_text(NO_OPENAT2_C)
    subprocess.run([cc, "-o", str(exe), str(src)], check=True, timeout=60)
    script.write_text('#!/bin/sh\nexec %s %s "$@"\n' % (exe, os.path.abspath(httpd)))
    script.chmod(0o755)
    return str(script)


def make_tree(base):
    """base/secret.txt outside the root, base/www the root with files and
    every kind of link; returns the root."""
    www = os.path.join(base, "www")
    os.makedirs(os.path.join(www, "sub", "deep"))
    with open(os.path.join(base, "secret.txt"), "w") as f:
        f.write("secret\n")
    files = {"a.txt": "plain\n", "with space.txt": "spaced\n", "sub/index.html": "index\n",
             "sub/deep/b.txt": "deep\n"}
    for name, text in files.items():
        with open(os.path.join(www, name), "w") as f:
            f.write(text)
    links = {
        "etc": "/etc",                    # a directory out of the root
        "link.txt": "../secret.txt",      # a file out of the root
        "abs.txt": os.path.join(www, "a.txt"),  # absolute, though inside
        "in.txt": "a.txt",                # a file inside
        "subl": "sub",                    # a directory inside
        "sub/deep/up": "../../sub",       # inside, by way of ".."
        "sub/out": "../../secret.txt",    # out, by way of ".."
    }
    for name, target in links.items():
        os.symlink(target, os.path.join(www, name))
    return www


def stop_cleanly(srv):
    code = srv.stop()
    assert code == 0, f"baton-httpd exited {code}:\n{srv.stderr}"
    assert "ERROR: AddressSanitizer" not in srv.stderr, srv.stderr
    assert "runtime error" not in srv.stderr, srv.stderr


@pytest.fixture(scope="module", params=POLICIES)
def server(request, httpd, tmp_path_factory):
    www = make_tree(str(tmp_path_factory.mktemp("static-" + request.param)))
    policy = request.param.split("-")[0]
    binary = request.getfixturevalue("old_kernel") if request.param != policy else httpd
    srv = Server(binary, ["--static", www, "--static-symlinks", policy])
    srv.policy = policy
    srv.www = www
    yield srv
    stop_cleanly(srv)


def get(server, target, method=b"GET"):
    with server.connect() as s:
        s.sendall(method + b" " + target + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        return read_response(s, head_only=method == b"HEAD")


# --- plain files ----------------------------------------------------------------

@pytest.mark.parametrize("target,body", [
    (b"/a.txt", b"plain\n"),
    (b"/a.txt?query=1", b"plain\n"),
    (b"/with%20space.txt", b"spaced\n"),
    (b"/%61.txt", b"plain\n"),                 # an escape that is no traversal
    (b"/sub", b"index\n"),                     # a directory: its index.html
    (b"/sub/", b"index\n"),
    (b"/sub/deep/b.txt", b"deep\n"),
    (b"http://x/a.txt", b"plain\n"),           # absolute-form: its path
])
def test_files_under_the_root(server, target, body):
    status, h, got = get(server, target)
    assert status == 200 and got == body


def test_head_and_missing(server):
    status, h, body = get(server, b"/a.txt", b"HEAD")
    assert status == 200 and h["content-length"] == "6" and body == b""
    assert get(server, b"/nothing-here")[2] == HELLO   # the handler's


# --- traversal ---------------------------------------------------------------------

@pytest.mark.parametrize("target", [
    b"/../secret.txt",
    b"/sub/../../secret.txt",
    b"/sub/..",
    b"/./a.txt",
    b"/%2e%2e/secret.txt",
    b"/%2E%2E/secret.txt",
    b"/.%2e/secret.txt",
    b"/sub/%2e%2e/%2e%2e/secret.txt",
    b"/..%2fsecret.txt",
    b"/sub%2f..%2f..%2fsecret.txt",
    b"/%2fetc/passwd",
    b"/etc%2fpasswd",
    b"/a.txt%00.html",
    b"/..%5csecret.txt",
    b"/sub\\..\\..\\secret.txt",
    b"//etc/passwd",
    b"/%zz",
    b"/%2",
])
def test_traversal_is_400(server, target):
    status, h, body = get(server, target)
    assert status == 400 and b"secret" not in body and b"root:" not in body


# --- symbolic links under each policy ------------------------------------------------

# target: what each policy answers (a status; 200 with the body given)
LINKS = {
    b"/etc/passwd": {"off": 403, "on": 403, "owner": 403},
    b"/etc/": {"off": 403, "on": 403, "owner": 403},
    b"/link.txt": {"off": 403, "on": 403, "owner": 403},
    b"/sub/out": {"off": 403, "on": 403, "owner": 403},
    b"/abs.txt": {"off": 403, "on": 403, "owner": 403},
    b"/in.txt": {"off": 403, "on": b"plain\n", "owner": b"plain\n"},
    b"/subl/": {"off": 403, "on": b"index\n", "owner": b"index\n"},
    b"/subl/deep/b.txt": {"off": 403, "on": b"deep\n", "owner": b"deep\n"},
    b"/sub/deep/up/index.html": {"off": 403, "on": b"index\n", "owner": b"index\n"},
}


@pytest.mark.parametrize("target", list(LINKS))
def test_symlinks(server, target):
    want = LINKS[target][server.policy]
    status, _, body = get(server, target)
    assert b"secret" not in body and b"root:" not in body
    if isinstance(want, int):
        assert status == want, body
    else:
        assert status == 200 and body == want


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a link another owner")
@pytest.mark.parametrize("name,to,target,body", [
    ("theirs.txt", "a.txt", b"/theirs.txt", b"plain\n"),                # the last component
    ("theirdir", "sub", b"/theirdir/deep/b.txt", b"deep\n"),            # a directory on the way
])
def test_owner_policy_refuses_a_link_of_another_owner(server, name, to, target, body):
    """A link owned by another user than what it leads to: refused under
    owner, followed under on, refused under off (any link)."""
    link = os.path.join(server.www, name)
    if not os.path.lexists(link):
        os.symlink(to, link)
        os.lchown(link, 65534, 65534)
    status, _, got = get(server, target)
    if server.policy == "on":
        assert status == 200 and got == body
    else:
        assert status == 403


def test_fifo_does_not_block(server):
    fifo = os.path.join(server.www, "fifo")
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    status, _, body = get(server, b"/fifo")
    assert status == 200 and body == HELLO   # not a regular file: the handler's


# --- the root replaced while serving ---------------------------------------------------

def test_root_replaced_while_serving_keeps_the_old_tree(httpd, tmp_path):
    """The root is opened once, at start-up: renamed away and replaced by
    another directory, the server goes on serving the tree it opened;
    once that tree is deleted, its paths are no files (the handler's)."""
    www = make_tree(str(tmp_path))
    srv = Server(httpd, ["--static", www])
    try:
        assert get(srv, b"/a.txt")[2] == b"plain\n"
        os.rename(www, www + ".old")
        os.mkdir(www)
        with open(os.path.join(www, "a.txt"), "w") as f:
            f.write("new tree\n")
        with open(os.path.join(www, "only-new.txt"), "w") as f:
            f.write("new\n")
        assert get(srv, b"/a.txt")[2] == b"plain\n"
        assert get(srv, b"/only-new.txt")[2] == HELLO
        # and what changes inside the opened tree is seen at once
        with open(os.path.join(www + ".old", "a.txt"), "w") as f:
            f.write("edited\n")
        assert get(srv, b"/a.txt")[2] == b"edited\n"
        subprocess.run(["rm", "-rf", www + ".old"], check=True, timeout=TIMEOUT)
        status, _, body = get(srv, b"/a.txt")
        assert status == 200 and body == HELLO
    finally:
        stop_cleanly(srv)


# --- start-up -------------------------------------------------------------------------

@pytest.mark.parametrize("args,code,why", [
    (["--static", "/nonexistent-baton-root"], 1, b"cannot start"),
    (["--static", "/etc/passwd"], 1, b"cannot start"),          # not a directory
    (["--static", "/tmp", "--static-symlinks", "maybe"], 2, b"--static-symlinks wants"),
])
def test_bad_static_options_are_refused(httpd, args, code, why):
    p = subprocess.run([httpd, "--port", "0", "--address", "127.0.0.1", *args],
                       capture_output=True, timeout=TIMEOUT)
    assert p.returncode == code and why in p.stderr, p.stderr
    assert b"listening on" not in p.stderr


@pytest.mark.parametrize("policy", ["on", "owner"])
def test_following_links_needs_openat2(old_kernel, policy):
    """Without openat2 links cannot be followed safely: on and owner stop
    the start-up with a message; off starts (the fixture above)."""
    p = subprocess.run([old_kernel, "--port", "0", "--address", "127.0.0.1", "--static", "/tmp",
                        "--static-symlinks", policy], capture_output=True, timeout=TIMEOUT)
    assert p.returncode == 1 and b"openat2" in p.stderr, p.stderr
    assert b"listening on" not in p.stderr
