/* SPDX-License-Identifier: MIT */
/*
 * Lua tasks (baton_lua_run): two runs on one state from two tasks of one
 * worker interleave at slice boundaries (the short one ends while the long
 * one is still computing), baton.sleep parks only its task, errors of the
 * function, of start and of finish come back as BATON_LUA_ERROR with the
 * message, the library's waits raise outside a run, and the arguments are
 * checked.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"

#include <lauxlib.h>
#include <lua.h>

#include <baton/sched.h>

#include "baton_lua.h"

static const char *src =
	"function long(n) local x = 0 for i = 1, n do x = (x + i) % 1000003 end return x end\n"
	"function short() return 'short' end\n"
	"function nap(s) local t0 = baton.clock() baton.sleep(s) return baton.clock() - t0 end\n"
	"function boom() error('boom') end\n";

struct job {
	baton_lua_t *bl;
	const char *fn;
	lua_Integer arg;
	int rc;
	char out[256];
	int order; /* when it finished: 1, 2, ... */
};

static int finished;

static int start(lua_State *L, void *arg)
{
	struct job *j = arg;

	lua_getglobal(L, j->fn);
	lua_pushinteger(L, j->arg);
	return 1;
}

static int finish(lua_State *L, int base, int n, void *arg)
{
	struct job *j = arg;

	if (n >= 1)
		snprintf(j->out, sizeof(j->out), "%s", luaL_tolstring(L, base, NULL));
	return 0;
}

static int bad_finish(lua_State *L, int base, int n, void *arg)
{
	(void)base;
	(void)n;
	(void)arg;
	return luaL_error(L, "finish refused");
}

static void run_job(void *arg)
{
	struct job *j = arg;
	struct baton_lua_run r = { start, finish, NULL, NULL, j, 1000 };
	struct baton_lua_value err;

	j->rc = baton_lua_run(j->bl, &r, &err);
	if (j->rc == BATON_LUA_ERROR)
		snprintf(j->out, sizeof(j->out), "%s", err.u.s.ptr);
	baton_lua_value_clear(&err);
	j->order = ++finished; /* one worker: no race */
}

static baton_lua_t *make_state(void)
{
	baton_lua_t *bl;

	assert_int_equal(baton_lua_create(&bl, NULL), BATON_OK);
	assert_int_equal(baton_lua_dostring(bl, src, NULL), BATON_OK);
	return bl;
}

static void run_jobs(struct job *jobs, int n)
{
	baton_sched_t *s;

	finished = 0;
	assert_int_equal(baton_sched_create(&s, NULL), BATON_OK);
	for (int i = 0; i < n; i++)
		assert_int_equal(baton_sched_spawn(s, NULL, run_job, &jobs[i]), BATON_OK);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

static void test_runs_interleave(void **state)
{
	baton_lua_t *bl = make_state();
	struct job jobs[2] = { { bl, "long", 3000000, 0, "", 0 }, { bl, "short", 0, 0, "", 0 } };

	(void)state;
	run_jobs(jobs, 2); /* long starts first, then yields every 1000 instructions */
	assert_int_equal(jobs[0].rc, BATON_OK);
	assert_int_equal(jobs[1].rc, BATON_OK);
	assert_string_equal(jobs[1].out, "short");
	assert_int_equal(jobs[1].order, 1); /* the short one did not wait */
	assert_int_equal(jobs[0].order, 2);
	assert_int_equal(baton_lua_destroy(bl), BATON_OK);
}

static void test_sleep_parks_the_task(void **state)
{
	baton_lua_t *bl = make_state();
	struct job jobs[2] = { { bl, "nap", 0, 0, "", 0 }, { bl, "short", 0, 0, "", 0 } };

	(void)state;
	jobs[0].fn = "nap";
	jobs[0].arg = 0; /* replaced below: sleep 50 ms */
	assert_int_equal(baton_lua_dostring(bl, "local f = nap function nap() return f(0.05) end",
					    NULL), BATON_OK);
	run_jobs(jobs, 2);
	assert_int_equal(jobs[0].rc, BATON_OK);
	assert_true(atof(jobs[0].out) >= 0.05);
	assert_int_equal(jobs[1].order, 1);
	assert_int_equal(baton_lua_destroy(bl), BATON_OK);
}

static void test_errors(void **state)
{
	baton_lua_t *bl = make_state();
	struct job j = { bl, "boom", 0, 0, "", 0 };
	struct job missing = { bl, "no_such_function", 0, 0, "", 0 };
	struct baton_lua_run r = { start, bad_finish, NULL, NULL, NULL, 0 };
	struct baton_lua_value err;

	(void)state;
	run_jobs(&j, 1);
	assert_int_equal(j.rc, BATON_LUA_ERROR);
	assert_non_null(strstr(j.out, "boom"));
	run_jobs(&missing, 1); /* calling nil */
	assert_int_equal(missing.rc, BATON_LUA_ERROR);
	r.arg = &j;
	j.fn = "short";
	assert_int_equal(baton_lua_run(bl, &r, &err), BATON_LUA_ERROR); /* outside a task too */
	assert_string_equal(err.u.s.ptr, "finish refused");
	baton_lua_value_clear(&err);
	/* The library's waits need a run. */
	assert_int_equal(baton_lua_dostring(bl, "baton.sleep(0)", &err), BATON_LUA_ERROR);
	assert_non_null(strstr(err.u.s.ptr, "only in a task's own coroutine"));
	baton_lua_value_clear(&err);
	r.finish = NULL;
	assert_int_equal(baton_lua_run(bl, &r, NULL), BATON_EINVAL);
	assert_int_equal(baton_lua_run(NULL, &r, NULL), BATON_EINVAL);
	assert_int_equal(baton_lua_run(bl, NULL, NULL), BATON_EINVAL);
	assert_int_equal(baton_lua_destroy(bl), BATON_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_runs_interleave),
		cmocka_unit_test(test_sleep_parks_the_task),
		cmocka_unit_test(test_errors),
	};

	tc_watchdog(60);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
