/* SPDX-License-Identifier: MIT */
/*
 * Per-thread state: the thread's own stack seen as a context ("root"), the
 * alternate signal stack the overflow handler runs on, and the clean-up of
 * everything a thread cached (stack pool, shared stack) when it exits.
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "coro_internal.h"

__thread struct baton_thread baton__tls __attribute__((tls_model("initial-exec")));

__attribute__((noinline, noipa)) struct baton_thread *baton__thread_get_after_switch(void)
{
	/* An empty asm the optimiser cannot see through: no caller may
	 * assume two calls return the same address. */
	__asm__ __volatile__("" ::: "memory");
	return baton__thread_get();
}

static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;
/* Serials only need to be unique; no other memory is ordered by them. */
static uint64_t next_serial = 1;

static void thread_exit(void *arg)
{
	struct baton_thread *t = arg;
	stack_t none = { .ss_flags = SS_DISABLE };

	baton_coro_pool_trim();
	baton__copystack_thread_exit(t);
	if (t->altstack) {
		sigaltstack(&none, NULL);
		baton__munmap(t->altstack, t->altstack_size);
		t->altstack = NULL;
	}
	baton__sanitizer_fiber_fini(&t->root.san);
	t->own = NULL;
	t->ready = false;
}

static void make_exit_key(void)
{
	if (pthread_key_create(&exit_key, thread_exit) != 0)
		abort(); /* only fails when the process is out of keys */
}

/* The root context's stack bounds matter only to AddressSanitizer. */
static void find_root_stack(struct baton_coro *root)
{
	pthread_attr_t attr;
	void *lo;
	size_t size;

	if (pthread_getattr_np(pthread_self(), &attr) != 0)
		return;
	if (pthread_attr_getstack(&attr, &lo, &size) == 0) {
		root->stack_lo = lo;
		root->stack_hi = (char *)lo + size;
	}
	pthread_attr_destroy(&attr);
}

/* The overflow report runs on this stack: the faulting one has no room. */
static void install_altstack(struct baton_thread *t)
{
	stack_t old, ss;
	long min = sysconf(_SC_SIGSTKSZ);
	size_t size = 64 * 1024;

	if (sigaltstack(NULL, &old) == 0 && !(old.ss_flags & SS_DISABLE))
		return; /* the program has its own; keep it */
	if (min > 0 && (size_t)min > size)
		size = (size_t)min;
	ss.ss_sp = baton__mmap(size, PROT_READ | PROT_WRITE, MAP_PRIVATE);
	if (ss.ss_sp == MAP_FAILED)
		return; /* overflows then die without a report, nothing worse */
	ss.ss_size = size;
	ss.ss_flags = 0;
	if (sigaltstack(&ss, NULL) != 0) {
		baton__munmap(ss.ss_sp, size);
		return;
	}
	t->altstack = ss.ss_sp;
	t->altstack_size = size;
}

void baton__thread_init(struct baton_thread *t)
{
	pthread_once(&exit_key_once, make_exit_key);
	memset(t, 0, sizeof(*t));
	t->serial = __atomic_fetch_add(&next_serial, 1, __ATOMIC_RELAXED);
	t->root.status = BATON_CORO_RUNNING;
	t->root.model = BATON_CORO_STACKFUL;
	memcpy(t->root.name, "(thread)", sizeof("(thread)"));
	find_root_stack(&t->root);
	/* Until the thread says otherwise (baton_coro_thread_share_fpenv),
	 * shared contexts run in the state it has now. */
	baton__arch_fp_shared_set();
	baton__sanitizer_fiber_init(&t->root.san, true);
	install_altstack(t);
	pthread_setspecific(exit_key, t);
	t->own = &t->root;
	t->ready = true;
}
