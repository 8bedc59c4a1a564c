/* SPDX-License-Identifier: MIT */
/*
 * Timers: a binary min-heap of deadlines per worker. Adding and cancelling
 * are O(log n) (each node knows its index); the worker fires what is due
 * when it polls and sleeps no longer than the earliest deadline. A heap is
 * touched only by its worker, so it needs no lock.
 */
#include <stdlib.h>
#include <time.h>

#include "../common/alloc.h"
#include "sched_internal.h"
#include "wait.h"

int64_t baton__deadline_after(int64_t timeout_ns)
{
	int64_t now = baton__clock_now();

	return timeout_ns > INT64_MAX - now ? INT64_MAX : now + timeout_ns;
}

static void place(struct baton_timer_heap *h, size_t i, struct baton_timer_node *n)
{
	h->nodes[i] = n;
	n->index = i;
}

static void sift_up(struct baton_timer_heap *h, size_t i)
{
	struct baton_timer_node *n = h->nodes[i];

	while (i > 0) {
		size_t parent = (i - 1) / 2;

		if (h->nodes[parent]->deadline <= n->deadline)
			break;
		place(h, i, h->nodes[parent]);
		i = parent;
	}
	place(h, i, n);
}

static void sift_down(struct baton_timer_heap *h, size_t i)
{
	struct baton_timer_node *n = h->nodes[i];

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= h->len)
			break;
		if (c + 1 < h->len && h->nodes[c + 1]->deadline < h->nodes[c]->deadline)
			c++;
		if (n->deadline <= h->nodes[c]->deadline)
			break;
		place(h, i, h->nodes[c]);
		i = c;
	}
	place(h, i, n);
}

int baton__timer_heap_add(struct baton_timer_heap *h, struct baton_timer_node *n)
{
	if (h->len == h->cap) {
		size_t cap = h->cap ? 2 * h->cap : 64;
		struct baton_timer_node **nodes = baton__realloc(h->nodes, cap * sizeof(*nodes));

		if (nodes == NULL)
			return BATON_ENOMEM;
		h->nodes = nodes;
		h->cap = cap;
	}
	place(h, h->len++, n);
	sift_up(h, n->index);
	return BATON_OK;
}

void baton__timer_heap_remove(struct baton_timer_heap *h, struct baton_timer_node *n)
{
	size_t i = n->index;
	struct baton_timer_node *last = h->nodes[--h->len];

	n->index = SIZE_MAX;
	if (last == n)
		return;
	place(h, i, last);
	if (i > 0 && h->nodes[(i - 1) / 2]->deadline > last->deadline)
		sift_up(h, i);
	else
		sift_down(h, i);
}

int64_t baton__timer_heap_next(const struct baton_timer_heap *h)
{
	return h->len ? h->nodes[0]->deadline : INT64_MAX;
}

void baton__timer_heap_fire(struct baton_timer_heap *h, int64_t now)
{
	while (h->len && h->nodes[0]->deadline <= now) {
		struct baton_timer_node *n = h->nodes[0];

		baton__timer_heap_remove(h, n); /* index = SIZE_MAX: not armed */
		n->fire(n);
	}
}

void baton__timer_heap_fini(struct baton_timer_heap *h)
{
	baton__free(h->nodes);
	h->nodes = NULL;
	h->len = h->cap = 0;
}

int baton_sched_sleep(int64_t ns)
{
	struct baton_task *t = baton__task_self();
	int rc;

	if (t == NULL)
		return BATON_ENOSCHED;
	if (ns < 0)
		return BATON_EINVAL;
	if (ns == 0)
		return baton_sched_yield();
	baton__wait_reserve(t, 0);
	baton__wait_begin(t);
	rc = baton__wait_park(t, ns);
	baton__wait_finish(t);
	return rc == BATON_ETIMEDOUT ? BATON_OK : rc;
}
