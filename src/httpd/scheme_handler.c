/*
 * The Scheme handler of baton-httpd: CHICKEN Scheme on its own stack
 * (bindings/chicken), entered through the call sequencer from whichever
 * worker a request arrives on. The user's file is interpreted by CHICKEN's
 * eval (scheme_host.scm); the response is copied into the request's scratch
 * buffer inside the call, since the collector moves Scheme strings.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baton_chicken.h"
#include "handlers.h"

/* Generated from scheme_host.scm by define-sequenced-callback. */
int httpd_scheme_load_file_try(char *path, int *ret);
int httpd_scheme_handle_try(char *method, char *target, int minor, void *body, int body_len,
			    void *out, int cap, void *lens, int *ret);

static int started;

void *httpd_scheme_load(const char *file)
{
	int ok = 0;

	if (!started) {
		if (baton_chicken_start(NULL) != BATON_OK) {
			fprintf(stderr, "baton-httpd: cannot start CHICKEN\n");
			return NULL;
		}
		started = 1;
	}
	if (httpd_scheme_load_file_try((char *)file, &ok) != BATON_OK || !ok)
		return NULL;
	return (void *)file;
}

void httpd_scheme_unload(void *ctx)
{
	(void)ctx;
}

int httpd_scheme(void *ctx, const struct baton_http_req *req, struct baton_http_resp *resp)
{
	char method[32], target[8192];
	int lens[2] = { 0, 0 }, status = -1, rc;
	/* Room in scratch for the names and values, NUL-terminated in place. */
	char *out = resp->scratch;
	int cap = (int)resp->scratch_cap;

	(void)ctx;
	if (req->method_len >= sizeof(method) || req->target_len >= sizeof(target))
		return BATON_EINVAL;
	memcpy(method, req->method, req->method_len);
	method[req->method_len] = '\0';
	memcpy(target, req->target, req->target_len);
	target[req->target_len] = '\0';
	rc = httpd_scheme_handle_try(method, target, req->version_minor, (void *)req->body,
				     (int)req->body_len, out, cap, lens, &status);
	if (rc != BATON_OK)
		return rc;
	if (status < 0) {
		if (status == -2)
			fprintf(stderr, "baton-httpd: scheme response larger than %d bytes\n", cap);
		return BATON_EINVAL;
	}
	resp->status = status;
	for (int pos = 0; pos < lens[0];) {
		const char *name = out + pos, *value = name + strlen(name) + 1;

		pos = (int)(value + strlen(value) + 1 - out);
		if (strcasecmp(name, "content-type") == 0)
			resp->content_type = value;
		else if (resp->nextra < BATON_HTTP_MAX_EXTRA) {
			resp->extra_names[resp->nextra] = name;
			resp->extra_values[resp->nextra++] = value;
		}
	}
	resp->body = out + lens[0];
	resp->body_len = (size_t)lens[1];
	return BATON_OK;
}
