/* SPDX-License-Identifier: MIT */
/*
 * bindings/lua/lua_run.c - Lua tasks (baton_lua.h): a function run as a
 * coroutine of the state, one sequenced step per slice or wait.
 *
 * A step (on the sequencer's stack, under its lock) resumes the coroutine
 * until the count hook yields it (a slice is over), a library function
 * yields it with a wait in task->op, or it ends. Between steps the lock is
 * free: other calls, and the slices of other runs on the same state, go
 * in between. A lua_State is single-threaded, but a suspended coroutine is
 * just a value of it, so any number of runs may be suspended at once.
 *
 * Coroutines that ended normally are kept (a few per state) for the next
 * run: a new thread per call costs as much as a small handler.
 */
#include <string.h>

#include <lauxlib.h>

#include <baton/sched.h>

#include "lua_internal.h"

struct baton_lua_task *baton__lua_task_of(lua_State *L)
{
	return *(struct baton_lua_task **)lua_getextraspace(L);
}

/* Yield the run's coroutine back to the step, if Lua can yield here. */
static void slice_hook(lua_State *L, lua_Debug *ar)
{
	if (ar->event == LUA_HOOKCOUNT && baton__lua_task_of(L) != NULL && lua_isyieldable(L))
		lua_yield(L, 0); /* a hook yields no values */
}

/* The error on top of `from` as the run's error; pops it. */
static void fail(struct baton_lua_task *t, lua_State *from)
{
	size_t len = 0;
	const char *msg = lua_type(from, -1) == LUA_TSTRING ? lua_tolstring(from, -1, &len) : NULL;

	if (msg == NULL)
		msg = "(error object is not a string)", len = strlen(msg);
	t->rc = BATON_LUA_ERROR;
	if (t->err != NULL && baton__lua_set_string(t->err, msg, len) != BATON_OK)
		t->rc = BATON_ENOMEM;
	lua_pop(from, 1);
}

/* Protected: a coroutine (a spare or a new one), anchored, with the
 * function and its arguments on it. */
static int begin(lua_State *L)
{
	struct baton_lua_task *t = lua_touserdata(L, 1);
	struct baton_lua *bl = t->bl;
	int nargs;

	if (bl->nspare > 0) {
		bl->nspare--;
		t->co = bl->spare[bl->nspare];
		t->co_ref = bl->spare_ref[bl->nspare];
	} else {
		t->co = lua_newthread(L);
		t->co_ref = luaL_ref(L, LUA_REGISTRYINDEX);
	}
	*(struct baton_lua_task **)lua_getextraspace(t->co) = t;
	lua_sethook(t->co, slice_hook, LUA_MASKCOUNT,
		    (int)(t->r->slice ? t->r->slice : BATON_LUA_SLICE_DEFAULT));
	lua_settop(L, 1);
	nargs = t->r->start(L, t->r->arg);
	if (nargs < 0 || lua_gettop(L) != nargs + 2)
		return luaL_error(L, "baton_lua_run: start must push a function and its arguments");
	lua_xmove(L, t->co, nargs + 1);
	t->nargs = nargs;
	return 0;
}

/* Protected: the finished coroutine's results, moved here, to finish. */
static int finish(lua_State *L)
{
	struct baton_lua_task *t = lua_touserdata(L, 1);

	t->r->finish(L, 2, lua_gettop(L) - 1, t->r->arg);
	return 0;
}

/* Protected: the results of the wait the coroutine asked for. */
static int push_op(lua_State *L)
{
	struct baton_lua_task *t = lua_touserdata(L, 1);
	int n;

	lua_settop(L, 0);
	n = baton__lua_op_push(L, &t->op);
	t->nargs = n;
	return n;
}

/* Protected: the caller's word before a slice. */
static int resume(lua_State *L)
{
	struct baton_lua_task *t = lua_touserdata(L, 1);

	t->r->resume(L, t->r->arg);
	return 0;
}

/* Close the sockets the run opened (no wait is in flight: the run is
 * over), then drop the table. */
static void close_socks(lua_State *L, struct baton_lua_task *t)
{
	if (t->socks_ref == LUA_NOREF)
		return;
	lua_rawgeti(L, LUA_REGISTRYINDEX, t->socks_ref);
	lua_pushnil(L);
	while (lua_next(L, -2) != 0) {
		struct baton_lua_sock *s = lua_touserdata(L, -2);

		if (s != NULL)
			baton__lua_sock_close(s);
		lua_pop(L, 1);
	}
	lua_pop(L, 1);
	luaL_unref(L, LUA_REGISTRYINDEX, t->socks_ref);
	t->socks_ref = LUA_NOREF;
}

/* The run is over (`ok`: the coroutine returned): tidy up and keep or
 * drop the coroutine. */
static void end(lua_State *L, struct baton_lua_task *t, bool ok)
{
	struct baton_lua *bl = t->bl;

	if (t->r->done)
		t->r->done(L, t->r->arg);
	close_socks(L, t);
	if (t->co != NULL) {
		*(struct baton_lua_task **)lua_getextraspace(t->co) = NULL;
		lua_sethook(t->co, NULL, 0, 0);
		lua_settop(t->co, 0);
		if (ok && bl->nspare < BATON_LUA_SPARE_THREADS) {
			bl->spare[bl->nspare] = t->co;
			bl->spare_ref[bl->nspare++] = t->co_ref;
		} else {
			if (!ok)
				lua_resetthread(t->co); /* closes its to-be-closed variables */
			luaL_unref(L, LUA_REGISTRYINDEX, t->co_ref);
		}
		t->co = NULL;
	}
	t->finished = true;
}

/* One step, on the sequencer's stack: start or go on, run one slice. */
static void *step(void *arg)
{
	struct baton_lua_task *t = arg;
	lua_State *L = t->bl->L;
	int top = lua_gettop(L), status, nres = 0;
	bool first = t->co == NULL;

	if (!lua_checkstack(L, 4)) {
		lua_pushliteral(L, "the Lua stack is full"); /* room for one, always */
		fail(t, L);
		end(L, t, false);
		return NULL;
	}
	lua_pushcfunction(L, t->co == NULL ? begin : push_op);
	lua_pushlightuserdata(L, t);
	if (t->co == NULL || t->op.kind != LOP_NONE) {
		status = lua_pcall(L, 1, LUA_MULTRET, 0);
		t->op.kind = LOP_NONE;
		if (status != LUA_OK) {
			fail(t, L);
			end(L, t, false);
			lua_settop(L, top);
			return NULL;
		}
		if (lua_gettop(L) > top) /* a wait's results: the yield's returns */
			lua_xmove(L, t->co, lua_gettop(L) - top);
	} else {
		lua_settop(L, top);
	}
	if (t->r->resume && !first) {
		lua_pushcfunction(L, resume);
		lua_pushlightuserdata(L, t);
		if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
			fail(t, L);
			end(L, t, false);
			lua_settop(L, top);
			return NULL;
		}
	}
	status = lua_resume(t->co, L, t->nargs, &nres);
	t->nargs = 0;
	if (status == LUA_YIELD) {
		lua_pop(t->co, nres); /* a slice's end yields none; coroutine.yield's are dropped */
		return NULL;
	}
	if (status != LUA_OK) {
		fail(t, t->co);
		end(L, t, false);
		return NULL;
	}
	if (!lua_checkstack(L, nres + 3)) {
		lua_pushliteral(t->co, "too many results");
		fail(t, t->co);
		end(L, t, false);
		return NULL;
	}
	lua_pushcfunction(L, finish);
	lua_pushlightuserdata(L, t);
	lua_xmove(t->co, L, nres);
	if (lua_pcall(L, nres + 1, 0, 0) != LUA_OK) {
		fail(t, L);
		end(L, t, false);
	} else {
		end(L, t, true);
	}
	lua_settop(L, top);
	return NULL;
}

int baton_lua_run(baton_lua_t *bl, const struct baton_lua_run *r, struct baton_lua_value *err)
{
	struct baton_lua_task t;
	int rc;

	if (bl == NULL || r == NULL || r->start == NULL || r->finish == NULL)
		return BATON_EINVAL;
	if (baton_seq_on_stack(bl->seq))
		return BATON_EDEADLK;
	if (err)
		err->type = BATON_LUA_NIL;
	memset(&t, 0, sizeof(t));
	t.bl = bl;
	t.r = r;
	t.co_ref = LUA_NOREF;
	t.socks_ref = LUA_NOREF;
	t.rc = BATON_OK;
	t.err = err;
	t.in_task = baton_sched_self() != NULL;
	for (;;) {
		rc = baton_seq_call(bl->seq, step, &t, NULL);
		if (rc != BATON_OK)
			return rc; /* only before the first step: nothing started */
		if (t.finished)
			return t.rc;
		if (t.op.kind != LOP_NONE)
			baton__lua_op_run(&t.op, t.in_task); /* parks this task only */
		else if (t.in_task)
			baton_sched_yield(); /* a slice is over: the worker's others */
	}
}
