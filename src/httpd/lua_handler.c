/*
 * The Lua handler of baton-httpd: FILE is a chunk that returns a function
 *
 *     return function(request, body)
 *         return 200, { ["content-type"] = "text/plain" }, "Hello, World!\n"
 *     end
 *
 * request is a table { method = ..., target = ..., version = "1.1",
 * headers = { [lower-case name] = value } }; the function returns status,
 * a table of response headers (or nil) and the body (a string, or nil).
 *
 * One lua_State serves every worker: each call goes through the state's
 * call sequencer (bindings/lua), so requests arriving on any worker run the
 * handler one at a time on the state's own stack, batched by flat combining
 * when workers contend. What the call returns is copied out of Lua (into the
 * response's scratch buffer, or malloc'd memory for a large body) before the
 * call ends, since Lua's collector may free the strings afterwards.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "baton_lua.h"
#include "handlers.h"

struct lua_handler {
	baton_lua_t *bl;
	int ref; /* the handler function, in the registry */
};

struct load_job {
	const char *file;
	int ref;
	char err[256];
};

static void *load_on_stack(lua_State *L, void *arg)
{
	struct load_job *j = arg;

	if (luaL_loadfile(L, j->file) != LUA_OK || lua_pcall(L, 0, 1, 0) != LUA_OK) {
		snprintf(j->err, sizeof(j->err), "%s", lua_tostring(L, -1));
		lua_pop(L, 1);
		return NULL;
	}
	if (!lua_isfunction(L, -1)) {
		snprintf(j->err, sizeof(j->err), "%s must return a function", j->file);
		lua_pop(L, 1);
		return NULL;
	}
	j->ref = luaL_ref(L, LUA_REGISTRYINDEX);
	return j;
}

void *httpd_lua_load(const char *file)
{
	struct lua_handler *h = calloc(1, sizeof(*h));
	struct load_job j = { file, LUA_NOREF, "" };
	void *ok = NULL;

	if (h == NULL || baton_lua_create(&h->bl, NULL) != BATON_OK) {
		fprintf(stderr, "baton-httpd: cannot create a Lua state\n");
		free(h);
		return NULL;
	}
	if (baton_lua_with(h->bl, load_on_stack, &j, &ok) != BATON_OK || ok == NULL) {
		fprintf(stderr, "baton-httpd: lua: %s\n", j.err[0] ? j.err : "load failed");
		baton_lua_destroy(h->bl);
		free(h);
		return NULL;
	}
	h->ref = j.ref;
	return h;
}

void httpd_lua_unload(void *ctx)
{
	struct lua_handler *h = ctx;

	if (h) {
		baton_lua_destroy(h->bl);
		free(h);
	}
}

struct call_job {
	struct lua_handler *h;
	const struct baton_http_req *req;
	struct baton_http_resp *resp;
	size_t used;	/* of resp->scratch */
	int rc;
};

/* Copy s into the scratch buffer (NUL-terminated), or NULL if full. */
static const char *keep(struct call_job *j, const char *s, size_t n)
{
	char *p;

	if (j->used + n + 1 > j->resp->scratch_cap)
		return NULL;
	p = j->resp->scratch + j->used;
	memcpy(p, s, n);
	p[n] = '\0';
	j->used += n + 1;
	return p;
}

static void release_body(const void *body)
{
	free((void *)body);
}

static void take_headers(lua_State *L, int idx, struct call_job *j)
{
	struct baton_http_resp *resp = j->resp;

	lua_pushnil(L);
	while (lua_next(L, idx) != 0) {
		size_t nl, vl;
		const char *name = lua_type(L, -2) == LUA_TSTRING ? lua_tolstring(L, -2, &nl) : NULL;
		const char *value = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &vl) : NULL;

		if (name && value) {
			const char *kn = keep(j, name, nl), *kv = keep(j, value, vl);

			if (kn && kv && nl == 12 && strncasecmp(kn, "content-type", 12) == 0)
				resp->content_type = kv;
			else if (kn && kv && resp->nextra < BATON_HTTP_MAX_EXTRA) {
				resp->extra_names[resp->nextra] = kn;
				resp->extra_values[resp->nextra++] = kv;
			}
		}
		lua_pop(L, 1);
	}
}

static void *call_on_stack(lua_State *L, void *arg)
{
	struct call_job *j = arg;
	const struct baton_http_req *req = j->req;
	struct baton_http_resp *resp = j->resp;
	int top = lua_gettop(L);

	lua_rawgeti(L, LUA_REGISTRYINDEX, j->h->ref);
	lua_createtable(L, 0, 4);
	lua_pushlstring(L, req->method, req->method_len);
	lua_setfield(L, -2, "method");
	lua_pushlstring(L, req->target, req->target_len);
	lua_setfield(L, -2, "target");
	lua_pushstring(L, req->version_minor ? "1.1" : "1.0");
	lua_setfield(L, -2, "version");
	lua_createtable(L, 0, 4);
	for (size_t i = 0;; i++) {
		const char *n, *v;
		size_t nl, vl;
		char lower[64];

		if (baton_http_req_field(req, i, &n, &nl, &v, &vl) != BATON_OK)
			break;
		if (nl >= sizeof(lower))
			continue;
		for (size_t k = 0; k < nl; k++)
			lower[k] = (char)tolower((unsigned char)n[k]);
		lua_pushlstring(L, lower, nl);
		lua_pushlstring(L, v, vl);
		lua_rawset(L, -3);
	}
	lua_setfield(L, -2, "headers");
	lua_pushlstring(L, req->body ? req->body : "", req->body_len);
	if (lua_pcall(L, 2, 3, 0) != LUA_OK) {
		fprintf(stderr, "baton-httpd: lua handler: %s\n", lua_tostring(L, -1));
		lua_settop(L, top);
		j->rc = BATON_EINVAL;
		return NULL;
	}
	resp->status = (int)luaL_optinteger(L, top + 1, 200);
	if (lua_istable(L, top + 2))
		take_headers(L, top + 2, j);
	if (lua_type(L, top + 3) == LUA_TSTRING) {
		size_t n;
		const char *s = lua_tolstring(L, top + 3, &n);
		const char *kept = keep(j, s, n);

		if (kept == NULL) { /* too big for scratch: its own copy */
			char *p = malloc(n ? n : 1);

			if (p == NULL) {
				lua_settop(L, top);
				j->rc = BATON_ENOMEM;
				return NULL;
			}
			memcpy(p, s, n);
			kept = p;
			resp->release = release_body;
		}
		resp->body = kept;
		resp->body_len = n;
	}
	lua_settop(L, top);
	j->rc = BATON_OK;
	return NULL;
}

int httpd_lua(void *ctx, const struct baton_http_req *req, struct baton_http_resp *resp)
{
	struct call_job j = { ctx, req, resp, 0, BATON_OK };
	int rc = baton_lua_with(((struct lua_handler *)ctx)->bl, call_on_stack, &j, NULL);

	return rc != BATON_OK ? rc : j.rc;
}
