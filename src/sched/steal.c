/* SPDX-License-Identifier: MIT */
/*
 * Load balancing by request ("work requesting"): an idle worker does not
 * reach into another worker's run queue, which would force that queue to be
 * a concurrent deque with an atomic on its owner's pop. Instead it posts a
 * request in the busy worker's steal_req slot; the busy worker, at its
 * loop's next pass (within BATON_POLL_TICKS dispatches), moves half of its
 * movable runnable tasks to the thief's inbox. The hop pays nothing for
 * this: only the loop reads the slot.
 *
 * Tasks that cannot move stay: copy-stack tasks that have run (their frames
 * live at this worker's shared-stack addresses) and tasks whose timeout is
 * still on this worker's timer heap.
 */
#include "queue.h"
#include "sched_internal.h"

/* How long a thief waits for an answer before looking again (ns). */
#define BATON_STEAL_WAIT_NS 50000

/* Not a task with a timeout on our heap, nor one that must unlink its
 * waiters here (wait_timed: a channel biased to us, wait.c). */
static bool movable(const struct baton_task *t)
{
	return !t->pinned && !t->bound && t->timeout.index == SIZE_MAX && !t->wait_timed;
}

void baton__steal_serve(struct baton_worker *w)
{
	struct baton_task *give_head = NULL, *give_tail = NULL;
	struct baton_task *keep_head = NULL, *keep_tail = NULL;
	struct baton_task *t, *next;
	struct baton_worker *thief;
	size_t give, given = 0;

	/* Acquire: pairs with the thief's release CAS, which orders the
	 * thief's earlier writes before our hand-over. */
	thief = __atomic_exchange_n(&w->steal_req, NULL, __ATOMIC_ACQUIRE);
	if (thief == NULL)
		return;
	give = w->runq_len / 2;
	/* Split the run queue, oldest first, into what goes and what stays;
	 * once enough is given the rest stays as one piece. */
	for (t = w->runq_head; t && given < give; t = next) {
		next = t->next;
		t->next = NULL;
		if (movable(t)) {
			t->owner = thief;
			if (give_tail)
				give_tail->next = t;
			else
				give_head = t;
			give_tail = t;
			given++;
		} else {
			if (keep_tail)
				keep_tail->next = t;
			else
				keep_head = t;
			keep_tail = t;
		}
	}
	if (t) { /* the untouched rest */
		if (keep_tail)
			keep_tail->next = t;
		else
			keep_head = t;
		keep_tail = w->runq_tail;
	}
	w->runq_head = keep_head;
	w->runq_tail = keep_tail;
	w->runq_len -= given;
	w->stats.steals += given;
	baton__runq_publish(w);
	if (give_head) {
		baton__inbox_push_chain(thief, give_head, give_tail);
		baton__worker_wake(thief); /* after the push: see queue.h */
	}
}

void baton__steal_idle(struct baton_worker *w)
{
	struct baton_sched *s = w->sched;
	struct baton_worker *victim = NULL;
	size_t best = 1;
	uint32_t version;

	for (unsigned i = 1; i < s->nworkers; i++) {
		struct baton_worker *v = &s->workers[(w->index + i) % s->nworkers];
		/* Relaxed: a hint; a stale length only picks a worse victim. */
		size_t len = __atomic_load_n(&v->runq_len_pub, __ATOMIC_RELAXED);

		if (len > best) {
			best = len;
			victim = v;
		}
	}
	if (victim == NULL)
		return;
	version = baton_ec_value(&w->ec);
	struct baton_worker *none = NULL;
	/* Release: orders our earlier writes before the victim acts on the
	 * request (the hand-over itself is ordered by the inbox). */
	if (!__atomic_compare_exchange_n(&victim->steal_req, &none, w, false, __ATOMIC_RELEASE,
					 __ATOMIC_RELAXED))
		return; /* someone else asked first; look again later */
	baton_ec_wait_mp(&w->ec, version, BATON_STEAL_WAIT_NS);
}

/* Is w's run queue worth a parked worker's wake-up? Its oldest task (a
 * steal gives from the oldest half) or its newest (the one just queued)
 * can move: two loads, both of tasks about to run or just touched. A queue
 * of bound tasks (baton-httpd's connections) is no reason to wake one: it
 * would wake, ask, get nothing and park again. */
static bool stealable(const struct baton_worker *w)
{
	return (w->runq_head && movable(w->runq_head)) || (w->runq_tail && movable(w->runq_tail));
}

/* Called by a worker whose run queue just grew to two or more tasks. */
void baton__steal_wake_idle(struct baton_sched *s)
{
	struct baton_worker *self;

	/* Relaxed: a hint. Missing a parked worker only delays balancing. */
	if (__atomic_load_n(&s->nparked, __ATOMIC_RELAXED) == 0)
		return;
	self = baton__worker_get();
	if (self && self->sched == s && !stealable(self))
		return;
	for (unsigned i = 0; i < s->nworkers; i++) {
		struct baton_worker *w = &s->workers[i];
		int one = 1;

		/* Relaxed CAS: only one waker bumps a given parked worker; the
		 * wake-up itself is ordered by the event count. */
		if (__atomic_load_n(&w->parked, __ATOMIC_RELAXED) &&
		    __atomic_compare_exchange_n(&w->parked, &one, 0, false, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED)) {
			baton__worker_wake(w);
			return;
		}
	}
}
