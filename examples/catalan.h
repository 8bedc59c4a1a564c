/* SPDX-License-Identifier: MIT */
/* examples/catalan.c as a library, so the test suite can call it. */
#ifndef BATON_EXAMPLES_CATALAN_H
#define BATON_EXAMPLES_CATALAN_H

#include <stdio.h>
#include <baton/coro.h>

/* Count (and print to `print` if not NULL) the binary trees with n nodes. */
long catalan_count(long n, enum baton_coro_model model, FILE *print);

#endif
