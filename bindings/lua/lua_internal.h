/* SPDX-License-Identifier: MIT */
/*
 * bindings/lua/lua_internal.h - what the binding's files share: the state
 * behind its sequencer (baton_lua.c), a Lua task's run and the wait it asks
 * for (lua_run.c), and the `baton` library of Lua functions that ask for
 * them (lua_lib.c: sleep, yield, clocks, TCP sockets; the HTTP client is
 * Lua source on top of the sockets).
 *
 * A wait goes like this: a library function, running in the task's
 * coroutine on the sequencer's stack, fills run->op and yields the
 * coroutine; the step returns to the task, which leaves the sequencer and
 * does the wait there (parking only itself, baton/io.h and baton_sched_
 * sleep); the next step pushes the op's results (baton__lua_op_push) as
 * the values the library function returns, and resumes the coroutine.
 */
#ifndef BATON_LUA_INTERNAL_H
#define BATON_LUA_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <lua.h>

#include <pthread.h>

#include <baton/io.h>
#include <baton/sched.h>
#include <baton/sync.h>

#include "baton_lua.h"

#define BATON_LUA_SPARE_THREADS 16

/* What one run's allocations hold (baton_lua_create_ex's
 * BATON_LUA_ACCOUNT): a slot of the state's table, named by each block's
 * header together with the slot's generation, so that a block freed after
 * its run ended is credited to nobody. */
struct baton_lua_account {
	size_t live;   /* bytes of the blocks it holds now */
	size_t peak;   /* the most it held */
	size_t budget; /* 0: none */
	uint32_t gen;  /* bumped when the slot is given back */
	uint32_t next; /* the free list */
	bool refused;  /* an allocation was refused for the budget */
};

struct lua_timer;

/* A background task of the state (a timer's runner or callback, a
 * thread): listed while it runs, so that closing can cancel it. */
struct bg_link {
	struct bg_link *next, **prev;
	baton_task_t *task; /* its handle (it can be cancelled) */
	bool thread;        /* a baton.spawn thread (else a timer's) */
	bool cancelled;     /* its run stops at its next step */
};

/* The state's background runs: timers (baton.after, baton.every) and
 * threads (baton.spawn). lua_bg.c. */
struct baton_lua_bg {
	/* On the sequencer's stack only: the pending timers, a min-heap by
	 * due time, and whether a runner task is alive to fire them. */
	struct lua_timer **heap;
	size_t n, cap;
	bool runner;
	/* Any thread, under lock. */
	pthread_mutex_t lock;
	pthread_cond_t ended; /* ntasks reached 0 */
	unsigned ntasks;      /* background tasks alive (spawned, not ended) */
	struct bg_link *live;
	bool closing;      /* no new timers; timer callbacks stop */
	bool closing_all;  /* threads too */
	baton_sem_t *wake; /* the runner sleeps on it until the next due time */
	struct baton_lua_tasks_attr a;
};

struct baton_lua {
	baton_seq_t *seq;
	lua_State *L; /* used only on the sequencer's stack */
	int open_rc;
	unsigned flags; /* baton_lua_create_ex's */
	/* The allocator's counts, written on the sequencer's stack only. */
	size_t mem_total;               /* bytes Lua holds (headers not counted) */
	struct baton_lua_account *acct; /* [0] is nobody's */
	uint32_t nacct, acct_cap, acct_free;
	uint32_t cur;   /* the account charged now; 0: none */
	bool warn_on;   /* warn("@on") */
	bool warn_cont; /* a warning is being continued */
	struct baton_lua_bg bg;
	/* Finished task coroutines kept for the next run (registry refs). */
	lua_State *spare[BATON_LUA_SPARE_THREADS];
	int spare_ref[BATON_LUA_SPARE_THREADS];
	int nspare;
};

/* A TCP socket of the `baton` library (a full userdata's payload). */
struct baton_lua_sock {
	baton_io_t *io;     /* NULL until connected, and once closed */
	int64_t timeout_ns; /* per operation (connect, send, receive) */
	char *buf;          /* received, not yet returned: [off, len) */
	size_t off, len, cap;
};

enum baton_lua_op_kind {
	LOP_NONE = 0,
	LOP_YIELD,        /* baton.yield(): only give the worker's other tasks a turn */
	LOP_SLEEP,        /* ns */
	LOP_CONNECT,      /* sock, host (a Lua string on the coroutine's stack), port */
	LOP_SEND,         /* sock, data, len */
	LOP_RECV,         /* sock, pattern, n */
	LOP_WAIT_THREADS, /* data: an array of len struct lua_thread pointers */
};

enum baton_lua_recv { LRECV_N, LRECV_LINE, LRECV_ALL };

/* What a library function asks the task to wait for, and what came of it.
 * Pointers into Lua values stay valid: the values are arguments on the
 * suspended coroutine's stack. */
struct baton_lua_op {
	enum baton_lua_op_kind kind;
	struct baton_lua_sock *sock;
	int64_t ns;
	const char *data; /* LOP_SEND's bytes, LOP_CONNECT's host */
	size_t len;       /* of data; LOP_RECV's byte count */
	int port;
	enum baton_lua_recv pattern;
	/* results */
	int rc;          /* BATON_OK or an error code */
	int err;         /* errno with BATON_ESYS */
	size_t done;     /* bytes sent; bytes of the answer in sock->buf */
	const char *why; /* an error text of our own, or NULL */
};

/* One baton_lua_run(): its coroutine and the wait it asks for. The
 * coroutine's extra space points here while the run lasts. */
struct baton_lua_task {
	struct baton_lua *bl;
	const struct baton_lua_run *r;
	lua_State *co;
	int co_ref;
	int socks_ref;      /* a table of the sockets it opened, or LUA_NOREF */
	int threads_ref;    /* a table of the threads it spawned, or LUA_NOREF */
	const bool *cancel; /* a background run's flag: stop when it is set */
	int nargs;          /* values for the next resume, on co's stack */
	bool finished;
	bool in_task;     /* the caller is a scheduler task: waits may park */
	uint32_t acct;    /* its account (BATON_LUA_ACCOUNT), or 0 */
	int64_t slice_ns; /* its next slice's time (see lua_run.c) */
	int64_t cpu_ns;   /* slice time so far */
	unsigned long slices;
	int stopped; /* BATON_LUA_STOP_* once a limit stopped it */
	int rc;
	struct baton_lua_value *err;
	struct baton_lua_op op;
};

/* baton_lua.c: a malloc'd copy of p[0..len) as a string value. */
int baton__lua_set_string(struct baton_lua_value *v, const char *p, size_t len);
/* baton_lua.c, on the stack: a fresh account with this budget (0 when the
 * state does not account, or no memory for the table), and its end. */
uint32_t baton__lua_account_open(struct baton_lua *bl, size_t budget);
void baton__lua_account_close(struct baton_lua *bl, uint32_t slot, size_t *peak, bool *refused);

/* lua_slice.c: the slice clock of the calling thread (a timer and a
 * signal, no hook while a slice runs). begin before resuming co for a
 * slice of t that is due at `end` (INT64_MAX: never; `period`: how often
 * to look again once it overruns), end after. enter/leave around a
 * resume of another coroutine from the slice (the coroutine library),
 * so that the hook goes to the one that runs. */
int64_t baton__lua_now(void);
int baton__lua_slice_signal(void);
void baton__lua_slice_begin(struct baton_lua_task *t, lua_State *co, int64_t now, int64_t end,
			    int64_t period);
void baton__lua_slice_end(lua_State *co);
lua_State *baton__lua_slice_enter(lua_State *co);
void baton__lua_slice_leave(lua_State *co, lua_State *prev);
/* Time the current slice has run (0 outside one). */
int64_t baton__lua_slice_elapsed(int64_t now);
/* Steps run on the calling thread so far (any state): a run that yielded
 * at a slice's end compares it before and after, to see whether another
 * run took the worker meanwhile. */
unsigned long baton__lua_thread_steps(void);

/* lua_bg.c: open the background parts of the `baton` library (after,
 * every, spawn, the thread methods) in the table on top of L; set up and
 * tear down the state's bg record; the wait for threads (LOP_WAIT_THREADS,
 * in the task); cancel a run's threads when it ends (on the stack). */
void baton__lua_open_bg(lua_State *L, struct baton_lua *bl);
int baton__lua_bg_init(struct baton_lua *bl);
void baton__lua_bg_destroy(struct baton_lua *bl);
void baton__lua_wait_threads(struct baton_lua_op *op);
void baton__lua_cancel_threads(lua_State *L, int threads_ref);
/* Wait (at most 10 s) until no background task is alive: false if some
 * still are. A plain thread. */
bool baton__lua_bg_quiet(struct baton_lua *bl);
/* lua_lib.c: list the value on top of L (left there) as a key of the
 * run's table *ref (made on first use), so that the run finds what it
 * opened or spawned when it ends. */
void baton__lua_run_list(lua_State *L, int *ref);
/* The state whose library function runs (registry). */
struct baton_lua *baton__lua_state_of(lua_State *L);
/* lua_run.c: baton_lua_run with a flag that stops it (background runs). */
int baton__lua_run(baton_lua_t *bl, const struct baton_lua_run *r, struct baton_lua_value *err,
		   const bool *cancel);

/* lua_run.c: why the run must stop now (its deadline passed, its CPU
 * budget is used up: a message), or NULL; *rc gets the run's result. */
const char *baton__lua_task_stop(struct baton_lua_task *t, int64_t now, int *rc);

/* lua_lib.c: open the `baton` library in L (a global table). Raises. */
int baton__lua_open_lib(lua_State *L);
/* The run whose coroutine L is, or NULL (the main thread, a coroutine the
 * task made itself). */
struct baton_lua_task *baton__lua_task_of(lua_State *L);
/* In the task, outside the sequencer: do run->op. */
void baton__lua_op_run(struct baton_lua_op *op, bool in_task);
/* On the stack, in protected mode: push the op's results onto L (the
 * library function's return values); returns how many. */
int baton__lua_op_push(lua_State *L, struct baton_lua_op *op);
/* Close a socket (no task may wait on it); harmless when closed. */
void baton__lua_sock_close(struct baton_lua_sock *s);

#endif
