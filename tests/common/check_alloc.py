#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every allocation of the library goes through src/common/alloc.h: no file
under src/ but alloc.h and alloc.c calls the C library's malloc, calloc,
realloc, free, strdup, posix_memalign, aligned_alloc, mmap or munmap
itself. One that did would escape the allocation-failure mode
(src/common/fault.h), and its failure path would go untested.

usage: check_alloc.py SRC_DIR"""
import os
import re
import sys

CALL = re.compile(r"(?<![\w.>])(malloc|calloc|realloc|free|strn?dup|posix_memalign|"
                  r"aligned_alloc|valloc|memalign|mmap|mmap64|munmap|mremap)\s*\(")
EXEMPT = {os.path.join("common", "alloc.h"), os.path.join("common", "alloc.c")}


def strip_comments(text):
    """The code without its comments and string literals (same line count)."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)


def main():
    src = sys.argv[1]
    bad = []
    for dirpath, _, files in os.walk(src):
        for f in sorted(files):
            if not f.endswith((".c", ".h")):
                continue
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, src)
            if rel in EXEMPT:
                continue
            code = strip_comments(open(path, errors="replace").read())
            for n, line in enumerate(code.splitlines(), 1):
                for m in CALL.finditer(line):
                    bad.append(f"src/{rel}:{n}: {m.group(1)}() outside src/common/alloc.h")
    for b in bad:
        print(b)
    print(f"{len(bad)} direct allocation call(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
