/* SPDX-License-Identifier: MIT */
/* A program outside the baton tree using the installed Lua binding. */
#include <stdio.h>

#include <baton_lua.h>

int main(void)
{
	baton_lua_t *L;
	struct baton_lua_value arg = { BATON_LUA_INTEGER, { .i = 6 } }, v;

	if (baton_lua_create(&L, NULL) != BATON_OK ||
	    baton_lua_dostring(L, "function times7(x) return x * 7 end", NULL) != BATON_OK ||
	    baton_lua_call(L, "times7", &arg, 1, &v) != BATON_OK || v.type != BATON_LUA_INTEGER ||
	    v.u.i != 42)
		return 2;
	baton_lua_value_clear(&v);
	baton_lua_destroy(L);
	puts("consumer lua ok");
	return 0;
}
