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
 *   --cold-rounds K every run is preceded by a run of the first K rounds
 *                   alone (the same ring, made anew): two more lines give
 *                   its rate (msgs_per_s_first_rounds) and that of the
 *                   remaining rounds (msgs_per_s_after_first_rounds, from
 *                   the difference of the two runs' times)
 *   --bound F       with 1t-copystack and --depth D: the depth bound of
 *                   docs/ring.md instead of the ring, as a rate: 1e9 over
 *                   t(D=0) + F * t_memcpy(D) ns per hop, both measured in
 *                   this process (with t(D) beside them); the impl name is
 *                   "bound-1t-copystack-dD"
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
static long blocked;  /* tasks that reached their first receive (atomic) */
static long errors;   /* rounds whose message did not grow by n-1 (atomic) */
static long failures; /* channel calls that failed (atomic) */
static int64_t t_start;
/* When the last ring passed its last message: the clock stops there, so
 * that what members do after the ring (--depth's check of its bytes, which
 * reads D bytes per task one by one) is not timed as message passing. */
static int64_t t_end;
static long rings_done; /* rings past their last message (atomic) */
static long rss_before, rss_ready;
static long rings;
static struct member *members;
static double xwakes_per_hop; /* cross-worker wake-ups per hop, last run */
static size_t stack_size = BATON_CORO_STACK_MIN;
static unsigned coro_flags;   /* --shared-fpenv: BATON_CORO_SHARED_FPENV */
static long depth;            /* --depth: live stack bytes per task */
static double copied_per_hop; /* copy-stack bytes copied per hop, last run */
static long depth_errors;     /* tasks whose --depth bytes changed (atomic) */
static bool single;           /* --impl ...-single: single-receiver inboxes */
static long cold_rounds;      /* --cold-rounds: the first rounds, apart */
static double bound_factor;   /* --bound: memcpy's factor in the bound */

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

	snprintf(msg, sizeof(msg), "%s failed at coroutine %ld of %ld: %s", what, at,
		 opts.coroutines, baton_strerror(rc));
	rc_fail(impl, &opts, msg);
}

/* One timed run of opts.rounds rounds; returns its nanoseconds. */
static double run_once(const char *impl, unsigned workers, enum baton_coro_model model, bool first)
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

		snprintf(msg, sizeof(msg),
			 "%ld rounds with a wrong message, %ld failed channel calls, "
			 "%ld tasks whose --depth bytes changed",
			 errors, failures, depth_errors);
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
	return (double)elapsed;
}

/* Hops of a run of `rounds` rounds. */
static double hops_of(long rounds)
{
	return (double)opts.n * (double)rings * (double)rounds;
}

/*
 * --bound: what the copies of a copy-stack hop cost alone, in ns per hop.
 * Each hop copies `len` bytes off the top of the shared stack into the
 * parking task's buffer and `len` bytes of the next task's buffer onto it,
 * with libc's memcpy as the hop does (copy_bytes in src/coro/copystack.c),
 * in the order of a ring on one worker: a ring's message goes round for
 * BATON_SCHED_RUNNEXT_MAX hops (its run-next chain), then the next ring's
 * chain runs, so the buffers are as warm or as cold as the hop's. The
 * buffers are malloc'd at len + 16 bytes like the save buffers, one per
 * task, in task order; the stack's top is page-aligned like the shared
 * stack's.
 */
static double memcpy_ns_per_hop(size_t len)
{
	long c = opts.coroutines, n = opts.n;
	size_t span = (len + 2 * 4096 - 1) & ~(size_t)4095;
	char **buf = malloc((size_t)c * sizeof(*buf));
	long *at = calloc((size_t)rings, sizeof(*at));
	long *left = malloc((size_t)rings * sizeof(*left));
	char *stack = aligned_alloc(4096, span), *top = stack + span - len;
	int64_t t0;
	double ns;

	if (buf == NULL || at == NULL || left == NULL || stack == NULL)
		fail("memcpy", "malloc", 0, BATON_ENOMEM);
	memset(stack, 0, span);
	for (long i = 0; i < c; i++) {
		buf[i] = malloc(len + 16);
		if (buf[i] == NULL)
			fail("memcpy", "malloc", i, BATON_ENOMEM);
		memset(buf[i], (int)(i & 0xff), len); /* written, as a park writes it */
	}
	for (long r = 0; r < rings; r++)
		left[r] = n * opts.rounds;
	t0 = rc_now_ns();
	for (long busy = rings; busy > 0;) {
		busy = 0;
		for (long r = 0; r < rings; r++) {
			char **ring = buf + r * n;
			long k = left[r] < BATON_SCHED_RUNNEXT_MAX ? left[r]
								   : BATON_SCHED_RUNNEXT_MAX;
			long i = at[r];

			left[r] -= k;
			while (k-- > 0) {
				long next = i + 1 == n ? 0 : i + 1;

				memcpy(ring[i], top, len);    /* i parks */
				memcpy(top, ring[next], len); /* next runs */
				/* The copies are the work: keep every one. */
				__asm__ __volatile__("" : : "r"(top) : "memory");
				i = next;
			}
			at[r] = i;
			busy += left[r] > 0;
		}
	}
	ns = (double)(rc_now_ns() - t0) / hops_of(opts.rounds);
	for (long i = 0; i < c; i++)
		free(buf[i]);
	free(buf);
	free(at);
	free(left);
	free(stack);
	return ns;
}

static double median(const double *v, long n, double *lo, double *hi)
{
	double *sorted = malloc((size_t)n * sizeof(*sorted));
	double med;

	if (sorted == NULL)
		fail("ring", "malloc", 0, BATON_ENOMEM);
	memcpy(sorted, v, (size_t)n * sizeof(*sorted));
	qsort(sorted, (size_t)n, sizeof(*sorted), rc_cmp_double);
	med = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
	*lo = sorted[0];
	*hi = sorted[n - 1];
	free(sorted);
	return med;
}

/* One JSON line of docs/bench-format.md ("peer": false): the median of
 * v[0..n) with `prec` decimals, its extremes, and the samples when there
 * are several or it is a rate (msgs/s); `extra` (empty, or fields each led
 * by a comma) closes it. Returns the median. */
static double print_line(const char *impl, const char *metric, const char *unit, const double *v,
			 long n, int prec, const char *extra)
{
	double lo, hi, med = median(v, n, &lo, &hi);

	printf("{\"suite\":\"ring\",\"impl\":\"%s\",\"peer\":false,"
	       "\"metric\":\"%s\",\"value\":%.*f,\"unit\":\"%s\",",
	       impl, metric, prec, med, unit);
	rc_params(stdout, &opts);
	printf(",\"runs\":%ld,\"min\":%.*f,\"max\":%.*f", n, prec, lo, prec, hi);
	if (n > 1 || strcmp(unit, "msgs/s") == 0) {
		printf(",\"samples\":[");
		for (long i = 0; i < n; i++)
			printf("%s%.*f", i ? "," : "", prec, v[i]);
		printf("]");
	}
	printf("%s}\n", extra);
	return med;
}

/* The lines of docs/bench-format.md, msgs_per_s and rss_bytes_per_coro,
 * then this program's own. */
static void report(const char *impl, const double *samples, double rss_per)
{
	double med = print_line(impl, "msgs_per_s", "msgs/s", samples, opts.runs, 1, "");

	print_line(impl, "rss_bytes_per_coro", "bytes", &rss_per, 1, 1, "");
	print_line(impl, "cross_wakes_per_hop", "wake-ups", &xwakes_per_hop, 1, 6, "");
	if (copied_per_hop > 0) {
		double ns_per_kib = 1e9 / med / (copied_per_hop / 1024.0);

		print_line(impl, "copied_bytes_per_hop", "bytes", &copied_per_hop, 1, 1, "");
		print_line(impl, "ns_per_kib", "ns", &ns_per_kib, 1, 2, "");
	}
	fflush(stdout);
}
/*
 * --bound F: per run, the ring at depth D (for the bytes a hop copies
 * there, and t(D) for comparison), the ring at D = 0 and the copies alone
 * (memcpy_ns_per_hop), all in ns per hop. The first line is the bound as
 * a rate, 1e9 / (t(D=0) + F * t_memcpy(D)), so that the suite compares it
 * with the D ring's msgs_per_s; then each part, and t(D) over the bound
 * (at most 1 where the bound held in this process).
 */
static void run_bound(const char *impl, enum baton_coro_model model)
{
	long runs = opts.runs, d = depth;
	double *v = calloc((size_t)runs * 6, sizeof(*v));
	double *rate = v, *t0 = v + runs, *td = t0 + runs, *tm = td + runs;
	double *tb = tm + runs, *over = tb + runs, bytes = 0;
	char extra[48];

	if (v == NULL)
		fail(impl, "malloc", 0, BATON_ENOMEM);
	for (long r = 0; r < runs; r++) {
		depth = d;
		td[r] = run_once(impl, 1, model, r == 0) / hops_of(opts.rounds);
		bytes = copied_per_hop; /* out and back in: half each way */
		depth = 0;
		t0[r] = run_once(impl, 1, model, false) / hops_of(opts.rounds);
		tm[r] = memcpy_ns_per_hop((size_t)(bytes / 2 + 0.5));
		tb[r] = t0[r] + bound_factor * tm[r];
		rate[r] = 1e9 / tb[r];
		over[r] = td[r] / tb[r];
	}
	depth = d;
	snprintf(extra, sizeof(extra), ",\"factor\":%g", bound_factor);
	print_line(impl, "msgs_per_s", "msgs/s", rate, runs, 1, extra);
	print_line(impl, "bound_ns_per_hop", "ns", tb, runs, 2, extra);
	print_line(impl, "ns_per_hop_d0", "ns", t0, runs, 2, "");
	print_line(impl, "memcpy_ns_per_hop", "ns", tm, runs, 2, "");
	print_line(impl, "ns_per_hop", "ns", td, runs, 2, "");
	print_line(impl, "ns_per_hop_over_bound", "ratio", over, runs, 3, extra);
	print_line(impl, "copied_bytes_per_hop", "bytes", &bytes, 1, 1, "");
	fflush(stdout);
	free(v);
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
		} else if (strcmp(argv[i], "--cold-rounds") == 0 && i + 1 < argc) {
			cold_rounds = rc_parse_pos(argv[++i], 1000000000L);
			if (cold_rounds == 0)
				rc_bad(argv[0], "--cold-rounds wants a positive integer");
		} else if (strcmp(argv[i], "--bound") == 0 && i + 1 < argc) {
			char *end;

			bound_factor = strtod(argv[++i], &end);
			if (*end != '\0' || !(bound_factor > 0 && bound_factor < 1000))
				rc_bad(argv[0], "--bound wants a factor in (0, 1000)");
		} else
			rest[nrest++] = argv[i];
	}
	rest[nrest] = NULL;
	rc_parse_args(nrest, rest, &opts);
	if (impl_arg == NULL)
		rc_bad(argv[0],
		       "--impl 1t-stackful|1t-copystack|mt-stackful|mt-copystack"
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
	if (model == BATON_CORO_STACKFUL && stack_size < (size_t)depth + BATON_CORO_STACK_MIN)
		stack_size = ((size_t)depth + BATON_CORO_STACK_MIN + 4095) & ~(size_t)4095;
	rings = opts.coroutines / opts.n;
	if (bound_factor > 0) {
		if (model != BATON_CORO_COPYSTACK || workers != 1 || single || depth == 0 ||
		    cold_rounds)
			rc_bad(argv[0],
			       "--bound wants --impl 1t-copystack and --depth D > 0 "
			       "(and no --cold-rounds)");
		snprintf(impl, sizeof(impl), "bound-1t-copystack-d%ld", depth);
		run_bound(impl, model);
		return 0;
	}
	if (cold_rounds >= opts.rounds)
		rc_bad(argv[0], "--cold-rounds must be below --rounds");
	samples = calloc((size_t)opts.runs * 3, sizeof(*samples));
	if (samples == NULL)
		fail(impl, "malloc", 0, BATON_ENOMEM);
	double rss_per = 0, *cold = samples + opts.runs, *after = cold + opts.runs;
	for (long r = 0; r < opts.runs; r++) {
		double ns, cold_ns = 0;

		if (cold_rounds) { /* the same ring, made anew, for K rounds */
			long all = opts.rounds;

			opts.rounds = cold_rounds;
			cold_ns = run_once(impl, workers, model, r == 0);
			opts.rounds = all;
		}
		if (r == 0 && cold_rounds)
			rss_per = (double)(rss_ready - rss_before) / (double)opts.coroutines;
		ns = run_once(impl, workers, model, r == 0 && !cold_rounds);
		samples[r] = hops_of(opts.rounds) * 1e9 / ns;
		if (r == 0 && !cold_rounds)
			rss_per = (double)(rss_ready - rss_before) / (double)opts.coroutines;
		if (cold_rounds) {
			cold[r] = hops_of(cold_rounds) * 1e9 / cold_ns;
			after[r] = ns > cold_ns
				? hops_of(opts.rounds - cold_rounds) * 1e9 / (ns - cold_ns)
				: 0;
		}
	}
	report(impl, samples, rss_per);
	if (cold_rounds) {
		char extra[48];

		snprintf(extra, sizeof(extra), ",\"first_rounds\":%ld", cold_rounds);
		print_line(impl, "msgs_per_s_first_rounds", "msgs/s", cold, opts.runs, 1, extra);
		print_line(impl, "msgs_per_s_after_first_rounds", "msgs/s", after, opts.runs, 1,
			   extra);
		fflush(stdout);
	}
	free(samples);
	return 0;
}
