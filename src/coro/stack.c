/* SPDX-License-Identifier: MIT */
/*
 * Stacks for stackful coroutines and the stacks of copy-stack coroutines'
 * shared and copier contexts; the per-thread pool; overflow reports.
 *
 * A stackful coroutine's stack is a slot of an arena (arena.c): guarded by
 * a PROT_NONE page while the mapping budget allows, else protected by a
 * canary word checked at every switch. Freed stacks go to a small pool of
 * the freeing thread first (no lock), then back to their arena. The shared
 * and copier stacks (one each per thread) are mappings of their own.
 *
 * A hit on a guard page is reported from a SIGSEGV handler that names the
 * coroutine before aborting; a canary found overwritten is reported the same
 * way by the switch that finds it.
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "coro_internal.h"

/* Stacks a thread keeps for reuse; past this, freed stacks go back to
 * their arena. */
#define POOL_MAX 256
/* Stacks given back to the arenas at a time once the pool is full. */
#define GIVE_BATCH 64

/* A pooled stack's record sits at the top of its slot, where the control
 * block was. */
struct baton_pooled_stack {
	struct baton_pooled_stack *next;
	struct baton_stack stack;
};

size_t baton__stack_page(void)
{
	static size_t page;

	if (page == 0)
		page = (size_t)sysconf(_SC_PAGESIZE);
	return page;
}

/* Map `usable` + `top_reserve` bytes (rounded to pages) above a guard page. */
int baton__stack_map(size_t usable, size_t top_reserve, void **map, size_t *map_size)
{
	size_t page = baton__stack_page();
	size_t size = page + ((usable + top_reserve + page - 1) & ~(page - 1));
	void *p;

	/* MAP_NORESERVE: stacks are mostly untouched address space; do not
	 * count all of it against overcommit. MAP_STACK documents intent. */
	p = baton__mmap(size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE | MAP_STACK);
	if (p == MAP_FAILED)
		return BATON_ENOMEM;
	if (mprotect(p, page, PROT_NONE) != 0) {
		baton__munmap(p, size); /* usually vm.max_map_count reached */
		return BATON_ENOMEM;
	}
	*map = p;
	*map_size = size;
	return BATON_OK;
}

void baton__stack_unmap(void *map, size_t map_size)
{
	/* AddressSanitizer keeps the shadow of unmapped memory: frames that
	 * ran here would leave their redzones on whatever is mapped next at
	 * these addresses (a thread's stack and TLS, another stack). */
	baton__sanitizer_unpoison((char *)map + baton__stack_page(),
				  map_size - baton__stack_page());
	baton__munmap(map, map_size);
}

static struct baton_pooled_stack *record_of(const struct baton_stack *st)
{
	return (struct baton_pooled_stack *)((char *)st->map + st->map_size -
					     sizeof(struct baton_pooled_stack));
}

int baton__stack_take(struct baton_thread *t, size_t map_size, bool canary, struct baton_stack *out)
{
	struct baton_pooled_stack **pp = &t->pool, *s;

	for (s = *pp; s; pp = &s->next, s = s->next) {
		if (s->stack.map_size == map_size && s->stack.guarded == !canary) {
			*pp = s->next;
			t->pool_count--;
			*out = s->stack;
			return BATON_OK;
		}
	}
	out->map_size = map_size;
	return baton__arena_take(map_size, !canary, &out->map, &out->arena, &out->guarded);
}

/* The pool is full: st and the GIVE_BATCH - 1 stacks pooled last go back
 * to their arenas under one lock (a burst of ends - a cancelled group's
 * tasks - would otherwise take the arenas' mutex once a stack). */
static __attribute__((noinline)) void give_batch(struct baton_thread *t,
						 const struct baton_stack *st)
{
	baton__arena_give_begin();
	baton__arena_give_one(st->arena, st->map);
	for (unsigned i = 1; i < GIVE_BATCH && t->pool; i++) {
		struct baton_pooled_stack *s = t->pool;

		t->pool = s->next;
		t->pool_count--;
		baton__arena_give_one(s->stack.arena, s->stack.map);
	}
	baton__arena_give_end();
}

void baton__stack_give(struct baton_thread *t, const struct baton_stack *st)
{
	struct baton_pooled_stack *s;

	if (BATON_UNLIKELY(t->pool_count >= POOL_MAX)) {
		give_batch(t, st);
		return;
	}
	s = record_of(st);
	s->stack = *st;
	s->next = t->pool;
	t->pool = s;
	t->pool_count++;
}

size_t baton_coro_pool_trim(void)
{
	struct baton_thread *t = baton__thread_get();
	struct baton_pooled_stack *s, *next;

	baton__arena_give_begin();
	for (s = t->pool; s; s = next) {
		next = s->next;
		baton__arena_give_one(s->stack.arena, s->stack.map);
	}
	baton__arena_give_end();
	t->pool = NULL;
	t->pool_count = 0;
	return baton__copystack_trim(t) + baton__arena_trim();
}

/*
 * Stack overflow reports.
 *
 * The handler runs on the thread's alternate signal stack (thread.c) because
 * the faulting stack has no room left. It uses only async-signal-safe calls:
 * the message is formatted by hand and written with write(2).
 */

static struct sigaction previous_segv;
/* The overflow reporter: not decided yet, installed, or kept out. */
enum { HANDLER_UNSET, HANDLER_ON, HANDLER_OFF };
static int handler_state = HANDLER_UNSET;
static pthread_once_t handler_once = PTHREAD_ONCE_INIT;

struct line {
	char buf[256];
	size_t len;
};

static void put_str(struct line *l, const char *s)
{
	while (*s && l->len < sizeof(l->buf) - 1)
		l->buf[l->len++] = *s++;
}

static void put_num(struct line *l, uintptr_t v, unsigned base)
{
	char digits[32];
	int n = 0;

	do {
		digits[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	if (base == 16)
		put_str(l, "0x");
	while (n > 0 && l->len < sizeof(l->buf) - 1)
		l->buf[l->len++] = digits[--n];
}

static void report_overflow(const struct baton_coro *co, const void *addr, size_t stack_size,
			    const char *model, const char *how)
{
	struct line l = { .len = 0 };

	put_str(&l, "baton: stack overflow in ");
	put_str(&l, model);
	put_str(&l, " coroutine '");
	put_str(&l, co->name[0] ? co->name : "(unnamed)");
	put_str(&l, "' (");
	put_num(&l, (uintptr_t)co, 16);
	put_str(&l, "): stack size ");
	put_num(&l, stack_size, 10);
	put_str(&l, " bytes, ");
	put_str(&l, how);
	put_str(&l, " (");
	put_num(&l, (uintptr_t)addr, 16);
	put_str(&l, "); aborting\n");
	(void)!write(STDERR_FILENO, l.buf, l.len);
}

static void canary_report(void *arg)
{
	const struct baton_coro *co = arg;

	report_overflow(co, co->stack_lo, co->stack_size, "stackful",
			"canary at the bottom of its stack overwritten");
	abort();
}

/* The overflowed stack has at most its slack page left, too little for a
 * report and abort(): move to the thread's alternate signal stack (or, if
 * the program installed its own, a static one) first. */
void baton__stack_canary_failed(const struct baton_coro *co)
{
	static char spare[16384] __attribute__((aligned(64)));
	static __thread baton_arch_ctx_t left, report;
	struct baton_thread *t = &baton__tls;
	char *lo = t->altstack ? t->altstack : spare;
	char *hi = lo + (t->altstack ? t->altstack_size : sizeof(spare));

	baton__arch_make(&report, lo, hi, canary_report);
	baton__arch_switch(&left, &report, (void *)co);
	abort(); /* not reached */
}

/* Which guard page, if any, `addr` hit: the running coroutine's own, or the
 * shared stack's when a copy-stack coroutine is running. */
static bool in_guard(const char *addr, const char *lo, size_t pages)
{
	return lo && addr >= lo - pages * baton__stack_page() && addr < lo;
}

static void on_segv(int sig, siginfo_t *si, void *uctx)
{
	struct baton_thread *t = &baton__tls;
	const struct baton_coro *co = t->ready ? t->current : NULL;
	const char *addr = si->si_addr;

	if (co && co->model == BATON_CORO_STACKFUL && co->guarded &&
	    in_guard(addr, co->stack_lo, BATON_STACK_LOW_PAGES)) {
		report_overflow(co, addr, co->stack_size, "stackful", "fault in its guard page");
		abort();
	}
	if (co && co->model == BATON_CORO_COPYSTACK && in_guard(addr, t->shared.lo, 1)) {
		report_overflow(co, addr, (size_t)(t->shared.hi - t->shared.lo), "copy-stack",
				"fault in its guard page");
		abort();
	}
	/* Not ours: behave as if we had never been installed. */
	if (previous_segv.sa_flags & SA_SIGINFO) {
		previous_segv.sa_sigaction(sig, si, uctx);
	} else if (previous_segv.sa_handler != SIG_DFL && previous_segv.sa_handler != SIG_IGN) {
		previous_segv.sa_handler(sig);
	} else {
		/* Returning re-executes the faulting access, which now gets
		 * the default action (terminate with a core dump). */
		signal(SIGSEGV, SIG_DFL);
	}
}

static void install_handler(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, &previous_segv);
}

/* Decide once: the first caller's choice holds; true if the state is
 * `want` afterwards. A create that races with the program's 0 may decide
 * first, and the program is told (BATON_EBUSY). Installing goes through
 * pthread_once, so nobody returns from an ON before the handler is in. */
static bool decide(int want)
{
	int expected = HANDLER_UNSET;

	/* Acq_rel/acquire: the choice is one word; pthread_once orders the
	 * installation itself. */
	if (!__atomic_compare_exchange_n(&handler_state, &expected, want, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE) &&
	    expected != want)
		return false;
	if (want == HANDLER_ON)
		pthread_once(&handler_once, install_handler);
	return true;
}

void baton__stack_overflow_handler_install(void)
{
	/* Relaxed: a hint; decide() settles a race. */
	if (__atomic_load_n(&handler_state, __ATOMIC_RELAXED) == HANDLER_UNSET)
		(void)decide(HANDLER_ON);
}

int baton_coro_overflow_handler(int install)
{
	if (install != 0 && install != 1)
		return BATON_EINVAL;
	return decide(install ? HANDLER_ON : HANDLER_OFF) ? BATON_OK : BATON_EBUSY;
}
