/* SPDX-License-Identifier: MIT */
/*
 * tests/test_http_server.c - the server's public calls (baton/http.h) on
 * their own, without clients (tests/http/ runs the server for real): every
 * invalid attribute is refused with BATON_EINVAL, compute workers need a
 * worker left for I/O, the handler-queue setter works only with them and
 * within the capacity, the stats writer reports the length it needs, a
 * server shut down before its scheduler runs ends cleanly, and one shut
 * down while it runs lets the run return at once, not a sweeper tick later.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#include <baton/http.h>
#include <baton/sched.h>

static int hello(void *ctx, const struct baton_http_req *req, struct baton_http_resp *resp)
{
	(void)ctx;
	(void)req;
	resp->body = "hi\n";
	resp->body_len = 3;
	return BATON_OK;
}

static baton_sched_t *make_sched(unsigned workers)
{
	struct baton_sched_attr a = BATON_SCHED_ATTR_INIT;
	baton_sched_t *s;

	a.workers = workers;
	assert_int_equal(baton_sched_create(&s, &a), BATON_OK);
	return s;
}

static struct baton_http_server_attr good_attr(void)
{
	struct baton_http_server_attr a, b = BATON_HTTP_SERVER_ATTR_INIT;

	/* The function gives what the macro gives. */
	assert_int_equal(baton_http_server_attr_init(NULL), BATON_EINVAL);
	assert_int_equal(baton_http_server_attr_init(&a), BATON_OK);
	assert_int_equal(a.port, b.port);
	assert_int_equal(a.max_body, b.max_body);
	assert_int_equal(a.max_connections, b.max_connections);
	assert_int_equal(a.linger_ns, b.linger_ns);
	assert_int_equal(a.queue_timeout_ns, b.queue_timeout_ns);
	assert_int_equal(a.coro.stack_size, b.coro.stack_size);
	assert_null(a.handler);
	assert_int_equal(a.port, 8080);
	assert_int_equal(a.handler_queue, 1024);

	a.host = "127.0.0.1";
	a.port = 0;
	a.handler = hello;
	return a;
}

/* Shut down, let the acceptor notice, free. */
static void finish(baton_http_server_t *srv, baton_sched_t *s)
{
	assert_int_equal(baton_http_server_shutdown(srv), BATON_OK);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	assert_int_equal(baton_http_server_destroy(srv), BATON_OK);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

static void test_invalid_attributes(void **state)
{
	baton_sched_t *s = make_sched(2);
	baton_http_server_t *srv = NULL;
	struct baton_http_server_attr a;

	(void)state;
	tc_watchdog(30);
	a = good_attr();
	assert_int_equal(baton_http_server_create(NULL, s, &a), BATON_EINVAL);
	assert_int_equal(baton_http_server_create(&srv, NULL, &a), BATON_EINVAL);
	assert_int_equal(baton_http_server_create(&srv, s, NULL), BATON_EINVAL);
	a.handler = NULL;
	assert_int_equal(baton_http_server_create(&srv, s, &a), BATON_EINVAL);
	a = good_attr();
	a.compute_workers = 2; /* nothing left for I/O */
	assert_int_equal(baton_http_server_create(&srv, s, &a), BATON_EINVAL);
	a = good_attr();
	a.handler_queue = 0;
	assert_int_equal(baton_http_server_create(&srv, s, &a), BATON_EINVAL);
	a = good_attr();
	a.queue_timeout_ns = -1;
	assert_int_equal(baton_http_server_create(&srv, s, &a), BATON_EINVAL);
	a = good_attr();
	a.linger_ns = -1;
	assert_int_equal(baton_http_server_create(&srv, s, &a), BATON_EINVAL);
	a = good_attr();
	a.max_inflight = 0;
	assert_int_equal(baton_http_server_create(&srv, s, &a), BATON_EINVAL);
	assert_null(srv);
	assert_int_equal(baton_http_server_port(NULL), BATON_EINVAL);
	assert_int_equal(baton_http_server_shutdown(NULL), BATON_EINVAL);
	assert_int_equal(baton_http_server_set_handler_queue(NULL, 1), BATON_EINVAL);
	assert_int_equal(baton_http_server_destroy(NULL), BATON_OK);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

static void test_handler_queue_and_stages(void **state)
{
	baton_sched_t *s = make_sched(2);
	baton_http_server_t *srv;
	struct baton_http_server_attr a = good_attr();

	(void)state;
	tc_watchdog(30);
	a.handler_queue = 16;
	assert_int_equal(baton_http_server_create(&srv, s, &a), BATON_OK);
	assert_true(baton_http_server_port(srv) > 0);
	/* The handle stage exists without compute workers too. */
	assert_int_equal(baton_http_server_set_handler_queue(srv, 8), BATON_OK);
	assert_int_equal(baton_http_server_set_handler_queue(srv, 17), BATON_EINVAL);
	/* Each step's stage, within its bounds. */
	assert_int_equal(baton_http_server_set_stage(srv, "read", 10, 5), BATON_OK);
	assert_int_equal(baton_http_server_set_stage(srv, "write", 0, 0), BATON_OK);
	assert_int_equal(baton_http_server_set_stage(srv, "handle", 3, 16), BATON_OK);
	assert_int_equal(baton_http_server_set_stage(srv, "accept", 1, 1), BATON_OK);
	assert_int_equal(baton_http_server_set_stage(srv, "accept", 2, 0), BATON_EINVAL);
	assert_int_equal(baton_http_server_set_stage(srv, "accept", 0, 2), BATON_EINVAL);
	assert_int_equal(baton_http_server_set_stage(srv, "read", 0, (size_t)a.max_connections + 1),
			 BATON_EINVAL);
	assert_int_equal(baton_http_server_set_stage(srv, "read", BATON_HTTP_STAGE_MAX + 1, 0),
			 BATON_EINVAL);
	assert_int_equal(baton_http_server_set_stage(srv, "parse", 1, 1), BATON_EINVAL);
	assert_int_equal(baton_http_server_set_stage(srv, NULL, 1, 1), BATON_EINVAL);
	assert_int_equal(baton_http_server_set_stage(NULL, "read", 1, 1), BATON_EINVAL);
	finish(srv, s);

	s = make_sched(2);
	a = good_attr();
	a.compute_workers = 1;
	a.handler_queue = 16;
	assert_int_equal(baton_http_server_create(&srv, s, &a), BATON_OK);
	assert_int_equal(baton_http_server_set_handler_queue(srv, 8), BATON_OK);
	assert_int_equal(baton_http_server_set_handler_queue(srv, 16), BATON_OK);
	assert_int_equal(baton_http_server_set_handler_queue(srv, 17), BATON_EINVAL);
	assert_int_equal(baton_http_server_set_handler_queue(srv, 0), BATON_EINVAL);
	assert_int_equal(baton_http_server_set_limits(srv, 4, 0, 0), BATON_OK);
	finish(srv, s);
}

static void test_snapshot(void **state)
{
	baton_sched_t *s = make_sched(2);
	baton_http_server_t *srv;
	struct baton_http_server_attr a = good_attr();
	struct baton_http_server_stats st;
	static const char *const names[] = { "accept", "read", "handle", "write" };

	(void)state;
	tc_watchdog(30);
	a.compute_workers = 1;
	a.max_inflight = 77;
	assert_int_equal(baton_http_server_create(&srv, s, &a), BATON_OK);
	assert_int_equal(baton_http_server_snapshot(srv, &st), BATON_OK);
	/* The steps in request order, then the pools. */
	for (int i = 0; i < BATON_HTTP_NSTAGES; i++) {
		assert_string_equal(st.stages[i].name, names[i]);
		assert_int_equal(st.stages[i].submitted, 0);
	}
	assert_int_equal(st.stages[0].concurrency, 1); /* one acceptor */
	assert_int_equal(st.stages[2].queue_limit, a.handler_queue);
	assert_string_equal(st.pools[0].name, "connections");
	assert_string_equal(st.pools[1].name, "in-flight");
	assert_int_equal(st.pools[1].capacity, 77);
	assert_int_equal(baton_http_server_set_stage(srv, "write", 9, 0), BATON_OK);
	assert_int_equal(baton_http_server_snapshot(srv, &st), BATON_OK);
	assert_int_equal(st.stages[3].concurrency, 9);
	assert_int_equal(baton_http_server_snapshot(srv, NULL), BATON_EINVAL);
	assert_int_equal(baton_http_server_snapshot(NULL, &st), BATON_EINVAL);
	finish(srv, s);
}

/* Replacing the handler (rule 9): a replaced context with a release
 * function is released once (here at once: no call runs), the one in place
 * at destroy too, and a context without one (attr.release NULL) never. */
static int released[3];

static void release_ctx(void *ctx)
{
	released[(intptr_t)ctx]++;
}

static void test_set_handler(void **state)
{
	baton_sched_t *s = make_sched(1);
	baton_http_server_t *srv;
	struct baton_http_server_attr a = good_attr();

	(void)state;
	tc_watchdog(30);
	memset(released, 0, sizeof(released));
	a.ctx = (void *)0; /* attr.release NULL: stays ours */
	assert_int_equal(baton_http_server_create(&srv, s, &a), BATON_OK);
	assert_int_equal(baton_http_server_set_handler(NULL, hello, NULL, NULL, -1), BATON_EINVAL);
	assert_int_equal(baton_http_server_set_handler(srv, NULL, NULL, NULL, -1), BATON_EINVAL);
	/* From this plain thread, nothing running: each replaced one is
	 * released before the call returns. */
	assert_int_equal(baton_http_server_set_handler(srv, hello, (void *)1, release_ctx, -1),
			 BATON_OK);
	assert_int_equal(released[0], 0);
	assert_int_equal(baton_http_server_set_handler(srv, hello, (void *)2, release_ctx, 0),
			 BATON_OK);
	assert_int_equal(released[1], 1);
	assert_int_equal(released[2], 0);
	finish(srv, s); /* the one in place: released by destroy */
	assert_int_equal(released[2], 1);
	assert_int_equal(released[0], 0);
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* A task of the server's scheduler: shut the server down once it runs
 * (its sweeper is then in a wait of a whole tick: a tenth of the default
 * 60 s idle timeout, capped at 1 s), and connect once so that the
 * acceptor looks at the shutdown. */
static void shut_soon(void *arg)
{
	baton_http_server_t *srv = arg;
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int fd;

	assert_int_equal(baton_sched_sleep(50000000), BATON_OK);
	assert_int_equal(baton_http_server_shutdown(srv), BATON_OK);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = htons((unsigned short)baton_http_server_port(srv));
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	(void)!connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	close(fd);
}

static void test_shutdown_ends_the_run_promptly(void **state)
{
	baton_sched_t *s = make_sched(1);
	baton_http_server_t *srv;
	struct baton_http_server_attr a = good_attr();
	int64_t t0, took;

	(void)state;
	tc_watchdog(30);
	assert_int_equal(baton_http_server_create(&srv, s, &a), BATON_OK);
	assert_int_equal(baton_sched_spawn(s, NULL, shut_soon, srv), BATON_OK);
	t0 = now_ns();
	assert_int_equal(baton_sched_run(s), BATON_OK);
	took = now_ns() - t0;
	/* 50 ms until the shutdown, then the sweeper's 10 ms look: well under
	 * the second a sweeper asleep for its whole tick would add. */
	if (took >= 600000000)
		fail_msg("the run returned %lld ms after it began (shutdown at 50 ms)",
			 (long long)(took / 1000000));
	assert_int_equal(baton_http_server_destroy(srv), BATON_OK);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_invalid_attributes),
		cmocka_unit_test(test_handler_queue_and_stages),
		cmocka_unit_test(test_snapshot),
		cmocka_unit_test(test_set_handler),
		cmocka_unit_test(test_shutdown_ends_the_run_promptly),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
