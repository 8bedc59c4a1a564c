/* SPDX-License-Identifier: MIT */
/**
 * @file baton/http.h
 * an HTTP/1.1 server (RFC 9112) on baton's schedulers: one
 * task per connection, blocking I/O through the reactor (baton/io.h), and
 * the steps of a request drawn as stages with their own limits
 * (baton/stage.h): accept, read and parse, handle, write.
 *
 * A handler has the shape of Guile's: the request and its body in; status,
 * headers and body out. Each step is a stage (accept, read, handle, write)
 * with its own queue, concurrency limit and counters, read by
 * baton_http_server_snapshot() and changed by baton_http_server_set_stage()
 * while serving (baton-httpd serves both as GET /_stats and POST /_limits).
 * By default
 * a connection's task passes through every step itself, the handler
 * included, so the number of handlers running at once is limited apart
 * from the number of connections doing I/O. With compute_workers > 0 the
 * scheduler's workers are split: connections (accept, read, parse, write)
 * are bound to the first ones and the "handle" stage has tasks of its own,
 * bound to the last compute_workers ones, so a handler that computes for a
 * long time does not hold up reading and writing. Either way a request
 * waits in the handle stage's queue (handler_queue long) while its
 * connection is not read further; when it cannot get in within
 * queue_timeout_ns the request is answered 503 with Retry-After.
 *
 * @code
 *     static int hello(void *ctx, const struct baton_http_req *req,
 *                      struct baton_http_resp *resp)
 *     {
 *         resp->status = 200;
 *         resp->content_type = "text/plain";
 *         resp->body = "Hello, World!\n";
 *         resp->body_len = 14;
 *         return BATON_OK;
 *     }
 *
 *     struct baton_http_server_attr a;
 *     baton_http_server_attr_init(&a);
 *     a.port = 8080;
 *     a.handler = hello;
 *     baton_http_server_t *srv;
 *     baton_http_server_create(&srv, sched, &a);  // then baton_sched_run()
 *     ...
 *     baton_http_server_shutdown(srv);            // any thread: drain
 * @endcode
 *
 * What the server does on its own: persistent connections and pipelining,
 * Content-Length and chunked request bodies, Expect: 100-continue, HEAD,
 * Date/Connection/Content-Length on every response, and the limits of
 * RFC 9110/9112 with their statuses: target too long 414, header section too
 * large or too many fields 431, body too large 413, a header-read deadline
 * 408, an idle keep-alive timeout (silent close), a cap on connections
 * (accept pauses). Requests that could smuggle (Content-Length with
 * Transfer-Encoding, differing Content-Lengths, bad chunk sizes, obs-fold,
 * bare LF) get 400 and the connection is closed.
 *
 * Lingering close (RFC 9112 section 9.6): after a response that ends the
 * connection (an error, Connection: close, shutdown), the server shuts down
 * its sending side and reads and discards what the client still sends, for
 * at most linger_ns or until the client closes. Closing with unread bytes
 * would make the kernel send a reset, and the client would lose the status
 * (a 413 to a client still sending its body, a 431 to a long head).
 *
 * Rules a caller must keep:
 *  1. A handler returns BATON_OK with resp filled in, a negative HTTP
 *     status (-400 to -599: answered with that status and an empty body),
 *     or an error code, answered with 500 (BATON_ETIMEDOUT with 503, the
 *     answer to a request that waited queue_timeout_ns for a slot; rule 8's
 *     timeout with 504).
 *     It may block (it runs in a task), but holds a
 *     handler slot meanwhile.
 *  2. resp->body, the header strings and resp->headers must stay valid
 *     until the response is written: static memory, resp->scratch
 *     (resp->scratch_cap bytes the server lends), or memory freed by
 *     resp->release(resp->body) after the write (called whenever body is
 *     not NULL, also with body_len 0, so one block may hold the headers).
 *     Any number of header fields: content_type, then extra_names/values
 *     (at most BATON_HTTP_MAX_EXTRA), then resp->headers (any number);
 *     a name may repeat (several Set-Cookie), each is sent as given.
 *  3. The request's pointers are valid only during the handler call.
 *  4. Destroy the server after baton_sched_run() returned (after shutdown).
 *  5. With compute_workers > 0 the scheduler needs more workers than that
 *     (at least one for connections), and a handler may run on another
 *     thread than the one that read its request.
 *  6. attr.io_handler, if set, sees every request first, in its
 *     connection's task on the I/O worker, before static files and the
 *     handle stage: it answers by setting resp->status (and the rest of
 *     resp, as a handler does), or leaves status 0 to pass the request on.
 *     It must return quickly: it holds up the other connections of its
 *     worker. An operator's endpoints belong there (baton-httpd's /_stats),
 *     since they answer even while every handler is busy.
 *  7. A streamed response (baton_http_resp_write) is sent from inside the
 *     handler, piece by piece; the handler's return ends it. Set status
 *     and headers before the first write; leave body_len 0.
 *  8. With handler_timeout_ns > 0, a request whose handler has not
 *     answered that long after the request was read (waiting for a
 *     handler slot included) is answered 504 Gateway Timeout and its
 *     connection closed, as after every error answer; the other
 *     connections are served meanwhile. (503 stays the answer for a
 *     request that could not get a handler: the server is busy, come
 *     back; 504 says this handler took too long.) The handler is stopped
 *     where it can be: its task is cancelled (baton/sched.h), so its
 *     current or next blocking call returns BATON_ECANCELED, and it
 *     should then release what it holds and return. A handler that
 *     computes without blocking cannot be interrupted: it keeps its
 *     worker until it returns, so it should poll baton_http_req_expired()
 *     (or baton_task_cancelled()) between steps. On a compute worker the
 *     handler runs in a task of its own and its request and response stay
 *     valid until it returns, whatever the connection did meanwhile; what
 *     it answers after the 504 is dropped (a streamed piece gets
 *     BATON_ECANCELED). In the I/O-worker shape it runs in its
 *     connection's task, which a watchdog cancels at the deadline
 *     (checked every tenth of the timeout, at least every 100 ms), so a
 *     handler that does not block holds that worker's other connections
 *     too. A streamed response that passes the deadline is cut short.
 *  9. The handler may be replaced while the server runs
 *     (baton_http_server_set_handler: a reload). Each call of a handler
 *     runs inside a read section of the server's reclamation domain
 *     (baton/smr.h), which may park and move between workers with it: a
 *     replaced handler's context is released only once every call that
 *     had begun with it has returned, and no request is dropped or sent to
 *     a half-replaced handler. attr.release, if set, makes the first
 *     context the server's as well; a context with no release function is
 *     never freed by the server.
 */
#ifndef BATON_HTTP_H
#define BATON_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include <baton/error.h>
#include <baton/sched.h>
#include <baton/stage.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A server (opaque). */
typedef struct baton_http_server baton_http_server_t;

/** A request, as a handler sees it. Strings are not NUL-terminated: each
 * has its length beside it. */
struct baton_http_req {
	const char *method;         /**< "GET"... as sent */
	size_t method_len;          /**< its length */
	const char *target;         /**< the request-target as sent */
	size_t target_len;          /**< its length */
	int version_minor;          /**< 0 or 1 */
	const char *body;           /**< the decoded body (chunked or not); NULL when
				   the request has none (no Content-Length, not
				   chunked), non-NULL for Content-Length: 0 */
	size_t body_len;            /**< its length */
	const void *head_;          /**< internal: use baton_http_req_header() */
	const char *path;           /**< the target's path, percent-decoded (never
				   NULL; no NUL byte in it: %00 is a 400) */
	size_t path_len;            /**< its length */
	const char *query;          /**< after '?', as sent (baton_http_query_next);
				   NULL when the target has no '?' */
	size_t query_len;           /**< its length */
	const char *remote_addr;    /**< the client's address, text ("127.0.0.1") */
	unsigned short remote_port; /**< and its port */
	int64_t deadline;           /**< when the answer is due (CLOCK_MONOTONIC, ns):
				   handler_timeout_ns after the request was
				   read; -1: no limit (baton_http_req_expired) */
};

/** A response header field: NUL-terminated name and value. */
struct baton_http_header {
	const char *name;  /**< the field's name */
	const char *value; /**< its value */
};

/** Header fields a response carries in extra_names and extra_values. */
#define BATON_HTTP_MAX_EXTRA 8

/** A response, filled by a handler (fields not set keep the server's
 * defaults). */
struct baton_http_resp {
	int status;                                     /**< 100..999; 200 if left 0 */
	const char *content_type;                       /**< NULL: no Content-Type */
	const char *extra_names[BATON_HTTP_MAX_EXTRA];  /**< header field names */
	const char *extra_values[BATON_HTTP_MAX_EXTRA]; /**< and their values */
	size_t nextra;                                  /**< how many of them are set */
	const void *body;                               /**< the body, body_len bytes */
	size_t body_len;                                /**< its length */
	void (*release)(const void *body);              /**< called after the write, if set */
	char *scratch;                           /**< lent by the server, scratch_cap bytes */
	size_t scratch_cap;                      /**< scratch's size */
	const struct baton_http_header *headers; /**< any number more, sent after */
	size_t nheaders;                         /**< the extra_* ones, in order (rule 2) */
	void *stream_;                           /**< internal: baton_http_resp_write() */
};

/** A handler: fills resp for req; ctx is the attribute's (rule 1). */
typedef int (*baton_http_handler_fn)(void *ctx, const struct baton_http_req *req,
				     struct baton_http_resp *resp);

/**
 * Static files (attr.static_dir): the directory is opened once, at
 * creation, and every path is resolved from that descriptor, component by
 * component, never above it: a file outside the directory is never served,
 * whatever the path or the links in it ("..", "%2e%2e" and "%2f" are a 400,
 * a link that leads out or that the policy refuses a 403). The policy for
 * symbolic links, checked on every component (as nginx's disable_symlinks):
 *  - OFF (the default): no component may be a symbolic link;
 *  - ON: links are followed while they stay inside the directory;
 *  - OWNER: as ON, and each link must have the owner of what it points to.
 * ON and OWNER need openat2() (Linux 5.6); on an older kernel creation
 * fails with BATON_ESYS, errno ENOSYS. OFF works on every kernel (openat2
 * with RESOLVE_NO_SYMLINKS, else one openat with O_NOFOLLOW per component).
 * A directory replaced while serving (renamed, another put in its place)
 * is not seen: the descriptor keeps serving the tree opened at creation.
 */
enum baton_http_symlinks {
	BATON_HTTP_SYMLINKS_OFF = 0,
	BATON_HTTP_SYMLINKS_ON,
	BATON_HTTP_SYMLINKS_OWNER,
};

/** Attributes of a server: baton_http_server_attr_init() sets the
 * defaults. */
struct baton_http_server_attr {
	const char *host;                 /**< NULL: 0.0.0.0 */
	unsigned short port;              /**< 0: any free port (see _port()) */
	baton_http_handler_fn handler;    /**< answers the requests */
	void *ctx;                        /**< its first argument */
	const char *static_dir;           /**< serve GET/HEAD files from here first; NULL: off */
	int static_symlinks;              /**< BATON_HTTP_SYMLINKS_*: default OFF */
	baton_http_handler_fn io_handler; /**< sees every request first (rule 6) */
	void *io_ctx;                     /**< its first argument */
	size_t max_target;                /**< 414 above it */
	size_t max_header_bytes;          /**< 431 above it */
	size_t max_fields;                /**< 431 above it */
	int64_t max_body;                 /**< 413 above it */
	int64_t header_timeout_ns;        /**< 408 when a head takes longer */
	int64_t idle_timeout_ns;          /**< keep-alive connections idle longer are closed */
	int64_t write_timeout_ns;         /**< a client that does not read is dropped */
	long max_connections;             /**< accept pauses at this many */
	long handler_concurrency;         /**< handlers running at once */
	long max_inflight;                /**< requests between parsed and written */
	int backlog;                      /**< listen()'s */
	struct baton_coro_attr coro;      /**< connection tasks */
	int64_t linger_ns;                /**< lingering close: at most this long; 0: off */
	unsigned compute_workers;         /**< > 0: handlers run on the last this many
					   workers, connections on the others */
	size_t handler_queue;             /**< requests waiting for a handler */
	int64_t queue_timeout_ns;         /**< then 503 + Retry-After */
	int64_t handler_timeout_ns;       /**< 504 when the answer is not ready this
					   long after the request was read
					   (rule 8); 0: no limit */
	void (*release)(void *ctx);       /**< set: the server owns ctx and calls
					   this once no call of the handler is
					   left after it was replaced, or at
					   destroy (rule 9); NULL: ctx stays
					   the caller's */
};

/** The defaults, by name: an attribute not listed is 0 or NULL. */
#define BATON_HTTP_SERVER_ATTR_INIT                                                             \
	{                                                                                       \
		.port = 8080, .max_target = 8192, .max_header_bytes = 32768, .max_fields = 100, \
		.max_body = 1048576, .header_timeout_ns = 10000000000LL,                        \
		.idle_timeout_ns = 60000000000LL, .write_timeout_ns = 30000000000LL,            \
		.max_connections = 10000, .handler_concurrency = 256, .max_inflight = 4096,     \
		.backlog = 1024, .coro = BATON_CORO_ATTR_INIT, .linger_ns = 2000000000LL,       \
		.handler_queue = 1024, .queue_timeout_ns = 1000000000LL                         \
	}

/** The defaults in *a: the attribute convention of every module
 * (docs/architecture.md); the macro above is the same as a constant
 * initialiser (C only before C++20).
 * @param a the attributes to set to the defaults
 * @return BATON_OK, or an error: BATON_EINVAL (NULL a). */
BATON_API int baton_http_server_attr_init(struct baton_http_server_attr *a);

/** Bind and listen now (errors are reported here), and spawn the acceptor
 * on scheduler s; connections are served once s runs. From any thread.
 * @param out receives the new server
 * @param s the scheduler
 * @param attr the attributes, or NULL for the defaults
 * @return BATON_OK, or an error: BATON_EINVAL (NULL, no handler, a limit <= 0,
 * compute_workers not below the scheduler's workers, an unknown
 * static_symlinks), BATON_ESYS (socket/bind/listen, or static_dir cannot be
 * opened as a directory; errno set), BATON_ENOMEM. */
BATON_API int baton_http_server_create(baton_http_server_t **out, baton_sched_t *s,
				       const struct baton_http_server_attr *attr);

/** The port listened on.
 * @param srv the server
 * @return the port, or BATON_EINVAL for a NULL srv */
BATON_API int baton_http_server_port(const baton_http_server_t *srv);

/** Stop accepting; requests in flight are answered (Connection: close),
 * idle connections are closed; the tasks then end, so baton_sched_run()
 * returns. Any thread, also a signal handler's thread via a task.
 * @param srv the server
 * @return BATON_OK, or BATON_EINVAL for a NULL srv */
BATON_API int baton_http_server_shutdown(baton_http_server_t *srv);

/** Change limits while serving: handler concurrency (the handle stage's),
 * in-flight cap, connection cap (<= 0 leaves one unchanged). Any thread.
 * @param srv the server
 * @param handler_concurrency handlers that may run at once (<= 0: unchanged)
 * @param max_inflight requests in flight at most (<= 0: unchanged)
 * @param max_connections connections open at most (<= 0: unchanged)
 * @return BATON_OK, or an error: BATON_EINVAL. (baton-httpd puts these and the
 * setters below behind POST /_limits.) */
BATON_API int baton_http_server_set_limits(baton_http_server_t *srv, long handler_concurrency,
					   long max_inflight, long max_connections);

/* The server's stages, in request order, and its pools. */
#define BATON_HTTP_NSTAGES 4 /**< accept, read, handle, write */
#define BATON_HTTP_NPOOLS 2  /**< connections, in-flight */
/** The server's stages, in request order, and its pools. */
struct baton_http_server_stats {
	struct baton_stage_stats stages[BATON_HTTP_NSTAGES]; /**< accept, read, handle, write */
	struct baton_pool_stats pools[BATON_HTTP_NPOOLS];    /**< connections, in-flight */
};

/** Fill *out with the snapshots of the server's stages and pools (names
 * valid until the server is destroyed). Any thread.
 * @param srv the server
 * @param out filled with the statistics
 * @return BATON_OK, or an error: BATON_EINVAL. */
BATON_API int baton_http_server_snapshot(baton_http_server_t *srv,
					 struct baton_http_server_stats *out);

/** Change how many requests may wait for a handler (1..handler_queue given
 * at creation).
 * @param srv the server
 * @param n requests that may wait for a handler
 * @return BATON_OK, or an error: BATON_EINVAL. */
BATON_API int baton_http_server_set_handler_queue(baton_http_server_t *srv, size_t n);

/** The most a stage's concurrency may be set to. */
#define BATON_HTTP_STAGE_MAX 1000000u

/** Change one step's stage while serving: "accept", "read", "handle" or
 * "write"; concurrency 1..BATON_HTTP_STAGE_MAX (accept: 1, there is one
 * acceptor) and queue 1..its size at creation (the connection cap for read
 * and write, handler_queue for handle, 1 for accept); 0 leaves either
 * unchanged.
 * @param srv the server
 * @param stage "accept", "read", "handle" or "write"
 * @param concurrency the step's concurrency (0: unchanged)
 * @param queue the step's queue limit (0: unchanged)
 * @return BATON_OK, or an error: BATON_EINVAL (unknown stage, a value out of
 * range). */
BATON_API int baton_http_server_set_stage(baton_http_server_t *srv, const char *stage,
					  unsigned concurrency, size_t queue);

/** Free the server.
 * @param srv the server
 * @return BATON_OK, or an error: BATON_EBUSY (connections still open). */
BATON_API int baton_http_server_destroy(baton_http_server_t *srv);

/** Replace the handler while the server runs (a reload, rule 9): calls that
 * begin from now on go to fn(ctx, ...); calls of the old handler that are
 * running finish with it, and the old context's release (if it had one)
 * runs once the last of them has returned. Waits for them at most
 * timeout_ns (< 0: without limit); past it the old handler is released
 * later, once they end (at the latest by destroy), and the call says so.
 * From a task or a plain thread, one at a time per server.
 * Timeout 0 only looks, as every baton wait.
 * @param srv the server
 * @param fn the new handler
 * @param ctx the new handler's context, its first argument
 * @param release called with ctx once the handler is replaced and idle, or NULL
 * @param timeout_ns how long to wait for the old handler's calls: < 0 without
 * limit, 0 only looks
 * @return BATON_OK, or an error: BATON_EINVAL (NULL srv or fn), BATON_ENOMEM
 * (nothing changed), BATON_EAGAIN (timeout 0 and calls still running) or
 * BATON_ETIMEDOUT (replaced in both cases; the old one's release is left for
 * later). */
BATON_API int baton_http_server_set_handler(baton_http_server_t *srv, baton_http_handler_fn fn,
					    void *ctx, void (*release)(void *ctx),
					    int64_t timeout_ns);

/** The value of request header `name` (case-insensitive), or NULL; its
 * length in *len. Only inside a handler.
 * @param req the request being handled
 * @param name the header's name (any case)
 * @param len receives the value's length, or NULL
 * @return the value (not NUL-terminated), or NULL */
BATON_API const char *baton_http_req_header(const struct baton_http_req *req, const char *name,
					    size_t *len);

/** The i-th request header field (0-based): BATON_OK with its name and
 * value, BATON_EINVAL past the last one. Only inside a handler.
 * @param req the request being handled
 * @param i the field's position, from 0
 * @param name receives the field's name (not NUL-terminated)
 * @param name_len receives the name's length
 * @param value receives the field's value (not NUL-terminated)
 * @param value_len receives the value's length
 * @return BATON_OK, or BATON_EINVAL past the last field */
BATON_API int baton_http_req_field(const struct baton_http_req *req, size_t i, const char **name,
				   size_t *name_len, const char **value, size_t *value_len);

/** 1 if the request's deadline (req->deadline, rule 8) has passed, 0 if not
 * or if it has none. Cheap (a clock read): a handler that computes can
 * call it between steps, and an interpreter's hook every few thousand
 * instructions.
 * @param req the request being handled
 * @return BATON_OK, or an error: BATON_EINVAL (NULL). */
BATON_API int baton_http_req_expired(const struct baton_http_req *req);

/** Streaming: send the response while the handler makes it. The first call
 * sends the head (status, content_type and the header fields set by then);
 * each call then sends data[0, len) and returns once the bytes are with
 * the kernel, so the handler never runs more than one piece ahead of the
 * client (a client that does not read holds the handler here, at most
 * write_timeout_ns). len 0 sends only the head. To an HTTP/1.1 client the
 * body is chunked (Transfer-Encoding: chunked), one chunk per call; to an
 * HTTP/1.0 client it is delimited by the connection's close (no length is
 * known in advance), so that connection is not kept. The handler's return
 * ends the body: BATON_OK writes the last chunk; an error return after the
 * head was sent closes the connection without it, so the client sees the
 * body cut short (a status can no longer be changed). To HEAD the head is
 * sent (with the framing a GET would get) and data is dropped.
 * Only inside a handler (or the io_handler), on its request's resp; from a
 * compute worker the piece travels to the connection's task, which writes
 * it while the handler waits.
 * @param resp the handler's response
 * @param data the bytes to send
 * @param len how many (0: the head only)
 * @return BATON_OK, or an error: BATON_EINVAL (NULL resp, data NULL with len >
 * 0, not inside a handler, body_len set, a header that is not valid HTTP), and
 * once the client is gone or too slow the write's error (BATON_ESYS,
 * BATON_ETIMEDOUT) for this and every later call: stop and return;
 * BATON_ECANCELED once the handler's deadline passed (rule 8). */
BATON_API int baton_http_resp_write(struct baton_http_resp *resp, const void *data, size_t len);

/** Percent-decoding (RFC 3986 2.1): decode src[0, len) into dst (room for
 * len bytes; dst may be src, decoding in place), *out_len bytes written.
 * With plus != 0 a '+' becomes a space (form encoding, for query
 * arguments).
 * @param dst receives the decoded bytes (room for len; may be src)
 * @param src the encoded text
 * @param len its length
 * @param plus non-zero: a '+' becomes a space
 * @param out_len receives the number of bytes written
 * @return BATON_OK, or an error: BATON_EINVAL (NULL pointer, a '%' not
 * followed by two hex digits; dst then holds nothing useful). */
BATON_API int baton_http_decode(char *dst, const char *src, size_t len, int plus, size_t *out_len);

/** The arguments of a query ("a=1&b=x%20y&c"), one per call, as sent (not
 * decoded: see baton_http_decode with plus = 1): start with *pos = 0; each
 * call stores the next argument's key and value (value "" with length 0 for
 * a bare key) and returns 1, or returns 0 past the last one. Empty
 * arguments ("a=1&&b=2") are skipped. query may be NULL with len 0.
 *
 * @code
 *     size_t pos = 0, kl, vl;
 *     const char *k, *v;
 *     while (baton_http_query_next(req->query, req->query_len, &pos, &k, &kl, &v, &vl))
 *         ...
 * @endcode
 * @param query the query, or NULL with len 0
 * @param len its length
 * @param pos where to go on from (0 at first); advanced by each call
 * @param key receives the argument's key (not decoded, not NUL-terminated)
 * @param key_len receives the key's length
 * @param value receives the argument's value ("" for a bare key)
 * @param value_len receives the value's length
 * @return 1 with the next argument, 0 past the last one */
BATON_API int baton_http_query_next(const char *query, size_t len, size_t *pos, const char **key,
				    size_t *key_len, const char **value, size_t *value_len);

#ifdef __cplusplus
}
#endif

#endif /* BATON_HTTP_H */
