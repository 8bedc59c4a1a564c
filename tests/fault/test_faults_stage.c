/* SPDX-License-Identifier: MIT */
/*
 * The allocation-failure mode (src/common/fault.h, docs/testing.md) on
 * stages, gates, pools and the HTTP server: every allocation of each scenario is
 * failed in turn, then every N-th (fault_test.h). Stage calls succeed or
 * return BATON_ENOMEM and every accepted item is handled; the server,
 * with a client task of the same scheduler, answers each request
 * correctly or with a 5xx, or closes the connection; everything is freed.
 */
#define _GNU_SOURCE /* memmem */
#include "fault_test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <baton/http.h>
#include <baton/io.h>
#include <baton/sched.h>
#include <baton/stage.h>

#define SEC 1000000000LL
#define FOREVER (-1)

/* --- stages and pools ------------------------------------------------------ */

struct line {
	const struct baton_coro_attr *model;
	baton_sched_t *s;
	baton_pool_t *pool;
	baton_stage_t *work;
	baton_gate_t *pass;
	long accepted, handled, passed;
};

static void handler(void *item, void *ctx)
{
	struct line *l = ctx;

	(void)item;
	/* Relaxed: read after the run returned. */
	__atomic_add_fetch(&l->handled, 1, __ATOMIC_RELAXED);
}

static void passer(void *arg)
{
	struct line *l = arg;
	struct baton_gate_pass p = BATON_GATE_PASS_INIT;
	int rc = RETRY(baton_gate_enter(l->pass, &p, SEC));

	if (rc != BATON_OK)
		return;
	ALLOWED(baton_sched_sleep(100000)); /* others queue behind us */
	TC_CHECK(baton_gate_leave(&p, NULL) == BATON_OK);
	/* Relaxed: read after the run returned. */
	__atomic_add_fetch(&l->passed, 1, __ATOMIC_RELAXED);
}

static void producer(void *arg)
{
	struct line *l = arg;
	struct baton_task_attr ta = BATON_TASK_ATTR_INIT;
	int rc;

	ta.coro = *l->model;
	for (int i = 0; i < 3; i++)
		ALLOWED(baton_sched_spawn(l->s, &ta, passer, l));
	for (int i = 0; i < 8; i++)
		/* Timed: a full queue makes us wait, which needs a timer. */
		if (RETRY(baton_stage_submit(l->work, l, SEC)) == BATON_OK)
			l->accepted++;
	TC_CHECK(baton_stage_close(l->work) == BATON_OK);
	rc = RETRY(baton_stage_drain(l->work, SEC));
	if (rc != BATON_OK) /* no timer: wait without one */
		rc = RETRY(baton_stage_drain(l->work, FOREVER));
	TC_CHECK(rc == BATON_OK || rc == BATON_ENOMEM);
}

static void scenario_stage(const struct baton_coro_attr *a, unsigned param)
{
	struct baton_sched_attr sa = BATON_SCHED_ATTR_INIT;
	struct baton_stage_attr wa = BATON_STAGE_ATTR_INIT;
	struct baton_gate_attr pa = BATON_GATE_ATTR_INIT;
	struct baton_task_attr ta = BATON_TASK_ATTR_INIT;
	struct line l = { .model = a };
	struct baton_stage_need need;

	(void)param;
	if (ALLOWED(baton_sched_create(&l.s, &sa)) != BATON_OK)
		return;
	if (ALLOWED(baton_pool_create(&l.pool, "units", 1)) != BATON_OK)
		goto out;
	need = (struct baton_stage_need){ l.pool, 1, 0 };
	wa.name = "work";
	wa.fn = handler;
	wa.ctx = &l;
	wa.queue_capacity = 2;
	wa.concurrency = 2;
	wa.needs = &need;
	wa.nneeds = 1;
	wa.task.coro = *a;
	pa.name = "pass";
	pa.queue_capacity = 2;
	pa.concurrency = 1;
	if (ALLOWED(baton_stage_create(&l.work, l.s, &wa)) != BATON_OK)
		goto out;
	if (ALLOWED(baton_gate_create(&l.pass, &pa)) != BATON_OK)
		goto out;
	ta.coro = *a;
	if (ALLOWED(baton_sched_spawn(l.s, &ta, producer, &l)) == BATON_OK)
		TC_CHECK(baton_sched_run(l.s) == BATON_OK);
	/* Every item accepted was handled (a drain that kept failing left
	 * the rest to the run, which ends only once the stage is idle). */
	TC_CHECK(l.handled == l.accepted);
out:
	/* After the run every stage is idle: destroy cannot refuse. */
	TC_CHECK(baton_gate_destroy(l.pass) == BATON_OK);
	TC_CHECK(baton_stage_destroy(l.work) == BATON_OK);
	TC_CHECK(baton_pool_destroy(l.pool) == BATON_OK);
	TC_CHECK(baton_sched_destroy(l.s) == BATON_OK);
}

static void test_stage(void **state)
{
	tc_watchdog_phase(300, "stages");
	fault_sweep("stages and pools", scenario_stage, TC_ATTR(state), 0);
}

/* --- the HTTP server ------------------------------------------------------- */

/* Answers with the length of the body it got. */
static int length(void *ctx, const struct baton_http_req *req, struct baton_http_resp *resp)
{
	(void)ctx;
	resp->body = resp->scratch;
	resp->body_len = (size_t)snprintf(resp->scratch, resp->scratch_cap, "%zu\n", req->body_len);
	return BATON_OK;
}

struct site {
	baton_http_server_t *srv;
	struct sockaddr_in addr;
};

/* The client's I/O may also meet the server's failures: a refused or
 * reset connection is a system error. */
static int net_allowed(int rc, const char *what, const char *file, int line)
{
	return rc == BATON_ESYS ? rc : ft_allowed(rc, what, file, line);
}
#define NET(expr) net_allowed((expr), #expr, __FILE__, __LINE__)

/* Every response in buf[0, len) is a 200 whose body is `body`, or a 5xx
 * (after which the server closes); a response may be missing (closed). */
static void check_responses(const char *buf, size_t len, const char *body)
{
	static const char ok[] = "HTTP/1.1 200 ";
	const char *p = buf, *end = buf + len;
	size_t n = strlen(body);

	while (p < end) {
		const char *b = memmem(p, (size_t)(end - p), "\r\n\r\n", 4);

		if ((size_t)(end - p) >= sizeof(ok) - 1 && memcmp(p, ok, sizeof(ok) - 1) == 0) {
			TC_CHECK(b != NULL && (size_t)(end - b) >= 4 + n &&
				 memcmp(b + 4, body, n) == 0);
			if (b == NULL)
				return;
			p = b + 4 + n;
			continue;
		}
		TC_CHECK(end - p >= 10 && memcmp(p, "HTTP/1.1 5", 10) == 0);
		return;
	}
}

/* One connection: send `req`, read until the server closes, check that
 * each response says `body`. */
static void exchange(struct site *w, const char *req, size_t req_len, const char *body)
{
	char buf[1024];
	size_t len = 0, got;
	baton_io_t *io;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), rc;

	TC_CHECK(fd >= 0);
	if (ALLOWED(baton_io_open(&io, fd, true)) != BATON_OK) {
		close(fd);
		return;
	}
	rc = NET(baton_io_connect(io, (struct sockaddr *)&w->addr, sizeof(w->addr), SEC));
	if (rc == BATON_ENOMEM) /* no timer */
		rc = NET(baton_io_connect(io, (struct sockaddr *)&w->addr, sizeof(w->addr),
					  FOREVER));
	if (rc == BATON_OK)
		rc = NET(baton_io_write(io, req, req_len, SEC, NULL));
	while (rc == BATON_OK && len < sizeof(buf)) {
		rc = NET(baton_io_read(io, buf + len, sizeof(buf) - len, 5 * SEC, &got));
		if (rc == BATON_ENOMEM)
			rc = NET(baton_io_read(io, buf + len, sizeof(buf) - len, FOREVER, &got));
		if (rc != BATON_OK || got == 0)
			break;
		len += got;
	}
	check_responses(buf, len, body);
	TC_CHECK(baton_io_close(io) == BATON_OK);
}

#define BIG 20000 /* past a connection's first buffer: it must grow */

static void client(void *arg)
{
	static const char pipelined[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n"
					"GET /b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	static char req[BIG + 256];
	struct site *w = arg;
	int n, fd;

	exchange(w, pipelined, sizeof(pipelined) - 1, "0\n");
	/* A head longer than the first buffer. */
	n = snprintf(req, sizeof(req),
		     "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
		     "X-Long: %0*d\r\n\r\n",
		     10000, 0);
	exchange(w, req, (size_t)n, "0\n");
	/* A body longer than it, by length and chunked. */
	n = snprintf(req, sizeof(req),
		     "POST / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
		     "Content-Length: %d\r\n\r\n%0*d",
		     BIG, BIG, 0);
	exchange(w, req, (size_t)n, "20000\n");
	n = snprintf(req, sizeof(req),
		     "POST / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
		     "Transfer-Encoding: chunked\r\n\r\n%x\r\n%0*d\r\n0\r\n\r\n",
		     BIG / 2, BIG / 2, 0);
	exchange(w, req, (size_t)n, "10000\n");

	TC_CHECK(baton_http_server_shutdown(w->srv) == BATON_OK);
	/* The acceptor looks at the shutdown between accepts: give it one. */
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		(void)!connect(fd, (struct sockaddr *)&w->addr, sizeof(w->addr));
		close(fd);
	}
}

/* The server on one worker, or with `compute` compute workers more. */
static void scenario_server(const struct baton_coro_attr *a, unsigned compute)
{
	struct baton_sched_attr sa = BATON_SCHED_ATTR_INIT;
	struct baton_http_server_attr ha = BATON_HTTP_SERVER_ATTR_INIT;
	struct baton_task_attr ta = BATON_TASK_ATTR_INIT;
	struct site w = { .addr = { .sin_family = AF_INET } };
	baton_sched_t *s;

	sa.workers = 1 + compute;
	if (ALLOWED(baton_sched_create(&s, &sa)) != BATON_OK)
		return;
	ha.host = "127.0.0.1";
	ha.port = 0;
	ha.handler = length;
	ha.coro = *a;
	ha.linger_ns = 0;
	ha.compute_workers = compute;
	if (ALLOWED(baton_http_server_create(&w.srv, s, &ha)) != BATON_OK) {
		TC_CHECK(baton_sched_destroy(s) == BATON_OK);
		return;
	}
	w.addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	w.addr.sin_port = htons((unsigned short)baton_http_server_port(w.srv));
	ta.coro = *a;
	ta.worker = 0;
	if (ALLOWED(baton_sched_spawn(s, &ta, client, &w)) != BATON_OK) {
		/* No client: shut down before the run, as a program may. */
		TC_CHECK(baton_http_server_shutdown(w.srv) == BATON_OK);
	}
	TC_CHECK(baton_sched_run(s) == BATON_OK);
	TC_CHECK(baton_http_server_destroy(w.srv) == BATON_OK);
	TC_CHECK(baton_sched_destroy(s) == BATON_OK);
}

static void test_server(void **state)
{
	tc_watchdog_phase(300, "server");
	fault_sweep("server", scenario_server, TC_ATTR(state), 0);
	fault_sweep("server with a compute worker", scenario_server, TC_ATTR(state), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		TC_MODEL_TESTS(test_stage),
		TC_MODEL_TESTS(test_server),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
