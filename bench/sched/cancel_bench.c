/* SPDX-License-Identifier: MIT */
/*
 * cancel-bench: how soon a task blocked in a baton call wakes with
 * BATON_ECANCELED after baton_task_cancel() (baton/sched.h).
 *
 *   cancel-bench --impl chan-task|chan-thread|mutex-task|mutex-thread|
 *                       sleep-task|sleep-thread [--samples S] [--runs R]
 *
 * A scheduler with two workers. Per sample a victim task, bound to worker
 * 1, takes its handle, publishes it and blocks: in a channel receive (an
 * empty channel), a mutex lock (a mutex another task holds) or a sleep of
 * an hour. The canceller, a task bound to worker 0 (`-task`) or a plain
 * thread (`-thread`), waits until the handle is published, gives the
 * victim 200 us to park, takes a timestamp and cancels; the victim takes
 * one as soon as its call returns (it must return BATON_ECANCELED, else
 * the program fails). CLOCK_MONOTONIC is one clock for both threads. The
 * latency is the difference: the cross-worker wake-up of a cancel.
 *
 * Prints the median over the runs of each run's p50 and p99, in
 * microseconds (docs/bench-format.md): metrics cancel_wake_us_p50 and
 * cancel_wake_us_p99.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <baton/chan.h>
#include <baton/sched.h>
#include <baton/sync.h>

enum call { CALL_CHAN, CALL_MUTEX, CALL_SLEEP };

static const char *const impl_names[] = {
	"chan-task", "chan-thread", "mutex-task", "mutex-thread", "sleep-task", "sleep-thread",
};

struct sample {
	baton_task_t *handle; /* published by the victim (atomic) */
	int64_t t_woke;       /* the victim's timestamp */
	int rc;               /* what its call returned */
	bool done;            /* (atomic) */
};

struct bench {
	baton_sched_t *s;
	enum call call;
	bool from_thread;
	int samples;
	int64_t *lat;
	baton_chan_t *empty;  /* never sent to: receivers block */
	baton_mutex_t *mutex; /* held by the holder task meanwhile */
	baton_chan_t *quit;   /* closed at the end: the holder unlocks */
	bool failed;
};

static struct bench B;

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void victim(void *arg)
{
	struct sample *sm = arg;
	void *v;
	int rc;

	/* Release: the handle is valid, to the canceller's acquire. */
	__atomic_store_n(&sm->handle, baton_task_handle(), __ATOMIC_RELEASE);
	switch (B.call) {
	case CALL_CHAN:
		rc = baton_chan_recv(B.empty, &v, -1);
		break;
	case CALL_MUTEX:
		rc = baton_mutex_lock(B.mutex, -1);
		if (rc == BATON_OK)
			baton_mutex_unlock(B.mutex);
		break;
	default:
		rc = baton_sched_sleep(3600000000000LL);
		break;
	}
	sm->t_woke = now_ns();
	sm->rc = rc;
	/* Release: t_woke and rc, to the canceller's acquire. */
	__atomic_store_n(&sm->done, true, __ATOMIC_RELEASE);
}

static void holder(void *arg)
{
	void *v;

	(void)arg;
	baton_mutex_lock(B.mutex, -1);
	while (baton_chan_recv(B.quit, &v, -1) == BATON_OK)
		;
	baton_mutex_unlock(B.mutex);
}

/* Wait a little: the canceller's way (a task sleeps, a thread spins). */
static void pause_for(int64_t ns)
{
	if (B.from_thread) {
		struct timespec ts = { 0, (long)ns };

		nanosleep(&ts, NULL);
	} else {
		baton_sched_sleep(ns);
	}
}

static void settle(void)
{
	if (B.from_thread)
		sched_yield();
	else
		baton_sched_yield();
}

static void canceller(void)
{
	struct baton_task_attr ta = BATON_TASK_ATTR_INIT;

	ta.worker = 1;
	ta.flags = BATON_TASK_BOUND;
	pause_for(1000000); /* the holder has the mutex by now */
	for (int i = 0; i < B.samples && !B.failed; i++) {
		struct sample sm = { NULL, 0, 0, false };
		baton_task_t *h;
		int64_t t0;

		if (baton_sched_spawn(B.s, &ta, victim, &sm) != BATON_OK) {
			B.failed = true;
			break;
		}
		/* Acquire: see victim. */
		while ((h = __atomic_load_n(&sm.handle, __ATOMIC_ACQUIRE)) == NULL)
			settle();
		pause_for(200000);
		t0 = now_ns();
		baton_task_cancel(h);
		while (!__atomic_load_n(&sm.done, __ATOMIC_ACQUIRE))
			settle();
		if (sm.rc != BATON_ECANCELED) {
			fprintf(stderr,
				"cancel-bench: the blocked call returned %s, not ECANCELED\n",
				baton_strerror(sm.rc));
			B.failed = true;
		}
		B.lat[i] = sm.t_woke - t0;
	}
	baton_chan_close(B.quit);
}

static void canceller_task(void *arg)
{
	(void)arg;
	canceller();
}

static void *canceller_thread(void *arg)
{
	(void)arg;
	canceller();
	return NULL;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* One run: the p50 and p99 of `samples` cancels, in microseconds. */
static int run_once(double *p50, double *p99)
{
	struct baton_sched_attr sa = BATON_SCHED_ATTR_INIT;
	struct baton_task_attr ta = BATON_TASK_ATTR_INIT;
	pthread_t th;
	int rc = -1;

	sa.workers = 2;
	B.failed = false;
	if (baton_sched_create(&B.s, &sa) != BATON_OK)
		return -1;
	if (baton_chan_create(&B.empty, 1) != BATON_OK ||
	    baton_chan_create(&B.quit, 1) != BATON_OK || baton_mutex_create(&B.mutex) != BATON_OK)
		goto out;
	ta.worker = 0;
	ta.flags = BATON_TASK_BOUND;
	if (baton_sched_spawn(B.s, &ta, holder, NULL) != BATON_OK)
		goto out;
	if (!B.from_thread && baton_sched_spawn(B.s, &ta, canceller_task, NULL) != BATON_OK)
		goto out;
	if (B.from_thread && pthread_create(&th, NULL, canceller_thread, NULL) != 0)
		goto out;
	baton_sched_run(B.s);
	if (B.from_thread)
		pthread_join(th, NULL);
	if (!B.failed) {
		qsort(B.lat, (size_t)B.samples, sizeof(int64_t), cmp_i64);
		*p50 = (double)B.lat[B.samples / 2] / 1000.0;
		*p99 = (double)B.lat[(size_t)B.samples * 99 / 100] / 1000.0;
		rc = 0;
	}
out:
	baton_sched_destroy(B.s);
	baton_chan_destroy(B.empty);
	baton_chan_destroy(B.quit);
	baton_mutex_destroy(B.mutex);
	B.empty = B.quit = NULL;
	B.mutex = NULL;
	return rc;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void emit(const char *impl, const char *metric, const double *v, int runs)
{
	double s[runs];

	memcpy(s, v, sizeof(s));
	qsort(s, (size_t)runs, sizeof(double), cmp_double);
	printf("{\"suite\": \"sched\", \"impl\": \"%s\", \"peer\": false, \"metric\": \"%s\", "
	       "\"value\": %.3f, \"unit\": \"us\", \"params\": {\"samples\": %d}, \"runs\": %d, "
	       "\"min\": %.3f, \"max\": %.3f, \"samples\": [",
	       impl, metric, runs % 2 ? s[runs / 2] : (s[runs / 2 - 1] + s[runs / 2]) / 2,
	       B.samples, runs, s[0], s[runs - 1]);
	for (int i = 0; i < runs; i++)
		printf("%s%.3f", i ? ", " : "", v[i]);
	printf("], \"status\": \"ok\"}\n");
}

static void usage(void)
{
	fprintf(stderr,
		"usage: cancel-bench --impl chan-task|chan-thread|mutex-task|"
		"mutex-thread|sleep-task|sleep-thread [--samples S] [--runs R]\n");
}

int main(int argc, char **argv)
{
	const char *impl = NULL;
	int runs = 1, which = -1;

	B.samples = 2000;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--impl"))
			impl = argv[i + 1];
		else if (!strcmp(argv[i], "--samples"))
			B.samples = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--runs"))
			runs = atoi(argv[i + 1]);
		else {
			usage();
			return 2;
		}
	}
	for (int i = 0; impl && i < (int)(sizeof(impl_names) / sizeof(impl_names[0])); i++)
		if (!strcmp(impl, impl_names[i]))
			which = i;
	if (which < 0 || B.samples < 1 || runs < 1 || (argc - 1) % 2) {
		usage();
		return 2;
	}
	B.call = (enum call)(which / 2);
	B.from_thread = which % 2;
	B.lat = calloc((size_t)B.samples, sizeof(int64_t));
	if (B.lat == NULL)
		return 1;

	double p50[runs], p99[runs];

	for (int r = 0; r < runs; r++) {
		if (run_once(&p50[r], &p99[r]) != 0) {
			fprintf(stderr, "cancel-bench: %s: run failed\n", impl);
			return 1;
		}
	}
	emit(impl, "cancel_wake_us_p50", p50, runs);
	emit(impl, "cancel_wake_us_p99", p99, runs);
	free(B.lat);
	return 0;
}
