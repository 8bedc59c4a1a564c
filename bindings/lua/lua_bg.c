/* SPDX-License-Identifier: MIT */
/*
 * bindings/lua/lua_bg.c - background runs of a state (baton_lua.h): the
 * `baton` library's timers (baton.after, baton.every) and threads
 * (baton.spawn, baton.wait_any, baton.wait).
 *
 * Timers. A pending timer is a full userdata (its time, its place in the
 * state's heap; the function and its arguments as user values) anchored in
 * the registry; no task and no stack. One runner task per state, alive
 * while timers are pending, sleeps on a semaphore until the earliest is
 * due (an earlier one added, or closing, wakes it), takes the due ones off
 * the heap in a sequenced call and starts a task for each call: a Lua run
 * (baton_lua_run) of the function with the state's timer limits. The heap
 * is touched only inside sequenced calls (the state's lock orders it).
 *
 * Threads. baton.spawn starts a task that runs the function as a run of its
 * own, with the limits of the run that spawned it, and keeps its results in
 * a table; the thread's record (malloc'd, shared by the task and the Lua
 * handle, freed by the last) lists the tasks waiting for it. wait_any is
 * Lua on top of one C wait (LOP_WAIT_THREADS): until one of the threads
 * has ended, the waiting run's task sleeps on a semaphore each thread posts
 * when it ends. A run's threads are cancelled when it ends.
 *
 * Closing (baton_lua_cancel_tasks): pending timers are dropped, and every
 * background task is told to stop: a flag its run's steps look at, and
 * baton_task_cancel for the waits it may be in. baton_lua_destroy waits
 * for the tasks to end.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lauxlib.h>

#include "lua_internal.h"

#define TIMER_META "baton.timer"
#define THREAD_META "baton.thread"
#define NOT_PENDING SIZE_MAX
#define FIRE_BATCH 64     /* timer calls started per sequenced call */
#define DESTROY_WAIT_S 10 /* baton_lua_destroy waits this long for them */

static const char state_key = 0; /* registry: the struct baton_lua */

struct baton_lua *baton__lua_state_of(lua_State *L)
{
	struct baton_lua *bl;

	lua_rawgetp(L, LUA_REGISTRYINDEX, &state_key);
	bl = lua_touserdata(L, -1);
	lua_pop(L, 1);
	return bl;
}

/* --- background tasks ------------------------------------------------------ */

int baton__lua_bg_init(struct baton_lua *bl)
{
	static const struct baton_lua_tasks_attr defaults = BATON_LUA_TASKS_ATTR_INIT;

	bl->bg.a = defaults;
	if (pthread_mutex_init(&bl->bg.lock, NULL) != 0)
		return BATON_ENOMEM;
	if (pthread_cond_init(&bl->bg.ended, NULL) != 0) {
		pthread_mutex_destroy(&bl->bg.lock);
		return BATON_ENOMEM;
	}
	if (baton_sem_create(&bl->bg.wake, 0) != BATON_OK) {
		pthread_cond_destroy(&bl->bg.ended);
		pthread_mutex_destroy(&bl->bg.lock);
		return BATON_ENOMEM;
	}
	return BATON_OK;
}

void baton__lua_bg_destroy(struct baton_lua *bl)
{
	free(bl->bg.heap);
	baton_sem_destroy(bl->bg.wake);
	pthread_cond_destroy(&bl->bg.ended);
	pthread_mutex_destroy(&bl->bg.lock);
}

/* Count a task to be spawned; false when closing. */
static bool bg_count(struct baton_lua *bl, bool thread)
{
	bool ok;

	pthread_mutex_lock(&bl->bg.lock);
	ok = !(thread ? bl->bg.closing_all : bl->bg.closing);
	if (ok)
		bl->bg.ntasks++;
	pthread_mutex_unlock(&bl->bg.lock);
	return ok;
}

static void bg_uncount(struct baton_lua *bl)
{
	pthread_mutex_lock(&bl->bg.lock);
	if (--bl->bg.ntasks == 0)
		pthread_cond_broadcast(&bl->bg.ended);
	pthread_mutex_unlock(&bl->bg.lock);
}

/* Start fn(arg) as a background task, bound to the worker of the caller
 * (or the attributes'). It was counted (bg_count); uncounted on failure. */
static int bg_spawn(struct baton_lua *bl, baton_task_fn fn, void *arg)
{
	struct baton_task_attr ta;
	baton_sched_t *s = baton_sched_self();
	int w = baton_sched_worker_index(), rc;

	baton_task_attr_init(&ta);
	if (s == NULL) {
		s = bl->bg.a.sched;
		w = bl->bg.a.worker;
	}
	ta.worker = w >= 0 ? w : BATON_SCHED_ANY_WORKER;
	ta.flags = w >= 0 ? BATON_TASK_BOUND : 0;
	rc = s ? baton_sched_spawn(s, &ta, fn, arg) : BATON_ENOSCHED;
	if (rc != BATON_OK)
		bg_uncount(bl);
	return rc;
}

/* In the task, first thing: listed (cancellable) until bg_end. */
static void bg_begin(struct baton_lua *bl, struct bg_link *l, bool thread)
{
	l->task = baton_task_handle();
	l->thread = thread;
	pthread_mutex_lock(&bl->bg.lock);
	if (thread ? bl->bg.closing_all : bl->bg.closing)
		__atomic_store_n(&l->cancelled, true, __ATOMIC_RELEASE);
	l->next = bl->bg.live;
	l->prev = &bl->bg.live;
	if (l->next)
		l->next->prev = &l->next;
	bl->bg.live = l;
	pthread_mutex_unlock(&bl->bg.lock);
}

/* In the task, last thing: it is not listed and not counted any more. */
static void bg_end(struct baton_lua *bl, struct bg_link *l)
{
	pthread_mutex_lock(&bl->bg.lock);
	*l->prev = l->next;
	if (l->next)
		l->next->prev = l->prev;
	if (--bl->bg.ntasks == 0)
		pthread_cond_broadcast(&bl->bg.ended);
	pthread_mutex_unlock(&bl->bg.lock);
}

/* --- the timer heap (on the stack) ------------------------------------------ */

struct lua_timer {
	int64_t due, period; /* period 0: once */
	size_t pos;          /* in the heap, or NOT_PENDING */
	int ref;             /* anchors the userdata while pending or firing */
	int nargs;
	bool firing;    /* a call is started (its task spawned) */
	bool cancelled; /* no call begins any more */
	struct baton_lua *bl;
};

static void heap_set(struct baton_lua_bg *bg, size_t i, struct lua_timer *tm)
{
	bg->heap[i] = tm;
	tm->pos = i;
}

static void heap_up(struct baton_lua_bg *bg, size_t i)
{
	struct lua_timer *tm = bg->heap[i];

	while (i > 0 && bg->heap[(i - 1) / 2]->due > tm->due) {
		heap_set(bg, i, bg->heap[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	heap_set(bg, i, tm);
}

static void heap_down(struct baton_lua_bg *bg, size_t i)
{
	struct lua_timer *tm = bg->heap[i];

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= bg->n)
			break;
		if (c + 1 < bg->n && bg->heap[c + 1]->due < bg->heap[c]->due)
			c++;
		if (bg->heap[c]->due >= tm->due)
			break;
		heap_set(bg, i, bg->heap[c]);
		i = c;
	}
	heap_set(bg, i, tm);
}

static bool heap_push(struct baton_lua_bg *bg, struct lua_timer *tm)
{
	if (bg->n == bg->cap) {
		size_t cap = bg->cap ? bg->cap * 2 : 64;
		struct lua_timer **h = realloc(bg->heap, cap * sizeof(*h));

		if (h == NULL)
			return false;
		bg->heap = h;
		bg->cap = cap;
	}
	bg->heap[bg->n] = tm;
	tm->pos = bg->n++;
	heap_up(bg, tm->pos);
	return true;
}

static void heap_remove(struct baton_lua_bg *bg, struct lua_timer *tm)
{
	size_t i = tm->pos;

	tm->pos = NOT_PENDING;
	if (--bg->n == i)
		return;
	heap_set(bg, i, bg->heap[bg->n]);
	if (i > 0 && bg->heap[(i - 1) / 2]->due > bg->heap[i]->due)
		heap_up(bg, i);
	else
		heap_down(bg, i);
}

/* Let go of a timer that is neither pending nor firing. */
static void timer_release(lua_State *L, struct lua_timer *tm)
{
	if (tm->pos == NOT_PENDING && !tm->firing && tm->ref != LUA_NOREF) {
		luaL_unref(L, LUA_REGISTRYINDEX, tm->ref);
		tm->ref = LUA_NOREF;
	}
}

/* Drop every pending timer (closing). */
static void timers_clear(lua_State *L, struct baton_lua_bg *bg)
{
	while (bg->n > 0) {
		struct lua_timer *tm = bg->heap[bg->n - 1];

		heap_remove(bg, tm);
		tm->cancelled = true;
		timer_release(L, tm);
	}
}

/* --- the runner and the calls ------------------------------------------------ */

struct pop {
	struct baton_lua *bl;
	struct lua_timer *fire[FIRE_BATCH];
	unsigned nfire;
	int64_t next; /* the earliest due time left */
	bool done;    /* no timer left: the runner ends */
};

/* On the stack: the due timers off the heap (an `every` goes back with its
 * next time, and skips a call while its last one still runs). */
static void *pop_due(void *arg)
{
	struct pop *p = arg;
	struct baton_lua_bg *bg = &p->bl->bg;
	int64_t now = baton__lua_now();

	if (__atomic_load_n(&bg->closing, __ATOMIC_ACQUIRE))
		timers_clear(p->bl->L, bg);
	while (bg->n > 0 && bg->heap[0]->due <= now && p->nfire < FIRE_BATCH) {
		struct lua_timer *tm = bg->heap[0];

		heap_remove(bg, tm);
		if (tm->period > 0) {
			tm->due += tm->period;
			if (tm->due <= now)
				tm->due = now + tm->period;
			heap_push(bg, tm); /* cannot fail: it was just removed */
			if (tm->firing)
				continue;
		}
		tm->firing = true;
		p->fire[p->nfire++] = tm;
	}
	p->done = bg->n == 0;
	if (p->done)
		bg->runner = false; /* the next timer starts another */
	else
		p->next = bg->heap[0]->due;
	return NULL;
}

/* On the stack: a call has ended (or could not start). */
static void *fire_done(void *arg)
{
	struct lua_timer *tm = arg;

	tm->firing = false;
	timer_release(tm->bl->L, tm);
	return NULL;
}

static int nothing(lua_State *L)
{
	(void)L;
	return 0;
}

static int fire_start(lua_State *L, void *arg)
{
	struct lua_timer *tm = arg;
	int ud;

	if (tm->cancelled) { /* after its task was started: no call */
		lua_pushcfunction(L, nothing);
		return 0;
	}
	lua_rawgeti(L, LUA_REGISTRYINDEX, tm->ref);
	ud = lua_gettop(L);
	for (int i = 1; i <= tm->nargs + 1; i++)
		lua_getiuservalue(L, ud, i);
	lua_remove(L, ud);
	return tm->nargs;
}

static int fire_finish(lua_State *L, int base, int n, void *arg)
{
	(void)L;
	(void)base;
	(void)n;
	(void)arg;
	return 0;
}

static void fire_task(void *arg)
{
	struct lua_timer *tm = arg;
	struct baton_lua *bl = tm->bl;
	struct bg_link link = { NULL, NULL, NULL, false, false };
	struct baton_lua_value err = { BATON_LUA_NIL, { 0 } };
	struct baton_lua_run r = { fire_start,
				   fire_finish,
				   NULL,
				   NULL,
				   tm,
				   bl->bg.a.slice_ns,
				   0,
				   bl->bg.a.cpu_ns,
				   (bl->flags & BATON_LUA_ACCOUNT) ? bl->bg.a.mem_bytes : 0,
				   NULL };
	int rc;

	bg_begin(bl, &link, false);
	rc = baton__lua_run(bl, &r, &err, &link.cancelled);
	if (rc != BATON_OK && !link.cancelled && bl->bg.a.error) {
		bl->bg.a.error(bl->bg.a.error_arg,
			       err.type == BATON_LUA_STRING ? err.u.s.ptr : baton_strerror(rc));
	}
	baton_lua_value_clear(&err);
	(void)baton_seq_call(bl->seq, fire_done, tm, NULL);
	bg_end(bl, &link);
}

static void runner_task(void *arg)
{
	struct baton_lua *bl = arg;
	struct bg_link link = { NULL, NULL, NULL, false, false };
	struct pop p;

	bg_begin(bl, &link, false);
	for (;;) {
		memset(&p, 0, sizeof(p));
		p.bl = bl;
		if (baton_seq_call(bl->seq, pop_due, &p, NULL) != BATON_OK)
			break; /* not reached: the runner is a task, never on the stack */
		for (unsigned i = 0; i < p.nfire; i++) {
			if (!bg_count(bl, false) || bg_spawn(bl, fire_task, p.fire[i]) != BATON_OK)
				(void)baton_seq_call(bl->seq, fire_done, p.fire[i], NULL);
		}
		if (p.done)
			break;
		if (p.nfire == FIRE_BATCH)
			continue; /* more are due */
		/* Until the next is due; woken early by an earlier one or by
		 * closing (a cancelled wait returns at once: pop_due then
		 * clears the heap and the runner ends). */
		if (p.next > baton__lua_now())
			(void)baton_sem_acquire(bl->bg.wake, 1, p.next - baton__lua_now());
	}
	bg_end(bl, &link);
}

/* --- baton.after, baton.every, timer:cancel() --------------------------------- */

static int add_timer(lua_State *L, bool every)
{
	struct baton_lua *bl = baton__lua_state_of(L);
	struct baton_lua_bg *bg = &bl->bg;
	lua_Number ms = luaL_checknumber(L, 1);
	size_t max = bg->a.max_timers ? bg->a.max_timers : BATON_LUA_MAX_TIMERS_DEFAULT;
	int nargs = lua_gettop(L) - 2, ud;
	struct lua_timer *tm;

	luaL_argcheck(L, ms >= (every ? 1 : 0) && ms <= 86400000.0 * 365, 1,
		      every ? "milliseconds out of range (1 and up)" : "milliseconds out of range");
	luaL_checktype(L, 2, LUA_TFUNCTION);
	if (__atomic_load_n(&bg->closing, __ATOMIC_ACQUIRE)) {
		lua_pushnil(L);
		lua_pushliteral(L, "closing: timers are cancelled (shutdown or reload)");
		return 2;
	}
	if (bg->n >= max) {
		lua_pushnil(L);
		lua_pushfstring(L, "too many pending timers (at most %I)", (lua_Integer)max);
		return 2;
	}
	tm = lua_newuserdatauv(L, sizeof(*tm), nargs + 1);
	ud = lua_gettop(L);
	memset(tm, 0, sizeof(*tm));
	tm->pos = NOT_PENDING;
	tm->ref = LUA_NOREF;
	tm->nargs = nargs;
	tm->bl = bl;
	luaL_setmetatable(L, TIMER_META);
	for (int i = 2; i < ud; i++) { /* the function, then its arguments */
		lua_pushvalue(L, i);
		lua_setiuservalue(L, ud, i - 1);
	}
	tm->due = baton__lua_now() + (int64_t)(ms * 1e6);
	tm->period = every ? (int64_t)(ms * 1e6) : 0;
	lua_pushvalue(L, ud);
	tm->ref = luaL_ref(L, LUA_REGISTRYINDEX);
	if (!heap_push(bg, tm)) {
		timer_release(L, tm);
		return luaL_error(L, "not enough memory");
	}
	if (!bg->runner) {
		if (!bg_count(bl, false) || bg_spawn(bl, runner_task, bl) != BATON_OK) {
			heap_remove(bg, tm);
			timer_release(L, tm);
			lua_pushnil(L);
			lua_pushliteral(L, "no task can run the timer (outside a scheduler)");
			return 2;
		}
		bg->runner = true;
	} else if (tm->pos == 0) {
		baton_sem_release(bg->wake, 1); /* earlier than the runner sleeps for */
	}
	lua_settop(L, ud);
	return 1;
}

static int l_after(lua_State *L)
{
	return add_timer(L, false);
}

static int l_every(lua_State *L)
{
	return add_timer(L, true);
}

/* true if the timer was pending (it will not fire); false if it had fired
 * or was cancelled. No call begins after it; one that has begun goes on. */
static int l_timer_cancel(lua_State *L)
{
	struct lua_timer *tm = luaL_checkudata(L, 1, TIMER_META);
	bool pending = tm->pos != NOT_PENDING;

	if (pending)
		heap_remove(&tm->bl->bg, tm);
	tm->cancelled = true;
	timer_release(L, tm);
	lua_pushboolean(L, pending);
	return 1;
}

static int l_timer_pending(lua_State *L)
{
	struct lua_timer *tm = luaL_checkudata(L, 1, TIMER_META);

	lua_pushboolean(L, tm->pos != NOT_PENDING);
	return 1;
}

/* --- threads ----------------------------------------------------------------- */

enum { THR_RUNNING, THR_DONE };

struct thr_waiter {
	struct thr_waiter *next, **prev;
	baton_sem_t *sem;
};

struct lua_thread {
	pthread_mutex_t lock; /* state, waiters, link.task, refs */
	int refs;             /* the task and the handle */
	int state;
	bool ok;
	bool orphan; /* its handle was collected: keep no results */
	int fn_ref;  /* registry: { fn, args... } until it starts */
	int res_ref; /* registry: { n = N, ... } once it ended */
	struct thr_waiter *waiters;
	struct bg_link link;
	bool started; /* link is listed */
	struct baton_lua *bl;
	struct baton_lua_run r; /* its limits (the spawning run's) */
	int nargs;
};

static void thread_unref(struct lua_thread *th)
{
	int left;

	pthread_mutex_lock(&th->lock);
	left = --th->refs;
	pthread_mutex_unlock(&th->lock);
	if (left == 0) {
		pthread_mutex_destroy(&th->lock);
		free(th);
	}
}

static int thr_start(lua_State *L, void *arg)
{
	struct lua_thread *th = arg;
	int t;

	lua_rawgeti(L, LUA_REGISTRYINDEX, th->fn_ref);
	t = lua_gettop(L);
	for (int i = 1; i <= th->nargs + 1; i++)
		lua_rawgeti(L, t, i);
	lua_remove(L, t);
	luaL_unref(L, LUA_REGISTRYINDEX, th->fn_ref);
	th->fn_ref = LUA_NOREF;
	return th->nargs;
}

/* Its results, in a table { n = N, ... } (unless nobody can read them). */
static int thr_finish(lua_State *L, int base, int n, void *arg)
{
	struct lua_thread *th = arg;

	if (th->orphan)
		return 0;
	lua_createtable(L, n, 1);
	for (int i = 0; i < n; i++) {
		lua_pushvalue(L, base + i);
		lua_rawseti(L, -2, i + 1);
	}
	lua_pushinteger(L, n);
	lua_setfield(L, -2, "n");
	th->res_ref = luaL_ref(L, LUA_REGISTRYINDEX);
	th->ok = true;
	return 0;
}

struct thr_fail {
	struct lua_thread *th;
	const char *msg;
	size_t len;
};

/* On the stack: a failed thread's result is { n = 1, message }; what it
 * left unused goes. */
static void *thr_failed(lua_State *L, void *arg)
{
	struct thr_fail *f = arg;
	struct lua_thread *th = f->th;

	if (th->fn_ref != LUA_NOREF) {
		luaL_unref(L, LUA_REGISTRYINDEX, th->fn_ref);
		th->fn_ref = LUA_NOREF;
	}
	if (th->orphan || !lua_checkstack(L, 3))
		return NULL;
	lua_createtable(L, 1, 1);
	lua_pushlstring(L, f->msg, f->len);
	lua_rawseti(L, -2, 1);
	lua_pushinteger(L, 1);
	lua_setfield(L, -2, "n");
	th->res_ref = luaL_ref(L, LUA_REGISTRYINDEX);
	th->ok = false;
	return NULL;
}

static void thread_task(void *arg)
{
	struct lua_thread *th = arg;
	struct baton_lua *bl = th->bl;
	struct baton_lua_value err = { BATON_LUA_NIL, { 0 } };
	int rc;

	pthread_mutex_lock(&th->lock);
	th->link.task = baton_task_handle(); /* thread_cancel may cancel it now */
	th->started = true;
	pthread_mutex_unlock(&th->lock);
	bg_begin(bl, &th->link, true);
	if (__atomic_load_n(&th->link.cancelled, __ATOMIC_ACQUIRE))
		rc = BATON_ECANCELED;
	else
		rc = baton__lua_run(bl, &th->r, &err, &th->link.cancelled);
	if (rc != BATON_OK) {
		struct thr_fail f = { th, NULL, 0 };

		if (err.type == BATON_LUA_STRING) {
			f.msg = err.u.s.ptr;
			f.len = err.u.s.len;
		} else {
			f.msg = rc == BATON_ECANCELED ? "cancelled" : baton_strerror(rc);
			f.len = strlen(f.msg);
		}
		(void)baton_lua_with(bl, thr_failed, &f, NULL);
	}
	baton_lua_value_clear(&err);
	pthread_mutex_lock(&th->lock);
	th->state = THR_DONE;
	for (struct thr_waiter *w = th->waiters; w; w = w->next)
		baton_sem_release(w->sem, 1);
	pthread_mutex_unlock(&th->lock);
	bg_end(bl, &th->link);
	thread_unref(th);
}

static struct lua_thread *check_thread(lua_State *L, int i)
{
	struct lua_thread **p = luaL_checkudata(L, i, THREAD_META);

	if (*p == NULL)
		luaL_argerror(L, i, "a closed thread");
	return *p;
}

/* baton.spawn(fn, ...): a thread of the calling run. */
static int l_spawn(lua_State *L)
{
	struct baton_lua *bl = baton__lua_state_of(L);
	struct baton_lua_task *t = baton__lua_task_of(L);
	int nargs = lua_gettop(L) - 1;
	struct lua_thread *th, **ud;

	luaL_checktype(L, 1, LUA_TFUNCTION);
	if (t == NULL)
		return luaL_error(L,
				  "baton.spawn: only in a task's own coroutine (a baton_lua_run, "
				  "such as a baton-httpd handler)");
	/* The function and its arguments, kept until the thread starts. */
	lua_createtable(L, nargs + 1, 0);
	lua_insert(L, 1);
	for (int i = nargs + 1; i >= 1; i--)
		lua_rawseti(L, 1, i);
	ud = lua_newuserdatauv(L, sizeof(*ud), 0);
	*ud = NULL;
	luaL_setmetatable(L, THREAD_META);
	th = calloc(1, sizeof(*th));
	if (th == NULL || pthread_mutex_init(&th->lock, NULL) != 0) {
		free(th);
		return luaL_error(L, "not enough memory");
	}
	th->refs = 2;
	th->bl = bl;
	th->nargs = nargs;
	th->res_ref = LUA_NOREF;
	th->r = *t->r;
	th->r.start = thr_start;
	th->r.finish = thr_finish;
	th->r.resume = NULL;
	th->r.done = NULL;
	th->r.arg = th;
	th->r.usage = NULL;
	lua_pushvalue(L, 1);
	th->fn_ref = luaL_ref(L, LUA_REGISTRYINDEX);
	*ud = th;
	/* Listed in the run, which cancels it when it ends. */
	baton__lua_run_list(L, &t->threads_ref);
	if (!bg_count(bl, true) || bg_spawn(bl, thread_task, th) != BATON_OK) {
		luaL_unref(L, LUA_REGISTRYINDEX, th->fn_ref);
		th->fn_ref = LUA_NOREF;
		th->state = THR_DONE; /* never started: done, failed */
		th->refs = 1;
		lua_pushnil(L);
		lua_pushliteral(L, "closing: no new threads (shutdown or reload)");
		return 2;
	}
	return 1;
}

/* Stop it at its next slice or wait; true if it was running. On the stack. */
static bool thread_cancel(struct lua_thread *th)
{
	bool running;

	pthread_mutex_lock(&th->lock);
	running = th->state == THR_RUNNING;
	if (running) {
		/* Read by its run's steps; its waits return BATON_ECANCELED. */
		__atomic_store_n(&th->link.cancelled, true, __ATOMIC_RELEASE);
		if (th->started && th->link.task)
			baton_task_cancel(th->link.task);
	}
	pthread_mutex_unlock(&th->lock);
	return running;
}

static int l_thread_cancel(lua_State *L)
{
	lua_pushboolean(L, thread_cancel(check_thread(L, 1)));
	return 1;
}

static int l_thread_done(lua_State *L)
{
	struct lua_thread *th = check_thread(L, 1);
	bool done;

	pthread_mutex_lock(&th->lock);
	done = th->state == THR_DONE;
	pthread_mutex_unlock(&th->lock);
	lua_pushboolean(L, done);
	return 1;
}

/* ok, what it returned; or false and its error. */
static int l_thread_result(lua_State *L)
{
	struct lua_thread *th = check_thread(L, 1);
	int n;

	pthread_mutex_lock(&th->lock);
	n = th->state == THR_DONE;
	pthread_mutex_unlock(&th->lock);
	if (!n)
		return luaL_error(L, "the thread has not ended (baton.wait it first)");
	lua_settop(L, 1);
	lua_pushboolean(L, th->ok);
	if (th->res_ref == LUA_NOREF)
		return 1;
	lua_rawgeti(L, LUA_REGISTRYINDEX, th->res_ref);
	lua_getfield(L, 3, "n");
	n = (int)lua_tointeger(L, -1);
	lua_pop(L, 1);
	luaL_checkstack(L, n, "too many results");
	for (int i = 1; i <= n; i++)
		lua_rawgeti(L, 3, i);
	lua_remove(L, 3);
	return n + 1;
}

static int l_thread_gc(lua_State *L)
{
	struct lua_thread **p = luaL_checkudata(L, 1, THREAD_META);
	struct lua_thread *th = *p;

	if (th == NULL)
		return 0;
	*p = NULL;
	th->orphan = true; /* on the stack, as its finish: ordered */
	if (th->res_ref != LUA_NOREF) {
		luaL_unref(L, LUA_REGISTRYINDEX, th->res_ref);
		th->res_ref = LUA_NOREF;
	}
	thread_cancel(th); /* nobody can wait for it any more */
	thread_unref(th);
	return 0;
}

static int l_thread_tostring(lua_State *L)
{
	struct lua_thread *th = check_thread(L, 1);

	lua_pushfstring(L, "baton.thread (%s)", th->state == THR_DONE ? "done" : "running");
	return 1;
}

/* baton._wait_threads(list): yields until one of them has ended (the Lua
 * side of wait_any looks at them again then). */
static int l_wait_threads(lua_State *L)
{
	struct baton_lua_task *t = baton__lua_task_of(L);
	lua_Integer n;
	struct lua_thread **arr;

	luaL_checktype(L, 1, LUA_TTABLE);
	n = (lua_Integer)lua_rawlen(L, 1);
	luaL_argcheck(L, n > 0 && n <= 100000, 1, "1 to 100000 threads");
	if (t == NULL)
		return luaL_error(
			L,
			"baton.wait_any: only in a task's own coroutine (a baton_lua_run, "
			"such as a baton-httpd handler)");
	if (!lua_isyieldable(L))
		return luaL_error(L,
				  "baton.wait_any: cannot wait inside a C call (a sort comparator, "
				  "a gsub function, a metamethod called from C)");
	/* The array stays on this coroutine's stack while it waits. */
	arr = lua_newuserdatauv(L, (size_t)n * sizeof(*arr), 0);
	for (lua_Integer i = 1; i <= n; i++) {
		lua_rawgeti(L, 1, i);
		arr[i - 1] = check_thread(L, lua_gettop(L));
		lua_pop(L, 1);
	}
	memset(&t->op, 0, sizeof(t->op));
	t->op.kind = LOP_WAIT_THREADS;
	t->op.data = (const char *)arr;
	t->op.len = (size_t)n;
	return lua_yield(L, 0);
}

/* In the waiting run's task, outside the sequencer. */
void baton__lua_wait_threads(struct baton_lua_op *op)
{
	struct lua_thread **arr = (struct lua_thread **)op->data;
	size_t n = op->len;
	struct thr_waiter *w = calloc(n, sizeof(*w));
	baton_sem_t *sem = NULL;
	bool ended = false;

	if (w == NULL || baton_sem_create(&sem, 0) != BATON_OK) {
		free(w);
		op->rc = BATON_ENOMEM;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		struct lua_thread *th = arr[i];

		w[i].sem = sem;
		pthread_mutex_lock(&th->lock);
		if (th->state == THR_DONE) {
			ended = true;
		} else {
			w[i].next = th->waiters;
			w[i].prev = &th->waiters;
			if (w[i].next)
				w[i].next->prev = &w[i].next;
			th->waiters = &w[i];
		}
		pthread_mutex_unlock(&th->lock);
		if (ended)
			break;
	}
	op->rc = BATON_OK;
	if (!ended)
		op->rc = baton_sem_acquire(sem, 1, -1); /* BATON_ECANCELED: stopped */
	for (size_t i = 0; i < n; i++) {
		struct lua_thread *th = arr[i];

		pthread_mutex_lock(&th->lock);
		if (w[i].prev) {
			*w[i].prev = w[i].next;
			if (w[i].next)
				w[i].next->prev = w[i].prev;
		}
		pthread_mutex_unlock(&th->lock);
	}
	baton_sem_destroy(sem);
	free(w);
}

/* On the stack, at a run's end: stop the threads it spawned. */
void baton__lua_cancel_threads(lua_State *L, int threads_ref)
{
	lua_rawgeti(L, LUA_REGISTRYINDEX, threads_ref);
	lua_pushnil(L);
	while (lua_next(L, -2) != 0) {
		struct lua_thread **p = lua_touserdata(L, -2);

		if (p != NULL && *p != NULL)
			thread_cancel(*p);
		lua_pop(L, 1);
	}
	lua_pop(L, 1);
	luaL_unref(L, LUA_REGISTRYINDEX, threads_ref);
}

/* --- wait_any, in Lua over the wait -------------------------------------------- */

static const char waits[] =
	"local baton, wait_threads = ...\n"
	"local function list_of(...)\n"
	"  local first = ...\n"
	"  if select('#', ...) == 1 and type(first) == 'table' then return first end\n"
	"  return { ... }\n"
	"end\n"
	"function baton.wait_any(...)\n"
	"  local list = list_of(...)\n"
	"  if #list == 0 then error('baton.wait_any: no threads to wait for', 2) end\n"
	"  while true do\n"
	"    for _, th in ipairs(list) do\n"
	"      if th:done() then return th, th:result() end\n"
	"    end\n"
	"    local ok, err = wait_threads(list)\n"
	"    if not ok then error('baton.wait_any: ' .. err, 2) end\n"
	"  end\n"
	"end\n"
	"function baton.wait(th)\n"
	"  return select(2, baton.wait_any(th))\n"
	"end\n";

void baton__lua_open_bg(lua_State *L, struct baton_lua *bl)
{
	static const luaL_Reg timer[] = {
		{ "cancel", l_timer_cancel },
		{ "pending", l_timer_pending },
		{ NULL, NULL },
	};
	static const luaL_Reg thread[] = {
		{ "cancel", l_thread_cancel },
		{ "done", l_thread_done },
		{ "result", l_thread_result },
		{ NULL, NULL },
	};
	int lib = lua_gettop(L);

	lua_pushlightuserdata(L, bl);
	lua_rawsetp(L, LUA_REGISTRYINDEX, &state_key);
	luaL_newmetatable(L, TIMER_META);
	luaL_newlib(L, timer);
	lua_setfield(L, -2, "__index");
	lua_pop(L, 1);
	luaL_newmetatable(L, THREAD_META);
	luaL_newlib(L, thread);
	lua_setfield(L, -2, "__index");
	lua_pushcfunction(L, l_thread_gc);
	lua_setfield(L, -2, "__gc");
	lua_pushcfunction(L, l_thread_tostring);
	lua_setfield(L, -2, "__tostring");
	lua_pop(L, 1);
	lua_pushcfunction(L, l_after);
	lua_setfield(L, lib, "after");
	lua_pushcfunction(L, l_every);
	lua_setfield(L, lib, "every");
	lua_pushcfunction(L, l_spawn);
	lua_setfield(L, lib, "spawn");
	if (luaL_loadbuffer(L, waits, sizeof(waits) - 1, "=baton.wait") != LUA_OK)
		lua_error(L);
	lua_pushvalue(L, lib);
	lua_pushcfunction(L, l_wait_threads);
	lua_call(L, 2, 0);
}

/* --- the embedder's side -------------------------------------------------------- */

int baton_lua_set_tasks(baton_lua_t *bl, const struct baton_lua_tasks_attr *a)
{
	if (bl == NULL || a == NULL || (a->worker < 0 && a->worker != BATON_SCHED_ANY_WORKER))
		return BATON_EINVAL;
	pthread_mutex_lock(&bl->bg.lock);
	bl->bg.a = *a;
	pthread_mutex_unlock(&bl->bg.lock);
	return BATON_OK;
}

static void *clear_on_stack(void *arg)
{
	struct baton_lua *bl = arg;

	timers_clear(bl->L, &bl->bg);
	return NULL;
}

int baton_lua_cancel_tasks(baton_lua_t *bl, int threads)
{
	if (bl == NULL)
		return BATON_EINVAL;
	pthread_mutex_lock(&bl->bg.lock);
	__atomic_store_n(&bl->bg.closing, true, __ATOMIC_RELEASE);
	if (threads)
		bl->bg.closing_all = true;
	for (struct bg_link *l = bl->bg.live; l; l = l->next) {
		if (l->thread && !threads)
			continue;
		__atomic_store_n(&l->cancelled, true, __ATOMIC_RELEASE);
		if (l->task)
			baton_task_cancel(l->task);
	}
	pthread_mutex_unlock(&bl->bg.lock);
	baton_sem_release(bl->bg.wake, 1);
	return baton_seq_call(bl->seq, clear_on_stack, bl, NULL);
}

size_t baton_lua_timers(const baton_lua_t *bl)
{
	return bl ? __atomic_load_n(&bl->bg.n, __ATOMIC_RELAXED) : 0;
}

/* baton_lua_destroy's wait: every background task ended, or false. */
bool baton__lua_bg_quiet(struct baton_lua *bl)
{
	struct timespec until;
	bool quiet;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += DESTROY_WAIT_S;
	pthread_mutex_lock(&bl->bg.lock);
	while (bl->bg.ntasks > 0 &&
	       pthread_cond_timedwait(&bl->bg.ended, &bl->bg.lock, &until) != ETIMEDOUT)
		;
	quiet = bl->bg.ntasks == 0;
	pthread_mutex_unlock(&bl->bg.lock);
	return quiet;
}
