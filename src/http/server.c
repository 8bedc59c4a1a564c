/*
 * The server's life cycle: create (bind and listen at once, so that errors
 * reach the caller), the acceptor task, shutdown, limits, statistics.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../io/poller.h"
#include "server_internal.h"

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* --- step counters ---------------------------------------------------------- */
/* Add v to a counter of this worker's set: a relaxed load and store (one
 * writer). Off a worker, to the last set, with an atomic add (several
 * threads may write it). Unsigned arithmetic: `running` goes below zero on
 * a worker a task left, and the sum over the sets comes out right. */
static void step_add(struct baton_http_server *srv, int step, size_t field, int64_t v)
{
	int w = baton_sched_worker_index();
	bool shared = w < 0 || (unsigned)w >= srv->nsteps - 1;
	uint64_t *p = (uint64_t *)((char *)&srv->steps[shared ? srv->nsteps - 1 : (unsigned)w]
					   .s[step] + field);

	if (shared)
		__atomic_add_fetch(p, (uint64_t)v, __ATOMIC_RELAXED);
	else /* relaxed: the snapshot reads it racily */
		__atomic_store_n(p, __atomic_load_n(p, __ATOMIC_RELAXED) + (uint64_t)v,
				 __ATOMIC_RELAXED);
}

void baton_http_step_begin(struct baton_http_server *srv, int step)
{
	step_add(srv, step, offsetof(struct http_step, running), 1);
}

/* Returns the time it ended (0 when t0 is 0: no clock read), which the
 * caller may use as the next step's start. */
int64_t baton_http_step_end(struct baton_http_server *srv, int step, int64_t t0, bool ok)
{
	int64_t end = 0;

	step_add(srv, step, offsetof(struct http_step, running), -1);
	step_add(srv, step, ok ? offsetof(struct http_step, completed)
			       : offsetof(struct http_step, rejected), 1);
	if (t0) {
		end = now_ns();
		step_add(srv, step, offsetof(struct http_step, ns), end - t0);
	}
	return end;
}

/* A request refused at this step before it started it. */
void baton_http_step_reject(struct baton_http_server *srv, int step)
{
	step_add(srv, step, offsetof(struct http_step, rejected), 1);
}

/* The sum over the workers' sets (racy reads: a best-effort instant). */
static struct http_step step_sum(const struct baton_http_server *srv, int step)
{
	struct http_step sum = { 0, 0, 0, 0 };

	for (unsigned i = 0; i < srv->nsteps; i++) {
		const struct http_step *st = &srv->steps[i].s[step];

		/* Relaxed: see step_add. */
		sum.running += __atomic_load_n(&st->running, __ATOMIC_RELAXED);
		sum.completed += __atomic_load_n(&st->completed, __ATOMIC_RELAXED);
		sum.rejected += __atomic_load_n(&st->rejected, __ATOMIC_RELAXED);
		sum.ns += __atomic_load_n(&st->ns, __ATOMIC_RELAXED);
	}
	return sum;
}

/* --- buffers ------------------------------------------------------------------ */
static struct http_bufs *my_bufs(struct baton_http_server *srv)
{
	int w = baton_sched_worker_index();

	return w >= 0 && (unsigned)w < srv->nsteps - 1 ? &srv->bufs[w] : NULL;
}

/* A buffer of HTTP_BUF_SIZE bytes: this worker's last given back, or new. */
void *baton_http_buf_get(struct baton_http_server *srv)
{
	struct http_bufs *b = my_bufs(srv);

	return b && b->n ? b->item[--b->n] : malloc(HTTP_BUF_SIZE);
}

/* Give back a buffer of cap bytes (NULL: nothing). */
void baton_http_buf_put(struct baton_http_server *srv, void *p, size_t cap)
{
	struct http_bufs *b = my_bufs(srv);

	if (p != NULL && cap == HTTP_BUF_SIZE && b && b->n < HTTP_BUF_CACHE)
		b->item[b->n++] = p;
	else
		free(p);
}

/* --- the connection list -------------------------------------------------- */
/* Mark a connection idle (between requests) or busy. Returns false when it
 * becomes idle while the server shuts down: the caller closes it. */
bool baton_http_conn_set_idle(struct http_conn *c, bool idle)
{
	/* Seq_cst store then load, against shutdown's seq_cst store of
	 * shutting then load of idle (Dekker): either this connection sees
	 * the shutdown, or the shutdown sees it idle and ends its read. */
	__atomic_store_n(&c->idle, idle, __ATOMIC_SEQ_CST);
	return !(idle && baton_http_shutting(c->srv));
}

bool baton_http_shutting(struct baton_http_server *srv)
{
	/* Seq_cst: see baton_http_conn_set_idle. */
	return __atomic_load_n(&srv->shutting, __ATOMIC_SEQ_CST);
}

static void conn_link(struct baton_http_server *srv, struct http_conn *c)
{
	pthread_mutex_lock(&srv->lock);
	c->prev = NULL;
	c->next = srv->list;
	if (srv->list)
		srv->list->prev = c;
	srv->list = c;
	srv->nconns++;
	pthread_mutex_unlock(&srv->lock);
}

static void conn_unlink(struct baton_http_server *srv, struct http_conn *c)
{
	pthread_mutex_lock(&srv->lock);
	if (c->prev)
		c->prev->next = c->next;
	else
		srv->list = c->next;
	if (c->next)
		c->next->prev = c->prev;
	srv->nconns--;
	pthread_mutex_unlock(&srv->lock);
}

/* The connection task: wraps baton_http_conn_main with the bookkeeping. */
static void conn_task(void *arg)
{
	struct http_conn *c = arg;
	struct baton_http_server *srv = c->srv;

	baton_http_conn_main(c);
	conn_unlink(srv, c);
	baton_sem_destroy(c->done);
	baton_http_buf_put(srv, c->in, c->in_cap);
	baton_http_buf_put(srv, c->out, c->out_cap);
	free(c);
	baton_pool_release(srv->conns, 1);
}

/* --- the acceptor --------------------------------------------------------- */
static void acceptor(void *arg)
{
	struct baton_http_server *srv = arg;
	baton_io_t *lis;
	int one = 1;

	if (baton_io_open(&lis, srv->lfd, true) != BATON_OK) {
		fprintf(stderr, "baton-httpd: cannot watch the listening socket: %s\n",
			strerror(errno));
		close(srv->lfd);
		goto out;
	}
	while (!baton_http_shutting(srv)) {
		struct http_conn *c;
		int fd, rc;
		int64_t t0;

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
			if (rc != BATON_ETIMEDOUT)
				baton_http_step_reject(srv, STEP_ACCEPT);
			if (rc == BATON_ESYS && (errno == EMFILE || errno == ENFILE ||
						 errno == ENOBUFS || errno == ENOMEM))
				baton_sched_sleep(10000000); /* out of fds: back off */
			continue;
		}
		/* The accept step: from a connection to its task. */
		baton_http_step_begin(srv, STEP_ACCEPT);
		t0 = now_ns();
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c = calloc(1, sizeof(*c));
		if (c)
			c->srv = srv, c->fd = fd;
		if (c == NULL || baton_io_open(&c->io, fd, true) != BATON_OK) {
			free(c);
			close(fd);
			baton_pool_release(srv->conns, 1);
			baton_http_step_end(srv, STEP_ACCEPT, t0, false);
			continue;
		}
		conn_link(srv, c);
		struct baton_task_attr ta = BATON_TASK_ATTR_INIT;

		ta.coro = srv->a.coro;
		if (srv->handle != NULL) {
			/* Connections stay on the I/O workers, spread evenly. */
			ta.worker = (int)(srv->next_io++ % srv->io_workers);
			ta.flags = BATON_TASK_BOUND;
		}
		if (baton_sched_spawn(srv->sched, &ta, conn_task, c) != BATON_OK) {
			conn_unlink(srv, c);
			baton_io_close(c->io);
			free(c);
			baton_pool_release(srv->conns, 1);
			baton_http_step_end(srv, STEP_ACCEPT, t0, false);
			continue;
		}
		baton_http_step_end(srv, STEP_ACCEPT, t0, true);
	}
	baton_io_close(lis);
out:
	pthread_mutex_lock(&srv->lock);
	srv->acceptor_done = true;
	pthread_mutex_unlock(&srv->lock);
}

/* --- public API --------------------------------------------------------------- */
static int listen_socket(struct baton_http_server *srv)
{
	srv->port = srv->a.port;
	return baton_io_listen_socket(srv->host, &srv->port, srv->a.backlog, &srv->lfd);
}

static bool attr_valid(const struct baton_http_server_attr *a)
{
	return a->handler && a->handler_queue > 0 && a->queue_timeout_ns >= 0 &&
	       a->handler_queue <= BATON_STAGE_MAX_CAPACITY && a->max_target > 0 && a->max_header_bytes > 0 &&
	       a->max_fields > 0 && a->max_body >= 0 && a->header_timeout_ns > 0 &&
	       a->idle_timeout_ns > 0 && a->write_timeout_ns > 0 &&
	       a->max_connections > 0 && a->handler_concurrency > 0 &&
	       a->max_inflight > 0 && a->backlog > 0 && a->linger_ns >= 0;
}

static void server_free(struct baton_http_server *srv)
{
	baton_stage_destroy(srv->handle);
	free(srv->steps);
	for (unsigned i = 0; srv->bufs && i < srv->nsteps; i++)
		while (srv->bufs[i].n)
			free(srv->bufs[i].item[--srv->bufs[i].n]);
	free(srv->bufs);
	baton_pool_destroy(srv->conns);
	baton_pool_destroy(srv->handlers);
	baton_pool_destroy(srv->inflight);
	pthread_mutex_destroy(&srv->lock);
	free(srv->host);
	free(srv->static_dir);
	free(srv);
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
	srv = calloc(1, sizeof(*srv));
	if (srv == NULL)
		return BATON_ENOMEM;
	srv->sched = s;
	srv->a = *attr;
	srv->lfd = -1;
	pthread_mutex_init(&srv->lock, NULL);
	srv->nsteps = (unsigned)baton_sched_workers(s) + 1;
	if (posix_memalign((void **)&srv->steps, 64, srv->nsteps * sizeof(*srv->steps)) != 0) {
		srv->steps = NULL;
		rc = BATON_ENOMEM;
		goto fail;
	}
	memset(srv->steps, 0, srv->nsteps * sizeof(*srv->steps));
	if (posix_memalign((void **)&srv->bufs, 64, srv->nsteps * sizeof(*srv->bufs)) != 0) {
		srv->bufs = NULL;
		rc = BATON_ENOMEM;
		goto fail;
	}
	memset(srv->bufs, 0, srv->nsteps * sizeof(*srv->bufs));
	srv->lim = (struct baton_http_limits){ attr->max_target, attr->max_header_bytes,
					       attr->max_fields, attr->max_body };
	rc = BATON_ENOMEM;
	if ((attr->host && (srv->host = strdup(attr->host)) == NULL) ||
	    (attr->static_dir && (srv->static_dir = strdup(attr->static_dir)) == NULL))
		goto fail;
	if ((rc = baton_pool_create(&srv->conns, "connections", attr->max_connections)) ||
	    (rc = baton_pool_create(&srv->handlers, "handlers", attr->handler_concurrency)) ||
	    (rc = baton_pool_create(&srv->inflight, "in-flight", attr->max_inflight)))
		goto fail;
	srv->io_workers = (unsigned)baton_sched_workers(s) - attr->compute_workers;
	if (attr->compute_workers > 0) {
		struct baton_stage_attr sa = BATON_STAGE_ATTR_INIT;

		sa.name = "handle";
		sa.fn = baton_http_handle_job;
		sa.ctx = srv;
		sa.queue_capacity = attr->handler_queue;
		sa.concurrency = attr->handler_concurrency > 1000000 ? 1000000
				 : (unsigned)attr->handler_concurrency;
		sa.task.coro = attr->coro;
		sa.first_worker = (int)srv->io_workers;
		sa.nworkers = attr->compute_workers;
		if ((rc = baton_stage_create(&srv->handle, s, &sa)) != BATON_OK)
			goto fail;
	}
	rc = listen_socket(srv);
	if (rc != BATON_OK)
		goto fail;
	ta.coro = attr->coro;
	if (srv->handle != NULL) { /* the acceptor is I/O too */
		ta.worker = 0;
		ta.flags = BATON_TASK_BOUND;
	}
	rc = baton_sched_spawn(s, &ta, acceptor, srv);
	if (rc != BATON_OK) {
		close(srv->lfd);
		goto fail;
	}
	*out = srv;
	return BATON_OK;
fail:
	server_free(srv);
	return rc;
}

int baton_http_server_port(const baton_http_server_t *srv)
{
	return srv ? srv->port : BATON_EINVAL;
}

int baton_http_server_shutdown(baton_http_server_t *srv)
{
	if (srv == NULL)
		return BATON_EINVAL;
	/* Seq_cst: see baton_http_conn_set_idle. */
	__atomic_store_n(&srv->shutting, true, __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&srv->lock);
	/* Idle connections wait in read: end that read with EOF. Busy ones
	 * answer their request with Connection: close, then end. */
	for (struct http_conn *c = srv->list; c; c = c->next)
		if (__atomic_load_n(&c->idle, __ATOMIC_SEQ_CST))
			shutdown(c->fd, SHUT_RD);
	pthread_mutex_unlock(&srv->lock);
	return BATON_OK;
}

int baton_http_server_set_limits(baton_http_server_t *srv, long handler_concurrency,
				 long max_inflight, long max_connections)
{
	int rc = BATON_OK;

	if (srv == NULL)
		return BATON_EINVAL;
	if (handler_concurrency > 0)
		rc = srv->handle ? baton_stage_set_concurrency(srv->handle, handler_concurrency >
					       1000000 ? 1000000 : (unsigned)handler_concurrency)
				 : baton_pool_set_capacity(srv->handlers, handler_concurrency);
	if (rc == BATON_OK && max_inflight > 0)
		rc = baton_pool_set_capacity(srv->inflight, max_inflight);
	if (rc == BATON_OK && max_connections > 0)
		rc = baton_pool_set_capacity(srv->conns, max_connections);
	return rc;
}

int baton_http_server_set_handler_queue(baton_http_server_t *srv, size_t n)
{
	if (srv == NULL || srv->handle == NULL)
		return BATON_EINVAL;
	return baton_stage_set_queue_limit(srv->handle, n);
}

int baton_http_server_stats_json(baton_http_server_t *srv, char *buf, size_t size,
				 size_t *len)
{
	baton_pool_t *pools[3];
	size_t n;
	int rc;

	if (srv == NULL || len == NULL || (buf == NULL && size))
		return BATON_EINVAL;
	pools[0] = srv->conns;
	pools[1] = srv->handlers;
	pools[2] = srv->inflight;
	/* {"steps":[...],"stages":[...],"pools":[...]}: the steps by hand,
	 * the stages and pools by the stage module's writer. */
	char steps[1024];
	size_t sl = 0;

	sl += (size_t)snprintf(steps + sl, sizeof(steps) - sl, "{\"steps\":[");
	static const char *const names[NSTEPS] = { "accept", "read", "handle", "write" };

	for (int i = 0; i < NSTEPS; i++) {
		struct http_step st = step_sum(srv, i);

		sl += (size_t)snprintf(steps + sl, sizeof(steps) - sl,
			"%s{\"name\":\"%s\",\"running\":%ld,\"completed\":%llu,"
			"\"rejected\":%llu,\"ns\":%llu}", i ? "," : "", names[i],
			(long)(int64_t)st.running,
			(unsigned long long)st.completed, (unsigned long long)st.rejected,
			(unsigned long long)st.ns);
	}
	sl += (size_t)snprintf(steps + sl, sizeof(steps) - sl, "],");
	size_t nst = srv->handle ? 1 : 0;

	/* The stages' object goes right after "...]," with its "{" on the
	 * comma, which is then put back: one snapshot, no copy. */
	if (size < sl) {
		baton_stage_json(&srv->handle, nst, pools, 3, NULL, 0, &n);
		*len = sl - 1 + n;
		if (size)
			buf[0] = '\0';
		return BATON_EINVAL;
	}
	memcpy(buf, steps, sl);
	rc = baton_stage_json(&srv->handle, nst, pools, 3, buf + sl - 1, size - sl + 1, &n);
	buf[sl - 1] = ',';
	*len = sl - 1 + n;
	if (rc != BATON_OK)
		buf[0] = '\0';
	return rc;
}

int baton_http_server_destroy(baton_http_server_t *srv)
{
	bool busy;

	if (srv == NULL)
		return BATON_OK;
	pthread_mutex_lock(&srv->lock);
	busy = srv->nconns > 0 || !srv->acceptor_done;
	pthread_mutex_unlock(&srv->lock);
	if (busy)
		return BATON_EBUSY;
	server_free(srv);
	return BATON_OK;
}
