/* SPDX-License-Identifier: MIT */
/* A program outside the baton tree using the installed CHICKEN binding. */
#include <stdio.h>

#include <baton_chicken.h>

int square(int a);
int square_try(int a, int *ret);

int main(void)
{
	int r = 0;

	if (baton_chicken_start(NULL) != BATON_OK || square(7) != 49)
		return 2;
	if (square_try(-1, &r) != BATON_CHICKEN_ERROR || baton_chicken_last_error() == NULL)
		return 3;
	puts("consumer chicken ok");
	return 0;
}
