/* SPDX-License-Identifier: MIT */
/*
 * src/http/http_ctype.h - byte classes of RFC 9110/9112 for the parser:
 * one table lookup per byte.
 */
#ifndef BATON_HTTP_CTYPE_H
#define BATON_HTTP_CTYPE_H

#include <stddef.h>

enum {
	HC_TOKEN = 1,   /* tchar: "!#$%&'*+-.^_`|~" DIGIT ALPHA */
	HC_VALUE = 2,   /* field-vchar, SP, HTAB: VCHAR obs-text SP HTAB */
	HC_TARGET = 4,  /* request-target bytes: VCHAR (0x21-0x7e) */
	HC_HEX = 8,     /* HEXDIG */
	HC_HOST = 16,   /* uri-host and port: unreserved pct sub-delims ":" "[" "]" */
};

#define HC_RANGE(lo, hi, v) [lo ... hi] = (v)

/* Later initialisers refine the broad ranges on purpose. */
#pragma GCC diagnostic push
#if defined(__clang__)
#pragma GCC diagnostic ignored "-Winitializer-overrides"
#else
#pragma GCC diagnostic ignored "-Woverride-init"
#endif
static const unsigned char http_ctype[256] = {
	['\t'] = HC_VALUE,
	[' '] = HC_VALUE,
	HC_RANGE(0x21, 0x7e, HC_VALUE | HC_TARGET),
	HC_RANGE(0x80, 0xff, HC_VALUE),
	HC_RANGE('0', '9', HC_VALUE | HC_TARGET | HC_TOKEN | HC_HEX | HC_HOST),
	HC_RANGE('a', 'f', HC_VALUE | HC_TARGET | HC_TOKEN | HC_HEX | HC_HOST),
	HC_RANGE('A', 'F', HC_VALUE | HC_TARGET | HC_TOKEN | HC_HEX | HC_HOST),
	HC_RANGE('g', 'z', HC_VALUE | HC_TARGET | HC_TOKEN | HC_HOST),
	HC_RANGE('G', 'Z', HC_VALUE | HC_TARGET | HC_TOKEN | HC_HOST),
	['!'] = HC_VALUE | HC_TARGET | HC_TOKEN | HC_HOST,
	['#'] = HC_VALUE | HC_TARGET | HC_TOKEN,
	['$'] = HC_VALUE | HC_TARGET | HC_TOKEN | HC_HOST,
	['%'] = HC_VALUE | HC_TARGET | HC_TOKEN | HC_HOST,
	['&'] = HC_VALUE | HC_TARGET | HC_TOKEN | HC_HOST,
	['\''] = HC_VALUE | HC_TARGET | HC_TOKEN | HC_HOST,
	['*'] = HC_VALUE | HC_TARGET | HC_TOKEN | HC_HOST,
	['+'] = HC_VALUE | HC_TARGET | HC_TOKEN | HC_HOST,
	['-'] = HC_VALUE | HC_TARGET | HC_TOKEN | HC_HOST,
	['.'] = HC_VALUE | HC_TARGET | HC_TOKEN | HC_HOST,
	['^'] = HC_VALUE | HC_TARGET | HC_TOKEN,
	['_'] = HC_VALUE | HC_TARGET | HC_TOKEN | HC_HOST,
	['`'] = HC_VALUE | HC_TARGET | HC_TOKEN,
	['|'] = HC_VALUE | HC_TARGET | HC_TOKEN,
	['~'] = HC_VALUE | HC_TARGET | HC_TOKEN | HC_HOST,
	['('] = HC_VALUE | HC_TARGET | HC_HOST,
	[')'] = HC_VALUE | HC_TARGET | HC_HOST,
	[','] = HC_VALUE | HC_TARGET | HC_HOST,
	[';'] = HC_VALUE | HC_TARGET | HC_HOST,
	['='] = HC_VALUE | HC_TARGET | HC_HOST,
	[':'] = HC_VALUE | HC_TARGET | HC_HOST,
	['['] = HC_VALUE | HC_TARGET | HC_HOST,
	[']'] = HC_VALUE | HC_TARGET | HC_HOST,
};
#pragma GCC diagnostic pop

#undef HC_RANGE

static inline int http_is(unsigned char c, unsigned cls)
{
	return (http_ctype[c] & cls) != 0;
}

static inline unsigned char http_lower(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') ? (unsigned char)(c + 32) : c;
}

/* Case-insensitive comparison of s[0, n) with the lower-case literal lit. */
static inline int http_ieq(const char *s, size_t n, const char *lit, size_t litn)
{
	if (n != litn)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (http_lower((unsigned char)s[i]) != (unsigned char)lit[i])
			return 0;
	return 1;
}

#define HTTP_IEQ(s, n, lit) http_ieq((s), (n), lit, sizeof(lit) - 1)

#endif /* BATON_HTTP_CTYPE_H */
