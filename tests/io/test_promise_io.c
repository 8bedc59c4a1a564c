/* The claims of baton/io.h a caller relies on, read from the header and
 * checked: io.h owns the backend type and baton_io_set_backend chooses a
 * scheduler's reactor before its workers have one (EINVAL for NULL or an
 * unknown value, EBUSY once a worker has its reactor, nothing changed);
 * the deprecated scheduler attribute still chooses it; baton_io_backend
 * is NULL outside tasks; a call that would wait outside a task says
 * BATON_ENOSCHED. The environment's BATON_IO_BACKEND overrides the choice,
 * so the checks of which reactor runs are made only without it. */
#include "check.h"

#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <baton/io.h>

static char seen[16];

static void pi_open(void *arg)
{
	baton_io_t *a, *b;
	int sv[2];

	(void)arg;
	T_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
	T_CHECK_RC(baton_io_open(&a, sv[0], true), BATON_OK);
	T_CHECK_RC(baton_io_open(&b, sv[1], true), BATON_OK);
	snprintf(seen, sizeof(seen), "%s", baton_io_backend());
	T_CHECK_RC(baton_io_set_backend(baton_sched_self(), BATON_IO_AUTO), BATON_EBUSY);
	T_CHECK_RC(baton_io_close(a), BATON_OK);
	T_CHECK_RC(baton_io_close(b), BATON_OK);
}

static void run_open(baton_sched_t *s)
{
	st_reset();
	st_watchdog(60, "io open");
	seen[0] = 0;
	T_CHECK_RC(baton_sched_spawn(s, NULL, pi_open, NULL), BATON_OK);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	T_VERDICT();
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

/* The deprecated attribute field, kept so that old code compiles, still
 * chooses the reactor. */
static void test_deprecated_attr(void **state)
{
	struct baton_sched_attr a;
	baton_sched_t *s;

	(void)state;
	baton_sched_attr_init(&a);
	a.io_backend = BATON_IO_EPOLL;
	assert_int_equal(baton_sched_create(&s, &a), BATON_OK);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_set_backend),
		cmocka_unit_test(test_deprecated_attr),
		cmocka_unit_test(test_outside_tasks),
	};

	return cmocka_run_group_tests_name("promise_io", tests, NULL, NULL);
}
