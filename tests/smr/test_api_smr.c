/* SPDX-License-Identifier: MIT */
/* The claims of baton/smr.h a caller relies on beyond the timeouts (those
 * are in tests/common/test_timeout_zero.c), read from the header and
 * checked: every call refuses what it lists (EINVAL), destroy(NULL) is a
 * no-op; read_lock gives 0 or 1 and sections nest; read_unlock refuses a
 * token read_lock did not give; a section may end on another thread;
 * synchronize inside a section of the same domain waits for itself
 * (ETIMEDOUT); destroy refuses an open section or a held slot (EBUSY,
 * unchanged) and frees everything still retired; a retired object is not
 * freed while a section that began before is open, and barrier frees
 * everything retired before it (a partial batch too); a protected object
 * is not freed while its slot names it, and hp_pending stays within
 * hp_bound; the stats count what was retired and freed; the barrier kind
 * and its name agree, "" for an unknown kind. */
#include "check.h"

#include <pthread.h>

#include <baton/smr.h>

static int nfreed;

static void count_free(void *p)
{
	(void)p;
	/* Relaxed: a count read after the call that reclaimed returned. */
	__atomic_fetch_add(&nfreed, 1, __ATOMIC_RELAXED);
}

static int freed(void)
{
	return __atomic_load_n(&nfreed, __ATOMIC_RELAXED);
}

static void test_bad_input(void **state)
{
	struct baton_smr_stats st;
	baton_smr_hp_t *hp;
	baton_smr_t *d;
	void *src = NULL, *out;

	(void)state;
	assert_int_equal(baton_smr_create(NULL), BATON_EINVAL);
	assert_int_equal(baton_smr_destroy(NULL), BATON_OK);
	assert_int_equal(baton_smr_read_lock(NULL), BATON_EINVAL);
	assert_int_equal(baton_smr_read_unlock(NULL, 0), BATON_EINVAL);
	assert_int_equal(baton_smr_synchronize(NULL, 0), BATON_EINVAL);
	assert_int_equal(baton_smr_barrier(NULL, 0), BATON_EINVAL);
	assert_int_equal(baton_smr_poll(NULL), BATON_EINVAL);
	assert_int_equal(baton_smr_retire(NULL, &src, count_free), BATON_EINVAL);
	assert_int_equal(baton_smr_hp_acquire(NULL, &hp), BATON_EINVAL);
	assert_int_equal(baton_smr_hp_protect(NULL, &src, &out), BATON_EINVAL);
	assert_int_equal(baton_smr_hp_clear(NULL), BATON_EINVAL);
	assert_int_equal(baton_smr_hp_release(NULL), BATON_EINVAL);
	assert_int_equal(baton_smr_hp_retire(NULL, &src, count_free), BATON_EINVAL);
	assert_int_equal(baton_smr_stats(NULL, &st), BATON_EINVAL);

	assert_int_equal(baton_smr_create(&d), BATON_OK);
	assert_int_equal(baton_smr_retire(d, &src, NULL), BATON_EINVAL);
	assert_int_equal(baton_smr_hp_retire(d, &src, NULL), BATON_EINVAL);
	assert_int_equal(baton_smr_hp_acquire(d, NULL), BATON_EINVAL);
	assert_int_equal(baton_smr_stats(d, NULL), BATON_EINVAL);
	assert_int_equal(baton_smr_hp_acquire(d, &hp), BATON_OK);
	assert_int_equal(baton_smr_hp_protect(hp, NULL, &out), BATON_EINVAL);
	assert_int_equal(baton_smr_hp_protect(hp, &src, NULL), BATON_EINVAL);
	assert_int_equal(baton_smr_hp_release(hp), BATON_OK);
	/* a token read_lock did not give */
	assert_int_equal(baton_smr_read_unlock(d, 2), BATON_EINVAL);
	assert_int_equal(baton_smr_read_unlock(d, -1), BATON_EINVAL);
	assert_int_equal(baton_smr_stats(d, &st), BATON_OK);
	assert_int_equal(st.retired, 0);
	assert_int_equal(baton_smr_destroy(d), BATON_OK);
}

static void test_sections_and_destroy(void **state)
{
	struct baton_smr_stats st;
	baton_smr_hp_t *hp;
	baton_smr_t *d;
	int t1, t2;

	(void)state;
	nfreed = 0;
	assert_int_equal(baton_smr_create(&d), BATON_OK);
	t1 = baton_smr_read_lock(d);
	assert_true(t1 == 0 || t1 == 1);
	t2 = baton_smr_read_lock(d); /* nested */
	assert_true(t2 == 0 || t2 == 1);
	/* rule 1: synchronize inside a section waits for itself */
	assert_int_equal(baton_smr_synchronize(d, TC_MS(5)), BATON_ETIMEDOUT);
	assert_int_equal(baton_smr_synchronize(d, 0), BATON_EAGAIN);
	/* barrier waits for itself once something is retired */
	assert_int_equal(baton_smr_retire(d, d, count_free), BATON_OK);
	assert_int_equal(baton_smr_barrier(d, TC_MS(5)), BATON_ETIMEDOUT);
	/* rule 7: destroy refuses an open section, the domain unchanged */
	assert_int_equal(baton_smr_destroy(d), BATON_EBUSY);
	assert_int_equal(baton_smr_read_unlock(d, t2), BATON_OK);
	assert_int_equal(baton_smr_destroy(d), BATON_EBUSY);
	assert_int_equal(baton_smr_read_unlock(d, t1), BATON_OK);
	assert_int_equal(baton_smr_stats(d, &st), BATON_OK);
	assert_int_equal(st.retired, 1);
	assert_int_equal(st.pending, 1);
	assert_int_equal(st.readers, 1);
	assert_int_equal(freed(), 0);
	/* a held slot refuses destroy too */
	assert_int_equal(baton_smr_hp_acquire(d, &hp), BATON_OK);
	assert_int_equal(baton_smr_destroy(d), BATON_EBUSY);
	assert_int_equal(baton_smr_hp_release(hp), BATON_OK);
	/* destroy frees everything still retired */
	assert_int_equal(baton_smr_destroy(d), BATON_OK);
	assert_int_equal(freed(), 1);
}

/* A section begun on one thread ends on another; objects retired while it
 * is open stay until it ends; barrier frees a partial batch. */
static baton_smr_t *x_d;
static int x_tok;

static void *lock_thread(void *arg)
{
	(void)arg;
	x_tok = baton_smr_read_lock(x_d);
	return NULL;
}

static void test_grace(void **state)
{
	struct baton_smr_stats st;
	pthread_t th;
	static int objs[BATON_SMR_BATCH + 3];

	(void)state;
	tc_watchdog(60);
	nfreed = 0;
	assert_int_equal(baton_smr_create(&x_d), BATON_OK);
	assert_int_equal(pthread_create(&th, NULL, lock_thread, NULL), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_true(x_tok == 0 || x_tok == 1);
	for (int i = 0; i < BATON_SMR_BATCH + 3; i++)
		assert_int_equal(baton_smr_retire(x_d, &objs[i], count_free), BATON_OK);
	assert_int_equal(baton_smr_poll(x_d), BATON_OK);
	assert_int_equal(baton_smr_synchronize(x_d, 0), BATON_EAGAIN);
	assert_int_equal(freed(), 0);
	/* ended here, on the main thread: the section began on the other */
	assert_int_equal(baton_smr_read_unlock(x_d, x_tok), BATON_OK);
	assert_int_equal(baton_smr_barrier(x_d, -1), BATON_OK);
	assert_int_equal(freed(), BATON_SMR_BATCH + 3);
	assert_int_equal(baton_smr_stats(x_d, &st), BATON_OK);
	assert_int_equal(st.retired, BATON_SMR_BATCH + 3);
	assert_int_equal(st.freed, BATON_SMR_BATCH + 3);
	assert_int_equal(st.pending, 0);
	assert_true(st.grace_periods >= 1);
	assert_int_equal(baton_smr_destroy(x_d), BATON_OK);
	alarm(0);
}

/* Hazard pointers: protect returns what the source holds; a named object
 * survives scans until cleared; hp_pending never exceeds hp_bound. */
static void test_hazard(void **state)
{
	struct baton_smr_stats st;
	static int objs[4 * BATON_SMR_BATCH];
	baton_smr_hp_t *hp;
	baton_smr_t *d;
	void *src = &objs[0], *out = NULL;

	(void)state;
	nfreed = 0;
	assert_int_equal(baton_smr_create(&d), BATON_OK);
	assert_int_equal(baton_smr_hp_acquire(d, &hp), BATON_OK);
	assert_int_equal(baton_smr_hp_protect(hp, (void *const *)&src, &out), BATON_OK);
	assert_ptr_equal(out, &objs[0]);
	src = NULL; /* unpublished, then retired */
	assert_int_equal(baton_smr_hp_retire(d, &objs[0], count_free), BATON_OK);
	for (int i = 1; i < 4 * BATON_SMR_BATCH; i++) {
		assert_int_equal(baton_smr_hp_retire(d, &objs[i], count_free), BATON_OK);
		assert_int_equal(baton_smr_stats(d, &st), BATON_OK);
		assert_true(st.hp_pending <= st.hp_bound);
	}
	assert_int_equal(st.hp_slots, 1);
	assert_int_equal(st.hp_bound, BATON_SMR_BATCH); /* max(2 H, BATCH) */
	/* scans ran and freed others, never the named one */
	assert_true(freed() > 0);
	assert_true(st.hp_pending >= 1);
	assert_int_equal(baton_smr_hp_clear(hp), BATON_OK);
	assert_int_equal(baton_smr_hp_release(hp), BATON_OK);
	assert_int_equal(baton_smr_destroy(d), BATON_OK);
	assert_int_equal(freed(), 4 * BATON_SMR_BATCH);
}

static void test_barrier_kind(void **state)
{
	int k = baton_smr_barrier_kind();

	(void)state;
	assert_true(k == BATON_SMR_BARRIER_FENCE || k == BATON_SMR_BARRIER_MEMBARRIER ||
		    k == BATON_SMR_BARRIER_MPROTECT);
	assert_int_equal(baton_smr_barrier_kind(), k); /* chosen once */
	assert_string_equal(baton_smr_barrier_name(BATON_SMR_BARRIER_FENCE), "fence");
	assert_string_equal(baton_smr_barrier_name(BATON_SMR_BARRIER_MEMBARRIER), "membarrier");
	assert_string_equal(baton_smr_barrier_name(BATON_SMR_BARRIER_MPROTECT), "mprotect");
	assert_string_equal(baton_smr_barrier_name(3), "");
	assert_string_equal(baton_smr_barrier_name(-1), "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_input),    cmocka_unit_test(test_sections_and_destroy),
		cmocka_unit_test(test_grace),        cmocka_unit_test(test_hazard),
		cmocka_unit_test(test_barrier_kind),
	};

	return cmocka_run_group_tests_name("promise_smr", tests, NULL, NULL);
}
