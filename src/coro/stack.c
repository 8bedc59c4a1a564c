/*
 * Stacks for stackful coroutines (and the shared and copier stacks of
 * copy-stack ones): anonymous mappings with a PROT_NONE guard page at the
 * low end, committed lazily by the kernel, recycled through a small
 * per-thread pool, and a SIGSEGV handler that turns a hit on a guard page
 * into a report naming the coroutine before aborting.
 *
 * Each guard page splits a mapping in two, and the kernel caps mappings per
 * process (vm.max_map_count, 65530 by default): roughly 30,000 live
 * stackful coroutines per process unless that limit is raised. Copy-stack
 * coroutines have no mapping of their own and no such limit.
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "coro_internal.h"

/* Stacks a thread keeps for reuse; past this, freed stacks are unmapped. */
#define POOL_MAX 256

struct baton_pooled_stack {
	struct baton_pooled_stack *next;
	size_t map_size;
};

size_t baton_stack_page(void)
{
	static size_t page;

	if (page == 0)
		page = (size_t)sysconf(_SC_PAGESIZE);
	return page;
}

/* Map `usable` + `top_reserve` bytes (rounded to pages) above a guard page. */
int baton_stack_map(size_t usable, size_t top_reserve, void **map,
		    size_t *map_size)
{
	size_t page = baton_stack_page();
	size_t size = page + ((usable + top_reserve + page - 1) & ~(page - 1));
	void *p;

	/* MAP_NORESERVE: stacks are mostly untouched address space; do not
	 * count all of it against overcommit. MAP_STACK documents intent. */
	p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
	if (p == MAP_FAILED)
		return BATON_ENOMEM;
	if (mprotect(p, page, PROT_NONE) != 0) {
		munmap(p, size); /* usually vm.max_map_count reached */
		return BATON_ENOMEM;
	}
	*map = p;
	*map_size = size;
	return BATON_OK;
}

void baton_stack_unmap(void *map, size_t map_size)
{
	/* AddressSanitizer keeps the shadow of unmapped memory: frames that
	 * ran here would leave their redzones on whatever is mapped next at
	 * these addresses (a thread's stack and TLS, another stack). */
	baton_sanitizer_unpoison((char *)map + baton_stack_page(),
				 map_size - baton_stack_page());
	munmap(map, map_size);
}

int baton_stack_take(struct baton_thread *t, size_t map_size, void **map)
{
	struct baton_pooled_stack **pp = &t->pool, *s;
	size_t got;
	int rc;

	for (s = *pp; s; pp = &s->next, s = s->next) {
		if (s->map_size == map_size) {
			*pp = s->next;
			t->pool_count--;
			*map = (char *)s - (map_size - sizeof(*s));
			return BATON_OK;
		}
	}
	rc = baton_stack_map(map_size - baton_stack_page(), 0, map, &got);
	if (rc != BATON_OK)
		return rc;
	(void)got;
	return BATON_OK;
}

/* Keep a freed stack for reuse; false if the pool is full. The record sits
 * at the top of the mapping, where the control block was. */
bool baton_stack_give(struct baton_thread *t, void *map, size_t map_size)
{
	struct baton_pooled_stack *s;

	if (t->pool_count >= POOL_MAX)
		return false;
	s = (struct baton_pooled_stack *)((char *)map + map_size - sizeof(*s));
	s->map_size = map_size;
	s->next = t->pool;
	t->pool = s;
	t->pool_count++;
	return true;
}

size_t baton_coro_pool_trim(void)
{
	struct baton_thread *t = baton_thread_get();
	struct baton_pooled_stack *s, *next;
	size_t freed = 0;

	for (s = t->pool; s; s = next) {
		next = s->next;
		freed += s->map_size;
		baton_stack_unmap((char *)s - (s->map_size - sizeof(*s)),
				  s->map_size);
	}
	t->pool = NULL;
	t->pool_count = 0;
	return freed;
}

/*
 * Stack overflow reports.
 *
 * The handler runs on the thread's alternate signal stack (thread.c) because
 * the faulting stack has no room left. It uses only async-signal-safe calls:
 * the message is formatted by hand and written with write(2).
 */

static struct sigaction previous_segv;
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

static void report_overflow(const struct baton_coro *co, const void *addr,
			    size_t stack_size, const char *model)
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
	put_str(&l, " bytes, fault at ");
	put_num(&l, (uintptr_t)addr, 16);
	put_str(&l, " in its guard page; aborting\n");
	(void)!write(STDERR_FILENO, l.buf, l.len);
}

/* Which guard page, if any, `addr` hit: the running coroutine's own, or the
 * shared stack's when a copy-stack coroutine is running. */
static bool in_guard(const char *addr, const char *lo)
{
	return lo && addr >= lo - baton_stack_page() && addr < lo;
}

static void on_segv(int sig, siginfo_t *si, void *uctx)
{
	struct baton_thread *t = &baton_tls;
	const struct baton_coro *co = t->ready ? t->current : NULL;
	const char *addr = si->si_addr;

	if (co && co->model == BATON_CORO_STACKFUL && in_guard(addr, co->stack_lo)) {
		report_overflow(co, addr, co->stack_size,
				"stackful");
		abort();
	}
	if (co && co->model == BATON_CORO_COPYSTACK &&
	    in_guard(addr, t->shared.lo)) {
		report_overflow(co, addr, (size_t)(t->shared.hi - t->shared.lo),
				"copy-stack");
		abort();
	}
	/* Not ours: behave as if we had never been installed. */
	if (previous_segv.sa_flags & SA_SIGINFO) {
		previous_segv.sa_sigaction(sig, si, uctx);
	} else if (previous_segv.sa_handler != SIG_DFL &&
		   previous_segv.sa_handler != SIG_IGN) {
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

void baton_stack_overflow_handler_install(void)
{
	pthread_once(&handler_once, install_handler);
}
