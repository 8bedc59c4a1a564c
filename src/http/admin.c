/*
 * The operator's endpoints, served before the handler when attr.stats is
 * on: GET /_stats (the steps, stages and pools as JSON) and
 * POST /_limits?name=value&... (change limits while serving, then answer
 * the new snapshot). Names: handler_concurrency, handler_queue,
 * max_inflight, max_connections, and STAGE_concurrency, STAGE_queue for
 * each stage (accept, read, handle, write); values are positive integers.
 * A bad name or value is a 400 and changes nothing (names and values are
 * all checked before the first change; a value a stage refuses, such as a
 * queue above its size, stops at that name).
 */
#include <stdlib.h>
#include <string.h>

#include "server_internal.h"

enum { LIM_HANDLERS, LIM_QUEUE, LIM_INFLIGHT, LIM_CONNS, NLIMITS };

static const char *const limit_names[NLIMITS] = {
	"handler_concurrency", "handler_queue", "max_inflight", "max_connections",
};

static bool target_is(const struct baton_http_request *req, const char *path, size_t n,
		      bool query)
{
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

/* A stage's own limits: stage_v[i][0] its concurrency, [1] its queue. */
static bool parse_stage_limit(const char *q, const char *eq, long stage_v[][2], long v)
{
	static const char *const what[2] = { "_concurrency", "_queue" };

	for (int k = 0; k < 2; k++) {
		size_t wl = strlen(what[k]), n = (size_t)(eq - q);
		int i;

		if (n > wl && memcmp(eq - wl, what[k], wl) == 0 &&
		    (i = baton__http_server_stage_index(q, n - wl)) >= 0) {
			stage_v[i][k] = v;
			return true;
		}
	}
	return false;
}

/* Parse "a=1&b=2" into v[] and stage_v[] (0: not given); false on
 * anything else. */
static bool parse_limits(const char *q, const char *end, long v[NLIMITS], long stage_v[][2])
{
	while (q < end) {
		const char *amp = memchr(q, '&', (size_t)(end - q));
		const char *stop = amp ? amp : end;
		const char *eq = memchr(q, '=', (size_t)(stop - q));
		int k;

		if (eq == NULL)
			return false;
		for (k = 0; k < NLIMITS; k++)
			if ((size_t)(eq - q) == strlen(limit_names[k]) &&
			    memcmp(q, limit_names[k], (size_t)(eq - q)) == 0)
				break;
		if (k < NLIMITS) {
			if ((v[k] = parse_positive(eq + 1, stop)) < 0)
				return false;
		} else if (!parse_stage_limit(q, eq, stage_v, parse_positive(eq + 1, stop)) ||
			   parse_positive(eq + 1, stop) < 0) {
			return false;
		}
		q = amp ? amp + 1 : end;
	}
	return true;
}

static int answer_stats(struct baton_http_server *srv, struct baton_http_resp *resp)
{
	size_t len;

	if (baton_http_server_stats_json(srv, resp->scratch, resp->scratch_cap, &len) != BATON_OK)
		return BATON_ENOMEM;
	resp->status = 200;
	resp->content_type = "application/json";
	resp->body = resp->scratch;
	resp->body_len = len;
	return BATON_OK;
}

int baton__http_admin(struct baton_http_server *srv, const struct baton_http_request *req,
		     struct baton_http_resp *resp)
{
	long v[NLIMITS] = { 0 };
	long stage_v[HTTP_NSTAGES][2] = { { 0 } };
	const char *q;

	if (target_is(req, "/_stats", 7, false)) {
		if (req->method_id != BATON_HTTP_GET && req->method_id != BATON_HTTP_HEAD)
			return 0; /* the handler may answer other methods */
		return answer_stats(srv, resp) == BATON_OK ? 1 : BATON_ENOMEM;
	}
	if (!target_is(req, "/_limits", 8, true) || req->method_id != BATON_HTTP_POST)
		return 0;
	q = req->target + 8;
	if (q < req->target + req->target_len)
		q++; /* the '?' */
	if (!parse_limits(q, req->target + req->target_len, v, stage_v))
		return -400;
	for (int i = 0; i < HTTP_NSTAGES; i++)
		if ((stage_v[i][0] || stage_v[i][1]) &&
		    baton_http_server_set_stage(srv, baton__http_stage_name(i),
						(unsigned)stage_v[i][0],
						(size_t)stage_v[i][1]) != BATON_OK)
			return -400;
	if ((v[LIM_QUEUE] && baton_http_server_set_handler_queue(srv, (size_t)v[LIM_QUEUE]) !=
				     BATON_OK) ||
	    baton_http_server_set_limits(srv, v[LIM_HANDLERS], v[LIM_INFLIGHT], v[LIM_CONNS]) !=
		    BATON_OK)
		return -400;
	return answer_stats(srv, resp) == BATON_OK ? 1 : BATON_ENOMEM;
}
