/*
 * The Scheme handler of baton-httpd: CHICKEN Scheme on its own stack
 * (bindings/chicken), entered through the call sequencer from whichever
 * worker a request arrives on. The handler file is compiled by csc at
 * start-up (scheme_compile.c) and the shared object loaded, or a shared
 * object is given as is, or, with --scheme-eval, the file is interpreted by
 * CHICKEN's eval (scheme_host.scm). The request reaches Scheme through the
 * accessors below, with no copy of its own on the way; the response comes
 * back field by field into a reply (reply.c), copied while the call is still
 * on the runtime's stack, since the collector moves Scheme strings.
 *
 * CHICKEN has one runtime per process, so there is one handler.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baton_chicken.h"
#include "handlers.h"

/* Generated from scheme_host.scm by define-sequenced-callback. */
int httpd_scheme_eval_file_try(char *path, int *ret);
int httpd_scheme_load_so_try(char *path, char *shown_as, int *ret);
int httpd_scheme_handle_try(void *req, void *reply);

struct scheme_handler {
	const char *file;
	size_t max_response_body;
};

static struct scheme_handler the_handler;

static const char *req_part(const struct baton_http_req *req, int part, int i, size_t *len)
{
	const char *name, *value;
	size_t nl, vl;

	switch (part) {
	case 0:
		*len = req->method_len;
		return req->method;
	case 1:
		*len = req->target_len;
		return req->target;
	case 2:
		*len = req->body ? req->body_len : 0;
		return req->body;
	default:
		if (i < 0 || baton_http_req_field(req, (size_t)i, &name, &nl, &value, &vl) != BATON_OK) {
			*len = 0;
			return NULL;
		}
		*len = part == 3 ? nl : vl;
		return part == 3 ? name : value;
	}
}

size_t httpd_scm_req_size(const struct baton_http_req *req, int part, int i)
{
	size_t len;

	req_part(req, part, i, &len);
	return len;
}

/* dst is a fresh string of httpd_scm_req_size() bytes; nothing allocates
 * in Scheme between the two calls, so the sizes agree. */
void httpd_scm_req_copy(const struct baton_http_req *req, int part, int i, void *dst)
{
	size_t len;
	const char *p = req_part(req, part, i, &len);

	if (len)
		memcpy(dst, p, len);
}

int httpd_scm_req_nfields(const struct baton_http_req *req)
{
	const char *name, *value;
	size_t nl, vl;
	int n = 0;

	while (baton_http_req_field(req, (size_t)n, &name, &nl, &value, &vl) == BATON_OK)
		n++;
	return n;
}

int httpd_scm_req_minor(const struct baton_http_req *req)
{
	return req->version_minor;
}

void httpd_scm_rule(struct httpd_reply *r, const void *msg, size_t len)
{
	httpd_reply_rule(r, "%.*s", (int)(len > INT_MAX ? INT_MAX : len), (const char *)msg);
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Compile (or take) the shared object and load it; or eval the file. */
static int install(const struct httpd_handler_opts *opts, char *path)
{
	char dir[PATH_MAX], so[PATH_MAX];
	int ok = 0, rc;

	if (opts->scheme_eval)
		rc = httpd_scheme_eval_file_try(path, &ok);
	else if (ends_with(path, ".so"))
		rc = httpd_scheme_load_so_try(path, (char *)opts->file, &ok);
	else {
		if (httpd_scheme_compile(path, dir, sizeof(dir), so, sizeof(so)) != 0)
			return -1;
		rc = httpd_scheme_load_so_try(so, (char *)opts->file, &ok);
		/* Mapped by now: the files are not needed any more. */
		httpd_scheme_clean(dir);
	}
	return rc == BATON_OK && ok ? 0 : -1;
}

void *httpd_scheme_load(const struct httpd_handler_opts *opts)
{
	static int started;
	char path[PATH_MAX];

	/* Absolute: dlopen looks for a bare name in the library path, and
	 * csc compiles from its temporary directory. */
	if (realpath(opts->file, path) == NULL) {
		perror(opts->file);
		return NULL;
	}
	if (!started) {
		if (baton_chicken_start(NULL) != BATON_OK) {
			fprintf(stderr, "baton-httpd: cannot start CHICKEN\n");
			return NULL;
		}
		started = 1;
	}
	if (install(opts, path) != 0)
		return NULL;
	the_handler.file = opts->file;
	the_handler.max_response_body = opts->max_response_body;
	return &the_handler;
}

void httpd_scheme_unload(void *ctx)
{
	(void)ctx; /* CHICKEN cannot be stopped and started again */
}

int httpd_scheme(void *ctx, const struct baton_http_req *req, struct baton_http_resp *resp)
{
	struct scheme_handler *h = ctx;
	struct httpd_reply reply;
	int rc;

	httpd_reply_init(&reply, resp, h->max_response_body);
	rc = httpd_scheme_handle_try((void *)req, &reply);
	if (rc != BATON_OK) {
		const char *why = baton_strerror(rc);

		httpd_reply_error(&reply, why, strlen(why));
	}
	return httpd_reply_done(&reply, "scheme", h->file);
}
