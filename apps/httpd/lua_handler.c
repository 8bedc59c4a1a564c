/* SPDX-License-Identifier: MIT */
/*
 * The Lua handler of baton-httpd: FILE is a chunk that returns a function
 *
 *     return function(request, body)
 *         return 200, { ["content-type"] = "text/plain" }, "Hello, World!\n"
 *     end
 *
 * (the request table and the values returned: docs/httpd.md, lua_values.c).
 *
 * One lua_State per scheduler worker, as OpenResty has one per worker
 * process: each state runs FILE at start-up, and a request is served by the
 * state of the worker its task runs on, so workers do not queue for one
 * state and every core runs Lua. Globals are per state (per worker). Each
 * state still sits behind its own call sequencer (bindings/lua): a task may
 * migrate to another worker between looking up the index and the call, and
 * then two workers share a state for that moment; the sequencer makes that
 * safe. With --lua-shared there is one state for all workers, reached
 * through its sequencer from every worker (calls batched by flat combining
 * when workers contend), for handlers that need one set of globals.
 *
 * Each request's handler is a coroutine of the state, run in slices of
 * --lua-slice (1 ms; bindings/lua, baton_lua_run): a long handler gives the
 * state and the worker to the other requests between slices, and waits
 * (baton.sleep, baton.tcp, baton.http_get) park only its request. No hook
 * is set while a slice runs: a per-thread timer ends it (lua_slice.c).
 *
 * Each request has budgets (--handler-cpu, --handler-memory, per route
 * with --route-limits): past its CPU budget the handler is stopped at its
 * slice's end and the request answered 504, as past --handler-timeout;
 * an allocation that would take its memory over budget fails ("not enough
 * memory", a 500), after which the state is collected in full and the
 * process's free memory handed back (malloc_trim).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <lauxlib.h>
#include <lua.h>

#include <baton/sched.h>

#include "baton_lua.h"
#include "handlers.h"
#include "lua_values.h"

struct lua_vm {
	baton_lua_t *bl;
	int ref; /* the handler function, in the registry */
};

struct lua_handler {
	const char *file;
	size_t max_response_body;
	const struct httpd_handler_opts *opts; /* main's: the limits, per route */
	unsigned n;
	struct lua_vm vm[];
};

struct load_job {
	const char *file;
	int ref;
	char err[512];
};

static void *load_on_stack(lua_State *L, void *arg)
{
	struct load_job *j = arg;

	if (luaL_loadfile(L, j->file) != LUA_OK || lua_pcall(L, 0, 1, 0) != LUA_OK) {
		const char *msg = lua_tostring(L, -1);

		snprintf(j->err, sizeof(j->err), "%s",
			 msg ? msg : "(error object is not a string)");
		lua_pop(L, 1);
		return NULL;
	}
	if (!lua_isfunction(L, -1)) {
		snprintf(j->err, sizeof(j->err), "%s must return a function, not a %s", j->file,
			 luaL_typename(L, -1));
		lua_pop(L, 1);
		return NULL;
	}
	j->ref = luaL_ref(L, LUA_REGISTRYINDEX);
	return j;
}

/* A timer callback failed: one line, as a handler's error. */
static void timer_error(void *arg, const char *msg)
{
	const char *file = arg;
	char line[1024];
	int n = snprintf(line, sizeof(line), "baton-httpd: lua timer %s: error: %s\n", file, msg);

	if (n > (int)sizeof(line) - 1)
		n = (int)sizeof(line) - 1, line[n - 1] = '\n';
	if (write(STDERR_FILENO, line, (size_t)n) < 0) {
		/* nowhere else to say it */
	}
}

/* A state of its own, with FILE run in it. `worker`: the one it serves
 * (its timers run there), or -1 for the shared state. */
static int load_vm(struct lua_vm *vm, const struct httpd_handler_opts *o, unsigned i, int worker,
		   unsigned flags)
{
	const char *file = o->file;
	struct baton_lua_tasks_attr ta = BATON_LUA_TASKS_ATTR_INIT;
	struct baton_seq_attr sa;
	struct load_job j = { file, LUA_NOREF, "" };
	char name[32];
	void *ok = NULL;

	baton_seq_attr_init(&sa);
	snprintf(name, sizeof(name), "lua-%u", i);
	sa.name = name;
	if (baton_lua_create_ex(&vm->bl, &sa, flags) != BATON_OK) {
		fprintf(stderr, "baton-httpd: cannot create a Lua state\n");
		return -1;
	}
	/* Timers: the same slices and budgets as a handler, no deadline. */
	ta.sched = o->sched;
	ta.worker = worker;
	ta.max_timers = o->lua_max_timers;
	ta.slice_ns = o->lua_slice_ns;
	ta.cpu_ns = o->limits.cpu_ns;
	ta.mem_bytes = (flags & BATON_LUA_ACCOUNT) ? o->limits.mem_bytes : 0;
	ta.error = timer_error;
	ta.error_arg = (void *)file;
	baton_lua_set_tasks(vm->bl, &ta);
	if (baton_lua_with(vm->bl, load_on_stack, &j, &ok) != BATON_OK || ok == NULL) {
		fprintf(stderr, "baton-httpd: lua: %s\n", j.err[0] ? j.err : "load failed");
		baton_lua_destroy(vm->bl);
		vm->bl = NULL;
		return -1;
	}
	vm->ref = j.ref;
	return 0;
}

void httpd_lua_unload(void *ctx)
{
	struct lua_handler *h = ctx;

	if (h == NULL)
		return;
	for (unsigned i = 0; i < h->n; i++) {
		/* Waits for its timers' and threads' tasks to end (they were
		 * cancelled); a state whose tasks do not end is left as it is. */
		if (baton_lua_destroy(h->vm[i].bl) != BATON_OK)
			fprintf(stderr,
				"baton-httpd: a Lua state's background tasks did not end: "
				"it is left open\n");
	}
	free(h);
}

void httpd_lua_stop_timers(void *ctx)
{
	struct lua_handler *h = ctx;

	for (unsigned i = 0; h != NULL && i < h->n; i++)
		baton_lua_cancel_tasks(h->vm[i].bl, 0);
}

void *httpd_lua_load(const struct httpd_handler_opts *opts)
{
	unsigned n = opts->lua_shared || opts->workers == 0 ? 1 : opts->workers;
	struct lua_handler *h = calloc(1, sizeof(*h) + n * sizeof(h->vm[0]));

	if (h == NULL) {
		fprintf(stderr, "baton-httpd: out of memory\n");
		return NULL;
	}
	h->file = opts->file;
	h->max_response_body = opts->max_response_body;
	h->opts = opts;
	for (; h->n < n; h->n++) {
		if (load_vm(&h->vm[h->n], opts, h->n, n == 1 ? -1 : (int)h->n,
			    httpd_limits_any_memory(opts) ? BATON_LUA_ACCOUNT : 0) != 0) {
			httpd_lua_unload(h);
			return NULL;
		}
	}
	return h;
}

struct call_job {
	const struct baton_http_req *req;
	struct httpd_reply *reply;
	int ref;     /* the handler function */
	int req_ref; /* the request table, while the call lasts */
};

/*
 * The handler runs as a Lua task of the state (baton_lua_run): a coroutine
 * that the slice clock yields every --lua-slice, and that the `baton`
 * library's waits (baton.sleep, sockets, the HTTP client) yield while the
 * request's task waits. Between slices the state is free for the
 * other requests of the worker. Every step below runs under lua_pcall on
 * the state's main thread, so any Lua error on the way (the handler's, or
 * a memory error while building the request) lands in one place; the reply
 * lives outside the Lua stack and owns whatever it allocated.
 */
static int call_start(lua_State *L, void *arg)
{
	struct call_job *j = arg;

	lua_rawgeti(L, LUA_REGISTRYINDEX, j->ref);
	httpd_lua_push_request(L, j->req);
	lua_pushvalue(L, -1);
	j->req_ref = luaL_ref(L, LUA_REGISTRYINDEX);
	httpd_lua_push_body(L, j->req);
	return 2;
}

/* Before every slice after the first: another request's slices may have
 * run since the last one, so this request's table is the one being served
 * again. */
static void call_resume(lua_State *L, void *arg)
{
	struct call_job *j = arg;

	/* (Past --handler-timeout or the CPU budget the binding does not get
	 * here: it closes the coroutine at the slice's end.) */
	if (j->req_ref == LUA_NOREF)
		return;
	lua_rawgeti(L, LUA_REGISTRYINDEX, j->req_ref);
	httpd_lua_serve_request(L, lua_gettop(L), j->req);
	lua_pop(L, 1);
}

static int call_finish(lua_State *L, int base, int n, void *arg)
{
	struct call_job *j = arg;

	httpd_lua_take_response(L, base, n, j->reply);
	return 0;
}

static void call_done(lua_State *L, void *arg)
{
	struct call_job *j = arg;

	httpd_lua_end_request(L);
	luaL_unref(L, LUA_REGISTRYINDEX, j->req_ref);
	j->req_ref = LUA_NOREF;
}

/* The state of the worker running this task; the first one outside the
 * workers (never, in the server) or when there is only one. */
static struct lua_vm *pick_vm(struct lua_handler *h)
{
	int w = baton_sched_worker_index();

	return &h->vm[w > 0 && (unsigned)w < h->n ? w : 0];
}

/* A run refused memory for its budget and failed: the state collected in
 * full at its end; hand the pages back too. */
static void give_memory_back(void)
{
#ifdef __GLIBC__
	malloc_trim(0);
#endif
}

/* The one log line of a run a budget stopped says which. */
static void say_limit(struct httpd_reply *r, int stopped, const struct httpd_limits *lim)
{
	char why[160];
	int n;

	if (stopped == BATON_LUA_STOP_CPU)
		n = snprintf(why, sizeof(why),
			     "stopped: its CPU budget (%lld ms) is used up "
			     "(answered 504)",
			     (long long)(lim->cpu_ns / 1000000));
	else
		n = snprintf(why, sizeof(why),
			     "not enough memory: its memory budget (%zu bytes) "
			     "is used up",
			     lim->mem_bytes);
	r->rc = BATON_OK; /* replace the error the run left */
	httpd_reply_error(r, why, (size_t)n);
}

int httpd_lua(void *ctx, const struct baton_http_req *req, struct baton_http_resp *resp)
{
	struct lua_handler *h = ctx;
	struct lua_vm *vm = pick_vm(h);
	struct httpd_reply reply;
	struct call_job j = { req, &reply, vm->ref, LUA_NOREF };
	struct httpd_limits lim = httpd_limits_of(h->opts, req);
	struct baton_lua_usage use;
	struct baton_lua_run run = { call_start,
				     call_finish,
				     call_resume,
				     call_done,
				     &j,
				     h->opts->lua_slice_ns,
				     req->deadline > 0 ? req->deadline : 0,
				     lim.cpu_ns,
				     lim.mem_bytes,
				     &use };
	struct baton_lua_value err = { BATON_LUA_NIL, { 0 } };
	int rc, stopped;

	httpd_reply_init(&reply, resp, h->max_response_body);
	rc = baton_lua_run(vm->bl, &run, &err);
	stopped = use.stopped;
	if (rc == BATON_ETIMEDOUT) {
		/* Past the deadline: the server answers 504 itself. */
		httpd_reply_error(&reply, "handler timeout: the request's deadline has passed", 50);
	} else if (rc == BATON_LUA_BUDGET) {
		httpd_reply_error(&reply, "its CPU budget is used up", 25);
	} else if (rc == BATON_LUA_ERROR && err.type == BATON_LUA_STRING) {
		httpd_reply_error(&reply, err.u.s.ptr, err.u.s.len);
	} else if (rc != BATON_OK) {
		const char *why = baton_strerror(rc);

		httpd_reply_error(&reply, why, strlen(why));
	}
	baton_lua_value_clear(&err);
	if (stopped == BATON_LUA_STOP_CPU || stopped == BATON_LUA_STOP_MEMORY)
		say_limit(&reply, stopped, &lim);
	rc = httpd_reply_done(&reply, "lua", h->file);
	if (stopped == BATON_LUA_STOP_MEMORY)
		give_memory_back();
	/* The CPU budget is a timeout of the handler's: 504, as past
	 * --handler-timeout (baton/http.h rule 1). */
	if (stopped == BATON_LUA_STOP_CPU)
		return -504;
	if (rc == BATON_OK && reply.stream) {
		if (lim.cpu_ns > 0)
			run.cpu_ns = lim.cpu_ns - use.cpu_ns > 0 ? lim.cpu_ns - use.cpu_ns : 1;
		rc = httpd_lua_stream(vm->bl, req, &reply, h->file, &run, &stopped);
		if (stopped == BATON_LUA_STOP_MEMORY)
			give_memory_back();
	}
	return rc;
}
