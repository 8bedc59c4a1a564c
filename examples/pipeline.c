/* SPDX-License-Identifier: MIT */
/*
 * pipeline: a producer, a pool of squaring tasks and a collector, joined by
 * channels and run on every core.
 *
 *   producer --jobs--> square x4 --results--> collector
 *
 * The squarers leave when `jobs` is closed; a wait group tells the closer
 * task when all of them are gone, so that it can close `results` and end
 * the collector. A select in the collector also wakes it every 50 ms to
 * report progress on stderr. Prints the sum of squares of 1..N (default
 * 10000), which is N(N+1)(2N+1)/6.
 *
 * Usage: pipeline [N]
 */
#include <stdio.h>
#include <stdlib.h>

#include <baton/baton.h>

#define SQUARERS 4

struct plumbing {
	baton_chan_t *jobs, *results;
	baton_wg_t *squarers;
	long n;
	long long sum; /* written by the collector, read after the run */
};

static void check(int rc, const char *what)
{
	if (rc != BATON_OK) {
		fprintf(stderr, "pipeline: %s: %s\n", what, baton_strerror(rc));
		exit(1);
	}
}

static void producer(void *arg)
{
	struct plumbing *p = arg;

	for (long i = 1; i <= p->n; i++)
		check(baton_chan_send(p->jobs, (void *)i, -1), "send job");
	check(baton_chan_close(p->jobs), "close jobs");
}

static void square(void *arg)
{
	struct plumbing *p = arg;
	void *v;

	/* BATON_ECLOSED ends the loop: jobs is closed and drained. */
	while (baton_chan_recv(p->jobs, &v, -1) == BATON_OK) {
		long x = (long)v;

		check(baton_chan_send(p->results, (void *)(x * x), -1), "send result");
	}
	check(baton_wg_done(p->squarers), "wg done");
}

static void closer(void *arg)
{
	struct plumbing *p = arg;

	check(baton_wg_wait(p->squarers, -1), "wg wait");
	check(baton_chan_close(p->results), "close results");
}

static void collector(void *arg)
{
	struct plumbing *p = arg;
	long received = 0;

	for (;;) {
		struct baton_chan_op op = { p->results, BATON_CHAN_RECV, NULL, 0 };
		size_t which;
		int rc = baton_chan_select(&op, 1, 50 * 1000000, &which);

		if (rc == BATON_ETIMEDOUT) {
			fprintf(stderr, "pipeline: %ld of %ld results so far\n", received, p->n);
			continue;
		}
		check(rc, "select");
		if (op.result == BATON_ECLOSED)
			break;
		p->sum += (long)op.value;
		received++;
	}
}

int main(int argc, char **argv)
{
	struct plumbing p = { .n = argc > 1 ? atol(argv[1]) : 10000 };
	struct baton_sched_attr attr;
	baton_sched_t *s;

	if (p.n < 1 || p.n > 1000000) {
		fprintf(stderr, "usage: pipeline [N], 1 <= N <= 1000000\n");
		return 2;
	}
	baton_sched_attr_init(&attr);
	attr.workers = 0; /* one per core */
	check(baton_sched_create(&s, &attr), "scheduler");
	check(baton_chan_create(&p.jobs, 16), "jobs channel");
	check(baton_chan_create(&p.results, 0), "results channel");
	check(baton_wg_create(&p.squarers), "wait group");
	check(baton_wg_add(p.squarers, SQUARERS), "wg add");

	check(baton_sched_spawn(s, NULL, producer, &p), "spawn");
	for (int i = 0; i < SQUARERS; i++)
		check(baton_sched_spawn(s, NULL, square, &p), "spawn");
	check(baton_sched_spawn(s, NULL, closer, &p), "spawn");
	check(baton_sched_spawn(s, NULL, collector, &p), "spawn");
	check(baton_sched_run(s), "run");

	printf("%lld\n", p.sum);
	baton_sched_destroy(s);
	baton_wg_destroy(p.squarers);
	baton_chan_destroy(p.results);
	baton_chan_destroy(p.jobs);
	return 0;
}
