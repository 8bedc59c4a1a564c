/* SPDX-License-Identifier: MIT */
/*
 * bench/seq/seq_lua.c - the `lua` runtime of the seq suite: one lua_State,
 * foo defined in Lua as `function foo(x) return x + 100 end`, called from C
 * through a registry reference with lua_pcall (what an embedder does once
 * the function is looked up). Usage: see seq_harness.h.
 */
#include <stdio.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "seq_harness.h"

static lua_State *L;
static int foo_ref;

static int lua_init(void)
{
	L = luaL_newstate();
	if (L == NULL)
		return -1;
	luaL_openlibs(L);
	if (luaL_dostring(L, "function foo(x) return x + 100 end") != LUA_OK) {
		fprintf(stderr, "seq-lua: %s\n", lua_tostring(L, -1));
		return -1;
	}
	lua_getglobal(L, "foo");
	foo_ref = luaL_ref(L, LUA_REGISTRYINDEX);
	return 0;
}

static long lua_foo(long x)
{
	long r;

	lua_rawgeti(L, LUA_REGISTRYINDEX, foo_ref);
	lua_pushinteger(L, x);
	if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
		fprintf(stderr, "seq-lua: %s\n", lua_tostring(L, -1));
		lua_pop(L, 1);
		return -1;
	}
	r = (long)lua_tointeger(L, -1);
	lua_pop(L, 1);
	return r;
}

static void lua_fini(void)
{
	lua_close(L);
}

static const struct seq_runtime lua_runtime = {
	.name = "lua",
	.init = lua_init,
	.call_foo = lua_foo,
	.fini = lua_fini,
};

int main(int argc, char **argv)
{
	return seq_harness_main(argc, argv, &lua_runtime);
}
