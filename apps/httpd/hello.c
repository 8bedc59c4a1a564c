/* The built-in handler: "Hello, World!\n" for every request. */
#include "handlers.h"

int httpd_hello(void *ctx, const struct baton_http_req *req, struct baton_http_resp *resp)
{
	static const char body[] = "Hello, World!\n";

	(void)ctx;
	(void)req;
	resp->status = 200;
	resp->content_type = "text/plain";
	resp->body = body;
	resp->body_len = sizeof(body) - 1;
	return BATON_OK;
}
