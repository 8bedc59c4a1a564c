/* SPDX-License-Identifier: MIT */
/*
 * Tests of the HTTP/1.1 request parser (src/http/http_parse.h): a table of
 * requests with the status each must get, every split point of each, the
 * parsed fields, pipelining, limits, Connection and Expect semantics.
 * The chunked decoder and the response heads are in test_http_chunked.c.
 */
#include <limits.h>
#include <stdio.h>

#include "check.h"

#include "http_parse.h"

#define WHOLE LONG_MAX /* expected: complete, the whole string is the head */

struct case_ {
	const char *name;
	const char *req;
	long expect; /* WHOLE, or -status */
};

static const struct case_ cases[] = {
	/* valid */
	{ "get", "GET / HTTP/1.1\r\nHost: a\r\n\r\n", WHOLE },
	{ "head", "HEAD /x?y=1 HTTP/1.1\r\nHost: a\r\n\r\n", WHOLE },
	{ "post-cl", "POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n", WHOLE },
	{ "post-chunked", "POST /p HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",
	  WHOLE },
	{ "te-case", "POST /p HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: ChUnKeD\r\n\r\n", WHOLE },
	{ "http10-no-host", "GET / HTTP/1.0\r\n\r\n", WHOLE },
	{ "leading-crlf", "\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", WHOLE },
	{ "options-asterisk", "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", WHOLE },
	{ "connect-authority", "CONNECT a.example:443 HTTP/1.1\r\nHost: a.example:443\r\n\r\n",
	  WHOLE },
	{ "absolute-form", "GET http://a.example/x HTTP/1.1\r\nHost: a.example\r\n\r\n", WHOLE },
	{ "ows-and-empty-value", "GET / HTTP/1.1\r\nHost:a\r\nX-E:\r\nX-T: \t v \t\r\n\r\n",
	  WHOLE },
	{ "cl-list-identical", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 7, 7\r\n\r\n",
	  WHOLE },
	{ "cl-repeated-identical",
	  "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 7\r\nContent-Length: 7\r\n\r\n", WHOLE },
	{ "obs-text-value", "GET / HTTP/1.1\r\nHost: a\r\nX: caf\xc3\xa9\r\n\r\n", WHOLE },
	{ "empty-host", "GET / HTTP/1.1\r\nHost:\r\n\r\n", WHOLE },
	{ "other-method", "PATCH / HTTP/1.1\r\nHost: a\r\n\r\n", WHOLE },
	{ "expect-continue",
	  "PUT / HTTP/1.1\r\nHost: a\r\nExpect: 100-Continue\r\nContent-Length: 1\r\n\r\n", WHOLE },

	/* request line */
	{ "lowercase-version", "GET / http/1.1\r\nHost: a\r\n\r\n", -400 },
	{ "http09", "GET /\r\n\r\n", -400 },
	{ "two-spaces", "GET  / HTTP/1.1\r\nHost: a\r\n\r\n", -400 },
	{ "tab-separator", "GET\t/ HTTP/1.1\r\nHost: a\r\n\r\n", -400 },
	{ "space-in-target", "GET /a b HTTP/1.1\r\nHost: a\r\n\r\n", -400 },
	{ "ctl-in-target", "GET /a\x01 HTTP/1.1\r\nHost: a\r\n\r\n", -400 },
	{ "trailing-space", "GET / HTTP/1.1 \r\nHost: a\r\n\r\n", -400 },
	{ "garbage", "\x16\x03\x01\x02\x00\x01", -400 },
	{ "version-2", "GET / HTTP/2.0\r\nHost: a\r\n\r\n", -505 },
	{ "version-1.2", "GET / HTTP/1.2\r\nHost: a\r\n\r\n", -505 },
	{ "version-0.9", "GET / HTTP/0.9\r\n\r\n", -505 },
	{ "version-long", "GET / HTTP/1.10\r\nHost: a\r\n\r\n", -400 },
	{ "long-method", "ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFGHIJ / HTTP/1.1\r\n\r\n", -501 },
	{ "many-empty-lines",
	  "\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", -400 },

	/* line endings */
	{ "bare-lf-request-line", "GET / HTTP/1.1\nHost: a\r\n\r\n", -400 },
	{ "bare-lf-field", "GET / HTTP/1.1\r\nHost: a\n\r\n", -400 },
	{ "bare-lf-end", "GET / HTTP/1.1\r\nHost: a\r\n\n", -400 },
	{ "bare-cr-field", "GET / HTTP/1.1\r\nHost: a\rX: b\r\n\r\n", -400 },
	{ "bare-lf-leading", "\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", -400 },

	/* field syntax */
	{ "obs-fold", "GET / HTTP/1.1\r\nHost: a\r\nX: b\r\n c\r\n\r\n", -400 },
	{ "ws-before-first-field", "GET / HTTP/1.1\r\n Host: a\r\n\r\n", -400 },
	{ "space-before-colon", "GET / HTTP/1.1\r\nHost : a\r\n\r\n", -400 },
	{ "tab-before-colon", "GET / HTTP/1.1\r\nHost\t: a\r\n\r\n", -400 },
	{ "no-colon", "GET / HTTP/1.1\r\nHost a\r\n\r\n", -400 },
	{ "empty-name", "GET / HTTP/1.1\r\n: a\r\nHost: a\r\n\r\n", -400 },
	{ "bad-name-char", "GET / HTTP/1.1\r\nHo(st: a\r\n\r\n", -400 },
	{ "ctl-in-value", "GET / HTTP/1.1\r\nHost: a\r\nX: a\x01\r\n\r\n", -400 },
	{ "nul-in-value", "GET / HTTP/1.1\r\nHost: a\r\nX: a\0b\r\n\r\n", -400 },
	{ "del-in-value", "GET / HTTP/1.1\r\nHost: a\r\nX: a\x7f\r\n\r\n", -400 },

	/* Host */
	{ "missing-host", "GET / HTTP/1.1\r\n\r\n", -400 },
	{ "two-hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", -400 },
	{ "two-hosts-1.0", "GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n", -400 },
	{ "invalid-host", "GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", -400 },

	/* framing and smuggling */
	{ "cl-and-te",
	  "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
	  -400 },
	{ "te-and-cl",
	  "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
	  -400 },
	{ "cl-differing",
	  "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", -400 },
	{ "cl-list-differing", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 6\r\n\r\n", -400 },
	{ "cl-empty-element", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5,,5\r\n\r\n", -400 },
	{ "cl-empty", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length:\r\n\r\n", -400 },
	{ "cl-negative", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", -400 },
	{ "cl-plus", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +1\r\n\r\n", -400 },
	{ "cl-hex", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0x10\r\n\r\n", -400 },
	{ "cl-space-inside", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1 0\r\n\r\n", -400 },
	{ "cl-overflow",
	  "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 9223372036854775808\r\n\r\n", -400 },
	{ "te-gzip-chunked",
	  "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", -501 },
	{ "te-chunked-gzip",
	  "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", -400 },
	{ "te-identity", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity\r\n\r\n",
	  -400 },
	{ "te-empty", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\r\n\r\n", -400 },
	{ "te-chunked-twice",
	  "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: "
	  "chunked\r\n\r\n",
	  -400 },
	{ "te-xchunked", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: xchunked\r\n\r\n",
	  -400 },
	{ "te-chunked-param",
	  "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked;q=1\r\n\r\n", -400 },
	{ "te-http10", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", -400 },
	{ "te-obs-fold", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\r\n chunked\r\n\r\n",
	  -400 },
	{ "te-space-colon", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding : chunked\r\n\r\n",
	  -400 },

	/* Expect */
	{ "expect-other", "PUT / HTTP/1.1\r\nHost: a\r\nExpect: 200-ok\r\n\r\n", -417 },

	/* The request-target's form against the method (RFC 9112 3.2) */
	{ "origin", "GET /a?b HTTP/1.1\r\nHost: a\r\n\r\n", WHOLE },
	{ "absolute", "GET http://a:8080/x?y HTTP/1.1\r\nHost: a\r\n\r\n", WHOLE },
	{ "absolute-no-path", "POST https://a HTTP/1.1\r\nHost: a\r\n\r\n", WHOLE },
	{ "asterisk-options", "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", WHOLE },
	{ "connect-authority", "CONNECT a.example:443 HTTP/1.1\r\nHost: a.example:443\r\n\r\n",
	  WHOLE },
	{ "connect-ipv6", "CONNECT [::1]:443 HTTP/1.1\r\nHost: [::1]:443\r\n\r\n", WHOLE },
	{ "options-origin", "OPTIONS /x HTTP/1.1\r\nHost: a\r\n\r\n", WHOLE },
	{ "get-relative", "GET foo HTTP/1.1\r\nHost: a\r\n\r\n", -400 },
	{ "get-asterisk", "GET * HTTP/1.1\r\nHost: a\r\n\r\n", -400 },
	{ "head-asterisk", "HEAD * HTTP/1.1\r\nHost: a\r\n\r\n", -400 },
	{ "post-asterisk", "POST * HTTP/1.1\r\nHost: a\r\n\r\n", -400 },
	{ "get-authority", "GET a:80 HTTP/1.1\r\nHost: a\r\n\r\n", -400 },
	{ "options-authority", "OPTIONS a:80 HTTP/1.1\r\nHost: a\r\n\r\n", -400 },
	{ "connect-origin", "CONNECT / HTTP/1.1\r\nHost: a\r\n\r\n", -400 },
	{ "connect-absolute", "CONNECT http://a:80/ HTTP/1.1\r\nHost: a\r\n\r\n", -400 },
	{ "connect-asterisk", "CONNECT * HTTP/1.1\r\nHost: a\r\n\r\n", -400 },
	{ "connect-no-port", "CONNECT a: HTTP/1.1\r\nHost: a\r\n\r\n", -400 },
	{ "connect-userinfo", "CONNECT u@a:80 HTTP/1.1\r\nHost: a\r\n\r\n", -400 },
	{ "asterisk-more", "OPTIONS *x HTTP/1.1\r\nHost: a\r\n\r\n", -400 },
	{ "absolute-no-host", "GET http:///x HTTP/1.1\r\nHost: a\r\n\r\n", -400 },
	{ "absolute-bad-scheme", "GET 1http://a/ HTTP/1.1\r\nHost: a\r\n\r\n", -400 },
	{ "other-method-relative", "PURGE x HTTP/1.1\r\nHost: a\r\n\r\n", -400 },
};

static struct baton_http_limits deflim = BATON_HTTP_LIMITS_DEFAULT;
static struct baton_http_limits tiny_target = { 16, 32768, 100, 1048576 };

static long parse(const char *s, size_t n, const struct baton_http_limits *lim,
		  struct baton_http_request *req)
{
	static struct baton_http_field fields[128];
	const char *why = NULL;
	long r;

	req->fields = fields;
	req->fields_cap = 128;
	r = baton__http_parse_head(s, n, lim ? lim : &deflim, req, &why);
	if (r < 0)
		assert_non_null(why);
	return r;
}

static void test_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct case_ *c = &cases[i];
		/* "nul-in-value" has a NUL inside: take its length from the array */
		size_t n = strlen(c->req);
		if (strcmp(c->name, "nul-in-value") == 0)
			n += 1 + strlen(c->req + n + 1);
		struct baton_http_request req;
		long want = c->expect == WHOLE ? (long)n : c->expect;
		long got = parse(c->req, n, NULL, &req);
		if (got != want)
			fail_msg("case %s: got %ld, want %ld", c->name, got, want);
	}
}

/* Every prefix of a valid head needs more; every prefix of a bad one needs
 * more or already fails with the final status, and once it fails it keeps
 * failing: the answer never depends on how reads split the bytes. */
static void test_every_split(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct case_ *c = &cases[i];
		size_t n = strlen(c->req);
		struct baton_http_request req;
		long final = parse(c->req, n, NULL, &req);
		int failed = 0;
		for (size_t k = 0; k < n; k++) {
			long r = parse(c->req, k, NULL, &req);
			if (c->expect == WHOLE && r != 0)
				fail_msg("case %s: prefix %zu gave %ld", c->name, k, r);
			if (r != 0 && r != final)
				fail_msg("case %s: prefix %zu gave %ld, whole %ld", c->name, k, r,
					 final);
			if (failed && r == 0)
				fail_msg("case %s: prefix %zu needs more after failing", c->name,
					 k);
			failed |= r != 0;
		}
	}
}

#define STR(s) s, sizeof(s) - 1

static void same_request(const struct baton_http_request *a, const struct baton_http_request *b)
{
	assert_ptr_equal(a->method, b->method);
	assert_int_equal(a->method_len, b->method_len);
	assert_int_equal(a->method_id, b->method_id);
	assert_ptr_equal(a->target, b->target);
	assert_int_equal(a->target_len, b->target_len);
	assert_int_equal(a->target_form, b->target_form);
	assert_int_equal(a->version_minor, b->version_minor);
	assert_ptr_equal(a->host, b->host);
	assert_int_equal(a->host_len, b->host_len);
	assert_int_equal(a->nfields, b->nfields);
	for (size_t i = 0; i < a->nfields; i++) {
		assert_ptr_equal(a->fields[i].name, b->fields[i].name);
		assert_int_equal(a->fields[i].name_len, b->fields[i].name_len);
		assert_ptr_equal(a->fields[i].value, b->fields[i].value);
		assert_int_equal(a->fields[i].value_len, b->fields[i].value_len);
	}
	assert_int_equal(a->content_length, b->content_length);
	assert_int_equal(a->chunked, b->chunked);
	assert_int_equal(a->keep_alive, b->keep_alive);
	assert_int_equal(a->expect_continue, b->expect_continue);
	assert_int_equal(a->is_head, b->is_head);
}

/* The resumed parser, fed every case of the table in steps of every size
 * from 1 to 7 bytes, answers what the one-shot parser answers, with the
 * same request; its progress record clears itself at the end. */
static void test_resume(void **state)
{
	static struct baton_http_field f1[128], f2[128];
	(void)state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *s = cases[i].req;
		size_t n = strlen(s);
		for (size_t step = 1; step <= 7; step++) {
			struct baton_http_request a = { .fields = f1, .fields_cap = 128 };
			struct baton_http_request b = { .fields = f2, .fields_cap = 128 };
			struct baton_http_progress pr = BATON_HTTP_PROGRESS_INIT;
			long want = baton__http_parse_head(s, n, &deflim, &a, NULL), got = 0;
			for (size_t k = step < n ? step : n;; k = k + step < n ? k + step : n) {
				got = baton__http_parse_head_resume(s, k, &deflim, &b, &pr, NULL);
				if (got != 0 || k == n)
					break;
			}
			if (got != want)
				fail_msg("case %s step %zu: resumed %ld, one-shot %ld",
					 cases[i].name, step, got, want);
			if (got > 0) {
				same_request(&a, &b);
				assert_null(pr.base);
			}
		}
	}
}

/* A 32 KiB head arriving one byte at a time: with a progress record each
 * call looks at the new byte only (the one-shot parser would scan ~512 MB
 * in total here); the result is the same. */
static void test_resume_slow_client(void **state)
{
	static char buf[32768];
	static struct baton_http_field f1[128];
	struct baton_http_request req = { .fields = f1, .fields_cap = 128 };
	struct baton_http_progress pr = BATON_HTTP_PROGRESS_INIT;
	size_t n = 0;
	long r = 0;
	(void)state;

	n += (size_t)sprintf(buf, "GET / HTTP/1.1\r\nHost: a\r\nX-Long: ");
	size_t vstart = n;
	while (n < sizeof(buf) - 200)
		buf[n++] = 'v';
	n += (size_t)sprintf(buf + n, "\r\nX-Name");
	while (n < sizeof(buf) - 100)
		buf[n++] = 'n';
	n += (size_t)sprintf(buf + n, ": 1\r\n\r\n");
	for (size_t k = 1; k <= n; k++) {
		r = baton__http_parse_head_resume(buf, k, &deflim, &req, &pr, NULL);
		if (r != 0)
			break;
	}
	assert_int_equal(r, (long)n);
	assert_int_equal(req.nfields, 3);
	assert_int_equal(req.fields[1].value_len, sizeof(buf) - 200 - vstart);
	assert_int_equal(req.fields[2].name_len, sizeof(buf) - 100 - (sizeof(buf) - 200 + 2));
	/* the buffer moved: the record is ignored, the answer stays right */
	static char moved[32768];
	memcpy(moved, buf, n);
	pr.base = buf;
	pr.fstart = 16;
	pr.line = 25;
	pr.len = 1;
	assert_int_equal(baton__http_parse_head_resume(moved, n, &deflim, &req, &pr, NULL),
			 (long)n);
	assert_ptr_equal(req.target, moved + 4);
}

static void test_fields(void **state)
{
	static const char r[] =
		"\r\nPOST /up?x=1 HTTP/1.1\r\nHost: ex.org:8080\r\n"
		"Content-Length: 12\r\nX-Pad:   spaced value \t\r\nEmpty:\r\n\r\nBODY";
	struct baton_http_request req;
	long n;

	(void)state;
	n = parse(r, sizeof(r) - 1, NULL, &req);
	assert_int_equal(n, sizeof(r) - 1 - 4);
	assert_int_equal(req.method_id, BATON_HTTP_POST);
	assert_int_equal(req.method_len, 4);
	assert_memory_equal(req.method, "POST", 4);
	assert_int_equal(req.target_len, 7);
	assert_memory_equal(req.target, "/up?x=1", 7);
	assert_int_equal(req.target_form, BATON_HTTP_ORIGIN_FORM);
	assert_int_equal(req.version_minor, 1);
	assert_int_equal(req.host_len, 11);
	assert_memory_equal(req.host, "ex.org:8080", 11);
	assert_int_equal(req.nfields, 4);
	assert_int_equal(req.fields[2].name_len, 5);
	assert_memory_equal(req.fields[2].name, "X-Pad", 5);
	assert_int_equal(req.fields[2].value_len, 12);
	assert_memory_equal(req.fields[2].value, "spaced value", 12);
	assert_int_equal(req.fields[3].value_len, 0);
	assert_int_equal(req.content_length, 12);
	assert_false(req.chunked);
	assert_true(req.keep_alive);
	assert_false(req.is_head);
	assert_false(req.expect_continue);
	/* every pointer lies inside the buffer */
	for (size_t i = 0; i < req.nfields; i++) {
		assert_true(req.fields[i].name >= r && req.fields[i].name < r + n);
		assert_true(req.fields[i].value + req.fields[i].value_len <= r + n);
	}
	assert_ptr_equal(baton__http_find_field(&req, "content-LENGTH"), &req.fields[1]);
	assert_null(baton__http_find_field(&req, "Content-Type"));

	n = parse(STR("OPTIONS * HTTP/1.0\r\n\r\n"), NULL, &req);
	assert_true(n > 0);
	assert_false(req.is_head);
	assert_int_equal(req.method_id, BATON_HTTP_OPTIONS);
	assert_int_equal(req.target_form, BATON_HTTP_ASTERISK_FORM);
	assert_int_equal(req.version_minor, 0);
	assert_null(req.host);
	assert_int_equal(req.content_length, -1);

	/* HEAD is known from the method on, also when the head fails later:
	 * the error answer to a HEAD leaves its body out */
	memset(&req, 0, sizeof(req));
	n = parse(STR("HEAD /"
		      "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa HTTP/1.1\r\n"),
		  &tiny_target, &req);
	assert_int_equal(n, -414);
	assert_true(req.is_head);
	assert_int_equal(req.method_id, BATON_HTTP_HEAD);
	n = parse(STR("HEAD /x HTTP/1.1\r\n\r\n"), NULL, &req);
	assert_int_equal(n, -400); /* no Host */
	assert_true(req.is_head);

	n = parse(STR("CONNECT h:1 HTTP/1.1\r\nHost: h:1\r\n\r\n"), NULL, &req);
	assert_true(n > 0);
	assert_int_equal(req.target_form, BATON_HTTP_AUTHORITY_FORM);
	n = parse(STR("GET https://h/ HTTP/1.1\r\nHost: h\r\n\r\n"), NULL, &req);
	assert_true(n > 0);
	assert_int_equal(req.target_form, BATON_HTTP_ABSOLUTE_FORM);
	n = parse(STR("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"), NULL,
		  &req);
	assert_true(n > 0);
	assert_true(req.chunked);
	assert_int_equal(req.content_length, -1);
}

static void test_pipelined(void **state)
{
#define R1 "GET /1 HTTP/1.1\r\nHost: a\r\n\r\n"
#define R2 "GET /2 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
	static const char r[] = R1 R2 "GET /3 HTT";
	struct baton_http_request req;
	size_t off = 0;
	long n;

	(void)state;
	n = parse(r, sizeof(r) - 1, NULL, &req);
	assert_int_equal(n, sizeof(R1) - 1);
	assert_memory_equal(req.target, "/1", 2);
	assert_true(req.keep_alive);
	off += (size_t)n;
	n = parse(r + off, sizeof(r) - 1 - off, NULL, &req);
	assert_int_equal(n, sizeof(R2) - 1);
	assert_memory_equal(req.target, "/2", 2);
	assert_false(req.keep_alive);
	off += (size_t)n;
	assert_int_equal(parse(r + off, sizeof(r) - 1 - off, NULL, &req), 0);
}

static void test_limits(void **state)
{
	struct baton_http_limits lim = { 16, 64, 3, 100 };
	struct baton_http_request req;
	char buf[256];

	(void)state;
	/* target: 16 bytes pass, the 17th byte fails at once, line unfinished */
	assert_true(parse(STR("GET /234567890123456 HTTP/1.1\r\nHost: a\r\n\r\n"), &lim, &req) > 0);
	assert_int_equal(parse(STR("GET /2345678901234567"), &lim, &req), -414);
	assert_int_equal(parse(STR("GET /234567890123456"), &lim, &req), 0);

	/* header bytes: exactly 64 bytes of field section pass */
	memset(buf, 0, sizeof(buf));
	strcpy(buf, "GET / HTTP/1.1\r\nHost: a\r\nX: ");
	size_t fs = strlen("Host: a\r\nX: ");
	size_t pad = 64 - fs - 4; /* value + CRLF + CRLF */
	memset(buf + strlen(buf), 'v', pad);
	strcat(buf, "\r\n\r\n");
	assert_int_equal(parse(buf, strlen(buf), &lim, &req), (long)strlen(buf));
	/* one more byte of value: 431 once the 65th byte is there */
	memset(buf, 0, sizeof(buf));
	strcpy(buf, "GET / HTTP/1.1\r\nHost: a\r\nX: ");
	memset(buf + strlen(buf), 'v', pad + 1);
	strcat(buf, "\r\n\r\n");
	assert_int_equal(parse(buf, strlen(buf), &lim, &req), -431);
	assert_int_equal(parse(buf, strlen(buf) - 1, &lim, &req), 0);
	/* a long unfinished header fails as soon as the limit is passed */
	memset(buf, 'v', sizeof(buf));
	memcpy(buf, "GET / HTTP/1.1\r\nX: ", 19);
	assert_int_equal(parse(buf, 16 + 64, &lim, &req), 0);
	assert_int_equal(parse(buf, 16 + 65, &lim, &req), -431);

	/* field count: 3 pass, 4 fail (and the caller's array caps it too) */
	assert_true(parse(STR("GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\n\r\n"), &lim, &req) >
		    0);
	assert_int_equal(parse(STR("GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\nC"), &lim, &req),
			 -431);
	{
		struct baton_http_field two[2];
		struct baton_http_request r2 = { .fields = two, .fields_cap = 2 };
		static const char s[] = "GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\n\r\n";
		assert_int_equal(baton__http_parse_head(s, sizeof(s) - 1, &deflim, &r2, NULL),
				 -431);
	}

	/* body: Content-Length over max_body */
	assert_true(parse(STR("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n"), &lim,
			  &req) > 0);
	assert_int_equal(
		parse(STR("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 101\r\n\r\n"), &lim, &req),
		-413);

	/* default limits: 8 KiB target */
	{
		static char big[9000];
		memcpy(big, "GET /", 5);
		memset(big + 5, 'a', sizeof(big) - 5);
		assert_int_equal(parse(big, 4 + 8192, NULL, &req), 0);
		assert_int_equal(parse(big, 4 + 8193, NULL, &req), -414);
	}
}

static void test_connection(void **state)
{
	static const struct {
		const char *r;
		int ka;
	} t[] = {
		{ "GET / HTTP/1.1\r\nHost: a\r\n\r\n", 1 },
		{ "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", 0 },
		{ "GET / HTTP/1.1\r\nHost: a\r\nConnection: Keep-Alive, CLOSE\r\n\r\n", 0 },
		{ "GET / HTTP/1.1\r\nHost: a\r\nConnection: upgrade\r\nConnection: close\r\n\r\n",
		  0 },
		{ "GET / HTTP/1.1\r\nHost: a\r\nConnection: closed\r\n\r\n", 1 },
		{ "GET / HTTP/1.0\r\n\r\n", 0 },
		{ "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", 1 },
		{ "GET / HTTP/1.0\r\nConnection: , Keep-Alive ,\r\n\r\n", 1 },
		{ "GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n", 0 },
	};
	struct baton_http_request req;

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		assert_true(parse(t[i].r, strlen(t[i].r), NULL, &req) > 0);
		if (req.keep_alive != t[i].ka)
			fail_msg("case %zu: keep_alive %d", i, req.keep_alive);
	}
}

static void test_expect(void **state)
{
	struct baton_http_request req;

	(void)state;
	assert_true(parse(STR("PUT / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\r\n"), NULL,
			  &req) > 0);
	assert_true(req.expect_continue);
	assert_true(parse(STR("PUT / HTTP/1.1\r\nHost: a\r\nExpect: 100-CONTINUE \r\n\r\n"), NULL,
			  &req) > 0);
	assert_true(req.expect_continue);
	/* HTTP/1.0: the expectation is ignored (RFC 9110 10.1.1) */
	assert_true(parse(STR("PUT / HTTP/1.0\r\nExpect: 100-continue\r\n\r\n"), NULL, &req) > 0);
	assert_false(req.expect_continue);
	assert_true(parse(STR("PUT / HTTP/1.1\r\nHost: a\r\n\r\n"), NULL, &req) > 0);
	assert_false(req.expect_continue);
	assert_int_equal(parse(STR("PUT / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue, x\r\n\r\n"),
			       NULL, &req),
			 -417);
	assert_int_equal(parse(STR("PUT / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue=1\r\n\r\n"),
			       NULL, &req),
			 -417);
}

/* Values and targets of every length up to 48 (the parser checks 16 bytes
 * at a time), valid, and with a forbidden byte at every position. */
static void test_long_runs(void **state)
{
	static const unsigned char badv[] = { 0x00, 0x01, 0x0a, 0x0d, 0x1f, 0x7f };
	static const unsigned char badt[] = { 0x00, 0x09, 0x20, 0x7f, 0x80, 0xff };
	struct baton_http_request req;
	char buf[256];
	(void)state;

	for (size_t n = 1; n <= 48; n++) {
		for (int pass = 0; pass < 2; pass++) {
			size_t head =
				(size_t)(pass ? sprintf(buf, "GET / HTTP/1.1\r\nHost: a\r\nX: ")
					      : sprintf(buf, "GET /"));
			for (size_t i = 0; i < n; i++)
				buf[head + i] = pass ? (char)(i % 3 ? 'v' : (i % 2 ? '\t' : '\xe9'))
						     : 'p';
			if (pass)
				buf[head + n - 1] = 'z'; /* no trailing OWS */
			size_t tail = (size_t)sprintf(
				buf + head + n, pass ? "\r\n\r\n" : " HTTP/1.1\r\nHost: a\r\n\r\n");
			size_t len = head + n + tail;
			assert_int_equal(parse(buf, len, NULL, &req), (long)len);
			if (pass)
				assert_int_equal(req.fields[1].value_len, n);
			else
				assert_int_equal(req.target_len, n + 1);
			for (size_t k = 0; k < n; k++) {
				const unsigned char *bad = pass ? badv : badt;
				for (size_t b = 0; b < 6; b++) {
					char save = buf[head + k];
					buf[head + k] = (char)bad[b];
					long r = parse(buf, len, NULL, &req);
					if (r != -400)
						fail_msg("%s len %zu: byte %#x at %zu gave %ld",
							 pass ? "value" : "target", n, bad[b], k,
							 r);
					buf[head + k] = save;
				}
			}
		}
	}
}

static void test_bad_args(void **state)
{
	struct baton_http_request req = { 0 };
	struct baton_http_limits zero = { 0, 0, 0, 0 };

	(void)state;
	assert_int_equal(baton__http_parse_head(NULL, 1, &deflim, &req, NULL), BATON_HTTP_EINVAL);
	assert_int_equal(baton__http_parse_head("x", 1, NULL, &req, NULL), BATON_HTTP_EINVAL);
	assert_int_equal(baton__http_parse_head("x", 1, &deflim, NULL, NULL), BATON_HTTP_EINVAL);
	assert_int_equal(baton__http_parse_head("x", 1, &zero, &req, NULL), BATON_HTTP_EINVAL);
	assert_int_equal(baton__http_parse_head(NULL, 0, &deflim, &req, NULL), 0);
	assert_null(baton__http_find_field(NULL, "x"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),    cmocka_unit_test(test_every_split),
		cmocka_unit_test(test_fields),   cmocka_unit_test(test_pipelined),
		cmocka_unit_test(test_limits),   cmocka_unit_test(test_connection),
		cmocka_unit_test(test_expect),   cmocka_unit_test(test_long_runs),
		cmocka_unit_test(test_resume),   cmocka_unit_test(test_resume_slow_client),
		cmocka_unit_test(test_bad_args),
	};

	tc_watchdog(60);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
