/* SPDX-License-Identifier: MIT */
/*
 * bindings/lua/baton_lua.h - one Lua 5.4 state shared by any number of
 * native threads, through baton's call sequencer (baton/seq.h).
 *
 * A lua_State is not thread-safe. baton_lua_create() makes one on the
 * dedicated stack of a sequencer (luaL_newstate and luaL_openlibs run
 * there, through baton_seq_attr.init), and every later use of the state goes
 * through baton_seq_call(): one thread at a time, always on that stack, with
 * flat combining when threads contend. Lua's collector and finalizers run
 * inside those calls, so they need nothing special.
 *
 *     baton_lua_t *bl;
 *     struct baton_lua_value args[2] = { BATON_LUA_INT(2), BATON_LUA_INT(3) }, res;
 *
 *     if (baton_lua_create(&bl, NULL) != BATON_OK)
 *         abort();
 *     baton_lua_dostring(bl, "function add(a, b) return a + b end", NULL);
 *     // from any thread:
 *     if (baton_lua_call(bl, "add", args, 2, &res) == BATON_OK)
 *         printf("%lld\n", res.u.i);              // 5
 *     baton_lua_value_clear(&res);
 *     baton_lua_destroy(bl);
 *
 * Rules a caller must keep:
 *  1. Touch the lua_State only inside baton_lua_with() (or the other calls
 *     here); never keep it and use it from a thread directly.
 *  2. A string result is a malloc'd copy owned by the caller: release every
 *     result with baton_lua_value_clear() (harmless on other types).
 *  3. A Lua error is returned as BATON_LUA_ERROR with the message as a
 *     string in *result (or *err), also to be cleared.
 *  4. Destroy only when no thread calls any more (baton_seq_destroy's rule).
 *
 * Link with baton_lua (CMake target) or -lbaton_lua -lbaton -llua5.4.
 */
#ifndef BATON_LUA_H
#define BATON_LUA_H

#include <stddef.h>

#include <baton/sched.h>
#include <baton/seq.h>

#ifdef __cplusplus
extern "C" {
#endif

struct lua_State;
typedef struct baton_lua baton_lua_t;

/* A Lua error was raised; the message is in the result value. */
#define BATON_LUA_ERROR (-100)

enum baton_lua_type {
	BATON_LUA_NIL = 0,
	BATON_LUA_INTEGER,
	BATON_LUA_NUMBER,
	BATON_LUA_STRING,
	BATON_LUA_BOOLEAN,
};

struct baton_lua_value {
	enum baton_lua_type type;
	union {
		long long i;
		double n;
		int b;
		struct {
			const char *ptr; /* NUL-terminated (may also contain NULs) */
			size_t len;
		} s;
	} u;
};

#define BATON_LUA_INT(v)           \
	{                          \
		BATON_LUA_INTEGER, \
		{                  \
			.i = (v)   \
		}                  \
	}
#define BATON_LUA_NUM(v)          \
	{                         \
		BATON_LUA_NUMBER, \
		{                 \
			.n = (v)  \
		}                 \
	}
#define BATON_LUA_STR(p)                           \
	{                                          \
		BATON_LUA_STRING,                  \
		{                                  \
			.s = {(p), sizeof(p) - 1 } \
		}                                  \
	} /* literals */

/* Create a state on a new sequencer. `attr` (may be NULL) gives the stack
 * size, K and the name; its init must be NULL (the binding's own init opens
 * the state). Errors: BATON_EINVAL, BATON_ENOMEM, baton_seq_create's. */
int baton_lua_create(baton_lua_t **out, const struct baton_seq_attr *attr);

/* baton_lua_create with flags: 0, or BATON_LUA_ACCOUNT (above). */
int baton_lua_create_ex(baton_lua_t **out, const struct baton_seq_attr *attr, unsigned flags);

/* Bytes the state's allocations hold now (a plain read of a count the
 * allocator keeps: exact when the state is idle). */
size_t baton_lua_memory(const baton_lua_t *bl);

/* Call the global function `name` with nargs arguments (integers, numbers,
 * strings, booleans, nil) and store its first result in *result (if not
 * NULL). Errors: BATON_EINVAL (NULL bl or name, nargs < 0, args NULL with
 * nargs > 0), BATON_LUA_ERROR (no such function, a Lua error, or a result
 * of another type: message in *result), baton_seq_call's. */
int baton_lua_call(baton_lua_t *bl, const char *name, const struct baton_lua_value *args, int nargs,
		   struct baton_lua_value *result);

/* Run a chunk of Lua source, or a file. On BATON_LUA_ERROR the message is
 * stored in *err if err is not NULL. */
int baton_lua_dostring(baton_lua_t *bl, const char *code, struct baton_lua_value *err);
int baton_lua_dofile(baton_lua_t *bl, const char *path, struct baton_lua_value *err);

/* Run fn(L, arg) on the dedicated stack with the state; its return value
 * goes to *result. For anything the calls above do not cover. */
int baton_lua_with(baton_lua_t *bl, void *(*fn)(struct lua_State *L, void *arg), void *arg,
		   void **result);

/* The sequencer (for baton_seq_set_batch, baton_seq_stats). */
baton_seq_t *baton_lua_seq(baton_lua_t *bl);

/*
 * Lua tasks: a function run as a coroutine of the state, in slices of
 * time. When a slice's time is up (1 ms by default) the coroutine yields
 * back to baton_lua_run(), which leaves the sequencer (so that other calls,
 * other runs' slices among them, get the state) and, from a scheduler task,
 * yields to its worker's other tasks before the next slice. No hook is set
 * while a slice runs (a Lua 5.4 hook slows every instruction): a per-thread
 * timer signals the thread when the slice is due, and the signal handler
 * arms a count-1 hook that yields (lua.c's way of stopping a script on
 * SIGINT). Where Lua cannot yield (inside a C function such as
 * table.sort's comparator, or a coroutine the function resumed itself) the
 * slice runs on to the next point where it can.
 *
 * Limits of a run: a deadline, a budget of slice time (CPU) and, on a
 * state made with BATON_LUA_ACCOUNT, a budget of memory its allocations may
 * hold at once. Past the deadline or the CPU budget the run is stopped at
 * the end of its slice (with a Lua error where it could not yield); an
 * allocation over the memory budget fails, which Lua raises as "not enough
 * memory" in the run, after a full collection.
 *
 * Inside a run the `baton` library's waits park the task instead of its
 * worker (docs/embedding-lua.md): baton.sleep(s), baton.yield(),
 * baton.tcp() sockets shaped like OpenResty's ngx.socket.tcp (settimeout,
 * connect, send, receive(n | "*l" | "*a"), close) and baton.http_request /
 * baton.http_get on top of them; baton.now() and baton.clock() read the
 * clocks. Outside a run (baton_lua_call and the others) they raise an
 * error. The sockets a run opened are closed when it ends.
 *
 *     static int push_fn(struct lua_State *L, void *arg)   // start
 *     {
 *         lua_getglobal(L, "handler");
 *         lua_pushstring(L, arg);
 *         return 1;                                        // one argument
 *     }
 *     static int take(struct lua_State *L, int base, int n, void *arg)
 *     {
 *         ...lua_tostring(L, base)...                      // may raise
 *         return 0;
 *     }
 *     struct baton_lua_run r = { push_fn, take, NULL, NULL, "x" };
 *     rc = baton_lua_run(bl, &r, &err);                    // from a task
 *
 * The slices are signalled with a real-time signal (the first of
 * SIGRTMIN+6 .. SIGRTMAX-1 without a handler, taken on the first run), on
 * the thread's alternate signal stack where it has one, with SA_RESTART; a
 * blocking call that is not restarted may see EINTR once after a slice.
 */
#define BATON_LUA_SLICE_DEFAULT_NS 1000000LL /* 1 ms */

/* baton_lua_create_ex flags: account each run's memory (a 16-byte header
 * per block naming its run), which baton_lua_run.mem_bytes needs. */
#define BATON_LUA_ACCOUNT 1u

/* A run was stopped for its CPU budget (baton_lua_run.cpu_ns). */
#define BATON_LUA_BUDGET (-102)

/* Why a run was stopped (baton_lua_usage.stopped). */
enum {
	BATON_LUA_STOP_NONE = 0,
	BATON_LUA_STOP_DEADLINE, /* BATON_ETIMEDOUT */
	BATON_LUA_STOP_CPU,      /* BATON_LUA_BUDGET */
	BATON_LUA_STOP_MEMORY,   /* an allocation was refused and the run
				    failed with "not enough memory" */
};

/* What a run used, filled in when it ends. */
struct baton_lua_usage {
	long long cpu_ns;     /* time in its slices */
	unsigned long slices; /* slices (and steps after waits) */
	size_t mem_peak;      /* the most its allocations held at once
				 (BATON_LUA_ACCOUNT), else 0 */
	int stopped;          /* BATON_LUA_STOP_* */
};

struct baton_lua_run {
	/* Push the function and its arguments onto L, return how many
	 * arguments. On the stack, in protected mode: it may raise. */
	int (*start)(struct lua_State *L, void *arg);
	/* The function returned n values, at L's indices base..base+n-1.
	 * Protected: it may raise (the run's result is then that error). */
	int (*finish)(struct lua_State *L, int base, int n, void *arg);
	/* May be NULL. Before each slice but the first (other runs' slices
	 * may have run on the state since the last one). Protected: it may
	 * raise. */
	void (*resume)(struct lua_State *L, void *arg);
	/* May be NULL. Once after the last slice, also after an error. Must
	 * not raise. */
	void (*done)(struct lua_State *L, void *arg);
	void *arg;
	long long slice_ns;            /* a slice's time: 0 = BATON_LUA_SLICE_DEFAULT_NS;
				< 0: no slices (the run gives its worker up
				only in waits; the limits below still hold) */
	long long deadline;            /* CLOCK_MONOTONIC ns: stop the run then; 0 = none */
	long long cpu_ns;              /* budget of slice time; 0 = none */
	size_t mem_bytes;              /* budget of memory its allocations hold at once;
				0 = none; needs BATON_LUA_ACCOUNT */
	struct baton_lua_usage *usage; /* may be NULL */
};

/*
 * Background runs of a state (docs/embedding-lua.md): the `baton` library's
 * timers and threads.
 *
 *   t = baton.after(ms, fn, ...)   fn(...) once, ms from now; t:cancel()
 *   t = baton.every(ms, fn, ...)   fn(...) every ms (a call still running
 *                                  when the next is due skips that one)
 *   th = baton.spawn(fn, ...)      fn(...) as a run of its own, now
 *   th, ok, ... = baton.wait_any(th1, th2, ...)  or (baton.wait_any{...}):
 *                                  the first of them to end, and what it
 *                                  returned (ok false and the error if it
 *                                  failed); th:cancel() stops a loser
 *   ok, ... = baton.wait(th)
 *   th:done(), th:result(), th:cancel()
 *
 * A pending timer is a small userdata (no task, no stack): one runner task
 * per state sleeps until the next is due and starts a task for each call,
 * which runs as a Lua run with the limits below. At most max_timers are
 * pending: baton.after and baton.every return nil and "too many pending
 * timers (at most N)" past that. A thread runs with the limits of the run
 * that spawned it (its deadline, its budgets, each counted apart) and is
 * cancelled when that run ends. baton_lua_cancel_tasks drops the pending
 * timers and stops the running callbacks (and threads) at their next slice
 * or wait; from then on the state refuses new ones ("closing").
 */
#define BATON_LUA_MAX_TIMERS_DEFAULT 1024

struct baton_lua_tasks_attr {
	baton_sched_t *sched;       /* for timers set outside a run (the state's
				 chunk), which has no task; NULL: refused there */
	int worker;                 /* their worker, or BATON_SCHED_ANY_WORKER */
	size_t max_timers;          /* pending timers at most; 0: the default */
	long long slice_ns, cpu_ns; /* each timer callback's run (baton_lua_run) */
	size_t mem_bytes;
	/* May be NULL. A timer callback failed: what, on any thread. */
	void (*error)(void *arg, const char *msg);
	void *error_arg;
};

#define BATON_LUA_TASKS_ATTR_INIT                                    \
	{                                                            \
		NULL, BATON_SCHED_ANY_WORKER, 0, 0, 0, 0, NULL, NULL \
	}

/* Set the state's background attributes (copied). Before any timer is set:
 * typically right after creating the state. Errors: BATON_EINVAL. */
int baton_lua_set_tasks(baton_lua_t *bl, const struct baton_lua_tasks_attr *a);

/* Drop the pending timers and stop the running timer callbacks (with
 * `threads`, the threads too) at their next slice's end or wait; new ones
 * are refused from now on. Any thread but the state's own calls. Errors:
 * BATON_EINVAL, baton_seq_call's. */
int baton_lua_cancel_tasks(baton_lua_t *bl, int threads);

/* Timers pending now (a plain read: exact when the state is idle). */
size_t baton_lua_timers(const baton_lua_t *bl);

/* Run r->start's function to its end, slice by slice (above). Errors:
 * BATON_EINVAL (NULL bl or r, no start or finish, or mem_bytes on a state
 * without BATON_LUA_ACCOUNT), BATON_EDEADLK (called from inside a call on
 * the same state), BATON_LUA_ERROR (the function, start or finish raised:
 * the message as a string in *err if err is not NULL, to be cleared),
 * BATON_ETIMEDOUT (stopped at its deadline) and BATON_LUA_BUDGET (stopped
 * for its CPU budget), each with a message in *err, BATON_ENOMEM,
 * baton_seq_call's. */
int baton_lua_run(baton_lua_t *bl, const struct baton_lua_run *r, struct baton_lua_value *err);

/* Free a string result; sets *v to nil. NULL is a no-op. */
void baton_lua_value_clear(struct baton_lua_value *v);

/* Cancel the background runs (baton_lua_cancel_tasks(bl, 1)) and wait up
 * to 10 s for their tasks to end; then lua_close on the dedicated stack and
 * destroy the sequencer. NULL is a no-op. Errors: BATON_EBUSY (called from
 * inside a call on this state, or background tasks still running after
 * 10 s: nothing was closed). See rule 4 for calls from other threads. */
int baton_lua_destroy(baton_lua_t *bl);

#ifdef __cplusplus
}
#endif

#endif /* BATON_LUA_H */
