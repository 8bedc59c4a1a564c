/* SPDX-License-Identifier: MIT */
/*
 * src/http/server_internal.h - what the server's files share.
 *
 *   server.c   create / shutdown / destroy, the acceptor, the sweeper,
 *              the statistics, connections parking and waking
 *   conn.c     one connection's loop: read and parse, body, handle, queue
 *   respond.c  its responses: output buffer, write step, heads, streams
 *   job.c      the handler's call, inline or as a job on compute workers
 *   step.c     the steps' counters per worker, in-flight units' reserves
 *   static.c   files from the static directory
 *
 * The steps of a request are stages (docs/stages.md), each with its queue,
 * concurrency limit and counters: accept (from a connection to its task),
 * read (a request's head and body, from its first byte; it takes a unit of
 * the "in-flight" pool and keeps it until the response is written), handle
 * and write. The connection's task passes through the steps after accept
 * itself: a hand-off per step would cost more than most steps. A step
 * whose bound cannot bind is counted per worker instead of passed through
 * its stage (step.c), so the keep-alive path takes no lock that another
 * worker takes. Only with compute workers is "handle" a stage with
 * tasks of its own, bound to the compute workers; the connection task then
 * calls it with its request's job (struct http_job, baton_stage_call) and
 * waits, at most until the handler timeout. The "connections" pool makes
 * the acceptor pause.
 */
#ifndef BATON_SRC_HTTP_SERVER_INTERNAL_H
#define BATON_SRC_HTTP_SERVER_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>

#include <baton/http.h>
#include <baton/smr.h>
#include <baton/io.h>
#include <baton/stage.h>
#include <baton/sync.h>

#include "../common/list.h"
#include "http_parse.h"

#define HTTP_BUF_SIZE 8192
#define HTTP_BUF_CACHE 32
/* Units a worker takes from a pool at once, at most (step.c). */
#define HTTP_RESERVE_BATCH 8
/* The pools whose units workers keep reserves of (step.c). */
enum { HTTP_RES_INFLIGHT, HTTP_RES_SLOTS, HTTP_NRES };

enum { HTTP_ACCEPT, HTTP_READ, HTTP_HANDLE, HTTP_WRITE, HTTP_NSTAGES };
_Static_assert(HTTP_NSTAGES == BATON_HTTP_NSTAGES, "the public snapshot's size");

/* A step's figures where its bound cannot bind (step.c). */
struct http_step_count {
	uint64_t submitted, completed, rejected, handler_ns;
	int64_t running;
};

/* A worker's reserve of a pool's units (step.c). */
struct http_reserve {
	long spare;            /* units held for the next requests (atomic) */
	uint64_t from_spare;   /* units handed out of the reserve */
	uint64_t tries_failed; /* acquisitions tried and refused on the way
				   to a wait, not refusals of a request */
	uint64_t wait_ns;      /* time requests waited for a unit */
};

/*
 * What a worker keeps of a server, written by that worker's thread alone
 * (its own cache lines), so that the keep-alive path takes no lock another
 * worker takes: connection buffers of HTTP_BUF_SIZE that idle connections
 * gave back (a busy keep-alive connection does not pay malloc and free per
 * request), the steps' counters and the reserve of in-flight units.
 * Snapshots read the counters from other threads (relaxed atomics).
 */
struct http_worker {
	void *buf[HTTP_BUF_CACHE];
	unsigned nbuf;
	struct http_step_count step[HTTP_NSTAGES];
	struct http_reserve res[HTTP_NRES];
} __attribute__((aligned(64)));

/* A request's pass through a step: its gate's pass, or counted. */
struct http_pass {
	struct baton_gate_pass gate;
	int64_t t0;       /* counted: when the step began */
	signed char step; /* HTTP_*, -1: in none */
	bool counted;     /* entered through the counters */
	bool unit;        /* holds an in-flight unit of the reserve's */
};
#define HTTP_PASS_INIT                                    \
	{                                                 \
		BATON_GATE_PASS_INIT, 0, -1, false, false \
	}

struct http_conn;

/* A handler and its context, replaced whole by a reload. */
struct http_handler {
	baton_http_handler_fn fn;
	void *ctx;
	void (*release)(void *ctx);
	struct http_handler *stale_next; /* server's stale list */
};

struct baton_http_server {
	baton_sched_t *sched;
	struct baton_http_server_attr a;
	/* The handler every call uses (atomic pointer), read in a read
	 * section of `smr`: a reload frees the one it replaced after them. */
	struct http_handler *handler;
	baton_smr_t *smr;
	struct http_handler *stale; /* replaced, calls maybe left (lock) */
	struct baton_http_limits lim;
	char *host, *static_dir;
	int static_fd;     /* static_dir, opened at creation; -1: none */
	bool have_openat2; /* the kernel has it (Linux 5.6+) */
	int lfd;
	unsigned short port;
	baton_pool_t *conns, *inflight;
	/* The steps, in request order: gates the connection task passes
	 * through, but handle with compute workers (gate NULL): a stage. */
	baton_gate_t *gate[HTTP_NSTAGES];
	baton_stage_t *handle;       /* with compute workers, else NULL */
	bool compute;                /* handle has tasks on the compute workers */
	unsigned io_workers;         /* connections are bound to [0, io_workers) */
	unsigned next_io;            /* the acceptor's round robin over them */
	struct http_worker *workers; /* one per worker of the scheduler */
	unsigned nworkers;
	/* Per step: no bound of its can bind now, so it is counted per
	 * worker, not passed through its stage (step.c; atomic). */
	bool step_free[HTTP_NSTAGES];
	/* Per pool workers keep reserves of (HTTP_RES_*: `inflight`, and
	 * `slots` with handlers inline): requests waiting for a unit, the
	 * batch a reserve takes, the waiters allowed (0: no limit); all
	 * atomic. */
	long res_waiting[HTTP_NRES];
	long res_batch[HTTP_NRES];
	long res_queue_limit[HTTP_NRES];
	baton_pool_t *slots; /* handler slots (inline handlers); else NULL */

	pthread_mutex_t lock;   /* guards the list */
	struct baton_list list; /* open connections (http_conn.link) */
	long nconns;
	bool shutting; /* (atomic) */
	bool acceptor_done;
	bool sweeper_done;       /* the sweeper ended (or never got memory) */
	baton_sem_t *sweep_wake; /* shutdown ends the sweeper's wait at once */
};

struct http_conn {
	struct baton_http_server *srv;
	struct baton_list_node link; /* in srv->list */
	baton_io_t *io;
	int fd;
	bool idle;            /* between requests (atomic) */
	unsigned long served; /* requests answered on this connection */
	int64_t t_queued;     /* when the response in `out` was queued; 0: unknown */
	char *in;             /* what was read: the current request first */
	size_t in_len, in_cap;
	char *out; /* responses not yet written */
	size_t out_len, out_cap;
	/* The request being handled: its parsed fields, then the handler's
	 * scratch (struct http_work, HTTP_BUF_SIZE bytes). Taken when a
	 * request's first bytes arrive, given back while the connection
	 * waits idle, as `in` and `out` are: the stack of an idle
	 * connection's task stays shallow, and 10,000 connections do not
	 * each keep 8 KiB of touched stack. */
	struct http_work *work;
	char remote[46]; /* the peer's address as text (INET6_ADDRSTRLEN) */
	unsigned short remote_port;
	/* I/O-worker shape with a handler timeout: the connection's task is
	 * spawned with an id (detached), and the sweeper aborts `tid` once
	 * `deadline` passes while the handler runs. */
	baton_tid_t tid;  /* the current task's id (atomic) */
	int64_t deadline; /* 0: not in a handler; -1: cancelled by the
				   sweeper; else when (atomic) */
	/* Parked: idle with no task at all (docs/httpd.md, "Where an idle
	 * connection lives"); a notification on `io` starts a task again
	 * when bytes arrive, and the sweeper shuts the read side down once
	 * `idle_until` passes. */
	bool parked;        /* (atomic) */
	bool reaped;        /* the sweeper shut its read side (lock) */
	bool woke;          /* its task was just started by bytes */
	int worker;         /* the I/O worker it is bound to */
	int64_t idle_until; /* parked: closed after this (atomic) */
};

/*
 * A request handed to the handle stage (compute workers): one heap block,
 * HTTP_BUF_SIZE bytes, holding everything the handler can reach (its copy
 * of the request view, head and fields, the response and the scratch
 * buffer), the call's item. The request's bytes and decoded path go with
 * it while it is in the stage: a connection that leaves it at the handler
 * timeout (stage.h rule 8) leaves the handler nothing freed under it, and
 * the call's abandon function frees all of it where the handler ends.
 */

/* resp->stream_ points at one of these; both begin with the kind. */
enum { HTTP_STREAM_LOCAL = 1, HTTP_STREAM_JOB };

struct http_stream;

struct http_job {
	unsigned char kind; /* HTTP_STREAM_JOB */
	struct baton_http_server *srv;
	int rc; /* the handler's */
	/* A streamed piece on its way from the handler to the connection's
	 * task (baton_http_resp_write), which writes it when asked
	 * (baton_stage_ask) into its stream (in its own frame: read only
	 * there). */
	struct http_stream *stream;
	const void *piece;
	size_t piece_len;
	int piece_err; /* the handler's side: the first write error */
	char *in;      /* the request's bytes, while in the stage */
	char *decoded; /* its decoded path, the same */
	struct baton_http_req view;
	struct baton_http_resp resp;
	struct baton_http_request head; /* view.head_ */
	char remote[46];
	struct baton_http_field fields[]; /* head.nfields, then the scratch */
};

#define HTTP_CONN_FIELDS 128 /* a connection parses at most this many */

struct http_work {
	/* Of the head being parsed in `in`: kept here, not in the record,
	 * since it means something only while bytes are (docs/httpd.md). */
	struct baton_http_progress prog;
	struct baton_http_field fields[HTTP_CONN_FIELDS];
	char scratch[]; /* to the end of the HTTP_BUF_SIZE block */
};
#define HTTP_WORK_SCRATCH (HTTP_BUF_SIZE - sizeof(struct http_work))
_Static_assert(HTTP_WORK_SCRATCH >= 4096, "a handler's scratch holds 4 KiB");
#define HTTP_JOB_SCRATCH_MIN 4096
_Static_assert(sizeof(struct http_job) + HTTP_CONN_FIELDS * sizeof(struct baton_http_field) +
			       HTTP_JOB_SCRATCH_MIN <=
		       HTTP_BUF_SIZE,
	       "a job with every field still lends a handler 4 KiB of scratch");

/* server.c */
bool baton__http_conn_set_idle(struct http_conn *c, bool idle);
/* Park c (its task is about to end): true if armed, false if bytes came
 * meanwhile (the task reads them). */
bool baton__http_conn_park(struct http_conn *c, int64_t idle_until);
/* A buffer of HTTP_BUF_SIZE bytes from (or back to) the cache of the
 * worker c is bound to; only c's task and notification call these. */
void *baton__http_buf_get(struct http_conn *c);
void baton__http_buf_put(struct http_conn *c, void *p, size_t cap);
bool baton__http_shutting(struct baton_http_server *srv);

/* step.c */
struct http_worker *baton__http_my_worker(struct baton_http_server *srv);
/* Enter a step, counted where its bound cannot bind, else through its
 * gate; the read step takes the request's in-flight unit too. The step
 * begins at t0 (0: now). Errors as baton_gate_enter's. */
int baton__http_step_enter(struct baton_http_server *srv, int step, struct http_pass *p, int64_t t0,
			   int64_t timeout_ns);
void baton__http_step_leave(struct baton_http_server *srv, struct http_pass *p, int64_t *end_ns);
/* A step's limits on its gate (or the handle stage): concurrency `conc`
 * and queue `queue`, 0 leaving one as it is. */
int baton__http_step_set(struct baton_http_server *srv, int step, unsigned conc, size_t queue);
/* The request is over: its in-flight unit goes back, once. */
void baton__http_pass_release_unit(struct baton_http_server *srv, struct http_pass *p);
/* A unit of the pool `kind` names (HTTP_RES_*), from the worker's reserve if it has one:
 * BATON_OK, BATON_EAGAIN (timeout 0, or the waiters' limit reached), or
 * baton_pool_acquire's errors. */
int baton__http_reserve_take(struct baton_http_server *srv, int kind, int64_t timeout_ns);
void baton__http_reserve_give(struct baton_http_server *srv, int kind);
/* Every reserve back to its pool. */
void baton__http_reserves_flush(struct baton_http_server *srv);
/* After a limit changed: which steps are counted from now on. */
void baton__http_steps_update(struct baton_http_server *srv);
void baton__http_steps_snapshot(struct baton_http_server *srv, struct baton_http_server_stats *out);

/* Bodies up to this size are copied behind their head; larger ones are
 * written from where the handler keeps them. */
#define HTTP_INLINE_BODY_MAX (64 * 1024)

/* What handling a request gives for one past its handler timeout. */
#define HTTP_HANDLER_TIMED_OUT (-504)

/*
 * A streamed response (baton_http_resp_write): one per request, in the
 * connection task's frame. In the I/O-worker shape the handler runs in
 * the connection's task and writes its pieces itself; on a compute worker
 * a piece travels through the job (http_job.piece): the handler asks the
 * connection's task, waiting for the job in baton_stage_call, to write it
 * on its own worker (baton_stage_ask), and only then goes on. Either way one
 * piece at most is between the handler and the kernel's socket buffer,
 * which is the back-pressure: a slow reader slows the handler.
 */
struct http_stream {
	unsigned char kind; /* HTTP_STREAM_LOCAL (resp->stream_ may be a job) */
	struct http_conn *c;
	const struct baton_http_request *req;
	struct http_job *job; /* compute shape: the finished job, freed
				   once its response is written */
	bool keep;            /* the head says keep-alive */
	bool chunked;         /* HTTP/1.1: chunks; 1.0: until the close */
	bool started;         /* the head is queued */
	int err;              /* the first write error, returned from then on */
	int64_t deadline;     /* the handler's (< 0: none): no piece after it */
};

/* respond.c */
bool baton__http_out_reserve(struct http_conn *c, size_t more);
/* Write len bytes through the write step, which starts when the response
 * was queued (c->t_queued) if known, else now. */
int baton__http_write_step(struct http_conn *c, const void *buf, size_t len);
/* Write what c->out holds. */
int baton__http_flush(struct http_conn *c);
int baton__http_respond(struct http_conn *c, const struct baton_http_request *req,
			struct baton_http_resp *resp, bool keep);
int baton__http_stream_put(struct http_stream *st, struct baton_http_resp *resp, const void *data,
			   size_t len);
int baton__http_end_stream(struct http_stream *st, int rc);

/* job.c */
int baton__http_call_handler(struct baton_http_server *srv, const struct baton_http_req *view,
			     struct baton_http_resp *resp);
int baton__http_job_piece(struct http_job *job, const void *data, size_t len);
void baton__http_job_put(struct http_conn *c, struct http_job *job);
int baton__http_handle_on_stage(struct http_conn *c, const struct baton_http_req *view,
				struct baton_http_resp *resp, struct http_stream *st,
				char **decoded);

/* conn.c: serve c until it closes (false) or parks (true); the caller
 * closes its handle. */
bool baton__http_conn_main(struct http_conn *c);
void baton__http_handle_job(void *item, void *ctx); /* the handle stage's fn */

/* static.c: open srv->static_dir as srv->static_fd and check the symlink
 * policy against the kernel: BATON_OK or BATON_ESYS (errno set). */
int baton__http_static_init(struct baton_http_server *srv);

/* static.c: 1 if a file answered (resp filled, body to free), 0 if the
 * path is not a file there, -status on a refused path. */
int baton__http_static(struct baton_http_server *srv, const struct baton_http_request *req,
		       struct baton_http_resp *resp);

#endif /* BATON_SRC_HTTP_SERVER_INTERNAL_H */
