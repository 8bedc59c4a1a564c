/* SPDX-License-Identifier: MIT */
/*
 * apps/httpd/admin.h - baton-httpd's operator endpoints, on a listener of
 * their own (--admin [ADDR:]PORT, ADDR 127.0.0.1 by default), apart from
 * the public port, whose clients can neither read nor change the limits
 * (it answers 404 on these paths). The admin listener is a second server
 * on the same scheduler, its connections on the I/O workers, answered by
 * its I/O handler (struct baton_http_server_attr's io_handler), so they
 * answer even while every handler is busy:
 *
 *   GET  /_stats                       the stages and pools as JSON
 *   POST /_limits?name=value&...       change limits, answer the snapshot
 *
 * Names: handler_concurrency, handler_queue, max_inflight, max_connections,
 * and STAGE_concurrency, STAGE_queue for each stage (accept, read, handle,
 * write); values are positive integers. A bad name or value is a 400 and
 * changes nothing (every name and value is checked before the first change;
 * a value a stage refuses, such as a queue above its size, stops there).
 */
#ifndef BATON_APPS_HTTPD_ADMIN_H
#define BATON_APPS_HTTPD_ADMIN_H

#include <baton/http.h>
#include <baton/stage.h>

/* The admin listener's io_handler; ctx points to the public server's
 * handle. Answers every request: the endpoints, 405 for another method,
 * 404 for another path. */
int httpd_admin(void *ctx, const struct baton_http_req *req, struct baton_http_resp *resp);

/* The public port's io_handler: 404 for /_stats and /_limits, any method;
 * every other request goes on (status left 0). */
int httpd_admin_public(void *ctx, const struct baton_http_req *req, struct baton_http_resp *resp);

/* Open the admin listener at spec ("ADDR:PORT" or "PORT"; port 0: any
 * free one) on scheduler s, beside the public server made with attr pub
 * whose handle *pub_srv will hold. 0, or -1 after a line on stderr. */
int httpd_admin_start(const char *spec, baton_sched_t *s, const struct baton_http_server_attr *pub,
		      baton_http_server_t **pub_srv, baton_http_server_t **out);

/* The snapshots as {"stages":[...],"pools":[...]} into buf, NUL-terminated;
 * *len = the whole text's length even when it does not fit (then
 * BATON_EINVAL and a truncated, terminated prefix). buf NULL with size 0
 * only measures. */
int httpd_stats_json(const struct baton_stage_stats *stages, size_t nstages,
		     const struct baton_pool_stats *pools, size_t npools, char *buf, size_t size,
		     size_t *len);

#endif /* BATON_APPS_HTTPD_ADMIN_H */
