/* SPDX-License-Identifier: MIT */
/*
 * bench/ec/ec_bench.c - the `ec` suite: the cost of an event-count increment
 * with nobody waiting, and the latency from an increment to the sleeper
 * running again, for baton's event counts, Concurrency Kit's ck_ec32 and two
 * baselines (a plain and an atomic increment of a counter).
 *
 *   ec-bench --impl baton-sp|baton-mp|ck-sp|ck-mp|plain-inc|atomic-inc|ck64-sp|ck64-mp
 *            [--metric inc|wake] [--ops N] [--samples S] [--runs R]
 *
 * ck64-* (ck_ec64) do only --metric inc: they are there for the seed's
 * ck_ec64 figures.
 *
 * Prints JSON lines (docs/bench-format.md): metric ns_per_op for inc,
 * wake_ns_p50 and wake_ns_p99 for wake.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <baton/ec.h>

#ifdef BATON_BENCH_HAVE_CK
#include <ck_ec.h>
#endif

enum impl { BATON_SP, BATON_MP, CK_SP, CK_MP, PLAIN_INC, ATOMIC_INC, CK64_SP, CK64_MP };

static const char *const impl_names[] = {
	"baton-sp", "baton-mp", "ck-sp", "ck-mp", "plain-inc", "atomic-inc", "ck64-sp", "ck64-mp",
};

static bool is_ck(int impl)
{
	return impl == CK_SP || impl == CK_MP || impl == CK64_SP || impl == CK64_MP;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void cpu_relax(void)
{
#if defined(__x86_64__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield" ::: "memory");
#endif
}

/* --- Concurrency Kit's ops: futex wait/wake and the clock ------------------ */

#ifdef BATON_BENCH_HAVE_CK
static int ck_gettime(const struct ck_ec_ops *ops, struct timespec *out)
{
	(void)ops;
	return clock_gettime(CLOCK_MONOTONIC, out);
}

static void ck_wait32(const struct ck_ec_wait_state *st, const uint32_t *addr, uint32_t expected,
		      const struct timespec *deadline)
{
	(void)st;
	/* absolute CLOCK_MONOTONIC deadline: FUTEX_WAIT_BITSET takes it as is */
	syscall(SYS_futex, addr, FUTEX_WAIT_BITSET_PRIVATE, expected, deadline, NULL,
		FUTEX_BITSET_MATCH_ANY);
}

static void ck_wake32(const struct ck_ec_ops *ops, const uint32_t *addr)
{
	(void)ops;
	syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

static void ck_wait64(const struct ck_ec_wait_state *st, const uint64_t *addr, uint64_t expected,
		      const struct timespec *deadline)
{
	ck_wait32(st, (const uint32_t *)addr, (uint32_t)expected, deadline);
}

static void ck_wake64(const struct ck_ec_ops *ops, const uint64_t *addr)
{
	ck_wake32(ops, (const uint32_t *)addr);
}

static const struct ck_ec_ops ck_ops = {
	.gettime = ck_gettime,
	.wait32 = ck_wait32,
	.wait64 = ck_wait64,
	.wake32 = ck_wake32,
	.wake64 = ck_wake64,
};
static const struct ck_ec_mode ck_mode_sp = { .ops = &ck_ops, .single_producer = true };
static const struct ck_ec_mode ck_mode_mp = { .ops = &ck_ops, .single_producer = false };
#endif

/* --- the increment loops ----------------------------------------------------
 *
 * Every loop gets its counter through a pointer parameter of a function the
 * compiler may neither inline nor specialise (noipa), so it cannot prove
 * the memory private and must do every increment in memory, and baton's
 * NULL check stays in as in real use. Each iteration also ends with the
 * same empty asm with a "memory" clobber, for every impl: it emits no
 * instruction, but forbids merging or hoisting increments across
 * iterations; baton's and ck's increments carry that clobber themselves,
 * so the barrier makes the baselines play by the same rule. The plain
 * baseline is a volatile `word++` (load, add, store).
 */
#define BARRIER() __asm__ volatile("" ::: "memory")
#define LOOP __attribute__((noipa))

static LOOP void loop_baton_sp(baton_ec_t *ec, long n)
{
	for (long i = 0; i < n; i++) {
		baton_ec_inc_sp(ec);
		BARRIER();
	}
}

static LOOP void loop_baton_mp(baton_ec_t *ec, long n)
{
	for (long i = 0; i < n; i++) {
		baton_ec_inc(ec);
		BARRIER();
	}
}

#ifdef BATON_BENCH_HAVE_CK
static LOOP void loop_ck_sp(struct ck_ec32 *ec, long n)
{
	for (long i = 0; i < n; i++) {
		ck_ec32_inc(ec, &ck_mode_sp);
		BARRIER();
	}
}

static LOOP void loop_ck_mp(struct ck_ec32 *ec, long n)
{
	for (long i = 0; i < n; i++) {
		ck_ec32_inc(ec, &ck_mode_mp);
		BARRIER();
	}
}
#endif

/* ck_ec64 (flag in bit 0, the seed's other figures), where ck has it */
#if defined(BATON_BENCH_HAVE_CK) && defined(CK_F_EC64)
#define HAVE_CK64 1
static LOOP void loop_ck64(struct ck_ec64 *ec, long n, bool sp)
{
	if (sp) {
		for (long i = 0; i < n; i++) {
			ck_ec64_inc(ec, &ck_mode_sp);
			BARRIER();
		}
	} else {
		for (long i = 0; i < n; i++) {
			ck_ec64_inc(ec, &ck_mode_mp);
			BARRIER();
		}
	}
}
#endif

static LOOP void loop_plain(volatile uint32_t *w, long n)
{
	for (long i = 0; i < n; i++) {
		(*w)++;
		BARRIER();
	}
}

static volatile uint32_t atomic_sink; /* keeps the fetched values alive */

static LOOP void loop_atomic(uint32_t *w, long n)
{
	uint32_t acc = 0;

	for (long i = 0; i < n; i++) {
		/* relaxed: a baseline for the instruction (lock xadd), no data;
		 * the result is used so the compiler keeps xadd, not lock add */
		acc |= __atomic_fetch_add(w, 1, __ATOMIC_RELAXED);
		BARRIER();
	}
	atomic_sink = acc;
}

/* One word per impl, each on its own cache line. */
static union {
	baton_ec_t baton;
#ifdef BATON_BENCH_HAVE_CK
	struct ck_ec32 ck;
#endif
#ifdef HAVE_CK64
	struct ck_ec64 ck64;
#endif
	uint32_t word;
	char pad[64];
} counter __attribute__((aligned(64)));

static double run_inc(enum impl impl, long ops)
{
	int64_t t0, t1;

	memset(&counter, 0, sizeof(counter));
	t0 = now_ns();
	switch (impl) {
	case BATON_SP:
		loop_baton_sp(&counter.baton, ops);
		break;
	case BATON_MP:
		loop_baton_mp(&counter.baton, ops);
		break;
#ifdef BATON_BENCH_HAVE_CK
	case CK_SP:
		loop_ck_sp(&counter.ck, ops);
		break;
	case CK_MP:
		loop_ck_mp(&counter.ck, ops);
		break;
#else
	case CK_SP:
	case CK_MP:
		break;
#endif
#ifdef HAVE_CK64
	case CK64_SP:
		loop_ck64(&counter.ck64, ops, true);
		break;
	case CK64_MP:
		loop_ck64(&counter.ck64, ops, false);
		break;
#else
	case CK64_SP:
	case CK64_MP:
		break;
#endif
	case PLAIN_INC:
		loop_plain(&counter.word, ops);
		break;
	case ATOMIC_INC:
		loop_atomic(&counter.word, ops);
		break;
	}
	t1 = now_ns();
	return (double)(t1 - t0) / (double)ops;
}

/* --- wake-up latency --------------------------------------------------------
 *
 * A sleeper thread waits for the next version; the producer waits until the
 * sleepers flag is set, gives the sleeper 200 us to get into FUTEX_WAIT,
 * takes a timestamp and increments; the sleeper takes one as soon as its
 * wait returns. CLOCK_MONOTONIC is one clock for both CPUs.
 */
struct wake {
	enum impl impl;
	int samples;
	int64_t *lat;
	int64_t t_inc; /* written by the producer before the inc */
	uint32_t done; /* samples the sleeper has finished */
	int cpu;
};

static bool has_waiters(enum impl impl)
{
#ifdef BATON_BENCH_HAVE_CK
	if (impl == CK_SP || impl == CK_MP)
		return ck_ec32_has_waiters(&counter.ck);
#endif
	(void)impl;
	return baton_ec_has_waiters(&counter.baton);
}

static void pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set); /* best effort */
}

static void *sleeper(void *arg)
{
	struct wake *w = arg;

	pin(w->cpu);
	for (int i = 0; i < w->samples; i++) {
		int64_t t;

		switch (w->impl) {
		case BATON_SP:
		case BATON_MP:
			/* baton_ec_wait: what the scheduler's idle workers use */
			baton_ec_wait(&counter.baton, (uint32_t)i, -1);
			break;
#ifdef BATON_BENCH_HAVE_CK
		case CK_SP:
			ck_ec32_wait(&counter.ck, &ck_mode_sp, (uint32_t)i, NULL);
			break;
		case CK_MP:
			ck_ec32_wait(&counter.ck, &ck_mode_mp, (uint32_t)i, NULL);
			break;
#endif
		default:
			break;
		}
		t = now_ns();
		/* acquire: t_inc was written before the increment we woke on */
		w->lat[i] = t - __atomic_load_n(&w->t_inc, __ATOMIC_ACQUIRE);
		/* release: the sample is written before the producer reads it */
		__atomic_store_n(&w->done, (uint32_t)i + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static int run_wake(enum impl impl, int samples, double *p50, double *p99)
{
	struct wake w = { impl, samples, calloc((size_t)samples, sizeof(int64_t)), 0, 0, -1 };
	struct timespec settle = { 0, 200000 };
	pthread_t th;
	bool two = sysconf(_SC_NPROCESSORS_ONLN) >= 2;

	if (!w.lat)
		return -1;
	memset(&counter, 0, sizeof(counter));
	if (two)
		w.cpu = 1;
	if (pthread_create(&th, NULL, sleeper, &w) != 0)
		return -1;
	if (two)
		pin(0);
	for (int i = 0; i < samples; i++) {
		/* acquire: the sleeper finished sample i-1 and is waiting again */
		while (__atomic_load_n(&w.done, __ATOMIC_ACQUIRE) != (uint32_t)i)
			cpu_relax();
		while (!has_waiters(impl))
			cpu_relax();
		nanosleep(&settle, NULL);
		/* relaxed store; the increment below is the release for it */
		__atomic_store_n(&w.t_inc, now_ns(), __ATOMIC_RELAXED);
		switch (impl) {
		case BATON_SP:
			baton_ec_inc_sp(&counter.baton);
			break;
		case BATON_MP:
			baton_ec_inc(&counter.baton);
			break;
#ifdef BATON_BENCH_HAVE_CK
		case CK_SP:
			ck_ec32_inc(&counter.ck, &ck_mode_sp);
			break;
		case CK_MP:
			ck_ec32_inc(&counter.ck, &ck_mode_mp);
			break;
#endif
		default:
			break;
		}
	}
	pthread_join(th, NULL);
	qsort(w.lat, (size_t)samples, sizeof(int64_t), cmp_i64);
	*p50 = (double)w.lat[samples / 2];
	*p99 = (double)w.lat[(size_t)samples * 99 / 100];
	free(w.lat);
	return 0;
}

/* --- output ----------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void emit(enum impl impl, const char *metric, const char *params, double *v, int runs)
{
	double s[runs];

	memcpy(s, v, sizeof(s));
	qsort(s, (size_t)runs, sizeof(double), cmp_double);
	printf("{\"suite\": \"ec\", \"impl\": \"%s\", \"peer\": %s, \"metric\": \"%s\", "
	       "\"value\": %.4f, \"unit\": \"ns\", \"params\": {%s}, \"runs\": %d, "
	       "\"min\": %.4f, \"max\": %.4f, \"samples\": [",
	       impl_names[impl], is_ck(impl) ? "true" : "false", metric,
	       runs % 2 ? s[runs / 2] : (s[runs / 2 - 1] + s[runs / 2]) / 2, params, runs, s[0],
	       s[runs - 1]);
	for (int i = 0; i < runs; i++)
		printf("%s%.4f", i ? ", " : "", v[i]);
	printf("], \"status\": \"ok\"}\n");
}

/* unused when every peer was found */
static __attribute__((unused)) void emit_missing(enum impl impl, const char *metric,
						 const char *params, const char *why)
{
	printf("{\"suite\": \"ec\", \"impl\": \"%s\", \"peer\": true, \"metric\": \"%s\", "
	       "\"value\": null, \"unit\": \"ns\", \"params\": {%s}, \"runs\": 0, "
	       "\"status\": \"missing\", \"error\": \"%s\"}\n",
	       impl_names[impl], metric, params, why);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: ec-bench --impl "
		"baton-sp|baton-mp|ck-sp|ck-mp|plain-inc|atomic-inc|ck64-sp|ck64-mp\n"
		"                [--metric inc|wake] [--ops N] [--samples S] [--runs R]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int impl = -1, runs = 1, samples = 2000;
	long ops = 100000000;
	bool wake = false;
	char params[128];

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v)
			usage();
		i++;
		if (!strcmp(a, "--impl")) {
			for (int k = 0; k < (int)(sizeof(impl_names) / sizeof(*impl_names)); k++)
				if (!strcmp(v, impl_names[k]))
					impl = k;
		} else if (!strcmp(a, "--runs")) {
			runs = atoi(v);
		} else if (!strcmp(a, "--ops")) {
			ops = atol(v);
		} else if (!strcmp(a, "--samples")) {
			samples = atoi(v);
		} else if (!strcmp(a, "--metric")) {
			if (!strcmp(v, "wake"))
				wake = true;
			else if (strcmp(v, "inc"))
				usage();
		} else {
			usage();
		}
	}
	if (impl < 0 || runs < 1 || runs > 1000 || ops < 1 || samples < 100)
		usage();
	if (wake &&
	    (impl == PLAIN_INC || impl == ATOMIC_INC || impl == CK64_SP || impl == CK64_MP)) {
		fprintf(stderr, "ec-bench: %s has no sleeper to wake; it only does --metric inc\n",
			impl_names[impl]);
		return 2;
	}
	if (wake)
		snprintf(params, sizeof(params), "\"samples\": %d", samples);
	else
		snprintf(params, sizeof(params), "\"ops\": %ld", ops);
#ifndef BATON_BENCH_HAVE_CK
	if (is_ck(impl)) {
		const char *why = "ck_ec.h (Concurrency Kit, libck-dev) was not found when "
				  "ec-bench was built";

		if (wake) {
			emit_missing(impl, "wake_ns_p50", params, why);
			emit_missing(impl, "wake_ns_p99", params, why);
		} else {
			emit_missing(impl, "ns_per_op", params, why);
		}
		return 0;
	}
#elif !defined(HAVE_CK64)
	if (impl == CK64_SP || impl == CK64_MP) {
		emit_missing(impl, "ns_per_op", params, "this ck has no ck_ec64 (CK_F_EC64)");
		return 0;
	}
#endif
	if (wake) {
		double p50[runs], p99[runs];

		for (int r = 0; r < runs; r++) {
			if (run_wake(impl, samples, &p50[r], &p99[r]) != 0) {
				fprintf(stderr, "ec-bench: cannot start the sleeper: %s\n",
					strerror(errno));
				return 1;
			}
		}
		emit(impl, "wake_ns_p50", params, p50, runs);
		emit(impl, "wake_ns_p99", params, p99, runs);
	} else {
		double v[runs];

		run_inc(impl, ops < 1000000 ? ops : 1000000); /* warm up */
		for (int r = 0; r < runs; r++)
			v[r] = run_inc(impl, ops);
		emit(impl, "ns_per_op", params, v, runs);
	}
	return 0;
}
