/* SPDX-License-Identifier: MIT */
/*
 * src/http/http_parse.h - the HTTP/1.1 request parser of baton-httpd
 * (RFC 9112 message syntax, RFC 9110 semantics): the request head, the
 * chunked transfer coding, and the response heads the server writes.
 * Internal to baton; docs/http-parser.md has every choice made where the
 * RFCs allow several.
 *
 * The parser never allocates and never copies: a parsed request points into
 * the caller's buffer. The server appends what it reads to a buffer and
 * calls the head parser again with the whole buffer until it answers "done"
 * or an error; the only state kept between calls is an optional progress
 * record that saves re-scanning what was already judged (slow clients).
 *
 *     struct baton_http_limits lim = BATON_HTTP_LIMITS_DEFAULT;
 *     struct baton_http_field fields[100];
 *     struct baton_http_request req = { .fields = fields, .fields_cap = 100 };
 *     struct baton_http_progress prog = BATON_HTTP_PROGRESS_INIT; // per connection
 *     const char *why;
 *     long n = baton__http_parse_head_resume(buf, len, &lim, &req, &prog, &why);
 *     if (n == BATON_HTTP_NEED_MORE)
 *         ... read more, append, call again ...
 *     else if (n < 0)
 *         ... write baton__http_format_error(out, cap, (int)-n), close ...
 *     else
 *         ... request head is buf[0, n); the body (if any) follows ...
 *
 * Rules a caller must keep:
 *  - Call the head parser with the same buffer start each time (the bytes
 *    from the first byte of this request), grown by what arrived.
 *  - The request's pointers stay valid only while the buffer is unchanged.
 *  - On any error result (< 0) answer with that status and close the
 *    connection: the framing of anything after it is unknown.
 *  - A body: content_length >= 0 bytes follow the head, or (chunked) feed
 *    the bytes after the head to a baton_http_chunked decoder until it says
 *    done; its `consumed` tells where the next pipelined request starts.
 *    Neither set: no body.
 */
#ifndef BATON_HTTP_PARSE_H
#define BATON_HTTP_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* Limits; every one is checked as early as the bytes allow. */
struct baton_http_limits {
	size_t max_target;       /* request-target bytes (414) */
	size_t max_header_bytes; /* field section bytes, incl. final CRLF; also trailers (431) */
	size_t max_fields;       /* header fields (431); also trailer fields */
	int64_t max_body;        /* decoded body bytes (413) */
};

#define BATON_HTTP_LIMITS_DEFAULT         \
	{                                 \
		8192, 32768, 100, 1048576 \
	}

/* Result codes besides "done, N bytes" (> 0) and "-status" (<= -400). */
enum {
	BATON_HTTP_NEED_MORE = 0,
	BATON_HTTP_EINVAL = -1, /* NULL pointer or zero limit: a caller bug */
};

enum baton_http_method {
	BATON_HTTP_OTHER = 0,
	BATON_HTTP_GET,
	BATON_HTTP_HEAD,
	BATON_HTTP_POST,
	BATON_HTTP_PUT,
	BATON_HTTP_DELETE,
	BATON_HTTP_OPTIONS,
	BATON_HTTP_CONNECT,
};

/* The four request-target forms of RFC 9112 3.2. The parser checks the
 * form against the method: authority-form only with CONNECT (which needs
 * it), asterisk-form only with OPTIONS, origin-form and absolute-form with
 * every other method; anything else, or a target in none of the forms
 * ("foo", "*x", "http:/x"), is a 400. */
enum baton_http_target_form {
	BATON_HTTP_ORIGIN_FORM = 0, /* "/path?query" */
	BATON_HTTP_ABSOLUTE_FORM,   /* "http://host/path" */
	BATON_HTTP_AUTHORITY_FORM,  /* "host:port" (CONNECT) */
	BATON_HTTP_ASTERISK_FORM,   /* "*" (OPTIONS) */
};

struct baton_http_field {
	const char *name, *value; /* into the caller's buffer, not NUL-terminated */
	unsigned short name_len;
	unsigned value_len; /* value without leading/trailing OWS */
};

struct baton_http_request {
	/* Set by the caller before parsing. */
	struct baton_http_field *fields;
	size_t fields_cap; /* fewer than lim->max_fields: this is the limit */

	/* Set by a successful parse (unspecified after need-more or an error),
	 * except method, method_len, method_id and is_head: those are set as
	 * soon as the method is read, so that an error answer to a HEAD
	 * request found later in its head can leave out its body. Zero
	 * is_head before the first call. */
	const char *method;
	size_t method_len;
	enum baton_http_method method_id;
	const char *target;
	size_t target_len;
	enum baton_http_target_form target_form;
	int version_minor; /* 0 or 1 (HTTP/1.0, HTTP/1.1) */
	const char *host;  /* Host value, NULL if absent */
	size_t host_len;
	size_t nfields;
	int64_t content_length;        /* -1 if absent (and always when chunked) */
	unsigned char chunked;         /* Transfer-Encoding: chunked */
	unsigned char keep_alive;      /* the connection may stay open after the response */
	unsigned char expect_continue; /* Expect: 100-continue (HTTP/1.1 only) */
	unsigned char is_head;         /* method is HEAD: no body in the response */
};

/*
 * Parse a request head at the start of buf[0, len).
 *   > 0  the head is complete and is that many bytes (leading empty lines
 *        included); *req is filled in.
 *   0    BATON_HTTP_NEED_MORE: valid so far, incomplete.
 *   < 0  -status (-400, -413, -414, -417, -431, -501, -505); *why (if why is
 *        not NULL) is a short static reason for a log line. -1: bad call.
 */
long baton__http_parse_head(const char *buf, size_t len, const struct baton_http_limits *lim,
			    struct baton_http_request *req, const char **why);

/*
 * The same, resumed: a caller that calls again after every read of a slow
 * client would re-parse the whole head each time (quadratic in its size).
 * With a progress record the parser goes on from the field line (and the
 * byte inside it) where the previous call stopped, so a head costs O(size)
 * whatever the reads. Rules: one record per connection, zeroed before its
 * first use (BATON_HTTP_PROGRESS_INIT); pass the same req each time; it
 * clears itself when a head is complete. It is used only while buf is the
 * same pointer and len did not shrink; if you move or change bytes of an
 * unfinished head in place, zero it. The request line is always re-parsed
 * (it is bounded by max_target).
 */
struct baton_http_progress {
	const char *base; /* all private */
	size_t len, fstart, line, nscan, vstart, vscan, nfields;
	unsigned char h[48];
};

#define BATON_HTTP_PROGRESS_INIT \
	{                        \
		0                \
	}

long baton__http_parse_head_resume(const char *buf, size_t len, const struct baton_http_limits *lim,
				   struct baton_http_request *req,
				   struct baton_http_progress *progress, const char **why);

/* Case-insensitive lookup of a header field of a parsed request (the first
 * one of that name); NULL if absent. */
const struct baton_http_field *baton__http_find_field(const struct baton_http_request *req,
						      const char *name);

/*
 * The chunked decoder: an incremental state machine over any split of the
 * input. Initialise once per body, then feed the bytes after the head.
 */
struct baton_http_chunked {
	int state;
	int status; /* sticky error: 0 or -status */
	const char *why;
	int64_t max_body, total; /* decoded so far */
	int64_t chunk_left;      /* data bytes left in the current chunk */
	int64_t size;            /* chunk-size being read */
	size_t line_len;         /* bytes of the current chunk line or trailer line */
	size_t ext_total;        /* chunk-extension bytes in the whole body */
	size_t trailer_bytes, trailer_fields;
	size_t max_trailer_bytes, max_trailer_fields;
};

void baton__http_chunked_init(struct baton_http_chunked *c, const struct baton_http_limits *lim);

/*
 * Decode from in[0, in_len): writes body bytes to out[0, out_cap) (out may
 * point into the same buffer at or before in, decoding in place: output
 * never overtakes input; otherwise the two must not overlap), sets
 * *consumed and *produced. Returns 1 when the body and its trailers are
 * complete (*consumed stops right after them), 0 when it needs more input
 * or more room in out (check *consumed), -status on a malformed body (400)
 * or one over the limits (413, 431 for trailers); the error is sticky.
 */
int baton__http_chunked_feed(struct baton_http_chunked *c, const char *in, size_t in_len,
			     size_t *consumed, char *out, size_t out_cap, size_t *produced);

/* 1 once the decoder has seen the end of the body, else 0. */
int baton__http_chunked_done(const struct baton_http_chunked *c);

/* Response heads. */
#define BATON_HTTP_CHUNKED_BODY (-1) /* content_length: Transfer-Encoding: chunked */
#define BATON_HTTP_NO_BODY (-2)      /* content_length: no framing header (1xx, 204, 304) */
#define BATON_HTTP_CONTINUE "HTTP/1.1 100 Continue\r\n\r\n"

/* The reason phrase of a status ("" for statuses it does not know). */
const char *baton__http_reason(int status);

/*
 * Write "HTTP/1.1 status reason", Date, Server: baton, the framing header
 * (Content-Length, Transfer-Encoding: chunked, or none), Connection, the
 * extra fields and the empty line into buf. Returns the bytes written, or 0
 * if they do not fit in cap, status is not 100..999, or an extra field has
 * a name that is not a token or a value with CR, LF or NUL.
 */
size_t baton__http_format_head(char *buf, size_t cap, int status, int64_t content_length,
			       int keep_alive, const struct baton_http_field *extra, size_t nextra);

/* A complete canned error response (head and a short text body) with
 * Connection: close; 0 if it does not fit or status is not 100..999. With
 * head_only (the answer to HEAD) the same head, Content-Length included,
 * without the body (RFC 9110 9.3.2). */
size_t baton__http_format_error(char *buf, size_t cap, int status, int head_only);

/* 1 if a response with this status has no content and no Content-Length
 * (1xx, 204, 304: RFC 9110 6.4.1, 8.6), else 0. */
int baton__http_status_bodiless(int status);

/* The current IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT", 29 bytes, no
 * NUL), cached per second per thread. */
const char *baton__http_date(void);

/* uri.c: the path and the query of a request-target of the given form
 * (enum baton_http_target_form), both as sent: the path without scheme
 * and authority ("" for authority-form, "/" for an absolute-form target
 * without one), the query after '?' (NULL when there is none). */
void baton__http_split_target(const char *target, size_t len, int form, const char **path,
			      size_t *path_len, const char **query, size_t *query_len);

#endif /* BATON_HTTP_PARSE_H */
