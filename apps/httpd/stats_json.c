/* SPDX-License-Identifier: MIT */
/*
 * apps/httpd/stats_json.c - the server's stage and pool snapshots as one
 * JSON object, the body of baton-httpd's GET /_stats. Written like
 * snprintf: the text is measured in full even when the buffer is too
 * small, so a caller can size its buffer and retry.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "admin.h"

struct out {
	char *buf;
	size_t size, len; /* len: bytes of the whole text so far */
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(o->len < o->size ? o->buf + o->len : NULL,
		      o->len < o->size ? o->size - o->len : 0, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->len += (size_t)n;
}

/* A JSON string: quotes, backslashes and control bytes escaped. */
static void put_string(struct out *o, const char *s)
{
	put(o, "\"");
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		if (*c == '"' || *c == '\\')
			put(o, "\\%c", *c);
		else if (*c < 0x20)
			put(o, "\\u%04x", *c);
		else
			put(o, "%c", *c);
	}
	put(o, "\"");
}

static void put_stage(struct out *o, const struct baton_stage_stats *s)
{
	put(o, "{\"name\":");
	put_string(o, s->name);
	put(o,
	    ",\"queued\":%zu,\"queue_limit\":%zu,\"running\":%u,"
	    "\"concurrency\":%u,\"closed\":%s,\"submitted\":%" PRIu64 ",\"rejected\":%" PRIu64
	    ",\"completed\":%" PRIu64 ",\"handler_ns\":%" PRIu64 ",\"wait_ns\":%" PRIu64
	    ",\"runners\":%u,\"runners_started\":%" PRIu64 "}",
	    s->queued, s->queue_limit, s->running, s->concurrency, s->closed ? "true" : "false",
	    s->submitted, s->rejected, s->completed, s->handler_ns, s->wait_ns, s->runners,
	    s->runners_started);
}

static void put_pool(struct out *o, const struct baton_pool_stats *p)
{
	put(o, "{\"name\":");
	put_string(o, p->name);
	put(o,
	    ",\"capacity\":%ld,\"in_use\":%ld,\"waiters\":%ld,"
	    "\"acquired\":%" PRIu64 ",\"refused\":%" PRIu64 "}",
	    p->capacity, p->in_use, p->waiters, p->acquired, p->refused);
}

int httpd_stats_json(const struct baton_stage_stats *stages, size_t nstages,
		     const struct baton_pool_stats *pools, size_t npools, char *buf, size_t size,
		     size_t *len)
{
	struct out o = { buf, size, 0 };

	if (len == NULL || (nstages > 0 && stages == NULL) || (npools > 0 && pools == NULL) ||
	    (buf == NULL && size > 0))
		return BATON_EINVAL;
	if (size > 0)
		buf[0] = '\0';
	put(&o, "{\"stages\":[");
	for (size_t i = 0; i < nstages; i++) {
		if (i)
			put(&o, ",");
		put_stage(&o, &stages[i]);
	}
	put(&o, "],\"pools\":[");
	for (size_t i = 0; i < npools; i++) {
		if (i)
			put(&o, ",");
		put_pool(&o, &pools[i]);
	}
	put(&o, "]}");
	*len = o.len;
	if (buf == NULL)
		return BATON_OK; /* size 0: only measured */
	return o.len < size ? BATON_OK : BATON_EINVAL;
}
