/* SPDX-License-Identifier: MIT */
/*
 * bench/seq/seq_harness.c - the four ways of calling foo(x) in a runtime
 * owned by one stack, the timing loops and the JSON lines (see
 * seq_harness.h for the contract and the command line).
 *
 *   plain     the main thread initialised the runtime and calls it directly
 *   pipe      a dispatcher thread owns the runtime; a caller writes a pointer
 *             to its request into a UNIX pipe and reads the answer back from
 *             its own pipe (the seed's cncb, without its marshalling)
 *   ucontext  a dedicated stack made with makecontext; a caller takes a
 *             pthread mutex and swapcontext()s onto it and back
 *   baton     baton_seq_call() with combining batch K
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <baton/seq.h>

#include "seq_harness.h"

#define SAMPLE_EVERY 16
#define MAX_THREADS 64

enum variant { V_PLAIN, V_PIPE, V_UCONTEXT, V_BATON };
static const char *const variant_names[] = { "plain", "pipe", "ucontext", "baton" };

static const struct seq_runtime *rt;
static enum variant variant = V_BATON;
static long calls = 1000000, runs = 1, threads = 1, k = 16;

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "seq-%s: %s\n", rt ? rt->name : "?", what);
	exit(1);
}

static size_t stack_size(void)
{
	return rt->stack_size ? rt->stack_size : 1024 * 1024;
}

/* ---- pipe ------------------------------------------------------------------- */

struct pipe_req {
	long x, r;
	int reply_fd;
};

static int pipe_req_fd[2];
static int pipe_init_rc = -1;
static pthread_t dispatcher;
static pthread_mutex_t pipe_init_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pipe_init_cv = PTHREAD_COND_INITIALIZER;
static int pipe_init_done;

static void *dispatch(void *arg)
{
	struct pipe_req *q;

	(void)arg;
	pthread_mutex_lock(&pipe_init_mu);
	pipe_init_rc = rt->init();
	pipe_init_done = 1;
	pthread_cond_signal(&pipe_init_cv);
	pthread_mutex_unlock(&pipe_init_mu);
	if (pipe_init_rc != 0)
		return NULL;
	while (read(pipe_req_fd[0], &q, sizeof(q)) == sizeof(q)) {
		if (q == NULL)
			break;
		q->r = rt->call_foo(q->x);
		if (write(q->reply_fd, &q, sizeof(q)) != sizeof(q))
			die("pipe: write reply");
	}
	if (rt->fini)
		rt->fini();
	return NULL;
}

/* Each calling thread has its own reply pipe. */
static __thread int reply_fd[2] = { -1, -1 };

static long call_pipe(long x)
{
	struct pipe_req req = { x, 0, 0 }, *q = &req;

	if (reply_fd[0] < 0 && pipe(reply_fd) != 0)
		die("pipe()");
	req.reply_fd = reply_fd[1];
	if (write(pipe_req_fd[1], &q, sizeof(q)) != sizeof(q) ||
	    read(reply_fd[0], &q, sizeof(q)) != sizeof(q))
		die("pipe: request");
	return req.r;
}

/* ---- ucontext ----------------------------------------------------------------- */

static ucontext_t uc_runtime, *uc_caller;
static pthread_mutex_t uc_mu = PTHREAD_MUTEX_INITIALIZER;
static long uc_x, uc_r;
static int uc_init_rc;

static void uc_loop(void)
{
	uc_init_rc = rt->init();
	for (;;) {
		swapcontext(&uc_runtime, uc_caller);
		uc_r = rt->call_foo(uc_x);
	}
}

static void uc_setup(void)
{
	ucontext_t me;
	void *stack = mmap(NULL, stack_size(), PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);

	if (stack == MAP_FAILED || getcontext(&uc_runtime) != 0)
		die("ucontext: stack");
	uc_runtime.uc_stack.ss_sp = stack;
	uc_runtime.uc_stack.ss_size = stack_size();
	uc_runtime.uc_link = NULL;
	makecontext(&uc_runtime, uc_loop, 0);
	uc_caller = &me;
	swapcontext(&me, &uc_runtime);
	if (uc_init_rc != 0)
		die("runtime init failed");
}

static long call_ucontext(long x)
{
	ucontext_t me;
	long r;

	pthread_mutex_lock(&uc_mu);
	uc_x = x;
	uc_caller = &me;
	swapcontext(&me, &uc_runtime);
	r = uc_r;
	pthread_mutex_unlock(&uc_mu);
	return r;
}

/* ---- baton ------------------------------------------------------------------- */

static baton_seq_t *seq;
static int seq_init_rc;

static void *seq_init(void *arg)
{
	(void)arg;
	seq_init_rc = rt->init();
	return NULL;
}

static void *seq_foo(void *arg)
{
	return (void *)(intptr_t)rt->call_foo((long)(intptr_t)arg);
}

static void *seq_fini(void *arg)
{
	(void)arg;
	rt->fini();
	return NULL;
}

static long call_baton(long x)
{
	void *r;

	baton_seq_call(seq, seq_foo, (void *)(intptr_t)x, &r);
	return (long)(intptr_t)r;
}

/* ---- the loops ----------------------------------------------------------------- */

static long call_plain(long x)
{
	return rt->call_foo(x);
}

static long (*call)(long x);

struct thread_result {
	int64_t t0, t1;
	int64_t *lat; /* sampled latencies */
	long nlat;
	long bad;
	pthread_t tid;
};

static pthread_barrier_t start_barrier;
static int64_t clock_cost;

/* Throughput: N calls, only the ends timed. */
static void loop_plain(struct thread_result *tr, long base)
{
	long bad = 0;

	tr->t0 = now_ns();
	for (long i = 0; i < calls; i++) {
		long x = base + i;

		bad += call(x) != x + 100;
	}
	tr->t1 = now_ns();
	tr->bad += bad;
}

/* Latency: N calls, every SAMPLE_EVERY-th timed on its own. */
static void loop_sampled(struct thread_result *tr, long base)
{
	long bad = 0, n = 0;

	for (long i = 0; i < calls; i++) {
		long x = base + i;

		if (i % SAMPLE_EVERY == 0) {
			int64_t a = now_ns(), b;

			bad += call(x) != x + 100;
			b = now_ns();
			tr->lat[n++] = b - a - clock_cost;
		} else {
			bad += call(x) != x + 100;
		}
	}
	tr->nlat = n;
	tr->bad += bad;
}

static struct thread_result tres[MAX_THREADS];

static void *thread_main(void *arg)
{
	struct thread_result *tr = arg;
	long base = (long)(tr - tres) * 100000000L;

	pthread_barrier_wait(&start_barrier);
	loop_plain(tr, base);
	pthread_barrier_wait(&start_barrier);
	loop_sampled(tr, base);
	return NULL;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void calibrate_clock(void)
{
	int64_t d[1001];

	for (int i = 0; i < 1001; i++) {
		int64_t a = now_ns();

		d[i] = now_ns() - a;
	}
	qsort(d, 1001, sizeof(d[0]), cmp_i64);
	clock_cost = d[500];
}

/* One run: returns ns_per_op, calls_per_s, p50, p99 in m[0..3]. */
static void one_run(double m[4])
{
	long nlat = (calls + SAMPLE_EVERY - 1) / SAMPLE_EVERY, total = 0;
	int64_t t0 = INT64_MAX, t1 = INT64_MIN, *all;
	long bad = 0;

	for (long t = 0; t < threads; t++) {
		tres[t].lat = malloc((size_t)nlat * sizeof(int64_t));
		tres[t].bad = 0;
		if (tres[t].lat == NULL)
			die("out of memory");
	}
	if (threads == 1) {
		loop_plain(&tres[0], 0);
		loop_sampled(&tres[0], 0);
	} else {
		pthread_barrier_init(&start_barrier, NULL, (unsigned)threads);
		for (long t = 0; t < threads; t++)
			if (pthread_create(&tres[t].tid, NULL, thread_main, &tres[t]) != 0)
				die("pthread_create");
		for (long t = 0; t < threads; t++)
			pthread_join(tres[t].tid, NULL);
		pthread_barrier_destroy(&start_barrier);
	}
	for (long t = 0; t < threads; t++) {
		t0 = tres[t].t0 < t0 ? tres[t].t0 : t0;
		t1 = tres[t].t1 > t1 ? tres[t].t1 : t1;
		total += tres[t].nlat;
		bad += tres[t].bad;
	}
	if (bad)
		die("wrong results from foo");
	all = malloc((size_t)total * sizeof(int64_t));
	if (all == NULL)
		die("out of memory");
	total = 0;
	for (long t = 0; t < threads; t++) {
		memcpy(all + total, tres[t].lat, (size_t)tres[t].nlat * sizeof(int64_t));
		total += tres[t].nlat;
		free(tres[t].lat);
	}
	qsort(all, (size_t)total, sizeof(int64_t), cmp_i64);
	m[0] = (double)(t1 - t0) / ((double)calls * (double)threads);
	m[1] = (double)calls * (double)threads * 1e9 / (double)(t1 - t0);
	m[2] = (double)all[total / 2];
	m[3] = (double)all[(long)((double)total * 0.99)];
	if (m[2] < 0)
		m[2] = 0;
	if (m[3] < 0)
		m[3] = 0;
	free(all);
}

static void report(const char *metric, const char *unit, double *v)
{
	double *s = malloc((size_t)runs * sizeof(double));

	if (s == NULL)
		die("out of memory");
	memcpy(s, v, (size_t)runs * sizeof(double));
	qsort(s, (size_t)runs, sizeof(double), cmp_dbl);
	printf("{\"suite\":\"seq\",\"impl\":\"%s-%s\",\"peer\":%s,\"metric\":\"%s\","
	       "\"value\":%.6g,\"unit\":\"%s\",\"params\":{\"threads\":%ld,\"k\":%ld},"
	       "\"runs\":%ld,\"min\":%.6g,\"max\":%.6g,\"samples\":[",
	       rt->name, variant_names[variant],
	       variant == V_PIPE || variant == V_UCONTEXT ? "true" : "false", metric,
	       runs % 2 ? s[runs / 2] : (s[runs / 2 - 1] + s[runs / 2]) / 2, unit, threads,
	       variant == V_BATON ? k : 0L, runs, s[0], s[runs - 1]);
	for (long r = 0; r < runs; r++)
		printf("%s%.6g", r ? "," : "", v[r]);
	printf("]}\n");
	free(s);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: seq-%s [--variant plain|pipe|ucontext|baton] [--threads T] [--k K]\n"
		"              [--calls N] [--runs R]\n"
		"  calls foo(x) = x + 100 in the %s runtime N times per thread per run\n"
		"  (defaults: baton, T = 1, K = 16, N = 1000000, R = 1); prints JSON lines\n"
		"  (docs/bench-format.md): ns_per_op, calls_per_s, p50_ns, p99_ns\n",
		rt->name, rt->name);
}

static long parse(const char *s, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = s ? strtol(s, &end, 10) : 0;
	if (s == NULL || errno || *end || end == s || v < min || v > max) {
		usage();
		exit(2);
	}
	return v;
}

int seq_harness_main(int argc, char **argv, const struct seq_runtime *runtime)
{
	double *m[4];

	rt = runtime;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--help") == 0) {
			usage();
			return 0;
		} else if (strcmp(a, "--variant") == 0 && v) {
			int found = 0;

			for (int j = 0; j < 4; j++)
				if (strcmp(v, variant_names[j]) == 0) {
					variant = (enum variant)j;
					found = 1;
				}
			if (!found) {
				usage();
				return 2;
			}
		} else if (strcmp(a, "--threads") == 0) {
			threads = parse(v, 1, MAX_THREADS);
		} else if (strcmp(a, "--k") == 0) {
			k = parse(v, 0, UINT_MAX);
		} else if (strcmp(a, "--calls") == 0) {
			calls = parse(v, 1, 1000000000L);
		} else if (strcmp(a, "--runs") == 0) {
			runs = parse(v, 1, 1000);
		} else {
			usage();
			return 2;
		}
		i++;
	}
	if (variant == V_PLAIN && threads > 1) {
		fprintf(stderr, "seq-%s: the plain variant has only the owning thread\n", rt->name);
		return 2;
	}

	switch (variant) {
	case V_PLAIN:
		if (rt->init() != 0)
			die("runtime init failed");
		call = call_plain;
		break;
	case V_PIPE:
		if (pipe(pipe_req_fd) != 0 ||
		    pthread_create(&dispatcher, NULL, dispatch, NULL) != 0)
			die("pipe: set-up");
		pthread_mutex_lock(&pipe_init_mu);
		while (!pipe_init_done)
			pthread_cond_wait(&pipe_init_cv, &pipe_init_mu);
		pthread_mutex_unlock(&pipe_init_mu);
		if (pipe_init_rc != 0)
			die("runtime init failed");
		call = call_pipe;
		break;
	case V_UCONTEXT:
		uc_setup();
		call = call_ucontext;
		break;
	case V_BATON: {
		struct baton_seq_attr attr = BATON_SEQ_ATTR_INIT;
		int rc;

		attr.stack_size = stack_size();
		attr.batch = (unsigned)k;
		attr.init = seq_init;
		attr.name = rt->name;
		rc = baton_seq_create(&seq, &attr);
		if (rc != BATON_OK) {
			fprintf(stderr, "seq-%s: baton_seq_create: %s\n", rt->name,
				baton_strerror(rc));
			return 1;
		}
		if (seq_init_rc != 0)
			die("runtime init failed");
		call = call_baton;
		break;
	}
	}

	calibrate_clock();
	for (int j = 0; j < 4; j++)
		if ((m[j] = calloc((size_t)runs, sizeof(double))) == NULL)
			die("out of memory");
	/* one untimed warm-up pass of a tenth of the calls */
	{
		long saved = calls;
		struct thread_result w = { 0 };

		calls = saved / 10 + 1;
		loop_plain(&w, 0);
		calls = saved;
	}
	for (long r = 0; r < runs; r++) {
		double v[4];

		one_run(v);
		for (int j = 0; j < 4; j++)
			m[j][r] = v[j];
	}
	report("ns_per_op", "ns", m[0]);
	report("calls_per_s", "calls/s", m[1]);
	report("p50_ns", "ns", m[2]);
	report("p99_ns", "ns", m[3]);
	fflush(stdout);

	switch (variant) {
	case V_PIPE: {
		struct pipe_req *q = NULL;

		if (write(pipe_req_fd[1], &q, sizeof(q)) == sizeof(q))
			pthread_join(dispatcher, NULL);
		break;
	}
	case V_BATON: {
		struct baton_seq_stats st;

		/* how the calls were run, for reading the contention table */
		if (baton_seq_stats(seq, &st) == BATON_OK && st.calls)
			fprintf(stderr,
				"seq-%s: threads %ld k %ld: %llu calls, %.1f%% combined, "
				"%llu switches, %llu sleeps\n",
				rt->name, threads, k, (unsigned long long)st.calls,
				100.0 * (double)st.combined / (double)st.calls,
				(unsigned long long)st.switches, (unsigned long long)st.sleeps);
		if (rt->fini)
			baton_seq_call(seq, seq_fini, NULL, NULL);
		baton_seq_destroy(seq);
		break;
	}
	case V_PLAIN:
		if (rt->fini)
			rt->fini();
		break;
	case V_UCONTEXT:
		break;
	}
	return 0;
}
