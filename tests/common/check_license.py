# SPDX-License-Identifier: MIT
"""Every source file the project wrote names its license: an
``SPDX-License-Identifier: MIT`` line among its first lines (after a
shebang or an encoding line), in the file's own comment syntax.

Run by CTest (test `license_headers`): check_license.py SOURCE_DIR
[--fix]. The files are those git tracks when SOURCE_DIR is a git work tree,
else every file under it outside build/ and .git/; which of them are source
is decided by name below. Standard library only; exits 1 naming every file
without the line. --fix adds the line where it is missing (the comment
syntax per kind is the table below). The check shows it can fail first: a
scratch file without the line must be caught."""
import os
import subprocess
import sys
import tempfile

TAG = "SPDX-License-Identifier: MIT"
# Where the line must appear: within the first HEAD lines.
HEAD = 3

# The comment that carries the line, by file kind.
C_STYLE = "/* " + TAG + " */"
SLASH = "// " + TAG
HASH = "# " + TAG
SEMI = ";; " + TAG
DASH = "-- " + TAG

BY_SUFFIX = {
    ".c": C_STYLE, ".h": C_STYLE, ".S": C_STYLE, ".cpp": C_STYLE,
    ".pml": C_STYLE,
    ".rs": SLASH, ".go": SLASH,
    ".py": HASH, ".sh": HASH, ".cmake": HASH, ".toml": HASH, ".ini": HASH,
    ".service": HASH, ".dict": HASH, ".pc.in": HASH, ".cmake.in": HASH,
    ".conf.in": HASH,
    ".scm": SEMI, ".egg": SEMI,
    ".lua": DASH,
}
BY_NAME = {
    "CMakeLists.txt": HASH, "Makefile": HASH, "rules": HASH,
    "go.mod": SLASH, "config.h.in": C_STYLE, "Doxyfile.in": HASH,
}
# Generated or data files that carry no comment of their own.
SKIP_NAMES = {"Cargo.lock"}


def comment_for(path):
    """The comment line a source file must carry, or None if not source."""
    name = os.path.basename(path)
    if name in SKIP_NAMES:
        return None
    if name in BY_NAME:
        return BY_NAME[name]
    for suffix in sorted(BY_SUFFIX, key=len, reverse=True):
        if name.endswith(suffix):
            return BY_SUFFIX[suffix]
    return None


def tracked_files(root):
    """Paths relative to root: git's list, or a walk without build/."""
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"],
                             capture_output=True, check=True).stdout
        files = [f for f in out.decode().split("\0") if f]
        if files:
            return [f for f in files if os.path.exists(os.path.join(root, f))]
    except (OSError, subprocess.CalledProcessError):
        pass
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        dirnames[:] = [d for d in dirnames
                       if d not in (".git", "build") and not d.startswith(".")]
        for f in filenames:
            found.append(os.path.normpath(os.path.join(rel, f)))
    return found


def has_tag(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        for _ in range(HEAD):
            line = f.readline()
            if not line:
                break
            if TAG in line:
                return True
    return False


def add_tag(path, comment):
    """Insert the line at the top, after a shebang or an encoding line."""
    with open(path, encoding="utf-8") as f:
        lines = f.readlines()
    at = 0
    while at < len(lines) and at < 2 and (
            lines[at].startswith("#!") or "coding" in lines[at][:30] and lines[at].startswith("#")):
        at += 1
    lines.insert(at, comment + "\n")
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(lines)


def missing(root, files):
    bad = []
    for rel in files:
        comment = comment_for(rel)
        if comment and not has_tag(os.path.join(root, rel)):
            bad.append((rel, comment))
    return bad


def self_test():
    """The check must catch a file without the line and pass one with it."""
    with tempfile.TemporaryDirectory() as d:
        open(os.path.join(d, "a.c"), "w").write("int x;\n")
        open(os.path.join(d, "b.py"), "w").write("#!/usr/bin/env python3\n# " + TAG + "\n")
        open(os.path.join(d, "notes.md"), "w").write("no license here\n")
        bad = [rel for rel, _ in missing(d, ["a.c", "b.py", "notes.md"])]
        assert bad == ["a.c"], f"self-test: expected only a.c flagged, got {bad}"


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: check_license.py SOURCE_DIR [--fix]")
    root = sys.argv[1]
    self_test()
    bad = missing(root, tracked_files(root))
    if "--fix" in sys.argv[2:]:
        for rel, comment in bad:
            add_tag(os.path.join(root, rel), comment)
        bad = missing(root, tracked_files(root))
    for rel, comment in bad:
        print(f"{rel}: no '{TAG}' line in its first {HEAD} lines "
              f"(add: {comment})", file=sys.stderr)
    if bad:
        sys.exit(1)
    print(f"license_headers: every source file names {TAG.split(': ')[1]}")


if __name__ == "__main__":
    main()
