/* SPDX-License-Identifier: MIT */
/*
 * One connection's loop: per request, write what is owed and wait for the
 * next bytes (or park), read and parse the head, the body, handle it and
 * queue the response (serve_request), which says what comes next in an
 * outcome record.
 *
 * What is read accumulates in c->in, the current request first; its head is
 * parsed in place, resuming where the last read's parse stopped (the work
 * block's prog), so a head that arrives a byte at a time is scanned once.
 * A chunked body is decoded in place right behind the head. Responses go
 * to c->out (respond.c) and are written when the task is about to wait for
 * the client, so a pipelined batch costs one write. Each step is counted
 * or passes through its stage (step.c).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "../common/alloc.h"
#include "../common/prelude.h"
#include "server_internal.h"

#define IN_INITIAL HTTP_BUF_SIZE

/* What in_reserve says past the limit: the request is too large, which
 * the client is told (431, 413), unlike a lack of memory (503). */
#define IN_TOO_LARGE 1

/* Room for `more` bytes after in_len, within `limit` bytes in all:
 * BATON_OK, IN_TOO_LARGE or BATON_ENOMEM. */
static int in_reserve(struct http_conn *c, size_t more, size_t limit)
{
	size_t cap = c->in_cap ? c->in_cap : IN_INITIAL;
	char *p;

	if (c->in_len + more <= c->in_cap)
		return BATON_OK;
	if (c->in_len + more > limit)
		return IN_TOO_LARGE;
	while (cap < c->in_len + more)
		cap *= 2;
	if (cap > limit)
		cap = limit;
	p = c->in == NULL && cap == HTTP_BUF_SIZE ? baton__http_buf_get(c)
						  : baton__realloc(c->in, cap);
	if (p == NULL)
		return BATON_ENOMEM;
	if (p != c->in && c->work) /* the parser's progress points into the old buffer */
		c->work->prog = (struct baton_http_progress)BATON_HTTP_PROGRESS_INIT;
	c->in = p;
	c->in_cap = cap;
	return BATON_OK;
}

/* Read more into c->in (up to `limit` in all) within timeout_ns (< 0:
 * no limit). BATON_OK with *n = 0 at end of file; IN_TOO_LARGE. */
static int read_more_for(struct http_conn *c, size_t limit, int64_t timeout_ns, size_t *n)
{
	int rc = in_reserve(c, 4096 < limit - c->in_len ? 4096 : limit - c->in_len, limit);

	if (rc != BATON_OK)
		return rc;
	return baton_io_read(c->io, c->in + c->in_len, c->in_cap - c->in_len, timeout_ns, n);
}

/* What read_idle says when the connection parked: its task ends. */
#define IDLE_PARKED 2

/* Between requests, with nothing read and nothing owed: the three
 * buffers back to the worker's cache, taken again when bytes arrive. */
static void put_buffers(struct http_conn *c)
{
	baton__http_buf_put(c, c->in, c->in_cap);
	baton__http_buf_put(c, c->out, c->out_cap); /* written: flush ran */
	baton__http_buf_put(c, c->work, HTTP_BUF_SIZE);
	c->in = c->out = NULL;
	c->work = NULL;
	c->in_cap = c->out_cap = 0;
	c->out_len = 0;
}

/* Between requests: the next request's first bytes. If none is there
 * yet, the connection gives its buffers back and parks: its task ends, and
 * what is left is its record and a notification on its handle, which
 * starts a task again when bytes arrive (IDLE_PARKED; docs/httpd.md says
 * why at once rather than after a while). The buffers are taken again
 * when bytes arrive. */
static int read_idle(struct http_conn *c, size_t limit, size_t *n)
{
	int64_t idle = c->srv->a.idle_timeout_ns;
	int rc = read_more_for(c, limit, 0, n);

	if (rc != BATON_EAGAIN)
		return rc;
	put_buffers(c);
	if (baton__http_conn_park(c, baton__clock_now() + idle))
		return IDLE_PARKED;
	/* Bytes came since the read: a waiting read takes them. */
	return read_more_for(c, limit, idle, n);
}

/* As read_more_for, before `deadline` (< 0: none). */
static int read_more(struct http_conn *c, size_t limit, int64_t deadline, size_t *n)
{
	int64_t timeout = -1;

	if (deadline >= 0) {
		timeout = deadline - baton__clock_now();
		if (timeout <= 0)
			return BATON_ETIMEDOUT;
	}
	return read_more_for(c, limit, timeout, n);
}

/* Queue a canned error response and write it; the connection closes
 * after it. The answer to HEAD has the head alone. True if it was
 * written. */
static bool answer_error(struct http_conn *c, int status, bool head_only)
{
	if (baton__http_out_reserve(c, 512))
		c->out_len += baton__http_format_error(c->out + c->out_len, 512, status, head_only);
	return baton__http_flush(c) == BATON_OK;
}

/*
 * Lingering close (RFC 9112 section 9.6): end our side with a FIN, then read
 * and drop what the client still sends, until it closes or linger_ns pass.
 * Closing with unread bytes in the socket makes the kernel answer with a
 * reset, which also discards our response from the client's receive buffer.
 * Each read waits at most the time left, so a silent client costs one timer.
 */
static void linger_close(struct http_conn *c)
{
	int64_t deadline = baton__clock_now() + c->srv->a.linger_ns;
	char small[512];
	char *sink = c->in_cap ? c->in : small;
	size_t cap = c->in_cap ? c->in_cap : sizeof(small);

	if (c->srv->a.linger_ns <= 0 || shutdown(c->fd, SHUT_WR) != 0)
		return;
	for (;;) {
		int64_t left = deadline - baton__clock_now();
		size_t got;

		if (left <= 0 || baton_io_read(c->io, sink, cap, left, &got) != BATON_OK ||
		    got == 0)
			return;
	}
}

/* The next head, complete in c->in: its length (> 0), 0 to close quietly
 * (EOF, idle timeout, shutdown), or -status to answer and close. From the
 * request's first byte the task is in the read stage (*pass): a full read
 * stage, or no in-flight unit within the head's time, is a 503. */
static long read_head(struct http_conn *c, struct baton_http_request *req, struct http_pass *pass)
{
	struct baton_http_server *srv = c->srv;
	size_t limit = srv->lim.max_target + srv->lim.max_header_bytes + 1024;
	int64_t deadline = -1;
	long n = 0;

	for (;;) {
		size_t got;
		int rc;

		if (c->in_len && pass->step < 0 &&
		    baton__http_step_enter(srv, HTTP_READ, pass, 0, srv->a.header_timeout_ns) !=
			    BATON_OK)
			return -503;
		if (c->in_len) {
			/* The request's fields go into the work block, taken
			 * now that its bytes are here. */
			if (c->work == NULL) {
				if ((c->work = baton__http_buf_get(c)) == NULL)
					return -503;
				c->work->prog =
					(struct baton_http_progress)BATON_HTTP_PROGRESS_INIT;
			}
			req->fields = c->work->fields;
			/* Resumes where the last call stopped: a head sent a
			 * byte at a time is scanned once, not once per byte. */
			n = baton__http_parse_head_resume(c->in, c->in_len, &srv->lim, req,
							  &c->work->prog, NULL);
			if (n != BATON_HTTP_NEED_MORE)
				return n;
			if (deadline < 0)
				deadline = baton__clock_now() + srv->a.header_timeout_ns;
		}
		/* About to wait for the client: what we owe it goes first. */
		if (baton__http_flush(c) != BATON_OK)
			return 0;
		if (c->in_len == 0) {
			/* Between requests: first give the worker's other
			 * connections their turn. A client that sends its next
			 * request as soon as it reads the response (on the same
			 * CPU, it runs while we write) would otherwise find us
			 * reading it at once, again and again, while the others
			 * wait: fairness per request, as an event loop has.
			 * The turn often brings the next request, which then
			 * costs no park and no new task. Nothing is held across
			 * it: many connections may be in this yield at once,
			 * and the buffers they held overflowed the worker's
			 * small cache into malloc and free (and the heap's trim
			 * and page faults) on every request. */
			if (c->served && !c->woke) {
				put_buffers(c);
				baton_sched_yield();
			}
			c->woke = false; /* a task just started came last */
			/* Idle, closed by shutdown. */
			if (!baton__http_conn_set_idle(c, true))
				return 0;
			rc = read_idle(c, limit, &got);
			if (rc == IDLE_PARKED)
				return 0; /* still idle, with no task */
			baton__http_conn_set_idle(c, false);
			if (rc != BATON_OK || got == 0)
				return 0; /* idle timeout, EOF or error: just close */
		} else {
			rc = read_more(c, limit, deadline, &got);
			if (rc == BATON_ETIMEDOUT)
				return -408;
			if (rc == IN_TOO_LARGE)
				return -431; /* over the head limit without an answer */
			if (rc == BATON_ENOMEM)
				return -503;
			if (rc != BATON_OK || got == 0)
				return 0;
		}
		c->in_len += got;
	}
}

/* The body after a head of `head` bytes: on success *body and *len point into
 * c->in and *end is where the next request starts. */
static int read_body(struct http_conn *c, const struct baton_http_request *req, size_t head,
		     char **body, size_t *len, size_t *end)
{
	struct baton_http_server *srv = c->srv;
	size_t limit = head + (size_t)srv->lim.max_body + 64 * 1024;
	int64_t deadline;
	size_t got;
	int rc;

	*body = c->in + head;
	*len = 0;
	*end = head;
	if (req->content_length <= 0 && !req->chunked)
		return BATON_OK;
	deadline = baton__clock_now() + srv->a.header_timeout_ns;
	/* Expect: 100-continue: say go on, unless the body is already here. */
	if (req->expect_continue && c->in_len == head) {
		if (!baton__http_out_reserve(c, sizeof(BATON_HTTP_CONTINUE)))
			return -500;
		memcpy(c->out + c->out_len, BATON_HTTP_CONTINUE, sizeof(BATON_HTTP_CONTINUE) - 1);
		c->out_len += sizeof(BATON_HTTP_CONTINUE) - 1;
		if (baton__http_flush(c) != BATON_OK)
			return -400;
	}
	if (!req->chunked) {
		size_t need = head + (size_t)req->content_length;

		rc = in_reserve(c, need > c->in_len ? need - c->in_len : 0, need);
		if (rc != BATON_OK)
			return rc == BATON_ENOMEM ? -503 : -413;
		while (c->in_len < need) {
			rc = read_more(c, need, deadline, &got);
			if (rc != BATON_OK || got == 0)
				return rc == BATON_ETIMEDOUT ? -408 : -400;
			c->in_len += got;
		}
		*body = c->in + head; /* c->in may have moved */
		*len = (size_t)req->content_length;
		*end = need;
		return BATON_OK;
	}
	/* Chunked: decode in place; the output never overtakes the input. */
	struct baton_http_chunked dec;
	size_t in_pos = head, out_pos = head;

	baton__http_chunked_init(&dec, &srv->lim);
	for (;;) {
		size_t consumed, produced;

		rc = baton__http_chunked_feed(&dec, c->in + in_pos, c->in_len - in_pos, &consumed,
					      c->in + out_pos, c->in_len - out_pos, &produced);
		in_pos += consumed;
		out_pos += produced;
		if (rc < 0)
			return rc;
		if (rc == 1)
			break;
		rc = read_more(c, limit, deadline, &got);
		if (rc != BATON_OK || got == 0)
			return rc == BATON_ETIMEDOUT ? -408
				: rc == IN_TOO_LARGE ? -413
				: rc == BATON_ENOMEM ? -503
						     : -400;
		c->in_len += got;
	}
	*body = c->in + head; /* c->in may have moved */
	*len = out_pos - head;
	*end = in_pos;
	return BATON_OK;
}

/* The request as a handler sees it. The path is decoded into *decoded
 * (malloc'd, for the caller to free) only when it has a '%'. */
static int make_view(struct http_conn *c, const struct baton_http_request *req, const char *body,
		     size_t body_len, struct baton_http_req *view, char **decoded)
{
	const char *path;
	size_t path_len;

	*view = (struct baton_http_req){
		req->method,
		req->method_len,
		req->target,
		req->target_len,
		req->version_minor,
		req->content_length >= 0 || req->chunked ? body : NULL,
		body_len,
		req,
		NULL,
		0,
		NULL,
		0,
		c->remote,
		c->remote_port,
		-1,
	};
	baton__http_split_target(req->target, req->target_len, (int)req->target_form, &path,
				 &path_len, &view->query, &view->query_len);
	*decoded = NULL;
	if (memchr(path, '%', path_len) != NULL) {
		*decoded = baton__malloc(path_len + 1);
		if (*decoded == NULL)
			return BATON_ENOMEM;
		if (baton_http_decode(*decoded, path, path_len, 0, &path_len) != BATON_OK ||
		    memchr(*decoded, '\0', path_len) != NULL)
			return -400; /* a bad escape, or a NUL no C string survives */
		(*decoded)[path_len] = '\0';
		path = *decoded;
	}
	view->path = path;
	view->path_len = path_len;
	return BATON_OK;
}

/* I/O-worker shape: the handler runs in this task, which the sweeper
 * (server.c) cancels once `deadline` (< 0: none) passes. */
static void watch(struct http_conn *c, int64_t deadline)
{
	if (deadline < 0)
		return;
	/* Release: c->tid, stored at the start, to the sweeper's acquire. */
	__atomic_store_n(&c->deadline, deadline, __ATOMIC_RELEASE);
}

/* The handler is done: true if the sweeper cancelled this task (it is
 * then cancelled for good: the connection closes after its 504). */
static bool unwatch(struct http_conn *c, int64_t deadline)
{
	if (deadline < 0)
		return false;
	/* Acq_rel: our claim against the sweeper's compare-and-swap. */
	return __atomic_exchange_n(&c->deadline, 0, __ATOMIC_ACQ_REL) == -1;
}

/* Run the handler (or static files, or /_stats): in this task, passing
 * through the handle stage, or on the stage's own tasks. A job abandoned
 * at its deadline takes *decoded with it. */
static int handle_view(struct http_conn *c, const struct baton_http_request *req,
		       const struct baton_http_req *view, struct baton_http_resp *resp,
		       struct http_stream *st, int64_t start, char **decoded)
{
	struct baton_http_server *srv = c->srv;
	struct http_pass pass = HTTP_PASS_INIT;
	int rc;

	/* CONNECT asks for a tunnel, which no handler can give (it answers a
	 * request, it does not take over the connection): 501, as for a
	 * method the server does not implement, before any handler sees it. */
	if (req->method_id == BATON_HTTP_CONNECT)
		return -501;
	if (srv->a.io_handler != NULL) { /* first, here on the I/O worker */
		rc = srv->a.io_handler(srv->a.io_ctx, view, resp);
		if (rc != BATON_OK || resp->status != 0 || st->started)
			return rc;
	}
	if (srv->static_dir &&
	    (req->method_id == BATON_HTTP_GET || req->method_id == BATON_HTTP_HEAD)) {
		rc = baton__http_static(srv, req, resp);
		if (rc != 0)
			return rc > 0 ? BATON_OK : rc;
	}
	if (srv->compute)
		return baton__http_handle_on_stage(c, view, resp, st, decoded);
	watch(c, view->deadline);
	rc = baton__http_step_enter(srv, HTTP_HANDLE, &pass, start, srv->a.queue_timeout_ns);
	if (rc != BATON_OK)
		return unwatch(c, view->deadline) ? HTTP_HANDLER_TIMED_OUT : -503;
	rc = baton__http_call_handler(srv, view, resp);
	/* Its end is when the response is queued: the write step's start. */
	baton__http_step_leave(srv, &pass, &c->t_queued);
	if (unwatch(c, view->deadline))
		return HTTP_HANDLER_TIMED_OUT; /* the response, if any, is dropped */
	if (rc == BATON_OK && resp->status == 0)
		resp->status = 200;
	return rc;
}

static int handle(struct http_conn *c, const struct baton_http_request *req, const char *body,
		  size_t body_len, struct baton_http_resp *resp, char *scratch, size_t scratch_cap,
		  int64_t start, struct http_stream *st)
{
	struct baton_http_req view;
	char *decoded;
	int rc;

	memset(resp, 0, sizeof(*resp));
	resp->scratch = scratch;
	resp->scratch_cap = scratch_cap;
	*st = (struct http_stream){ HTTP_STREAM_LOCAL,
				    c,
				    req,
				    NULL,
				    req->keep_alive && !baton__http_shutting(c->srv),
				    req->version_minor >= 1,
				    false,
				    BATON_OK,
				    -1 };
	if (!st->chunked)
		st->keep = false; /* an HTTP/1.0 stream ends with the close */
	resp->stream_ = st;
	rc = make_view(c, req, body, body_len, &view, &decoded);
	if (rc == BATON_OK && c->srv->a.handler_timeout_ns > 0)
		st->deadline = view.deadline = start + c->srv->a.handler_timeout_ns;
	if (rc == BATON_OK)
		rc = handle_view(c, req, &view, resp, st, start, &decoded);
	/* A handler that failed past its deadline (a Lua hook's error, a
	 * blocking call that gave up) timed out, whatever it said. */
	if (rc != BATON_OK && rc != HTTP_HANDLER_TIMED_OUT && rc > -400 && view.deadline >= 0 &&
	    baton__clock_now() >= view.deadline)
		rc = HTTP_HANDLER_TIMED_OUT;
	resp->stream_ = NULL;
	if (decoded != NULL) /* rarely: a path with a %-escape */
		baton__free(decoded);
	return rc;
}

/* The peer's address as text, once per connection. */
static void remote_of(struct http_conn *c)
{
	struct sockaddr_storage sa;
	socklen_t len = sizeof(sa);

	c->remote[0] = '\0';
	if (getpeername(c->fd, (struct sockaddr *)&sa, &len) != 0)
		return;
	if (sa.ss_family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)&sa;

		inet_ntop(AF_INET, &in->sin_addr, c->remote, sizeof(c->remote));
		c->remote_port = ntohs(in->sin_port);
	} else if (sa.ss_family == AF_INET6) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&sa;

		inet_ntop(AF_INET6, &in6->sin6_addr, c->remote, sizeof(c->remote));
		c->remote_port = ntohs(in6->sin6_port);
	}
}

/* What one request asks of the connection once it is over. */
struct http_outcome {
	enum {
		OUT_NEXT,   /* the next request */
		OUT_PARK,   /* none came: the connection parked, its task ends */
		OUT_FINISH, /* write what is queued, then close (lingering) */
		OUT_CLOSE,  /* close quietly (end of file, idle timeout...) */
		OUT_ANSWER, /* answer `status`, then close (lingering) */
	} next;
	int status;     /* OUT_ANSWER: the error status */
	bool head_only; /* OUT_ANSWER: to a HEAD (a head alone) */
};

static struct http_outcome outcome(int next, int status, bool head_only)
{
	return (struct http_outcome){ next, status, head_only };
}

/*
 * One request, as one pass of the connection's loop: write what is owed
 * and wait for the next bytes, read and parse the head (in the read step,
 * *rd), the body, handle it, queue the response. The read step's in-flight
 * unit is the caller's to give back once this returns, whichever way the
 * request ended (baton__http_pass_release_unit), and so is the step itself
 * if the request failed while being read (rd->step >= 0).
 */
static struct http_outcome serve_request(struct http_conn *c, struct http_pass *rd)
{
	struct baton_http_server *srv = c->srv;
	size_t nf = srv->lim.max_fields < HTTP_CONN_FIELDS ? srv->lim.max_fields : HTTP_CONN_FIELDS;
	/* .fields: the work block's, once bytes arrive (read_head). */
	struct baton_http_request req = { .fields = NULL, .fields_cap = nf };
	struct baton_http_resp resp;
	struct http_stream st;
	char *body = NULL;
	size_t body_len = 0, end = 0;
	long head;
	uintptr_t in_before = 0;
	int64_t t0;
	bool keep;
	int rc = BATON_OK, next, status = 0;

	head = read_head(c, &req, rd);
	/* Relaxed: only this task and the notification that starts the next
	 * one write it, in turn on one worker. */
	if (head == 0 && __atomic_load_n(&c->parked, __ATOMIC_RELAXED))
		return outcome(OUT_PARK, 0, false); /* idle: nothing held */
	if (head < 0)
		return outcome(OUT_ANSWER, (int)-head, req.is_head);
	if (head == 0)
		return outcome(OUT_CLOSE, 0, false);
	in_before = (uintptr_t)c->in;
	rc = read_body(c, &req, (size_t)head, &body, &body_len, &end);
	if (rc != BATON_OK)
		return outcome(OUT_ANSWER, rc <= -400 ? -rc : 400, req.is_head);
	/* A body larger than the buffer moved it (realloc): the head's
	 * pointers (method, target, fields) are re-read from the new copy,
	 * which has the same bytes. */
	if ((uintptr_t)c->in != in_before)
		baton__http_parse_head(c->in, (size_t)head, &srv->lim, &req, NULL);
	baton__http_step_leave(srv, rd, &t0); /* its end is handle's start */
	rc = handle(c, &req, body, body_len, &resp, c->work->scratch, HTTP_WORK_SCRATCH, t0, &st);
	keep = req.keep_alive && !baton__http_shutting(srv);
	if (st.started) {
		/* Streamed: the head and the pieces are out; only the end is
		 * left, or after an error the close. */
		rc = baton__http_end_stream(&st, rc);
		keep = keep && st.keep;
		next = rc == BATON_OK ? OUT_NEXT : OUT_CLOSE;
	} else if (rc != BATON_OK) {
		/* A handler's error, a status (-400 to -599; anything
		 * further down is an error, a 500), or past its timeout
		 * (HTTP_HANDLER_TIMED_OUT, -504). */
		status = rc == BATON_ETIMEDOUT ? 503 : rc <= -400 && rc >= -599 ? -rc : 500;
		next = OUT_ANSWER;
	} else {
		rc = baton__http_respond(c, &req, &resp, keep);
		/* A header the handler gave is not valid HTTP, or no memory for
		 * the response: nothing was queued. */
		if (rc == BATON_EINVAL || rc == BATON_ENOMEM) {
			status = 500;
			next = OUT_ANSWER;
		} else {
			next = rc == BATON_OK ? OUT_NEXT : OUT_CLOSE;
		}
	}
	if (resp.release && resp.body)
		resp.release(resp.body);
	if (st.job) /* its scratch held the response's headers */
		baton__http_job_put(c, st.job);
	if (next != OUT_NEXT)
		return outcome(next, status, req.is_head);
	if (!keep)
		return outcome(OUT_FINISH, 0, false);
	c->served++;
	/* Pipelining: what follows this request moves to the front. */
	memmove(c->in, c->in + end, c->in_len - end);
	c->in_len -= end;
	c->work->prog = (struct baton_http_progress)BATON_HTTP_PROGRESS_INIT;
	return outcome(OUT_NEXT, 0, false);
}

bool baton__http_conn_main(struct http_conn *c)
{
	struct baton_http_server *srv = c->srv;
	bool linger = false; /* a response was written and the server closes */

	if (c->served == 0)
		remote_of(c);
	/* The sweeper aborts this task by its id at a handler's deadline
	 * (spawned with one: server.c spawn_conn). Relaxed: published by
	 * watch's release store of the deadline. */
	if (srv->a.handler_timeout_ns > 0 && !srv->compute)
		__atomic_store_n(&c->tid, baton_task_id(), __ATOMIC_RELAXED);
	for (;;) {
		struct http_pass rd = HTTP_PASS_INIT;
		struct http_outcome o = serve_request(c, &rd);

		if (o.next == OUT_PARK)
			return true;
		if (rd.step >= 0) /* it failed while being read */
			baton__http_step_leave(srv, &rd, NULL);
		/* The request is over, its response queued or refused: the
		 * in-flight unit its read step kept goes back, once. */
		baton__http_pass_release_unit(srv, &rd);
		if (o.next == OUT_NEXT)
			continue;
		if (o.next == OUT_ANSWER)
			linger = answer_error(c, o.status, o.head_only);
		else if (o.next == OUT_FINISH)
			linger = baton__http_flush(c) == BATON_OK;
		break;
	}
	if (baton__http_flush(c) == BATON_OK && linger)
		linger_close(c);
	return false;
}
