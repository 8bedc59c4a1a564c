/* SPDX-License-Identifier: MIT */
/*
 * A connection's responses: the output buffer, the write step, a
 * response's head and body formatted into the buffer, and streamed
 * responses (baton_http_resp_write). What is queued in c->out is written
 * when the connection's task is about to wait for its client
 * (baton__http_flush), so a pipelined batch of responses costs one write.
 */
#include <string.h>

#include "../common/alloc.h"
#include "../common/prelude.h"
#include "server_internal.h"

#define OUT_INITIAL HTTP_BUF_SIZE

bool baton__http_out_reserve(struct http_conn *c, size_t more)
{
	size_t cap = c->out_cap ? c->out_cap : OUT_INITIAL;
	char *p;

	if (c->out_len + more <= c->out_cap)
		return true;
	while (cap < c->out_len + more)
		cap *= 2;
	p = c->out == NULL && cap == HTTP_BUF_SIZE ? baton__http_buf_get(c)
						   : baton__realloc(c->out, cap);
	if (p == NULL)
		return false;
	c->out = p;
	c->out_cap = cap;
	return true;
}

/* Write len bytes through the write stage. The step starts when the
 * response was queued, if we know (c->t_queued), else now. */
int baton__http_write_step(struct http_conn *c, const void *buf, size_t len)
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

int baton__http_flush(struct http_conn *c)
{
	int rc;

	if (c->out_len == 0)
		return BATON_OK;
	rc = baton__http_write_step(c, c->out, c->out_len);
	c->out_len = 0;
	return rc;
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
		f[n++] = (struct baton_http_field){ resp->extra_names[i], resp->extra_values[i], 0,
						    0 };
	for (size_t i = 0; i < resp->nheaders; i++)
		f[n++] = (struct baton_http_field){ resp->headers[i].name, resp->headers[i].value,
						    0, 0 };
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
	if (rc == BATON_OK && !baton__http_out_reserve(c, head_cap + body_room))
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
int baton__http_respond(struct http_conn *c, const struct baton_http_request *req,
			struct baton_http_resp *resp, bool keep)
{
	bool bodiless = baton__http_status_bodiless(resp->status);
	bool inline_body = resp->body_len <= HTTP_INLINE_BODY_MAX;
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
	if (baton__http_flush(c) != BATON_OK)
		return BATON_ESYS;
	return baton__http_write_step(c, resp->body, resp->body_len);
}

static void queue_bytes(struct http_conn *c, const void *p, size_t n)
{
	memcpy(c->out + c->out_len, p, n);
	c->out_len += n;
}

/* In the connection's task: the head if not sent yet, then the piece. */
int baton__http_stream_put(struct http_stream *st, struct baton_http_resp *resp, const void *data,
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
		if (!baton__http_out_reserve(
			    c, sizeof(size) + 2 + (len <= HTTP_INLINE_BODY_MAX ? len : 0)))
			return BATON_ENOMEM;
		if (st->chunked)
			queue_bytes(c, size + sl, sizeof(size) - sl);
		if (len <= HTTP_INLINE_BODY_MAX) {
			queue_bytes(c, data, len);
		} else {
			rc = baton__http_flush(c);
			if (rc == BATON_OK)
				rc = baton__http_write_step(c, data, len);
			if (rc != BATON_OK)
				return st->err = rc;
		}
		if (st->chunked)
			queue_bytes(c, "\r\n", 2);
	}
	rc = baton__http_flush(c); /* flushed as written */
	if (rc != BATON_OK)
		st->err = rc;
	return rc;
}

int baton_http_resp_write(struct baton_http_resp *resp, const void *data, size_t len)
{
	struct http_stream *st;

	if (resp == NULL || (data == NULL && len) || resp->stream_ == NULL || resp->body_len)
		return BATON_EINVAL;
	if (*(const unsigned char *)resp->stream_ == HTTP_STREAM_JOB)
		return baton__http_job_piece(resp->stream_, data, len);
	st = resp->stream_;
	if (st->err == BATON_OK && st->deadline >= 0 && baton__clock_now() >= st->deadline)
		st->err = BATON_ECANCELED; /* the answer is 504, or cut short */
	if (st->err != BATON_OK)
		return st->err;
	return baton__http_stream_put(st, resp, data, len);
}

/* After the handler of a streamed response: the last chunk after a
 * BATON_OK, nothing after an error (the connection then closes, and the
 * client sees the body end early). */
int baton__http_end_stream(struct http_stream *st, int rc)
{
	struct http_conn *c = st->c;

	if (rc == BATON_OK && st->err != BATON_OK)
		rc = st->err;
	if (rc != BATON_OK)
		return rc;
	if (st->chunked && !st->req->is_head) {
		if (!baton__http_out_reserve(c, 5))
			return BATON_ENOMEM;
		queue_bytes(c, "0\r\n\r\n", 5);
	}
	return BATON_OK;
}
