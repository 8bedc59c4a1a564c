/* SPDX-License-Identifier: MIT */
/*
 * Tests of the request-target parts a handler reads (include/baton/http.h,
 * src/http/uri.c): percent-decoding (in place and apart, '+' in queries,
 * every malformed escape refused), the arguments of a query one by one,
 * and the path and query split off each form of target.
 */
#include <string.h>

#include "check.h"

#include <baton/http.h>

#include "http_parse.h"

static void decode_ok(const char *in, int plus, const char *want, size_t want_len)
{
	char out[256], inplace[256];
	size_t n = 12345, m = 12345;

	assert_int_equal(baton_http_decode(out, in, strlen(in), plus, &n), BATON_OK);
	assert_int_equal(n, want_len);
	assert_memory_equal(out, want, want_len);
	strcpy(inplace, in);
	assert_int_equal(baton_http_decode(inplace, inplace, strlen(in), plus, &m), BATON_OK);
	assert_int_equal(m, want_len);
	assert_memory_equal(inplace, want, want_len);
}

static void test_decode(void **state)
{
	(void)state;
	decode_ok("", 0, "", 0);
	decode_ok("/plain/path", 0, "/plain/path", 11);
	decode_ok("/a%20b", 0, "/a b", 4);
	decode_ok("%41%62%7a%7A", 0, "Abzz", 4);
	decode_ok("%2F%2f", 0, "//", 2);
	decode_ok("caf%C3%A9", 0, "caf\xc3\xa9", 5);
	decode_ok("a%00b", 0, "a\0b", 3);  /* the caller decides about NUL */
	decode_ok("a+b", 0, "a+b", 3);     /* '+' is a plus in a path */
	decode_ok("a+b%2B", 1, "a b+", 4); /* and a space in a query */
	decode_ok("%25", 0, "%", 1);
	decode_ok("%2525", 0, "%25", 3); /* decoded once, not twice */
}

static void test_decode_refused(void **state)
{
	static const char *const bad[] = { "%",   "%4",   "a%",  "%zz", "%4g",
					   "%g4", "%%41", "x%2", "% 41" };
	char out[32];
	size_t n;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(baton_http_decode(out, bad[i], strlen(bad[i]), 0, &n),
				 BATON_EINVAL);
	assert_int_equal(baton_http_decode(NULL, "a", 1, 0, &n), BATON_EINVAL);
	assert_int_equal(baton_http_decode(out, NULL, 1, 0, &n), BATON_EINVAL);
	assert_int_equal(baton_http_decode(out, "a", 1, 0, NULL), BATON_EINVAL);
	assert_int_equal(baton_http_decode(out, NULL, 0, 0, &n), BATON_OK);
	assert_int_equal(n, 0);
}

/* The arguments of q as "key=value;" with bare keys as "key=;". */
static void args_are(const char *q, const char *want)
{
	char got[512] = "";
	size_t pos = 0, kl, vl, o = 0;
	const char *k, *v;

	while (baton_http_query_next(q, strlen(q), &pos, &k, &kl, &v, &vl)) {
		assert_true(o + kl + vl + 2 < sizeof(got));
		memcpy(got + o, k, kl), o += kl;
		got[o++] = '=';
		memcpy(got + o, v, vl), o += vl;
		got[o++] = ';';
		got[o] = '\0';
	}
	assert_int_equal(pos, strlen(q));
	assert_string_equal(got, want);
	/* past the end it stays at the end */
	assert_int_equal(baton_http_query_next(q, strlen(q), &pos, &k, &kl, &v, &vl), 0);
}

static void test_query_args(void **state)
{
	size_t pos = 0, kl, vl;
	const char *k, *v;

	(void)state;
	args_are("", "");
	args_are("a=1", "a=1;");
	args_are("a=1&b=2&a=3", "a=1;b=2;a=3;"); /* repeats kept, in order */
	args_are("flag&x=", "flag=;x=;");        /* bare key, empty value */
	args_are("&&a=1&&&b=2&", "a=1;b=2;");    /* empty arguments skipped */
	args_are("k=v=w", "k=v=w;");             /* the first '=' splits */
	args_are("=v", "=v;");                   /* an empty key is a key */
	args_are("x=%20+y", "x=%20+y;");         /* as sent: not decoded */
	assert_int_equal(baton_http_query_next(NULL, 0, &pos, &k, &kl, &v, &vl), 0);
	assert_int_equal(baton_http_query_next("a", 1, NULL, &k, &kl, &v, &vl), 0);
	assert_int_equal(baton_http_query_next(NULL, 3, &pos, &k, &kl, &v, &vl), 0);
}

static void split_is(const char *target, int form, const char *path, const char *query)
{
	const char *p, *q;
	size_t pl, ql;

	baton__http_split_target(target, strlen(target), form, &p, &pl, &q, &ql);
	assert_int_equal(pl, strlen(path));
	assert_memory_equal(p, path, pl);
	if (query == NULL) {
		assert_null(q);
		assert_int_equal(ql, 0);
	} else {
		assert_non_null(q);
		assert_int_equal(ql, strlen(query));
		assert_memory_equal(q, query, ql);
	}
}

static void test_split_target(void **state)
{
	(void)state;
	split_is("/", BATON_HTTP_ORIGIN_FORM, "/", NULL);
	split_is("/a/b?x=1&y", BATON_HTTP_ORIGIN_FORM, "/a/b", "x=1&y");
	split_is("/a?", BATON_HTTP_ORIGIN_FORM, "/a", "");
	split_is("/a?b?c", BATON_HTTP_ORIGIN_FORM, "/a", "b?c");
	split_is("/p%20q?r%20s", BATON_HTTP_ORIGIN_FORM, "/p%20q", "r%20s");
	split_is("http://example.org:8080/x/y?z", BATON_HTTP_ABSOLUTE_FORM, "/x/y", "z");
	split_is("http://example.org", BATON_HTTP_ABSOLUTE_FORM, "/", NULL);
	split_is("http://example.org?q", BATON_HTTP_ABSOLUTE_FORM, "/", "q");
	split_is("example.org:443", BATON_HTTP_AUTHORITY_FORM, "", NULL);
	split_is("*", BATON_HTTP_ASTERISK_FORM, "*", NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode),
		cmocka_unit_test(test_decode_refused),
		cmocka_unit_test(test_query_args),
		cmocka_unit_test(test_split_target),
	};

	tc_watchdog(60);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
