/* SPDX-License-Identifier: MIT */
/*
 * peers_common.h - shared plumbing for the C and C++ peers of the counters
 * benchmark: argument parsing, the monotonic clock, the median and the JSON
 * line of docs/bench-format.md.  Header-only, valid C11 and C++20.  Nothing in
 * here runs inside a timed region except pc_now_ns().
 */
#ifndef BATON_BENCH_COUNTERS_PEERS_COMMON_H
#define BATON_BENCH_COUNTERS_PEERS_COMMON_H

/* clock_gettime() under -std=c11; must come before the first system header,
 * so the C peers include this header first. */
#if !defined(_POSIX_C_SOURCE) && !defined(_GNU_SOURCE) && !defined(__cplusplus)
#define _POSIX_C_SOURCE 200809L
#endif

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PC_DEFAULT_COUNTERS 20000L
#define PC_DEFAULT_RESUMES 300L
#define PC_DEFAULT_RUNS 1L

struct pc_opts {
	long counters;  /* N: number of counters */
	long resumes;   /* M: resumes of each counter per run */
	long runs;      /* R: timed runs */
	long stack_kib; /* only meaningful when the program accepts --stack-kib */
};

static void pc_usage(const char *prog, int stack_kib_default)
{
	fprintf(stderr,
		"usage: %s [--counters N] [--resumes M] [--runs R]%s\n"
		"  --counters N   number of counters (default %ld)\n"
		"  --resumes M    resumes of each counter per run (default %ld)\n"
		"  --runs R       timed runs, the median is reported (default %ld)\n",
		prog, stack_kib_default > 0 ? " [--stack-kib K]" : "", PC_DEFAULT_COUNTERS,
		PC_DEFAULT_RESUMES, PC_DEFAULT_RUNS);
	if (stack_kib_default > 0)
		fprintf(stderr, "  --stack-kib K  stack size of each fiber in KiB (default %d)\n",
			stack_kib_default);
	fprintf(stderr, "Prints one JSON line on stdout (docs/bench-format.md).\n");
}

/* Strict positive decimal integer in [1, max]; returns 0 on error. */
static long pc_parse_pos(const char *s, long max)
{
	char *end = NULL;
	long v;
	if (s == NULL || *s < '0' || *s > '9')
		return 0;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < 1 || v > max)
		return 0;
	return v;
}

/*
 * Parses argv into *o.  stack_kib_default > 0 enables --stack-kib.  On a bad
 * argument prints the reason and the usage on stderr and exits 2; --help
 * prints the usage on stderr and exits 0 (stdout is reserved for JSON).
 */
static void pc_parse_args(int argc, char **argv, struct pc_opts *o, int stack_kib_default)
{
	const char *prog = argc > 0 ? argv[0] : "counters-peer";
	int i;
	o->counters = PC_DEFAULT_COUNTERS;
	o->resumes = PC_DEFAULT_RESUMES;
	o->runs = PC_DEFAULT_RUNS;
	o->stack_kib = stack_kib_default;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		long *dst = NULL;
		long max = INT_MAX;
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			pc_usage(prog, stack_kib_default);
			exit(0);
		} else if (strcmp(a, "--counters") == 0) {
			dst = &o->counters;
			max = 100000000L;
		} else if (strcmp(a, "--resumes") == 0) {
			dst = &o->resumes;
		} else if (strcmp(a, "--runs") == 0) {
			dst = &o->runs;
			max = 100000L;
		} else if (stack_kib_default > 0 && strcmp(a, "--stack-kib") == 0) {
			dst = &o->stack_kib;
			max = 1024L * 1024L;
		} else {
			fprintf(stderr, "%s: unknown argument '%s'\n", prog, a);
			pc_usage(prog, stack_kib_default);
			exit(2);
		}
		if (i + 1 >= argc) {
			fprintf(stderr, "%s: %s needs a value\n", prog, a);
			pc_usage(prog, stack_kib_default);
			exit(2);
		}
		*dst = pc_parse_pos(argv[++i], max);
		if (*dst == 0) {
			fprintf(stderr, "%s: %s wants an integer in [1, %ld], got '%s'\n", prog, a,
				max, argv[i]);
			pc_usage(prog, stack_kib_default);
			exit(2);
		}
	}
	/* Each counter's private integer is an int and ends at R*M. */
	if (o->runs > INT_MAX / o->resumes) {
		fprintf(stderr, "%s: --runs * --resumes must not exceed %d\n", prog, INT_MAX);
		pc_usage(prog, stack_kib_default);
		exit(2);
	}
}

/* CLOCK_MONOTONIC in nanoseconds. */
static inline int64_t pc_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int pc_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/*
 * Prints the one JSON line.  samples[] holds ns per resume of each run in run
 * order; extra_params, if not NULL, is appended inside "params" verbatim
 * (e.g. "\"stack_kib\":64").
 */
static void pc_report(const char *impl, int peer, const struct pc_opts *o, const double *samples,
		      const char *extra_params)
{
	long r, n = o->runs;
	double *sorted = (double *)malloc((size_t)n * sizeof *sorted);
	double median;
	if (sorted == NULL) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	memcpy(sorted, samples, (size_t)n * sizeof *sorted);
	qsort(sorted, (size_t)n, sizeof *sorted, pc_cmp_double);
	median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0;
	printf("{\"suite\":\"counters\",\"impl\":\"%s\",\"peer\":%s,\"metric\":\"ns_per_op\","
	       "\"value\":%.3f,\"unit\":\"ns\",\"params\":{\"counters\":%ld,\"resumes\":%ld%s%s},"
	       "\"runs\":%ld,\"min\":%.3f,\"max\":%.3f,\"samples\":[",
	       impl, peer ? "true" : "false", median, o->counters, o->resumes,
	       extra_params ? "," : "", extra_params ? extra_params : "", n, sorted[0],
	       sorted[n - 1]);
	for (r = 0; r < n; r++)
		printf("%s%.3f", r ? "," : "", samples[r]);
	printf("]}\n");
	fflush(stdout);
	free(sorted);
}

#endif
