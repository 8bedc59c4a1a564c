/* SPDX-License-Identifier: MIT */
/*
 * stage-bench: the cost of handing an item to a stage's handler, per item.
 *
 *   --impl runner-1w   one worker: a task submits, the stage's handler
 *                      tasks (long-lived runners) handle, on the same thread
 *   --impl runner-2w   two workers: the submitter on worker 0, the stage's
 *                      handlers bound to worker 1 (the server's I/O and
 *                      compute split); every item crosses threads
 *   --impl spawn-1w    the baseline a stage replaces: one task spawned per
 *                      item on one worker
 *   --impl spawn-copystack-1w   the same with copy-stack tasks, which never
 *                      block: spawn, run to the end and free
 *   --impl pass-1w     no hand-off: the task passes through a gate
 *                      (enter, count, leave) per item, as a connection
 *                      task does through the server's steps
 *
 * The handler does nothing but count, so the figure is the hand-off. The
 * submitter keeps the queue busy (submit waits when it is full). One JSON
 * line (docs/bench-format.md): the median ns per item over --runs runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <baton/sched.h>
#include <baton/stage.h>

static long items = 1000000;
static long done;

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void count(void *item, void *ctx)
{
	(void)item;
	(void)ctx;
	/* Relaxed: read after the run. */
	__atomic_add_fetch(&done, 1, __ATOMIC_RELAXED);
}

static void count_task(void *arg)
{
	count(arg, NULL);
}

static void submitter(void *arg)
{
	baton_stage_t *st = arg;

	for (long i = 0; i < items; i++)
		if (baton_stage_submit(st, NULL, -1) != BATON_OK)
			abort();
	baton_stage_close(st);
	baton_stage_drain(st, -1);
}

static void passer(void *arg)
{
	baton_gate_t *g = arg;

	for (long i = 0; i < items; i++) {
		struct baton_gate_pass p = BATON_GATE_PASS_INIT;

		if (baton_gate_enter(g, &p, -1) != BATON_OK)
			abort();
		count(NULL, NULL);
		baton_gate_leave(&p, NULL);
	}
}

static struct baton_task_attr item_attr = BATON_TASK_ATTR_INIT;

static void spawner(void *arg)
{
	baton_sched_t *s = arg;

	for (long i = 0; i < items; i++) {
		if (baton_sched_spawn(s, &item_attr, count_task, NULL) != BATON_OK)
			abort();
		if (i % 64 == 63)
			baton_sched_yield(); /* let them run, as a queue would */
	}
}

/* One timed run: ns per item. */
static double run_once(const char *impl)
{
	struct baton_sched_attr sa = BATON_SCHED_ATTR_INIT;
	struct baton_task_attr ta = BATON_TASK_ATTR_INIT;
	baton_sched_t *s;
	baton_stage_t *st = NULL;
	baton_gate_t *g = NULL;
	int64_t t0;

	sa.workers = strcmp(impl, "runner-2w") == 0 ? 2 : 1;
	if (baton_sched_create(&s, &sa) != BATON_OK)
		abort();
	done = 0;
	if (strncmp(impl, "spawn-", 6) == 0) {
		if (strcmp(impl, "spawn-copystack-1w") == 0)
			item_attr.coro.model = BATON_CORO_COPYSTACK;
		if (baton_sched_spawn(s, &ta, spawner, s) != BATON_OK)
			abort();
	} else if (strcmp(impl, "pass-1w") == 0) {
		struct baton_gate_attr a = BATON_GATE_ATTR_INIT;

		a.name = "bench";
		a.queue_capacity = 256;
		if (baton_gate_create(&g, &a) != BATON_OK)
			abort();
		ta.worker = 0;
		ta.flags = BATON_TASK_BOUND;
		if (baton_sched_spawn(s, &ta, passer, g) != BATON_OK)
			abort();
	} else {
		struct baton_stage_attr a = BATON_STAGE_ATTR_INIT;

		a.name = "bench";
		a.fn = count;
		a.queue_capacity = 256;
		a.concurrency = 1;
		if (sa.workers == 2) {
			a.first_worker = 1;
			a.nworkers = 1;
		}
		if (baton_stage_create(&st, s, &a) != BATON_OK)
			abort();
		ta.worker = 0;
		ta.flags = BATON_TASK_BOUND;
		if (baton_sched_spawn(s, &ta, submitter, st) != BATON_OK)
			abort();
	}
	t0 = now_ns();
	if (baton_sched_run(s) != BATON_OK || done != items)
		abort();
	t0 = now_ns() - t0;
	if (st)
		baton_stage_destroy(st);
	if (g)
		baton_gate_destroy(g);
	baton_sched_destroy(s);
	return (double)t0 / (double)items;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	const char *impl = "runner-1w";
	int runs = 5;
	double v[64], sorted[64];

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--impl"))
			impl = argv[i + 1];
		else if (!strcmp(argv[i], "--items"))
			items = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--runs"))
			runs = atoi(argv[i + 1]);
	}
	if (strcmp(impl, "runner-1w") && strcmp(impl, "runner-2w") && strcmp(impl, "spawn-1w") &&
	    strcmp(impl, "spawn-copystack-1w") && strcmp(impl, "pass-1w")) {
		fprintf(stderr,
			"usage: stage-bench --impl runner-1w|runner-2w|spawn-1w|"
			"spawn-copystack-1w|pass-1w [--items N] [--runs N]\n");
		return 2;
	}
	if (runs < 1 || runs > 64 || items < 1) {
		fprintf(stderr, "stage-bench: --runs 1..64, --items >= 1\n");
		return 2;
	}
	for (int i = 0; i < runs; i++)
		v[i] = sorted[i] = run_once(impl);
	qsort(sorted, (size_t)runs, sizeof(double), cmp);
	printf("{\"suite\": \"stage\", \"impl\": \"%s\", \"peer\": false, \"metric\": "
	       "\"ns_per_item\", \"value\": %.2f, \"unit\": \"ns\", \"params\": {\"items\": %ld}, "
	       "\"runs\": %d, \"min\": %.2f, \"max\": %.2f, \"samples\": [",
	       impl, runs % 2 ? sorted[runs / 2] : (sorted[runs / 2 - 1] + sorted[runs / 2]) / 2,
	       items, runs, sorted[0], sorted[runs - 1]);
	for (int i = 0; i < runs; i++)
		printf("%s%.2f", i ? ", " : "", v[i]);
	printf("], \"status\": \"ok\"}\n");
	return 0;
}
