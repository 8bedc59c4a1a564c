/* SPDX-License-Identifier: MIT */
/*
 * The server's life cycle: create (bind and listen at once, so that errors
 * reach the caller), the acceptor task, shutdown, limits, statistics.
 */
#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../common/prelude.h"
#include "server_internal.h"

/* --- buffers ------------------------------------------------------------------ */
/* The cache of the worker c is bound to. Its task runs there alone, and
 * its notification runs there too (its handle was opened there): the
 * cache is that worker's thread's, with no lookup of the calling worker
 * per buffer (about 30 instructions each, six to eight times a request). */
static struct http_worker *conn_worker(const struct http_conn *c)
{
	/* Debug builds: in a task, it is c's own worker (outside any task,
	 * in c's notification, the index is -1). */
	assert(baton_sched_worker_index() < 0 || baton_sched_worker_index() == c->worker);
	return &c->srv->workers[c->worker];
}

/* A buffer of HTTP_BUF_SIZE bytes for c: its worker's last given back,
 * or new. */
void *baton__http_buf_get(struct http_conn *c)
{
	struct http_worker *w = conn_worker(c);

	return w->nbuf ? w->buf[--w->nbuf] : baton__malloc(HTTP_BUF_SIZE);
}

/* Give back a buffer of cap bytes (NULL: nothing) that c held. */
void baton__http_buf_put(struct http_conn *c, void *p, size_t cap)
{
	struct http_worker *w;

	if (p == NULL)
		return;
	w = conn_worker(c);
	if (cap == HTTP_BUF_SIZE && w->nbuf < HTTP_BUF_CACHE)
		w->buf[w->nbuf++] = p;
	else
		baton__free(p);
}

/* --- the connection list -------------------------------------------------- */
/* Mark a connection idle (between requests) or busy. Returns false when it
 * becomes idle while the server shuts down: the caller closes it. */
bool baton__http_conn_set_idle(struct http_conn *c, bool idle)
{
	/* Seq_cst store then load, against shutdown's seq_cst store of
	 * shutting then load of idle (Dekker): either this connection sees
	 * the shutdown, or the shutdown sees it idle and ends its read. */
	__atomic_store_n(&c->idle, idle, __ATOMIC_SEQ_CST);
	return !(idle && baton__http_shutting(c->srv));
}

bool baton__http_shutting(struct baton_http_server *srv)
{
	/* Seq_cst: see baton__http_conn_set_idle. */
	return __atomic_load_n(&srv->shutting, __ATOMIC_SEQ_CST);
}

static void conn_link(struct baton_http_server *srv, struct http_conn *c)
{
	pthread_mutex_lock(&srv->lock);
	baton__list_push_head(&srv->list, &c->link);
	srv->nconns++;
	pthread_mutex_unlock(&srv->lock);
}

static void conn_unlink(struct baton_http_server *srv, struct http_conn *c)
{
	pthread_mutex_lock(&srv->lock);
	baton__list_remove(&srv->list, &c->link);
	srv->nconns--;
	pthread_mutex_unlock(&srv->lock);
}

/* The connection is over (closed, or dropped for want of memory): out of
 * the list first, so that nobody holding the lock (the sweeper, shutdown)
 * shuts a descriptor down that is closed or reused, then its handle. */
static void conn_end(struct http_conn *c)
{
	struct baton_http_server *srv = c->srv;

	conn_unlink(srv, c);
	if (c->io)
		/* Nothing waits on it and no notification is armed (its task
		 * is here, or the notification ran): not refused. */
		(void)baton_io_close(c->io);
	else
		close(c->fd);
	baton__http_buf_put(c, c->in, c->in_cap);
	baton__http_buf_put(c, c->out, c->out_cap);
	baton__http_buf_put(c, c->work, HTTP_BUF_SIZE);
	baton__free(c);
	baton_pool_release(srv->conns, 1);
}

/* The connection task: started at accept and again by each notification
 * of a parked connection; wraps baton__http_conn_main with the
 * bookkeeping. */
static void conn_task(void *arg)
{
	struct http_conn *c = arg;

	/* The handle is opened here, on the worker the task is bound to, so
	 * that this worker's poller reports its edges: its wake-ups stay on
	 * one worker instead of each crossing from the acceptor's. */
	if (c->io == NULL && baton_io_open(&c->io, c->fd, true) != BATON_OK)
		c->io = NULL;
	if (c->io != NULL && baton__http_conn_main(c))
		return; /* parked: the notification starts the next task */
	conn_end(c);
}

/* The connection task, spawned with an id (see spawn_conn). */
static int conn_task_held(void *arg, void **result)
{
	(void)result;
	conn_task(arg);
	return 0;
}

/* Whether the sweeper cancels handlers past their deadline: the I/O-worker
 * shape with a handler timeout (with compute workers each connection times
 * its own job out). */
static bool sweeps_handlers(const struct baton_http_server *srv)
{
	return srv->a.handler_timeout_ns > 0 && !srv->compute;
}

static int spawn_conn(struct http_conn *c)
{
	struct baton_task_attr ta = BATON_TASK_ATTR_INIT;
	baton_tid_t tid;
	int rc;

	/* Connections are spread evenly over the I/O workers and stay there:
	 * each opens its handle on its own worker (conn_task), whose poller
	 * then wakes it without crossing workers. */
	ta.coro = c->srv->a.coro;
	ta.worker = c->worker;
	ta.flags = BATON_TASK_BOUND;
	if (!sweeps_handlers(c->srv))
		return baton_sched_spawn(c->srv->sched, &ta, conn_task, c);
	/* With a handler timeout the sweeper aborts the task by its id (a
	 * held task's waits cost a compare-and-swap each, docs/sched.md: only
	 * here). Nobody joins it: detached at once, its slot is freed at its
	 * end; the task publishes its id itself (conn.c). */
	rc = baton_task_spawn(c->srv->sched, &ta, conn_task_held, c, &tid);
	if (rc == BATON_OK)
		(void)baton_task_detach(tid);
	return rc;
}

/* A parked connection's handle became readable (bytes, the end, or the
 * read side shut by the sweeper or shutdown): on its worker, outside any
 * task. A task serves it again; without memory for one the connection is
 * dropped, as a client would see a server out of memory drop it. */
static void conn_ready(baton_io_t *io, void *arg)
{
	struct http_conn *c = arg;

	(void)io;
	/* Relaxed: the task this spawns reads it on this same worker. */
	__atomic_store_n(&c->parked, false, __ATOMIC_RELAXED);
	c->woke = true;
	if (spawn_conn(c) != BATON_OK)
		conn_end(c);
}

bool baton__http_conn_park(struct http_conn *c, int64_t idle_until)
{
	/* Relaxed: the sweeper reads it under the lock after parked. */
	__atomic_store_n(&c->idle_until, idle_until, __ATOMIC_RELAXED);
	/* Release: idle_until before parked, to the sweeper's acquire. */
	__atomic_store_n(&c->parked, true, __ATOMIC_RELEASE);
	if (baton_io_notify(c->io, BATON_IO_READABLE, conn_ready, c) == BATON_OK)
		return true;
	__atomic_store_n(&c->parked, false, __ATOMIC_RELAXED); /* ours again */
	return false;
}

/* --- the sweeper ----------------------------------------------------------- */
static int64_t clamp_tick(int64_t t, int64_t lo, int64_t hi)
{
	return t < lo ? lo : t > hi ? hi : t;
}

/* How often the sweeper looks for the last connection once shutting. */
#define SHUTDOWN_TICK 10000000 /* 10 ms */

/* How often the sweeper looks: a tenth of the idle timeout within [10 ms,
 * 1 s], and of the handler timeout within [1 ms, 100 ms]; a parked
 * connection is closed, and a 504 comes, at most that late. */
static int64_t sweeper_tick(const struct baton_http_server *srv)
{
	int64_t t = clamp_tick(srv->a.idle_timeout_ns / 10, 10000000, 1000000000);

	if (sweeps_handlers(srv)) {
		int64_t h = clamp_tick(srv->a.handler_timeout_ns / 10, 1000000, 100000000);

		t = h < t ? h : t;
	}
	return t;
}

/* Under the lock: abort every connection task whose handler passed its
 * deadline, and end the idle time of every parked connection past it. */
static void sweep(struct baton_http_server *srv, int64_t now)
{
	bool handlers = sweeps_handlers(srv);
	struct http_conn *c;

	BATON_LIST_FOR_EACH (c, &srv->list, link) {
		/* Acquire: idle_until, stored before parked (conn_park). */
		if (!c->reaped && __atomic_load_n(&c->parked, __ATOMIC_ACQUIRE) &&
		    now >= __atomic_load_n(&c->idle_until, __ATOMIC_RELAXED)) {
			/* Its notification starts a task that reads the end
			 * and closes; the descriptor is open while the
			 * connection is listed (conn_end unlinks first). */
			shutdown(c->fd, SHUT_RD);
			c->reaped = true;
		}
		if (!handlers)
			continue;
		/* Acquire: c->tid, stored before the deadline (conn.c watch). */
		int64_t d = __atomic_load_n(&c->deadline, __ATOMIC_ACQUIRE);

		/* Acq_rel claim against the connection's exchange in unwatch:
		 * the one that finds the deadline still there decides whether
		 * the handler's answer or the 504 goes out, and a handler that
		 * returned in time is never cancelled in its next request. The
		 * abort is by id: safe whatever became of the task (a stale
		 * id is BATON_EDEAD), and it cancels the groups the task owns
		 * too, down the tree (baton/sched.h). */
		if (d > 0 && now >= d &&
		    __atomic_compare_exchange_n(&c->deadline, &d, -1, false, __ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED))
			/* Relaxed: ordered by the deadline's acquire above. */
			(void)baton_task_abort(__atomic_load_n(&c->tid, __ATOMIC_RELAXED));
	}
}

/*
 * The server's clock for what no task waits for: parked connections have
 * no task to time their idle timeout out, and, in the I/O-worker shape, a
 * handler runs in its connection's task, which cannot time itself out
 * while it is in the handler. So this task looks every tick: it shuts the
 * read side of parked connections past their idle time (their next task
 * reads the end and closes) and cancels the tasks whose handler passed its
 * deadline (baton/sched.h). It ends once the server is shut down and every
 * connection is gone.
 */
static void sweeper(void *arg)
{
	struct baton_http_server *srv = arg;
	int64_t tick = sweeper_tick(srv);

	for (;;) {
		bool end;
		int rc;

		pthread_mutex_lock(&srv->lock);
		sweep(srv, baton__clock_now());
		end = baton__http_shutting(srv) && srv->nconns == 0 && srv->acceptor_done;
		srv->sweeper_done = end;
		pthread_mutex_unlock(&srv->lock);
		if (end)
			return;
		/* Wait a tick, or until shutdown releases a unit; once shutting,
		 * look every SHUTDOWN_TICK for the last connection to end, so that
		 * the run returns promptly, not up to a whole tick later. */
		rc = baton_sem_acquire(srv->sweep_wake, 1,
				       baton__http_shutting(srv) ? SHUTDOWN_TICK : tick);
		if (rc != BATON_OK && rc != BATON_ETIMEDOUT)
			baton_sched_yield(); /* no timer: look again soon */
	}
}

/* Spawn the sweeper; false without memory for it (try again later). */
static bool start_sweeper(struct baton_http_server *srv)
{
	struct baton_task_attr ta = BATON_TASK_ATTR_INIT;

	return baton_sched_spawn(srv->sched, &ta, sweeper, srv) == BATON_OK;
}

/* --- the acceptor --------------------------------------------------------- */
/* The listener's handle. Without memory for it (the worker's reactor or
 * the handle), wait and try again: a server that stopped accepting for good
 * over a passing shortage would look alive and serve nobody. */
static int open_listener(struct baton_http_server *srv, baton_io_t **lis)
{
	int rc;

	while ((rc = baton_io_open(lis, srv->lfd, true)) == BATON_ENOMEM &&
	       !baton__http_shutting(srv))
		if (baton_sched_sleep(10000000) != BATON_OK)
			baton_sched_yield(); /* no timer either */
	return rc;
}

static void acceptor(void *arg)
{
	struct baton_http_server *srv = arg;
	baton_io_t *lis;
	int one = 1;
	bool sweeper_started = false;

	if (open_listener(srv, &lis) != BATON_OK) {
		/* No reactor here (out of memory, or no backend works): the
		 * server accepts nothing. /_stats shows the accept stage closed. */
		baton_gate_close(srv->gate[HTTP_ACCEPT]);
		baton__http_steps_update(srv); /* accept: through the closed stage */
		close(srv->lfd);
		goto out;
	}
	while (!baton__http_shutting(srv)) {
		struct http_pass pass = HTTP_PASS_INIT;

		if (!sweeper_started)
			sweeper_started = start_sweeper(srv);
		struct http_conn *c;
		int fd, rc;

		/* The connection cap: accept pauses while it is reached. */
		rc = baton_pool_acquire(srv->conns, 1, 200000000);
		if (rc == BATON_ETIMEDOUT)
			continue;
		if (rc != BATON_OK)
			break;
		/* Bounded wait so that shutdown is noticed promptly. */
		rc = baton_io_accept(lis, &fd, 200000000);
		if (rc != BATON_OK) {
			baton_pool_release(srv->conns, 1);
			if (rc == BATON_ESYS &&
			    (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			     errno == ENOMEM))
				baton_sched_sleep(10000000); /* out of fds: back off */
			continue;
		}
		/* The accept step: from a connection to its task. One
		 * acceptor, so the slot is free: timeout 0. */
		if (baton__http_step_enter(srv, HTTP_ACCEPT, &pass, 0, 0) != BATON_OK) {
			close(fd);
			baton_pool_release(srv->conns, 1);
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c = baton__calloc(1, sizeof(*c));
		if (c == NULL) {
			close(fd);
			baton_pool_release(srv->conns, 1);
			baton__http_step_leave(srv, &pass, NULL);
			continue;
		}
		c->srv = srv;
		c->fd = fd;
		c->worker = (int)(srv->next_io++ % srv->io_workers);
		conn_link(srv, c);
		if (spawn_conn(c) != BATON_OK) {
			conn_unlink(srv, c);
			close(fd);
			baton__free(c);
			baton_pool_release(srv->conns, 1);
			baton__http_step_leave(srv, &pass, NULL);
			continue;
		}
		baton__http_step_leave(srv, &pass, NULL);
		/* Let the new connection's task run before the next accept:
		 * it reads, answers and parks (its stack back to the pool) in
		 * one turn, so a burst of connections takes a few stacks at a
		 * time, not one per connection in the backlog, each left dirty
		 * after the burst. */
		baton_sched_yield();
	}
	baton_io_close(lis);
out:
	pthread_mutex_lock(&srv->lock);
	srv->acceptor_done = true;
	if (!sweeper_started) /* never got memory for it */
		srv->sweeper_done = true;
	pthread_mutex_unlock(&srv->lock);
}

/* --- public API --------------------------------------------------------------- */
static int listen_socket(struct baton_http_server *srv)
{
	srv->port = srv->a.port;
	return baton_io_listen_socket(srv->host, &srv->port, srv->a.backlog, &srv->lfd);
}

int baton_http_server_attr_init(struct baton_http_server_attr *a)
{
	static const struct baton_http_server_attr defaults = BATON_HTTP_SERVER_ATTR_INIT;

	if (a == NULL)
		return BATON_EINVAL;
	*a = defaults;
	return BATON_OK;
}

static bool attr_valid(const struct baton_http_server_attr *a)
{
	return a->handler && a->handler_queue > 0 && a->queue_timeout_ns >= 0 &&
		a->handler_queue <= BATON_STAGE_MAX_CAPACITY && a->max_target > 0 &&
		a->max_header_bytes > 0 && a->max_fields > 0 && a->max_body >= 0 &&
		a->header_timeout_ns > 0 && a->idle_timeout_ns > 0 && a->write_timeout_ns > 0 &&
		a->max_connections > 0 && a->handler_concurrency > 0 && a->max_inflight > 0 &&
		a->backlog > 0 && a->linger_ns >= 0 && a->handler_timeout_ns >= 0 &&
		a->static_symlinks >= BATON_HTTP_SYMLINKS_OFF &&
		a->static_symlinks <= BATON_HTTP_SYMLINKS_OWNER;
}

/* A replaced handler, once no call of it is left (a retire's free). */
static void handler_release(void *p)
{
	struct http_handler *h = p;

	if (h->release)
		h->release(h->ctx);
	baton__free(h);
}

static void server_free(struct baton_http_server *srv)
{
	/* No call of a handler is left (run returned): what was retired is
	 * freed, and the current handler's context released. */
	if (srv->smr)
		(void)baton_smr_destroy(srv->smr);
	if (srv->handler)
		handler_release(srv->handler);
	while (srv->stale) {
		struct http_handler *next = srv->stale->stale_next;

		handler_release(srv->stale);
		srv->stale = next;
	}
	for (int i = 0; i < HTTP_NSTAGES; i++)
		baton_gate_destroy(srv->gate[i]);
	baton_stage_destroy(srv->handle);
	if (srv->workers)
		baton__http_reserves_flush(srv);
	for (unsigned i = 0; srv->workers && i < srv->nworkers; i++)
		while (srv->workers[i].nbuf)
			baton__free(srv->workers[i].buf[--srv->workers[i].nbuf]);
	baton__free(srv->workers);
	baton_pool_destroy(srv->conns);
	baton_pool_destroy(srv->inflight);
	baton_sem_destroy(srv->sweep_wake);
	baton_pool_destroy(srv->slots);
	pthread_mutex_destroy(&srv->lock);
	baton__free(srv->host);
	baton__free(srv->static_dir);
	if (srv->static_fd >= 0)
		close(srv->static_fd);
	baton__free(srv);
}

static unsigned clamp_conc(long n)
{
	return n > BATON_HTTP_STAGE_MAX ? BATON_HTTP_STAGE_MAX : (unsigned)n;
}

static const char *const stage_names[HTTP_NSTAGES] = { "accept", "read", "handle", "write" };

static int stage_index(const char *name, size_t len)
{
	for (int i = 0; i < HTTP_NSTAGES; i++)
		if (strlen(stage_names[i]) == len && memcmp(stage_names[i], name, len) == 0)
			return i;
	return -1;
}

/*
 * The steps as gates, but handle with compute workers: a stage whose tasks
 * run there. Every connection reads and writes at most one request at a
 * time, so those gates' concurrency starts at the connection cap (a lower
 * one makes connections wait their turn to read or write). Read declares
 * the in-flight pool, KEEP: a request holds its unit from its first byte
 * until its response is written.
 */
static int make_stages(struct baton_http_server *srv, baton_sched_t *s)
{
	const struct baton_http_server_attr *a = &srv->a;
	unsigned conns = clamp_conc(a->max_connections);
	struct baton_stage_need inflight = { srv->inflight, 1, BATON_STAGE_KEEP };
	struct {
		unsigned conc;
		size_t queue;
	} lim[HTTP_NSTAGES] = {
		{ 1, 1 },
		{ conns, conns },
		{ clamp_conc(a->handler_concurrency), a->handler_queue },
		{ conns, conns },
	};
	int rc;

	for (int i = 0; i < HTTP_NSTAGES; i++) {
		struct baton_stage_attr sa = BATON_STAGE_ATTR_INIT;
		struct baton_gate_attr ga = BATON_GATE_ATTR_INIT;

		ga.name = sa.name = stage_names[i];
		ga.queue_capacity = sa.queue_capacity = lim[i].queue;
		ga.concurrency = sa.concurrency = lim[i].conc;
		sa.task.coro = a->coro;
		if (i == HTTP_READ) {
			ga.needs = &inflight;
			ga.nneeds = 1;
		}
		if (i == HTTP_HANDLE && srv->compute) {
			sa.fn = baton__http_handle_job;
			sa.ctx = srv;
			sa.first_worker = (int)srv->io_workers;
			sa.nworkers = a->compute_workers;
			/* A handler its connection left at the deadline stops. */
			if (a->handler_timeout_ns > 0)
				sa.flags = BATON_STAGE_CANCEL_ABANDONED;
		}
		rc = sa.fn ? baton_stage_create(&srv->handle, s, &sa)
			   : baton_gate_create(&srv->gate[i], &ga);
		if (rc != BATON_OK)
			return rc;
	}
	return BATON_OK;
}

int baton_http_server_create(baton_http_server_t **out, baton_sched_t *s,
			     const struct baton_http_server_attr *attr)
{
	struct baton_http_server *srv;
	struct baton_task_attr ta = BATON_TASK_ATTR_INIT;
	int rc;

	if (out == NULL || s == NULL || attr == NULL || !attr_valid(attr) ||
	    attr->compute_workers >= (unsigned)baton_sched_workers(s))
		return BATON_EINVAL;
	srv = baton__calloc(1, sizeof(*srv));
	if (srv == NULL)
		return BATON_ENOMEM;
	srv->sched = s;
	srv->a = *attr;
	srv->lfd = -1;
	srv->static_fd = -1;
	pthread_mutex_init(&srv->lock, NULL);
	if ((rc = baton_smr_create(&srv->smr)) != BATON_OK)
		goto fail;
	if ((srv->handler = baton__malloc(sizeof(*srv->handler))) == NULL) {
		rc = BATON_ENOMEM;
		goto fail;
	}
	*srv->handler = (struct http_handler){ attr->handler, attr->ctx, NULL, NULL };
	srv->nworkers = (unsigned)baton_sched_workers(s);
	if ((srv->workers = baton__aligned(64, srv->nworkers * sizeof(*srv->workers))) == NULL) {
		srv->workers = NULL;
		rc = BATON_ENOMEM;
		goto fail;
	}
	memset(srv->workers, 0, srv->nworkers * sizeof(*srv->workers));
	srv->lim = (struct baton_http_limits){ attr->max_target, attr->max_header_bytes,
					       attr->max_fields, attr->max_body };
	rc = BATON_ENOMEM;
	if ((attr->host && (srv->host = baton__strdup(attr->host)) == NULL) ||
	    (attr->static_dir && (srv->static_dir = baton__strdup(attr->static_dir)) == NULL))
		goto fail;
	if (srv->static_dir && (rc = baton__http_static_init(srv)) != BATON_OK)
		goto fail;
	if ((rc = baton_pool_create(&srv->conns, "connections", attr->max_connections)) ||
	    (rc = baton_pool_create(&srv->inflight, "in-flight", attr->max_inflight)) ||
	    (rc = baton_sem_create(&srv->sweep_wake, 0)))
		goto fail;
	srv->io_workers = (unsigned)baton_sched_workers(s) - attr->compute_workers;
	srv->compute = attr->compute_workers > 0;
	/* Handlers inline: their concurrency is the slots' pool (step.c). */
	if (!srv->compute &&
	    (rc = baton_pool_create(&srv->slots, "handler slots",
				    clamp_conc(attr->handler_concurrency))) != BATON_OK)
		goto fail;
	if ((rc = make_stages(srv, s)) != BATON_OK)
		goto fail;
	baton__http_steps_update(srv);
	rc = listen_socket(srv);
	if (rc != BATON_OK)
		goto fail;
	ta.coro = attr->coro;
	if (srv->compute) { /* the acceptor is I/O too */
		ta.worker = 0;
		ta.flags = BATON_TASK_BOUND;
	}
	rc = baton_sched_spawn(s, &ta, acceptor, srv);
	if (rc != BATON_OK) {
		close(srv->lfd);
		goto fail;
	}
	/* The sweeper is the acceptor's to start (it retries on ENOMEM);
	 * sweeper_done stays false (calloc) until it ends. */
	/* From here the context is ours to release (at destroy). */
	srv->handler->release = attr->release;
	*out = srv;
	return BATON_OK;
fail:
	server_free(srv);
	return rc;
}

int baton_http_server_set_handler(baton_http_server_t *srv, baton_http_handler_fn fn, void *ctx,
				  void (*release)(void *ctx), int64_t timeout_ns)
{
	struct http_handler *h, *old, *stale = NULL;
	int rc;

	if (srv == NULL || fn == NULL)
		return BATON_EINVAL;
	if ((h = baton__malloc(sizeof(*h))) == NULL)
		return BATON_ENOMEM;
	*h = (struct http_handler){ fn, ctx, release, NULL };
	/* Acq_rel: calls that load the new record see its fields (release);
	 * we see the old one's (acquire). */
	old = __atomic_exchange_n(&srv->handler, h, __ATOMIC_ACQ_REL);
	/* Every call that may still hold `old` began before the exchange: a
	 * grace period waits for them all, and for the calls of handlers an
	 * earlier reload could not wait for (they began earlier still). */
	rc = baton_smr_synchronize(srv->smr, timeout_ns);
	pthread_mutex_lock(&srv->lock);
	if (rc == BATON_OK) {
		stale = srv->stale;
		srv->stale = NULL;
	} else {
		old->stale_next = srv->stale; /* for the next one, or destroy */
		srv->stale = old;
		old = NULL;
	}
	pthread_mutex_unlock(&srv->lock);
	if (old)
		handler_release(old);
	while (stale) {
		struct http_handler *next = stale->stale_next;

		handler_release(stale);
		stale = next;
	}
	return rc;
}

int baton_http_server_port(const baton_http_server_t *srv)
{
	return srv ? srv->port : BATON_EINVAL;
}

int baton_http_server_shutdown(baton_http_server_t *srv)
{
	struct http_conn *c;

	if (srv == NULL)
		return BATON_EINVAL;
	/* Seq_cst: see baton__http_conn_set_idle. */
	__atomic_store_n(&srv->shutting, true, __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&srv->lock);
	/* Idle connections wait in read: end that read with EOF. Busy ones
	 * answer their request with Connection: close, then end. */
	BATON_LIST_FOR_EACH (c, &srv->list, link)
		if (__atomic_load_n(&c->idle, __ATOMIC_SEQ_CST))
			shutdown(c->fd, SHUT_RD);
	pthread_mutex_unlock(&srv->lock);
	/* The sweeper may be in a wait of up to a second: end it now. A
	 * second shutdown's unit only makes it look once more. */
	(void)baton_sem_release(srv->sweep_wake, 1);
	return BATON_OK;
}

int baton_http_server_set_limits(baton_http_server_t *srv, long handler_concurrency,
				 long max_inflight, long max_connections)
{
	int rc = BATON_OK;

	if (srv == NULL)
		return BATON_EINVAL;
	if (handler_concurrency > 0)
		rc = baton__http_step_set(srv, HTTP_HANDLE, clamp_conc(handler_concurrency), 0);
	if (rc == BATON_OK && handler_concurrency > 0 && srv->slots)
		rc = baton_pool_set_capacity(srv->slots, clamp_conc(handler_concurrency));
	if (rc == BATON_OK && max_inflight > 0)
		rc = baton_pool_set_capacity(srv->inflight, max_inflight);
	if (rc == BATON_OK && max_connections > 0)
		rc = baton_pool_set_capacity(srv->conns, max_connections);
	baton__http_steps_update(srv);
	return rc;
}

int baton_http_server_set_handler_queue(baton_http_server_t *srv, size_t n)
{
	int rc;

	if (srv == NULL || n == 0)
		return BATON_EINVAL;
	rc = baton__http_step_set(srv, HTTP_HANDLE, 0, n);
	baton__http_steps_update(srv);
	return rc;
}

int baton_http_server_set_stage(baton_http_server_t *srv, const char *stage, unsigned concurrency,
				size_t queue)
{
	int i, rc;

	if (srv == NULL || stage == NULL || (i = stage_index(stage, strlen(stage))) < 0)
		return BATON_EINVAL;
	if (i == HTTP_ACCEPT && concurrency > 1) /* one acceptor */
		return BATON_EINVAL;
	if (concurrency > BATON_HTTP_STAGE_MAX)
		return BATON_EINVAL;
	rc = baton__http_step_set(srv, i, concurrency, queue);
	if (rc == BATON_OK && concurrency > 0 && i == HTTP_HANDLE && srv->slots)
		rc = baton_pool_set_capacity(srv->slots, concurrency);
	baton__http_steps_update(srv);
	return rc;
}

int baton_http_server_snapshot(baton_http_server_t *srv, struct baton_http_server_stats *out)
{
	if (srv == NULL || out == NULL)
		return BATON_EINVAL;
	baton__http_steps_snapshot(srv, out);
	return BATON_OK;
}

int baton_http_server_destroy(baton_http_server_t *srv)
{
	bool busy;

	if (srv == NULL)
		return BATON_OK;
	pthread_mutex_lock(&srv->lock);
	busy = srv->nconns > 0 || !srv->acceptor_done || !srv->sweeper_done;
	pthread_mutex_unlock(&srv->lock);
	if (busy)
		return BATON_EBUSY;
	server_free(srv);
	return BATON_OK;
}
