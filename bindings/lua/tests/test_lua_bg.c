/* SPDX-License-Identifier: MIT */
/*
 * Background runs of a Lua state (baton_lua.h): baton.after fires once,
 * later, after the run that set it ended; baton.every fires until
 * cancelled, and a cancelled timer does not fire; the bound on pending
 * timers gives a clear error; 10,000 pending timers cost the state less
 * than 1 KiB each and no task each (they all wait behind one runner);
 * baton_lua_cancel_tasks drops them and the scheduler ends. baton.spawn
 * threads: wait_any returns the first to end with its results (varargs and
 * array forms), a loser is cancelled, an error comes back as false and the
 * message, and a run's threads are cancelled when it ends. A failing timer
 * callback reaches the error callback. Timers set by the state's chunk
 * (outside any run) fire on the scheduler given to baton_lua_set_tasks.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"

#include <lauxlib.h>
#include <lua.h>

#include <baton/sched.h>

#include "baton_lua.h"

static const char *src =
	"fired = {}\n"
	"function later(ms, what) baton.after(ms, function(w) fired[#fired + 1] = w end, what) "
	"  return 'set' end\n"
	"function ticks(ms, total)\n"
	"  local n = 0\n"
	"  local t = baton.every(ms, function() n = n + 1 end)\n"
	"  baton.sleep(total / 1000)\n"
	"  t:cancel()\n"
	"  local at = n\n"
	"  baton.sleep(3 * ms / 1000)\n"
	"  return at .. ' ' .. n\n"
	"end\n"
	"function cancelled_one()\n"
	"  local t = baton.after(20, function() fired[#fired + 1] = 'bad' end)\n"
	"  return tostring(t:cancel()) .. ' ' .. tostring(t:pending())\n"
	"end\n"
	"function many(n)\n"
	"  keep = {}\n"
	"  for i = 1, n do\n"
	"    local t, err = baton.after(600000, function() end)\n"
	"    if not t then return i .. ': ' .. err end\n"
	"    keep[i] = t\n"
	"  end\n"
	"  return 'ok'\n"
	"end\n"
	"function count() return #fired .. ':' .. table.concat(fired, ',') end\n"
	"function race()\n"
	"  local slow = baton.spawn(function() baton.sleep(5) return 'slow' end)\n"
	"  local fast = baton.spawn(function(a, b) baton.sleep(0.01) return a + b, 'fast' end, 2, "
	"3)\n"
	"  local th, ok, sum, name = baton.wait_any(slow, fast)\n"
	"  local was = slow:cancel()\n"
	"  local th2, ok2, err2 = baton.wait_any({ slow })\n"
	"  return table.concat({ tostring(th == fast), tostring(ok), sum, name, tostring(was),\n"
	"                        tostring(ok2), err2 }, ' ')\n"
	"end\n"
	"function failing()\n"
	"  local th = baton.spawn(function() error('thread boom') end)\n"
	"  local ok, err = baton.wait(th)\n"
	"  return tostring(ok) .. ' ' .. err\n"
	"end\n"
	"function orphan() baton.spawn(function() baton.sleep(10) end) return 'left' end\n"
	"function bad_timer() baton.after(1, function() error('timer boom') end) return 'set' "
	"end\n";

struct job {
	baton_lua_t *bl;
	const char *fn;
	lua_Integer a, b;
	int rc;
	char out[256];
};

static int start(lua_State *L, void *arg)
{
	struct job *j = arg;

	lua_getglobal(L, j->fn);
	lua_pushinteger(L, j->a);
	lua_pushinteger(L, j->b);
	return 2;
}

static int finish(lua_State *L, int base, int n, void *arg)
{
	struct job *j = arg;

	if (n >= 1)
		snprintf(j->out, sizeof(j->out), "%s", luaL_tolstring(L, base, NULL));
	return 0;
}

static void run_job(void *arg)
{
	struct job *j = arg;
	struct baton_lua_run r = { start, finish, NULL, NULL, j, 0, 0, 0, 0, NULL };
	struct baton_lua_value err;

	j->rc = baton_lua_run(j->bl, &r, &err);
	if (j->rc != BATON_OK)
		snprintf(j->out, sizeof(j->out), "%s",
			 err.type == BATON_LUA_STRING ? err.u.s.ptr : baton_strerror(j->rc));
	baton_lua_value_clear(&err);
}

static struct {
	int calls;
	char last[256];
} errors;

static void on_error(void *arg, const char *msg)
{
	(void)arg;
	errors.calls++;
	snprintf(errors.last, sizeof(errors.last), "%s", msg);
}

static baton_lua_t *make_state(size_t max_timers)
{
	struct baton_lua_tasks_attr ta = BATON_LUA_TASKS_ATTR_INIT;
	baton_lua_t *bl;

	assert_int_equal(baton_lua_create(&bl, NULL), BATON_OK);
	ta.max_timers = max_timers;
	ta.error = on_error;
	assert_int_equal(baton_lua_set_tasks(bl, &ta), BATON_OK);
	assert_int_equal(baton_lua_dostring(bl, src, NULL), BATON_OK);
	return bl;
}

/* Run `fn` in a task of a one-worker scheduler until every task (timers,
 * threads) has ended; the seconds that took. */
static double run_all(baton_lua_t *bl, struct job *j)
{
	struct baton_sched_attr a;
	baton_sched_t *s;
	int64_t t0 = tc_now();

	j->bl = bl;
	baton_sched_attr_init(&a);
	a.workers = 1;
	assert_int_equal(baton_sched_create(&s, &a), BATON_OK);
	assert_int_equal(baton_sched_spawn(s, NULL, run_job, j), BATON_OK);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
	return (tc_now() - t0) / 1e9;
}

static void call_str(baton_lua_t *bl, const char *fn, char *out, size_t cap)
{
	struct baton_lua_value v;

	assert_int_equal(baton_lua_call(bl, fn, NULL, 0, &v), BATON_OK);
	snprintf(out, cap, "%s", v.type == BATON_LUA_STRING ? v.u.s.ptr : "?");
	baton_lua_value_clear(&v);
}

static void test_after_and_every(void **state)
{
	baton_lua_t *bl = make_state(0);
	struct job j = { NULL, "later", 30, 0, 0, "" };
	char out[256];
	double took;

	(void)state;
	/* The run returns at once; the scheduler ends once the timer fired. */
	took = run_all(bl, &j);
	assert_int_equal(j.rc, BATON_OK);
	assert_string_equal(j.out, "set");
	call_str(bl, "count", out, sizeof(out));
	assert_string_equal(out, "1:0");
	assert_true(took >= 0.03);
	/* every 10 ms for 100 ms, then cancelled: no call after the cancel. */
	j.fn = "ticks";
	j.a = 10;
	j.b = 100;
	run_all(bl, &j);
	assert_int_equal(j.rc, BATON_OK);
	printf("# every 10 ms over 100 ms: %s\n", j.out);
	{
		int at = 0, n = 0;

		assert_int_equal(sscanf(j.out, "%d %d", &at, &n), 2);
		assert_int_equal(at, n);
		assert_true(at >= 3 && at <= 11);
	}
	j.fn = "cancelled_one";
	run_all(bl, &j);
	assert_string_equal(j.out, "true false");
	call_str(bl, "count", out, sizeof(out));
	assert_string_equal(out, "1:0"); /* 'bad' never fired */
	assert_int_equal(baton_lua_destroy(bl), BATON_OK);
}

/* A task that sets many timers, then closes the state's background. */
struct many {
	baton_lua_t *bl;
	int n;
	size_t before, after, pending;
	char out[256];
};

static void many_task(void *arg)
{
	struct many *m = arg;
	struct job j = { m->bl, "many", m->n, 0, 0, "" };

	m->before = baton_lua_memory(m->bl);
	run_job(&j);
	snprintf(m->out, sizeof(m->out), "%s", j.out);
	m->after = baton_lua_memory(m->bl);
	m->pending = baton_lua_timers(m->bl);
	baton_lua_cancel_tasks(m->bl, 0); /* the runner then ends */
}

static void run_many(baton_lua_t *bl, struct many *m)
{
	struct baton_sched_attr a;
	baton_sched_t *s;

	m->bl = bl;
	baton_sched_attr_init(&a);
	a.workers = 1;
	assert_int_equal(baton_sched_create(&s, &a), BATON_OK);
	assert_int_equal(baton_sched_spawn(s, NULL, many_task, m), BATON_OK);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

static void test_pending_timers_bound_and_cost(void **state)
{
	baton_lua_t *bl = make_state(100);
	struct many m = { NULL, 101, 0, 0, 0, "" };

	(void)state;
	run_many(bl, &m);
	assert_string_equal(m.out, "101: too many pending timers (at most 100)");
	assert_int_equal(m.pending, 100);
	assert_int_equal(baton_lua_timers(bl), 0); /* cancelled */
	assert_int_equal(baton_lua_destroy(bl), BATON_OK);

	bl = make_state(20000);
	m.n = 10000;
	run_many(bl, &m);
	assert_string_equal(m.out, "ok");
	assert_int_equal(m.pending, 10000);
	printf("# 10,000 pending timers: %zu bytes of Lua state each (target < 1024)\n",
	       (m.after - m.before) / 10000);
	assert_true(m.after - m.before < (size_t)10000 * 1024);
	assert_int_equal(baton_lua_destroy(bl), BATON_OK);
}

static void test_threads(void **state)
{
	baton_lua_t *bl = make_state(0);
	struct job j = { NULL, "race", 0, 0, 0, "" };
	double took;

	(void)state;
	took = run_all(bl, &j);
	assert_int_equal(j.rc, BATON_OK);
	assert_string_equal(j.out, "true true 5 fast true false stopped: cancelled");
	assert_true(took < 2.0); /* the 5 s loser was cancelled */
	j.fn = "failing";
	run_all(bl, &j);
	assert_int_equal(j.rc, BATON_OK);
	assert_non_null(strstr(j.out, "false "));
	assert_non_null(strstr(j.out, "thread boom"));
	/* A thread left running when its run ends is cancelled with it. */
	j.fn = "orphan";
	took = run_all(bl, &j);
	assert_string_equal(j.out, "left");
	assert_true(took < 2.0);
	assert_int_equal(baton_lua_destroy(bl), BATON_OK);
}

static void test_timer_errors_and_chunk_timers(void **state)
{
	baton_lua_t *bl = make_state(0);
	struct job j = { NULL, "bad_timer", 0, 0, 0, "" };
	struct baton_lua_tasks_attr ta = BATON_LUA_TASKS_ATTR_INIT;
	struct baton_sched_attr a;
	baton_sched_t *s;
	char out[256];

	(void)state;
	errors.calls = 0;
	run_all(bl, &j);
	assert_int_equal(errors.calls, 1);
	assert_non_null(strstr(errors.last, "timer boom"));
	assert_int_equal(baton_lua_destroy(bl), BATON_OK);

	/* From the chunk, outside any run: the given scheduler runs them. */
	assert_int_equal(baton_lua_create(&bl, NULL), BATON_OK);
	baton_sched_attr_init(&a);
	a.workers = 1;
	assert_int_equal(baton_sched_create(&s, &a), BATON_OK);
	ta.sched = s;
	ta.worker = 0;
	assert_int_equal(baton_lua_set_tasks(bl, &ta), BATON_OK);
	assert_int_equal(baton_lua_dostring(bl, src, NULL), BATON_OK);
	assert_int_equal(baton_lua_dostring(bl, "later(10, 'chunk')", NULL), BATON_OK);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
	call_str(bl, "count", out, sizeof(out));
	assert_string_equal(out, "1:chunk");
	assert_int_equal(baton_lua_destroy(bl), BATON_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_after_and_every),
		cmocka_unit_test(test_pending_timers_bound_and_cost),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_timer_errors_and_chunk_timers),
	};

	tc_watchdog(60);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
