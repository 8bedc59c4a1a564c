/*
 * src/http/server_internal.h - what the server's files share.
 *
 *   server.c   create / shutdown / destroy, the acceptor, the statistics
 *   conn.c     one connection: read and parse, body, handle, write
 *   static.c   files from the static directory
 *   admin.c    the operator's endpoints: GET /_stats, POST /_limits
 *
 * The steps of a request are counted (docs/stages.md): accept, read (read
 * and parse a head and its body), handle, write. Without compute workers
 * the handle step runs in the connection's task once it holds a unit of
 * the "handlers" pool; with them it is the "handle" stage, whose handler
 * tasks are bound to the compute workers, and the connection task waits
 * for its request's job. The "in-flight" pool caps requests between parsed
 * and written, the "connections" pool makes the acceptor pause.
 */
#ifndef BATON_SRC_HTTP_SERVER_INTERNAL_H
#define BATON_SRC_HTTP_SERVER_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>

#include <baton/http.h>
#include <baton/io.h>
#include <baton/stage.h>
#include <baton/sync.h>

#include "http_parse.h"

enum { STEP_ACCEPT, STEP_READ, STEP_HANDLE, STEP_WRITE, NSTEPS };

/* Counters of one step, one set per worker (each on its own cache lines,
 * written only by its worker's thread: a relaxed load and store, no locked
 * instruction), summed by the snapshot. A task that moves between begin
 * and end leaves +1 running on one worker and -1 on another: the sum is
 * right. They order nothing; a snapshot is a best-effort instant. */
struct http_step {
	uint64_t running;	/* now (two's complement: see step_add) */
	uint64_t completed, rejected, ns;
};

struct http_steps {
	struct http_step s[NSTEPS];
} __attribute__((aligned(64)));

/* Connection buffers of HTTP_BUF_SIZE that idle connections gave back,
 * kept per worker (only its thread touches its cache) so that a busy
 * keep-alive connection does not pay malloc and free per request. */
#define HTTP_BUF_SIZE 8192
#define HTTP_BUF_CACHE 32
struct http_bufs {
	void *item[HTTP_BUF_CACHE];
	unsigned n;
} __attribute__((aligned(64)));

struct http_conn;

struct baton_http_server {
	baton_sched_t *sched;
	struct baton_http_server_attr a;
	struct baton_http_limits lim;
	char *host, *static_dir;
	int lfd;
	unsigned short port;
	baton_pool_t *conns, *handlers, *inflight;
	baton_stage_t *handle;	/* with compute workers, else NULL */
	unsigned io_workers;	/* connections are bound to [0, io_workers) */
	unsigned next_io;	/* the acceptor's round robin over them */
	struct http_steps *steps; /* nsteps: one per worker, and one shared
				     (atomic) for threads that are not workers */
	unsigned nsteps;
	struct http_bufs *bufs;	/* one per worker (nsteps - 1 of them) */

	pthread_mutex_t lock;	/* guards the list */
	struct http_conn *list; /* open connections */
	long nconns;
	bool shutting;		/* (atomic) */
	bool acceptor_done;
};

struct http_conn {
	struct baton_http_server *srv;
	struct http_conn *prev, *next; /* srv->list */
	baton_io_t *io;
	int fd;
	bool idle;		/* between requests (atomic) */
	unsigned long served;	/* requests answered on this connection */
	int64_t t_queued;	/* when the response in `out` was queued; 0: unknown */
	struct baton_http_progress prog; /* of the head being parsed in `in` */
	char *in;		/* what was read: the current request first */
	size_t in_len, in_cap;
	char *out;		/* responses not yet written */
	size_t out_len, out_cap;
	baton_sem_t *done;	/* the handle stage posts a finished job */
};

/* A request handed to the handle stage; lives on the connection task's
 * stack until `done` is posted. */
struct http_job {
	struct http_conn *c;
	const struct baton_http_req *view;
	struct baton_http_resp *resp;
	int rc;
};

/* server.c */
void baton_http_step_begin(struct baton_http_server *srv, int step);
int64_t baton_http_step_end(struct baton_http_server *srv, int step, int64_t t0, bool ok);
void baton_http_step_reject(struct baton_http_server *srv, int step);
bool baton_http_conn_set_idle(struct http_conn *c, bool idle);
void *baton_http_buf_get(struct baton_http_server *srv);
void baton_http_buf_put(struct baton_http_server *srv, void *p, size_t cap);
bool baton_http_shutting(struct baton_http_server *srv);

/* conn.c */
void baton_http_conn_main(void *arg);
void baton_http_handle_job(void *item, void *ctx); /* the handle stage's fn */

/* admin.c: GET /_stats, POST /_limits; 1 if it answered (resp filled), 0
 * if the request is not for it, -status or an error code on failure. */
int baton_http_admin(struct baton_http_server *srv, const struct baton_http_request *req,
		     struct baton_http_resp *resp);

/* static.c: 1 if a file answered (resp filled, body to free), 0 if the
 * path is not a file there, -status on a refused path. */
int baton_http_static(struct baton_http_server *srv, const struct baton_http_request *req,
		      struct baton_http_resp *resp);

#endif /* BATON_SRC_HTTP_SERVER_INTERNAL_H */
