/* SPDX-License-Identifier: MIT */
/*
 * The Lua handler's values (lua_values.h).
 *
 * request = {
 *     method = "GET", target = "/a%20b?x=1&x=2", version = "1.1",
 *     -- built when first read, during the call:
 *     path = "/a b", query = "x=1&x=2",   -- query nil without a '?'
 *     args = { x = { "1", "2" } },        -- decoded; repeats as lists
 *     remote_addr = "127.0.0.1", remote_port = 51234,
 *     headers = {
 *         { "Host", "example" }, { "Accept", "a" }, { "accept", "b" },  -- in order, names as sent
 *         host = "example", accept = { "a", "b" },  -- lower-case names; repeats as lists
 *     },                                   -- any case, '_' for '-': headers.Content_Type
 * }
 *
 * and the body a string, or nil when the request has none. The handler
 * returns status, headers, body: an integer or nil (200), a table or nil,
 * a string, nil or a function (a stream: called for each piece until it
 * returns nil). Response headers are a list of { name, value } pairs (sent
 * in order), name = value entries (value a string or number, or a list of
 * them for a repeated field), or both.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "baton_lua.h"
#include "lua_values.h"

static void push_lower(lua_State *L, const char *s, size_t n)
{
	luaL_Buffer b;
	char *p = luaL_buffinitsize(L, &b, n);

	for (size_t i = 0; i < n; i++)
		p[i] = (char)tolower((unsigned char)s[i]);
	luaL_pushresultsize(&b, n);
}

/* t[key] = value, where key is on top of the stack (popped): the first
 * value as a string, a second turns it into the list of both, later ones
 * are appended. The list keeps every value apart, as sent. */
static void add_value(lua_State *L, int t, const char *value, size_t vl)
{
	lua_pushvalue(L, -1);
	switch (lua_rawget(L, t)) {
	case LUA_TNIL:
		lua_pop(L, 1);
		lua_pushlstring(L, value, vl);
		break;
	case LUA_TTABLE:
		lua_pushlstring(L, value, vl);
		lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
		lua_pop(L, 2);
		return;
	default: /* the first value: a list of two */
		lua_createtable(L, 2, 0);
		lua_insert(L, -2);
		lua_rawseti(L, -2, 1);
		lua_pushlstring(L, value, vl);
		lua_rawseti(L, -2, 2);
		break;
	}
	lua_rawset(L, t);
}

/* headers[i] = { name, value }, and headers[lower(name)] = value (a list
 * when repeated). */
static void add_header(lua_State *L, int t, lua_Integer i, const char *name, size_t nl,
		       const char *value, size_t vl)
{
	lua_createtable(L, 2, 0);
	lua_pushlstring(L, name, nl);
	lua_rawseti(L, -2, 1);
	lua_pushlstring(L, value, vl);
	lua_rawseti(L, -2, 2);
	lua_rawseti(L, t, i);
	push_lower(L, name, nl);
	add_value(L, t, value, vl);
}

/* headers.Content_Type, headers["Content-Type"]: a key not found as is is
 * looked up again in lower case with '_' as '-', as OpenResty's headers
 * table does. */
static int headers_index(lua_State *L)
{
	size_t n;
	const char *k = lua_tolstring(L, 2, &n);
	luaL_Buffer b;
	char *p;

	if (k == NULL || lua_type(L, 2) != LUA_TSTRING)
		return 0;
	p = luaL_buffinitsize(L, &b, n);
	for (size_t i = 0; i < n; i++)
		p[i] = k[i] == '_' ? '-' : (char)tolower((unsigned char)k[i]);
	luaL_pushresultsize(&b, n);
	lua_rawget(L, 1);
	return 1;
}

static const char headers_meta_key = 0;

static void push_headers(lua_State *L, const struct baton_http_req *req)
{
	const char *name, *value;
	size_t nl, vl, n = 0;
	int t;

	while (baton_http_req_field(req, n, &name, &nl, &value, &vl) == BATON_OK)
		n++;
	lua_createtable(L, (int)n, (int)n);
	t = lua_gettop(L);
	for (size_t i = 0; i < n; i++) {
		baton_http_req_field(req, i, &name, &nl, &value, &vl);
		add_header(L, t, (lua_Integer)i + 1, name, nl, value, vl);
	}
	if (lua_rawgetp(L, LUA_REGISTRYINDEX, &headers_meta_key) != LUA_TTABLE) {
		lua_pop(L, 1);
		lua_createtable(L, 0, 1);
		lua_pushcfunction(L, headers_index);
		lua_setfield(L, -2, "__index");
		lua_pushvalue(L, -1);
		lua_rawsetp(L, LUA_REGISTRYINDEX, &headers_meta_key);
	}
	lua_setmetatable(L, t);
}

/* A query argument's key or value, percent-decoded ('+' a space); as sent
 * when it is not valid percent-encoding. */
static void push_decoded(lua_State *L, const char *s, size_t n)
{
	luaL_Buffer b;
	char *p = luaL_buffinitsize(L, &b, n);
	size_t m;

	if (baton_http_decode(p, s, n, 1, &m) != BATON_OK) {
		memcpy(p, s, n);
		m = n;
	}
	luaL_pushresultsize(&b, m);
}

static void push_args(lua_State *L, const struct baton_http_req *req)
{
	size_t pos = 0, kl, vl;
	const char *k, *v;
	int t;

	lua_newtable(L);
	t = lua_gettop(L);
	while (baton_http_query_next(req->query, req->query_len, &pos, &k, &kl, &v, &vl)) {
		size_t dl;
		char *d;

		push_decoded(L, k, kl);
		push_decoded(L, v, vl);
		d = (char *)lua_tolstring(L, -1, &dl);
		/* add_value wants the key on top and the value as bytes */
		lua_insert(L, -2);
		add_value(L, t, d, dl);
		lua_pop(L, 1);
	}
}

/*
 * The parts of request beyond method, target and version are built on
 * first use: most handlers read few of them, and building headers (a
 * table per field, lower-cased names) cost more than the rest of a hello
 * call. The request table's metatable finds the C request through two
 * registry slots that hold only during the call: the table being served
 * and the request it stands for. A table kept past its call is not the one
 * being served any more: its unread parts read as nil.
 */
static const char current_table_key = 0, current_req_key = 0, meta_key = 0;

static bool push_part(lua_State *L, const struct baton_http_req *req, const char *k, size_t n)
{
#define IS(lit) (n == sizeof(lit) - 1 && memcmp(k, lit, n) == 0)
	if (IS("headers"))
		push_headers(L, req);
	else if (IS("path"))
		lua_pushlstring(L, req->path, req->path_len);
	else if (IS("query") && req->query)
		lua_pushlstring(L, req->query, req->query_len);
	else if (IS("args"))
		push_args(L, req);
	else if (IS("remote_addr"))
		lua_pushstring(L, req->remote_addr ? req->remote_addr : "");
	else if (IS("remote_port"))
		lua_pushinteger(L, req->remote_port);
	else
		return false;
	return true;
#undef IS
}

static int request_index(lua_State *L)
{
	const struct baton_http_req *req;
	size_t n;
	const char *k = lua_type(L, 2) == LUA_TSTRING ? lua_tolstring(L, 2, &n) : NULL;

	if (k == NULL)
		return 0;
	lua_rawgetp(L, LUA_REGISTRYINDEX, &current_table_key);
	if (!lua_rawequal(L, 1, -1))
		return 0; /* a request kept past its call */
	lua_rawgetp(L, LUA_REGISTRYINDEX, &current_req_key);
	req = lua_touserdata(L, -1);
	lua_pop(L, 2);
	if (req == NULL || !push_part(L, req, k, n))
		return 0;
	lua_pushvalue(L, 2);
	lua_pushvalue(L, -2);
	lua_rawset(L, 1); /* built once per request */
	return 1;
}

static void push_request_meta(lua_State *L)
{
	if (lua_rawgetp(L, LUA_REGISTRYINDEX, &meta_key) == LUA_TTABLE)
		return;
	lua_pop(L, 1);
	lua_createtable(L, 0, 1);
	lua_pushcfunction(L, request_index);
	lua_setfield(L, -2, "__index");
	lua_pushvalue(L, -1);
	lua_rawsetp(L, LUA_REGISTRYINDEX, &meta_key);
}

void httpd_lua_push_request(lua_State *L, const struct baton_http_req *req)
{
	lua_createtable(L, 0, 4);
	lua_pushlstring(L, req->method, req->method_len);
	lua_setfield(L, -2, "method");
	lua_pushlstring(L, req->target, req->target_len);
	lua_setfield(L, -2, "target");
	lua_pushstring(L, req->version_minor ? "1.1" : "1.0");
	lua_setfield(L, -2, "version");
	push_request_meta(L);
	lua_setmetatable(L, -2);
	httpd_lua_serve_request(L, lua_gettop(L), req);
}

void httpd_lua_serve_request(lua_State *L, int idx, const struct baton_http_req *req)
{
	lua_pushvalue(L, idx);
	lua_rawsetp(L, LUA_REGISTRYINDEX, &current_table_key);
	lua_pushlightuserdata(L, (void *)req);
	lua_rawsetp(L, LUA_REGISTRYINDEX, &current_req_key);
}

void httpd_lua_push_body(lua_State *L, const struct baton_http_req *req)
{
	if (req->body == NULL)
		lua_pushnil(L);
	else
		lua_pushlstring(L, req->body, req->body_len);
}

void httpd_lua_end_request(lua_State *L)
{
	lua_pushnil(L);
	lua_rawsetp(L, LUA_REGISTRYINDEX, &current_table_key);
	lua_pushnil(L);
	lua_rawsetp(L, LUA_REGISTRYINDEX, &current_req_key);
}

static int take_status(lua_State *L, int i, struct httpd_reply *r)
{
	lua_Integer v;
	int isint;

	switch (lua_type(L, i)) {
	case LUA_TNIL:
		return BATON_OK;
	case LUA_TNUMBER:
		v = lua_tointegerx(L, i, &isint);
		if (isint)
			return httpd_reply_status(r, (long long)v);
		return httpd_reply_rule(r, "the status %g is not an integer",
					(double)lua_tonumber(L, i));
	default:
		return httpd_reply_rule(r, "the status must be an integer or nil, not a %s",
					luaL_typename(L, i));
	}
}

/* A header value: a string, or a number as Lua writes it (converted in
 * place: i must not be a key lua_next still needs). */
static const char *value_at(lua_State *L, int i, size_t *len)
{
	int t = lua_type(L, i);

	return t == LUA_TSTRING || t == LUA_TNUMBER ? lua_tolstring(L, i, len) : NULL;
}

/* headers[k], which must be { name, value }. */
static int take_pair(lua_State *L, int t, lua_Integer k, struct httpd_reply *r)
{
	const char *name = NULL, *value = NULL;
	size_t nl = 0, vl = 0;
	int rc;

	if (lua_rawgeti(L, t, k) != LUA_TTABLE) {
		rc = httpd_reply_rule(r, "headers[%lld] must be a {name, value} pair, not a %s",
				      (long long)k, luaL_typename(L, -1));
		lua_pop(L, 1);
		return rc;
	}
	lua_rawgeti(L, -1, 1);
	lua_rawgeti(L, -2, 2);
	if (lua_type(L, -2) == LUA_TSTRING)
		name = lua_tolstring(L, -2, &nl);
	value = value_at(L, -1, &vl);
	if (name && value)
		rc = httpd_reply_header(r, name, nl, value, vl);
	else
		rc = httpd_reply_rule(r,
				      "headers[%lld] must be a {name, value} pair of strings "
				      "(got %s, %s)",
				      (long long)k, luaL_typename(L, -2), luaL_typename(L, -1));
	lua_pop(L, 3);
	return rc;
}

/* name = value, or name = { value, value... } for a repeated field; the
 * key and value are on top of the stack. */
static int take_named(lua_State *L, struct httpd_reply *r)
{
	size_t nl, vl;
	const char *name = lua_tolstring(L, -2, &nl);
	const char *value = value_at(L, -1, &vl);
	int rc = BATON_OK;

	if (value)
		return httpd_reply_header(r, name, nl, value, vl);
	if (!lua_istable(L, -1))
		return httpd_reply_rule(r,
					"header %.64s: the value must be a string, a number or a "
					"list of them, not a %s",
					name, luaL_typename(L, -1));
	for (lua_Integer k = 1; rc == BATON_OK && k <= (lua_Integer)lua_rawlen(L, -1); k++) {
		lua_rawgeti(L, -1, k);
		value = value_at(L, -1, &vl);
		rc = value ? httpd_reply_header(r, name, nl, value, vl)
			   : httpd_reply_rule(r,
					      "header %.64s: value %lld is a %s, not a string or "
					      "a number",
					      name, (long long)k, luaL_typename(L, -1));
		lua_pop(L, 1);
	}
	return rc;
}

static int take_headers(lua_State *L, int t, struct httpd_reply *r)
{
	lua_Integer n;
	int rc = BATON_OK;

	if (lua_isnil(L, t))
		return BATON_OK;
	if (!lua_istable(L, t))
		return httpd_reply_rule(r, "the headers must be a table or nil, not a %s",
					luaL_typename(L, t));
	n = (lua_Integer)lua_rawlen(L, t);
	for (lua_Integer k = 1; rc == BATON_OK && k <= n; k++)
		rc = take_pair(L, t, k, r);
	lua_pushnil(L);
	while (rc == BATON_OK && lua_next(L, t) != 0) {
		if (lua_type(L, -2) == LUA_TSTRING)
			rc = take_named(L, r);
		else if (!lua_isinteger(L, -2) || lua_tointeger(L, -2) < 1 ||
			 lua_tointeger(L, -2) > n)
			rc = httpd_reply_rule(r,
					      "the headers table has a %s key that is not a "
					      "name or a list position",
					      luaL_typename(L, -2));
		lua_pop(L, rc == BATON_OK ? 1 : 2);
	}
	return rc;
}

static int take_body(lua_State *L, int i, struct httpd_reply *r)
{
	const char *s;
	size_t n;

	switch (lua_type(L, i)) {
	case LUA_TNIL:
		return httpd_reply_finish(r, NULL, 0);
	case LUA_TSTRING:
		s = lua_tolstring(L, i, &n);
		return httpd_reply_finish(r, s, n);
	case LUA_TFUNCTION:
		if (httpd_reply_stream(r) != BATON_OK)
			return r->rc;
		lua_pushvalue(L, i);
		r->stream_key = luaL_ref(L, LUA_REGISTRYINDEX);
		return BATON_OK;
	default:
		return httpd_reply_rule(r, "the body must be a string, a function or nil, not a %s",
					luaL_typename(L, i));
	}
}

void httpd_lua_take_response(lua_State *L, int base, int nret, struct httpd_reply *r)
{
	if (nret == 0) {
		httpd_reply_rule(r,
				 "the handler returned nothing (status, headers, body expected)");
		return;
	}
	lua_settop(L, base + 2); /* missing ones are nil */
	if (take_status(L, base, r) == BATON_OK && take_headers(L, base + 1, r) == BATON_OK)
		take_body(L, base + 2, r);
}

/* --- a streamed body ------------------------------------------------------- */

/*
 * Each piece is a Lua run of its own (baton_lua_run): the generator is a
 * coroutine of the state for that call, so it gets slices, the request's
 * deadline, what is left of its CPU budget and a memory budget per piece,
 * and may wait (baton.sleep, sockets) as the handler may.
 */
struct piece_job {
	struct httpd_reply *r;
	bool end;
};

static int piece_start(lua_State *L, void *arg)
{
	struct piece_job *j = arg;

	lua_rawgeti(L, LUA_REGISTRYINDEX, (lua_Integer)j->r->stream_key);
	return 0;
}

/* The generator's next piece, copied into the reply. */
static int piece_finish(lua_State *L, int base, int n, void *arg)
{
	struct piece_job *j = arg;
	const char *s;
	size_t len;

	if (n == 0 || lua_isnil(L, base)) {
		j->end = true;
	} else if (lua_type(L, base) == LUA_TSTRING) {
		s = lua_tolstring(L, base, &len);
		httpd_reply_piece(j->r, s, len);
	} else {
		httpd_reply_rule(j->r,
				 "a stream's piece must be a string, or nil at the end, "
				 "not a %s",
				 luaL_typename(L, base));
	}
	return 0;
}

static void *unref_on_stack(lua_State *L, void *arg)
{
	struct httpd_reply *r = arg;

	luaL_unref(L, LUA_REGISTRYINDEX, (int)r->stream_key);
	return NULL;
}

int httpd_lua_stream(baton_lua_t *bl, const struct baton_http_req *req, struct httpd_reply *r,
		     const char *file, const struct baton_lua_run *limits, int *stopped)
{
	struct piece_job j = { r, false };
	struct baton_lua_usage use;
	struct baton_lua_run run = *limits;
	struct baton_lua_value err = { BATON_LUA_NIL, { 0 } };
	long long cpu_left = limits->cpu_ns;
	int rc;

	run.start = piece_start;
	run.finish = piece_finish;
	run.resume = NULL;
	run.done = NULL;
	run.arg = &j;
	run.usage = &use;
	*stopped = BATON_LUA_STOP_NONE;
	/* The head first: the client learns the status before the first
	 * piece is made. A HEAD gets the head only: the generator is not
	 * run for pieces nobody would see. */
	r->piece_len = 0;
	httpd_reply_send_piece(r);
	if (req->method_len == 4 && memcmp(req->method, "HEAD", 4) == 0)
		j.end = true;
	while (r->rc == BATON_OK && !j.end) {
		if (limits->cpu_ns > 0)
			run.cpu_ns = cpu_left > 0 ? cpu_left : 1;
		rc = baton_lua_run(bl, &run, &err);
		cpu_left -= use.cpu_ns;
		if (use.stopped != BATON_LUA_STOP_NONE)
			*stopped = use.stopped;
		if (rc == BATON_LUA_ERROR || rc == BATON_ETIMEDOUT || rc == BATON_LUA_BUDGET) {
			if (err.type == BATON_LUA_STRING)
				httpd_reply_error(r, err.u.s.ptr, err.u.s.len);
			else
				httpd_reply_error(r, "the stream failed", 17);
		} else if (rc != BATON_OK) {
			httpd_reply_error(r, baton_strerror(rc), strlen(baton_strerror(rc)));
		} else if (!j.end && r->rc == BATON_OK) {
			httpd_reply_send_piece(r);
		}
		baton_lua_value_clear(&err);
	}
	baton_lua_with(bl, unref_on_stack, r, NULL);
	return httpd_reply_done(r, "lua", file);
}
