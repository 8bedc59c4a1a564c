/*
 * src/http/server_internal.h - what the server's files share.
 *
 *   server.c   create / shutdown / destroy, the acceptor, the statistics
 *   conn.c     one connection: read and parse, body, handle, write
 *   static.c   files from the static directory
 *
 * The steps of a request are stages (docs/stages.md), each with its queue,
 * concurrency limit and counters: accept (from a connection to its task),
 * read (a request's head and body, from its first byte; it takes a unit of
 * the "in-flight" pool and keeps it until the response is written), handle
 * and write. The connection's task passes through the stages after accept
 * itself (baton_stage_enter/leave): a hand-off per step would cost more
 * than most steps. Only with compute workers is "handle" a stage with
 * tasks of its own, bound to the compute workers; the connection task then
 * waits for its request's job. The "connections" pool makes the acceptor
 * pause.
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

enum { HTTP_ACCEPT, HTTP_READ, HTTP_HANDLE, HTTP_WRITE, HTTP_NSTAGES };
_Static_assert(HTTP_NSTAGES == BATON_HTTP_NSTAGES, "the public snapshot's size");

struct baton_http_server {
	baton_sched_t *sched;
	struct baton_http_server_attr a;
	struct baton_http_limits lim;
	char *host, *static_dir;
	int static_fd;		/* static_dir, opened at creation; -1: none */
	bool have_openat2;	/* the kernel has it (Linux 5.6+) */
	int lfd;
	unsigned short port;
	baton_pool_t *conns, *inflight;
	baton_stage_t *stage[HTTP_NSTAGES]; /* the steps, in request order */
	baton_stage_t *handle;	/* stage[HTTP_HANDLE] */
	bool compute;		/* handle has tasks on the compute workers */
	unsigned io_workers;	/* connections are bound to [0, io_workers) */
	unsigned next_io;	/* the acceptor's round robin over them */
	struct http_bufs *bufs;	/* one per worker */
	unsigned nbufs;

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
	baton_sem_t *done;	/* the handle stage posts a finished job, or a
				   streamed piece to write (http_job.piece) */
	baton_sem_t *ack;	/* a streamed piece was written (compute mode) */
	char remote[46];	/* the peer's address as text (INET6_ADDRSTRLEN) */
	unsigned short remote_port;
};

/* A request handed to the handle stage; lives on the connection task's
 * stack until `done` is posted. */
struct http_job {
	struct http_conn *c;
	const struct baton_http_req *view;
	struct baton_http_resp *resp;
	int rc;
	/* A streamed piece on its way from the handler task to the
	 * connection's task (conn.c, baton_http_resp_write): set, then
	 * `done` posted; the connection task writes it, stores piece_rc,
	 * clears piece_pending and posts `ack`. */
	const void *piece;
	size_t piece_len;
	bool piece_pending;
	int piece_rc;
};

/* server.c */
bool baton__http_conn_set_idle(struct http_conn *c, bool idle);
void *baton__http_buf_get(struct baton_http_server *srv);
void baton__http_buf_put(struct baton_http_server *srv, void *p, size_t cap);
bool baton__http_shutting(struct baton_http_server *srv);

/* conn.c */
void baton__http_conn_main(void *arg);
void baton__http_handle_job(void *item, void *ctx); /* the handle stage's fn */

/* static.c: open srv->static_dir as srv->static_fd and check the symlink
 * policy against the kernel: BATON_OK or BATON_ESYS (errno set). */
int baton__http_static_init(struct baton_http_server *srv);

/* static.c: 1 if a file answered (resp filled, body to free), 0 if the
 * path is not a file there, -status on a refused path. */
int baton__http_static(struct baton_http_server *srv, const struct baton_http_request *req,
		      struct baton_http_resp *resp);

#endif /* BATON_SRC_HTTP_SERVER_INTERNAL_H */
