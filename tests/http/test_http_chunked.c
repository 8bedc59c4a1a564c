/* SPDX-License-Identifier: MIT */
/*
 * Tests of the chunked decoder and the response heads
 * (src/http/http_parse.h): random splits of valid bodies reproduce the
 * body exactly (into a separate buffer and in place), every malformed form
 * is refused with its status whatever the split, limits, and the formats
 * of the heads the server writes.
 */
#include <stdio.h>

#include "check.h"

#include "http_parse.h"

static struct baton_http_limits deflim = BATON_HTTP_LIMITS_DEFAULT;

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Decode `in` fed in pieces cut at random; returns the final status and the
 * decoded body in out[0, *outn), the input consumed in *used. */
static int decode_split(const struct baton_http_limits *lim, const char *in, size_t n, char *out,
			size_t cap, size_t *outn, size_t *used, int small_out)
{
	struct baton_http_chunked c;
	size_t i = 0, o = 0;
	int r = 0;

	baton__http_chunked_init(&c, lim ? lim : &deflim);
	while (i < n) {
		size_t piece = 1 + next() % (n - i);
		size_t room = cap - o;
		size_t cons, prod;
		if (small_out && room > 3)
			room = 1 + next() % 3;
		r = baton__http_chunked_feed(&c, in + i, piece, &cons, out + o, room, &prod);
		assert_true(cons <= piece);
		assert_true(prod <= room);
		i += cons;
		o += prod;
		if (r != 0)
			break;
	}
	*outn = o;
	*used = i;
	assert_int_equal(baton__http_chunked_done(&c), r == 1);
	return r;
}

static void test_random_splits(void **state)
{
	char body[3000], enc[8000], out[3000];
	(void)state;

	for (int iter = 0; iter < 300; iter++) {
		size_t blen = next() % sizeof(body), e = 0, b = 0;
		for (size_t i = 0; i < blen; i++)
			body[i] = (char)next();
		/* random chunk sizes, sometimes with extensions, upper-case hex or
		 * leading zeros; a trailer now and then; a pipelined request after */
		while (b < blen) {
			size_t k = 1 + next() % 700;
			if (k > blen - b)
				k = blen - b;
			const char *fmt = (next() & 1) ? "%zx"
				: (next() & 1)         ? "%04zX"
						       : "%zx ;ext=\"v\";x";
			e += (size_t)sprintf(enc + e, fmt, k);
			e += (size_t)sprintf(enc + e, "\r\n");
			memcpy(enc + e, body + b, k);
			e += k;
			b += k;
			e += (size_t)sprintf(enc + e, "\r\n");
		}
		e += (size_t)sprintf(enc + e,
				     (next() & 1) ? "0\r\n\r\n" : "000;z\r\nT: v\r\nU:\r\n\r\n");
		size_t end = e;
		e += (size_t)sprintf(enc + e, "GET / HTTP/1.1\r\n");

		size_t outn, used;
		int r = decode_split(NULL, enc, e, out, sizeof(out), &outn, &used, iter % 3 == 0);
		assert_int_equal(r, 1);
		assert_int_equal(used, end);
		assert_int_equal(outn, blen);
		assert_memory_equal(out, body, blen);

		/* in place: out == in, fed in random pieces */
		char copy[8000];
		memcpy(copy, enc, e);
		struct baton_http_chunked c;
		size_t i = 0, o = 0;
		baton__http_chunked_init(&c, &deflim);
		do {
			size_t cons, prod, piece = 1 + next() % (e - i);
			/* the decoded bytes go to copy + o <= copy + i: never ahead */
			r = baton__http_chunked_feed(&c, copy + i, piece, &cons, copy + o, e - o,
						     &prod);
			i += cons;
			o += prod;
		} while (r == 0 && i < e);
		assert_int_equal(r, 1);
		assert_int_equal(o, blen);
		assert_memory_equal(copy, body, blen);
	}
}

struct bad {
	const char *name, *in;
	int status;
};

static const struct bad bads[] = {
	{ "empty-size", "\r\nabc\r\n0\r\n\r\n", -400 },
	{ "non-hex", "g\r\n", -400 },
	{ "0x-prefix", "0x5\r\nhello\r\n0\r\n\r\n", -400 },
	{ "negative", "-5\r\nhello\r\n0\r\n\r\n", -400 },
	{ "plus", "+5\r\nhello\r\n0\r\n\r\n", -400 },
	{ "space-before-size", " 5\r\nhello\r\n0\r\n\r\n", -400 },
	{ "space-after-size", "5 \r\nhello\r\n0\r\n\r\n", -400 },
	{ "bare-lf-size", "5\nhello\r\n0\r\n\r\n", -400 },
	{ "bare-cr-size", "5\rhello\r\n0\r\n\r\n", -400 },
	{ "data-too-long", "5\r\nhello!\r\n0\r\n\r\n", -400 },
	{ "data-bare-lf", "5\r\nhello\n0\r\n\r\n", -400 },
	{ "data-cr-only", "5\r\nhello\rX0\r\n\r\n", -400 },
	{ "ext-ctl", "5;a\x01\r\nhello\r\n0\r\n\r\n", -400 },
	{ "ext-bare-lf", "5;a\nhello\r\n0\r\n\r\n", -400 },
	{ "overflow", "7fffffffffffffffff\r\n", -413 },
	{ "over-limit", "100001\r\n", -413 },
	{ "trailer-obs-fold", "0\r\nA: b\r\n c\r\n\r\n", -400 },
	{ "trailer-bare-lf", "0\r\nA: b\n\r\n", -400 },
	{ "trailer-end-bare-lf", "0\r\n\n", -400 },
	{ "trailer-space-colon", "0\r\nA : b\r\n\r\n", -400 },
	{ "trailer-no-colon", "0\r\nA\r\n\r\n", -400 },
	{ "trailer-ctl", "0\r\nA: \x01\r\n\r\n", -400 },
	{ "end-bare-cr", "0\r\n\rx", -400 },
};

static void test_malformed(void **state)
{
	char out[256];
	(void)state;

	for (size_t k = 0; k < sizeof(bads) / sizeof(bads[0]); k++) {
		for (int rep = 0; rep < 20; rep++) {
			size_t outn, used;
			int r = decode_split(NULL, bads[k].in, strlen(bads[k].in), out, sizeof(out),
					     &outn, &used, rep & 1);
			if (r != bads[k].status)
				fail_msg("case %s: got %d, want %d", bads[k].name, r,
					 bads[k].status);
		}
	}
}

#define FEED(c, s) baton__http_chunked_feed((c), s, sizeof(s) - 1, &cons, out, sizeof(out), &prod)

static void test_limits(void **state)
{
	struct baton_http_limits lim = { 100, 20, 2, 10 };
	struct baton_http_chunked c;
	char out[64];
	size_t cons, prod;
	(void)state;

	/* 10 bytes in total pass, 11 fail when the size digit is seen */
	baton__http_chunked_init(&c, &lim);
	assert_int_equal(baton__http_chunked_feed(&c, "4\r\n1234\r\n6\r\n123456\r\n0\r\n\r\n", 25,
						  &cons, out, sizeof(out), &prod),
			 1);
	assert_int_equal(prod, 10);
	baton__http_chunked_init(&c, &lim);
	assert_int_equal(
		baton__http_chunked_feed(&c, "4\r\n1234\r\n7", 10, &cons, out, sizeof(out), &prod),
		-413);
	assert_non_null(c.why);
	/* sticky */
	assert_int_equal(baton__http_chunked_feed(&c, "\r\n", 2, &cons, out, sizeof(out), &prod),
			 -413);
	assert_int_equal(cons, 0);

	/* trailers: max_header_bytes and max_fields apply */
	baton__http_chunked_init(&c, &lim);
	assert_int_equal(FEED(&c, "0\r\nA: 1\r\nB:\r\n\r\n"), 1);
	assert_int_equal(cons, 15);
	baton__http_chunked_init(&c, &lim);
	assert_int_equal(FEED(&c, "0\r\nA: 1234567890123456\r\n\r\n"), -431);
	baton__http_chunked_init(&c, &lim);
	assert_int_equal(FEED(&c, "0\r\nA:\r\nB:\r\nC:\r\n\r\n"), -431);

	/* a chunk line over 4096 bytes (leading zeros) */
	{
		static char line[5000];
		memset(line, '0', sizeof(line));
		line[sizeof(line) - 1] = '1'; /* leading zeros, then 1 */
		baton__http_chunked_init(&c, &deflim);
		assert_int_equal(baton__http_chunked_feed(&c, line, sizeof(line), &cons, out,
							  sizeof(out), &prod),
				 -400);
	}

	/* bad arguments */
	baton__http_chunked_init(&c, NULL);
	assert_int_equal(baton__http_chunked_feed(NULL, "", 0, &cons, out, 1, &prod),
			 BATON_HTTP_EINVAL);
	assert_int_equal(baton__http_chunked_feed(&c, NULL, 1, &cons, out, 1, &prod),
			 BATON_HTTP_EINVAL);
	assert_int_equal(baton__http_chunked_done(NULL), 0);
}

static void test_format(void **state)
{
	char buf[512];
	size_t n;
	struct baton_http_field extra[] = {
		{ "Content-Type", "text/plain", 12, 10 },
	};
	struct baton_http_field evil[] = {
		{ "X", "a\r\nSet-Cookie: x", 1, 16 },
	};
	(void)state;

	n = baton__http_format_head(buf, sizeof(buf), 200, 13, 1, extra, 1);
	assert_true(n > 0);
	buf[n] = 0;
	assert_memory_equal(buf, "HTTP/1.1 200 OK\r\nDate: ", 23);
	assert_non_null(strstr(buf,
			       "\r\nServer: baton\r\nContent-Length: 13\r\n"
			       "Connection: keep-alive\r\nContent-Type: text/plain\r\n\r\n"));
	assert_true(buf[n - 1] == '\n' && buf[n - 2] == '\r' && buf[n - 3] == '\n');
	/* the date is an IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT" */
	const char *d = baton__http_date();
	assert_true(d[3] == ',' && d[7] == ' ' && d[19] == ':' && memcmp(d + 25, " GMT", 4) == 0);
	assert_memory_equal(buf + 23, d, 29);

	n = baton__http_format_head(buf, sizeof(buf), 200, BATON_HTTP_CHUNKED_BODY, 0, NULL, 0);
	buf[n] = 0;
	assert_non_null(strstr(buf, "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"));
	n = baton__http_format_head(buf, sizeof(buf), 204, BATON_HTTP_NO_BODY, 1, NULL, 0);
	buf[n] = 0;
	assert_null(strstr(buf, "Content-Length"));
	assert_memory_equal(buf, "HTTP/1.1 204 No Content\r\n", 25);
	n = baton__http_format_head(buf, sizeof(buf), 299, 0, 1, NULL, 0);
	assert_memory_equal(buf, "HTTP/1.1 299 \r\n", 15);

	/* refusals: too small, header injection, bad status */
	assert_int_equal(baton__http_format_head(buf, 40, 200, 0, 1, NULL, 0), 0);
	assert_int_equal(baton__http_format_head(buf, sizeof(buf), 200, 0, 1, evil, 1), 0);
	assert_int_equal(baton__http_format_head(buf, sizeof(buf), 99, 0, 1, NULL, 0), 0);
	assert_int_equal(baton__http_format_head(buf, sizeof(buf), 200, -3, 1, NULL, 0), 0);
	assert_int_equal(baton__http_format_head(NULL, 10, 200, 0, 1, NULL, 0), 0);

	/* every canned error: the body length matches Content-Length */
	static const int st[] = { 400, 408, 413, 414, 417, 431, 500, 501, 503, 505 };
	for (size_t i = 0; i < sizeof(st) / sizeof(st[0]); i++) {
		size_t head_n = baton__http_format_error(buf, sizeof(buf), st[i], 1);

		n = baton__http_format_error(buf, sizeof(buf), st[i], 0);
		assert_true(n > 0);
		buf[n] = 0;
		assert_non_null(strstr(buf, "\r\nConnection: close\r\n"));
		const char *body = strstr(buf, "\r\n\r\n") + 4;
		long cl = atol(strstr(buf, "Content-Length: ") + 16);
		assert_int_equal(cl, (long)(buf + n - body));
		assert_int_equal(atoi(body), st[i]);
		assert_int_equal(atoi(buf + 9), st[i]);
		assert_true(baton__http_reason(st[i])[0] != 0);
		/* the answer to HEAD: the same head, no body */
		assert_int_equal(head_n, (size_t)(body - buf));
	}
	assert_int_equal(baton__http_format_error(buf, 20, 400, 0), 0);
	for (int s = 100; s < 600; s++)
		assert_int_equal(baton__http_status_bodiless(s), s < 200 || s == 204 || s == 304);
	assert_string_equal(BATON_HTTP_CONTINUE, "HTTP/1.1 100 Continue\r\n\r\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_splits),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_format),
	};

	tc_watchdog(60);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
