/* SPDX-License-Identifier: MIT */
/* The claims of baton/io.h a caller relies on, read from the header and
 * checked: io.h owns the backend type and baton_io_set_backend chooses a
 * scheduler's reactor before its workers have one (EINVAL for NULL or an
 * unknown value, EBUSY once a worker has its reactor, nothing changed);
 * baton_io_backend is NULL outside tasks; a call that would wait outside a task says
 * BATON_ENOSCHED. The environment's BATON_IO_BACKEND overrides the choice,
 * so the checks of which reactor runs are made only without it. Connect
 * waits out an AF_UNIX listener's full backlog as it waits for TCP. */
#include "check.h"

#include <string.h>
#include <errno.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <baton/io.h>

static char seen[16];

static void pi_open(void *arg)
{
	baton_io_t *a, *b;
	int sv[2];

	(void)arg;
	TC_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
	TC_CHECK_RC(baton_io_open(&a, sv[0], true), BATON_OK);
	TC_CHECK_RC(baton_io_open(&b, sv[1], true), BATON_OK);
	snprintf(seen, sizeof(seen), "%s", baton_io_backend());
	TC_CHECK_RC(baton_io_set_backend(baton_sched_self(), BATON_IO_AUTO), BATON_EBUSY);
	TC_CHECK_RC(baton_io_close(a), BATON_OK);
	TC_CHECK_RC(baton_io_close(b), BATON_OK);
}

static void run_open(baton_sched_t *s)
{
	tc_reset();
	tc_watchdog_phase(60, "io open");
	seen[0] = 0;
	TC_CHECK_RC(baton_sched_spawn(s, NULL, pi_open, NULL), BATON_OK);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	TC_VERDICT();
}

static void test_set_backend(void **state)
{
	baton_sched_t *s;

	(void)state;
	assert_int_equal(baton_sched_create(&s, NULL), BATON_OK);
	assert_int_equal(baton_io_set_backend(NULL, BATON_IO_EPOLL), BATON_EINVAL);
	assert_int_equal(baton_io_set_backend(s, (baton_io_backend_t)3), BATON_EINVAL);
	assert_int_equal(baton_io_set_backend(s, (baton_io_backend_t)-1), BATON_EINVAL);
	assert_int_equal(baton_io_set_backend(s, BATON_IO_URING), BATON_OK);
	assert_int_equal(baton_io_set_backend(s, BATON_IO_EPOLL), BATON_OK);
	run_open(s);
	if (getenv("BATON_IO_BACKEND") == NULL)
		assert_string_equal(seen, "epoll");
	/* The worker keeps its reactor: too late now, and nothing changes. */
	assert_int_equal(baton_io_set_backend(s, BATON_IO_URING), BATON_EBUSY);
	run_open(s);
	if (getenv("BATON_IO_BACKEND") == NULL)
		assert_string_equal(seen, "epoll");
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

static void test_outside_tasks(void **state)
{
	baton_io_t *io;
	int sv[2];

	(void)state;
	assert_null(baton_io_backend());
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	assert_int_equal(baton_io_open(&io, sv[0], true), BATON_ENOSCHED);
	assert_int_equal(baton_io_fd(NULL), BATON_EINVAL);
	close(sv[0]);
	close(sv[1]);
}

/* "Connect waits as long as the timeout allows", also for an AF_UNIX
 * listener whose backlog is full (connect(2) says EAGAIN there, which
 * used to come back as BATON_ESYS at once): timeout 0 says BATON_EAGAIN,
 * a short timeout BATON_ETIMEDOUT, and a connect without a limit gets
 * through once another task accepts. */
static struct sockaddr_un un_addr;
static int un_lis = -1, un_filled[8], un_nfilled;

static int un_socket(void)
{
	return socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
}

static void pi_acceptor(void *arg)
{
	int c;

	(void)arg;
	TC_CHECK_RC(baton_sched_sleep(TC_MS(30)), BATON_OK);
	c = accept(un_lis, NULL, NULL);
	TC_CHECK(c >= 0);
	if (c >= 0)
		close(c);
}

static void pi_connect_full(void *arg)
{
	baton_io_t *io;
	int64_t t0;

	(void)arg;
	TC_CHECK_RC(baton_io_open(&io, un_socket(), true), BATON_OK);
	TC_CHECK_RC(baton_io_connect(io, (struct sockaddr *)&un_addr, sizeof(un_addr), 0),
		    BATON_EAGAIN);
	t0 = tc_now();
	TC_CHECK_RC(baton_io_connect(io, (struct sockaddr *)&un_addr, sizeof(un_addr), TC_MS(20)),
		    BATON_ETIMEDOUT);
	TC_CHECK(tc_now() - t0 >= TC_MS(20));
	TC_CHECK_RC(baton_sched_spawn(baton_sched_self(), NULL, pi_acceptor, NULL), BATON_OK);
	TC_CHECK_RC(baton_io_connect(io, (struct sockaddr *)&un_addr, sizeof(un_addr), -1),
		    BATON_OK);
	TC_CHECK_RC(baton_io_close(io), BATON_OK);
}

static void test_connect_unix_backlog_full(void **state)
{
	baton_sched_t *s;
	int c;

	(void)state;
	memset(&un_addr, 0, sizeof(un_addr));
	un_addr.sun_family = AF_UNIX;
	/* abstract name: nothing left in the file system */
	snprintf(un_addr.sun_path + 1, sizeof(un_addr.sun_path) - 1, "baton-promise-io-%d",
		 (int)getpid());
	un_lis = un_socket();
	assert_true(un_lis >= 0);
	assert_int_equal(bind(un_lis, (struct sockaddr *)&un_addr, sizeof(un_addr)), 0);
	assert_int_equal(listen(un_lis, 0), 0);
	/* Fill the backlog with plain connects until the kernel says EAGAIN. */
	for (un_nfilled = 0; un_nfilled < 8; un_nfilled++) {
		c = un_socket();
		assert_true(c >= 0);
		un_filled[un_nfilled] = c;
		if (connect(c, (struct sockaddr *)&un_addr, sizeof(un_addr)) != 0) {
			assert_int_equal(errno, EAGAIN);
			break;
		}
	}
	assert_true(un_nfilled < 8);
	un_nfilled++;
	tc_reset();
	tc_watchdog_phase(60, "AF_UNIX connect, backlog full");
	assert_int_equal(baton_sched_create(&s, NULL), BATON_OK);
	assert_int_equal(baton_sched_spawn(s, NULL, pi_connect_full, NULL), BATON_OK);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	TC_VERDICT();
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
	alarm(0);
	for (int i = 0; i < un_nfilled; i++)
		close(un_filled[i]);
	close(un_lis);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_set_backend),
		cmocka_unit_test(test_outside_tasks),
		cmocka_unit_test(test_connect_unix_backlog_full),
	};

	return cmocka_run_group_tests_name("promise_io", tests, NULL, NULL);
}
