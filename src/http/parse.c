/* SPDX-License-Identifier: MIT */
/*
 * The request-head parser (src/http/http_parse.h): one linear pass over the
 * buffer that stops at the first byte it cannot judge yet. Every decision
 * is taken at a fixed byte, so the answer for a given prefix never depends
 * on how the bytes were split into reads. With a progress record
 * (baton__http_parse_head_resume) a call that needs more saves the field
 * line, and the byte in it, where it stopped, plus the field semantics so
 * far; the next call goes on from there instead of from byte 0.
 *
 * Strict where leniency has been used to smuggle requests (RFC 9112 11.2):
 * CRLF only (bare CR and bare LF are errors), exactly one SP between the
 * parts of the request line, no whitespace before a field's colon, no
 * obs-fold, and the Content-Length / Transfer-Encoding rules of RFC 9112 6.
 */
#include <limits.h>
#include <string.h>

#include "http_ctype.h"
#include "http_parse.h"

#define METHOD_MAX 32     /* longer tokens are no method we implement: 501 */
#define EMPTY_LINES_MAX 8 /* CRLFs ignored before a request line (RFC 9112 2.2) */

/* What the field lines told about framing and the connection. */
struct head_state {
	int64_t cl; /* -1: no Content-Length */
	unsigned hosts;
	unsigned te_codings; /* non-empty transfer codings, all TE lines */
	unsigned te_chunked; /* how many of them are "chunked" */
	unsigned char te_seen, te_last_chunked, te_bad;
	unsigned char conn_close, conn_keep_alive;
	unsigned char expect_continue, expect_other;
};

/*
 * The two long runs of a head, field values and the request-target, are
 * checked 16 bytes at a time with GCC vector extensions (SSE2 on x86-64,
 * NEON on AArch64); the byte loop after them finds the exact stop.
 */
typedef unsigned char v16 __attribute__((vector_size(16)));

static inline int any_lane(v16 m)
{
	uint64_t w[2];

	memcpy(w, &m, sizeof(w));
	return (w[0] | w[1]) != 0;
}

/* End of the run of field-value bytes (VCHAR, obs-text, SP, HTAB) at pos. */
static inline size_t value_run(const unsigned char *p, size_t pos, size_t end)
{
	while (end - pos >= 16) {
		v16 v;
		memcpy(&v, p + pos, 16);
		if (any_lane((v16)(((v < 0x20) & (v != 0x09)) | (v == 0x7f))))
			break;
		pos += 16;
	}
	while (pos < end && http_is(p[pos], HC_VALUE))
		pos++;
	return pos;
}

/* End of the run of request-target bytes (0x21-0x7e) at pos, at most max. */
static inline size_t target_run(const unsigned char *p, size_t pos, size_t end)
{
	while (end - pos >= 16) {
		v16 v;
		memcpy(&v, p + pos, 16);
		if (any_lane((v16)((v <= 0x20) | (v >= 0x7f))))
			break;
		pos += 16;
	}
	while (pos < end && http_is(p[pos], HC_TARGET))
		pos++;
	return pos;
}

#define FAIL(st, msg)                 \
	do {                          \
		if (why)              \
			*why = (msg); \
		return -(long)(st);   \
	} while (0)

static void trim_ows(const char **s, size_t *n)
{
	while (*n && ((*s)[0] == ' ' || (*s)[0] == '\t'))
		(*s)++, (*n)--;
	while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t'))
		(*n)--;
}

/* Calls fn on each list element of a field value (RFC 9110 5.6.1), OWS
 * trimmed, empty elements skipped; stops at the first non-zero result. */
static long for_each_element(const char *v, size_t n, struct head_state *h,
			     long (*fn)(struct head_state *, const char *, size_t, const char **),
			     const char **why)
{
	size_t i = 0;

	while (i <= n) {
		size_t j = i;
		while (j < n && v[j] != ',')
			j++;
		const char *e = v + i;
		size_t en = j - i;
		trim_ows(&e, &en);
		if (en) {
			long r = fn(h, e, en, why);
			if (r)
				return r;
		}
		i = j + 1;
	}
	return 0;
}

/* Content-Length = 1*DIGIT; a list of identical values counts as one. */
static long cl_element(struct head_state *h, const char *e, size_t n, const char **why)
{
	int64_t v = 0;

	for (size_t i = 0; i < n; i++) {
		if (e[i] < '0' || e[i] > '9')
			FAIL(400, "invalid Content-Length");
		if (v > (INT64_MAX - (e[i] - '0')) / 10)
			FAIL(400, "Content-Length overflows");
		v = v * 10 + (e[i] - '0');
	}
	if (h->cl >= 0 && h->cl != v)
		FAIL(400, "differing Content-Length values");
	h->cl = v;
	return 0;
}

static long content_length(struct head_state *h, const char *v, size_t n, const char **why)
{
	/* An empty element ("5,,5", "5,") is no digit string: refuse it rather
	 * than guess what the sender meant. */
	const char *e = v;
	size_t en = n;
	int digits = 0;

	trim_ows(&e, &en);
	for (size_t i = 0; i < en; i++) {
		if (e[i] >= '0' && e[i] <= '9') {
			digits = 1;
		} else if (e[i] == ',') {
			if (!digits)
				FAIL(400, "empty Content-Length element");
			digits = 0;
		}
	}
	if (!digits)
		FAIL(400, "empty Content-Length element");
	return for_each_element(v, n, h, cl_element, why);
}

/* transfer-coding = token *( OWS ";" OWS transfer-parameter ) */
static long te_element(struct head_state *h, const char *e, size_t n, const char **why)
{
	size_t t = 0;

	(void)why;
	while (t < n && http_is((unsigned char)e[t], HC_TOKEN))
		t++;
	if (t == 0 || (t < n && e[t] != ';' && e[t] != ' ' && e[t] != '\t'))
		h->te_bad = 1;
	h->te_codings++;
	h->te_last_chunked = 0;
	if (HTTP_IEQ(e, t, "chunked")) {
		h->te_chunked++;
		h->te_last_chunked = 1;
		if (t != n) /* chunked has no parameters */
			h->te_bad = 1;
	}
	return 0;
}

static long conn_element(struct head_state *h, const char *e, size_t n, const char **why)
{
	(void)why;
	if (HTTP_IEQ(e, n, "close"))
		h->conn_close = 1;
	else if (HTTP_IEQ(e, n, "keep-alive"))
		h->conn_keep_alive = 1;
	return 0;
}

static long expect_element(struct head_state *h, const char *e, size_t n, const char **why)
{
	(void)why;
	if (HTTP_IEQ(e, n, "100-continue"))
		h->expect_continue = 1;
	else
		h->expect_other = 1;
	return 0;
}

/* The semantics of the fields the parser itself must understand. */
static long field_semantics(struct head_state *h, struct baton_http_request *req,
			    const struct baton_http_field *f, const char **why)
{
	switch (f->name_len) {
	case 4:
		if (!HTTP_IEQ(f->name, 4, "host"))
			return 0;
		if (++h->hosts > 1)
			FAIL(400, "more than one Host");
		for (unsigned i = 0; i < f->value_len; i++)
			if (!http_is((unsigned char)f->value[i], HC_HOST))
				FAIL(400, "invalid Host");
		req->host = f->value;
		req->host_len = f->value_len;
		return 0;
	case 6:
		if (!HTTP_IEQ(f->name, 6, "expect"))
			return 0;
		return for_each_element(f->value, f->value_len, h, expect_element, why);
	case 10:
		if (!HTTP_IEQ(f->name, 10, "connection"))
			return 0;
		return for_each_element(f->value, f->value_len, h, conn_element, why);
	case 14:
		if (!HTTP_IEQ(f->name, 14, "content-length"))
			return 0;
		return content_length(h, f->value, f->value_len, why);
	case 17:
		if (!HTTP_IEQ(f->name, 17, "transfer-encoding"))
			return 0;
		h->te_seen = 1;
		return for_each_element(f->value, f->value_len, h, te_element, why);
	}
	return 0;
}

static enum baton_http_method method_id(const char *m, size_t n)
{
	static const struct {
		const char *s;
		size_t n;
		enum baton_http_method id;
	} tab[] = {
		{ "GET", 3, BATON_HTTP_GET },         { "HEAD", 4, BATON_HTTP_HEAD },
		{ "POST", 4, BATON_HTTP_POST },       { "PUT", 3, BATON_HTTP_PUT },
		{ "DELETE", 6, BATON_HTTP_DELETE },   { "OPTIONS", 7, BATON_HTTP_OPTIONS },
		{ "CONNECT", 7, BATON_HTTP_CONNECT },
	};

	/* Methods are case-sensitive (RFC 9110 9.1). */
	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		if (tab[i].n == n && memcmp(tab[i].s, m, n) == 0)
			return tab[i].id;
	return BATON_HTTP_OTHER;
}

static int is_alpha(unsigned char c)
{
	return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
}

/* absolute-form as HTTP uses it: scheme "://" authority path-abempty
 * ["?" query], scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ), with
 * a non-empty authority (RFC 9110 4.2: http and https URIs have a host). */
static int absolute_form(const unsigned char *t, size_t n)
{
	size_t i = 0;

	if (!is_alpha(t[0]))
		return 0;
	while (i < n &&
	       (is_alpha(t[i]) || (t[i] >= '0' && t[i] <= '9') || t[i] == '+' || t[i] == '-' ||
		t[i] == '.'))
		i++;
	return n - i > 3 && t[i] == ':' && t[i + 1] == '/' && t[i + 2] == '/' && t[i + 3] != '/' &&
		t[i + 3] != '?';
}

/* authority-form: uri-host ":" port, with the port's digits present (RFC
 * 9110 9.3.6: CONNECT names the port even if it is the default). No
 * userinfo, path or query. */
static int authority_form(const unsigned char *t, size_t n)
{
	size_t colon = n;

	while (colon > 0 && t[colon - 1] >= '0' && t[colon - 1] <= '9')
		colon--;
	if (colon == n || colon < 2 || t[colon - 1] != ':')
		return 0;
	for (size_t i = 0; i < colon - 1; i++)
		if (!http_is(t[i], HC_HOST))
			return 0;
	return 1;
}

/* The form of a request-target (RFC 9112 3.2), or -1 if it has none. */
static int target_form(const char *target, size_t n)
{
	const unsigned char *t = (const unsigned char *)target;

	if (t[0] == '/')
		return BATON_HTTP_ORIGIN_FORM;
	if (n == 1 && t[0] == '*')
		return BATON_HTTP_ASTERISK_FORM;
	if (absolute_form(t, n))
		return BATON_HTTP_ABSOLUTE_FORM;
	if (authority_form(t, n))
		return BATON_HTTP_AUTHORITY_FORM;
	return -1;
}

/* The target's form against the method (RFC 9112 3.2): authority-form for
 * CONNECT and only there, asterisk-form only for OPTIONS, origin-form and
 * absolute-form for every other method. 0, or -400. */
static long check_target(struct baton_http_request *req, const char **why)
{
	int form = target_form(req->target, req->target_len);

	if (form < 0)
		FAIL(400, "request-target in no form of RFC 9112 3.2");
	req->target_form = (enum baton_http_target_form)form;
	if (req->method_id == BATON_HTTP_CONNECT) {
		if (form != BATON_HTTP_AUTHORITY_FORM)
			FAIL(400, "CONNECT without an authority-form target");
	} else if (form == BATON_HTTP_AUTHORITY_FORM) {
		FAIL(400, "authority-form target with a method other than CONNECT");
	} else if (form == BATON_HTTP_ASTERISK_FORM && req->method_id != BATON_HTTP_OPTIONS) {
		FAIL(400, "asterisk-form target with a method other than OPTIONS");
	}
	return 0;
}

/* The checks that need the whole head, in a fixed order so that the answer
 * does not depend on where the fields stand. */
static long finish(struct head_state *h, struct baton_http_request *req,
		   const struct baton_http_limits *lim, const char **why)
{
	req->chunked = 0;
	req->content_length = h->cl;
	if (h->te_seen) {
		if (req->version_minor == 0)
			FAIL(400, "Transfer-Encoding in HTTP/1.0");
		if (h->cl >= 0)
			FAIL(400, "both Content-Length and Transfer-Encoding");
		if (h->te_bad)
			FAIL(400, "malformed Transfer-Encoding");
		if (h->te_chunked > 1)
			FAIL(400, "chunked applied more than once");
		if (!h->te_last_chunked)
			FAIL(400, "chunked is not the final transfer coding");
		if (h->te_codings > 1)
			FAIL(501, "unsupported transfer coding");
		req->chunked = 1;
	}
	if (req->version_minor == 1 && h->hosts == 0)
		FAIL(400, "HTTP/1.1 request without Host");
	if (h->cl > lim->max_body)
		FAIL(413, "Content-Length over the body limit");
	if (h->expect_other)
		FAIL(417, "unsupported expectation");
	/* RFC 9110 10.1.1: ignore 100-continue in an HTTP/1.0 request. */
	req->expect_continue = req->version_minor == 1 && h->expect_continue;
	if (req->version_minor == 1)
		req->keep_alive = !h->conn_close;
	else
		req->keep_alive = h->conn_keep_alive && !h->conn_close;
	return 0;
}

_Static_assert(sizeof(struct head_state) <= sizeof(((struct baton_http_progress *)0)->h),
	       "struct baton_http_progress too small for the field semantics");

/* Remember where an unfinished field section stands (see http_parse.h). */
static void save(struct baton_http_progress *pr, const char *buf, size_t len, size_t fstart,
		 size_t line, size_t nscan, size_t vstart, size_t vscan, size_t nfields,
		 const struct head_state *h)
{
	if (!pr)
		return;
	pr->base = buf;
	pr->len = len;
	pr->fstart = fstart;
	pr->line = line;
	pr->nscan = nscan;
	pr->vstart = vstart;
	pr->vscan = vscan;
	pr->nfields = nfields;
	memcpy(pr->h, h, sizeof(*h));
}

long baton__http_parse_head_resume(const char *buf, size_t len, const struct baton_http_limits *lim,
				   struct baton_http_request *req, struct baton_http_progress *pr,
				   const char **why)
{
	const unsigned char *p = (const unsigned char *)buf;
	size_t pos = 0, start, empty = 0, end, maxf, fstart;
	size_t line = 0, name = 0, vstart = 0, vend;
	struct baton_http_field *f = NULL;
	struct head_state h = { .cl = -1 };
	int truncated, phase = 0;
	long r;

	if ((!buf && len) || !lim || !req || (!req->fields && req->fields_cap) ||
	    !lim->max_target || !lim->max_header_bytes || lim->max_body < 0)
		FAIL(-BATON_HTTP_EINVAL, "invalid arguments");
	maxf = lim->max_fields < req->fields_cap ? lim->max_fields : req->fields_cap;

	if (pr && pr->fstart && pr->base == buf && len >= pr->len && pr->nfields <= maxf) {
		/* The request line and the field lines before pr->line were
		 * parsed into *req by the previous call: go on from there. */
		fstart = pr->fstart;
		memcpy(&h, pr->h, sizeof(h));
		req->nfields = pr->nfields;
		phase = pr->vscan ? 2 : pr->nscan ? 1 : 0;
		pos = pr->line;
		goto fields;
	}

	/* Empty lines before the request line. */
	while (pos < len && (p[pos] == '\r' || p[pos] == '\n')) {
		if (p[pos] == '\n')
			FAIL(400, "bare LF");
		if (pos + 1 == len)
			return BATON_HTTP_NEED_MORE;
		if (p[pos + 1] != '\n')
			FAIL(400, "bare CR");
		if (++empty > EMPTY_LINES_MAX)
			FAIL(400, "too many empty lines before the request");
		pos += 2;
	}

	/* method SP */
	start = pos;
	while (pos < len && http_is(p[pos], HC_TOKEN)) {
		if (pos - start == METHOD_MAX)
			FAIL(501, "method too long");
		pos++;
	}
	if (pos == len)
		return BATON_HTTP_NEED_MORE;
	if (pos == start || p[pos] != ' ')
		FAIL(400, "invalid method");
	req->method = buf + start;
	req->method_len = pos - start;
	req->method_id = method_id(req->method, req->method_len);
	req->is_head = req->method_id == BATON_HTTP_HEAD;
	pos++;

	/* request-target SP */
	start = pos;
	pos = target_run(p, pos, len - pos > lim->max_target ? pos + lim->max_target + 1 : len);
	if (pos - start > lim->max_target)
		FAIL(414, "request-target too long");
	if (pos == len)
		return BATON_HTTP_NEED_MORE;
	if (pos == start || p[pos] != ' ')
		FAIL(400, "invalid request-target");
	req->target = buf + start;
	req->target_len = pos - start;
	if ((r = check_target(req, why)) != 0)
		return r;
	pos++;

	/* HTTP-version CRLF: "HTTP/" DIGIT "." DIGIT, checked byte by byte. */
	static const char version[] = "HTTP/d.d\r\n";
	int major = 0, minor = 0;
	for (size_t i = 0; i < sizeof(version) - 1; i++, pos++) {
		if (pos == len)
			return BATON_HTTP_NEED_MORE;
		if (version[i] == 'd') {
			if (p[pos] < '0' || p[pos] > '9')
				FAIL(400, "invalid HTTP-version");
			if (i == 5)
				major = p[pos] - '0';
			else
				minor = p[pos] - '0';
		} else if (p[pos] != (unsigned char)version[i]) {
			FAIL(400, p[pos] == '\n' ? "bare LF" : "invalid HTTP-version");
		}
	}
	if (major != 1 || minor > 1)
		FAIL(505, "HTTP version not supported");
	req->version_minor = minor;
	req->nfields = 0;
	req->host = NULL;
	req->host_len = 0;
	fstart = pos;

fields:
	/* The field section, at most max_header_bytes: scanning stops at `end`;
	 * reaching it means "need more" unless the buffer goes on (431). */
	end = len - fstart > lim->max_header_bytes ? fstart + lim->max_header_bytes : len;
	truncated = end < len;
#define MORE(nscan, vscan)                                                                \
	do {                                                                              \
		if (truncated)                                                            \
			FAIL(431, "header section too large");                            \
		save(pr, buf, len, fstart, line, nscan, vstart, vscan, req->nfields, &h); \
		return BATON_HTTP_NEED_MORE;                                              \
	} while (0)
	for (;;) {
		line = pos;
		if (phase == 1) {
			pos = pr->nscan;
			phase = 0;
			goto name;
		} else if (phase == 2) {
			vstart = pr->vstart;
			pos = pr->vscan;
			f = &req->fields[req->nfields];
			phase = 0;
			if (pos != vstart)
				goto value;
			goto ows; /* only OWS so far: the value has not begun */
		}
		if (pos == end)
			MORE(0, 0);
		if (p[pos] == '\r') {
			if (pos + 1 == end)
				MORE(0, 0);
			if (p[pos + 1] != '\n')
				FAIL(400, "bare CR");
			pos += 2;
			break;
		}
		if (p[pos] == '\n')
			FAIL(400, "bare LF");
		if (p[pos] == ' ' || p[pos] == '\t')
			FAIL(400, "obs-fold or whitespace before a field line");
		if (req->nfields == maxf)
			FAIL(431, "too many header fields");
name:
		name = line;
		while (pos < end && http_is(p[pos], HC_TOKEN))
			pos++;
		if (pos == end)
			MORE(pos, 0);
		if (p[pos] != ':') {
			if (p[pos] == ' ' || p[pos] == '\t')
				FAIL(400, "whitespace before the colon");
			FAIL(400, "invalid field name");
		}
		if (pos == name)
			FAIL(400, "empty field name");
		if (pos - name > USHRT_MAX)
			FAIL(431, "field name too long");
		f = &req->fields[req->nfields];
		f->name = buf + name;
		f->name_len = (unsigned short)(pos - name);
		pos++;
ows:
		while (pos < end && (p[pos] == ' ' || p[pos] == '\t'))
			pos++;
		vstart = pos;
value:
		pos = value_run(p, pos, end);
		if (pos == end)
			MORE(0, pos);
		if (p[pos] == '\n')
			FAIL(400, "bare LF");
		if (p[pos] != '\r')
			FAIL(400, "invalid byte in a field value");
		if (pos + 1 == end)
			MORE(0, pos);
		if (p[pos + 1] != '\n')
			FAIL(400, "bare CR");
		vend = pos;
		while (vend > vstart && (p[vend - 1] == ' ' || p[vend - 1] == '\t'))
			vend--;
		if (vend - vstart > UINT_MAX)
			FAIL(431, "field value too long");
		f->value = buf + vstart;
		f->value_len = (unsigned)(vend - vstart);
		pos += 2;
		req->nfields++;
		if ((r = field_semantics(&h, req, f, why)) != 0)
			return r;
	}
#undef MORE

	if (pr)
		memset(pr, 0, sizeof(*pr)); /* the next head starts afresh */
	if ((r = finish(&h, req, lim, why)) != 0)
		return r;
	if (pos > LONG_MAX)
		FAIL(431, "header section too large");
	return (long)pos;
}

long baton__http_parse_head(const char *buf, size_t len, const struct baton_http_limits *lim,
			    struct baton_http_request *req, const char **why)
{
	return baton__http_parse_head_resume(buf, len, lim, req, NULL, why);
}

const struct baton_http_field *baton__http_find_field(const struct baton_http_request *req,
						      const char *name)
{
	size_t n;

	if (!req || !name)
		return NULL;
	n = strlen(name);
	for (size_t i = 0; i < req->nfields; i++) {
		const struct baton_http_field *f = &req->fields[i];
		if (f->name_len != n)
			continue;
		size_t k = 0;
		while (k < n &&
		       http_lower((unsigned char)f->name[k]) == http_lower((unsigned char)name[k]))
			k++;
		if (k == n)
			return f;
	}
	return NULL;
}
