#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The assembly of the context switch carries a GNU property note that
declares it supports no control-flow protection (x86-64: neither IBT nor
SHSTK; AArch64: neither BTI nor PAC), so that a program linking baton is not
marked protected by mistake (docs/coroutines.md says why).

usage: check_cet.py READELF OBJECT...   (the library's objects; only the
assembly ones, *.S.o, are checked)"""
import subprocess
import sys


def main() -> int:
    readelf, objects = sys.argv[1], sys.argv[2:]
    asm = [o for o in objects if o.endswith(".S.o")]
    if not asm:
        print("no assembly objects given (the ucontext build has none)")
        return 1
    bad = 0
    for obj in asm:
        out = subprocess.run([readelf, "-n", obj], check=True, capture_output=True,
                             text=True).stdout
        props = [l.strip() for l in out.splitlines() if "Properties:" in l]
        if "NT_GNU_PROPERTY_TYPE_0" not in out or not props:
            print(f"{obj}: no GNU property note")
            bad += 1
            continue
        for p in props:
            feats = p.split("feature:", 1)[1].strip() if "feature:" in p else None
            if feats not in ("", "<None>"):
                print(f"{obj}: claims {p!r}")
                bad += 1
        print(f"{obj}: {props}")
    # Running with shadow stacks on would need the CPU, the kernel and the
    # C library to enable them; the note above keeps them off for programs
    # that link baton, whatever this machine offers.
    try:
        flags = open("/proc/cpuinfo").read()
        shstk = " user_shstk" in flags or " shstk" in flags
    except OSError:
        shstk = False
    print("shadow stacks with baton: not enabled (the switch does not switch them); "
          f"this CPU {'offers' if shstk else 'does not offer'} them")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
