/* SPDX-License-Identifier: MIT */
/*
 * baton-httpd's operator endpoints (admin.h): GET /_stats and
 * POST /_limits on a listener of their own, answered on the I/O worker
 * from the public server's snapshot.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"

enum { LIM_HANDLERS, LIM_QUEUE, LIM_INFLIGHT, LIM_CONNS, NLIMITS };

static const char *const limit_names[NLIMITS] = {
	"handler_concurrency",
	"handler_queue",
	"max_inflight",
	"max_connections",
};

static bool is(const char *s, size_t n, const char *lit)
{
	return n == strlen(lit) && memcmp(s, lit, n) == 0;
}

/* The path is `path`, followed by nothing or (if query) by '?'. */
static bool target_is(const struct baton_http_req *req, const char *path, bool query)
{
	size_t n = strlen(path);

	return req->target_len >= n && memcmp(req->target, path, n) == 0 &&
		(req->target_len == n || (query && req->target[n] == '?'));
}

/* A positive decimal of at most 9 digits in [p, end). */
static long parse_positive(const char *p, const char *end)
{
	long v = 0;

	if (p == end || end - p > 9)
		return -1;
	for (; p < end; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		v = v * 10 + (*p - '0');
	}
	return v > 0 ? v : -1;
}

/* NAME_concurrency or NAME_queue for a stage of the snapshot: stage_v[i][0]
 * its concurrency, [1] its queue. */
static bool parse_stage_limit(const struct baton_http_server_stats *st, const char *q,
			      const char *eq, long stage_v[][2], long v)
{
	static const char *const what[2] = { "_concurrency", "_queue" };

	for (int k = 0; k < 2; k++) {
		size_t wl = strlen(what[k]), n = (size_t)(eq - q);

		if (n <= wl || memcmp(eq - wl, what[k], wl) != 0)
			continue;
		for (int i = 0; i < BATON_HTTP_NSTAGES; i++)
			if (is(q, n - wl, st->stages[i].name)) {
				stage_v[i][k] = v;
				return true;
			}
	}
	return false;
}

/* Parse "a=1&b=2" into v[] and stage_v[] (0: not given); false on
 * anything else. */
static bool parse_limits(const struct baton_http_server_stats *st, const char *q, const char *end,
			 long v[NLIMITS], long stage_v[][2])
{
	while (q < end) {
		const char *amp = memchr(q, '&', (size_t)(end - q));
		const char *stop = amp ? amp : end;
		const char *eq = memchr(q, '=', (size_t)(stop - q));
		long value;
		int k;

		if (eq == NULL || (value = parse_positive(eq + 1, stop)) < 0)
			return false;
		for (k = 0; k < NLIMITS; k++)
			if (is(q, (size_t)(eq - q), limit_names[k]))
				break;
		if (k < NLIMITS)
			v[k] = value;
		else if (!parse_stage_limit(st, q, eq, stage_v, value))
			return false;
		q = amp ? amp + 1 : end;
	}
	return true;
}

static int answer_stats(baton_http_server_t *srv, struct baton_http_resp *resp)
{
	struct baton_http_server_stats st;
	size_t len;

	if (baton_http_server_snapshot(srv, &st) != BATON_OK ||
	    httpd_stats_json(st.stages, BATON_HTTP_NSTAGES, st.pools, BATON_HTTP_NPOOLS,
			     resp->scratch, resp->scratch_cap, &len) != BATON_OK)
		return BATON_ENOMEM;
	resp->status = 200;
	resp->content_type = "application/json";
	resp->body = resp->scratch;
	resp->body_len = len;
	return BATON_OK;
}

static int refuse(struct baton_http_resp *resp)
{
	resp->status = 400;
	resp->content_type = "text/plain";
	resp->body = "bad limit\n";
	resp->body_len = 10;
	return BATON_OK;
}

static int change_limits(baton_http_server_t *srv, const struct baton_http_req *req,
			 struct baton_http_resp *resp)
{
	struct baton_http_server_stats st;
	long v[NLIMITS] = { 0 };
	long stage_v[BATON_HTTP_NSTAGES][2] = { { 0 } };
	const char *q = req->target + strlen("/_limits");
	const char *end = req->target + req->target_len;

	if (q < end)
		q++; /* the '?' */
	if (baton_http_server_snapshot(srv, &st) != BATON_OK)
		return BATON_ENOMEM;
	if (!parse_limits(&st, q, end, v, stage_v))
		return refuse(resp);
	for (int i = 0; i < BATON_HTTP_NSTAGES; i++)
		if ((stage_v[i][0] || stage_v[i][1]) &&
		    baton_http_server_set_stage(srv, st.stages[i].name, (unsigned)stage_v[i][0],
						(size_t)stage_v[i][1]) != BATON_OK)
			return refuse(resp);
	if ((v[LIM_QUEUE] &&
	     baton_http_server_set_handler_queue(srv, (size_t)v[LIM_QUEUE]) != BATON_OK) ||
	    baton_http_server_set_limits(srv, v[LIM_HANDLERS], v[LIM_INFLIGHT], v[LIM_CONNS]) !=
		    BATON_OK)
		return refuse(resp);
	return answer_stats(srv, resp);
}

static int answer(struct baton_http_resp *resp, int status, const char *text)
{
	resp->status = status;
	resp->content_type = "text/plain";
	resp->body = text;
	resp->body_len = strlen(text);
	return BATON_OK;
}

static int not_allowed(struct baton_http_resp *resp, const char *allow)
{
	resp->extra_names[0] = "Allow";
	resp->extra_values[0] = allow;
	resp->nextra = 1;
	return answer(resp, 405, "405 Method Not Allowed\n");
}

static bool reserved(const struct baton_http_req *req)
{
	return target_is(req, "/_stats", true) || target_is(req, "/_limits", true);
}

int httpd_admin(void *ctx, const struct baton_http_req *req, struct baton_http_resp *resp)
{
	baton_http_server_t *srv = *(baton_http_server_t **)ctx;
	bool get = is(req->method, req->method_len, "GET") ||
		is(req->method, req->method_len, "HEAD");

	if (target_is(req, "/_stats", false))
		return get ? answer_stats(srv, resp) : not_allowed(resp, "GET, HEAD");
	if (target_is(req, "/_limits", true))
		return is(req->method, req->method_len, "POST") ? change_limits(srv, req, resp)
								: not_allowed(resp, "POST");
	return answer(resp, 404, "404 Not Found\n"); /* nothing else here */
}

int httpd_admin_public(void *ctx, const struct baton_http_req *req, struct baton_http_resp *resp)
{
	(void)ctx;
	if (req->target_len < 2 || req->target[1] != '_' || !reserved(req))
		return BATON_OK; /* not ours: status stays 0 */
	return answer(resp, 404, "404 Not Found\n");
}

/* Never called (httpd_admin answers every request first); the server
 * wants a handler. */
static int admin_handler(void *ctx, const struct baton_http_req *req, struct baton_http_resp *resp)
{
	(void)ctx;
	(void)req;
	return answer(resp, 404, "404 Not Found\n");
}

int httpd_admin_start(const char *spec, baton_sched_t *s, const struct baton_http_server_attr *pub,
		      baton_http_server_t **pub_srv, baton_http_server_t **out)
{
	struct baton_http_server_attr a;
	const char *colon = strrchr(spec, ':');
	char host[64] = "127.0.0.1", *end;
	long port;
	int rc;

	baton_http_server_attr_init(&a);
	errno = 0;
	port = strtol(colon ? colon + 1 : spec, &end, 10);
	if (errno || *end || end == (colon ? colon + 1 : spec) || port < 0 || port > 65535 ||
	    (colon && ((size_t)(colon - spec) >= sizeof(host) || colon == spec))) {
		fprintf(stderr,
			"baton-httpd: --admin wants [ADDR:]PORT (ADDR 127.0.0.1 if left "
			"out), not '%s'\n",
			spec);
		return -1;
	}
	if (colon) {
		memcpy(host, spec, (size_t)(colon - spec));
		host[colon - spec] = '\0';
	}
	a.host = host;
	a.port = (unsigned short)port;
	a.handler = admin_handler;
	a.io_handler = httpd_admin;
	a.io_ctx = pub_srv;
	/* Bound to the I/O workers as the public connections are, so that a
	 * compute worker's long handler never holds up an operator. */
	a.compute_workers = pub->compute_workers;
	a.coro = pub->coro;
	a.max_connections = 64;
	a.max_inflight = 64;
	a.handler_concurrency = 1;
	a.handler_queue = 1;
	a.max_body = 4096;
	rc = baton_http_server_create(out, s, &a);
	if (rc != BATON_OK) {
		fprintf(stderr, "baton-httpd: cannot start the admin listener on %s:%ld: %s%s%s\n",
			host, port, baton_strerror(rc), rc == BATON_ESYS ? ": " : "",
			rc == BATON_ESYS ? strerror(errno) : "");
		return -1;
	}
	fprintf(stderr, "baton-httpd: admin (/_stats, /_limits) on %s:%d\n", host,
		baton_http_server_port(*out));
	return 0;
}
