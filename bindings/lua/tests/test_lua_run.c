/* SPDX-License-Identifier: MIT */
/*
 * Lua tasks (baton_lua_run): two runs on one state from two tasks of one
 * worker interleave at slice boundaries (the short one ends while the long
 * one is still computing), also when the long one loops inside a coroutine
 * of its own, and do not with slices off; baton.sleep parks only its task;
 * errors of the function, of start and of finish come back as
 * BATON_LUA_ERROR with the message, the library's waits raise outside a
 * run, and the arguments are checked. The limits: endless loops (plain, in
 * a sort comparator, in a coroutine, behind pcall) are stopped at their
 * deadline and at their CPU budget; a run allocating without bound gets
 * "not enough memory" at its memory budget and the state's memory goes
 * back; runs beside it are not charged for it.
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
	"function long_in_co(n) return coroutine.wrap(function() return long(n) end)() end\n"
	"function spin() local n = 0 while true do n = n + 1 end end\n"
	"function spin_in_sort()\n"
	"  local t = { 3, 1, 2 }\n"
	"  table.sort(t, function(a, b) while true do end end)\n"
	"end\n"
	"function spin_in_co() local co = coroutine.wrap(spin) co() end\n"
	"function spin_in_resume()\n"
	"  local co = coroutine.create(spin) return select(2, coroutine.resume(co))\n"
	"end\n"
	"function spin_pcall() while true do pcall(spin) pcall(spin_in_sort) end end\n"
	"function hog() local t = {} while true do t[#t + 1] = string.rep('x', 1000) .. #t end "
	"end\n"
	"function hog_caught() local ok, e = pcall(hog) return e end\n"
	"function little() local t = {} for i = 1, 1000 do t[i] = { i } end return #t end\n"
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

/* A run with limits, from a task. */
struct limited {
	baton_lua_t *bl;
	const char *fn;
	long long slice_ns, deadline_ms, cpu_ms;
	size_t mem;
	int rc;
	char out[256];
	struct baton_lua_usage use;
	int64_t took;
	int order;
};

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
	struct baton_lua_run r = { start, finish, NULL, NULL, j, 100000 }; /* 100 us */
	struct baton_lua_value err;

	j->rc = baton_lua_run(j->bl, &r, &err);
	if (j->rc == BATON_LUA_ERROR)
		snprintf(j->out, sizeof(j->out), "%s", err.u.s.ptr);
	baton_lua_value_clear(&err);
	j->order = ++finished; /* one worker: no race */
}

static void run_limited(void *arg)
{
	struct limited *l = arg;
	struct job j = { l->bl, l->fn, 0, 0, "", 0 };
	int64_t t0 = tc_now();
	struct baton_lua_run r = { start,
				   finish,
				   NULL,
				   NULL,
				   &j,
				   l->slice_ns,
				   l->deadline_ms ? t0 + TC_MS(l->deadline_ms) : 0,
				   l->cpu_ms * 1000000,
				   l->mem,
				   &l->use };
	struct baton_lua_value err;

	l->rc = baton_lua_run(l->bl, &r, &err);
	l->took = tc_now() - t0;
	snprintf(l->out, sizeof(l->out), "%s", err.type == BATON_LUA_STRING ? err.u.s.ptr : j.out);
	baton_lua_value_clear(&err);
	l->order = ++finished;
}

static void run_limited_all(struct limited *ls, int n)
{
	baton_sched_t *s;
	struct baton_sched_attr a;

	finished = 0;
	baton_sched_attr_init(&a);
	a.workers = 1;
	assert_int_equal(baton_sched_create(&s, &a), BATON_OK);
	for (int i = 0; i < n; i++)
		assert_int_equal(baton_sched_spawn(s, NULL, run_limited, &ls[i]), BATON_OK);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
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
	run_jobs(jobs, 2); /* long starts first, then yields every 100 us */
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
	assert_int_equal(
		baton_lua_dostring(bl, "local f = nap function nap() return f(0.05) end", NULL),
		BATON_OK);
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

static baton_lua_t *make_accounted(void)
{
	baton_lua_t *bl;

	assert_int_equal(baton_lua_create_ex(&bl, NULL, BATON_LUA_ACCOUNT), BATON_OK);
	assert_int_equal(baton_lua_dostring(bl, src, NULL), BATON_OK);
	return bl;
}

/* A loop inside a coroutine the run made runs its slice on to the
 * coroutine's end (Lua cannot yield the run from in there); with slices
 * off a long run keeps the worker until it ends. */
static void test_slices_in_coroutines_and_off(void **state)
{
	baton_lua_t *bl = make_state();
	struct limited l[2] = { { bl, "long_in_co", 100000, 0, 0, 0, 0, "", { 0 }, 0, 0 },
				{ bl, "short", 100000, 0, 0, 0, 0, "", { 0 }, 0, 0 } };

	(void)state;
	assert_int_equal(
		baton_lua_dostring(bl,
				   "local f = long_in_co "
				   "function long_in_co() return f(3000000) + long(3000000) end",
				   NULL),
		BATON_OK);
	run_limited_all(l, 2);
	assert_int_equal(l[0].rc, BATON_OK);
	assert_int_equal(l[1].rc, BATON_OK);
	/* The slice ran out in the coroutine and ended where it returned:
	 * the short one went before the long one's second loop. */
	assert_int_equal(l[1].order, 1);
	assert_true(l[0].use.slices > 1);
	l[0].fn = "long";
	assert_int_equal(baton_lua_dostring(
				 bl, "local f = long function long() return f(3000000) end", NULL),
			 BATON_OK);
	l[0].slice_ns = l[1].slice_ns = -1; /* off */
	run_limited_all(l, 2);
	assert_int_equal(l[0].order, 1);
	assert_int_equal(l[0].use.slices, 1);
	assert_int_equal(baton_lua_destroy(bl), BATON_OK);
}

/* Endless loops are stopped at their deadline, wherever they loop. */
static void test_deadline_stops_endless_loops(void **state)
{
	static const char *const fns[] = { "spin", "spin_in_sort", "spin_in_co", "spin_in_resume",
					   "spin_pcall" };
	baton_lua_t *bl = make_state();

	(void)state;
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		struct limited l[2] = { { bl, fns[i], 0, 100, 0, 0, 0, "", { 0 }, 0, 0 },
					{ bl, "short", 0, 0, 0, 0, 0, "", { 0 }, 0, 0 } };

		run_limited_all(l, 2);
		printf("# %s: rc %d after %.1f ms: %s\n", fns[i], l[0].rc, l[0].took / 1e6,
		       l[0].out);
		assert_non_null(strstr(l[0].out, "deadline has passed"));
		if (strcmp(fns[i], "spin_in_resume") == 0 && l[0].rc == BATON_OK) {
			/* The coroutine's error, which the run returned before
			 * its next instruction could be stopped. */
		} else {
			assert_int_equal(l[0].rc, BATON_ETIMEDOUT);
			assert_int_equal(l[0].use.stopped, BATON_LUA_STOP_DEADLINE);
		}
		assert_true(l[0].took >= TC_MS(100));
		assert_true(l[0].took < TC_MS(100) + TC_MS(500) * tc_time_scale());
		assert_int_equal(l[1].rc, BATON_OK); /* the state goes on */
		if (i == 0)                          /* a loop that can yield is sliced */
			assert_int_equal(l[1].order, 1);
	}
	assert_int_equal(baton_lua_destroy(bl), BATON_OK);
}

/* And at their CPU budget: the time of their slices, not waits. */
static void test_cpu_budget_stops_endless_loops(void **state)
{
	baton_lua_t *bl = make_state();
	struct limited l = { bl, "spin", 0, 0, 50, 0, 0, "", { 0 }, 0, 0 };
	struct limited sort = { bl, "spin_in_sort", 0, 0, 50, 0, 0, "", { 0 }, 0, 0 };
	struct limited nap = { bl, "nap", 0, 0, 20, 0, 0, "", { 0 }, 0, 0 };

	(void)state;
	run_limited_all(&l, 1);
	assert_int_equal(l.rc, BATON_LUA_BUDGET);
	assert_int_equal(l.use.stopped, BATON_LUA_STOP_CPU);
	assert_true(l.use.cpu_ns >= TC_MS(50));
	assert_true(l.use.cpu_ns < TC_MS(50) + TC_MS(200) * tc_time_scale());
	run_limited_all(&sort, 1);
	assert_int_equal(sort.rc, BATON_LUA_BUDGET);
	/* A 50 ms sleep with a 20 ms budget: sleeping is not computing. */
	assert_int_equal(baton_lua_dostring(
				 bl, "function nap() baton.sleep(0.05) return 'rested' end", NULL),
			 BATON_OK);
	run_limited_all(&nap, 1);
	assert_int_equal(nap.rc, BATON_OK);
	assert_string_equal(nap.out, "rested");
	assert_true(nap.use.cpu_ns < TC_MS(20));
	assert_int_equal(baton_lua_destroy(bl), BATON_OK);
}

/* A run allocating without bound gets "not enough memory" at its budget;
 * what it held goes back; a run beside it is not charged for it. */
static void test_memory_budget(void **state)
{
	baton_lua_t *bl = make_accounted(), *plain = make_state();
	size_t before, after;
	struct limited l[2] = { { bl, "hog", 0, 0, 0, (size_t)8 << 20, 0, "", { 0 }, 0, 0 },
				{ bl, "little", 0, 0, 0, (size_t)1 << 20, 0, "", { 0 }, 0, 0 } };
	struct limited caught = { bl, "hog_caught", 0, 0, 0, (size_t)4 << 20, 0, "", { 0 }, 0, 0 };
	struct limited unaccounted = { plain, "little", 0, 0, 0, 1000, 0, "", { 0 }, 0, 0 };

	(void)state;
	assert_int_equal(baton_lua_dostring(bl, "collectgarbage()", NULL), BATON_OK);
	before = baton_lua_memory(bl);
	for (int i = 0; i < 5; i++) {
		run_limited_all(l, 2);
		assert_int_equal(l[0].rc, BATON_LUA_ERROR);
		assert_non_null(strstr(l[0].out, "not enough memory"));
		assert_int_equal(l[0].use.stopped, BATON_LUA_STOP_MEMORY);
		assert_true(l[0].use.mem_peak <= (size_t)8 << 20);
		assert_true(l[0].use.mem_peak > (size_t)6 << 20);
		assert_int_equal(l[1].rc, BATON_OK); /* beside it, within its own */
		assert_string_equal(l[1].out, "1000");
	}
	after = baton_lua_memory(bl);
	printf("# state memory %zu before, %zu after 5 runs over budget\n", before, after);
	assert_true(after < before + (before / 10) + 65536);
	/* Caught by the run itself: its own business. */
	run_limited_all(&caught, 1);
	assert_int_equal(caught.rc, BATON_OK);
	assert_string_equal(caught.out, "not enough memory");
	assert_int_equal(caught.use.stopped, BATON_LUA_STOP_NONE);
	/* A budget needs an accounting state. */
	run_limited_all(&unaccounted, 1);
	assert_int_equal(unaccounted.rc, BATON_EINVAL);
	assert_int_equal(baton_lua_destroy(bl), BATON_OK);
	assert_int_equal(baton_lua_destroy(plain), BATON_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_runs_interleave),
		cmocka_unit_test(test_slices_in_coroutines_and_off),
		cmocka_unit_test(test_deadline_stops_endless_loops),
		cmocka_unit_test(test_cpu_budget_stops_endless_loops),
		cmocka_unit_test(test_memory_budget),
		cmocka_unit_test(test_sleep_parks_the_task),
		cmocka_unit_test(test_errors),
	};

	tc_watchdog(60);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
