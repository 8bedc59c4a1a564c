/* SPDX-License-Identifier: MIT */
/*
 * select-baton: the select suite (docs/select.md) on baton, written as a
 * new user would write it from baton/chan.h and baton/sched.h.
 *
 * A scheduler of W workers; P producer tasks, producer p sending 1..M,
 * message k on channel (p + k) mod K; C consumer tasks, each selecting
 * (baton_chan_select) over the channels it has not seen closed, with a
 * timeout of T ms (a timeout only loops); a closer task that waits for the
 * producers (a wait group) and closes the K channels. Every task is
 * spawned from outside the scheduler, so spawns go round-robin over the
 * workers. The clock runs from baton_sched_run's call to its return (the
 * workers' threads start inside it); every run makes its own scheduler
 * and channels. The consumers' sums must add up to P * M (M + 1) / 2, and
 * their counts to P * M; otherwise a "status":"failed" line and exit 1.
 *
 * --verbose prints per run on stderr: the rate, the CPUs the process kept
 * busy (its CPU time over the elapsed time), the select timeouts, and
 * baton_sched_stats (dispatches, hand-offs, cross-worker wake-ups, steals).
 */
#include "select_common.h"

#include <baton/chan.h>
#include <baton/sched.h>
#include <baton/sync.h>

static struct sel_opts opts;
static baton_chan_t *chans[SEL_MAX_CHANNELS];
static baton_wg_t *producers_done;
static long total_sum, total_count, timeouts, failures; /* atomic */

static void producer(void *arg)
{
	long p = (long)(intptr_t)arg;

	for (long k = 1; k <= opts.messages; k++)
		if (baton_chan_send(chans[(p + k) % opts.channels], (void *)(intptr_t)k, -1) !=
		    BATON_OK)
			__atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
	baton_wg_done(producers_done);
}

static void consumer(void *arg)
{
	struct baton_chan_op ops[SEL_MAX_CHANNELS];
	size_t open = (size_t)opts.channels, i;
	long sum = 0, count = 0, timed_out = 0;

	(void)arg;
	for (i = 0; i < open; i++)
		ops[i] = (struct baton_chan_op){ .chan = chans[i], .dir = BATON_CHAN_RECV };
	while (open > 0) {
		int rc = baton_chan_select(ops, open, opts.timeout_ms * 1000000, &i);

		if (rc == BATON_ETIMEDOUT) {
			timed_out++;
			continue;
		}
		if (rc != BATON_OK) {
			__atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
			break;
		}
		if (ops[i].result == BATON_ECLOSED) { /* closed and drained */
			ops[i] = ops[--open];
			continue;
		}
		sum += (long)(intptr_t)ops[i].value;
		count++;
	}
	__atomic_add_fetch(&total_sum, sum, __ATOMIC_RELAXED);
	__atomic_add_fetch(&total_count, count, __ATOMIC_RELAXED);
	__atomic_add_fetch(&timeouts, timed_out, __ATOMIC_RELAXED);
}

static void closer(void *arg)
{
	(void)arg;
	if (baton_wg_wait(producers_done, -1) != BATON_OK)
		__atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
	for (long c = 0; c < opts.channels; c++)
		baton_chan_close(chans[c]);
}

/* CPU time of the whole process (every worker's thread). */
static int64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void check(const char *impl, const char *what, int rc)
{
	char msg[160];

	if (rc == BATON_OK)
		return;
	snprintf(msg, sizeof(msg), "%s failed: %s", what, baton_strerror(rc));
	sel_fail(impl, 0, &opts, msg);
}

/* One timed run; returns messages per second. */
static double run_once(const char *impl, long run)
{
	struct baton_sched_attr sattr;
	struct baton_sched_stats st;
	baton_sched_t *s;
	long expect_sum = opts.producers * (opts.messages * (opts.messages + 1) / 2);
	int64_t t0, t1, cpu0, cpu1;

	total_sum = total_count = timeouts = failures = 0;
	baton_sched_attr_init(&sattr);
	sattr.workers = (unsigned)opts.workers;
	check(impl, "baton_sched_create", baton_sched_create(&s, &sattr));
	for (long c = 0; c < opts.channels; c++)
		check(impl, "baton_chan_create",
		      baton_chan_create(&chans[c], (size_t)opts.capacity));
	check(impl, "baton_wg_create", baton_wg_create(&producers_done));
	check(impl, "baton_wg_add", baton_wg_add(producers_done, opts.producers));
	for (long p = 0; p < opts.producers; p++)
		check(impl, "baton_sched_spawn",
		      baton_sched_spawn(s, NULL, producer, (void *)(intptr_t)p));
	for (long c = 0; c < opts.consumers; c++)
		check(impl, "baton_sched_spawn", baton_sched_spawn(s, NULL, consumer, NULL));
	check(impl, "baton_sched_spawn", baton_sched_spawn(s, NULL, closer, NULL));
	cpu0 = cpu_ns();
	t0 = rc_now_ns();
	check(impl, "baton_sched_run", baton_sched_run(s));
	t1 = rc_now_ns();
	cpu1 = cpu_ns();
	if (failures || total_count != opts.producers * opts.messages || total_sum != expect_sum) {
		char msg[200];

		snprintf(msg, sizeof(msg),
			 "received %ld messages summing to %ld, expected %ld and %ld "
			 "(%ld failed calls)",
			 total_count, total_sum, opts.producers * opts.messages, expect_sum,
			 failures);
		sel_fail(impl, 0, &opts, msg);
	}
	double rate = (double)total_count * 1e9 / (double)(t1 - t0);
	if (opts.verbose && baton_sched_stats(s, &st) == BATON_OK)
		fprintf(stderr,
			"run %ld: %.2f M msgs/s, %.2f CPUs busy, %ld timeouts, dispatches %llu, "
			"handoffs %llu, "
			"cross_wakes %llu, steals %llu, fair_turns %llu\n",
			run, rate / 1e6, (double)(cpu1 - cpu0) / (double)(t1 - t0), timeouts,
			(unsigned long long)st.dispatches, (unsigned long long)st.handoffs,
			(unsigned long long)st.cross_wakes, (unsigned long long)st.steals,
			(unsigned long long)st.fair_turns);
	baton_sched_destroy(s);
	for (long c = 0; c < opts.channels; c++)
		baton_chan_destroy(chans[c]);
	baton_wg_destroy(producers_done);
	return rate;
}

int main(int argc, char **argv)
{
	double samples[SEL_MAX_RUNS];
	const char *impl = "baton";

	sel_parse_args(argc, argv, &opts);
	for (long r = 0; r < opts.runs; r++)
		samples[r] = run_once(impl, r);
	sel_report(impl, 0, &opts, samples);
	return 0;
}
