#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every global symbol libbaton defines is public API (declared BATON_API in
include/baton/) or carries the internal prefix baton__: a static libbaton.a
must not take a name a program may use.

usage: check_symbols.py NM LIBRARY INCLUDE_DIR"""
import os
import re
import subprocess
import sys


def public_names(include_dir):
    names = set()
    decl = re.compile(r"BATON_API\b[^;]*?\b(baton_[a-z0-9_]+)\s*\(", re.S)
    for root, _, files in os.walk(include_dir):
        for f in files:
            if f.endswith(".h"):
                names.update(decl.findall(open(os.path.join(root, f)).read()))
    return names


def defined_globals(nm, lib):
    out = subprocess.run([nm, "-g", "--defined-only", lib], check=True,
                         capture_output=True, text=True).stdout
    syms = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TDBRVWGSi":
            syms.add(parts[2])
    return syms


def main():
    nm, lib, include_dir = sys.argv[1:4]
    api = public_names(include_dir)
    syms = defined_globals(nm, lib)
    if not syms:
        print(f"no symbols read from {lib}")
        return 1
    # Names starting with "__" are the implementation's (a sanitizer's
    # __odr_asan.* markers, for instance): reserved, so no program has them.
    bad = sorted(s for s in syms
                 if s not in api and not s.startswith("baton__") and not s.startswith("__"))
    missing = sorted(api - syms)
    for s in bad:
        print(f"{s}: global but neither public (BATON_API) nor internal (baton__)")
    for s in missing:
        print(f"{s}: declared BATON_API but not defined by the library")
    print(f"{len(syms)} symbols, {len(api)} public")
    return 1 if bad or missing else 0


if __name__ == "__main__":
    sys.exit(main())
