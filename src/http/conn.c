/*
 * One connection: a loop of read and parse, body, handle, write.
 *
 * What is read accumulates in c->in, the current request first; its head is
 * parsed in place, resuming where the last read's parse stopped (c->prog),
 * so a head that arrives a byte at a time is scanned once. A chunked body is
 * decoded in place right behind the head. Responses go to c->out and are
 * written when the task is about to wait for the client, so a pipelined
 * batch costs one write. Each step passes through its stage of the server
 * (server_internal.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "../common/alloc.h"
#include "../common/prelude.h"
#include "server_internal.h"

#define IN_INITIAL HTTP_BUF_SIZE
#define OUT_INITIAL HTTP_BUF_SIZE
#define INLINE_BODY_MAX (64 * 1024) /* larger bodies are written directly */

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
	p = c->in == NULL && cap == HTTP_BUF_SIZE ? baton__http_buf_get(c->srv)
						  : baton__realloc(c->in, cap);
	if (p == NULL)
		return BATON_ENOMEM;
	if (p != c->in) /* the parser's progress points into the old buffer */
		c->prog = (struct baton_http_progress)BATON_HTTP_PROGRESS_INIT;
	c->in = p;
	c->in_cap = cap;
	return BATON_OK;
}

static bool out_reserve(struct http_conn *c, size_t more)
{
	size_t cap = c->out_cap ? c->out_cap : OUT_INITIAL;
	char *p;

	if (c->out_len + more <= c->out_cap)
		return true;
	while (cap < c->out_len + more)
		cap *= 2;
	p = c->out == NULL && cap == HTTP_BUF_SIZE ? baton__http_buf_get(c->srv)
						   : baton__realloc(c->out, cap);
	if (p == NULL)
		return false;
	c->out = p;
	c->out_cap = cap;
	return true;
}

/* Write len bytes through the write stage. The step starts when the
 * response was queued, if we know (c->t_queued), else now. */
static int write_step(struct http_conn *c, const void *buf, size_t len)
{
	struct baton_http_server *srv = c->srv;
	struct baton_stage_pass pass = { NULL, c->t_queued };
	int rc;

	c->t_queued = 0;
	rc = baton_stage_enter(srv->stage[HTTP_WRITE], &pass, srv->a.write_timeout_ns);
	if (rc != BATON_OK)
		return rc;
	rc = baton_io_write(c->io, buf, len, srv->a.write_timeout_ns, NULL);
	baton_stage_leave(&pass, NULL);
	return rc;
}

static int flush(struct http_conn *c)
{
	int rc;

	if (c->out_len == 0)
		return BATON_OK;
	rc = write_step(c, c->out, c->out_len);
	c->out_len = 0;
	return rc;
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

/* Between requests: the next request's first bytes. If none is there
 * yet, the connection waits without its buffers (a keep-alive connection
 * is mostly idle: its memory is then its task's stack and the socket), and
 * they are allocated again when bytes arrive. */
static int read_idle(struct http_conn *c, size_t limit, size_t *n)
{
	int64_t idle = c->srv->a.idle_timeout_ns;
	int rc = read_more_for(c, limit, 0, n);

	if (rc != BATON_EAGAIN)
		return rc;
	baton__http_buf_put(c->srv, c->in, c->in_cap);
	baton__http_buf_put(c->srv, c->out, c->out_cap); /* written: flush ran */
	c->in = c->out = NULL;
	c->in_cap = c->out_cap = 0;
	c->out_len = 0;
	c->prog = (struct baton_http_progress)BATON_HTTP_PROGRESS_INIT;
	rc = baton_io_wait(c->io, BATON_IO_READABLE, idle);
	if (rc != BATON_OK)
		return rc;
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
	if (out_reserve(c, 512))
		c->out_len += baton__http_format_error(c->out + c->out_len, 512, status, head_only);
	return flush(c) == BATON_OK;
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
static long read_head(struct http_conn *c, struct baton_http_request *req,
		      struct baton_stage_pass *pass)
{
	struct baton_http_server *srv = c->srv;
	size_t limit = srv->lim.max_target + srv->lim.max_header_bytes + 1024;
	int64_t deadline = -1;
	long n = 0;

	for (;;) {
		size_t got;
		int rc;

		if (c->in_len && pass->stage == NULL &&
		    baton_stage_enter(srv->stage[HTTP_READ], pass, srv->a.header_timeout_ns) !=
			    BATON_OK)
			return -503;
		if (c->in_len) {
			/* Resumes where the last call stopped: a head sent a
			 * byte at a time is scanned once, not once per byte. */
			n = baton__http_parse_head_resume(c->in, c->in_len, &srv->lim, req,
							 &c->prog, NULL);
			if (n != BATON_HTTP_NEED_MORE)
				return n;
			if (deadline < 0)
				deadline = baton__clock_now() + srv->a.header_timeout_ns;
		}
		/* About to wait for the client: what we owe it goes first. */
		if (flush(c) != BATON_OK)
			return 0;
		if (c->in_len == 0) {
			/* Between requests: first give the worker's other
			 * connections their turn. A client that sends its next
			 * request as soon as it reads the response (on the same
			 * CPU, it runs while we write) would otherwise find us
			 * reading it at once, again and again, while the others
			 * wait: fairness per request, as an event loop has. */
			if (c->served)
				baton_sched_yield();
			/* Idle, closed by shutdown. */
			if (!baton__http_conn_set_idle(c, true))
				return 0;
			rc = read_idle(c, limit, &got);
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
		if (!out_reserve(c, sizeof(BATON_HTTP_CONTINUE)))
			return -500;
		memcpy(c->out + c->out_len, BATON_HTTP_CONTINUE, sizeof(BATON_HTTP_CONTINUE) - 1);
		c->out_len += sizeof(BATON_HTTP_CONTINUE) - 1;
		if (flush(c) != BATON_OK)
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
			return rc == BATON_ETIMEDOUT ? -408 : rc == IN_TOO_LARGE ? -413
				: rc == BATON_ENOMEM ? -503 : -400;
		c->in_len += got;
	}
	*body = c->in + head; /* c->in may have moved */
	*len = out_pos - head;
	*end = in_pos;
	return BATON_OK;
}

/* Format the response into c->out (the body inline if small, else written
 * right away). A handler's response is final: a 1xx is refused (BATON_EINVAL,
 * answered 500). 204 and 304 go without content and Content-Length (RFC 9110
 * 6.4.1, 8.6; a body given with them is dropped), the answer to HEAD with
 * the Content-Length GET would have but no content. */
static int respond(struct http_conn *c, const struct baton_http_request *req,
		   struct baton_http_resp *resp, bool keep)
{
	struct baton_http_field extra[BATON_HTTP_MAX_EXTRA + 1];
	size_t nextra = 0, head_cap, n;
	bool bodiless = baton__http_status_bodiless(resp->status);
	bool inline_body = resp->body_len <= INLINE_BODY_MAX;

	if (resp->status < 200)
		return BATON_EINVAL;

	if (resp->content_type)
		extra[nextra++] = (struct baton_http_field){ "Content-Type", resp->content_type, 12,
							     (unsigned)strlen(resp->content_type) };
	for (size_t i = 0; i < resp->nextra && i < BATON_HTTP_MAX_EXTRA; i++)
		extra[nextra++] = (struct baton_http_field){
			resp->extra_names[i], resp->extra_values[i],
			(unsigned short)strlen(resp->extra_names[i]),
			(unsigned)strlen(resp->extra_values[i]) };
	head_cap = 512;
	for (size_t i = 0; i < nextra; i++)
		head_cap += extra[i].name_len + extra[i].value_len + 4;
	if (!out_reserve(c, head_cap + (inline_body ? resp->body_len : 0)))
		return BATON_ENOMEM;
	n = baton__http_format_head(c->out + c->out_len, head_cap, resp->status,
				   bodiless ? BATON_HTTP_NO_BODY : (int64_t)resp->body_len, keep,
				   extra, nextra);
	if (n == 0)
		return BATON_EINVAL; /* a bad header from the handler */
	c->out_len += n;
	if (req->is_head || bodiless || resp->body_len == 0)
		return BATON_OK;
	if (inline_body) {
		memcpy(c->out + c->out_len, resp->body, resp->body_len);
		c->out_len += resp->body_len;
		return BATON_OK;
	}
	if (flush(c) != BATON_OK)
		return BATON_ESYS;
	return write_step(c, resp->body, resp->body_len);
}

/* The handle stage's function, on a compute worker: run the handler for
 * the job and post its connection's semaphore. The job lives on the
 * connection task's stack: after the post it may be gone. */
void baton__http_handle_job(void *item, void *ctx)
{
	struct http_job *job = item;
	struct baton_http_server *srv = ctx;
	baton_sem_t *done = job->c->done;
	int rc;

	rc = srv->a.handler(srv->a.ctx, job->view, job->resp);
	if (rc == BATON_OK && job->resp->status == 0)
		job->resp->status = 200;
	job->rc = rc;
	baton_sem_release(done, 1);
}

/* Hand the request to the handle stage and wait for its job. While the
 * queue is full the connection is not read (we are not reading); after
 * queue_timeout_ns the request gets 503 with Retry-After. */
static int handle_on_stage(struct http_conn *c, const struct baton_http_req *view,
			   struct baton_http_resp *resp)
{
	struct baton_http_server *srv = c->srv;
	struct http_job job = { c, view, resp, BATON_OK };
	int rc;

	if (c->done == NULL && baton_sem_create(&c->done, 0) != BATON_OK)
		return BATON_ENOMEM;
	rc = baton_stage_submit(srv->handle, &job, srv->a.queue_timeout_ns);
	if (rc != BATON_OK)
		return rc == BATON_ENOMEM ? rc : -503;
	/* No timeout: the job is on our stack, so we wait until it is done. */
	baton_sem_acquire(c->done, 1, -1);
	return job.rc;
}

/* Run the handler (or static files, or /_stats): in this task, passing
 * through the handle stage, or on the stage's own tasks. */
static int handle(struct http_conn *c, const struct baton_http_request *req,
		  const char *body, size_t body_len, struct baton_http_resp *resp,
		  char *scratch, size_t scratch_cap, int64_t start)
{
	struct baton_http_server *srv = c->srv;
	struct baton_http_req view = {
		req->method, req->method_len, req->target, req->target_len,
		req->version_minor, body, body_len, req,
	};
	struct baton_stage_pass pass = BATON_STAGE_PASS_INIT;
	int rc;

	memset(resp, 0, sizeof(*resp));
	resp->scratch = scratch;
	resp->scratch_cap = scratch_cap;
	/* CONNECT asks for a tunnel, which no handler can give (it answers a
	 * request, it does not take over the connection): 501, as for a
	 * method the server does not implement, before any handler sees it. */
	if (req->method_id == BATON_HTTP_CONNECT)
		return -501;
	if (srv->a.io_handler != NULL) { /* first, here on the I/O worker */
		rc = srv->a.io_handler(srv->a.io_ctx, &view, resp);
		if (rc != BATON_OK || resp->status != 0)
			return rc;
	}
	if (srv->static_dir && (req->method_id == BATON_HTTP_GET ||
				req->method_id == BATON_HTTP_HEAD)) {
		rc = baton__http_static(srv, req, resp);
		if (rc != 0)
			return rc > 0 ? BATON_OK : rc;
	}
	if (srv->compute)
		return handle_on_stage(c, &view, resp);
	pass.t0 = start;
	if (baton_stage_enter(srv->handle, &pass, srv->a.queue_timeout_ns) != BATON_OK)
		return -503;
	rc = srv->a.handler(srv->a.ctx, &view, resp);
	/* Its end is when the response is queued: the write step's start. */
	baton_stage_leave(&pass, &c->t_queued);
	if (rc == BATON_OK && resp->status == 0)
		resp->status = 200;
	return rc;
}

const char *baton_http_req_header(const struct baton_http_req *req, const char *name,
				  size_t *len)
{
	const struct baton_http_field *f;

	if (req == NULL || req->head_ == NULL || name == NULL)
		return NULL;
	f = baton__http_find_field(req->head_, name);
	if (f && len)
		*len = f->value_len;
	return f ? f->value : NULL;
}

int baton_http_req_field(const struct baton_http_req *req, size_t i, const char **name,
			 size_t *name_len, const char **value, size_t *value_len)
{
	const struct baton_http_request *r;

	if (req == NULL || req->head_ == NULL || name == NULL || name_len == NULL ||
	    value == NULL || value_len == NULL)
		return BATON_EINVAL;
	r = req->head_;
	if (i >= r->nfields)
		return BATON_EINVAL;
	*name = r->fields[i].name;
	*name_len = r->fields[i].name_len;
	*value = r->fields[i].value;
	*value_len = r->fields[i].value_len;
	return BATON_OK;
}

void baton__http_conn_main(void *arg)
{
	struct http_conn *c = arg;
	struct baton_http_server *srv = c->srv;
	struct baton_http_field fields[128];
	size_t nf = srv->lim.max_fields < 128 ? srv->lim.max_fields : 128;
	char scratch[4096];
	bool linger = false; /* a response was written and the server closes */

	for (;;) {
		struct baton_http_request req = { .fields = fields, .fields_cap = nf };
		struct baton_stage_pass rd = BATON_STAGE_PASS_INIT;
		struct baton_http_resp resp;
		char *body = NULL;
		size_t body_len = 0, end = 0;
		long head;
		uintptr_t in_before = 0;
		int64_t t0;
		bool keep;
		int rc = BATON_OK;

		head = read_head(c, &req, &rd);
		if (head > 0) {
			in_before = (uintptr_t)c->in;
			rc = read_body(c, &req, (size_t)head, &body, &body_len, &end);
		}
		/* The read step ends; the in-flight unit it took (KEEP) stays
		 * with the request until its response is written. */
		if (rd.stage != NULL && (head <= 0 || rc != BATON_OK)) {
			baton_stage_leave(&rd, NULL);
			baton_pool_release(srv->inflight, 1);
		}
		if (head == 0)
			break;
		if (head < 0) {
			linger = answer_error(c, (int)-head, req.is_head);
			break;
		}
		if (rc != BATON_OK) {
			linger = answer_error(c, rc <= -400 ? -rc : 400, req.is_head);
			break;
		}
		/* A body larger than the buffer moved it (realloc): the head's
		 * pointers (method, target, fields) are re-read from the new
		 * copy, which has the same bytes. */
		if ((uintptr_t)c->in != in_before)
			baton__http_parse_head(c->in, (size_t)head, &srv->lim, &req, NULL);
		baton_stage_leave(&rd, &t0); /* its end is handle's start */
		rc = handle(c, &req, body, body_len, &resp, scratch, sizeof(scratch), t0);
		keep = req.keep_alive && !baton__http_shutting(srv);
		if (rc != BATON_OK) {
			baton_pool_release(srv->inflight, 1);
			if (resp.release && resp.body)
				resp.release(resp.body);
			linger = answer_error(c, rc == BATON_ETIMEDOUT ? 503 : rc <= -400 ? -rc : 500,
					      req.is_head);
			break;
		}
		rc = respond(c, &req, &resp, keep);
		if (resp.release && resp.body)
			resp.release(resp.body);
		baton_pool_release(srv->inflight, 1);
		if (rc == BATON_EINVAL || rc == BATON_ENOMEM) {
			/* A header the handler gave is not valid HTTP, or no
			 * memory for the response: nothing was queued. */
			linger = answer_error(c, 500, req.is_head);
			break;
		}
		if (rc != BATON_OK)
			break;
		if (!keep) {
			linger = flush(c) == BATON_OK;
			break;
		}
		c->served++;
		/* Pipelining: what follows this request moves to the front. */
		memmove(c->in, c->in + end, c->in_len - end);
		c->in_len -= end;
		c->prog = (struct baton_http_progress)BATON_HTTP_PROGRESS_INIT;
	}
	if (flush(c) == BATON_OK && linger)
		linger_close(c);
	/* Only this task ever waits on the handle, and it is here: close is
	 * not refused (EBUSY). */
	(void)baton_io_close(c->io);
}
