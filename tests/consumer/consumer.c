/* SPDX-License-Identifier: MIT */
/* A program outside the baton tree, built against the installed library. */
#include <stdio.h>
#include <baton/baton.h>

static void *twice(void *arg, void *in)
{
	(void)arg;
	baton_coro_yield((char *)in + 1, NULL);
	return (char *)in + 2;
}

int main(void)
{
	static char base[4];
	baton_coro_t *co;
	void *a, *b;

	if (baton_coro_create(&co, NULL, twice, NULL) != BATON_OK ||
	    baton_coro_resume(co, base, &a) != BATON_OK ||
	    baton_coro_resume(co, NULL, &b) != BATON_OK)
		return 1;
	baton_coro_destroy(co);
	if (a != base + 1 || b != base + 2)
		return 1;
	puts("consumer ok");
	return 0;
}
