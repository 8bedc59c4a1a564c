/* SPDX-License-Identifier: MIT */
/**
 * @file baton/sched.h
 * schedulers: run many coroutines ("tasks") on one thread or
 * on every core, switching to another task whenever one blocks.
 *
 * A scheduler has N workers, each a thread with its own run queue. With one
 * worker the scheduler runs entirely on the thread that calls
 * baton_sched_run(); with more, that thread is worker 0 and N-1 threads are
 * started for the others. A task belongs to one worker at a time: its
 * worker's run queue is touched only by that worker (no lock, no atomic
 * read-modify-write); a task woken from another worker is handed over
 * through the owner's multi-producer inbox and event count, which is also
 * what an idle worker sleeps on. Idle workers ask busy ones for work, and the
 * busy worker hands half of its runnable tasks over within a few dozen
 * dispatches.
 *
 * A task that blocks or yields switches straight to the next runnable task
 * of its worker: one context switch per hop. A task woken by a task of
 * its worker runs next, before the queue (at most BATON_SCHED_RUNNEXT_MAX
 * times in a row, then the queue's oldest task gets its turn); a task woken
 * from another worker moves to the waker's worker when it can, so tasks
 * that talk to each other end up on one worker.
 *
 * @code
 *     static void hello(void *arg)
 *     {
 *         printf("task %ld\n", (long)arg);
 *         baton_sched_sleep(1000000);            // 1 ms; others run meanwhile
 *     }
 *
 *     baton_sched_t *s;
 *     struct baton_sched_attr attr;
 *     baton_sched_attr_init(&attr);
 *     attr.workers = 0;                          // one per core
 *     if (baton_sched_create(&s, &attr) != BATON_OK)
 *         abort();
 *     for (long i = 0; i < 100; i++)
 *         baton_sched_spawn(s, NULL, hello, (void *)i);
 *     baton_sched_run(s);                        // returns when all are done
 *     baton_sched_destroy(s);
 * @endcode
 *
 * Tasks block on the primitives of baton/chan.h and baton/sync.h and on
 * baton_sched_sleep(); every blocking call takes a timeout, and a task that
 * gave out its handle can be cancelled (baton_task_cancel, below). A task
 * spawned with an id (baton_task_spawn) can be joined for its result,
 * cancelled by whoever holds the id, and put in a group that waits for its
 * children and cancels the rest on a failure ("tasks you can hold").
 *
 * Rules a caller must keep:
 *  1. The in-task calls (yield, sleep, and every blocking primitive) are made
 *     from a task's own coroutine; elsewhere (another thread, or a plain
 *     coroutine the task resumed) they return BATON_ENOSCHED.
 *  2. Both coroutine models run as tasks. A stackful task may move to
 *     another worker whenever it is runnable. A copy-stack task's frames live
 *     at its worker's shared-stack addresses, so it moves only before it
 *     first runs; after that it stays with its worker.
 *  3. A task must not block its worker's thread in a system call or a
 *     pthread lock for long: the other tasks of that worker wait meanwhile.
 *  4. Do not keep pointers to thread-local storage across a blocking call:
 *     the task may continue on another thread.
 *  5. baton_sched_destroy() frees every task that had not finished,
 *     without running or unwinding it (as baton_coro_destroy does):
 *     runnable ones, and blocked ones, which leave the wait queues of their
 *     primitives (channels, sync objects, stages, I/O handles, sleeps), so
 *     those can be destroyed afterwards. Whatever such a task held (memory,
 *     a mutex, a pool's units) stays held; a stage with a handler forgets
 *     its own tasks and can be destroyed (baton/stage.h rule 5). No other
 *     thread may use the primitives those tasks wait on during destroy.
 *     Let tasks finish first where their cleanup matters (baton_sched_stop()
 *     ends a run that still has blocked tasks).
 *  6. Tasks share their worker's floating-point control state (rounding
 *     mode, exception masks) by default, as Go's goroutines and most
 *     coroutine runtimes do: a task runs in the state its worker's thread
 *     had when the run started (worker 0: the thread that calls
 *     baton_sched_run; the others are started by it and begin in its
 *     state), and a switch between two such tasks does no FP work. Such a
 *     task must not change that state. A task that does (fesetround,
 *     feenableexcept, fesetenv...) is spawned with BATON_TASK_OWN_FPENV:
 *     its state is its own (it starts in its worker's), kept across its
 *     switches and moves, and never seen by other tasks, which find their
 *     worker's state again after it. (Up to 0.1 each task kept its own
 *     state, stored and reloaded at every switch; see NEWS.md.) The
 *     attribute's coro.flags may not also ask for
 *     BATON_CORO_SHARED_FPENV. With the ucontext switch every context
 *     keeps the state it was created in (a task: its spawner's).
 */
#ifndef BATON_SCHED_H
#define BATON_SCHED_H

#include <stdint.h>

#include <baton/coro.h>
#include <baton/error.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A scheduler (opaque). */
typedef struct baton_sched baton_sched_t;

/** The body of a task. */
typedef void (*baton_task_fn)(void *arg);

/** The most workers a scheduler has. */
#define BATON_SCHED_MAX_WORKERS 1024

/** Attributes of a scheduler: baton_sched_attr_init() sets the defaults. */
struct baton_sched_attr {
	unsigned workers; /**< 0 = one per online CPU; 1 = single-thread */
};
/** The defaults of struct baton_sched_attr, as an initialiser. */
#define BATON_SCHED_ATTR_INIT \
	{                     \
		1             \
	}

/** The defaults (one worker) in *a: the attribute
 * convention of every module (docs/architecture.md).
 * @param a the attributes to set to the defaults
 * @return BATON_OK, or an error: BATON_EINVAL
 * (NULL a). */
static inline int baton_sched_attr_init(struct baton_sched_attr *a)
{
	const struct baton_sched_attr d = BATON_SCHED_ATTR_INIT;

	if (a == NULL)
		return BATON_EINVAL;
	*a = d;
	return BATON_OK;
}

/* Spawn options: the coroutine to create and where to start it. */
/** baton_task_attr.worker: no worker chosen. */
#define BATON_SCHED_ANY_WORKER (-1)
/** The task stays on the worker it starts on: it is never stolen and does
 * not follow the task that wakes it (to keep I/O apart from compute). */
#define BATON_TASK_BOUND 1u
/** The task keeps a floating-point control state of its own (rule 6): it
 * may change the rounding mode or the exception masks, and the change
 * stays with it across its blocking calls, yields and moves between
 * workers, and never reaches other tasks or the worker. Costs an FP state
 * store and reload at each switch to and from the task. */
#define BATON_TASK_OWN_FPENV 2u
/** Spawn options: the coroutine to create and where to start it. */
struct baton_task_attr {
	struct baton_coro_attr coro; /**< model, stack size, name */
	int worker;                  /**< BATON_SCHED_ANY_WORKER: the spawning task's worker,
		       or round-robin when spawned from outside a task */
	unsigned flags;              /**< 0, or BATON_TASK_BOUND and BATON_TASK_OWN_FPENV */
};
/** The defaults of struct baton_task_attr, as an initialiser. */
#define BATON_TASK_ATTR_INIT                                    \
	{                                                       \
		BATON_CORO_ATTR_INIT, BATON_SCHED_ANY_WORKER, 0 \
	}

/** The defaults (a stackful coroutine with the default stack, any worker,
 * no flags) in *a.
 * @param a the attributes to set to the defaults
 * @return BATON_OK, or an error: BATON_EINVAL (NULL a). */
static inline int baton_task_attr_init(struct baton_task_attr *a)
{
	const struct baton_task_attr d = BATON_TASK_ATTR_INIT;

	if (a == NULL)
		return BATON_EINVAL;
	*a = d;
	return BATON_OK;
}

/** Create a scheduler; attr may be NULL (one worker).
 * @param out receives the new scheduler
 * @param attr the attributes, or NULL for the defaults
 * @return BATON_OK, or an error: BATON_EINVAL (NULL out, workers >
 * BATON_SCHED_MAX_WORKERS), BATON_ENOMEM. The reactor is chosen apart, with
 * baton_io_set_backend() of baton/io.h. */
BATON_API int baton_sched_create(baton_sched_t **out, const struct baton_sched_attr *attr);

/** Create a task running fn(arg); it runs once baton_sched_run() is (or
 * already is) running. May be called from any thread, and from tasks.
 * @param s the scheduler
 * @param attr the attributes, or NULL for the defaults
 * @param fn the task's body
 * @param arg passed to `fn`
 * @return BATON_OK, or an error: BATON_EINVAL (NULL s or fn, worker out of
 * range, unknown flags, bad coroutine attributes, BATON_TASK_OWN_FPENV with
 * BATON_CORO_SHARED_FPENV), BATON_ESTACK, BATON_ENOMEM,
 * BATON_ESHUTDOWN (the scheduler is being destroyed). */
BATON_API int baton_sched_spawn(baton_sched_t *s, const struct baton_task_attr *attr,
				baton_task_fn fn, void *arg);

/** Run the scheduler on the calling thread (worker 0) and its other workers
 * until every task has finished or baton_sched_stop() is called. May be
 * called again afterwards.
 * A task may run another scheduler: its worker then waits for that run.
 * @param s the scheduler
 * @return BATON_OK, or an error: BATON_EINVAL, BATON_EBUSY (already running,
 * or called from one of its own tasks), BATON_ETHREAD (called from another
 * thread than the last run while copy-stack tasks that ran on worker 0 are
 * unfinished: their frames live on that thread's shared stack, see rule 2),
 * BATON_ESYS (a worker thread could not be started; the tasks then run on the
 * workers that could). */
BATON_API int baton_sched_run(baton_sched_t *s);

/** Make baton_sched_run() return soon: each worker notices at its next poll
 * (within 61 dispatches, or at once when idle); tasks not finished stay
 * where they are and a later run continues them. A stop made while the
 * scheduler is not running has no effect on the next run. Any thread.
 * @param s the scheduler
 * @return BATON_OK, or an error: BATON_EINVAL. */
BATON_API int baton_sched_stop(baton_sched_t *s);

/** Free the scheduler and the tasks that never finished (rule 5).
 * @param s the scheduler
 * @return BATON_OK, or an error: BATON_EBUSY (it is running). NULL is a no-op. */
BATON_API int baton_sched_destroy(baton_sched_t *s);

/** Number of workers.
 * @param s the scheduler
 * @return BATON_OK, or an error: BATON_EINVAL. */
BATON_API int baton_sched_workers(const baton_sched_t *s);

/** What the scheduler did, summed over its workers since it was created.
 * A hop is a dispatch: one task switched in to run. */
struct baton_sched_stats {
	uint64_t dispatches;   /**< tasks switched in (first runs included) */
	uint64_t handoffs;     /**< of those, straight from the task before */
	uint64_t cross_wakes;  /**< wake-ups sent to another worker's inbox */
	uint64_t steals;       /**< tasks handed to idle workers */
	uint64_t fair_turns;   /**< woken tasks sent behind the queue by the
				 fairness bound (BATON_SCHED_RUNNEXT_MAX) */
	uint64_t copied_bytes; /**< copy-stack tasks' frames copied off and back
				  onto their worker's shared stack */
};

/** A task woken by a task of its worker runs next, before the queue, but
 * at most this many times in a row: then the queue's oldest task runs. */
#define BATON_SCHED_RUNNEXT_MAX 256

/** Read the counters. Only while the scheduler is not running (the workers
 * write them without synchronisation).
 * @param s the scheduler
 * @param out filled with the statistics
 * @return BATON_OK, or an error: BATON_EINVAL (NULL argument), BATON_EBUSY (it
 * is running). */
BATON_API int baton_sched_stats(const baton_sched_t *s, struct baton_sched_stats *out);

/* --- calls made from a task ---------------------------------------------- */

/** Let the other runnable tasks of this worker run first; with none, let
 * the worker poll its I/O, timers and inbox (without blocking) before it
 * runs the caller again.
 * @return BATON_OK, or an error: BATON_ENOSCHED. */
BATON_API int baton_sched_yield(void);

/** Block this task for at least ns nanoseconds (0 yields).
 * @param ns nanoseconds to sleep at least (0 yields)
 * @return BATON_OK, or an error: BATON_ENOSCHED, BATON_EINVAL (ns < 0),
 * BATON_ENOMEM. */
BATON_API int baton_sched_sleep(int64_t ns);

/* --- cancellation ----------------------------------------------------------
 *
 * A task can be told to stop waiting: baton_task_cancel() makes its current
 * blocking call (if it is blocked) or its next one return BATON_ECANCELED:
 * channel send, receive and select, mutex, semaphore, wait group, pool
 * units, sleep, I/O waits, stage submit, call, ask, pass and drain (a
 * stage call that leaves leaves its item to the stage: baton/stage.h). A
 * call that completes without waiting (a message already buffered, a free
 * mutex) still completes. The wake-up
 * races every other one fairly: the call either gets its value (a message,
 * the mutex) and returns BATON_OK, or returns BATON_ECANCELED having taken
 * nothing; never both, never neither. Waits that block a thread rather
 * than a task (baton/ec.h, a plain thread in a sync call) are not
 * cancellable, and neither is a sequencer call (baton/seq.h): once queued,
 * another thread may already be running it, so it waits until served.
 *
 *     static baton_task_t *worker;               // published under your lock
 *     static void body(void *arg)
 *     {
 *         worker = baton_task_handle();           // now it can be cancelled
 *         void *msg;
 *         while (baton_chan_recv(ch, &msg, -1) == BATON_OK)
 *             handle(msg);
 *         // BATON_ECANCELED (or ECLOSED): release what it holds, return
 *     }
 *     ...
 *     baton_task_cancel(worker);                  // from any thread
 *
 * Rules:
 *  1. Only a task that took its own handle (baton_task_handle) can be
 *     cancelled; taking it makes that task's wake-ups claim with a
 *     compare-and-swap instead of a plain store (the scheduler's wait
 *     protocol), which is why it is not the default. (A task spawned with
 *     an id, below, is cancellable by whoever holds the id, without this
 *     opt-in and without rule 2's race.)
 *  2. The handle is valid until the task's function returns, and then
 *     never again (its record is reused): the canceller must know that the
 *     task has not returned, e.g. with a lock or flag the task clears before
 *     it returns.
 *  3. Cancellation is sticky: once cancelled, every later call of the task
 *     that would block returns BATON_ECANCELED at once. Nothing is released
 *     for the task: it must unlock its mutexes, give back semaphore or pool
 *     units, call baton_wg_done for its share, close or hand on what it owns
 *     - all calls that never block - and return. A call made with timeout 0
 *     (a try) never blocks, so it works as before.
 *  4. A task that computes without blocking is not interrupted: it can poll
 *     baton_task_cancelled() between steps.
 */
/** A task's handle (opaque), to cancel it. */
typedef struct baton_task baton_task_t;

/** The calling task's handle, and from now on it can be cancelled (rule 1).
 * NULL outside a task's own coroutine.
 * @return the task, or NULL */
BATON_API baton_task_t *baton_task_handle(void);

/** Cancel `task` (rules above); a second cancel is a no-op. Any thread,
 * the task itself included. The task, if blocked, is woken within the
 * time a cross-worker wake-up takes.
 * @param task the task
 * @return BATON_OK, or an error: BATON_EINVAL (NULL, or a task that never took
 * its handle). */
BATON_API int baton_task_cancel(baton_task_t *task);

/** 1 if the calling task was cancelled, 0 if not.
 * @return BATON_OK, or an error: BATON_ENOSCHED (not a task's own coroutine). */
BATON_API int baton_task_cancelled(void);

/* --- tasks you can hold: task ids, join, groups ------------------------------
 *
 * baton_task_spawn() gives the new task an id (baton_tid_t): a number, not
 * a pointer. The id names a slot of one process-wide table - its index and
 * the slot's generation - and the slot outlives the task: it keeps the
 * task's result until someone joins it (or, detached, until the task
 * ends), and is then reused under the next generation. So an id can be
 * copied, stored and used from any thread at any time, and an id whose task
 * is gone is refused with BATON_EDEAD - a checked integer, as libdill's
 * handles are - never a read of freed memory. (A reference-counted record
 * would do the same only as long as every holder remembered to release its
 * reference; an integer needs no release, and a use after the last one
 * costs an error code, not memory.) The table's memory is never given back.
 *
 * Three patterns (tokio and Trio beside each):
 *
 *     // 1. join one         tokio: let h = spawn(f); h.await   Trio: (none; a nursery of one)
 *     baton_tid_t id;
 *     baton_task_spawn(s, NULL, fetch, url, &id);
 *     int status; void *page;
 *     if (baton_task_join(id, 5000000000, &status, &page) == BATON_ETIMEDOUT)
 *         baton_task_abort(id);                 // h.abort(); join later or detach
 *
 *     // 2. fail fast        tokio: JoinSet + abort_all on the first Err
 *     //                     Trio: async with open_nursery() as n: n.start_soon(...)
 *     //                     (Go: errgroup.WithContext)
 *     baton_group_t *g;
 *     struct baton_task_end first;
 *     baton_group_create(&g, s, BATON_GROUP_FAIL_FAST);
 *     for (int i = 0; i < n; i++)
 *         baton_group_spawn(g, NULL, shard, &shards[i], NULL);
 *     baton_group_wait(g, -1, &first);          // all ended; the rest were
 *     baton_group_close(g, NULL);               // cancelled at the first failure
 *     if (first.tid != BATON_TID_NONE)
 *         report(first.status);
 *
 *     // 3. collect all      tokio: while let Some(r) = set.join_next().await
 *     //                     Trio: a nursery whose tasks store their results
 *     baton_group_create(&g, s, 0);
 *     for (int i = 0; i < n; i++)
 *         baton_group_spawn(g, NULL, fetch, urls[i], &ids[i]);
 *     for (int i = 0; i < n; i++)
 *         baton_task_join(ids[i], -1, &status[i], &pages[i]);
 *     baton_group_close(g, NULL);
 *
 *     // 4. as they end      tokio: JoinSet::join_next   Trio: a memory channel
 *     struct baton_task_end e;
 *     baton_group_create(&g, s, BATON_GROUP_COLLECT);
 *     for (int i = 0; i < n; i++)
 *         baton_group_spawn(g, NULL, fetch, urls[i], NULL);
 *     while (baton_group_next(g, -1, &e) == BATON_OK)   // BATON_EDONE: none left
 *         use(e.tid, e.status, e.result);
 *     baton_group_close(g, NULL);
 *
 * Rules:
 *  1. A task spawned with an id can be cancelled by whoever holds the id
 *     (baton_task_abort), with no opt-in of its own: its waits always
 *     claim their wake-ups with the compare-and-swap of the cancellation
 *     protocol (the cancellation section above). Tasks spawned with
 *     baton_sched_spawn keep the plain path; docs/sched.md gives both
 *     figures.
 *  2. Every id is joined once or detached (baton_task_detach), or its slot
 *     and result are kept for ever. A join takes the result: a second
 *     join, like every call on a joined id, gets BATON_EDEAD. A detached
 *     task's slot goes when it ends.
 *  3. A group's children are tasks with ids (given to the spawner only if
 *     it asks for them; those must be joined or detached as in rule 2).
 *     The group is owned by the task that created it (none when a plain
 *     thread did): cancelling that task - by its id, by baton_task_cancel,
 *     or by cancelling a group it is a child of - cancels the group and so
 *     on down. A task's groups are closed (cancelled and waited for) when
 *     its function returns, if it did not close them itself.
 *  4. baton_group_close() cancels what still runs, waits for it even when
 *     the closing task is itself cancelled, and frees the group: once,
 *     by the owner (or another, while the owner has not returned).
 *  5. A task's end readies its joiner (or the group's waiter) behind the
 *     tasks already runnable on its worker, so that a task that joins many
 *     collects them in one go.
 *  6. The waits (join, group wait) work from tasks and from plain threads
 *     (which block); timeout < 0 waits, 0 tries once (BATON_EAGAIN if
 *     not yet), > 0 waits at most that many nanoseconds.
 *  7. baton_sched_destroy() ends the ids of the tasks it frees with status
 *     BATON_ESHUTDOWN (a plain thread's join then returns).
 *  8. A collecting group (BATON_GROUP_COLLECT) keeps every child's end,
 *     with or without an id, until baton_group_next takes it (the oldest
 *     end first; the id then goes stale, as after a join) or a join or
 *     detach on its id does; baton_group_close drops those left. Use it
 *     where something takes them: a group that spawns for ever keeps a
 *     slot per child nobody took.
 */
/** A task's id: 0 (BATON_TID_NONE) names nothing. */
typedef uint64_t baton_tid_t;
/** The id of no task. */
#define BATON_TID_NONE ((baton_tid_t)0)

/** The body of a task spawned with an id: returns its status (0 for
 * success; anything else is a failure, e.g. a baton error code) and may
 * leave a result in *result (NULL at entry), both for its joiner. */
typedef int (*baton_task_result_fn)(void *arg, void **result);

/** baton_task_status: the task has not ended. */
#define BATON_TASK_RUNNING 1
/** baton_task_status: the task has ended; its result waits for a join. */
#define BATON_TASK_ENDED 2

/** Create a task running fn(arg, &result) and give its id (rules above).
 * Any thread, and tasks.
 * @param s the scheduler
 * @param attr the attributes, or NULL for the defaults
 * @param fn the task's body
 * @param arg passed to `fn`
 * @param tid receives the id (after an error, maybe an id that names no
 * task: every call on it returns BATON_EDEAD)
 * @return BATON_OK, or an error: those of baton_sched_spawn, BATON_EINVAL
 * (NULL tid), BATON_ENOMEM. */
BATON_API int baton_task_spawn(baton_sched_t *s, const struct baton_task_attr *attr,
			       baton_task_result_fn fn, void *arg, baton_tid_t *tid);

/** Wait for the task to end and take its status and result (rule 2).
 * From a task (which parks) or a plain thread (which blocks).
 * @param tid the task's id
 * @param timeout_ns < 0 waits, 0 tries once, > 0 waits at most that long
 * @param status receives the body's return (may be NULL)
 * @param result receives the body's result (may be NULL)
 * @return BATON_OK (joined: the id is spent), or an error: BATON_EDEAD (no
 * such task: joined already, detached, never spawned), BATON_EAGAIN (timeout
 * 0, not ended), BATON_ETIMEDOUT, BATON_ECANCELED (the calling task was
 * cancelled), BATON_EDEADLK (a task joining itself), BATON_ENOSCHED (a plain
 * coroutine resumed by a task); the id stays joinable after each but
 * EDEAD. */
BATON_API int baton_task_join(baton_tid_t tid, int64_t timeout_ns, int *status, void **result);

/** Cancel the task (the cancellation rules above), and the groups it
 * owns. A second abort, or an abort of a task that ended and waits for
 * its join, does nothing and returns BATON_OK. Any thread.
 * @param tid the task's id
 * @return BATON_OK, or an error: BATON_EDEAD (no such task). */
BATON_API int baton_task_abort(baton_tid_t tid);

/** Nobody will join the task: its slot goes when it ends (now, dropping the
 * result, if it has ended). The id still aborts it and tells its status
 * until then.
 * @param tid the task's id
 * @return BATON_OK, or an error: BATON_EDEAD (no such task). */
BATON_API int baton_task_detach(baton_tid_t tid);

/** Whether the task has ended. A getter of one number: negative is an
 * error.
 * @param tid the task's id
 * @return BATON_TASK_RUNNING, BATON_TASK_ENDED (not joined yet), or an
 * error: BATON_EDEAD (no such task: joined, detached and ended, never
 * spawned). */
BATON_API int baton_task_status(baton_tid_t tid);

/** The calling task's id, or BATON_TID_NONE (not a task spawned with one,
 * or not a task).
 * @return the id, or BATON_TID_NONE */
BATON_API baton_tid_t baton_task_id(void);

/** A group of tasks (opaque). */
typedef struct baton_group baton_group_t;
/** The group's first failure cancels the rest of it. */
#define BATON_GROUP_FAIL_FAST 1u
/** The group keeps its children's ends for baton_group_next (rule 8). */
#define BATON_GROUP_COLLECT 2u

/** How a task ended: its id, its status and its result. */
struct baton_task_end {
	baton_tid_t tid; /**< BATON_TID_NONE: no task (no failure) */
	int status;      /**< the body's return */
	void *result;    /**< the body's result */
};

/** Create a group of tasks of `s`, owned by the calling task (rule 3).
 * @param out receives the group
 * @param s the scheduler its children run on
 * @param flags 0, or BATON_GROUP_FAIL_FAST and BATON_GROUP_COLLECT or'ed
 * @return BATON_OK, or an error: BATON_EINVAL (NULL out or s, unknown
 * flags), BATON_ENOMEM. */
BATON_API int baton_group_create(baton_group_t **out, baton_sched_t *s, unsigned flags);

/** Spawn fn(arg, &result) as a child of the group.
 * @param g the group
 * @param attr the attributes, or NULL for the defaults
 * @param fn the task's body
 * @param arg passed to `fn`
 * @param tid receives the child's id (join or detach it), or NULL: then
 * only the group hears of its end
 * @return BATON_OK, or an error: those of baton_task_spawn, BATON_ECANCELED
 * (the group was cancelled: nothing spawned). */
BATON_API int baton_group_spawn(baton_group_t *g, const struct baton_task_attr *attr,
				baton_task_result_fn fn, void *arg, baton_tid_t *tid);

/** Wait until every child has ended; then *failure (if not NULL) is the
 * first child that ended with a nonzero status (tid BATON_TID_NONE if
 * none did). From a task or a plain thread (rule 6).
 * @param g the group
 * @param timeout_ns < 0 waits, 0 tries once, > 0 waits at most that long
 * @param failure receives the first failure, or NULL
 * @return BATON_OK, or an error: BATON_EINVAL, BATON_EAGAIN, BATON_ETIMEDOUT,
 * BATON_ECANCELED (the calling task was cancelled), BATON_ENOSCHED. */
BATON_API int baton_group_wait(baton_group_t *g, int64_t timeout_ns,
			       struct baton_task_end *failure);

/** Take the next child of a collecting group that ended (the oldest end
 * not yet taken, rule 8): its id (stale from now on, as after a join),
 * status and result. From a task or a plain thread (rule 6).
 * @param g the group, created with BATON_GROUP_COLLECT
 * @param timeout_ns < 0 waits, 0 tries once, > 0 waits at most that long
 * @param end receives the child's end
 * @return BATON_OK, or an error: BATON_EINVAL (NULL g or end, a group
 * that does not collect), BATON_EDONE (no child left running and none
 * left to take), BATON_EAGAIN, BATON_ETIMEDOUT, BATON_ECANCELED (the
 * calling task was cancelled), BATON_ENOSCHED. */
BATON_API int baton_group_next(baton_group_t *g, int64_t timeout_ns, struct baton_task_end *end);

/** Cancel every child, and the groups they own; later spawns into the
 * group return BATON_ECANCELED. Any thread.
 * @param g the group
 * @return BATON_OK, or an error: BATON_EINVAL. */
BATON_API int baton_group_cancel(baton_group_t *g);

/** Cancel what still runs, wait for it (rule 4), report the first failure
 * as baton_group_wait does, and free the group. NULL is a no-op.
 * @param g the group
 * @param failure receives the first failure, or NULL
 * @return BATON_OK, or an error: BATON_ENOSCHED (a plain coroutine resumed
 * by a task). */
BATON_API int baton_group_close(baton_group_t *g, struct baton_task_end *failure);

/** The scheduler of the calling task, or NULL outside tasks.
 * @return the scheduler, or NULL */
BATON_API baton_sched_t *baton_sched_self(void);

/** The index of the worker running the calling task, or -1.
 * @return the worker's index from 0, or -1 */
BATON_API int baton_sched_worker_index(void);

#ifdef __cplusplus
}
#endif

#endif /* BATON_SCHED_H */
