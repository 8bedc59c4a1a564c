/* SPDX-License-Identifier: MIT */
/*
 * The response a Lua or Scheme handler builds (handlers.h), checked against
 * the rules of docs/httpd.md before the server sees it: the server would
 * refuse a bad header too, but only with a 500 and no word of which header
 * or which handler, and it never prints (it is a library). Here each broken
 * rule gets one line on stderr naming the handler and the rule.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "handlers.h"

void httpd_reply_init(struct httpd_reply *r, struct baton_http_resp *resp, size_t max_body)
{
	memset(r, 0, sizeof(*r));
	r->resp = resp;
	r->max_body = max_body;
	r->text = resp->scratch;
	r->cap = resp->scratch ? resp->scratch_cap : 0;
	r->name_off = r->name_inline;
	r->fields_cap = HTTPD_FIELDS_INLINE;
}

static void free_fields(struct httpd_reply *r)
{
	if (r->name_off != r->name_inline)
		free(r->name_off);
	r->name_off = r->name_inline;
	r->fields_cap = HTTPD_FIELDS_INLINE;
}

/* Room for one more field's offset. */
static int reserve_field(struct httpd_reply *r)
{
	size_t cap = r->fields_cap * 2, *p;

	if (r->nfields < r->fields_cap)
		return BATON_OK;
	p = malloc(cap * sizeof(*p));
	if (p == NULL)
		return httpd_reply_rule(r, "out of memory for %zu header fields", cap);
	memcpy(p, r->name_off, r->nfields * sizeof(*p));
	free_fields(r);
	r->name_off = p;
	r->fields_cap = cap;
	return BATON_OK;
}

int httpd_reply_rule(struct httpd_reply *r, const char *fmt, ...)
{
	va_list ap;

	if (r->rc != BATON_OK)
		return r->rc; /* the first reason is the one worth reading */
	va_start(ap, fmt);
	vsnprintf(r->why, sizeof(r->why), fmt, ap);
	va_end(ap);
	/* The text may quote what the handler gave (a header name with a CR
	 * in it): the log line stays one line. */
	for (char *p = r->why; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	r->rc = BATON_EINVAL;
	return r->rc;
}

/* A language's error message may span lines (tracebacks, Scheme's
 * argument lists): the log keeps it to one, with the breaks escaped. */
int httpd_reply_error(struct httpd_reply *r, const void *msg, size_t len)
{
	const unsigned char *m = msg;
	size_t o = 0;

	if (r->rc != BATON_OK)
		return r->rc;
	for (size_t i = 0; i < len && o + 5 < sizeof(r->why); i++) {
		if (m[i] == '\n' || m[i] == '\t') {
			r->why[o++] = '\\';
			r->why[o++] = m[i] == '\n' ? 'n' : 't';
		} else {
			r->why[o++] = m[i] < 0x20 || m[i] == 0x7f ? '?' : (char)m[i];
		}
		if (i + 1 < len && o + 5 >= sizeof(r->why))
			memcpy(r->why + o, "...", 3), o += 3;
	}
	r->why[o] = '\0';
	r->error = true;
	r->rc = BATON_EINVAL;
	return r->rc;
}

int httpd_reply_status(struct httpd_reply *r, long long status)
{
	if (r->rc != BATON_OK)
		return r->rc;
	if (status < 100 || status > 599)
		return httpd_reply_rule(r, "the status %lld is not in 100-599", status);
	/* A 1xx is an interim response: the client would go on waiting for
	 * the final one, which this request never gets. The server sends the
	 * only 1xx it supports (100 Continue) itself. */
	if (status < 200)
		return httpd_reply_rule(r,
					"the status %lld is interim (1xx); a handler's response "
					"is final (200-599)",
					status);
	r->status = (int)status;
	return BATON_OK;
}

/* tchar of RFC 9110 5.6.2. */
static bool is_tchar(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		(c && strchr("!#$%&'*+-.^_`|~", c));
}

/* field-vchar, SP and HTAB (RFC 9110 5.5; obs-text included): no CR, LF,
 * NUL or other control that could end the line or the value early. */
static bool is_value_char(unsigned char c)
{
	return c == '\t' || (c >= 0x20 && c != 0x7f);
}

/* The fields the server writes itself: framing (Content-Length,
 * Transfer-Encoding), the connection's hop-by-hop fields, Date and Server.
 * A handler's copy would contradict or duplicate them. */
static bool server_owns(const char *name, size_t len)
{
	static const char *const owned[] = {
		"content-length", "transfer-encoding", "connection",
		"keep-alive",     "proxy-connection",  "te",
		"trailer",        "upgrade",           "date",
		"server",
	};

	for (size_t i = 0; i < sizeof(owned) / sizeof(owned[0]); i++)
		if (strlen(owned[i]) == len && strncasecmp(owned[i], name, len) == 0)
			return true;
	return false;
}

/* Room for n more bytes of header text: the scratch buffer while it
 * lasts, then the heap (offsets, not pointers, so the text may move). */
static int reserve(struct httpd_reply *r, size_t n)
{
	size_t cap;
	char *p;

	if (r->cap - r->len >= n)
		return BATON_OK;
	cap = r->cap * 2 > r->len + n ? r->cap * 2 : r->len + n + 256;
	p = r->heap ? realloc(r->text, cap) : malloc(cap);
	if (p == NULL)
		return httpd_reply_rule(r, "out of memory for the response headers");
	if (!r->heap && r->len)
		memcpy(p, r->text, r->len);
	r->text = p;
	r->cap = cap;
	r->heap = true;
	return BATON_OK;
}

static size_t put(struct httpd_reply *r, const void *s, size_t n)
{
	size_t off = r->len;

	memcpy(r->text + off, s, n);
	r->text[off + n] = '\0';
	r->len += n + 1;
	return off;
}

/* Names in messages are cut short: the line is for a human. */
#define SHOWN(n) (int)((n) > 64 ? 64 : (n))

static int check_header(struct httpd_reply *r, const unsigned char *name, size_t nl,
			const unsigned char *value, size_t vl)
{
	if (nl == 0 || nl > 0xffff)
		return httpd_reply_rule(r, "a header name must have 1 to 65535 bytes (%zu here)",
					nl);
	for (size_t i = 0; i < nl; i++)
		if (!is_tchar(name[i]))
			return httpd_reply_rule(r,
						"header name '%.*s': byte 0x%02x is not a token "
						"character",
						SHOWN(nl), name, name[i]);
	for (size_t i = 0; i < vl; i++)
		if (!is_value_char(value[i]))
			return httpd_reply_rule(
				r,
				"header %.*s: its value has the control byte 0x%02x "
				"(no CR, LF or NUL)",
				SHOWN(nl), name, value[i]);
	if (server_owns((const char *)name, nl))
		return httpd_reply_rule(r,
					"header %.*s is the server's to write (framing, "
					"connection or Date/Server)",
					SHOWN(nl), name);
	return BATON_OK;
}

int httpd_reply_header(struct httpd_reply *r, const void *name, size_t name_len, const void *value,
		       size_t value_len)
{
	bool is_type;

	if (r->rc != BATON_OK || check_header(r, name, name_len, value, value_len) != BATON_OK)
		return r->rc;
	is_type = name_len == 12 && strncasecmp(name, "content-type", 12) == 0;
	if (is_type && r->has_type)
		return httpd_reply_rule(r, "Content-Type given twice");
	if ((!is_type && reserve_field(r) != BATON_OK) ||
	    reserve(r, name_len + value_len + 2) != BATON_OK)
		return r->rc;
	if (is_type) {
		put(r, name, name_len);
		r->type_off = put(r, value, value_len);
		r->has_type = true;
	} else {
		r->name_off[r->nfields++] = put(r, name, name_len);
		put(r, value, value_len);
	}
	return BATON_OK;
}

static void release_block(const void *block)
{
	free((void *)block);
}

/* Point the response at the header text, wherever it ended up; the
 * fields' array goes at `array` (aligned, room for nfields). */
static void resolve(struct httpd_reply *r, struct baton_http_header *array)
{
	struct baton_http_resp *resp = r->resp;

	resp->status = r->status ? r->status : 200;
	resp->content_type = r->has_type ? r->text + r->type_off : NULL;
	for (size_t i = 0; i < r->nfields; i++) {
		const char *name = r->text + r->name_off[i];

		array[i].name = name;
		array[i].value = name + strlen(name) + 1;
	}
	resp->headers = r->nfields ? array : NULL;
	resp->nheaders = r->nfields;
	free_fields(r);
}

#define ALIGN_UP(n)                                       \
	(((n) + _Alignof(struct baton_http_header) - 1) & \
	 ~(size_t)(_Alignof(struct baton_http_header) - 1))

int httpd_reply_finish(struct httpd_reply *r, const void *body, size_t len)
{
	struct baton_http_resp *resp = r->resp;
	size_t array = r->nfields * sizeof(struct baton_http_header);
	/* the array, behind the text, aligned wherever the text is */
	size_t at = ALIGN_UP((uintptr_t)r->text + r->len) - (uintptr_t)r->text;
	char *block;

	if (r->rc != BATON_OK)
		return r->rc;
	if (len > r->max_body)
		return httpd_reply_rule(r,
					"the body has %zu bytes, more than the limit of %zu "
					"(--max-response-body)",
					len, r->max_body);
	if (len && (r->status == 204 || r->status == 304))
		return httpd_reply_rule(r, "a %d response has no body (%zu bytes given)", r->status,
					len);
	if (!r->heap && r->cap >= at + array && r->cap - at - array >= len) {
		/* The common case: everything in the scratch buffer. */
		if (len)
			memcpy(r->text + at + array, body, len);
		resp->body = len ? r->text + at + array : NULL;
	} else {
		/* One block, body first, so the release the server calls
		 * with the body's address frees the header text as well. */
		size_t text_at = ALIGN_UP(len);

		at = ALIGN_UP(r->len); /* malloc's blocks are aligned */
		block = malloc(text_at + at + array + 1);
		if (block == NULL)
			return httpd_reply_rule(r, "out of memory for a body of %zu bytes", len);
		if (len)
			memcpy(block, body, len);
		memcpy(block + text_at, r->text, r->len);
		if (r->heap)
			free(r->text);
		r->text = block + text_at;
		r->heap = false;
		resp->body = block;
		resp->release = release_block;
	}
	resp->body_len = len;
	resolve(r, (struct baton_http_header *)(void *)(r->text + at));
	r->finished = true;
	return BATON_OK;
}

int httpd_reply_stream(struct httpd_reply *r)
{
	if (r->rc != BATON_OK)
		return r->rc;
	if (r->status == 204 || r->status == 304)
		return httpd_reply_rule(r, "a %d response has no body, so it cannot be streamed",
					r->status);
	if (httpd_reply_finish(r, NULL, 0) != BATON_OK)
		return r->rc;
	r->stream = true;
	return BATON_OK;
}

int httpd_reply_piece(struct httpd_reply *r, const void *data, size_t len)
{
	char *p;

	if (r->rc != BATON_OK)
		return r->rc;
	if (len > r->max_body)
		return httpd_reply_rule(r,
					"a piece of %zu bytes is more than the limit of %zu "
					"(--max-response-body)",
					len, r->max_body);
	if (len > r->piece_cap) {
		p = realloc(r->piece, len);
		if (p == NULL)
			return httpd_reply_rule(r, "out of memory for a piece of %zu bytes", len);
		r->piece = p;
		r->piece_cap = len;
	}
	if (len)
		memcpy(r->piece, data, len);
	r->piece_len = len;
	return BATON_OK;
}

int httpd_reply_send_piece(struct httpd_reply *r)
{
	int rc;

	if (r->rc != BATON_OK)
		return r->rc;
	rc = baton_http_resp_write(r->resp, r->piece, r->piece_len);
	if (rc == BATON_EINVAL)
		return httpd_reply_rule(r, "the response head is not valid HTTP");
	if (rc != BATON_OK) {
		/* The client went away or stopped reading: not the handler's
		 * fault, but its stream ends here. */
		httpd_reply_error(r, "the client is gone: ", 20);
		r->why[sizeof(r->why) - 1] = '\0';
		snprintf(r->why + strlen(r->why), sizeof(r->why) - strlen(r->why), "%s",
			 baton_strerror(rc));
		r->rc = rc;
	}
	return r->rc;
}

int httpd_reply_done(struct httpd_reply *r, const char *lang, const char *file)
{
	struct baton_http_resp *resp = r->resp;
	char line[HTTPD_WHY_MAX + 512];
	int n;

	free(r->piece);
	r->piece = NULL;
	r->piece_cap = 0;
	if (r->rc == BATON_OK && r->finished)
		return BATON_OK;
	if (r->rc == BATON_OK)
		httpd_reply_rule(r, "no response was made");
	free_fields(r);
	if (r->heap)
		free(r->text);
	r->heap = false;
	if (r->finished && resp->release && resp->body)
		resp->release(resp->body);
	resp->body = NULL;
	resp->body_len = 0;
	resp->release = NULL;
	resp->nextra = 0;
	resp->headers = NULL;
	resp->nheaders = 0;
	resp->content_type = NULL;
	/* One write, so that lines from several workers do not interleave. */
	n = snprintf(line, sizeof(line), "baton-httpd: %s handler %s: %s%s\n", lang, file,
		     r->error ? "error: " : "broke a rule: ", r->why);
	if (n > (int)sizeof(line) - 1)
		n = (int)sizeof(line) - 1, line[n - 1] = '\n';
	if (write(STDERR_FILENO, line, (size_t)n) < 0) {
		/* Nowhere else to say it; the client still gets its 500. */
	}
	return r->rc;
}
