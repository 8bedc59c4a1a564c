/* SPDX-License-Identifier: MIT */
/* The built-in handler: "Hello, World!\n" for every request. */
#include <string.h>
#include <time.h>

#include <baton/sched.h>

#include "handlers.h"

int httpd_hello(void *ctx, const struct baton_http_req *req, struct baton_http_resp *resp)
{
	static const char body[] = "Hello, World!\n";

	(void)ctx;
	(void)req;
	resp->status = 200;
	resp->content_type = "text/plain";
	resp->body = body;
	resp->body_len = sizeof(body) - 1;
	return BATON_OK;
}

/*
 * The debug handler (--handler debug): hello, except for the routes the
 * tests of --handler-timeout need, handlers that do not answer in time:
 *   /spin          computes for ever, never looking at the clock;
 *   /spin-check    computes until its deadline passes (baton_http_req_expired);
 *   /spin-cancel   computes until its task is cancelled, yielding every
 *                  millisecond so that the worker's other tasks run;
 *   /block         sleeps an hour, or until cancelled;
 *   /stream-block  streams one piece, then sleeps as /block; then one more
 *                  piece, which must fail.
 * Not for production: /spin holds a worker for good.
 */
static int route(const struct baton_http_req *req, const char *path)
{
	return req->path_len == strlen(path) && memcmp(req->path, path, req->path_len) == 0;
}

static volatile unsigned long debug_sink;

int httpd_debug(void *ctx, const struct baton_http_req *req, struct baton_http_resp *resp)
{
	int64_t step_end = 0;
	int rc;

	if (route(req, "/spin"))
		for (;;)
			debug_sink++;
	if (route(req, "/spin-check")) {
		while (baton_http_req_expired(req) == 0)
			debug_sink++;
		return BATON_ETIMEDOUT;
	}
	if (route(req, "/spin-cancel")) {
		while (baton_task_cancelled() == 0) {
			struct timespec ts;

			clock_gettime(CLOCK_MONOTONIC, &ts);
			if ((int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec >= step_end) {
				baton_sched_yield();
				clock_gettime(CLOCK_MONOTONIC, &ts);
				step_end = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + 1000000;
			}
			debug_sink++;
		}
		return BATON_ECANCELED;
	}
	if (route(req, "/block"))
		return baton_sched_sleep(3600000000000LL);
	if (route(req, "/stream-block")) {
		resp->content_type = "text/plain";
		if ((rc = baton_http_resp_write(resp, "first\n", 6)) != BATON_OK)
			return rc;
		rc = baton_sched_sleep(3600000000000LL);
		if (baton_http_resp_write(resp, "late\n", 5) == BATON_OK)
			return BATON_EINVAL; /* a piece after the deadline must not go out */
		return rc;
	}
	return httpd_hello(ctx, req, resp);
}
