/* SPDX-License-Identifier: MIT */
/*
 * baton_chicken.c - the CHICKEN runtime on a sequencer's dedicated stack.
 *
 * The runtime is booted by the sequencer's init function, so CHICKEN_run
 * records the dedicated stack as the nursery's home (stack_bottom, and the
 * limit `nursery` bytes below it). Every later entry is a define-external
 * wrapper run by baton_seq_call on the same stack; CHICKEN's callback
 * prologue (C_callback_adjust_stack) re-bases the nursery on the entry frame
 * if it lies outside the recorded region, which keeps the whole nursery on
 * this stack either way.
 */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <chicken.h>

#include "baton_chicken.h"

/* The program's entry, as csc -embedded generates it. Weak, so that a host
 * that names its own toplevel in the attributes need not have this one. */
extern void C_ccall C_toplevel(C_word c, C_word *av) __attribute__((weak, noreturn));

enum { RT_NEW, RT_RUNNING, RT_STOPPED };

static pthread_mutex_t rt_lock = PTHREAD_MUTEX_INITIALIZER; /* start/stop */
static int rt_state = RT_NEW;                               /* under rt_lock */
static baton_seq_t *rt_seq;

/* Written by the post-GC hook, which runs inside Scheme on the dedicated
 * stack, and read through the sequencer: the sequencer's lock orders both. */
static struct baton_chicken_gc_stats rt_gc;
static void (*rt_prev_gc_hook)(int mode, C_long ms);

struct boot {
	void *toplevel;
	size_t nursery, heap;
	int rc;
};

static void on_gc(int mode, C_long ms)
{
	if (mode == 0) /* GC_MINOR in runtime.c */
		rt_gc.minor++;
	else /* GC_MAJOR, GC_REALLOC */
		rt_gc.major++;
	if (ms > 0)
		rt_gc.ms += (unsigned long)ms;
	if (rt_prev_gc_hook)
		rt_prev_gc_hook(mode, ms);
}

/* Runs once, on the dedicated stack, inside baton_seq_create. */
static void *boot(void *arg)
{
	struct boot *b = arg;

	if (!CHICKEN_initialize((int)b->heap, (int)b->nursery, 0, b->toplevel)) {
		b->rc = BATON_ESYS;
		return NULL;
	}
	rt_prev_gc_hook = C_post_gc_hook;
	C_post_gc_hook = on_gc;
	(void)CHICKEN_run(b->toplevel); /* returns at (return-to-host) */
	b->rc = BATON_OK;
	return NULL;
}

static baton_seq_t *current_seq(void)
{
	/* Pairs with the release store in start: a thread that sees the
	 * pointer sees the booted runtime and the sequencer behind it. */
	return __atomic_load_n(&rt_seq, __ATOMIC_ACQUIRE);
}

int baton_chicken_start(const struct baton_chicken_attr *attr)
{
	static const struct baton_chicken_attr defaults = BATON_CHICKEN_ATTR_INIT;
	struct baton_seq_attr sa = BATON_SEQ_ATTR_INIT;
	struct boot b;
	baton_seq_t *seq;
	int rc;

	if (!attr)
		attr = &defaults;
	b.toplevel = attr->toplevel ? attr->toplevel : (void *)C_toplevel;
	b.nursery = attr->nursery ? attr->nursery : BATON_CHICKEN_NURSERY_DEFAULT;
	b.heap = attr->heap;
	b.rc = BATON_EINVAL;
	if (!b.toplevel || b.nursery > INT_MAX / 2 || b.heap > INT_MAX)
		return BATON_EINVAL;

	pthread_mutex_lock(&rt_lock);
	if (rt_state != RT_NEW) {
		rc = rt_state == RT_RUNNING ? BATON_EBUSY : BATON_ESHUTDOWN;
		goto out;
	}
	sa.stack_size = b.nursery + BATON_CHICKEN_STACK_SLACK;
	sa.batch = attr->batch;
	sa.init = boot;
	sa.init_arg = &b;
	sa.name = "chicken";
	rc = baton_seq_create(&seq, &sa);
	if (rc != BATON_OK)
		goto out;
	if (b.rc != BATON_OK) {
		/* CHICKEN failed before running anything: nothing lives on
		 * the stack, so it can go. */
		(void)baton_seq_destroy(seq);
		rc = b.rc;
		goto out;
	}
	rt_state = RT_RUNNING;
	/* Publishes the booted runtime; pairs with current_seq(). */
	__atomic_store_n(&rt_seq, seq, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&rt_lock);
	return rc;
}

int baton_chicken_call(baton_seq_fn fn, void *arg, void **result)
{
	baton_seq_t *seq = current_seq();

	if (!fn || !seq)
		return BATON_EINVAL;
	/* From inside a callback (already on the stack) this runs fn nested,
	 * in place: baton/seq.h rule 2. */
	return baton_seq_call(seq, fn, arg, result);
}

void baton_chicken_call_or_die(baton_seq_fn fn, void *arg, const char *who)
{
	int rc = baton_chicken_call(fn, arg, NULL);

	if (rc != BATON_OK) {
		fprintf(stderr, "baton_chicken: %s: %s\n", who ? who : "call",
			current_seq()
				? baton_strerror(rc)
				: "the runtime is not started (call baton_chicken_start first)");
		abort();
	}
}

/* The message of the condition the running callback raised: set and taken
 * on the runtime's stack, one call at a time (the sequencer orders them). */
static char *pending_error;

/* The caller's side: its last failed call's message, per thread, freed
 * when the thread ends (a key's destructor). */
static pthread_key_t last_error_key;
static pthread_once_t last_error_once = PTHREAD_ONCE_INIT;

static void last_error_init(void)
{
	(void)pthread_key_create(&last_error_key, free);
}

void baton_chicken_raise_(const char *message)
{
	free(pending_error);
	pending_error = strdup(message ? message : "(no message)");
}

char *baton_chicken_take_error_(void)
{
	char *m = pending_error;

	pending_error = NULL;
	return m;
}

int baton_chicken_fail_(char *message)
{
	pthread_once(&last_error_once, last_error_init);
	free(pthread_getspecific(last_error_key));
	if (pthread_setspecific(last_error_key, message) != 0)
		free(message); /* no room: the code still tells the error */
	return BATON_CHICKEN_ERROR;
}

const char *baton_chicken_last_error(void)
{
	pthread_once(&last_error_once, last_error_init);
	return pthread_getspecific(last_error_key);
}

void baton_chicken_die_on_error_(char *message, const char *who)
{
	if (message == NULL)
		return;
	fprintf(stderr, "baton_chicken: %s: Scheme error: %s\n", who ? who : "call", message);
	free(message);
	abort();
}

int baton_chicken_set_batch(unsigned k)
{
	baton_seq_t *seq = current_seq();

	return seq ? baton_seq_set_batch(seq, k) : BATON_EINVAL;
}

baton_seq_t *baton_chicken_seq(void)
{
	return current_seq();
}

static void *read_gc(void *out)
{
	*(struct baton_chicken_gc_stats *)out = rt_gc;
	return NULL;
}

int baton_chicken_gc_stats(struct baton_chicken_gc_stats *out)
{
	if (!out)
		return BATON_EINVAL;
	return baton_chicken_call(read_gc, out, NULL);
}

int baton_chicken_stop(void)
{
	baton_seq_t *seq;
	int rc;

	pthread_mutex_lock(&rt_lock);
	seq = current_seq();
	if (rt_state != RT_RUNNING || !seq) {
		rc = BATON_EINVAL;
		goto out;
	}
	rc = baton_seq_destroy(seq);
	if (rc == BATON_OK) {
		rt_state = RT_STOPPED;
		/* Later calls see NULL and fail; release for symmetry with
		 * start (nothing new is published). */
		__atomic_store_n(&rt_seq, NULL, __ATOMIC_RELEASE);
	}
out:
	pthread_mutex_unlock(&rt_lock);
	return rc;
}
