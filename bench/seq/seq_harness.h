/* SPDX-License-Identifier: MIT */
/*
 * bench/seq/seq_harness.h - the shared harness of the `seq` benchmark suite
 * (after "Sequencing Calls into CHICKEN Scheme"): one native thread calls an exported
 * foo(x) = x + 100 in a single-threaded runtime N times, timed around the
 * loop, through one of four mechanisms; then T threads call at once through
 * baton_seq_call with combining batch K.
 *
 * A runtime (c, lua, chicken) is one small file that fills a struct
 * seq_runtime and hands it to seq_harness_main():
 *
 *     #include "seq_harness.h"
 *
 *     static int my_init(void)       { ...start the runtime...; return 0; }
 *     static long my_foo(long x)     { ...call foo(x) in the runtime... }
 *
 *     static const struct seq_runtime rt = {
 *             .name = "chicken", .init = my_init, .call_foo = my_foo,
 *     };
 *     int main(int argc, char **argv) { return seq_harness_main(argc, argv, &rt); }
 *
 * and links the static library `seq_harness` (target in
 * bench/seq/CMakeLists.txt; it brings baton and pthreads along), e.g.
 *
 *     add_executable(seq-chicken seq_chicken.c)
 *     target_link_libraries(seq-chicken PRIVATE seq_harness ...)
 *     set_target_properties(seq-chicken PROPERTIES
 *             RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench/seq)
 *
 * Contract with the runtime:
 *  - init() is called exactly once per process, on the stack that will own
 *    the runtime: the main thread's own stack (variant plain), the
 *    dispatcher thread (pipe), the dedicated ucontext stack (ucontext) or
 *    the baton_seq stack (baton, through baton_seq_attr.init). It returns 0,
 *    or -1 after printing the reason on stderr.
 *  - call_foo(x) must return x + 100 computed inside the runtime. It is only
 *    ever called on that same stack, one call at a time.
 *  - fini, if not NULL, is called once at the end on that stack.
 *  - stack_size: the dedicated stack for ucontext and baton (0 = 1 MiB);
 *    CHICKEN wants several MiB.
 *
 * Command line (docs/bench-format.md):
 *   seq-<runtime> --variant plain|pipe|ucontext|baton [--threads T] [--k K]
 *                 [--calls N] [--runs R]
 * Defaults: baton, T = 1, K = 16, N = 1,000,000 (per thread), R = 1. Only
 * the baton variant takes T > 1. Per run, the threads first make N calls
 * each in an untimed-inside loop (throughput: ns_per_op = wall time / N for
 * T = 1, calls_per_s = T * N / wall time), then N calls each again, timing
 * every 16th call on its own (p50_ns, p99_ns over all sampled calls of all
 * threads). Every result is checked. Output: one JSON line per metric
 * (medians over R runs), impl "<runtime>-<variant>", params
 * {"threads": T, "k": K} (k is 0 for the variants other than baton).
 */
#ifndef BATON_BENCH_SEQ_HARNESS_H
#define BATON_BENCH_SEQ_HARNESS_H

#include <stddef.h>

struct seq_runtime {
	const char *name;         /* impl prefix: "c", "lua", "chicken" */
	int (*init)(void);        /* start the runtime on the owning stack */
	long (*call_foo)(long x); /* foo(x) = x + 100, inside the runtime */
	void (*fini)(void);       /* optional */
	size_t stack_size;        /* dedicated stack; 0 = 1 MiB */
};

/* Parse the command line, run the variant, print the JSON lines. Returns the
 * process exit status (0, 1 on a failure, 2 on a bad command line). */
int seq_harness_main(int argc, char **argv, const struct seq_runtime *rt);

#endif /* BATON_BENCH_SEQ_HARNESS_H */
