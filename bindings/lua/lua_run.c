/* SPDX-License-Identifier: MIT */
/*
 * bindings/lua/lua_run.c - Lua tasks (baton_lua.h): a function run as a
 * coroutine of the state, one sequenced step per slice or wait.
 *
 * A step (on the sequencer's stack, under its lock) resumes the coroutine
 * until the slice clock's hook yields it (its time is up: lua_slice.c), a
 * library function yields it with a wait in task->op, or it ends. Between
 * steps the lock is free: other calls, and the slices of other runs on the
 * same state, go in between. A lua_State is single-threaded, but a
 * suspended coroutine is just a value of it, so any number of runs may be
 * suspended at once.
 *
 * Each step first looks at the run's limits: past its deadline or its CPU
 * budget (the time of its slices so far) the coroutine is not resumed
 * again but closed, and the run ends with BATON_ETIMEDOUT or
 * BATON_LUA_BUDGET. Its allocations are charged to its account for the
 * whole step (baton_lua.c's allocator); a run that failed after its budget
 * refused memory is followed by a full collection, so that what it held
 * goes back at once.
 *
 * A slice's end costs a timer signal (a few to tens of microseconds on a
 * virtual machine), which buys nothing when no other task wants the
 * worker. So a run that yields at a slice's end and gets the worker back
 * at once (its yield took under SLICE_ALONE_NS and no other Lua step ran on
 * the thread meanwhile) doubles its next slice, up to SLICE_STRETCH_MAX
 * times the slice it was given; the first time another task ran in
 * between, it is back to the given slice. A computation alone on its
 * worker then costs one slice end per 4 ms (by default), and a request
 * that arrives beside it waits at most that long for its first turn.
 *
 * Coroutines that ended normally are kept (a few per state) for the next
 * run: a new thread per call costs as much as a small handler.
 */
#include <string.h>

#include <lauxlib.h>

#include <baton/sched.h>

#include "lua_internal.h"

#define SLICE_STRETCH_MAX 4
#define SLICE_ALONE_NS 20000 /* a yield back this fast found nobody else */

struct baton_lua_task *baton__lua_task_of(lua_State *L)
{
	return *(struct baton_lua_task **)lua_getextraspace(L);
}

const char *baton__lua_task_stop(struct baton_lua_task *t, int64_t now, int *rc)
{
	int64_t cpu;

	if (t->cancel != NULL && __atomic_load_n(t->cancel, __ATOMIC_ACQUIRE)) {
		if (rc)
			*rc = BATON_ECANCELED;
		return "stopped: cancelled";
	}
	if (t->r->deadline > 0 && now >= t->r->deadline) {
		if (rc)
			*rc = BATON_ETIMEDOUT;
		return "stopped: the run's deadline has passed";
	}
	cpu = t->cpu_ns + baton__lua_slice_elapsed(now);
	if (t->r->cpu_ns > 0 && cpu >= t->r->cpu_ns) {
		if (rc)
			*rc = BATON_LUA_BUDGET;
		return "stopped: the run's CPU budget is used up";
	}
	return NULL;
}

/* `msg` as the run's error, with code rc. */
static void set_error(struct baton_lua_task *t, int rc, const char *msg, size_t len)
{
	t->rc = rc;
	if (t->err != NULL && baton__lua_set_string(t->err, msg, len) != BATON_OK)
		t->rc = BATON_ENOMEM;
}

/* The error on top of `from` as the run's error; pops it. status is what
 * raised it (LUA_ERRMEM: an allocation failed). */
static void fail(struct baton_lua_task *t, lua_State *from, int status)
{
	size_t len = 0;
	const char *msg = lua_type(from, -1) == LUA_TSTRING ? lua_tolstring(from, -1, &len) : NULL;

	if (msg == NULL)
		msg = "(error object is not a string)", len = strlen(msg);
	set_error(t, BATON_LUA_ERROR, msg, len);
	if (status == LUA_ERRMEM)
		t->stopped = BATON_LUA_STOP_MEMORY; /* kept only if its budget refused */
	lua_pop(from, 1);
}

/* A limit stopped the run (rc, why: baton__lua_task_stop's). */
static void stop(struct baton_lua_task *t, int rc, const char *why)
{
	set_error(t, rc, why, strlen(why));
	t->stopped = rc == BATON_ETIMEDOUT ? BATON_LUA_STOP_DEADLINE
		: rc == BATON_LUA_BUDGET   ? BATON_LUA_STOP_CPU
					   : BATON_LUA_STOP_NONE;
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
	size_t peak = 0;
	bool refused = false;

	if (t->r->done)
		t->r->done(L, t->r->arg);
	close_socks(L, t);
	if (t->threads_ref != LUA_NOREF) { /* its threads end with it */
		baton__lua_cancel_threads(L, t->threads_ref);
		t->threads_ref = LUA_NOREF;
	}
	if (t->co != NULL) {
		*(struct baton_lua_task **)lua_getextraspace(t->co) = NULL;
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
	baton__lua_account_close(bl, t->acct, &peak, &refused);
	t->acct = 0;
	if (t->stopped == BATON_LUA_STOP_MEMORY && (ok || !refused))
		t->stopped = BATON_LUA_STOP_NONE; /* not for its budget */
	if (!ok && refused)                       /* what it held is garbage now: give it back */
		lua_gc(L, LUA_GCCOLLECT);
	if (t->r->usage) {
		t->r->usage->cpu_ns = t->cpu_ns;
		t->r->usage->slices = t->slices;
		t->r->usage->mem_peak = peak;
		t->r->usage->stopped = t->stopped;
	}
	t->finished = true;
}

/* When the slice starting now is due: its time, the deadline or the rest
 * of the CPU budget, whichever comes first (INT64_MAX: never). */
static int64_t slice_end(const struct baton_lua_task *t, int64_t now)
{
	int64_t end = INT64_MAX;

	if (t->r->slice_ns >= 0)
		end = now + t->slice_ns;
	if (t->r->deadline > 0 && t->r->deadline < end)
		end = t->r->deadline;
	if (t->r->cpu_ns > 0 && now + (t->r->cpu_ns - t->cpu_ns) < end)
		end = now + (t->r->cpu_ns - t->cpu_ns);
	return end;
}

/* One step, on the sequencer's stack: start or go on, run one slice. */
static void *step_charged(struct baton_lua_task *t)
{
	lua_State *L = t->bl->L;
	int top = lua_gettop(L), status, nres = 0, rc;
	bool first = t->co == NULL;
	int64_t now = baton__lua_now(), t1;
	const char *why;

	if (!lua_checkstack(L, 4)) {
		lua_pushliteral(L, "the Lua stack is full"); /* room for one, always */
		fail(t, L, LUA_ERRRUN);
		end(L, t, false);
		return NULL;
	}
	/* Its limits, before anything of it runs again. */
	if ((why = baton__lua_task_stop(t, now, &rc)) != NULL) {
		stop(t, rc, why);
		end(L, t, false);
		return NULL;
	}
	lua_pushcfunction(L, t->co == NULL ? begin : push_op);
	lua_pushlightuserdata(L, t);
	if (t->co == NULL || t->op.kind != LOP_NONE) {
		status = lua_pcall(L, 1, LUA_MULTRET, 0);
		t->op.kind = LOP_NONE;
		if (status != LUA_OK) {
			fail(t, L, status);
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
		if ((status = lua_pcall(L, 1, 0, 0)) != LUA_OK) {
			fail(t, L, status);
			end(L, t, false);
			lua_settop(L, top);
			return NULL;
		}
	}
	/* (now is the step's start: what ran since is this run's too.) */
	baton__lua_slice_begin(t, t->co, now, slice_end(t, now), t->r->slice_ns);
	status = lua_resume(t->co, L, t->nargs, &nres);
	t1 = baton__lua_now();
	baton__lua_slice_end(t->co);
	t->cpu_ns += t1 - now;
	t->slices++;
	t->nargs = 0;
	if (status == LUA_YIELD) {
		lua_pop(t->co, nres); /* a slice's end yields none; coroutine.yield's are dropped */
		return NULL;
	}
	if (status != LUA_OK) {
		/* An error the slice clock raised where the coroutine could not
		 * yield is the limit's, whatever it became on the way. */
		if ((why = baton__lua_task_stop(t, t1, &rc)) != NULL) {
			lua_pop(t->co, 1);
			stop(t, rc, why);
		} else {
			fail(t, t->co, status);
		}
		end(L, t, false);
		return NULL;
	}
	if (!lua_checkstack(L, nres + 3)) {
		lua_pushliteral(t->co, "too many results");
		fail(t, t->co, LUA_ERRRUN);
		end(L, t, false);
		return NULL;
	}
	lua_pushcfunction(L, finish);
	lua_pushlightuserdata(L, t);
	lua_xmove(t->co, L, nres);
	if ((status = lua_pcall(L, nres + 1, 0, 0)) != LUA_OK) {
		fail(t, L, status);
		end(L, t, false);
	} else {
		end(L, t, true);
	}
	lua_settop(L, top);
	return NULL;
}

static void *step(void *arg)
{
	struct baton_lua_task *t = arg;
	struct baton_lua *bl = t->bl;
	uint32_t outer = bl->cur;

	if (t->co == NULL && t->acct == 0 && t->r->mem_bytes != 0) {
		t->acct = baton__lua_account_open(bl, t->r->mem_bytes);
		if (t->acct == 0) {
			t->rc = BATON_ENOMEM;
			t->finished = true;
			return NULL;
		}
	}
	bl->cur = t->acct; /* what it allocates is its own */
	step_charged(t);
	bl->cur = outer;
	return NULL;
}

int baton_lua_run(baton_lua_t *bl, const struct baton_lua_run *r, struct baton_lua_value *err)
{
	return baton__lua_run(bl, r, err, NULL);
}

int baton__lua_run(baton_lua_t *bl, const struct baton_lua_run *r, struct baton_lua_value *err,
		   const bool *cancel)
{
	struct baton_lua_task t;
	int64_t base;
	int rc;

	if (bl == NULL || r == NULL || r->start == NULL || r->finish == NULL)
		return BATON_EINVAL;
	if (r->mem_bytes != 0 && !(bl->flags & BATON_LUA_ACCOUNT))
		return BATON_EINVAL;
	if (r->usage)
		memset(r->usage, 0, sizeof(*r->usage));
	if (baton_seq_on_stack(bl->seq))
		return BATON_EDEADLK;
	if (err)
		err->type = BATON_LUA_NIL;
	memset(&t, 0, sizeof(t));
	t.bl = bl;
	t.r = r;
	t.co_ref = LUA_NOREF;
	t.socks_ref = LUA_NOREF;
	t.threads_ref = LUA_NOREF;
	t.cancel = cancel;
	t.rc = BATON_OK;
	t.err = err;
	t.in_task = baton_sched_self() != NULL;
	base = r->slice_ns > 0 ? r->slice_ns : BATON_LUA_SLICE_DEFAULT_NS;
	t.slice_ns = base;
	for (;;) {
		rc = baton_seq_call(bl->seq, step, &t, NULL);
		if (rc != BATON_OK)
			return rc; /* only before the first step: nothing started */
		if (t.finished)
			return t.rc;
		if (t.op.kind != LOP_NONE) {
			baton__lua_op_run(&t.op, t.in_task); /* parks this task only */
			t.slice_ns = base;
		} else if (t.in_task) {
			unsigned long steps = baton__lua_thread_steps();
			int64_t t0 = baton__lua_now();

			baton_sched_yield(); /* a slice is over: the worker's others */
			if (baton__lua_now() - t0 < SLICE_ALONE_NS &&
			    baton__lua_thread_steps() == steps) {
				if (t.slice_ns < base * SLICE_STRETCH_MAX)
					t.slice_ns *= 2; /* alone: end less often */
			} else {
				t.slice_ns = base;
			}
		}
	}
}
