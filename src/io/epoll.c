/* SPDX-License-Identifier: MIT */
/*
 * The epoll backend: one epoll instance per worker, every handle registered
 * once, edge-triggered for both directions, and an eventfd that other
 * threads write to interrupt a worker asleep in epoll_pwait2().
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "poller.h"

#define EPOLL_BATCH 256

struct epoll_poller {
	int epfd;
	int evfd; /* its registration carries data.ptr == NULL */
	struct epoll_event events[EPOLL_BATCH];
};

static int ep_create(struct baton_worker *w)
{
	struct epoll_poller *p = baton__malloc(sizeof(*p));
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };

	if (p == NULL)
		return BATON_ENOMEM;
	p->epfd = epoll_create1(EPOLL_CLOEXEC);
	p->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (p->epfd < 0 || p->evfd < 0 || epoll_ctl(p->epfd, EPOLL_CTL_ADD, p->evfd, &ev) < 0) {
		int e = errno;

		if (p->epfd >= 0)
			close(p->epfd);
		if (p->evfd >= 0)
			close(p->evfd);
		baton__free(p);
		errno = e;
		return BATON_ESYS;
	}
	baton__reactor_of(w)->poller = p;
	return BATON_OK;
}

static int ep_add(struct baton_worker *w, struct baton_io *io)
{
	struct epoll_poller *p = baton__reactor_of(w)->poller;
	struct epoll_event ev = {
		.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
		.data.ptr = io,
	};

	return epoll_ctl(p->epfd, EPOLL_CTL_ADD, io->fd, &ev) == 0 ? BATON_OK : BATON_ESYS;
}

static void ep_del(struct baton_worker *w, struct baton_io *io)
{
	struct epoll_poller *p = baton__reactor_of(w)->poller;

	epoll_ctl(p->epfd, EPOLL_CTL_DEL, io->fd, NULL);
}

static void ep_poll(struct baton_worker *w, int64_t timeout_ns)
{
	struct epoll_poller *p = baton__reactor_of(w)->poller;
	struct timespec ts, *tp = NULL;
	int n;

	if (timeout_ns >= 0) {
		ts.tv_sec = timeout_ns / 1000000000;
		ts.tv_nsec = timeout_ns % 1000000000;
		tp = &ts;
	}
	n = epoll_pwait2(p->epfd, p->events, EPOLL_BATCH, tp, NULL);
	if (n < 0 && errno == ENOSYS) /* kernels before 5.11, qemu-user 7.2 */
		n = epoll_wait(p->epfd, p->events, EPOLL_BATCH,
			       timeout_ns < 0 ? -1 : (int)((timeout_ns + 999999) / 1000000));
	for (int i = 0; i < n; i++) {
		struct epoll_event *ev = &p->events[i];
		struct baton_io *io = ev->data.ptr;
		unsigned ready = 0;

		if (io == NULL) { /* a wake-up: drain the eventfd */
			uint64_t v;

			while (read(p->evfd, &v, sizeof(v)) > 0)
				;
			continue;
		}
		if (ev->events & (EPOLLIN | EPOLLRDHUP))
			ready |= BATON_IO_IN;
		if (ev->events & EPOLLOUT)
			ready |= BATON_IO_OUT;
		if (ev->events & EPOLLRDHUP)
			ready |= BATON_IO_RDHUP;
		baton__io_edge(io, ready, ev->events & (EPOLLERR | EPOLLHUP));
	}
}

static void ep_wake(struct baton_worker *w)
{
	struct epoll_poller *p = baton__reactor_of(w)->poller;
	uint64_t one = 1;

	/* EAGAIN means the counter is full: a wake-up is pending anyway. */
	(void)!write(p->evfd, &one, sizeof(one));
}

static void ep_destroy(struct baton_worker *w)
{
	struct epoll_poller *p = baton__reactor_of(w)->poller;

	close(p->epfd);
	close(p->evfd);
	baton__free(p);
	baton__reactor_of(w)->poller = NULL;
}

const struct baton_poller_ops baton__poller_epoll = {
	.name = "epoll",
	.create = ep_create,
	.add = ep_add,
	.del = ep_del,
	.poll = ep_poll,
	.wake = ep_wake,
	.destroy = ep_destroy,
};
