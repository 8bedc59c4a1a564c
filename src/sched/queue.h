/* SPDX-License-Identifier: MIT */
/*
 * src/sched/queue.h - the two queues of a worker.
 *
 * The run queue is a FIFO of runnable tasks linked through task->next and
 * touched only by its worker: plain loads and stores. Its length is also
 * published with a relaxed store so that idle workers can pick a victim.
 *
 * The inbox is where other threads put tasks for this worker: a
 * multi-producer stack (one CAS per push, or per chain of tasks), emptied
 * whole by the owner with one exchange and reversed to restore arrival
 * order. After a push the producer bumps the worker's event count, so a
 * parked worker cannot miss it (see baton/ec.h).
 */
#ifndef BATON_SRC_SCHED_QUEUE_H
#define BATON_SRC_SCHED_QUEUE_H

#include "sched_internal.h"

static inline void baton__runq_publish(struct baton_worker *w)
{
	/* Relaxed: a hint for thieves choosing a victim, orders nothing. */
	__atomic_store_n(&w->runq_len_pub, w->runq_len, __ATOMIC_RELAXED);
}

static inline void baton__runq_push(struct baton_worker *w, struct baton_task *t)
{
	t->next = NULL;
	if (w->runq_tail)
		w->runq_tail->next = t;
	else
		w->runq_head = t;
	w->runq_tail = t;
	w->runq_len++;
	baton__runq_publish(w);
}

static inline struct baton_task *baton__runq_pop(struct baton_worker *w)
{
	struct baton_task *t = w->runq_head;

	if (t == NULL)
		return NULL;
	w->runq_head = t->next;
	if (w->runq_head == NULL)
		w->runq_tail = NULL;
	w->runq_len--;
	baton__runq_publish(w);
	return t;
}

/* Something to run now: a woken task or a queued one. */
static inline bool baton__worker_runnable(const struct baton_worker *w)
{
	return w->runnext != NULL || w->runq_head != NULL;
}

/* Push the chain first..last (linked through next) onto w's inbox. */
static inline void baton__inbox_push_chain(struct baton_worker *w, struct baton_task *first,
					   struct baton_task *last)
{
	struct baton_task *head = __atomic_load_n(&w->inbox, __ATOMIC_RELAXED);

	do {
		last->next = head;
		/* Release: the tasks' fields (owner, wait result) written
		 * before the push are visible to the worker that pops them;
		 * relaxed on failure, we only retry with the new head. */
	} while (!__atomic_compare_exchange_n(&w->inbox, &head, first, true, __ATOMIC_RELEASE,
					      __ATOMIC_RELAXED));
}

static inline bool baton__inbox_empty(struct baton_worker *w)
{
	/* Relaxed: a peek; the exchange in baton__inbox_take orders. */
	return __atomic_load_n(&w->inbox, __ATOMIC_RELAXED) == NULL;
}

/* Move everything in the inbox to the tail of the run queue, oldest first.
 * Returns the number of tasks moved. */
static inline size_t baton__inbox_take(struct baton_worker *w)
{
	struct baton_task *t, *next, *fifo = NULL;
	size_t n = 0;

	if (baton__inbox_empty(w))
		return 0;
	/* Acquire: pairs with the producers' release CAS, so the tasks'
	 * fields are visible before we run them. */
	t = __atomic_exchange_n(&w->inbox, NULL, __ATOMIC_ACQUIRE);
	for (; t; t = next) { /* reverse: the stack is newest first */
		next = t->next;
		t->next = fifo;
		fifo = t;
	}
	for (t = fifo; t; t = next) {
		next = t->next;
		baton__runq_push(w, t);
		n++;
	}
	return n;
}

#endif /* BATON_SRC_SCHED_QUEUE_H */
