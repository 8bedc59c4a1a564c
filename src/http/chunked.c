/* SPDX-License-Identifier: MIT */
/*
 * The chunked transfer coding decoder (RFC 9112 7.1), a byte-driven state
 * machine that can stop and resume at any byte:
 *
 *   chunked-body = *chunk last-chunk trailer-section CRLF
 *   chunk        = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
 *   chunk-size   = 1*HEXDIG
 *   last-chunk   = 1*("0") [ chunk-ext ] CRLF
 *   chunk-ext    = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )
 *
 * Extensions are skipped (only their bytes are checked: no CTL, no bare CR
 * or LF), trailer fields are checked like header fields and dropped. Every
 * decision is taken at a fixed byte, so any split of the input gives the
 * same answer at the same place.
 */
#include <string.h>

#include "http_ctype.h"
#include "http_parse.h"

#define CHUNK_LINE_MAX 4096 /* chunk-size plus extensions on one line (400) */

enum {
	S_SIZE0,   /* first chunk-size digit */
	S_SIZE,    /* more digits, ';', BWS or CR */
	S_BWS,     /* whitespace after the size: only more of it or ";" */
	S_EXT,     /* inside chunk extensions, up to CR */
	S_SIZE_LF, /* CR seen after the chunk line */
	S_DATA,
	S_DATA_CR,
	S_DATA_LF,
	S_TR_START, /* start of a trailer line or of the final CRLF */
	S_TR_NAME,
	S_TR_VALUE,
	S_TR_LF,  /* CR seen after a trailer field */
	S_END_LF, /* CR of the final empty line seen */
	S_DONE,
};

void baton__http_chunked_init(struct baton_http_chunked *c, const struct baton_http_limits *lim)
{
	if (!c)
		return;
	memset(c, 0, sizeof(*c));
	c->state = S_SIZE0;
	c->max_body = lim ? (lim->max_body > 0 ? lim->max_body : 0) : 1048576;
	c->max_trailer_bytes = lim ? lim->max_header_bytes : 32768;
	c->max_trailer_fields = lim ? lim->max_fields : 100;
}

int baton__http_chunked_done(const struct baton_http_chunked *c)
{
	/* Not after an error: the last byte can both end the trailers and
	 * overflow their limit. */
	return c && c->state == S_DONE && c->status == 0;
}

static int fail(struct baton_http_chunked *c, int status, const char *why)
{
	c->status = -status;
	c->why = why;
	return -status;
}

static int hexval(unsigned char ch)
{
	if (ch <= '9')
		return ch - '0';
	return (ch | 0x20) - 'a' + 10;
}

int baton__http_chunked_feed(struct baton_http_chunked *c, const char *in, size_t in_len,
			     size_t *consumed, char *out, size_t out_cap, size_t *produced)
{
	const unsigned char *p = (const unsigned char *)in;
	size_t i = 0, o = 0;
	int rc = 0;

	if (consumed)
		*consumed = 0;
	if (produced)
		*produced = 0;
	if (!c || !consumed || !produced || (!in && in_len) || (!out && out_cap))
		return BATON_HTTP_EINVAL;
	if (c->status)
		return c->status;

	while (i < in_len && c->state != S_DONE) {
		unsigned char ch = p[i];

		switch (c->state) {
		case S_SIZE0:
		case S_SIZE:
			if (http_is(ch, HC_HEX)) {
				int64_t d = hexval(ch);
				if (c->size > (INT64_MAX - d) / 16) {
					rc = fail(c, 400, "chunk size overflows");
					goto out;
				}
				c->size = c->size * 16 + d;
				if (c->size > c->max_body - c->total) {
					rc = fail(c, 413, "chunked body over the body limit");
					goto out;
				}
				c->state = S_SIZE;
			} else if (c->state == S_SIZE0) {
				rc = fail(c, 400, "invalid chunk size");
				goto out;
			} else if (ch == ';') {
				c->state = S_EXT;
			} else if (ch == ' ' || ch == '\t') {
				c->state = S_BWS; /* BWS, then ";" must follow */
			} else if (ch == '\r') {
				c->state = S_SIZE_LF;
			} else {
				rc = fail(c, 400, ch == '\n' ? "bare LF" : "invalid chunk size");
				goto out;
			}
			if (++c->line_len > CHUNK_LINE_MAX) {
				rc = fail(c, 400, "chunk line too long");
				goto out;
			}
			i++;
			break;
		case S_BWS:
			if (ch == ';') {
				c->state = S_EXT;
			} else if (ch != ' ' && ch != '\t') {
				rc = fail(c, 400,
					  ch == '\n' ? "bare LF"
						     : "whitespace after the chunk size");
				goto out;
			}
			if (++c->line_len > CHUNK_LINE_MAX) {
				rc = fail(c, 400, "chunk line too long");
				goto out;
			}
			i++;
			break;
		case S_EXT:
			if (ch == '\r') {
				c->state = S_SIZE_LF;
			} else if (!http_is(ch, HC_VALUE)) {
				rc = fail(c, 400,
					  ch == '\n' ? "bare LF" : "invalid chunk extension");
				goto out;
			} else if (++c->ext_total > c->max_trailer_bytes) {
				rc = fail(c, 400, "chunk extensions too long");
				goto out;
			}
			if (++c->line_len > CHUNK_LINE_MAX) {
				rc = fail(c, 400, "chunk line too long");
				goto out;
			}
			i++;
			break;
		case S_SIZE_LF:
			if (ch != '\n') {
				rc = fail(c, 400, "bare CR");
				goto out;
			}
			i++;
			c->line_len = 0;
			if (c->size == 0) {
				c->state = S_TR_START;
			} else {
				c->chunk_left = c->size;
				c->total += c->size;
				c->size = 0;
				c->state = S_DATA;
			}
			break;
		case S_DATA: {
			size_t n = in_len - i;
			if ((uint64_t)n > (uint64_t)c->chunk_left)
				n = (size_t)c->chunk_left;
			if (n > out_cap - o)
				n = out_cap - o;
			if (n == 0)
				goto out; /* out is full */
			memmove(out + o, in + i, n);
			o += n;
			i += n;
			c->chunk_left -= (int64_t)n;
			if (c->chunk_left == 0)
				c->state = S_DATA_CR;
			break;
		}
		case S_DATA_CR:
			if (ch != '\r') {
				rc = fail(c, 400, "chunk data not followed by CRLF");
				goto out;
			}
			c->state = S_DATA_LF;
			i++;
			break;
		case S_DATA_LF:
			if (ch != '\n') {
				rc = fail(c, 400, "bare CR");
				goto out;
			}
			c->state = S_SIZE0;
			i++;
			break;
		case S_TR_START:
			if (ch == '\r') {
				c->state = S_END_LF;
			} else if (ch == '\n') {
				rc = fail(c, 400, "bare LF");
				goto out;
			} else if (ch == ' ' || ch == '\t') {
				rc = fail(c, 400, "obs-fold in the trailer section");
				goto out;
			} else if (!http_is(ch, HC_TOKEN)) {
				rc = fail(c, 400, "invalid trailer field name");
				goto out;
			} else if (c->trailer_fields++ == c->max_trailer_fields) {
				rc = fail(c, 431, "too many trailer fields");
				goto out;
			} else {
				c->state = S_TR_NAME;
			}
			goto trailer_byte;
		case S_TR_NAME:
			if (ch == ':') {
				c->state = S_TR_VALUE;
			} else if (ch == ' ' || ch == '\t') {
				rc = fail(c, 400, "whitespace before the colon");
				goto out;
			} else if (!http_is(ch, HC_TOKEN)) {
				rc = fail(c, 400,
					  ch == '\n' ? "bare LF" : "invalid trailer field name");
				goto out;
			}
			goto trailer_byte;
		case S_TR_VALUE:
			if (ch == '\r') {
				c->state = S_TR_LF;
			} else if (!http_is(ch, HC_VALUE)) {
				rc = fail(c, 400,
					  ch == '\n' ? "bare LF"
						     : "invalid byte in a trailer field");
				goto out;
			}
			goto trailer_byte;
		case S_TR_LF:
			if (ch != '\n') {
				rc = fail(c, 400, "bare CR");
				goto out;
			}
			c->state = S_TR_START;
			goto trailer_byte;
		case S_END_LF:
			if (ch != '\n') {
				rc = fail(c, 400, "bare CR");
				goto out;
			}
			c->state = S_DONE;
			goto trailer_byte;
trailer_byte:
			if (++c->trailer_bytes > c->max_trailer_bytes) {
				rc = fail(c, 431, "trailer section too large");
				goto out;
			}
			i++;
			break;
		}
	}
	if (c->state == S_DONE)
		rc = 1;
out:
	*consumed = i;
	*produced = o;
	return rc;
}
