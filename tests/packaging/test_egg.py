# SPDX-License-Identifier: MIT
"""The CHICKEN egg (bindings/chicken/baton-chicken.egg) as a CHICKEN user
installs it: chicken-install from a copy of the checkout's directory into a
scratch repository, with libbaton-dev from the packages (unpacked in the
scratch root); then a program using define-sequenced-callback is compiled
with csc against the installed egg, and run."""
import glob
import os
import shutil
import subprocess

from conftest import TOP, need

PROGRAM = """\
(import scheme (chicken base) (chicken platform) baton-chicken)
(define-sequenced-callback (square (int a)) int
  (if (< a 0) (error "negative" a) (* a a)))
(return-to-host)
"""


def run(cmd, env, cwd, timeout=300):
    p = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True,
                       timeout=timeout)
    assert p.returncode == 0, f"{cmd} exited {p.returncode}:\n{p.stdout}\n{p.stderr}"
    return p.stdout


def test_egg_installs_and_a_program_compiles_against_it(root, libdir, tmp_path):
    need("chicken-install")
    need("csc")
    default_repo = subprocess.run(["chicken-install", "-repository"], capture_output=True,
                                  text=True, check=True).stdout.strip()
    repo, prefix = tmp_path / "repo", tmp_path / "prefix"
    repo.mkdir()
    env = dict(os.environ,
               CHICKEN_INSTALL_REPOSITORY=str(repo),
               CHICKEN_REPOSITORY_PATH=f"{repo}:{default_repo}",
               CHICKEN_INSTALL_PREFIX=str(prefix),
               # libbaton-dev in a prefix of its own, as for any C library.
               CSC_OPTIONS=f"-I{root}/usr/include -L -L{libdir}",
               LD_LIBRARY_PATH=str(libdir))
    # chicken-install builds in the egg's directory: a copy keeps the
    # checkout clean.
    src = tmp_path / "egg"
    shutil.copytree(os.path.join(TOP, "bindings", "chicken"), src,
                    ignore=shutil.ignore_patterns("tests", "*.o", "*.so", "*.a"))
    run(["chicken-install"], env, src)
    for f in ("baton-chicken.so", "baton-chicken.import.so", "baton-chicken.a",
              "baton-chicken.egg-info"):
        assert (repo / f).is_file(), f"{f} not installed in the repository"
    # The header goes with CHICKEN's own (csc's include path); under
    # CHICKEN_INSTALL_PREFIX, somewhere below that prefix.
    headers = glob.glob(f"{prefix}/**/baton_chicken.h", recursive=True)
    assert headers, "baton_chicken.h not installed"
    inc = os.path.dirname(headers[0])

    prog = tmp_path / "prog"
    prog.mkdir()
    (prog / "square.scm").write_text(PROGRAM)
    shutil.copy(os.path.join(TOP, "tests", "consumer", "chicken", "consumer_chicken.c"), prog)
    # Linked statically with the egg (its C side holds the host's entry
    # points), and with libbaton from libbaton-dev.
    run(["csc", "-static", "-embedded", "-I", inc, "-C", f"-I{inc}", "square.scm",
         "consumer_chicken.c", "-o", "square", "-L", "-lbaton"], env, prog)
    out = run([str(prog / "square")], env, prog, timeout=60)
    assert "consumer chicken ok" in out
