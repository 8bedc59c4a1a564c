/* SPDX-License-Identifier: MIT */
/*
 * src/stage/stage_internal.h - what the stage, runner, gate, call and pool
 * files share: the pool's layout (a stage or gate reads its creation order
 * and counts itself as a user), the gate's (gate.c lets tasks through) and
 * the stage's (stage.c queues items, runner.c hands them to tasks, call.c
 * waits for them; pass.c keeps the deprecated stage without handler, a
 * front for a gate). All block with the wait protocol of src/sched/wait.h.
 */
#ifndef BATON_SRC_STAGE_INTERNAL_H
#define BATON_SRC_STAGE_INTERNAL_H

#include <baton/stage.h>

#include "../sync/units.h"

struct baton_pool {
	struct baton_units u; /* the units; u.lock guards users too */
	long users;           /* stages that list it */
	uint64_t id;          /* creation order: the acquisition order */
	char name[BATON_NAME_MAX + 1];
};

/* A called item's record (call.c), shared by the caller and the stage's
 * side, on the heap: the caller may leave before the item finishes. */
struct stage_call {
	baton_spinlock_t lock;     /* guards all but item, abandon, kept */
	struct baton_waitq caller; /* the caller, waiting for the result */
	struct baton_waitq asker;  /* the handler, waiting for an answer */
	unsigned state;            /* STAGE_CALL_* */
	int result;                /* BATON_OK: handled; ESHUTDOWN: dropped */
	baton_task_t *task;        /* the handler's, to cancel if the caller
				      leaves (BATON_STAGE_CANCEL_ABANDONED) */
	int (*ask_fn)(void *arg);  /* a question for the caller (ASKED) */
	void *ask_arg;
	int ask_rc; /* its answer */
	void *item;
	void (*abandon)(void *item);
	struct baton_gate *kept; /* whose KEEP units go back at the end */
};
#define STAGE_CALL_DONE 1u    /* the item finished: the caller owns it again */
#define STAGE_CALL_LEFT 2u    /* the caller left: the stage's side ends it */
#define STAGE_CALL_ASKED 4u   /* the handler waits for ask_fn's answer */
#define STAGE_CALL_SERVING 8u /* the caller runs ask_fn */

/* Runner, before the handler: false if the caller has left (the handler
 * is skipped). `task`: the runner's handle if the stage cancels handlers
 * of abandoned items, else NULL. */
bool baton__stage_call_begin(struct stage_call *c, baton_task_t *task);
/* Where a called item finishes: give back its kept units, then wake its
 * caller with `result`, or, if it left, abandon the item and free c. */
void baton__stage_call_end(struct stage_call *c, int result);

/* --- needs (pool.c) ------------------------------------------------------- */
/* Check n needs and copy them to dst sorted by the pools' creation order:
 * false (nothing copied that counts) if one is invalid or a pool repeats. */
bool baton__needs_sort(struct baton_stage_need *dst, const struct baton_stage_need *src, size_t n);
/* Count a stage or gate as a user of its pools (delta 1), or no more (-1). */
void baton__needs_use(const struct baton_stage_need *needs, size_t n, long delta);
/* Give back the units of the needs with (keep) or without (!keep)
 * BATON_STAGE_KEEP, in the reverse of the order they were taken. Inline:
 * a handler's end runs it, mostly with no needs. */
static inline void baton__needs_release(const struct baton_stage_need *needs, size_t n, bool keep)
{
	for (size_t i = n; i-- > 0;)
		if (((needs[i].flags & BATON_STAGE_KEEP) != 0) == keep)
			baton_pool_release(needs[i].pool, needs[i].units);
}

/* --- gates (gate.c) --------------------------------------------------------- */
/*
 * The tasks waiting are `passers` (its length is the gate's queue: a
 * waiter that leaves it any way, even freed by the scheduler's destroy, is
 * counted out), `running` the tasks inside; the counters read as a
 * stage's (baton_gate_snapshot).
 */
struct baton_gate {
	baton_spinlock_t lock;
	unsigned running, concurrency;
	size_t cap, limit; /* waiting tasks: at most cap, now limit */
	bool closed;
	struct baton_waitq passers, drainers;
	uint64_t submitted, rejected, completed, handler_ns, wait_ns;

	/* Fixed at creation. */
	struct baton_stage_need needs[BATON_STAGE_MAX_NEEDS]; /* by pool id */
	size_t nneeds;
	bool keeps; /* one of them is BATON_STAGE_KEEP */
	char name[BATON_NAME_MAX + 1];
};

struct stage_entry {
	void *item;
	struct stage_call *call; /* NULL: submitted, not called */
	int64_t t0;              /* accepted, CLOCK_MONOTONIC ns */
};

/* The runners of one worker of the stage (the only one when the stage has
 * no workers of its own): an item goes to the worker with the fewest busy
 * runners, so a worker held by a long handler does not collect the next
 * item while another stands idle. */
struct stage_slot {
	struct baton_waitq idle; /* its runners waiting for an item */
	unsigned nidle;          /* of them, counted (timed-out ones until they leave) */
	unsigned busy;           /* its runners holding an item (running or suspended) */
};

struct baton_stage {
	baton_spinlock_t lock;
	struct stage_entry *ring; /* cap entries; count of them from head */
	size_t cap, head, count, limit;
	unsigned running, concurrency;
	bool closed;
	bool active;              /* a dispatcher task exists (or is spawning) */
	unsigned nrunners;        /* runner tasks alive (spawning included) */
	unsigned next_slot;       /* round robin among equally busy workers */
	struct stage_slot *slots; /* nslots: one per worker of the stage, or 1 */
	unsigned nslots;
	struct baton_waitq producers, dispatcher, drainers;
	uint64_t submitted, rejected, completed, handler_ns, wait_ns, runners_started;
	uint64_t popped; /* items taken from the ring so far: the ring's
				   head is item number `popped` of all pushed */

	/* Fixed at creation. */
	struct baton_gate *gate; /* deprecated, fn NULL: all is forwarded to it */
	baton_sched_t *sched;
	baton_stage_fn fn;
	void *ctx;
	struct baton_task_attr task;
	int first_worker;  /* runners are pinned to these workers... */
	unsigned nworkers; /* ...if nworkers > 0 */
	unsigned flags;    /* BATON_STAGE_CANCEL_ABANDONED */
	struct baton_stage_need needs[BATON_STAGE_MAX_NEEDS]; /* by pool id */
	size_t nneeds;
	char name[BATON_NAME_MAX + 1];

	/* With a handler: told when the scheduler is destroyed (runner.c). */
	struct baton_sched_watch watch;
	struct baton_list runners; /* every runner's record, started or not */
};

/* Nothing queued, running, dispatching, or alive to take an item. */
static inline bool baton__stage_idle(const struct baton_stage *st)
{
	return !st->active && st->count == 0 && st->running == 0 && st->nrunners == 0;
}

/* Under the lock: claim the drainers into wl once the stage is idle. */
static inline void baton__stage_wake_drainers(struct baton_stage *st, struct baton_wakelist *wl)
{
	if (baton__stage_idle(st))
		baton__waitq_wake_all(&st->drainers, wl, BATON_OK);
}

/* pass.c: a deprecated stage without handler, made as a front for a gate
 * of the same attributes (attr checked, fn NULL). */
int baton__stage_create_gated(struct baton_stage **out, const struct baton_stage_attr *attr);

/* --- under the lock: the ring ------------------------------------------------
 * The helpers that wake tasks claim them into `wl`; the caller readies them
 * with baton__wakelist_run() once it has released the lock. */

static inline void baton__stage_push(struct baton_stage *st, void *item, struct stage_call *call,
				     int64_t now)
{
	struct stage_entry *e = &st->ring[(st->head + st->count) % st->cap];

	e->item = item;
	e->call = call;
	e->t0 = now;
	st->count++;
	st->submitted++;
}

/* Wake the dispatcher if it waits: it re-checks what it waits for. */
static inline void baton__stage_poke(struct baton_stage *st, struct baton_wakelist *wl)
{
	struct baton_waiter *w = baton__waitq_claim_first(&st->dispatcher);

	if (w)
		baton__waiter_wake(wl, w, BATON_OK);
}

/* Move waiting producers' items into free slots, oldest first. A
 * producer's amount says what its value is: 0 the item, 1 a call's record
 * (baton_stage_call). */
static inline void baton__stage_admit(struct baton_stage *st, int64_t now,
				      struct baton_wakelist *wl)
{
	struct baton_waiter *w;

	while (!st->closed && st->count < st->limit &&
	       (w = baton__waitq_claim_first(&st->producers)) != NULL) {
		struct stage_call *call = w->amount ? w->value : NULL;

		baton__stage_push(st, call ? call->item : w->value, call, now);
		baton__waiter_wake(wl, w, BATON_OK);
	}
}

/* stage.c: queue `item` (of `call`, or NULL) for task t, as submit does
 * (the arguments checked). */
int baton__stage_queue(struct baton_stage *st, struct baton_task *t, void *item,
		       struct stage_call *call, int64_t timeout_ns);

/* runner.c: the dispatcher and the runners. */
/* The call record of `item` if task t is a runner of st running the
 * handler of that called item now, else NULL: the runner's record is its
 * task's argument, so nothing is searched (baton_stage_ask). */
struct stage_call *baton__stage_current_call(struct baton_stage *st, struct baton_task *t,
					     void *item);
/* Under the lock, which it releases: give `item` (of `call`, or NULL),
 * counted as running by the caller, to the worker with the fewest busy runners (an idle runner there
 * or a new one). BATON_ENOMEM when no runner could be spawned: the item
 * still counts as running and the caller must run or take it back. */
int baton__stage_start_locked(struct baton_stage *st, void *item, struct stage_call *call);
/* Under the lock: true if a runner is linked in an idle queue (one whose
 * wait timed out too, until it has unlinked itself). */
bool baton__stage_runners_linked(const struct baton_stage *st);
/* Under the lock: tell every idle runner to end. */
void baton__stage_dismiss_idle(struct baton_stage *st, struct baton_wakelist *wl);
/* Spawn the dispatcher that a kick asked for (`active` set); on failure
 * clear `active` and return the error. Without the lock. */
int baton__stage_spawn_dispatcher(struct baton_stage *st);
/* The watch's `gone`: the scheduler was destroyed (stage.h rule 5). */
void baton__stage_sched_gone(struct baton_sched_watch *w);

#endif /* BATON_SRC_STAGE_INTERNAL_H */
