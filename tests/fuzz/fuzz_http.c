/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the HTTP/1.1 request parser (src/http/http_parse.h).
 *
 * Input: one control byte, then the bytes a client sent. The control byte
 * picks the limits (defaults or tiny ones, so that every limit is reached)
 * and where the input is split. Invariants checked (abort on violation;
 * ASan/UBSan catch memory and arithmetic faults):
 *  - the head parser answers need-more, a length in (0, len], or one of the
 *    statuses it documents; never EINVAL for valid arguments;
 *  - a prefix gives need-more or the same answer as the whole input: the
 *    answer does not depend on how reads split the bytes;
 *  - every pointer of a parsed request lies inside the head;
 *  - the resumed parser (baton__http_parse_head_resume), fed in two pieces or
 *    byte by byte, answers like the one-shot parser, with the same request;
 *  - the chunked decoder gives the same status, consumption and body
 *    whether fed in one piece, in two at the split point, byte by byte into
 *    a 1-byte output, 7 bytes at a time into a 3-byte output, or in place;
 *  - parsed fields are accepted as extra fields of a response head;
 *  - the request-target's form fits the method (RFC 9112 3.2): CONNECT has
 *    authority-form and only CONNECT has it, asterisk-form is "*" with
 *    OPTIONS, origin-form starts with '/'; is_head is the method HEAD,
 *    also when the head fails after the method.
 * Build and run: docs/http-parser.md.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http_parse.h"

#define CHECK(x)                 \
	do {                     \
		if (!(x))        \
			abort(); \
	} while (0)

static int known_status(long r)
{
	switch (r) {
	case -400:
	case -413:
	case -414:
	case -417:
	case -431:
	case -501:
	case -505:
		return 1;
	}
	return 0;
}

static long parse_copy(const uint8_t *data, size_t n, const struct baton_http_limits *lim,
		       struct baton_http_request *req, struct baton_http_field *fields, size_t cap)
{
	/* an exact-size copy, so that a read past n is an ASan error */
	char *buf = malloc(n ? n : 1);
	const char *why = NULL;
	long r;

	memcpy(buf, data, n);
	req->fields = fields;
	req->fields_cap = cap;
	req->is_head = 0;
	req->method = NULL;
	r = baton__http_parse_head(buf, n, lim, req, &why);
	CHECK(r >= 0 || why != NULL);
	/* is_head is set from the method as soon as it is read */
	CHECK(req->is_head ==
	      (req->method && req->method_len == 4 && memcmp(req->method, "HEAD", 4) == 0));
	if (r > 0) {
		int connect = req->method_id == BATON_HTTP_CONNECT;

		CHECK(connect == (req->target_form == BATON_HTTP_AUTHORITY_FORM));
		CHECK(req->target_form != BATON_HTTP_ASTERISK_FORM ||
		      (req->method_id == BATON_HTTP_OPTIONS && req->target_len == 1));
		CHECK((req->target_form == BATON_HTTP_ORIGIN_FORM) == (req->target[0] == '/'));
		const char *lo = buf, *hi = buf + r;
		CHECK(req->method >= lo && req->method + req->method_len <= hi &&
		      req->method_len > 0);
		CHECK(req->target >= lo && req->target + req->target_len <= hi &&
		      req->target_len > 0);
		CHECK(req->target_len <= lim->max_target);
		CHECK(req->version_minor == 0 || req->version_minor == 1);
		CHECK(req->nfields <= cap && req->nfields <= lim->max_fields);
		for (size_t i = 0; i < req->nfields; i++) {
			const struct baton_http_field *f = &req->fields[i];
			CHECK(f->name >= lo && f->name + f->name_len <= hi && f->name_len > 0);
			CHECK(f->value >= lo && f->value + f->value_len <= hi);
		}
		CHECK(!(req->chunked && req->content_length >= 0));
		CHECK(req->content_length <= lim->max_body);
		CHECK(!req->host || (req->host >= lo && req->host + req->host_len <= hi));
		CHECK(req->version_minor == 0 || req->host);
		const struct baton_http_field *h = baton__http_find_field(req, "HOST");
		CHECK(h ? h->value == req->host : req->host == NULL);
		/* a parsed field is a valid extra field of a response head */
		static char out[1 << 16];
		size_t on = baton__http_format_head(out, sizeof(out), 200, req->content_length,
						    req->keep_alive, req->fields, req->nfields);
		CHECK(on > 0 || (size_t)r > sizeof(out) / 2);
	}
	free(buf);
	return r;
}

/* The resumed parser fed in steps of `step` bytes (0: two pieces cut at
 * split) must answer like the one-shot parser, with the same request. */
static void resumed(const uint8_t *data, size_t n, size_t split, size_t step,
		    const struct baton_http_limits *lim, long want)
{
	static struct baton_http_field f1[128], f2[128];
	struct baton_http_request a = { .fields = f1, .fields_cap = 128 };
	struct baton_http_request b = { .fields = f2, .fields_cap = 128 };
	struct baton_http_progress pr = BATON_HTTP_PROGRESS_INIT;
	char *buf = malloc(n ? n : 1);
	long got = 0;
	size_t k = step ? (step < n ? step : n) : split;

	memcpy(buf, data, n);
	for (;;) {
		got = baton__http_parse_head_resume(buf, k, lim, &b, &pr, NULL);
		if (got != 0 || k == n)
			break;
		k = step ? (k + step < n ? k + step : n) : n;
	}
	CHECK(got == want);
	if (got > 0) {
		CHECK(baton__http_parse_head(buf, n, lim, &a, NULL) == got);
		CHECK(a.method == b.method && a.target == b.target && a.host == b.host);
		CHECK(a.nfields == b.nfields && a.content_length == b.content_length);
		CHECK(a.chunked == b.chunked && a.keep_alive == b.keep_alive);
		CHECK(a.expect_continue == b.expect_continue && a.version_minor == b.version_minor);
		for (size_t i = 0; i < a.nfields; i++)
			CHECK(a.fields[i].name == b.fields[i].name &&
			      a.fields[i].name_len == b.fields[i].name_len &&
			      a.fields[i].value == b.fields[i].value &&
			      a.fields[i].value_len == b.fields[i].value_len);
		CHECK(pr.base == NULL);
	}
	free(buf);
}

struct decoded {
	int status;
	size_t consumed, produced;
	uint64_t hash;
};

static void hash_bytes(uint64_t *h, const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		*h = (*h ^ (uint8_t)p[i]) * 0x100000001b3ull;
}

/* Feed pieces of `piece` bytes (0: all at once, except one cut at `split`)
 * into an output of out_cap bytes at a time. */
static struct decoded decode(const struct baton_http_limits *lim, const uint8_t *in, size_t n,
			     size_t split, size_t piece, size_t out_cap)
{
	struct baton_http_chunked c;
	struct decoded d = { 0, 0, 0, 0xcbf29ce484222325ull };
	char *copy = malloc(n ? n : 1), *out = malloc(out_cap);

	memcpy(copy, in, n);
	baton__http_chunked_init(&c, lim);
	for (;;) {
		size_t avail = n - d.consumed, cons, prod;
		if (piece)
			avail = avail < piece ? avail : piece;
		else if (d.consumed < split)
			avail = split - d.consumed;
		d.status = baton__http_chunked_feed(&c, copy + d.consumed, avail, &cons, out,
						    out_cap, &prod);
		CHECK(cons <= avail && prod <= out_cap);
		CHECK(d.status == 0 || d.status == 1 || d.status == -400 || d.status == -413 ||
		      d.status == -431);
		hash_bytes(&d.hash, out, prod);
		d.consumed += cons;
		d.produced += prod;
		CHECK((int64_t)d.produced <= lim->max_body);
		if (d.status != 0 || (cons == 0 && prod == 0 && avail == n - d.consumed))
			break;
	}
	CHECK(baton__http_chunked_done(&c) == (d.status == 1));
	free(copy);
	free(out);
	return d;
}

static struct decoded decode_in_place(const struct baton_http_limits *lim, const uint8_t *in,
				      size_t n)
{
	struct baton_http_chunked c;
	struct decoded d = { 0, 0, 0, 0xcbf29ce484222325ull };
	char *buf = malloc(n ? n : 1);
	size_t cons, prod;

	memcpy(buf, in, n);
	baton__http_chunked_init(&c, lim);
	d.status = baton__http_chunked_feed(&c, buf, n, &cons, buf, n, &prod);
	d.consumed = cons;
	d.produced = prod;
	hash_bytes(&d.hash, buf, prod);
	free(buf);
	return d;
}

static void same(struct decoded a, struct decoded b)
{
	CHECK(a.status == b.status && a.produced == b.produced && a.hash == b.hash);
	/* consumption agrees except after an error, where it stops at the
	 * offending byte in both cases */
	CHECK(a.consumed == b.consumed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct baton_http_limits deflim = BATON_HTTP_LIMITS_DEFAULT;
	static const struct baton_http_limits tiny = { 12, 48, 4, 40 };
	static struct baton_http_field fields[128];
	struct baton_http_request req;
	const struct baton_http_limits *lim;
	size_t split, body_off = 0;
	long whole, part;

	if (size < 1)
		return 0;
	lim = (data[0] & 0x80) ? &tiny : &deflim;
	data++;
	size--;
	split = size ? (size_t)(data[-1] & 0x7f) * size / 127 : 0;

	whole = parse_copy(data, size, lim, &req, fields, 128);
	CHECK(whole == 0 || (whole > 0 && (size_t)whole <= size) || known_status(whole));
	part = parse_copy(data, split, lim, &req, fields, 128);
	CHECK(part == 0 || part == whole ||
	      (part > 0 && (size_t)part <= split && (size_t)part == (size_t)whole));
	resumed(data, size, split, 0, lim, whole);
	if (size < 1024)
		resumed(data, size, 0, 1, lim, whole);
	if (whole > 0) {
		/* re-parse to get the request of the whole input */
		parse_copy(data, size, lim, &req, fields, 128);
		body_off = (size_t)whole;
		if (!req.chunked)
			return 0;
	}

	/* the chunked decoder on what follows the head (or on everything) */
	const uint8_t *b = data + body_off;
	size_t bn = size - body_off, bsplit = split > body_off ? split - body_off : 0;
	struct decoded one = decode(lim, b, bn, bn, 0, 4096);
	same(one, decode(lim, b, bn, bsplit, 0, 4096));
	if (bn < 2048)
		same(one, decode(lim, b, bn, 0, 1, 1));
	same(one, decode(lim, b, bn, 0, 7, 3));
	same(one, decode_in_place(lim, b, bn));
	return 0;
}
