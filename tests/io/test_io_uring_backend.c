/* SPDX-License-Identifier: MIT */
/*
 * tests/test_io_uring_backend.c - what is particular to the io_uring
 * reactor (src/io/uring.c), run with BATON_IO_BACKEND=io_uring: the
 * backend is really in use where the build has liburing
 * (BATON_EXPECT_URING), handles closed on another worker are removed and
 * freed by their home worker while completions for them may still be in
 * flight, open/close churn, descriptors that cannot be polled, and
 * multishot polls that the kernel ended because the completion queue was
 * full are re-armed; the ring's setup flags and their fall-back where a
 * kernel refuses them, edges seen by a worker that never sleeps (only
 * peeks), and a worker whose thread changes between runs (worker 0: a
 * SINGLE_ISSUER ring belongs to one thread). Under epoll (no liburing)
 * the same checks hold and the test still runs.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#if BATON_EXPECT_URING
#include <linux/io_uring.h>
#endif

#include "check.h"
#include "internal.h"

#include <baton/io.h>
#include <baton/sched.h>

#ifndef BATON_EXPECT_URING
#define BATON_EXPECT_URING 0
#endif

static baton_sched_t *make_sched(unsigned workers)
{
	struct baton_sched_attr a = BATON_SCHED_ATTR_INIT;
	baton_sched_t *s;

	a.workers = workers;
	assert_int_equal(baton_sched_create(&s, &a), BATON_OK);
	assert_int_equal(baton_io_set_backend(s, BATON_IO_URING), BATON_OK);
	tc_reset();
	return s;
}

static void spawn_on(baton_sched_t *s, void **state, int worker, baton_task_fn fn, void *arg)
{
	struct baton_task_attr a = BATON_TASK_ATTR_INIT;

	a.coro = *TC_ATTR(state);
	a.worker = worker;
	assert_int_equal(baton_sched_spawn(s, &a, fn, arg), BATON_OK);
}

static void run_and_destroy(baton_sched_t *s)
{
	assert_int_equal(baton_sched_run(s), BATON_OK);
	TC_VERDICT();
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

/* --- the backend in use ---------------------------------------------------- */
static const char *seen_backend;

static void backend_task(void *arg)
{
	int sv[2];
	baton_io_t *io;

	(void)arg;
	TC_CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	TC_CHECK(baton_io_open(&io, sv[0], true) == BATON_OK);
	seen_backend = baton_io_backend();
	TC_CHECK(baton_io_close(io) == BATON_OK);
	close(sv[1]);
}

static void test_backend(void **state)
{
	baton_sched_t *s = make_sched(1);

	tc_watchdog(10);
	spawn_on(s, state, BATON_SCHED_ANY_WORKER, backend_task, NULL);
	run_and_destroy(s);
	assert_non_null(seen_backend);
	if (BATON_EXPECT_URING)
		assert_string_equal(seen_backend, "io_uring");
	else
		assert_string_equal(seen_backend, "epoll");
	alarm(0);
}

/* --- closed on another worker: the home worker removes and frees ---------- */
#define HANDOFFS 200

struct handoff {
	baton_io_t *io;   /* opened on worker 0, closed on worker 1 */
	baton_io_t *peer; /* the other end, read on worker 0 */
	void **state;
	baton_sched_t *s;
	int closed; /* (atomic) the closer is done */
};

static void closer(void *arg)
{
	struct handoff *h = arg;
	char c;
	size_t n;

	/* Its edges come from worker 0's ring; the read may park. */
	TC_CHECK(baton_io_read(h->io, &c, 1, 2000000000LL, &n) == BATON_OK && n == 1);
	TC_CHECK(baton_io_close(h->io) == BATON_OK);
	/* Release: the opener reads the peer only after our close. */
	__atomic_store_n(&h->closed, 1, __ATOMIC_RELEASE);
}

static void opener(void *arg)
{
	struct handoff *h = arg;
	char c;
	size_t n;

	for (int i = 0; i < HANDOFFS; i++) {
		int sv[2];

		TC_CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
		TC_CHECK(baton_io_open(&h->io, sv[0], true) == BATON_OK);
		TC_CHECK(baton_io_open(&h->peer, sv[1], true) == BATON_OK);
		h->closed = 0;
		spawn_on(h->s, h->state, 1, closer, h);
		if (i & 1)
			baton_sched_yield(); /* sometimes the closer parks first */
		TC_CHECK(baton_io_write(h->peer, "x", 1, -1, NULL) == BATON_OK);
		/* Acquire: pairs with the closer's release. */
		while (!__atomic_load_n(&h->closed, __ATOMIC_ACQUIRE))
			baton_sched_yield();
		/* The peer sees the close only once worker 0 removed the
		 * poll request that kept the socket's file alive. */
		TC_CHECK(baton_io_read(h->peer, &c, 1, 2000000000LL, &n) == BATON_OK && n == 0);
		TC_CHECK(baton_io_close(h->peer) == BATON_OK);
	}
}

static void test_close_elsewhere(void **state)
{
	baton_sched_t *s = make_sched(2);
	struct handoff h = { .state = state, .s = s };

	tc_watchdog(30);
	spawn_on(s, state, 0, opener, &h);
	run_and_destroy(s);
	alarm(0);
}

/* --- churn: many short-lived handles --------------------------------------- */
static void churn_task(void *arg)
{
	long rounds = tc_scale(3000, 300);

	(void)arg;
	for (long i = 0; i < rounds; i++) {
		int sv[2];
		baton_io_t *a, *b;
		char c = 0;
		size_t n;

		TC_CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
		TC_CHECK(baton_io_open(&a, sv[0], true) == BATON_OK);
		TC_CHECK(baton_io_open(&b, sv[1], true) == BATON_OK);
		if (i % 3 == 0) {
			/* close with data unread and a request in flight */
			TC_CHECK(baton_io_write(a, "z", 1, -1, NULL) == BATON_OK);
		} else if (i % 3 == 1) {
			TC_CHECK(baton_io_write(a, "z", 1, -1, NULL) == BATON_OK);
			TC_CHECK(baton_io_read(b, &c, 1, 1000000000LL, &n) == BATON_OK && n == 1 &&
				 c == 'z');
		}
		TC_CHECK(baton_io_close(a) == BATON_OK);
		if (i % 3 != 2)
			TC_CHECK(baton_io_close(b) == BATON_OK);
		else /* leave b for the next poll round to see a's hang-up */
			TC_CHECK(baton_io_read(b, &c, 1, 1000000000LL, &n) == BATON_OK && n == 0 &&
				 baton_io_close(b) == BATON_OK);
	}
}

static void test_churn(void **state)
{
	baton_sched_t *s = make_sched(1);

	tc_watchdog(30);
	spawn_on(s, state, BATON_SCHED_ANY_WORKER, churn_task, NULL);
	run_and_destroy(s);
	alarm(0);
}

/* --- descriptors that cannot be polled ------------------------------------ */
static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
		(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

static void unpollable_task(void *arg)
{
	FILE *f = tmpfile();
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	baton_io_t *io;
	char c;
	size_t n;
	int rc;

	(void)arg;
	/* A regular file never waits: refused, as epoll refuses it. */
	TC_CHECK(f != NULL);
	errno = 0;
	TC_CHECK(baton_io_open(&io, fileno(f), false) == BATON_ESYS && errno == EPERM);
	fclose(f);
	/* A character device without poll support: epoll refuses it;
	 * io_uring takes it as always ready, and must not spin on it. */
	TC_CHECK(fd >= 0);
	rc = baton_io_open(&io, fd, true);
	if (BATON_EXPECT_URING) {
		double t0;

		TC_CHECK(rc == BATON_OK);
		if (rc != BATON_OK)
			return;
		TC_CHECK(baton_io_read(io, &c, 1, 1000000000LL, &n) == BATON_OK && n == 0);
		TC_CHECK(baton_io_write(io, "x", 1, 1000000000LL, &n) == BATON_OK && n == 1);
		t0 = cpu_seconds();
		baton_sched_sleep(200000000); /* the worker idles in its ring */
		TC_CHECK(cpu_seconds() - t0 < 0.1);
		TC_CHECK(baton_io_close(io) == BATON_OK);
	} else {
		TC_CHECK(rc == BATON_ESYS);
		close(fd);
	}
}

static void test_unpollable(void **state)
{
	baton_sched_t *s = make_sched(1);

	tc_watchdog(10);
	spawn_on(s, state, BATON_SCHED_ANY_WORKER, unpollable_task, NULL);
	run_and_destroy(s);
	alarm(0);
}

/* --- a full completion queue ends multishot polls: they are re-armed ------ */
#define PAIRS 300
#define BURST 20 /* PAIRS * BURST edges > the 4096-entry completion queue */

struct burst {
	int wfd[PAIRS];
	baton_io_t *r[PAIRS];
	int want; /* (atomic) the pair the reader waits on, -1 done */
};

static void *burst_writer(void *arg)
{
	struct burst *b = arg;
	int last = -1, cur;

	/* Acquire: pairs with the reader's release of `want`. */
	while ((cur = __atomic_load_n(&b->want, __ATOMIC_ACQUIRE)) != -1) {
		if (cur == last || cur < 0) {
			usleep(100);
			continue;
		}
		usleep(500); /* let the reader park and the worker sleep */
		(void)!write(b->wfd[cur], "w", 1);
		last = cur;
	}
	return NULL;
}

static void burst_reader(void *arg)
{
	struct burst *b = arg;
	char buf[64];
	size_t n;

	for (int i = 0; i < PAIRS; i++) {
		int sv[2];

		TC_CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
		b->wfd[i] = sv[1];
		TC_CHECK(baton_io_open(&b->r[i], sv[0], true) == BATON_OK);
	}
	baton_sched_yield(); /* the worker polls: the requests are armed */
	baton_sched_sleep(1000000);
	/* Without a poll in between: every write is one completion. */
	for (int k = 0; k < BURST; k++)
		for (int i = 0; i < PAIRS; i++)
			(void)!write(b->wfd[i], "b", 1);
	baton_sched_sleep(1000000); /* the worker reaps and re-arms */
	for (int i = 0; i < PAIRS; i++) {
		size_t got = 0;

		while (baton_io_read(b->r[i], buf, sizeof(buf), 0, &n) == BATON_OK)
			got += n;
		TC_CHECK(got == BURST);
	}
	/* Each handle still reports edges: one byte, written while we wait. */
	for (int i = 0; i < PAIRS; i++) {
		/* Release: the writer sees the handles set up. */
		__atomic_store_n(&b->want, i, __ATOMIC_RELEASE);
		TC_CHECK(baton_io_read(b->r[i], buf, 1, 3000000000LL, &n) == BATON_OK && n == 1 &&
			 buf[0] == 'w');
	}
	__atomic_store_n(&b->want, -1, __ATOMIC_RELEASE);
	for (int i = 0; i < PAIRS; i++)
		TC_CHECK(baton_io_close(b->r[i]) == BATON_OK);
}

static void test_overflow_rearm(void **state)
{
	baton_sched_t *s = make_sched(1);
	static struct burst b;
	pthread_t th;

	tc_watchdog(60);
	b.want = -2;
	spawn_on(s, state, BATON_SCHED_ANY_WORKER, burst_reader, &b);
	assert_int_equal(pthread_create(&th, NULL, burst_writer, &b), 0);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	/* Release: a reader that failed early still stops the writer. */
	__atomic_store_n(&b.want, -1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	for (int i = 0; i < PAIRS; i++)
		close(b.wfd[i]);
	TC_VERDICT();
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
	alarm(0);
}

/* --- submissions the kernel refuses ---------------------------------------- */
#if BATON_EXPECT_URING
static void refused_task(void *arg)
{
	int a[2], b[2];
	baton_io_t *ia, *ib;
	char c;
	ssize_t r = -1;

	(void)arg;
	TC_CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, a) == 0);
	TC_CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, b) == 0);
	TC_CHECK(baton_io_open(&ia, a[0], true) == BATON_OK); /* the poller exists */
	TC_CHECK(strcmp(baton_io_backend(), "io_uring") == 0);
	/* Relaxed: the knob is read on this thread, by the calls below. */
	__atomic_store_n(&baton__uring_sqe_failures, 1000, __ATOMIC_RELAXED);
	/* No SQE: opening fails with an error instead of looping. */
	errno = 0;
	TC_CHECK(baton_io_open(&ib, b[0], false) == BATON_ESYS && errno == EBUSY);
	/* Closing: the cancellation waits on the retry list, and the peer does
	 * not see the close while the poll request holds the file. */
	TC_CHECK(baton_io_close(ia) == BATON_OK);
	__atomic_store_n(&baton__uring_sqe_failures, 0, __ATOMIC_RELAXED);
	/* The next polls queue the cancellation: the peer sees EOF. */
	for (int i = 0; i < 200 && r != 0; i++) {
		baton_sched_sleep(1000000);
		r = recv(a[1], &c, 1, MSG_DONTWAIT);
	}
	TC_CHECK(r == 0);
	/* And handles open again. */
	TC_CHECK(baton_io_open(&ib, b[0], true) == BATON_OK);
	TC_CHECK(baton_io_close(ib) == BATON_OK);
	close(a[1]);
	close(b[1]);
}
#endif

static void test_refused_submissions(void **state)
{
#if BATON_EXPECT_URING
	baton_sched_t *s = make_sched(1);

	tc_watchdog(30);
	spawn_on(s, state, BATON_SCHED_ANY_WORKER, refused_task, NULL);
	run_and_destroy(s);
	alarm(0);
#else
	(void)state;
	skip(); /* no liburing in this build */
#endif
}

/* --- setup flags, their fall-back, and peeks ------------------------------- */
struct later_write {
	int fd;
	long delay_ns;
};

static void *write_later(void *arg)
{
	struct later_write *lw = arg;
	struct timespec ts = { 0, lw->delay_ns };

	nanosleep(&ts, NULL);
	(void)!write(lw->fd, "p", 1);
	return NULL;
}

struct peek {
	unsigned refused;      /* the setup flags the kernel "refused" */
	bool defer;            /* DEFER_TASKRUN asked for */
	int done;              /* (atomic) the reader has its byte */
	struct later_write lw; /* not on a task's stack: a copy-stack
				   task's is overwritten while it waits */
};

/* Keeps the worker busy until the reader is done: the worker never
 * sleeps in its poller, only peeks (poll with timeout 0). */
static void spinner(void *arg)
{
	struct peek *pk = arg;
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* Acquire: pairs with the reader's release (nothing else to see). */
	while (!__atomic_load_n(&pk->done, __ATOMIC_ACQUIRE)) {
		baton_sched_yield();
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 5)
			break;
	}
	TC_CHECK(__atomic_load_n(&pk->done, __ATOMIC_ACQUIRE));
}

static void peek_reader(void *arg)
{
	struct peek *pk = arg;
	int sv[2];
	baton_io_t *io;
	pthread_t th;
	char c = 0;
	size_t n = 0;

	TC_CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	TC_CHECK(baton_io_open(&io, sv[0], true) == BATON_OK);
#if BATON_EXPECT_URING
	{
		unsigned setup = baton__uring_setup_of_self();

		TC_CHECK(strcmp(baton_io_backend(), "io_uring") == 0);
		TC_CHECK((setup & pk->refused) == 0);
		/* The best set the kernel takes: DEFER_TASKRUN comes only
		 * with SINGLE_ISSUER and TASKRUN_FLAG (what a peek reads). */
		if (setup & IORING_SETUP_DEFER_TASKRUN)
			TC_CHECK((setup & IORING_SETUP_SINGLE_ISSUER) &&
				 (setup & IORING_SETUP_TASKRUN_FLAG));
		if (!(pk->refused & IORING_SETUP_COOP_TASKRUN))
			TC_CHECK(setup & IORING_SETUP_COOP_TASKRUN);
		if (!pk->defer)
			TC_CHECK(!(setup & IORING_SETUP_DEFER_TASKRUN));
	}
#endif
	pk->lw.fd = sv[1];
	pk->lw.delay_ns = 20000000;
	TC_CHECK(pthread_create(&th, NULL, write_later, &pk->lw) == 0);
	/* Parks; the spinner keeps the worker busy, so the edge must come
	 * through a peek. */
	TC_CHECK(baton_io_read(io, &c, 1, 3000000000LL, &n) == BATON_OK && n == 1 && c == 'p');
	/* Release: the spinner stops. */
	__atomic_store_n(&pk->done, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	TC_CHECK(baton_io_close(io) == BATON_OK);
	close(sv[1]);
}

static void test_setup_fallback(void **state)
{
	/* What older kernels refuse, newest first: DEFER_TASKRUN (< 6.1),
	 * SINGLE_ISSUER (< 6.0), COOP_TASKRUN (< 5.19), and so on down to no
	 * flags at all; with DEFER_TASKRUN asked for (BATON_IO_URING_DEFER)
	 * and without. */
	static const struct {
		bool defer;
		unsigned refused;
	} cases[] = {
		{ false, 0 },
#if BATON_EXPECT_URING
		{ true, 0 },
		{ true, IORING_SETUP_DEFER_TASKRUN },
		{ true, IORING_SETUP_SINGLE_ISSUER },
		{ true, IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_COOP_TASKRUN },
		{ false, IORING_SETUP_COOP_TASKRUN | IORING_SETUP_CQSIZE },
#endif
	};

	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct peek pk = { .refused = cases[i].refused };
		baton_sched_t *s = make_sched(1);

		/* No worker runs now: nothing reads the environment. */
		if (cases[i].defer)
			setenv("BATON_IO_URING_DEFER", "1", 1);
		else
			unsetenv("BATON_IO_URING_DEFER");
#if BATON_EXPECT_URING
		/* Relaxed: read by the worker's ring set-up, in the run below. */
		__atomic_store_n(&baton__uring_setup_refused, cases[i].refused, __ATOMIC_RELAXED);
		pk.defer = cases[i].defer;
#endif
		tc_watchdog(20);
		spawn_on(s, state, 0, peek_reader, &pk);
		spawn_on(s, state, 0, spinner, &pk);
		run_and_destroy(s);
		alarm(0);
	}
	unsetenv("BATON_IO_URING_DEFER");
#if BATON_EXPECT_URING
	__atomic_store_n(&baton__uring_setup_refused, 0, __ATOMIC_RELAXED);
#endif
}

/* --- worker 0 on another thread in a later run ----------------------------- */
static struct {
	baton_io_t *kept, *dropped; /* opened in run 1, used in run 2 */
	baton_io_t *listener;       /* accepted on with nothing there in run 1 */
	struct sockaddr_in addr;
	int kept_peer, dropped_peer;
	unsigned setup;
	struct later_write lw; /* not on the copy-stack task's stack */
} moved;

static void open_for_later(void *arg)
{
	int a[2], b[2];

	(void)arg;
	TC_CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, a) == 0);
	TC_CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, b) == 0);
	TC_CHECK(baton_io_open(&moved.kept, a[0], true) == BATON_OK);
	TC_CHECK(baton_io_open(&moved.dropped, b[0], true) == BATON_OK);
	moved.kept_peer = a[1];
	moved.dropped_peer = b[1];
	/* An accept that finds nothing would arm a multishot accept on a
	 * ring that cannot move; on the SINGLE_ISSUER one, none. */
	TC_CHECK(baton_io_listen_tcp(&moved.listener, "127.0.0.1", 0, 16) == BATON_OK);
	TC_CHECK(baton_io_accept(moved.listener, &a[0], 0) == BATON_EAGAIN);
#if BATON_EXPECT_URING
	moved.setup = baton__uring_setup_of_self();
#endif
}

static void use_after_move(void *arg)
{
	pthread_t th;
	char c = 0;
	size_t n = 0;
	ssize_t r = -1;

	(void)arg;
	moved.lw.fd = moved.kept_peer;
	moved.lw.delay_ns = 20000000;
	TC_CHECK(pthread_create(&th, NULL, write_later, &moved.lw) == 0);
	/* The edge comes from the worker's ring, set up again on this
	 * thread if the first was a SINGLE_ISSUER one. */
	TC_CHECK(baton_io_read(moved.kept, &c, 1, 3000000000LL, &n) == BATON_OK && n == 1 &&
		 c == 'p');
	pthread_join(th, NULL);
#if BATON_EXPECT_URING
	TC_CHECK(baton_io_backend() && strcmp(baton_io_backend(), "io_uring") == 0);
	TC_CHECK(baton__uring_setup_of_self() == moved.setup);
#endif
	/* Closing lets the peer see the end (no request of the old ring
	 * keeps the file alive). */
	TC_CHECK(baton_io_close(moved.dropped) == BATON_OK);
	for (int i = 0; i < 200 && r != 0; i++) {
		baton_sched_sleep(1000000);
		r = recv(moved.dropped_peer, &c, 1, MSG_DONTWAIT);
	}
	TC_CHECK(r == 0);
	close(moved.dropped_peer);
	/* The listener accepts through the new ring (or accept4). */
	socklen_t len = sizeof(moved.addr);
	int client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), fd = -1;

	getsockname(baton_io_fd(moved.listener), (struct sockaddr *)&moved.addr, &len);
	TC_CHECK(connect(client, (struct sockaddr *)&moved.addr, len) == 0);
	TC_CHECK(baton_io_accept(moved.listener, &fd, 3000000000LL) == BATON_OK);
	close(fd);
	close(client);
	TC_CHECK(baton_io_close(moved.listener) == BATON_OK);
	/* moved.kept stays open: destroy closes and frees it. */
}

static void *run_elsewhere(void *arg)
{
	return (void *)(intptr_t)baton_sched_run(arg);
}

static void test_run_on_another_thread(void **state)
{
	baton_sched_t *s = make_sched(1);
	pthread_t th;
	void *rc;

	/* A SINGLE_ISSUER ring where the kernel has it: the one that must
	 * move. No worker runs now: nothing reads the environment. */
	setenv("BATON_IO_URING_DEFER", "1", 1);
	tc_watchdog(20);
	spawn_on(s, state, 0, open_for_later, NULL);
	assert_int_equal(pthread_create(&th, NULL, run_elsewhere, s), 0);
	assert_int_equal(pthread_join(th, &rc), 0);
	assert_int_equal((int)(intptr_t)rc, BATON_OK);
	spawn_on(s, state, 0, use_after_move, NULL);
	run_and_destroy(s);
	unsetenv("BATON_IO_URING_DEFER");
	close(moved.kept_peer);
	alarm(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		TC_MODEL_TESTS(test_backend),        TC_MODEL_TESTS(test_close_elsewhere),
		TC_MODEL_TESTS(test_churn),          TC_MODEL_TESTS(test_unpollable),
		TC_MODEL_TESTS(test_overflow_rearm), TC_MODEL_TESTS(test_refused_submissions),
		TC_MODEL_TESTS(test_setup_fallback), TC_MODEL_TESTS(test_run_on_another_thread),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
