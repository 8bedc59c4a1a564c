#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""No function of the layers above the coroutines keeps a thread-local
address across a call after which its task may run on another thread.

A task that blocks (a channel, a stage, a mutex, a sleep, a yield) can be
woken on another worker and go on on that worker's thread in the middle of
the same C function. On AArch64, GCC derives the address of a thread-local
variable from TPIDR_EL0 once per function and keeps it in a register, so a
read of baton__worker_self inlined after the wait would find the old
thread's worker. The library therefore reads its thread-local state, in
those layers, only through out-of-line accessors (baton__worker_get,
baton__seq_self_get, baton__thread_get_after_switch).

This check disassembles the library: every function of those layers that
reads the thread pointer itself (AArch64: TPIDR_EL0; x86-64: %fs:0, which
the compiler loads to form the address of a thread-local struct, while a
plain %fs-relative load of a variable cannot go stale) must be one of
ALLOWED below, each with the reason it cannot go stale. A new one fails the
test until it is fixed or argued.

usage: check_tls.py OBJDUMP ARCH OBJECT...   (ARCH: aarch64 or x86_64)"""
import re
import subprocess
import sys

# The coroutine layer switches stacks itself and re-reads its state with
# baton__thread_get_after_switch() after each switch; the arch layer is
# the switch. Everything else runs in tasks.
LOWER = ("/src/coro/", "/src/arch/", "/src/common/")

ALLOWED = {
    "baton__worker_get": "the fresh accessor itself (src/sched)",
    "baton__seq_self_get": "the fresh accessor itself (src/seq)",
    "baton__worker_loop": "the worker loop runs on its own thread, never in a task that moves",
    "baton_seq_call": "the fast path reads its record before anything can wait",
    "baton_mutex_lock": "the thread tag identifies callers outside tasks, which do not move",
    "baton_mutex_unlock": "as baton_mutex_lock",
    "baton_chan_select": "the random start is drawn before the select waits",
    "baton__http_date": "a per-thread cache of the Date header; nothing waits in it",
    "rec_get": "the reclamation domain's accessor: finds this thread's record and returns, nothing waits in it",
    "rec_slow": "as rec_get, on a thread's first section in a domain",
    "baton__smr_read_lock_inline": "reads this thread's record and returns; where it is inlined (x86-64 only) it reads with %fs-relative loads, which cannot go stale",
    "baton__smr_read_unlock_inline": "as baton__smr_read_lock_inline, on the thread the section ends on",
    "baton_smr_read_lock": "out of line so that each call reads the thread it runs on (AArch64); nothing waits in it",
    "baton_smr_read_unlock": "as baton_smr_read_lock, on the thread the section ends on",
}

FUNC = re.compile(r"^[0-9a-f]+ <([^>]+)>:$")

# What a read of the thread pointer looks like, and a function that must
# show one (else the check is blind: another architecture, another objdump).
THREAD_POINTER = {
    "aarch64": (re.compile(r"tpidr_el0"), "baton__worker_get"),
    "x86_64": (re.compile(r"%fs:0x0(?=,|\s*$)"), "baton__seq_self_get"),
}


def tls_readers(objdump: str, pattern: re.Pattern, obj: str) -> set:
    out = subprocess.run([objdump, "-d", "--no-show-raw-insn", obj], check=True,
                         capture_output=True, text=True).stdout
    found, fn = set(), None
    for line in out.splitlines():
        m = FUNC.match(line)
        if m:
            fn = m.group(1)
        elif fn and pattern.search(line):
            found.add(fn)
    return found


def main() -> int:
    objdump, arch, objects = sys.argv[1], sys.argv[2], sys.argv[3:]
    if arch not in THREAD_POINTER:
        print(f"unknown architecture {arch!r}")
        return 1
    pattern, sentinel = THREAD_POINTER[arch]
    task_objs = [o for o in objects if "/src/" in o and not any(p in o for p in LOWER)]
    if not task_objs:
        print("no objects of the task layers given")
        return 1
    readers = {}
    for obj in task_objs:
        for fn in tls_readers(objdump, pattern, obj):
            readers[fn] = obj
    bad = sorted(fn for fn in readers if fn not in ALLOWED)
    for fn in bad:
        print(f"{fn} ({readers[fn]}) reads the thread pointer itself: a thread-local read "
              "inlined after a wait would use the old thread's state; read it "
              "through the layer's fresh accessor, or add it to ALLOWED with the "
              "reason it cannot go stale")
    if sentinel not in readers:
        # The accessor must show up, or this check sees nothing at all.
        print(f"{sentinel} reads no thread pointer: not an {arch} build, or "
              "objdump's output changed; the check is blind")
        return 1
    for fn in sorted(readers):
        if fn in ALLOWED:
            print(f"ok: {fn}: {ALLOWED[fn]}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
