/*
 * apps/httpd/admin.h - baton-httpd's operator endpoints, served by the
 * server's I/O handler (struct baton_http_server_attr's io_handler, so they
 * answer even while every handler is busy) when --stats is given:
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

/* The io_handler; ctx points to the server's handle (set once created). */
int httpd_admin(void *ctx, const struct baton_http_req *req, struct baton_http_resp *resp);

/* The snapshots as {"stages":[...],"pools":[...]} into buf, NUL-terminated;
 * *len = the whole text's length even when it does not fit (then
 * BATON_EINVAL and a truncated, terminated prefix). buf NULL with size 0
 * only measures. */
int httpd_stats_json(const struct baton_stage_stats *stages, size_t nstages,
		     const struct baton_pool_stats *pools, size_t npools, char *buf,
		     size_t size, size_t *len);

#endif /* BATON_APPS_HTTPD_ADMIN_H */
