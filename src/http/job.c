/* SPDX-License-Identifier: MIT */
/*
 * The handler's call: in the connection's task (baton__http_call_handler,
 * in a read section of the reclamation domain reloads use), or, with
 * compute workers, as a job handed to the handle stage's tasks and waited
 * for (struct http_job, server_internal.h), a streamed response's pieces
 * coming back as questions.
 */
#include <string.h>

#include "../common/alloc.h"
#include "../common/prelude.h"
#include "server_internal.h"

/* A job for the request, in a block of HTTP_BUF_SIZE bytes: copies of the
 * view, head and fields the handler reads, and its response with the rest
 * of the block as its scratch. The bytes they point into (c->in) and the
 * decoded path travel with the job while it is in the handle stage. */
static struct http_job *job_new(struct http_conn *c, const struct baton_http_req *view,
				struct http_stream *st)
{
	const struct baton_http_request *head = view->head_;
	struct http_job *job = baton__http_buf_get(c);
	size_t used;

	if (job == NULL)
		return NULL;
	memset(job, 0, sizeof(*job));
	job->kind = HTTP_STREAM_JOB;
	job->srv = c->srv;
	job->stream = st;
	job->head = *head;
	memcpy(job->fields, head->fields, head->nfields * sizeof(job->fields[0]));
	job->head.fields = job->fields;
	job->head.fields_cap = head->nfields;
	memcpy(job->remote, c->remote, sizeof(job->remote));
	job->view = *view;
	job->view.head_ = &job->head;
	job->view.remote_addr = job->remote;
	used = (sizeof(*job) + head->nfields * sizeof(job->fields[0]) + 15) & ~(size_t)15;
	job->resp.scratch = (char *)job + used;
	job->resp.scratch_cap = HTTP_BUF_SIZE - used;
	job->resp.stream_ = job;
	return job;
}

/* The connection's side, once the call gave the job back. */
void baton__http_job_put(struct http_conn *c, struct http_job *job)
{
	baton__http_buf_put(c, job, HTTP_BUF_SIZE);
}

/* The call's abandon function: the connection left the job at its
 * deadline; where its handler ended (or was skipped), free all of it:
 * its response and the request's bytes and path it carried. */
static void job_abandoned(void *item)
{
	struct http_job *job = item;

	if (job->resp.release && job->resp.body)
		job->resp.release(job->resp.body);
	baton__free(job->decoded);
	baton__free(job->in);
	baton__free(job);
}

/* Call the server's handler in a read section of its reclamation domain
 * (http.h rule 9): a reload frees the handler it replaced only once no
 * call of it is left. The section spans whatever the call parks on, and
 * may end on another worker. */
int baton__http_call_handler(struct baton_http_server *srv, const struct baton_http_req *view,
			     struct baton_http_resp *resp)
{
	const struct http_handler *h;
	int tok = baton_smr_read_lock(srv->smr), rc;

	if (tok < 0)
		return tok; /* BATON_ENOMEM: this thread's record: a 500 */
	/* Acquire: pairs with set_handler's exchange; the record's fields
	 * are those it was published with. */
	h = __atomic_load_n(&srv->handler, __ATOMIC_ACQUIRE);
	rc = h->fn(h->ctx, view, resp);
	(void)baton_smr_read_unlock(srv->smr, tok);
	return rc;
}

/* The handle stage's function, on a compute worker. With a handler
 * timeout the stage cancels it when its connection leaves at the deadline
 * (BATON_STAGE_CANCEL_ABANDONED), and a job left before it started never
 * gets here. */
void baton__http_handle_job(void *item, void *ctx)
{
	struct http_job *job = item;
	int rc;

	rc = baton__http_call_handler(ctx, &job->view, &job->resp);
	if (rc == BATON_OK && job->resp.status == 0)
		job->resp.status = 200;
	job->rc = rc;
}

/* In the connection's task, asked by the handler (baton_stage_ask): write
 * the piece it handed over. */
static int job_piece_write(void *arg)
{
	struct http_job *job = arg;

	return baton__http_stream_put(job->stream, &job->resp, job->piece, job->piece_len);
}

/* In the handler: have the connection's task, which waits for the job,
 * write a streamed piece (its handle lives on its own worker); only then
 * does the handler go on. BATON_ECANCELED once the connection left. */
int baton__http_job_piece(struct http_job *job, const void *data, size_t len)
{
	if (job->piece_err != BATON_OK)
		return job->piece_err;
	job->piece = data;
	job->piece_len = len;
	return job->piece_err = baton_stage_ask(job->srv->handle, job, job_piece_write, job);
}

/* Call the handle stage with the request and wait for its job, writing
 * the pieces of a streamed response as the handler asks, until the view's
 * deadline. While the queue is full the connection is not read (we are not
 * reading); after queue_timeout_ns the request gets 503 with Retry-After.
 * At the deadline the connection leaves the job to the stage with the
 * request's bytes (c->in) and decoded path, which the handler may still
 * read (the connection closes after its 504). On success the job stays in
 * st->job until the response is written. */
int baton__http_handle_on_stage(struct http_conn *c, const struct baton_http_req *view,
				struct baton_http_resp *resp, struct http_stream *st,
				char **decoded)
{
	struct baton_stage_call call = BATON_STAGE_CALL_INIT;
	struct http_job *job = job_new(c, view, st);
	int rc;

	if (job == NULL)
		return BATON_ENOMEM;
	job->in = c->in;
	job->decoded = *decoded;
	call.item = job;
	call.abandon = job_abandoned;
	call.deadline = view->deadline;
	rc = baton_stage_call(c->srv->handle, &call, c->srv->a.queue_timeout_ns);
	if (call.queued && (rc == BATON_ETIMEDOUT || rc == BATON_ECANCELED)) {
		c->in = NULL; /* the job's now, with *decoded */
		c->in_len = c->in_cap = 0;
		*decoded = NULL;
		return HTTP_HANDLER_TIMED_OUT;
	}
	job->in = NULL; /* back with the job: ours */
	job->decoded = NULL;
	if (rc != BATON_OK) {
		baton__http_job_put(c, job);
		return rc == BATON_ENOMEM ? rc : -503;
	}
	st->job = job;
	*resp = job->resp;
	return job->rc;
}
