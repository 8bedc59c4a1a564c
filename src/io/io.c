/* SPDX-License-Identifier: MIT */
/*
 * Blocking I/O for tasks (include/baton/io.h) on top of the worker's poller.
 *
 * Every operation tries its system call first. On EAGAIN it looks at the
 * handle's remembered readiness under the handle's lock: an edge that
 * arrived since the call returned means "try again"; otherwise the task
 * links a waiter and parks (the wait protocol of src/sched/wait.h). The
 * poller's baton__io_edge() sets the readiness and claims the waiters.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../sched/wait.h"
#include "poller.h"

/* --- the worker side ------------------------------------------------------- */
static const struct baton_poller_ops *choose_backend(struct baton_sched *s)
{
	const char *env = getenv("BATON_IO_BACKEND");
	/* Relaxed: baton_io_set_backend stores it before any reactor exists. */
	int want = __atomic_load_n(&s->io_backend, __ATOMIC_RELAXED);

	if (env && strcmp(env, "epoll") == 0)
		want = BATON_IO_EPOLL;
	else if (env && strcmp(env, "io_uring") == 0)
		want = BATON_IO_URING;
	/* AUTO tries io_uring first; worker_poller falls back to epoll. */
	return want == BATON_IO_EPOLL ? &baton__poller_epoll : &baton__poller_uring;
}

static void hook_poll(struct baton_worker *w, int64_t timeout_ns);
static void hook_wake(struct baton_worker *w);
static void hook_fini(struct baton_worker *w);

static const struct baton_worker_hook reactor_hook = { hook_poll, hook_wake, hook_fini };

/* The calling worker's reactor, created on first use and installed as the
 * worker's idle hook. */
static int worker_poller(struct baton_worker *w)
{
	const struct baton_poller_ops *ops;
	struct baton_reactor *r;
	int rc;

	if (w->hook_data)
		return BATON_OK;
	r = baton__calloc(1, sizeof(*r));
	if (r == NULL)
		return BATON_ENOMEM;
	w->hook_data = r; /* the backend's create stores r->poller */
	ops = choose_backend(w->sched);
	rc = ops->create(w);
	if (rc != BATON_OK && ops != &baton__poller_epoll) {
		ops = &baton__poller_epoll; /* io_uring unavailable: fall back */
		rc = ops->create(w);
	}
	if (rc != BATON_OK) {
		w->hook_data = NULL;
		baton__free(r);
		return rc;
	}
	r->pops = ops;
	/* Release: wakers that see the hook see the reactor's state. */
	__atomic_store_n(&w->hook, &reactor_hook, __ATOMIC_RELEASE);
	return BATON_OK;
}

/* Closing io (under its lock): its accept queue, taken off the handle,
 * which is marked closed; its storage is then free for dead_next. What
 * the backend accepts after this it closes (baton__io_accept_queue). */
static struct baton_io_accq *accq_detach(struct baton_io *io)
{
	struct baton_io_accq *q = io->accq;

	io->accq = NULL;
	io->ready |= BATON_IO_CLOSED;
	return q;
}

/* A closed listener's accepted descriptors that no task took: closed,
 * with the queue. */
static void accq_free(struct baton_io_accq *q)
{
	if (q == NULL)
		return;
	for (unsigned i = q->head; i < q->len; i++)
		close(q->fds[i]);
	baton__free(q->fds);
	baton__free(q);
}

/* On w's thread: free a closed handle, unless the backend still has
 * requests naming it (io_uring), in which case it frees it later. */
static void release_io(struct baton_worker *w, struct baton_io *io)
{
	struct baton_reactor *r = baton__reactor_of(w);

	baton__list_remove(&r->live, &io->live_link);
	if (r->pops->release == NULL || r->pops->release(w, io))
		baton__free(io);
}

static void free_dead(struct baton_worker *w)
{
	struct baton_reactor *r = baton__reactor_of(w);
	struct baton_io *io, *next;

	if (__atomic_load_n(&r->dead_ios, __ATOMIC_RELAXED) == NULL)
		return;
	/* Acquire: pairs with the release CAS of the closing thread. */
	io = __atomic_exchange_n(&r->dead_ios, NULL, __ATOMIC_ACQUIRE);
	for (; io; io = next) {
		next = io->dead_next;
		release_io(w, io);
	}
}

static void hook_poll(struct baton_worker *w, int64_t timeout_ns)
{
	baton__reactor_of(w)->pops->poll(w, timeout_ns);
	/* After the poll: no event of this round can name a dead handle. */
	free_dead(w);
}

static void hook_wake(struct baton_worker *w)
{
	baton__reactor_of(w)->pops->wake(w);
}

/* The scheduler is destroyed (no task waits any more): handles still open
 * are closed (their descriptors too if owned) and freed with it (io.h). */
static void hook_fini(struct baton_worker *w)
{
	struct baton_reactor *r = baton__reactor_of(w);

	free_dead(w);
	while (!baton__list_empty(&r->live)) {
		struct baton_io *io =
			BATON_LIST_ENTRY(baton__list_first(&r->live), struct baton_io, live_link);
		struct baton_io_accq *q;

		baton__spin_lock(&io->lock);
		q = accq_detach(io);
		baton__spin_unlock(&io->lock);
		accq_free(q);
		r->pops->del(w, io);
		if (io->owns_fd)
			close(io->fd);
		release_io(w, io);
	}
	r->pops->destroy(w);
	w->hook = NULL;
	w->hook_data = NULL;
	baton__free(r);
}

const char *baton_io_backend(void)
{
	struct baton_worker *w = baton__worker_get();

	return w && w->current && w->hook_data ? baton__reactor_of(w)->pops->name : NULL;
}

int baton_io_set_backend(baton_sched_t *s, baton_io_backend_t backend)
{
	if (s == NULL || (int)backend < 0 || (int)backend > BATON_IO_URING)
		return BATON_EINVAL;
	/* Relaxed: a hint against a misuse; the rule is "before the run". */
	if (__atomic_load_n(&s->running, __ATOMIC_RELAXED))
		return BATON_EBUSY;
	for (unsigned i = 0; i < s->nworkers; i++)
		/* Acquire pairs with worker_poller's release of the hook. */
		if (__atomic_load_n(&s->workers[i].hook, __ATOMIC_ACQUIRE) != NULL)
			return BATON_EBUSY;
	/* Relaxed: read by choose_backend on a worker started after this. */
	__atomic_store_n(&s->io_backend, (int)backend, __ATOMIC_RELAXED);
	return BATON_OK;
}

/* --- edges and waits ----------------------------------------------------- */
void baton__io_edge(struct baton_io *io, unsigned events, bool hup)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT;
	struct baton_waiter *wt;
	baton_io_notify_fn fn = NULL;
	void *arg = NULL;

	baton__spin_lock(&io->lock);
	io->ready |= events & (BATON_IO_IN | BATON_IO_OUT);
	/* Sticky: the end of file may arrive with the last bytes, in one
	 * edge, and no edge follows it (see drained_still). */
	if (events & BATON_IO_RDHUP)
		io->rdhup = true;
	if (events & BATON_IO_IN)
		/* Relaxed store under the lock: read unlocked as a hint. */
		__atomic_store_n(&io->read_edges, io->read_edges + 1, __ATOMIC_RELAXED);
	if (hup)
		io->hup = true;
	for (int dir = 0; dir < 2; dir++) {
		if (!hup && !(events & (1u << dir)))
			continue;
		while ((wt = baton__waitq_claim_first(&io->waiters[dir])) != NULL)
			baton__waiter_wake(&wl, wt, BATON_OK);
	}
	/* A notification takes the read edge as a waiting reader would; it
	 * is disarmed here, under the lock, so it runs once. */
	if (io->notify_fn && (hup || (events & (BATON_IO_IN | BATON_IO_RDHUP)))) {
		fn = io->notify_fn;
		arg = io->notify_arg;
		io->notify_fn = NULL;
		io->ready &= ~(unsigned)BATON_IO_IN; /* the callee reads it */
	}
	baton__spin_unlock(&io->lock);
	baton__wakelist_run(&wl);
	if (fn)
		fn(io, arg); /* last: it may close the handle */
}

/* The call said EAGAIN: wait for an edge in `dir` (0 read, 1 write) for at
 * most timeout ns (< 0: no limit), unless one came meanwhile. Returns
 * BATON_OK to try the call again. */
static int wait_edge(struct baton_io *io, int dir, int64_t timeout)
{
	struct baton_task *t = baton__task_self();
	unsigned bit = 1u << dir;

	if (t == NULL)
		return BATON_ENOSCHED;
	baton__spin_lock(&io->lock);
	if (io->ready & bit || io->hup || (dir == 0 && io->rdhup)) {
		/* An edge arrived since the call: use it up and retry. */
		io->ready &= ~bit;
		baton__spin_unlock(&io->lock);
		return BATON_OK;
	}
	return baton__wait_one(t, &io->waiters[dir], &io->lock, timeout);
}

#define DEADLINE_UNSET INT64_MIN

/* The call said EAGAIN: wait, within timeout_ns of the operation's start.
 * The deadline is fixed at the first wait, not before the first attempt:
 * most calls never wait, and a clock read costs as much as a short system
 * call on some machines. */
static int would_block(struct baton_io *io, int dir, int64_t *deadline, int64_t timeout_ns)
{
	int64_t timeout = -1;

	if (timeout_ns == 0)
		return BATON_EAGAIN;
	if (timeout_ns > 0) {
		if (*deadline == DEADLINE_UNSET) {
			*deadline = baton__deadline_after(timeout_ns);
			timeout = timeout_ns;
		} else {
			timeout = *deadline - baton__clock_now();
			if (timeout <= 0)
				return BATON_ETIMEDOUT;
		}
	}
	return wait_edge(io, dir, timeout);
}

/* --- the public operations ---------------------------------------------- */
int baton_io_open(baton_io_t **out, int fd, bool owns_fd)
{
	struct baton_worker *w = baton__worker_get();
	struct baton_io *io;
	int flags, rc;

	if (out == NULL || fd < 0)
		return BATON_EINVAL;
	if (w == NULL || w->current == NULL)
		return BATON_ENOSCHED;
	rc = worker_poller(w);
	if (rc != BATON_OK)
		return rc;
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || (!(flags & O_NONBLOCK) && fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0))
		return BATON_ESYS;
	io = baton__calloc(1, sizeof(*io));
	if (io == NULL)
		return BATON_ENOMEM;
	io->fd = fd;
	io->owns_fd = owns_fd;
	io->home = w;
	rc = baton__reactor_of(w)->pops->add(w, io);
	if (rc != BATON_OK) {
		baton__free(io);
		return rc;
	}
	/* Home thread only: the list is the reactor's. */
	baton__list_push_head(&baton__reactor_of(w)->live, &io->live_link);
	*out = io;
	return BATON_OK;
}

/*
 * A read that returned less than it asked for took everything the socket
 * held at that moment, and any later byte brings a new edge (both pollers
 * report every arrival). Until that edge, the next read would only say
 * EAGAIN: skip it and wait at once. The edge count is read before the
 * system call, so an edge that came during it (its bytes perhaps not read)
 * counts as new. This saves the read that used to end every keep-alive
 * request with EAGAIN. Not past the peer's end (rdhup): a short read then
 * left the end of file behind, and no edge will announce it again.
 */
static bool drained_still(struct baton_io *io)
{
	bool still;

	baton__spin_lock(&io->lock);
	still = io->drained && io->read_edges == io->drained_at && !io->hup && !io->rdhup;
	if (still)
		io->ready &= ~(unsigned)BATON_IO_IN; /* an edge older than the read */
	/* Relaxed store under the lock: read unlocked as a hint. */
	__atomic_store_n(&io->drained, still, __ATOMIC_RELAXED);
	baton__spin_unlock(&io->lock);
	return still;
}

/* Whether io is known not to be a socket (a pipe, FIFO, tty...): then
 * read(2) and write(2), else recv(2) and send(2). Relaxed: the reader and
 * the writer of a handle may both learn it, and store the same value. */
static inline bool io_not_sock(const struct baton_io *io)
{
	return __atomic_load_n(&io->not_sock, __ATOMIC_RELAXED);
}

static inline void io_set_not_sock(struct baton_io *io)
{
	__atomic_store_n(&io->not_sock, true, __ATOMIC_RELAXED);
}

/* recv(2) on a socket: the socket's own call, a shorter way through the
 * kernel than read(2), which goes through the generic file layers first
 * (vfs_read, sock_read_iter); read(2) on anything else (recv says
 * ENOTSOCK once, then the handle knows). */
static ssize_t io_recv(struct baton_io *io, void *buf, size_t len)
{
	if (BATON_LIKELY(!io_not_sock(io))) {
		ssize_t r = recv(io->fd, buf, len, 0);

		if (r >= 0 || errno != ENOTSOCK)
			return r;
		io_set_not_sock(io);
	}
	return read(io->fd, buf, len);
}

int baton_io_read(baton_io_t *io, void *buf, size_t len, int64_t timeout_ns, size_t *n)
{
	int64_t deadline = DEADLINE_UNSET;

	if (io == NULL || (buf == NULL && len) || n == NULL)
		return BATON_EINVAL;
	for (;;) {
		unsigned edges;
		ssize_t r;
		int rc;

		/* Relaxed: a hint; drained_still() decides under the lock. */
		if (__atomic_load_n(&io->drained, __ATOMIC_RELAXED) && drained_still(io)) {
			rc = would_block(io, 0, &deadline, timeout_ns);
			if (rc != BATON_OK)
				return rc;
		}
		/* Relaxed: only compared with itself later, under the lock. */
		edges = __atomic_load_n(&io->read_edges, __ATOMIC_RELAXED);
		r = io_recv(io, buf, len);
		if (r >= 0) {
			if (r > 0 && (size_t)r < len) {
				/* No lock: only the reader uses these two (a
				 * handle has one reader at a time); relaxed
				 * because drained is peeked at above. */
				__atomic_store_n(&io->drained_at, edges, __ATOMIC_RELAXED);
				__atomic_store_n(&io->drained, true, __ATOMIC_RELAXED);
			}
			*n = (size_t)r;
			return BATON_OK;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return BATON_ESYS;
		rc = would_block(io, 0, &deadline, timeout_ns);
		if (rc != BATON_OK)
			return rc;
	}
}

/*
 * write(2) to a descriptor that is not a socket (a pipe, a FIFO, a tty),
 * which has no MSG_NOSIGNAL: a write to a pipe whose reader has gone would
 * raise SIGPIPE, whose default action ends the process. So SIGPIPE is
 * blocked in this thread for the call, and one the call raised (EPIPE,
 * and none was pending before) is taken back before the mask is restored:
 * the caller gets BATON_ESYS with errno EPIPE, as on a socket. A SIGPIPE
 * that was already pending stays pending. Three system calls more than a
 * plain write, on descriptors that are rarely hot.
 */
static ssize_t write_nosigpipe(int fd, const void *buf, size_t len)
{
	static const struct timespec now = { 0, 0 };
	sigset_t pipe_set, old, pending;
	bool was_pending;
	ssize_t r;
	int saved;

	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	sigpending(&pending);
	was_pending = sigismember(&pending, SIGPIPE) == 1;
	r = write(fd, buf, len);
	saved = errno;
	if (r < 0 && saved == EPIPE && !was_pending)
		while (sigtimedwait(&pipe_set, NULL, &now) < 0 && errno == EINTR)
			;
	if (sigismember(&old, SIGPIPE) != 1)
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = saved;
	return r;
}

int baton_io_write(baton_io_t *io, const void *buf, size_t len, int64_t timeout_ns, size_t *n)
{
	int64_t deadline = DEADLINE_UNSET;
	size_t done = 0;
	int rc = BATON_OK;

	if (io == NULL || (buf == NULL && len))
		return BATON_EINVAL;
	while (done < len) {
		ssize_t r = -1;

		if (BATON_LIKELY(!io_not_sock(io))) {
			r = send(io->fd, (const char *)buf + done, len - done, MSG_NOSIGNAL);
			if (r < 0 && errno == ENOTSOCK)
				io_set_not_sock(io); /* and once more below */
		}
		if (r < 0 && io_not_sock(io))
			r = write_nosigpipe(io->fd, (const char *)buf + done, len - done);
		if (r >= 0) {
			done += (size_t)r;
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			rc = BATON_ESYS;
			break;
		}
		rc = would_block(io, 1, &deadline, timeout_ns);
		if (rc != BATON_OK)
			break;
	}
	if (n)
		*n = done;
	return rc;
}

/* --- the accept queue ---------------------------------------------------- */
/*
 * A backend that accepts ahead of the task (io_uring's multishot accept)
 * queues each descriptor here and then reports a read edge, in that order:
 * the task that found the queue empty and active, and then waits for an
 * edge under the same lock, cannot miss it. While the queue is active an
 * empty queue means "wait", with no accept4 to learn it; once the backend
 * ends it (the descriptor table full, EMFILE or ENFILE; the queue full; a
 * kernel that cannot) the task takes what is left and then calls accept4,
 * which reports the error, as without the queue.
 */
enum { ACCQ_NONE, ACCQ_TOOK, ACCQ_WAIT };

unsigned baton__io_accept_queue(struct baton_io *io, int fd, bool active)
{
	struct baton_io_accq *q;
	bool kept = fd < 0;
	unsigned n;

	baton__spin_lock(&io->lock);
	if (io->ready & BATON_IO_CLOSED) {
		baton__spin_unlock(&io->lock);
		if (!kept)
			close(fd);
		return 0;
	}
	q = io->accq;
	q->active = active;
	if (fd >= 0 && q->len == q->cap && q->head > 0) {
		memmove(q->fds, q->fds + q->head, (q->len - q->head) * sizeof(*q->fds));
		q->len -= q->head;
		q->head = 0;
	}
	if (fd >= 0 && q->len == q->cap) {
		/* Rare (a burst while the request's cancellation is on its
		 * way), so under the lock. */
		int *more = baton__realloc(q->fds, 2 * q->cap * sizeof(*more));

		if (more) {
			q->fds = more;
			q->cap *= 2;
		}
	}
	if (fd >= 0 && q->len < q->cap) {
		q->fds[q->len++] = fd;
		kept = true;
	}
	n = q->len - q->head;
	baton__spin_unlock(&io->lock);
	if (!kept)
		close(fd);
	return n;
}

/* The next queued descriptor (TOOK), or WAIT for an edge (the queue is
 * empty and active), or NONE: call accept4. */
static int accq_take(struct baton_io *io, int *fd)
{
	/* Acquire: pairs with accept_arm's release (the queue's fields). */
	struct baton_io_accq *q = __atomic_load_n(&io->accq, __ATOMIC_ACQUIRE);
	int got = ACCQ_NONE;

	if (q == NULL)
		return ACCQ_NONE;
	baton__spin_lock(&io->lock);
	if (io->ready & BATON_IO_CLOSED) {
		/* (A call on a closed handle: let accept4 say EBADF.) */
	} else if (q->head < q->len) {
		*fd = q->fds[q->head++];
		if (q->head == q->len)
			q->head = q->len = 0;
		got = ACCQ_TOOK;
	} else if (q->active) {
		got = ACCQ_WAIT;
	}
	baton__spin_unlock(&io->lock);
	return got;
}

/* accept4 said EAGAIN: on the listener's home thread, ask the backend to
 * accept ahead (armed lazily, here rather than at open: no probe of every
 * handle for SO_ACCEPTCONN). True if it does: the queue is active. */
static bool accept_arm(struct baton_io *io)
{
	struct baton_worker *w = baton__worker_get();
	const struct baton_poller_ops *ops;

	if (w != io->home || w->hook_data == NULL)
		return false;
	ops = baton__reactor_of(w)->pops;
	if (ops->accept == NULL)
		return false;
	if (io->accq == NULL) {
		struct baton_io_accq *q = baton__calloc(1, sizeof(*q));

		if (q == NULL)
			return false;
		q->fds = baton__malloc(BATON_IO_ACCQ_LIMIT * sizeof(*q->fds));
		if (q->fds == NULL) {
			baton__free(q);
			return false;
		}
		q->cap = BATON_IO_ACCQ_LIMIT;
		/* Release: a taker on another thread sees the fields. */
		__atomic_store_n(&io->accq, q, __ATOMIC_RELEASE);
	}
	return ops->accept(w, io);
}

int baton_io_accept(baton_io_t *listener, int *fd, int64_t timeout_ns)
{
	int64_t deadline = DEADLINE_UNSET;

	if (listener == NULL || fd == NULL)
		return BATON_EINVAL;
	for (;;) {
		int c, rc, queued = accq_take(listener, &c);

		if (queued == ACCQ_TOOK) {
			*fd = c;
			return BATON_OK;
		}
		if (queued == ACCQ_NONE) {
			c = accept4(listener->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
			if (c >= 0) {
				*fd = c;
				return BATON_OK;
			}
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				return BATON_ESYS;
			if (accept_arm(listener))
				continue; /* the queue may have taken one already */
		}
		rc = would_block(listener, 0, &deadline, timeout_ns);
		if (rc != BATON_OK)
			return rc;
	}
}

/*
 * connect(2) that waits out a full backlog. A non-blocking AF_UNIX stream
 * connect to a listener whose backlog is full fails with EAGAIN and leaves
 * the socket unconnected; nothing the reactor can watch tells when the
 * listener accepts (the kernel's wait queue for it is the listener's, not
 * this socket's). So the task sleeps and tries again, 100 us at first and
 * twice as long each time up to 10 ms, until the connect gets through or
 * the timeout passes. Returns BATON_OK, BATON_ESYS with errno set
 * (EINPROGRESS for a connect the reactor can wait for, as TCP's), or the
 * code that ended the waiting (EAGAIN at timeout 0, ETIMEDOUT, ECANCELED...).
 */
static int connect_retry(struct baton_io *io, const struct sockaddr *addr, socklen_t len,
			 int64_t *deadline, int64_t timeout_ns)
{
	int64_t pause = 100000;

	for (;;) {
		int64_t left;
		int rc;

		if (connect(io->fd, addr, len) == 0)
			return BATON_OK;
		if (errno != EAGAIN)
			return BATON_ESYS;
		if (timeout_ns == 0)
			return BATON_EAGAIN;
		left = pause;
		if (timeout_ns > 0) {
			if (*deadline == DEADLINE_UNSET)
				*deadline = baton__deadline_after(timeout_ns);
			left = *deadline - baton__clock_now();
			if (left <= 0)
				return BATON_ETIMEDOUT;
		}
		rc = baton_sched_sleep(left < pause ? left : pause);
		if (rc != BATON_OK)
			return rc;
		if (pause < 10000000)
			pause *= 2;
	}
}

int baton_io_connect(baton_io_t *io, const struct sockaddr *addr, socklen_t len, int64_t timeout_ns)
{
	int64_t deadline = DEADLINE_UNSET;
	int err = 0, rc;
	socklen_t elen = sizeof(err);

	if (io == NULL || addr == NULL)
		return BATON_EINVAL;
	rc = connect_retry(io, addr, len, &deadline, timeout_ns);
	if (rc != BATON_ESYS) /* connected, or the waiting ended */
		return rc;
	if (errno != EINPROGRESS && errno != EINTR)
		return BATON_ESYS;
	do {
		rc = would_block(io, 1, &deadline, timeout_ns);
		if (rc != BATON_OK)
			return rc;
		if (getsockopt(io->fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0)
			return BATON_ESYS;
		/* Still in progress: the edge was an earlier one. */
	} while (err == EINPROGRESS || err == EALREADY);
	if (err) {
		errno = err;
		return BATON_ESYS;
	}
	return BATON_OK;
}

/* Timeout 0 and no edge remembered: the reactor may not have polled since
 * the descriptor became ready (a new handle has seen no edge yet), so ask
 * the descriptor itself, without waiting. */
static int probe_ready(const struct baton_io *io, int events)
{
	struct pollfd p = { io->fd, 0, 0 };

	if (events & BATON_IO_READABLE)
		p.events |= POLLIN | POLLRDHUP;
	if (events & BATON_IO_WRITABLE)
		p.events |= POLLOUT;
	if (poll(&p, 1, 0) < 0)
		return errno == EINTR ? BATON_EAGAIN : BATON_ESYS;
	return p.revents ? BATON_OK : BATON_EAGAIN;
}

int baton_io_wait(baton_io_t *io, int events, int64_t timeout_ns)
{
	struct baton_task *t = baton__task_self();
	int rc;

	if (io == NULL || events == 0 || (events & ~(BATON_IO_READABLE | BATON_IO_WRITABLE)))
		return BATON_EINVAL;
	if (t == NULL)
		return BATON_ENOSCHED;
	baton__spin_lock(&io->lock);
	if ((io->ready & (unsigned)events) || io->hup ||
	    (io->rdhup && (events & BATON_IO_READABLE))) {
		baton__spin_unlock(&io->lock);
		return BATON_OK;
	}
	if (timeout_ns == 0) {
		baton__spin_unlock(&io->lock);
		return probe_ready(io, events);
	}
	baton__wait_reserve(t, 2);
	baton__wait_begin(t);
	if (events & BATON_IO_READABLE)
		baton__wait_add(t, &io->waiters[0], &io->lock);
	if (events & BATON_IO_WRITABLE)
		baton__wait_add(t, &io->waiters[1], &io->lock);
	rc = baton__wait_park(t, timeout_ns);
	baton__wait_finish(t);
	return rc;
}

int baton_io_notify(baton_io_t *io, int events, baton_io_notify_fn fn, void *arg)
{
	int rc = BATON_OK;

	if (io == NULL || (fn == NULL) != (events == 0) ||
	    (events != 0 && events != BATON_IO_READABLE))
		return BATON_EINVAL;
	baton__spin_lock(&io->lock);
	if (fn == NULL) { /* disarm */
		rc = io->notify_fn ? BATON_OK : BATON_EAGAIN;
		io->notify_fn = NULL;
	} else if (io->notify_fn || !baton__waitq_empty(&io->waiters[0])) {
		rc = BATON_EBUSY;
	} else if ((io->ready & BATON_IO_IN) || io->hup || io->rdhup) {
		/* An edge came since the caller's read: it reads again. */
		io->ready &= ~(unsigned)BATON_IO_IN;
		rc = BATON_EAGAIN;
	} else {
		io->notify_fn = fn;
		io->notify_arg = arg;
	}
	baton__spin_unlock(&io->lock);
	return rc;
}

int baton_io_fd(const baton_io_t *io)
{
	return io ? io->fd : BATON_EINVAL;
}

int baton_io_close(baton_io_t *io)
{
	struct baton_worker *home, *self = baton__worker_get();
	struct baton_io_accq *q = NULL;
	bool busy;

	if (io == NULL)
		return BATON_OK;
	baton__spin_lock(&io->lock);
	busy = !baton__waitq_empty(&io->waiters[0]) || !baton__waitq_empty(&io->waiters[1]) ||
		io->notify_fn;
	if (!busy)
		q = accq_detach(io);
	baton__spin_unlock(&io->lock);
	if (busy)
		return BATON_EBUSY;
	accq_free(q);
	home = io->home;
	baton__reactor_of(home)->pops->del(home, io);
	if (io->owns_fd)
		close(io->fd);
	if (self == home && self->current) {
		/* Its poller is not running (we are a task on that worker),
		 * and no later poll can report the deleted descriptor. */
		release_io(self, io);
		return BATON_OK;
	}
	/* Another thread's poller may hold this handle in the batch of
	 * events it is working through: the home worker frees it after its
	 * next poll. Not through the waiter list: that poller may still
	 * report an edge and look at the waiters. */
	struct baton_io *head =
		__atomic_load_n(&baton__reactor_of(home)->dead_ios, __ATOMIC_RELAXED);
	do {
		io->dead_next = head;
		/* Release: our writes to the handle happen before its free. */
	} while (!__atomic_compare_exchange_n(&baton__reactor_of(home)->dead_ios, &head, io, true,
					      __ATOMIC_RELEASE, __ATOMIC_RELAXED));
	baton__worker_wake(home);
	return BATON_OK;
}

int baton_io_listen_socket(const char *host, unsigned short *port, int backlog, int *out)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int fd, one = 1;

	if (port == NULL || out == NULL || backlog < 1)
		return BATON_EINVAL;
	sa.sin_port = htons(*port);
	if (host == NULL)
		sa.sin_addr.s_addr = htonl(INADDR_ANY);
	else if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		return BATON_EINVAL;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return BATON_ESYS;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, backlog) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) < 0) {
		int e = errno;

		close(fd);
		errno = e;
		return BATON_ESYS;
	}
	*port = ntohs(sa.sin_port);
	*out = fd;
	return BATON_OK;
}

int baton_io_listen_tcp(baton_io_t **out, const char *host, unsigned short port, int backlog)
{
	int fd, rc;

	if (out == NULL || backlog < 1)
		return BATON_EINVAL;
	if (baton__task_self() == NULL)
		return BATON_ENOSCHED;
	rc = baton_io_listen_socket(host, &port, backlog, &fd);
	if (rc != BATON_OK)
		return rc;
	rc = baton_io_open(out, fd, true);
	if (rc != BATON_OK)
		close(fd);
	return rc;
}
