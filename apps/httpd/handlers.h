/* SPDX-License-Identifier: MIT */
/*
 * apps/httpd/handlers.h - the handlers baton-httpd can run: hello (C), a Lua
 * file and a Scheme file, each behind the baton/http.h handler shape, and
 * what the Lua and Scheme handlers share: the response they build out of
 * their language's values (reply.c), checked against the rules of
 * docs/httpd.md, and the one log line a broken rule or an error gets.
 */
#ifndef BATON_HTTPD_HANDLERS_H
#define BATON_HTTPD_HANDLERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <baton/http.h>
#include <baton/sched.h>

/* A request's budgets in a Lua or Scheme handler (docs/httpd.md, Limits):
 * CPU, the time it computes (Lua: its slices; Scheme: its calls into the
 * runtime), and memory (Lua: what its allocations hold at once; Scheme:
 * what the heap grew by during its call). 0: no limit. */
struct httpd_limits {
	int64_t cpu_ns;
	size_t mem_bytes;
};

#define HTTPD_CPU_BUDGET_DEFAULT_NS (10 * 1000000000LL) /* --handler-cpu 10000 */
#define HTTPD_MEM_BUDGET_DEFAULT ((size_t)64 << 20)     /* --handler-memory 64M */

/* --route-limits PREFIX LIMITS: the budgets of the requests whose decoded
 * path starts with PREFIX (the longest such prefix wins); a budget it does
 * not name is the server's. */
struct httpd_route_limits {
	const char *prefix;
	size_t len;
	struct httpd_limits lim;
	bool has_cpu, has_mem;
};

/* What the command line says about the handler. */
struct httpd_handler_opts {
	const char *file;
	unsigned workers;           /* the scheduler's: one Lua state each */
	bool lua_shared;            /* one Lua state for every worker */
	bool scheme_eval;           /* interpret the file instead of compiling it */
	size_t max_response_body;   /* a larger body breaks a rule */
	int64_t lua_slice_ns;       /* a Lua slice's time; 0 = default (1 ms), < 0 = off */
	struct httpd_limits limits; /* --handler-cpu, --handler-memory */
	const struct httpd_route_limits *routes; /* --route-limits, nroutes of them */
	size_t nroutes;
	size_t lua_max_timers; /* pending baton.after/every per state; 0 = default */
	baton_sched_t *sched;  /* runs the timers a Lua file sets as it loads */
};

#define HTTPD_MAX_RESPONSE_BODY_DEFAULT ((size_t)16 << 20)

/* The budgets of req: its route's, else the server's. */
static inline struct httpd_limits httpd_limits_of(const struct httpd_handler_opts *o,
						  const struct baton_http_req *req)
{
	struct httpd_limits l = o->limits;
	const struct httpd_route_limits *best = NULL;

	for (size_t i = 0; i < o->nroutes; i++) {
		const struct httpd_route_limits *r = &o->routes[i];

		if (r->len <= req->path_len && (best == NULL || r->len > best->len) &&
		    memcmp(req->path, r->prefix, r->len) == 0)
			best = r;
	}
	if (best != NULL && best->has_cpu)
		l.cpu_ns = best->lim.cpu_ns;
	if (best != NULL && best->has_mem)
		l.mem_bytes = best->lim.mem_bytes;
	return l;
}

/* Whether any request may have a memory budget (Lua then accounts). */
static inline bool httpd_limits_any_memory(const struct httpd_handler_opts *o)
{
	if (o->limits.mem_bytes != 0)
		return true;
	for (size_t i = 0; i < o->nroutes; i++)
		if (o->routes[i].has_mem && o->routes[i].lim.mem_bytes != 0)
			return true;
	return false;
}

int httpd_hello(void *ctx, const struct baton_http_req *req, struct baton_http_resp *resp);
/* hello, with the routes that test --handler-timeout (hello.c) */
int httpd_debug(void *ctx, const struct baton_http_req *req, struct baton_http_resp *resp);

/*
 * The request's deadline (--handler-timeout, baton/http.h rule 8): true
 * once it has passed. An interpreter that cannot be cancelled while it
 * computes asks this at its safe points: CHICKEN's timer interrupt in the
 * Scheme handler (the Lua binding reads req->deadline itself, at every
 * slice's end). A clock read, no lock: any thread, for the request being
 * handled.
 */
static inline bool httpd_request_expired(const struct baton_http_req *req)
{
	return baton_http_req_expired(req) == 1;
}

/* Load opts->file and return a handler context for httpd_lua /
 * httpd_scheme; on failure print why on stderr and return NULL. */
void *httpd_lua_load(const struct httpd_handler_opts *opts);
int httpd_lua(void *ctx, const struct baton_http_req *req, struct baton_http_resp *resp);
void httpd_lua_unload(void *ctx);
/* Cancel the pending baton.after/every timers of a loaded Lua handler and
 * stop their running calls (reload, shutdown); new ones are refused. */
void httpd_lua_stop_timers(void *ctx);

void *httpd_scheme_load(const struct httpd_handler_opts *opts);
int httpd_scheme(void *ctx, const struct baton_http_req *req, struct baton_http_resp *resp);
void httpd_scheme_unload(void *ctx);

/*
 * A response under construction. Lua and Scheme hand their values over
 * while the call is still on the runtime's stack (the collectors may free or
 * move them afterwards); everything is copied, the header text into the
 * request's scratch buffer while it fits, the body behind it or, when that
 * is too small, into one malloc'd block the server frees after the write.
 *
 *   httpd_reply_init(&r, resp, max_body);
 *   httpd_reply_status(&r, 404);                 // optional, 200 otherwise
 *   httpd_reply_header(&r, "X-A", 3, "1", 1);    // any number of times
 *   httpd_reply_finish(&r, body, len);           // last: copies the body
 *   ... back off the runtime's stack ...
 *   return httpd_reply_done(&r, "lua", file);    // BATON_OK, or logs why not
 *
 * A streamed response ends with httpd_reply_stream(&r) instead of finish:
 * the head is ready, and the language's generator is then called for one
 * piece at a time (httpd_reply_piece copies each), each sent with
 * baton_http_resp_write before the next is asked for.
 *
 * Every step returns BATON_OK, or an error code once the reply is broken
 * (the first broken rule or error is kept; later steps do nothing).
 */
#define HTTPD_WHY_MAX 400
#define HTTPD_FIELDS_INLINE 16

struct httpd_reply {
	struct baton_http_resp *resp;
	size_t max_body;
	int status; /* 0: not given (200) */
	char *text; /* "name\0value\0" pairs */
	size_t len, cap;
	bool heap;                  /* text is malloc'd, not resp->scratch */
	bool has_type;              /* a Content-Type was given: */
	size_t type_off;            /* its value in text */
	size_t nfields, fields_cap; /* the other fields: their names' offsets */
	size_t *name_off;           /* in text (the value follows the name) */
	size_t name_inline[HTTPD_FIELDS_INLINE];
	bool finished;
	bool stream;     /* finished by httpd_reply_stream */
	long stream_key; /* the language's handle on its generator */
	int rc;          /* BATON_OK until broken */
	bool error;      /* broken by the language's error, not a rule */
	char why[HTTPD_WHY_MAX];
	/* A streamed response's current piece, copied out of the language. */
	char *piece;
	size_t piece_len, piece_cap;
};

void httpd_reply_init(struct httpd_reply *r, struct baton_http_resp *resp, size_t max_body);
int httpd_reply_status(struct httpd_reply *r, long long status);
int httpd_reply_header(struct httpd_reply *r, const void *name, size_t name_len, const void *value,
		       size_t value_len);
int httpd_reply_finish(struct httpd_reply *r, const void *body, size_t len);
int httpd_reply_stream(struct httpd_reply *r);
/* The next piece of a streamed response (up to max_body bytes each). */
int httpd_reply_piece(struct httpd_reply *r, const void *data, size_t len);
/* Send the piece copied last (baton_http_resp_write); on failure the reply
 * is broken with the reason. */
int httpd_reply_send_piece(struct httpd_reply *r);
/* Break the reply: a rule the handler broke (printf-style), or the
 * message of an error raised in the handler (any bytes). */
int httpd_reply_rule(struct httpd_reply *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int httpd_reply_error(struct httpd_reply *r, const void *msg, size_t len);
/* BATON_OK for a finished reply; otherwise free what it holds, log one
 * line "baton-httpd: LANG handler FILE: ..." and return its error. */
int httpd_reply_done(struct httpd_reply *r, const char *lang, const char *file);

/* scheme_compile.c: compile the source file `path` (absolute) with csc
 * into a shared object in a new temporary directory: 0 with its path in
 * so[] and the directory in dir[] (remove it with httpd_scheme_clean once
 * loaded), or -1 after csc's own messages and a line of ours on stderr. */
int httpd_scheme_compile(const char *path, char *dir, size_t dir_cap, char *so, size_t so_cap);
void httpd_scheme_clean(const char *dir);

/* scheme_handler.c, called from scheme_host.scm (foreign-lambda) on the
 * runtime's stack: the parts of a request, copied into a Scheme string (or
 * u8vector) of the size given (field names in lower case, query arguments
 * percent-decoded); counts and flags (0 fields, 1 query arguments,
 * 2 minor version, 3 has a body, 4 has a query, 5 client port); a
 * reply made a stream of the generator the host keeps under `key`; and a
 * broken rule's text, which is not a printf format. */
enum {
	HTTPD_SCM_METHOD,
	HTTPD_SCM_TARGET,
	HTTPD_SCM_BODY,
	HTTPD_SCM_NAME,
	HTTPD_SCM_VALUE,
	HTTPD_SCM_PATH,
	HTTPD_SCM_QUERY,
	HTTPD_SCM_REMOTE,
	HTTPD_SCM_ARG_KEY,
	HTTPD_SCM_ARG_VALUE,
};
size_t httpd_scm_req_size(const struct baton_http_req *req, int part, int i);
void httpd_scm_req_copy(const struct baton_http_req *req, int part, int i, void *dst);
int httpd_scm_req_count(const struct baton_http_req *req, int what);
int httpd_scm_reply_stream(struct httpd_reply *r, long key);
void httpd_scm_rule(struct httpd_reply *r, const void *msg, size_t len);
/* The limits of a request's call (scheme_handler.c's context): begin and
 * end of each call into the runtime, with the heap in use then; and, from
 * the timer-interrupt hook, whether it must stop (0: no; 1 deadline, 2 CPU
 * budget, 3 memory budget). */
void httpd_scm_call_begin(void *ctx, size_t heap_used);
void httpd_scm_call_end(void *ctx);
int httpd_scm_stop_reason(size_t heap_used);

#endif
