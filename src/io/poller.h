/* SPDX-License-Identifier: MIT */
/*
 * src/io/poller.h - the reactor behind include/baton/io.h: the interface the
 * scheduler's workers use, and the two backends that implement it.
 *
 *   epoll.c    epoll(7), edge-triggered, one registration per handle
 *   uring.c    io_uring(7) multishot poll requests (when liburing is found)
 *
 * A worker gets a reactor (struct baton_reactor: a poller and its dead
 * list) the first time a task opens a handle on it, installed as the
 * worker's idle hook (sched_internal.h). From then on, when the worker has
 * nothing to run, it sleeps in the poller (which also ends at its earliest
 * timer) instead of on its event count; a thread that hands it a task
 * interrupts that sleep (baton__worker_wake calls the hook's wake).
 * Readiness is edge-triggered: a handle remembers "readable"/"writable"
 * until an operation on it runs into EAGAIN, and the task that waits for
 * it is readied by whichever worker's poller sees the edge.
 */
#ifndef BATON_SRC_IO_POLLER_H
#define BATON_SRC_IO_POLLER_H

#include <baton/io.h>

#include "../sched/sched_internal.h"

enum {
	BATON_IO_IN = 1,    /* readable, or a listener has a connection */
	BATON_IO_OUT = 2,   /* writable, or a connect finished */
	BATON_IO_RDHUP = 4, /* with IN: the peer ended its sending side */
};

/* In baton_io.ready: the handle is closed, its accept queue gone (accq's
 * storage may be the dead list's link now). */
#define BATON_IO_CLOSED 0x100u

struct baton_io {
	int fd;
	bool owns_fd;
	struct baton_worker *home; /* whose poller reports its edges */
	baton_spinlock_t lock;     /* guards ready and the waiters */
	unsigned ready;            /* BATON_IO_IN/OUT seen and not yet used */
	unsigned read_edges;       /* read edges reported so far (under lock) */
	unsigned drained_at;       /* read_edges before a short read... */
	bool drained;              /* ...which took all there was (the reader's
				      own two: see io.c) */
	bool hup;                  /* error or hang-up: every wait returns */
	bool rdhup;                /* the peer's end seen: reads never wait */
	bool not_sock;             /* recv() or send() said ENOTSOCK: a pipe, FIFO,
				      tty; read() and write() then (atomic) */
	/* (Here, in the bools' padding: an idle connection's whole cost is
	 * its handle and its owner's record, so the handle stays small.) */
	unsigned pending;              /* io_uring: requests in flight + flags */
	struct baton_waitq waiters[2]; /* [0] readers, [1] writers */
	/* baton_io_notify: called once at the next read edge, instead of a
	 * waiting task (under lock; NULL: none armed). */
	baton_io_notify_fn notify_fn;
	void *notify_arg;
	union {
		/* Open: a listener's accept queue (io_uring's multishot
		 * accept), set on the home thread, read anywhere (under the
		 * lock once set). baton_io_close() detaches it and marks the
		 * handle BATON_IO_CLOSED before the link below is used. */
		struct baton_io_accq *accq;
		struct baton_io *dead_next; /* closed elsewhere: home's dead list */
	};
	struct baton_io *retry_next;      /* io_uring: the poller's retry list */
	struct baton_list_node live_link; /* in its reactor's `live` (io_uring:
					   * then in its poller's limbo) */
};

_Static_assert(sizeof(struct baton_io) <= 136 || sizeof(void *) != 8,
	       "a handle fits a 144-byte malloc chunk on 64-bit targets");

/* A listener's accept queue: descriptors a backend accepted ahead of the
 * task (io_uring's multishot accept), taken by baton_io_accept() in order.
 * Under the handle's lock. */
struct baton_io_accq {
	bool active;   /* a request feeds it: empty means wait, not accept4 */
	unsigned head; /* the next to take... */
	unsigned len;  /* ...up to here */
	unsigned cap;  /* room in fds (it grows past BATON_IO_ACCQ_LIMIT only
			   while the request's cancellation is on its way) */
	int *fds;
};

/* Queued descriptors at which the backend stops accepting ahead of a slow
 * acceptor (the listener's backlog holds the rest, as without it). */
#define BATON_IO_ACCQ_LIMIT 64

/* A worker's reactor: its hook_data. */
struct baton_reactor {
	const struct baton_poller_ops *pops;
	void *poller;              /* the backend's state */
	struct baton_io *dead_ios; /* closed elsewhere, freed here (atomic) */
	struct baton_list live;    /* of baton_io.live_link: handles open
				       here (home thread only) */
};

static inline struct baton_reactor *baton__reactor_of(struct baton_worker *w)
{
	return w->hook_data;
}

struct baton_poller_ops {
	const char *name;
	/* A poller for worker w; BATON_ESYS if the backend cannot run here. */
	int (*create)(struct baton_worker *w);
	/* Start reporting edges of io on w's poller. */
	int (*add)(struct baton_worker *w, struct baton_io *io);
	/* Stop reporting them (before the fd is closed). Any thread. */
	void (*del)(struct baton_worker *w, struct baton_io *io);
	/* On w's thread, for a handle del() was called on and whose fd is
	 * closed: true if io.c may free it now; false if requests still name
	 * it, and the backend frees it when the last one ends. NULL: always
	 * true. */
	bool (*release)(struct baton_worker *w, struct baton_io *io);
	/* Wait up to timeout_ns (< 0: no limit, 0: just look) for edges or a
	 * wake-up; ready the tasks that waited for the edges seen. */
	void (*poll)(struct baton_worker *w, int64_t timeout_ns);
	/* Interrupt a poll in progress on another thread. */
	void (*wake)(struct baton_worker *w);
	void (*destroy)(struct baton_worker *w);
	/* On io's home thread, after accept4 on the listener io said EAGAIN:
	 * start accepting into io->accq (allocated by io.c), marking it
	 * active; false if the backend does not (NULL: never). */
	bool (*accept)(struct baton_worker *w, struct baton_io *io);
};

extern const struct baton_poller_ops baton__poller_epoll;
extern const struct baton_poller_ops baton__poller_uring;

/* io.c: an edge was seen on io; ready its waiters. Any thread. */
void baton__io_edge(struct baton_io *io, unsigned events, bool hup);

/* io.c, on io's home thread: queue the accepted descriptor fd (-1: none)
 * on io->accq and mark the queue active or not; the caller reports the
 * edge after it. Returns the descriptors queued. On a closed handle, or
 * without memory to queue it, fd is closed (its client sees the
 * connection end). */
unsigned baton__io_accept_queue(struct baton_io *io, int fd, bool active);

#endif /* BATON_SRC_IO_POLLER_H */
