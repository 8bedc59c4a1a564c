/* SPDX-License-Identifier: MIT */
/*
 * The steps of a request on the I/O path (accept, read, handle, write) and
 * its in-flight unit, without a lock shared between workers where no bound
 * binds.
 *
 * Each step is a stage (docs/stages.md) whose snapshot /_stats shows. But a
 * connection reads, and writes, one request at a time, so the read and
 * write stages' concurrency, which starts at the connection cap, cannot
 * bind; nor can accept's (one acceptor). Entering and leaving such a stage
 * would take its lock twice per request for nothing, and that lock is
 * every I/O worker's. So a step whose bound cannot bind (`free`, decided by
 * baton__http_steps_update whenever a limit changes) is counted in the
 * calling worker's record instead (struct http_worker: written by that
 * worker's thread alone, read by snapshots), and the snapshot adds those
 * counts to the stage's own. Once an operator lowers a limit below the cap
 * (/_limits), the step goes through its stage again from the next request
 * on; a pass remembers which way it entered, and leaves the same way.
 *
 * In-flight units (the pool a request holds from its first byte until its
 * response is written) come from a reserve per worker: a worker that has
 * none takes HTTP_INFLIGHT_BATCH from the pool at once, keeps what it does
 * not use, and gives back what exceeds twice that. The refill is fair:
 * when a request finds neither a reserve nor a free unit, it counts itself
 * in `inflight_waiting` and waits in the pool's queue, and from then on
 * every worker gives its reserve back at its next release, so no unit
 * idles in one reserve while a request waits on another worker. The pool's
 * snapshot is corrected for the reserves (they are in no request's hands)
 * and for the tries a batch cost.
 */
#include "../common/prelude.h"
#include "server_internal.h"

struct http_worker *baton__http_my_worker(struct baton_http_server *srv)
{
	int w = baton_sched_worker_index();

	return w >= 0 && (unsigned)w < srv->nworkers ? &srv->workers[w] : NULL;
}

/* One writer per counter (the worker's thread): a relaxed load and store,
 * which snapshots on other threads read whole. */
static inline void bump(uint64_t *x, uint64_t by)
{
	__atomic_store_n(x, __atomic_load_n(x, __ATOMIC_RELAXED) + by, __ATOMIC_RELAXED);
}

static inline void bump_signed(int64_t *x, int64_t by)
{
	__atomic_store_n(x, __atomic_load_n(x, __ATOMIC_RELAXED) + by, __ATOMIC_RELAXED);
}

static inline uint64_t peek(const uint64_t *x)
{
	return __atomic_load_n(x, __ATOMIC_RELAXED);
}

/* --- the steps ------------------------------------------------------------ */
static bool step_free(const struct baton_http_server *srv, int step)
{
	/* Relaxed: a hint per request; a change applies from the next one. */
	return __atomic_load_n(&srv->step_free[step], __ATOMIC_RELAXED);
}

/* Counted: the step's figures in the calling worker's record. */
static void count_in(struct http_worker *w, int step)
{
	bump(&w->step[step].submitted, 1);
	bump_signed(&w->step[step].running, 1);
}

/* Leaving a counted step: done, or refused after entering (as a stage
 * counts a pass whose resources it could not get). */
static void count_out(struct http_worker *w, int step, bool done, int64_t t0, int64_t end)
{
	struct http_step_count *n = &w->step[step];

	bump_signed(&n->running, -1);
	if (done) {
		bump(&n->completed, 1);
		bump(&n->handler_ns, (uint64_t)(end - t0));
	} else {
		bump(&n->submitted, (uint64_t)-1); /* sums wrap back right */
		bump(&n->rejected, 1);
	}
}

int baton__http_step_enter(struct baton_http_server *srv, int step, struct http_pass *p,
			   int64_t t0, int64_t timeout_ns)
{
	struct http_worker *w;
	int rc;

	if (step_free(srv, step) && (w = baton__http_my_worker(srv)) != NULL) {
		p->t0 = t0 > 0 ? t0 : baton__clock_now();
		count_in(w, step);
		if (step == HTTP_READ) {
			/* The request's in-flight unit, from the reserve. */
			rc = baton__http_inflight_take(srv, timeout_ns);
			if (rc != BATON_OK) {
				count_out(baton__http_my_worker(srv), step, false, 0, 0);
				return rc == BATON_EAGAIN && timeout_ns != 0 ? BATON_ETIMEDOUT : rc;
			}
			p->unit = true;
		}
		p->step = (signed char)step;
		p->counted = true;
		return BATON_OK;
	}
	/* Through the stage, as it was made: the read stage's need takes the
	 * unit and keeps it in the pass (stage.kept). */
	p->stage.t0 = t0;
	rc = baton_stage_enter(srv->stage[step], &p->stage, timeout_ns);
	if (rc == BATON_OK) {
		p->step = (signed char)step;
		p->counted = false;
	}
	return rc;
}

void baton__http_step_leave(struct baton_http_server *srv, struct http_pass *p,
			    int64_t *end_ns)
{
	if (p->counted) {
		int64_t end = baton__clock_now();

		count_out(baton__http_my_worker(srv), p->step, true, p->t0, end);
		if (end_ns)
			*end_ns = end;
	} else {
		baton_stage_leave(&p->stage, end_ns);
	}
	p->step = -1;
}

void baton__http_pass_release_unit(struct baton_http_server *srv, struct http_pass *p)
{
	if (p->unit) {
		p->unit = false;
		baton__http_inflight_give(srv);
	} else {
		baton_stage_kept_release(&p->stage.kept);
	}
}

/* A stage's own counts, plus what its workers counted for it. */
static void add_counts(const struct baton_http_server *srv, int step,
		       struct baton_stage_stats *st)
{
	int64_t running = st->running;

	for (unsigned i = 0; i < srv->nworkers; i++) {
		const struct http_step_count *n = &srv->workers[i].step[step];

		st->submitted += peek(&n->submitted);
		st->completed += peek(&n->completed);
		st->handler_ns += peek(&n->handler_ns);
		st->rejected += peek(&n->rejected);
		running += __atomic_load_n(&n->running, __ATOMIC_RELAXED);
	}
	/* A task that entered on one worker and left on another (only the
	 * acceptor moves) makes one worker's count go below zero for a
	 * while; the sum is right once both are read. */
	st->running = running > 0 ? (unsigned)running : 0;
}

/* --- in-flight units ---------------------------------------------------------- */
/* The reserve's size: read plainly by its worker, whole by snapshots. */
static inline void set_spare(struct http_worker *w, long n)
{
	__atomic_store_n(&w->spare, n, __ATOMIC_RELAXED);
}

int baton__http_inflight_take(struct baton_http_server *srv, int64_t timeout_ns)
{
	struct http_worker *w = baton__http_my_worker(srv);
	int rc;

	if (w == NULL)
		return baton_pool_acquire(srv->inflight, 1, timeout_ns);
	if (w->spare > 0) {
		set_spare(w, w->spare - 1);
		bump(&w->from_spare, 1);
		return BATON_OK;
	}
	/* Relaxed: while someone waits, reserves are not filled again. */
	if (__atomic_load_n(&srv->inflight_waiting, __ATOMIC_RELAXED) == 0) {
		if (baton_pool_acquire(srv->inflight, HTTP_INFLIGHT_BATCH, 0) == BATON_OK) {
			set_spare(w, HTTP_INFLIGHT_BATCH - 1);
			return BATON_OK;
		}
		bump(&w->tries_failed, 1);
	}
	if (timeout_ns == 0)
		return baton_pool_acquire(srv->inflight, 1, 0);
	rc = baton_pool_acquire(srv->inflight, 1, 0);
	if (rc != BATON_EAGAIN)
		return rc;
	bump(&w->tries_failed, 1);
	/* Relaxed: a count others look at to give their reserves back; the
	 * units themselves pass through the pool's lock. */
	__atomic_add_fetch(&srv->inflight_waiting, 1, __ATOMIC_RELAXED);
	baton__http_inflight_flush(srv, w);
	rc = baton_pool_acquire(srv->inflight, 1, timeout_ns);
	__atomic_sub_fetch(&srv->inflight_waiting, 1, __ATOMIC_RELAXED);
	return rc;
}

void baton__http_inflight_flush(struct baton_http_server *srv, struct http_worker *w)
{
	if (w != NULL && w->spare > 0) {
		long n = w->spare;

		set_spare(w, 0);
		baton_pool_release(srv->inflight, n);
	}
}

void baton__http_inflight_give(struct baton_http_server *srv)
{
	struct http_worker *w = baton__http_my_worker(srv);

	if (w == NULL) {
		baton_pool_release(srv->inflight, 1);
		return;
	}
	set_spare(w, w->spare + 1);
	/* Relaxed: see take; a waiter also flushed its own reserve. */
	if (__atomic_load_n(&srv->inflight_waiting, __ATOMIC_RELAXED) > 0 ||
	    w->spare > 2 * HTTP_INFLIGHT_BATCH)
		baton__http_inflight_flush(srv, w);
}

/* --- limits and snapshots ------------------------------------------------- */
void baton__http_steps_update(struct baton_http_server *srv)
{
	struct baton_pool_stats conns;

	baton_pool_snapshot(srv->conns, &conns);
	for (int i = 0; i < HTTP_NSTAGES; i++) {
		struct baton_stage_stats st;
		bool free;

		baton_stage_snapshot(srv->stage[i], &st);
		if (i == HTTP_ACCEPT)
			free = true; /* one acceptor: its concurrency of 1 never binds */
		else if (i == HTTP_HANDLE && srv->compute)
			free = false; /* a stage with tasks of its own */
		else
			free = (long)st.concurrency >= conns.capacity;
		/* Relaxed: read as a hint per request (step_free). */
		__atomic_store_n(&srv->step_free[i], free && !st.closed, __ATOMIC_RELAXED);
	}
}

void baton__http_steps_snapshot(struct baton_http_server *srv, struct baton_http_server_stats *out)
{
	uint64_t from_spare = 0, tries = 0;
	long spare = 0;

	for (int i = 0; i < HTTP_NSTAGES; i++) {
		baton_stage_snapshot(srv->stage[i], &out->stages[i]);
		add_counts(srv, i, &out->stages[i]);
	}
	baton_pool_snapshot(srv->conns, &out->pools[0]);
	baton_pool_snapshot(srv->inflight, &out->pools[1]);
	for (unsigned i = 0; i < srv->nworkers; i++) {
		const struct http_worker *w = &srv->workers[i];

		from_spare += peek(&w->from_spare);
		tries += peek(&w->tries_failed);
		/* Relaxed: a figure, written by its worker alone. */
		spare += __atomic_load_n(&w->spare, __ATOMIC_RELAXED);
	}
	out->pools[1].in_use -= spare;
	if (out->pools[1].in_use < 0)
		out->pools[1].in_use = 0;
	out->pools[1].acquired += from_spare;
	out->pools[1].refused -= tries < out->pools[1].refused ? tries : out->pools[1].refused;
}
