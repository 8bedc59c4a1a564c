/* SPDX-License-Identifier: MIT */
/*
 * The Scheme handler of baton-httpd: CHICKEN Scheme on its own stack
 * (bindings/chicken), entered through the call sequencer from whichever
 * worker a request arrives on. The handler file is compiled by csc at
 * start-up (scheme_compile.c) and the shared object loaded, or a shared
 * object is given as is, or, with --scheme-eval, the file is interpreted by
 * CHICKEN's eval (scheme_host.scm). The request reaches Scheme through the
 * accessors below, with no copy of its own on the way; the response comes
 * back field by field into a reply (reply.c), copied while the call is still
 * on the runtime's stack, since the collector moves Scheme strings.
 *
 * CHICKEN has one runtime per process, so there is one handler.
 *
 * Limits: a Scheme handler cannot be cancelled from outside, so the host's
 * timer-interrupt hook (scheme_host.scm) asks httpd_scm_stop_reason at
 * CHICKEN's own safe points whether the request is past its deadline, its
 * CPU budget (the time its calls spent in the runtime) or its memory budget
 * (what the heap grew by during its call), and abandons the handler by an
 * escape continuation when it is. The runtime and the compute worker are
 * then free again; the request gets 504 (time) or 500 (memory).
 */
#include <ctype.h>
#include <limits.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baton_chicken.h"
#include "handlers.h"

/* Generated from scheme_host.scm by define-sequenced-callback. */
int httpd_scheme_eval_file_try(char *path, int *ret);
int httpd_scheme_load_so_try(char *path, char *shown_as, int *ret);
int httpd_scheme_handle_try(void *req, void *reply, void *ctx);
int httpd_scheme_next_try(long key, void *reply, void *ctx, int *ret);
int httpd_scheme_drop_try(long key);

struct scheme_handler {
	const char *file;
	size_t max_response_body;
	const struct httpd_handler_opts *opts; /* main's: the limits, per route */
};

static struct scheme_handler the_handler;

/* A request's limits and what its calls into the runtime used. */
enum { SCM_GO_ON, SCM_DEADLINE, SCM_CPU, SCM_MEMORY };

struct scm_ctx {
	const struct baton_http_req *req;
	struct httpd_limits lim;
	int64_t start;    /* the current call's */
	int64_t cpu_used; /* the calls' before it */
	size_t mem_base;  /* the heap in use when the current call began */
	int stopped;      /* SCM_*: what the hook found last */
};

/* The call in the runtime now: set and read on its stack only. */
static struct scm_ctx *current;

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void httpd_scm_call_begin(void *ctx, size_t heap_used)
{
	struct scm_ctx *c = ctx;

	c->start = mono_ns();
	c->mem_base = heap_used;
	c->stopped = SCM_GO_ON;
	current = c;
}

void httpd_scm_call_end(void *ctx)
{
	struct scm_ctx *c = ctx;

	c->cpu_used += mono_ns() - c->start;
	current = NULL;
}

/* From the timer-interrupt hook: must the call stop, and why. */
int httpd_scm_stop_reason(size_t heap_used)
{
	struct scm_ctx *c = current;
	int why = SCM_GO_ON;

	if (c == NULL)
		return SCM_GO_ON;
	if (httpd_request_expired(c->req))
		why = SCM_DEADLINE;
	else if (c->lim.cpu_ns > 0 && c->cpu_used + (mono_ns() - c->start) >= c->lim.cpu_ns)
		why = SCM_CPU;
	else if (c->lim.mem_bytes > 0 && heap_used > c->mem_base &&
		 heap_used - c->mem_base > c->lim.mem_bytes)
		why = SCM_MEMORY;
	return c->stopped = why;
}

/* The one log line of a handler a limit stopped says which. */
static void say_stopped(struct httpd_reply *r, const struct scm_ctx *c)
{
	char why[160];
	int n;

	if (c->stopped == SCM_DEADLINE)
		n = snprintf(why, sizeof(why),
			     "stopped: handler timeout, the request's deadline "
			     "has passed");
	else if (c->stopped == SCM_CPU)
		n = snprintf(why, sizeof(why),
			     "stopped: its CPU budget (%lld ms) is used up "
			     "(answered 504)",
			     (long long)(c->lim.cpu_ns / 1000000));
	else
		n = snprintf(why, sizeof(why),
			     "stopped: not enough memory, its memory budget "
			     "(%zu bytes) is used up",
			     c->lim.mem_bytes);
	r->rc = BATON_OK; /* replace whatever the reply had */
	httpd_reply_error(r, why, (size_t)n);
}

static const char *req_part(const struct baton_http_req *req, int part, int i, size_t *len)
{
	const char *name, *value, *k, *v;
	size_t nl, vl, kl, pos = 0;

	*len = 0;
	switch (part) {
	case HTTPD_SCM_METHOD:
		*len = req->method_len;
		return req->method;
	case HTTPD_SCM_TARGET:
		*len = req->target_len;
		return req->target;
	case HTTPD_SCM_BODY:
		*len = req->body ? req->body_len : 0;
		return req->body;
	case HTTPD_SCM_PATH:
		*len = req->path_len;
		return req->path;
	case HTTPD_SCM_QUERY:
		*len = req->query_len;
		return req->query;
	case HTTPD_SCM_REMOTE:
		*len = req->remote_addr ? strlen(req->remote_addr) : 0;
		return req->remote_addr;
	case HTTPD_SCM_ARG_KEY:
	case HTTPD_SCM_ARG_VALUE:
		for (int n = 0;
		     baton_http_query_next(req->query, req->query_len, &pos, &k, &kl, &v, &vl);
		     n++) {
			if (n == i) {
				*len = part == HTTPD_SCM_ARG_KEY ? kl : vl;
				return part == HTTPD_SCM_ARG_KEY ? k : v;
			}
		}
		return NULL;
	default:
		if (i < 0 ||
		    baton_http_req_field(req, (size_t)i, &name, &nl, &value, &vl) != BATON_OK)
			return NULL;
		*len = part == HTTPD_SCM_NAME ? nl : vl;
		return part == HTTPD_SCM_NAME ? name : value;
	}
}

static bool decoded_part(int part)
{
	return part == HTTPD_SCM_ARG_KEY || part == HTTPD_SCM_ARG_VALUE;
}

/* The length of s[0, n) percent-decoded, or n when it does not decode
 * (then it is given as sent). */
static size_t decoded_len(const char *s, size_t n)
{
	size_t m = n;

	for (size_t i = 0; i < n; i++) {
		if (s[i] != '%')
			continue;
		if (n - i < 3 || !isxdigit((unsigned char)s[i + 1]) ||
		    !isxdigit((unsigned char)s[i + 2]))
			return n;
		m -= 2;
		i += 2;
	}
	return m;
}

size_t httpd_scm_req_size(const struct baton_http_req *req, int part, int i)
{
	size_t len;
	const char *p = req_part(req, part, i, &len);

	return decoded_part(part) && p ? decoded_len(p, len) : len;
}

/* dst is a fresh string (or u8vector) of httpd_scm_req_size() bytes;
 * nothing allocates in Scheme between the two calls, so the sizes agree.
 * Field names come in lower case, query arguments decoded. */
void httpd_scm_req_copy(const struct baton_http_req *req, int part, int i, void *dst)
{
	size_t len, out;
	const char *p = req_part(req, part, i, &len);
	char *d = dst;

	if (len == 0)
		return;
	if (part == HTTPD_SCM_NAME) {
		for (size_t k = 0; k < len; k++)
			d[k] = (char)tolower((unsigned char)p[k]);
	} else if (!decoded_part(part) || baton_http_decode(d, p, len, 1, &out) != BATON_OK) {
		/* dst has len bytes when the part does not decode */
		memcpy(d, p, len);
	}
}

int httpd_scm_req_count(const struct baton_http_req *req, int what)
{
	const char *name, *value;
	size_t nl, vl, pos = 0;
	int n = 0;

	switch (what) {
	case 0: /* header fields */
		while (baton_http_req_field(req, (size_t)n, &name, &nl, &value, &vl) == BATON_OK)
			n++;
		return n;
	case 1: /* query arguments */
		while (baton_http_query_next(req->query, req->query_len, &pos, &name, &nl, &value,
					     &vl))
			n++;
		return n;
	case 2:
		return req->version_minor;
	case 3:
		return req->body != NULL;
	case 4:
		return req->query != NULL;
	default:
		return req->remote_port;
	}
}

int httpd_scm_reply_stream(struct httpd_reply *r, long key)
{
	r->stream_key = key;
	return httpd_reply_stream(r);
}

void httpd_scm_rule(struct httpd_reply *r, const void *msg, size_t len)
{
	httpd_reply_rule(r, "%.*s", (int)(len > INT_MAX ? INT_MAX : len), (const char *)msg);
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Compile (or take) the shared object and load it; or eval the file. */
static int install(const struct httpd_handler_opts *opts, char *path)
{
	char dir[PATH_MAX], so[PATH_MAX];
	int ok = 0, rc;

	if (opts->scheme_eval)
		rc = httpd_scheme_eval_file_try(path, &ok);
	else if (ends_with(path, ".so"))
		rc = httpd_scheme_load_so_try(path, (char *)opts->file, &ok);
	else {
		if (httpd_scheme_compile(path, dir, sizeof(dir), so, sizeof(so)) != 0)
			return -1;
		rc = httpd_scheme_load_so_try(so, (char *)opts->file, &ok);
		/* Mapped by now: the files are not needed any more. */
		httpd_scheme_clean(dir);
	}
	return rc == BATON_OK && ok ? 0 : -1;
}

void *httpd_scheme_load(const struct httpd_handler_opts *opts)
{
	static int started;
	char path[PATH_MAX];

	/* Absolute: dlopen looks for a bare name in the library path, and
	 * csc compiles from its temporary directory. */
	if (realpath(opts->file, path) == NULL) {
		perror(opts->file);
		return NULL;
	}
	if (!started) {
		if (baton_chicken_start(NULL) != BATON_OK) {
			fprintf(stderr, "baton-httpd: cannot start CHICKEN\n");
			return NULL;
		}
		started = 1;
	}
	if (install(opts, path) != 0)
		return NULL;
	the_handler.file = opts->file;
	the_handler.max_response_body = opts->max_response_body;
	the_handler.opts = opts;
	return &the_handler;
}

void httpd_scheme_unload(void *ctx)
{
	(void)ctx; /* CHICKEN cannot be stopped and started again */
}

/* A streamed reply (the handler's body was a procedure): the head, then
 * one piece per call of the procedure, each sent before the next is
 * asked for, until it returns #f or an end-of-file object. Not run for a
 * HEAD. The procedure is dropped from the host's table at the end. */
static int scheme_stream(const struct baton_http_req *req, struct httpd_reply *r, const char *file,
			 struct scm_ctx *ctx)
{
	int more = 1, rc;

	r->piece_len = 0;
	httpd_reply_send_piece(r);
	if (req->method_len == 4 && memcmp(req->method, "HEAD", 4) == 0)
		more = 0;
	while (r->rc == BATON_OK && more) {
		rc = httpd_scheme_next_try(r->stream_key, r, ctx, &more);
		if (rc != BATON_OK)
			httpd_reply_error(r, baton_strerror(rc), strlen(baton_strerror(rc)));
		else if (ctx->stopped != SCM_GO_ON)
			say_stopped(r, ctx);
		else if (more && r->rc == BATON_OK)
			httpd_reply_send_piece(r);
	}
	httpd_scheme_drop_try(r->stream_key);
	return httpd_reply_done(r, "scheme", file);
}

int httpd_scheme(void *ctx, const struct baton_http_req *req, struct baton_http_resp *resp)
{
	struct scheme_handler *h = ctx;
	struct httpd_reply reply;
	struct scm_ctx c = { req, httpd_limits_of(h->opts, req), 0, 0, 0, SCM_GO_ON };
	int rc;

	httpd_reply_init(&reply, resp, h->max_response_body);
	if (httpd_request_expired(req)) {
		/* It waited for the runtime past its deadline (the runtime
		 * serves one call at a time): the server answers 504. */
		c.stopped = SCM_DEADLINE;
		say_stopped(&reply, &c);
		return httpd_reply_done(&reply, "scheme", h->file);
	}
	rc = httpd_scheme_handle_try((void *)req, &reply, &c);
	if (rc != BATON_OK) {
		const char *why = baton_strerror(rc);

		httpd_reply_error(&reply, why, strlen(why));
	} else if (c.stopped != SCM_GO_ON) {
		say_stopped(&reply, &c);
	}
	rc = httpd_reply_done(&reply, "scheme", h->file);
	/* The CPU budget is a timeout of the handler's: 504, as past
	 * --handler-timeout (baton/http.h rule 1). */
	if (c.stopped == SCM_CPU)
		return -504;
	if (rc == BATON_OK && reply.stream) {
		rc = scheme_stream(req, &reply, h->file, &c);
		if (c.stopped == SCM_CPU && rc != BATON_OK)
			return -504;
	}
	return rc;
}
