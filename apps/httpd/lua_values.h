/* SPDX-License-Identifier: MIT */
/*
 * apps/httpd/lua_values.h - the Lua handler's values (lua_values.c): the
 * request table it is given and the status, headers and body it returns.
 * Both run on the state's stack, inside lua_pcall (they may raise).
 */
#ifndef BATON_HTTPD_LUA_VALUES_H
#define BATON_HTTPD_LUA_VALUES_H

#include <lua.h>

#include "baton_lua.h"
#include "handlers.h"

/* Push the request table of docs/httpd.md. */
void httpd_lua_push_request(lua_State *L, const struct baton_http_req *req);

/* Push the body: a string, or nil when the request has none. */
void httpd_lua_push_body(lua_State *L, const struct baton_http_req *req);

/* Before each slice of a call: the request table at index idx is the one
 * being served again (other calls' slices ran on the state in between). */
void httpd_lua_serve_request(lua_State *L, int idx, const struct baton_http_req *req);

/* After the call (also after an error): the request's headers can no
 * longer be built (req is about to go away). */
void httpd_lua_end_request(lua_State *L);

/* Hand the handler's results, which start at stack index `base` (nret of
 * them), to the reply: status, headers, body. */
void httpd_lua_take_response(lua_State *L, int base, int nret, struct httpd_reply *r);

/* A reply made a stream (the handler returned a function as its body):
 * after httpd_reply_done, send the head, then call the function on bl for
 * one piece at a time, each a Lua run with the slice, deadline and budgets
 * of `limits` (the CPU budget is what the handler left of it), each piece
 * sent before the next is asked for, until it returns nil; the last result
 * of the handler (a broken rule or error is logged as httpd_reply_done
 * does). *stopped: the limit that stopped a piece (BATON_LUA_STOP_*). */
int httpd_lua_stream(baton_lua_t *bl, const struct baton_http_req *req, struct httpd_reply *r,
		     const char *file, const struct baton_lua_run *limits, int *stopped);

#endif
