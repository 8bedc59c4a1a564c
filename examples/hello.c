/* SPDX-License-Identifier: MIT */
/* The README's example: a coroutine that counts, resumed three times. */
#include <stdio.h>
#include <baton/coro.h>

static void *counter(void *arg, void *in)
{
	for (long n = (long)arg; n < 13; n++)
		baton_coro_yield((void *)n, &in); /* hand n out, wait */
	return NULL;
}

int main(void)
{
	baton_coro_t *co;
	void *out;
	int rc = baton_coro_create(&co, NULL, counter, (void *)10);

	if (rc != BATON_OK) {
		fprintf(stderr, "create: %s\n", baton_strerror(rc));
		return 1;
	}
	for (int i = 0; i < 3; i++) {
		baton_coro_resume(co, NULL, &out);
		printf("%ld\n", (long)out); /* 10, 11, 12 */
	}
	return baton_coro_destroy(co) == BATON_OK ? 0 : 1;
}
