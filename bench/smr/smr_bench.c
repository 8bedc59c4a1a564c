/* SPDX-License-Identifier: MIT */
/*
 * bench/smr/smr_bench.c - the `smr` suite: a read-mostly workload for
 * memory reclamation schemes. Readers look up a table of 64 objects (one
 * section: enter, load a slot's pointer, read the object, leave); one
 * writer replaces an object and retires the old one.
 *
 *   smr-bench --impl NAME --metric read|throughput|gp|stall
 *             [--ops N] [--ms T] [--rate R] [--samples S] [--objects K] [--runs R]
 *
 * One source, one program per family (CMake builds each with its define):
 *   smr-bench            baton-sections, baton-hp (baton/smr.h)
 *   smr-bench-urcu-memb  urcu-memb  (liburcu, membarrier flavour)
 *   smr-bench-urcu-qsbr  urcu-qsbr  (readers announce quiescent states)
 *   smr-bench-urcu-mb    urcu-mb    (full fences on the read side)
 *   smr-bench-ck         ck-epoch   (Concurrency Kit's ck_epoch)
 * Each peer as its authors intend: liburcu with _LGPL_SOURCE (the inline
 * read side), every thread registered, call_rcu for deferred frees and
 * synchronize_rcu to wait, a QSBR reader announcing a quiescent state
 * every 1024 sections; ck_epoch with a record per thread, ck_epoch_call
 * and ck_epoch_poll, ck_epoch_synchronize.
 *
 * Metrics (JSON lines, docs/bench-format.md):
 *   read        ns_per_section: one thread, no writer, --ops sections
 *   throughput  reads_per_s: a reader per CPU, the writer retiring --rate
 *               objects per second, for --ms milliseconds
 *   gp          gp_ns_p50, gp_ns_p99: the writer's synchronize, --samples
 *               times, with a reader per CPU but one running
 *   stall       unreclaimed_objects, unreclaimed_bytes: one reader stalls
 *               in a section while the writer retires --objects objects
 *               (without waiting), then 50 ms to reclaim what it can
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(PEER_URCU_MEMB) || defined(PEER_URCU_QSBR) || defined(PEER_URCU_MB)
#define PEER_URCU 1
#define _LGPL_SOURCE
#if defined(PEER_URCU_MEMB)
#include <urcu/urcu-memb.h>
#define FAMILY "urcu-memb"
#define U(x) urcu_memb_##x
#elif defined(PEER_URCU_QSBR)
#include <urcu/urcu-qsbr.h>
#define FAMILY "urcu-qsbr"
#define U(x) urcu_qsbr_##x
#else
#include <urcu/urcu-mb.h>
#define FAMILY "urcu-mb"
#define U(x) urcu_mb_##x
#endif
#include <urcu/pointer.h>
#elif defined(PEER_CK)
#include <ck_epoch.h>
#define FAMILY "ck-epoch"
#elif defined(PEER_MISSING)
#define FAMILY PEER_NAME
#else
#include <baton/smr.h>
#define FAMILY "baton"
#endif

#define SLOTS 64

struct obj {
#if defined(PEER_URCU)
	struct rcu_head head;
#elif defined(PEER_CK)
	ck_epoch_entry_t entry;
#endif
	long key;
	long value;
};

static struct obj *table[SLOTS]; /* (atomic pointers) */
static long live_objs;           /* (atomic) made and not freed */
static int stop;                 /* (atomic) */
static const char *impl_name;
static bool use_hp; /* baton-hp */

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static struct obj *obj_new(long v)
{
	struct obj *o = calloc(1, sizeof(*o));

	if (o == NULL)
		abort();
	o->key = v;
	o->value = v;
	/* Relaxed: a count read after the threads are joined or quiet. */
	__atomic_fetch_add(&live_objs, 1, __ATOMIC_RELAXED);
	return o;
}

static void obj_free(struct obj *o)
{
	__atomic_fetch_sub(&live_objs, 1, __ATOMIC_RELAXED); /* as above */
	free(o);
}

/* --- each family's read side and writer -------------------------------- */

#if defined(PEER_URCU)
static void fam_init(void)
{
}
static void thread_online(void)
{
	U(register_thread)();
}
static void thread_offline(void)
{
	U(unregister_thread)();
}

static long read_section(unsigned slot)
{
	long v;

	U(read_lock)();
	v = rcu_dereference(table[slot])->value;
	U(read_unlock)();
	return v;
}

#define READ_SECTION(slot) read_section(slot)

static void quiescent(void)
{
#if defined(PEER_URCU_QSBR)
	urcu_qsbr_quiescent_state();
#endif
}

static void free_cb(struct rcu_head *h)
{
	obj_free(caa_container_of(h, struct obj, head));
}

static void retire(struct obj *o)
{
	U(call_rcu)(&o->head, free_cb);
}
static void poll_once(void)
{
}
static void synchronize(void)
{
	U(synchronize_rcu)();
}
static void stall_begin(void)
{
	U(read_lock)();
}
static void stall_end(void)
{
	U(read_unlock)();
}
static void writer_drain(void)
{
}
static void fam_fini(void)
{
	U(barrier)();
}

#elif defined(PEER_CK)
static ck_epoch_t epoch;
static __thread ck_epoch_record_t *rec;

static void fam_init(void)
{
	ck_epoch_init(&epoch);
}

static void thread_online(void)
{
	rec = calloc(1, sizeof(*rec));
	if (rec == NULL)
		abort();
	ck_epoch_register(&epoch, rec, NULL);
}

static void thread_offline(void)
{
	ck_epoch_unregister(rec); /* the record stays in the epoch's list */
}

static long read_section(unsigned slot)
{
	long v;

	ck_epoch_begin(rec, NULL);
	v = ck_pr_load_ptr(&table[slot]) == NULL
		? 0
		: ((struct obj *)ck_pr_load_ptr(&table[slot]))->value;
	ck_epoch_end(rec, NULL);
	return v;
}

#define READ_SECTION(slot) read_section(slot)

static void quiescent(void)
{
}

static void free_cb(ck_epoch_entry_t *e)
{
	obj_free((struct obj *)((char *)e - offsetof(struct obj, entry)));
}

static void retire(struct obj *o)
{
	ck_epoch_call(rec, &o->entry, free_cb);
}
static void poll_once(void)
{
	ck_epoch_poll(rec);
}
static void synchronize(void)
{
	ck_epoch_synchronize(rec);
}
static void stall_begin(void)
{
	ck_epoch_begin(rec, NULL);
}
static void stall_end(void)
{
	ck_epoch_end(rec, NULL);
}
static void writer_drain(void)
{
	ck_epoch_barrier(rec);
}
static void fam_fini(void)
{
}

#elif !defined(PEER_MISSING)
static baton_smr_t *dom;
static __thread baton_smr_hp_t *hp;
static __thread int stall_tok;

static void fam_init(void)
{
	if (baton_smr_create(&dom) != BATON_OK)
		abort();
}

static void thread_online(void)
{
	if (use_hp && baton_smr_hp_acquire(dom, &hp) != BATON_OK)
		abort();
}

static void thread_offline(void)
{
	if (use_hp)
		baton_smr_hp_release(hp);
}

static inline long read_hp(unsigned slot)
{
	void *p;
	long v;

	baton_smr_hp_protect(hp, (void *const *)&table[slot], &p);
	v = ((struct obj *)p)->value;
	baton_smr_hp_clear(hp);
	return v;
}

static inline long read_sections(unsigned slot)
{
	baton_smr_t *d = dom;
	int tok = baton_smr_read_lock(d);
	/* Acquire: the object's fields, published before the pointer. */
	long v = __atomic_load_n(&table[slot], __ATOMIC_ACQUIRE)->value;

	baton_smr_read_unlock(d, tok);
	return v;
}

/* One loop per flavour (the flavour is chosen at run time). */
#define READ_SECTION(slot) (use_hp ? read_hp(slot) : read_sections(slot))

static void quiescent(void)
{
}

static void free_cb(void *p)
{
	obj_free(p);
}

static void retire(struct obj *o)
{
	if ((use_hp ? baton_smr_hp_retire : baton_smr_retire)(dom, o, free_cb) != BATON_OK)
		abort();
}

static void poll_once(void)
{
	baton_smr_poll(dom);
}
static void synchronize(void)
{
	baton_smr_synchronize(dom, -1);
}

static void stall_begin(void)
{
	void *p;

	if (use_hp)
		baton_smr_hp_protect(hp, (void *const *)&table[0], &p);
	else
		stall_tok = baton_smr_read_lock(dom);
}

static void stall_end(void)
{
	if (use_hp)
		baton_smr_hp_clear(hp);
	else
		baton_smr_read_unlock(dom, stall_tok);
}

static void writer_drain(void)
{
	baton_smr_barrier(dom, -1);
}
static void fam_fini(void)
{
	baton_smr_barrier(dom, -1);
}
#endif

#ifndef PEER_MISSING
/* The writer's step: a new object in a slot, the old one retired. */
static void replace(unsigned slot, long v)
{
#if defined(PEER_URCU)
	struct obj *old = rcu_xchg_pointer(&table[slot], obj_new(v));
#elif defined(PEER_CK)
	struct obj *old = ck_pr_fas_ptr(&table[slot], obj_new(v));
#else
	/* Acq_rel: publishes the new object, takes the old one's fields. */
	struct obj *old = __atomic_exchange_n(&table[slot], obj_new(v), __ATOMIC_ACQ_REL);
#endif
	retire(old);
}

/* --- the workloads ------------------------------------------------------ */

/* A reading loop, once per value of use_hp, so that each flavour's read
 * side is inlined into a loop of its own (the peers' have one flavour). */
#if defined(PEER_URCU) || defined(PEER_CK)
#define READ_LOOP(...) __VA_ARGS__
#else
#define READ_LOOP(...)                             \
	do {                                       \
		if (use_hp) {                      \
			const bool use_hp = true;  \
			__VA_ARGS__                \
		} else {                           \
			const bool use_hp = false; \
			__VA_ARGS__                \
		}                                  \
	} while (0)
#endif

static uint64_t rng(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static double run_read(long ops)
{
	uint64_t x = 88172645463325252ull;
	volatile long sink = 0;
	int64_t t0;

	thread_online();
	t0 = now_ns();
	READ_LOOP(for (long i = 0; i < ops; i++) {
		sink += READ_SECTION((unsigned)rng(&x) % SLOTS);
		if ((i & 1023) == 0)
			quiescent();
	});
	t0 = now_ns() - t0;
	thread_offline();
	return (double)t0 / (double)ops;
}

struct reader {
	pthread_t th;
	long reads;
	bool stalled;
};

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	uint64_t x = (uint64_t)(uintptr_t)r | 1;
	long n = 0, sink = 0;

	thread_online();
	if (r->stalled) {
		stall_begin();
		/* Relaxed: a stop flag seen eventually. */
		while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
			usleep(1000);
		stall_end();
	} else {
		READ_LOOP(while (!__atomic_load_n(
			&stop, __ATOMIC_RELAXED)) { /* as above */
						    sink += READ_SECTION((unsigned)rng(&x) % SLOTS);
						    if ((++n & 1023) == 0)
							    quiescent();
		});
	}
	r->reads = n + (sink == 42);
	thread_offline();
	return NULL;
}

static int nreaders_start(struct reader *rs, int n, int stalled)
{
	__atomic_store_n(&stop, 0, __ATOMIC_RELAXED); /* before they start */
	for (int i = 0; i < n; i++) {
		rs[i].reads = 0;
		rs[i].stalled = i < stalled;
		if (pthread_create(&rs[i].th, NULL, reader_main, &rs[i]) != 0)
			return -1;
	}
	return 0;
}

static long readers_stop(struct reader *rs, int n)
{
	long total = 0;

	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED); /* seen eventually */
	for (int i = 0; i < n; i++) {
		pthread_join(rs[i].th, NULL);
		total += rs[i].reads;
	}
	return total;
}

/* The writer is a registered thread too (call_rcu and ck_epoch_call want
 * one); between its steps it is quiescent, which a QSBR thread says. */
static void writer_online(void)
{
	thread_online();
}

static void writer_offline(void)
{
	writer_drain();
	thread_offline();
}

static double run_throughput(int ncpu, long ms, long rate)
{
	struct reader rs[256];
	int64_t t0, end, next, step = rate > 0 ? 1000000000 / rate : 0;
	long total, v = SLOTS;

	if (nreaders_start(rs, ncpu, 0) != 0)
		return -1;
	writer_online();
	t0 = now_ns();
	end = t0 + ms * 1000000;
	next = t0;
	while (now_ns() < end) {
		if (step) {
			struct timespec ts = { next / 1000000000, next % 1000000000 };

			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
			next += step;
			replace((unsigned)v % SLOTS, v);
			quiescent();
			if ((++v & 63) == 0)
				poll_once();
		} else {
			usleep(1000);
		}
	}
	total = readers_stop(rs, ncpu);
	t0 = now_ns() - t0;
	writer_offline();
	return (double)total * 1e9 / (double)t0;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static void run_gp(int ncpu, int samples, double *p50, double *p99)
{
	struct reader rs[256];
	int n = ncpu > 1 ? ncpu - 1 : 1;
	int64_t *lat = malloc(sizeof(*lat) * (size_t)samples);

	if (lat == NULL || nreaders_start(rs, n, 0) != 0)
		abort();
	writer_online();
	for (int i = 0; i < samples; i++) {
		int64_t t0;

		replace((unsigned)i % SLOTS, i);
		quiescent();
		t0 = now_ns();
		synchronize();
		lat[i] = now_ns() - t0;
	}
	readers_stop(rs, n);
	writer_offline();
	qsort(lat, (size_t)samples, sizeof(*lat), cmp_i64);
	*p50 = (double)lat[samples / 2];
	*p99 = (double)lat[(int)(0.99 * (samples - 1) + 0.5)];
	free(lat);
}

static long run_stall(long objects)
{
	struct reader rs[1];
	long before = __atomic_load_n(&live_objs, __ATOMIC_RELAXED), held;

	if (nreaders_start(rs, 1, 1) != 0)
		abort();
	usleep(10000); /* the reader is in its section */
	writer_online();
	for (long i = 0; i < objects; i++) {
		replace((unsigned)i % SLOTS, i);
		quiescent();
		if ((i & 63) == 0)
			poll_once();
	}
	usleep(50000); /* time for a reclaiming thread (call_rcu's) */
	poll_once();
	held = __atomic_load_n(&live_objs, __ATOMIC_RELAXED) - before;
	readers_stop(rs, 1);
	writer_offline();
	return held;
}
#endif /* !PEER_MISSING */

/* --- output ----------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static bool is_peer(void)
{
	return strncmp(impl_name, "baton", 5) != 0;
}

static void emit(const char *metric, const char *unit, const char *params, double *v, int runs)
{
	double s[runs];

	memcpy(s, v, sizeof(s));
	qsort(s, (size_t)runs, sizeof(double), cmp_double);
	printf("{\"suite\": \"smr\", \"impl\": \"%s\", \"peer\": %s, \"metric\": \"%s\", "
	       "\"value\": %.3f, \"unit\": \"%s\", \"params\": {%s}, \"runs\": %d, "
	       "\"min\": %.3f, \"max\": %.3f, \"samples\": [",
	       impl_name, is_peer() ? "true" : "false", metric,
	       runs % 2 ? s[runs / 2] : (s[runs / 2 - 1] + s[runs / 2]) / 2, unit, params, runs,
	       s[0], s[runs - 1]);
	for (int i = 0; i < runs; i++)
		printf("%s%.3f", i ? ", " : "", v[i]);
	printf("], \"status\": \"ok\"}\n");
}

static void usage(void)
{
	fprintf(stderr,
		"usage: smr-bench --impl NAME --metric read|throughput|gp|stall\n"
		"                 [--ops N] [--ms T] [--rate R] [--samples S] [--objects K]"
		" [--runs R]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *metric = "read";
	long ops = 20000000, ms = 1000, rate = 10000, objects = 100000;
	int samples = 200, runs = 1;
	int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	char params[160];

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v)
			usage();
		i++;
		if (strcmp(a, "--impl") == 0)
			impl_name = v;
		else if (strcmp(a, "--metric") == 0)
			metric = v;
		else if (strcmp(a, "--ops") == 0)
			ops = atol(v);
		else if (strcmp(a, "--ms") == 0)
			ms = atol(v);
		else if (strcmp(a, "--rate") == 0)
			rate = atol(v);
		else if (strcmp(a, "--samples") == 0)
			samples = atoi(v);
		else if (strcmp(a, "--objects") == 0)
			objects = atol(v);
		else if (strcmp(a, "--runs") == 0)
			runs = atoi(v);
		else
			usage();
	}
	if (impl_name == NULL || runs < 1 || ops < 1 || samples < 1 || ncpu > 256)
		usage();
	if (strcmp(metric, "read") == 0)
		snprintf(params, sizeof(params), "\"ops\": %ld", ops);
	else if (strcmp(metric, "throughput") == 0)
		snprintf(params, sizeof(params), "\"ms\": %ld, \"rate\": %ld, \"readers\": %d", ms,
			 rate, ncpu);
	else if (strcmp(metric, "gp") == 0)
		snprintf(params, sizeof(params), "\"samples\": %d", samples);
	else if (strcmp(metric, "stall") == 0)
		snprintf(params, sizeof(params), "\"objects\": %ld", objects);
	else
		usage();
#if defined(PEER_MISSING)
	printf("{\"suite\": \"smr\", \"impl\": \"%s\", \"peer\": true, \"metric\": \"%s\", "
	       "\"value\": null, \"params\": {%s}, \"runs\": 0, \"status\": \"missing\", "
	       "\"error\": \"%s\"}\n",
	       impl_name, strcmp(metric, "read") == 0 ? "ns_per_section" : metric, params,
	       PEER_MISSING);
	return 0;
#else
	if (strcmp(impl_name, FAMILY) != 0 &&
	    !(strcmp(FAMILY, "baton") == 0 &&
	      (strcmp(impl_name, "baton-sections") == 0 || strcmp(impl_name, "baton-hp") == 0))) {
		fprintf(stderr, "smr-bench: this program runs %s, not %s\n", FAMILY, impl_name);
		return 2;
	}
	use_hp = strcmp(impl_name, "baton-hp") == 0;
	fam_init();
	for (int s = 0; s < SLOTS; s++)
		table[s] = obj_new(s);
	{
		double a[runs], b[runs];

		for (int r = 0; r < runs; r++) {
			if (strcmp(metric, "read") == 0)
				a[r] = run_read(ops);
			else if (strcmp(metric, "throughput") == 0)
				a[r] = run_throughput(ncpu, ms, rate);
			else if (strcmp(metric, "gp") == 0)
				run_gp(ncpu, samples, &a[r], &b[r]);
			else
				a[r] = (double)run_stall(objects);
		}
		if (strcmp(metric, "read") == 0) {
			emit("ns_per_section", "ns", params, a, runs);
		} else if (strcmp(metric, "throughput") == 0) {
			emit("reads_per_s", "reads/s", params, a, runs);
		} else if (strcmp(metric, "gp") == 0) {
			emit("gp_ns_p50", "ns", params, a, runs);
			emit("gp_ns_p99", "ns", params, b, runs);
		} else {
			emit("unreclaimed_objects", "objects", params, a, runs);
			for (int r = 0; r < runs; r++)
				a[r] *= (double)sizeof(struct obj);
			emit("unreclaimed_bytes", "bytes", params, a, runs);
		}
	}
	fam_fini();
	return 0;
#endif
}
