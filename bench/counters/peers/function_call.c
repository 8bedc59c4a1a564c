/* SPDX-License-Identifier: MIT */
/*
 * function_call.c - counters benchmark, impl "function-call" (the reference,
 * peer false).
 *
 * The seed's plain C++ reference: a Counter with an int and a run() that
 * increments it, called N*M times (outer loop over resumes, inner loop over
 * counters).  The seed indexes counters[i] with the outer index; this version
 * calls counters[j], which is what the text describes.
 *
 * Anti-optimisation: counter_run() is declared __attribute__((noipa)).  That
 * is stronger than noinline: GCC may not inline it, clone it, specialise it,
 * or use anything it learns about its body (pure/const, which memory it
 * touches, which registers it clobbers) at the call site.  So every step of
 * the timed loop is a real `call counter_run` with the full ABI cost, and the
 * loop cannot be vectorised or collapsed into "i += M".  The call is direct
 * (like the seed's non-virtual member function), not through a pointer: this
 * is the cheapest honest call, which is what a reference should be.
 * `objdump -d counters-function-call` shows the inner loop as
 * `mov %rbx,%rdi; add $4,%rbx; call counter_run; cmp; jne`.
 */
#include "peers_common.h"

#define NOIPA __attribute__((noipa))

struct counter {
	int i;
};

static NOIPA void counter_run(struct counter *c)
{
	c->i++;
}

/* Kept out of main so that the timed region is exactly this loop. */
static NOIPA void run_all(struct counter *counters, long n, long m)
{
	for (long r = 0; r < m; r++)
		for (long j = 0; j < n; j++)
			counter_run(&counters[j]);
}

int main(int argc, char **argv)
{
	struct pc_opts o;
	pc_parse_args(argc, argv, &o, 0);

	/* Construction: outside the timed region. */
	struct counter *counters = calloc((size_t)o.counters, sizeof *counters);
	double *samples = malloc((size_t)o.runs * sizeof *samples);
	if (counters == NULL || samples == NULL) {
		fprintf(stderr, "counters-function-call: out of memory\n");
		return 1;
	}

	const double ops = (double)o.counters * (double)o.resumes;
	for (long run = 0; run < o.runs; run++) {
		int64_t t0 = pc_now_ns();
		run_all(counters, o.counters, o.resumes);
		int64_t t1 = pc_now_ns();
		samples[run] = (double)(t1 - t0) / ops;
	}

	const long want = o.runs * o.resumes;
	for (long j = 0; j < o.counters; j++) {
		if (counters[j].i != want) {
			fprintf(stderr, "counters-function-call: counter %ld is %d, expected %ld\n",
				j, counters[j].i, want);
			return 1;
		}
	}

	pc_report("function-call", 0, &o, samples, NULL);
	free(samples);
	free(counters);
	return 0;
}
