/* SPDX-License-Identifier: MIT */
/*
 * The io_uring backend: one ring per worker, touched only by that worker's
 * thread. Every handle has one multishot poll request (POLLIN | POLLOUT |
 * POLLRDHUP) whose completions are its edges; an eventfd, also watched by
 * a multishot poll, is what other threads write to interrupt a worker
 * asleep in io_uring_enter().
 *
 * Handle lifetime. A poll request names its handle by address (user_data)
 * and its completions can arrive in any later round, so a closed handle
 * must outlive its request. Per handle, and only on the home thread:
 * io->pending counts the requests in flight (the poll, 0 or 1; a
 * listener's accept, below) and carries two flags. UR_CANCELLED: the
 * handle was closed and its request's cancellation queued, for the next
 * poll to submit; its edges are ignored
 * from then on. del() on the home thread cancels at once (the request
 * keeps the descriptor's file alive, so the peer of a socket would not
 * see the close); del() on another thread leaves the ring alone, and release(), which io.c calls
 * on the home thread for a handle closed elsewhere (its dead list),
 * cancels then. UR_DEAD: io.c released the handle to us; the completion
 * that ends its request (no IORING_CQE_F_MORE) frees it; until then it
 * is on the poller's limbo list, so that closing the ring (destroy, or a
 * move to another thread) can free it too. A live handle whose multishot
 * request ended (a full completion queue, a cancellation by the kernel)
 * gets a new one.
 *
 * Multishot accept. A listener on which baton_io_accept() found nothing
 * (accept4 said EAGAIN) gets a second request, a multishot accept, armed
 * on its home thread (ur_accept); it is counted in UR_COUNT like the poll
 * and flagged UR_ACCEPT, its user_data is the handle's address with
 * UD_ACCEPT. Each accepted descriptor is queued on the handle (io.c's
 * accept queue), then reported as a read edge. The request ends on an
 * error (EMFILE, ENFILE: accept4 then reports it to the task), when the
 * queue reaches BATON_IO_ACCQ_LIMIT (cancelled: the backlog keeps the rest
 * until the task catches up), or with the handle (close cancels both
 * requests; what is accepted after that is closed here, what was queued
 * io.c closes). The next EAGAIN arms it again, unless the kernel refused
 * it for another reason (UR_NOACCEPT). Not on a SINGLE_ISSUER ring: a
 * ring move drops the old ring's completions, and the descriptors an
 * accept request had put in them would leak.
 *
 * A poll makes one io_uring_enter at most, submitting what is queued and
 * getting or waiting for completions in the same call. The ring's setup
 * flags, their fall-back and the thread a SINGLE_ISSUER ring belongs to:
 * see ring_init and ring_move.
 *
 * A full submission queue is submitted to make room, a bounded number of
 * times (UR_SUBMIT_TRIES). If the kernel keeps refusing (EBUSY while its
 * completion queue overflows, ENOMEM), nothing loops: opening a handle
 * fails (BATON_ESYS, errno EBUSY), and a re-arm, a cancellation or the
 * wake-up poll that found no room waits on the poller's retry list, which
 * every poll works off first.
 *
 * Built only when liburing was found (config.h's BATON_HAVE_LIBURING);
 * without it, or where the kernel refuses io_uring, creating this poller
 * fails and the worker uses epoll.
 */
#include "../common/alloc.h"
#include "../common/sanitizer.h"
#include "poller.h"

#if BATON_HAVE_LIBURING
#include <errno.h>
#include <liburing.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define UR_SQ_ENTRIES 256
#define UR_SUBMIT_TRIES 4  /* submissions to make room before giving up */
#define UR_CQ_ENTRIES 4096 /* room for a burst of edges of many handles */
/* io->pending: a count of requests in flight (the poll, and a listener's
 * accept), and flags. */
#define UR_COUNT 0x0000ffffu
#define UR_RETRY 0x01000000u      /* on the poller's retry list */
#define UR_ACCEPT_END 0x02000000u /* the accept's cancellation is queued */
#define UR_NOACCEPT 0x04000000u   /* the kernel refused a multishot accept */
#define UR_ACCEPT 0x08000000u     /* a multishot accept is in flight (counted) */
#define UR_BARE 0x10000000u       /* the last request ended at its first CQE */
#define UR_MORE 0x20000000u       /* this request has said "more to come" */
#define UR_CANCELLED 0x40000000u  /* closed: cancel queued, edges ignored */
#define UR_DEAD 0x80000000u       /* released by io.c: free at the last CQE */

/* user_data: a handle's address names its poll request (handles are
 * aligned), with UD_ACCEPT its accept request; either with UD_CANCEL
 * names a cancellation of it; 0 is the eventfd's poll. */
#define UD_WAKE 0u
#define UD_CANCEL 1u
#define UD_ACCEPT 2u

struct uring_poller {
	struct io_uring ring;
	unsigned setup;  /* the IORING_SETUP_* flags the kernel took */
	pthread_t owner; /* the thread that set the ring up (SINGLE_ISSUER) */
	int evfd;
	unsigned limbo;               /* dead handles still waiting for their last CQE... */
	struct baton_list limbo_list; /* ...of their live_link */
	bool wake_unarmed;            /* the wake-up poll is to be armed again */
	struct baton_io *retry;       /* handles whose re-arm or cancel found no SQE */
	uint64_t *cancels;            /* cancellations to queue again, by number only */
	size_t ncancels, cancels_cap;
};

/* Tests: make the next this many SQE requests fail (internal). */
unsigned baton__uring_sqe_failures;
/* Tests: setup flags to refuse as an older kernel would (EINVAL). */
unsigned baton__uring_setup_refused;

/* An SQE, submitting what is queued to make room if the submission queue
 * is full, a bounded number of times; NULL if the kernel keeps refusing. */
static struct io_uring_sqe *get_sqe(struct uring_poller *p)
{
	struct io_uring_sqe *sqe;

	/* Relaxed: a test's knob, set while no worker polls. */
	if (__atomic_load_n(&baton__uring_sqe_failures, __ATOMIC_RELAXED) > 0) {
		__atomic_sub_fetch(&baton__uring_sqe_failures, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	sqe = io_uring_get_sqe(&p->ring);
	for (int i = 0; sqe == NULL && i < UR_SUBMIT_TRIES; i++) {
		io_uring_submit(&p->ring);
		sqe = io_uring_get_sqe(&p->ring);
	}
	return sqe;
}

static void arm_wake(struct uring_poller *p)
{
	struct io_uring_sqe *sqe = get_sqe(p);

	p->wake_unarmed = sqe == NULL; /* the next poll tries again */
	if (sqe == NULL)
		return;
	io_uring_prep_poll_multishot(sqe, p->evfd, POLLIN);
	io_uring_sqe_set_data64(sqe, UD_WAKE);
}

/* The poll requests in flight for io (its accept is counted too). */
static inline unsigned polls(const struct baton_io *io)
{
	return (io->pending & UR_COUNT) - ((io->pending & UR_ACCEPT) != 0);
}

static bool arm(struct uring_poller *p, struct baton_io *io)
{
	struct io_uring_sqe *sqe = get_sqe(p);

	if (sqe == NULL)
		return false;
	io_uring_prep_poll_multishot(sqe, io->fd, POLLIN | POLLOUT | POLLRDHUP);
	io_uring_sqe_set_data(sqe, io);
	io->pending = (io->pending & ~UR_MORE) + 1;
	return true;
}

/* Put io on the retry list (once); the next poll re-arms or cancels it. */
static void retry_later(struct uring_poller *p, struct baton_io *io)
{
	if (io->pending & UR_RETRY)
		return;
	io->pending |= UR_RETRY;
	io->retry_next = p->retry;
	p->retry = io;
}

/* Take io off the retry list (it is being freed). */
static void retry_forget(struct uring_poller *p, struct baton_io *io)
{
	if (!(io->pending & UR_RETRY))
		return;
	for (struct baton_io **pp = &p->retry; *pp; pp = &(*pp)->retry_next)
		if (*pp == io) {
			*pp = io->retry_next;
			break;
		}
	io->pending &= ~UR_RETRY;
}

/* Cancel the poll request whose user_data is ud. Not POLL_REMOVE: that
 * fails (-EALREADY) and leaves the request armed while a wake-up of it is
 * being turned into a completion; ASYNC_CANCEL marks it and lets that
 * completion end it. Only the numbers are used: a cancel that arrives
 * after the handle was freed and its address reused ends the new handle's
 * request, which is then re-armed like any ended multishot. */
static bool queue_cancel(struct uring_poller *p, uint64_t ud)
{
	struct io_uring_sqe *sqe = get_sqe(p);

	if (sqe == NULL)
		return false;
	io_uring_prep_cancel64(sqe, ud, 0);
	io_uring_sqe_set_data64(sqe, ud | UD_CANCEL);
	return true;
}

/* A cancellation to queue again at the next poll. By number: the handle
 * it names may be freed meanwhile (see queue_cancel). Without memory for
 * the list it is dropped: its request then ends when the file does. */
static void cancel_later(struct uring_poller *p, uint64_t ud)
{
	if (p->ncancels == p->cancels_cap) {
		size_t cap = p->cancels_cap ? 2 * p->cancels_cap : 16;
		uint64_t *c = baton__realloc(p->cancels, cap * sizeof(*c));

		if (c == NULL)
			return;
		p->cancels = c;
		p->cancels_cap = cap;
	}
	p->cancels[p->ncancels++] = ud;
}

/* The setups to try, best first.
 *
 * COOP_TASKRUN | TASKRUN_FLAG (5.19): completions are posted when the
 * worker next enters the kernel (any system call: the read or send of a
 * task, on its way out), not by interrupting it; a worker asleep in
 * io_uring_enter is still woken, and TASKRUN_FLAG tells a peek when it
 * must enter. Any thread may enter such a ring.
 *
 * SINGLE_ISSUER | DEFER_TASKRUN (6.1), only where BATON_IO_URING_DEFER=1
 * asks for it: completions are posted only when the ring's thread asks,
 * in io_uring_enter(GETEVENTS), in a batch. Measured on baton-httpd it
 * cost more than it saved (docs/io.md): every peek that would have found
 * completions posted by the task's own read or send has to enter the
 * kernel instead. In exchange only the thread that set the ring up may
 * enter it: worker 0 runs on whichever thread calls baton_sched_run(), so
 * a worker found on another thread gets a new ring (ring_here).
 *
 * A kernel that does not know a flag says EINVAL: the next set is tried. */
#define UR_BASIC (IORING_SETUP_CQSIZE | IORING_SETUP_SUBMIT_ALL)
#define UR_COOP (IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG)
#define UR_DEFER (IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN)

static int ring_init(struct io_uring *ring, unsigned *setup)
{
	static const unsigned tries[] = {
		UR_BASIC | UR_COOP | UR_DEFER,
		UR_BASIC | UR_COOP,
		IORING_SETUP_CQSIZE,
		0,
	};
	const char *env = getenv("BATON_IO_URING_DEFER");
	/* Relaxed: a test's knob, set while no worker creates a ring. */
	unsigned refused = __atomic_load_n(&baton__uring_setup_refused, __ATOMIC_RELAXED);
	int rc = -ENOSYS;

	if (env == NULL || strcmp(env, "1") != 0)
		refused |= IORING_SETUP_DEFER_TASKRUN; /* not asked for */
	for (unsigned i = 0; i < sizeof(tries) / sizeof(tries[0]); i++) {
		struct io_uring_params params = {
			.flags = tries[i],
			.cq_entries = UR_CQ_ENTRIES,
		};

		if (tries[i] & refused) {
			rc = -EINVAL; /* as a kernel without the flag says */
			continue;
		}
		rc = io_uring_queue_init_params(UR_SQ_ENTRIES, ring, &params);
		if (rc == 0) {
			/* Multishot poll needs 5.13, which brought RSRC_TAGS;
			 * timed waits need EXT_ARG (5.11). */
			if ((params.features & IORING_FEAT_RSRC_TAGS) &&
			    (params.features & IORING_FEAT_EXT_ARG)) {
				*setup = tries[i];
				return 0;
			}
			io_uring_queue_exit(ring);
			return -ENOSYS;
		}
		if (rc != -EINVAL)
			break; /* ENOSYS, EPERM (sysctl), ENOMEM: give up */
	}
	return rc;
}

/* liburing maps the rings with raw system calls that AddressSanitizer does
 * not see: the shadow there may still be that of whatever was mapped at
 * those addresses before (a thread's or a coroutine's stack). */
static void ring_unpoison(struct io_uring *ring)
{
#if BATON_ASAN
	ASAN_UNPOISON_MEMORY_REGION(ring->sq.ring_ptr, ring->sq.ring_sz);
	ASAN_UNPOISON_MEMORY_REGION(ring->cq.ring_ptr, ring->cq.ring_sz);
	ASAN_UNPOISON_MEMORY_REGION(ring->sq.sqes, ring->sq.ring_entries * sizeof(*ring->sq.sqes));
#endif
	(void)ring;
}

/* Released handles waiting for their last completion: a list through
 * live_link, which io.c no longer uses once it released them. */
static void limbo_add(struct uring_poller *p, struct baton_io *io)
{
	baton__list_push_head(&p->limbo_list, &io->live_link);
	p->limbo++;
}

static void limbo_free(struct uring_poller *p, struct baton_io *io)
{
	baton__list_remove(&p->limbo_list, &io->live_link);
	p->limbo--;
	retry_forget(p, io);
	baton__free(io);
}

/* The ring is gone (or replaced): no completion can name a handle in
 * limbo any more. */
static void limbo_free_all(struct uring_poller *p)
{
	struct baton_list_node *n;

	while ((n = baton__list_first(&p->limbo_list)) != NULL)
		limbo_free(p, BATON_LIST_ENTRY(n, struct baton_io, live_link));
}

/* May this thread enter p's ring? Any thread may, unless it was set up
 * with SINGLE_ISSUER: then only the one that set it up. */
static bool ring_mine(const struct uring_poller *p)
{
	return !(p->setup & IORING_SETUP_SINGLE_ISSUER) || pthread_equal(p->owner, pthread_self());
}

/*
 * Worker w runs on another thread than the one its SINGLE_ISSUER ring
 * belongs to (worker 0 in a later baton_sched_run): give it a new ring,
 * set up on this thread. Closing the old ring ends all its requests, and
 * their completions are never read: the handles in limbo are freed, and
 * the open ones get a new poll request each (one that is ready reports an
 * edge at once, perhaps one already seen: edges are hints, a spare one
 * costs a system call that says EAGAIN). Handles on the dead list (closed
 * on another thread, not released yet) get none: their descriptor is
 * closed, its number perhaps reused. Returns 0 or -errno (the old ring is
 * kept, unused; the next call tries again).
 */
static int ring_move(struct baton_worker *w, struct uring_poller *p)
{
	struct baton_reactor *r = baton__reactor_of(w);
	struct baton_io *io, *next;
	struct io_uring fresh;
	unsigned setup;
	int rc = ring_init(&fresh, &setup);

	if (rc < 0)
		return rc;
	ring_unpoison(&fresh);
	io_uring_queue_exit(&p->ring);
	p->ring = fresh;
	p->setup = setup;
	p->owner = pthread_self();
	limbo_free_all(p);
	p->ncancels = 0;
	for (io = p->retry; io; io = next) {
		next = io->retry_next;
		io->pending &= ~UR_RETRY;
	}
	p->retry = NULL;
	/* Acquire: pairs with the closer's release CAS (its dead_next). */
	for (io = __atomic_load_n(&r->dead_ios, __ATOMIC_ACQUIRE); io; io = io->dead_next)
		io->pending |= UR_CANCELLED;
	BATON_LIST_FOR_EACH (io, &r->live, live_link) {
		/* (No accept request: ur_accept arms none on a ring that may
		 * move.) */
		io->pending &= ~(UR_COUNT | UR_MORE | UR_BARE);
		if (!(io->pending & UR_CANCELLED) && !arm(p, io))
			retry_later(p, io);
	}
	arm_wake(p);
	return 0;
}

/* On w's thread, before anything that may enter the ring: false (errno
 * set) if the ring is another thread's and no new one could be set up. */
static bool ring_here(struct baton_worker *w, struct uring_poller *p)
{
	int rc;

	if (BATON_LIKELY(ring_mine(p)))
		return true;
	rc = ring_move(w, p);
	if (rc < 0)
		errno = -rc;
	return rc == 0;
}

static int ur_create(struct baton_worker *w)
{
	struct uring_poller *p = baton__calloc(1, sizeof(*p));
	int rc;

	if (p == NULL)
		return BATON_ENOMEM;
	rc = ring_init(&p->ring, &p->setup);
	if (rc < 0) {
		baton__free(p);
		errno = -rc;
		return BATON_ESYS;
	}
	ring_unpoison(&p->ring);
	p->owner = pthread_self();
	p->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (p->evfd < 0) {
		int e = errno;

		io_uring_queue_exit(&p->ring);
		baton__free(p);
		errno = e;
		return BATON_ESYS;
	}
	arm_wake(p);
	rc = p->wake_unarmed ? -EBUSY : io_uring_submit(&p->ring);
	if (rc < 0) {
		io_uring_queue_exit(&p->ring);
		close(p->evfd);
		baton__free(p);
		errno = -rc;
		return BATON_ESYS;
	}
	baton__reactor_of(w)->poller = p;
	return BATON_OK;
}

/* On the home thread (baton_io_open): submitted with the next poll. The
 * request checks the descriptor when it is armed, so an edge between the
 * caller's EAGAIN and the submission is not lost. */
static int ur_add(struct baton_worker *w, struct baton_io *io)
{
	struct uring_poller *p = baton__reactor_of(w)->poller;
	struct stat st;

	/* What epoll refuses (EPERM), refuse too: these never wait, and the
	 * behaviour should not depend on the backend. */
	if (fstat(io->fd, &st) < 0)
		return BATON_ESYS;
	if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode) || S_ISBLK(st.st_mode)) {
		errno = EPERM;
		return BATON_ESYS;
	}
	if (!ring_here(w, p))
		return BATON_ESYS;
	if (!arm(p, io)) {
		errno = EBUSY; /* the kernel takes no submission now */
		return BATON_ESYS;
	}
	return BATON_OK;
}

/* End io's multishot accept (home thread), once. */
static void cancel_accept(struct uring_poller *p, struct baton_io *io)
{
	uint64_t ud = (uintptr_t)io | UD_ACCEPT;

	io->pending |= UR_ACCEPT_END;
	if (!queue_cancel(p, ud))
		cancel_later(p, ud);
}

/* Stop watching io (home thread): cancel its requests, once. */
static void cancel(struct uring_poller *p, struct baton_io *io)
{
	if (io->pending & UR_CANCELLED)
		return;
	io->pending |= UR_CANCELLED;
	if ((io->pending & (UR_ACCEPT | UR_ACCEPT_END)) == UR_ACCEPT)
		cancel_accept(p, io);
	if (polls(io) == 0)
		return; /* no request names it (a re-arm still to retry) */
	if (!queue_cancel(p, (uintptr_t)io))
		retry_later(p, io);
	/* Submitted by the worker's next poll, not at once: the request
	 * holds the descriptor's file open until then (the peer of a socket
	 * waits for our close), but that poll comes soon, within
	 * BATON_POLL_TICKS dispatches of a busy worker or when it idles, and
	 * a close then costs no io_uring_enter of its own. */
}

static void ur_del(struct baton_worker *w, struct baton_io *io)
{
	struct uring_poller *p = baton__reactor_of(w)->poller;

	if (baton__worker_get() == w && ring_here(w, p))
		cancel(p, io);
	/* else another thread's: the ring is not ours, release() cancels */
}

/* On the home thread, after del() and the descriptor's close. */
static bool ur_release(struct baton_worker *w, struct baton_io *io)
{
	struct uring_poller *p = baton__reactor_of(w)->poller;

	/* Not the ring's thread nor w's (destroy's, for a helper worker):
	 * no entering it; the request ends with the ring, and destroy frees
	 * the handle. */
	if (ring_mine(p) || (baton__worker_get() == w && ring_here(w, p)))
		cancel(p, io);
	if ((io->pending & UR_COUNT) == 0) {
		retry_forget(p, io);
		return true; /* no request names it: io.c frees it */
	}
	io->pending |= UR_DEAD;
	limbo_add(p, io);
	return false;
}

/* On the home thread, after accept4 on the listener io said EAGAIN: a
 * multishot accept, submitted with the next poll (it takes what the
 * backlog holds by then, so no connection waits for an edge). */
static bool ur_accept(struct baton_worker *w, struct baton_io *io)
{
	struct uring_poller *p = baton__reactor_of(w)->poller;
	struct io_uring_sqe *sqe;

	if ((io->pending & (UR_ACCEPT | UR_NOACCEPT | UR_CANCELLED)) ||
	    (p->setup & IORING_SETUP_SINGLE_ISSUER))
		return false;
	sqe = get_sqe(p);
	if (sqe == NULL)
		return false;
	io_uring_prep_multishot_accept(sqe, io->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	io_uring_sqe_set_data64(sqe, (uintptr_t)io | UD_ACCEPT);
	io->pending = (io->pending + 1) | UR_ACCEPT;
	baton__io_accept_queue(io, -1, true);
	return true;
}

/* A completion of io's poll request. */
static void on_poll_cqe(struct uring_poller *p, struct baton_io *io, const struct io_uring_cqe *cqe,
			bool edges)
{
	bool more = cqe->flags & IORING_CQE_F_MORE;
	int res = cqe->res;

	if (!more)
		io->pending--;
	if (io->pending & UR_CANCELLED) {
		/* Closed: no more edges. Released, and this was the last
		 * completion naming it: free it. */
		if ((io->pending & UR_DEAD) && (io->pending & UR_COUNT) == 0)
			limbo_free(p, io);
		return;
	}
	if (!edges)
		return; /* destroy: nothing to report, nothing to re-arm */
	if (res > 0) {
		unsigned ready = 0;

		if (res & (POLLIN | POLLRDHUP))
			ready |= BATON_IO_IN;
		if (res & POLLOUT)
			ready |= BATON_IO_OUT;
		if (res & POLLRDHUP)
			ready |= BATON_IO_RDHUP;
		baton__io_edge(io, ready, res & (POLLERR | POLLHUP));
	}
	if (more) {
		io->pending |= UR_MORE;
		return;
	}
	if (res >= 0 && !(io->pending & UR_MORE)) {
		/* Ended at its first completion. Twice in a row: a file
		 * without poll support (the kernel reports it ready and
		 * stops), which stays ready; re-arming would spin. */
		if (io->pending & UR_BARE)
			return;
		io->pending |= UR_BARE;
	} else {
		io->pending &= ~UR_BARE;
	}
	if (res >= 0 || res == -ECANCELED) {
		/* The multishot ended (full CQ, cancelled): a new one, now or
		 * at the next poll. */
		if (!arm(p, io))
			retry_later(p, io);
	} else {
		/* The kernel refused to watch it: wake its waiters, whose
		 * next system call reports the problem. */
		baton__io_edge(io, BATON_IO_IN | BATON_IO_OUT, true);
	}
}

/* A completion of io's multishot accept: a descriptor, or its end. */
static void on_accept_cqe(struct uring_poller *p, struct baton_io *io,
			  const struct io_uring_cqe *cqe, bool edges)
{
	bool more = cqe->flags & IORING_CQE_F_MORE;
	int res = cqe->res;

	if (!more)
		io->pending = (io->pending - 1) & ~(UR_ACCEPT | UR_ACCEPT_END);
	if ((io->pending & UR_CANCELLED) || !edges) {
		/* Closed, or the ring goes: no queue to put it in. */
		if (res >= 0)
			close(res);
		if ((io->pending & UR_DEAD) && (io->pending & UR_COUNT) == 0)
			limbo_free(p, io);
		return;
	}
	if (res < 0 && res != -EMFILE && res != -ENFILE && res != -ECANCELED && res != -ENOMEM &&
	    res != -ENOBUFS)
		io->pending |= UR_NOACCEPT; /* EINVAL: a kernel without it */
	if (baton__io_accept_queue(io, res, more && !(io->pending & UR_ACCEPT_END)) >=
		    BATON_IO_ACCQ_LIMIT &&
	    more && !(io->pending & UR_ACCEPT_END)) {
		/* The task is behind: stop accepting ahead of it (what
		 * comes before the cancellation lands is still queued). */
		cancel_accept(p, io);
		baton__io_accept_queue(io, -1, false);
	}
	/* After the queue: a waiter that saw it empty sees this edge. At
	 * the end too: a task waiting on the active queue tries accept4. */
	baton__io_edge(io, BATON_IO_IN, false);
}

/* Handle every completion in the queue; edges false: only account for
 * them (destroy). Returns how many there were. */
static unsigned reap(struct uring_poller *p, bool edges)
{
	struct io_uring_cqe *cqe;
	unsigned head, n = 0;

	io_uring_for_each_cqe(&p->ring, head, cqe)
	{
		uint64_t ud = cqe->user_data;

		n++;
		if (ud & UD_CANCEL) {
			/* The poll's own last CQE does the rest; -EALREADY
			 * (the request was busy, not marked): try again. */
			if (cqe->res == -EALREADY && !queue_cancel(p, ud & ~(uint64_t)UD_CANCEL))
				cancel_later(p, ud & ~(uint64_t)UD_CANCEL);
			continue;
		}
		if (ud == UD_WAKE) {
			uint64_t v;

			/* One read empties the counter (not a semaphore). */
			(void)!read(p->evfd, &v, sizeof(v));
			if (!(cqe->flags & IORING_CQE_F_MORE) && edges)
				arm_wake(p);
			continue;
		}
		if (ud & UD_ACCEPT) {
			on_accept_cqe(p, (struct baton_io *)(uintptr_t)(ud & ~(uint64_t)UD_ACCEPT),
				      cqe, edges);
			continue;
		}
		on_poll_cqe(p, (struct baton_io *)(uintptr_t)ud, cqe, edges);
	}
	io_uring_cq_advance(&p->ring, n);
	return n;
}

/* First thing in a poll: what found no SQE before gets one now, or stays
 * for the next poll. */
static void retry_pending(struct uring_poller *p)
{
	struct baton_io *io = p->retry, *next;
	size_t n = p->ncancels;

	if (p->wake_unarmed)
		arm_wake(p);
	p->ncancels = 0;
	for (size_t i = 0; i < n; i++)
		if (!queue_cancel(p, p->cancels[i]))
			p->cancels[p->ncancels++] = p->cancels[i]; /* i >= ncancels */
	p->retry = NULL;
	for (; io; io = next) {
		next = io->retry_next;
		io->pending &= ~UR_RETRY;
		if (io->pending & UR_CANCELLED) {
			if (polls(io) && !queue_cancel(p, (uintptr_t)io))
				retry_later(p, io);
		} else if (polls(io) == 0 && !arm(p, io)) {
			retry_later(p, io);
		}
	}
}

static void ur_poll(struct baton_worker *w, int64_t timeout_ns)
{
	struct uring_poller *p = baton__reactor_of(w)->poller;
	struct io_uring *ring = &p->ring;
	struct io_uring_cqe *cqe;

	if (BATON_UNLIKELY(!ring_here(w, p))) {
		/* No ring this thread may use (no memory for a new one):
		 * sleep a short slice, try again at the next poll. */
		struct timespec ts = { 0, 1000000 };

		if (timeout_ns != 0)
			nanosleep(&ts, NULL);
		return;
	}
	if (BATON_UNLIKELY(p->retry || p->ncancels || p->wake_unarmed)) {
		retry_pending(p);
		/* Without the wake-up poll, another thread's wake could not
		 * end a sleep here: sleep in short slices until it is back. */
		if (p->wake_unarmed && (timeout_ns < 0 || timeout_ns > 1000000))
			timeout_ns = 1000000;
	}

	/* One io_uring_enter at most per poll: it submits what is queued
	 * (new handles' requests, re-arms, cancellations) and gets or waits
	 * for completions, in the same call. */
	if (timeout_ns == 0 || io_uring_cq_ready(ring)) {
		/* Peek (or already something to do): enter the kernel only
		 * if there is something to submit, completions to run
		 * (TASKRUN) or an overflow. Under DEFER_TASKRUN nothing
		 * reaches the CQ ring without an io_uring_enter(GETEVENTS),
		 * and TASKRUN_FLAG (always set with it, see ring_init) is
		 * what says one would find something. */
		if (io_uring_sq_ready(ring) ||
		    (IO_URING_READ_ONCE(*ring->sq.kflags) &
		     (IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW)))
			io_uring_submit_and_get_events(ring);
	} else if (timeout_ns < 0) {
		io_uring_submit_and_wait(ring, 1);
	} else {
		struct __kernel_timespec ts = {
			.tv_sec = timeout_ns / 1000000000,
			.tv_nsec = timeout_ns % 1000000000,
		};

		/* -ETIME, -EINTR: nothing came, or a signal; the caller
		 * looks at its clock and inbox either way. */
		io_uring_submit_and_wait_timeout(ring, &cqe, 1, &ts, NULL);
	}
	/* What this queues (re-arms of ended multishots, the wake-up poll)
	 * goes with the next poll's io_uring_enter: a busy worker peeks
	 * within BATON_POLL_TICKS dispatches, an idle one at once; a poll
	 * request looks at its descriptor when it is armed, so no edge is
	 * lost meanwhile. */
	reap(p, true);
}

/* Tests: the setup flags of the calling task's worker's ring; 0 without
 * one (internal). */
unsigned baton__uring_setup_of_self(void);
unsigned baton__uring_setup_of_self(void)
{
	struct baton_worker *w = baton__worker_get();
	struct baton_reactor *r = w && w->current ? baton__reactor_of(w) : NULL;

	if (r == NULL || r->pops != &baton__poller_uring)
		return 0;
	return ((struct uring_poller *)r->poller)->setup;
}

static void ur_wake(struct baton_worker *w)
{
	struct uring_poller *p = baton__reactor_of(w)->poller;
	uint64_t one = 1;

	/* EAGAIN means the counter is full: a wake-up is pending anyway. */
	(void)!write(p->evfd, &one, sizeof(one));
}

static void ur_destroy(struct baton_worker *w)
{
	struct uring_poller *p = baton__reactor_of(w)->poller;

	/* Dead handles whose removal is under way: their last CQEs come
	 * promptly (the removals are submitted); wait a little for them, so
	 * that their descriptors' files are let go before we return. Only
	 * on a thread that may enter the ring (SINGLE_ISSUER: destroy runs
	 * on the run's thread, not on a helper worker's). */
	for (int i = 0; ring_mine(p) && i < 100 && p->limbo; i++) {
		struct __kernel_timespec ts = { .tv_nsec = 10000000 };
		struct io_uring_cqe *cqe;

		retry_pending(p); /* cancellations that found no SQE before */
		io_uring_submit_and_wait_timeout(&p->ring, &cqe, 1, &ts, NULL);
		reap(p, false);
	}
	io_uring_queue_exit(&p->ring);
	/* The ring is gone with its requests: no completion can name the
	 * stragglers any more. */
	limbo_free_all(p);
	close(p->evfd);
	baton__free(p->cancels);
	baton__free(p);
	baton__reactor_of(w)->poller = NULL;
}

const struct baton_poller_ops baton__poller_uring = {
	.name = "io_uring",
	.create = ur_create,
	.add = ur_add,
	.del = ur_del,
	.release = ur_release,
	.poll = ur_poll,
	.wake = ur_wake,
	.destroy = ur_destroy,
	.accept = ur_accept,
};

#else /* !BATON_HAVE_LIBURING */
static int ur_unavailable(struct baton_worker *w)
{
	(void)w;
	return BATON_ESYS;
}

const struct baton_poller_ops baton__poller_uring = {
	.name = "io_uring",
	.create = ur_unavailable,
};
#endif
