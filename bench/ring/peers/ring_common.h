/* SPDX-License-Identifier: MIT */
/*
 * ring_common.h - shared plumbing of the C and C++ peers of the ring
 * benchmark (see docs/ring.md): argument parsing, the monotonic clock, the
 * resident set size, and the two JSON lines of docs/bench-format.md.
 * Header-only, valid C11 and C++20.  Nothing in here runs inside a timed
 * region except rc_now_ns().
 */
#ifndef BATON_BENCH_RING_COMMON_H
#define BATON_BENCH_RING_COMMON_H

#if !defined(_GNU_SOURCE) && !defined(__cplusplus)
#define _GNU_SOURCE 1 /* clock_gettime, pthread extensions under -std=c11 */
#endif

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct rc_opts {
	long n;          /* coroutines per ring */
	long coroutines; /* all coroutines: n * rings */
	long rounds;     /* rounds each ring makes per run */
	long runs;       /* timed runs; the median is reported */
};

static void rc_usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s --n N --coroutines C --rounds M [--runs R]\n"
		"  --n N           coroutines per ring (>= 2)\n"
		"  --coroutines C  all coroutines, a multiple of N (C/N rings)\n"
		"  --rounds M      rounds of each ring per run\n"
		"  --runs R        timed runs, the median is reported (default 1)\n"
		"Prints two JSON lines on stdout (docs/bench-format.md).\n",
		prog);
}

/* Strict decimal integer in [1, max]; 0 on error. */
static long rc_parse_pos(const char *s, long max)
{
	char *end = NULL;
	long v;

	if (s == NULL || *s < '0' || *s > '9')
		return 0;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < 1 || v > max)
		return 0;
	return v;
}

__attribute__((noreturn)) static void rc_bad(const char *prog, const char *what)
{
	fprintf(stderr, "%s: %s\n", prog, what);
	rc_usage(prog);
	exit(2);
}

/* Parses argv into *o; a bad or missing argument exits 2 with the reason. */
static void rc_parse_args(int argc, char **argv, struct rc_opts *o)
{
	const char *prog = argc > 0 ? argv[0] : "ring-peer";
	char msg[256];
	int i;

	o->n = o->coroutines = o->rounds = 0;
	o->runs = 1;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		long *dst, max = 1000000000L;

		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			rc_usage(prog);
			exit(0);
		} else if (strcmp(a, "--n") == 0) {
			dst = &o->n;
		} else if (strcmp(a, "--coroutines") == 0) {
			dst = &o->coroutines;
		} else if (strcmp(a, "--rounds") == 0) {
			dst = &o->rounds;
		} else if (strcmp(a, "--runs") == 0) {
			dst = &o->runs;
			max = 100000L;
		} else {
			snprintf(msg, sizeof(msg), "unknown argument '%s'", a);
			rc_bad(prog, msg);
			return;
		}
		if (i + 1 >= argc) {
			snprintf(msg, sizeof(msg), "%s needs a value", a);
			rc_bad(prog, msg);
		}
		*dst = rc_parse_pos(argv[++i], max);
		if (*dst == 0) {
			snprintf(msg, sizeof(msg), "%s wants an integer in [1, %ld], got '%s'", a,
				 max, argv[i]);
			rc_bad(prog, msg);
		}
	}
	if (o->n == 0 || o->coroutines == 0 || o->rounds == 0)
		rc_bad(prog, "--n, --coroutines and --rounds are required");
	if (o->n < 2)
		rc_bad(prog, "--n must be at least 2 (a ring of one has no neighbour)");
	if (o->coroutines % o->n != 0) {
		snprintf(msg, sizeof(msg), "--coroutines %ld is not a multiple of --n %ld",
			 o->coroutines, o->n);
		rc_bad(prog, msg);
	}
}

/* CLOCK_MONOTONIC in nanoseconds. */
static inline int64_t rc_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* VmRSS of this process in bytes (0 if /proc is unreadable). */
static long rc_rss_bytes(void)
{
	char line[256];
	long kib = 0;
	FILE *f = fopen("/proc/self/status", "r");

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib * 1024;
}

static int rc_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void rc_params(FILE *f, const struct rc_opts *o)
{
	fprintf(f, "\"params\":{\"n\":%ld,\"coroutines\":%ld,\"rounds\":%ld}", o->n, o->coroutines,
		o->rounds);
}

/*
 * Prints the msgs_per_s line (median of samples[0..o->runs), in run order)
 * and the rss_bytes_per_coro line (one measurement, in the first run).
 */
static void rc_report(const char *impl, const struct rc_opts *o, const double *samples,
		      double rss_per_coro)
{
	long i, n = o->runs;
	double *s = (double *)malloc((size_t)n * sizeof(*s));
	double med;

	if (s == NULL) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	memcpy(s, samples, (size_t)n * sizeof(*s));
	qsort(s, (size_t)n, sizeof(*s), rc_cmp_double);
	med = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	printf("{\"suite\":\"ring\",\"impl\":\"%s\",\"peer\":true,\"metric\":\"msgs_per_s\","
	       "\"value\":%.1f,\"unit\":\"msgs/s\",",
	       impl, med);
	rc_params(stdout, o);
	printf(",\"runs\":%ld,\"min\":%.1f,\"max\":%.1f,\"samples\":[", n, s[0], s[n - 1]);
	for (i = 0; i < n; i++)
		printf("%s%.1f", i ? "," : "", samples[i]);
	printf("]}\n");
	printf("{\"suite\":\"ring\",\"impl\":\"%s\",\"peer\":true,\"metric\":\"rss_bytes_per_"
	       "coro\","
	       "\"value\":%.1f,\"unit\":\"bytes\",",
	       impl, rss_per_coro);
	rc_params(stdout, o);
	printf(",\"runs\":1,\"min\":%.1f,\"max\":%.1f}\n", rss_per_coro, rss_per_coro);
	fflush(stdout);
	free(s);
}

/* The line of a run that could not complete; exits 1. */
__attribute__((noreturn)) static void rc_fail(const char *impl, const struct rc_opts *o,
					      const char *error)
{
	fprintf(stderr, "%s\n", error);
	printf("{\"suite\":\"ring\",\"impl\":\"%s\",\"peer\":true,\"metric\":\"msgs_per_s\","
	       "\"value\":null,\"unit\":\"msgs/s\",\"status\":\"failed\",\"error\":\"",
	       impl);
	for (; *error; error++) /* JSON string: escape quotes, backslashes, controls */
		if (*error == '"' || *error == '\\')
			printf("\\%c", *error);
		else if ((unsigned char)*error < 0x20)
			printf(" ");
		else
			putchar(*error);
	printf("\",");
	rc_params(stdout, o);
	printf(",\"runs\":%ld}\n", o->runs);
	fflush(stdout);
	exit(1);
}

#endif /* BATON_BENCH_RING_COMMON_H */
