/* SPDX-License-Identifier: MIT */
/*
 * Generators on top of coroutines: the body runs as a coroutine, each value
 * is one yield, and the coroutine's return marks the end.
 */
#include <stdlib.h>

#include <baton/gen.h>

#include "../common/alloc.h"

struct baton_gen {
	baton_coro_t *co;
	baton_gen_fn fn;
	void *arg;
};

static void *gen_main(void *arg, void *in)
{
	baton_gen_t *g = arg;

	(void)in;
	g->fn(g, g->arg);
	return NULL;
}

int baton_gen_create(baton_gen_t **out, const struct baton_coro_attr *attr, baton_gen_fn fn,
		     void *arg)
{
	baton_gen_t *g;
	int rc;

	if (out == NULL || fn == NULL)
		return BATON_EINVAL;
	g = baton__malloc(sizeof(*g));
	if (g == NULL)
		return BATON_ENOMEM;
	g->fn = fn;
	g->arg = arg;
	rc = baton_coro_create(&g->co, attr, gen_main, g);
	if (rc != BATON_OK) {
		baton__free(g);
		return rc;
	}
	*out = g;
	return BATON_OK;
}

int baton_gen_next(baton_gen_t *g, void **value)
{
	void *v;
	int rc;

	if (g == NULL)
		return BATON_EINVAL;
	if (baton_coro_status(g->co) == BATON_CORO_DEAD)
		return BATON_EDONE;
	rc = baton_coro_resume(g->co, NULL, &v);
	if (rc != BATON_OK)
		return rc;
	if (baton_coro_status(g->co) == BATON_CORO_DEAD)
		return BATON_EDONE; /* the body returned: that was no value */
	if (value)
		*value = v;
	return BATON_OK;
}

int baton_gen_yield(baton_gen_t *g, void *value)
{
	if (g == NULL || baton_coro_self() != g->co)
		return BATON_EINVAL;
	return baton_coro_yield(value, NULL);
}

int baton_gen_yield_from(baton_gen_t *g, baton_gen_t *inner)
{
	void *v;
	int rc;

	/* Checked before the first next(): a yield refused after it would
	 * lose the value taken from inner. */
	if (g == NULL || inner == NULL || g == inner || baton_coro_self() != g->co)
		return BATON_EINVAL;
	while ((rc = baton_gen_next(inner, &v)) == BATON_OK) {
		rc = baton_gen_yield(g, v);
		if (rc != BATON_OK)
			return rc;
	}
	return rc == BATON_EDONE ? BATON_OK : rc;
}

baton_coro_t *baton_gen_coro(const baton_gen_t *g)
{
	return g ? g->co : NULL;
}

int baton_gen_destroy(baton_gen_t *g)
{
	int rc;

	if (g == NULL)
		return BATON_OK;
	rc = baton_coro_destroy(g->co);
	if (rc != BATON_OK)
		return rc;
	baton__free(g);
	return BATON_OK;
}
