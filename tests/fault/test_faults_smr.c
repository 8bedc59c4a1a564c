/* SPDX-License-Identifier: MIT */
/*
 * tests/test_faults_smr.c - allocation failures over safe memory
 * reclamation (include/baton/smr.h): every allocation of the scenario
 * failed in turn, then every N-th (tests/fault_test.h). Each call must
 * succeed or say BATON_ENOMEM and change nothing: a retire that failed
 * leaves the object to the caller, a read_lock that failed opened no
 * section, and nothing leaks (ASan's leak check after each sweep).
 */
#include "fault_test.h"

#include <baton/smr.h>

static long live_objs; /* (atomic) objects made and not yet freed */

static void obj_free(void *p)
{
	__atomic_fetch_sub(&live_objs, 1, __ATOMIC_RELAXED);
	free(p);
}

static void *obj_new(void)
{
	void *p = malloc(16);

	if (p)
		__atomic_fetch_add(&live_objs, 1, __ATOMIC_RELAXED);
	return p;
}

/* Retire n objects with `retire`; one the library refused is the
 * caller's again and is freed here. */
static void retire_some(baton_smr_t *d, int n,
			int (*retire)(baton_smr_t *, void *, baton_smr_free_fn))
{
	for (int i = 0; i < n; i++) {
		void *o = obj_new();

		if (o && ALLOWED(retire(d, o, obj_free)) != BATON_OK)
			obj_free(o);
	}
}

static void section(baton_smr_t *d)
{
	int tok = baton_smr_read_lock(d);

	if (tok >= 0)
		TC_CHECK_RC(baton_smr_read_unlock(d, tok), BATON_OK);
	else
		ALLOWED(tok);
}

struct ctx {
	baton_smr_t *d;
};

static void task_body(void *arg)
{
	struct ctx *c = arg;
	baton_smr_hp_t *hp;

	section(c->d);
	retire_some(c->d, BATON_SMR_BATCH + 3, baton_smr_retire);
	TC_CHECK_RC(baton_smr_synchronize(c->d, -1), BATON_OK);
	if (ALLOWED(baton_smr_hp_acquire(c->d, &hp)) == BATON_OK) {
		void *src = NULL, *p;

		TC_CHECK_RC(baton_smr_hp_protect(hp, &src, &p), BATON_OK);
		retire_some(c->d, BATON_SMR_BATCH + 3, baton_smr_hp_retire);
		TC_CHECK_RC(baton_smr_hp_release(hp), BATON_OK);
	}
}

static void scenario_smr(const struct baton_coro_attr *model, unsigned workers)
{
	struct ctx c = { NULL };
	baton_sched_t *s = NULL;
	struct baton_sched_attr sa = BATON_SCHED_ATTR_INIT;
	struct baton_task_attr ta = BATON_TASK_ATTR_INIT;

	if (ALLOWED(baton_smr_create(&c.d)) != BATON_OK)
		return;
	/* This thread's sections and retires, then a task's. */
	section(c.d);
	retire_some(c.d, 5, baton_smr_retire);
	TC_CHECK_RC(baton_smr_poll(c.d), BATON_OK);
	sa.workers = workers;
	ta.coro = *model;
	if (ALLOWED(baton_sched_create(&s, &sa)) == BATON_OK) {
		if (RETRY(baton_sched_spawn(s, &ta, task_body, &c)) == BATON_OK)
			ALLOWED(baton_sched_run(s));
		baton_sched_destroy(s);
	}
	TC_CHECK_RC(baton_smr_barrier(c.d, -1), BATON_OK);
	TC_CHECK_RC(baton_smr_destroy(c.d), BATON_OK);
	TC_CHECK(__atomic_load_n(&live_objs, __ATOMIC_RELAXED) == 0);
}

static void test_smr(void **state)
{
	fault_sweep("smr, one worker", scenario_smr, TC_ATTR(state), 1);
	fault_sweep("smr, two workers", scenario_smr, TC_ATTR(state), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		TC_MODEL_TESTS(test_smr),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
