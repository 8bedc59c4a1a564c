/* SPDX-License-Identifier: MIT */
/*
 * ring-baton: the ring benchmark (docs/ring.md) on baton's schedulers.
 *
 * Each coroutine is a task whose inbox is an unbuffered baton channel. A
 * ring's tasks are all spawned on one worker (ring r on worker r mod W), so
 * with several workers the rings spread over the cores while each hop stays
 * on its worker; load balancing may still move runnable stackful tasks.
 *
 *   --impl 1t-stackful | 1t-copystack   one worker (the calling thread)
 *          mt-stackful | mt-copystack   one worker per online CPU
 *          any of them + "-single"      the inboxes are single-receiver
 *                                       channels (baton_chan_create_single);
 *                                       the impl name ends in "-single"
 *
 *   --stack-kib K   stack size of stackful tasks (default 16, the minimum)
 *   --shared-fpenv  tasks share the FP control state (BATON_CORO_SHARED_FPENV);
 *                   the impl name gets "-nofp"
 *   --depth D       every task keeps D bytes of live stack below its body
 *                   while it passes messages (the seed's U1K and U10K: a
 *                   deeper coroutine, which copy-stack tasks copy at every
 *                   hop); written before the ring starts, checked after
 *                   it ends; the impl name gets "-dD"
 *
 * Timing starts when every task has reached its first receive and the
 * starter task hands each ring's leader its start token, and ends when the
 * last ring's leader has received its last message. What follows is not
 * timed: the tasks' ends and, with --depth, their check of their D bytes
 * (a byte-by-byte read of D bytes per task, which at D = 10000 took a
 * quarter of the run when it was timed). Creation is not timed.
 * Besides the two lines of docs/bench-format.md it prints a third,
 * cross_wakes_per_hop: wake-ups that had to go to another worker's inbox,
 * per hop, in the last run (baton_sched_stats), and for copy-stack tasks
 * two more: copied_bytes_per_hop (frames copied off and back onto the
 * shared stack, per hop) and ns_per_kib (the time of a hop over the KiB
 * it copied).
 */
#include "peers/ring_common.h"

#include <alloca.h>
#include <stdbool.h>

#include <baton/chan.h>
#include <baton/sched.h>

struct member {
	baton_chan_t *in, *right;
	long index; /* position in its ring: 0 leads */
};

static struct rc_opts opts;
static long blocked;	 /* tasks that reached their first receive (atomic) */
static long errors;	 /* rounds whose message did not grow by n-1 (atomic) */
static long failures;	 /* channel calls that failed (atomic) */
static int64_t t_start;
/* When the last ring passed its last message: the clock stops there, so
 * that what members do after the ring (--depth's check of its bytes, which
 * reads D bytes per task one by one) is not timed as message passing. */
static int64_t t_end;
static long rings_done;	 /* rings past their last message (atomic) */
static long rss_before, rss_ready;
static long rings;
static struct member *members;
static double xwakes_per_hop;	/* cross-worker wake-ups per hop, last run */
static size_t stack_size = BATON_CORO_STACK_MIN;
static unsigned coro_flags;	/* --shared-fpenv: BATON_CORO_SHARED_FPENV */
static long depth;		/* --depth: live stack bytes per task */
static double copied_per_hop;	/* copy-stack bytes copied per hop, last run */
static long depth_errors;	/* tasks whose --depth bytes changed (atomic) */
static bool single;		/* --impl ...-single: single-receiver inboxes */

static void note_failure(int rc)
{
	if (rc != BATON_OK)
		__atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
}

/* Out of line, so that the member's frame, which copy-stack tasks copy at
 * every hop, does not grow by the clock's. */
static __attribute__((noinline)) void ring_done(void)
{
	/* Relaxed: run's return orders t_end before its read. */
	if (__atomic_add_fetch(&rings_done, 1, __ATOMIC_RELAXED) == rings)
		t_end = rc_now_ns();
}

static void member_ring(struct member *m)
{
	void *v;

	/* Relaxed: a count the starter polls; channels order the messages. */
	__atomic_add_fetch(&blocked, 1, __ATOMIC_RELAXED);
	note_failure(baton_chan_recv(m->in, &v, -1)); /* start token or hop */
	if (m->index == 0) {
		for (long r = 0; r < opts.rounds; r++) {
			long sent = r * 1000;

			note_failure(baton_chan_send(m->right, (void *)sent, -1));
			note_failure(baton_chan_recv(m->in, &v, -1));
			if ((long)v != sent + opts.n - 1)
				__atomic_add_fetch(&errors, 1, __ATOMIC_RELAXED);
		}
		ring_done();
		return;
	}
	for (long r = 0;;) {
		note_failure(baton_chan_send(m->right, (void *)((long)v + 1), -1));
		if (++r == opts.rounds)
			break;
		note_failure(baton_chan_recv(m->in, &v, -1));
	}
}

/* --depth: D bytes of this frame stay live while the member passes
 * messages. Their address escapes into an empty asm that may read and
 * write memory, so the compiler can drop neither the bytes nor the frame;
 * after the ring they must read as written. */
static __attribute__((noinline)) void member_deep(struct member *m)
{
	unsigned char *pad = alloca((size_t)depth);
	unsigned char seed = (unsigned char)(m->index * 31 + 7);

	for (long i = 0; i < depth; i++)
		pad[i] = (unsigned char)(seed + i);
	__asm__ __volatile__("" : : "r"(pad) : "memory");
	member_ring(m);
	__asm__ __volatile__("" : : "r"(pad) : "memory");
	for (long i = 0; i < depth; i++)
		if (pad[i] != (unsigned char)(seed + i)) {
			/* Relaxed: a count read after the run. */
			__atomic_add_fetch(&depth_errors, 1, __ATOMIC_RELAXED);
			break;
		}
}

static void member_main(void *arg)
{
	if (depth > 0)
		member_deep(arg);
	else
		member_ring(arg);
}

static void starter_main(void *arg)
{
	(void)arg;
	/* Relaxed: see member_main. */
	while (__atomic_load_n(&blocked, __ATOMIC_RELAXED) < opts.coroutines)
		baton_sched_yield();
	rss_ready = rc_rss_bytes();
	t_start = rc_now_ns();
	for (long r = 0; r < rings; r++)
		note_failure(baton_chan_send(members[r * opts.n].in, NULL, -1));
}

static void fail(const char *impl, const char *what, long at, int rc)
{
	char msg[256];

	snprintf(msg, sizeof(msg), "%s failed at coroutine %ld of %ld: %s", what,
		 at, opts.coroutines, baton_strerror(rc));
	rc_fail(impl, &opts, msg);
}

/* One timed run; returns messages per second. */
static double run_once(const char *impl, unsigned workers,
		       enum baton_coro_model model, bool first)
{
	struct baton_sched_attr sattr = { workers };
	baton_sched_t *s;
	int64_t elapsed;
	long c = opts.coroutines;
	int rc;

	blocked = errors = failures = depth_errors = rings_done = 0;
	t_end = 0;
	if (first)
		rss_before = rc_rss_bytes();
	rc = baton_sched_create(&s, &sattr);
	if (rc != BATON_OK)
		fail(impl, "baton_sched_create", 0, rc);
	members = calloc((size_t)c, sizeof(*members));
	if (members == NULL)
		fail(impl, "calloc", 0, BATON_ENOMEM);
	for (long i = 0; i < c; i++) {
		rc = single ? baton_chan_create_single(&members[i].in, 0)
			    : baton_chan_create(&members[i].in, 0);
		if (rc != BATON_OK)
			fail(impl, "baton_chan_create", i, rc);
	}
	for (long i = 0; i < c; i++) {
		long ring = i / opts.n, pos = i % opts.n;
		struct baton_task_attr ta = BATON_TASK_ATTR_INIT;

		members[i].index = pos;
		members[i].right = members[ring * opts.n + (pos + 1) % opts.n].in;
		ta.coro.model = model;
		if (model == BATON_CORO_STACKFUL) /* copy-stack: the shared stack */
			ta.coro.stack_size = stack_size;
		ta.coro.flags = coro_flags;
		ta.worker = (int)(ring % baton_sched_workers(s));
		rc = baton_sched_spawn(s, &ta, member_main, &members[i]);
		if (rc != BATON_OK)
			fail(impl, "baton_sched_spawn", i, rc);
	}
	rc = baton_sched_spawn(s, NULL, starter_main, NULL);
	if (rc != BATON_OK)
		fail(impl, "baton_sched_spawn (starter)", c, rc);
	rc = baton_sched_run(s);
	elapsed = (t_end ? t_end : rc_now_ns()) - t_start;
	if (rc != BATON_OK)
		fail(impl, "baton_sched_run", c, rc);
	if (errors || failures || depth_errors) {
		char msg[160];

		snprintf(msg, sizeof(msg), "%ld rounds with a wrong message, %ld failed channel calls, "
			 "%ld tasks whose --depth bytes changed", errors, failures, depth_errors);
		rc_fail(impl, &opts, msg);
	}
	{
		struct baton_sched_stats st;
		double hops = (double)opts.n * (double)rings * (double)opts.rounds;

		if (baton_sched_stats(s, &st) == BATON_OK && st.dispatches) {
			xwakes_per_hop = (double)st.cross_wakes / (double)st.dispatches;
			copied_per_hop = (double)st.copied_bytes / hops;
		}
	}
	baton_sched_destroy(s);
	for (long i = 0; i < c; i++)
		baton_chan_destroy(members[i].in);
	free(members);
	return (double)opts.n * (double)rings * (double)opts.rounds * 1e9 / (double)elapsed;
}

/* The two JSON lines of docs/bench-format.md ("peer": false). */
static void report(const char *impl, const double *samples, double rss_per)
{
	long n = opts.runs;
	double *sorted = malloc((size_t)n * sizeof(*sorted));
	double med;

	if (sorted == NULL)
		fail(impl, "malloc", 0, BATON_ENOMEM);
	memcpy(sorted, samples, (size_t)n * sizeof(*sorted));
	qsort(sorted, (size_t)n, sizeof(*sorted), rc_cmp_double);
	med = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
	printf("{\"suite\":\"ring\",\"impl\":\"%s\",\"peer\":false,"
	       "\"metric\":\"msgs_per_s\",\"value\":%.1f,\"unit\":\"msgs/s\",",
	       impl, med);
	rc_params(stdout, &opts);
	printf(",\"runs\":%ld,\"min\":%.1f,\"max\":%.1f,\"samples\":[", n,
	       sorted[0], sorted[n - 1]);
	for (long i = 0; i < n; i++)
		printf("%s%.1f", i ? "," : "", samples[i]);
	printf("]}\n{\"suite\":\"ring\",\"impl\":\"%s\",\"peer\":false,"
	       "\"metric\":\"rss_bytes_per_coro\",\"value\":%.1f,\"unit\":\"bytes\",",
	       impl, rss_per);
	rc_params(stdout, &opts);
	printf(",\"runs\":1,\"min\":%.1f,\"max\":%.1f}\n", rss_per, rss_per);
	printf("{\"suite\":\"ring\",\"impl\":\"%s\",\"peer\":false,"
	       "\"metric\":\"cross_wakes_per_hop\",\"value\":%.6f,\"unit\":\"wake-ups\",",
	       impl, xwakes_per_hop);
	rc_params(stdout, &opts);
	printf(",\"runs\":1,\"min\":%.6f,\"max\":%.6f}\n", xwakes_per_hop,
	       xwakes_per_hop);
	if (copied_per_hop > 0) {
		double ns_per_kib = 1e9 / med / (copied_per_hop / 1024.0);

		printf("{\"suite\":\"ring\",\"impl\":\"%s\",\"peer\":false,"
		       "\"metric\":\"copied_bytes_per_hop\",\"value\":%.1f,\"unit\":\"bytes\",",
		       impl, copied_per_hop);
		rc_params(stdout, &opts);
		printf(",\"runs\":1,\"min\":%.1f,\"max\":%.1f}\n", copied_per_hop,
		       copied_per_hop);
		printf("{\"suite\":\"ring\",\"impl\":\"%s\",\"peer\":false,"
		       "\"metric\":\"ns_per_kib\",\"value\":%.2f,\"unit\":\"ns\",",
		       impl, ns_per_kib);
		rc_params(stdout, &opts);
		printf(",\"runs\":1,\"min\":%.2f,\"max\":%.2f}\n", ns_per_kib, ns_per_kib);
	}
	fflush(stdout);
	free(sorted);
}

int main(int argc, char **argv)
{
	const char *impl_arg = NULL;
	char impl[64];
	char *rest[64];
	int nrest = 0;
	unsigned workers;
	enum baton_coro_model model;
	double *samples;

	for (int i = 0; i < argc && nrest < 63; i++) {
		if (strcmp(argv[i], "--impl") == 0 && i + 1 < argc)
			impl_arg = argv[++i];
		else if (strcmp(argv[i], "--shared-fpenv") == 0)
			coro_flags |= BATON_CORO_SHARED_FPENV;
		else if (strcmp(argv[i], "--stack-kib") == 0 && i + 1 < argc)
			stack_size = (size_t)strtoul(argv[++i], NULL, 10) * 1024;
		else if (strcmp(argv[i], "--depth") == 0 && i + 1 < argc) {
			char *end;

			depth = strtol(argv[++i], &end, 10);
			if (*end != '\0' || depth < 0 || depth > 1024 * 1024)
				rc_bad(argv[0], "--depth wants an integer in [0, 1048576]");
		}
		else
			rest[nrest++] = argv[i];
	}
	rest[nrest] = NULL;
	rc_parse_args(nrest, rest, &opts);
	if (impl_arg == NULL)
		rc_bad(argv[0], "--impl 1t-stackful|1t-copystack|mt-stackful|mt-copystack"
			"[-single] is required");
	{
		char base[32];
		size_t len = strlen(impl_arg);

		/* "-single": the same ring on single-receiver channels. */
		single = len > 7 && strcmp(impl_arg + len - 7, "-single") == 0;
		snprintf(base, sizeof(base), "%.*s", (int)(single ? len - 7 : len), impl_arg);
		if (strcmp(base, "1t-stackful") == 0 || strcmp(base, "mt-stackful") == 0)
			model = BATON_CORO_STACKFUL;
		else if (strcmp(base, "1t-copystack") == 0 || strcmp(base, "mt-copystack") == 0)
			model = BATON_CORO_COPYSTACK;
		else
			rc_bad(argv[0], "unknown --impl");
		workers = base[0] == 'm' ? 0 : 1;

		char dsuffix[24] = "";

		if (depth > 0)
			snprintf(dsuffix, sizeof(dsuffix), "-d%ld", depth);
		/* The shape last: baton-1t-stackful-nofp-single. */
		snprintf(impl, sizeof(impl), "baton-%s%s%s%s", base,
			 coro_flags & BATON_CORO_SHARED_FPENV ? "-nofp" : "", dsuffix,
			 single ? "-single" : "");
	}
	/* A stackful task's stack must hold the --depth bytes as well. */
	if (model == BATON_CORO_STACKFUL &&
	    stack_size < (size_t)depth + BATON_CORO_STACK_MIN)
		stack_size = ((size_t)depth + BATON_CORO_STACK_MIN + 4095) & ~(size_t)4095;
	rings = opts.coroutines / opts.n;
	samples = malloc((size_t)opts.runs * sizeof(*samples));
	if (samples == NULL)
		fail(impl, "malloc", 0, BATON_ENOMEM);
	double rss_per = 0;
	for (long r = 0; r < opts.runs; r++) {
		samples[r] = run_once(impl, workers, model, r == 0);
		if (r == 0)
			rss_per = (double)(rss_ready - rss_before) / (double)opts.coroutines;
	}
	report(impl, samples, rss_per);
	free(samples);
	return 0;
}
