/*
 * src/httpd/handlers.h - the handlers baton-httpd can run: hello (C), a Lua
 * file and a Scheme file, each behind the baton/http.h handler shape.
 */
#ifndef BATON_HTTPD_HANDLERS_H
#define BATON_HTTPD_HANDLERS_H

#include <baton/http.h>

int httpd_hello(void *ctx, const struct baton_http_req *req, struct baton_http_resp *resp);

/* Load FILE and return a handler context for httpd_lua / httpd_scheme;
 * on failure print why on stderr and return NULL. */
void *httpd_lua_load(const char *file);
int httpd_lua(void *ctx, const struct baton_http_req *req, struct baton_http_resp *resp);
void httpd_lua_unload(void *ctx);

void *httpd_scheme_load(const char *file);
int httpd_scheme(void *ctx, const struct baton_http_req *req, struct baton_http_resp *resp);
void httpd_scheme_unload(void *ctx);

#endif
