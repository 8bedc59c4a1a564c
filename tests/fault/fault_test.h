/* SPDX-License-Identifier: MIT */
/*
 * tests/fault_test.h - shared by the allocation-failure tests
 * (test_faults.c, test_faults_stage.c): the sweep and the checks.
 *
 * A scenario is a function that makes a fixed series of public calls and
 * cleans up after itself whatever they return. fault_sweep() runs it once
 * to count the allocations it makes (n), then n more times failing exactly
 * the k-th (k = 1..n), then in the every-Nth mode for a few N: every call
 * must succeed or say BATON_ENOMEM (with a message), nothing may crash or
 * hang (the watchdog), and nothing may leak (under AddressSanitizer a
 * leak check runs after each sweep, and LeakSanitizer again at exit).
 *
 * Each run is on a thread of its own, so that what a thread caches (its
 * stack pool, the copy-stack shared stack, the signal stack) is made, and
 * can fail, again every time, and is freed when the thread ends.
 */
#ifndef BATON_TESTS_FAULT_TEST_H
#define BATON_TESTS_FAULT_TEST_H

#include "check.h"

#include <pthread.h>
#include <stdio.h>

#include <baton/coro.h>

#include "internal.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define FT_LEAK_CHECK() __lsan_do_recoverable_leak_check()
#else
#define FT_LEAK_CHECK() 0
#endif

/* Record a failure unless rc is BATON_OK or BATON_ENOMEM (the latter with
 * a message); give rc back. Usable in tasks and coroutines (TC_CHECK). */
static inline int ft_allowed(int rc, const char *what, const char *file, int line)
{
	if (rc == BATON_OK)
		return rc;
	if (rc == BATON_ENOMEM && baton_strerror(rc)[0] != '\0')
		return rc;
	{
		char m[200];

		snprintf(m, sizeof(m), "%s returned %d (%s): neither OK nor ENOMEM", what, rc,
			 baton_strerror(rc));
		tc_record(file, line, m);
	}
	return rc;
}
#define ALLOWED(expr) ft_allowed((expr), #expr, __FILE__, __LINE__)

/* Try a call again while it says BATON_ENOMEM (one failure in the nth
 * mode; in the every-Nth mode it may keep failing: bounded). */
#define FT_TRIES 8
#define RETRY(expr)                                                      \
	({                                                               \
		int rc_;                                                 \
		for (int try_ = 0;; try_++) {                            \
			rc_ = (expr);                                    \
			if (rc_ != BATON_ENOMEM || try_ + 1 == FT_TRIES) \
				break;                                   \
		}                                                        \
		ft_allowed(rc_, #expr, __FILE__, __LINE__);              \
	})

/* A scenario in a coroutine model, with a parameter of its own (workers,
 * a variant). */
typedef void (*ft_scenario)(const struct baton_coro_attr *model, unsigned param);

struct ft_run {
	ft_scenario fn;
	const struct baton_coro_attr *model;
	unsigned param;
};

static inline void *ft_thread(void *arg)
{
	struct ft_run *r = arg;

	r->fn(r->model, r->param);
	return NULL;
}

static inline void ft_run_once(ft_scenario fn, const struct baton_coro_attr *model, unsigned param)
{
	struct ft_run r = { fn, model, param };
	pthread_t th;

	assert_int_equal(pthread_create(&th, NULL, ft_thread, &r), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
}

/* What a sweep did, for the test's message and the docs' figures. */
struct ft_tally {
	unsigned long allocations; /* made by the scenario without failures */
	unsigned long runs;        /* scenario runs with a failure injected */
	unsigned long injected;    /* allocations failed in all */
	int failed;                /* checks failed so far */
};

/* After a run: count it, and name the first run that failed a check
 * (the rest of the failures may follow from it). */
static inline void ft_count(struct ft_tally *t, const char *name, const char *mode, unsigned long k)
{
	t->injected += baton__fault_injected();
	t->runs++;
	/* Relaxed: the run's threads were joined. */
	if (__atomic_load_n(&tc_failed, __ATOMIC_RELAXED) > t->failed) {
		t->failed = __atomic_load_n(&tc_failed, __ATOMIC_RELAXED);
		print_message("%s: a check failed with %s %lu failing\n", name, mode, k);
	}
}

/* Every-Nth periods run after the sweep of single failures. */
static const unsigned long ft_periods[] = { 2, 3, 5, 11 };

static inline struct ft_tally fault_sweep(const char *name, ft_scenario fn,
					  const struct baton_coro_attr *model, unsigned param)
{
	struct ft_tally t = { 0, 0, 0, 0 };

	tc_reset();
	tc_phase = name;
	baton__fault_set(0, 0);
	ft_run_once(fn, model, param);
	t.allocations = baton__fault_count();
	assert_true(t.allocations > 0);
	/* One more than counted: a failure may move allocations later. */
	for (unsigned long k = 1; k <= t.allocations + 1; k++) {
		baton__fault_fail_nth(k);
		ft_run_once(fn, model, param);
		ft_count(&t, name, "only allocation", k);
	}
	for (size_t i = 0; i < sizeof(ft_periods) / sizeof(ft_periods[0]); i++) {
		baton__fault_fail_every(ft_periods[i]);
		ft_run_once(fn, model, param);
		ft_count(&t, name, "every allocation", ft_periods[i]);
	}
	baton__fault_set(0, 0);
	TC_VERDICT();
	if (FT_LEAK_CHECK())
		fail_msg("%s (%s): LeakSanitizer found leaks (above)", name, model->name);
	print_message("%s (%s): %lu allocations, %lu runs, %lu failures injected\n", name,
		      model->name, t.allocations, t.runs, t.injected);
	return t;
}

#endif /* BATON_TESTS_FAULT_TEST_H */
