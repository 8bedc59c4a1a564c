/* SPDX-License-Identifier: MIT */
/*
 * bindings/lua/lua_lib.c - the `baton` library of a state (baton_lua.h):
 * waits that park the run's task instead of its worker.
 *
 *   baton.sleep(seconds)          wait; other tasks of the worker run
 *   baton.yield()                 let them run once
 *   baton.now(), baton.clock()    wall-clock and monotonic seconds (floats)
 *   sock = baton.tcp()            a TCP client socket, as OpenResty's
 *   sock:settimeout(ms)             ngx.socket.tcp: the limit of each later
 *   ok, err = sock:connect(host, port)  connect, send or receive (60 s)
 *   n, err = sock:send(data)
 *   data, err, partial = sock:receive(n | "*l" | "*a")
 *   ok, err = sock:close()
 *   res, err = baton.http_request{ url = ..., method, headers, body, timeout }
 *   res, err = baton.http_get(url [, opts])    res.status, .headers, .body
 *
 * Errors are returned as nil plus a message ("timeout", "closed", "connection
 * refused", ...), as OpenResty's sockets do; a wait asked for outside a run,
 * or where Lua cannot yield, raises instead.
 */
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <lauxlib.h>

#include <baton/sched.h>

#include "lua_internal.h"

#define SOCK_META "baton.tcp"
#define SOCK_TIMEOUT_DEFAULT_NS (60 * 1000000000LL)
#define SOCK_BUF_MAX ((size_t)64 << 20) /* a receive buffers at most this */
#define SOCK_READ_CHUNK 16384

/* --- asking for a wait --------------------------------------------------- */

/* The run of L, ready for a wait of `kind`; raises where none can be. */
static struct baton_lua_op *want(lua_State *L, enum baton_lua_op_kind kind, const char *fn)
{
	struct baton_lua_task *t = baton__lua_task_of(L);

	if (t == NULL)
		luaL_error(L,
			   "%s: only in a task's own coroutine (a baton_lua_run, such as a "
			   "baton-httpd handler), not in a coroutine it made",
			   fn);
	if (!lua_isyieldable(L))
		luaL_error(L,
			   "%s: cannot wait inside a C call (a sort comparator, a gsub "
			   "function, a metamethod called from C)",
			   fn);
	memset(&t->op, 0, sizeof(t->op));
	t->op.kind = kind;
	return &t->op;
}

static int l_sleep(lua_State *L)
{
	lua_Number s = luaL_checknumber(L, 1);
	struct baton_lua_op *op;

	luaL_argcheck(L, s >= 0 && s <= 86400.0 * 365, 1, "seconds out of range");
	op = want(L, LOP_SLEEP, "baton.sleep");
	op->ns = (int64_t)(s * 1e9);
	return lua_yield(L, 0);
}

static int l_yield(lua_State *L)
{
	want(L, LOP_YIELD, "baton.yield");
	return lua_yield(L, 0);
}

static lua_Number clock_seconds(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (lua_Number)ts.tv_sec + (lua_Number)ts.tv_nsec / 1e9;
}

static int l_now(lua_State *L)
{
	lua_pushnumber(L, clock_seconds(CLOCK_REALTIME));
	return 1;
}

static int l_clock(lua_State *L)
{
	lua_pushnumber(L, clock_seconds(CLOCK_MONOTONIC));
	return 1;
}

/* --- sockets --------------------------------------------------------------- */

void baton__lua_sock_close(struct baton_lua_sock *s)
{
	if (s->io != NULL)
		baton_io_close(s->io); /* any thread: nobody waits on it now */
	s->io = NULL;
	free(s->buf);
	s->buf = NULL;
	s->off = s->len = s->cap = 0;
}

static struct baton_lua_sock *check_sock(lua_State *L)
{
	return luaL_checkudata(L, 1, SOCK_META);
}

void baton__lua_run_list(lua_State *L, int *ref)
{
	if (*ref == LUA_NOREF) {
		lua_newtable(L);
		*ref = luaL_ref(L, LUA_REGISTRYINDEX);
	}
	lua_rawgeti(L, LUA_REGISTRYINDEX, *ref);
	lua_pushvalue(L, -2);
	lua_pushboolean(L, 1);
	lua_rawset(L, -3);
	lua_pop(L, 1);
}

static int l_tcp(lua_State *L)
{
	struct baton_lua_task *t = baton__lua_task_of(L);
	struct baton_lua_sock *s;

	if (t == NULL)
		return luaL_error(L, "baton.tcp: only in a task's own coroutine");
	s = lua_newuserdatauv(L, sizeof(*s), 0);
	memset(s, 0, sizeof(*s));
	s->timeout_ns = SOCK_TIMEOUT_DEFAULT_NS;
	luaL_setmetatable(L, SOCK_META);
	/* The run closes it when it ends. */
	baton__lua_run_list(L, &t->socks_ref);
	return 1;
}

static int l_settimeout(lua_State *L)
{
	struct baton_lua_sock *s = check_sock(L);
	lua_Number ms = luaL_checknumber(L, 2);

	luaL_argcheck(L, ms >= 0 && ms <= 86400000.0 * 365, 2, "milliseconds out of range");
	s->timeout_ns = (int64_t)(ms * 1e6);
	if (s->timeout_ns == 0)
		s->timeout_ns = -1; /* 0: no limit, as OpenResty */
	return 0;
}

static int l_connect(lua_State *L)
{
	struct baton_lua_sock *s = check_sock(L);
	size_t len;
	const char *host = luaL_checklstring(L, 2, &len);
	lua_Integer port = luaL_checkinteger(L, 3);
	struct baton_lua_op *op;

	luaL_argcheck(L, port > 0 && port < 65536, 3, "port out of range");
	if (s->io != NULL) {
		lua_pushnil(L);
		lua_pushliteral(L, "already connected");
		return 2;
	}
	op = want(L, LOP_CONNECT, "sock:connect");
	op->sock = s;
	op->data = host; /* stays on this coroutine's stack while it waits */
	op->len = len;
	op->port = (int)port;
	return lua_yield(L, 0);
}

static int closed(lua_State *L, int nils)
{
	for (int i = 0; i < nils; i++)
		lua_pushnil(L);
	lua_pushliteral(L, "closed");
	return nils + 1;
}

static int l_send(lua_State *L)
{
	struct baton_lua_sock *s = check_sock(L);
	size_t len;
	const char *data = luaL_checklstring(L, 2, &len);
	struct baton_lua_op *op;

	if (s->io == NULL)
		return closed(L, 1);
	op = want(L, LOP_SEND, "sock:send");
	op->sock = s;
	op->data = data;
	op->len = len;
	return lua_yield(L, 0);
}

static int l_receive(lua_State *L)
{
	struct baton_lua_sock *s = check_sock(L);
	enum baton_lua_recv pat = LRECV_LINE;
	lua_Integer n = 0;
	struct baton_lua_op *op;

	if (lua_type(L, 2) == LUA_TNUMBER) {
		n = lua_tointeger(L, 2);
		luaL_argcheck(L, n >= 0 && (size_t)n <= SOCK_BUF_MAX, 2, "byte count out of range");
		pat = LRECV_N;
	} else if (!lua_isnoneornil(L, 2)) {
		const char *p = luaL_checkstring(L, 2);

		if (!strcmp(p, "*l") || !strcmp(p, "l"))
			pat = LRECV_LINE;
		else if (!strcmp(p, "*a") || !strcmp(p, "a"))
			pat = LRECV_ALL;
		else
			return luaL_argerror(L, 2, "a byte count, \"*l\" or \"*a\"");
	}
	if (s->io == NULL)
		return closed(L, 1);
	op = want(L, LOP_RECV, "sock:receive");
	op->sock = s;
	op->pattern = pat;
	op->len = (size_t)n;
	return lua_yield(L, 0);
}

static int l_close(lua_State *L)
{
	struct baton_lua_sock *s = check_sock(L);

	if (s->io == NULL)
		return closed(L, 1);
	baton__lua_sock_close(s);
	lua_pushinteger(L, 1);
	return 1;
}

static int l_gc(lua_State *L)
{
	baton__lua_sock_close(check_sock(L));
	return 0;
}

static int l_tostring(lua_State *L)
{
	struct baton_lua_sock *s = check_sock(L);

	lua_pushfstring(L, "baton.tcp (%s)", s->io ? "connected" : "not connected");
	return 1;
}

/* --- the waits, in the task ------------------------------------------------ */

/* Resolve host (an address, else a name: getaddrinfo blocks the worker
 * while it asks the resolver) and connect. */
static void do_connect(struct baton_lua_op *op)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV };
	struct addrinfo *ai = NULL;
	char host[256], port[8];
	int fd, g;

	if (op->len >= sizeof(host) || memchr(op->data, 0, op->len)) {
		op->rc = BATON_EINVAL;
		op->why = "bad host name";
		return;
	}
	memcpy(host, op->data, op->len);
	host[op->len] = '\0';
	snprintf(port, sizeof(port), "%d", op->port);
	g = getaddrinfo(host, port, &hints, &ai);
	if (g == EAI_NONAME) {
		hints.ai_flags = AI_NUMERICSERV;
		g = getaddrinfo(host, port, &hints, &ai);
	}
	if (g != 0) {
		op->rc = BATON_EINVAL;
		op->why = gai_strerror(g);
		return;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		op->rc = BATON_ESYS;
		op->err = errno;
		freeaddrinfo(ai);
		return;
	}
	op->rc = baton_io_open(&op->sock->io, fd, true);
	if (op->rc != BATON_OK) {
		op->err = errno;
		close(fd);
		op->sock->io = NULL;
	} else {
		op->rc = baton_io_connect(op->sock->io, ai->ai_addr, ai->ai_addrlen,
					  op->sock->timeout_ns);
		op->err = errno;
		if (op->rc != BATON_OK)
			baton__lua_sock_close(op->sock);
	}
	freeaddrinfo(ai);
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Is the answer in the buffer? Sets op->done to its length. */
static bool have(struct baton_lua_op *op)
{
	struct baton_lua_sock *s = op->sock;
	size_t avail = s->len - s->off;

	if (op->pattern == LRECV_N && avail >= op->len) {
		op->done = op->len;
		return true;
	}
	if (op->pattern == LRECV_LINE && avail > 0) {
		const char *nl = memchr(s->buf + s->off, '\n', avail);

		if (nl != NULL) {
			op->done = (size_t)(nl - (s->buf + s->off)) + 1;
			return true;
		}
	}
	return false;
}

static void do_recv(struct baton_lua_op *op)
{
	struct baton_lua_sock *s = op->sock;
	int64_t deadline = s->timeout_ns > 0 ? now_ns() + s->timeout_ns : 0;

	while (!have(op)) {
		size_t n = 0;
		int64_t left = -1;

		if (s->off > 0 && s->off == s->len)
			s->off = s->len = 0;
		if (s->cap - s->len < SOCK_READ_CHUNK) {
			size_t cap = s->cap ? s->cap * 2 : SOCK_READ_CHUNK * 2;
			char *b;

			if (s->off > 0) { /* room at the front first */
				memmove(s->buf, s->buf + s->off, s->len - s->off);
				s->len -= s->off;
				s->off = 0;
				continue;
			}
			if (cap > SOCK_BUF_MAX + SOCK_READ_CHUNK ||
			    (b = realloc(s->buf, cap)) == NULL) {
				op->rc = BATON_ENOMEM;
				op->why = "too large";
				return;
			}
			s->buf = b;
			s->cap = cap;
		}
		if (deadline) {
			left = deadline - now_ns();
			if (left <= 0) {
				op->rc = BATON_ETIMEDOUT;
				return;
			}
		}
		op->rc = baton_io_read(s->io, s->buf + s->len, s->cap - s->len, left, &n);
		op->err = errno;
		if (op->rc != BATON_OK)
			return;
		if (n == 0) {                       /* end of stream */
			op->done = s->len - s->off; /* "*a": all of it */
			if (op->pattern != LRECV_ALL)
				op->rc = BATON_ESHUTDOWN; /* "closed", the rest as partial */
			return;
		}
		s->len += n;
	}
	op->rc = BATON_OK;
}

void baton__lua_op_run(struct baton_lua_op *op, bool in_task)
{
	op->rc = BATON_OK;
	if (!in_task && op->kind != LOP_YIELD) {
		op->rc = BATON_ENOSCHED;
		op->why = "not in a baton task";
		return;
	}
	switch (op->kind) {
	case LOP_YIELD:
		if (in_task)
			baton_sched_yield();
		break;
	case LOP_SLEEP:
		op->rc = baton_sched_sleep(op->ns);
		break;
	case LOP_CONNECT:
		do_connect(op);
		break;
	case LOP_SEND:
		op->rc = baton_io_write(op->sock->io, op->data, op->len, op->sock->timeout_ns,
					&op->done);
		op->err = errno;
		break;
	case LOP_RECV:
		do_recv(op);
		break;
	case LOP_WAIT_THREADS:
		baton__lua_wait_threads(op);
		break;
	default:
		break;
	}
}

/* nil and the error's text. */
static int push_error(lua_State *L, const struct baton_lua_op *op)
{
	lua_pushnil(L);
	if (op->why)
		lua_pushstring(L, op->why);
	else if (op->rc == BATON_ETIMEDOUT)
		lua_pushliteral(L, "timeout");
	else if (op->rc == BATON_ESHUTDOWN ||
		 (op->rc == BATON_ESYS && (op->err == EPIPE || op->err == ECONNRESET)))
		lua_pushliteral(L, "closed");
	else if (op->rc == BATON_ESYS)
		lua_pushstring(L, strerror(op->err));
	else
		lua_pushstring(L, baton_strerror(op->rc));
	return 2;
}

/* Hand the received answer over and drop it from the buffer (a line
 * without its CR LF). */
static void push_received(lua_State *L, struct baton_lua_op *op)
{
	struct baton_lua_sock *s = op->sock;
	size_t n = op->done;

	if (op->pattern == LRECV_LINE && op->rc == BATON_OK) {
		n--; /* the LF */
		if (n > 0 && s->buf[s->off + n - 1] == '\r')
			n--;
	}
	lua_pushlstring(L, s->buf ? s->buf + s->off : "", n);
	s->off += op->done;
}

int baton__lua_op_push(lua_State *L, struct baton_lua_op *op)
{
	switch (op->kind) {
	case LOP_SLEEP:
	case LOP_YIELD:
		return 0;
	case LOP_WAIT_THREADS:
		if (op->rc != BATON_OK)
			return push_error(L, op);
		lua_pushboolean(L, 1);
		return 1;
	case LOP_CONNECT:
		if (op->rc != BATON_OK)
			return push_error(L, op);
		lua_pushinteger(L, 1);
		return 1;
	case LOP_SEND:
		if (op->rc != BATON_OK)
			return push_error(L, op);
		lua_pushinteger(L, (lua_Integer)op->done);
		return 1;
	case LOP_RECV:
		if (op->rc == BATON_OK) {
			push_received(L, op);
			return 1;
		}
		push_error(L, op); /* and what came before the error, as partial */
		op->done = op->sock->len - op->sock->off;
		push_received(L, op);
		return 3;
	default:
		return 0;
	}
}

/* --- the coroutine library, told to the slice clock ----------------------- */

/*
 * coroutine.resume and coroutine.wrap as Lua's own (lcorolib.c), except
 * that they tell the slice clock which coroutine runs (lua_slice.c): a hook
 * the clock sets must go to that one, or a loop inside a coroutine the
 * task made would never see the end of its slice (nor its deadline).
 */

/* Resume co with the narg values on top of L: the number of results moved
 * to L, or -1 with the error on top of L. */
static int resume_in(lua_State *L, lua_State *co, int narg)
{
	lua_State *prev;
	int status, nres;

	if (!lua_checkstack(co, narg)) {
		lua_pushliteral(L, "too many arguments to resume");
		return -1;
	}
	lua_xmove(L, co, narg);
	prev = baton__lua_slice_enter(co);
	status = lua_resume(co, L, narg, &nres);
	baton__lua_slice_leave(co, prev);
	if (status != LUA_OK && status != LUA_YIELD) {
		lua_xmove(co, L, 1);
		return -1;
	}
	if (!lua_checkstack(L, nres + 1)) {
		lua_pop(co, nres);
		lua_pushliteral(L, "too many results to resume");
		return -1;
	}
	lua_xmove(co, L, nres);
	return nres;
}

static int co_resume(lua_State *L)
{
	lua_State *co = lua_tothread(L, 1);
	int n;

	luaL_argexpected(L, co != NULL, 1, "thread");
	n = resume_in(L, co, lua_gettop(L) - 1);
	if (n < 0) {
		lua_pushboolean(L, 0);
		lua_insert(L, -2);
		return 2; /* false, the error */
	}
	lua_pushboolean(L, 1);
	lua_insert(L, -(n + 1));
	return n + 1; /* true, what it returned or yielded */
}

static int co_wrapped(lua_State *L)
{
	lua_State *co = lua_tothread(L, lua_upvalueindex(1));
	int n = resume_in(L, co, lua_gettop(L)), st;

	if (n >= 0)
		return n;
	st = lua_status(co);
	if (st != LUA_OK && st != LUA_YIELD) { /* it failed: close it, pass its error on */
#if LUA_VERSION_RELEASE_NUM >= 50406
		st = lua_closethread(co, L);
#else
		st = lua_resetthread(co);
#endif
		lua_xmove(co, L, 1);
	}
	if (st != LUA_ERRMEM && lua_type(L, -1) == LUA_TSTRING) {
		luaL_where(L, 1); /* where the wrapped function was called */
		lua_insert(L, -2);
		lua_concat(L, 2);
	}
	return lua_error(L);
}

static int co_wrap(lua_State *L)
{
	lua_State *co;

	luaL_checktype(L, 1, LUA_TFUNCTION);
	co = lua_newthread(L);
	lua_pushvalue(L, 1);
	lua_xmove(L, co, 1);
	lua_pushcclosure(L, co_wrapped, 1);
	return 1;
}

static void replace_coroutine_lib(lua_State *L)
{
	if (lua_getglobal(L, "coroutine") == LUA_TTABLE) {
		lua_pushcfunction(L, co_resume);
		lua_setfield(L, -2, "resume");
		lua_pushcfunction(L, co_wrap);
		lua_setfield(L, -2, "wrap");
	}
	lua_pop(L, 1);
}

/* --- the HTTP client, in Lua over the sockets ------------------------------ */

static const char http_client[] =
	"local baton = ...\n"
	"local function parse_url(url)\n"
	"  local rest = url:match('^[hH][tT][tT][pP]://(.*)$')\n"
	"  if not rest then return nil, 'only http:// URLs' end\n"
	"  local authority, path = rest:match('^([^/?#]*)([^#]*)')\n"
	"  if path == '' then path = '/' elseif path:sub(1, 1) == '?' then path = '/' .. path end\n"
	"  local host, port = authority:match('^%[(.-)%]:?(%d*)$')\n"
	"  if not host then host, port = authority:match('^([^:@]+):?(%d*)$') end\n"
	"  if not host then return nil, 'bad URL' end\n"
	"  return host, tonumber(port) or 80, path, authority\n"
	"end\n"
	"local function check(s, what)\n"
	"  s = tostring(s)\n"
	"  if s:find('[\\r\\n%z]') then error('http_request: CR, LF or NUL in ' .. what, 3) end\n"
	"  return s\n"
	"end\n"
	"local function read_headers(sock)\n"
	"  local h = {}\n"
	"  while true do\n"
	"    local line, err = sock:receive('*l')\n"
	"    if not line then return nil, err end\n"
	"    if line == '' then return h end\n"
	"    local name, value = line:match('^([^:]+):%s*(.-)%s*$')\n"
	"    if name then\n"
	"      name = name:lower()\n"
	"      h[name] = h[name] and (h[name] .. ', ' .. value) or value\n"
	"    end\n"
	"  end\n"
	"end\n"
	"local function read_chunked(sock)\n"
	"  local parts = {}\n"
	"  while true do\n"
	"    local line, err = sock:receive('*l')\n"
	"    if not line then return nil, err end\n"
	"    local size = tonumber(line:match('^%x+'), 16)\n"
	"    if not size then return nil, 'bad chunk size' end\n"
	"    if size == 0 then\n"
	"      local _, e = read_headers(sock)\n"
	"      if e then return nil, e end\n"
	"      return table.concat(parts)\n"
	"    end\n"
	"    local data, e = sock:receive(size)\n"
	"    if not data then return nil, e end\n"
	"    parts[#parts + 1] = data\n"
	"    if sock:receive('*l') ~= '' then return nil, 'bad chunk end' end\n"
	"  end\n"
	"end\n"
	"local function exchange(sock, opts, host, port, path, authority)\n"
	"  local ok, err = sock:connect(host, port)\n"
	"  if not ok then return nil, 'connect: ' .. err end\n"
	"  local method = check(opts.method or 'GET', 'the method')\n"
	"  local lines = { method .. ' ' .. check(path, 'the URL') .. ' HTTP/1.1',\n"
	"                  'Host: ' .. authority, 'Connection: close' }\n"
	"  for k, v in pairs(opts.headers or {}) do\n"
	"    lines[#lines + 1] = check(k, 'a header name') .. ': ' .. check(v, 'a header value')\n"
	"  end\n"
	"  if opts.body then lines[#lines + 1] = 'Content-Length: ' .. #opts.body end\n"
	"  ok, err = sock:send(table.concat(lines, '\\r\\n') .. '\\r\\n\\r\\n' .. (opts.body or "
	"''))\n"
	"  if not ok then return nil, 'send: ' .. err end\n"
	"  local status, headers\n"
	"  repeat\n"
	"    local line, e = sock:receive('*l')\n"
	"    if not line then return nil, 'receive: ' .. e end\n"
	"    status = tonumber(line:match('^HTTP/1%.%d (%d%d%d)'))\n"
	"    if not status then return nil, 'bad status line' end\n"
	"    headers, e = read_headers(sock)\n"
	"    if not headers then return nil, 'receive: ' .. e end\n"
	"  until status >= 200\n"
	"  local body, e = ''\n"
	"  local te, cl = headers['transfer-encoding'], headers['content-length']\n"
	"  if method == 'HEAD' or status == 204 or status == 304 then\n"
	"  elseif te and te:lower():find('chunked') then body, e = read_chunked(sock)\n"
	"  elseif cl then\n"
	"    local n = tonumber(cl)\n"
	"    if not n or n < 0 or n ~= math.floor(n) then return nil, 'bad Content-Length' end\n"
	"    body, e = sock:receive(n)\n"
	"  else body, e = sock:receive('*a') end\n"
	"  if not body then return nil, 'receive: ' .. e end\n"
	"  return { status = status, headers = headers, body = body }\n"
	"end\n"
	"function baton.http_request(opts)\n"
	"  if type(opts) ~= 'table' or type(opts.url) ~= 'string' then\n"
	"    error('http_request: a table with a url string expected', 2)\n"
	"  end\n"
	"  local host, port, path, authority = parse_url(opts.url)\n"
	"  if not host then return nil, port end\n"
	"  local sock = baton.tcp()\n"
	"  sock:settimeout(opts.timeout or 60000)\n"
	"  local res, err = exchange(sock, opts, host, port, path, authority)\n"
	"  sock:close()\n"
	"  return res, err\n"
	"end\n"
	"function baton.http_get(url, opts)\n"
	"  local o = {}\n"
	"  for k, v in pairs(opts or {}) do o[k] = v end\n"
	"  o.url, o.method = url, 'GET'\n"
	"  return baton.http_request(o)\n"
	"end\n";

int baton__lua_open_lib(lua_State *L)
{
	struct baton_lua *bl = lua_touserdata(L, 1);

	static const luaL_Reg lib[] = {
		{ "sleep", l_sleep }, { "yield", l_yield }, { "now", l_now },
		{ "clock", l_clock }, { "tcp", l_tcp },     { NULL, NULL },
	};
	static const luaL_Reg sock[] = {
		{ "settimeout", l_settimeout }, { "connect", l_connect }, { "send", l_send },
		{ "receive", l_receive },       { "close", l_close },     { NULL, NULL },
	};

	luaL_newmetatable(L, SOCK_META);
	luaL_newlib(L, sock);
	lua_setfield(L, -2, "__index");
	lua_pushcfunction(L, l_gc);
	lua_setfield(L, -2, "__gc");
	lua_pushcfunction(L, l_gc);
	lua_setfield(L, -2, "__close");
	lua_pushcfunction(L, l_tostring);
	lua_setfield(L, -2, "__tostring");
	lua_pop(L, 1);
	luaL_newlib(L, lib);
	baton__lua_open_bg(L, bl);
	if (luaL_loadbuffer(L, http_client, sizeof(http_client) - 1, "=baton.http") != LUA_OK)
		return lua_error(L);
	lua_pushvalue(L, -2);
	lua_call(L, 1, 0);
	lua_setglobal(L, "baton");
	replace_coroutine_lib(L);
	return 0;
}
