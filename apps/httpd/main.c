/* SPDX-License-Identifier: MIT */
/*
 * baton-httpd: the HTTP/1.1 server of baton/http.h as a program.
 *
 *   baton-httpd --port 8080 --workers 2 --handler hello
 *   baton-httpd --port 8080 --handler lua bench/http/baton-hello.lua
 *   baton-httpd --port 8080 --handler scheme bench/http/baton-hello.scm
 *
 * The Lua and Scheme handlers (handlers.h, docs/httpd.md) are loaded once the
 * scheduler exists, since Lua gets a state per worker.
 *
 * SIGTERM and SIGINT stop accepting and drain the requests in flight; the
 * process then exits 0. Signals are read from a signalfd by a worker's
 * reactor: with one worker the process has one thread (signal_ctx).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include <baton/http.h>
#include <baton/io.h>
#include <baton/sched.h>

#include "admin.h"
#include "handlers.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: baton-httpd [options]\n"
		"  --port N                 port to listen on (default 8080; 0 = any)\n"
		"  --address A              IPv4 address to bind (default 0.0.0.0)\n"
		"  --workers N              I/O workers: accept, read, write (default 1; 0 = one "
		"per CPU)\n"
		"  --compute-workers N      run handlers on N more workers of their own (default "
		"0:\n"
		"                           handlers run on the I/O workers, in the connection's "
		"task)\n"
		"  --handler-queue N        requests waiting for a handler (1024)\n"
		"  --queue-timeout MS       503 + Retry-After after waiting this long to reach a\n"
		"                           handler (1000)\n"
		"  --handler-timeout MS     504 when a handler has not answered MS after its "
		"request\n"
		"                           was read; the handler's task is cancelled (0 = no "
		"limit,\n"
		"                           the default; docs/httpd.md, Limits)\n"
		"  --handler hello          the built-in hello-world handler (default)\n"
		"  --handler debug          hello, and routes that never answer (/spin, /block, "
		"...:\n"
		"                           apps/httpd/hello.c), for testing the limits\n"
		"  --handler lua FILE       FILE returns function(request, body) -> status, "
		"headers, body\n"
		"  --handler scheme FILE    FILE's last expression is (lambda (request body) ...) "
		"->\n"
		"                           (values headers body) or (values status headers "
		"body);\n"
		"                           compiled with csc at start-up; FILE.so is loaded as "
		"is\n"
		"  --lua-shared             one Lua state for all workers (default: one per "
		"worker)\n"
		"  --lua-slice TIME         how long a Lua handler computes before the other\n"
		"                           requests of its worker get a turn: ms, or with a unit\n"
		"                           (500us, 2ms); off: only at its waits (default 1ms)\n"
		"  --handler-cpu TIME       a Lua or Scheme handler's CPU budget per request (ms,\n"
		"                           or with a unit); past it the handler is stopped and\n"
		"                           the request answered 504 (default 10000; 0 = none)\n"
		"  --handler-memory BYTES   a Lua or Scheme handler's memory budget per request\n"
		"                           (k, M, G: KiB, MiB, GiB); over it an allocation fails\n"
		"                           (\"not enough memory\", a 500) (default 64M; 0 = "
		"none)\n"
		"  --route-limits PREFIX cpu=TIME,memory=BYTES  the budgets of the requests whose\n"
		"                           path starts with PREFIX (longest prefix wins; repeat)\n"
		"  --lua-max-timers N       pending baton.after/baton.every timers per Lua state;\n"
		"                           past it they return nil, \"too many pending timers\" "
		"(1024)\n"
		"  --scheme-eval            interpret the Scheme FILE with eval instead of "
		"compiling it\n"
		"  --max-response-body BYTES  a Lua or Scheme response body above it is a 500 "
		"(16777216)\n"
		"  --static DIR             serve GET/HEAD files under DIR before the handler, "
		"never\n"
		"                           a file outside it\n"
		"  --static-symlinks off|on|owner  symbolic links under --static: never followed\n"
		"                           (off, the default), followed while they stay inside "
		"DIR\n"
		"                           (on), or also only to what the link's owner owns "
		"(owner)\n"
		"  --admin [ADDR:]PORT      GET /_stats and POST /_limits on a listener of their "
		"own\n"
		"                           (ADDR 127.0.0.1 if left out; PORT 0 = any); the "
		"public\n"
		"                           port answers 404 there. Default: no admin listener\n"
		"  --max-connections N      accept pauses at N open connections (10000)\n"
		"  --handler-concurrency N  handlers running at once (256)\n"
		"  --max-inflight N         requests between parsed and written (4096)\n"
		"  --max-body BYTES         413 above it (1048576)\n"
		"  --max-header-bytes BYTES 431 above it (32768)\n"
		"  --max-target BYTES       414 above it (8192)\n"
		"  --header-timeout MS      408 when a request head takes longer (10000)\n"
		"  --idle-timeout MS        close keep-alive connections idle longer (60000)\n"
		"  --linger MS              after a closing response, drain the client this long "
		"(2000; 0 = off)\n"
		"  --io epoll|io_uring      reactor backend (default: io_uring if available)\n"
		"  --drain-timeout MS       after SIGTERM/SIGINT, exit after this long even with\n"
		"                           requests unfinished, saying what was dropped (30000)\n"
		"SIGHUP reloads the handler (a Lua or Scheme file's current contents): requests\n"
		"in flight finish on the old one, new ones get the new one, none is dropped.\n"
		"A Lua or Scheme handler that raises an error or returns a response that breaks\n"
		"a rule (docs/httpd.md) gets a 500 and one line on stderr.\n");
}

static long parse_num(const char *opt, const char *s, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = s ? strtol(s, &end, 10) : 0;
	if (s == NULL || errno || *end || v < min || v > max) {
		fprintf(stderr, "baton-httpd: %s wants an integer in [%ld, %ld]\n", opt, min, max);
		exit(2);
	}
	return v;
}

/* A time: a number of ms, or one with a unit (ns, us, ms, s); *ns gets it. */
static bool parse_time(const char *s, int64_t *ns)
{
	char *end;
	double v, unit = 1e6;

	errno = 0;
	v = s ? strtod(s, &end) : 0;
	if (s == NULL || errno || end == s || v < 0 || v != v)
		return false;
	if (*end == '\0' || !strcmp(end, "ms"))
		unit = 1e6;
	else if (!strcmp(end, "us"))
		unit = 1e3;
	else if (!strcmp(end, "ns"))
		unit = 1;
	else if (!strcmp(end, "s"))
		unit = 1e9;
	else
		return false;
	if (v * unit > 86400e9)
		return false;
	*ns = (int64_t)(v * unit + 0.5);
	return true;
}

/* A size: bytes, or with k, M, G (KiB, MiB, GiB; "KiB" and "kB" spellings too). */
static bool parse_size(const char *s, size_t *out)
{
	char *end;
	double v, unit = 1;

	errno = 0;
	v = s ? strtod(s, &end) : 0;
	if (s == NULL || errno || end == s || v < 0 || v != v)
		return false;
	switch (*end) {
	case '\0':
		break;
	case 'k':
	case 'K':
		unit = 1024.0;
		end++;
		break;
	case 'm':
	case 'M':
		unit = 1024.0 * 1024;
		end++;
		break;
	case 'g':
	case 'G':
		unit = 1024.0 * 1024 * 1024;
		end++;
		break;
	default:
		return false;
	}
	if (*end && strcmp(end, "iB") && strcmp(end, "B") && strcmp(end, "b"))
		return false;
	if (v * unit > 1e15)
		return false;
	*out = (size_t)(v * unit + 0.5);
	return true;
}

static int64_t parse_time_opt(const char *opt, const char *v)
{
	int64_t ns;

	if (!parse_time(v, &ns)) {
		fprintf(stderr,
			"baton-httpd: %s wants a time: ms, or with a unit (500us, 2ms, 1s)\n", opt);
		exit(2);
	}
	return ns;
}

static size_t parse_size_opt(const char *opt, const char *v)
{
	size_t n;

	if (!parse_size(v, &n)) {
		fprintf(stderr, "baton-httpd: %s wants a size: bytes, or with k, M or G (64M)\n",
			opt);
		exit(2);
	}
	return n;
}

#define LUA_SLICE_MIN_NS 10000LL      /* 10 us */
#define LUA_SLICE_MAX_NS 1000000000LL /* 1 s */

/* --lua-slice: a time now. It was a number of VM instructions (100 and
 * up, 10000 by default): a bare number is read as ms, and one that can
 * only have meant instructions (above the longest slice) is refused with
 * a word on the change. */
static int64_t parse_slice(const char *v)
{
	int64_t ns;
	char *end;
	long n;

	if (v && !strcmp(v, "off"))
		return -1;
	errno = 0;
	n = v ? strtol(v, &end, 10) : 0;
	if (v && !errno && end != v && *end == '\0' && n > 1000) {
		fprintf(stderr,
			"baton-httpd: --lua-slice %s: a slice is a time now (ms by default, "
			"at most 1000 ms), no longer a count of VM instructions; give a time such "
			"as 1ms or 250us, or off\n",
			v);
		exit(2);
	}
	if (!parse_time(v, &ns) || ns < LUA_SLICE_MIN_NS || ns > LUA_SLICE_MAX_NS) {
		fprintf(stderr,
			"baton-httpd: --lua-slice wants a time from 10us to 1000ms (ms by "
			"default: 1, 0.5, 250us, 2ms), or off\n");
		exit(2);
	}
	if (!errno && end != v && *end == '\0' && n >= 100) /* the old form's range */
		fprintf(stderr,
			"baton-httpd: --lua-slice %s is read as %s ms (a slice was a count "
			"of VM instructions before); write %sms to say so\n",
			v, v, v);
	return ns;
}

/* --route-limits PREFIX cpu=TIME,memory=SIZE: one more route. */
static void add_route(struct httpd_handler_opts *ho, const char *prefix, const char *spec)
{
	struct httpd_route_limits *routes,
		r = { prefix, prefix ? strlen(prefix) : 0, { 0, 0 }, false, false };
	char buf[256], *save = NULL, *item;

	if (prefix == NULL || spec == NULL || prefix[0] != '/' || strlen(spec) >= sizeof(buf)) {
		fprintf(stderr,
			"baton-httpd: --route-limits wants a path prefix (/api/) and its "
			"limits (cpu=5000,memory=256M)\n");
		exit(2);
	}
	strcpy(buf, spec);
	for (item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		if (!strncmp(item, "cpu=", 4) && parse_time(item + 4, &r.lim.cpu_ns)) {
			r.has_cpu = true;
		} else if (!strncmp(item, "memory=", 7) && parse_size(item + 7, &r.lim.mem_bytes)) {
			r.has_mem = true;
		} else {
			fprintf(stderr,
				"baton-httpd: --route-limits %s: '%s' is not cpu=TIME or "
				"memory=BYTES\n",
				prefix, item);
			exit(2);
		}
	}
	routes = realloc((void *)ho->routes, (ho->nroutes + 1) * sizeof(*routes));
	if (routes == NULL) {
		fprintf(stderr, "baton-httpd: out of memory\n");
		exit(1);
	}
	routes[ho->nroutes++] = r;
	ho->routes = routes;
}

/*
 * Signals. SIGTERM, SIGINT and SIGHUP are blocked in every thread and read
 * from a signalfd by the reactor of the worker that opened it (a
 * notification, baton/io.h: no task waits for them, so they keep no run
 * alive), so that a server with one worker has one thread: in a process
 * with more, the kernel takes a reference on the file of every recv and
 * send (docs/io.md). What a signal asks for may block (a reload compiles
 * and waits for a grace period; a drain waits for the run to end), so it
 * is done on a thread of its own that lives only while there is such
 * work: the action thread.
 */
struct signal_ctx {
	sigset_t set;
	int sfd; /* the signalfd; its handle owns it once open */
	baton_http_server_t *srv, *admin;
	const char *kind; /* the handler, for SIGHUP's reload */
	const struct httpd_handler_opts *ho;
	void *ctx;     /* the handler's context now (its Lua timers) */
	long drain_ms; /* --drain-timeout */
	pthread_mutex_t lock;
	pthread_cond_t ended_cond;
	bool ended; /* the run returned: drained (under lock) */
	/* Signals read and not yet acted on, and the action thread (under
	 * lock, but th and has_th: the reactor's, then main's after the run). */
	unsigned hups; /* SIGHUPs to act on, in turn */
	int term;      /* SIGTERM or SIGINT, once: nothing after it */
	bool running;  /* the action thread is at work */
	bool has_th;   /* th was started and is not joined yet */
	pthread_t th;
	bool failed; /* signals cannot be read: the server stopped */
};

/* The drain did not end in time (a handler that never returns keeps its
 * request, and the run, alive): say what is left and exit anyway. */
static void drain_expired(struct signal_ctx *sc)
{
	struct baton_http_server_stats st;

	if (baton_http_server_snapshot(sc->srv, &st) == BATON_OK)
		fprintf(stderr,
			"baton-httpd: drain timeout after %ld ms: exiting with %u "
			"handler(s) running, %zu request(s) waiting for one, %ld "
			"connection(s) open; their requests are dropped\n",
			sc->drain_ms, st.stages[2].running, st.stages[2].queued,
			st.pools[0].in_use);
	else
		fprintf(stderr, "baton-httpd: drain timeout after %ld ms: exiting\n", sc->drain_ms);
	_exit(1);
}

/* Stop accepting: the public server and the admin listener. */
static void stop_servers(struct signal_ctx *sc)
{
	baton_http_server_shutdown(sc->srv);
	if (sc->admin)
		baton_http_server_shutdown(sc->admin);
}

/* Wait for the run to end, at most the drain timeout. */
static void await_drain(struct signal_ctx *sc)
{
	struct timespec until;
	bool ended;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += sc->drain_ms / 1000;
	until.tv_nsec += (sc->drain_ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&sc->lock);
	while (!sc->ended && pthread_cond_timedwait(&sc->ended_cond, &sc->lock, &until) == 0)
		;
	ended = sc->ended;
	pthread_mutex_unlock(&sc->lock);
	if (!ended)
		drain_expired(sc);
}

static int load_handler(const char *kind, const struct httpd_handler_opts *ho,
			struct baton_http_server_attr *a);
static void unload_handler(const char *kind, void *ctx);

/* A Lua handler's timers (baton.after, baton.every): cancelled on reload
 * and shutdown. */
static void stop_timers(const char *kind, void *ctx)
{
#if BATON_HTTPD_LUA
	if (!strcmp(kind, "lua"))
		httpd_lua_stop_timers(ctx);
#endif
	(void)kind;
	(void)ctx;
}

/* How long a reload waits for the requests still on the old handler
 * before it leaves its release to them (the server releases it after
 * their end, or at exit). */
#define RELOAD_WAIT_NS 30000000000LL

/* SIGHUP: load the handler again (its file's current contents) and put it
 * in place; requests in flight finish on the old one, which is released
 * after the last of them. A handler that fails to load changes nothing. */
static void reload(struct signal_ctx *sc)
{
	struct baton_http_server_attr na;
	int rc;

	baton_http_server_attr_init(&na);

	fprintf(stderr, "baton-httpd: SIGHUP: reloading the %s handler%s%s\n", sc->kind,
		sc->ho->file ? " from " : "", sc->ho->file ? sc->ho->file : "");
	if (load_handler(sc->kind, sc->ho, &na) != 0) {
		fprintf(stderr, "baton-httpd: reload failed: the running handler stays\n");
		return;
	}
	/* The old handler's timers end now: its requests in flight finish on
	 * it, but nothing new starts there. */
	stop_timers(sc->kind, sc->ctx);
	rc = baton_http_server_set_handler(sc->srv, na.handler, na.ctx, na.release, RELOAD_WAIT_NS);
	if (rc == BATON_OK || rc == BATON_ETIMEDOUT)
		sc->ctx = na.ctx;
	if (rc == BATON_OK) {
		fprintf(stderr, "baton-httpd: reloaded\n");
	} else if (rc == BATON_ETIMEDOUT) {
		fprintf(stderr,
			"baton-httpd: reloaded; requests still on the old handler "
			"after %lld s keep it until they end\n",
			RELOAD_WAIT_NS / 1000000000LL);
	} else {
		fprintf(stderr, "baton-httpd: reload failed: %s\n", baton_strerror(rc));
		if (rc == BATON_ENOMEM || rc == BATON_EINVAL) /* nothing changed */
			unload_handler(sc->kind, na.ctx);
	}
}

/* SIGTERM or SIGINT: stop accepting and drain, for at most the drain
 * timeout when `wait` (on the action thread), else without a bound. */
static void drain(struct signal_ctx *sc, int sig, bool wait)
{
	fprintf(stderr, "baton-httpd: %s: draining\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
	stop_servers(sc);
	stop_timers(sc->kind, sc->ctx); /* pending timers would keep the run alive */
	if (wait)
		await_drain(sc);
}

/* The action thread: the signals read, in turn, SIGHUPs first (a reload
 * finishes before a drain starts, as they would in arrival order); it ends
 * when none is left, and after a drain. */
static void *action_thread(void *arg)
{
	struct signal_ctx *sc = arg;
	int sig = 0;

	pthread_mutex_lock(&sc->lock);
	while (sc->hups || (sc->term && sig == 0)) {
		if (sc->hups) {
			sc->hups--;
			pthread_mutex_unlock(&sc->lock);
			reload(sc);
		} else {
			sig = sc->term;
			pthread_mutex_unlock(&sc->lock);
			drain(sc, sig, true);
		}
		pthread_mutex_lock(&sc->lock);
	}
	sc->running = false;
	pthread_mutex_unlock(&sc->lock);
	return NULL;
}

/* A signal read from the signalfd, on the reactor's turn: note it and start
 * the action thread unless it is at work (then it finds the signal noted).
 * Without a thread, a drain is started here, unbounded; a reload is not. */
static void take_signal(struct signal_ctx *sc, int sig)
{
	bool start;
	int err;

	if (sig != SIGHUP && sig != SIGTERM && sig != SIGINT)
		return;
	pthread_mutex_lock(&sc->lock);
	if (sc->term) { /* draining: nothing more */
		pthread_mutex_unlock(&sc->lock);
		return;
	}
	if (sig == SIGHUP)
		sc->hups++;
	else
		sc->term = sig;
	start = !sc->running;
	sc->running = true;
	pthread_mutex_unlock(&sc->lock);
	if (!start)
		return;
	if (sc->has_th) /* the last one ended (running was false): reap it */
		pthread_join(sc->th, NULL);
	sc->has_th = (err = pthread_create(&sc->th, NULL, action_thread, sc)) == 0;
	if (err == 0)
		return;
	fprintf(stderr, "baton-httpd: no thread for %s: %s\n",
		sig == SIGHUP           ? "SIGHUP"
			: sig == SIGINT ? "SIGINT"
					: "SIGTERM",
		strerror(err));
	pthread_mutex_lock(&sc->lock);
	sc->hups = 0; /* a later SIGHUP tries again */
	sc->running = false;
	pthread_mutex_unlock(&sc->lock);
	if (sig != SIGHUP)
		drain(sc, sig, false);
}

/* Read every signal the signalfd holds (it never blocks). */
static void read_signals(struct signal_ctx *sc)
{
	struct signalfd_siginfo si;

	while (read(sc->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		take_signal(sc, (int)si.ssi_signo);
}

/* Whether a SIGTERM or SIGINT was taken: nothing is read after it. */
static bool draining(struct signal_ctx *sc)
{
	bool term;

	pthread_mutex_lock(&sc->lock);
	term = sc->term != 0;
	pthread_mutex_unlock(&sc->lock);
	return term;
}

/* The signalfd is readable: read what it holds, then arm the notification
 * again (an edge after the last read makes that say EAGAIN: read again). */
static void on_signal(baton_io_t *io, void *arg)
{
	struct signal_ctx *sc = arg;
	int rc;

	do {
		read_signals(sc);
	} while ((rc = baton_io_notify(io, BATON_IO_READABLE, on_signal, sc)) == BATON_EAGAIN);
	if (rc != BATON_OK)
		fprintf(stderr, "baton-httpd: signals are no longer read: %s\n",
			baton_strerror(rc));
}

/* The first task: the signalfd's handle, on this worker's reactor. While
 * memory for the handle is short, this task reads the signalfd itself
 * every 10 ms (or at every turn, without memory for a timer either), so
 * that a SIGTERM stops even a server that cannot get it, and tries again;
 * without the handle for another reason no signal could stop the server:
 * it stops at once, status 1. */
static void signal_start(void *arg)
{
	struct signal_ctx *sc = arg;
	baton_io_t *io;
	int rc;

	while ((rc = baton_io_open(&io, sc->sfd, true)) == BATON_ENOMEM) {
		read_signals(sc);
		if (draining(sc)) { /* the rest needs no more signals */
			close(sc->sfd);
			return;
		}
		if (baton_sched_sleep(10000000) != BATON_OK)
			baton_sched_yield(); /* no timer either */
	}
	if (rc != BATON_OK) {
		fprintf(stderr, "baton-httpd: cannot read signals: %s\n", baton_strerror(rc));
		close(sc->sfd);
		sc->failed = true;
		stop_servers(sc);
		return;
	}
	/* Left open: baton_sched_destroy closes it (baton/io.h rule 4). */
	on_signal(io, sc);
}

/* Set a->handler and a->ctx: 0, or -1 after saying why. */
static int load_handler(const char *kind, const struct httpd_handler_opts *ho,
			struct baton_http_server_attr *a)
{
	(void)ho; /* unused in a build without Lua and Scheme */
	if (!strcmp(kind, "hello")) {
		a->handler = httpd_hello;
		return 0;
	} else if (!strcmp(kind, "debug")) {
		a->handler = httpd_debug;
		return 0;
#if BATON_HTTPD_LUA
	} else if (!strcmp(kind, "lua")) {
		a->handler = httpd_lua;
		a->release = httpd_lua_unload; /* the server's from creation on */
		return (a->ctx = httpd_lua_load(ho)) ? 0 : -1;
#endif
#if BATON_HTTPD_SCHEME
	} else if (!strcmp(kind, "scheme")) {
		a->handler = httpd_scheme;
		return (a->ctx = httpd_scheme_load(ho)) ? 0 : -1;
#endif
	} else if (!strcmp(kind, "lua") || !strcmp(kind, "scheme")) {
		fprintf(stderr,
			"baton-httpd: built without the %s handler (its binding's "
			"development package was missing)\n",
			kind);
	} else {
		fprintf(stderr,
			"baton-httpd: unknown handler '%s' (hello, debug, lua FILE, scheme FILE)\n",
			kind);
	}
	return -1;
}

static void unload_handler(const char *kind, void *ctx)
{
#if BATON_HTTPD_LUA
	if (!strcmp(kind, "lua"))
		httpd_lua_unload(ctx);
#endif
#if BATON_HTTPD_SCHEME
	if (!strcmp(kind, "scheme"))
		httpd_scheme_unload(ctx);
#endif
	(void)kind;
	(void)ctx;
}

int main(int argc, char **argv)
{
	struct baton_http_server_attr a;
	const char *admin = NULL;
	struct baton_sched_attr sa;
	baton_io_backend_t io = BATON_IO_AUTO;
	struct httpd_handler_opts ho = { NULL,
					 0,
					 false,
					 false,
					 HTTPD_MAX_RESPONSE_BODY_DEFAULT,
					 0,
					 { HTTPD_CPU_BUDGET_DEFAULT_NS, HTTPD_MEM_BUDGET_DEFAULT },
					 NULL,
					 0,
					 0,
					 NULL };
	const char *kind = "hello";
	struct signal_ctx sc = { .drain_ms = 30000 };
	struct baton_task_attr sig_task = BATON_TASK_ATTR_INIT;
	baton_sched_t *s;
	int rc;

	baton_http_server_attr_init(&a);
	baton_sched_attr_init(&sa);
	for (int i = 1; i < argc; i++) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(o, "--stats")) {
			fprintf(stderr,
				"baton-httpd: --stats is gone: /_stats and /_limits are on "
				"the admin listener, --admin [ADDR:]PORT\n");
			return 2;
		} else if (!strcmp(o, "--lua-shared")) {
			ho.lua_shared = true;
			continue;
		} else if (!strcmp(o, "--scheme-eval")) {
			ho.scheme_eval = true;
			continue;
		} else if (!strcmp(o, "--handler")) {
			if (v == NULL) {
				kind = NULL;
				break;
			}
			kind = argv[++i];
			if (!strcmp(kind, "lua") || !strcmp(kind, "scheme")) {
				if (i + 1 >= argc) {
					fprintf(stderr, "baton-httpd: --handler %s needs a FILE\n",
						kind);
					return 2;
				}
				ho.file = argv[++i];
			}
			continue;
		} else if (!strcmp(o, "--port")) {
			a.port = (unsigned short)parse_num(o, v, 0, 65535);
		} else if (!strcmp(o, "--address")) {
			a.host = v;
		} else if (!strcmp(o, "--workers")) {
			sa.workers = (unsigned)parse_num(o, v, 0, BATON_SCHED_MAX_WORKERS);
		} else if (!strcmp(o, "--compute-workers")) {
			a.compute_workers =
				(unsigned)parse_num(o, v, 0, BATON_SCHED_MAX_WORKERS / 2);
		} else if (!strcmp(o, "--handler-queue")) {
			a.handler_queue = (size_t)parse_num(o, v, 1, 1 << 24);
		} else if (!strcmp(o, "--queue-timeout")) {
			a.queue_timeout_ns = parse_num(o, v, 0, 86400000) * 1000000;
		} else if (!strcmp(o, "--lua-slice")) {
			ho.lua_slice_ns = parse_slice(v);
		} else if (!strcmp(o, "--handler-cpu")) {
			ho.limits.cpu_ns = parse_time_opt(o, v);
		} else if (!strcmp(o, "--handler-memory")) {
			ho.limits.mem_bytes = parse_size_opt(o, v);
		} else if (!strcmp(o, "--lua-max-timers")) {
			ho.lua_max_timers = (size_t)parse_num(o, v, 1, 10000000);
		} else if (!strcmp(o, "--route-limits")) {
			add_route(&ho, v, i + 2 < argc ? argv[i + 2] : NULL);
			i++;
		} else if (!strcmp(o, "--handler-timeout")) {
			a.handler_timeout_ns = parse_num(o, v, 0, 86400000) * 1000000;
		} else if (!strcmp(o, "--static")) {
			a.static_dir = v;
		} else if (!strcmp(o, "--static-symlinks")) {
			if (v && !strcmp(v, "off"))
				a.static_symlinks = BATON_HTTP_SYMLINKS_OFF;
			else if (v && !strcmp(v, "on"))
				a.static_symlinks = BATON_HTTP_SYMLINKS_ON;
			else if (v && !strcmp(v, "owner"))
				a.static_symlinks = BATON_HTTP_SYMLINKS_OWNER;
			else {
				fprintf(stderr,
					"baton-httpd: --static-symlinks wants off, on or owner\n");
				return 2;
			}
		} else if (!strcmp(o, "--admin")) {
			admin = v;
		} else if (!strcmp(o, "--max-connections")) {
			a.max_connections = parse_num(o, v, 1, 10000000);
		} else if (!strcmp(o, "--handler-concurrency")) {
			a.handler_concurrency = parse_num(o, v, 1, 1000000);
		} else if (!strcmp(o, "--max-inflight")) {
			a.max_inflight = parse_num(o, v, 1, 10000000);
		} else if (!strcmp(o, "--max-body")) {
			a.max_body = parse_num(o, v, 0, 1L << 40);
		} else if (!strcmp(o, "--max-response-body")) {
			ho.max_response_body = (size_t)parse_num(o, v, 0, 1L << 40);
		} else if (!strcmp(o, "--max-header-bytes")) {
			a.max_header_bytes = (size_t)parse_num(o, v, 256, 1 << 24);
		} else if (!strcmp(o, "--max-target")) {
			a.max_target = (size_t)parse_num(o, v, 16, 1 << 24);
		} else if (!strcmp(o, "--header-timeout")) {
			a.header_timeout_ns = parse_num(o, v, 1, 86400000) * 1000000;
		} else if (!strcmp(o, "--drain-timeout")) {
			sc.drain_ms = parse_num(o, v, 0, 86400000);
		} else if (!strcmp(o, "--idle-timeout")) {
			a.idle_timeout_ns = parse_num(o, v, 1, 86400000) * 1000000;
		} else if (!strcmp(o, "--linger")) {
			a.linger_ns = parse_num(o, v, 0, 86400000) * 1000000;
		} else if (!strcmp(o, "--io")) {
			if (v && !strcmp(v, "epoll"))
				io = BATON_IO_EPOLL;
			else if (v && !strcmp(v, "io_uring"))
				io = BATON_IO_URING;
			else {
				fprintf(stderr, "baton-httpd: --io wants epoll or io_uring\n");
				return 2;
			}
		} else {
			fprintf(stderr, "baton-httpd: unknown option '%s'\n", o);
			usage(stderr);
			return 2;
		}
		if (v == NULL) {
			fprintf(stderr, "baton-httpd: %s needs a value\n", o);
			return 2;
		}
		i++;
	}
	if (kind == NULL) {
		fprintf(stderr, "baton-httpd: --handler needs a value\n");
		return 2;
	}

	/* I/O workers plus compute workers: the scheduler has both. */
	if (a.compute_workers > 0) {
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

		if (sa.workers == 0)
			sa.workers = ncpu > 0 ? (unsigned)ncpu : 1;
		sa.workers += a.compute_workers;
		if (sa.workers > BATON_SCHED_MAX_WORKERS) {
			fprintf(stderr, "baton-httpd: more than %d workers in all\n",
				BATON_SCHED_MAX_WORKERS);
			return 2;
		}
	}
	/* The scheduler first: the Lua handler makes a state per worker. */
	if ((rc = baton_sched_create(&s, &sa)) != BATON_OK) {
		fprintf(stderr, "baton-httpd: cannot start: %s\n", baton_strerror(rc));
		return 1;
	}
	if ((rc = baton_io_set_backend(s, io)) != BATON_OK) {
		fprintf(stderr, "baton-httpd: cannot start: %s\n", baton_strerror(rc));
		baton_sched_destroy(s);
		return 1;
	}
	ho.workers = (unsigned)baton_sched_workers(s);
	ho.sched = s;
	if (load_handler(kind, &ho, &a) != 0) {
		baton_sched_destroy(s);
		return 1;
	}

	/* Block the signals in every thread (the workers start in the run and
	 * inherit the mask); the reactor reads them from sc.sfd. */
	sigemptyset(&sc.set);
	sigaddset(&sc.set, SIGTERM);
	sigaddset(&sc.set, SIGINT);
	sigaddset(&sc.set, SIGHUP);
	sc.kind = kind;
	sc.ho = &ho;
	sc.ctx = a.ctx;
	pthread_sigmask(SIG_BLOCK, &sc.set, NULL);
	signal(SIGPIPE, SIG_IGN);
	if ((sc.sfd = signalfd(-1, &sc.set, SFD_NONBLOCK | SFD_CLOEXEC)) < 0) {
		fprintf(stderr, "baton-httpd: cannot start: signalfd: %s\n", strerror(errno));
		baton_sched_destroy(s);
		unload_handler(kind, a.ctx);
		return 1;
	}

	/* /_stats and /_limits are the admin listener's: 404 here. */
	a.io_handler = httpd_admin_public;
	sc.admin = NULL;
	if ((rc = baton_http_server_create(&sc.srv, s, &a)) != BATON_OK) {
		fprintf(stderr, "baton-httpd: cannot start: %s%s%s%s\n", baton_strerror(rc),
			rc == BATON_ESYS ? ": " : "", rc == BATON_ESYS ? strerror(errno) : "",
			rc == BATON_ESYS && errno == ENOSYS && a.static_symlinks
				? " (--static-symlinks on and owner need openat2, Linux 5.6)"
				: "");
		close(sc.sfd);
		baton_sched_destroy(s);
		unload_handler(kind, a.ctx);
		return 1;
	}
	if (admin && httpd_admin_start(admin, s, &a, &sc.srv, &sc.admin) != 0) {
		/* The public server is up: stop it and let its tasks end. */
		baton_http_server_shutdown(sc.srv);
		baton_sched_run(s);
		baton_http_server_destroy(sc.srv); /* releases the handler */
		baton_sched_destroy(s);
		close(sc.sfd);
		return 1;
	}
	fprintf(stderr,
		"baton-httpd: listening on %s:%d, %d I/O worker(s), %u compute "
		"worker(s), handler %s%s\n",
		a.host ? a.host : "0.0.0.0", baton_http_server_port(sc.srv),
		baton_sched_workers(s) - (int)a.compute_workers, a.compute_workers, kind,
		!strcmp(kind, "lua")
			? (ho.lua_shared ? " (one shared state)" : " (a state per worker)")
			: !strcmp(kind, "scheme")
			? (ho.scheme_eval ? " (interpreted)" : " (compiled)")
			: "");
	pthread_condattr_t ca; /* timed waits on the monotonic clock */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&sc.lock, NULL);
	pthread_cond_init(&sc.ended_cond, &ca);
	pthread_condattr_destroy(&ca);
	/* On worker 0, an I/O worker: a compute worker may be held by a
	 * handler that never returns (the drain timeout's case). */
	sig_task.worker = 0;
	sig_task.flags = BATON_TASK_BOUND;
	/* A spawn that finds no memory is tried again: a shortage passes. */
	for (int tries = 0;
	     (rc = baton_sched_spawn(s, &sig_task, signal_start, &sc)) == BATON_ENOMEM &&
	     tries < 100;
	     tries++)
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	if (rc != BATON_OK) {
		fprintf(stderr, "baton-httpd: cannot read signals: %s\n", baton_strerror(rc));
		close(sc.sfd);
		sc.failed = true;
		stop_servers(&sc);
	}
	rc = baton_sched_run(s);
	pthread_mutex_lock(&sc.lock);
	sc.ended = true;
	pthread_cond_signal(&sc.ended_cond);
	pthread_mutex_unlock(&sc.lock);
	/* The action thread ends once it sees the run ended (a drain) or
	 * has ended already; no signal is read any more. */
	if (sc.has_th)
		pthread_join(sc.th, NULL);
	baton_http_server_destroy(sc.admin);
	baton_http_server_destroy(sc.srv); /* releases the handler in place */
	baton_sched_destroy(s);
	free((void *)ho.routes);
	return rc == BATON_OK && !sc.failed ? 0 : 1;
}
