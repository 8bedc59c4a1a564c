/* SPDX-License-Identifier: MIT */
/**
 * @file baton/stage.h
 * stages, gates and resource pools: a program drawn as explicit
 * processing steps, each with its own bounded queue, a concurrency limit and
 * the resources it must hold before a task is spent on an item (a gate: a
 * step the calling task performs itself, rule 6).
 *
 * A generic pool of tasks can only throttle CPU. A stage knows what its step
 * needs: before one of its items gets a task, the stage's dispatcher takes a
 * concurrency slot of the stage and then every resource pool the stage
 * declares ("database connections", "in-flight requests"), in one global
 * order. Only then is a task given the item to run the handler (the
 * stage's handler tasks are kept across items); when the handler
 * returns, the resources go back (unless the stage declared them KEEP: they
 * then stay held until the program releases them, usually in a later stage).
 * A full queue refuses new items (backpressure) instead of growing. Limits,
 * queue length and pool capacities can be changed while items flow, and each
 * stage counts what it did (docs/stages.md draws a server this way).
 *
 * @code
 *     static void parse(void *item, void *ctx) { ... baton_stage_submit(
 *             (baton_stage_t *)ctx, item, -1); }     // on to the next stage
 *     static void query(void *item, void *ctx) { ... }  // holds a db unit
 *
 *     baton_pool_t *db;
 *     baton_stage_t *s_query, *s_parse;
 *     baton_pool_create(&db, "db connections", 2);
 *     struct baton_stage_need need = { db, 1, 0 };
 *     struct baton_stage_attr a;
 *     baton_stage_attr_init(&a);
 *     a.name = "query"; a.fn = query; a.concurrency = 8;
 *     a.queue_capacity = 64; a.needs = &need; a.nneeds = 1;
 *     baton_stage_create(&s_query, sched, &a);
 *     baton_stage_attr_init(&a);
 *     a.name = "parse"; a.fn = parse; a.ctx = s_query;
 *     baton_stage_create(&s_parse, sched, &a);
 *     ...
 *     if (baton_stage_submit(s_parse, req, 0) != BATON_OK)
 *         reply_busy(req);                    // full: the producer is told
 *     ...
 *     baton_stage_close(s_parse);              // from a task: then drain
 *     baton_stage_drain(s_parse, -1);
 *     baton_stage_close(s_query);
 *     baton_stage_drain(s_query, -1);
 * @endcode
 *
 * Timeouts, as in baton/sync.h: < 0 waits forever, 0 only tries
 * (BATON_EAGAIN), > 0 waits at most that long (BATON_ETIMEDOUT).
 *
 * Rules a caller must keep:
 *  1. Submit, pool acquire and drain block only in a task's own coroutine;
 *     from anywhere else they work with timeout 0 only (BATON_ENOSCHED
 *     otherwise); call and ask always wait, so only in a task (rule 7).
 *     Release, close, the setters and snapshots work from any thread.
 *  2. Items flow only while the stage's scheduler runs. A stage starts its
 *     dispatcher task when items arrive and lets it finish when the queue is
 *     empty; its handler tasks wait BATON_STAGE_RUNNER_IDLE_NS for more and
 *     then end, so baton_sched_run() returns once every stage has drained.
 *     Run the scheduler until the stages you destroy are idle (drain).
 *  3. A handler must not wait without a timeout for anything that needs a
 *     resource its own stage holds (for instance submit with timeout -1 to a
 *     full stage whose items wait for the same pool): that is a cycle.
 *     Acquiring pools in one global order (creation order) prevents cycles
 *     among dispatchers, not among handlers. Likewise a handler that drains
 *     its own stage waits for itself (use a timeout, or drain elsewhere).
 *  4. A KEEP resource is released by the program with baton_pool_release()
 *     (any thread, any task): the stage does not know when its use ends.
 *     After a pass, the pass's kept token does it once (Kept units, below).
 *  5. Destroy a stage when it is idle: nothing queued, nothing running, no
 *     submitter or drainer waiting (BATON_EBUSY otherwise). Drain it before
 *     its scheduler is destroyed where the items matter. A scheduler's
 *     destroy frees the tasks blocked on its stages (sched.h rule 5): a
 *     submitter, drainer or task waiting to pass a gate leaves the queue.
 *     A stage with a handler also loses its own tasks, the dispatcher and
 *     the handler tasks (busy in the handler, waiting for an item, or not
 *     yet started): it hears of the destroy, forgets them, drops the items
 *     still queued (they, and the items whose handler never returned, move
 *     from submitted to rejected) and is closed, so it is idle and can be
 *     destroyed; after that destroy is the only call it is useful for. A
 *     freed task that had entered a gate still counts as running there
 *     until the program leaves with its pass (the gate cannot know the
 *     task is gone), and the pool units freed tasks held
 *     stay in use until released. A call whose item was queued then ends
 *     with BATON_ESHUTDOWN; the record of a call whose handler task was
 *     freed, or whose caller was freed too, is lost with them (a few
 *     dozen bytes; its abandon function does not run). Destroy a pool
 *     when no stage or gate lists it, no
 *     unit is in use and nobody waits.
 *  6. A step that the calling task performs itself, without a hand-off
 *     (a connection task reading its socket), is a gate (baton_gate_t,
 *     its own section below), not a stage: a bound with a queue of
 *     waiting tasks, a concurrency limit, needs and counters, that tasks
 *     pass through with baton_gate_enter() and baton_gate_leave(). A
 *     stage always has a handler. Deprecated: baton_stage_create() with
 *     attr.fn NULL still makes a stage that tasks pass through (it
 *     forwards to a gate of its own: baton_stage_enter, baton_stage_leave
 *     and the common calls work; submit and call are refused with
 *     BATON_EINVAL), until the next release (NEWS.md).
 *
 * Passing through a gate, when the step's work is best done where the
 * caller already is:
 *
 * @code
 *     struct baton_gate_pass p = BATON_GATE_PASS_INIT;
 *     if (baton_gate_enter(g_read, &p, timeout) != BATON_OK)
 *         return refuse();                    // full, timed out or closed
 *     read_request(conn);                     // the step's own work
 *     baton_gate_leave(&p, NULL);
 * @endcode
 *
 * Calling a stage, when the caller needs the handler's work done before it
 * goes on (a connection task that hands a request to compute workers and
 * writes the answer): the item carries the handler's results, and the
 * call returns once the handler has returned.
 *
 * @code
 *     struct job *j = job_new(req);           // on the heap: see rule 8
 *     struct baton_stage_call c = BATON_STAGE_CALL_INIT;
 *     c.item = j;
 *     c.abandon = job_free;                   // if we leave before its end
 *     c.deadline = now + budget;              // for the result
 *     c.kept = p.kept;                        // the read gate's KEEP units
 *     rc = baton_stage_call(s_compute, &c, queue_timeout);
 *     if (rc == BATON_OK)
 *         answer(j->status, j->body), job_free(j);
 *     else if (!c.queued)
 *         busy(), job_free(j);                // refused: j is still ours
 *     else                                    // ETIMEDOUT, ECANCELED (and
 *         too_late();                         // not ESHUTDOWN): job_free later
 * @endcode
 *
 * Kept units: a KEEP need's units outlive the step that took them (rule
 * 4). baton_gate_leave() puts them in the pass (p.kept), a token that
 * hands them on: released by baton_stage_kept_release() once, or given to
 * a call, which releases them where its item finishes (its handler
 * returned, or it was dropped), whatever the caller does meanwhile.
 *
 *  7. A call waits in a task only (BATON_ENOSCHED elsewhere, whatever the
 *     timeout). timeout_ns bounds the wait for queue room as for submit
 *     (0: only tries, BATON_EAGAIN); c.deadline (CLOCK_MONOTONIC ns, < 0:
 *     none) bounds the wait for the handler (BATON_ETIMEDOUT). The call's
 *     result is BATON_OK once the handler has returned: what the handler
 *     produced it writes into the item.
 *  8. The item belongs to the stage from the moment it is queued
 *     (c.queued set) until the call returns BATON_OK. A caller that leaves
 *     earlier (BATON_ETIMEDOUT past the deadline, BATON_ECANCELED when its
 *     task is cancelled) leaves it to the stage for good: an item whose handler had not started is not handled;
 *     where the item finishes, its kept units go back and c.abandon (if
 *     not NULL) receives it, on the stage's task. So an item that may be
 *     abandoned must not live in the caller's frame, nor anything it
 *     points to that the caller frees. The handler is not interrupted,
 *     unless the stage was created with BATON_STAGE_CANCEL_ABANDONED: its
 *     task is then cancelled as the caller leaves (sched.h's cancellation:
 *     a handler that computes without blocking polls it).
 *  9. While it waits, the caller answers its handler's questions
 *     (baton_stage_ask) in its own task: the handler borrows the caller's
 *     task for work that belongs there, and waits for it.
 */
#ifndef BATON_STAGE_H
#define BATON_STAGE_H

#include <stddef.h>
#include <stdint.h>

#include <baton/error.h>
#include <baton/sched.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BATON_NAME_MAX 48 /**< bytes of a stage or pool name, without NUL */

/* --- resource pools -------------------------------------------------------- */
/** A resource pool (opaque). */
typedef struct baton_pool baton_pool_t;

/** A snapshot of a pool. */
struct baton_pool_stats {
	const char *name;  /**< the pool's, valid until it is destroyed */
	long capacity;     /**< units it may hand out now */
	long in_use;       /**< units held now (may exceed a shrunk capacity) */
	long waiters;      /**< acquirers blocked now */
	uint64_t acquired; /**< successful acquisitions so far */
	uint64_t refused;  /**< acquisitions that timed out or would block */
};

/** A pool of `capacity` units named `name` (1..BATON_NAME_MAX bytes).
 * @param out receives the new pool
 * @param name the pool's name (1..BATON_NAME_MAX bytes, copied)
 * @param capacity its units (>= 0)
 * @return BATON_OK, or an error: BATON_EINVAL (NULL out or name, bad name,
 * capacity < 0), BATON_ENOMEM. */
BATON_API int baton_pool_create(baton_pool_t **out, const char *name, long capacity);

/** Take n units (n >= 1) at once, behind earlier acquirers (FIFO). n may
 * exceed the capacity now: it is served if the capacity grows enough.
 * @param p the pool
 * @param n units to take (>= 1)
 * @param timeout_ns < 0 waits forever, 0 only tries, > 0 waits at most
 * that many nanoseconds
 * @return BATON_OK, or an error: BATON_EINVAL, BATON_EAGAIN (timeout 0, not
 * grantable now), BATON_ETIMEDOUT, BATON_ENOSCHED, BATON_ENOMEM. */
BATON_API int baton_pool_acquire(baton_pool_t *p, long n, int64_t timeout_ns);

/** Give back n units and serve the waiters that now fit.
 * @param p the pool
 * @param n units to give back (>= 1)
 * @return BATON_OK, or an error: BATON_EINVAL (NULL p, n < 1), BATON_EPERM (n
 * exceeds the units in use; nothing is released). */
BATON_API int baton_pool_release(baton_pool_t *p, long n);

/** Change the capacity (>= 0). Growing serves waiters at once; shrinking
 * below the units in use takes nothing back: new acquisitions wait until
 * enough have been released.
 * @param p the pool
 * @param capacity the new capacity (>= 0)
 * @return BATON_OK, or an error: BATON_EINVAL. */
BATON_API int baton_pool_set_capacity(baton_pool_t *p, long capacity);

/** Fill *out; every field from the same instant.
 * @param p the pool
 * @param out filled with the statistics
 * @return BATON_OK, or an error: BATON_EINVAL. */
BATON_API int baton_pool_snapshot(baton_pool_t *p, struct baton_pool_stats *out);

/** Free it. NULL is a no-op.
 * @param p the pool
 * @return BATON_OK, or an error: BATON_EBUSY (units in use, waiters, or a
 * stage or gate lists it). */
BATON_API int baton_pool_destroy(baton_pool_t *p);

/* --- stages ---------------------------------------------------------------- */
/** A stage (opaque). */
typedef struct baton_stage baton_stage_t;

/** The step: runs in its own task, once per item. */
typedef void (*baton_stage_fn)(void *item, void *ctx);

/** Keep the units after the handler returns (rule 4). */
#define BATON_STAGE_KEEP 1u
/** The most needs a stage has. */
#define BATON_STAGE_MAX_NEEDS 8

/** A resource the stage holds while (KEEP: from before) its handler runs. */
struct baton_stage_need {
	baton_pool_t *pool; /**< the pool */
	long units;         /**< >= 1 */
	unsigned flags;     /**< 0 or BATON_STAGE_KEEP */
};

/** Attributes of a stage: baton_stage_attr_init() sets the defaults. */
struct baton_stage_attr {
	const char *name;                     /**< 1..BATON_NAME_MAX bytes, copied */
	baton_stage_fn fn;                    /**< the handler */
	void *ctx;                            /**< its second argument */
	size_t queue_capacity;                /**< items waiting at most (>= 1) */
	unsigned concurrency;                 /**< handlers running at most (>= 1) */
	const struct baton_stage_need *needs; /**< nneeds of them, copied */
	size_t nneeds;                        /**< <= BATON_STAGE_MAX_NEEDS, distinct pools */
	struct baton_task_attr task;          /**< dispatcher and handler tasks */
	int first_worker;                     /**< with nworkers > 0: handlers run on workers */
	unsigned nworkers;                    /**< [first_worker, first_worker + nworkers), each
				   item on the one with the fewest handlers
				   busy; 0 without fn (deprecated, rule 6) */
	unsigned flags;                       /**< 0 or BATON_STAGE_CANCEL_ABANDONED */
};
/** The defaults of struct baton_stage_attr, as an initialiser. */
#define BATON_STAGE_ATTR_INIT                                                   \
	{                                                                       \
		NULL, NULL, NULL, 64, 1, NULL, 0, BATON_TASK_ATTR_INIT, 0, 0, 0 \
	}

/** A called item's handler whose caller leaves (rule 8) is cancelled
 * (baton_task_cancel): its blocking calls return BATON_ECANCELED. The
 * stage's handler tasks take their handles for it, and one whose handler
 * was cancelled ends after that item. */
#define BATON_STAGE_CANCEL_ABANDONED 1u

/** The defaults (queue 64, concurrency 1, no needs, default tasks; name
 * and fn still to set) in *a: the attribute convention of every module
 * (docs/architecture.md).
 * @param a the attributes to set to the defaults
 * @return BATON_OK, or an error: BATON_EINVAL (NULL a). */
static inline int baton_stage_attr_init(struct baton_stage_attr *a)
{
	const struct baton_stage_attr d = BATON_STAGE_ATTR_INIT;

	if (a == NULL)
		return BATON_EINVAL;
	*a = d;
	return BATON_OK;
}

/** A handler task that finds no item waits this long for one, then ends. */
#define BATON_STAGE_RUNNER_IDLE_NS 2000000LL

/** The largest queue_capacity a stage takes. */
#define BATON_STAGE_MAX_CAPACITY ((size_t)1 << 24)

/** Counters of one stage. A snapshot is taken under the stage's lock, so its
 * fields belong to one instant: submitted == completed + running + queued
 * (an item whose resources are being acquired is still queued), and the
 * submit calls that returned == submitted + rejected (+ failures that are
 * not refusals: EINVAL, ENOSCHED, ENOMEM). Pools have their own snapshots.
 * Times are sums: divide by completed (handler_ns) or by completed +
 * running (wait_ns) for means. A gate's snapshot fills the same fields
 * (baton_gate_snapshot): read "item" as a passing task and "handler" as
 * its step; a task that waits for a slot counts as queued and submitted,
 * and if its wait is refused it moves from submitted to rejected. */
struct baton_stage_stats {
	const char *name;         /**< the stage's, valid until it is destroyed */
	size_t queued;            /**< items in the queue now */
	size_t queue_limit;       /**< items it may hold now */
	unsigned running;         /**< handlers running now */
	unsigned concurrency;     /**< handlers that may run at once now */
	int closed;               /**< 1 once baton_stage_close() was called */
	uint64_t submitted;       /**< items accepted */
	uint64_t rejected;        /**< submits refused: full, timed out or closed */
	uint64_t completed;       /**< handlers returned */
	uint64_t handler_ns;      /**< sum of handler times (call..return) */
	uint64_t wait_ns;         /**< sum of queue waits (accepted..handed to its
				  task), resource waits included */
	unsigned runners;         /**< handler tasks alive now (busy or idle) */
	uint64_t runners_started; /**< handler tasks spawned so far */
};

/** Create a stage whose tasks run on scheduler s. Without attr.fn
 * (deprecated, rule 6): a stage that tasks pass through, which forwards to
 * a gate of its own (use baton_gate_create instead).
 * @param out receives the new stage
 * @param s the scheduler
 * @param attr the attributes, or NULL for the defaults
 * @return BATON_OK, or an error: BATON_EINVAL (NULL argument, bad name,
 * capacity 0 or above BATON_STAGE_MAX_CAPACITY, concurrency 0, too many needs,
 * a NULL pool, units < 1, unknown flags, a pool listed twice, workers or
 * attr.flags given without fn), BATON_ENOMEM. */
BATON_API int baton_stage_create(baton_stage_t **out, baton_sched_t *s,
				 const struct baton_stage_attr *attr);

/** Queue `item` (any pointer, NULL too). With the queue full, wait up to
 * timeout_ns for room; waiting submitters are admitted in arrival order.
 * @param st the stage
 * @param item the item for the handler (any pointer, NULL too)
 * @param timeout_ns < 0 waits forever, 0 only tries, > 0 waits at most
 * that many nanoseconds
 * @return BATON_OK, or an error: BATON_EINVAL (also a stage without handler:
 * deprecated, rule 6),
 * BATON_EAGAIN (timeout 0 and full), BATON_ETIMEDOUT, BATON_ESHUTDOWN (closed,
 * before or while waiting), BATON_ENOSCHED, BATON_ENOMEM (no dispatcher task
 * could be started; nothing queued). EAGAIN, ETIMEDOUT and ESHUTDOWN count as
 * rejected. */
BATON_API int baton_stage_submit(baton_stage_t *st, void *item, int64_t timeout_ns);

/** Stop taking items: later submits and those waiting return
 * BATON_ESHUTDOWN; queued items are still processed. Any thread.
 * @param st the stage
 * @return BATON_OK, or an error: BATON_EINVAL, BATON_ESHUTDOWN (already
 * closed). */
BATON_API int baton_stage_close(baton_stage_t *st);

/** Wait until nothing is queued or running (the stage is idle; after close
 * it stays so).
 * @param st the stage
 * @param timeout_ns < 0 waits forever, 0 only tries, > 0 waits at most
 * that many nanoseconds
 * @return BATON_OK, or an error: BATON_EINVAL, BATON_EAGAIN (timeout 0, not
 * idle), BATON_ETIMEDOUT, BATON_ENOSCHED, BATON_ENOMEM. */
BATON_API int baton_stage_drain(baton_stage_t *st, int64_t timeout_ns);

/** Change how many handlers may run at once (>= 1). Raising starts queued
 * items at once; lowering lets running handlers finish.
 * @param st the stage
 * @param n handlers that may run at once (>= 1)
 * @return BATON_OK, or an error: EINVAL. */
BATON_API int baton_stage_set_concurrency(baton_stage_t *st, unsigned n);

/** Change how many items the queue may hold (1..queue_capacity given at
 * creation). Lowering below the items queued refuses new ones until the
 * queue is shorter.
 * @param st the stage
 * @param n items the queue may hold
 * @return BATON_OK, or an error: BATON_EINVAL. */
BATON_API int baton_stage_set_queue_limit(baton_stage_t *st, size_t n);

/* --- gates: bounds that tasks pass through --------------------------------- */
/** A gate (opaque): a step that the calling task performs itself (rule 6).
 * It has what a stage has but the handler: a concurrency limit, a queue
 * of waiting tasks (FIFO, at most its queue limit), needs taken on enter,
 * counters, close and drain. It needs no scheduler of its own: tasks of
 * any scheduler pass through it. */
typedef struct baton_gate baton_gate_t;

/** Units of a gate's KEEP needs, held on after its step: a token that is
 * released once (baton_stage_kept_release) or handed to a call. */
struct baton_stage_kept {
	baton_gate_t *gate; /**< whose KEEP needs are held; NULL: none */
};
/** An empty token, as an initialiser. */
#define BATON_STAGE_KEPT_INIT \
	{                     \
		NULL          \
	}

/** Attributes of a gate: baton_gate_attr_init() sets the defaults. */
struct baton_gate_attr {
	const char *name;                     /**< 1..BATON_NAME_MAX bytes, copied */
	size_t queue_capacity;                /**< tasks waiting at most (>= 1) */
	unsigned concurrency;                 /**< tasks inside at most (>= 1) */
	const struct baton_stage_need *needs; /**< nneeds of them, copied */
	size_t nneeds;                        /**< <= BATON_STAGE_MAX_NEEDS, distinct pools */
};
/** The defaults of struct baton_gate_attr, as an initialiser. */
#define BATON_GATE_ATTR_INIT         \
	{                            \
		NULL, 64, 1, NULL, 0 \
	}

/** The defaults (queue 64, concurrency 1, no needs; name still to set)
 * in *a.
 * @param a the attributes to set to the defaults
 * @return BATON_OK, or an error: BATON_EINVAL (NULL a). */
static inline int baton_gate_attr_init(struct baton_gate_attr *a)
{
	const struct baton_gate_attr d = BATON_GATE_ATTR_INIT;

	if (a == NULL)
		return BATON_EINVAL;
	*a = d;
	return BATON_OK;
}

/** A task's passage through a gate, from enter to leave. Initialise it
 * with BATON_GATE_PASS_INIT; t0 may instead be set to when the step began
 * (a CLOCK_MONOTONIC reading in ns, such as the end a previous leave
 * returned), which saves the clock read. */
struct baton_gate_pass {
	baton_gate_t *gate;           /**< set by enter, cleared by leave */
	int64_t t0;                   /**< when the step began; 0: now, at enter */
	struct baton_stage_kept kept; /**< set by leave if the gate has KEEP
					 needs: their units, to hand on */
};
/** A passage not entered, t0 0, as an initialiser. */
#define BATON_GATE_PASS_INIT                   \
	{                                      \
		NULL, 0, BATON_STAGE_KEPT_INIT \
	}

/** Create a gate.
 * @param out receives the new gate
 * @param attr the attributes (baton_gate_attr_init, then name set)
 * @return BATON_OK, or an error: BATON_EINVAL (NULL argument, bad name,
 * capacity 0 or above BATON_STAGE_MAX_CAPACITY, concurrency 0, too many
 * needs, a NULL pool, units < 1, unknown need flags, a pool listed twice),
 * BATON_ENOMEM. */
BATON_API int baton_gate_create(baton_gate_t **out, const struct baton_gate_attr *attr);

/** Take a concurrency slot of g and then its needs (in the pools' global
 * order), and count the calling task as running. With every slot taken,
 * wait for one behind the tasks already waiting (FIFO), at most timeout_ns
 * in all, needs included; at most queue_limit tasks wait (they count as
 * queued): with that many waiting, enter is refused at once, whatever the
 * timeout. Closing the gate refuses the tasks that wait too. A task that
 * holds the slot while it waits for a pool counts as running.
 * @param g the gate
 * @param p the passage, zeroed or left
 * @param timeout_ns < 0 waits forever, 0 only tries, > 0 waits at most
 * that many nanoseconds
 * @return BATON_OK, or an error: BATON_EINVAL (NULL, p in use),
 * BATON_EAGAIN (timeout 0 and no slot or unit now, or the queue full),
 * BATON_ETIMEDOUT, BATON_ESHUTDOWN, BATON_ENOSCHED (timeout not 0 outside
 * a task), BATON_ENOMEM. EAGAIN, ETIMEDOUT and ESHUTDOWN count as
 * rejected. */
BATON_API int baton_gate_enter(baton_gate_t *g, struct baton_gate_pass *p, int64_t timeout_ns);

/** End the passage: give back the needs that are not KEEP and the slot
 * (the first waiting task gets it), count the step completed with its time
 * since p->t0. The KEEP needs' units stay held, in p->kept (release or
 * hand on that token before p enters again: a second leave overwrites
 * it). *end_ns (if not NULL) receives the clock reading taken as the
 * step's end. Any thread.
 * @param p the passage entered
 * @param end_ns receives the step's end on the clock, or NULL
 * @return BATON_OK, or an error: BATON_EINVAL (NULL p, or p not entered: a
 * second leave). */
BATON_API int baton_gate_leave(struct baton_gate_pass *p, int64_t *end_ns);

/** Refuse new tasks: later enters and the tasks waiting return
 * BATON_ESHUTDOWN; the tasks inside finish their step. Any thread.
 * @param g the gate
 * @return BATON_OK, or an error: BATON_EINVAL, BATON_ESHUTDOWN (already
 * closed). */
BATON_API int baton_gate_close(baton_gate_t *g);

/** Wait until no task waits or is inside.
 * @param g the gate
 * @param timeout_ns < 0 waits forever, 0 only tries, > 0 waits at most
 * that many nanoseconds
 * @return BATON_OK, or an error: BATON_EINVAL, BATON_EAGAIN (timeout 0, not
 * idle), BATON_ETIMEDOUT, BATON_ENOSCHED, BATON_ENOMEM. */
BATON_API int baton_gate_drain(baton_gate_t *g, int64_t timeout_ns);

/** Change how many tasks may be inside at once (>= 1). Raising admits
 * waiting tasks at once; lowering lets the tasks inside finish. Any
 * thread.
 * @param g the gate
 * @param n tasks inside at most (>= 1)
 * @return BATON_OK, or an error: BATON_EINVAL. */
BATON_API int baton_gate_set_concurrency(baton_gate_t *g, unsigned n);

/** Change how many tasks may wait (1..queue_capacity given at creation).
 * Lowering below the tasks waiting refuses new ones until fewer wait. Any
 * thread.
 * @param g the gate
 * @param n tasks that may wait
 * @return BATON_OK, or an error: BATON_EINVAL. */
BATON_API int baton_gate_set_queue_limit(baton_gate_t *g, size_t n);

/** Fill *out with the gate's counters, in a stage's snapshot (struct
 * baton_stage_stats: a passing task is an item, its step the handler;
 * runners and runners_started are 0). Any thread.
 * @param g the gate
 * @param out filled with the statistics
 * @return BATON_OK, or an error: BATON_EINVAL. */
BATON_API int baton_gate_snapshot(baton_gate_t *g, struct baton_stage_stats *out);

/** Free an idle gate: no task waiting or inside. NULL is a no-op.
 * @param g the gate
 * @return BATON_OK, or an error: BATON_EBUSY. */
BATON_API int baton_gate_destroy(baton_gate_t *g);

/** Give back the units the token holds and empty it; an empty token is a
 * no-op, so they are released exactly once. Any thread.
 * @param k the token of kept units
 * @return BATON_OK, or an error: BATON_EINVAL (NULL k). */
BATON_API int baton_stage_kept_release(struct baton_stage_kept *k);

/* --- stages passed through (deprecated: gates) ------------------------------ */
/** A task's passage through a stage created without handler (deprecated,
 * rule 6: struct baton_gate_pass). Initialise it with
 * BATON_STAGE_PASS_INIT; t0 as in struct baton_gate_pass. */
struct baton_stage_pass {
	baton_stage_t *stage;         /**< set by enter, cleared by leave */
	int64_t t0;                   /**< when the step began; 0: now, at enter */
	struct baton_stage_kept kept; /**< set by leave if the stage has KEEP
					 needs: their units, to hand on */
};
/** A passage not entered, t0 0, as an initialiser. */
#define BATON_STAGE_PASS_INIT                  \
	{                                      \
		NULL, 0, BATON_STAGE_KEPT_INIT \
	}

/** Deprecated (rule 6): baton_gate_enter() on the gate of a stage created
 * without handler.
 * @param st the stage
 * @param p the passage, zeroed or left
 * @param timeout_ns as baton_gate_enter()'s
 * @return as baton_gate_enter(); BATON_EINVAL also for a stage with a
 * handler. */
BATON_API int baton_stage_enter(baton_stage_t *st, struct baton_stage_pass *p, int64_t timeout_ns);

/** Deprecated (rule 6): baton_gate_leave() for a stage's passage.
 * @param p the passage entered
 * @param end_ns receives the step's end on the clock, or NULL
 * @return as baton_gate_leave(). */
BATON_API int baton_stage_leave(struct baton_stage_pass *p, int64_t *end_ns);

/* --- calling a stage --------------------------------------------------------- */
/** A call of a stage (rules 7 and 8). The caller's, in its frame if it
 * likes: the stage keeps its own record of the call. */
struct baton_stage_call {
	void *item;                   /**< in: the handler's argument */
	void (*abandon)(void *item);  /**< in: ends an item its caller left
					(rule 8); NULL: nothing to do */
	int64_t deadline;             /**< in: for the result; < 0: none */
	struct baton_stage_kept kept; /**< in: units to release where the item
					 finishes; emptied once it is queued */
	int queued;                   /**< out: 1 once the item was queued */
};
/** A call with no item, no deadline, as an initialiser. */
#define BATON_STAGE_CALL_INIT                            \
	{                                                \
		NULL, NULL, -1, BATON_STAGE_KEPT_INIT, 0 \
	}

/** Queue c->item as baton_stage_submit() does (timeout_ns for room) and
 * wait until its handler has returned, at most until c->deadline.
 * BATON_OK: the handler returned, the item is the caller's again, the
 * kept units are released. Errors, with c->queued 0 (the item and the
 * kept units are still the caller's): BATON_EINVAL (NULL st or c, a stage
 * without handler: deprecated, rule 6), BATON_EAGAIN (timeout 0 and full), BATON_ETIMEDOUT,
 * BATON_ESHUTDOWN (closed), BATON_ECANCELED, BATON_ENOSCHED (not in a
 * task), BATON_ENOMEM. With c->queued 1 (the item is the stage's, rule 8):
 * BATON_ETIMEDOUT (the deadline passed), BATON_ECANCELED (the calling task
 * was cancelled), and BATON_ESHUTDOWN: the stage's scheduler was destroyed
 * with the item queued (rule 5; it then is the caller's again, not
 * handled). Without memory for the deadline's timer the call waits for the
 * handler without it.
 * @param st the stage
 * @param c the call: its item, deadline and outcome
 * @param timeout_ns < 0 waits forever, 0 only tries, > 0 waits at most
 * that many nanoseconds
 * @return BATON_OK, or an error as above */
BATON_API int baton_stage_call(baton_stage_t *st, struct baton_stage_call *c, int64_t timeout_ns);

/** In the handler of a called item, in the handler's own task (the stage
 * hands it the call's record there: nothing is searched): have the
 * caller, waiting in
 * baton_stage_call(), run fn(arg) in its own task, and return what fn
 * returns (a streamed answer whose pieces the caller writes: the caller's
 * socket is its worker's). The handler waits for it without a timeout;
 * fn runs at most until the caller's deadline has passed, and not at all
 * after it: the call then ends as rule 8 says and the question gets
 * BATON_ECANCELED. arg must stay valid and addressable from the caller's
 * task while it waits (not in a copy-stack handler's frame). One question
 * at a time per call.
 * @param st the stage
 * @param item the called item being handled
 * @param fn the function the caller runs
 * @param arg its argument
 * @return what fn returns, or an error: BATON_EINVAL (NULL st or fn; not
 * in the task running the handler of item, a called item of st),
 * BATON_ENOSCHED, BATON_ECANCELED (the
 * caller left), BATON_EBUSY (a question is already waiting). */
BATON_API int baton_stage_ask(baton_stage_t *st, void *item, int (*fn)(void *arg), void *arg);

/** Fill *out (see struct baton_stage_stats).
 * @param st the stage
 * @param out filled with the statistics
 * @return BATON_OK, or an error: BATON_EINVAL. */
BATON_API int baton_stage_snapshot(baton_stage_t *st, struct baton_stage_stats *out);

/** Free an idle stage (rule 5). NULL is a no-op.
 * @param st the stage
 * @return BATON_OK, or an error: BATON_EBUSY. */
BATON_API int baton_stage_destroy(baton_stage_t *st);

#ifdef __cplusplus
}
#endif

#endif /* BATON_STAGE_H */
