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
 * The bounds that do bind are units of a pool: a request's in-flight unit
 * (held from its first byte until its response is written) and, for
 * handlers run inline, a handler slot (a pool of --handler-concurrency
 * units standing for the handle stage's concurrency). Both come from a
 * reserve per worker: a worker that has none takes a batch from the pool
 * at once (up to HTTP_RESERVE_BATCH, less for a small pool), keeps what it
 * does not use, and gives back what exceeds twice that. The refill is
 * fair: a request that finds neither a reserve nor a free unit counts
 * itself in `res_waiting`, empties every worker's reserve into the pool
 * and waits in the pool's queue (up to the handle stage's queue limit);
 * while anyone waits, no reserve is filled again and every release goes
 * straight back. So no unit idles in one worker's reserve while a request
 * waits on another. The in-flight pool's snapshot is corrected for the
 * reserves (in no request's hands) and for the tries a batch cost; the
 * handle stage's shows the slots' waiters as its queue.
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

int baton__http_step_enter(struct baton_http_server *srv, int step, struct http_pass *p, int64_t t0,
			   int64_t timeout_ns)
{
	struct http_worker *w;
	int rc;

	if (step_free(srv, step) && (w = baton__http_my_worker(srv)) != NULL) {
		p->t0 = t0 > 0 ? t0 : baton__clock_now();
		count_in(w, step);
		/* The read step takes the request's in-flight unit, the
		 * handle step a handler slot: each from a reserve. */
		int kind = step == HTTP_READ  ? HTTP_RES_INFLIGHT
			: step == HTTP_HANDLE ? HTTP_RES_SLOTS
					      : -1;

		if (kind >= 0) {
			rc = baton__http_reserve_take(srv, kind, timeout_ns);
			if (rc != BATON_OK) {
				count_out(baton__http_my_worker(srv), step, false, 0, 0);
				return rc;
			}
			p->unit = kind == HTTP_RES_INFLIGHT;
		}
		p->step = (signed char)step;
		p->counted = true;
		return BATON_OK;
	}
	/* Through the gate, as it was made: the read gate's need takes the
	 * unit and keeps it in the pass (gate.kept). */
	p->gate.t0 = t0;
	rc = baton_gate_enter(srv->gate[step], &p->gate, timeout_ns);
	if (rc == BATON_OK) {
		p->step = (signed char)step;
		p->counted = false;
	}
	return rc;
}

void baton__http_step_leave(struct baton_http_server *srv, struct http_pass *p, int64_t *end_ns)
{
	if (p->counted) {
		int64_t end = baton__clock_now();

		if (p->step == HTTP_HANDLE)
			baton__http_reserve_give(srv, HTTP_RES_SLOTS);
		count_out(baton__http_my_worker(srv), p->step, true, p->t0, end);
		if (end_ns)
			*end_ns = end;
	} else {
		baton_gate_leave(&p->gate, end_ns);
	}
	p->step = -1;
}

void baton__http_pass_release_unit(struct baton_http_server *srv, struct http_pass *p)
{
	if (p->unit) {
		p->unit = false;
		baton__http_reserve_give(srv, HTTP_RES_INFLIGHT);
	} else {
		baton_stage_kept_release(&p->gate.kept);
	}
}

/* A step's snapshot: its gate's, or the handle stage's. */
static void step_snapshot(struct baton_http_server *srv, int step, struct baton_stage_stats *out)
{
	if (srv->gate[step])
		baton_gate_snapshot(srv->gate[step], out);
	else
		baton_stage_snapshot(srv->handle, out);
}

int baton__http_step_set(struct baton_http_server *srv, int step, unsigned conc, size_t queue)
{
	baton_gate_t *g = srv->gate[step];
	int rc = BATON_OK;

	if (queue > 0)
		rc = g ? baton_gate_set_queue_limit(g, queue)
		       : baton_stage_set_queue_limit(srv->handle, queue);
	if (rc == BATON_OK && conc > 0)
		rc = g ? baton_gate_set_concurrency(g, conc)
		       : baton_stage_set_concurrency(srv->handle, conc);
	return rc;
}

/* A stage's own counts, plus what its workers counted for it. */
static void add_counts(const struct baton_http_server *srv, int step, struct baton_stage_stats *st)
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

/* --- reserves of units ------------------------------------------------------ */
/* The pool a reserve's units come from; NULL: none (no slots' pool with
 * compute workers). */
static baton_pool_t *res_pool(const struct baton_http_server *srv, int kind)
{
	return kind == HTTP_RES_INFLIGHT ? srv->inflight : srv->slots;
}

/*
 * A reserve's count is a worker's, but a waiter elsewhere may empty it
 * (steal_all), so it changes by atomic read-modify-writes; relaxed, for
 * it publishes nothing: the units themselves go back and forth through
 * the pool, under its lock.
 */
static bool spare_take(struct http_reserve *r)
{
	long n = __atomic_load_n(&r->spare, __ATOMIC_RELAXED);

	while (n > 0 &&
	       !__atomic_compare_exchange_n(&r->spare, &n, n - 1, true, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED))
		;
	return n > 0;
}

static void spare_flush(baton_pool_t *pool, struct http_reserve *r)
{
	long n = __atomic_exchange_n(&r->spare, 0, __ATOMIC_RELAXED);

	if (n > 0)
		baton_pool_release(pool, n);
}

/* Every worker's reserve back to the pool: someone is about to wait. */
static void steal_all(struct baton_http_server *srv, int kind)
{
	for (unsigned i = 0; i < srv->nworkers; i++)
		spare_flush(res_pool(srv, kind), &srv->workers[i].res[kind]);
}

int baton__http_reserve_take(struct baton_http_server *srv, int kind, int64_t timeout_ns)
{
	struct http_worker *w = baton__http_my_worker(srv);
	baton_pool_t *pool = res_pool(srv, kind);
	struct http_reserve *r;
	/* Relaxed: sizes set when a limit changes, read per request. */
	long batch = __atomic_load_n(&srv->res_batch[kind], __ATOMIC_RELAXED);
	long limit = __atomic_load_n(&srv->res_queue_limit[kind], __ATOMIC_RELAXED);
	int64_t t0;
	int rc;

	if (w == NULL)
		return baton_pool_acquire(pool, 1, timeout_ns);
	r = &w->res[kind];
	if (spare_take(r)) {
		bump(&r->from_spare, 1);
		return BATON_OK;
	}
	/* Relaxed: while someone waits, reserves are not filled again (and
	 * a waiter's count is all this reads). */
	if (batch > 1 && __atomic_load_n(&srv->res_waiting[kind], __ATOMIC_RELAXED) == 0) {
		if (baton_pool_acquire(pool, batch, 0) == BATON_OK) {
			__atomic_add_fetch(&r->spare, batch - 1, __ATOMIC_RELAXED);
			return BATON_OK;
		}
		bump(&r->tries_failed, 1);
	}
	rc = baton_pool_acquire(pool, 1, 0);
	if (rc != BATON_EAGAIN || timeout_ns == 0)
		return rc;
	bump(&r->tries_failed, 1);
	/* Relaxed: the count of waiters is a figure and a queue limit. */
	if (limit > 0 && __atomic_load_n(&srv->res_waiting[kind], __ATOMIC_RELAXED) >= limit)
		return BATON_EAGAIN; /* the queue is full: refused at once */
	__atomic_add_fetch(&srv->res_waiting[kind], 1, __ATOMIC_RELAXED);
	steal_all(srv, kind);
	t0 = baton__clock_now();
	rc = baton_pool_acquire(pool, 1, timeout_ns);
	/* The task may be on another worker now: count where it is. */
	w = baton__http_my_worker(srv);
	if (w != NULL)
		bump(&w->res[kind].wait_ns, (uint64_t)(baton__clock_now() - t0));
	__atomic_sub_fetch(&srv->res_waiting[kind], 1, __ATOMIC_RELAXED);
	return rc;
}

void baton__http_reserve_give(struct baton_http_server *srv, int kind)
{
	struct http_worker *w = baton__http_my_worker(srv);
	long batch = __atomic_load_n(&srv->res_batch[kind], __ATOMIC_RELAXED);
	long n;

	if (w == NULL || batch <= 1) {
		baton_pool_release(res_pool(srv, kind), 1);
		return;
	}
	n = __atomic_add_fetch(&w->res[kind].spare, 1, __ATOMIC_RELAXED);
	/* Relaxed: see take; a waiter emptied every reserve already, this
	 * one filled again meanwhile. */
	if (__atomic_load_n(&srv->res_waiting[kind], __ATOMIC_RELAXED) > 0 || n > 2 * batch)
		spare_flush(res_pool(srv, kind), &w->res[kind]);
}

void baton__http_reserves_flush(struct baton_http_server *srv)
{
	for (int k = 0; k < HTTP_NRES; k++)
		if (res_pool(srv, k) != NULL)
			steal_all(srv, k);
}

/* --- limits and snapshots ------------------------------------------------- */
/* Units a worker takes at once: none while the pool is small (a reserve
 * would hide a good part of it), else up to HTTP_RESERVE_BATCH. */
static long batch_for(const struct baton_http_server *srv, long capacity)
{
	long b = capacity / (4 * (long)srv->nworkers);

	return b < 2 ? 1 : b > HTTP_RESERVE_BATCH ? HTTP_RESERVE_BATCH : b;
}

void baton__http_steps_update(struct baton_http_server *srv)
{
	struct baton_pool_stats conns, ps;

	baton_pool_snapshot(srv->conns, &conns);
	for (int i = 0; i < HTTP_NSTAGES; i++) {
		struct baton_stage_stats st;
		bool free;

		step_snapshot(srv, i, &st);
		if (i == HTTP_ACCEPT)
			free = true; /* one acceptor: its concurrency of 1 never binds */
		else if (i == HTTP_HANDLE)
			/* Inline, the bound binds but is kept by the slots'
			 * pool and its reserves; with compute workers, a
			 * stage with tasks of its own. */
			free = !srv->compute;
		else
			free = (long)st.concurrency >= conns.capacity;
		if (i == HTTP_HANDLE)
			/* Relaxed: read per request (reserve_take). */
			__atomic_store_n(&srv->res_queue_limit[HTTP_RES_SLOTS],
					 (long)st.queue_limit, __ATOMIC_RELAXED);
		/* Relaxed: read as a hint per request (step_free). */
		__atomic_store_n(&srv->step_free[i], free && !st.closed, __ATOMIC_RELAXED);
	}
	for (int k = 0; k < HTTP_NRES; k++) {
		if (res_pool(srv, k) == NULL)
			continue;
		baton_pool_snapshot(res_pool(srv, k), &ps);
		/* Relaxed: read per request; a reserve filled at the old size
		 * drains at its next releases. */
		__atomic_store_n(&srv->res_batch[k], batch_for(srv, ps.capacity), __ATOMIC_RELAXED);
	}
	/* A lowered capacity applies at once to what reserves hold. */
	baton__http_reserves_flush(srv);
}

void baton__http_steps_snapshot(struct baton_http_server *srv, struct baton_http_server_stats *out)
{
	struct baton_pool_stats *in = &out->pools[1];
	struct baton_stage_stats *h = &out->stages[HTTP_HANDLE];
	uint64_t from_spare = 0, tries = 0;
	long spare = 0;

	for (int i = 0; i < HTTP_NSTAGES; i++) {
		step_snapshot(srv, i, &out->stages[i]);
		add_counts(srv, i, &out->stages[i]);
	}
	baton_pool_snapshot(srv->conns, &out->pools[0]);
	baton_pool_snapshot(srv->inflight, in);
	for (unsigned i = 0; i < srv->nworkers; i++) {
		const struct http_reserve *r = &srv->workers[i].res[HTTP_RES_INFLIGHT];

		from_spare += peek(&r->from_spare);
		tries += peek(&r->tries_failed);
		spare += __atomic_load_n(&r->spare, __ATOMIC_RELAXED); /* a figure */
		h->wait_ns += peek(&srv->workers[i].res[HTTP_RES_SLOTS].wait_ns);
	}
	/* The in-flight pool as requests hold it: reserves are in none's
	 * hands, and a batch or a try on the way to a wait is no request's
	 * acquisition or refusal. */
	in->in_use = in->in_use > spare ? in->in_use - spare : 0;
	in->acquired += from_spare;
	in->refused -= tries < in->refused ? tries : in->refused;
	/* Inline handlers wait for a slot in the slots' pool, the stage's
	 * queue as /_stats shows it. Relaxed: a figure. */
	if (!srv->compute)
		h->queued += (size_t)__atomic_load_n(&srv->res_waiting[HTTP_RES_SLOTS],
						     __ATOMIC_RELAXED);
}
