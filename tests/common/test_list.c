/* SPDX-License-Identifier: MIT */
/* src/common/list.h, the library's one doubly-linked list: each operation
 * leaves the list consistent (a walk from the head and one back from the
 * tail agree, the ends are NULL); records are found back through their
 * node at any offset, in two lists at once; the safe walk lets the body
 * free the current record; a list moves by assignment (rule 5); and in a
 * debug build (BATON_DEBUG, asserts on) removed nodes are poisoned and a
 * node inserted twice or removed twice aborts. */
#include "check.h"

#include <sys/wait.h>

#include "internal.h" /* src/common/list.h */

struct item {
	int value;
	struct baton_list_node a; /* at an offset: the entry macros subtract */
	long pad;
	struct baton_list_node b;
};

/* l holds exactly the values want[0..n) in that order, both ways. */
static void check_list(const struct baton_list *l, const int *want, size_t n)
{
	const struct baton_list_node *prev = NULL;
	struct item *it;
	size_t i = 0;

	BATON_LIST_FOR_EACH (it, l, a) {
		assert_true(i < n);
		assert_int_equal(it->value, want[i]);
		assert_ptr_equal(it->a.prev, prev);
		prev = &it->a;
		i++;
	}
	assert_int_equal(i, n);
	assert_ptr_equal(l->tail, prev);
	assert_true(baton__list_empty(l) == (n == 0));
	assert_true(n == 0 ? baton__list_first(l) == NULL
			   : BATON_LIST_ENTRY(baton__list_first(l), struct item, a)->value ==
				    want[0]);
	/* Back from the tail. */
	for (const struct baton_list_node *x = l->tail; x; x = x->prev)
		assert_int_equal(BATON_LIST_ENTRY(x, struct item, a)->value, want[--i]);
	assert_int_equal(i, 0);
}

static void items(struct item *it, size_t n)
{
	memset(it, 0, n * sizeof(*it));
	for (size_t i = 0; i < n; i++)
		it[i].value = (int)i;
}

/* l (empty) holds it[0..n) through `a`, values 0..n-1 in order. */
static void listed(struct baton_list *l, struct item *it, size_t n)
{
	items(it, n);
	for (size_t i = 0; i < n; i++)
		baton__list_push_tail(l, &it[i].a);
}

static void test_empty(void **state)
{
	struct baton_list zero, init = BATON_LIST_INIT;
	struct item *it;
	int seen = 0;

	(void)state;
	memset(&zero, 0, sizeof(zero));
	check_list(&zero, NULL, 0);
	check_list(&init, NULL, 0);
	assert_null(baton__list_pop(&zero));
	BATON_LIST_FOR_EACH (it, &init, a)
		seen++;
	assert_int_equal(seen, 0);
	baton__list_init(&zero);
	check_list(&zero, NULL, 0);
}

static void test_push_head_and_tail(void **state)
{
	struct baton_list l = BATON_LIST_INIT;
	struct item it[5];

	(void)state;
	items(it, 5);
	baton__list_push_tail(&l, &it[2].a);
	check_list(&l, (int[]){ 2 }, 1);
	baton__list_push_tail(&l, &it[3].a);
	baton__list_push_tail(&l, &it[4].a);
	check_list(&l, (int[]){ 2, 3, 4 }, 3);
	baton__list_push_head(&l, &it[1].a);
	baton__list_push_head(&l, &it[0].a);
	check_list(&l, (int[]){ 0, 1, 2, 3, 4 }, 5);

	/* Into an empty list, head first. */
	baton__list_init(&l);
	items(it, 2);
	baton__list_push_head(&l, &it[1].a);
	check_list(&l, (int[]){ 1 }, 1);
	baton__list_push_head(&l, &it[0].a);
	check_list(&l, (int[]){ 0, 1 }, 2);
}

static void test_push_only(void **state)
{
	struct baton_list l = BATON_LIST_INIT;
	struct item it[2];

	(void)state;
	items(it, 2);
	baton__list_push_only(&l, &it[0].a);
	check_list(&l, (int[]){ 0 }, 1);
	baton__list_push_tail(&l, &it[1].a);
	check_list(&l, (int[]){ 0, 1 }, 2);
}

static void test_insert_after(void **state)
{
	struct baton_list l = BATON_LIST_INIT;
	struct item it[4];

	(void)state;
	items(it, 4);
	baton__list_push_tail(&l, &it[0].a);
	baton__list_insert_after(&l, &it[0].a, &it[3].a); /* after the tail */
	check_list(&l, (int[]){ 0, 3 }, 2);
	baton__list_insert_after(&l, &it[0].a, &it[1].a); /* in the middle */
	check_list(&l, (int[]){ 0, 1, 3 }, 3);
	baton__list_insert_after(&l, &it[1].a, &it[2].a);
	check_list(&l, (int[]){ 0, 1, 2, 3 }, 4);
}

static void test_remove(void **state)
{
	struct baton_list l = BATON_LIST_INIT;
	struct item it[5];

	(void)state;
	listed(&l, it, 5);
	baton__list_remove(&l, &it[2].a); /* middle */
	check_list(&l, (int[]){ 0, 1, 3, 4 }, 4);
	baton__list_remove(&l, &it[0].a); /* head */
	check_list(&l, (int[]){ 1, 3, 4 }, 3);
	baton__list_remove(&l, &it[4].a); /* tail */
	check_list(&l, (int[]){ 1, 3 }, 2);
	baton__list_remove(&l, &it[1].a);
	check_list(&l, (int[]){ 3 }, 1);
	baton__list_remove(&l, &it[3].a); /* the only node */
	check_list(&l, NULL, 0);
	/* A removed node goes back in, anywhere. */
	baton__list_push_tail(&l, &it[3].a);
	baton__list_push_head(&l, &it[2].a);
	check_list(&l, (int[]){ 2, 3 }, 2);
}

static void test_pop_fifo(void **state)
{
	struct baton_list l = BATON_LIST_INIT;
	struct baton_list_node *n;
	struct item it[4];
	int next = 0;

	(void)state;
	listed(&l, it, 4);
	while ((n = baton__list_pop(&l)) != NULL) {
		assert_int_equal(BATON_LIST_ENTRY(n, struct item, a)->value, next);
		next++;
		check_list(&l, (int[]){ 1, 2, 3 } + (next - 1), (size_t)(4 - next));
	}
	assert_int_equal(next, 4);
	assert_null(baton__list_pop(&l));
}

/* The body frees each even record as the walk reaches it (ASan: a walk
 * that read the freed node would be a use after free). */
static void test_for_each_safe_frees(void **state)
{
	struct baton_list l = BATON_LIST_INIT;
	struct item *it, *tmp;
	int visited = 0;

	(void)state;
	for (int i = 0; i < 8; i++) {
		it = calloc(1, sizeof(*it));
		assert_non_null(it);
		it->value = i;
		baton__list_push_tail(&l, &it->a);
	}
	BATON_LIST_FOR_EACH_SAFE (it, tmp, &l, a) {
		assert_int_equal(it->value, visited);
		visited++;
		if (it->value % 2 == 0) {
			baton__list_remove(&l, &it->a);
			free(it);
		}
	}
	assert_int_equal(visited, 8);
	check_list(&l, (int[]){ 1, 3, 5, 7 }, 4);
	BATON_LIST_FOR_EACH_SAFE (it, tmp, &l, a) {
		baton__list_remove(&l, &it->a);
		free(it);
	}
	check_list(&l, NULL, 0);
}

/* One record in two lists, through nodes at two offsets, in two orders. */
static void test_two_lists_one_record(void **state)
{
	struct baton_list la = BATON_LIST_INIT, lb = BATON_LIST_INIT;
	struct item it[3], *p;
	int want = 2;

	(void)state;
	items(it, 3);
	for (int i = 0; i < 3; i++) {
		baton__list_push_tail(&la, &it[i].a);
		baton__list_push_head(&lb, &it[i].b);
	}
	check_list(&la, (int[]){ 0, 1, 2 }, 3);
	BATON_LIST_FOR_EACH (p, &lb, b)
		assert_int_equal(p->value, want--);
	assert_int_equal(want, -1);
	baton__list_remove(&lb, &it[1].b); /* leaves la alone */
	check_list(&la, (int[]){ 0, 1, 2 }, 3);
	p = BATON_LIST_ENTRY(lb.head, struct item, b);
	assert_ptr_equal(p, &it[2]);
	assert_ptr_equal(BATON_LIST_ENTRY(p->b.next, struct item, b), &it[0]);
}

/* Rule 5: assignment takes every node; the old list starts empty. */
static void test_move_by_assignment(void **state)
{
	struct baton_list l = BATON_LIST_INIT, mine;
	struct item it[3];

	(void)state;
	listed(&l, it, 3);
	mine = l;
	baton__list_init(&l);
	check_list(&l, NULL, 0);
	check_list(&mine, (int[]){ 0, 1, 2 }, 3);
	baton__list_remove(&mine, &it[0].a);
	check_list(&mine, (int[]){ 1, 2 }, 2);
}

static void test_debug_poisons_removed(void **state)
{
	struct baton_list l = BATON_LIST_INIT;
	struct item it[2];

	(void)state;
	if (!BATON_DEBUG)
		skip(); /* release builds leave the links as they were */
	listed(&l, it, 2);
	baton__list_remove(&l, &it[1].a);
	assert_ptr_equal(it[1].a.next, BATON_LIST_POISON_NEXT);
	assert_ptr_equal(it[1].a.prev, BATON_LIST_POISON_PREV);
	assert_ptr_equal(baton__list_pop(&l), &it[0].a);
	assert_ptr_equal(it[0].a.next, BATON_LIST_POISON_NEXT);
	assert_ptr_equal(it[0].a.prev, BATON_LIST_POISON_PREV);
	check_list(&l, NULL, 0);
}

/* Run misuse(kind) in a child: it must die of the assert's SIGABRT. */
static void misuse(int kind)
{
	struct baton_list l = BATON_LIST_INIT, other = BATON_LIST_INIT;
	struct item it[3];

	items(it, 3);
	listed(&l, it, 2);
	switch (kind) {
	case 0: /* removed twice */
		baton__list_remove(&l, &it[1].a);
		baton__list_remove(&l, &it[1].a);
		break;
	case 1: /* inserted twice, into the same list */
		baton__list_push_tail(&l, &it[0].a);
		break;
	case 2: /* inserted twice, into another list */
		baton__list_push_head(&other, &it[1].a);
		break;
	case 3: /* the only node, inserted again */
		baton__list_push_head(&other, &it[2].a);
		baton__list_push_tail(&other, &it[2].a);
		break;
	case 4: /* removed from a list it is not in */
		baton__list_remove(&other, &it[0].a);
		break;
	case 5: /* popped, then removed */
		baton__list_remove(&l, baton__list_pop(&l));
		break;
	}
}

static void test_debug_misuse_aborts(void **state)
{
	(void)state;
#if !BATON_DEBUG || defined(NDEBUG)
	skip(); /* the checks are a debug build's, with asserts on */
#else
	for (int kind = 0; kind <= 5; kind++) {
		int status;
		pid_t pid = fork();

		assert_true(pid >= 0);
		if (pid == 0) {
			misuse(kind);
			_exit(0); /* not caught */
		}
		assert_int_equal(waitpid(pid, &status, 0), pid);
		if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT)
			fail_msg("misuse %d was not caught (status %#x)", kind, status);
	}
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_push_head_and_tail),
		cmocka_unit_test(test_push_only),
		cmocka_unit_test(test_insert_after),
		cmocka_unit_test(test_remove),
		cmocka_unit_test(test_pop_fifo),
		cmocka_unit_test(test_for_each_safe_frees),
		cmocka_unit_test(test_two_lists_one_record),
		cmocka_unit_test(test_move_by_assignment),
		cmocka_unit_test(test_debug_poisons_removed),
		cmocka_unit_test(test_debug_misuse_aborts),
	};

	tc_watchdog(60); /* nothing here waits; a child that hung would */
	return cmocka_run_group_tests_name("list", tests, NULL, NULL);
}
