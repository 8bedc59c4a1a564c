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

#include <baton/io.h>

#include "baton_lua.h"

#define BATON_LUA_SPARE_THREADS 16

struct baton_lua {
	baton_seq_t *seq;
	lua_State *L; /* used only on the sequencer's stack */
	int open_rc;
	/* Finished task coroutines kept for the next run (registry refs). */
	lua_State *spare[BATON_LUA_SPARE_THREADS];
	int spare_ref[BATON_LUA_SPARE_THREADS];
	int nspare;
};

/* A TCP socket of the `baton` library (a full userdata's payload). */
struct baton_lua_sock {
	baton_io_t *io;	    /* NULL until connected, and once closed */
	int64_t timeout_ns; /* per operation (connect, send, receive) */
	char *buf;	    /* received, not yet returned: [off, len) */
	size_t off, len, cap;
};

enum baton_lua_op_kind {
	LOP_NONE = 0,
	LOP_YIELD,   /* baton.yield(): only give the worker's other tasks a turn */
	LOP_SLEEP,   /* ns */
	LOP_CONNECT, /* sock, host (a Lua string on the coroutine's stack), port */
	LOP_SEND,    /* sock, data, len */
	LOP_RECV,    /* sock, pattern, n */
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
	size_t len;	  /* of data; LOP_RECV's byte count */
	int port;
	enum baton_lua_recv pattern;
	/* results */
	int rc;		 /* BATON_OK or an error code */
	int err;	 /* errno with BATON_ESYS */
	size_t done;	 /* bytes sent; bytes of the answer in sock->buf */
	const char *why; /* an error text of our own, or NULL */
};

/* One baton_lua_run(): its coroutine and the wait it asks for. The
 * coroutine's extra space points here while the run lasts. */
struct baton_lua_task {
	struct baton_lua *bl;
	const struct baton_lua_run *r;
	lua_State *co;
	int co_ref;
	int socks_ref; /* a table of the sockets it opened, or LUA_NOREF */
	int nargs;     /* values for the next resume, on co's stack */
	bool finished;
	bool in_task;  /* the caller is a scheduler task: waits may park */
	int rc;
	struct baton_lua_value *err;
	struct baton_lua_op op;
};

/* baton_lua.c: a malloc'd copy of p[0..len) as a string value. */
int baton__lua_set_string(struct baton_lua_value *v, const char *p, size_t len);

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
