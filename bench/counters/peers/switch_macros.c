/* SPDX-License-Identifier: MIT */
/*
 * switch_macros.c - counters benchmark, impl "switch-macros" (peer true).
 *
 * The seed's stackless coroutines: a switch on a saved resume point, with
 * `case __LINE__:` labels planted inside the body by a macro (Duff's device,
 * as in Simon Tatham's "Coroutines in C").  Each counter is one struct
 * holding the resume point and its private integer; nothing lives on a stack
 * across a yield, which is the technique's restriction.
 *
 * Anti-optimisation: exactly as in function_call.c, counter_run() is
 * __attribute__((noipa)), so every resume is a real call that loads the saved
 * state, dispatches through the switch, increments, stores the new state and
 * returns.  The difference from function-call is therefore the switch
 * dispatch plus the state store.  `objdump -d counters-switch-macros` shows
 * the inner loop calling counter_run, and counter_run comparing the state
 * with 0 and with the yield's line number.
 */
#include "peers_common.h"

#define NOIPA __attribute__((noipa))

/*
 * The macros.  `self` is the struct holding cr_state.  A coroutine body is
 * CR_BEGIN(self) ... CR_END(self); CR_YIELD(self) returns to the caller and
 * the next call resumes right after it.  Two yields on one line would clash,
 * which is the usual limitation of __LINE__-based labels.
 */
#define CR_STATE int cr_state
#define CR_INIT(self) ((self)->cr_state = 0)
#define CR_BEGIN(self)              \
	switch ((self)->cr_state) { \
	case 0:
#define CR_YIELD(self)                       \
	do {                                 \
		(self)->cr_state = __LINE__; \
		return;                      \
	case __LINE__:;                      \
	} while (0)
/* A state that is neither 0 nor a yield point is a bug: stop loudly (the
 * seed spins forever instead). */
#define CR_END(self)     \
	default:         \
		abort(); \
		}        \
		(self)->cr_state = -1

struct counter {
	CR_STATE;
	int i;
};

static NOIPA void counter_run(struct counter *self)
{
	CR_BEGIN(self);
	for (;;) {
		self->i++;
		CR_YIELD(self);
	}
	CR_END(self);
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
	struct counter *counters = malloc((size_t)o.counters * sizeof *counters);
	double *samples = malloc((size_t)o.runs * sizeof *samples);
	if (counters == NULL || samples == NULL) {
		fprintf(stderr, "counters-switch-macros: out of memory\n");
		return 1;
	}
	for (long j = 0; j < o.counters; j++) {
		CR_INIT(&counters[j]);
		counters[j].i = 0;
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
			fprintf(stderr, "counters-switch-macros: counter %ld is %d, expected %ld\n",
				j, counters[j].i, want);
			return 1;
		}
	}

	pc_report("switch-macros", 1, &o, samples, NULL);
	free(samples);
	free(counters);
	return 0;
}
