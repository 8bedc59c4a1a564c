/* SPDX-License-Identifier: MIT */
/*
 * select_common.h - argument parsing and JSON lines of the select suite's
 * C programs (docs/select.md). Header-only, C11.
 */
#ifndef BATON_BENCH_SELECT_COMMON_H
#define BATON_BENCH_SELECT_COMMON_H

#include "../ring/peers/ring_common.h" /* rc_parse_pos, rc_now_ns, rc_cmp_double */

#define SEL_MAX_CHANNELS 64
#define SEL_MAX_RUNS 1024 /* the most --runs */

struct sel_opts {
	long workers, producers, consumers, channels, messages, capacity;
	long timeout_ms, runs;
	int verbose; /* per-run counters on stderr */
};

static void sel_usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [--workers W] [--producers P] [--consumers C] [--channels K]\n"
		"          [--messages M] [--capacity B] [--timeout-ms T] [--runs R] [--verbose]\n"
		"  P producers send 1..M each, message k of producer p on channel (p+k) mod K;\n"
		"  C consumers select over the K channels (timeout T ms); a closer closes\n"
		"  them once every producer is done. Defaults: 2 8 2 4 100000 64 100 1.\n",
		prog);
}

static void sel_parse_args(int argc, char **argv, struct sel_opts *o)
{
	const char *prog = argc > 0 ? argv[0] : "select";
	static const char *names[] = { "--workers",  "--producers", "--consumers",  "--channels",
				       "--messages", "--capacity",  "--timeout-ms", "--runs" };
	long *dst[] = { &o->workers,  &o->producers, &o->consumers,  &o->channels,
			&o->messages, &o->capacity,  &o->timeout_ms, &o->runs };
	char msg[256];

	*o = (struct sel_opts){ 2, 8, 2, 4, 100000, 64, 100, 1, 0 };
	for (int i = 1; i < argc; i++) {
		size_t k;

		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			sel_usage(prog);
			exit(0);
		}
		if (strcmp(argv[i], "--verbose") == 0) {
			o->verbose = 1;
			continue;
		}
		for (k = 0; k < sizeof(names) / sizeof(names[0]); k++)
			if (strcmp(argv[i], names[k]) == 0)
				break;
		if (k == sizeof(names) / sizeof(names[0]) || i + 1 >= argc) {
			snprintf(msg, sizeof(msg), "bad argument '%s'", argv[i]);
			rc_bad(prog, msg);
		}
		/* 0 is a capacity (unbuffered); everything else is positive. */
		if (dst[k] == &o->capacity && strcmp(argv[i + 1], "0") == 0)
			*dst[k] = 0, i++;
		else if ((*dst[k] = rc_parse_pos(argv[++i], 1000000000L)) == 0) {
			snprintf(msg, sizeof(msg), "%s wants a positive integer, got '%s'",
				 names[k], argv[i]);
			rc_bad(prog, msg);
		}
	}
	if (o->channels > SEL_MAX_CHANNELS)
		rc_bad(prog, "--channels is at most 64");
	if (o->runs > SEL_MAX_RUNS)
		rc_bad(prog, "--runs is at most 1024");
}

static void sel_params(const struct sel_opts *o)
{
	printf("\"params\":{\"workers\":%ld,\"producers\":%ld,\"consumers\":%ld,\"channels\":%ld,"
	       "\"messages\":%ld,\"capacity\":%ld}",
	       o->workers, o->producers, o->consumers, o->channels, o->messages, o->capacity);
}

/* The msgs_per_s line: the median of samples[0..runs), listed in run order. */
static void sel_report(const char *impl, int peer, const struct sel_opts *o, const double *samples)
{
	long n = o->runs;
	double s[SEL_MAX_RUNS];

	memcpy(s, samples, (size_t)n * sizeof(*s));
	qsort(s, (size_t)n, sizeof(*s), rc_cmp_double);
	printf("{\"suite\":\"select\",\"impl\":\"%s\",\"peer\":%s,\"metric\":\"msgs_per_s\","
	       "\"value\":%.1f,\"unit\":\"msgs/s\",",
	       impl, peer ? "true" : "false", n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2);
	sel_params(o);
	printf(",\"runs\":%ld,\"min\":%.1f,\"max\":%.1f,\"samples\":[", n, s[0], s[n - 1]);
	for (long i = 0; i < n; i++)
		printf("%s%.1f", i ? "," : "", samples[i]);
	printf("]}\n");
	fflush(stdout);
}

/* The line of a run that failed (a wrong sum, a failed call); exits 1. */
__attribute__((noreturn)) static void sel_fail(const char *impl, int peer, const struct sel_opts *o,
					       const char *error)
{
	fprintf(stderr, "%s\n", error);
	printf("{\"suite\":\"select\",\"impl\":\"%s\",\"peer\":%s,\"metric\":\"msgs_per_s\","
	       "\"value\":null,\"unit\":\"msgs/s\",\"status\":\"failed\",\"error\":\"%s\",",
	       impl, peer ? "true" : "false", error);
	sel_params(o);
	printf(",\"runs\":%ld}\n", o->runs);
	fflush(stdout);
	exit(1);
}

#endif /* BATON_BENCH_SELECT_COMMON_H */
