/* SPDX-License-Identifier: MIT */
/*
 * The parts of a request-target a handler reads (include/baton/http.h):
 * the path and the query split off the target, percent-decoding, and the
 * query's arguments one by one; and the request's accessors (its header
 * fields, whether its deadline passed). No allocation: the caller owns
 * every buffer.
 */
#include <string.h>

#include <baton/http.h>

#include "../common/prelude.h"
#include "http_ctype.h"
#include "http_parse.h"

static int hex_value(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	return (c | 0x20) - 'a' + 10; /* only called on HC_HEX bytes */
}

int baton_http_decode(char *dst, const char *src, size_t len, int plus, size_t *out_len)
{
	size_t o = 0;

	if (dst == NULL || out_len == NULL || (src == NULL && len))
		return BATON_EINVAL;
	/* o never passes i, so decoding in place reads each byte before
	 * it is overwritten. */
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)src[i];

		if (c == '%') {
			if (len - i < 3 || !http_is((unsigned char)src[i + 1], HC_HEX) ||
			    !http_is((unsigned char)src[i + 2], HC_HEX))
				return BATON_EINVAL;
			c = (unsigned char)(hex_value((unsigned char)src[i + 1]) << 4 |
					    hex_value((unsigned char)src[i + 2]));
			i += 2;
		} else if (c == '+' && plus) {
			c = ' ';
		}
		dst[o++] = (char)c;
	}
	*out_len = o;
	return BATON_OK;
}

int baton_http_query_next(const char *query, size_t len, size_t *pos, const char **key,
			  size_t *key_len, const char **value, size_t *value_len)
{
	size_t i;

	if (pos == NULL || key == NULL || key_len == NULL || value == NULL || value_len == NULL ||
	    (query == NULL && len))
		return 0;
	for (i = *pos; i < len && query[i] == '&'; i++)
		; /* empty arguments */
	if (i >= len) {
		*pos = len;
		return 0;
	}
	const char *arg = query + i;
	const char *end = memchr(arg, '&', len - i);
	size_t n = end ? (size_t)(end - arg) : len - i;
	const char *eq = memchr(arg, '=', n);

	*key = arg;
	*key_len = eq ? (size_t)(eq - arg) : n;
	*value = eq ? eq + 1 : arg + n;
	*value_len = eq ? n - *key_len - 1 : 0;
	*pos = i + n;
	return 1;
}

void baton__http_split_target(const char *target, size_t len, int form, const char **path,
			      size_t *path_len, const char **query, size_t *query_len)
{
	const char *p = target, *end = target + len, *q;

	*query = NULL;
	*query_len = 0;
	if (form == BATON_HTTP_AUTHORITY_FORM) {
		*path = "";
		*path_len = 0;
		return;
	}
	if (form == BATON_HTTP_ABSOLUTE_FORM) {
		/* scheme "://" authority, then the path (RFC 9112 3.2.2) */
		const char *colon = memchr(p, ':', len);

		p = colon && end - colon >= 3 && colon[1] == '/' && colon[2] == '/' ? colon + 3
										    : end;
		while (p < end && *p != '/' && *p != '?')
			p++;
	}
	q = memchr(p, '?', (size_t)(end - p));
	if (q) {
		*query = q + 1;
		*query_len = (size_t)(end - q - 1);
		end = q;
	}
	if (p == end && form == BATON_HTTP_ABSOLUTE_FORM) {
		*path = "/"; /* "http://host" asks for "/" (RFC 9110 4.2.3) */
		*path_len = 1;
		return;
	}
	*path = p;
	*path_len = (size_t)(end - p);
}

/* --- the request's accessors (baton/http.h) ----------------------------- */
int baton_http_req_expired(const struct baton_http_req *req)
{
	if (req == NULL)
		return BATON_EINVAL;
	return req->deadline >= 0 && baton__clock_now() >= req->deadline;
}

const char *baton_http_req_header(const struct baton_http_req *req, const char *name, size_t *len)
{
	const struct baton_http_field *f;

	if (req == NULL || req->head_ == NULL || name == NULL)
		return NULL;
	f = baton__http_find_field(req->head_, name);
	if (f && len)
		*len = f->value_len;
	return f ? f->value : NULL;
}

int baton_http_req_field(const struct baton_http_req *req, size_t i, const char **name,
			 size_t *name_len, const char **value, size_t *value_len)
{
	const struct baton_http_request *r;

	if (req == NULL || req->head_ == NULL || name == NULL || name_len == NULL ||
	    value == NULL || value_len == NULL)
		return BATON_EINVAL;
	r = req->head_;
	if (i >= r->nfields)
		return BATON_EINVAL;
	*name = r->fields[i].name;
	*name_len = r->fields[i].name_len;
	*value = r->fields[i].value;
	*value_len = r->fields[i].value_len;
	return BATON_OK;
}
