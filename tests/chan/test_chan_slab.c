/* SPDX-License-Identifier: MIT */
/* Where channels live (src/common/slab.h): slots of a slab pool, each
 * cache-line aligned and two lines long, many to a block. A pool hands
 * out slots that do not overlap, hands a given-back slot out again before
 * a fresh one, and frees a block with its last slot (it keeps no block on
 * its list then; under ASan, LeakSanitizer also finds a block lost). Under
 * ASan a slot given back is poisoned. Channels made and destroyed by
 * several threads at once (TSan: the pool's lock orders a slot's reuse)
 * each work, in slots of their own. */
#include "check.h"
#include "internal.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#if TC_ASAN
#include <sanitizer/asan_interface.h>
#endif

#define SLOT 128
#define NSLOTS 400

static int addr_cmp(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;

	return x < y ? -1 : x > y;
}

/* n addresses, each line-aligned, sorted, each at least `size` past the
 * one before. */
static void check_apart(uintptr_t *a, size_t n, size_t size)
{
	qsort(a, n, sizeof(*a), addr_cmp);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(a[i] % BATON_CACHELINE, 0);
		if (i > 0)
			assert_true(a[i] - a[i - 1] >= size);
	}
}

static bool poisoned(const void *slot)
{
#if TC_ASAN
	return __asan_address_is_poisoned((const char *)slot + BATON_CACHELINE) != 0;
#else
	(void)slot;
	return true;
#endif
}

static void test_slab_pool(void **state)
{
	static struct baton_slab_pool pool = BATON_SLAB_POOL_INIT(SLOT - 8);
	static void *slot[NSLOTS];
	static struct baton_slab *home[NSLOTS];
	static uintptr_t addr[NSLOTS];
	size_t per_block = (BATON_SLAB_BLOCK - BATON_CACHELINE) / SLOT, blocks = 0;

	(void)state;
	assert_int_equal(pool.size, SLOT); /* rounded up to whole lines */
	for (size_t i = 0; i < NSLOTS; i++) {
		slot[i] = baton__slab_get(&pool, &home[i]);
		assert_non_null(slot[i]);
		memset(slot[i], (int)i, SLOT); /* all of it is the slot's */
		addr[i] = (uintptr_t)slot[i];
		blocks += i == 0 || home[i] != home[i - 1];
	}
	/* Fresh slots come in order, a block filled before the next. */
	assert_int_equal(blocks, (NSLOTS + per_block - 1) / per_block);
	check_apart(addr, NSLOTS, SLOT);
	for (size_t i = 0; i < NSLOTS; i++)
		for (size_t k = 0; k < SLOT; k++)
			assert_int_equal(((unsigned char *)slot[i])[k], (unsigned char)i);

	/* Every other one back: poisoned, and handed out again first. */
	for (size_t i = 0; i < NSLOTS; i += 2) {
		baton__slab_put(&pool, home[i], slot[i]);
		assert_true(poisoned(slot[i]));
	}
	for (size_t i = 0; i < NSLOTS; i++)
		addr[i] = (uintptr_t)slot[i];
	for (size_t i = 0; i < NSLOTS; i += 2) {
		struct baton_slab *h;
		void *p = baton__slab_get(&pool, &h);
		size_t j = 0;

		assert_non_null(p);
		while (j < NSLOTS && addr[j] != (uintptr_t)p)
			j += 2;
		assert_true(j < NSLOTS); /* one given back, */
		assert_ptr_equal(h, home[j]);
		assert_false(poisoned(p) && TC_ASAN);
		memset(p, 0xa5, SLOT);
		addr[j] = 0; /* and each once */
	}
	/* All back: every block is freed, none is kept. */
	for (size_t i = 0; i < NSLOTS; i++)
		baton__slab_put(&pool, home[i], slot[i]);
	assert_true(baton__list_empty(&pool.partial));
}

/* Channels of both kinds and several capacities: slots of their own, two
 * lines each; destroyed in another order, and made again. */
static void test_chan_lines(void **state)
{
	enum { N = 1000 };
	static baton_chan_t *ch[N];
	static uintptr_t addr[N];

	(void)state;
	for (int round = 0; round < 2; round++) {
		for (size_t i = 0; i < N; i++) {
			assert_int_equal(i % 2 ? baton_chan_create_single(&ch[i], i % 3)
					       : baton_chan_create(&ch[i], i % 3),
					 BATON_OK);
			addr[i] = (uintptr_t)ch[i];
		}
		check_apart(addr, N, 2 * BATON_CACHELINE);
		for (size_t i = 0; i < N; i++) {
			size_t k = (i * 7) % N; /* 7 is prime to N */
			baton_chan_t *c = ch[k];

			if (k % 3 != 0) { /* room for one */
				assert_int_equal(baton_chan_send(c, c, 0), BATON_OK);
				assert_int_equal(baton_chan_len(c), 1);
			}
			assert_int_equal(baton_chan_destroy(c), BATON_OK);
		}
	}
}

/* --- several threads at once ------------------------------------------- */
#define THREADS 4
#define BATCH 50

static void *churn(void *arg)
{
	long rounds = *(long *)arg;
	baton_chan_t *ch[BATCH];
	void *v;

	for (long r = 0; r < rounds; r++) {
		for (int i = 0; i < BATCH; i++) {
			TC_CHECK_RC(baton_chan_create(&ch[i], 1), BATON_OK);
			TC_CHECK((uintptr_t)ch[i] % BATON_CACHELINE == 0);
			TC_CHECK_RC(baton_chan_send(ch[i], &ch[i], 0), BATON_OK);
		}
		for (int i = 0; i < BATCH; i++) {
			v = NULL;
			TC_CHECK_RC(baton_chan_recv(ch[i], &v, 0), BATON_OK);
			TC_CHECK(v == &ch[i]); /* nobody else's message */
			TC_CHECK_RC(baton_chan_destroy(ch[i]), BATON_OK);
		}
	}
	return NULL;
}

static void test_chan_threads(void **state)
{
	pthread_t th[THREADS];
	long rounds = tc_scale(200, 20);

	(void)state;
	tc_reset();
	tc_watchdog_phase(60, "channels made and destroyed by threads");
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, churn, &rounds), 0);
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	TC_VERDICT();
	alarm(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slab_pool),
		cmocka_unit_test(test_chan_lines),
		cmocka_unit_test(test_chan_threads),
	};

	return cmocka_run_group_tests_name("chan_slab", tests, NULL, NULL);
}
