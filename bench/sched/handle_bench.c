/* SPDX-License-Identifier: MIT */
/*
 * handle-bench: what holding a task costs (baton/sched.h, "tasks you can
 * hold").
 *
 *   handle-bench --impl IMPL [--n N] [--runs R]
 *
 *   spawn-stackful, spawn-copystack          a task spawns N tasks
 *       (baton_sched_spawn) in batches of 64 and yields after each batch,
 *       so that they run and end before the next batch; ns_per_task
 *   spawn-join-stackful, spawn-join-copystack  the same with
 *       baton_task_spawn, joining each task of a batch (the first join
 *       parks; the tasks' ends ready it behind the batch); ns_per_task
 *   hop-plain, hop-held     two tasks pass a token N times over two
 *       unbuffered channels, spawned with baton_sched_spawn (plain waits)
 *       or baton_task_spawn (waits that claim with a compare-and-swap, as
 *       any task an id can cancel); ns_per_hop
 *   group-cancel-stackful, group-cancel-copystack, group-cancel-stackful-2w
 *       N tasks (default 10000) of a group park in a channel receive;
 *       baton_group_close then cancels them and returns when all have
 *       ended; close_ms, the time of that call (2w: the tasks on two
 *       workers, the closer on worker 0)
 *
 * One JSON line per run set (docs/bench-format.md): the median over the
 * runs. One worker unless the impl says 2w. Instruction counts, the main
 * evidence: run under `valgrind --tool=callgrind` at two N and divide the
 * difference (docs/sched.md).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <baton/chan.h>
#include <baton/sched.h>

#define BATCH 64

enum kind { SPAWN, SPAWN_JOIN, HOP_PLAIN, HOP_HELD, GROUP_CANCEL };

static const struct {
	const char *name;
	enum kind kind;
	enum baton_coro_model model;
	unsigned workers;
	const char *metric;
} impls[] = {
	{ "spawn-stackful", SPAWN, BATON_CORO_STACKFUL, 1, "ns_per_task" },
	{ "spawn-join-stackful", SPAWN_JOIN, BATON_CORO_STACKFUL, 1, "ns_per_task" },
	{ "spawn-copystack", SPAWN, BATON_CORO_COPYSTACK, 1, "ns_per_task" },
	{ "spawn-join-copystack", SPAWN_JOIN, BATON_CORO_COPYSTACK, 1, "ns_per_task" },
	{ "hop-plain", HOP_PLAIN, BATON_CORO_STACKFUL, 1, "ns_per_hop" },
	{ "hop-held", HOP_HELD, BATON_CORO_STACKFUL, 1, "ns_per_hop" },
	{ "group-cancel-stackful", GROUP_CANCEL, BATON_CORO_STACKFUL, 1, "close_ms" },
	{ "group-cancel-copystack", GROUP_CANCEL, BATON_CORO_COPYSTACK, 1, "close_ms" },
	{ "group-cancel-stackful-2w", GROUP_CANCEL, BATON_CORO_STACKFUL, 2, "close_ms" },
};

static struct {
	baton_sched_t *s;
	int which;
	long n;
	struct baton_task_attr ta;
	baton_chan_t *a, *b;
	long parked; /* (atomic) */
	double value;
	bool failed;
} B;

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void nop(void *arg)
{
	(void)arg;
}

static int nop_ret(void *arg, void **result)
{
	*result = arg;
	return 0;
}

static void spawner(void *arg)
{
	baton_tid_t ids[BATCH];
	bool join = impls[B.which].kind == SPAWN_JOIN;
	int64_t t0 = now_ns();

	(void)arg;
	for (long done = 0; done < B.n; done += BATCH) {
		for (int i = 0; i < BATCH; i++) {
			int rc = join ? baton_task_spawn(B.s, &B.ta, nop_ret, NULL, &ids[i])
				      : baton_sched_spawn(B.s, &B.ta, nop, NULL);

			B.failed |= rc != BATON_OK;
		}
		if (!join) {
			baton_sched_yield();
			continue;
		}
		for (int i = 0; i < BATCH; i++)
			B.failed |= baton_task_join(ids[i], -1, NULL, NULL) != BATON_OK;
	}
	B.value = (double)(now_ns() - t0) / (double)B.n;
}

static void pinger(void *arg)
{
	int64_t t0 = now_ns();
	void *v;

	(void)arg;
	for (long i = 0; i < B.n; i++) {
		B.failed |= baton_chan_send(B.a, NULL, -1) != BATON_OK;
		B.failed |= baton_chan_recv(B.b, &v, -1) != BATON_OK;
	}
	B.value = (double)(now_ns() - t0) / (double)(2 * B.n);
	baton_chan_close(B.a);
}

static void ponger(void *arg)
{
	void *v;

	(void)arg;
	while (baton_chan_recv(B.a, &v, -1) == BATON_OK)
		baton_chan_send(B.b, NULL, -1);
}

static int pinger_held(void *arg, void **result)
{
	(void)result;
	pinger(arg);
	return 0;
}

static int ponger_held(void *arg, void **result)
{
	(void)result;
	ponger(arg);
	return 0;
}

static int parked_child(void *arg, void **result)
{
	void *v;

	(void)arg;
	(void)result;
	/* Relaxed: a count the closer polls. */
	__atomic_add_fetch(&B.parked, 1, __ATOMIC_RELAXED);
	return baton_chan_recv(B.a, &v, -1) == BATON_ECANCELED ? 0 : 1;
}

static void closer(void *arg)
{
	baton_group_t *g;
	struct baton_task_attr ta = B.ta;
	struct baton_task_end first;
	int64_t t0;

	(void)arg;
	B.parked = 0;
	if (baton_group_create(&g, B.s, 0) != BATON_OK) {
		B.failed = true;
		return;
	}
	for (long i = 0; i < B.n; i++) {
		ta.worker = (int)(i % impls[B.which].workers);
		B.failed |= baton_group_spawn(g, &ta, parked_child, NULL, NULL) != BATON_OK;
	}
	/* Relaxed: see parked_child; then a little time for the last to park. */
	while (__atomic_load_n(&B.parked, __ATOMIC_RELAXED) < B.n)
		baton_sched_sleep(100000);
	baton_sched_sleep(2000000);
	t0 = now_ns();
	B.failed |= baton_group_close(g, &first) != BATON_OK;
	B.value = (double)(now_ns() - t0) / 1e6;
	B.failed |= first.tid != BATON_TID_NONE; /* every child said ECANCELED */
}

static int run_once(double *out)
{
	struct baton_sched_attr sa = BATON_SCHED_ATTR_INIT;
	struct baton_task_attr t0 = BATON_TASK_ATTR_INIT;
	baton_tid_t x, y;
	int rc = -1;

	sa.workers = impls[B.which].workers;
	B.ta = t0;
	B.ta.coro.model = impls[B.which].model;
	B.failed = false;
	if (baton_sched_create(&B.s, &sa) != BATON_OK)
		return -1;
	if (baton_chan_create(&B.a, 0) != BATON_OK || baton_chan_create(&B.b, 0) != BATON_OK)
		goto out;
	t0.worker = 0;
	switch (impls[B.which].kind) {
	case SPAWN:
	case SPAWN_JOIN:
		rc = baton_sched_spawn(B.s, &t0, spawner, NULL);
		break;
	case HOP_PLAIN:
		rc = baton_sched_spawn(B.s, &B.ta, pinger, NULL);
		if (rc == BATON_OK)
			rc = baton_sched_spawn(B.s, &B.ta, ponger, NULL);
		break;
	case HOP_HELD:
		rc = baton_task_spawn(B.s, &B.ta, pinger_held, NULL, &x);
		if (rc == BATON_OK)
			rc = baton_task_spawn(B.s, &B.ta, ponger_held, NULL, &y);
		break;
	case GROUP_CANCEL:
		rc = baton_sched_spawn(B.s, &t0, closer, NULL);
		break;
	}
	if (rc != BATON_OK)
		goto out;
	baton_sched_run(B.s);
	if (impls[B.which].kind == HOP_HELD) {
		baton_task_detach(x);
		baton_task_detach(y);
	}
	if (!B.failed) {
		*out = B.value;
		rc = 0;
	} else {
		rc = -1;
	}
out:
	baton_sched_destroy(B.s);
	baton_chan_destroy(B.a);
	baton_chan_destroy(B.b);
	B.a = B.b = NULL;
	return rc;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void usage(void)
{
	fprintf(stderr, "usage: handle-bench --impl IMPL [--n N] [--runs R]; IMPL:");
	for (size_t i = 0; i < sizeof(impls) / sizeof(impls[0]); i++)
		fprintf(stderr, " %s", impls[i].name);
	fprintf(stderr, "\n");
}

int main(int argc, char **argv)
{
	const char *impl = NULL;
	int runs = 1;

	B.which = -1;
	B.n = 0;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--impl"))
			impl = argv[i + 1];
		else if (!strcmp(argv[i], "--n"))
			B.n = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--runs"))
			runs = atoi(argv[i + 1]);
		else {
			usage();
			return 2;
		}
	}
	for (int i = 0; impl && i < (int)(sizeof(impls) / sizeof(impls[0])); i++)
		if (!strcmp(impl, impls[i].name))
			B.which = i;
	if (B.which < 0 || runs < 1 || (argc - 1) % 2 || B.n < 0) {
		usage();
		return 2;
	}
	if (B.n == 0)
		B.n = impls[B.which].kind == GROUP_CANCEL ? 10000 : 1000000;
	if (impls[B.which].kind <= SPAWN_JOIN)
		B.n = (B.n + BATCH - 1) / BATCH * BATCH;

	double v[runs], s[runs];

	for (int r = 0; r < runs; r++) {
		if (run_once(&v[r]) != 0) {
			fprintf(stderr, "handle-bench: %s: run failed\n", impl);
			return 1;
		}
	}
	memcpy(s, v, sizeof(s));
	qsort(s, (size_t)runs, sizeof(double), cmp_double);
	printf("{\"suite\": \"sched\", \"impl\": \"%s\", \"peer\": false, \"metric\": \"%s\", "
	       "\"value\": %.3f, \"unit\": \"%s\", \"params\": {\"n\": %ld}, \"runs\": %d, "
	       "\"min\": %.3f, \"max\": %.3f, \"samples\": [",
	       impl, impls[B.which].metric,
	       runs % 2 ? s[runs / 2] : (s[runs / 2 - 1] + s[runs / 2]) / 2,
	       impls[B.which].kind == GROUP_CANCEL ? "ms" : "ns", B.n, runs, s[0], s[runs - 1]);
	for (int i = 0; i < runs; i++)
		printf("%s%.3f", i ? ", " : "", v[i]);
	printf("], \"status\": \"ok\"}\n");
	return 0;
}
