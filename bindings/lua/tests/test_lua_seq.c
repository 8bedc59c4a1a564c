/* SPDX-License-Identifier: MIT */
/*
 * The Lua binding under load: 8 threads x 100,000 calls (10,000 under
 * qemu/valgrind) into one lua_State through the sequencer. The Lua function
 * allocates tables and strings and leaves a finalizable object behind, so
 * the collector runs all the time; a sentinel whose finalizer re-creates it
 * counts completed GC cycles. Every result is checked; then the cycle and
 * finalizer counts prove the collector really ran during the calls. Also:
 * types in and out, Lua errors, chunks, files, baton_lua_with.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "check.h"

#include <lauxlib.h>
#include <lua.h>

#include "baton_lua.h"

#define THREADS 8

static const char *work_src =
	"cycles, finalized = 0, 0\n"
	"local function sentinel()\n"
	"  setmetatable({}, {__gc = function() cycles = cycles + 1; sentinel() end})\n"
	"end\n"
	"sentinel()\n"
	"local fin = {__gc = function() finalized = finalized + 1 end}\n"
	"function work(a, b, s)\n"
	"  local t = {}\n"
	"  for i = 1, 8 do t[i] = {a, b, i, tostring(i)} end\n"
	"  local str = s .. ':' .. tostring(a + b) .. string.rep('x', a % 7)\n"
	"  setmetatable({}, fin)\n"
	"  return a * 3 + b + #str + #t\n"
	"end\n"
	"function gcstats() return cycles * 1000000000 + finalized end\n";

struct shared {
	baton_lua_t *bl;
	long calls;
	_Atomic long errors;
};

struct worker {
	struct shared *sh;
	long id;
};

static void *worker(void *arg)
{
	struct worker *w = arg;
	char s[32];

	snprintf(s, sizeof(s), "thread-%ld", w->id);
	for (long i = 0; i < w->sh->calls; i++) {
		struct baton_lua_value args[3] = { BATON_LUA_INT(w->id * 1000000 + i),
						   BATON_LUA_INT(i), BATON_LUA_STR("") };
		struct baton_lua_value res;
		long long a = w->id * 1000000 + i, want;
		char tmp[64];
		int rc;

		args[2].u.s.ptr = s;
		args[2].u.s.len = strlen(s);
		/* #str = len(s) + 1 + digits(a + b) + a % 7 */
		want = a * 3 + i + (long long)strlen(s) + 1 +
			snprintf(tmp, sizeof(tmp), "%lld", a + i) + a % 7 + 8;
		rc = baton_lua_call(w->sh->bl, "work", args, 3, &res);
		if (rc != BATON_OK || res.type != BATON_LUA_INTEGER || res.u.i != want) {
			if (atomic_fetch_add(&w->sh->errors, 1) < 5)
				fprintf(stderr,
					"call %ld/%ld: rc %d type %d value %lld, want %lld\n",
					w->id, i, rc, res.type, res.u.i, want);
		}
		baton_lua_value_clear(&res);
	}
	return NULL;
}

static void test_threads_gc(void **state)
{
	struct shared sh;
	struct worker w[THREADS];
	pthread_t t[THREADS];
	struct baton_lua_value err, res;
	struct baton_seq_stats st;
	long long cycles, finalized;

	(void)state;
	tc_watchdog(240);
	assert_int_equal(baton_lua_create(&sh.bl, NULL), BATON_OK);
	assert_int_equal(baton_lua_dostring(sh.bl, work_src, &err), BATON_OK);
	sh.calls = tc_scale(100000, 10000);
	atomic_init(&sh.errors, 0);
	for (long i = 0; i < THREADS; i++) {
		w[i].sh = &sh;
		w[i].id = i;
		assert_int_equal(pthread_create(&t[i], NULL, worker, &w[i]), 0);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(atomic_load(&sh.errors), 0);

	assert_int_equal(baton_lua_call(sh.bl, "gcstats", NULL, 0, &res), BATON_OK);
	assert_int_equal(res.type, BATON_LUA_INTEGER);
	cycles = res.u.i / 1000000000;
	finalized = res.u.i % 1000000000;
	assert_int_equal(baton_seq_stats(baton_lua_seq(sh.bl), &st), BATON_OK);
	fprintf(stderr,
		"%ld calls: %lld GC cycles, %lld objects finalized; "
		"%llu switches, %llu combined, %llu sleeps\n",
		THREADS * sh.calls, cycles, finalized, (unsigned long long)st.switches,
		(unsigned long long)st.combined, (unsigned long long)st.sleeps);
	assert_true(cycles >= 10);
	assert_true(finalized >= THREADS * sh.calls / 2);
	assert_int_equal(baton_lua_destroy(sh.bl), BATON_OK);
}

static void *top_is_zero(lua_State *L, void *arg)
{
	(void)arg;
	return (void *)(intptr_t)lua_gettop(L);
}

static void test_types_and_errors(void **state)
{
	baton_lua_t *bl;
	struct baton_lua_value err, res;
	struct baton_lua_value args[4] = {
		BATON_LUA_NUM(1.5),
		BATON_LUA_STR("ab"),
		{ BATON_LUA_BOOLEAN, { .b = 1 } },
		{ BATON_LUA_NIL, { 0 } },
	};
	char path[] = "/tmp/baton_lua_testXXXXXX";
	int fd;
	void *top;

	(void)state;
	tc_watchdog(20);
	assert_int_equal(baton_lua_create(NULL, NULL), BATON_EINVAL);
	assert_int_equal(baton_lua_create(&bl, NULL), BATON_OK);
	assert_int_equal(baton_lua_dostring(bl,
					    "function echo(...) return ... end\n"
					    "function desc(n, s, b, z) return "
					    "string.format('%g|%s|%s|%s', n, s, b, z) end\n"
					    "function boom() error('kaput') end\n"
					    "function tbl() return {} end\n",
					    NULL),
			 BATON_OK);
	assert_int_equal(baton_lua_call(bl, "desc", args, 4, &res), BATON_OK);
	assert_int_equal(res.type, BATON_LUA_STRING);
	assert_string_equal(res.u.s.ptr, "1.5|ab|true|nil");
	baton_lua_value_clear(&res);
	assert_int_equal(baton_lua_call(bl, "echo", args, 1, &res), BATON_OK);
	assert_int_equal(res.type, BATON_LUA_NUMBER);
	assert_true(res.u.n == 1.5);
	assert_int_equal(baton_lua_call(bl, "echo", args + 2, 1, &res), BATON_OK);
	assert_int_equal(res.type, BATON_LUA_BOOLEAN);
	assert_int_equal(res.u.b, 1);
	assert_int_equal(baton_lua_call(bl, "echo", NULL, 0, &res), BATON_OK);
	assert_int_equal(res.type, BATON_LUA_NIL);

	assert_int_equal(baton_lua_call(bl, "boom", NULL, 0, &res), BATON_LUA_ERROR);
	assert_int_equal(res.type, BATON_LUA_STRING);
	assert_non_null(strstr(res.u.s.ptr, "kaput"));
	baton_lua_value_clear(&res);
	assert_int_equal(baton_lua_call(bl, "nosuch", NULL, 0, &res), BATON_LUA_ERROR);
	assert_non_null(strstr(res.u.s.ptr, "nosuch"));
	baton_lua_value_clear(&res);
	assert_int_equal(baton_lua_call(bl, "tbl", NULL, 0, &res), BATON_LUA_ERROR);
	assert_non_null(strstr(res.u.s.ptr, "table"));
	baton_lua_value_clear(&res);
	assert_int_equal(baton_lua_dostring(bl, "this is not lua", &err), BATON_LUA_ERROR);
	assert_int_equal(err.type, BATON_LUA_STRING);
	baton_lua_value_clear(&err);
	assert_int_equal(baton_lua_call(NULL, "echo", NULL, 0, &res), BATON_EINVAL);
	assert_int_equal(baton_lua_call(bl, NULL, NULL, 0, &res), BATON_EINVAL);
	assert_int_equal(baton_lua_call(bl, "echo", NULL, 1, &res), BATON_EINVAL);

	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_true(write(fd, "function fromfile() return 7 end\n", 33) == 33);
	close(fd);
	assert_int_equal(baton_lua_dofile(bl, path, NULL), BATON_OK);
	unlink(path);
	assert_int_equal(baton_lua_call(bl, "fromfile", NULL, 0, &res), BATON_OK);
	assert_int_equal(res.u.i, 7);
	assert_int_equal(baton_lua_dofile(bl, "/nonexistent/x.lua", &err), BATON_LUA_ERROR);
	baton_lua_value_clear(&err);

	/* every call left the Lua stack balanced */
	assert_int_equal(baton_lua_with(bl, top_is_zero, NULL, &top), BATON_OK);
	assert_int_equal((intptr_t)top, 0);
	assert_int_equal(baton_lua_destroy(bl), BATON_OK);
	assert_int_equal(baton_lua_destroy(NULL), BATON_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_types_and_errors),
		cmocka_unit_test(test_threads_gc),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
