/* SPDX-License-Identifier: MIT */
/*
 * One connection: a loop of read and parse, body, handle, write.
 *
 * What is read accumulates in c->in, the current request first; its head is
 * parsed in place, resuming where the last read's parse stopped (the work
 * block's prog),
 * so a head that arrives a byte at a time is scanned once. A chunked body is
 * decoded in place right behind the head. Responses go to c->out and are
 * written when the task is about to wait for the client, so a pipelined
 * batch costs one write. Each step passes through its stage of the server
 * (server_internal.h).
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
	if (p != c->in && c->work) /* the parser's progress points into the old buffer */
		c->work->prog = (struct baton_http_progress)BATON_HTTP_PROGRESS_INIT;
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
	struct http_pass pass = HTTP_PASS_INIT;
	int64_t t0 = c->t_queued;
	int rc;

	c->t_queued = 0;
	rc = baton__http_step_enter(srv, HTTP_WRITE, &pass, t0, srv->a.write_timeout_ns);
	if (rc != BATON_OK)
		return rc;
	rc = baton_io_write(c->io, buf, len, srv->a.write_timeout_ns, NULL);
	baton__http_step_leave(srv, &pass, NULL);
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

/* What read_idle says when the connection parked: its task ends. */
#define IDLE_PARKED 2

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
	baton__http_buf_put(c->srv, c->in, c->in_cap);
	baton__http_buf_put(c->srv, c->out, c->out_cap); /* written: flush ran */
	baton__http_buf_put(c->srv, c->work, HTTP_BUF_SIZE);
	c->in = c->out = NULL;
	c->work = NULL;
	c->in_cap = c->out_cap = 0;
	c->out_len = 0;
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
		      struct http_pass *pass)
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
				if ((c->work = baton__http_buf_get(srv)) == NULL)
					return -503;
				c->work->prog = (struct baton_http_progress)
					BATON_HTTP_PROGRESS_INIT;
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
		if (flush(c) != BATON_OK)
			return 0;
		if (c->in_len == 0) {
			/* Between requests: first give the worker's other
			 * connections their turn. A client that sends its next
			 * request as soon as it reads the response (on the same
			 * CPU, it runs while we write) would otherwise find us
			 * reading it at once, again and again, while the others
			 * wait: fairness per request, as an event loop has. */
			if (c->served && !c->woke)
				baton_sched_yield();
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

#define HEAD_FIELDS_INLINE 16 /* more header fields: one malloc'd array */

/* The response's header fields in the order they are sent: content_type,
 * the extra_* ones, then resp->headers. */
static int gather_fields(const struct baton_http_resp *resp, struct baton_http_field *f)
{
	size_t n = 0;

	if (resp->content_type)
		f[n++] = (struct baton_http_field){ "Content-Type", resp->content_type, 12,
						    (unsigned)strlen(resp->content_type) };
	for (size_t i = 0; i < resp->nextra && i < BATON_HTTP_MAX_EXTRA; i++)
		f[n++] = (struct baton_http_field){ resp->extra_names[i], resp->extra_values[i], 0, 0 };
	for (size_t i = 0; i < resp->nheaders; i++)
		f[n++] = (struct baton_http_field){ resp->headers[i].name, resp->headers[i].value, 0, 0 };
	for (size_t i = resp->content_type ? 1 : 0; i < n; i++) {
		size_t nl, vl;

		if (f[i].name == NULL || f[i].value == NULL)
			return BATON_EINVAL;
		nl = strlen(f[i].name);
		vl = strlen(f[i].value);
		if (nl > 0xffff || vl > 0xffffffffu)
			return BATON_EINVAL;
		f[i].name_len = (unsigned short)nl;
		f[i].value_len = (unsigned)vl;
	}
	return BATON_OK;
}

/* Queue the response's head in c->out, with room for body_room more
 * bytes behind it; the framing per content_length (>= 0, or
 * BATON_HTTP_CHUNKED_BODY or BATON_HTTP_NO_BODY). BATON_EINVAL: a header
 * field that is not valid HTTP (nothing queued). */
static int queue_head(struct http_conn *c, const struct baton_http_resp *resp,
		      int64_t content_length, bool keep, size_t body_room)
{
	struct baton_http_field small[HEAD_FIELDS_INLINE], *extra = small;
	size_t nextra = (resp->content_type ? 1 : 0) +
			(resp->nextra < BATON_HTTP_MAX_EXTRA ? resp->nextra : BATON_HTTP_MAX_EXTRA);
	size_t head_cap = 512, n;
	int rc;

	if (resp->nheaders && resp->headers == NULL)
		return BATON_EINVAL;
	nextra += resp->nheaders;
	if (nextra > HEAD_FIELDS_INLINE) {
		extra = baton__malloc(nextra * sizeof(*extra));
		if (extra == NULL)
			return BATON_ENOMEM;
	}
	rc = gather_fields(resp, extra);
	for (size_t i = 0; rc == BATON_OK && i < nextra; i++)
		head_cap += extra[i].name_len + (size_t)extra[i].value_len + 4;
	if (rc == BATON_OK && !out_reserve(c, head_cap + body_room))
		rc = BATON_ENOMEM;
	if (rc == BATON_OK) {
		n = baton__http_format_head(c->out + c->out_len, head_cap, resp->status,
					   content_length, keep, extra, nextra);
		if (n == 0)
			rc = BATON_EINVAL; /* a bad header from the handler */
		c->out_len += n;
	}
	if (extra != small)
		baton__free(extra);
	return rc;
}

/* Format the response into c->out (the body inline if small, else written
 * right away). A handler's response is final: a 1xx is refused (BATON_EINVAL,
 * answered 500). 204 and 304 go without content and Content-Length (RFC 9110
 * 6.4.1, 8.6; a body given with them is dropped), the answer to HEAD with
 * the Content-Length GET would have but no content. */
static int respond(struct http_conn *c, const struct baton_http_request *req,
		   struct baton_http_resp *resp, bool keep)
{
	bool bodiless = baton__http_status_bodiless(resp->status);
	bool inline_body = resp->body_len <= INLINE_BODY_MAX;
	int rc;

	if (resp->status < 200)
		return BATON_EINVAL;
	rc = queue_head(c, resp, bodiless ? BATON_HTTP_NO_BODY : (int64_t)resp->body_len, keep,
			inline_body && !bodiless ? resp->body_len : 0);
	if (rc != BATON_OK)
		return rc;
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

/*
 * A streamed response (baton_http_resp_write): one per request, in the
 * connection task's frame. In the I/O-worker shape the handler runs in
 * the connection's task and writes its pieces itself; on a compute worker
 * a piece travels through the job (http_job.piece): the handler asks the
 * connection's task, waiting for the job in baton_stage_call, to write it
 * on its own worker (baton_stage_ask), and only then goes on. Either way one
 * piece at most is between the handler and the kernel's socket buffer,
 * which is the back-pressure: a slow reader slows the handler.
 */
struct http_stream {
	unsigned char kind;	/* HTTP_STREAM_LOCAL (resp->stream_ may be a job) */
	struct http_conn *c;
	const struct baton_http_request *req;
	struct http_job *job;	/* compute shape: the finished job, freed
				   once its response is written */
	bool keep;		/* the head says keep-alive */
	bool chunked;		/* HTTP/1.1: chunks; 1.0: until the close */
	bool started;		/* the head is queued */
	int err;		/* the first write error, returned from then on */
	int64_t deadline;	/* the handler's (< 0: none): no piece after it */
};

/* What handle() returns for a request past its handler timeout. */
#define HANDLER_TIMED_OUT (-504)

static void queue_bytes(struct http_conn *c, const void *p, size_t n)
{
	memcpy(c->out + c->out_len, p, n);
	c->out_len += n;
}

/* In the connection's task: the head if not sent yet, then the piece. */
static int stream_put(struct http_stream *st, struct baton_http_resp *resp, const void *data,
		      size_t len)
{
	struct http_conn *c = st->c;
	char size[24];
	size_t sl = sizeof(size);
	int rc;

	if (!st->started) {
		if (resp->status == 0)
			resp->status = 200;
		/* A final answer with content: not 1xx, 204 or 304. */
		if (resp->status < 200 || baton__http_status_bodiless(resp->status))
			return BATON_EINVAL;
		rc = queue_head(c, resp, st->chunked ? BATON_HTTP_CHUNKED_BODY : BATON_HTTP_NO_BODY,
				st->keep, 0);
		if (rc != BATON_OK)
			return rc;
		st->started = true;
	}
	if (len && !st->req->is_head) {
		/* chunk-size in hex, CRLF (RFC 9112 7.1) */
		size[--sl] = '\n';
		size[--sl] = '\r';
		for (size_t v = len; v; v >>= 4)
			size[--sl] = "0123456789abcdef"[v & 15];
		if (!out_reserve(c, sizeof(size) + 2 + (len <= INLINE_BODY_MAX ? len : 0)))
			return BATON_ENOMEM;
		if (st->chunked)
			queue_bytes(c, size + sl, sizeof(size) - sl);
		if (len <= INLINE_BODY_MAX) {
			queue_bytes(c, data, len);
		} else {
			rc = flush(c);
			if (rc == BATON_OK)
				rc = write_step(c, data, len);
			if (rc != BATON_OK)
				return st->err = rc;
		}
		if (st->chunked)
			queue_bytes(c, "\r\n", 2);
	}
	rc = flush(c); /* flushed as written */
	if (rc != BATON_OK)
		st->err = rc;
	return rc;
}

static int job_piece(struct http_job *job, const void *data, size_t len);

int baton_http_resp_write(struct baton_http_resp *resp, const void *data, size_t len)
{
	struct http_stream *st;

	if (resp == NULL || (data == NULL && len) || resp->stream_ == NULL || resp->body_len)
		return BATON_EINVAL;
	if (*(const unsigned char *)resp->stream_ == HTTP_STREAM_JOB)
		return job_piece(resp->stream_, data, len);
	st = resp->stream_;
	if (st->err == BATON_OK && st->deadline >= 0 && baton__clock_now() >= st->deadline)
		st->err = BATON_ECANCELED; /* the answer is 504, or cut short */
	if (st->err != BATON_OK)
		return st->err;
	return stream_put(st, resp, data, len);
}

/* After the handler of a streamed response: the last chunk after a
 * BATON_OK, nothing after an error (the connection then closes, and the
 * client sees the body end early). */
static int end_stream(struct http_stream *st, int rc)
{
	struct http_conn *c = st->c;

	if (rc == BATON_OK && st->err != BATON_OK)
		rc = st->err;
	if (rc != BATON_OK)
		return rc;
	if (st->chunked && !st->req->is_head) {
		if (!out_reserve(c, 5))
			return BATON_ENOMEM;
		queue_bytes(c, "0\r\n\r\n", 5);
	}
	return BATON_OK;
}

/* --- the job: a request on a compute worker (server_internal.h) --------- */

/* A job for the request, in a block of HTTP_BUF_SIZE bytes: copies of the
 * view, head and fields the handler reads, and its response with the rest
 * of the block as its scratch. The bytes they point into (c->in) and the
 * decoded path travel with the job while it is in the handle stage. */
static struct http_job *job_new(struct http_conn *c, const struct baton_http_req *view,
				struct http_stream *st)
{
	const struct baton_http_request *head = view->head_;
	struct http_job *job = baton__http_buf_get(c->srv);
	size_t used;

	if (job == NULL)
		return NULL;
	memset(job, 0, sizeof(*job));
	job->kind = HTTP_STREAM_JOB;
	job->srv = c->srv;
	job->stream = st;
	job->head = *head;
	memcpy(job->fields, head->fields, head->nfields * sizeof(job->fields[0]));
	job->head.fields = job->fields;
	job->head.fields_cap = head->nfields;
	memcpy(job->remote, c->remote, sizeof(job->remote));
	job->view = *view;
	job->view.head_ = &job->head;
	job->view.remote_addr = job->remote;
	used = (sizeof(*job) + head->nfields * sizeof(job->fields[0]) + 15) & ~(size_t)15;
	job->resp.scratch = (char *)job + used;
	job->resp.scratch_cap = HTTP_BUF_SIZE - used;
	job->resp.stream_ = job;
	return job;
}

/* The connection's side, once the call gave the job back. */
static void job_put(struct http_conn *c, struct http_job *job)
{
	baton__http_buf_put(c->srv, job, HTTP_BUF_SIZE);
}

/* The call's abandon function: the connection left the job at its
 * deadline; where its handler ended (or was skipped), free all of it:
 * its response and the request's bytes and path it carried. */
static void job_abandoned(void *item)
{
	struct http_job *job = item;

	if (job->resp.release && job->resp.body)
		job->resp.release(job->resp.body);
	baton__free(job->decoded);
	baton__free(job->in);
	baton__free(job);
}

/* Call the server's handler in a read section of its reclamation domain
 * (http.h rule 9): a reload frees the handler it replaced only once no
 * call of it is left. The section spans whatever the call parks on, and
 * may end on another worker. */
static int call_handler(struct baton_http_server *srv, const struct baton_http_req *view,
			struct baton_http_resp *resp)
{
	const struct http_handler *h;
	int tok = baton_smr_read_lock(srv->smr), rc;

	if (tok < 0)
		return tok; /* BATON_ENOMEM: this thread's record: a 500 */
	/* Acquire: pairs with set_handler's exchange; the record's fields
	 * are those it was published with. */
	h = __atomic_load_n(&srv->handler, __ATOMIC_ACQUIRE);
	rc = h->fn(h->ctx, view, resp);
	(void)baton_smr_read_unlock(srv->smr, tok);
	return rc;
}

/* The handle stage's function, on a compute worker. With a handler
 * timeout the stage cancels it when its connection leaves at the deadline
 * (BATON_STAGE_CANCEL_ABANDONED), and a job left before it started never
 * gets here. */
void baton__http_handle_job(void *item, void *ctx)
{
	struct http_job *job = item;
	int rc;

	rc = call_handler(ctx, &job->view, &job->resp);
	if (rc == BATON_OK && job->resp.status == 0)
		job->resp.status = 200;
	job->rc = rc;
}

/* In the connection's task, asked by the handler (baton_stage_ask): write
 * the piece it handed over. */
static int job_piece_write(void *arg)
{
	struct http_job *job = arg;

	return stream_put(job->stream, &job->resp, job->piece, job->piece_len);
}

/* In the handler: have the connection's task, which waits for the job,
 * write a streamed piece (its handle lives on its own worker); only then
 * does the handler go on. BATON_ECANCELED once the connection left. */
static int job_piece(struct http_job *job, const void *data, size_t len)
{
	if (job->piece_err != BATON_OK)
		return job->piece_err;
	job->piece = data;
	job->piece_len = len;
	return job->piece_err = baton_stage_ask(job->srv->handle, job, job_piece_write, job);
}

/* Call the handle stage with the request and wait for its job, writing
 * the pieces of a streamed response as the handler asks, until the view's
 * deadline. While the queue is full the connection is not read (we are not
 * reading); after queue_timeout_ns the request gets 503 with Retry-After.
 * At the deadline the connection leaves the job to the stage with the
 * request's bytes (c->in) and decoded path, which the handler may still
 * read (the connection closes after its 504). On success the job stays in
 * st->job until the response is written. */
static int handle_on_stage(struct http_conn *c, const struct baton_http_req *view,
			   struct baton_http_resp *resp, struct http_stream *st, char **decoded)
{
	struct baton_stage_call call = BATON_STAGE_CALL_INIT;
	struct http_job *job = job_new(c, view, st);
	int rc;

	if (job == NULL)
		return BATON_ENOMEM;
	job->in = c->in;
	job->decoded = *decoded;
	call.item = job;
	call.abandon = job_abandoned;
	call.deadline = view->deadline;
	rc = baton_stage_call(c->srv->handle, &call, c->srv->a.queue_timeout_ns);
	if (call.queued && (rc == BATON_ETIMEDOUT || rc == BATON_ECANCELED)) {
		c->in = NULL; /* the job's now, with *decoded */
		c->in_len = c->in_cap = 0;
		*decoded = NULL;
		return HANDLER_TIMED_OUT;
	}
	job->in = NULL; /* back with the job: ours */
	job->decoded = NULL;
	if (rc != BATON_OK) {
		job_put(c, job);
		return rc == BATON_ENOMEM ? rc : -503;
	}
	st->job = job;
	*resp = job->resp;
	return job->rc;
}

/* The request as a handler sees it. The path is decoded into *decoded
 * (malloc'd, for the caller to free) only when it has a '%'. */
static int make_view(struct http_conn *c, const struct baton_http_request *req,
		     const char *body, size_t body_len, struct baton_http_req *view,
		     char **decoded)
{
	const char *path;
	size_t path_len;

	*view = (struct baton_http_req){
		req->method, req->method_len, req->target, req->target_len,
		req->version_minor,
		req->content_length >= 0 || req->chunked ? body : NULL, body_len, req,
		NULL, 0, NULL, 0, c->remote, c->remote_port, -1,
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

/* I/O-worker shape: the handler runs in this task, which the watchdog
 * (server.c) cancels once `deadline` (< 0: none) passes. */
static void watch(struct http_conn *c, int64_t deadline)
{
	if (deadline < 0)
		return;
	/* Release: c->task, stored at the start, to the watchdog's acquire. */
	__atomic_store_n(&c->deadline, deadline, __ATOMIC_RELEASE);
}

/* The handler is done: true if the watchdog cancelled this task (it is
 * then cancelled for good: the connection closes after its 504). */
static bool unwatch(struct http_conn *c, int64_t deadline)
{
	if (deadline < 0)
		return false;
	/* Acq_rel: our claim against the watchdog's compare-and-swap. */
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
	if (srv->static_dir && (req->method_id == BATON_HTTP_GET ||
				req->method_id == BATON_HTTP_HEAD)) {
		rc = baton__http_static(srv, req, resp);
		if (rc != 0)
			return rc > 0 ? BATON_OK : rc;
	}
	if (srv->compute)
		return handle_on_stage(c, view, resp, st, decoded);
	watch(c, view->deadline);
	rc = baton__http_step_enter(srv, HTTP_HANDLE, &pass, start, srv->a.queue_timeout_ns);
	if (rc != BATON_OK)
		return unwatch(c, view->deadline) ? HANDLER_TIMED_OUT : -503;
	rc = call_handler(srv, view, resp);
	/* Its end is when the response is queued: the write step's start. */
	baton__http_step_leave(srv, &pass, &c->t_queued);
	if (unwatch(c, view->deadline))
		return HANDLER_TIMED_OUT; /* the response, if any, is dropped */
	if (rc == BATON_OK && resp->status == 0)
		resp->status = 200;
	return rc;
}

static int handle(struct http_conn *c, const struct baton_http_request *req,
		  const char *body, size_t body_len, struct baton_http_resp *resp,
		  char *scratch, size_t scratch_cap, int64_t start, struct http_stream *st)
{
	struct baton_http_req view;
	char *decoded;
	int rc;

	memset(resp, 0, sizeof(*resp));
	resp->scratch = scratch;
	resp->scratch_cap = scratch_cap;
	*st = (struct http_stream){ HTTP_STREAM_LOCAL, c, req, NULL,
				    req->keep_alive && !baton__http_shutting(c->srv),
				    req->version_minor >= 1, false, BATON_OK, -1 };
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
	if (rc != BATON_OK && rc != HANDLER_TIMED_OUT && rc > -400 && view.deadline >= 0 &&
	    baton__clock_now() >= view.deadline)
		rc = HANDLER_TIMED_OUT;
	resp->stream_ = NULL;
	baton__free(decoded);
	return rc;
}

int baton_http_req_expired(const struct baton_http_req *req)
{
	if (req == NULL)
		return BATON_EINVAL;
	return req->deadline >= 0 && baton__clock_now() >= req->deadline;
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
enum { REQ_NEXT, REQ_CLOSE, REQ_FINISH /* flush, then close */ };

/*
 * One request: read (in the read step, *rd), handle, queue the response.
 * Returns what the connection does next; *answer (0: none) is an error
 * status to answer before it closes, *head_only whether that answer is to
 * HEAD. The read step's in-flight unit is the caller's to give back once
 * this returns, whichever way the request ended
 * (baton__http_pass_release_unit), and so is the step itself if the
 * request failed while being read (rd->step >= 0).
 */
static int serve_request(struct http_conn *c, struct http_pass *rd, int *answer,
			 bool *head_only)
{
	struct baton_http_server *srv = c->srv;
	size_t nf = srv->lim.max_fields < HTTP_CONN_FIELDS ? srv->lim.max_fields
							  : HTTP_CONN_FIELDS;
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
	int rc = BATON_OK, next;

	head = read_head(c, &req, rd);
	*head_only = req.is_head;
	if (head > 0) {
		in_before = (uintptr_t)c->in;
		rc = read_body(c, &req, (size_t)head, &body, &body_len, &end);
	}
	if (head <= 0 || rc != BATON_OK) {
		*answer = head < 0 ? (int)-head : rc == BATON_OK ? 0 : rc <= -400 ? -rc : 400;
		return REQ_CLOSE;
	}
	/* A body larger than the buffer moved it (realloc): the head's
	 * pointers (method, target, fields) are re-read from the new copy,
	 * which has the same bytes. */
	if ((uintptr_t)c->in != in_before)
		baton__http_parse_head(c->in, (size_t)head, &srv->lim, &req, NULL);
	baton__http_step_leave(srv, rd, &t0); /* its end is handle's start */
	rc = handle(c, &req, body, body_len, &resp, c->work->scratch, HTTP_WORK_SCRATCH, t0,
		    &st);
	keep = req.keep_alive && !baton__http_shutting(srv);
	if (st.started) {
		/* Streamed: the head and the pieces are out; only the end is
		 * left, or after an error the close. */
		rc = end_stream(&st, rc);
		keep = keep && st.keep;
		next = rc == BATON_OK ? REQ_NEXT : REQ_CLOSE;
	} else if (rc != BATON_OK) {
		*answer = rc == BATON_ETIMEDOUT ? 503 : rc <= -400 ? -rc : 500;
		next = REQ_CLOSE;
	} else {
		rc = respond(c, &req, &resp, keep);
		/* A header the handler gave is not valid HTTP, or no memory for
		 * the response: nothing was queued. */
		if (rc == BATON_EINVAL || rc == BATON_ENOMEM)
			*answer = 500;
		next = rc == BATON_OK ? REQ_NEXT : REQ_CLOSE;
	}
	if (resp.release && resp.body)
		resp.release(resp.body);
	if (st.job) /* its scratch held the response's headers */
		job_put(c, st.job);
	if (next != REQ_NEXT)
		return next;
	if (!keep)
		return REQ_FINISH;
	c->served++;
	/* Pipelining: what follows this request moves to the front. */
	memmove(c->in, c->in + end, c->in_len - end);
	c->in_len -= end;
	c->work->prog = (struct baton_http_progress)BATON_HTTP_PROGRESS_INIT;
	return REQ_NEXT;
}

bool baton__http_conn_main(struct http_conn *c)
{
	struct baton_http_server *srv = c->srv;
	bool linger = false; /* a response was written and the server closes */

	if (c->served == 0)
		remote_of(c);
	/* The watchdog cancels this task at a handler's deadline. */
	if (srv->a.handler_timeout_ns > 0 && !srv->compute)
		c->task = baton_task_handle();
	for (;;) {
		struct http_pass rd = HTTP_PASS_INIT;
		int answer = 0;
		bool head_only = false;
		int next = serve_request(c, &rd, &answer, &head_only);

		/* Relaxed: only this task and the notification that starts
		 * the next one write it, in turn on one worker. */
		if (__atomic_load_n(&c->parked, __ATOMIC_RELAXED))
			return true; /* idle between requests: nothing held */
		if (rd.step >= 0) /* it failed while being read */
			baton__http_step_leave(srv, &rd, NULL);
		/* The request is over, its response queued or refused: the
		 * in-flight unit its read step kept goes back, once. */
		baton__http_pass_release_unit(srv, &rd);
		if (answer != 0) {
			linger = answer_error(c, answer, head_only);
			break;
		}
		if (next == REQ_FINISH)
			linger = flush(c) == BATON_OK;
		if (next != REQ_NEXT)
			break;
	}
	if (flush(c) == BATON_OK && linger)
		linger_close(c);
	return false;
}
