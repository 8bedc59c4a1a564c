/* SPDX-License-Identifier: MIT */
/*
 * bench/barrier/barrier_bench.c - the `barrier` suite: the latency of one
 * asymmetric barrier (the heavy side that baton's reclamation, biased
 * channels and sequencer pay), mechanism by mechanism, on an idle machine
 * and with a spinning thread of this process on every CPU.
 *
 *   barrier-bench --impl membarrier-expedited|mprotect|membarrier|mfence|barrierd
 *                 [--load idle|busy] [--samples N] [--runs R]
 *
 *   membarrier-expedited  MEMBARRIER_CMD_PRIVATE_EXPEDITED (registered)
 *   mprotect              a locked dummy page written, then made read-only
 *                         (x86-64: the TLB shoot-down interrupts every CPU
 *                         running the process)
 *   membarrier            MEMBARRIER_CMD_GLOBAL (an RCU grace period: slow,
 *                         run with few samples)
 *   mfence                the floor: one full fence on the calling thread,
 *                         timed over batches of 100
 *   barrierd              evidence that every CPU took an interrupt, read
 *                         from an eBPF program on tracefs: probed, and
 *                         reported unavailable where the machine does not
 *                         allow it (never a failure)
 *
 * Prints JSON lines (docs/bench-format.md): barrier_ns_p50, barrier_ns_p99
 * and barrier_ns_max, each the median over the runs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/bpf.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef MEMBARRIER_CMD_GLOBAL
#define MEMBARRIER_CMD_GLOBAL MEMBARRIER_CMD_SHARED
#endif

enum impl { EXPEDITED, MPROTECT, GLOBAL, MFENCE, BARRIERD, NIMPL };

static const char *const impl_names[NIMPL] = {
	"membarrier-expedited", "mprotect", "membarrier", "mfence", "barrierd",
};

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static long membarrier(int cmd)
{
	return syscall(SYS_membarrier, cmd, 0, 0);
}

static char *page;
static long page_size;

static const char *setup(enum impl impl)
{
	switch (impl) {
	case EXPEDITED:
		if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0)
			return "membarrier private expedited refused by this kernel";
		return NULL;
	case GLOBAL:
		if (membarrier(MEMBARRIER_CMD_GLOBAL) != 0)
			return "membarrier (global) refused by this kernel";
		return NULL;
	case MPROTECT:
#if defined(__x86_64__)
		page_size = sysconf(_SC_PAGESIZE);
		page = mmap(NULL, (size_t)page_size, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (page == MAP_FAILED)
			return "mmap failed";
		(void)mlock(page, (size_t)page_size);
		return NULL;
#else
		return "mprotect is no barrier on this architecture";
#endif
	default:
		return NULL;
	}
}

static void one(enum impl impl)
{
	switch (impl) {
	case EXPEDITED:
		membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
		break;
	case GLOBAL:
		membarrier(MEMBARRIER_CMD_GLOBAL);
		break;
	case MPROTECT:
		mprotect(page, (size_t)page_size, PROT_READ | PROT_WRITE);
		/* Relaxed: the store only dirties the page. */
		__atomic_store_n(page, (char)(page[0] + 1), __ATOMIC_RELAXED);
		mprotect(page, (size_t)page_size, PROT_READ);
		break;
	default:
		break;
	}
}

/* One sample in ns. mfence is timed over a batch (a clock read costs
 * more than the fence). */
static double sample(enum impl impl)
{
	int64_t t0 = now_ns();

	if (impl == MFENCE) {
		for (int i = 0; i < 100; i++)
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
		return (double)(now_ns() - t0) / 100;
	}
	one(impl);
	return (double)(now_ns() - t0);
}

/* --- load: a spinning thread per CPU, in this process ------------------- */

static int stop_load; /* (atomic) */

static void *spinner(void *arg)
{
	volatile uint64_t x = 0;

	(void)arg;
	/* Relaxed: a stop flag seen eventually. */
	while (!__atomic_load_n(&stop_load, __ATOMIC_RELAXED))
		x++;
	return NULL;
}

/* --- barrierd: can this machine run it? -------------------------------- */

static const char *barrierd_probe(void)
{
	struct stat st;
	union bpf_attr attr;
	struct bpf_insn prog[2] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int fd;

	if (stat("/sys/kernel/tracing/events/irq_vectors", &st) != 0 &&
	    stat("/sys/kernel/debug/tracing/events/irq_vectors", &st) != 0)
		return "unavailable: no tracefs with irq_vectors events";
	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_TRACEPOINT;
	attr.insns = (uint64_t)(uintptr_t)prog;
	attr.insn_cnt = 2;
	attr.license = (uint64_t)(uintptr_t) "GPL";
	fd = (int)syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));
	if (fd < 0)
		return "unavailable: eBPF tracepoint programs not allowed";
	close(fd);
	return "unavailable: eBPF and tracefs are allowed here, but this build "
	       "has no barrierd reader";
}

/* --- output ----------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double pct(const double *sorted, int n, double p)
{
	int i = (int)(p * (n - 1) + 0.5);

	return sorted[i < n ? i : n - 1];
}

static void emit(enum impl impl, const char *metric, const char *params, double *v, int runs)
{
	double s[runs];

	memcpy(s, v, sizeof(s));
	qsort(s, (size_t)runs, sizeof(double), cmp_double);
	printf("{\"suite\": \"barrier\", \"impl\": \"%s\", \"peer\": false, \"metric\": \"%s\", "
	       "\"value\": %.1f, \"unit\": \"ns\", \"params\": {%s}, \"runs\": %d, "
	       "\"min\": %.1f, \"max\": %.1f, \"samples\": [",
	       impl_names[impl], metric,
	       runs % 2 ? s[runs / 2] : (s[runs / 2 - 1] + s[runs / 2]) / 2, params, runs, s[0],
	       s[runs - 1]);
	for (int i = 0; i < runs; i++)
		printf("%s%.1f", i ? ", " : "", v[i]);
	printf("], \"status\": \"ok\"}\n");
}

static void emit_missing(enum impl impl, const char *params, const char *why)
{
	static const char *const metrics[] = { "barrier_ns_p50", "barrier_ns_p99",
					       "barrier_ns_max" };

	for (int m = 0; m < 3; m++)
		printf("{\"suite\": \"barrier\", \"impl\": \"%s\", \"peer\": false, "
		       "\"metric\": \"%s\", \"value\": null, \"unit\": \"ns\", "
		       "\"params\": {%s}, \"runs\": 0, \"status\": \"missing\", "
		       "\"error\": \"%s\"}\n",
		       impl_names[impl], metrics[m], params, why);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: barrier-bench --impl membarrier-expedited|mprotect|membarrier|"
		"mfence|barrierd\n"
		"                     [--load idle|busy] [--samples N] [--runs R]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int impl = -1, runs = 1, samples = 2000;
	bool busy = false;
	char params[128];
	const char *why;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	pthread_t th[256];
	int nth = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v)
			usage();
		i++;
		if (strcmp(a, "--impl") == 0) {
			for (int k = 0; k < NIMPL; k++)
				if (strcmp(v, impl_names[k]) == 0)
					impl = k;
		} else if (strcmp(a, "--load") == 0) {
			if (strcmp(v, "busy") != 0 && strcmp(v, "idle") != 0)
				usage();
			busy = strcmp(v, "busy") == 0;
		} else if (strcmp(a, "--samples") == 0) {
			samples = atoi(v);
		} else if (strcmp(a, "--runs") == 0) {
			runs = atoi(v);
		} else {
			usage();
		}
	}
	if (impl < 0 || samples < 1 || runs < 1)
		usage();
	snprintf(params, sizeof(params), "\"load\": \"%s\", \"samples\": %d",
		 busy ? "busy" : "idle", samples);
	why = impl == BARRIERD ? barrierd_probe() : setup(impl);
	if (why != NULL) {
		emit_missing(impl, params, why);
		return 0;
	}
	if (busy) {
		/* Relaxed: set before the threads start. */
		__atomic_store_n(&stop_load, 0, __ATOMIC_RELAXED);
		for (long c = 0; c < ncpu && nth < 256; c++)
			if (pthread_create(&th[nth], NULL, spinner, NULL) == 0)
				nth++;
		usleep(20000); /* let them reach their CPUs */
	}
	{
		double p50[runs], p99[runs], max[runs];
		double *s = malloc(sizeof(double) * (size_t)samples);

		if (s == NULL)
			return 1;
		for (int r = 0; r < runs; r++) {
			for (int i = 0; i < samples; i++)
				s[i] = sample(impl);
			qsort(s, (size_t)samples, sizeof(double), cmp_double);
			p50[r] = pct(s, samples, 0.50);
			p99[r] = pct(s, samples, 0.99);
			max[r] = s[samples - 1];
		}
		free(s);
		__atomic_store_n(&stop_load, 1, __ATOMIC_RELAXED); /* as above */
		for (int t = 0; t < nth; t++)
			pthread_join(th[t], NULL);
		emit(impl, "barrier_ns_p50", params, p50, runs);
		emit(impl, "barrier_ns_p99", params, p99, runs);
		emit(impl, "barrier_ns_max", params, max, runs);
	}
	return 0;
}
