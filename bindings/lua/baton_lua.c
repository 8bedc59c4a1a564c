/* SPDX-License-Identifier: MIT */
/*
 * bindings/lua/baton_lua.c - a lua_State behind a baton call sequencer
 * (baton_lua.h). Every function here packs its request into a struct on the
 * caller's stack and runs a small trampoline on the sequencer's stack; the
 * trampolines are the only code that touches the lua_State.
 */
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "lua_internal.h"

/* A copy of a Lua string (or a C string) as a value the caller owns. */
int baton__lua_set_string(struct baton_lua_value *v, const char *p, size_t len)
{
	char *copy = malloc(len + 1);

	if (copy == NULL)
		return BATON_ENOMEM;
	memcpy(copy, p, len);
	copy[len] = '\0';
	v->type = BATON_LUA_STRING;
	v->u.s.ptr = copy;
	v->u.s.len = len;
	return BATON_OK;
}

/* The error message on top of the stack into *v (if any); pops it. */
static int take_error(lua_State *L, struct baton_lua_value *v)
{
	size_t len = 0;
	const char *msg = lua_tolstring(L, -1, &len);

	if (v != NULL) {
		if (msg == NULL)
			msg = "(error object is not a string)", len = strlen(msg);
		baton__lua_set_string(v, msg, len);
	}
	lua_pop(L, 1);
	return BATON_LUA_ERROR;
}

static void *open_state(void *arg)
{
	struct baton_lua *bl = arg;

	bl->L = luaL_newstate();
	if (bl->L == NULL) {
		bl->open_rc = BATON_ENOMEM;
		return NULL;
	}
	luaL_openlibs(bl->L);
	/* The main thread's extra space is what new threads copy: no run. */
	*(void **)lua_getextraspace(bl->L) = NULL;
	lua_pushcfunction(bl->L, baton__lua_open_lib);
	if (lua_pcall(bl->L, 0, 0, 0) != LUA_OK) {
		lua_close(bl->L);
		bl->L = NULL;
		bl->open_rc = BATON_ENOMEM;
		return NULL;
	}
	bl->open_rc = BATON_OK;
	return NULL;
}

int baton_lua_create(baton_lua_t **out, const struct baton_seq_attr *attr)
{
	struct baton_seq_attr a = BATON_SEQ_ATTR_INIT;
	struct baton_lua *bl;
	int rc;

	if (out == NULL || (attr != NULL && attr->init != NULL))
		return BATON_EINVAL;
	if (attr != NULL)
		a = *attr;
	if (a.name == NULL)
		a.name = "lua";
	bl = calloc(1, sizeof(*bl));
	if (bl == NULL)
		return BATON_ENOMEM;
	a.init = open_state;
	a.init_arg = bl;
	rc = baton_seq_create(&bl->seq, &a);
	if (rc == BATON_OK && bl->open_rc != BATON_OK) {
		baton_seq_destroy(bl->seq);
		rc = bl->open_rc;
	}
	if (rc != BATON_OK) {
		free(bl);
		return rc;
	}
	*out = bl;
	return BATON_OK;
}

struct call_req {
	struct baton_lua *bl;
	const char *name;
	const struct baton_lua_value *args;
	int nargs;
	struct baton_lua_value *result;
	int rc;
};

static void push_value(lua_State *L, const struct baton_lua_value *v)
{
	switch (v->type) {
	case BATON_LUA_INTEGER:
		lua_pushinteger(L, (lua_Integer)v->u.i);
		break;
	case BATON_LUA_NUMBER:
		lua_pushnumber(L, v->u.n);
		break;
	case BATON_LUA_STRING:
		lua_pushlstring(L, v->u.s.ptr ? v->u.s.ptr : "", v->u.s.ptr ? v->u.s.len : 0);
		break;
	case BATON_LUA_BOOLEAN:
		lua_pushboolean(L, v->u.b);
		break;
	default:
		lua_pushnil(L);
		break;
	}
}

/* Convert the value on top of the stack into *v and pop it. */
static int pop_result(lua_State *L, struct baton_lua_value *v)
{
	int rc = BATON_OK;

	if (v == NULL) {
		lua_pop(L, 1);
		return BATON_OK;
	}
	switch (lua_type(L, -1)) {
	case LUA_TNIL:
		v->type = BATON_LUA_NIL;
		break;
	case LUA_TBOOLEAN:
		v->type = BATON_LUA_BOOLEAN;
		v->u.b = lua_toboolean(L, -1);
		break;
	case LUA_TNUMBER:
		if (lua_isinteger(L, -1)) {
			v->type = BATON_LUA_INTEGER;
			v->u.i = (long long)lua_tointeger(L, -1);
		} else {
			v->type = BATON_LUA_NUMBER;
			v->u.n = (double)lua_tonumber(L, -1);
		}
		break;
	case LUA_TSTRING: {
		size_t len;
		const char *p = lua_tolstring(L, -1, &len);

		rc = baton__lua_set_string(v, p, len);
		break;
	}
	default: {
		const char *tn = luaL_typename(L, -1); /* a static name */

		lua_pop(L, 1);
		lua_pushfstring(L, "baton_lua_call: a %s result cannot be returned to C", tn);
		return take_error(L, v);
	}
	}
	lua_pop(L, 1);
	return rc;
}

static void *do_call(void *arg)
{
	struct call_req *r = arg;
	lua_State *L = r->bl->L;

	if (!lua_checkstack(L, r->nargs + 2)) {
		lua_pushstring(L, "baton_lua_call: too many arguments");
		r->rc = take_error(L, r->result);
		return NULL;
	}
	if (lua_getglobal(L, r->name) != LUA_TFUNCTION) {
		lua_pop(L, 1);
		lua_pushfstring(L, "baton_lua_call: no global function '%s'", r->name);
		r->rc = take_error(L, r->result);
		return NULL;
	}
	for (int i = 0; i < r->nargs; i++)
		push_value(L, &r->args[i]);
	if (lua_pcall(L, r->nargs, 1, 0) != LUA_OK)
		r->rc = take_error(L, r->result);
	else
		r->rc = pop_result(L, r->result);
	return NULL;
}

int baton_lua_call(baton_lua_t *bl, const char *name, const struct baton_lua_value *args,
		   int nargs, struct baton_lua_value *result)
{
	struct call_req r = { bl, name, args, nargs, result, BATON_OK };
	int rc;

	if (bl == NULL || name == NULL || nargs < 0 || (nargs > 0 && args == NULL))
		return BATON_EINVAL;
	if (result)
		result->type = BATON_LUA_NIL;
	rc = baton_seq_call(bl->seq, do_call, &r, NULL);
	return rc != BATON_OK ? rc : r.rc;
}

struct chunk_req {
	struct baton_lua *bl;
	const char *text;
	int is_file;
	struct baton_lua_value *err;
	int rc;
};

static void *do_chunk(void *arg)
{
	struct chunk_req *r = arg;
	lua_State *L = r->bl->L;
	int st = r->is_file ? luaL_loadfile(L, r->text) : luaL_loadstring(L, r->text);

	if (st == LUA_OK)
		st = lua_pcall(L, 0, 0, 0);
	r->rc = st == LUA_OK ? BATON_OK : take_error(L, r->err);
	return NULL;
}

static int chunk(baton_lua_t *bl, const char *text, int is_file, struct baton_lua_value *err)
{
	struct chunk_req r = { bl, text, is_file, err, BATON_OK };
	int rc;

	if (bl == NULL || text == NULL)
		return BATON_EINVAL;
	if (err)
		err->type = BATON_LUA_NIL;
	rc = baton_seq_call(bl->seq, do_chunk, &r, NULL);
	return rc != BATON_OK ? rc : r.rc;
}

int baton_lua_dostring(baton_lua_t *bl, const char *code, struct baton_lua_value *err)
{
	return chunk(bl, code, 0, err);
}

int baton_lua_dofile(baton_lua_t *bl, const char *path, struct baton_lua_value *err)
{
	return chunk(bl, path, 1, err);
}

struct with_req {
	struct baton_lua *bl;
	void *(*fn)(lua_State *L, void *arg);
	void *arg;
};

static void *do_with(void *arg)
{
	struct with_req *r = arg;

	return r->fn(r->bl->L, r->arg);
}

int baton_lua_with(baton_lua_t *bl, void *(*fn)(struct lua_State *L, void *arg), void *arg,
		   void **result)
{
	struct with_req r = { bl, fn, arg };

	if (bl == NULL || fn == NULL)
		return BATON_EINVAL;
	return baton_seq_call(bl->seq, do_with, &r, result);
}

baton_seq_t *baton_lua_seq(baton_lua_t *bl)
{
	return bl ? bl->seq : NULL;
}

void baton_lua_value_clear(struct baton_lua_value *v)
{
	if (v == NULL)
		return;
	if (v->type == BATON_LUA_STRING)
		free((void *)v->u.s.ptr);
	v->type = BATON_LUA_NIL;
}

static void *do_close(void *arg)
{
	struct baton_lua *bl = arg;

	lua_close(bl->L);
	bl->L = NULL;
	return NULL;
}

int baton_lua_destroy(baton_lua_t *bl)
{
	int rc;

	if (bl == NULL)
		return BATON_OK;
	if (baton_seq_on_stack(bl->seq))
		return BATON_EBUSY;
	rc = baton_seq_call(bl->seq, do_close, bl, NULL);
	if (rc != BATON_OK)
		return rc;
	rc = baton_seq_destroy(bl->seq);
	if (rc != BATON_OK)
		return rc;
	free(bl);
	return BATON_OK;
}
