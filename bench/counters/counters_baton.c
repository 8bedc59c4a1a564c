/* SPDX-License-Identifier: MIT */
/*
 * The counters benchmark ("Playing with co-routines", 2007) on baton: N counters, each a coroutine
 * that increments its private integer and yields; M rounds resume every
 * counter once. Prints one JSON line (docs/bench-format.md) with the median
 * ns per resume (a resume and the yield back).
 *
 *   counters-baton --model stackful|copystack [--counters N] [--resumes M]
 *                  [--runs R] [--stack-kib K] [--shared-fpenv]
 *   counters-baton --rss stackful|copystack [--counters N] [--stack-kib K]
 *
 * --rss measures resident memory per coroutine instead: N coroutines are
 * created and each resumed once (so each has touched its stack), and the
 * growth of the process's RSS is divided by N. Defaults: 20000 stackful
 * coroutines with 64 KiB stacks, or 1,000,000 copy-stack coroutines.
 *
 * --shared-fpenv creates the counters with BATON_CORO_SHARED_FPENV and
 * declares the thread's own context shared too (impl "baton-...-nofp"):
 * resume and yield then do no FP control-state work.
 *
 * Built twice: counters-baton (assembly switch) and counters-baton-ucontext
 * (the same code on the ucontext backend, impl "baton-ucontext").
 */
#define _GNU_SOURCE
#include "peers/peers_common.h"

#include <unistd.h>

#include <baton/coro.h>

#ifndef IMPL_PREFIX
#define IMPL_PREFIX "baton"
#endif

struct counter {
	int i;
};

static void *count(void *arg, void *in)
{
	struct counter *c = arg;

	(void)in;
	for (;;) {
		c->i++;
		baton_coro_yield(NULL, NULL);
	}
	return NULL;
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "counters-baton: %s: %s\n", what, baton_strerror(rc));
	exit(1);
}

static baton_coro_t **make_counters(long n, const struct baton_coro_attr *attr, struct counter *c)
{
	baton_coro_t **co = calloc((size_t)n, sizeof(*co));
	int rc;

	if (co == NULL)
		die("calloc", BATON_ENOMEM);
	for (long j = 0; j < n; j++) {
		rc = baton_coro_create(&co[j], attr, count, &c[j]);
		if (rc != BATON_OK)
			die("create", rc);
	}
	return co;
}

static long rss_bytes(void)
{
	long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f == NULL || fscanf(f, "%ld %ld", &pages, &resident) != 2) {
		fprintf(stderr, "counters-baton: cannot read /proc/self/statm\n");
		exit(1);
	}
	fclose(f);
	return resident * sysconf(_SC_PAGESIZE);
}

static int measure_rss(enum baton_coro_model model, long n, long stack_kib, int n_given)
{
	/* A copy-stack coroutine takes no stack size: the shared stack's. */
	struct baton_coro_attr attr = { model,
					model == BATON_CORO_STACKFUL ? (size_t)stack_kib * 1024 : 0,
					NULL, 0 };
	const char *impl = model == BATON_CORO_STACKFUL ? IMPL_PREFIX "-stackful"
							: IMPL_PREFIX "-copystack";
	struct counter *c;
	baton_coro_t **co;
	long before, after;

	if (!n_given)
		n = model == BATON_CORO_STACKFUL ? 20000 : 1000000;
	before = rss_bytes();
	c = calloc((size_t)n, sizeof(*c));
	co = make_counters(n, &attr, c);
	for (long j = 0; j < n; j++)
		if (baton_coro_resume(co[j], NULL, NULL) != BATON_OK)
			die("resume", BATON_EINVAL);
	after = rss_bytes();
	printf("{\"suite\":\"counters\",\"impl\":\"%s\",\"peer\":false,"
	       "\"metric\":\"rss_bytes_per_coro\",\"value\":%.1f,\"unit\":\"bytes\","
	       "\"params\":{\"counters\":%ld,\"stack_kib\":%ld},\"runs\":1,\"min\":%.1f,\"max\":%."
	       "1f}\n",
	       impl, (double)(after - before) / (double)n, n,
	       model == BATON_CORO_STACKFUL ? stack_kib : 0L, (double)(after - before) / (double)n,
	       (double)(after - before) / (double)n);
	for (long j = 0; j < n; j++)
		baton_coro_destroy(co[j]);
	free(co);
	free(c);
	return 0;
}

static int parse_model(const char *s, enum baton_coro_model *m)
{
	if (strcmp(s, "stackful") == 0)
		*m = BATON_CORO_STACKFUL;
	else if (strcmp(s, "copystack") == 0)
		*m = BATON_CORO_COPYSTACK;
	else
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	enum baton_coro_model model = BATON_CORO_STACKFUL;
	int rss = 0, n_given = 0, shared_fp = 0;
	struct pc_opts o;
	char *rest[16];
	int nrest = 0;

	/* Take --model/--rss here, hand the rest to the shared parser. */
	for (int i = 0; i < argc; i++) {
		if ((strcmp(argv[i], "--model") == 0 || strcmp(argv[i], "--rss") == 0) &&
		    i + 1 < argc) {
			rss |= strcmp(argv[i], "--rss") == 0;
			if (parse_model(argv[++i], &model) != 0) {
				fprintf(stderr,
					"counters-baton: model must be stackful or copystack\n");
				return 2;
			}
		} else if (strcmp(argv[i], "--shared-fpenv") == 0) {
			shared_fp = 1;
		} else if (nrest < 16) {
			n_given |= strcmp(argv[i], "--counters") == 0;
			rest[nrest++] = argv[i];
		}
	}
	pc_parse_args(nrest, rest, &o, rss ? 64 : 16);
	if (rss)
		return measure_rss(model, o.counters, o.stack_kib, n_given);

	{
		struct baton_coro_attr attr = {
			model, model == BATON_CORO_STACKFUL ? (size_t)o.stack_kib * 1024 : 0, NULL,
			shared_fp ? BATON_CORO_SHARED_FPENV : 0
		};
		struct counter *c = calloc((size_t)o.counters, sizeof(*c));
		double *samples = calloc((size_t)o.runs, sizeof(double));
		baton_coro_t **co;
		const char *impl;
		char extra[64];

		if (c == NULL || samples == NULL)
			die("calloc", BATON_ENOMEM);
		co = make_counters(o.counters, &attr, c);
		if (shared_fp && baton_coro_thread_share_fpenv(1) != BATON_OK)
			die("baton_coro_thread_share_fpenv", BATON_EINVAL);
		for (long r = 0; r < o.runs; r++) {
			int64_t t0 = pc_now_ns();

			for (long i = 0; i < o.resumes; i++)
				for (long j = 0; j < o.counters; j++)
					baton_coro_resume(co[j], NULL, NULL);
			samples[r] = (double)(pc_now_ns() - t0) /
				((double)o.resumes * (double)o.counters);
		}
		for (long j = 0; j < o.counters; j++) {
			if (c[j].i != o.runs * o.resumes) {
				fprintf(stderr, "counters-baton: counter %ld is %d, expected %ld\n",
					j, c[j].i, o.runs * o.resumes);
				return 1;
			}
			baton_coro_destroy(co[j]);
		}
#if BATON_BENCH_UCONTEXT
		impl = IMPL_PREFIX "-ucontext";
#else
		if (shared_fp)
			impl = model == BATON_CORO_STACKFUL ? IMPL_PREFIX "-stackful-nofp"
							    : IMPL_PREFIX "-copystack-nofp";
		else
			impl = model == BATON_CORO_STACKFUL ? IMPL_PREFIX "-stackful"
							    : IMPL_PREFIX "-copystack";
#endif
		snprintf(extra, sizeof(extra), "\"stack_kib\":%ld", o.stack_kib);
		pc_report(impl, 0, &o, samples,
			  model == BATON_CORO_STACKFUL && o.stack_kib != 16 ? extra : NULL);
		free(samples);
		free(co);
		free(c);
	}
	return 0;
}
