/* SPDX-License-Identifier: MIT */
/*
 * tests/test_io.c - the reactor (baton/io.h): tasks blocking on sockets and
 * pipes while their worker runs others, timeouts, errors, and many
 * connections at once, in both coroutine models, on 1 and 2 workers, with
 * the backend chosen by BATON_IO_BACKEND (CTest runs this file once per
 * backend).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"

#include <baton/io.h>
#include <baton/sched.h>
#include <baton/sync.h>

static baton_sched_t *make_sched(unsigned workers)
{
	struct baton_sched_attr a = BATON_SCHED_ATTR_INIT;
	baton_sched_t *s;

	a.workers = workers;
	assert_int_equal(baton_sched_create(&s, &a), BATON_OK);
	tc_reset();
	return s;
}

static void spawn(baton_sched_t *s, void **state, baton_task_fn fn, void *arg)
{
	struct baton_task_attr a = BATON_TASK_ATTR_INIT;

	a.coro = *TC_ATTR(state);
	assert_int_equal(baton_sched_spawn(s, &a, fn, arg), BATON_OK);
}

/* --- echo over TCP: one server task per connection ------------------------ */
#define CLIENTS 50
#define ROUNDS 20

struct echo {
	baton_io_t *listener;
	unsigned short port;
	void **state;
	long echoed; /* bytes the clients got back right (atomic) */
	baton_wg_t *clients;
};

static void echo_conn(void *arg)
{
	baton_io_t *c = arg;
	char buf[512];
	size_t n;

	while (baton_io_read(c, buf, sizeof(buf), 5000000000LL, &n) == BATON_OK && n > 0)
		TC_CHECK(baton_io_write(c, buf, n, 5000000000LL, NULL) == BATON_OK);
	TC_CHECK(baton_io_close(c) == BATON_OK);
}

static void echo_server(void *arg)
{
	struct echo *e = arg;

	for (int i = 0; i < CLIENTS; i++) {
		int fd;
		baton_io_t *c;

		TC_CHECK(baton_io_accept(e->listener, &fd, 5000000000LL) == BATON_OK);
		TC_CHECK(baton_io_open(&c, fd, true) == BATON_OK);
		spawn(baton_sched_self(), e->state, echo_conn, c);
	}
	TC_CHECK(baton_io_close(e->listener) == BATON_OK);
}

static void echo_client(void *arg)
{
	struct echo *e = arg;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(e->port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	baton_io_t *c;
	char msg[64], back[64];

	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	TC_CHECK(baton_io_open(&c, fd, true) == BATON_OK);
	TC_CHECK(baton_io_connect(c, (struct sockaddr *)&sa, sizeof(sa), 5000000000LL) == BATON_OK);
	for (int r = 0; r < ROUNDS; r++) {
		size_t len = (size_t)snprintf(msg, sizeof(msg), "hello %p %d", (void *)c, r);
		size_t got = 0, n;

		TC_CHECK(baton_io_write(c, msg, len, 5000000000LL, NULL) == BATON_OK);
		while (got < len) {
			if (baton_io_read(c, back + got, len - got, 5000000000LL, &n) != BATON_OK ||
			    n == 0)
				break;
			got += n;
		}
		TC_CHECK(got == len && memcmp(msg, back, len) == 0);
		if (got == len)
			__atomic_add_fetch(&e->echoed, (long)len, __ATOMIC_RELAXED);
	}
	TC_CHECK(baton_io_close(c) == BATON_OK);
	baton_wg_done(e->clients);
}

static void echo_start(void *arg)
{
	struct echo *e = arg;
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);

	TC_CHECK(baton_io_listen_tcp(&e->listener, "127.0.0.1", 0, 128) == BATON_OK);
	getsockname(baton_io_fd(e->listener), (struct sockaddr *)&sa, &len);
	e->port = ntohs(sa.sin_port);
	TC_CHECK(baton_io_backend() != NULL);
	spawn(baton_sched_self(), e->state, echo_server, e);
	for (int i = 0; i < CLIENTS; i++)
		spawn(baton_sched_self(), e->state, echo_client, e);
}

static void check_echo(void **state, unsigned workers)
{
	baton_sched_t *s = make_sched(workers);
	struct echo e = { .state = state };

	tc_watchdog(60);
	assert_int_equal(baton_wg_create(&e.clients), BATON_OK);
	assert_int_equal(baton_wg_add(e.clients, CLIENTS), BATON_OK);
	spawn(s, state, echo_start, &e);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	TC_VERDICT();
	assert_true(e.echoed > 0);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
	assert_int_equal(baton_wg_destroy(e.clients), BATON_OK);
	alarm(0);
}

static void test_echo_1(void **state)
{
	check_echo(state, 1);
}
static void test_echo_2(void **state)
{
	check_echo(state, 2);
}

/* --- timeouts, try, errors -------------------------------------------------- */
static void timeouts_task(void *arg)
{
	int p[2];
	baton_io_t *r, *w;
	char c;
	size_t n;
	int64_t t0;
	struct timespec ts;

	(void)arg;
	TC_CHECK(pipe(p) == 0);
	TC_CHECK(baton_io_open(&r, p[0], true) == BATON_OK);
	TC_CHECK(baton_io_open(&w, p[1], true) == BATON_OK);
	TC_CHECK(baton_io_read(r, &c, 1, 0, &n) == BATON_EAGAIN);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	t0 = ts.tv_sec * 1000000000LL + ts.tv_nsec;
	TC_CHECK(baton_io_read(r, &c, 1, 20000000, &n) == BATON_ETIMEDOUT);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	TC_CHECK(ts.tv_sec * 1000000000LL + ts.tv_nsec - t0 >= 20000000);
	TC_CHECK(baton_io_wait(r, BATON_IO_READABLE, 0) == BATON_EAGAIN);
	TC_CHECK(baton_io_wait(w, BATON_IO_WRITABLE, 1000000000) == BATON_OK);
	TC_CHECK(baton_io_write(w, "x", 1, -1, &n) == BATON_OK && n == 1);
	TC_CHECK(baton_io_wait(r, BATON_IO_READABLE, 1000000000) == BATON_OK);
	TC_CHECK(baton_io_read(r, &c, 1, -1, &n) == BATON_OK && n == 1 && c == 'x');
	TC_CHECK(baton_io_close(w) == BATON_OK);
	TC_CHECK(baton_io_read(r, &c, 1, -1, &n) == BATON_OK && n == 0); /* EOF */
	TC_CHECK(baton_io_close(r) == BATON_OK);
	/* Arguments and a refused connection. */
	TC_CHECK(baton_io_read(NULL, &c, 1, 0, &n) == BATON_EINVAL);
	TC_CHECK(baton_io_wait(NULL, BATON_IO_READABLE, 0) == BATON_EINVAL);
	TC_CHECK(baton_io_open(&r, -1, false) == BATON_EINVAL);
	TC_CHECK(baton_io_listen_tcp(&r, "not an address", 0, 1) == BATON_EINVAL);
	{
		baton_io_t *lis, *c2;
		struct sockaddr_in sa;
		socklen_t len = sizeof(sa);
		int fd;

		/* a port that was just free: nobody listens there */
		TC_CHECK(baton_io_listen_tcp(&lis, "127.0.0.1", 0, 1) == BATON_OK);
		getsockname(baton_io_fd(lis), (struct sockaddr *)&sa, &len);
		TC_CHECK(baton_io_close(lis) == BATON_OK);
		fd = socket(AF_INET, SOCK_STREAM, 0);
		TC_CHECK(baton_io_open(&c2, fd, true) == BATON_OK);
		TC_CHECK(baton_io_connect(c2, (struct sockaddr *)&sa, len, 1000000000) ==
				 BATON_ESYS &&
			 errno == ECONNREFUSED);
		TC_CHECK(baton_io_close(c2) == BATON_OK);
	}
}

/* One task on one worker; the checks it made. */
static void run_alone(void **state, baton_task_fn fn)
{
	baton_sched_t *s = make_sched(1);

	tc_watchdog(30);
	spawn(s, state, fn, NULL);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	TC_VERDICT();
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
	alarm(0);
}

static void test_timeouts(void **state)
{
	run_alone(state, timeouts_task);
}

/* --- accepting: a burst, a full descriptor table, a closed listener ------ */
/* On io_uring a listener whose accept found nothing accepts ahead of its
 * task (multishot accept) into a queue; on epoll accept4 does it all.
 * Both must look the same to the task. */
#define BURST 200

/* Open descriptors of this process (the directory's own not counted). */
static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = -1; /* the directory's descriptor */

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static baton_io_t *listen_here(unsigned short *port, int backlog)
{
	baton_io_t *l = NULL;
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);

	TC_CHECK(baton_io_listen_tcp(&l, "127.0.0.1", 0, backlog) == BATON_OK);
	getsockname(baton_io_fd(l), (struct sockaddr *)&sa, &len);
	*port = ntohs(sa.sin_port);
	return l;
}

/* A connected client socket (blocking connect: loopback, into the backlog). */
static int dial(unsigned short port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	TC_CHECK(fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	return fd;
}

/* Nothing to accept: the attempt arms the backend's accept (io_uring); a
 * short sleep lets the worker's poll submit it. */
static void accept_nothing(baton_io_t *l)
{
	int fd;

	TC_CHECK(baton_io_accept(l, &fd, 0) == BATON_EAGAIN);
	TC_CHECK(baton_sched_sleep(10000000) == BATON_OK);
}

static void *burst_clients(void *arg)
{
	unsigned short port = *(unsigned short *)arg;
	static int fds[BURST];

	for (int i = 0; i < BURST; i++)
		fds[i] = dial(port);
	usleep(200000); /* held open while the task accepts */
	for (int i = 0; i < BURST; i++)
		close(fds[i]);
	return NULL;
}

static void accept_burst(void)
{
	unsigned short port;
	baton_io_t *l = listen_here(&port, 256);
	int before = count_fds(), accepted = 0;
	pthread_t th;

	accept_nothing(l);
	TC_CHECK(pthread_create(&th, NULL, burst_clients, &port) == 0);
	for (int i = 0; i < BURST; i++) {
		int fd;

		if (baton_io_accept(l, &fd, 5000000000LL) != BATON_OK)
			break;
		TC_CHECK((fcntl(fd, F_GETFL) & O_NONBLOCK) && (fcntl(fd, F_GETFD) & FD_CLOEXEC));
		close(fd);
		accepted++;
	}
	TC_CHECK(accepted == BURST);
	pthread_join(th, NULL);
	TC_CHECK(count_fds() == before);
	TC_CHECK(baton_io_close(l) == BATON_OK);
}

#define EMFILE_CLIENTS 4

/* Room for one more descriptor: the first connection is accepted, the
 * next finds the table full. (io_uring's accept reads the limit when it is
 * submitted, so the limit is set before the wait that arms it.) */
static void accept_emfile(void)
{
	unsigned short port;
	baton_io_t *l = listen_here(&port, 64);
	struct rlimit old, low;
	int clients[EMFILE_CLIENTS + 1], fd, rc, lowest;

	for (int i = 0; i < EMFILE_CLIENTS; i++)
		clients[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	/* Descriptors are taken lowest first: below this one all are used. */
	lowest = dup(0);
	close(lowest);
	getrlimit(RLIMIT_NOFILE, &old);
	low = old;
	low.rlim_cur = (rlim_t)lowest + 1;
	TC_CHECK(setrlimit(RLIMIT_NOFILE, &low) == 0);
	accept_nothing(l);
	for (int i = 0; i < EMFILE_CLIENTS; i++) {
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };

		inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
		TC_CHECK(connect(clients[i], (struct sockaddr *)&sa, sizeof(sa)) == 0);
	}
	TC_CHECK(baton_sched_sleep(20000000) == BATON_OK); /* the backend tries */
	TC_CHECK(baton_io_accept(l, &fd, 2000000000LL) == BATON_OK);
	rc = baton_io_accept(l, &lowest, 2000000000LL);
	TC_CHECK(rc == BATON_ESYS && errno == EMFILE);
	close(fd);
	TC_CHECK(setrlimit(RLIMIT_NOFILE, &old) == 0);
	/* Recovered: the connections the table had no room for are there. */
	for (int i = 1; i < EMFILE_CLIENTS; i++) {
		TC_CHECK(baton_io_accept(l, &fd, 2000000000LL) == BATON_OK);
		close(fd);
	}
	/* And the backend accepts ahead again after the next wait. */
	accept_nothing(l);
	clients[EMFILE_CLIENTS] = dial(port);
	TC_CHECK(baton_io_accept(l, &fd, 2000000000LL) == BATON_OK);
	close(fd);
	for (int i = 0; i <= EMFILE_CLIENTS; i++)
		close(clients[i]);
	TC_CHECK(baton_io_close(l) == BATON_OK);
}

#define QUEUED_CLIENTS 100

static void accept_close_with_queue(void)
{
	unsigned short port;
	baton_io_t *l = listen_here(&port, 256);
	bool uring = strcmp(baton_io_backend(), "io_uring") == 0;
	int clients[QUEUED_CLIENTS], before, held;

	accept_nothing(l);
	before = count_fds();
	for (int i = 0; i < QUEUED_CLIENTS; i++)
		clients[i] = dial(port);
	TC_CHECK(baton_sched_sleep(50000000) == BATON_OK); /* the backend accepts */
	held = count_fds();
	/* io_uring accepted up to its queue's limit ahead of the task; epoll
	 * left them all in the backlog. */
	if (uring)
		TC_CHECK(held >= before + QUEUED_CLIENTS + 1);
	else
		TC_CHECK(held == before + QUEUED_CLIENTS);
	TC_CHECK(baton_io_close(l) == BATON_OK);
	TC_CHECK(baton_sched_sleep(50000000) == BATON_OK); /* the cancellations land */
	/* The listener and every queued descriptor are gone; the clients stay. */
	TC_CHECK(count_fds() == before - 1 + QUEUED_CLIENTS);
	for (int i = 0; i < QUEUED_CLIENTS; i++)
		close(clients[i]);
	TC_CHECK(count_fds() == before - 1);
}

static void accept_task(void *arg)
{
	(void)arg;
	accept_burst();
	accept_emfile();
	accept_close_with_queue();
}

static void test_accept(void **state)
{
	run_alone(state, accept_task);
}

/* --- end of file that came with the last bytes ---------------------------- */
/* The peer sent its last bytes and closed before we looked: one edge says
 * both. A read that returns less than it asked for must not then wait for
 * another edge (none comes): the next read returns 0 at once. */
static void eof_task(void *arg)
{
	int sv[2];
	baton_io_t *r;
	char buf[64];
	size_t n = 1;

	(void)arg;
	TC_CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	TC_CHECK(write(sv[1], "abc", 3) == 3);
	TC_CHECK(shutdown(sv[1], SHUT_WR) == 0);
	TC_CHECK(baton_io_open(&r, sv[0], true) == BATON_OK);
	/* The wait takes the edge (data and the peer's end together). */
	TC_CHECK(baton_io_wait(r, BATON_IO_READABLE, 1000000000) == BATON_OK);
	TC_CHECK(baton_io_read(r, buf, sizeof(buf), 1000000000, &n) == BATON_OK && n == 3);
	TC_CHECK(baton_io_read(r, buf, sizeof(buf), 200000000, &n) == BATON_OK && n == 0);
	TC_CHECK(baton_io_wait(r, BATON_IO_READABLE, 200000000) == BATON_OK);
	TC_CHECK(baton_io_close(r) == BATON_OK);
	close(sv[1]);
}

static void test_eof_with_last_bytes(void **state)
{
	run_alone(state, eof_task);
}

/* --- a notification instead of a waiting task (io.h rule 5) ------------- */
/* The connection parks: its task arms a notification and returns. Bytes
 * written later call the notification once, outside any task, on the
 * handle's worker, and the task it spawns reads them. */
struct notify_ctx {
	baton_sched_t *s;
	int peer;
	int calls;
	bool in_task; /* the notification ran inside a task (must not) */
	bool read_ok;
	bool done; /* the reader ended */
};

static baton_io_t *notify_handle;

static void notify_read_task(void *arg)
{
	struct notify_ctx *ctx = arg;
	char buf[8];
	size_t n = 0;

	TC_CHECK(baton_io_read(notify_handle, buf, sizeof(buf), 1000000000, &n) == BATON_OK);
	ctx->read_ok = n == 2 && memcmp(buf, "hi", 2) == 0;
	/* The notification ran and disarmed itself: close is not refused. */
	TC_CHECK(baton_io_close(notify_handle) == BATON_OK);
	close(ctx->peer);
	ctx->done = true;
}

static void on_readable(baton_io_t *io, void *arg)
{
	struct notify_ctx *ctx = arg;

	ctx->calls++;
	ctx->in_task = baton_task_handle() != NULL;
	if (io != notify_handle ||
	    baton_sched_spawn(ctx->s, NULL, notify_read_task, ctx) != BATON_OK)
		ctx->calls += 100; /* seen by the verdict */
}

static struct notify_ctx notify_ctx;

static void notify_task(void *arg)
{
	struct notify_ctx *ctx = &notify_ctx;
	int sv[2];
	baton_io_t *r;
	char buf[8];
	size_t n;

	(void)arg;
	TC_CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	TC_CHECK(baton_io_open(&r, sv[0], true) == BATON_OK);
	notify_handle = r;
	ctx->peer = sv[1];
	/* Arguments. */
	TC_CHECK(baton_io_notify(NULL, BATON_IO_READABLE, on_readable, ctx) == BATON_EINVAL);
	TC_CHECK(baton_io_notify(r, BATON_IO_READABLE, NULL, ctx) == BATON_EINVAL);
	TC_CHECK(baton_io_notify(r, 0, on_readable, ctx) == BATON_EINVAL);
	TC_CHECK(baton_io_notify(r, BATON_IO_WRITABLE, on_readable, ctx) == BATON_EINVAL);
	/* Nothing armed: disarming says so. */
	TC_CHECK(baton_io_notify(r, 0, NULL, NULL) == BATON_EAGAIN);
	/* Readable already (a remembered edge): nothing armed, read again. */
	TC_CHECK(write(sv[1], "x", 1) == 1);
	TC_CHECK(baton_io_wait(r, BATON_IO_READABLE, 1000000000) == BATON_OK);
	TC_CHECK(baton_io_notify(r, BATON_IO_READABLE, on_readable, ctx) == BATON_EAGAIN);
	TC_CHECK(baton_io_read(r, buf, sizeof(buf), 0, &n) == BATON_OK && n == 1);
	TC_CHECK(baton_io_read(r, buf, sizeof(buf), 0, &n) == BATON_EAGAIN);
	/* Armed: a second one, and close, are refused; disarming works once. */
	TC_CHECK(baton_io_notify(r, BATON_IO_READABLE, on_readable, ctx) == BATON_OK);
	TC_CHECK(baton_io_notify(r, BATON_IO_READABLE, on_readable, ctx) == BATON_EBUSY);
	TC_CHECK(baton_io_close(r) == BATON_EBUSY);
	TC_CHECK(baton_io_notify(r, 0, NULL, NULL) == BATON_OK);
	TC_CHECK(baton_io_notify(r, 0, NULL, NULL) == BATON_EAGAIN);
	/* Armed for good: this task ends; the bytes start the reader. */
	TC_CHECK(baton_io_notify(r, BATON_IO_READABLE, on_readable, ctx) == BATON_OK);
	TC_CHECK(write(sv[1], "hi", 2) == 2);
}

/* No task waits on the handle meanwhile: this one keeps the run going
 * until the reader is done (at most 5 s). */
static void notify_keeper(void *arg)
{
	(void)arg;
	for (int i = 0; i < 1000 && !notify_ctx.done; i++)
		TC_CHECK(baton_sched_sleep(5000000) == BATON_OK);
	TC_CHECK(notify_ctx.done);
}

static void test_notify(void **state)
{
	baton_sched_t *s = make_sched(1);

	tc_watchdog(30);
	notify_ctx = (struct notify_ctx){ .s = s, .peer = -1 };
	spawn(s, state, notify_task, NULL);
	spawn(s, state, notify_keeper, NULL);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	TC_VERDICT();
	assert_int_equal(notify_ctx.calls, 1);
	assert_false(notify_ctx.in_task);
	assert_true(notify_ctx.read_ok);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
	alarm(0);
}

/* --- a write to a pipe whose reader has gone: EPIPE, no SIGPIPE ---------- */
/* The default action of SIGPIPE ends the process: this test survives only
 * if the write does not raise it (io.h). A SIGPIPE already pending before
 * the write must still be pending after it. */
static void pipe_task(void *arg)
{
	int p[2];
	baton_io_t *w;
	size_t n = 1;
	sigset_t set, pending;

	(void)arg;
	TC_CHECK(signal(SIGPIPE, SIG_DFL) != SIG_ERR);
	TC_CHECK(pipe(p) == 0);
	TC_CHECK(fcntl(p[1], F_SETFL, O_NONBLOCK) == 0);
	TC_CHECK(close(p[0]) == 0);
	TC_CHECK(baton_io_open(&w, p[1], true) == BATON_OK);
	errno = 0;
	TC_CHECK(baton_io_write(w, "x", 1, 1000000000, &n) == BATON_ESYS);
	TC_CHECK(errno == EPIPE && n == 0);
	/* Again, with a SIGPIPE of ours pending (blocked here): kept. */
	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	TC_CHECK(pthread_sigmask(SIG_BLOCK, &set, NULL) == 0);
	TC_CHECK(pthread_kill(pthread_self(), SIGPIPE) == 0);
	TC_CHECK(baton_io_write(w, "x", 1, 1000000000, &n) == BATON_ESYS && errno == EPIPE);
	TC_CHECK(sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1);
	{
		static const struct timespec now = { 0, 0 };

		TC_CHECK(sigtimedwait(&set, NULL, &now) == SIGPIPE);
	}
	TC_CHECK(pthread_sigmask(SIG_UNBLOCK, &set, NULL) == 0);
	TC_CHECK(baton_io_close(w) == BATON_OK);
}

static void test_pipe_epipe_no_sigpipe(void **state)
{
	run_alone(state, pipe_task);
}

/* --- a task blocked in read is woken by a write from another worker ------ */
struct cross {
	baton_io_t *r;
	int wfd;
	int ready; /* (atomic) */
};

static void cross_reader(void *arg)
{
	struct cross *x = arg;
	char c;
	size_t n;

	__atomic_store_n(&x->ready, 1, __ATOMIC_RELEASE);
	TC_CHECK(baton_io_read(x->r, &c, 1, 10000000000LL, &n) == BATON_OK && n == 1);
	TC_CHECK(baton_io_close(x->r) == BATON_OK);
}

static void *cross_writer(void *arg)
{
	struct cross *x = arg;

	while (!__atomic_load_n(&x->ready, __ATOMIC_ACQUIRE))
		usleep(1000);
	usleep(20000); /* let the reader park and its worker sleep in poll */
	(void)!write(x->wfd, "y", 1);
	return NULL;
}

static void cross_open(void *arg)
{
	struct cross *x = arg;
	int p[2];

	TC_CHECK(pipe(p) == 0);
	x->wfd = p[1];
	TC_CHECK(baton_io_open(&x->r, p[0], true) == BATON_OK);
	cross_reader(x);
}

static void test_wake_from_thread(void **state)
{
	baton_sched_t *s = make_sched(2);
	struct cross x = { 0 };
	pthread_t th;

	tc_watchdog(30);
	spawn(s, state, cross_open, &x);
	assert_int_equal(pthread_create(&th, NULL, cross_writer, &x), 0);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	pthread_join(th, NULL);
	close(x.wfd);
	TC_VERDICT();
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
	alarm(0);
}

/* --- a yielding task does not keep I/O waiting ------------------------------ */
struct spin;
static void spin_open(void *arg);
/* One worker: a task that yields in a loop is alone on the run queue, so
 * each yield lets the worker poll before running it again. The reader is
 * woken on the first poll after the pipe is written: within a few yields,
 * not after a poll tick's worth (61 dispatches) of them. */
struct spin {
	baton_io_t *r;
	int wfd;
	int reader_ready; /* the reader waits in read */
	long yields;      /* the spinner's count */
	long woke_at;     /* the count when the reader got its byte */
};

static void spin_reader(void *arg)
{
	struct spin *sp = arg;
	char c;
	size_t n = 0;

	sp->reader_ready = 1;
	TC_CHECK(baton_io_read(sp->r, &c, 1, 5000000000LL, &n) == BATON_OK && n == 1);
	sp->woke_at = sp->yields;
	baton_io_close(sp->r);
}

static void spin_yielder(void *arg)
{
	struct spin *sp = arg;

	while (!sp->reader_ready)
		baton_sched_yield();
	baton_sched_yield(); /* the reader is parked in its read now */
	TC_CHECK(write(sp->wfd, "x", 1) == 1);
	for (sp->yields = 0; sp->woke_at < 0 && sp->yields < 100000; sp->yields++)
		baton_sched_yield();
}

static int spin_rfd;

static void spin_open(void *arg)
{
	struct spin *sp = arg;

	TC_CHECK(baton_io_open(&sp->r, spin_rfd, true) == BATON_OK);
	TC_CHECK(baton_sched_spawn(baton_sched_self(), NULL, spin_reader, sp) == BATON_OK);
	spin_yielder(sp);
}

static void test_yield_polls_io(void **state)
{
	baton_sched_t *s = make_sched(1);
	struct spin sp = { .woke_at = -1 };
	int p[2];

	tc_watchdog(30);
	assert_int_equal(pipe(p), 0);
	sp.wfd = p[1];
	spin_rfd = p[0];
	spawn(s, state, spin_open, &sp);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	close(p[1]);
	TC_VERDICT();
	assert_true(sp.woke_at >= 0 && sp.woke_at <= 3);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
	alarm(0);
}

static void test_outside_task(void **state)
{
	baton_io_t *io;

	(void)state;
	assert_int_equal(baton_io_open(&io, 0, false), BATON_ENOSCHED);
	assert_int_equal(baton_io_listen_tcp(&io, NULL, 0, 1), BATON_ENOSCHED);
	assert_null(baton_io_backend());
	assert_int_equal(baton_io_close(NULL), BATON_OK);
}

/* The bare listening socket needs no task (a server binds before it runs). */
static void test_listen_socket_anywhere(void **state)
{
	unsigned short port = 0;
	int fd = -1;

	(void)state;
	assert_int_equal(baton_io_listen_socket("127.0.0.1", &port, 4, &fd), BATON_OK);
	assert_true(port > 0 && fd >= 0);
	assert_int_equal(fcntl(fd, F_GETFL) & O_NONBLOCK, O_NONBLOCK);
	close(fd);
	assert_int_equal(baton_io_listen_socket("nowhere", &port, 4, &fd), BATON_EINVAL);
	assert_int_equal(baton_io_listen_socket(NULL, NULL, 4, &fd), BATON_EINVAL);
	assert_int_equal(baton_io_listen_socket(NULL, &port, 4, NULL), BATON_EINVAL);
	assert_int_equal(baton_io_listen_socket(NULL, &port, 0, &fd), BATON_EINVAL);
}

/* A scheduler takes the backends io.h names, and no other. */
static void test_backend_values(void **state)
{
	baton_sched_t *s;

	(void)state;
	assert_int_equal(baton_sched_create(&s, NULL), BATON_OK);
	for (int b = BATON_IO_AUTO; b <= BATON_IO_URING; b++)
		assert_int_equal(baton_io_set_backend(s, (baton_io_backend_t)b), BATON_OK);
	assert_int_equal(baton_io_set_backend(s, (baton_io_backend_t)(BATON_IO_URING + 1)),
			 BATON_EINVAL);
	assert_int_equal(baton_io_set_backend(s, (baton_io_backend_t)-1), BATON_EINVAL);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		TC_MODEL_TESTS(test_echo_1),
		TC_MODEL_TESTS(test_echo_2),
		TC_MODEL_TESTS(test_timeouts),
		TC_MODEL_TESTS(test_eof_with_last_bytes),
		TC_MODEL_TESTS(test_pipe_epipe_no_sigpipe),
		TC_MODEL_TESTS(test_notify),
		TC_MODEL_TESTS(test_wake_from_thread),
		TC_MODEL_TESTS(test_yield_polls_io),
		TC_MODEL_TESTS(test_accept),
		cmocka_unit_test(test_outside_task),
		cmocka_unit_test(test_listen_socket_anywhere),
		cmocka_unit_test(test_backend_values),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
