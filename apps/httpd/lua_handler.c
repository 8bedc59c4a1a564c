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
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

		snprintf(j->err, sizeof(j->err), "%s", msg ? msg : "(error object is not a string)");
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

/* A state of its own, with FILE run in it. */
static int load_vm(struct lua_vm *vm, const char *file, unsigned i)
{
	struct baton_seq_attr sa = BATON_SEQ_ATTR_INIT;
	struct load_job j = { file, LUA_NOREF, "" };
	char name[32];
	void *ok = NULL;

	snprintf(name, sizeof(name), "lua-%u", i);
	sa.name = name;
	if (baton_lua_create(&vm->bl, &sa) != BATON_OK) {
		fprintf(stderr, "baton-httpd: cannot create a Lua state\n");
		return -1;
	}
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
	for (unsigned i = 0; i < h->n; i++)
		baton_lua_destroy(h->vm[i].bl);
	free(h);
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
	for (; h->n < n; h->n++) {
		if (load_vm(&h->vm[h->n], opts->file, h->n) != 0) {
			httpd_lua_unload(h);
			return NULL;
		}
	}
	return h;
}

struct call_job {
	const struct baton_http_req *req;
	struct httpd_reply *reply;
	int ref;
};

/* Runs under lua_pcall, so that any Lua error on the way (the handler's,
 * or a memory error while building the request) lands in one place. The
 * reply lives outside the Lua stack and owns whatever it allocated, so
 * nothing leaks when an error unwinds through here. */
static int protected_call(lua_State *L)
{
	struct call_job *j = lua_touserdata(L, 1);
	int base = lua_gettop(L) + 1; /* the function, then its results */

	lua_rawgeti(L, LUA_REGISTRYINDEX, j->ref);
	httpd_lua_push_request(L, j->req);
	httpd_lua_push_body(L, j->req);
	lua_call(L, 2, LUA_MULTRET);
	httpd_lua_take_response(L, base, lua_gettop(L) - base + 1, j->reply);
	return 0;
}

static void *call_on_stack(lua_State *L, void *arg)
{
	struct call_job *j = arg;
	int top = lua_gettop(L);

	if (!lua_checkstack(L, 8)) {
		httpd_reply_error(j->reply, "the Lua stack is full", 21);
		return NULL;
	}
	lua_pushcfunction(L, protected_call);
	lua_pushlightuserdata(L, j);
	if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
		size_t len = 0;
		const char *msg = lua_tolstring(L, -1, &len);

		if (msg == NULL)
			msg = "(error object is not a string)", len = strlen(msg);
		httpd_reply_error(j->reply, msg, len);
	}
	httpd_lua_end_request(L);
	lua_settop(L, top);
	return NULL;
}

/* The state of the worker running this task; the first one outside the
 * workers (never, in the server) or when there is only one. */
static struct lua_vm *pick_vm(struct lua_handler *h)
{
	int w = baton_sched_worker_index();

	return &h->vm[w > 0 && (unsigned)w < h->n ? w : 0];
}

int httpd_lua(void *ctx, const struct baton_http_req *req, struct baton_http_resp *resp)
{
	struct lua_handler *h = ctx;
	struct lua_vm *vm = pick_vm(h);
	struct httpd_reply reply;
	struct call_job j = { req, &reply, vm->ref };
	int rc;

	httpd_reply_init(&reply, resp, h->max_response_body);
	rc = baton_lua_with(vm->bl, call_on_stack, &j, NULL);
	if (rc != BATON_OK) {
		const char *why = baton_strerror(rc);

		httpd_reply_error(&reply, why, strlen(why));
	}
	rc = httpd_reply_done(&reply, "lua", h->file);
	if (rc == BATON_OK && reply.stream)
		rc = httpd_lua_stream(vm->bl, req, &reply, h->file);
	return rc;
}
