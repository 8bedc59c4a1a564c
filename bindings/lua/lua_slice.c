/* SPDX-License-Identifier: MIT */
/*
 * bindings/lua/lua_slice.c - ending a Lua task's slice on time, at no cost
 * while it runs.
 *
 * Lua 5.4 calls luaG_traceexec on every VM instruction while any hook is
 * set on the running coroutine, which makes a loop about twice as slow
 * whatever the hook's count. So no hook is set while a slice runs. Each
 * thread that runs slices has a POSIX timer that sends this thread a
 * signal (SIGEV_THREAD_ID) when the slice is due to end; the signal
 * handler arms a count-1 hook on the coroutine running now, and that hook
 * clears itself and yields. This is lua.c's laction (SIGINT sets a hook
 * that raises "interrupted!"), which ldebug.c documents as safe from a
 * signal: lua_sethook is the one Lua call that may be made there. The
 * handler runs on the thread it interrupts, so the Lua state it touches is
 * never changed by another thread meanwhile.
 *
 * What a slice costs: two clock reads (vDSO) and a few stores at its
 * start and end. The timer is left armed when a slice ends early; when it
 * fires with no slice running, or one that is not due yet, the handler
 * does nothing or re-arms it for the due time, so a stream of short slices
 * costs one timer_settime and at most one signal per slice length, not per
 * slice.
 *
 * Where the coroutine cannot yield (inside a C function that called back
 * into Lua, such as table.sort's comparator, or in a coroutine the task
 * resumed itself) the hook stays armed with a larger count and yields at
 * the first point where it can; a run that is past its deadline or its
 * CPU budget there is stopped with a Lua error instead. The timer keeps
 * firing every slice length while the slice overruns, and each time the
 * handler hooks whatever coroutine runs then, so no race between a hook
 * and a coroutine switch can leave a slice without an end.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

#include <lauxlib.h>

#include "lua_internal.h"

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

/* How many VM instructions the hook waits between two looks once the
 * slice is over but the coroutine could not yield. */
#define DEFER_COUNT 1000

/* A timer that fires this little before the slice is due ends it anyway,
 * rather than costing a second signal a moment later (the timer is often
 * left armed for a time just before the next slice's end: a recheck set
 * after the last slice's hook). */
#define EARLY_NS 50000

/* This thread's slice: what the signal handler may touch. Written by the
 * thread itself, read by its own signal handler: volatile and signal
 * fences order them. */
struct slice_clock {
	lua_State *volatile running;          /* the coroutine running now, or NULL */
	struct baton_lua_task *volatile task; /* the run whose slice it is */
	volatile int64_t end;                 /* CLOCK_MONOTONIC ns: the slice is due */
	volatile int64_t period;              /* how often to look again once overrun */
	volatile int64_t start;               /* when the slice began */
	volatile sig_atomic_t over;           /* the handler found it due */
	volatile int64_t armed_for;           /* the timer fires then; 0: not armed */
	timer_t timer;
	int have_timer; /* 1: made; -1: could not be */
};

static __thread struct slice_clock clock_tls;
static __thread unsigned long thread_steps;

unsigned long baton__lua_thread_steps(void)
{
	return thread_steps;
}

static pthread_once_t setup_once = PTHREAD_ONCE_INIT;
static pthread_key_t timer_key;
static int slice_signal; /* 0: slices are not preempted (no signal free) */

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t baton__lua_now(void)
{
	return mono_ns();
}

/* In the thread or its signal handler (timer_settime is async-signal-safe). */
static void arm(struct slice_clock *c, int64_t when)
{
	struct itimerspec its;

	memset(&its, 0, sizeof(its));
	if (when <= 0)
		when = 1;
	its.it_value.tv_sec = when / 1000000000LL;
	its.it_value.tv_nsec = when % 1000000000LL;
	c->armed_for = when;
	if (timer_settime(c->timer, TIMER_ABSTIME, &its, NULL) != 0)
		c->armed_for = 0;
}

static void preempt_hook(lua_State *L, lua_Debug *ar);

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	struct slice_clock *c = &clock_tls;
	int saved = errno;
	lua_State *co;
	int64_t now;

	(void)sig;
	(void)si;
	(void)uc;
	c->armed_for = 0;
	co = c->running;
	if (co != NULL && c->have_timer == 1) {
		now = mono_ns();
		if (now + EARLY_NS >= c->end) {
			c->over = 1;
			lua_sethook(co, preempt_hook, LUA_MASKCOUNT, 1);
			arm(c, now + c->period); /* in case it cannot end here */
		} else {
			arm(c, c->end);
		}
	}
	errno = saved;
}

static void delete_timer(void *arg)
{
	struct slice_clock *c = arg;

	if (c != NULL && c->have_timer == 1) {
		c->running = NULL;
		timer_delete(c->timer);
		c->have_timer = 0;
	}
}

/* A real-time signal nobody else handles, and our handler on it. */
static void setup(void)
{
	struct sigaction sa, old;

	(void)pthread_key_create(&timer_key, delete_timer);
	for (int sig = SIGRTMIN + 6; sig < SIGRTMAX; sig++) {
		if (sigaction(sig, NULL, &old) != 0)
			continue;
		if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler != SIG_DFL)
			continue; /* the program's */
		if ((old.sa_flags & SA_SIGINFO) && old.sa_sigaction != NULL)
			continue;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_signal;
		/* The thread's alternate stack where it has one (baton's
		 * workers do): the interrupted stack may be a small one. */
		sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
		sigemptyset(&sa.sa_mask);
		if (sigaction(sig, &sa, NULL) == 0) {
			slice_signal = sig;
			return;
		}
	}
}

int baton__lua_slice_signal(void)
{
	pthread_once(&setup_once, setup);
	return slice_signal;
}

/* This thread's timer, made on its first slice. */
static int have_timer(struct slice_clock *c)
{
	struct sigevent sev;

	if (c->have_timer != 0)
		return c->have_timer == 1;
	if (baton__lua_slice_signal() == 0) {
		c->have_timer = -1;
		return 0;
	}
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = slice_signal;
	sev.sigev_notify_thread_id = (pid_t)syscall(SYS_gettid);
	if (timer_create(CLOCK_MONOTONIC, &sev, &c->timer) != 0) {
		c->have_timer = -1;
		return 0;
	}
	c->have_timer = 1;
	(void)pthread_setspecific(timer_key, c); /* timer_delete at thread exit */
	return 1;
}

void baton__lua_slice_begin(struct baton_lua_task *t, lua_State *co, int64_t now, int64_t end,
			    int64_t period)
{
	struct slice_clock *c = &clock_tls; /* first touched here, not in the handler */

	thread_steps++;
	c->task = t;
	c->end = end;
	c->period = period > 0 ? period : BATON_LUA_SLICE_DEFAULT_NS;
	c->start = now;
	c->over = 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	c->running = co;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (end == INT64_MAX || !have_timer(c))
		return;
	if (c->armed_for == 0 || c->armed_for > end)
		arm(c, end);
}

void baton__lua_slice_end(lua_State *co)
{
	struct slice_clock *c = &clock_tls;

	c->running = NULL;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	c->task = NULL;
	c->over = 0;
	/* A hook the handler set just before the slice ended (on a yield
	 * for a wait, say) would end the next slice at once. */
	lua_sethook(co, NULL, 0, 0);
}

lua_State *baton__lua_slice_enter(lua_State *co)
{
	struct slice_clock *c = &clock_tls;
	lua_State *prev = c->running;

	if (prev == NULL)
		return NULL; /* not in a slice: nothing to follow */
	c->running = co;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (c->over)
		lua_sethook(co, preempt_hook, LUA_MASKCOUNT, 1);
	return prev;
}

void baton__lua_slice_leave(lua_State *co, lua_State *prev)
{
	struct slice_clock *c = &clock_tls;

	if (prev == NULL)
		return;
	c->running = prev;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	lua_sethook(co, NULL, 0, 0); /* suspended or dead now */
	/* The slice ran out in the coroutine that just gave control back:
	 * end it here, at the first instruction where this one can. */
	if (c->over)
		lua_sethook(prev, preempt_hook, LUA_MASKCOUNT, 1);
}

int64_t baton__lua_slice_elapsed(int64_t now)
{
	struct slice_clock *c = &clock_tls;

	return c->running != NULL ? now - c->start : 0;
}

static void preempt_hook(lua_State *L, lua_Debug *ar)
{
	struct slice_clock *c = &clock_tls;
	struct baton_lua_task *t = c->task;
	const char *why;

	if (ar->event != LUA_HOOKCOUNT || t == NULL || !c->over || c->running != L) {
		lua_sethook(L, NULL, 0, 0); /* stale: a slice that has ended */
		return;
	}
	if (L == t->co && lua_isyieldable(L)) {
		lua_sethook(L, NULL, 0, 0);
		lua_yield(L, 0); /* a hook yields no values */
		return;
	}
	/* Not here: in a C call or a coroutine of the task's own. A run that
	 * must stop is stopped with an error, which unwinds to where it can
	 * yield (or to the end of the run); the hook stays, so that code
	 * that catches the error cannot go on for long. */
	why = baton__lua_task_stop(t, mono_ns(), NULL);
	if (why != NULL) {
		lua_sethook(L, preempt_hook, LUA_MASKCOUNT, 1);
		luaL_error(L, "%s", why);
		return;
	}
	lua_sethook(L, preempt_hook, LUA_MASKCOUNT, DEFER_COUNT);
}
