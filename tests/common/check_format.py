# SPDX-License-Identifier: MIT
"""Every C source and header the project wrote is laid out as .clang-format
says (one width, 100 columns; the tree was formatted once with it).

Run by CTest (test `format`, registered where clang-format is found):
check_format.py CLANG_FORMAT SOURCE_DIR. The files are the *.c and *.h
that git tracks when SOURCE_DIR is a git work tree, else every such file
under it outside build/ and .git/. Standard library only; exits 1 naming
every file clang-format would change, with the command that fixes it.
The check shows it can fail first: a badly laid out scratch file must be
caught."""
import os
import subprocess
import sys
import tempfile

# clang-format 14 reads this header's range initialisers ([lo ... hi] = v)
# as Objective-C and refuses it: laid out by hand.
SKIP = {os.path.join("src", "http", "http_ctype.h")}


def sources(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "*.c", "*.h"],
                             capture_output=True, text=True, check=True).stdout
        files = out.split()
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if x not in ("build", ".git")]
            files += [os.path.relpath(os.path.join(d, n), root)
                      for n in names if n.endswith((".c", ".h"))]
    return sorted(f for f in files if f not in SKIP and not f.startswith("build/"))


def unformatted(clang_format, root, files, style):
    bad = []
    for f in files:
        r = subprocess.run([clang_format, "--dry-run", "--Werror", "--style=file:" + style, f],
                           cwd=root, capture_output=True, text=True)
        if r.returncode != 0:
            bad.append(f)
    return bad


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    clang_format, root = sys.argv[1], os.path.abspath(sys.argv[2])
    style = os.path.join(root, ".clang-format")
    # The check can fail: a scratch file laid out against the style.
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "bad.c"), "w") as f:
            f.write("int  f( int x ){return x;}\n")
        if unformatted(clang_format, tmp, ["bad.c"], style) != ["bad.c"]:
            print("check_format: a badly laid out scratch file was not caught")
            return 1
    bad = unformatted(clang_format, root, sources(root), style)
    for f in bad:
        print(f"{f}: not laid out as .clang-format says")
    if bad:
        print(f"fix: {clang_format} -i --style=file " + " ".join(bad))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
