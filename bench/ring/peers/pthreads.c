/* SPDX-License-Identifier: MIT */
/*
 * ring-pthreads: the ring benchmark (docs/ring.md) with one POSIX thread per
 * coroutine.  Each thread's inbox is a message slot and a semaphore: the
 * sender writes the slot and posts the semaphore, the receiver waits on it
 * and reads the slot (sem_post/sem_wait order the slot's write before its
 * read).  Stacks are 64 KiB so that as many threads as possible fit; when
 * pthread_create fails, the threads already made are told to quit, joined,
 * and the failure is reported with the index of the thread that failed.
 */
#include "ring_common.h"

#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <unistd.h>

#define RING_STACK_SIZE (64 * 1024)

struct inbox {
	sem_t sem;
	long msg;
} __attribute__((aligned(64))); /* one cache line each: no false sharing */

struct member {
	struct inbox *in, *right;
	long index; /* position in the ring: 0 leads */
};

static long n_per_ring, rounds;
static atomic_long blocked; /* threads that reached their first wait */
static atomic_long errors;  /* rounds whose message did not grow by n */
static atomic_int quitting; /* set when creation failed: threads exit */

static long inbox_wait(struct inbox *in)
{
	while (sem_wait(&in->sem) != 0)
		; /* EINTR: wait again */
	return in->msg;
}

static void inbox_post(struct inbox *in, long msg)
{
	in->msg = msg;
	sem_post(&in->sem);
}

static void *member_main(void *arg)
{
	struct member *m = arg;
	long r, v;

	/* relaxed: only counts; main polls it, the semaphores order the data */
	atomic_fetch_add_explicit(&blocked, 1, memory_order_relaxed);
	if (m->index == 0) {
		v = inbox_wait(m->in); /* start token */
		/* acquire: pairs with the release store in abort_all() */
		if (atomic_load_explicit(&quitting, memory_order_acquire))
			return NULL;
		for (r = 0; r < rounds; r++) {
			long back;

			inbox_post(m->right, v + 1);
			back = inbox_wait(m->in);
			if (back != v + n_per_ring)
				/* relaxed: read by main after join */
				atomic_fetch_add_explicit(&errors, 1, memory_order_relaxed);
			v = back;
		}
	} else {
		for (r = 0; r < rounds; r++) {
			v = inbox_wait(m->in);
			/* acquire: pairs with the release store in abort_all() */
			if (atomic_load_explicit(&quitting, memory_order_acquire))
				return NULL;
			inbox_post(m->right, v + 1);
		}
	}
	return NULL;
}

/* Creation failed after `made` threads: wake them all to quit, join them. */
static void abort_all(pthread_t *tid, struct inbox *inbox, long made)
{
	long k;

	/* release: a woken thread sees the flag after its sem_wait returns */
	atomic_store_explicit(&quitting, 1, memory_order_release);
	for (k = 0; k < made; k++)
		sem_post(&inbox[k].sem);
	for (k = 0; k < made; k++)
		pthread_join(tid[k], NULL);
}

static double one_run(const struct rc_opts *o, double *rss_per_coro)
{
	long c = o->coroutines, k, rss0;
	struct inbox *inbox;
	struct member *mem;
	pthread_t *tid;
	pthread_attr_t attr;
	int64_t t0, t1;
	int err;

	inbox = aligned_alloc(64, (size_t)c * sizeof(*inbox));
	mem = malloc((size_t)c * sizeof(*mem));
	tid = malloc((size_t)c * sizeof(*tid));
	if (inbox == NULL || mem == NULL || tid == NULL)
		rc_fail("pthreads", o, "out of memory for the thread table");
	atomic_store_explicit(&blocked, 0, memory_order_relaxed); /* no thread yet */
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, RING_STACK_SIZE);
	rss0 = rc_rss_bytes();
	for (k = 0; k < c; k++) {
		long base = k - k % o->n;

		sem_init(&inbox[k].sem, 0, 0);
		mem[k].in = &inbox[k];
		mem[k].right = &inbox[base + (k - base + 1) % o->n];
		mem[k].index = k - base;
	}
	for (k = 0; k < c; k++) {
		err = pthread_create(&tid[k], &attr, member_main, &mem[k]);
		if (err != 0) {
			char msg[160];

			abort_all(tid, inbox, k);
			snprintf(msg, sizeof(msg), "pthread_create failed at thread %ld of %ld: %s",
				 k, c, strerror(err));
			rc_fail("pthreads", o, msg);
		}
	}
	pthread_attr_destroy(&attr);
	/* relaxed: a count; the threads may still be between the add and sem_wait */
	while (atomic_load_explicit(&blocked, memory_order_relaxed) < c)
		usleep(1000);
	usleep(10000); /* let the last ones reach sem_wait */
	if (rss_per_coro != NULL)
		*rss_per_coro = (double)(rc_rss_bytes() - rss0) / (double)c;

	t0 = rc_now_ns();
	for (k = 0; k < c; k += o->n)
		inbox_post(&inbox[k], 0); /* start token for each coroutine 0 */
	for (k = 0; k < c; k++)
		pthread_join(tid[k], NULL);
	t1 = rc_now_ns();

	for (k = 0; k < c; k++)
		sem_destroy(&inbox[k].sem);
	free(inbox);
	free(mem);
	free(tid);
	return (double)c * (double)o->rounds / ((double)(t1 - t0) / 1e9);
}

int main(int argc, char **argv)
{
	struct rc_opts o;
	double *samples, rss = 0;
	long r;

	rc_parse_args(argc, argv, &o);
	n_per_ring = o.n;
	rounds = o.rounds;
	samples = malloc((size_t)o.runs * sizeof(*samples));
	if (samples == NULL)
		rc_fail("pthreads", &o, "out of memory");
	for (r = 0; r < o.runs; r++)
		samples[r] = one_run(&o, r == 0 ? &rss : NULL);
	/* relaxed: every thread has been joined */
	if (atomic_load_explicit(&errors, memory_order_relaxed) != 0) {
		char msg[128];

		snprintf(msg, sizeof(msg), "%ld rounds came back with a wrong message",
			 atomic_load_explicit(&errors, memory_order_relaxed));
		rc_fail("pthreads", &o, msg);
	}
	rc_report("pthreads", &o, samples, rss);
	free(samples);
	return 0;
}
